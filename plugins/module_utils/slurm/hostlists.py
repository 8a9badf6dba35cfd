"""Slurm hostlist expressions in the forms a given Slurm release reads.

Slurm reads a hostlist suffix after the brackets (``node[01-02]-ib``) from 23.11 on (NEWS 23.11.0: "Allow for a
shared suffix to be used with the hostlist format"); 22.05 stops with "Unable to create NodeAddr list from
node[01-02]-ib" (seen live). ``slurm_hostlist(names, suffix=False)`` writes such tokens out name by name, which
every release reads; use it where the release is not known (an scontrol call on a node).
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist

HOSTLIST_SUFFIX_SINCE = (23, 11)
_TOKEN_SPLIT_RE = re.compile(r",(?![^\[]*\])")


def slurm_hostlist(names, suffix=False):
    """python-hostlist's compression of ``names``; without ``suffix`` a bracketed token that continues after its
    ']' is written out name by name."""
    expr = hostlist.collect_hostlist(list(names))
    if suffix:
        return expr
    tokens = []
    for token in _TOKEN_SPLIT_RE.split(expr):
        if "]" in token and not token.endswith("]"):
            tokens.extend(hostlist.expand_hostlist(token))
        else:
            tokens.append(token)
    return ",".join(tokens)
