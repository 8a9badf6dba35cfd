# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Collecting the problems of an inventory: every one names host, field, expected and found."""
import difflib

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import values
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import MAX_PROBLEMS
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import message_key


def plain(value):
    """Strip Ansible's tagged str/int/dict/list subclasses so the model is plain JSON-able data."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value


describe = values.describe


def text_hint(name, value):
    """For a boolean or integer variable given as text ("false", "5"), which ``-e name=value`` always passes: how to
    pass it typed; else None."""
    if not isinstance(value, str):
        return None
    word = value.strip().lower()
    if word in ("true", "false", "yes", "no"):
        literal = "true" if word in ("true", "yes") else "false"
    elif values.as_int(value.strip()) is not None:
        literal = str(values.as_int(value.strip()))
    else:
        return None
    return "-e %s=%s passes a string: write -e '{\"%s\": %s}', or unquoted in YAML" % (name, value, name, literal)


def did_you_mean(word, choices):
    """The hint for a misspelt key (``tpye``): the closest of ``choices``, or None."""
    close = difflib.get_close_matches(str(word), [str(c) for c in choices], n=1)
    return "did you mean %s?" % close[0] if close else None


class Collector(object):
    def __init__(self):
        self.problems = []
        self.count = 0
        # Hosts of one group share their group_vars objects: validate each distinct GPU list once per layout.
        self.gpu_cache = {}
        self.cores_cache = {}
        self.boundary_cache = {}
        self.warnings = []
        self.kept = set()

    def add(self, host, field, expected, found, hint=None):
        self.extend([Problem(host, field, expected, found, hint)])

    def warn(self, host, field, expected, found, hint=None):
        self.warnings.append(Problem(host, field, expected, found, hint))

    def extend(self, problems):
        """Keep every problem whose message (problem_report.message_key) is among the first MAX_PROBLEMS distinct
        ones: a mistake in group_vars is one problem on every host of the group, and the refusal names them all."""
        for problem in problems:
            self.count += 1
            key = message_key(problem)
            if key in self.kept or len(self.kept) < MAX_PROBLEMS:
                self.kept.add(key)
                self.problems.append(problem)

    def result(self):
        """The problems to raise, and a last one that says how many more there were when some were left out."""
        if self.count > len(self.problems):
            last = self.problems[-1]
            return self.problems + [Problem(last.host, last.field, "at most %d distinct problems listed"
                                            % MAX_PROBLEMS, "%d more not shown" % (self.count - len(self.problems)),
                                            "fix these and run again")]
        return self.problems

    def int_value(self, host, field, value, minimum, maximum, what="an integer", note=None):
        """Return an int in [minimum, maximum], or None after recording a problem. ASCII digit strings (from -e)
        are accepted."""
        problem = values.check_int(value, minimum, maximum, what, note)
        if problem:
            self.add(host, field, *problem)
            return None
        return values.as_int(value)

    def check(self, host, field, problem):
        """Record a values.check_* result; True when there was nothing to record."""
        if problem:
            self.add(host, field, *problem)
            return False
        return True
