"""What a node's and a controller's plan say for new files (module_utils/slurm/config_modes.py): the decisions
gres_verify (node) and gres_plan (controller) return, which the deploy's roles act on."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.config_modes import controller_plan, node_plan
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import version_problems

SLURM = """ClusterName=demo
SlurmctldHost=ctl
GresTypes=gpu
NodeName=gpu01 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 Gres=gpu:a100:4
PartitionName=main Nodes=ALL Default=YES
"""
NEW = {"slurm.conf": SLURM, "cgroup.conf": "ConstrainDevices=yes\n",
       "gres.conf": "NodeName=gpu01 Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"}


def test_node_plan_reports_expected_gres_and_files_not_installed():
    old = dict(NEW, **{"gres.conf": "NodeName=gpu01 Name=gpu Type=a100 File=/dev/nvidia[0-2]\n",
                       "slurm.conf": SLURM.replace("a100:4", "a100:3")})
    plan = node_plan(NEW, old, "gpu01", installed=old)
    assert plan["restart"]
    assert plan["expected_gres"] == {"gpu:a100": 4}
    assert plan["applied_gres"] == {"gpu:a100": 3}
    assert plan["gres_changed"]
    assert plan["not_installed"] == ["slurm.conf", "gres.conf"]
    same = node_plan(NEW, NEW, "gpu01", installed=NEW)
    assert same["not_installed"] == [] and not same["gres_changed"] and not same["restart"]


def test_node_plan_without_gres_conf_on_a_cpu_node():
    new = dict(NEW, **{"gres.conf": None})
    plan = node_plan(new, {"slurm.conf": None, "cgroup.conf": None}, "gpu01", installed={"gres.conf": "left alone\n"})
    assert plan["restart"] and "gres.conf" not in plan["not_installed"]


def test_node_plan_refuses_a_file_slurmd_cannot_read():
    with pytest.raises(ConfSyntaxError, match="slurm.conf line 1"):
        node_plan(dict(NEW, **{"slurm.conf": "not a slurm conf\n"}), NEW, "gpu01")


def test_node_plan_leaves_out_the_install_only_when_content_and_attributes_are_in_place():
    attrs = {"mode": "0644", "uid": 0, "gid": 0, "owner": "root", "group": "root"}
    in_place = {name: dict(attrs) for name in NEW if NEW[name] is not None}
    wanted = {"mode": "0644", "owner": "root", "group": "root"}
    assert node_plan(NEW, NEW, "gpu01", NEW, in_place, wanted)["install"] is False
    # a file with another mode, or another content, or no attributes read: install (config_tree decides)
    other_mode = dict(in_place, **{"gres.conf": dict(attrs, mode="0600")})
    assert node_plan(NEW, NEW, "gpu01", NEW, other_mode, wanted)["install"] is True
    changed = dict(NEW, **{"gres.conf": NEW["gres.conf"] + "# edited\n"})
    assert node_plan(NEW, NEW, "gpu01", changed, in_place, wanted)["install"] is True
    assert node_plan(NEW, NEW, "gpu01", NEW)["install"] is True
    assert node_plan(NEW, NEW, "gpu01")["install"] is True


def test_controller_plan_restarts_after_the_nodes_when_a_count_goes_up():
    old = {"slurm.conf": SLURM.replace("a100:4", "a100:2"), "cgroup.conf": NEW["cgroup.conf"]}
    plan = controller_plan({"slurm.conf": SLURM, "cgroup.conf": NEW["cgroup.conf"]}, old, ["gpu01"])
    assert plan["restart_after"] and not plan["restart_before"] and plan["untargeted"] == []
    assert controller_plan({"slurm.conf": SLURM}, old, [])["untargeted"] == ["gpu01"]


def test_version_problems_name_host_command_expected_and_found():
    daemons = [{"host": "ctl", "daemon": "slurmctld", "version": "slurm-wlm 24.11.5"},
               {"host": "gpu01", "daemon": "slurmd", "version": "slurm-wlm 24.11.5"}]
    assert version_problems("24.11", daemons) == []
    problems = [str(p) for p in version_problems("26.05", daemons)]
    assert [p.split(":")[0] for p in problems] == ["host ctl", "host gpu01"]
    failed = [str(p) for p in version_problems("24.11", [
        {"host": "gpu01", "daemon": "slurmd", "version": "", "error": "/usr/sbin/slurmd -V: Error executing command."}])]
    assert failed[0].startswith("host gpu01: slurmd -V: expected a Slurm version such as 24.11.5, found "
                                "'/usr/sbin/slurmd -V: Error executing command.'"), failed
