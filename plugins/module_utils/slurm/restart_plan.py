"""Which daemons a change of files needs restarted, and in which order (pure; controller side).

"Applied" files are what a daemon was last (re)started with; "new" files are the render being deployed.

The order comes from Slurm 22.05 behaviour with ``File=`` GRES, seen live (docs/deploy.md):
- slurmctld pins a node's GRES count at the first registration after it starts. A restarted slurmd that then
  reports a *different* count is refused (``Count changed (4 != 5)``) until slurmctld restarts again, and
  ``scontrol reconfigure`` is refused too (``Attempt to change gres/gpu Count ... invalid with File
  configuration``).
- A node reporting *more* than slurm.conf declares is accepted (the count is clamped to the declared one); a
  node reporting *fewer* is drained with INVALID_REG.
So a count that goes *down* needs slurmctld restarted *before* the node's slurmd (slurmctld then clamps the old,
higher report until slurmd restarts), and a count that goes *up* needs slurmd restarted first and slurmctld
*after*. A deploy with both restarts slurmctld twice; no node is drained on the way unless one node has one type
go up and another go down (then the drain is resumed at the end).
"""
import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import attributes_match
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.hostlist import collect_hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    cgroup_options,
    node_definition,
    parse_slurm_conf,
    partition_definition,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_units
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import parse_version

FILES = ("slurm.conf", "cgroup.conf", "gres.conf")
# slurm.conf NodeName options that only slurmctld uses; changing them needs no slurmd restart.
CTLD_ONLY_NODE_KEYS = frozenset(("weight", "features", "feature", "state", "reason", "comment", "line"))


def _parse(text):
    if text is None:
        return None
    return parse_slurm_conf(text)


def _node_def(node, options):
    """The node as slurmctld defines it, its Gres= limited to the names GresTypes lists (the others are ignored)."""
    return node_definition(node, options.get("grestypes"))


def _defs(parts):
    """Partition definitions as slurmctld reads them: what they mean, not where they stand."""
    return {name: partition_definition(part) for name, part in parts.items()}


def node_cores(node):
    """Sockets x CoresPerSocket of a node definition (conf.node_definition) as slurmctld derives them
    (read_config.c _build_single_nodeline_info, 22.05 to 26.05): SocketsPerBoard wins over Sockets; without either,
    Sockets is CPUs / (CoresPerSocket x ThreadsPerCore) when that divides, else Boards; a 0 reads as 1. None when
    a value is not a number."""
    def number(key):
        value = node.get(key)
        return None if value is None else (int(str(value).strip()) or 1)

    try:
        cores, threads, boards = number("corespersocket") or 1, number("threadspercore") or 1, number("boards") or 1
        sockets, per_board, cpus = number("sockets"), number("socketsperboard"), number("cpus")
    except ValueError:
        return None
    if per_board is not None:
        sockets = boards * per_board
    elif sockets is None:
        sockets = cpus // (cores * threads) if cpus and cpus >= cores * threads and not cpus % (cores * threads) \
            else boards
    return sockets * cores


def slurm_conf_changes(old_text, new_text):
    """Compare two slurm.conf texts by meaning, not bytes.

    Returns ``{"changed": bool, "bytes_changed": bool, "options": [keys], "nodes_added": [...],
    "nodes_removed": [...], "nodes_changed": {node: [keys]}, "cores_changed": {node: [old, new]},
    "gres_up": {node: {key: [old, new]}}, "gres_down": {node: {key: [old, new]}}, "partitions_changed": bool}``.
    ``cores_changed``: Sockets x CoresPerSocket (node_cores), which slurmctld compares with each running job's cores
    on the node at its restart (job_resources.c valid_job_resources: "Aborting JobId ... due to change in
    socket/core configuration of allocated nodes"). ``old_text`` None (no file) counts as everything added.
    """
    result = {"changed": False, "bytes_changed": old_text != new_text, "options": [], "nodes_added": [],
              "nodes_removed": [], "nodes_changed": {}, "cores_changed": {}, "gres_up": {}, "gres_down": {},
              "partitions_changed": False}
    if old_text == new_text:
        return result
    new = _parse(new_text) or {"options": {}, "nodes": {}, "partitions": {}}
    old = _parse(old_text) or {"options": {}, "nodes": {}, "partitions": {}}
    result["options"] = sorted(k for k in set(old["options"]) | set(new["options"])
                               if old["options"].get(k) != new["options"].get(k))
    result["nodes_added"] = sorted(set(new["nodes"]) - set(old["nodes"]))
    result["nodes_removed"] = sorted(set(old["nodes"]) - set(new["nodes"]))
    for name in sorted(set(old["nodes"]) & set(new["nodes"])):
        before, after = _node_def(old["nodes"][name], old["options"]), _node_def(new["nodes"][name], new["options"])
        keys = sorted(k for k in set(before) | set(after) if before.get(k) != after.get(k))
        if keys:
            result["nodes_changed"][name] = keys
            cores = [node_cores(before), node_cores(after)]
            if cores[0] != cores[1]:
                result["cores_changed"][name] = cores
        up, down = {}, {}
        for key in set(before.get("gres", {})) | set(after.get("gres", {})):
            a, b = before.get("gres", {}).get(key, 0), after.get("gres", {}).get(key, 0)
            if b > a:
                up[key] = [a, b]
            elif b < a:
                down[key] = [a, b]
        if up:
            result["gres_up"][name] = up
        if down:
            result["gres_down"][name] = down
    result["partitions_changed"] = _defs(old["partitions"]) != _defs(new["partitions"])
    result["changed"] = bool(result["options"] or result["nodes_added"] or result["nodes_removed"]
                             or result["nodes_changed"] or result["partitions_changed"])
    return result


# GRES counted on the GPUs they share: slurmctld compares their jobs with the node's gres/gpu count (gres.c
# _get_node_gres_cnt: "For gres/'shared' return count of gres/gpu").
SHARED_GRES = ("shard", "mps")


def gres_jobs_killed(changes, version):
    """What slurmctld kills at its restart on the nodes whose GRES change in ``slurm_conf_changes``' result:
    ``{"count": {node: [gres names]}, "types": {node: [gres keys]}}``.

    - ``count``: a GRES whose total (every type together) changes: every job using it on the node is killed
      ("Killing job N: gres/gpu count mismatch on node", gres.c _validate_node_gres_cnt compares the size of a
      job's allocation with the node's count; recorded on 22.05.8). Shards and MPS follow the GPUs they share.
    - ``types`` (from 23.11, Slurm commit 63b13d6e): a type the node no longer has at all kills the jobs that asked
      for it ("gres/gpu type a100 not found on node"), even at the same total; untyped jobs survive.
    """
    deltas, gone = {}, {}
    for direction in ("gres_up", "gres_down"):
        for node, keys in (changes.get(direction) or {}).items():
            for key, (old, new) in keys.items():
                name = key.split(":")[0]
                if name in SHARED_GRES:
                    continue
                deltas.setdefault(node, {}).setdefault(name, 0)
                deltas[node][name] += new - old
                if ":" in key and old and not new:
                    gone.setdefault(node, []).append(key)
    count = {node: sorted(n for n, d in names.items() if d) for node, names in deltas.items() if any(names.values())}
    types = {}
    if parse_version(version or "23.11") >= (23, 11):
        types = {node: sorted(keys) for node, keys in gone.items()
                 if not set(k.split(":")[0] for k in keys) <= set(count.get(node, ()))}
    return {"count": count, "types": types}


def _gres_meaning(slurm_text, gres_text, node_name):
    """What slurmd makes of a node's gres.conf (records, AutoDetect, fatal), or the text when it cannot be read."""
    try:
        view = node_view(parse_slurm_conf(slurm_text or ""), gres_text, node_name)
    except ConfSyntaxError:
        return ("text", gres_text)
    return ("view", view_units(view), view["autodetect"], view["fatal"])


def _cgroup_meaning(text):
    """The options slurmd reads from a cgroup.conf, or the text itself when slurmd cannot read it."""
    try:
        return ("options", cgroup_options(text))
    except ConfSyntaxError:
        return ("text", text)


def same_meaning(name, node_name, applied, new):
    """True when slurmd reads file ``name`` of ``applied`` and ``new`` the same way (comments, order, line
    grouping and spelling may differ: an imported cluster's hand-written files and their rendered equivalents)."""
    if applied.get(name) == new.get(name):
        return True
    if applied.get(name) is None or new.get(name) is None:
        return False
    if name == "gres.conf":
        return _gres_meaning(applied.get("slurm.conf"), applied[name], node_name) == _gres_meaning(
            new.get("slurm.conf"), new[name], node_name)
    if name == "cgroup.conf":
        return _cgroup_meaning(applied[name]) == _cgroup_meaning(new[name])
    return False


def node_restart_plan(node_name, applied, new):
    """Does slurmd on ``node_name`` need a restart to run the ``new`` files?

    ``applied`` / ``new`` map file names (``FILES``) to text or None (absent). slurmd restarts when its
    gres.conf or cgroup.conf changed in meaning (``same_meaning``), when its own NodeName definition changed
    (except slurmctld-only keys such as Weight or Features), when slurm.conf options changed, or when nodes were
    added or removed (Slurm requires every slurmd to restart then). Changes to *other* nodes' lines or to
    partitions do not restart it.
    Returns ``{"restart": bool, "reasons": [...], "files_changed": [...], "slurm_conf": changes}``.
    """
    reasons = []
    files_changed = [f for f in FILES if applied.get(f) != new.get(f)]
    for name in ("gres.conf", "cgroup.conf"):
        if name in files_changed and not same_meaning(name, node_name, applied, new):
            reasons.append("%s changed" % name)
    changes = slurm_conf_changes(applied.get("slurm.conf"), new.get("slurm.conf"))
    if changes["changed"]:
        own = [k for k in changes["nodes_changed"].get(node_name, []) if k not in CTLD_ONLY_NODE_KEYS]
        if own:
            reasons.append("slurm.conf: this node's %s changed" % ", ".join(own))
        if node_name in changes["nodes_added"]:
            reasons.append("slurm.conf: this node is new")
        if changes["options"]:
            reasons.append("slurm.conf: %s changed" % _some(changes["options"]))
        # the same words on every node (the whole list, as a hostlist), so that the dry run's verdicts group
        for what in ("added", "removed"):
            if changes["nodes_" + what] and changes["nodes_" + what] != [node_name]:
                reasons.append("slurm.conf: nodes %s (%s)" % (what, collect_hostlist(changes["nodes_" + what])))
    return {"restart": bool(reasons), "reasons": reasons, "files_changed": files_changed, "slurm_conf": changes}


def _some(names, shown=8):
    """``a, b, c`` or, for a long list, its first names and how many more (a first deploy changes every option)."""
    if len(names) <= shown:
        return ", ".join(names)
    return "%s and %d more" % (", ".join(names[:shown]), len(names) - shown)


def controller_plan(applied_text, new_text, targeted_nodes=None):
    """What slurmctld needs for ``new_text`` given the slurm.conf it last started with.

    Returns ``{"restart_before": bool, "restart_after": bool, "reconfigure": bool, "reasons": [...],
    "reasons_before": [...], "reasons_after": [...], "untargeted": [nodes], "slurm_conf": changes}`` (``reasons``
    is ``reasons_before`` + ``reasons_after``, or the reason for ``reconfigure``):
    - ``restart_before`` (before any slurmd restarts): a GRES count goes down, nodes are added or removed, a
      node's CPU/memory definition or a global option changed;
    - ``restart_after`` (after the slurmd restarts): a GRES count goes up;
    - ``reconfigure``: only partitions or slurmctld-only node keys changed (no restart needed);
    - ``untargeted``: nodes whose GRES definition changes but which are not in ``targeted_nodes`` (when given):
      restarting slurmctld would drain them, so the deploy refuses.
    """
    changes = slurm_conf_changes(applied_text, new_text)
    if applied_text is None and new_text is not None:
        return {"restart_before": True, "restart_after": False, "reconfigure": False,
                "reasons": ["no slurm.conf applied before"], "reasons_before": ["no slurm.conf applied before"],
                "reasons_after": [], "untargeted": [], "slurm_conf": changes}
    before_reasons, after_reasons = [], []
    if changes["gres_down"]:
        before_reasons.append("GRES count goes down on %s" % ", ".join(sorted(changes["gres_down"])))
    if changes["nodes_added"] or changes["nodes_removed"]:
        before_reasons.append("nodes added or removed (%s)"
                              % ", ".join(changes["nodes_added"] + changes["nodes_removed"]))
    if changes["options"]:
        before_reasons.append("options changed: %s" % ", ".join(changes["options"]))
    for name, keys in sorted(changes["nodes_changed"].items()):
        other = [k for k in keys if k != "gres" and k not in CTLD_ONLY_NODE_KEYS]
        if other:
            before_reasons.append("node %s: %s changed" % (name, ", ".join(other)))
    if changes["gres_up"]:
        after_reasons.append("GRES count goes up on %s" % ", ".join(sorted(changes["gres_up"])))
    before, after = bool(before_reasons), bool(after_reasons)
    reasons = before_reasons + after_reasons
    reconfigure = changes["changed"] and not (before or after)
    if reconfigure:
        reasons.append("partitions or scheduling-only node keys changed")
    untargeted = []
    if targeted_nodes is not None:
        gres_nodes = set(changes["gres_up"]) | set(changes["gres_down"])
        untargeted = sorted(gres_nodes - set(targeted_nodes))
    return {"restart_before": before, "restart_after": after, "reconfigure": reconfigure, "reasons": reasons,
            "reasons_before": before_reasons, "reasons_after": after_reasons, "untargeted": untargeted,
            "slurm_conf": changes}


# Options whose change makes the daemons start without what they kept: (key as parsed, Slurm's spelling, Slurm's
# built-in default (read_config.h DEFAULT_SAVE_STATE_LOC, DEFAULT_SPOOLDIR), what a restart with the new value does).
STATE_OPTIONS = (
    ("clustername", "ClusterName", None,
     "slurmctld stops at its next start: \"CLUSTER NAME MISMATCH\" against the clustername file of StateSaveLocation "
     "(controller.c), and slurmdbd accounts the jobs to another cluster"),
    ("statesavelocation", "StateSaveLocation", "/var/spool",
     "slurmctld starts without its saved state: every running and queued job and every node state is lost"),
    ("slurmdspooldir", "SlurmdSpoolDir", "/var/spool/slurmd",
     "slurmd looks for the running job steps' sockets there: the steps of running jobs are no longer found"),
)


def _state_value(key, value):
    if value is None:
        return None
    value = value.strip()
    return value.lower() if key == "clustername" else os.path.normpath(value)


def _both_parsed(applied_text, new_text):
    """(running, new) parsed, or None when either is absent or unreadable (nothing to compare)."""
    if applied_text is None or new_text is None:
        return None
    try:
        return parse_slurm_conf(applied_text), parse_slurm_conf(new_text)
    except ConfSyntaxError:
        return None


def state_changes(applied_text, new_text):
    """[(option, running value, new value, consequence)] for the STATE_OPTIONS whose value (Slurm's default where
    unset) differs between the slurm.conf the daemons run and the new one; [] when none runs yet."""
    both = _both_parsed(applied_text, new_text)
    if both is None:
        return []
    changes = []
    for key, option, default, consequence in STATE_OPTIONS:
        # an option a file leaves unset may come from a file it Includes (not read here): Slurm's default then
        # says nothing about what the daemons run with
        if any(key not in conf["options"] and conf["includes"] for conf in both):
            continue
        before, after = both[0]["options"].get(key, default), both[1]["options"].get(key, default)
        if _state_value(key, before) != _state_value(key, after):
            changes.append((option, before, after, consequence))
    return changes


def partitions_removed(applied_text, new_text):
    """The partitions of the file the daemons run with (slurm.conf, or the include file) that the new one no longer
    defines: slurmctld fails every job queued or running in them when it reads the new file ("Invalid partition
    (%s) for JobId", read_config.c _sync_jobs_to_conf: NODE_FAIL, not requeued)."""
    both = _both_parsed(applied_text, new_text)
    if both is None:
        return []
    return sorted(set(both[0]["partitions"]) - set(both[1]["partitions"]))


def nodes_removed(applied_text, new_text):
    """The nodes of the file the daemons run with that the new one no longer defines: slurmctld ends every job
    running on them when it restarts with the new file ("Invalid nodes (%s) for JobId", read_config.c
    _sync_jobs_to_conf: batch jobs requeued, the others NODE_FAIL), and they leave the cluster."""
    both = _both_parsed(applied_text, new_text)
    if both is None:
        return []
    return sorted(set(both[0]["nodes"]) - set(both[1]["nodes"]))


def gpus_lost(applied_text, new_text):
    """``(nodes, absent)``: the nodes that declare GPUs in the file the daemons run with (slurm.conf, or the include
    file holding the node lines) when the new one declares a GPU on none of them (an inventory whose GPU entries were
    not read), and whether none of them is in the new file at all (renamed); ``([], False)`` otherwise."""
    both = _both_parsed(applied_text, new_text)
    if both is None:
        return [], False
    old, new = both[0]["nodes"], both[1]["nodes"]

    def has_gpus(node):
        return any(key.split(":")[0] == "gpu" and count for key, count in (node.get("gres") or {}).items())

    had = sorted(name for name, node in old.items() if has_gpus(node))
    if not had or any(has_gpus(new[name]) for name in had if name in new):
        return [], False
    return had, not any(name in new for name in had)


def expected_gres(slurm_text, node_name):
    """{gres key: count} that slurm.conf declares for ``node_name`` ({} when absent)."""
    if slurm_text is None:
        return {}
    node = parse_slurm_conf(slurm_text)["nodes"].get(node_name)
    return dict(node["gres"]) if node else {}


def install_needed(new, not_installed, installed_attributes, wanted):
    """Whether the install must run: unless the installed files are known to be the new ones, with the wanted
    ``mode``/``owner``/``group`` (``installed_attributes`` as config_tree reads them), it must.

    ``not_installed`` (new files whose installed content differs) None means the installed files were not read.
    """
    if not_installed is None or not_installed or installed_attributes is None or wanted is None:
        return True
    for name, text in new.items():
        if text is None:
            continue
        if not attributes_match(installed_attributes.get(name), wanted.get("mode"), wanted.get("owner"),
                                wanted.get("group")):
            return True
    return False
