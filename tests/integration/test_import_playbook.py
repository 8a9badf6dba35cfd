"""playbooks/import-config.yml end to end: a site's files -> DEST, which renders (through the collection's own
render play) what the real slurmd reads from the original, node by node; never an overwrite; a refusal writes
nothing."""
import os
import re
import subprocess

import pytest

import slurmd_oracle
from render_helpers import ROOT

SLURM = """# a hand-written site config
ClusterName=site
SlurmctldHost=head01(10.0.0.1)
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
GresTypes=gpu,mps,bandwidth
Include nodes.conf
PartitionName=gpu Nodes=gpu[01-04],mix01 Default=YES MaxTime=1-00:00:00
PartitionName=cpu Nodes=cpu[01-08]
"""
NODES = """NodeName=DEFAULT Sockets=2 CoresPerSocket=8 ThreadsPerCore=2 RealMemory=64000 State=UNKNOWN
NodeName=gpu[01-04] Gres=gpu:4,mps:400 Features=a100
NodeName=mix01 Gres=gpu:l40s:1,gpu:a100:2,bandwidth:lustre:no_consume:4G
NodeName=cpu[01-08] Sockets = 1 \\
   CoresPerSocket=16
"""
GRES = """# one file for the whole cluster
NodeName=gpu[01-04] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-7
NodeName=gpu[01-04] Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=8-15
NodeName=gpu[01-04] Name=mps Count=400 File=/dev/nvidia[0-3]
NodeName=mix01 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-7 Links=-1,12 Flags=nvidia_gpu_env
NodeName=mix01 Name=gpu Type=l40s File=/dev/nvidia2 Cores=8-15
NodeName=mix01 Name=bandwidth Type=lustre Count=4G
"""
CGROUP = "ConstrainCores=yes\nConstrainDevices=yes\n"


def run(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    cmd = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook")] + list(args)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    return proc.returncode, " ".join(proc.stdout.split())


def site(path, **files):
    path.mkdir()
    for name, text in dict({"slurm.conf": SLURM, "nodes.conf": NODES, "gres.conf": GRES, "cgroup.conf": CGROUP},
                           **files).items():
        (path / name).write_text(text)
    return path


def tree(path):
    return sorted(os.path.relpath(os.path.join(d, f), path) for d, _unused, fs in os.walk(path) for f in fs)


@pytest.fixture(scope="module")
def imported(tmp_path_factory):
    base = tmp_path_factory.mktemp("import")
    src, dest, out = site(base / "src"), base / "dest", base / "rendered"
    rc, log = run("playbooks/import-config.yml", "-e", "hpc_gres_import_src=%s" % src,
                  "-e", "hpc_gres_import_dest=%s" % dest)
    assert rc == 0, log
    rc, render_log = run("playbooks/render-gres.yml", "-i", str(dest), "-e", "hpc_gres_render_dir=%s" % out)
    assert rc == 0, render_log
    return src, dest, out, log


def test_dest_is_compact_and_the_run_says_what_it_wrote(imported):
    _unused1, dest, _unused2, log = imported
    # gpu[01-04]: slurm.conf's Gres=gpu:4 is untyped, so slurmd drops gres.conf's Type=a100 and so does the import
    assert tree(dest) == ["group_vars/all.yml", "group_vars/cpu.yml", "group_vars/gpu_l40s_a100_x3.yml",
                          "group_vars/gpu_untyped_x4.yml", "host_vars/head01.yml", "hosts.yml"]
    assert "wrote 6 file(s) under %s" % dest in log
    assert "node groups: cpu x8, gpu_untyped_x4 x4, gpu_l40s_a100_x3 x1" in log
    assert "gpu[01:04]:" in (dest / "hosts.yml").read_text()


def test_every_gpu_node_renders_what_slurmd_reads_from_the_original(imported):
    slurmd_oracle.require_oracle()
    src, _unused1, out, _unused2 = imported
    original = SLURM.replace("Include nodes.conf\n", NODES)
    for node in ("gpu03", "mix01"):
        before = slurmd_oracle.run_slurmd_g(node, original, GRES, 2, 8, 2)
        after = slurmd_oracle.run_slurmd_g(node, (out / "slurm.conf").read_text(),
                                           (out / node / "gres.conf").read_text(), 2, 8, 2)
        assert before.ok and after.ok, before.describe() + after.describe()
        assert after.units() == before.units(), after.describe()
        assert after.counts() == before.counts()
    assert "ConstrainCores=yes\nConstrainDevices=yes\n" in (out / "cgroup.conf").read_text()
    assert "NodeName=cpu[01-08] Sockets=1 CoresPerSocket=16 ThreadsPerCore=2 RealMemory=64000 State=UNKNOWN\n" in (
        out / "slurm.conf").read_text()


def test_a_second_import_into_the_same_dest_writes_nothing(imported):
    src, dest, _unused1, _unused2 = imported
    before = {p: (dest / p).read_bytes() for p in tree(dest)}
    rc, log = run("playbooks/import-config.yml", "-e", "hpc_gres_import_src=%s" % src,
                  "-e", "hpc_gres_import_dest=%s" % dest)
    assert rc != 0
    assert "nothing written: %s already holds group_vars/all.yml" % dest in log
    assert {p: (dest / p).read_bytes() for p in tree(dest)} == before


def test_a_refused_import_names_file_line_and_node_and_writes_nothing(tmp_path):
    src = site(tmp_path / "src", **{"gres.conf": GRES.replace("File=/dev/nvidia[2-3] Cores=8-15",
                                                              "File=/dev/nvidia2,/dev/dri/renderD128 Cores=8-15")})
    rc, log = run("playbooks/import-config.yml", "-e", "hpc_gres_import_src=%s" % src,
                  "-e", "hpc_gres_import_dest=%s" % (tmp_path / "dest"))
    assert rc != 0
    assert "gres.conf line 3, nodes gpu[01-04]: AMD/Intel GPU device file /dev/dri/renderD128" in log
    assert not (tmp_path / "dest").exists()


def test_check_mode_lists_the_files_and_writes_none(tmp_path):
    src = site(tmp_path / "src")
    rc, log = run("playbooks/import-config.yml", "--check", "-e", "hpc_gres_import_src=%s" % src,
                  "-e", "hpc_gres_import_dest=%s" % (tmp_path / "dest"))
    assert rc == 0, log
    assert "check mode, nothing written: would write " in log and "hosts.yml" in log
    assert not (tmp_path / "dest").exists()


def test_missing_variables_are_named(tmp_path):
    rc, log = run("playbooks/import-config.yml", "-e", "hpc_gres_import_src=%s" % tmp_path)
    assert rc != 0 and "expected -e hpc_gres_import_dest=DEST" in log


def live_inventory(base, configless=False):
    """Controller and nodes as local hosts, each reading its own /etc/slurm stand-in (hpc_gres_import_config_dir)."""
    dirs = {host: base / host for host in ("head01", "gpu01", "gpu02", "gpu03", "gpu04", "mix01")}
    for path in dirs.values():
        path.mkdir(parents=True)
    slurm = SLURM.replace("Include nodes.conf\n", NODES)
    if configless:
        slurm += "SlurmctldParameters=enable_configless\n"
        (dirs["head01"] / "gres.conf").write_text(GRES)
    else:
        for node in ("gpu01", "gpu02", "gpu03", "gpu04", "mix01"):
            (dirs[node] / "gres.conf").write_text(GRES)
    (dirs["head01"] / "slurm.conf").write_text(slurm)
    (dirs["head01"] / "cgroup.conf").write_text(CGROUP)
    lines = ["[slurmctld]", "head01.site.example hpc_gres_node_name=head01 hpc_gres_import_config_dir=%s" % dirs["head01"],
             "[slurmd]"]
    lines += ["%s.site.example hpc_gres_node_name=%s hpc_gres_import_config_dir=%s" % (n, n, dirs[n])
              for n in ("gpu01", "gpu02", "gpu03", "gpu04", "mix01")]
    lines += ["[all:vars]", "ansible_connection=local", "ansible_python_interpreter=%s" % os.path.join(
        ROOT, ".venv", "bin", "python")]
    inventory = base / "inventory.ini"
    inventory.write_text("\n".join(lines) + "\n")
    return inventory


@pytest.mark.parametrize("configless", [False, True], ids=["per-node-gres-conf", "configless"])
def test_live_import_keeps_the_inventory_host_names(tmp_path, configless):
    inventory = live_inventory(tmp_path / "cluster", configless)
    dest = tmp_path / "dest"
    rc, log = run("playbooks/import-config.yml", "-i", str(inventory), "-e", "hpc_gres_import_live=true",
                  "-e", "hpc_gres_import_dest=%s" % dest)
    assert rc == 0, log
    # the release the controller's slurmctld reports (scontrol's where slurmctld does not run), else the files'
    release = slurmd_oracle.slurmd_release()
    if release:
        assert re.search(r"Slurm release %s \(reported by (slurmctld -V|scontrol --version): [^)]*%s\.\d+ on "
                         r"head01\.site\.example\): the files are judged by its rules" % (release, release), log), log
    else:
        assert "Slurm release not named (slurmctld -V: " in log
    hosts = (dest / "hosts.yml").read_text()
    assert "head01.site.example:" in hosts and "mix01.site.example:" in hosts and "gpu[01:04].site.example:" in hosts
    # the Slurm names are the short host names: only the controller's address is a host variable
    assert os.listdir(dest / "host_vars") == ["head01.site.example.yml"]
    rendered = tmp_path / "rendered"
    rc, log = run("playbooks/render-gres.yml", "-i", str(dest), "-e", "hpc_gres_render_dir=%s" % rendered)
    assert rc == 0, log
    assert "NodeName=mix01 Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-7 Links=-1,12 Flags=nvidia_gpu_env\n" in (
        rendered / "mix01" / "gres.conf").read_text()


def test_live_import_refuses_a_node_the_inventory_does_not_have(tmp_path):
    inventory = live_inventory(tmp_path / "cluster")
    inventory.write_text(inventory.read_text().replace("\ngpu04.site.example", "\n#gpu04.site.example"))
    rc, log = run("playbooks/import-config.yml", "-i", str(inventory), "-e", "hpc_gres_import_live=true",
                  "-e", "hpc_gres_import_dest=%s" % (tmp_path / "dest"))
    assert rc != 0
    assert "slurm.conf line 10, node gpu04: node gpu04 is in slurm.conf but no host of the inventory's slurmd " \
           "group is it" in log
    assert not (tmp_path / "dest").exists()
