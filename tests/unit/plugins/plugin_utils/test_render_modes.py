"""Configless and include modes: which files the render produces and what they hold."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_gres_conf, parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_units
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

LAYOUT = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1}
A100 = dict(LAYOUT, hpc_gres_gpus=[{"index": i, "type": "a100", "cores": "0-3" if i < 2 else "4-7"}
                                   for i in range(4)])
NODES = {"gpu01": A100, "gpu02": A100, "gpu03": dict(LAYOUT, hpc_gres_gpus=[{"index": 0, "type": "l40s"}]),
         "cpu01": {}}


def render(**cluster):
    hostvars = dict(NODES, ctl={})
    return render_all(build_cluster_model(hostvars, {"slurmctld": ["ctl"], "slurmd": list(NODES)}, cluster))


def test_files_mode_is_the_default():
    assert sorted(render()) == ["cgroup.conf", "gpu01/gres.conf", "gpu02/gres.conf", "gpu03/gres.conf", "slurm.conf"]


def test_configless_one_gres_conf_for_the_cluster_that_every_node_reads_as_its_own():
    files = render(hpc_gres_config_mode="configless", hpc_gres_slurm_conf_options={"SlurmctldParameters": "cloud_dns"})
    assert "gres.conf" in files and "cgroup.conf" in files
    assert "SlurmctldParameters=cloud_dns,enable_configless\n" in files["slurm.conf"]
    lines = [line for line in files["gres.conf"].splitlines() if not line.startswith("#")]
    assert lines == ["NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-3",
                     "NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=4-7",
                     "NodeName=gpu03 Name=gpu Type=l40s File=/dev/nvidia0"]
    conf = parse_slurm_conf(files["slurm.conf"])
    for node in ("gpu01", "gpu02", "gpu03"):
        assert view_units(node_view(conf, files["gres.conf"], node)) == view_units(
            node_view(conf, files["%s/gres.conf" % node], node))
    assert parse_gres_conf(files["gres.conf"], "cpu01") == []


def test_configless_adds_enable_configless_once():
    files = render(hpc_gres_config_mode="configless")
    assert files["slurm.conf"].count("enable_configless") == 1
    files = render(hpc_gres_config_mode="configless",
                   hpc_gres_slurm_conf_options={"SlurmctldParameters": "enable_configless"})
    assert "SlurmctldParameters=enable_configless\n" in files["slurm.conf"]


def test_include_mode_renders_the_node_part_and_no_cgroup_conf():
    files = render(hpc_gres_config_mode="include", hpc_gres_include_file="nodes.conf")
    assert sorted(files) == ["gpu01/gres.conf", "gpu02/gres.conf", "gpu03/gres.conf", "nodes.conf", "slurm.conf"]
    include = files["nodes.conf"]
    assert "GresTypes=gpu\n" in include
    assert "NodeName=gpu[01-02] Sockets=2 CoresPerSocket=4 ThreadsPerCore=1 Gres=gpu:a100:4\n" in include
    assert "PartitionName=main Nodes=ALL Default=YES" in include
    assert not any(line.startswith(("AuthType", "SlurmctldHost", "ClusterName")) for line in include.splitlines())
    assert "checked, never installed" in files["slurm.conf"]


def test_include_mode_with_the_default_include_file_name():
    """slurm_gres.conf (the default) ends in gres.conf but is the slurm.conf part: its keys are slurm.conf's (the
    render once checked them as gres.conf keys and refused every one; found by molecule/import on 24.11)."""
    files = render(hpc_gres_config_mode="include")
    assert "NodeName=gpu[01-02] Sockets=2 CoresPerSocket=4 ThreadsPerCore=1 Gres=gpu:a100:4\n" in files[
        "slurm_gres.conf"]


@pytest.mark.parametrize("cluster, fragment", [
    ({"hpc_gres_config_mode": "sometimes"}, "hpc_gres_config_mode: expected one of files, configless, include"),
    ({"hpc_gres_config_mode": "include", "hpc_gres_slurm_conf_options": {"SelectType": "select/cons_tres"}},
     "hpc_gres_slurm_conf_options: expected nothing in include mode"),
    ({"hpc_gres_config_mode": "include", "hpc_gres_include_file": "../nodes.conf"},
     "hpc_gres_include_file: expected a file name relative to the Slurm config directory"),
    ({"hpc_gres_config_mode": "include", "hpc_gres_include_file": "gres.conf"},
     "hpc_gres_include_file: expected a file name relative to the Slurm config directory"),
])
def test_mode_refusals(cluster, fragment):
    with pytest.raises(GresError) as err:
        render(**cluster)
    assert fragment in str(err.value)


def test_configless_refuses_mig():
    hostvars = {"m1": {"hpc_gres_gpus": [{"index": 0, "type": "a100", "model": "A100-80GB", "mig": ["7g.80gb"]}]},
                "ctl": {}}
    with pytest.raises(GresError, match="m1: hpc_gres_gpus\\[0\\].mig: expected no MIG GPUs with configless mode"):
        build_cluster_model(hostvars, {"slurmctld": ["ctl"], "slurmd": ["m1"]},
                            {"hpc_gres_config_mode": "configless"})
