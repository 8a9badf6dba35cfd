"""Cluster model -> slurm.conf, cgroup.conf and one gres.conf per GPU node (deterministic bytes).

``render_all`` proves its own output before returning it: the files are parsed back with module_utils/slurm/conf.py and,
per node and GRES type, slurm.conf's count must equal gres.conf's; otherwise it raises GresError.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import versions
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import (
    natural_key,
    node_gres,
    uses_slurmdbd,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import gres_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import consistency_problems
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.gres_conf import GENERATED, node_gres_conf

SUMMARY_WARNINGS = 20  # warning lines the summary shows; a 4,096-node cluster could have thousands


def _node_line(node, gres):
    parts = []
    if node["sockets"] is not None:
        parts.append("Sockets=%d" % node["sockets"])
    if node["cores_per_socket"] is not None:
        parts.append("CoresPerSocket=%d" % node["cores_per_socket"])
    if node["threads_per_core"] is not None:
        parts.append("ThreadsPerCore=%d" % node["threads_per_core"])
    if node["real_memory"] is not None:
        parts.append("RealMemory=%d" % node["real_memory"])
    if node["features"]:
        parts.append("Features=%s" % ",".join(node["features"]))
    if node["weight"] is not None:
        parts.append("Weight=%d" % node["weight"])
    if gres:
        parts.append("Gres=%s" % ",".join("%s:%d" % kv for kv in gres.items()))
    return parts


def slurm_version(model):
    """The release the files are rendered for (models built before slurm_version existed: the default)."""
    return model.get("slurm_version") or versions.DEFAULT_SLURM_VERSION


def node_groups(model):
    """[(hostlist expression, node line options, gres)] with identical nodes grouped, in natural order.

    The expression is in a form the cluster's release parses (``versions.format_hostlist``)."""
    groups = {}
    order = []
    for node in model["nodes"]:
        gres = node_gres(node)
        key = (node["sockets"], node["cores_per_socket"], node["threads_per_core"], node["real_memory"],
               tuple(node["features"]), node["weight"], tuple(gres.items()))
        if key not in groups:
            groups[key] = {"names": [], "node": node, "gres": gres}
            order.append(key)
        groups[key]["names"].append(node["name"])
    result = []
    release = slurm_version(model)
    for key in order:
        group = groups[key]
        expr = versions.format_hostlist(group["names"], release)
        result.append((natural_key(group["names"][0]), expr, _node_line(group["node"], group["gres"]), group["gres"]))
    result.sort(key=lambda item: item[0])
    return [(expr, opts, gres) for _, expr, opts, gres in result]


def _tres(model, user_value):
    types = set()
    shards = False
    for node in model["nodes"]:
        for key in node_gres(node):
            if key == "shard":
                shards = True
            else:
                types.add(key.split(":", 1)[1])
    ours = []
    if types:
        ours.append("gres/gpu")
        ours.extend("gres/gpu:%s" % t for t in sorted(types, key=str.lower))
    if shards:
        ours.append("gres/shard")
    entries = [e.strip() for e in user_value.split(",") if e.strip()] if user_value else []
    lower = {e.lower() for e in entries}
    entries.extend(e for e in ours if e.lower() not in lower)
    return ",".join(entries), bool(types), shards


def render_slurm_conf(model):
    """slurm.conf text for the whole cluster."""
    options = dict(model["settings"]["slurm_conf"])
    user_tres = None
    for key in list(options):
        if key.lower() == "accountingstoragetres":
            user_tres = options.pop(key)
    out = ["# slurm.conf for cluster %s, Slurm %s\n" % (model["cluster_name"], slurm_version(model)), GENERATED]
    out.append("ClusterName=%s\n" % model["cluster_name"])
    for ctl in model["controllers"]:
        if ctl["addr"]:
            out.append("SlurmctldHost=%s(%s)\n" % (ctl["name"], ctl["addr"]))
        else:
            out.append("SlurmctldHost=%s\n" % ctl["name"])
    for key, value in options.items():
        out.append("%s=%s\n" % (key, value))

    tres, has_gpus, has_shards = _tres(model, user_tres)
    if has_gpus:
        out.append("\n# Generic resources: every node's Gres= below is proven equal to its gres.conf\n")
        out.append("GresTypes=%s\n" % ("gpu,shard" if has_shards else "gpu"))
    if uses_slurmdbd(model):
        if tres:
            out.append("AccountingStorageTRES=%s\n" % tres)
    else:
        if user_tres:
            out.append("AccountingStorageTRES=%s\n" % user_tres)
        if has_gpus:
            # slurmctld exits on GRES TRES without slurmdbd ("slurmdbd is required to run with TRES gres/gpu").
            out.append("# GPU accounting (AccountingStorageTRES=gres/gpu,gres/gpu:TYPE,...) is added when\n"
                       "# AccountingStorageType=accounting_storage/slurmdbd is set in slurm_conf_options.\n")

    groups = node_groups(model)
    out.append("\n# Compute nodes (%d): identical nodes share one line\n" % len(model["nodes"]))
    for expr, opts, _ in groups:
        out.append(" ".join(["NodeName=%s" % expr] + opts) + "\n")

    out.append("\n# Partitions\n")
    release = slurm_version(model)
    for part in model["partitions"]:
        nodes = part["nodes"] if part["nodes"] == "ALL" else versions.format_hostlist(part["nodes"], release)
        line = ["PartitionName=%s" % part["name"], "Nodes=%s" % nodes,
                "Default=%s" % ("YES" if part["default"] else "NO")]
        line.extend("%s=%s" % kv for kv in part["options"].items())
        out.append(" ".join(line) + "\n")
    return "".join(out)


def gres_spec(model, node):
    """What ``gres_conf.node_gres_conf`` renders one node's gres.conf from (the node may render it again, live)."""
    return {"cluster_name": model["cluster_name"], "autodetect": model["autodetect"], "node": node}


def render_gres_conf(model, node_name):
    """gres.conf text for one node (KeyError if the model has no such node)."""
    for node in model["nodes"]:
        if node["name"] == node_name:
            return node_gres_conf(gres_spec(model, node))
    raise KeyError(node_name)


def render_cgroup_conf(model):
    """cgroup.conf text (ConstrainDevices=yes unless overridden)."""
    out = ["# cgroup.conf for cluster %s\n" % model["cluster_name"], GENERATED]
    out.extend("%s=%s\n" % kv for kv in model["settings"]["cgroup_conf"].items())
    return "".join(out)


def deferred_gres(model):
    """{node: {gres_key: count}} of MIG instances whose gres.conf lines are completed on the node."""
    deferred = {}
    for node in model["nodes"]:
        pending = gres_conf.deferred_gres(gres_spec(model, node))
        if pending:
            deferred[node["name"]] = pending
    return deferred


def render_all(model):
    """{"slurm.conf": text, "cgroup.conf": text, "<node>/gres.conf": text, ...}, proven consistent.

    A gres.conf is rendered for every node with GPUs. Raises GresError if the count proof fails.
    """
    files = {"slurm.conf": render_slurm_conf(model), "cgroup.conf": render_cgroup_conf(model)}
    gres_texts = {}
    for node in model["nodes"]:
        if node["gpus"]:
            text = node_gres_conf(gres_spec(model, node))
            gres_texts[node["name"]] = text
            files["%s/gres.conf" % node["name"]] = text
    problems = consistency_problems(files["slurm.conf"], gres_texts, deferred_gres(model))
    if problems:
        raise GresError(problems)
    return files


def summarize(model, files=None):
    """Counts for a human: nodes, GPUs per type, MIG instances, shards, NodeName lines, files."""
    by_type = {}
    mig = {}
    shards = 0
    gpu_nodes = 0
    for node in model["nodes"]:
        if node["gpus"]:
            gpu_nodes += 1
        for gpu in node["gpus"]:
            by_type[gpu["type"]] = by_type.get(gpu["type"], 0) + 1
            shards += gpu["shards"] or 0
            for profile in gpu["mig"] or ():
                key = mig_gres_type(gpu["type"], profile)
                mig[key] = mig.get(key, 0) + 1
    lines = len(node_groups(model))
    summary = {
        "cluster": model["cluster_name"],
        "slurm_version": slurm_version(model),
        "slurm_version_default": bool(model.get("slurm_version_default")),
        "warnings": list(model.get("warnings") or []),
        "controllers": [c["name"] for c in model["controllers"]],
        "nodes": len(model["nodes"]),
        "gpu_nodes": gpu_nodes,
        "cpu_only_nodes": len(model["nodes"]) - gpu_nodes,
        "gpus": sum(by_type.values()),
        "gpus_by_type": dict(sorted(by_type.items())),
        "mig_instances_by_type": dict(sorted(mig.items())),
        "shards": shards,
        "nodename_lines": lines,
        "files": len(files) if files is not None else None,
        "gres_conf_files": sum(1 for p in files if p.endswith("/gres.conf")) if files is not None else None,
    }
    text = ["cluster %s: %d nodes (%d with GPUs, %d CPU-only), controller %s"
            % (summary["cluster"], summary["nodes"], gpu_nodes, summary["cpu_only_nodes"],
               ", ".join(summary["controllers"]))]
    if summary["slurm_version_default"]:
        text.append("Slurm %s: the default, the inventory does not set slurm_version (set it to the release the "
                    "cluster runs; the deploy refuses a cluster that runs another)" % summary["slurm_version"])
    else:
        text.append("Slurm %s (slurm_version)" % summary["slurm_version"])
    text.append("GPUs: %d (%s)" % (summary["gpus"], ", ".join("%s %d" % kv for kv in summary["gpus_by_type"].items())
                                   or "none"))
    if mig:
        text.append("MIG instances: %s" % ", ".join("%s %d" % kv for kv in summary["mig_instances_by_type"].items()))
    if shards:
        text.append("shards: %d" % shards)
    text.append("slurm.conf: %d NodeName lines" % lines)
    if files is not None:
        others = sorted(p for p in files if "/" not in p and p not in ("slurm.conf", "cgroup.conf"))
        text.append("files: %d (slurm.conf, cgroup.conf, %d gres.conf%s)" % (
            len(files), summary["gres_conf_files"], "".join(", " + p for p in others)))
    text.extend("warning: %s" % w for w in summary["warnings"][:SUMMARY_WARNINGS])
    if len(summary["warnings"]) > SUMMARY_WARNINGS:
        text.append("warning: ... and %d more (the model's warnings list has them all)"
                    % (len(summary["warnings"]) - SUMMARY_WARNINGS))
    summary["lines"] = text
    return summary
