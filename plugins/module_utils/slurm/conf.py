"""The one parser for slurm.conf and gres.conf, and the count proof built on it.

Used twice: by the renderer, to prove its own output before anything is written, and by the node-side verifier,
to read the files that are actually installed. Both therefore agree on what a file means.

Parsing follows Slurm 22.05+ (``src/common/parse_config.c`` and ``gres.c``): keys are case-insensitive, ``#``
starts a comment (``\\#`` is a literal ``#``), a trailing ``\\`` continues a line, values may be double-quoted.
GRES keys in results are lower-case (``"gpu:a100"``, ``"gpu"``, ``"shard"``) because Slurm compares GRES
names and types case-insensitively.
"""
import functools
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem

SHARING_GRES = ("shard", "mps")

# Per-line keys Slurm accepts in gres.conf (gres.c _gres_options) plus NodeName and the aliases.
_GRES_KEYS = {
    "nodename": "nodename",
    "name": "name",
    "type": "type",
    "file": "file",
    "files": "file",
    "multiplefiles": "multiplefiles",
    "count": "count",
    "cores": "cores",
    "cpus": "cores",
    "links": "links",
    "link": "links",
    "flags": "flags",
    "autodetect": "autodetect",
}
_COUNT_RE = re.compile(r"^\+?(\d+)([A-Za-z]*)$")
# slurm_protocol_defs.c suffix_mult: k/kib = 1024, kb = 1000, and so on up to p/pib/pb.
_SUFFIX = {"": 1}
for _power, _letter in enumerate("kmgtp", 1):
    _SUFFIX[_letter] = _SUFFIX[_letter + "ib"] = 1024 ** _power
    _SUFFIX[_letter + "b"] = 1000 ** _power


class ConfSyntaxError(ValueError):
    """A line Slurm itself would refuse; the message names the file and line."""


def parse_cgroup_conf(text):
    """cgroup.conf -> {key as written: value} in file order (one pair of double quotes removed); ConfSyntaxError
    names a line slurmd cannot read. Keys are case-insensitive in Slurm: compare them with ``cgroup_options``."""
    options = {}
    for lineno, raw in enumerate((text or "").split("\n"), 1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if "=" not in line:
            raise ConfSyntaxError("cgroup.conf line %d: expected Key=Value, found %r" % (lineno, line))
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] == '"':
            value = value[1:-1]
        options[key.strip()] = value
    return options


def cgroup_options(text):
    """{lower-cased key: value} of a cgroup.conf, for comparing and looking up keys; ConfSyntaxError as above."""
    return {key.lower(): value for key, value in parse_cgroup_conf(text).items()}


# isspace() in the C locale: what Slurm's parser treats as whitespace (not Python's wider str.isspace()).
C_SPACE = " \t\n\v\f\r"


def _strip_comment(raw):
    """The physical line up to its first '#' preceded by an even number of '\\' (parse_config.c _strip_comments)."""
    backslashes = 0
    for i, ch in enumerate(raw):
        if ch == "#" and backslashes % 2 == 0:
            return raw[:i]
        backslashes = backslashes + 1 if ch == "\\" else 0
    return raw


def _continued(line):
    """(line without its continuation backslash, True) when it ends in an odd number of '\\' (_strip_continuation)."""
    body = line.rstrip(C_SPACE)
    stripped = body.rstrip("\\")
    count = len(body) - len(stripped)
    if count % 2 == 1:
        return body[:-1], True
    return line, False


def _strip_escapes(line):
    """Every '\\' removed and the character after it kept ('\\\\' -> '\\', '\\#' -> '#'): _strip_escapes."""
    if "\\" not in line:
        return line
    out = []
    i = 0
    while i < len(line):
        if line[i] == "\\":
            i += 1
            if i >= len(line):
                break
        out.append(line[i])
        i += 1
    return "".join(out)


def logical_lines(text):
    """Yield (first line number, logical line) exactly as Slurm's parser builds them (parse_config.c).

    Per physical line the comment is cut first; a line ending in an odd number of backslashes is joined to the next
    one with nothing in between; escapes are removed from the joined line. Lines left empty are skipped.
    """
    pending = ""
    start = None
    for lineno, raw in enumerate(text.split("\n"), 1):
        line, more = _continued(_strip_comment(raw))
        if start is None:
            start = lineno
        pending += line
        if more:
            continue
        joined = _strip_escapes(pending)
        pending = ""
        if joined.strip(C_SPACE):
            yield start, joined
        start = None
    if pending.strip(C_SPACE):
        yield start, _strip_escapes(pending)


# parse_config.c keyvalue_pattern: key, optional operator, '=', a "quoted" or unquoted value, then space or end.
_KEYVALUE_RE = re.compile(r'[ \t\n\v\f\r]*([A-Za-z0-9_.]+)[ \t\n\v\f\r]*([-*+/]?)=[ \t\n\v\f\r]*'
                          r'(?:"([^"]*)"|([^ \t\n\v\f\r]+))(?=[ \t\n\v\f\r]|\Z)')


def split_pairs(line):
    """([(key, value)], leftover): the Key=Value pairs Slurm's regex finds from the start of a logical line, and the
    text it could not read (only whitespace when the line is clean). A key with an operator (``Key+=v``) keeps it."""
    pairs = []
    pos = 0
    while True:
        match = _KEYVALUE_RE.match(line, pos)
        if not match:
            break
        value = match.group(3) if match.group(3) is not None else match.group(4)
        pairs.append((match.group(1) + match.group(2), value))
        pos = match.end()
    return pairs, line[pos:]


def read_records(text):
    """[(line number, [(key, value), ...], leftover)] for every logical line: what Slurm's parser reads.

    An ``Include`` line gives ``[("Include", path)]``. ``leftover`` is what no Key=Value pattern matched (Slurm
    reports it as "Parse error in file ... line N").
    """
    return [(lineno,) + _read_line(line) for lineno, line in logical_lines(text)]


# a line of plain Key=value pieces (printable ASCII, blanks, no quote): split on blanks, it reads as the regex reads it
_PLAIN_LINE_RE = re.compile(r'^[ \t!#-~]*$')
_PLAIN_KEY_RE = re.compile(r"^[A-Za-z0-9_.]+$")


def _read_line(line):
    """(pairs, leftover) of one logical line (see read_records); plain lines take a fast path."""
    if line[:7].lower() == "include" and line[7:8] and line[7:8] in C_SPACE:
        rest = line[7:].lstrip(C_SPACE)
        path = rest
        for i, ch in enumerate(rest):
            if ch in C_SPACE:
                path = rest[:i]
                break
        return [("Include", path)], rest[len(path):]
    if _PLAIN_LINE_RE.match(line):
        pairs = []
        for piece in line.split():
            key, sep, value = piece.partition("=")
            if not sep or not value or not _PLAIN_KEY_RE.match(key):
                break
            pairs.append((key, value))
        else:
            if pairs:
                return pairs, ""
    return split_pairs(line)


def _lines(text, fname):
    """(line number, [(key, value)], logical line) per logical line; ConfSyntaxError where Slurm would report a
    parse error."""
    for lineno, line in logical_lines(text):
        pairs, leftover = _read_line(line)
        if leftover.strip(C_SPACE) or not pairs:
            raise ConfSyntaxError("%s line %d: expected Key=Value, found %r"
                                  % (fname, lineno, leftover.strip(C_SPACE) or line.strip(C_SPACE)))
        yield lineno, pairs, line


@functools.lru_cache(maxsize=4096)
def _expand_cached(expr):
    if "[" not in expr and "," not in expr:
        return (expr,)
    # Slurm's hostlist keeps repeats (File=/dev/nvidia0,/dev/nvidia0 is two devices, then a duplicate error)
    return tuple(hostlist.expand_hostlist(expr, allow_duplicates=True))


def _expand(expr, fname, lineno, what):
    try:
        return list(_expand_cached(expr))
    except hostlist.BadHostlist as exc:
        raise ConfSyntaxError("%s line %d: bad %s %r: %s" % (fname, lineno, what, expr, exc))


def parse_count(text):
    """``"8"`` -> 8, ``"10G"`` -> 10 * 1024**3, ``"1KB"`` -> 1000 (slurmd's suffix_mult); ValueError otherwise."""
    m = _COUNT_RE.match(str(text).strip())
    if not m or m.group(2).lower() not in _SUFFIX:
        raise ValueError("not a GRES count: %r" % (text,))
    return int(m.group(1)) * _SUFFIX[m.group(2).lower()]


def parse_gres_spec(spec):
    """slurm.conf ``Gres=gpu:a100:8,shard:32`` -> {"gpu:a100": 8, "shard": 32} (repeats are summed; an empty
    element, such as after a trailing comma, is skipped: gres.c reads the list with strtok_r)."""
    counts = {}
    if spec is None or spec.strip() == "" or spec.strip().lower() == "(null)":
        return counts
    for elem in spec.split(","):
        if not elem.strip():
            continue
        parts = [p for p in elem.strip().split(":") if p.lower() != "no_consume"]
        if not parts or not parts[0]:
            raise ValueError("empty GRES element in %r" % spec)
        count = 1
        if len(parts) > 1 and _COUNT_RE.match(parts[-1]):
            count = parse_count(parts.pop())
        if len(parts) > 2:
            raise ValueError("bad GRES element %r in %r" % (elem, spec))
        key = ":".join(parts).lower()
        counts[key] = counts.get(key, 0) + count
    return counts


def gres_spec_name_counts(spec, name):
    """What slurmd makes of slurm.conf ``Gres=`` for one GRES name (gres.c ``_get_gres_cnt``, 22.05-26.05).

    Returns ``{"count": total, "types": [(type, count), ...] in first-seen order, "no_consume": bool,
    "errors": [str]}``. The name must match case-sensitively; a bare ``gpu`` element counts 1 and ends the scan;
    ``(S:0-1)`` socket bindings are ignored; ``gpu:tesla`` is one tesla; types repeat-sum case-sensitively.
    """
    out = {"count": 0, "types": [], "no_consume": False, "errors": []}
    if not spec:
        return out
    types = {}
    for tok in spec.split(","):
        if tok == name:
            out["count"] = 1
            break
        if not tok.startswith(name + ":"):
            continue
        tok = tok.split("(", 1)[0] if "(" in tok else tok
        head, _unused, num = tok.rpartition(":")
        if not num or not num[0].isdigit():
            count, typed = 1, tok
        else:
            digits = re.match(r"\d+", num).group(0)
            suffix = num[len(digits):]
            if suffix.lower() not in _SUFFIX:
                out["errors"].append("Bad GRES configuration: %s" % tok)
                break
            count, typed = int(digits) * _SUFFIX[suffix.lower()], head
        out["count"] += count
        for sub in typed.split(":")[1:]:
            if sub.lower() == "no_consume":
                out["no_consume"] = True
                continue
            if sub not in types:
                types[sub] = len(out["types"])
                out["types"].append([sub, 0])
            out["types"][types[sub]][1] += count
    out["types"] = [tuple(t) for t in out["types"]]
    return out


# slurm.conf keys whose lines carry their own sub-options (read_config.c S_P_ARRAY handlers).
LINE_KEYS = ("nodename", "partitionname", "nodeset", "frontendname", "downnodes")


def parse_slurm_conf(text):
    """Parse slurm.conf text.

    Returns ``{"options": {lowercased key: value}, "controllers": [SlurmctldHost values],
    "nodes": {node: {"gres": {gres_key: count}, "gres_spec": raw Gres= or None, <lowercased NodeName options>...,
    "line": n}}, "partitions": {name: {lowercased options..., "line": n}}, "includes": [...], "errors": [str],
    "entries": [{"line": n, "key": key as written, "value": v, "options": [(key, value), ...]}]}``.
    NodeName lines are expanded with hostlist; ``NodeName=DEFAULT`` values apply to later lines. As in slurmctld,
    a plain option line holds one ``Key=Value`` (more is an error); keys are case-insensitive.
    """
    fname = "slurm.conf"
    result = {"options": {}, "controllers": [], "nodes": {}, "partitions": {}, "includes": [], "errors": [],
              "entries": []}
    node_defaults = {}
    part_defaults = {}
    for lineno, tokens, _unused in _lines(text, fname):
        if tokens[0][0] == "Include":
            result["includes"].append(tokens[0][1])
            result["entries"].append({"line": lineno, "key": "Include", "value": tokens[0][1], "options": []})
            continue
        first = tokens[0][0].lower()
        result["entries"].append({"line": lineno, "key": tokens[0][0], "value": tokens[0][1],
                                  "options": tokens[1:]})
        if first == "nodename":
            opts = {k.lower(): v for k, v in tokens[1:]}
            if tokens[0][1].upper() == "DEFAULT":
                node_defaults.update(opts)
                continue
            merged = dict(node_defaults)
            merged.update(opts)
            try:
                gres = parse_gres_spec(merged.get("gres"))
            except ValueError as exc:
                result["errors"].append("%s line %d: %s" % (fname, lineno, exc))
                gres = {}
            try:
                names = _expand(tokens[0][1], fname, lineno, "NodeName")
            except ConfSyntaxError as exc:
                result["errors"].append(str(exc))
                continue
            per_node = {}
            for key in ("nodeaddr", "nodehostname", "bcastaddr"):
                value = opts.get(key)
                if value is None or ("[" not in value and "," not in value):
                    continue
                try:
                    values = hostlist.expand_hostlist(value, allow_duplicates=True)
                except hostlist.BadHostlist:
                    values = []
                if len(values) == len(names):
                    per_node[key] = values
                else:
                    result["errors"].append("%s line %d: %s=%s does not name one address per node of NodeName=%s"
                                            % (fname, lineno, key, value, tokens[0][1]))
            for pos, name in enumerate(names):
                if name in result["nodes"]:
                    result["errors"].append("%s line %d: node %s already defined on line %d"
                                            % (fname, lineno, name, result["nodes"][name]["line"]))
                    continue
                node = dict(merged)
                node.update((key, values[pos]) for key, values in per_node.items())
                node["gres_spec"] = merged.get("gres")
                node["gres"] = dict(gres)
                node["line"] = lineno
                result["nodes"][name] = node
        elif first == "partitionname":
            opts = {k.lower(): v for k, v in tokens[1:]}
            if tokens[0][1].upper() == "DEFAULT":
                part_defaults.update(opts)
                continue
            merged = dict(part_defaults)
            merged.update(opts)
            merged["line"] = lineno
            result["partitions"][tokens[0][1]] = merged
        elif first in LINE_KEYS:
            continue
        else:
            if len(tokens) > 1:
                result["errors"].append("%s line %d: one Key=Value per line, found %s after %s=%s (slurmctld: "
                                        "Parse error)" % (fname, lineno, "=".join(tokens[1]), tokens[0][0],
                                                          tokens[0][1]))
            key, value = tokens[0]
            if key.lower() == "slurmctldhost" or key.lower() == "controlmachine":
                result["controllers"].append(value)
            result["options"][key.lower()] = value
    return result


# NodeName keys slurmctld reads as one (read_config.c: Procs is CPUs, Feature is Features)
_NODE_KEY_ALIASES = {"procs": "cpus", "feature": "features"}


def node_definition(node, grestypes=False):
    """A parsed slurm.conf node as slurmctld defines it: aliases folded (Procs=CPUs, Feature=Features), one
    board's SocketsPerBoard read as Sockets, the raw Gres= and the line number left out (``gres`` stays).

    ``grestypes``: the file's GresTypes value (None when it has none): ``gres`` then keeps only the names it lists,
    as slurmctld and slurmd do (node_conf.c gres_name_filter drops the others: "Invalid GRES configured")."""
    out = {}
    for key, value in node.items():
        if key in ("gres_spec", "line"):
            continue
        out[_NODE_KEY_ALIASES.get(key, key)] = value if key == "gres" else str(value).strip()
    if grestypes is not False and out.get("gres"):
        listed = set(filter(None, (grestypes or "").split(",")))
        out["gres"] = {k: v for k, v in out["gres"].items() if k.split(":", 1)[0] in listed}
    if "sockets" not in out and "socketsperboard" in out and out.get("boards", "1") == "1":
        out["sockets"] = out.pop("socketsperboard")
        out.pop("boards", None)
    return out


def slurm_boolean(text):
    """True/False for a value Slurm's parser reads as a boolean (parse_value.c s_p_handle_boolean: yes, up, true, 1
    and no, down, false, 0, in any case), None for anything else ("is not a valid option", and the file is not
    read)."""
    word = str(text).lower()
    if word in ("yes", "up", "true", "1"):
        return True
    if word in ("no", "down", "false", "0"):
        return False
    return None


def partition_definition(part):
    """A parsed partition as slurmctld defines it: Default absent is NO, a boolean as YES/NO, Nodes expanded."""
    out = {k: str(v) for k, v in part.items() if k != "line"}
    default = slurm_boolean(out.get("default", "NO"))
    out["default"] = out.get("default", "NO").upper() if default is None else ("YES" if default else "NO")
    nodes = out.get("nodes", "")
    if nodes.upper() == "ALL":
        out["nodes"] = "ALL"
    elif nodes:
        try:
            out["nodes"] = ",".join(sorted(hostlist.expand_hostlist(nodes), key=natural_key))
        except hostlist.BadHostlist:
            pass
    return out


def gres_conf_lines(text):
    """Every line of a gres.conf (a list the caller must not change; the same text is parsed once)."""
    return _gres_conf_lines_cached(text)


@functools.lru_cache(maxsize=64)
def _gres_conf_lines_cached(text):
    """Every line of a gres.conf, before slurmd picks the ones for a node (gres.c ``_parse_gres_config``).

    Each line is a record ``{"name", "type", "files": [...], "multiple_files": [...], "count": int or None,
    "count_text", "cores", "links", "flags", "autodetect", "nodes": hostlist or None, "node_list": [names] or None,
    "error": None or what slurmd logs and skips the line for, "line": lineno, "text": the logical line}``.
    Skipped, as by slurmd: a NodeName that is no valid hostlist (for every node), and a line with neither
    Name= nor AutoDetect= (``Invalid GRES data, no type name``). Raises ConfSyntaxError for what makes slurmd
    stop (``fatal: error opening/reading gres.conf``): unknown key, NodeName not first, bad File or Count.
    """
    fname = "gres.conf"
    records = []
    for lineno, tokens, line in _lines(text, fname):
        if tokens[0][0] == "Include":
            raise ConfSyntaxError("%s line %d: Include is not supported by this checker" % (fname, lineno))
        rec = {"name": None, "type": None, "files": [], "multiple_files": [], "count": None, "count_text": None,
               "cores": None, "links": None, "flags": None, "autodetect": None, "nodes": None, "node_list": None,
               "error": None, "line": lineno, "text": line.strip(C_SPACE)}
        for pos, (key, value) in enumerate(tokens):
            canon = _GRES_KEYS.get(key.lower())
            if canon is None:
                raise ConfSyntaxError("%s line %d: unrecognized key %r" % (fname, lineno, key))
            if canon == "nodename" and pos != 0:
                raise ConfSyntaxError("%s line %d: NodeName must be the first key on a line" % (fname, lineno))
            if canon == "nodename":
                rec["nodes"] = value
            elif canon == "file":
                rec["files"] = _expand(value, fname, lineno, "File")
            elif canon == "multiplefiles":
                rec["multiple_files"] = _expand(value, fname, lineno, "MultipleFiles")
            elif canon == "count":
                rec["count_text"] = value
                try:
                    rec["count"] = parse_count(value)
                except ValueError:
                    raise ConfSyntaxError("%s line %d: invalid Count %r" % (fname, lineno, value))
            else:
                rec[canon] = value
                if canon == "cores":  # CPUs= is read as Cores= (gres.c); a message names the key as written
                    rec["cores_key"] = "CPUs" if key.lower() == "cpus" else "Cores"
        if rec["nodes"] is not None:
            try:
                rec["node_list"] = list(_expand_cached(rec["nodes"]))
            except hostlist.BadHostlist as exc:
                rec["error"] = ("NodeName=%s is not a valid hostlist (%s): slurmd skips this line for every node"
                                % (rec["nodes"], exc))
        if rec["error"] is None and rec["name"] is None and rec["autodetect"] is None:
            rec["error"] = "no Name= (slurmd: Invalid GRES data, no type name): slurmd skips this line"
        records.append(rec)
    return records


def line_applies(rec, node_name):
    """True when a gres_conf_lines record is one slurmd reads for node_name."""
    if rec["error"]:
        return False
    return rec["nodes"] is None or rec["nodes"] == node_name or node_name in rec["node_list"]


def parse_gres_conf(text, node_name):
    """Records of gres.conf ``text`` that apply to ``node_name`` (see gres_conf_lines for their keys).

    A line applies when it has no NodeName or its NodeName hostlist contains the node; lines slurmd skips
    (a bad NodeName hostlist, no Name=) are left out. A bare ``AutoDetect=`` line gives a record with ``name``
    None. Raises ConfSyntaxError for anything slurmd would refuse to parse.
    """
    return [dict(rec) for rec in gres_conf_lines(text) if line_applies(rec, node_name)]


def gres_counts_from_records(records):
    """{"gpu:a100": 8, "shard": 32, ...} from parse_gres_conf records.

    gpu-like records count one per File entry (a MultipleFiles record is one device, else Count or 1);
    shard/mps records count their Count (default: one per file) and carry no type.
    """
    counts = {}
    for rec in records:
        if not rec["name"]:
            continue
        name = rec["name"].lower()
        if name in SHARING_GRES:
            key = name
            n = rec["count"] if rec["count"] is not None else (len(rec["files"]) or 1)
        else:
            key = name if not rec["type"] else "%s:%s" % (name, rec["type"].lower())
            if rec["multiple_files"]:
                n = 1
            elif rec["files"]:
                n = len(rec["files"])
            elif rec["count"] is not None:
                n = rec["count"]
            else:
                n = 1
        counts[key] = counts.get(key, 0) + n
    return counts


def gres_record_problems(records, node_name):
    """Problems slurmd would report as fatal or silently 'fix' for one node's records."""
    problems = []
    seen = {}
    gpu_files = set()
    for rec in records:
        if not rec["name"]:
            continue
        field = "gres.conf line %d" % rec["line"]
        if rec["files"] and rec["multiple_files"]:
            problems.append(Problem(node_name, field, "File or MultipleFiles", "both (slurmd: mutually exclusive)"))
        if rec["multiple_files"] and len(rec["multiple_files"]) < 2:
            problems.append(Problem(node_name, field, "MultipleFiles with at least 2 files",
                                    ",".join(rec["multiple_files"])))
        sharing = rec["name"].lower() in SHARING_GRES
        if not sharing and rec["files"] and rec["count"] is not None and rec["count"] != len(rec["files"]):
            problems.append(Problem(node_name, field, "Count equal to the number of File entries (%d)"
                                    % len(rec["files"]), "Count=%d" % rec["count"]))
        if sharing:
            continue
        gpu_files.update(rec["files"])
        for path in rec["files"]:
            key = (rec["name"].lower(), path)
            if key in seen:
                problems.append(Problem(node_name, field, "each device file in one %s record" % rec["name"],
                                        "%s again (first on line %d)" % (path, seen[key])))
            else:
                seen[key] = rec["line"]
    by_name = {}
    for rec in records:
        if rec["name"] and rec["name"].lower() not in SHARING_GRES:
            by_name.setdefault(rec["name"].lower(), []).append(rec)
    for name, recs in sorted(by_name.items()):
        with_file = [r for r in recs if r["files"] or r["multiple_files"]]
        if with_file and len(with_file) != len(recs):
            bare = [r for r in recs if not (r["files"] or r["multiple_files"])][0]
            problems.append(Problem(node_name, "gres.conf line %d" % bare["line"],
                                    "File= on every %s record when any has one" % name,
                                    "a record without File (slurmd: some records have \"File\" specification "
                                    "while others do not)"))
        typed = [r for r in recs if r["type"]]
        if typed and len(typed) != len(recs):
            bare = [r for r in recs if not r["type"]][0]
            problems.append(Problem(node_name, "gres.conf line %d" % bare["line"],
                                    "Type= on every %s record when any has one" % name,
                                    "a record without Type (slurmd: some records have \"Type=\" specification "
                                    "while others do not)"))
        plain = [r for r in recs if not (r["files"] or r["multiple_files"] or r["type"])]
        if len(plain) > 1:
            problems.append(Problem(node_name, "gres.conf line %d" % plain[1]["line"],
                                    "at most one %s record without File and Type" % name,
                                    "%d such records (slurmd: duplicate records for %s)" % (len(plain), name)))
    for rec in records:
        if rec["name"] and rec["name"].lower() in SHARING_GRES:
            missing = [path for path in rec["files"] if path not in gpu_files]
            if missing:
                problems.append(Problem(node_name, "gres.conf line %d" % rec["line"],
                                        "File entries that a gpu record also lists",
                                        "%s (slurmd discards this %s line)" % (",".join(missing), rec["name"])))
    return problems


def fold_untyped(expected, found):
    """Slurm drops gres.conf types when slurm.conf declares that GRES untyped; compare the same way."""
    folded = dict(found)
    for name in {k.split(":", 1)[0] for k in expected}:
        if name in expected and not any(k.startswith(name + ":") for k in expected):
            total = sum(v for k, v in found.items() if k == name or k.startswith(name + ":"))
            for k in [k for k in folded if k.startswith(name + ":")]:
                del folded[k]
            if total:
                folded[name] = total
    return folded


def consistency_problems(slurm_text, gres_texts, deferred=None):
    """Problem objects (host = Slurm node name) where slurm.conf and the gres.conf files disagree.

    ``gres_texts`` is {node: gres.conf text}. ``deferred`` is {node: {gres_key: count}}: GRES that are
    completed on the node later (MIG lines); they may be absent from gres.conf but never partially present.
    Counts are what slurmd would register (slurmd_gres.node_view: file-less GPUs dropped, surplus cut, shard and
    mps spread over the GPUs), compared per node and GRES key with slurm.conf's Gres=; what slurmd refuses,
    ignores or trims is a problem too, in slurmd's words.
    """
    deferred = deferred or {}
    try:
        conf = parse_slurm_conf(slurm_text)
    except ConfSyntaxError as exc:
        return [Problem("(all)", "slurm.conf", "a file slurmctld can parse", str(exc))]
    problems = conf_problems(conf)
    nodes = conf["nodes"]
    gres_nodes = {n for n, d in nodes.items() if d["gres"]}
    proven = set()
    for node in sorted(set(gres_texts) | gres_nodes, key=natural_key):
        text = gres_texts.get(node)
        key = None
        if text is not None and node in nodes:
            key = _proof_key(text, node, nodes[node], deferred.get(node))
            if key is not None and key in proven:
                continue
        found = node_consistency_problems(conf, node, text, deferred.get(node))
        if key is not None and not found:
            proven.add(key)
        problems.extend(found)
    return problems


# slurm.conf node keys a node's GRES verdict depends on besides Gres= (its cores, for the Cores= check)
_CORE_NODE_KEYS = ("sockets", "socketsperboard", "boards", "corespersocket")


def _proof_key(text, node, node_def, deferred):
    """What a node's proof depends on, without the node's name, so nodes of one shape are proven once.

    The gres.conf without comment lines and with ``NodeName=<node> `` replaced by a placeholder, and the node's
    slurm.conf Gres, cores and deferred counts. None (no sharing) when a line names other nodes or a hostlist
    (whether such a line applies depends on the name) or is continued with ``\\`` (slurmd joins it to the next).
    Two nodes with the same key have files that differ only in their own name, so their proofs give the same result.
    """
    prefix = "NodeName=%s " % node
    lines = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.endswith("\\"):
            return None
        if line[:9].lower() == "nodename=":
            if not line.startswith(prefix):
                return None
            line = "\0 " + line[len(prefix):]
        lines.append(line)
    return ("\n".join(lines), str(node_def.get("gres_spec")), tuple(str(node_def.get(k)) for k in _CORE_NODE_KEYS),
            tuple(sorted((deferred or {}).items())))


def conf_problems(conf):
    """What slurmctld refuses in a parsed slurm.conf as a whole (host ``(all)``)."""
    return [Problem("(all)", "slurm.conf", "a file slurmctld accepts", err) for err in conf["errors"]]


def node_consistency_problems(conf, node, text, deferred=None, records=None):
    """Where one node's gres.conf disagrees with slurm.conf (slurm.conf already parsed).

    ``conf``: ``parse_slurm_conf`` result; ``text``: the node's gres.conf text, None when it has no gres.conf;
    ``deferred``: ``{gres_key: count}`` the node completes later (see consistency_problems); ``records``: the
    node's ``parse_gres_conf`` records of ``text`` when the caller parsed them already.
    Counts are what slurmd would register (slurmd_gres.node_view: file-less GPUs dropped, surplus cut, shard and
    mps spread over the GPUs), compared per GRES key with slurm.conf's Gres=; what slurmd refuses, ignores or trims
    is a problem too, in slurmd's words.
    """
    # slurmd_gres builds on this module's parser, so it is imported here rather than at the top.
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_counts

    nodes = conf["nodes"]
    if node not in nodes:
        return [Problem(node, "gres.conf", "a NodeName line for this node in slurm.conf", "none")]
    pending = deferred or {}
    problems = []
    expected = nodes[node]["gres"]
    for name in {k.split(":", 1)[0] for k in expected}:
        if name in expected and any(k.startswith(name + ":") for k in expected):
            problems.append(Problem(node, "slurm.conf Gres", "%s either typed or untyped" % name,
                                    "both (slurmctld refuses this)"))
    if text is None:
        records = []
    elif records is None:
        try:
            records = parse_gres_conf(text, node)
        except ConfSyntaxError as exc:
            problems.append(Problem(node, "gres.conf", "a file slurmd can parse", str(exc)))
            return problems
    if text is not None:
        problems.extend(gres_record_problems(records, node))
    view = node_view(conf, text, node)
    if text is None and (view["fatal"] is not None or any(
            view_counts(view).get(k, 0) < v and not pending.get(k) for k, v in expected.items())):
        problems.append(Problem(node, "gres.conf", "a gres.conf providing %s" % _fmt(expected), "no file"))
        return problems
    if view["fatal"] is not None:
        if not problems:
            problems.append(Problem(node, "gres.conf", "a file slurmd accepts",
                                    "slurmd: fatal: %s" % view["fatal"]))
        return problems
    for msg in view["messages"]:
        if msg["level"] in ("error", "warning") and msg["line"] is not None and (
                "more configured than expected" not in msg["text"]):
            problems.append(Problem(node, "gres.conf line %d" % msg["line"], "a line slurmd uses as written",
                                    "slurmd: %s: %s" % (msg["level"], msg["text"])))
    configured = fold_untyped(expected, gres_counts_from_records(records))
    # What slurmd registers; more in gres.conf than declared is cut by slurmd, and reported here as found.
    found = dict(view_counts(view))
    for key, count in configured.items():
        if count > expected.get(key, 0) and key not in pending:
            found[key] = count
    for key in sorted(set(expected) | set(found)):
        want = expected.get(key, 0)
        got = found.get(key, 0)
        if want == got or (got == 0 and pending.get(key) == want):
            continue
        hint = None
        if got < want and any(r["name"] and r["name"].lower() == "gpu" and not (r["files"] or r["multiple_files"])
                              for r in records) and not view["autodetect"]:
            hint = "slurmd drops GPU records without File= unless AutoDetect is on"
        problems.append(Problem(node, "gres.conf count of %s" % key, "%d (slurm.conf Gres=)" % want, "%d" % got,
                                hint))
    return problems


def _fmt(counts):
    return ",".join("%s:%d" % kv for kv in sorted(counts.items()))


def check_consistency(slurm_text, gres_texts, deferred=None):
    """List of problem strings (empty = consistent); see consistency_problems."""
    return [str(p) for p in consistency_problems(slurm_text, gres_texts, deferred)]
