"""build_cluster_model on valid inventories: defaults, normalization, ordering."""
import copy
import json

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_access import node_gres


def a100_node(**extra):
    hv = {
        "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
        "hpc_gres_node_real_memory": 515000,
        "hpc_gres_gpus": [{"index": i, "type": "a100", "cores": "0-31" if i < 2 else "32-63"} for i in range(4)],
    }
    hv.update(extra)
    return hv


def cluster(hostvars, slurmd, ctl=("ctl01",), **cluster_vars):
    groups = {"all": sorted(set(hostvars) | set(ctl)), "slurmctld": list(ctl), "slurmd": list(slurmd)}
    for host in ctl:
        hostvars.setdefault(host, {})
    return build_cluster_model(hostvars, groups, cluster_vars)


def test_defaults_and_normalization():
    model = cluster({"gpu10.example.org": a100_node(), "gpu9.example.org": a100_node()},
                    ["gpu10.example.org", "gpu9.example.org"])
    assert model["cluster_name"] == "cluster"
    assert model["slurm_version"] == "24.11" and model["slurm_version_default"] is True
    assert model["warnings"] == []
    assert model["autodetect"] == "off"
    assert model["controllers"] == [{"host": "ctl01", "name": "ctl01", "addr": None}]
    assert [n["name"] for n in model["nodes"]] == ["gpu9", "gpu10"]  # natural order, short names
    node = model["nodes"][0]
    assert node["host"] == "gpu9.example.org"
    assert (node["sockets"], node["cores_per_socket"], node["threads_per_core"]) == (2, 32, 2)
    assert node["real_memory"] == 515000
    assert node["features"] == [] and node["weight"] is None
    assert node["gpus"][0] == {"index": 0, "type": "a100", "minor": 0, "file": None, "cores": "0-31", "model": None,
                               "mig": None, "shards": None, "mps": None, "links": None, "flags": None}
    assert model["partitions"] == [{"name": "main", "nodes": "ALL", "default": True,
                                    "options": {"MaxTime": "INFINITE", "State": "UP"}}]
    assert model["settings"]["cgroup_conf"]["ConstrainDevices"] == "yes"
    assert model["settings"]["slurm_conf"]["SelectType"] == "select/cons_tres"
    json.dumps(model)  # plain data all the way down


def test_gpus_sorted_by_index_minor_kept_and_cores_canonical():
    hv = a100_node(hpc_gres_gpus=[
        {"index": 1, "type": "a100", "minor": 0, "cores": "32,33,34,35"},
        {"index": 0, "type": "a100", "minor": 1, "cores": 3, "model": "A100-SXM4-80GB", "shards": 4},
    ])
    # partial sockets: refused from Slurm 24.11 on (test_versions_model), a warning on 22.05
    gpus = cluster({"n1": hv}, ["n1"], hpc_gres_slurm_version="22.05")["nodes"][0]["gpus"]
    assert [(g["index"], g["minor"], g["cores"]) for g in gpus] == [(0, 1, "3"), (1, 0, "32-35")]
    assert gpus[0]["model"] == "A100-SXM4-80GB" and gpus[0]["shards"] == 4


def test_host_in_both_slurmctld_and_slurmd_is_fine():
    model = cluster({"lab01": a100_node()}, ["lab01"], ctl=("lab01",))
    assert model["controllers"][0]["name"] == "lab01"
    assert [n["name"] for n in model["nodes"]] == ["lab01"]


def test_cpu_only_node_needs_no_layout():
    model = cluster({"cpu01": {}}, ["cpu01"])
    node = model["nodes"][0]
    assert node["gpus"] == [] and node["sockets"] is None


def test_hpc_gres_node_name_and_controller_addr():
    hv = {"n1.site": a100_node(hpc_gres_node_name="gpu-x1"), "ctl.site": {"hpc_gres_controller_addr": "10.1.0.1"}}
    model = cluster(hv, ["n1.site"], ctl=("ctl.site",))
    assert model["nodes"][0]["name"] == "gpu-x1"
    assert model["controllers"] == [{"host": "ctl.site", "name": "ctl", "addr": "10.1.0.1"}]


def test_digit_strings_from_extra_vars_are_accepted():
    hv = a100_node(hpc_gres_node_sockets="2", hpc_gres_node_cores_per_socket="32")
    assert cluster({"n1": hv}, ["n1"])["nodes"][0]["sockets"] == 2


def test_autodetect_false_from_bare_yaml_off_means_off():
    assert cluster({"n1": a100_node()}, ["n1"], hpc_gres_autodetect=False)["autodetect"] == "off"
    assert cluster({"n1": a100_node()}, ["n1"], hpc_gres_autodetect="NVML")["autodetect"] == "nvml"


def test_null_cluster_vars_take_defaults():
    model = cluster({"n1": a100_node()}, ["n1"], hpc_gres_cluster_name=None, hpc_gres_partitions=None)
    assert model["cluster_name"] == "cluster" and model["partitions"][0]["name"] == "main"


def test_option_overrides_merge_case_insensitively_and_null_drops():
    model = cluster({"n1": a100_node()}, ["n1"], hpc_gres_slurm_conf_options={
        "tasKPlugin": "task/none", "SelectTypeParameters": None, "SlurmctldDebug": "debug",
        "PrologFlags": ["Alloc", "Contain"], "ReturnToService": 2},
        hpc_gres_cgroup_conf_options={"ConstrainSwapSpace": True, "ConstrainRAMSpace": False})
    conf = model["settings"]["slurm_conf"]
    assert conf["TaskPlugin"] == "task/none"
    assert "SelectTypeParameters" not in conf
    assert conf["SlurmctldDebug"] == "debug" and conf["PrologFlags"] == "Alloc,Contain"
    assert conf["ReturnToService"] == "2"
    cg = model["settings"]["cgroup_conf"]
    assert cg["ConstrainSwapSpace"] == "yes" and cg["ConstrainRAMSpace"] == "no"


def test_partitions_from_groups_and_hostlists():
    hv = {"gpu-a01": a100_node(), "gpu-a02": a100_node(), "cpu01": {}}
    groups = {"all": ["ctl01", "gpu-a01", "gpu-a02", "cpu01"], "slurmctld": ["ctl01"],
              "slurmd": ["gpu-a01", "gpu-a02", "cpu01"], "gpu": ["gpu-a02", "gpu-a01"]}
    hv["ctl01"] = {}
    model = build_cluster_model(hv, groups, {"hpc_gres_partitions": [
        {"name": "gpu", "group": "gpu", "options": {"MaxTime": "1-00:00:00"}},
        {"name": "all", "nodes": "ALL", "default": True},
        {"name": "one", "nodes": "gpu-a[01]"},
        {"name": "two", "nodes": ["cpu01", "gpu-a02"]},
    ]})
    parts = {p["name"]: p for p in model["partitions"]}
    assert parts["gpu"]["nodes"] == ["gpu-a01", "gpu-a02"]
    assert parts["gpu"]["options"] == {"MaxTime": "1-00:00:00", "State": "UP"}
    assert parts["all"]["nodes"] == "ALL" and parts["all"]["default"] is True
    assert parts["one"]["nodes"] == ["gpu-a01"]
    assert parts["two"]["nodes"] == ["cpu01", "gpu-a02"]


def test_shared_group_vars_objects_give_independent_nodes():
    shared = a100_node()
    model = cluster({"n1": shared, "n2": shared}, ["n1", "n2"])
    model["nodes"][0]["gpus"][0]["type"] = "changed"
    assert model["nodes"][1]["gpus"][0]["type"] == "a100"
    assert shared["hpc_gres_gpus"][0]["type"] == "a100"


def test_input_is_not_modified():
    hv = {"n1": a100_node(), "ctl01": {}}
    before = copy.deepcopy(hv)
    cluster(hv, ["n1"])
    assert hv == before


def test_node_gres_orders_types_by_lowest_index_and_counts_mig_and_shards():
    # MIG and shards cannot share a cluster (Slurm 22.05), so each is checked on its own cluster.
    hv = a100_node(hpc_gres_gpus=[
        {"index": 0, "type": "l40s", "shards": 4},
        {"index": 1, "type": "l40s", "shards": 4},
        {"index": 3, "type": "a100"},
    ])
    node = cluster({"n1": hv}, ["n1"])["nodes"][0]
    assert list(node_gres(node).items()) == [("gpu:l40s", 2), ("gpu:a100", 1), ("shard", 8)]
    hv = a100_node(hpc_gres_gpus=[
        {"index": 0, "type": "l40s"},
        {"index": 2, "type": "a100", "model": "A100-80GB", "mig": ["3g.40gb", "3g.40gb"]},
        {"index": 3, "type": "a100"},
    ])
    node = cluster({"n1": hv}, ["n1"])["nodes"][0]
    assert list(node_gres(node).items()) == [("gpu:l40s", 1), ("gpu:3g.40gb", 2), ("gpu:a100", 1)]
    assert mig_gres_type("h100", "1g.10gb+me") == "1g.10gb+me"
