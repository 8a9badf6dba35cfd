"""Slurm hostlist expressions every Slurm release reads back.

Slurm 22.05's hostlist cannot read text after a range (``p1-r[02,05]-a.site`` stops slurmctld and slurmd with
``Unable to create NodeAddr list``; seen on this collection's corpus of real configs), and python-hostlist
ranges any numeric field. So names are grouped by what precedes their trailing number, and only that number is
ranged: ``gpu-a[01-04,07]``; a name without a trailing number is written as it is.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist

_TRAILING = re.compile(r"^(.*?)(\d+)$")


def _natural(text):
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def trailing_hostlist(names):
    """Comma-separated hostlist of ``names`` (natural order) with ranges on trailing numbers only."""
    groups = {}
    order = []
    for name in sorted(set(names), key=_natural):
        match = _TRAILING.match(name)
        key = match.group(1) if match else None
        if key is None or "[" in name or "," in name:
            order.append((name, None))
            continue
        if key not in groups:
            groups[key] = []
            order.append((name, key))
        groups[key].append(name)
    parts = []
    for name, key in order:
        if key is None:
            parts.append(name)
        else:
            parts.append(hostlist.collect_hostlist(groups[key]))
    return ",".join(parts)
