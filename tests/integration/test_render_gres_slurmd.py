"""Inventories using the whole schema render files the real slurmd reads exactly as the collection does.

Per node: the real ``slurmd -N NODE -G`` must accept the rendered gres.conf, register per GRES key what the
rendered slurm.conf declares, and report the same records (types, device files, counts, Cores, Links) as the
collection's ``slurmd_gres.node_view`` of the same files.
"""
import pytest

import slurmd_oracle

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_units
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

LAYOUT = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 2}


def links(i, n, value=2):
    return ",".join("-1" if j == i else str(value) for j in range(n))


NODES = {
    "untyped1": dict(LAYOUT, hpc_gres_gpus=[{"index": i, "cores": "0-3" if i < 2 else "4-7"} for i in range(4)],
                     hpc_gres_node_shards=10),
    "links1": dict(LAYOUT, hpc_gres_gpus=[{"index": i, "type": "h100", "links": links(i, 4), "cores": "0-7",
                                           "flags": ["nvidia_gpu_env"], "mps": 100} for i in range(4)]),
    "generic1": dict(LAYOUT, hpc_gres_gpus=[{"index": 0, "type": "l40s", "minor": 3}],
                     hpc_gres_node_gres=[{"name": "bandwidth", "type": "lustre", "count": "4G", "no_consume": True},
                                         {"name": "tmpdisk", "count": "100G"},
                                         {"name": "mic", "file": "/dev/mic[0-1]", "cores": "4-7"}],
                     hpc_gres_node_options={"TmpDisk": 1000, "State": "UNKNOWN"}),
    "off1": dict(LAYOUT, hpc_gres_node_autodetect="off", hpc_gres_gpus=[{"index": 0, "type": "l40s", "shards": 4},
                                                                        {"index": 1, "type": "l40s", "shards": 4}]),
    # GPUs with their own device files: MIG instances as plain File lines, numbered stand-ins in a row, one odd file
    "files1": dict(LAYOUT, hpc_gres_gpus=[{"index": 0, "type": "1g.10gb", "file": "/dev/nvidia-caps/nvidia-cap30"},
                                          {"index": 1, "type": "1g.10gb", "file": "/dev/nvidia-caps/nvidia-cap39"}]),
    "files2": dict(LAYOUT, hpc_gres_gpus=[{"index": i, "file": "/dev/tty%d" % i, "cores": "0-3", "shards": 2}
                                          for i in range(3)] + [{"index": 3, "file": "/dev/dxg", "cores": "4-7"}]),
}


@pytest.fixture(scope="module")
def rendered():
    hostvars = dict(NODES, ctl={})
    model = build_cluster_model(hostvars, {"slurmctld": ["ctl"], "slurmd": list(NODES)},
                                {"hpc_gres_types": ["nic"],
                                 "hpc_gres_slurm_conf_options": {"ProctrackType": "proctrack/linuxproc",
                                                                 "TaskPlugin": "task/none"}})
    return model, render_all(model)


@pytest.mark.parametrize("name", sorted(NODES))
def test_slurmd_reads_the_rendered_node_as_the_collection_does(rendered, name):
    slurmd_oracle.require_oracle()
    model, files = rendered
    node = [n for n in model["nodes"] if n["name"] == name][0]
    slurm_text = files["slurm.conf"]
    gres_text = files[name + "/gres.conf"]
    result = slurmd_oracle.run_for_node(node, slurm_text, gres_text, other_devices=True)
    assert result.ok, result.describe()
    conf = parse_slurm_conf(slurm_text)
    expected = {k.lower(): v for k, v in conf["nodes"][name]["gres"].items()}
    assert {k.lower(): v for k, v in result.counts().items()} == expected, result.describe()
    view = node_view(conf, gres_text, name)
    assert view["fatal"] is None and [m for m in view["messages"] if m["level"] != "info"] == []
    assert view_units(view, with_flags=False) == result.units(), result.describe()


SITE = """ClusterName=site
SlurmctldHost=ctl
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
Include nodes.conf
"""


@pytest.mark.parametrize("mode", ["configless", "include"])
def test_configless_and_include_files_read_by_slurmd(mode):
    slurmd_oracle.require_oracle()
    nodes = {k: v for k, v in NODES.items() if k != "off1"}
    cluster = {"hpc_gres_config_mode": mode, "hpc_gres_include_file": "nodes.conf"}
    if mode == "configless":
        cluster["hpc_gres_slurm_conf_options"] = {"ProctrackType": "proctrack/linuxproc", "TaskPlugin": "task/none"}
    model = build_cluster_model(dict(nodes, ctl={}), {"slurmctld": ["ctl"], "slurmd": list(nodes)}, cluster)
    files = render_all(model)
    for node in model["nodes"]:
        own = files[node["name"] + "/gres.conf"]
        if mode == "configless":
            slurm_text, gres_text, extra = files["slurm.conf"], files["gres.conf"], {}
        else:  # the site's own slurm.conf pulls in the rendered node part
            slurm_text, gres_text, extra = SITE, own, {"nodes.conf": files["nodes.conf"]}
        result = slurmd_oracle.run_for_node(node, slurm_text, gres_text, other_devices=True, extra_files=extra)
        assert result.ok, result.describe()
        view = node_view(parse_slurm_conf(files["slurm.conf"]), own, node["name"])
        assert result.units() == view_units(view, with_flags=False), result.describe()
