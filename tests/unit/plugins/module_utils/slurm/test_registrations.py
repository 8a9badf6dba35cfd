"""Waiting for a batch of nodes to register: one scontrol read per poll, each node judged as one alone.

The node records are real ``scontrol show node`` outputs recorded live on Slurm 22.05 (tests/fixtures/slurm), each
given the name and SlurmdStartTime a poll needs.
"""
import os

import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import registrations, scontrol

FIXTURES = os.path.join(testpaths.FIXTURES, "slurm")
GRES = {"gpu:a100": 2, "gpu:h100": 2}


def record(fixture, name, started):
    with open(os.path.join(FIXTURES, fixture)) as handle:
        node = next(iter(scontrol.parse_show_node(handle.read().split("# ---\n", 1)[1]).values()))
    return dict(node, name=name, slurmd_start_time=started)


IDLE = "live2205-multiline-idle.txt"
GRES_DRAIN = "live2205-multiline-gres-drain-valid-registration.txt"
INVALID = "live2205-multiline-count-too-low-invalid-reg.txt"


class FakeScontrol(object):
    """Answers each ``nodes`` call with the next poll ({name: record}); ``run`` records the updates."""

    def __init__(self, polls, update_rc=0):
        self.polls = list(polls)
        self.reads, self.updates = [], []
        self.update_rc = update_rc

    def nodes(self, names):
        self.reads.append(list(names))
        poll = self.polls.pop(0) if len(self.polls) > 1 else self.polls[0]
        if isinstance(poll, str):
            return None, poll
        return {name: poll.get(name) for name in names}, None

    def run(self, *args):
        self.updates.append(args)
        return self.update_rc, "", "" if self.update_rc == 0 else "Invalid node state specified"


class Clock(object):
    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.now += seconds


def wait(fake, wanted, timeout=10, check_mode=False, check_gres=True):
    clock = Clock()
    return registrations.wait_registrations(fake, wanted, timeout, 2, check_gres=check_gres, check_mode=check_mode,
                                            clock=clock, sleep=clock.sleep)


def want(*names, since="2026-11-29T10:00:00", resume=True):
    return {name: {"gres": GRES, "since": since, "resume": resume} for name in names}


def test_every_node_is_read_in_one_call_per_poll_and_only_the_pending_ones_again():
    old, new = "2026-11-29T10:00:00", "2026-11-29T10:05:00"
    fake = FakeScontrol([
        {"n1": record(IDLE, "n1", new), "n2": record(IDLE, "n2", old), "n3": record(IDLE, "n3", old)},
        {"n2": record(IDLE, "n2", new), "n3": record(IDLE, "n3", old)},
        {"n3": record(IDLE, "n3", new)},
    ])
    out = wait(fake, want("n1", "n2", "n3"))
    assert fake.reads == [["n1", "n2", "n3"], ["n2", "n3"], ["n3"]]
    assert {n: o["status"] for n, o in out.items()} == {"n1": "ok", "n2": "ok", "n3": "ok"}
    assert out["n3"]["waited"] == 4.0
    assert registrations.failure_message(out) is None


def test_a_refused_node_fails_at_once_while_the_others_still_wait_and_a_silent_one_times_out():
    old, new = "2026-11-29T10:00:00", "2026-11-29T10:05:00"
    fake = FakeScontrol([{"n1": record(INVALID, "n1", new), "n2": record(IDLE, "n2", old),
                          "n3": record(IDLE, "n3", old)},
                         {"n2": record(IDLE, "n2", new), "n3": record(IDLE, "n3", old)}])
    out = wait(fake, want("n1", "n2", "n3"), timeout=6)
    assert out["n1"]["status"] == "failed" and "registration refused" in out["n1"]["error"]
    assert out["n2"]["status"] == "ok"
    assert out["n3"]["status"] == "timeout"
    assert out["n3"]["error"].startswith("not registered as expected within 6 s: slurmd has not registered since")
    assert out["n3"]["message"].startswith("slurmd has not registered since the restart")
    assert out["n2"]["error"] is None
    message = registrations.failure_message(out)
    assert message.startswith("node n1: registration refused by slurmctld: State=IDLE+DRAIN+INVALID_REG")
    assert "; node n3: not registered as expected within 6 s" in message


def test_gres_drains_of_the_poll_are_resumed_in_one_update_and_only_where_resume_is_wanted():
    new = "2026-11-29T10:05:00"
    drained = {n: record(GRES_DRAIN, n, new) for n in ("n1", "n2", "n3")}
    wanted = dict(want("n1", "n2"), **want("n3", resume=False))
    gres = {"gpu:a100": 3, "gpu:h100": 2}
    for spec in wanted.values():
        spec["gres"] = gres
    # after the resume: the same record without the drain
    back = {n: dict(drained[n], State="IDLE", state_flags=[], reason=None) for n in ("n1", "n2")}
    fake = FakeScontrol([drained, dict(back, n3=drained["n3"])])
    out = wait(fake, wanted, timeout=4)
    assert fake.updates == [("update", "NodeName=n[1-2]", "State=RESUME")]
    assert {n: (o["status"], o["resumed"]) for n, o in out.items()} == {
        "n1": ("resumed", True), "n2": ("resumed", True), "n3": ("timeout", False)}


def test_check_mode_reports_the_resume_it_would_make_and_makes_none():
    new = "2026-11-29T10:05:00"
    fake = FakeScontrol([{"n1": record(GRES_DRAIN, "n1", new)}])
    out = wait(fake, {"n1": {"gres": {"gpu:a100": 3, "gpu:h100": 2}, "since": None, "resume": True}},
               check_mode=True)
    assert fake.updates == []
    assert out["n1"]["status"] == "resumed" and out["n1"]["message"].startswith("would resume: ")


def test_a_failed_resume_fails_those_nodes_with_scontrols_answer():
    new = "2026-11-29T10:05:00"
    fake = FakeScontrol([{"n1": record(GRES_DRAIN, "n1", new)}], update_rc=1)
    out = wait(fake, {"n1": {"gres": {"gpu:a100": 3, "gpu:h100": 2}}})
    assert out["n1"]["status"] == "failed"
    assert out["n1"]["error"] == "scontrol update State=RESUME failed (rc 1): Invalid node state specified"


def test_an_unreachable_slurmctld_is_waited_for_and_named_on_timeout():
    fake = FakeScontrol(["scontrol show node failed (rc 1): Unable to contact slurm controller"])
    out = wait(fake, want("n1", "n2"), timeout=4)
    assert [o["status"] for o in out.values()] == ["timeout", "timeout"]
    assert out["n1"]["error"] == ("not registered as expected within 4 s: scontrol show node failed (rc 1): "
                                  "Unable to contact slurm controller")


def test_a_node_slurmctld_does_not_know_fails_and_gres_is_not_judged_without_check_gres():
    new = "2026-11-29T10:05:00"
    fake = FakeScontrol([{"n1": record(IDLE, "n1", new)}])
    wrong = {"n1": {"gres": {"gpu:a100": 8}, "since": None}, "n9": {"gres": {}, "since": None}}
    out = wait(fake, wrong, check_gres=False)
    assert out["n1"]["status"] == "ok"
    assert out["n9"]["status"] == "failed" and "not known to slurmctld" in out["n9"]["error"]
    assert wait(FakeScontrol([{"n1": record(IDLE, "n1", new)}]), {"n1": wrong["n1"]})["n1"]["status"] == "failed"
