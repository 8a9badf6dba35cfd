"""Slurm hostlist expressions in the forms a given Slurm release reads.

Slurm reads a hostlist suffix after the brackets (``node[01-02]-ib``) from 23.11 on (NEWS 23.11.0: "Allow for a
shared suffix to be used with the hostlist format"); 22.05 stops with "Unable to create NodeAddr list from
node[01-02]-ib" (seen live). ``slurm_hostlist(names, suffix=False)`` writes such tokens out name by name, which
every release reads; use it where the release is not known (an scontrol call on a node).

``trailing_hostlist(names)`` ranges only a trailing number (``gpu-a[01-04,07]``; a name without one is written as
it is), the form the import writes into an inventory and every release reads back.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key

HOSTLIST_SUFFIX_SINCE = (23, 11)
_TOKEN_SPLIT_RE = re.compile(r",(?![^\[]*\])")


def slurm_hostlist(names, suffix=False):
    """python-hostlist's compression of ``names``; without ``suffix`` a bracketed token that continues after its
    ']' is written out name by name. Slurm defines the nodes of a NodeName= hostlist in the order it expands to,
    so a compression that does not expand in natural order (``c05n[01-02,04],c[03,06]n[01-04]``) is replaced by
    one with ranges on trailing numbers only (``c03n[01-04],c05n[01-02,04],c06n[01-04]``)."""
    expr = hostlist.collect_hostlist(list(names))
    if hostlist.expand_hostlist(expr) != sorted(set(names), key=natural_key):
        expr = trailing_hostlist(names)
    if suffix:
        return expr
    tokens = []
    for token in _TOKEN_SPLIT_RE.split(expr):
        if "]" in token and not token.endswith("]"):
            tokens.extend(hostlist.expand_hostlist(token))
        else:
            tokens.append(token)
    return ",".join(tokens)


_TRAILING = re.compile(r"^(.*?)(\d+)$")


def trailing_hostlist(names):
    """Comma-separated hostlist of ``names`` (natural order) with ranges on trailing numbers only."""
    groups = {}
    order = []
    for name in sorted(set(names), key=natural_key):
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
