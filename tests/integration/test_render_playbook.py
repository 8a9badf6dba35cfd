"""The render-only main job through ansible-playbook: writes every file, or nothing at all."""
import os
import re
import subprocess

import pytest
import testpaths
from render_helpers import ROOT, write_inventory

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import MANIFEST

pytestmark = pytest.mark.ansible_core

HOSTS = {"all": {"children": {
    "slurmctld": {"hosts": {"head.lab": None}},
    "slurmd": {"children": {"a100": {"hosts": {"gpu[01:03].lab": None}}, "cpu": {"hosts": {"cpu[1:2].lab": None}}}},
}}}
A100 = {
    "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
    "hpc_gres_node_real_memory": 500000,
    "hpc_gres_gpus": [{"index": i, "type": "a100", "cores": "0-31" if i < 2 else "32-63"} for i in range(4)],
}


def render(inventory, dest, *args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    cmd = [testpaths.ANSIBLE_PLAYBOOK, "playbooks/render-gres.yml", "-i", inventory,
           "-e", "hpc_gres_render_dir=%s" % dest] + list(args)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    # YAML output wraps long lines; ansible-core before 2.19 prints a message as a single-quoted scalar (doesn''t)
    return proc.returncode, " ".join(proc.stdout.split()).replace("''", "'")


def test_valid_inventory_writes_every_file_and_a_rerun_changes_nothing(tmp_path):
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={
        "a100": A100, "all": {"hpc_gres_cluster_name": "lab"}})
    dest = tmp_path / "out"
    rc, out = render(inventory, dest)
    assert rc == 0, out
    written = sorted(os.path.relpath(os.path.join(d, f), dest) for d, _subdirs, fs in os.walk(dest) for f in fs)
    assert written == [MANIFEST, "USERS.md", "USERS.motd", "cgroup.conf", "gpu01/gres.conf", "gpu02/gres.conf",
                       "gpu03/gres.conf", "slurm.conf"]
    assert "sbatch -p main --gres=gpu:a100:4 job.sh" in (dest / "USERS.md").read_text()
    slurm = (dest / "slurm.conf").read_text()
    assert "NodeName=gpu[01-03] Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=500000 Gres=gpu:a100:4" \
        in slurm
    assert "NodeName=cpu[1-2]\n" in slurm
    assert (dest / "gpu02" / "gres.conf").read_text().endswith(
        "NodeName=gpu02 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-31\n"
        "NodeName=gpu02 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=32-63\n")
    assert "cluster lab: 5 nodes (3 with GPUs, 2 CPU-only), controller head" in out
    assert "GPUs: 12 (a100 12)" in out
    rc, out = render(inventory, dest)
    assert rc == 0 and "written: 0 changed, 7 unchanged, 0 removed" in out and "changed=0" in out, out
    # render-only prints only what ran: one play, nothing skipped
    assert out.count("PLAY [") == 1 and "skipping" not in out and "no hosts matched" not in out, out


def test_a_deploy_refuses_a_render_directory_before_contacting_any_host(tmp_path):
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": A100})
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([testpaths.ANSIBLE_PLAYBOOK, "playbooks/deploy-gres.yml", "-i", inventory,
                           "-e", "hpc_gres_render_dir=%s" % (tmp_path / "out")], cwd=ROOT, env=env, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0
    assert "hpc_gres_render_dir: expected unset in a deploy (it installs on the cluster)" in out, out
    assert "ansible-playbook hpc.slurm_gres.render_gres -i INVENTORY -e hpc_gres_render_dir=" in out
    assert not (tmp_path / "out").exists() and "gpu01" not in out


def test_duplicate_index_fails_naming_host_and_index_and_writes_nothing(tmp_path):
    bad = dict(A100, hpc_gres_gpus=A100["hpc_gres_gpus"] + [{"index": 2, "type": "a100"}])
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": A100},
                                host_vars={"gpu02.lab": bad})
    dest = tmp_path / "out"
    rc, out = render(inventory, dest)
    assert rc != 0
    assert "host gpu02.lab: hpc_gres_gpus[4].index: expected unique GPU index, found 2" in out
    assert not (dest / "slurm.conf").exists()
    assert not dest.exists()


def test_failed_render_leaves_a_previous_tree_as_it_was(tmp_path):
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": A100})
    dest = tmp_path / "out"
    assert render(inventory, dest)[0] == 0
    before = {p: (dest / p).read_bytes() for p in ("slurm.conf", "gpu01/gres.conf")}
    broken = dict(A100, hpc_gres_node_cores_per_socket=16)  # cores 32-63 are now outside 2 x 16
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": broken})
    rc, out = render(inventory, dest)
    assert rc != 0
    assert "hosts gpu[01-03].lab: hpc_gres_gpus[2-3].cores: expected Slurm logical core indices within 0-31" in out
    assert {p: (dest / p).read_bytes() for p in before} == before


def test_config_modes_reach_the_render_through_the_playbook(tmp_path):
    """hpc_gres_config_mode and hpc_gres_include_file are read from the inventory by the playbook."""
    guide = [MANIFEST, "USERS.md", "USERS.motd"]
    for mode, expected in (("configless", guide + ["cgroup.conf", "gpu01/gres.conf", "gpu02/gres.conf",
                                                   "gpu03/gres.conf", "gres.conf", "slurm.conf"]),
                           ("include", guide + ["gpu01/gres.conf", "gpu02/gres.conf", "gpu03/gres.conf",
                                                "nodes.conf", "slurm.conf"])):
        cluster = {"hpc_gres_cluster_name": "lab", "hpc_gres_config_mode": mode, "hpc_gres_include_file": "nodes.conf"}
        inventory = write_inventory(tmp_path / mode / "inv", HOSTS, group_vars={"a100": A100, "all": cluster})
        dest = tmp_path / mode / "out"
        rc, out = render(inventory, dest)
        assert rc == 0, out
        written = sorted(os.path.relpath(os.path.join(d, f), dest) for d, _unused, fs in os.walk(dest) for f in fs)
        assert written == expected, mode
    assert "enable_configless" in (tmp_path / "configless" / "out" / "slurm.conf").read_text()
    assert "NodeName=gpu[01-03] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-31" in (
        tmp_path / "configless" / "out" / "gres.conf").read_text()
    assert "NodeName=gpu[01-03]" in (tmp_path / "include" / "out" / "nodes.conf").read_text()


def test_partial_socket_cores_on_24_11_are_refused_and_nothing_is_written(tmp_path):
    half = dict(A100, hpc_gres_gpus=[{"index": 0, "type": "a100", "cores": "0-15"}])
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": A100, "all": {"hpc_gres_slurm_version": "24.11"}},
                                host_vars={"gpu03.lab": half})
    dest = tmp_path / "out"
    rc, out = render(inventory, dest)
    assert rc != 0
    assert ("host gpu03.lab: hpc_gres_gpus[0].cores: expected Cores covering whole sockets (Slurm 24.11, "
            "hpc_gres_slurm_version, drains the node otherwise), found 0-15 for GPU 0: gres/gpu GRES core specification 0-15 "
            "for node gpu03 doesn't match socket boundaries. (Socket 0 is cores 0-31)") in out
    assert not dest.exists()
    # the same inventory for 22.05 renders, and says what 24.11 would do
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": A100, "all": {"hpc_gres_slurm_version": "22.05"}},
                                host_vars={"gpu03.lab": half})
    rc, out = render(inventory, dest)
    assert rc == 0, out
    assert "warning: host gpu03.lab: hpc_gres_gpus[0].cores: expected Cores covering whole sockets (Slurm 24.11 " \
           "and later drain the node; this cluster runs 22.05)" in out


def test_autodetect_nvidia_on_22_05_is_refused_naming_the_variable(tmp_path):
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={
        "a100": A100, "all": {"hpc_gres_slurm_version": "22.05", "hpc_gres_autodetect": "nvidia"}})
    rc, out = render(inventory, tmp_path / "out")
    assert rc != 0
    assert "hpc_gres_autodetect: expected one of off, nvml (the AutoDetect modes of Slurm 22.05" in out
    assert not (tmp_path / "out").exists()


def test_ib_suffixed_identical_nodes_render_a_form_22_05_reads(tmp_path):
    hosts = {"all": {"children": {"slurmctld": {"hosts": {"head": None}},
                                  "slurmd": {"hosts": {"node01-ib": None, "node02-ib": None}}}}}
    inventory = write_inventory(tmp_path / "inv", hosts, group_vars={"slurmd": A100, "all": {"hpc_gres_slurm_version": "22.05"}})
    rc, out = render(inventory, tmp_path / "out")
    assert rc == 0, out
    assert "\nNodeName=node01-ib,node02-ib Sockets=2 " in (tmp_path / "out" / "slurm.conf").read_text()
    assert "Slurm 22.05 (hpc_gres_slurm_version)" in out


def test_the_summary_says_when_the_default_release_is_assumed(tmp_path):
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": A100})
    rc, out = render(inventory, tmp_path / "out")
    assert rc == 0, out
    assert "Slurm 24.11: the default, the inventory does not set hpc_gres_slurm_version" in out


def test_a_refusal_prints_each_problem_once_with_its_hostlist_and_file(tmp_path):
    """Eight hosts of one group with three mistakes in its group_vars (issue 25): three lines, each printed once, each
    naming the hosts as one hostlist and the file and line the value is in; ansible-core's own error line and the
    result say the short message (twice on 2.19+), not the problems."""
    hosts = {"all": {"children": {"slurmctld": {"hosts": {"head.lab": None}},
                                  "slurmd": {"children": {"gpu": {"hosts": {"gpu-[01:08].lab": None}}}}}}}
    inventory = write_inventory(tmp_path / "inv", hosts)
    (tmp_path / "inv" / "group_vars").mkdir()
    (tmp_path / "inv" / "group_vars" / "gpu.yml").write_text(
        "hpc_gres_node_sockets: 2\n"
        "hpc_gres_node_cores_per_socket: 32\n"
        "hpc_gres_node_options:\n"
        "  Reason: \"rack 12\\nState=DRAIN\"\n"
        "hpc_gres_gpus:\n"
        "  - {index: 0, tpye: a100, cores: \"0-31\"}\n"
        "  - {index: 1, type: a100, cores: \"0-99\"}\n")
    rc, out = render(inventory, tmp_path / "out")
    assert rc != 0 and not (tmp_path / "out").exists()
    gpu_vars = os.path.join(tmp_path, "inv", "group_vars", "gpu.yml")
    expected = [
        "hosts gpu-[01-08].lab: hpc_gres_node_options.Reason: expected printable ASCII without '\"', '#' or '\\', "
        "found 'rack 12\\nState=DRAIN' (contains a newline) (a newline would start a new line of the file); "
        "defined in %s:4" % gpu_vars,
        "hosts gpu-[01-08].lab: hpc_gres_gpus[0].tpye: expected a GPU key (index, type, cores, minor, file, mig, "
        "shards, mps, model, links, flags, count), found unknown key 'tpye' (did you mean type?); defined in %s:6"
        % gpu_vars,
        "hosts gpu-[01-08].lab: hpc_gres_gpus[1].cores: expected Slurm logical core indices within 0-63",
    ]
    for text in expected:
        assert out.count(text) == 1, (text, out)
    # one line per problem, not one per host: no host of the group is named alone
    assert "gpu-01.lab" not in out and out.count("hpc_gres_gpus[0].tpye") == 1, out
    assert out.count("inventory refused (") <= 2 and "nothing was written" in out, out


def test_a_node_taken_out_of_the_inventory_leaves_the_render_directory_and_an_admins_file_stays(tmp_path):
    inventory = write_inventory(tmp_path / "inv", HOSTS, group_vars={"a100": A100})
    dest = tmp_path / "out"
    assert render(inventory, dest)[0] == 0
    (dest / "deploy-notes.txt").write_text("the site's own file\n")
    (dest / "gpu01" / "rack.txt").write_text("an admin's file in a node folder\n")
    before = testpaths.read_tree(dest)
    fewer = {"all": {"children": {
        "slurmctld": {"hosts": {"head.lab": None}},
        "slurmd": {"children": {"a100": {"hosts": {"gpu02.lab": None}}, "cpu": {"hosts": {"cpu[1:2].lab": None}}}},
    }}}
    inventory = write_inventory(tmp_path / "inv", fewer, group_vars={"a100": A100})
    # check mode and diff mode: the removals are shown, nothing is removed or written
    rc, out = render(inventory, dest, "--check", "--diff")
    assert rc == 0, out
    assert testpaths.read_tree(dest) == before
    assert "check mode, nothing written: 3 would change, 2 unchanged, 2 would be removed, in %s" % dest in out, out
    assert "would remove: gpu01/gres.conf (the render no longer writes it)" in out
    assert "after: (removed)" in out and out.count("-NodeName=gpu03 Name=gpu Type=a100") == 2, out
    rc, out = render(inventory, dest)
    assert rc == 0, out
    assert "written: 3 changed, 2 unchanged, 2 removed, in %s" % dest in out, out
    assert out.count("removed: gpu03/gres.conf (the render no longer writes it)") == 1, out
    after = testpaths.read_tree(dest)
    assert "gpu01/gres.conf" not in after and "gpu03/gres.conf" not in after and not (dest / "gpu03").exists()
    assert after["deploy-notes.txt"] == before["deploy-notes.txt"]
    assert after["gpu01/rack.txt"] == before["gpu01/rack.txt"]
    assert after["gpu02/gres.conf"] == before["gpu02/gres.conf"]


def doc_block(marker):
    with open(os.path.join(ROOT, "docs", "inventory.md"), encoding="utf-8") as handle:
        text = handle.read()
    found = re.search(r"<!-- %s -->\n```[a-z]*\n(.*?)```\n" % re.escape(marker), text, re.S)
    assert found, "docs/inventory.md lost its block %s" % marker
    return found.group(1)


def test_the_refusal_and_the_warning_docs_show_are_what_the_render_prints(tmp_path):
    """docs/inventory.md, "What a refusal looks like": its group_vars file, rendered by the real playbook from the
    inventory's directory, prints each of its problem lines once; fixed as the page says, the summary's warning."""
    hosts = {"all": {"children": {"slurmctld": {"hosts": {"head": None}},
                                  "slurmd": {"children": {"gpu": {"hosts": {"gpu-[01:08]": None}}}}}}}
    write_inventory(tmp_path, hosts)
    (tmp_path / "group_vars").mkdir()
    sample = doc_block("refusal-sample:inventory")
    (tmp_path / "group_vars" / "gpu.yml").write_text(sample)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")

    def run():
        proc = subprocess.run([testpaths.ANSIBLE_PLAYBOOK, "hpc.slurm_gres.render_gres", "-i", "hosts.yml",
                               "-e", "hpc_gres_render_dir=out"], cwd=str(tmp_path), env=env, check=False,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
        return proc.returncode, " ".join(proc.stdout.split()).replace("''", "'")
    rc, out = run()
    assert rc != 0 and not (tmp_path / "out").exists(), out
    msg, head, *problems = doc_block("refusal-sample:output").splitlines()
    assert head == "problems:" and msg.startswith("msg: ") and msg[5:] in out, out
    assert "(%d problems," % len(problems) in msg
    for line in problems:
        assert line.startswith("- ") and out.count(" ".join(line[2:].split())) == 1, (line, out)
    fixed = sample.replace("tpye", "type").replace("\\nState=DRAIN", "").replace(
        '  - {index: 1, type: a100, cores: "32-95"}', '  - {index: 1, type: a1OO, cores: "32-63"}')
    assert "`- {index: 1, type: a1OO, cores: \"32-63\"}`" in open(os.path.join(ROOT, "docs", "inventory.md")).read()
    (tmp_path / "group_vars" / "gpu.yml").write_text(fixed)
    rc, out = run()
    assert rc == 0, out
    (warning,) = doc_block("refusal-sample:warning").splitlines()
    assert out.count(" ".join(warning.split())) == 1, (warning, out)


def test_a_host_put_in_a_second_shape_group_is_rendered_with_a_warning_naming_both_groups(tmp_path):
    # Ansible merges the group_vars of two sibling groups by name: gpu03 gets the h100 group's GPUs, and says nothing
    hosts = {"all": {"children": {
        "slurmctld": {"hosts": {"head.lab": None}},
        "slurmd": {"children": {"a100": {"hosts": {"gpu[01:03].lab": None}},
                                "h100": {"hosts": {"gpu03.lab": None, "gpu04.lab": None}}}}}}}
    h100 = dict(A100, hpc_gres_gpus=[{"index": i, "type": "h100"} for i in range(8)])
    inventory = write_inventory(tmp_path / "inv", hosts, group_vars={"a100": A100, "h100": h100})
    rc, out = render(inventory, tmp_path / "out")
    assert rc == 0, out
    assert "NodeName=gpu[03-04]" in (tmp_path / "out" / "slurm.conf").read_text()
    warning = ("warning: host gpu03.lab: hpc_gres_gpus: expected one value among the host's groups (or one in its "
               "host_vars), found groups a100 (%s:5) and h100 (%s:5), neither a child of the other, set different "
               "values; the host has the value of h100" % (
                   tmp_path / "inv" / "group_vars" / "a100.yml", tmp_path / "inv" / "group_vars" / "h100.yml"))
    assert out.count(warning) == 1, out
    assert out.count("warning: host") == 1, out  # the other variables the two groups set are equal
