"""Errors a user can cause: each problem names the host, the field, what was expected and what was found."""


class Problem(object):
    __slots__ = ("host", "field", "expected", "found", "hint")

    def __init__(self, host, field, expected, found, hint=None):
        self.host = host
        self.field = field
        self.expected = expected
        self.found = found
        self.hint = hint

    def __str__(self):
        text = "host %s: %s: expected %s, found %s" % (self.host, self.field, self.expected, self.found)
        if self.hint:
            text += " (%s)" % self.hint
        return text

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}


class GresError(Exception):
    """One or more problems; the message lists every one of them."""

    def __init__(self, problems):
        if isinstance(problems, Problem):
            problems = [problems]
        self.problems = list(problems)
        super(GresError, self).__init__(self.message())

    def message(self):
        lines = [str(p) for p in self.problems]
        if len(lines) == 1:
            return lines[0]
        return "%d problems:\n- %s" % (len(lines), "\n- ".join(lines))
