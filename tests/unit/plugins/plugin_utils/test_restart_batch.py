"""The slurmd restarts of one batch: which nodes are read before, which registrations are waited for after."""
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import restart_batch

GRES = {"gpu:a100": 8}


def request(node, resume=True):
    return {restart_batch.REQUEST: {"node": node, "gres": GRES, "resume": resume,
                                    "reasons": ["gres.conf: File= changed"]}}


def test_only_the_hosts_that_request_a_restart_are_read():
    state = {"a.lab": request("a"), "b.lab": {restart_batch.REQUEST: None}, "c.lab": request("c", resume=False)}
    out = restart_batch.batch(["a.lab", "b.lab", "c.lab", "d.lab"], state)
    assert out == {"nodes": ["a", "c"], "lines": ["node a: restarting slurmd (gres.conf: File= changed)",
                                                  "node c: restarting slurmd (gres.conf: File= changed)"]}
    assert restart_batch.batch(["b.lab"], state) == {"nodes": [], "lines": []}


def test_the_registrations_leave_out_failed_restarts_and_take_since_from_the_read():
    state = {h: request(h[0], resume=(h != "c.lab")) for h in ("a.lab", "b.lab", "c.lab", "d.lab")}
    state["a.lab"][restart_batch.RESTART] = {"changed": True}
    state["b.lab"][restart_batch.RESTART] = {"failed": True, "msg": "Unable to restart service slurmd"}
    state["c.lab"][restart_batch.RESTART] = {"changed": True}
    # d.lab: no restart result (it dropped out of the batch)
    read = {"nodes": {"a": {"slurmd_start_time": "2026-12-04T10:00:00"}, "b": None, "c": {"slurmd_start_time": None}}}
    out = restart_batch.registrations(["a.lab", "b.lab", "c.lab", "d.lab"], state, read)
    assert out == {"a": {"gres": GRES, "resume": True, "since": "2026-12-04T10:00:00"},
                   "c": {"gres": GRES, "resume": False, "since": "None"}}
