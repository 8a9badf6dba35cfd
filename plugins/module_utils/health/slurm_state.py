"""Drain or resume this node in Slurm after a health check: the decision (pure) and the scontrol calls.

The health check only ever touches its own drains, recognised by the fixed prefix of their reason
(:data:`PREFIX`). A node drained or downed by anyone else (an admin, slurmctld itself: ``gres/gpu count reported
lower than configured``, ``Kill task failed``, ``Not responding``; NHC's ``NHC:``) is left as it is, healthy or
not. Facts from Slurm's source (``src/scontrol/update_node.c``, ``src/slurmctld/node_mgr.c``, scontrol(1)):

- ``State=RESUME`` clears DRAIN, FAIL and the REBOOT flags and turns a DOWN node IDLE; ``State=UNDRAIN`` (22.05+)
  clears only DRAIN and leaves the base state. A node whose drain is ours but which is also DOWN, FAILing or
  waiting for a reboot for another reason is therefore undrained, never resumed.
- scontrol strips one leading and one trailing ``"`` from ``Reason=``; the reason is passed as one argv element,
  without quotes, so only those matter. slurmdbd stores a node event's reason in a ``tinytext`` column (255
  bytes, ``accounting_storage_mysql.c``); slurmctld 24.11+ appends `` : Not responding`` to the reason of a
  drained node it sets DOWN; NHC prefixes ``NHC: `` and passes the text through a single-quoted ``eval``
  (``helpers/node-mark-offline``, ``nhc`` ``die``). The reason is ASCII, one line, without quotes, backslashes,
  ``$`` or backquotes, and at most :data:`MAX_REASON` characters.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_show_node, same_drain_reason

PREFIX = "hpc-gres-health: "
MAX_REASON = 200
DRAIN_FLAGS = frozenset(("DRAIN", "DRAINED", "DRAINING"))
# Flags RESUME would clear besides DRAIN (node_mgr.c update_node), or a base state it would change.
NOT_OURS_TO_CLEAR = frozenset(("FAIL", "FAILING", "REBOOT_REQUESTED", "REBOOT_ISSUED", "POWERING_DOWN"))
ACTIONS = ("none", "drain", "update_reason", "resume", "undrain")
_UNSAFE = re.compile(r"[\"'`$\\]")
_SPACE = re.compile(r"\s+")


def clean(text):
    """One line of plain ASCII without the characters that break scontrol's or NHC's quoting."""
    text = (text or "").encode("ascii", "replace").decode("ascii")
    text = _UNSAFE.sub("", text)
    return _SPACE.sub(" ", text).strip()


def _label(finding):
    gpu = finding.get("gpu")
    if gpu in (None, ""):
        return finding["check"]
    return "%s %s%s" % (finding["check"], "" if str(gpu).startswith("NVSwitch ") else "GPU ", gpu)


def drain_reason(errors, limit=MAX_REASON):
    """``hpc-gres-health: <check> GPU <gpu>: <found> (+N more)`` for the first of ``errors`` (findings in check
    order); None without errors. The found text is cut (``...``) so the whole stays within ``limit`` characters."""
    if not errors:
        return None
    first = errors[0]
    more = " (+%d more)" % (len(errors) - 1) if len(errors) > 1 else ""
    return fit_reason("%s%s: " % (PREFIX, clean(_label(first))), clean(first.get("found")) or "-", more, limit)


def fit_reason(head, body, tail, limit=MAX_REASON):
    """``head + body + tail`` within ``limit`` characters, the body cut (``...``) where it must be."""
    room = limit - len(head) - len(tail)
    if len(body) > room:
        body = body[:max(room - 3, 1)].rstrip() + "..."
    return head + body + tail


def is_ours(reason):
    return bool(reason) and reason.startswith(PREFIX)


def node_view(record):
    """``scontrol show node`` record (``slurm.scontrol.parse_show_node``) -> what the decision needs."""
    if record is None:
        return None
    return {"base": record.get("state_base") or "", "flags": list(record.get("state_flags") or []),
            "reason": record.get("reason")}


def decide(node, unhealthy, reason):
    """What to do about one node: ``{"action", "reason", "why"}``, ``action`` one of :data:`ACTIONS`.

    ``node``: :func:`node_view` (None: the node's state is unknown: nothing is done); ``unhealthy``: the check
    found errors; ``reason``: :func:`drain_reason` of them.
    """
    if node is None:
        return {"action": "none", "reason": None, "why": "the node's Slurm state is unknown"}
    base = (node.get("base") or "").upper()
    flags = set(f.upper() for f in node.get("flags") or [])
    current = node.get("reason")
    drained = bool(flags & DRAIN_FLAGS) or base in DRAIN_FLAGS
    ours = is_ours(current)
    if unhealthy:
        if drained and ours:
            if same_drain_reason(current, reason):
                return {"action": "none", "reason": reason, "why": "already drained by the health check for this"}
            return {"action": "update_reason", "reason": reason,
                    "why": "drained by the health check; the first error changed"}
        if drained:
            return {"action": "none", "reason": reason,
                    "why": "drained by someone else (%s): left as it is" % (current or "no reason")}
        if base == "DOWN" or flags & NOT_OURS_TO_CLEAR:
            return {"action": "none", "reason": reason, "why": "%s (%s): left as it is" % (
                "+".join([base] + sorted(flags)), current or "no reason")}
        return {"action": "drain", "reason": reason, "why": "unhealthy"}
    if drained and ours:
        if base == "DOWN" or flags & NOT_OURS_TO_CLEAR:
            also = "+".join([base] + sorted(flags & NOT_OURS_TO_CLEAR))
            return {"action": "undrain", "reason": None,
                    "why": "healthy again; the node is also %s, which is left to whoever set it" % also}
        return {"action": "resume", "reason": None, "why": "healthy again"}
    if drained:
        return {"action": "none", "reason": None, "why": "healthy; drained by someone else (%s): left as it is"
                                                         % (current or "no reason")}
    return {"action": "none", "reason": None, "why": "healthy"}


def update_argv(scontrol, node_name, decision):
    """The scontrol command that carries out ``decision``, or None for ``none``."""
    action = decision["action"]
    if action in ("drain", "update_reason"):
        return [scontrol, "update", "NodeName=%s" % node_name, "State=DRAIN", "Reason=%s" % decision["reason"]]
    if action == "resume":
        return [scontrol, "update", "NodeName=%s" % node_name, "State=RESUME"]
    if action == "undrain":
        return [scontrol, "update", "NodeName=%s" % node_name, "State=UNDRAIN"]
    return None


def show_argv(scontrol, node_name):
    return [scontrol, "-o", "show", "node", node_name]


def said(result, limit=300):
    """What a failed command said, on one line (its lines joined with ' | '), cut at a word past ``limit``."""
    lines = [line.strip() for line in (result["stderr"] or result["stdout"] or "").splitlines() if line.strip()]
    text = " | ".join(lines)
    if len(text) > limit:
        text = text[:limit].rsplit(" ", 1)[0].rstrip(" |") + " ..."
    return text or "no output"


def read_node(runner, scontrol, node_name):
    """(node_view or None, why not): ``scontrol -o show node NAME`` through the health check's runner."""
    result = runner.run(show_argv(scontrol, node_name))
    if result["rc"] is None:
        from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.inputs import describe_failure

        return None, describe_failure(result)
    if result["rc"] != 0:
        return None, "scontrol show node %s: %s" % (node_name, said(result))
    record = parse_show_node(result["stdout"]).get(node_name)
    if record is None:
        return None, "scontrol does not know node %s" % node_name
    return node_view(record), None


def apply(runner, scontrol, node_name, decision):
    """Carry out ``decision``; returns (done, message)."""
    argv = update_argv(scontrol, node_name, decision)
    if argv is None:
        return True, None
    result = runner.run(argv)
    if result["rc"] == 0:
        return True, None
    if result["rc"] is None:
        from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.inputs import describe_failure

        return False, describe_failure(result)
    return False, "scontrol update failed (status %s): %s" % (result["rc"], said(result))
