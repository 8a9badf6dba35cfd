"""The Slurm release an import is written and proven for, when the admin names none and no slurmctld reports one.

The site's files are judged by the collection's own rules of every release it supports (the option names each
release reads, AutoDetect modes, hostlist forms, GPU Cores on socket boundaries ...): the releases whose rules
accept them are the ones the cluster can run with them today. The collection's default release is assumed when it
is one of them, else the oldest of them (a file naming an option a newer release dropped, such as Debian 12's
``CgroupAutomount=yes``, comes from a site older than that release). The report then says in one line which
release was assumed, why, and how to name another; the deploy checks ``slurmd -V`` against it before it changes
anything.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import DEFAULT_SLURM_VERSION, SUPPORTED

VARIABLE = "hpc_gres_import_slurm_version"


def releases_accepting(judge):
    """([releases with the fewest problems], {release: [(key, evidence)]}) over SUPPORTED. ``judge(release)``
    returns the problems the collection's rules find in the imported inventory for that release, each as (a key
    that is the same for the same problem in every release, "FILE line N: what")."""
    found = {release: judge(release) for release in SUPPORTED}
    fewest = min(len(p) for p in found.values())
    return [r for r in SUPPORTED if len(found[r]) == fewest], found


def choose(fits):
    """The release assumed among those that fit: the collection's default, else the oldest."""
    return DEFAULT_SLURM_VERSION if DEFAULT_SLURM_VERSION in fits else fits[0]


def _spans(fits):
    """"22.05-23.02, 25.05" for releases of SUPPORTED (consecutive ones as one span)."""
    spans = []
    for release in fits:
        pos = SUPPORTED.index(release)
        if spans and SUPPORTED.index(spans[-1][-1]) == pos - 1:
            spans[-1].append(release)
        else:
            spans.append([release])
    return ", ".join(s[0] if len(s) == 1 else "%s-%s" % (s[0], s[-1]) for s in spans)


def _evidence(found, chosen, release):
    """What ``release`` finds that ``chosen`` does not (the first such problem), or None."""
    keys = set(key for key, _unused in found[chosen])
    return next((text for key, text in found[release] if key not in keys), None)


def assumed_line(chosen, fits, found, unknown=None):
    """One report line: the release assumed, why, and the exact -e that names another.

    ``unknown``: why no release was known (live: what ``slurmctld -V`` answered), or None."""
    pos = SUPPORTED.index(chosen)
    reasons = []
    newer = next((r for r in SUPPORTED[pos + 1:] if r not in fits), None)
    older = next((r for r in reversed(SUPPORTED[:pos]) if r not in fits), None)
    for release, side in ((older, "up to"), (newer, "from")):
        evidence = _evidence(found, chosen, release) if release else None
        if evidence:
            reasons.append("%s Slurm %s, %s" % (side, release, evidence))
    picked = "the collection's default" if chosen == DEFAULT_SLURM_VERSION else \
        "the oldest release whose rules accept these files"
    if found[chosen]:
        picked = "no release accepts them as they are; of those with the fewest problems, %s" % (
            "the collection's default" if chosen == DEFAULT_SLURM_VERSION else "the oldest")
    text = "Slurm release not named%s: the import takes Slurm %s, %s (%s %s" % (
        " (%s)" % unknown if unknown else "", chosen, picked, "fewest problems in" if found[chosen] else "they fit",
        _spans(fits))
    if reasons:
        text += "; not %s" % "; not ".join(reasons)
    # the oldest other release they fit: the one a site that did not name its release most often runs (Debian 12)
    example = next((r for r in fits if r != chosen), None) or next(r for r in SUPPORTED if r != chosen)
    return text + "). If the cluster runs another release (slurmctld -V), name it, e.g. -e %s=%s" % (VARIABLE, example)
