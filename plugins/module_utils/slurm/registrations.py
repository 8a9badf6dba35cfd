"""Waiting for several nodes at once to register with slurmctld after their slurmd restarted.

One ``scontrol -o show node HOSTLIST`` per poll for every node still pending, and one ``scontrol update`` for the
nodes to resume in that poll: a batch of slurmd restarts costs the controller a few calls, not a few per node.
Each node is judged by ``registration_verdict`` exactly as one node alone is. Standard library only.
"""
import time

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.hostlists import slurm_hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import describe, registration_verdict


def wait_registrations(scontrol, wanted, timeout, interval, check_gres=True, check_mode=False,
                       clock=time.monotonic, sleep=time.sleep):
    """Poll until every node of ``wanted`` is settled; returns ``{name: outcome}``.

    ``wanted``: ``{name: {"gres": {key: count}, "since": SlurmdStartTime before the restart or None,
    "resume": bool}}``. An outcome is ``{"status", "message", "error", "node", "resumed", "waited"}`` with status
    ``ok`` (registered as declared), ``resumed`` (and its GRES-mismatch drain resumed; in check mode: would be),
    ``failed`` (refused, or registered with other Gres: waiting does not help) or ``timeout``; ``message`` is what
    was seen last, ``error`` why the node failed or timed out (None otherwise).
    """
    start = clock()
    deadline = start + max(timeout, 0)
    pending = sorted(wanted)
    resumed = set()
    out = {}
    while True:
        records, error = scontrol.nodes(pending)
        waited = round(clock() - start, 1)
        last, to_resume = {}, []
        for name in pending:
            spec = wanted[name]
            node = None if error else records.get(name)
            if error:
                verdict = {"status": "waiting", "message": error}
            else:
                verdict = registration_verdict(node, {str(k): int(v) for k, v in (spec.get("gres") or {}).items()},
                                               since=spec.get("since"), check_gres=check_gres)
            status = verdict["status"]
            if status == "resume" and spec.get("resume", True) and name not in resumed:
                to_resume.append(name)
            elif status == "ok":
                out[name] = _outcome("resumed" if name in resumed else "ok", verdict["message"], None, node,
                                     name in resumed, waited)
            elif status == "failed":
                out[name] = _outcome("failed", verdict["message"], verdict["message"], node, name in resumed, waited)
            last[name] = (verdict, node)
        if to_resume and check_mode:
            for name in to_resume:
                out[name] = _outcome("resumed", "would resume: %s" % last[name][0]["message"], None, last[name][1],
                                     True, waited)
        elif to_resume:
            rc, stdout, stderr = scontrol.run("update", "NodeName=%s" % slurm_hostlist(to_resume), "State=RESUME")
            if rc != 0:
                for name in to_resume:
                    out[name] = _outcome("failed", last[name][0]["message"], "scontrol update State=RESUME failed "
                                         "(rc %d): %s" % (rc, (stderr or stdout).strip()), last[name][1], False, waited)
            else:
                resumed.update(to_resume)
        pending = [name for name in pending if name not in out]
        if not pending:
            return out
        if to_resume and not check_mode:
            sleep(0.5)
            continue
        if clock() >= deadline:
            for name in pending:
                verdict, node = last[name]
                detail = verdict["message"]
                if not error and "State=" not in detail:
                    detail += " (%s)" % describe(node)
                out[name] = _outcome("timeout", verdict["message"], "not registered as expected within %d s: %s"
                                     % (timeout, detail), node, name in resumed, waited)
            return out
        sleep(max(interval, 0.1))


def _outcome(status, message, error, node, resumed, waited):
    return {"status": status, "message": message, "error": error, "node": node, "resumed": resumed, "waited": waited}


def failure_message(outcomes):
    """One line naming every node not registered as declared, or None when all are."""
    bad = ["node %s: %s" % (name, o["error"]) for name, o in sorted(outcomes.items()) if o["error"]]
    return "; ".join(bad) if bad else None
