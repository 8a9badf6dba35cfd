"""Inventory -> model for the GRES beyond whole typed GPUs: untyped and count-only GPUs, Links, Flags, MPS,
slurm.conf-only shard/MPS counts, other (generic) GRES, per-node AutoDetect and extra NodeName options.

Each rule here is one slurmd applies (see module_utils/slurm/slurmd_gres.py for the source it follows), so an
inventory that passes renders files slurmd reads exactly as written.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_count
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.values import (
    GRES_COUNT_MAX,
    bad_characters,
    check_option_value,
    type_name,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import (
    ENV_FLAGS,
    SHARED_NAMES,
    links_valid,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_problems import did_you_mean

# gres.conf Flags= words (22.05-26.05); slurmd matches them as substrings, the model wants them exact.
FLAG_WORDS = ENV_FLAGS + ("no_gpu_env",) + ("CountOnly", "one_sharing", "all_sharing", "explicit")
_FLAG_CANON = {w.lower(): w for w in FLAG_WORDS}
GENERIC_KEYS = ("name", "type", "count", "no_consume", "file", "cores", "flags")
_GRES_NAME_RE = re.compile(r"^[A-Za-z][A-Za-z0-9_]*$")
_TYPE_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")
_PATH_RE = re.compile(r"^/[A-Za-z0-9_./\[\],-]+$")
_DEVICE_FILE_RE = re.compile(r"^/[A-Za-z0-9_.+:-]+(/[A-Za-z0-9_.+:-]+)*$")

# slurm.conf NodeName keys (read_config.c _nodename_options, 22.05, plus later releases) that
# hpc_gres_node_options may set; the schema's own variables and Gres are derived.
NODE_OPTION_KEYS = ("BcastAddr", "Boards", "CoreSpecCount", "CPUs", "CPUSpecList", "CpuBind", "MemSpecLimit",
                    "NodeAddr", "NodeHostname", "Port", "Reason", "SocketsPerBoard", "State", "TmpDisk",
                    "TRESWeights", "Comment", "Extra", "Features", "Parameters", "RestrictedCoresPerGPU",
                    "Topology")
OWNED_NODE_KEYS = {"nodename": "hpc_gres_node_name",
                   "gres": "hpc_gres_gpus for GPUs, hpc_gres_node_gres for other GRES",
                   "sockets": "hpc_gres_node_sockets",
                   "corespersocket": "hpc_gres_node_cores_per_socket", "threadspercore": "hpc_gres_node_threads_per_core",
                   "realmemory": "hpc_gres_node_real_memory", "feature": "hpc_gres_node_features",
                   "features": "hpc_gres_node_features", "weight": "hpc_gres_node_weight", "procs": "CPUs"}
_NODE_OPTION_CANON = {k.lower(): k for k in NODE_OPTION_KEYS if k != "Features"}


def describe(value):
    """How a found value is named in a problem: 'a100' (string), 3 (int), null."""
    if isinstance(value, str):
        return "%r (string)" % value
    if value is None:
        return "null"
    return "%r (%s)" % (value, type_name(value))


def describe_chars(value, allowed):
    """``describe``, naming the characters of a string outside ``allowed`` (a one-character regex class) that make
    it unsafe: ``'rack 12\\nState=DRAIN' (string, contains a newline)``."""
    if isinstance(value, str):
        bad = bad_characters(value, re.compile(allowed))
        if bad:
            return "%r (string, contains %s)" % (value, bad)
    return describe(value)


def flags_value(col, host, field, value):
    """Flags as a list of exact flag words (a list, or a comma-separated string); None after a problem."""
    words = value.split(",") if isinstance(value, str) else value
    if not isinstance(words, (list, tuple)) or not words or not all(isinstance(w, str) for w in words):
        col.add(host, field, "a list of gres.conf flags (%s)" % ", ".join(FLAG_WORDS), describe(value))
        return None
    out = []
    for word in words:
        canon = _FLAG_CANON.get(word.strip().lower())
        if canon is None:
            col.add(host, field, "gres.conf flags (%s)" % ", ".join(FLAG_WORDS), "unknown flag %r" % word,
                    did_you_mean(word.strip(), FLAG_WORDS))
            return None
        if canon not in out:
            out.append(canon)
    env = [w for w in out if w in ENV_FLAGS]
    if env and "no_gpu_env" in out:
        col.add(host, field, "no_gpu_env alone or other env flags, not both", ",".join(out),
                "slurmd: Flags contains \"no_gpu_env\", which must be mutually exclusive to all other GRES env flags")
        return None
    return out


def env_flags(flags):
    """The env part of a flags list (what slurmd compares between lines of one name), None when none set."""
    if not flags:
        return None
    env = tuple(sorted(w for w in flags if w in ENV_FLAGS or w == "no_gpu_env"))
    return env or None


def check_env_flags(col, host, field_of, entries):
    """slurmd (gres.c _parse_gres_config): the env flags of one GRES name must be the same on every line of a
    node: a line without Flags= inherits the previous line's, and a line that sets others than the line before
    (default included) stops slurmd. So every GPU of a node has the same env flags, or none has any."""
    first = None
    for pos, entry in entries:
        env = env_flags(entry.get("flags"))
        if first is None:
            first = (pos, env)
            continue
        if env == first[1]:
            continue
        want = ",".join(first[1]) if first[1] else "none"
        col.add(host, field_of(pos) + ".flags", "the env flags of %s (%s): every GPU of a node the same"
                % (field_of(first[0]), want), ",".join(env) if env else "none",
                "slurmd: Flags does not match env flags for previous GRES of same node and name; a line without "
                "Flags= takes the previous line's")


def links_text(col, host, field, value):
    """Links= as "-1,0,2,2": comma list of -2..1023 with exactly one -1 (slurmd drops anything else)."""
    if isinstance(value, (list, tuple)) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        value = ",".join(str(v) for v in value)
    if isinstance(value, str) and links_valid(value.replace(" ", "")):
        return value.replace(" ", "")
    col.add(host, field, "a Links list of integers -2..1023 with exactly one -1 (this GPU), e.g. \"-1,0,2,2\"",
            describe_chars(value, r"[-0-9, ]"), "slurmd ignores an invalid Links= (gres.conf: Ignoring invalid Links)")
    return None


def count_value(col, host, field, value):
    """A GRES count: an integer >= 1 or a string with slurmd's suffixes (4G, 100M, 1KB). (int, text) or None."""
    if isinstance(value, bool):
        value = None
    if isinstance(value, int) and value >= 1:
        return value, str(value)
    if isinstance(value, str):
        try:
            count = parse_count(value)
        except ValueError:
            count = 0
        if count >= 1:
            return count, value.strip()
    col.add(host, field, "a count >= 1 (integer, or with a K/M/G/T/P suffix such as 4G)",
            describe_chars(value, r"[0-9A-Za-z ]"))
    return None


def gpu_device_file(col, host, field, value):
    """A GPU's own device file, written to gres.conf as it is: one absolute path (no hostlist brackets or commas:
    one entry is one GPU), not /dev/nvidiaN (that is ``minor``). None after a problem."""
    if not isinstance(value, str) or not _DEVICE_FILE_RE.match(value) or "/../" in value + "/":
        col.add(host, field, "one device file as an absolute path such as /dev/nvidia-caps/nvidia-cap30 "
                "(letters, digits, '/', '.', '_', '+', ':', '-')", describe_chars(value, r"[A-Za-z0-9_./+:-]"),
                "one GPU entry per device file: write a GPU entry for each file of a range")
        return None
    if re.match(r"^/dev/nvidia\d+$", value):
        col.add(host, field, "a device file other than /dev/nvidiaN", describe(value),
                "write minor: %s for /dev/nvidiaN" % value[len("/dev/nvidia"):])
        return None
    return str(value)


def _file_list(col, host, field, value):
    if not isinstance(value, str) or not _PATH_RE.match(value):
        col.add(host, field, "device file(s) as an absolute path or hostlist expression (/dev/mic[0-1])",
                describe_chars(value, r"[A-Za-z0-9_./\[\],-]"))
        return None
    try:
        return hostlist.expand_hostlist(value, allow_duplicates=True)
    except hostlist.BadHostlist:
        col.add(host, field, "a device hostlist expression such as /dev/mic[0-1]", describe(value))
        return None


def keyed_entries(col, host, var, value, keys, what, example):
    """(index, field, entry) of a list of mappings, each checked for unknown keys; problems for the rest."""
    if not isinstance(value, (list, tuple)):
        col.add(host, var, "a list of %s" % what, describe(value))
        return
    for i, entry in enumerate(value):
        field = "%s[%d]" % (var, i)
        if not isinstance(entry, dict):
            col.add(host, field, "a mapping like %s" % example, describe(entry))
            continue
        for key in sorted(set(entry) - set(keys), key=str):
            col.add(host, "%s.%s" % (field, key), "a %s key (%s)" % (what.split()[0], ", ".join(keys)),
                    "unknown key %r" % key, did_you_mean(key, keys))
        yield i, field, entry


def generic_gres(col, host, value, cores_fn):
    """hpc_gres_node_gres: other GRES (bandwidth, tmpdisk, mic, ...) -> list of model records."""
    if value is None:
        return []
    out = []
    for i, field, entry in keyed_entries(col, host, "hpc_gres_node_gres", value, GENERIC_KEYS, "GRES records",
                                         "{name: bandwidth, type: lustre, count: 4G}"):
        rec = {"name": None, "type": None, "count": None, "count_text": None, "no_consume": False, "files": None,
               "file": None, "cores": None, "flags": None}
        name = entry.get("name")
        if not isinstance(name, str) or not _GRES_NAME_RE.match(name):
            col.add(host, field + ".name", "a GRES name (letters, digits, '_')", describe_chars(name, r"[A-Za-z0-9_]"))
            continue
        if name.lower() in ("gpu",) + SHARED_NAMES:
            col.add(host, field + ".name", "a GRES other than gpu, shard and mps",
                    name, "GPUs go in hpc_gres_gpus, shards and MPS per GPU or in hpc_gres_node_shards/hpc_gres_node_mps")
            continue
        rec["name"] = str(name)
        gtype = entry.get("type")
        if gtype is not None:
            if not isinstance(gtype, str) or not _TYPE_RE.match(gtype):
                col.add(host, field + ".type", "a GRES type (letters, digits, '_', '.', '-', '+')",
                        describe_chars(gtype, r"[A-Za-z0-9_.+-]"))
            else:
                rec["type"] = str(gtype)
        if entry.get("file") is not None:
            rec["files"] = _file_list(col, host, field + ".file", entry["file"])
            rec["file"] = str(entry["file"]) if rec["files"] else None
        if entry.get("count") is not None:
            parsed = count_value(col, host, field + ".count", entry["count"])
            if parsed:
                rec["count"], rec["count_text"] = parsed
        elif rec["files"]:
            rec["count"], rec["count_text"] = len(rec["files"]), str(len(rec["files"]))
        else:
            col.add(host, field + ".count", "a count (or file)", "neither")
        if rec["files"] and rec["count"] is not None and rec["count"] != len(rec["files"]):
            col.add(host, field + ".count", "the number of files in %s (%d)" % (rec["file"], len(rec["files"])),
                    str(entry.get("count")), "slurmd: count does not match File value")
        no_consume = entry.get("no_consume", False)
        if not isinstance(no_consume, bool):
            col.add(host, field + ".no_consume", "true or false", describe(no_consume))
        else:
            rec["no_consume"] = no_consume
        if entry.get("cores") is not None:
            rec["cores"] = cores_fn(field + ".cores", entry["cores"])
        if entry.get("flags") is not None:
            rec["flags"] = flags_value(col, host, field + ".flags", entry["flags"])
        out.append(rec)
    _check_generic_rules(col, host, out)
    return out


def _check_generic_rules(col, host, records):
    """slurmd per GRES name: File on all records or none, Type on all or none, one record without both,
    and one slurm.conf element per name and type."""
    by_name = {}
    seen = {}
    for i, rec in enumerate(records):
        if rec["name"] is None:
            continue
        key = (rec["name"], (rec["type"] or "").lower())
        if key in seen:
            col.add(host, "hpc_gres_node_gres[%d]" % i, "one record per GRES name and type",
                    "%s%s again (first hpc_gres_node_gres[%d])"
                    % (rec["name"], ":" + rec["type"] if rec["type"] else "", seen[key]))
        seen.setdefault(key, i)
        by_name.setdefault(rec["name"], []).append((i, rec))
    for name, items in by_name.items():
        for attr, what in (("files", "File"), ("type", "Type")):
            has = [bool(rec[attr]) for _unused, rec in items]
            if any(has) and not all(has):
                pos = items[has.index(False)][0]
                col.add(host, "hpc_gres_node_gres[%d].%s" % (pos, "file" if attr == "files" else "type"),
                        "%s on every %s record when any has one" % (what, name), "none",
                        "slurmd stops: some records have \"%s\" specification while others do not" % what)


def node_options(col, host, value):
    """hpc_gres_node_options: extra NodeName= settings (TmpDisk, State, CPUs, NodeAddr, ...) in the given order."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        col.add(host, "hpc_gres_node_options", "a mapping of NodeName option to value", describe(value))
        return {}
    out = {}
    for key in value:
        field = "hpc_gres_node_options.%s" % key
        low = str(key).lower()
        if low in OWNED_NODE_KEYS:
            col.add(host, field, "an option the schema does not hold", "%s (use %s)" % (key, OWNED_NODE_KEYS[low]))
            continue
        canon = _NODE_OPTION_CANON.get(low)
        if canon is None:
            col.add(host, field, "a NodeName option (%s)" % ", ".join(sorted(_NODE_OPTION_CANON.values())),
                    "unknown option %r" % key, did_you_mean(key, sorted(_NODE_OPTION_CANON.values())))
            continue
        item = value[key]
        if isinstance(item, bool) or not isinstance(item, (str, int)):
            col.add(host, field, "a string or integer", describe(item))
            continue
        if isinstance(item, str):
            # written "..." when it holds a space (Reason="rack 12"); what would end the value or the line is refused
            # by name: a newline, '#', '"', '\\'
            item = item.strip()
            if not col.check(host, field, check_option_value(item, quoted_ok=True)):
                continue
        out[canon] = str(item)
    return out


def shared_count(col, host, var, value):
    if value is None:
        return None
    return col.int_value(host, var, value, 1, GRES_COUNT_MAX, note="a GRES count")


def gres_types(col, host, value):
    """hpc_gres_types: GRES names always in GresTypes, used or not."""
    if value is None:
        return []
    if isinstance(value, str):
        value = [v for v in value.split(",") if v]
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) and _GRES_NAME_RE.match(v) for v in value):
        bad = [v for v in value if isinstance(v, str) and not _GRES_NAME_RE.match(v)] if isinstance(
            value, (list, tuple)) else []
        col.add(host, "hpc_gres_types", "a list of GRES names (gpu, mps, shard, bandwidth, ...: letters, digits, "
                "'_')", describe_chars(bad[0], r"[A-Za-z0-9_]") if bad else describe(value))
        return []
    out = []
    for name in value:
        if name not in out:
            out.append(str(name))
    return out
