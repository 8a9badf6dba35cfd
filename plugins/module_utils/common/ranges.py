"""Slurm integer range strings such as ``0-15,32-47`` (Cores=, CPU lists)."""
import re

# The most values one range string may stand for: Slurm's CPU and core ids are uint16, and a bound checked before
# anything is expanded keeps a hostile "0-100000000" from costing seconds and a gigabyte.
MAX_VALUES = 65536
_ELEMENT_RE = re.compile(r"\A([0-9]+)(?:-([0-9]+))?\Z")


def parse_int_ranges(text, maximum=None):
    """Return the sorted unique integers in ``"0-3,8,10-11"``; ValueError on anything else.

    Digits are ASCII only. Every bound is checked before expansion: a value above `maximum` (when given), or a
    string standing for more than MAX_VALUES values, raises ValueError without building the list.
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0 or (maximum is not None and text > maximum):
            raise ValueError("value %d out of range 0-%s" % (text, maximum))
        return [text]
    if not isinstance(text, str):
        raise ValueError("not a range string: %r" % (text,))
    spans = []
    total = 0
    for part in text.replace(" ", "").split(","):
        if not part:
            raise ValueError("empty element in range %r" % text)
        match = _ELEMENT_RE.match(part)
        if not match:
            raise ValueError("bad range element %r in %r" % (part, text))
        lo_i = int(match.group(1))
        hi_i = int(match.group(2)) if match.group(2) is not None else lo_i
        if hi_i < lo_i:
            raise ValueError("descending range %r in %r" % (part, text))
        if maximum is not None and hi_i > maximum:
            raise ValueError("value %d above %d in %r" % (hi_i, maximum, text))
        total += hi_i - lo_i + 1
        if total > MAX_VALUES:
            raise ValueError("range %r stands for more than %d values" % (text[:40], MAX_VALUES))
        spans.append((lo_i, hi_i))
    values = set()
    for lo_i, hi_i in spans:
        values.update(range(lo_i, hi_i + 1))
    return sorted(values)


def format_int_ranges(values):
    """Return ``"0-3,8"`` for ``[0, 1, 2, 3, 8]`` (input in any order, duplicates ignored)."""
    ordered = sorted(set(int(v) for v in values))
    parts = []
    start = prev = None
    for v in ordered:
        if start is None:
            start = prev = v
        elif v == prev + 1:
            prev = v
        else:
            parts.append(_span(start, prev))
            start = prev = v
    if start is not None:
        parts.append(_span(start, prev))
    return ",".join(parts)


def _span(lo, hi):
    return str(lo) if lo == hi else "%d-%d" % (lo, hi)
