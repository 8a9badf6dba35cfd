"""A newcomer's first hour, scripted from the README on a fresh clone: the demo, the import of a stock Debian 12
(Slurm 22.05) GPU site without naming a release, a re-render of the import, a mistake, a node removed.

Each step runs the commands as the README and docs/import.md give them, in a clone of this repository's HEAD (so
nothing of the working tree leaks in), with the ansible-core of the test venv on PATH and nothing else installed.
"""
import os
import re
import shutil
import subprocess

import pytest

import testpaths

DEBIAN = os.path.join(testpaths.FIXTURES, "slurm", "debian12")
STOCK_NODE = "NodeName=server CPUs=16 RealMemory=64000\n"
GPU_NODES = ("GresTypes=gpu\n"
             "NodeName=gpu[01-02] CPUs=128 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1000000 "
             "Gres=gpu:a100:4\n")
GRES = ("NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-31\n"
        "NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=32-63\n")


def sh(argv, cwd):
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(PATH=testpaths.BIN + os.pathsep + env.get("PATH", ""), ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run(argv, cwd=str(cwd), env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          timeout=600, check=False)
    return proc.returncode, proc.stdout


@pytest.fixture(scope="module")
def clone(tmp_path_factory):
    base = tmp_path_factory.mktemp("newcomer")
    if not shutil.which("git") or not os.path.isdir(os.path.join(testpaths.ROOT, ".git")):
        pytest.skip("needs git and a git checkout")
    rc, out = sh(["git", "clone", "--quiet", testpaths.ROOT, str(base / "slurm_gres")], base)
    assert rc == 0, out
    # what `make demo` and `make setup` do first: the checkout resolves hpc.slurm_gres.* through a link to itself
    rc, out = sh(["bash", "scripts/link-collection.sh"], base / "slurm_gres")
    assert rc == 0, out
    return base / "slurm_gres"


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """Debian 12's stock slurm.conf and cgroup.conf (package slurmctld 22.05.8) with the admin's GPU lines."""
    src = tmp_path_factory.mktemp("site")
    with open(os.path.join(DEBIAN, "slurm.conf.cgroup")) as handle:
        slurm = handle.read()
    assert STOCK_NODE in slurm
    (src / "slurm.conf").write_text(slurm.replace(STOCK_NODE, GPU_NODES))
    shutil.copy(os.path.join(DEBIAN, "cgroup.conf"), str(src / "cgroup.conf"))
    (src / "gres.conf").write_text(GRES)
    return src


@pytest.fixture(scope="module")
def imported(clone, site, tmp_path_factory):
    dest = tmp_path_factory.mktemp("imported") / "inventory"
    rc, out = sh(["ansible-playbook", "playbooks/import-config.yml", "-e", "hpc_gres_import_src=%s" % site,
                  "-e", "hpc_gres_import_dest=%s" % dest], clone)
    return rc, out, dest


def render(clone, inventory, dest, *extra):
    return sh(["ansible-playbook", "playbooks/render-gres.yml", "-i", str(inventory),
               "-e", "hpc_gres_render_dir=%s" % dest] + list(extra), clone)


def test_the_demo_needs_ansible_core_alone_and_prints_only_what_ran(clone, tmp_path):
    rc, out = sh(["make", "demo", "DEMO_DIR=%s" % (tmp_path / "demo")], clone)
    assert rc == 0, out
    assert not os.path.exists(str(clone / ".venv")), "make demo built the development venv"
    assert "skipping: no hosts matched" not in out and "Rollback" not in out
    assert out.count("PLAY [") == 1, re.findall(r"PLAY \[[^\]]*\]", out)
    assert (tmp_path / "demo" / "slurm.conf").is_file() and (tmp_path / "demo" / "gpu-a01" / "gres.conf").is_file()


def test_a_stock_debian_12_site_imports_without_a_release_and_says_in_one_line_how_to_name_one(imported):
    rc, out, dest = imported
    assert rc == 0, out
    flat = " ".join(out.split())
    lines = re.findall(r"Slurm release not named: the import takes Slurm 22\.05[^']*", flat)
    assert len(lines) == 1, lines
    assert "-e hpc_gres_import_slurm_version=" in lines[0] and "cgroup.conf line" in lines[0]
    assert re.search(r"^hpc_gres_slurm_version: ['\"]22\.05['\"]$", (dest / "group_vars" / "all.yml").read_text(), re.M)


def test_the_first_deploy_of_the_import_changes_nothing(imported, clone, site, tmp_path):
    rc, out, dest = imported
    assert "first deploy:" not in out
    rc, out = render(clone, dest, tmp_path / "out")
    assert rc == 0, out
    assert (tmp_path / "out" / "slurm.conf").read_text().count("NodeName=gpu[01-02]") == 1
    # the site's own gres.conf lines, byte for byte, in each node's rendered gres.conf
    for node in ("gpu01", "gpu02"):
        rendered = [line for line in (tmp_path / "out" / node / "gres.conf").read_text().splitlines()
                    if line and not line.startswith("#")]
        assert [" ".join(line.split()[1:]) for line in rendered] == [
            " ".join(line.split()[1:]) for line in GRES.splitlines()], rendered


def test_a_mistake_is_refused_once_naming_the_file_and_line(imported, clone, tmp_path):
    rc, out, dest = imported
    work = tmp_path / "inventory"
    shutil.copytree(str(dest), str(work))
    group = work / "group_vars" / "gpu_a100_x4.yml"
    text = group.read_text()
    assert "hpc_gres_node_real_memory: 1000000\n" in text
    group.write_text(text.replace("hpc_gres_node_real_memory: 1000000\n", "hpc_gres_node_real_memory: lots\n"))
    line = text.split("\n").index("hpc_gres_node_real_memory: 1000000") + 1
    rc, out = render(clone, work, tmp_path / "out")
    assert rc != 0
    assert "nothing was written" in out and not (tmp_path / "out").exists()
    mentions = [row for row in out.splitlines() if "hpc_gres_node_real_memory:" in row and "expected" in row]
    assert len(mentions) == 1, mentions
    assert "gpu[01-02]" in mentions[0] and "group_vars/gpu_a100_x4.yml:%d" % line in mentions[0], mentions[0]


def test_a_node_that_leaves_the_inventory_leaves_the_render_directory(imported, clone, tmp_path):
    rc, out, dest = imported
    work = tmp_path / "inventory"
    shutil.copytree(str(dest), str(work))
    out_dir = tmp_path / "out"
    rc, out = render(clone, work, out_dir)
    assert rc == 0, out
    (out_dir / "site-notes.txt").write_text("the admin's own file\n")
    hosts = work / "hosts.yml"
    hosts.write_text(hosts.read_text().replace("gpu[01:02]:", "gpu01:"))
    rc, out = render(clone, work, out_dir)
    assert rc == 0, out
    assert not (out_dir / "gpu02").exists() and (out_dir / "gpu01" / "gres.conf").is_file()
    assert "1 removed" in out and (out_dir / "site-notes.txt").is_file()
