"""Write Slurm configuration text from Key=Value pairs, and prove that Slurm reads back exactly those pairs.

``ConfText`` collects comment lines and ``Key=Value`` lines; each pair may carry its origin (``(host, field)``, the
inventory value it came from). ``read_back_problems`` parses the finished text with conf.py's reader, which follows
Slurm's own parser (comments, escapes, continuations, quoting), and compares it with what was meant: the same lines
in the same order, each with exactly the same keys and values, nothing left unread. A difference (an extra line, an
extra key, a value cut at ``#``) becomes a Problem naming the origin of the first pair that differs.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import C_SPACE, read_records
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.values import format_value

_UNSAFE_COMMENT_RE = re.compile(r"[^ -~]")


def comment_text(text):
    """A comment line's text made inert: anything but printable ASCII (a newline above all) becomes '?'."""
    return _UNSAFE_COMMENT_RE.sub("?", str(text))


class ConfText(object):
    """Lines of one Slurm file: comments and Key=Value records (the records are what the file is meant to say)."""

    def __init__(self, name):
        self.name = name
        self.chunks = []
        self.meant = []

    def comment(self, text):
        for line in str(text).split("\n"):
            self.chunks.append("# %s\n" % comment_text(line) if line else "#\n")

    def blank(self):
        self.chunks.append("\n")

    def raw(self, text):
        """Verbatim comment lines (a header); every line must start with '#'."""
        for line in text.splitlines():
            if not line.startswith("#"):
                raise ValueError("raw text may hold comment lines only: %r" % line)
            self.chunks.append(comment_text(line) + "\n")

    def verbatim(self, text):
        """Lines another renderer wrote and checked (a node's live MIG block). They are not in ``meant``: only the
        controller's render, which never has them, is read back."""
        self.chunks.append(text)

    def line(self, pairs, origin=None):
        """Add ``Key=Value ...``. Each pair is (key, value) or (key, value, (host, field)); ``origin`` is the
        default (host, field) for pairs without their own."""
        meant = []
        for pair in pairs:
            key, value = pair[0], str(pair[1])
            meant.append((key, value, pair[2] if len(pair) > 2 and pair[2] else origin))
        self.meant.append(meant)
        self.chunks.append(" ".join("%s=%s" % (key, format_value(value)) for key, value, _source in meant) + "\n")

    def text(self):
        return "".join(self.chunks)


def read_back_problems(name, text, meant, fallback_host):
    """Problems where Slurm would read `text` differently from the `meant` lines (ConfText.meant)."""
    records = read_records(text)
    problems = []
    for pos in range(max(len(records), len(meant))):
        got = records[pos] if pos < len(records) else None
        want = meant[pos] if pos < len(meant) else None
        if got is None:
            host, field = _origin(want[0][2] if want else None, fallback_host, name)
            problems.append(Problem(host, field, "%s to hold the line %s" % (name, _fmt(want)),
                                    "the file ends before it"))
            break
        lineno, pairs, leftover = got
        if want is None:
            problems.append(Problem(fallback_host, "%s line %d" % (name, lineno),
                                    "no line there (the renderer wrote %d)" % len(meant),
                                    "an extra line %s" % _fmt_pairs(pairs)))
            break
        wanted = [(k, v) for k, v, _source in want]
        if pairs == wanted and not leftover.strip(C_SPACE):
            continue
        bad = _first_difference(want, pairs)
        host, field = _origin(bad[2] if bad else want[0][2], fallback_host, name)
        found = _fmt_pairs(pairs)
        if leftover.strip(C_SPACE):
            found += " and unreadable %r" % leftover.strip(C_SPACE)
        problems.append(Problem(host, field, "%s line %d to read back as %s" % (name, lineno, _fmt(want)),
                                "Slurm reads %s" % found))
        break
    return problems


def _first_difference(want, pairs):
    for pos, item in enumerate(want):
        if pos >= len(pairs) or (item[0], item[1]) != pairs[pos]:
            return item
    return None


def _origin(origin, fallback_host, name):
    if origin:
        return origin
    return fallback_host, name


def _fmt(meant):
    return _fmt_pairs([(k, v) for k, v, _source in meant or ()])


def _fmt_pairs(pairs):
    return " ".join("%s=%r" % (k, v) for k, v in pairs) or "(nothing)"
