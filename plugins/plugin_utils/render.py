"""Cluster model -> slurm.conf, cgroup.conf and one gres.conf per GPU node (deterministic bytes).

``render_all`` proves its own output before returning it: every file is read back the way Slurm's parser reads it
and must say exactly the Key=Value lines the renderer meant (no extra line or key, nothing cut), every key must be
one the target Slurm release reads, and per node and GRES type slurm.conf's count must equal gres.conf's;
otherwise it raises GresError.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import gres_conf, options, versions
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import consistency_problems
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.gres_conf import (
    GENERATED,
    node_gres_conf,
    node_gres_conftext,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.hostlists import (
    HOSTLIST_SUFFIX_SINCE,
    slurm_hostlist,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.writer import ConfText, read_back_problems
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import render_tres
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_access import (
    gres_types,
    node_autodetect,
    node_gres_elements,
    target_version,
    uses_slurmdbd,
)

CLUSTER = "(cluster)"  # origin of lines no single inventory value decides
UNTYPED = "(untyped)"

SUMMARY_WARNINGS = 20  # warning lines the summary shows; a 4,096-node cluster could have thousands


def hostlist_expr(names, version):
    """A Slurm hostlist of `names` in a form the target release parses (``hostlists.slurm_hostlist``)."""
    return slurm_hostlist(names, versions.parse_version(options.release_for(version)) >= HOSTLIST_SUFFIX_SINCE)


def _node_pairs(node, elements):
    """A NodeName= line's options after the name: [(key, value, (host, field))]."""
    host = node["host"]
    pairs = []
    for key, field, var in (("Sockets", "sockets", "hpc_gres_node_sockets"),
                            ("CoresPerSocket", "cores_per_socket", "hpc_gres_node_cores_per_socket"),
                            ("ThreadsPerCore", "threads_per_core", "hpc_gres_node_threads_per_core"),
                            ("RealMemory", "real_memory", "hpc_gres_node_real_memory")):
        if node[field] is not None:
            pairs.append((key, "%d" % node[field], (host, var)))
    if node["features"]:
        pairs.append(("Features", ",".join(node["features"]), (host, "hpc_gres_node_features")))
    if node["weight"] is not None:
        pairs.append(("Weight", "%d" % node["weight"], (host, "hpc_gres_node_weight")))
    pairs.extend((k, str(v), (host, "hpc_gres_node_options.%s" % k)) for k, v in (node.get("options") or {}).items())
    if elements:
        pairs.append(("Gres", ",".join(element for _unused1, _unused2, element in elements), (host, "hpc_gres_gpus")))
    return pairs


def _grouped(model, elements=None):
    """[(hostlist expression, first node, gres elements, gres)]: identical nodes share one entry, natural order."""
    groups = {}
    order = []
    for node in model["nodes"]:
        elements_ = elements[node["name"]] if elements else node_gres_elements(node)
        gres = {}
        for key, count, _unused in elements_:
            gres[key] = gres.get(key, 0) + count
        key = (node["sockets"], node["cores_per_socket"], node["threads_per_core"], node["real_memory"],
               tuple(node["features"]), node["weight"], tuple((node.get("options") or {}).items()),
               tuple(e for _unused1, _unused2, e in elements_))
        if key not in groups:
            groups[key] = {"names": [], "node": node, "gres": gres, "elements": elements_}
            order.append(key)
        groups[key]["names"].append(node["name"])
    version = target_version(model)
    result = [(natural_key(groups[k]["names"][0]), hostlist_expr(groups[k]["names"], version),
               groups[k]["node"], groups[k]["elements"], groups[k]["gres"]) for k in order]
    result.sort(key=lambda item: item[0])
    return [item[1:] for item in result]


def node_groups(model, elements=None):
    """[(hostlist expression, node line options, gres)] with identical nodes grouped, in natural order."""
    return [(expr, ["%s=%s" % (k, v) for k, v, _source in _node_pairs(node, elements_)], gres)
            for expr, node, elements_, gres in _grouped(model, elements)]


def _tres(model, user_value, elements):
    """AccountingStorageTRES: the user's entries, then gres/gpu, gres/gpu:TYPE per type, gres/shard, gres/mps."""
    types = set()
    has_gpus = False
    shared = []
    for node in model["nodes"]:
        for key, _unused1, _unused2 in elements[node["name"]]:
            name, _unused, gtype = key.partition(":")
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
    if not model.get("accounting_gpu_tres", True):  # hpc_gres_accounting_gpu_tres: false, the user's value as is
        return user_value or "", has_gpus
    entries = [e.strip() for e in user_value.split(",") if e.strip()] if user_value else []
    lower = {e.lower() for e in entries}
    entries.extend(e for e in ours if e.lower() not in lower)
    return ",".join(entries), has_gpus


def _configless_options(settings):
    """SlurmctldParameters with enable_configless added (configless mode serves the files from slurmctld)."""
    for key in list(settings):
        if key.lower() == "slurmctldparameters":
            words = [w for w in str(settings[key]).split(",") if w]
            if "enable_configless" not in [w.lower() for w in words]:
                settings[key] = ",".join(words + ["enable_configless"])
            return settings
    settings["SlurmctldParameters"] = "enable_configless"
    return settings


def _slurm_conf(model):
    cluster_host = model.get("cluster_host", CLUSTER)
    settings = dict(model["settings"]["slurm_conf"])
    if model.get("config_mode") == "configless":
        settings = _configless_options(settings)
    elif model.get("config_mode") == "include":
        settings = {}  # the site's slurm.conf holds them; this check-only file needs the GRES lines alone
    user_tres = None
    for key in list(settings):
        if key.lower() == "accountingstoragetres":
            user_tres = settings.pop(key)
    out = ConfText("slurm.conf")
    out.comment("slurm.conf for cluster %s, Slurm %s" % (model["cluster_name"], target_version(model)))
    out.comment(GENERATED)
    if model.get("config_mode") == "include":
        out.comment("Include mode: checked, never installed. The site's slurm.conf holds the options and includes "
                    "%s with the GRES, node and partition lines below." % model["include_file"])
    out.line([("ClusterName", model["cluster_name"], (cluster_host, "hpc_gres_cluster_name"))])
    for ctl in model["controllers"]:
        value = "%s(%s)" % (ctl["name"], ctl["addr"]) if ctl["addr"] else ctl["name"]
        out.line([("SlurmctldHost", value, (ctl["host"], "hpc_gres_controller_addr" if ctl["addr"] else "hpc_gres_node_name"))])
    for key, value in settings.items():
        out.line([(key, value, (cluster_host, "hpc_gres_slurm_conf_options.%s" % key))])

    elements = {node["name"]: node_gres_elements(node) for node in model["nodes"]}
    tres, has_gpus = _tres(model, user_tres, elements)
    tres_origin = (cluster_host, "hpc_gres_slurm_conf_options.AccountingStorageTRES")
    names = gres_types(model, elements)
    if names:
        out.blank()
        out.comment(_gres_proof_comment(model))
        out.line([("GresTypes", ",".join(names), (cluster_host, "hpc_gres_types"))])
    if uses_slurmdbd(model):
        if tres:
            out.line([("AccountingStorageTRES", tres, tres_origin)])
    else:
        if user_tres:
            out.line([("AccountingStorageTRES", user_tres, tres_origin)])
        if has_gpus and model.get("accounting_gpu_tres", True):
            # slurmctld exits on GRES TRES without slurmdbd ("slurmdbd is required to run with TRES gres/gpu").
            out.comment("GPU accounting (AccountingStorageTRES=gres/gpu,gres/gpu:TYPE,...) is added when\n"
                        "AccountingStorageType=accounting_storage/slurmdbd is set in hpc_gres_slurm_conf_options.")
    _nodes_and_partitions(out, model, elements)
    return out


def _gres_proof_comment(model):
    """What the render proved of Gres=: all of it, or all but the MIG instances whose gres.conf lines the node
    completes (named, with who writes them)."""
    by_deploy, by_slurmd = [], []
    for node in model["nodes"]:
        if gres_conf.deferred_gres(gres_spec(model, node)):
            (by_slurmd if node_autodetect(model, node) == "nvml" else by_deploy).append(node["name"])
    text = "Generic resources: every node's Gres= below is proven equal to its gres.conf"
    if not (by_deploy or by_slurmd):
        return text
    version = target_version(model)
    parts = []
    if by_deploy:
        parts.append("their gres.conf lines are written on %s by the deploy,\nfrom the node's live MIG devices, and "
                     "proven against this file there" % hostlist_expr(by_deploy, version))
    if by_slurmd:
        parts.append("on %s slurmd finds them (AutoDetect=nvml),\nand gres.conf has no lines for them"
                     % hostlist_expr(by_slurmd, version))
    return text + ", but for MIG instances.\nThey are counted from the inventory's layouts; %s." % "; ".join(parts)


def _nodes_and_partitions(out, model, elements=None):
    """The NodeName and PartitionName lines (slurm.conf, or the include file), added to ``out``."""
    cluster_host = model.get("cluster_host", CLUSTER)
    out.blank()
    out.comment("Compute nodes (%d): identical nodes share one line" % len(model["nodes"]))
    for expr, node, elements_, _unused in _grouped(model, elements):
        out.line([("NodeName", expr, (node["host"], "hpc_gres_node_name"))] + _node_pairs(node, elements_))
    out.blank()
    out.comment("Partitions")
    compressed = {}  # partitions often list the same nodes
    for pos, part in enumerate(model["partitions"]):
        field = "hpc_gres_partitions[%d]" % pos
        nodes = part["nodes"]
        if nodes != "ALL":
            key = tuple(nodes)
            if key not in compressed:
                compressed[key] = hostlist_expr(nodes, target_version(model))
            nodes = compressed[key]
        pairs = [("PartitionName", part["name"], (cluster_host, field + ".name")),
                 ("Nodes", nodes, (cluster_host, field + ".nodes")),
                 ("Default", "YES" if part["default"] else "NO", (cluster_host, field + ".default"))]
        pairs.extend((k, v, (cluster_host, "%s.options.%s" % (field, k))) for k, v in part["options"].items())
        out.line(pairs)
    return out


def render_slurm_conf(model):
    """slurm.conf text for the whole cluster."""
    return _slurm_conf(model).text()


def _include(model):
    out = ConfText(model["include_file"])
    out.comment("%s for cluster %s: the site's slurm.conf includes it (Include %s)"
                % (model["include_file"], model["cluster_name"], model["include_file"]))
    out.comment(GENERATED)
    names = gres_types(model)
    if names:
        out.line([("GresTypes", ",".join(names), (model.get("cluster_host", CLUSTER), "hpc_gres_types"))])
    return _nodes_and_partitions(out, model)


def render_include(model):
    """Include mode: the node/partition part of slurm.conf (GresTypes, NodeName, PartitionName lines) that the
    site's own slurm.conf pulls in with ``Include <hpc_gres_include_file>``."""
    return _include(model).text()


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


def _cgroup_conf(model):
    cluster_host = model.get("cluster_host", CLUSTER)
    out = ConfText("cgroup.conf")
    out.comment("cgroup.conf for cluster %s" % model["cluster_name"])
    out.comment(GENERATED)
    for key, value in model["settings"]["cgroup_conf"].items():
        out.line([(key, value, (cluster_host, "hpc_gres_cgroup_conf_options.%s" % key))])
    return out


def render_cgroup_conf(model):
    """cgroup.conf text (ConstrainDevices=yes unless overridden)."""
    return _cgroup_conf(model).text()


def deferred_gres(model):
    """{node: {gres_key: count}} of MIG instances whose gres.conf lines are completed on the node."""
    deferred = {}
    for node in model["nodes"]:
        pending = gres_conf.deferred_gres(gres_spec(model, node))
        if pending:
            deferred[node["name"]] = pending
    return deferred


def _cluster_gres_conf(model, node_confs):
    """Configless mode: one gres.conf for every node (NodeName= on each line); nodes whose lines are the same
    but for their name share one set of lines (NodeName=gpu-a[01-04]). ``node_confs``: {node: ConfText}."""
    bodies = {}
    order = []
    for name, conf in node_confs.items():
        lines = tuple(tuple((p[0], p[1]) for p in line[1:]) for line in conf.meant if line[0][0] == "NodeName")
        if lines not in bodies:
            bodies[lines] = []
            order.append(lines)
        bodies[lines].append(name)
    out = ConfText("gres.conf")
    out.comment("gres.conf for cluster %s (configless: slurmctld serves it to every node)" % model["cluster_name"])
    out.comment(GENERATED)
    out.comment("Cores= are Slurm logical core indices; Slurm numbers the GPUs in the order of these lines.")
    version = target_version(model)
    for lines in order:
        expr = hostlist_expr(bodies[lines], version)
        for line in lines:
            out.line([("NodeName", expr)] + list(line))
    return out


def cluster_gres_conf(model):
    """Configless mode: the cluster-wide gres.conf text."""
    return _cluster_gres_conf(model, {node["name"]: node_gres_conftext(gres_spec(model, node))
                                      for node in model["nodes"] if gres_conf.needs_gres_conf(node)}).text()


# The table each key of a line is looked up in: by the line's first key (slurm.conf) or by file.
_SLURM_LINE_TABLES = {"nodename": "node", "partitionname": "partition"}


def key_problems(conf, version):
    """Problems for keys of a rendered file (ConfText) that the target Slurm release does not read."""
    problems = []
    for line in conf.meant:
        first = line[0][0]
        if conf.name == "gres.conf" or conf.name.endswith("/gres.conf"):  # not an include file slurm_gres.conf
            checks = [("gres.conf", pair) for pair in line if pair[0].lower() != "nodename"]
        elif conf.name == "cgroup.conf":
            checks = [("cgroup.conf", pair) for pair in line]
        else:  # slurm.conf, or the include file in include mode
            rest_table = _SLURM_LINE_TABLES.get(first.lower(), "slurm.conf")
            checks = [("slurm.conf", line[0])] + [(rest_table, pair) for pair in line[1:]]
        for table, pair in checks:
            try:
                options.lookup(table, pair[0], version)
            except options.OptionError as exc:
                host, field = pair[2] or (CLUSTER, conf.name)
                problems.append(Problem(host, field, exc.expected, exc.found, exc.hint))
    return problems


def render_all(model):
    """{"slurm.conf": text, "cgroup.conf": text, "<node>/gres.conf": text, ...}, proven as the module says.

    A gres.conf is rendered for every node that needs one (gres_conf.needs_gres_conf). Configless mode adds the
    cluster-wide "gres.conf" (the per-node ones are the lines each node reads from it, for the checks); include
    mode adds the include file and leaves out cgroup.conf (its "slurm.conf" holds what the site's slurm.conf plus
    the include file define for GRES: it is checked, never installed). Raises GresError if any proof fails.
    """
    version = target_version(model)
    mode = model.get("config_mode", "files")
    confs = [_slurm_conf(model), _include(model) if mode == "include" else _cgroup_conf(model)]
    node_confs = {}
    for node in model["nodes"]:
        if gres_conf.needs_gres_conf(node):
            conf = node_gres_conftext(gres_spec(model, node))
            node_confs[node["name"]] = conf
            confs.append(conf)
    if mode == "configless":
        confs.append(_cluster_gres_conf(model, node_confs))
    files = {}
    problems = []
    for conf in confs:
        text = conf.text()
        files[conf.name] = text
        problems.extend(read_back_problems(conf.name, text, conf.meant, model.get("cluster_host", CLUSTER)))
        problems.extend(key_problems(conf, version))
        if conf.name == "slurm.conf" and mode != "include":  # include mode: the site's slurm.conf sets accounting
            problems.extend(render_tres.weight_problems(conf, model.get("cluster_host", CLUSTER), uses_slurmdbd(model)))
    if not problems:
        gres_texts = {name: files[conf.name] for name, conf in node_confs.items()}
        problems = consistency_problems(files["slurm.conf"], gres_texts, deferred_gres(model))
        if mode == "configless":
            problems += consistency_problems(files["slurm.conf"], {n: files["gres.conf"] for n in gres_texts},
                                             deferred_gres(model))
    if problems:
        raise GresError(problems)
    return files


def summarize(model, files=None):
    """Counts for a human: nodes, GPUs per type, MIG instances, shards, NodeName lines, files."""
    by_type = {}
    mig = {}
    split = {}  # GPUs split with MIG, by type: Slurm schedules their instances, not them
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
            if gpu["mig"]:
                split[key] = split.get(key, 0) + 1
            for profile in gpu["mig"] or ():
                key = mig_gres_type(gpu["type"], profile)
                mig[key] = mig.get(key, 0) + 1
    lines = len(node_groups(model))
    summary = {
        "cluster": model["cluster_name"],
        "slurm_version": target_version(model),
        "slurm_version_default": bool(model.get("slurm_version_default")),
        "warnings": list(model.get("warnings") or []),
        "controllers": [c["name"] for c in model["controllers"]],
        "nodes": len(model["nodes"]),
        "gpu_nodes": gpu_nodes,
        "cpu_only_nodes": len(model["nodes"]) - gpu_nodes,
        "gpus": sum(by_type.values()),
        "gpus_by_type": dict(sorted(by_type.items())),
        "mig_instances_by_type": dict(sorted(mig.items())),
        "mig_split_by_type": dict(sorted(split.items())),
        "shards": shards,
        "nodename_lines": lines,
        "files": len(files) if files is not None else None,
        "gres_conf_files": sum(1 for p in files if p.endswith("/gres.conf")) if files is not None else None,
    }
    text = ["cluster %s: %d node%s (%d with GPUs, %d CPU-only), controller %s"
            % (summary["cluster"], summary["nodes"], "" if summary["nodes"] == 1 else "s", gpu_nodes,
               summary["cpu_only_nodes"], ", ".join(summary["controllers"]))]
    if summary["slurm_version_default"]:
        text.append("Slurm %s: the default, the inventory does not set hpc_gres_slurm_version (set it to the release the "
                    "cluster runs; the deploy refuses a cluster that runs another)" % summary["slurm_version"])
    else:
        text.append("Slurm %s (hpc_gres_slurm_version)" % summary["slurm_version"])
    text.append("GPUs: %d (%s)" % (summary["gpus"], ", ".join("%s %d" % kv for kv in summary["gpus_by_type"].items())
                                   or "none"))
    if mig:
        text.append("MIG instances: %s (on %s split with MIG, which Slurm schedules as these instances)" % (
            ", ".join("%s %d" % kv for kv in summary["mig_instances_by_type"].items()),
            ", ".join("%d %s" % (count, gtype) for gtype, count in summary["mig_split_by_type"].items())))
    if shards:
        text.append("shards: %d" % shards)
    text.append("slurm.conf: %d NodeName line%s" % (lines, "" if lines == 1 else "s"))
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
