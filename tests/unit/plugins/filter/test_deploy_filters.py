"""The deploy filters: thin wrappers, but their input checks and extra fields are what the roles rely on."""
import pytest
from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.filter.gres_controller_plan import gres_controller_plan
from ansible_collections.hpc.slurm_gres.plugins.filter.gres_node_plan import gres_node_plan
from ansible_collections.hpc.slurm_gres.plugins.filter.gres_smoke_plan import gres_smoke_plan
from ansible_collections.hpc.slurm_gres.plugins.filter.gres_version_problems import gres_version_problems

pytestmark = pytest.mark.ansible_core

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
    plan = gres_node_plan(NEW, old, "gpu01", installed=old)
    assert plan["restart"]
    assert plan["expected_gres"] == {"gpu:a100": 4}
    assert plan["applied_gres"] == {"gpu:a100": 3}
    assert plan["gres_changed"]
    assert plan["not_installed"] == ["slurm.conf", "gres.conf"]
    same = gres_node_plan(NEW, NEW, "gpu01", installed=NEW)
    assert same["not_installed"] == [] and not same["gres_changed"] and not same["restart"]


def test_node_plan_without_gres_conf_on_a_cpu_node():
    new = dict(NEW, **{"gres.conf": None})
    plan = gres_node_plan(new, {"slurm.conf": None, "cgroup.conf": None}, "gpu01",
                          installed={"gres.conf": "left alone\n"})
    assert plan["restart"] and "gres.conf" not in plan["not_installed"]


def test_node_plan_rejects_bad_input():
    with pytest.raises(AnsibleFilterError, match="gres_node_plan: applied must be a dict"):
        gres_node_plan(NEW, "nope", "gpu01")
    with pytest.raises(AnsibleFilterError, match="gres_node_plan: node gpu01: slurm.conf line 1"):
        gres_node_plan(dict(NEW, **{"slurm.conf": "not a slurm conf\n"}), NEW, "gpu01")


def test_controller_plan_wrapper():
    plan = gres_controller_plan(SLURM, SLURM.replace("a100:4", "a100:2"), ["gpu01"])
    assert plan["restart_after"] and not plan["restart_before"] and plan["untargeted"] == []
    with pytest.raises(AnsibleFilterError, match="gres_controller_plan: the input must be slurm.conf text"):
        gres_controller_plan(None, SLURM)


def test_smoke_plan_wrapper():
    files = {"slurm.conf": SLURM, "cgroup.conf": "ConstrainDevices=yes\n", "gpu01/gres.conf": NEW["gres.conf"]}
    assert gres_smoke_plan(files, ["gpu01"]) == [
        {"type": "a100", "node": "gpu01", "count": 4, "gres": "gpu:a100:4", "expected": "0,1,2,3"}]
    with pytest.raises(AnsibleFilterError, match="gres_smoke_plan: the input must be the rendered files"):
        gres_smoke_plan({"gpu01/gres.conf": ""})


def test_version_problems_filter():
    daemons = [{"host": "ctl", "daemon": "slurmctld", "version": "slurm-wlm 24.11.5"},
               {"host": "gpu01", "daemon": "slurmd", "version": "slurm-wlm 24.11.5"}]
    assert gres_version_problems(daemons, "24.11") == []
    assert gres_version_problems(daemons, None) == []  # the default release
    problems = gres_version_problems(daemons, "26.05")
    assert [p.split(":")[0] for p in problems] == ["host ctl", "host gpu01"]
    assert gres_version_problems([{"host": "gpu01", "daemon": "slurmd", "version": None}], "24.11")[0].startswith(
        "host gpu01: slurmd -V: expected a Slurm version")
    failed = gres_version_problems([{"host": "gpu01", "daemon": "slurmd", "version": None,
                                     "error": "/usr/sbin/slurmd -V: Error executing command."}], "24.11")
    assert failed[0].startswith("host gpu01: slurmd -V: expected a Slurm version such as 24.11.5, found "
                                "'/usr/sbin/slurmd -V: Error executing command.'"), failed
    with pytest.raises(AnsibleFilterError):
        gres_version_problems({"ctl": "24.11"}, "24.11")
    with pytest.raises(AnsibleFilterError):
        gres_version_problems(daemons, "latest")


def test_node_plan_leaves_out_the_install_only_when_content_and_attributes_are_in_place():
    attrs = {"mode": "0644", "uid": 0, "gid": 0, "owner": "root", "group": "root"}
    in_place = {name: dict(attrs) for name in NEW if NEW[name] is not None}
    wanted = {"mode": "0644", "owner": "root", "group": "root"}
    assert gres_node_plan(NEW, NEW, "gpu01", NEW, in_place, wanted)["install"] is False
    # a file with another mode, or another content, or no attributes read: install (config_tree decides)
    other_mode = dict(in_place, **{"gres.conf": dict(attrs, mode="0600")})
    assert gres_node_plan(NEW, NEW, "gpu01", NEW, other_mode, wanted)["install"] is True
    changed = dict(NEW, **{"gres.conf": NEW["gres.conf"] + "# edited\n"})
    assert gres_node_plan(NEW, NEW, "gpu01", changed, in_place, wanted)["install"] is True
    assert gres_node_plan(NEW, NEW, "gpu01", NEW)["install"] is True
    assert gres_node_plan(NEW, NEW, "gpu01")["install"] is True
