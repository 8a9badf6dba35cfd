"""What the first deploy of an imported inventory changes in the site's files, line by line as Slurm reads them.

The proof (import_proof.compare) refuses any difference in what the daemons do; this lists every difference in
what they *read*, meaning included: each slurm.conf option, NodeName and PartitionName definition, cgroup.conf
option and, per node, each gres.conf record (one per device file) and its AutoDetect mode, and the order of the
nodes (Slurm places a job step's tasks in that order). Comments, blank lines, the order of other lines and how lines
are grouped (``NodeName=gpu[01-04]``, ``File=/dev/nvidia[0-3]``) are the collection's layout and are not listed; a
node whose records are written in other lines is (its records are not changed). Nodes with the same difference
are one line (``nodes gpu[01-04]``).
"""
import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    cgroup_options,
    gres_conf_lines,
    parse_cgroup_conf,
    line_applies,
    parse_slurm_conf,
    partition_definition,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_source import include_lines

PREFIX = "first deploy: "
CONTROLLER_KEYS = ("slurmctldhost", "controlmachine", "controladdr", "backupcontroller", "backupaddr")
# NodeName keys slurmctld reads as one: the import writes the second (conf.node_definition)
ALIASES = {("procs", "cpus"), ("feature", "features"), ("socketsperboard", "sockets")}


def _pairs(mapping):
    return " ".join("%s=%s" % kv for kv in mapping)


def _option_changes(old, new, where):
    """Lines for slurm.conf's plain options (keys compared case-insensitively, values exactly)."""
    out = []
    spelled = {}
    for entry in old["entries"]:
        if entry["key"].lower() not in ("nodename", "partitionname", "include"):
            spelled[entry["key"].lower()] = (entry["key"], entry["line"])
    new_spelled = {}
    for entry in new["entries"]:
        new_spelled.setdefault(entry["key"].lower(), entry["key"])
    keys = [k for k in list(old["options"]) + [k for k in new["options"] if k not in old["options"]]
            if k not in CONTROLLER_KEYS]
    for key in keys:
        before, after = old["options"].get(key), new["options"].get(key)
        if before == after:
            continue
        name, line = spelled.get(key, (new_spelled.get(key, key), None))
        if after is None:
            out.append("%s: %s=%s is left out" % (where(line), name, before))
        elif before is None:
            out.append("slurm.conf: %s=%s is added" % (new_spelled.get(key, key), after))
        else:
            out.append("%s: %s=%s becomes %s=%s" % (where(line), name, before, new_spelled.get(key, key), after))
    old_ctl = [(e["key"], e["value"]) for e in old["entries"] if e["key"].lower() in CONTROLLER_KEYS]
    new_ctl = [(e["key"], e["value"]) for e in new["entries"] if e["key"].lower() in CONTROLLER_KEYS]
    if [(k.lower(), v) for k, v in old_ctl] != [(k.lower(), v) for k, v in new_ctl]:
        first = next((e["line"] for e in old["entries"] if e["key"].lower() in CONTROLLER_KEYS), None)
        out.append("%s: %s becomes %s" % (where(first), _pairs(old_ctl) or "(none)", _pairs(new_ctl)))
    return out


def _include_changes(source):
    """Include lines: the collection writes one slurm.conf (the included files' lines inlined)."""
    out = []
    files = [("slurm.conf", source["slurm.conf"])] + sorted((os.path.basename(k), v) for k, v in
                                                            (source.get("includes") or {}).items())
    for name, text in files:
        for line, target in include_lines(text):
            out.append("%s line %d: Include %s: its lines are written into slurm.conf itself (the deploy leaves %s "
                       "as it is, no longer read)" % (name, line, target, target))
    return out


def _spellings(*confs):
    """{lower-case key: the key as the files write it} over the NodeName and PartitionName lines."""
    out = {"gres": "Gres"}
    for conf in confs:
        for entry in conf["entries"]:
            for key, _unused in entry["options"]:
                out.setdefault(key.lower(), key)
    return out


def _definition(record, skip=("line",)):
    return {k: str(v) for k, v in record.items() if k not in skip and v is not None}


def _mapping_changes(before, after, spelled):
    """"A=1 becomes A=2, B=3 is left out, C=4 is added" for two {lower-case key: value} mappings (None when
    equal); a key replaced by the alias slurmctld reads as the same (Procs by CPUs) "becomes" it."""
    parts = []
    renamed = {}
    for old_key, new_key in ALIASES:
        if old_key in before and old_key not in after and new_key in after and new_key not in before:
            renamed[old_key] = new_key
    for key in list(before) + [k for k in after if k not in before]:
        name = spelled.get(key, key)
        if key in renamed:
            parts.append("%s=%s becomes %s=%s" % (name, before[key], spelled.get(renamed[key], renamed[key]),
                                                  after[renamed[key]]))
        elif key in renamed.values() and key not in before:
            continue
        elif key not in after:
            parts.append("%s=%s is left out" % (name, before[key]))
        elif key not in before:
            parts.append("%s=%s is added" % (name, after[key]))
        elif before[key] != after[key]:
            parts.append("%s=%s becomes %s" % (name, before[key], after[key]))
    return ", ".join(parts) or None


def _node_changes(old, new, where):
    """{difference: [(node, where)]} of the NodeName definitions (Gres= as written, other keys lower-case)."""
    out = {}
    spelled = _spellings(old, new)
    for name in sorted(set(old["nodes"]) | set(new["nodes"]), key=natural_key):
        if name not in new["nodes"]:
            out.setdefault("NodeName is left out", []).append((name, where(old["nodes"][name]["line"])))
            continue
        if name not in old["nodes"]:
            out.setdefault("NodeName is added", []).append((name, "slurm.conf"))
            continue
        skip = ("line", "gres", "gres_spec")
        before = dict(_definition(old["nodes"][name], skip), gres=old["nodes"][name].get("gres_spec"))
        after = dict(_definition(new["nodes"][name], skip), gres=new["nodes"][name].get("gres_spec"))
        text = _mapping_changes(_definition(before), _definition(after), spelled)
        if text:
            out.setdefault("NodeName " + text, []).append((name, where(old["nodes"][name]["line"])))
    return out


def _order_change(old, new, where):
    """A line when the nodes both files define come in another order: slurm.conf(5), NodeName: "A job step's tasks
    are allocated to nodes in order the nodes appear in the configuration file" (and select/linear prefers nodes
    in that order)."""
    before = [n for n in old["nodes"] if n in new["nodes"]]
    after = [n for n in new["nodes"] if n in old["nodes"]]
    if before == after:
        return []
    first = next(pos for pos, (a, b) in enumerate(zip(before, after)) if a != b)

    def run(names):
        shown = names[first:first + 5]
        return ", ".join(shown) + (", ... (%d more)" % (len(names) - first - len(shown))
                                   if len(names) > first + len(shown) else "")
    return ["%s: the nodes are defined in another order, from node %d on: the site's file has %s; the rendered one "
            "has %s (Slurm places a job step's tasks on its nodes in the order slurm.conf defines them)"
            % (where(old["nodes"][before[first]]["line"]), first + 1, run(before), run(after))]


def _partition_changes(old, new, where):
    out = []
    spelled = _spellings(old, new)
    for name in list(old["partitions"]) + [p for p in new["partitions"] if p not in old["partitions"]]:
        if name not in new["partitions"]:
            out.append("%s: PartitionName=%s is left out" % (where(old["partitions"][name]["line"]), name))
            continue
        if name not in old["partitions"]:
            out.append("slurm.conf: PartitionName=%s is added (%s)" % (name, _pairs(sorted(
                (spelled.get(k, k), v) for k, v in _definition(new["partitions"][name]).items()))))
            continue
        text = _mapping_changes(partition_definition(old["partitions"][name]),
                                partition_definition(new["partitions"][name]), spelled)
        if text:
            out.append("%s: PartitionName=%s: %s" % (where(old["partitions"][name]["line"]), name, text))
    return out


def _cgroup_changes(source, rendered):
    text = source.get("cgroup.conf")
    rendered_text = rendered.get("cgroup.conf")
    if rendered_text is None:  # include mode: the site's cgroup.conf stays
        return []
    new = cgroup_options(rendered_text)
    spelled = dict((k.lower(), k) for k in parse_cgroup_conf(rendered_text))
    if text is None:
        return ["cgroup.conf: not in the source; the deploy installs one with %s" % (
            _pairs(parse_cgroup_conf(rendered_text).items()) or "no option")]
    try:
        old = cgroup_options(text)
    except ConfSyntaxError:
        return []
    spelled.update((k.lower(), k) for k in parse_cgroup_conf(text))
    lines = {}
    for lineno, raw in enumerate(text.split("\n"), 1):
        key = raw.split("#", 1)[0].partition("=")[0].strip().lower()
        if key:
            lines[key] = lineno
    out = []
    for key in list(old) + [k for k in new if k not in old]:
        where = "cgroup.conf line %d" % lines[key] if key in lines else "cgroup.conf"
        if key not in new:
            out.append("%s: %s=%s is left out" % (where, spelled[key], old[key]))
        elif key not in old:
            out.append("%s: %s=%s is added" % (where, spelled[key], new[key]))
        elif old[key] != new[key]:
            out.append("%s: %s=%s becomes %s" % (where, spelled[key], old[key], new[key]))
    return out


def _cores(text):
    try:
        return format_int_ranges(parse_int_ranges(text.strip("[]")))
    except (ValueError, AttributeError):
        return text


def _units(text, node):
    """(AutoDetect mode, [(unit, line, line text)]) of the gres.conf lines slurmd reads for ``node``: one unit per
    device file (a MultipleFiles line is one), shared counts divided over their files."""
    if text is None:
        return (None, None), []
    try:
        recs = [r for r in gres_conf_lines(text) if line_applies(r, node)]
    except ConfSyntaxError:
        return (None, None), []
    mode = line = None
    for rec in recs:  # a NodeName= line's AutoDetect wins over a global one (gres.c)
        if rec["autodetect"] is not None and (rec["nodes"] is not None or mode is None):
            mode, line = rec["autodetect"].strip().lower(), rec["line"]
    units = []
    for rec in recs:
        if rec["name"] is None:
            continue
        name = rec["name"].lower()
        flags = ",".join(sorted(f.strip().lower() for f in (rec["flags"] or "").split(",") if f.strip())) or None
        rest = (rec["type"], _cores(rec["cores"]) if rec["cores"] else None, rec["links"], flags)
        if rec["multiple_files"]:
            units.append(((name, ("MultipleFiles", ",".join(rec["multiple_files"])), None) + rest, rec))
        elif rec["files"]:
            share = rec["count"] // len(rec["files"]) if name in ("shard", "mps") and rec["count"] else None
            units.extend(((name, path, share) + rest, rec) for path in rec["files"])
        else:
            units.append(((name, None, rec["count_text"]) + rest, rec))
    return (mode, line), units


def _unit_fields(unit, files=None):
    """[(key, value)] of a unit as gres.conf writes it (``files``: the text to write for its device files)."""
    name, unit_files, count, gtype, cores, links, flags = unit
    key, text = unit_files if isinstance(unit_files, tuple) else ("File", unit_files)
    if files is not None and text is not None:
        text = files
    parts = [("Name", name), ("Type", gtype), (key, text), ("Count", count), ("Cores", cores), ("Links", links),
             ("Flags", flags)]
    return dict((k, v) for k, v in parts if v is not None)


def _unit_text(unit, files=None):
    return " ".join("%s=%s" % kv for kv in _unit_fields(unit, files).items())


def _files_text(files):
    """Device files of one change: one hostlist where they are plain files (/dev/nvidia[0-1])."""
    texts = [f[1] if isinstance(f, tuple) else f for f in files if f is not None]
    if not texts:
        return ""
    if len(texts) == 1 or any("," in t for t in texts):
        return " ".join(texts)
    try:
        return hostlist.collect_hostlist(texts)
    except hostlist.BadHostlist:
        return ",".join(texts)


def _gres_changes(imported, rendered, source):
    """{difference: [(node, where)]} per node's gres.conf."""
    out = {}
    for name in sorted(imported["conf"]["nodes"], key=natural_key):
        per_node = source.get("node_gres") or {}
        fname = "%s/gres.conf" % name if per_node else "gres.conf"
        old_text = per_node.get(name) if per_node else source.get("gres.conf")
        new_text = rendered.get("%s/gres.conf" % name)
        (old_mode, mode_line), old_units = _units(old_text, name)
        (new_mode, _unused), new_units = _units(new_text, name)
        node_where = fname if old_units else "slurm.conf"
        if (old_mode or "off") != (new_mode or "off"):
            declared = imported["conf"]["nodes"][name]["gres"]
            out.setdefault("AutoDetect=%s becomes AutoDetect=%s%s" % (
                old_mode or "off", new_mode or "off", "" if any(k.split(":")[0] == "gpu" for k in declared) else
                " (no effect: the node declares no GPU)"), []).append((name, "%s line %d" % (fname, mode_line)
                                                                       if mode_line else fname))
        before, after = [u for u, _unused in old_units], [u for u, _unused in new_units]
        if before == after:
            if len(set(id(r) for _unused, r in old_units)) != len(set(id(r) for _unused, r in new_units)):
                out.setdefault("gres.conf records unchanged, written in %d line(s) instead of %d" % (
                    len(set(id(r) for _unused, r in new_units)), len(set(id(r) for _unused, r in old_units))),
                    []).append((name, node_where))
            continue
        mig = name in (imported.get("mig") or {})
        gone = [(u, r) for u, r in old_units if u not in after]
        added = [u for u in after if u not in before]
        groups = {}  # (line or None, text with {files}) -> [device files], to write one part per line and change
        for unit, rec in list(gone):
            twin = [u for u in added if u[0] == unit[0] and u[1] == unit[1] and unit[1]]
            if len(twin) == 1 and not isinstance(unit[1], tuple):
                change = _mapping_changes(_unit_fields(unit), _unit_fields(twin[0]), {})
                groups.setdefault((rec["line"], "Name=%s File={files}: %s" % (unit[0], change)), []).append(unit[1])
                gone.remove((unit, rec))
                added.remove(twin[0])
        for unit, rec in gone:
            what = "is left to the node (MIG: written from its live devices)" if mig and isinstance(unit[1], tuple) \
                else "is left out"
            groups.setdefault((rec["line"], "%s %s" % (_unit_text(unit, "{files}"), what)), []).append(unit[1])
        for unit in added:
            groups.setdefault((None, "%s is added" % _unit_text(unit, "{files}")), []).append(unit[1])
        parts = []
        for (line, text), files in groups.items():
            text = text.replace("{files}", _files_text(files))
            parts.append("line %d %s" % (line, text) if line else text)
        if not parts:
            parts.append("the records are written in another order (%s)" % ", ".join(
                _unit_text(u) for u in after))
        lines = sorted(set(r["line"] for _unused, r in old_units if any("line %d " % r["line"] in p for p in parts)))
        at = "%s line%s %s" % (fname, "s" if len(lines) > 1 else "", format_int_ranges(lines)) if lines else fname
        out.setdefault("; ".join(parts), []).append((name, at))
    return out


def _grouped(changes):
    """Lines "WHERE, node(s) NAMES: difference" from {difference: [(node, where)]}."""
    lines = []
    for text, nodes in changes.items():
        names = [n for n, _unused in nodes]
        try:
            expr = hostlist.collect_hostlist(names)
        except hostlist.BadHostlist:
            expr = ",".join(names)
        lines.append("%s, node%s %s: %s" % (nodes[0][1], "s" if len(names) > 1 else "", expr, text))
    return lines


def first_deploy_changes(imported, rendered, source):
    """["first deploy: WHERE: difference"] between the site's files (``source``, as import_cluster read them) and
    the rendered ones: every difference in what Slurm reads; empty when the deploy changes none."""
    old = imported["conf"]
    new = parse_slurm_conf(rendered["slurm.conf"])
    origin = imported.get("origin")

    def where(line):
        return origin.where(line) if origin and line else "slurm.conf"

    lines = _option_changes(old, new, where) + _include_changes(source)
    lines.extend(_grouped(_node_changes(old, new, where)))
    lines.extend(_order_change(old, new, where))
    lines.extend(_partition_changes(old, new, where))
    lines.extend(_cgroup_changes(source, rendered))
    lines.extend(_grouped(_gres_changes(imported, rendered, source)))
    return [PREFIX + line for line in lines]
