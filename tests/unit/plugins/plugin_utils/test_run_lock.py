"""run_lock: whether the MIG runbook (and a maintenance run) may take the run lock."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import run_lock

MIG = run_lock.MIG
DEPLOY = {"run_id": "20261203T100000Z-abcd", "user": "bob", "control_host": "admin02", "pid": 7,
          "started": "2026-12-03T10:00:00Z"}
KILLED_MIG = dict(DEPLOY, run_id="20261203T090000Z-0001", command=MIG, state="reconfiguring")
MAINTAINING = dict(DEPLOY, run_id="20261202T090000Z-0002", command="maintenance", state="maintaining")


def test_refused_while_any_other_run_holds_the_lock():
    for holder, kind in ((DEPLOY, "a deploy"), (dict(DEPLOY, command="maintenance"), "a maintenance run"),
                         (dict(DEPLOY, command="rollback of X"), "a rollback"), (KILLED_MIG, "a MIG reconfiguration")):
        plan = run_lock.lock_plan(MIG, holder, False, [])
        assert plan["refusal"].startswith("MIG reconfiguration refused, nothing was changed: %s holds the lock: run %s "
                                          "by user bob from host admin02 (pid 7), started 2026-12-03T10:00:00Z."
                                          % (kind, holder["run_id"]))
        assert plan["refusal"].endswith("-e hpc_gres_break_lock=%s" % holder["run_id"])
    assert run_lock.lock_plan(MIG, DEPLOY, False, [], DEPLOY["run_id"])["refusal"] is None


def test_a_deploy_or_rollback_that_did_not_finish_must_be_finished_first():
    for unfinished in ([dict(DEPLOY, state="installed")], [dict(DEPLOY, command="rollback of X", state="recorded")]):
        plan = run_lock.lock_plan(MIG, None, False, unfinished)
        assert "did not finish: run %s by user bob" % DEPLOY["run_id"] in plan["refusal"]
        assert "started 2026-12-03T10:00:00Z, state %s." % unfinished[0]["state"] in plan["refusal"]
        assert "the runbook would verify and install beside them" in plan["refusal"]
        assert "ansible-playbook hpc.slurm_gres.deploy_gres -i INVENTORY" in plan["refusal"]
    # a deploy killed on this machine holds the lock: taken over by the deploy, not by the runbook
    assert "did not finish" in run_lock.lock_plan(MIG, DEPLOY, True, [])["refusal"]


def test_a_killed_runbook_run_is_continued_and_a_maintenance_run_left_alone():
    plan = run_lock.lock_plan(MIG, KILLED_MIG, True, [MAINTAINING])
    assert plan == {"refusal": None, "break_lock": KILLED_MIG["run_id"], "continues": [KILLED_MIG["run_id"]]}
    older = dict(KILLED_MIG, run_id="20261201T090000Z-0000")
    assert run_lock.lock_plan(MIG, None, False, [older, MAINTAINING])["continues"] == [older["run_id"]]
    assert run_lock.lock_plan(MIG, None, False, []) == {"refusal": None, "break_lock": None, "continues": []}
    # a maintenance run is not refused by a killed MIG run (a broken GPU may be why it stopped)
    assert run_lock.lock_plan("maintenance", KILLED_MIG, True, [])["refusal"] is None
    with pytest.raises(ValueError):
        run_lock.lock_plan("deploy", None, False, [])
