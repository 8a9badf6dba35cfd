"""hpc_gres_slurm_version in the model and what the renderer does with it: refusals, warnings, hostlist forms, summary."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import DEFAULT_SLURM_VERSION
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all, summarize


def node(cores=("0-31", "32-63"), sockets=2, per_socket=32, **extra):
    hv = {"hpc_gres_node_sockets": sockets, "hpc_gres_node_cores_per_socket": per_socket, "hpc_gres_node_threads_per_core": 2,
          "hpc_gres_gpus": [{"index": i, "type": "h100", "cores": c} for i, c in enumerate(cores)]}
    hv.update(extra)
    return hv


def build(hostvars, **cluster):
    hostvars = dict(hostvars, ctl01={})
    groups = {"all": sorted(hostvars), "slurmctld": ["ctl01"], "slurmd": sorted(h for h in hostvars if h != "ctl01")}
    return build_cluster_model(hostvars, groups, cluster)


def problems(hostvars, **cluster):
    with pytest.raises(GresError) as err:
        build(hostvars, **cluster)
    return err.value.problems


def test_default_release_is_stated_in_the_summary():
    model = build({"gpu01": node()})
    assert model["slurm_version"] == DEFAULT_SLURM_VERSION == "24.11"
    lines = summarize(model, render_all(model))["lines"]
    assert any(line.startswith("Slurm 24.11: the default, the inventory does not set hpc_gres_slurm_version") for line in lines)
    model = build({"gpu01": node()}, hpc_gres_slurm_version="26.05")
    assert model["slurm_version_default"] is False
    assert "Slurm 26.05 (hpc_gres_slurm_version)" in summarize(model)["lines"]


@pytest.mark.parametrize("value,release", [("22.05", "22.05"), (22.05, "22.05"), ("24.11.5", "24.11"),
                                           ("slurm-wlm 26.05.3", "26.05"), ("23.02", "23.02")])
def test_accepted_versions(value, release):
    assert build({"gpu01": node()}, hpc_gres_slurm_version=value)["slurm_version"] == release


@pytest.mark.parametrize("value,hint", [("21.08", None), ("24.12", None), ("27.05", "versions.py"), ("latest", None),
                                        (["24.11"], None), ("23.2", "two digits: 23.02 if"),
                                        ("24.5.1", "two digits: 24.05 if"), (23.2, None)])
def test_refused_versions_name_the_variable(value, hint):
    found = problems({"gpu01": node()}, hpc_gres_slurm_version=value)
    assert [(p.host, p.field) for p in found] == [("localhost", "hpc_gres_slurm_version")]
    assert found[0].expected.startswith("a Slurm release 22.05 to 26.05")
    if hint:
        assert hint in found[0].hint


def test_autodetect_nvidia_needs_24_11():
    found = problems({"gpu01": node()}, hpc_gres_slurm_version="22.05", hpc_gres_autodetect="nvidia")
    assert [(p.host, p.field) for p in found] == [("localhost", "hpc_gres_autodetect")]
    assert str(found[0]).startswith("host localhost: hpc_gres_autodetect: expected one of off, nvml (the AutoDetect "
                                    "modes of Slurm 22.05, hpc_gres_slurm_version; nvidia needs Slurm 24.11 or later), found "
                                    "'nvidia'")
    assert "unknown autodetect flag" in found[0].hint
    for release in ("24.11", "26.05"):
        assert build({"gpu01": node()}, hpc_gres_slurm_version=release, hpc_gres_autodetect="nvidia")["autodetect"] == "nvidia"
    assert build({"gpu01": node()}, hpc_gres_slurm_version="22.05", hpc_gres_autodetect="nvml")["autodetect"] == "nvml"


def test_autodetect_full_needs_26_05_and_no_mig():
    for release in ("22.05", "24.11"):
        found = problems({"gpu01": node()}, hpc_gres_slurm_version=release, hpc_gres_autodetect="full")
        assert [(p.host, p.field) for p in found] == [("localhost", "hpc_gres_autodetect")]
        assert "full needs Slurm 26.05 or later" in found[0].expected
    model = build({"gpu01": node()}, hpc_gres_slurm_version="26.05", hpc_gres_autodetect="full")
    assert model["autodetect"] == "full"
    assert "NodeName=gpu01 AutoDetect=full\n" in render_all(model)["gpu01/gres.conf"]
    mig = node()
    mig["hpc_gres_gpus"][1].update(mig=["3g.40gb", "3g.40gb"], model="A100-80GB", type="a100")
    found = problems({"gpu01": node(), "gpu02": mig}, hpc_gres_slurm_version="26.05", hpc_gres_autodetect="full")
    assert [(p.host, p.field, p.found) for p in found] == [
        ("localhost", "hpc_gres_autodetect", "'full' (host gpu02 GPU 1 has mig)")]
    assert build({"gpu02": mig}, hpc_gres_slurm_version="26.05", hpc_gres_autodetect="nvidia")["autodetect"] == "nvidia"


def test_cgroup_v1_is_a_warning_where_the_release_deprecates_it():
    v1 = {"CgroupPlugin": "cgroup/v1"}
    assert build({"gpu01": node()}, hpc_gres_slurm_version="24.11", hpc_gres_cgroup_conf_options=v1)["warnings"] == []
    model = build({"gpu01": node()}, hpc_gres_slurm_version="26.05", hpc_gres_cgroup_conf_options=v1)
    assert model["warnings"] == [
        "host localhost: hpc_gres_cgroup_conf_options.CgroupPlugin: expected cgroup/v2 or autodetect (cgroup/v1 is "
        "deprecated in Slurm 26.05, hpc_gres_slurm_version), found cgroup/v1 (slurmd logs 'cgroup/v1 plugin is deprecated, "
        "please upgrade to cgroup/v2'; boot the nodes with the unified hierarchy (systemd.unified_cgroup_hierarchy=1) "
        "and use cgroup/v2)"]
    assert "CgroupPlugin=cgroup/v1\n" in render_all(model)["cgroup.conf"]  # still rendered: it works
    assert build({"gpu01": node()}, hpc_gres_slurm_version="26.05")["warnings"] == []  # the default, autodetect


def test_partial_socket_cores_refused_from_24_11():
    hv = {"gpu01.lab": node(cores=("0-15", "32-63"))}
    for release in ("24.11", "26.05"):
        found = problems(hv, hpc_gres_slurm_version=release)
        assert len(found) == 1
        text = str(found[0])
        assert text.startswith("host gpu01.lab: hpc_gres_gpus[0].cores: expected Cores covering")
        assert "found 0-15 for GPU 0: gres/gpu GRES core specification 0-15 for node gpu01 doesn't match socket " \
               "boundaries. (Socket 0 is cores 0-31)" in text
        remedy = "whole socket(s) it is local to (0-31)" if release == "24.11" else "one socket it is local to, or all"
        assert remedy in found[0].hint


def test_partial_socket_cores_warned_before_24_11_with_the_same_text():
    hv = {"gpu01.lab": node(cores=("0-15", "32-63"))}
    model = build(hv, hpc_gres_slurm_version="22.05")
    assert len(model["warnings"]) == 1
    warning = model["warnings"][0]
    assert warning.startswith("host gpu01.lab: hpc_gres_gpus[0].cores: expected Cores covering whole sockets "
                              "(Slurm 24.11 and later drain the node; this cluster runs 22.05)")
    assert "gres/gpu GRES core specification 0-15 for node gpu01 doesn't match socket boundaries. (Socket 0 is " \
           "cores 0-31)" in warning
    assert "warning: " + warning in summarize(model)["lines"]


def test_gpu_field_is_the_inventory_position_and_the_index_is_named():
    hv = {"gpu01": node(hpc_gres_gpus=[{"index": 3, "type": "h100", "cores": "32-63"},
                                       {"index": 1, "type": "h100", "cores": "40-47"}])}
    found = problems(hv, hpc_gres_slurm_version="24.11")
    assert found[0].field == "hpc_gres_gpus[1].cores" and "for GPU 1:" in found[0].found
    assert "(Socket 1 is cores 32-63)" in found[0].found


def test_two_whole_sockets_warned_on_24_11_refused_from_25_11():
    hv = {"gpu01": node(cores=("0-31", "32-63"), sockets=4, per_socket=16)}
    model = build(hv, hpc_gres_slurm_version="24.11")
    assert len(model["warnings"]) == 2 and "Slurm 25.11 and later drain the node" in model["warnings"][0]
    refused = problems(hv, hpc_gres_slurm_version="26.05")
    assert len(refused) == 2 and "the one socket it is local to, or all cores (0-63)" in refused[0].hint
    assert build({"gpu01": node(cores=("0-63", "0-63"), sockets=4, per_socket=16)}, hpc_gres_slurm_version="26.05")


def test_socket_redefining_parameters_skip_the_check_with_a_warning():
    hv = {"gpu01": node(cores=("0-15", "32-63"))}
    model = build(hv, hpc_gres_slurm_version="24.11", hpc_gres_slurm_conf_options={"SlurmdParameters": "l3cache_as_socket"})
    assert len(model["warnings"]) == 1 and "not checked" in model["warnings"][0]


def test_ib_suffixed_identical_nodes_per_release():
    hv = {"node01-ib": node(), "node02-ib": node()}
    old = render_all(build(hv, hpc_gres_slurm_version="22.05"))["slurm.conf"]
    new = render_all(build(hv, hpc_gres_slurm_version="24.11"))["slurm.conf"]
    assert "\nNodeName=node01-ib,node02-ib Sockets=2" in old and "node[01-02]-ib" not in old
    assert "\nNodeName=node[01-02]-ib Sockets=2" in new
    for text in (old, new):
        assert sorted(parse_slurm_conf(text)["nodes"]) == ["node01-ib", "node02-ib"]


def test_partition_nodes_use_the_release_form():
    hv = {"node01-ib": node(), "node02-ib": node(), "cpu1": {}}
    parts = [{"name": "gpu", "nodes": ["node01-ib", "node02-ib"]}]
    text = render_all(build(hv, hpc_gres_slurm_version="22.05", hpc_gres_partitions=parts))["slurm.conf"]
    assert "PartitionName=gpu Nodes=node01-ib,node02-ib " in text


def test_slurmctld_pidfile_default_follows_the_release_unit():
    assert build({"gpu01": node()}, hpc_gres_slurm_version="22.05")["settings"]["slurm_conf"]["SlurmctldPidFile"] == \
        "/run/slurmctld.pid"
    for release in ("23.11", "24.11", "26.05"):
        conf = build({"gpu01": node()}, hpc_gres_slurm_version=release)["settings"]["slurm_conf"]
        assert conf["SlurmctldPidFile"] == "/run/slurmctld/slurmctld.pid"
    # a site's own value wins
    conf = build({"gpu01": node()}, hpc_gres_slurm_conf_options={"SlurmctldPidFile": "/var/run/x.pid"})["settings"]["slurm_conf"]
    assert conf["SlurmctldPidFile"] == "/var/run/x.pid"


def test_the_summary_caps_warning_lines():
    # the second GPU's warning is the same on every host (one line, "for node <node>"); the first's differs
    hv = dict(("gpu%02d" % i, node(cores=("0-%d" % (i + 1), "32-47"))) for i in range(30))
    model = build(hv, hpc_gres_slurm_version="22.05")
    assert len(model["warnings"]) == 31
    assert sum(1 for w in model["warnings"] if w.startswith("hosts gpu[00-29]: hpc_gres_gpus[1].cores: ")
               and "for node <node> doesn't match" in w) == 1
    lines = [line for line in summarize(model)["lines"] if line.startswith("warning: ")]
    assert len(lines) == 21 and lines[-1] == "warning: ... and 11 more (the model's warnings list has them all)"


def test_a_node_of_its_own_autodetect_full_with_mig_is_refused_by_host():
    """hpc_gres_node_autodetect overrides the cluster's mode for that node: full with MIG is refused there, and a
    MIG node that says nvml is fine on a cluster whose mode is full."""
    mig = node()
    mig["hpc_gres_gpus"][1].update(mig=["3g.40gb", "3g.40gb"], model="A100-80GB", type="a100")
    found = problems({"gpu01": node(), "gpu02": dict(mig, hpc_gres_node_autodetect="full")}, hpc_gres_slurm_version="26.05")
    assert [(p.host, p.field, p.found) for p in found] == [("gpu02", "hpc_gres_node_autodetect", "'full' (GPU 1 has mig)")]
    model = build({"gpu01": node(), "gpu02": dict(mig, hpc_gres_node_autodetect="nvml")}, hpc_gres_slurm_version="26.05",
                  hpc_gres_autodetect="full")
    assert model["autodetect"] == "full"
    found = problems({"gpu02": dict(mig, hpc_gres_node_autodetect="nvidia")}, hpc_gres_slurm_version="22.05")
    assert [(p.host, p.field) for p in found] == [("gpu02", "hpc_gres_node_autodetect")]
    assert "nvidia needs Slurm 24.11 or later" in found[0].expected
