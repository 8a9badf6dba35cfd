"""Cluster model -> slurm.conf, cgroup.conf and one gres.conf per GPU node (deterministic bytes).

``render_all`` proves its own output before returning it: the files are parsed back with module_utils/slurm/conf.py and,
per node and GRES type, slurm.conf's count must equal gres.conf's; otherwise it raises GresError.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.hostlists import trailing_hostlist

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import (
    gres_types,
    natural_key,
    node_autodetect,
    node_gres_elements,
    uses_slurmdbd,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import gres_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import consistency_problems
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.gres_conf import GENERATED, node_gres_conf

UNTYPED = "(untyped)"


def conf_value(value):
    """A slurm.conf/gres.conf value as slurmd reads it back: double-quoted when it holds blanks."""
    text = str(value)
    if text and not any(ch.isspace() for ch in text):
        return text
    return '"%s"' % text


def _node_line(node, elements):
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
    parts.extend("%s=%s" % (k, conf_value(v)) for k, v in (node.get("options") or {}).items())
    if elements:
        parts.append("Gres=%s" % ",".join(element for _, _, element in elements))
    return parts


def node_groups(model, elements=None):
    """[(hostlist expression, node line options, gres)] with identical nodes grouped, in natural order."""
    groups = {}
    order = []
    for node in model["nodes"]:
        elements_ = elements[node["name"]] if elements else node_gres_elements(node)
        gres = {}
        for key, count, _ in elements_:
            gres[key] = gres.get(key, 0) + count
        key = (node["sockets"], node["cores_per_socket"], node["threads_per_core"], node["real_memory"],
               tuple(node["features"]), node["weight"], tuple((node.get("options") or {}).items()),
               tuple(e for _, _, e in elements_))
        if key not in groups:
            groups[key] = {"names": [], "node": node, "gres": gres, "elements": elements_}
            order.append(key)
        groups[key]["names"].append(node["name"])
    result = []
    for key in order:
        group = groups[key]
        expr = trailing_hostlist(group["names"])
        result.append((natural_key(group["names"][0]), expr, _node_line(group["node"], group["elements"]),
                       group["gres"]))
    result.sort(key=lambda item: item[0])
    return [(expr, opts, gres) for _, expr, opts, gres in result]


def _tres(model, user_value, elements):
    """AccountingStorageTRES: the user's entries, then gres/gpu, gres/gpu:TYPE per type, gres/shard, gres/mps."""
    types = set()
    has_gpus = False
    shared = []
    for node in model["nodes"]:
        for key, _, _ in elements[node["name"]]:
            name, _, gtype = key.partition(":")
            if name == "gpu":
                has_gpus = True
                if gtype:
                    types.add(gtype)
            elif name in ("shard", "mps") and name not in shared:
                shared.append(name)
    ours = []
    if has_gpus:
        ours.append("gres/gpu")
        ours.extend("gres/gpu:%s" % t for t in sorted(types, key=str.lower))
    ours.extend("gres/%s" % name for name in sorted(shared, reverse=True))
    entries = [e.strip() for e in user_value.split(",") if e.strip()] if user_value else []
    lower = {e.lower() for e in entries}
    entries.extend(e for e in ours if e.lower() not in lower)
    return ",".join(entries), has_gpus


def _configless_options(options):
    """SlurmctldParameters with enable_configless added (configless mode serves the files from slurmctld)."""
    for key in list(options):
        if key.lower() == "slurmctldparameters":
            words = [w for w in options[key].split(",") if w]
            if "enable_configless" not in [w.lower() for w in words]:
                options[key] = ",".join(words + ["enable_configless"])
            return options
    options["SlurmctldParameters"] = "enable_configless"
    return options


def render_slurm_conf(model):
    """slurm.conf text for the whole cluster."""
    options = dict(model["settings"]["slurm_conf"])
    if model.get("config_mode") == "configless":
        options = _configless_options(options)
    elif model.get("config_mode") == "include":
        options = {}  # the site's slurm.conf holds them; this check-only file needs the GRES lines alone
    user_tres = None
    for key in list(options):
        if key.lower() == "accountingstoragetres":
            user_tres = options.pop(key)
    out = ["# slurm.conf for cluster %s\n" % model["cluster_name"], GENERATED]
    if model.get("config_mode") == "include":
        out.append("# Include mode: checked, never installed. The site's slurm.conf holds the options and includes "
                   "%s with the GRES, node and partition lines below.\n" % model["include_file"])
    out.append("ClusterName=%s\n" % model["cluster_name"])
    for ctl in model["controllers"]:
        if ctl["addr"]:
            out.append("SlurmctldHost=%s(%s)\n" % (ctl["name"], ctl["addr"]))
        else:
            out.append("SlurmctldHost=%s\n" % ctl["name"])
    for key, value in options.items():
        out.append("%s=%s\n" % (key, conf_value(value)))

    elements = {node["name"]: node_gres_elements(node) for node in model["nodes"]}
    tres, has_gpus = _tres(model, user_tres, elements)
    names = gres_types(model, elements)
    if names:
        out.append("\n# Generic resources: every node's Gres= below is proven equal to its gres.conf\n")
        out.append("GresTypes=%s\n" % ",".join(names))
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

    out.extend(_nodes_and_partitions(model, elements))
    return "".join(out)


def _nodes_and_partitions(model, elements=None):
    out = ["\n# Compute nodes (%d): identical nodes share one line\n" % len(model["nodes"])]
    for expr, opts, _ in node_groups(model, elements):
        out.append(" ".join(["NodeName=%s" % expr] + opts) + "\n")
    out.append("\n# Partitions\n")
    for part in model["partitions"]:
        nodes = part["nodes"] if part["nodes"] == "ALL" else trailing_hostlist(part["nodes"])
        line = ["PartitionName=%s" % part["name"], "Nodes=%s" % nodes,
                "Default=%s" % ("YES" if part["default"] else "NO")]
        line.extend("%s=%s" % (k, conf_value(v)) for k, v in part["options"].items())
        out.append(" ".join(line) + "\n")
    return out


def render_include(model):
    """Include mode: the node/partition part of slurm.conf (GresTypes, NodeName, PartitionName lines) that the
    site's own slurm.conf pulls in with ``Include <slurm_gres_include_file>``."""
    out = ["# %s for cluster %s: the site's slurm.conf includes it (Include %s)\n"
           % (model["include_file"], model["cluster_name"], model["include_file"]), GENERATED]
    names = gres_types(model)
    if names:
        out.append("GresTypes=%s\n" % ",".join(names))
    out.extend(_nodes_and_partitions(model))
    return "".join(out)


def gres_spec(model, node):
    """What ``gres_conf.node_gres_conf`` renders one node's gres.conf from (the node may render it again, live);
    ``autodetect`` is the mode in force on the node (its own, else the cluster's)."""
    return {"cluster_name": model["cluster_name"], "autodetect": node_autodetect(model, node), "node": node}


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


def cluster_gres_conf(model):
    """Configless mode: one gres.conf for every node (NodeName= on each line); nodes whose lines are the same
    but for their name share one set of lines (NodeName=gpu-a[01-04])."""
    bodies = {}
    order = []
    for node in model["nodes"]:
        if not gres_conf.needs_gres_conf(node):
            continue
        prefix = "NodeName=%s " % node["name"]
        lines = tuple(line[len(prefix):] for line in node_gres_conf(gres_spec(model, node)).splitlines()
                      if line.startswith(prefix))
        if lines not in bodies:
            bodies[lines] = []
            order.append(lines)
        bodies[lines].append(node["name"])
    out = ["# gres.conf for cluster %s (configless: slurmctld serves it to every node)\n" % model["cluster_name"],
           GENERATED, "# Cores= are Slurm logical core indices; Slurm numbers the GPUs in the order of these lines.\n"]
    for lines in order:
        expr = trailing_hostlist(bodies[lines])
        out.extend("NodeName=%s %s\n" % (expr, line) for line in lines)
    return "".join(out)


def render_all(model):
    """{"slurm.conf": text, "cgroup.conf": text, "<node>/gres.conf": text, ...}, proven consistent.

    A gres.conf is rendered for every node that needs one (gres_conf.needs_gres_conf). Configless mode adds the
    cluster-wide "gres.conf" (the per-node ones are the lines each node reads from it, for the checks); include
    mode adds the include file and leaves out cgroup.conf (its "slurm.conf" holds what the site's slurm.conf plus
    the include file define for GRES: it is checked, never installed). Raises GresError if the count proof fails.
    """
    files = {"slurm.conf": render_slurm_conf(model)}
    mode = model.get("config_mode", "files")
    if mode != "include":
        files["cgroup.conf"] = render_cgroup_conf(model)
    else:
        files[model["include_file"]] = render_include(model)
    gres_texts = {}
    for node in model["nodes"]:
        if gres_conf.needs_gres_conf(node):
            text = node_gres_conf(gres_spec(model, node))
            gres_texts[node["name"]] = text
            files["%s/gres.conf" % node["name"]] = text
    problems = consistency_problems(files["slurm.conf"], gres_texts, deferred_gres(model))
    if mode == "configless":
        files["gres.conf"] = cluster_gres_conf(model)
        problems += consistency_problems(files["slurm.conf"], {n: files["gres.conf"] for n in gres_texts},
                                         deferred_gres(model))
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
        if node["gpus"] or node.get("gpu_counts"):
            gpu_nodes += 1
        for group in node.get("gpu_counts") or ():
            key = group["type"] or UNTYPED
            by_type[key] = by_type.get(key, 0) + group["count"]
        shards += node.get("shards") or 0
        for gpu in node["gpus"]:
            key = gpu["type"] or UNTYPED
            by_type[key] = by_type.get(key, 0) + 1
            shards += gpu["shards"] or 0
            for profile in gpu["mig"] or ():
                key = mig_gres_type(gpu["type"], profile)
                mig[key] = mig.get(key, 0) + 1
    lines = len(node_groups(model))
    summary = {
        "cluster": model["cluster_name"],
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
    summary["lines"] = text
    return summary
