"""Cluster models for the users' guide tests: the example inventory, and a small cluster with shards.

The model refuses MIG and shards in one cluster (Slurm 22.05 cannot have both), so shards get their own cluster.
"""
from render_helpers import EXAMPLE, load_inventory

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import model_from_inventory
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model


def example_model():
    return model_from_inventory(*load_inventory(EXAMPLE))


def _node(sockets, cores, gpus, threads=2, memory=256000):
    return {"hpc_gres_node_sockets": sockets, "hpc_gres_node_cores_per_socket": cores, "hpc_gres_node_threads_per_core": threads,
            "hpc_gres_node_real_memory": memory, "hpc_gres_gpus": gpus}


def shards_model(**cluster):
    """Two L40S inference nodes (8 shards per GPU), one A40 node with unequal shards, two H100 training nodes
    without shards, a CPU node; partitions "shared" (the sharded nodes) and "train" (H100 plus one L40S node)."""
    l40s = [{"index": i, "type": "l40s", "cores": "0-15" if i < 2 else "16-31", "shards": 8} for i in range(4)]
    a40 = [{"index": 0, "type": "a40", "cores": "0-7", "shards": 4},
           {"index": 1, "type": "a40", "cores": "0-7", "shards": 4},
           {"index": 2, "type": "a40", "cores": "8-15", "shards": 2}]
    h100 = [{"index": i, "type": "h100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)]
    hostvars = {"ctl": {}, "inf01": _node(2, 16, l40s), "inf02": _node(2, 16, l40s), "inf03": _node(2, 8, a40),
                "trn01": _node(2, 32, h100, memory=1000000), "trn02": _node(2, 32, h100, memory=1000000),
                "cpu01": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 8, "hpc_gres_node_threads_per_core": 1}}
    groups = {"all": list(hostvars), "slurmctld": ["ctl"], "slurmd": [h for h in hostvars if h != "ctl"]}
    settings = {"hpc_gres_cluster_name": "inference",
                "hpc_gres_partitions": [
                    {"name": "shared", "nodes": ["inf01", "inf02", "inf03"], "default": True},
                    {"name": "train", "nodes": ["trn01", "trn02", "inf01", "cpu01"],
                     "options": {"MaxTime": "3-00:00:00", "State": "UP"}}]}
    settings.update(cluster)
    return build_cluster_model(hostvars, groups, settings)


def untyped_model(viz_type="t4", **cluster):
    """A cluster as many real sites write it: untyped GPUs (``Gres=gpu:4``, gres.conf without Type=) with MPS on
    two nodes, one node of count-only GPUs AutoDetect finds (AutoDetect=nvml on that node alone), typed GPUs on
    another (``viz_type``; None: untyped too), other GRES (a no_consume bandwidth, a site-specific count);
    partitions "gpu" (untyped and count-only), "viz" (the typed node and an untyped one) and "cpu" (default)."""
    untyped = [{"index": i, "cores": "0-15" if i < 2 else "16-31", "mps": 100} for i in range(4)]
    nodes = {
        "ug01": _node(2, 16, untyped), "ug02": _node(2, 16, untyped),
        "ug03": dict(_node(2, 16, [{"count": 2}]), hpc_gres_node_autodetect="nvml"),
        "viz01": dict(_node(1, 16, [{"index": i, "type": viz_type} if viz_type else {"index": i} for i in range(2)]),
                      hpc_gres_node_gres=[{"name": "bandwidth", "type": "lustre", "count": "4G", "no_consume": True}]),
        "cpu01": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 8, "hpc_gres_node_threads_per_core": 1,
                  "hpc_gres_node_gres": [{"name": "tmpdisk", "count": 500}]},
    }
    hostvars = dict({"ctl": {}}, **nodes)
    groups = {"all": list(hostvars), "slurmctld": ["ctl"], "slurmd": list(nodes)}
    settings = {"hpc_gres_cluster_name": "legacy",
                "hpc_gres_partitions": [
                    {"name": "gpu", "nodes": ["ug01", "ug02", "ug03"]},
                    {"name": "viz", "nodes": ["viz01", "ug02"], "options": {"MaxTime": "08:00:00"}},
                    {"name": "cpu", "nodes": ["cpu01"], "default": True}]}
    settings.update(cluster)
    return build_cluster_model(hostvars, groups, settings)
