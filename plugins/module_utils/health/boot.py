"""The GPU boot order of slurmd, the logic: wait for each stage with one deadline, the hold reason, and what to do
about the node in Slurm when it is held back or released. Pure functions; the probes are passed in.

Stages, in order (``hpc-gres-boot``, docs/boot.md):

1. ``driver``: the NVIDIA device node ``/dev/nvidiactl`` exists and NVML answers (``nvidia-smi`` lists the GPUs);
2. ``mig``: the node's MIG layout from the inventory applied by the collection's own code (only on nodes with one,
   and only where the collection applies it; with nvidia-mig-manager the unit is ordered after that service);
3. ``ready``: the node health check (``check.check_node``: the readiness checks, persistence and the NVLink fabric
   among them, and the live GPUs against the deployed gres.conf) finds no error.

Each stage is tried again every ``interval`` seconds until it passes or the one deadline of the whole boot
(``wait`` seconds from the start) has passed: a driver still loading, a fabric manager still starting, is waited
for, not failed. A stage that never passes holds slurmd back: it does not start, so the node never registers a
wrong GRES count; its Slurm reason is ``hpc-gres-boot: <stage>: <what was found>``.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.slurm_state import (
    DRAIN_FLAGS,
    MAX_REASON,
    NOT_OURS_TO_CLEAR,
    clean,
    fit_reason,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import same_drain_reason

PREFIX = "hpc-gres-boot: "
STAGES = ("driver", "mig", "ready")
MIG_MODES = ("collection", "mig-manager", "none")
DEFAULT_WAIT = 300
DEFAULT_INTERVAL = 5
# Reasons slurmctld itself gives a node whose slurmd is gone (ping_nodes.c / node_mgr.c): a node held back at boot
# is DOWN for one of these, which the hold may replace with its own reason.
SLURMCTLD_DOWN_REASONS = ("Not responding", "Node unexpectedly rebooted", "Node silently failed and came back")


def read_settings(doc, where="boot settings"):
    """The node's boot settings (``/etc/hpc-gres/boot.json`` as the deploy writes it) checked and completed:
    ``{"node", "wait", "interval", "mig", "layouts", "models"}``. Raises ValueError naming the key."""
    if not isinstance(doc, dict):
        raise ValueError("%s: expected a JSON object, found %s" % (where, type(doc).__name__))
    unknown = sorted(set(doc) - {"node", "wait", "interval", "mig", "layouts", "models"})
    if unknown:
        raise ValueError("%s: unknown key(s) %s" % (where, ", ".join(unknown)))
    out = {"node": doc.get("node"), "wait": doc.get("wait", DEFAULT_WAIT), "interval": doc.get("interval",
                                                                                               DEFAULT_INTERVAL),
           "mig": doc.get("mig", "none"), "layouts": doc.get("layouts", {}), "models": doc.get("models", {})}
    if out["node"] is not None and (not isinstance(out["node"], str) or not out["node"]):
        raise ValueError("%s: node: expected the Slurm node name, found %r" % (where, out["node"]))
    for key in ("wait", "interval"):
        value = out[key]
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value < (0 if key == "wait" else 1):
            raise ValueError("%s: %s: expected seconds (a number, %s), found %r" % (
                where, key, "0 or more" if key == "wait" else "1 or more", value))
    if out["mig"] not in MIG_MODES:
        raise ValueError("%s: mig: expected one of %s, found %r" % (where, ", ".join(MIG_MODES), out["mig"]))
    for key in ("layouts", "models"):
        out[key] = {} if out[key] is None else out[key]
        if not isinstance(out[key], dict):
            raise ValueError("%s: %s: expected an object keyed by GPU index, found %r" % (where, key, out[key]))
    return out


def mig_layouts(settings):
    """``{index: [profiles]}`` of the GPUs whose layout the boot applies: those the inventory splits. A GPU declared
    whole is left as it is (its MIG mode survives a reboot; a wrong one is the ready stage's finding)."""
    if settings["mig"] != "collection":
        return {}
    return {k: v for k, v in settings["layouts"].items() if isinstance(v, list) and v}


def wait_for(probe, clock, sleep, deadline, interval, log=None):
    """Call ``probe()`` -> ``(ok, detail)`` until it is ok or ``deadline`` (a ``clock()`` value) has passed, sleeping
    ``interval`` seconds between tries; ``log(detail)`` is called for each new detail of a failed try.

    Returns ``{"ok", "detail", "tries"}``; a probe is always tried once, even when the deadline has passed.
    """
    tries, last = 0, None
    while True:
        tries += 1
        ok, detail = probe()
        if ok:
            return {"ok": True, "detail": detail, "tries": tries}
        if log is not None and detail != last:
            log(detail)
        last = detail
        left = deadline - clock()
        if left <= 0:
            return {"ok": False, "detail": detail, "tries": tries}
        sleep(min(float(interval), left))


def run_stages(stages, clock, sleep, wait, interval, log=None):
    """Run ``stages`` (``[(name, probe)]``) in order with one deadline, ``wait`` seconds from now.

    Returns ``{"ok", "stage" (the one that failed, or None), "detail", "stages": [{"stage", "ok", "detail",
    "tries", "seconds"}], "seconds"}``; the first stage that does not pass stops the run.
    """
    start = clock()
    deadline = start + float(wait)
    done = []
    for name, probe in stages:
        began = clock()
        result = wait_for(probe, clock, sleep, deadline, interval,
                          log=(lambda detail, name=name: log(name, detail)) if log is not None else None)
        done.append({"stage": name, "ok": result["ok"], "detail": result["detail"], "tries": result["tries"],
                     "seconds": round(clock() - began, 3)})
        if not result["ok"]:
            return {"ok": False, "stage": name, "detail": result["detail"], "stages": done,
                    "seconds": round(clock() - start, 3)}
    return {"ok": True, "stage": None, "detail": None, "stages": done, "seconds": round(clock() - start, 3)}


def hold_reason(stage, detail, waited, limit=MAX_REASON):
    """``hpc-gres-boot: <stage>: <detail> (after N s)``, one clean line of at most ``limit`` characters."""
    tail = " (after %d s)" % int(round(waited))
    return fit_reason("%s%s: " % (PREFIX, stage), clean(detail) or "not ready", tail, limit)


def is_ours(reason):
    return bool(reason) and reason.startswith(PREFIX)


def _slurmctlds(reason):
    return not reason or any(reason.startswith(r) for r in SLURMCTLD_DOWN_REASONS)


def hold_decision(node, reason):
    """What to do about the node while slurmd is held back: ``{"action": "drain" | "update_reason" | "none",
    "reason", "why"}``. ``node``: ``slurm_state.node_view`` (None: unknown, nothing done).

    Drained by this boot order before: its reason is updated when it changed. Drained by anyone else, or DOWN
    with another reason than slurmctld's own: left as it is (the node is out of service anyway). Otherwise (IDLE
    until slurmctld notices slurmd is gone, or DOWN as not responding) it is drained with the reason.
    """
    if node is None:
        return {"action": "none", "reason": reason, "why": "the node's Slurm state is unknown"}
    base = (node.get("base") or "").upper()
    flags = set(f.upper() for f in node.get("flags") or [])
    current = node.get("reason")
    drained = bool(flags & DRAIN_FLAGS) or base in DRAIN_FLAGS
    if drained and is_ours(current):
        if same_drain_reason(current, reason):
            return {"action": "none", "reason": reason, "why": "already held for this"}
        return {"action": "update_reason", "reason": reason, "why": "held; the reason changed"}
    if drained:
        return {"action": "none", "reason": reason, "why": "drained by someone else (%s): left as it is"
                                                           % (current or "no reason")}
    if (base == "DOWN" and not _slurmctlds(current)) or flags & NOT_OURS_TO_CLEAR:
        return {"action": "none", "reason": reason, "why": "%s (%s): left as it is" % (
            "+".join([base] + sorted(flags)), current or "no reason")}
    return {"action": "drain", "reason": reason, "why": "slurmd held back"}


def release_decision(node):
    """What to do once slurmd has started after a hold: ``{"action": "resume" | "undrain" | "none", "why"}``.

    Only a drain of this boot order is released: ``RESUME`` (also a DOWN node, which slurmctld set DOWN while
    slurmd was held, comes back), or ``UNDRAIN`` where a FAIL or REBOOT flag is someone else's to clear.
    """
    if node is None:
        return {"action": "none", "reason": None, "why": "the node's Slurm state is unknown"}
    base = (node.get("base") or "").upper()
    flags = set(f.upper() for f in node.get("flags") or [])
    drained = bool(flags & DRAIN_FLAGS) or base in DRAIN_FLAGS
    if not (drained and is_ours(node.get("reason"))):
        return {"action": "none", "reason": None, "why": "not held by the boot order"}
    if flags & NOT_OURS_TO_CLEAR:
        return {"action": "undrain", "reason": None, "why": "released; %s is left to whoever set it"
                                                            % "+".join(sorted(flags & NOT_OURS_TO_CLEAR))}
    return {"action": "resume", "reason": None, "why": "released"}
