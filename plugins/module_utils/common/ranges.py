"""Slurm integer range strings such as ``0-15,32-47`` (Cores=, CPU lists)."""


def parse_int_ranges(text):
    """Return the sorted unique integers in ``"0-3,8,10-11"``; ValueError on anything else."""
    if isinstance(text, int) and not isinstance(text, bool):
        return [text]
    if not isinstance(text, str):
        raise ValueError("not a range string: %r" % (text,))
    values = set()
    for part in text.replace(" ", "").split(","):
        if not part:
            raise ValueError("empty element in range %r" % text)
        lo, sep, hi = part.partition("-")
        if not lo.isdigit() or (sep and not hi.isdigit()):
            raise ValueError("bad range element %r in %r" % (part, text))
        lo_i = int(lo)
        hi_i = int(hi) if sep else lo_i
        if hi_i < lo_i:
            raise ValueError("descending range %r in %r" % (part, text))
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
