"""The slurmd restarts of one batch, for the handler that restarts them together (roles/hpc_gres_slurmd).

Each host of the batch sets ``__hpc_gres_slurmd_restart_request`` (``{node, gres, resume, reasons}``, or None where slurmd
keeps running) before the handler runs; the handler reads every requested node from slurmctld in one call, restarts
slurmd on each host, then waits for all their registrations in one module run. ``state``: ``{host: {variable:
value}}`` of ``FACTS``.
"""
REQUEST = "__hpc_gres_slurmd_restart_request"
RESTART = "__hpc_gres_slurmd_restarted"
FACTS = (REQUEST, RESTART)


def _requests(hosts, state):
    return [(host, state.get(host, {}).get(REQUEST)) for host in hosts
            if isinstance(state.get(host, {}).get(REQUEST), dict)]


def batch(hosts, state):
    """``nodes``, the Slurm names of the hosts that request a restart, in batch order; ``lines``, one per node with
    the request's reasons, for the log."""
    requests = [request for dummy, request in _requests(hosts, state)]
    return {"nodes": [request["node"] for request in requests],
            "lines": ["node %s: restarting slurmd (%s)" % (request["node"], "; ".join(request.get("reasons") or []))
                      for request in requests]}


def registrations(hosts, state, read):
    """The ``registrations`` to wait for: node name to ``{gres, since, resume}`` of each requested host whose restart
    did not fail, ``since`` being its ``SlurmdStartTime`` in ``read`` (the one read before the restarts), ``None``
    where it had never registered."""
    nodes = (read or {}).get("nodes") or {}
    out = {}
    for host, request in _requests(hosts, state):
        restart = state.get(host, {}).get(RESTART)
        if not isinstance(restart, dict) or restart.get("failed") or restart.get("skipped"):
            continue
        record = nodes.get(request["node"]) or {}
        out[request["node"]] = {"gres": request.get("gres") or {}, "resume": bool(request.get("resume", True)),
                                "since": record.get("slurmd_start_time") or "None"}
    return out
