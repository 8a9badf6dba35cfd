"""Derive plugins/module_utils/slurm/option_tables.py (the option names each Slurm release parses) from Slurm's source.

Slurm declares every key its parsers accept in ``s_p_options_t`` tables: ``slurm_conf_options`` (slurm.conf),
``_nodename_options`` and ``_partition_options`` (the rest of a NodeName= / PartitionName= line) in
``src/common/read_config.c``, the cgroup.conf table in ``src/common/cgroup.c`` (22.05) or
``src/interfaces/cgroup.c`` (23.02+), and ``_gres_options`` in ``gres.c``. This script reads those tables at the
last tag of every release series, records when each option appeared, changed its type, became defunct (still
parsed only to be logged as defunct and ignored), was removed (parsed only to stop: fatal) or disappeared, with the
release-notes line that says so, and writes the Python table. The tables of older series (17.02 to 21.08) are read
only for the options the first of them no longer knows, and the release that dropped each.

Two steps, so that the table can be re-derived without the Slurm repository:

  # 1. from a SchedMD/slurm git checkout (the `fetch` tool, or git clone): copy the tables into fixtures
  .venv/bin/python scripts/derive-slurm-options.py extract --repo /path/to/slurm --fixtures tests/fixtures/slurm-source
  # 2. from the fixtures: write (or --check) the module
  .venv/bin/python scripts/derive-slurm-options.py generate --fixtures tests/fixtures/slurm-source \
      --output plugins/module_utils/slurm/option_tables.py

tests/unit/plugins/module_utils/slurm/test_options.py runs step 2 with --check semantics, so the committed module
always equals what the committed source extracts say.
"""
import argparse
import os
import re
import subprocess
import sys

# Release series and the tag read for each (the newest tag of the series in the repository when extracted).
SERIES = ("22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05")
# Older series whose tables are read only for the options they had that SERIES[0] no longer knows, so that a
# configuration written for them is told which release dropped an option (Slurm itself stops on any key it does not
# know: "Parsing error at unrecognized key").
EARLIER_SERIES = ("17.02", "17.11", "18.08", "19.05", "20.02", "20.11", "21.08")

# (table, file candidates, the C declaration that opens it, a key the block must contain)
TABLES = (
    ("slurm.conf", ("src/common/read_config.c",), "slurm_conf_options[] = {", "ClusterName"),
    ("node", ("src/common/read_config.c",), "_nodename_options[] = {", "CoresPerSocket"),
    ("partition", ("src/common/read_config.c",), "_partition_options[] = {", "MaxTime"),
    ("cgroup.conf", ("src/interfaces/cgroup.c", "src/common/cgroup.c", "src/common/xcgroup_read_config.c"),
     "options[] = {", "ConstrainDevices"),
    ("gres.conf", ("src/interfaces/gres.c", "src/common/gres.c"), "_gres_options[] = {", "File"),
)
NOTES_FILES = ("RELEASE_NOTES", "RELEASE_NOTES.md")
# Options whose value is a keyword (or a list of them) one parser function compares: (option, files, function
# opening, the comparison that names a keyword).
TOKEN_FUNCTIONS = (
    ("SelectTypeParameters", ("src/common/read_config.c", "src/common/slurm_selecttype_info.c"),
     re.compile(r"^(static )?int _?parse_select_type_param\("),
     re.compile(r'xstrn?casecmp\(\s*str_parameters\s*,\s*"([A-Za-z_]+)"')),
    # gres.conf AutoDetect=: _handle_autodetect_flags (gres.c) tests each flag it knows with xstrcasestr
    ("AutoDetect", ("src/interfaces/gres.c", "src/common/gres.c"),
     re.compile(r"^static uint32_t _handle_autodetect_flags\("),
     re.compile(r'xstrcase(?:str|cmp)\(\s*str\s*,\s*"([A-Za-z_]+)"')),
)
# Options still in a table that the parser then refuses: fatal("The X option has been removed ..."), read_config.c;
# fatal("Support for X option has been removed."), cgroup.c.
_REMOVED_FATAL_RE = re.compile(r'fatal\("(?:The |Support for )?([A-Za-z]+)(?: option)? has been removed[^"]*"')
REMOVED_BY_FATAL = {"slurm.conf": ("src/common/read_config.c",),
                    "cgroup.conf": ("src/interfaces/cgroup.c", "src/common/cgroup.c")}
# Options still read that the parser then logs as renamed, moved or obsolete (error, warning or info; the value is
# used elsewhere or ignored): error("SbcastParameters has been renamed to BcastParameters. ..."), read_config.c;
# warning("AllowedDevicesFile option is obsolete, ..."), cgroup.c. Same files as REMOVED_BY_FATAL.
_RENAMED_RE = re.compile(r'(?:error|warning|info)\("(?:WARNING: )?([A-Z][A-Za-z]+) (?:parameter |option )?'
                         r'(?:has been renamed to|has moved to|has been replaced with|is obsolete)[^"]*"')

_ENTRY_RE = re.compile(r'\{\s*"([A-Za-z0-9_.]+)"\s*,\s*(S_P_[A-Z0-9_]+)\s*(?:,\s*([A-Za-z_][A-Za-z0-9_]*))?')
_COMMENT_RE = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
_TYPES = {
    "S_P_STRING": "string", "S_P_PLAIN_STRING": "string", "S_P_LONG": "long", "S_P_UINT16": "uint16",
    "S_P_UINT32": "uint32", "S_P_UINT64": "uint64", "S_P_BOOLEAN": "boolean", "S_P_FLOAT": "float",
    "S_P_DOUBLE": "double", "S_P_ARRAY": "record", "S_P_LINE": "record", "S_P_EXPLINE": "record",
    "S_P_POINTER": "record", "S_P_IGNORE": "ignored",
}


def _git(repo, *args):
    return subprocess.run(["git", "-C", repo] + list(args), check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout.decode()


def latest_tag(repo, series):
    major, minor = series.split(".")
    prefix = "slurm-%s-%s-" % (major, minor)
    pattern = re.compile(re.escape(prefix) + r"\d+-\d+$")
    tags = [t for t in _git(repo, "tag", "--list", prefix + "*").split() if pattern.match(t)]
    if not tags:
        return None
    return max(tags, key=lambda t: [int(x) for x in t[len(prefix):].split("-")])


def find_block(text, opener, must_contain):
    """(first line, last line, block text) of the braced table opened by `opener` that names `must_contain`."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if opener not in line:
            continue
        depth = 0
        for end in range(start, len(lines)):
            depth += lines[end].count("{") - lines[end].count("}")
            if depth <= 0 and end > start:
                break
        block = "\n".join(lines[start:end + 1])
        if '"%s"' % must_contain in block:
            return start + 1, end + 1, block
    return None


def find_function(text, opening):
    """(first line, last line, text) of the C function whose first line matches `opening`, to its closing '}'."""
    lines = text.splitlines()
    for start, line in enumerate(lines):
        if opening.match(line):
            for end in range(start + 1, len(lines)):
                if lines[end].startswith("}"):
                    return start + 1, end + 1, "\n".join(lines[start:end + 1])
    return None


def _write_fixture(path, tag, series, source_path, first, last, body):
    with open(path, "w") as handle:
        handle.write("# source: https://github.com/SchedMD/slurm/blob/%s/%s#L%d-L%d\n"
                     % (tag, source_path, first, last))
        handle.write("# machine: n/a (Slurm %s source, tag %s)\n# ---\n" % (series, tag))
        handle.write(body + "\n")


def _extract_tables(repo, tag, series, outdir):
    for table, paths, opener, must in TABLES:
        for path in paths:
            try:
                text = _git(repo, "show", "%s:%s" % (tag, path))
            except subprocess.CalledProcessError:
                continue
            found = find_block(text, opener, must)
            if found:
                _write_fixture(os.path.join(outdir, table + ".c"), tag, series, path, *found)
                break
        else:
            raise SystemExit("%s: table %s not found" % (tag, table))


def extract(repo, fixtures):
    """Copy each table (verbatim) and each release's notes lines about options into fixtures/<series>/; of the
    EARLIER_SERIES, the tables only."""
    for series in EARLIER_SERIES:
        tag = latest_tag(repo, series)
        if tag is None:
            print("no tag for %s, skipped" % series, file=sys.stderr)
            continue
        outdir = os.path.join(fixtures, series)
        os.makedirs(outdir, exist_ok=True)
        _extract_tables(repo, tag, series, outdir)
    for series in SERIES:
        tag = latest_tag(repo, series)
        if tag is None:
            print("no tag for %s, skipped" % series, file=sys.stderr)
            continue
        outdir = os.path.join(fixtures, series)
        os.makedirs(outdir, exist_ok=True)
        _extract_tables(repo, tag, series, outdir)
        for table, paths in REMOVED_BY_FATAL.items():
            for path in paths:
                try:
                    source = _git(repo, "show", "%s:%s" % (tag, path))
                except subprocess.CalledProcessError:
                    continue
                for suffix, pattern, what in ((".removed.c", _REMOVED_FATAL_RE, "options read only to stop"),
                                              (".renamed.c", _RENAMED_RE, "options renamed, moved or obsolete")):
                    found = [(n, line.strip()) for n, line in enumerate(source.splitlines(), 1)
                             if pattern.search(line)]
                    with open(os.path.join(outdir, table + suffix), "w") as handle:
                        handle.write("# source: https://github.com/SchedMD/slurm/blob/%s/%s (lines %s)\n"
                                     % (tag, path, ",".join(str(n) for n, _text in found) or "none"))
                        handle.write("# machine: n/a (Slurm %s source, tag %s: %s)\n# ---\n" % (series, tag, what))
                        handle.write("".join(line + "\n" for _number, line in found))
                break
        for option, paths, opening, _token_re in TOKEN_FUNCTIONS:
            for path in paths:
                try:
                    found = find_function(_git(repo, "show", "%s:%s" % (tag, path)), opening)
                except subprocess.CalledProcessError:
                    continue
                if found:
                    _write_fixture(os.path.join(outdir, option + ".values.c"), tag, series, path, *found)
                    break
            else:
                raise SystemExit("%s: parser of %s not found" % (tag, option))
        for name in NOTES_FILES:
            try:
                notes = _git(repo, "show", "%s:%s" % (tag, name))
            except subprocess.CalledProcessError:
                continue
            with open(os.path.join(outdir, "RELEASE_NOTES.txt"), "w") as handle:
                handle.write("# source: https://github.com/SchedMD/slurm/blob/%s/%s\n" % (tag, name))
                handle.write("# machine: n/a (Slurm %s release notes, tag %s)\n# ---\n" % (series, tag))
                handle.write(notes)
            break


def _body(path):
    with open(path) as handle:
        text = handle.read()
    source = re.search(r"^# source: https://github.com/SchedMD/slurm/blob/(\S+?)/(\S+)", text, re.M)
    return "%s %s" % (source.group(1), source.group(2)), text.split("# ---\n", 1)[1]


def parse_table(block):
    """{option: type} of one s_p_options_t block; a defunct option's type is 'defunct'."""
    result = {}
    for name, sp_type, handler in _ENTRY_RE.findall(_COMMENT_RE.sub("", block)):
        kind = _TYPES.get(sp_type)
        if kind is None:
            raise ValueError("unknown parser type %s for %s" % (sp_type, name))
        result[name] = "defunct" if handler == "_defunct_option" else kind
    return result


def _renamed(text):
    """{option: the message} of options the parser reads and then logs as renamed, moved or obsolete."""
    found = {}
    for line in text.splitlines():
        match = _RENAMED_RE.search(line)
        if match:
            message = re.search(r'\("(?:WARNING: )?([^"]*)"', line).group(1)
            found.setdefault(match.group(1), message)
    return found


def _removed_by_fatal(text):
    """{option: the fatal message} of options read_config.c reads only to stop with 'has been removed'."""
    found = {}
    for line in text.splitlines():
        match = _REMOVED_FATAL_RE.search(line)
        if match:
            message = re.search(r'fatal\("([^"]*)"', line).group(1)
            found.setdefault(match.group(1), message)
    return found


def _note_for(notes, option):
    """The release-notes entry (joined continuation lines) that names `option`, or None."""
    entries = []
    current = []
    for line in notes.splitlines():
        if re.match(r"^\s*(--|\*|-)\s", line) or not line.strip():
            if current:
                entries.append(" ".join(current))
            current = [re.sub(r"^\s*(--|\*|-)\s+", "", line).strip()] if line.strip() else []
        else:
            current.append(line.strip())
    if current:
        entries.append(" ".join(current))
    for entry in entries:
        if re.search(r"\b%s\b" % re.escape(option), entry):
            entry = re.sub(r"\s+", " ", entry)
            if len(entry) > 240:
                end = entry.rfind(". ", 0, 240)
                entry = entry[:end + 1] if end > 0 else entry[:237] + "..."
            return entry
    return None


def derive(fixtures):
    """({table: {option: [(series, type or None, note or None), ...]}}, {series: {table: url}},
    {option: {series: (keywords, ...)}})."""
    history = {table: {} for table, *_rest in TABLES}
    sources = {}
    tokens = {option: {} for option, *_rest in TOKEN_FUNCTIONS}
    token_res = {option: token_re for option, *_rest, token_re in TOKEN_FUNCTIONS}
    previous = {table: {} for table in history}
    present = [s for s in SERIES if os.path.isdir(os.path.join(fixtures, s))]
    for series in present:
        notes_path = os.path.join(fixtures, series, "RELEASE_NOTES.txt")
        notes = _body(notes_path)[1] if os.path.exists(notes_path) else ""
        sources[series] = {}
        for table in history:
            source, block = _body(os.path.join(fixtures, series, table + ".c"))
            sources[series][table] = source
            current = parse_table(block)
            removed = {}
            if table in REMOVED_BY_FATAL:
                renamed = _renamed(_body(os.path.join(fixtures, series, table + ".renamed.c"))[1])
                for name in renamed:
                    if name in current:
                        current[name] = "renamed"
                removed = _removed_by_fatal(_body(os.path.join(fixtures, series, table + ".removed.c"))[1])
                for name in removed:
                    if name in current:
                        current[name] = "removed"
                removed = dict(renamed, **removed)
            for name in sorted(set(current) | set(previous[table])):
                old, new = previous[table].get(name), current.get(name)
                if old == new:
                    continue
                note = removed.get(name)
                if note is None and series != present[0] and (new is None or new in ("defunct", "removed")):
                    note = _note_for(notes, name)
                history[table].setdefault(name, []).append((series, new, note))
            previous[table] = current
        for option in tokens:
            source, body = _body(os.path.join(fixtures, series, option + ".values.c"))
            sources[series][option] = source
            tokens[option][series] = tuple(sorted(set(token_res[option].findall(body)), key=str.lower))
    return history, sources, tokens, derive_earlier(fixtures, history)


def derive_earlier(fixtures, history):
    """{table: {option: (the last earlier release that read it, the release that no longer did)}} of the options
    the EARLIER_SERIES tables had and SERIES never knew (case-insensitively)."""
    known = {table: {name.lower() for name in options} for table, options in history.items()}
    present = [s for s in EARLIER_SERIES if os.path.exists(os.path.join(fixtures, s, "slurm.conf.c"))]
    following = dict(zip(present, present[1:] + [SERIES[0]]))
    earlier = {table: {} for table in history}
    for series in present:
        for table in history:
            for name in parse_table(_body(os.path.join(fixtures, series, table + ".c"))[1]):
                if name.lower() not in known[table]:
                    earlier[table][name] = (series, following[series])
    return earlier


HEADER = '''"""The option names (and value types) each Slurm release parses, derived from Slurm's own source.

GENERATED by scripts/derive-slurm-options.py from the s_p_options_t tables of SchedMD/slurm (one tag per release
series, copied under tests/fixtures/slurm-source); do not edit by hand: re-extract and regenerate (see the script).
tests/unit/plugins/module_utils/slurm/test_options.py fails when this file and the extracts disagree; options.py
holds the lookups built on it.

``HISTORY[table][option]`` lists ``(release, type, note)`` changes in release order: ``type`` is the value type the
parser declares (``string``, ``uint16``, ``uint32``, ``uint64``, ``long``, ``boolean``, ``float``, ``double``,
``record`` for lines such as NodeName=), ``"defunct"`` when the release parses the key only to log "The option ...
is defunct" and ignore it (the ``_defunct_option`` handler), ``"removed"`` when it parses the key only to stop
(``fatal("... has been removed ...")``: the note is that message), ``"renamed"`` when it logs the option as renamed,
moved or obsolete, ``None`` when the release no longer knows it. ``note`` is the release-notes entry
that names the option, where one does. Tables: ``slurm.conf``, ``node`` (NodeName= line keys), ``partition``
(PartitionName= line keys), ``cgroup.conf``, ``gres.conf``. Keys are case-insensitive in Slurm.

``SOURCES[release][table]`` is ``"<tag> <path>#L<first>-L<last>"`` in https://github.com/SchedMD/slurm.
``VALUE_KEYWORDS[option][release]`` lists the keywords the parser function of a keyword option compares
(case-insensitively): SelectTypeParameters (read_config.c), gres.conf AutoDetect (gres.c).
``EARLIER[table][option]`` is ``(last release that read it, first release that did not)`` for the options the
tables of 17.02 to 21.08 had and RELEASES never knew: every known release stops on such a key ("Parsing error at
unrecognized key").
"""
'''


def _wrap(text, width):
    """Split text into pieces of at most `width` characters (repr quotes included), at spaces where possible."""
    pieces = []
    while len(text) + 2 > width:
        cut = text.rfind(" ", 0, width - 2)
        cut = cut + 1 if cut > 0 else width - 2
        pieces.append(text[:cut])
        text = text[cut:]
    pieces.append(text)
    return pieces


def render_module(history, sources, tokens, earlier):
    out = [HEADER]
    out.append("RELEASES = %r\n" % (tuple(sources),))
    out.append("SOURCES = {\n")
    for series, tables in sources.items():
        out.append("    %r: {\n" % series)
        for table, url in tables.items():
            out.append("        %r: %r,\n" % (table, url))
        out.append("    },\n")
    out.append("}\n")
    out.append("HISTORY = {\n")
    for table, options in history.items():
        out.append("    %r: {\n" % table)
        for name in sorted(options, key=str.lower):
            changes = options[name]
            line = "        %r: (%s,),\n" % (name, ", ".join(repr(c) for c in changes))
            if len(line) <= 121:
                out.append(line)
                continue
            out.append("        %r: (\n" % name)
            for release, kind, note in changes:
                head = "            (%r, %r, " % (release, kind)
                if note is None or len(head) + len(repr(note)) + 3 <= 120:
                    out.append("%s%r),\n" % (head, note))
                    continue
                pad = " " * len(head)
                chunks = _wrap(note, 118 - len(head))
                out.append("%s%r\n" % (head, chunks[0]))
                out.extend("%s%r\n" % (pad, c) for c in chunks[1:-1])
                out.append("%s%r),\n" % (pad, chunks[-1]))
            out.append("        ),\n")
        out.append("    },\n")
    out.append("}\n")
    out.append("VALUE_KEYWORDS = {\n")
    for option, by_series in tokens.items():
        out.append("    %r: {\n" % option)
        for series, words in by_series.items():
            out.append("        %r: (\n" % series)
            line = "           "
            for word in words:
                item = " %r," % word
                if len(line) + len(item) > 118:
                    out.append(line + "\n")
                    line = "           "
                line += item
            out.append(line + "\n        ),\n")
        out.append("    },\n")
    out.append("}\n")
    out.append("EARLIER = {\n")
    for table, options in earlier.items():
        out.append("    %r: {\n" % table)
        for name in sorted(options, key=str.lower):
            out.append("        %r: %r,\n" % (name, options[name]))
        out.append("    },\n")
    out.append("}\n")
    return "".join(out)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    ext = sub.add_parser("extract", help="copy the option tables of every release from a Slurm git repository")
    ext.add_argument("--repo", required=True, help="a SchedMD/slurm git directory (bare or not)")
    ext.add_argument("--fixtures", required=True)
    gen = sub.add_parser("generate", help="write the options module from the extracts")
    gen.add_argument("--fixtures", required=True)
    gen.add_argument("--output", required=True)
    gen.add_argument("--check", action="store_true", help="exit 1 if the output file differs, write nothing")
    args = parser.parse_args(argv)
    if args.command == "extract":
        extract(args.repo, args.fixtures)
        return 0
    text = render_module(*derive(args.fixtures))
    if args.check:
        with open(args.output) as handle:
            same = handle.read() == text
        print("%s is %s" % (args.output, "up to date" if same else "OUT OF DATE: regenerate it"))
        return 0 if same else 1
    with open(args.output, "w") as handle:
        handle.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
