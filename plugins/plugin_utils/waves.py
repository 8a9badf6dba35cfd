# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Rolling maintenance in waves: which GPU nodes may be out of service together (pure; controller side).

A maintenance run (``playbooks/maintenance_gres.yml``) takes its nodes out of service a wave at a time: drain, wait
for the jobs, the site's change, reboot, readiness check, resume. Before each wave the ``gres_plan`` action's stage
``waves`` calls :func:`plan_waves` with what slurmctld says now about every node; the plays only read the result.

The rule, per partition: the nodes that are unavailable now (down, drained or draining, failing, not responding,
rebooting, in a maintenance reservation, not registered), whoever made them so, plus the available nodes the wave
takes, are at most the partition's cap: a count, or a percentage of the partition's nodes (rounded down, at least
one). A node in several partitions must fit in each; nodes in no partition share the cap as one group.

Two kinds of unavailable node are treated apart:
- a node this run failed stays drained with its reason and counts against the failure budget instead of the cap
  (a failed node must not stall a partition whose cap it fills; the budget bounds how many the run leaves out);
- a target drained by this maintenance already (an interrupted run's node, or one an earlier run failed; the drain
  reason tells), or by the collection's own GPU checks (``hpc-gres-health: ...``, ``hpc-gres-boot: ...``: a fault a
  reboot may clear, which the readiness check then judges), adds nothing to the count when a wave takes it, so such
  nodes go first; the wave drains them again with the maintenance's reason (``retake``).
Then idle nodes before nodes with jobs (their jobs may end meanwhile), then natural name order.

A target that someone else drained or that is down for another reason is skipped (it counts against the cap like
any unavailable node); one that cannot fit because its partitions are full of unavailable nodes is blocked.
"""
from __future__ import annotations

import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.boot import PREFIX as BOOT_PREFIX
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.slurm_state import PREFIX as HEALTH_PREFIX
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_state

# Base states and flags (as ``scontrol show node`` prints them) of a node that does not take new jobs now. A node in
# a maintenance reservation is MAINTENANCE in scontrol's State= (slurm_protocol_defs.c node_state_flags) and MAINT
# in sinfo's short and long forms.
UNAVAILABLE_BASES = frozenset(("DOWN", "UNKNOWN", "FUTURE", "ERROR"))
UNAVAILABLE_FLAGS = frozenset((
    "DRAIN", "DRAINED", "DRAINING", "FAIL", "FAILING", "MAINT", "MAINTENANCE", "INVALID_REG", "INVAL", "NOT_RESPONDING",
    "POWER_DOWN", "POWERED_DOWN", "POWERING_DOWN", "POWERING_UP", "REBOOT", "REBOOT_REQUESTED", "REBOOT_ISSUED"))
# A node with jobs on it (drained, it stays out of service until they end).
BUSY_BASES = frozenset(("ALLOCATED", "MIXED"))
BUSY_FLAGS = frozenset(("COMPLETING",))
NO_PARTITION = "(no partition)"
# What this maintenance appends to its drain reason when a node fails: "<reason>: failed: <what>".
FAILED_MARK = ": failed: "
# What slurmctld appends to a drain reason it keeps: "<reason> : reboot issued", "<reason> : Not responding".
SLURM_SUFFIX = " : "
_PERCENT = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*%\s*$")
_COUNT = re.compile(r"^\s*(\d+)\s*$")


def parse_cap(value, field="hpc_gres_maintenance_cap", minimum=1):
    """``("count", n)`` or ``("percent", p)`` from ``2``, ``"2"`` or ``"25%"``; ValueError naming the field."""
    expected = ("a number of nodes (%d or more) or a percentage such as 25%%" % minimum)
    if isinstance(value, bool) or value is None:
        raise ValueError("%s: expected %s, found %r" % (field, expected, value))
    if isinstance(value, int):
        if value < minimum:
            raise ValueError("%s: expected %s, found %r" % (field, expected, value))
        return ("count", value)
    text = str(value)
    match = _COUNT.match(text)
    if match:
        return parse_cap(int(match.group(1)), field, minimum)
    match = _PERCENT.match(text)
    if match:
        percent = float(match.group(1))
        if (minimum > 0 and percent <= 0) or percent > 100:
            raise ValueError("%s: expected %s, found %r (a percentage from %s to 100)"
                             % (field, expected, value, "above 0" if minimum > 0 else "0"))
        return ("percent", percent)
    raise ValueError("%s: expected %s, found %r" % (field, expected, value))


def cap_limit(cap, size, minimum=1):
    """The number a parsed cap allows out of ``size`` nodes: a count as it is, a percentage rounded down; at least
    ``minimum``."""
    kind, value = cap
    limit = value if kind == "count" else int(size * value / 100.0 + 1e-9)
    return max(minimum, limit)


def cap_text(cap):
    kind, value = cap
    if kind == "count":
        return str(value)
    return "%s%%" % (int(value) if value == int(value) else value)


def is_ours(reason, maintenance_reason):
    """Whether a drain reason is this maintenance's: the reason itself, with slurmctld's suffixes (``: reboot
    issued``), or with the failure mark of a node a run left drained."""
    if not reason or not maintenance_reason:
        return False
    return reason == maintenance_reason or reason.startswith(maintenance_reason + SLURM_SUFFIX) or \
        reason.startswith(maintenance_reason + FAILED_MARK)


def is_collection_check_drain(reason):
    """Whether a drain reason is the collection's GPU health check's or boot check's (not an admin's)."""
    return bool(reason) and reason.startswith((HEALTH_PREFIX, BOOT_PREFIX))


def failure_reason(maintenance_reason, what, limit=240):
    """The drain reason a failed node is left with: ``<reason>: failed: <what>``, one line, at most ``limit``
    characters (slurmctld keeps it, sinfo -R shows it). ``Key=value`` in ``what`` (scontrol's own text, quoted by a
    registration failure) is written ``Key: value``: ``scontrol -o show node`` prints the reason unquoted, and a
    ``Reason=`` inside it would be read back as the node's reason, no longer this maintenance's."""
    text = re.sub(r"\b([A-Za-z_]+)=", r"\1: ", " ".join(str(what).split()))
    reason = maintenance_reason + FAILED_MARK + text
    if len(reason) > limit:
        reason = reason[:limit - 3].rstrip() + "..."
    return reason


def node_status(record, maintenance_reason):
    """What the planner needs of one slurm_node record: partitions, unavailable (and why), ours, busy."""
    base = record.get("state_base")
    if base is None:
        base, flags, not_responding = parse_state(record.get("State"))
    else:
        flags, not_responding = record.get("state_flags") or [], bool(record.get("not_responding"))
    flags = set(flags)
    partitions = [p for p in (record.get("Partitions") or "").split(",") if p]
    reason = record.get("reason")
    unavailable = base in UNAVAILABLE_BASES or bool(flags & UNAVAILABLE_FLAGS) or not_responding or \
        any(f.startswith("REBOOT") for f in flags)
    why = None
    if unavailable:
        why = record.get("State") or "+".join([base] + sorted(flags))
        if reason:
            why += " (%s)" % reason
    checks_drain = unavailable and is_collection_check_drain(reason)
    failed_here = unavailable and bool(reason and maintenance_reason) and reason.startswith(
        maintenance_reason + FAILED_MARK)
    return {"partitions": partitions or [NO_PARTITION], "unavailable": unavailable, "why": why,
            "ours": unavailable and (is_ours(reason, maintenance_reason) or checks_drain),
            "retake": checks_drain or failed_here, "checks_drain": checks_drain,
            "busy": base in BUSY_BASES or bool(flags & BUSY_FLAGS)}


def _limits(statuses, cap, partition_caps):
    sizes = {}
    for status in statuses.values():
        for part in status["partitions"]:
            sizes[part] = sizes.get(part, 0) + 1
    caps = {}
    for part in sizes:
        caps[part] = partition_caps.get(part, cap)
    return sizes, caps, {part: cap_limit(caps[part], sizes[part]) for part in sizes}


def _counts(statuses, unavailable):
    counts = {}
    for name in unavailable:
        for part in statuses[name]["partitions"]:
            counts[part] = counts.get(part, 0) + 1
    return counts


def _one_wave(candidates, statuses, unavailable, limits):
    """The nodes of the next wave, in order, and the partitions that blocked each node left out."""
    counts = _counts(statuses, unavailable)
    wave, blocked = [], {}
    for name in candidates:
        parts = statuses[name]["partitions"]
        if name in unavailable:
            wave.append(name)  # out of service already: taking it adds nothing
            continue
        full = [p for p in parts if counts.get(p, 0) + 1 > limits[p]]
        if full:
            blocked[name] = full
            continue
        for part in parts:
            counts[part] = counts.get(part, 0) + 1
        wave.append(name)
    return wave, blocked


def plan_waves(nodes, targets, cap=1, partition_caps=None, max_failures=0, done=(), failed=None,
               reason="GPU maintenance"):
    """The next wave and the whole sequence from here.

    ``nodes``: node name to its slurm_node record (every node slurmctld knows, so that the partitions' sizes and
    their unavailable nodes are complete); ``targets``: the node names of the run, in any order; ``cap``: a count or
    ``N%`` for every partition, ``partition_caps`` per partition; ``max_failures``: how many failed nodes the run
    tolerates (a count or ``N%`` of the targets); ``done``: nodes this run (or the run it continues) finished;
    ``failed``: node to the reason it failed in this run; ``reason``: the maintenance's drain reason.

    Returns ``{"wave", "waves", "finished", "stopped", "blocked", "skipped", "remaining", "unavailable", "limits",
    "sizes", "caps", "budget", "lines"}``: ``waves`` is every wave from here on as if each finished as planned,
    ``wave`` its first; ``finished`` is true when there is no wave to run now (done, stopped or blocked).
    """
    failed = dict(failed or {})
    done = set(done or ())
    parsed_cap = parse_cap(cap)
    parsed_parts = {}
    for part, value in sorted((partition_caps or {}).items()):
        parsed_parts[part] = parse_cap(value, "hpc_gres_maintenance_partition_caps[%s]" % part)
    statuses = {name: node_status(record, reason) for name, record in nodes.items() if record is not None}
    sizes, caps, limits = _limits(statuses, parsed_cap, parsed_parts)
    unknown = sorted(set(parsed_parts) - set(sizes), key=natural_key)
    if unknown:
        raise ValueError("hpc_gres_maintenance_partition_caps: expected partitions slurmctld knows (%s), found %s"
                         % (", ".join(sorted(sizes, key=natural_key)) or "none", ", ".join(unknown)))
    targets = sorted(set(targets), key=natural_key)
    done &= set(targets)
    budget = cap_limit(parse_cap(max_failures, "hpc_gres_maintenance_max_failures", 0), len(targets), 0)

    skipped, candidates = {}, []
    for name in targets:
        if name in done or name in failed:
            continue
        status = statuses.get(name)
        if status is None:
            skipped[name] = "not known to slurmctld"
        elif status["unavailable"] and not status["ours"]:
            skipped[name] = "out of service for another reason: %s; left alone" % status["why"]
        else:
            candidates.append(name)
    candidates.sort(key=lambda n: (0 if statuses[n]["unavailable"] else 1, 1 if statuses[n]["busy"] else 0,
                                   natural_key(n)))
    # failed nodes count against the budget, not the cap
    unavailable = {n for n, s in statuses.items() if s["unavailable"] and n not in failed}
    counted = {part: sorted((n for n in unavailable if part in statuses[n]["partitions"] and n not in candidates),
                            key=natural_key) for part in sizes}

    out = {"limits": limits, "sizes": sizes, "caps": {p: cap_text(c) for p, c in caps.items()}, "budget": budget,
           "skipped": skipped, "unavailable": {p: names for p, names in counted.items() if names},
           "failed": failed, "done": sorted(done, key=natural_key), "stopped": None, "blocked": {}}
    waves = []
    if len(failed) > budget:
        out["stopped"] = ("%d node(s) failed (%s), more than hpc_gres_maintenance_max_failures allows (%d): no "
                          "further wave" % (len(failed), ", ".join(sorted(failed, key=natural_key)), budget))
    else:
        left, simulated = list(candidates), set(unavailable)
        while left:
            wave, blocked = _one_wave(left, statuses, simulated, limits)
            if not wave:
                out["blocked"] = {n: _blocked_text(parts, statuses, simulated, limits) for n, parts in blocked.items()}
                break
            waves.append(wave)
            simulated -= set(wave)  # as if each wave finished and its nodes were back in service
            left = [n for n in left if n not in wave]
    out["waves"] = waves
    out["wave"] = waves[0] if waves else []
    out["remaining"] = [n for n in candidates if n not in out["wave"]]
    # drained by a failed run of this maintenance or by the collection's GPU checks: the wave drains them again with
    # its own reason, which it alone resumes
    out["retake"] = [n for n in out["wave"] if statuses[n]["retake"]]
    out["from_checks"] = {n: statuses[n]["why"] for n in candidates if statuses[n]["checks_drain"]}
    out["finished"] = not out["wave"]
    out["lines"] = plan_lines(out, targets)
    return out


def _blocked_text(parts, statuses, unavailable, limits):
    texts = []
    for part in parts:
        names = sorted((n for n in unavailable if part in statuses[n]["partitions"]), key=natural_key)
        texts.append("partition %s has %d node(s) out of service, its cap is %d (%s)"
                     % (part, len(names), limits[part], ", ".join(names)))
    return "; ".join(texts)


def plan_lines(plan, targets):
    """What the plan says, for the admin: caps, every wave, what counts against the cap, what is left out."""
    caps = ", ".join("%s %d of %d (%s)" % (p, plan["limits"][p], plan["sizes"][p], plan["caps"][p])
                     for p in sorted(plan["limits"], key=natural_key))
    to_do = sum(len(w) for w in plan["waves"])
    lines = ["maintenance of %d node(s): %d done, %d failed, %d to do now in %d wave(s); at most this many nodes "
             "out of service per partition: %s; failed nodes tolerated: %d"
             % (len(targets), len(plan["done"]), len(plan["failed"]), to_do, len(plan["waves"]), caps or "none",
                plan["budget"])]
    for index, wave in enumerate(plan["waves"], 1):
        lines.append("wave %d: %s" % (index, ", ".join(wave)))
    for part in sorted(plan["unavailable"], key=natural_key):
        lines.append("already out of service in partition %s (counted against its cap): %s"
                     % (part, ", ".join(plan["unavailable"][part])))
    for name in sorted(plan.get("from_checks") or {}, key=natural_key):
        lines.append("taken although drained by the collection's GPU check (a reboot may clear it; the readiness "
                     "check judges it after): %s: %s" % (name, plan["from_checks"][name]))
    for name in sorted(plan["skipped"], key=natural_key):
        lines.append("skipped %s: %s" % (name, plan["skipped"][name]))
    for name in sorted(plan["blocked"], key=natural_key):
        lines.append("blocked %s: %s" % (name, plan["blocked"][name]))
    for name in sorted(plan["failed"], key=natural_key):
        lines.append("failed %s: %s" % (name, plan["failed"][name]))
    if plan["stopped"]:
        lines.append("stopped: %s" % plan["stopped"])
    return lines
