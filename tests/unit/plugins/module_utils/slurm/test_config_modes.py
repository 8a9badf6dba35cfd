"""What each config mode installs where, and how the restart planner sees it."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.config_modes import (
    configless_restart,
    controller_plan,
    deploy_files,
    node_plan,
)

SLURM = "ClusterName=c\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=n1 Gres=gpu:a:2\n"
NODE_GRES = "NodeName=n1 Name=gpu Type=a File=/dev/nvidia[0-1]\n"
FILES = {"slurm.conf": SLURM, "cgroup.conf": "ConstrainDevices=yes\n", "n1/gres.conf": NODE_GRES,
         "gres.conf": "NodeName=n1 Name=gpu Type=a File=/dev/nvidia[0-1]\n", "inc.conf": "GresTypes=gpu\n"
         "NodeName=n1 Gres=gpu:a:2\n"}


def test_files_mode():
    node = deploy_files(FILES, "node", "n1")
    assert node["install"] == node["record"] == ["gres.conf", "cgroup.conf", "slurm.conf"]
    assert node["files"]["gres.conf"] == NODE_GRES
    assert deploy_files(FILES, "controller")["install"] == ["cgroup.conf", "slurm.conf"]


def test_configless_installs_nothing_on_the_node_but_records_what_slurmd_fetches():
    node = deploy_files(FILES, "node", "n1", "configless")
    assert node["install"] == [] and node["record"] == ["gres.conf", "cgroup.conf", "slurm.conf"]
    assert node["files"]["gres.conf"] == FILES["gres.conf"]  # the cluster-wide one slurmctld serves
    installed = deploy_files(FILES, "controller", mode="configless")["install"]
    assert installed == ["cgroup.conf", "gres.conf", "slurm.conf"]


def test_include_mode_installs_the_include_file_and_gres_conf():
    node = deploy_files(FILES, "node", "n1", "include", "inc.conf")
    assert node["install"] == ["gres.conf", "inc.conf"]
    assert deploy_files(FILES, "controller", mode="include", include_file="inc.conf")["install"] == ["inc.conf"]


def test_node_plan_reads_the_include_file_as_slurm_conf():
    new = deploy_files(FILES, "node", "n1", "include", "inc.conf")["files"]
    same = node_plan(new, dict(new), "n1", installed=dict(new), mode="include", include_file="inc.conf")
    assert not same["restart"] and same["expected_gres"] == {"gpu:a": 2} and same["not_installed"] == []
    more = dict(new, **{"inc.conf": "GresTypes=gpu\nNodeName=n1 Gres=gpu:a:3\n"})
    plan = node_plan(more, new, "n1", installed=new, mode="include", include_file="inc.conf")
    assert plan["restart"] and plan["gres_changed"] and plan["not_installed"] == ["inc.conf"]


def test_configless_node_plan_never_reports_files_not_installed():
    new = deploy_files(FILES, "node", "n1", "configless")["files"]
    plan = node_plan(new, {}, "n1", installed={}, mode="configless")
    assert plan["restart"] and plan["not_installed"] == []


def test_configless_controller_restarts_first_whenever_a_served_file_changes():
    applied = {"slurm.conf": SLURM, "cgroup.conf": "ConstrainDevices=yes\n", "gres.conf": FILES["gres.conf"]}
    assert configless_restart(applied, dict(applied)) == []
    # the same meaning in other words restarts nothing
    reworded = dict(applied, **{"gres.conf": "# comment\nNodeName=n1 Name=gpu Type=a File=/dev/nvidia0\n"
                                             "NodeName=n1 Name=gpu Type=a File=/dev/nvidia1\n"})
    assert configless_restart(applied, reworded) == []
    cores = dict(applied, **{"gres.conf": "NodeName=n1 Name=gpu Type=a File=/dev/nvidia[0-1] Cores=0\n"})
    assert configless_restart(applied, cores) == [
        "gres.conf changed for n1 (configless nodes fetch it from slurmctld)"]
    up = dict(cores, **{"slurm.conf": SLURM.replace("gpu:a:2", "gpu:a:3")})
    plan = controller_plan(up, applied, ["n1"], mode="configless")
    # a count going up would restart slurmctld after the nodes; configless nodes fetch the files from it: before
    assert plan["restart_before"] and not plan["restart_after"]


def test_an_unknown_mode_or_role_is_refused():
    with pytest.raises(ValueError, match="config mode: expected one of files, configless, include"):
        deploy_files(FILES, "node", "n1", "pull")
    with pytest.raises(ValueError, match="role: expected node or controller"):
        deploy_files(FILES, "login")
