"""What slurmd makes of a node's GRES: slurm.conf ``Gres=`` merged with gres.conf, the way ``slurmd -G`` reports it.

A Python rendering of slurmd's own steps (Slurm 22.05 ``src/common/gres.c``, ``src/plugins/gres/gpu/gres_gpu.c``,
``src/plugins/gres/common/gres_c_s.c`` and ``gres_common.c``; the same steps live in ``src/interfaces/gres.c``
since 23.02), so that the collection judges a file the way the daemon reads it:

1. GresTypes gives the GRES plugins, shared ones (shard, mps) after gpu (``gres_init``); slurm.conf elements
   whose name is not in GresTypes are dropped (``gres_name_filter``).
2. gres.conf: every ``Name=`` line first, then every ``NodeName=`` line for this node (``gres_g_node_config_load``),
   each record checked (``_parse_gres_config``): File/MultipleFiles, Count, Cores beyond the node's cores (an
   error, and the binding is dropped), Links (an invalid one is dropped), Flags (env flags inherited by the next
   line of the same name; a mismatch is fatal), AutoDetect on NodeName lines only.
3. Per plugin: File on all records or none, Type on all or none, one plain record (``_validate_gres_conf``);
   more in gres.conf than slurm.conf declares is a warning (``_check_conf_mismatch``).
4. Merge (``_merge_gres2``): per slurm.conf type in its order, the first gres.conf records of that type (an untyped
   slurm.conf GRES takes any record and drops its type); a record beyond the declared count is cut to it, keeping
   its first files; what gres.conf does not cover is added as a record without File; unmatched records are gone.
5. The gpu plugin: duplicate device files are fatal (``common_node_config_load``). shard/mps
   (``gres_c_s_init_share_devices``): every gpu file becomes one record; a shared record without File is spread
   over them (``count / GPUs left``, the remainder on the later GPUs), one with File is divided over its files and
   matched to the gpu file of the same name; shared records without a matching gpu file are discarded.
6. GPUs without File are removed from the final list (``_find_fileless_gres``) unless AutoDetect may fill them in.

With AutoDetect on, slurmd merges the hardware it finds into this list; that part cannot be known from the files,
so the view then stops before it (``"autodetect"`` names the mode) and keeps configured GPUs without File.
"""
import functools
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    gres_conf_lines,
    gres_spec_name_counts,
    line_applies,
)

SHARED_NAMES = ("shard", "mps")
# gres.c _handle_autodetect_flags: substrings, in this order; "off" compares exactly (case-insensitive). "full" is
# Slurm 26.05's (slurmd 22.05 and 24.11 log "unknown autodetect flag"): the model refuses it for those releases
# (versions.autodetect_modes) before this view is asked.
AUTODETECT_WORDS = ("nvml", "rsmi", "oneapi", "nrt", "nvidia", "full")
ENV_FLAGS = ("nvidia_gpu_env", "amd_gpu_env", "intel_gpu_env", "opencl_env")
OTHER_FLAGS = ("countonly", "one_sharing", "all_sharing", "explicit")
GRES_MAX_LINK = 1023


class _Fatal(Exception):
    pass


def autodetect_mode(value):
    """gres.conf AutoDetect value -> "nvml"/"rsmi"/.../"off", or None when slurmd does not know it."""
    if value is None:
        return None
    low = str(value).lower()
    for word in AUTODETECT_WORDS:
        if word in low:
            return word
    if low == "off":
        return "off"
    return None


def parse_flags(text):
    """gres.conf Flags= -> (env flags frozenset or None when none given, no_gpu_env, other flags frozenset).

    slurmd matches each flag as a case-insensitive substring (gres.c ``gres_flags_parse``)."""
    low = (text or "").lower()
    env = frozenset(f for f in ENV_FLAGS if f in low)
    other = frozenset(f for f in OTHER_FLAGS if f in low)
    return env, "no_gpu_env" in low, other


def links_valid(links):
    """gres.c ``gres_links_validate``: comma list of integers -2..1023 with exactly one -1. It reads the list with
    strtok_r, which skips empty entries: ``0,0,-1,,0`` is valid (a real DeepOps gres.conf, NVIDIA/deepops#1102)."""
    if links is None or links == "":
        return False
    selves = 0
    for tok in (t for t in links.split(",") if t):
        if not re.match(r"^[+-]?\d+$", tok) or not -2 <= int(tok) <= GRES_MAX_LINK:
            return False
        selves += int(tok) == -1
    return selves == 1


@functools.lru_cache(maxsize=1024)
def _canonical_cores(text, total):
    cores = slurm_core_set(text, total)
    return format_int_ranges(cores) if cores else None


def slurm_core_set(text, total=None):
    """Cores= as slurmd reads it (bitstring.c ``bitfmt2int`` + ``inx2bitstr``): digits, '-' and ',' count, any other
    character is skipped (``[0-3]`` is 0-3, ``0x3`` is core 3), ``A-B:S`` steps from A by S below B. Returns the
    sorted core list, or None when slurmd rejects it (a core at or beyond ``total``, a bad step form)."""
    pairs = []
    if ":" in text:
        match = re.match(r"^\s*([+-]?\d+)-([+-]?\d+):([+-]?\d+)$", text)
        if not match:
            return None
        start, end, step = (int(g) for g in match.groups())
        if end < start or step <= 0:
            return None
        pairs = [(i, i) for i in range(start, end, step)]
    else:
        total_sum, start = 0, -1
        for pos, ch in enumerate(text + "\0"):
            if ch.isdigit() and ch.isascii():
                total_sum = total_sum * 10 + int(ch)
            elif ch == "-":
                start, total_sum = total_sum, 0
            elif ch in ",\0":
                if pos == 0:
                    break
                pairs.append((total_sum if start == -1 else start, total_sum))
                start, total_sum = -1, 0
    cores = set()
    for low, high in pairs:
        if low < 0 or high < 0 or (total is not None and (low >= total or high >= total)):
            return None
        cores.update(range(low, high + 1))
    return sorted(cores)


def gres_types_order(grestypes):
    """GresTypes -> plugin names in slurmd's order (shared names after gpu; repeats ignored), and problems."""
    names, shared, problems = [], [], []
    have_gpu = False
    for name in (grestypes or "").split(","):
        if not name:
            continue
        if name in SHARED_NAMES and not have_gpu:
            if name not in shared:
                shared.append(name)
            continue
        if name == "gpu":
            have_gpu = True
        if name not in names:
            names.append(name)
    if shared and not have_gpu:
        problems.append("GresTypes: gres/'shared' requires that gres/gpu also be configured")
    names.extend(s for s in shared if s not in names)
    return names, problems


def node_total_cores(node):
    """Cores of a parsed slurm.conf node (Boards x Sockets(PerBoard) x CoresPerSocket), or None when not given."""
    def _int(key):
        try:
            return int(node.get(key)) if node.get(key) is not None else None
        except ValueError:
            return None
    cores = _int("corespersocket")
    sockets = _int("sockets") or _int("socketsperboard")
    if not cores or not sockets:
        return None
    return (_int("boards") or 1) * sockets * cores


def _record(line_rec, name):
    return {"name": name, "type": None, "count": 0, "files": [], "multiple": False, "cores": None,
            "cores_text": None, "cores_key": None, "links": None, "env": None, "no_gpu_env": False, "flags": frozenset(),
            "line": line_rec["line"] if line_rec else None}


class _View(object):
    def __init__(self, node_name, total_cores):
        self.node = node_name
        self.total_cores = total_cores
        self.messages = []
        self.autodetect = None
        self.local_autodetect = None
        self.autodetect_line = None
        self.shared = {}

    def msg(self, level, text, line=None):
        self.messages.append({"level": level, "text": text, "line": line})

    def fatal(self, text, line=None):
        self.msg("fatal", text, line)
        raise _Fatal(text)


def _build_record(view, rec, contexts, prev_env):
    """gres.c _parse_gres_config for one applicable line; None when slurmd keeps no record."""
    line = rec["line"]
    if rec["autodetect"] is not None:
        if rec["nodes"] is None:
            view.msg("error", "gres.conf: In-line AutoDetect requires NodeName to take effect", line)
        else:
            mode = autodetect_mode(rec["autodetect"])
            if mode is None:
                view.msg("error", "unknown autodetect flag '%s'" % rec["autodetect"], line)
            elif view.local_autodetect is not None and view.local_autodetect != mode:
                view.fatal("gres.conf: duplicate node-local AutoDetect specification does not match the first", line)
            elif mode is not None:
                view.local_autodetect = mode
                view.autodetect_line = line
    if rec["name"] is None:
        return None
    out = _record(rec, rec["name"])
    out["type"] = rec["type"]
    if rec["cores"] is not None:
        out["cores_text"] = rec["cores"]
        out["cores_key"] = rec.get("cores_key", "Cores")
        cores = _canonical_cores(rec["cores"], view.total_cores)
        if cores is None:
            view.msg("error", "Invalid GRES data for %s, Cores=%s" % (rec["name"], rec["cores"]), line)
        else:
            out["cores"] = cores
    if rec["files"]:
        out["files"] = list(rec["files"])
        out["count"] = len(rec["files"])
    if rec["multiple_files"]:
        if rec["files"]:
            view.fatal("File and MultipleFiles options are mutually exclusive", line)
        if len(rec["multiple_files"]) < 2:
            view.fatal("MultipleFiles does not contain multiple files. Use File instead", line)
        out["files"] = list(rec["multiple_files"])
        out["multiple"] = True
        out["count"] = 1
    lname = rec["name"].lower()
    if rec["flags"] is not None:
        env, no_gpu_env, other = parse_flags(rec["flags"])
        if lname == "mps" and not ({"one_sharing", "all_sharing"} & other):
            other = other | {"one_sharing"}
        out["flags"] = other
        if env and no_gpu_env:
            view.fatal("Invalid GRES record name=%s type=%s: Flags (%s) contains \"no_gpu_env\", which must be "
                       "mutually exclusive to all other GRES env flags of same node and name"
                       % (rec["name"], rec["type"], rec["flags"]), line)
        if env or no_gpu_env:
            if prev_env.get("name") == rec["name"] and (prev_env["env"], prev_env["no"]) != (env, no_gpu_env):
                view.fatal("Invalid GRES record name=%s type=%s: Flags (%s) does not match env flags for previous "
                           "GRES of same node and name" % (rec["name"], rec["type"], rec["flags"]), line)
            out["env"], out["no_gpu_env"] = env, no_gpu_env
            prev_env.update(name=rec["name"], env=env, no=no_gpu_env)
    elif prev_env.get("name") == rec["name"] and (prev_env["env"] or prev_env["no"]):
        out["env"] = frozenset() if prev_env["no"] else prev_env["env"]
        out["no_gpu_env"] = prev_env["no"]
    elif lname == "mps":
        out["flags"] = frozenset({"one_sharing"})
    if out["env"] is None and lname == "gpu":
        # gpu lines without env flags set every GPU variable (GRES_CONF_ENV_DEF); later lines do not inherit it
        prev_env.update(name=rec["name"], env=frozenset(), no=False)
    if rec["links"] is not None:
        if links_valid(rec["links"]):
            out["links"] = rec["links"]
        else:
            view.msg("error", "gres.conf: Ignoring invalid Links=%s for Name=%s" % (rec["links"], rec["name"]), line)
    if rec["count"] is not None:
        shared = lname in SHARED_NAMES
        if out["count"] and out["count"] != rec["count"] and not shared:
            view.fatal("Invalid GRES record for %s, count does not match File value" % rec["name"], line)
        out["count"] = rec["count"]
    elif out["count"] == 0:
        out["count"] = 1
    context = next((c for c in contexts if c.lower() == lname), None)
    if context is None:
        view.msg("error", "Ignoring gres.conf record, invalid name: %s" % rec["name"], line)
        return None
    out["context"] = context
    return out


def _validate_gres_conf(view, records, context):
    has_file = has_type = None
    count = 0
    for rec in records:
        if rec["context"] != context:
            continue
        count += 1
        this_file, this_type = bool(rec["files"]), rec["type"] is not None
        if has_file is None:
            has_file = this_file
        elif has_file != this_file:
            view.fatal("gres.conf for %s, some records have \"File\" specification while others do not" % context,
                       rec["line"])
        if has_type is None:
            has_type = this_type
        elif has_type != this_type:
            view.fatal("gres.conf for %s, some records have \"Type=\" specification while others do not" % context,
                       rec["line"])
        if not has_file and not has_type and count > 1:
            view.fatal("gres.conf duplicate records for %s" % context, rec["line"])


def _check_conf_mismatch(view, records, context, declared):
    left = [[rec, rec["count"]] for rec in records if rec["context"] == context]

    def take(count, gtype):
        for item in left:
            rtype = item[0]["type"]
            if (rtype is None) != (gtype is None) or (rtype is not None and rtype.lower() != gtype.lower()):
                continue
            if item[1] > count:
                item[1] -= count
                return
            count -= item[1]
            item[1] = 0
    if declared["types"]:
        for gtype, count in declared["types"]:
            take(count, gtype)
    elif declared["count"]:
        take(declared["count"], None)
    for rec, extra in left:
        if extra > 0:
            view.msg("warning", "A line in gres.conf for GRES %s%s%s has %d more configured than expected in "
                     "slurm.conf. Ignoring extra GRES." % (rec["name"], ":" if rec["type"] else "",
                                                           rec["type"] or "", extra), rec["line"])


def _merge(view, records, context, declared):
    """gres.c _merge_gres/_merge_gres2 for one plugin: the records slurmd keeps, in its order."""
    merged = []
    entries = declared["types"] or ([(None, declared["count"])] if declared["count"] else [])
    for gtype, count in entries:
        if count == 0:
            continue
        while count:
            match = None
            for rec in records:
                if rec["context"] != context or rec.get("used"):
                    continue
                if gtype is None:
                    rec["type"] = None
                elif (rec["type"] or "").lower() != gtype.lower() or rec["type"] is None:
                    continue
                match = rec
                break
            if match is None:
                break
            match["used"] = True
            merged.append(match)
            if match["count"] > count:
                if match["files"] and not match["multiple"]:
                    view.msg("info", "%s: %s beyond the %d slurm.conf declares are dropped"
                             % (context, ",".join(match["files"][count:]), count), match["line"])
                    match["files"] = match["files"][:count]
                match["count"] = count
                count = 0
            else:
                count -= match["count"]
        if count:
            rec = _record(None, context)
            rec.update(type=gtype, count=count, context=context)
            if context == "mps":
                # gres_c_s.c _create_shared_rec gives a record slurm.conf alone declares mps's default one_sharing
                rec["flags"] = frozenset({"one_sharing"})
            merged.append(rec)
    return merged


def _share(view, records, shared):
    """gres_c_s_init_share_devices for one shared plugin (shard or mps)."""
    sharing, kept = [], []
    lacks_file = False
    for rec in records:
        if rec["name"] != "gpu":
            kept.append(rec)
            continue
        if not rec["files"]:
            if not lacks_file:
                view.msg("error", "SHARING configuration lacks \"File\" specification", rec["line"])
                lacks_file = True
            kept.append(rec)
            continue
        for path in rec["files"]:
            one = dict(rec, files=[path], count=1, multiple=False)
            sharing.append(one)
    shared_recs, no_file, with_file = [], 0, 0
    rest = []
    for rec in kept:
        if rec["name"] != shared:
            rest.append(rec)
            continue
        if not rec["files"]:
            if no_file:
                view.fatal("_build_shared_list: bad configuration, multiple configurations without \"File\"",
                           rec["line"])
            if with_file:
                view.fatal("_build_shared_list: multiple configurations with and without \"File\"", rec["line"])
            no_file += 1
            shared_recs.append(dict(rec))
        else:
            with_file += 1
            if no_file:
                view.fatal("gres/shared: multiple configurations with and without \"File\"", rec["line"])
            per_file = rec["count"] // len(rec["files"])
            for path in rec["files"]:
                shared_recs.append(dict(rec, files=[path], count=per_file))
    if not sharing and shared_recs:
        view.fatal("SHARED specified without any SHARING found")
    out = rest
    if shared_recs:
        view.shared[shared] = "spread" if not shared_recs[0]["files"] else "files"
    if len(shared_recs) == 1 and not shared_recs[0]["files"]:
        count = shared_recs[0]["count"]
        left = len(sharing)
        for gpu in sharing:
            part = count // left
            count -= part
            left -= 1
            out.append(dict(shared_recs[0], files=list(gpu["files"]), count=part, type=gpu["type"],
                            cores=gpu["cores"]))
            out.append(gpu)
        return out
    for gpu in sharing:
        match = next((r for r in shared_recs if r["files"] == gpu["files"]), None)
        if match is not None:
            shared_recs.remove(match)
            out.append(dict(match, type=gpu["type"], cores=gpu["cores"]))
        else:
            out.append(dict(_record(None, shared), files=list(gpu["files"]), count=0, type=gpu["type"],
                            cores=gpu["cores"], context=shared))
        out.append(gpu)
    for rec in shared_recs:
        view.msg("error", "Discarding gres/'shared' configuration (File=%s) without matching gres/'sharing' record"
                 % ",".join(rec["files"]), rec["line"])
    return out


def node_view(slurm, gres_text, node_name, total_cores=None):
    """What ``slurmd -N node_name -G`` would report for this node, from parsed slurm.conf and gres.conf text.

    ``slurm``: a ``parse_slurm_conf`` result; ``gres_text``: gres.conf text or None (no file: slurm.conf only);
    ``total_cores``: the node's cores for the Cores= check (default: from its slurm.conf line, when given).
    Returns ``{"node", "records": [{"name", "type", "count", "files", "multiple", "cores", "cores_text", "links",
    "env", "no_gpu_env", "flags", "line", "context"}], "messages": [{"level": fatal|error|warning|info, "text",
    "line"}], "fatal": text or None, "autodetect": mode or None, "declared": {plugin: counts}}``.
    ``env`` is None for the default (every GPU variable) or the frozenset of env flags; ``line`` is the gres.conf
    line of the record, None for what slurm.conf alone declares. A ConfSyntaxError in gres.conf is a fatal.
    ``shared`` says per shard/mps how slurmd placed the count: ``"spread"`` (one Count without File, or slurm.conf
    only: spread over the GPUs) or ``"files"`` (per File).
    """
    node = slurm["nodes"].get(node_name)
    if total_cores is None and node is not None:
        total_cores = node_total_cores(node)
    view = _View(node_name, total_cores)
    result = {"node": node_name, "records": [], "messages": view.messages, "fatal": None, "autodetect": None,
              "autodetect_line": None, "declared": {}, "shared": view.shared}
    try:
        if node is None:
            view.fatal("Unable to determine this slurmd's NodeName (%s is not in slurm.conf)" % node_name)
        contexts, problems = gres_types_order(slurm["options"].get("grestypes"))
        for problem in problems:
            view.fatal(problem)
        spec = node.get("gres_spec")
        kept = []
        for tok in (spec or "").split(","):
            if not tok or tok == "(null)":
                continue
            if tok.split(":", 1)[0] in contexts:
                kept.append(tok)
            else:
                view.msg("error", "Invalid GRES configured on node %s: %s" % (node_name, tok))
        spec = ",".join(kept)
        declared = {}
        for context in contexts:
            counts = gres_spec_name_counts(spec, context)
            for err in counts["errors"]:
                view.msg("error", err)
            if counts["types"] and counts["count"] > sum(c for _unused, c in counts["types"]):
                view.fatal("_foreach_slurm_conf: Some %s GRES in slurm.conf have a type while others do not "
                           "(gres_ns->gres_cnt_config (%d) > tmp_count (%d))"
                           % (context, counts["count"], sum(c for _unused, c in counts["types"])))
            declared[context] = counts
        result["declared"] = declared
        records = []
        if gres_text is not None:
            try:
                lines = gres_conf_lines(gres_text)
            except ConfSyntaxError as exc:
                view.fatal(str(exc))
            global_autodetect = global_line = None
            prev_env = {}
            named, by_node = [], []
            for rec in lines:
                if rec["error"]:
                    if rec["error"].startswith("no Name="):
                        if rec["nodes"] is None or line_applies(dict(rec, error=None), node_name):
                            view.msg("error", "Invalid GRES data, no type name (%s)" % rec["text"], rec["line"])
                    else:
                        view.msg("info", rec["error"], rec["line"])
                    continue
                if rec["nodes"] is None and rec["name"] is None:
                    global_autodetect, global_line = rec["autodetect"], rec["line"]
                    continue
                if not line_applies(rec, node_name):
                    continue
                built = _build_record(view, rec, contexts, prev_env)
                if built is not None:
                    (named if rec["nodes"] is None else by_node).append(built)
            records = named + by_node
            mode = view.local_autodetect
            if mode is None and global_autodetect is not None:
                view.autodetect_line = global_line
                mode = autodetect_mode(global_autodetect)
                if mode is None:
                    view.msg("error", "unknown autodetect flag '%s'" % global_autodetect)
            result["autodetect"] = mode if mode not in (None, "off") else None
            result["autodetect_line"] = view.autodetect_line
        for context in contexts:
            _validate_gres_conf(view, records, context)
            _check_conf_mismatch(view, records, context, declared[context])
        final = []
        for context in contexts:
            final.extend(_merge(view, records, context, declared[context]))
        seen = set()
        for rec in final:
            if rec["name"] != "gpu" or rec["multiple"]:
                continue
            for path in rec["files"]:
                if path in seen:
                    view.fatal("gpu duplicate device file name (%s)" % path, rec["line"])
                seen.add(path)
        for context in contexts:
            # with AutoDetect the GPUs get their files from the hardware first: shares are spread then
            if context in SHARED_NAMES and result["autodetect"] is None:
                final = _share(view, final, context)
        if result["autodetect"] is None:
            final = [r for r in final if r["context"] != "gpu" or r["files"]]
        for rec in final:
            rec.pop("used", None)
        result["records"] = final
    except _Fatal as exc:
        result["fatal"] = str(exc)
    return result


def _count_only_key(rec):
    """What makes records of one GRES interchangeable for slurmctld when they carry no File, Cores or Links;
    None for any other record (or a shard/mps record, whose placement follows the GPUs)."""
    if rec["files"] or rec["cores"] is not None or rec["links"] or rec["name"].lower() in SHARED_NAMES:
        return None
    env = tuple(sorted(rec["env"])) if rec["env"] is not None else None
    return (rec["name"].lower(), rec["type"], env, rec["no_gpu_env"], tuple(sorted(rec["flags"])))


def merge_count_only(records):
    """[(record, [records it sums])]: records of one GRES and type without File, Cores or Links summed into the
    first of them; every other record alone.

    slurmctld adds these up into one count (gres.c _foreach_get_tot_from_slurmd_conf: no File and no CPU set
    means no topology per record), so ``Name=qpu Count=2`` plus the remainder slurmd adds for
    ``Gres=qpu:10`` is the same node as one ``Count=10``.
    """
    out = []
    first = {}
    for rec in records:
        key = _count_only_key(rec)
        if key is None or key not in first:
            entry = (dict(rec), [rec])
            out.append(entry)
            if key is not None:
                first[key] = entry
            continue
        merged, parts = first[key]
        merged["count"] += rec["count"]
        parts.append(rec)
    return out


def view_units(view, with_flags=True):
    """A view's records as comparable units per GRES name (lower-case), in slurmd's order.

    A record with files becomes one unit per file (a MultipleFiles record is one unit with all its files);
    shard/mps units with count 0 (slurmd's placeholders) are left out; records slurmctld adds up
    (``merge_count_only``) are one unit. Units are tuples ``(type, files, count, cores, links, flags)``
    (``flags`` only when with_flags).
    """
    units = {}
    for rec, _unused in merge_count_only(view["records"]):
        name = rec["name"].lower()
        flags = None
        if with_flags:
            flags = (tuple(sorted(rec["env"])) if rec["env"] is not None else "default",
                     rec["no_gpu_env"], tuple(sorted(rec["flags"])))
        if name in SHARED_NAMES:
            # slurmd divides a shared line's Count over its files (_build_shared_list); with AutoDetect the view
            # stops before that, so divide here to compare like with like
            per = rec["count"] // len(rec["files"]) if len(rec["files"]) > 1 else rec["count"]
            for path in rec["files"] if len(rec["files"]) > 1 else [None]:
                if per:
                    files = (path,) if path else tuple(rec["files"])
                    units.setdefault(name, []).append((None, files, per, None, None, flags))
            continue
        if rec["files"] and len(rec["files"]) == rec["count"]:
            for path in rec["files"]:
                units.setdefault(name, []).append((rec["type"], (path,), 1, rec["cores"], rec["links"], flags))
        else:
            units.setdefault(name, []).append((rec["type"], tuple(rec["files"]), rec["count"], rec["cores"],
                                               rec["links"], flags))
    return units


def view_counts(view):
    """{gres_key: count} a view registers with slurmctld (``gpu:a100``, ``gpu``, ``shard``), lower-case keys."""
    counts = {}
    for rec in view["records"]:
        name = rec["name"].lower()
        key = name if name in SHARED_NAMES or not rec["type"] else "%s:%s" % (name, rec["type"].lower())
        counts[key] = counts.get(key, 0) + rec["count"]
    return {k: v for k, v in counts.items() if v}
