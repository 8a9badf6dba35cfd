# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A refusal (or the warnings) as an admin reads it: each problem once, with the hosts it applies to as a hostlist
and, where it is known, the inventory file and line the value comes from.

Hosts of one group share their group_vars, so one mistake there is the same problem on every host of the group:
``host gpu-01.lab``, ``host gpu-02.lab``, ... become one line ``hosts gpu-[01-08].lab: ...``. Problems are the
same when field, expected, found and hint are; a problem whose text names its host (``also used by host x``) stays
a line of its own.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key


def message_key(problem):
    """What makes two problems the same problem on different hosts."""
    return (str(problem.field), str(problem.expected), str(problem.found), str(problem.hint or ""))


def host_expression(hosts):
    """The hosts as one hostlist (``gpu-[01-08].lab``), in natural order; a name the hostlist syntax cannot hold
    (one with ``[``, ``]`` or ``,``) is listed as it is."""
    names = sorted(set(str(h) for h in hosts), key=natural_key)
    plain = [n for n in names if not any(c in n for c in "[],")]
    odd = [n for n in names if n not in plain]
    try:
        parts = [hostlist.collect_hostlist(plain)] if plain else []
    except hostlist.BadHostlist:
        parts = [",".join(plain)]
    return ",".join(parts + odd)


def grouped(problems, where=None):
    """``[(hosts, problem, location)]``: the problems with the same message (``message_key``) and the same
    location, in the order each first appears. ``where(host, field)`` gives a location text or None."""
    groups = {}
    order = []
    for problem in problems:
        location = where(problem.host, problem.field) if where else None
        key = message_key(problem) + (location or "",)
        if key not in groups:
            groups[key] = ([], problem, location)
            order.append(key)
        if problem.host not in groups[key][0]:
            groups[key][0].append(problem.host)
    return [groups[key] for key in order]


def line(hosts, problem, location=None):
    """``host[s] HOSTLIST: field: expected E, found F (hint); defined in FILE:LINE``."""
    text = "%s %s: %s: expected %s, found %s" % ("hosts" if len(hosts) > 1 else "host", host_expression(hosts),
                                                 problem.field, problem.expected, problem.found)
    if problem.hint:
        text += " (%s)" % problem.hint
    if location:
        text += "; defined in %s" % location
    return text


def report_lines(problems, where=None):
    """One line per distinct problem (see ``line``)."""
    return [line(hosts, problem, location) for hosts, problem, location in grouped(problems, where)]
