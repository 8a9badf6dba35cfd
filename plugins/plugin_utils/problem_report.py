# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""A refusal (or the warnings) as an admin reads it: each problem once, with the hosts it applies to as a hostlist
and, where it is known, the inventory file and line the value comes from.

Hosts of one group share their group_vars, so one mistake there is the same problem on every host of the group:
``host gpu-01.lab``, ``host gpu-02.lab``, ... become one line ``hosts gpu-[01-08].lab: ...``. Problems are the
same when field, expected, found and hint are, the host's own name as a node aside (Slurm's "... for node gpu-03
doesn't match ..." reads "for node <node>" on the group's line); a problem whose text names another host (``also
used by host x``) stays a line of its own. The same mistake in several entries of a list (eight GPU entries with
``tpye:``) is one line ``hpc_gres_gpus[0-7].tpye``.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key


def message_key(problem):
    """What makes two problems the same problem on different hosts: their texts, with the host's own name where a
    text names it as a node or host (Slurm's "... for node gpu03 doesn't match ...") taken as any host's."""
    return tuple(_own_name_out(str(text), problem.host, OWN_NAME)
                 for text in (problem.field, problem.expected, problem.found, problem.hint or ""))


OWN_NAME = "<node>"


def _own_name_out(text, host, placeholder):
    """``text`` with the host's name (and its short name) after "node ", "host " or "NodeName=" as ``placeholder``."""
    host = str(host or "")
    if not host or host not in text and host.split(".", maxsplit=1)[0] not in text:
        return text
    names = sorted({host, host.split(".", maxsplit=1)[0]}, key=len, reverse=True)
    return re.sub(r"(?<=\bnode )(?:%s)(?![\w.-])|(?<=\bhost )(?:%s)(?![\w.-])|(?<=NodeName=)(?:%s)(?![\w.-])" % (
        ("|".join(re.escape(n) for n in names),) * 3), placeholder, text)


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
    out = []
    for key in order:
        hosts, problem, location = groups[key]
        if len(hosts) > 1:  # the texts name one of the hosts: name none of them
            problem = Problem(problem.host, *(_own_name_out(str(text), problem.host, OWN_NAME) if text else text
                                              for text in (problem.field, problem.expected, problem.found,
                                                           problem.hint)))
        out.append((hosts, problem, location))
    return out


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
    """One line per distinct problem (see ``line``); the same mistake in several entries of one list, on the same
    hosts and in one file, is one line too (``hpc_gres_gpus[0-7].cores``, ``defined in FILE:10-17``)."""
    return [line(hosts, problem, location) for hosts, problem, location in _entries_merged(grouped(problems, where))]


_ENTRY_FIELD_RE = re.compile(r"\A(?P<head>.*)\[(?P<index>\d+)\](?P<tail>[^\[]*)\Z")
# what _entries_merged writes: the last index a range list (hpc_gres_gpus[0-7].tpye, hpc_gres_gpus[0].mig[0-6])
_MERGED_FIELD_RE = re.compile(r"\A(?P<head>.*)\[(?P<indexes>\d+[-,][-,\d]*)\](?P<tail>[^\[]*)\Z")


def merged_entries(field):
    """``(head, [indexes], tail)`` of a field a merged line names (``hpc_gres_gpus[0-2].type`` -> ``("hpc_gres_gpus",
    [0, 1, 2], ".type")``), or None for a field of one entry."""
    match = _MERGED_FIELD_RE.match(str(field or ""))
    if match is None:
        return None
    return match.group("head"), parse_int_ranges(match.group("indexes")), match.group("tail")


_LOCATION_RE = re.compile(r"\A(?P<file>.*):(?P<line>\d+)\Z")


def _entries_merged(groups):
    """``grouped``'s result with the groups that differ only in the list index of their field (the last ``[N]``:
    ``hpc_gres_gpus[3].type``, ``hpc_gres_gpus[0].mig[5]``) and the line of their location merged, in the order
    each first appears."""
    merged, order = {}, []
    for hosts, problem, location in groups:
        entry = _ENTRY_FIELD_RE.match(str(problem.field))
        place = _LOCATION_RE.match(location or "")
        if entry is None or (location and place is None):
            key = (id(problem),)
        else:
            key = (tuple(hosts), entry.group("head"), entry.group("tail"), place.group("file") if place else None) + \
                message_key(problem)[1:]
        if key not in merged:
            merged[key] = (hosts, problem, location, [], [])
            order.append(key)
        if entry is not None:
            merged[key][3].append(int(entry.group("index")))
        if place is not None:
            merged[key][4].append(int(place.group("line")))
    out = []
    for key in order:
        hosts, problem, location, indexes, lines = merged[key]
        if len(indexes) > 1:
            entry = _ENTRY_FIELD_RE.match(str(problem.field))
            field = "%s[%s]%s" % (entry.group("head"), format_int_ranges(indexes), entry.group("tail"))
            problem = Problem(problem.host, field, problem.expected, problem.found, problem.hint)
            if lines:
                location = "%s:%s" % (key[3], format_int_ranges(lines))
        out.append((hosts, problem, location))
    return out
