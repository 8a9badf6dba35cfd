"""Which option names a Slurm release reads, with their value types: lookups over option_tables.py.

``lookup(table, key, version)`` answers for one key of slurm.conf, cgroup.conf, a NodeName= or PartitionName= line
or gres.conf, in the release the cluster runs (``"MAJOR.MINOR"``): the name as Slurm spells it and the type its
parser declares, or why not (unknown: "did you mean"; removed, defunct or not yet added: in which release, with the
release-notes line, also for an option a release before the first known one dropped; renamed, moved or obsolete:
what to write instead). Keys are case-insensitive in Slurm, so they are here.

A version between two known releases reads as the older one; one older than the first known release as the first;
one newer than the last as the last (a newer release may add options this table does not know yet: refresh it with
scripts/derive-slurm-options.py).
"""
import difflib
import functools
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_tables import EARLIER, HISTORY, RELEASES
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import DEFAULT_SLURM_VERSION, parse_version

TABLES = tuple(HISTORY)
_CACHE = {}
# The option a renamed one's message names: "has been renamed to X", "has moved to X", "has been replaced with X".
_SUCCESSOR_RE = re.compile(r"(?:renamed to|moved to|replaced with) ([A-Za-z]+)")


class OptionError(ValueError):
    """A key the target release does not read; ``expected``, ``found`` and ``hint`` feed a Problem."""

    def __init__(self, expected, found, hint=None):
        super(OptionError, self).__init__("expected %s, found %s%s" % (expected, found,
                                                                       " (%s)" % hint if hint else ""))
        self.expected = expected
        self.found = found
        self.hint = hint


def release_for(version=None):
    """The known release whose tables apply to `version` (None: DEFAULT_SLURM_VERSION)."""
    return _release_for(version or DEFAULT_SLURM_VERSION)


@functools.lru_cache(maxsize=64)
def _release_for(version):
    wanted = parse_version(version)
    chosen = RELEASES[0]
    for release in RELEASES:
        if parse_version(release) <= wanted:
            chosen = release
    return chosen


def _state(changes, release):
    """(type, note, release of that change) of one option in `release`, from its change history."""
    current = (None, None, None)
    for since, kind, note in changes:
        if parse_version(since) <= parse_version(release):
            current = (kind, note, since)
    return current


def table(name, version=None):
    """{lower-case key: (Slurm's spelling, type)} of the keys `name` reads in that release (defunct, removed and
    renamed ones excluded)."""
    release = release_for(version)
    cached = _CACHE.get((name, release))
    if cached is None:
        cached = {}
        for key, changes in HISTORY[name].items():
            kind = _state(changes, release)[0]
            if kind not in (None, "defunct", "removed", "renamed"):
                cached[key.lower()] = (key, kind)
        _CACHE[(name, release)] = cached
    return cached


def defunct(name, key, version=None):
    """(Slurm's spelling, the release it became defunct in, the release-notes line or None) when that release parses
    `key` of table `name` only to log "The option ... is defunct" and ignore it; else None."""
    history = _history(name, key)
    if history is None:
        return None
    kind, note, since = _state(history[1], release_for(version))
    return (history[0], since, note) if kind == "defunct" else None


def _history(name, key):
    """(Slurm's spelling, change history) of `key` in table `name`, case-insensitively; None when never known."""
    return {k.lower(): (k, v) for k, v in HISTORY[name].items()}.get(str(key).lower())


def lookup(name, key, version=None):
    """(Slurm's spelling, type) of `key` in table `name` for that release; OptionError when it does not read it."""
    release = release_for(version)
    known = table(name, release)
    found = known.get(str(key).lower())
    if found:
        return found
    what = {"slurm.conf": "a slurm.conf option", "cgroup.conf": "a cgroup.conf option",
            "node": "a NodeName= line option", "partition": "a PartitionName= line option",
            "gres.conf": "a gres.conf option"}[name]
    expected = "%s that Slurm %s reads" % (what, release)
    history = _history(name, key)
    if history:
        spelled, changes = history
        kind, note, since = _state(changes, release)
        if kind == "defunct":
            return _raise(expected, "%s (defunct since Slurm %s)" % (key, since), note or
                          "Slurm %s ignores it and logs 'The option \"%s\" is defunct, please remove it' (read_config.c "
                          "_defunct_option); remove it" % (release, spelled))
        if kind == "removed":
            return _raise(expected, "%s (removed)" % key,
                          "Slurm %s reads it only to stop: \"fatal: %s\"; remove it" % (release, note))
        if kind == "renamed":
            successor = _SUCCESSOR_RE.search(note or "")
            return _raise(expected, "%s (%s)" % (key, "renamed" if successor else "obsolete"),
                          "%s; Slurm %s logs \"%s\"" % ("write %s instead" % successor.group(1) if successor
                                                        else "remove it", release, note))
        if since is not None:  # known once, gone now
            return _raise(expected, "%s (removed in Slurm %s)" % (key, since), note)
        first = changes[0][0]
        return _raise(expected, "%s (added in Slurm %s)" % (key, first),
                      "set hpc_gres_slurm_version to %s or later if the cluster runs it" % first)
    earlier = {k.lower(): (k, v) for k, v in EARLIER[name].items()}.get(str(key).lower())
    if earlier:
        spelled, (last, gone) = earlier
        return _raise(expected, "%s (removed in Slurm %s)" % (key, gone),
                      "Slurm %s was the last release whose parser accepted %s; Slurm %s stops on a key it does not "
                      "know (\"Parsing error at unrecognized key: %s\", parse_config.c); remove it"
                      % (last, spelled, release, spelled))
    close = difflib.get_close_matches(str(key).lower(), list(known), n=1, cutoff=0.75)
    hint = "did you mean %s?" % known[close[0]][0] if close else None
    return _raise(expected, "unknown option %s" % key, hint)


def _raise(expected, found, hint):
    raise OptionError(expected, found, hint)
