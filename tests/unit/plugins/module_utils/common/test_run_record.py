"""run_record: the deploy's lock and run records on the controller host (real files in a temporary directory)."""
import datetime
import json
import os

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import run_record as rr

OWNER = {"run_id": "20261201T111500Z-3fa9", "user": "alice", "control_host": "admin01", "pid": 4242,
         "started": "2026-12-01T11:15:00Z"}
OTHER = dict(OWNER, run_id="20261201T111600Z-0b1c", user="bob", control_host="admin02", pid=77)


def test_run_ids_sort_by_start_time():
    early = rr.new_run_id(datetime.datetime(2026, 12, 1, 9, 5, 0), "ffff")
    late = rr.new_run_id(datetime.datetime(2026, 12, 1, 10, 0, 0), "0000")
    assert early == "20261201T090500Z-ffff"
    assert sorted([late, early]) == [early, late]
    assert rr.valid_run_id(early)
    assert not rr.valid_run_id("../etc") and not rr.valid_run_id("a/b") and not rr.valid_run_id("")


def test_second_lock_refused_naming_the_holder(tmp_path):
    rr.acquire_lock(str(tmp_path), OWNER, where="ctl01")
    rr.create_record(str(tmp_path), OWNER)
    with pytest.raises(rr.LockHeld) as exc:
        rr.acquire_lock(str(tmp_path), OTHER, where="ctl01")
    message = str(exc.value)
    for text in ("run 20261201T111500Z-3fa9", "user alice", "host admin01", "pid 4242", "started 2026-12-01T11:15:00Z",
                 "state locked", "on ctl01", "-e hpc_gres_break_lock=20261201T111500Z-3fa9", "nothing was changed"):
        assert text in message
    assert exc.value.holder == OWNER
    assert rr.read_lock(str(tmp_path)) == OWNER


def test_break_lock_must_name_the_holder(tmp_path):
    rr.acquire_lock(str(tmp_path), OWNER)
    with pytest.raises(rr.RunError) as exc:
        rr.acquire_lock(str(tmp_path), OTHER, break_lock="20261201T000000Z-nope")
    assert "does not name the lock holder" in str(exc.value) and "user alice" in str(exc.value)
    assert rr.read_lock(str(tmp_path)) == OWNER
    taken = rr.acquire_lock(str(tmp_path), OTHER, break_lock=OWNER["run_id"])
    assert taken["broken"] == OWNER
    assert rr.read_lock(str(tmp_path)) == OTHER


def test_release_only_by_the_holder(tmp_path):
    rr.acquire_lock(str(tmp_path), OWNER)
    assert not rr.release_lock(str(tmp_path), OTHER["run_id"])
    assert rr.read_lock(str(tmp_path)) == OWNER
    assert rr.release_lock(str(tmp_path), OWNER["run_id"])
    assert rr.read_lock(str(tmp_path)) is None
    rr.acquire_lock(str(tmp_path), OTHER)


def _changes(previous, new):
    return {"gpu-a01": {"node": "gpu-a01", "roles": ["slurmd"], "dir": "/etc/slurm",
                        "files": {"gres.conf": {"previous": rr.sha256(previous), "new": rr.sha256(new),
                                                "changed": previous != new}}}}


def test_record_keeps_previous_copies_and_reads_them_back(tmp_path):
    root = str(tmp_path)
    rr.create_record(root, OWNER)
    old, new = "Name=gpu File=/dev/nvidia0\n", "Name=gpu File=/dev/nvidia[0-1]\n"
    record = rr.add_changes(root, OWNER["run_id"], _changes(old, new), {rr.sha256(old): old})
    entry = record["hosts"]["gpu-a01"]["files"]["gres.conf"]
    assert record["state"] == "recorded"
    assert entry["copy"] == os.path.join(root, OWNER["run_id"], "previous", rr.sha256(old))
    with open(entry["copy"]) as handle:
        assert handle.read() == old
    assert rr.previous_files(root, rr.read_record(root, OWNER["run_id"])) == {"gpu-a01": {"gres.conf": old}}
    with open(os.path.join(root, OWNER["run_id"], "record.json")) as handle:
        assert json.load(handle)["hosts"]["gpu-a01"]["node"] == "gpu-a01"


def test_record_refuses_a_copy_that_does_not_match_its_checksum(tmp_path):
    root = str(tmp_path)
    rr.create_record(root, OWNER)
    old = "Name=gpu\n"
    with pytest.raises(rr.RunError) as exc:
        rr.add_changes(root, OWNER["run_id"], _changes(old, "x"), {rr.sha256(old): "tampered"})
    assert "host gpu-a01: gres.conf: expected the previous content with sha256" in str(exc.value)


def test_a_corrupted_copy_is_refused_at_rollback(tmp_path):
    root = str(tmp_path)
    rr.create_record(root, OWNER)
    old = "Name=gpu\n"
    record = rr.add_changes(root, OWNER["run_id"], _changes(old, "x"), {rr.sha256(old): old})
    with open(record["hosts"]["gpu-a01"]["files"]["gres.conf"]["copy"], "w") as handle:
        handle.write("changed since\n")
    with pytest.raises(rr.RunError) as exc:
        rr.previous_files(root, record)
    assert "does not match its sha256" in str(exc.value)


def test_absent_previous_file_is_none(tmp_path):
    root = str(tmp_path)
    rr.create_record(root, OWNER)
    record = rr.add_changes(root, OWNER["run_id"], _changes(None, "new"), {})
    assert rr.previous_files(root, record) == {"gpu-a01": {"gres.conf": None}}


def test_unfinished_runs_and_states(tmp_path):
    root = str(tmp_path)
    rr.create_record(root, OWNER)
    rr.create_record(root, OTHER)
    rr.set_state(root, OTHER["run_id"], "done")
    assert [r["run_id"] for r in rr.unfinished_runs(root)] == [OWNER["run_id"]]
    assert rr.unfinished_runs(root, exclude=[OWNER["run_id"]]) == []
    with pytest.raises(rr.RunError):
        rr.set_state(root, OWNER["run_id"], "exploded")
    with pytest.raises(rr.RunError) as exc:
        rr.set_state(root, "20261201T000000Z-none", "done")
    assert "no run record 20261201T000000Z-none" in str(exc.value)
    record = rr.set_state(root, OWNER["run_id"], "superseded", note="finished by run x")
    assert record["history"][-1]["note"] == "finished by run x"


def test_prune_keeps_the_newest_and_every_unfinished_run(tmp_path):
    root = str(tmp_path)
    ids = ["20261201T0%d0000Z-aaaa" % i for i in range(5)]
    for run_id in ids:
        rr.create_record(root, dict(OWNER, run_id=run_id))
        rr.set_state(root, run_id, "done")
    rr.set_state(root, ids[1], "restarted")  # unfinished: never pruned
    removed = rr.prune(root, keep=2, protect=[])
    assert removed == [ids[0], ids[2]]
    assert rr.list_runs(root) == [ids[1], ids[3], ids[4]]


def test_check_lock_refuses_a_run_that_changes_nothing_while_another_holds_it(tmp_path):
    root = str(tmp_path)
    assert rr.check_lock(root) is None
    rr.acquire_lock(root, OWNER, where="ctl01")
    with pytest.raises(rr.LockHeld) as exc:
        rr.check_lock(root, where="ctl01")
    assert "run 20261201T111500Z-3fa9 by user alice from host admin01" in str(exc.value)
    assert "state unknown (no record of it here)" in str(exc.value)
    assert rr.check_lock(root, allowed=[OWNER["run_id"]]) == OWNER  # its ansible-playbook is gone
    assert rr.read_lock(root) == OWNER


def test_a_maintenance_run_keeps_one_field_per_node_and_stays_unfinished_while_maintaining(tmp_path):
    root = str(tmp_path)
    rr.create_record(root, dict(OWNER, command="maintenance"))
    rr.set_state(root, OWNER["run_id"], "maintaining", note="node n1: done", **{"node:n1": {"status": "done"}})
    record = rr.set_state(root, OWNER["run_id"], "maintaining", note="node n2: failed",
                          **{"node:n2": {"status": "failed", "reason": "readiness"}})
    assert record["node:n1"] == {"status": "done"} and record["node:n2"]["status"] == "failed"
    assert [r["run_id"] for r in rr.unfinished_runs(root)] == [OWNER["run_id"]]
    rr.set_state(root, OWNER["run_id"], "done")
    assert rr.unfinished_runs(root) == []


def test_a_deploy_is_refused_naming_a_maintenance_run_that_holds_the_lock(tmp_path):
    root = str(tmp_path)
    maintenance = dict(OWNER, command="maintenance")
    rr.acquire_lock(root, maintenance)
    rr.create_record(root, maintenance)
    rr.set_state(root, OWNER["run_id"], "maintaining")
    with pytest.raises(rr.LockHeld) as exc:
        rr.check_lock(root, where="ctl01")
    assert str(exc.value).startswith("deploy refused, nothing was changed: a maintenance run holds the lock on ctl01")
    assert "run 20261201T111500Z-3fa9 by user alice from host admin01 (pid 4242)" in str(exc.value)
    assert "state maintaining" in str(exc.value)


def test_a_deploy_is_refused_naming_a_mig_reconfiguration_that_holds_the_lock(tmp_path):
    root = str(tmp_path)
    mig = dict(OWNER, command=rr.MIG_COMMAND)
    rr.acquire_lock(root, mig)
    rr.create_record(root, mig)
    rr.set_state(root, OWNER["run_id"], "reconfiguring")
    with pytest.raises(rr.LockHeld) as exc:
        rr.acquire_lock(root, OTHER, where="ctl01")
    assert str(exc.value).startswith("deploy refused, nothing was changed: a MIG reconfiguration holds the lock on "
                                     "ctl01")
    assert "state reconfiguring" in str(exc.value)
    assert [r["run_id"] for r in rr.unfinished_runs(root)] == [OWNER["run_id"]]
    rr.set_state(root, OWNER["run_id"], "stopped", note="stopped at host gpu-a01")
    assert rr.unfinished_runs(root) == []


def test_a_named_rollback_of_a_mig_reconfiguration_or_a_maintenance_run_is_refused(tmp_path):
    root = str(tmp_path)
    for command, run_id in ((rr.MIG_COMMAND, OWNER["run_id"]), ("maintenance", OTHER["run_id"])):
        rr.create_record(root, dict(OWNER, run_id=run_id, command=command))
    mig = rr.undo_problem(root, rr.read_record(root, OWNER["run_id"]))
    assert mig.startswith("run 20261201T111500Z-3fa9 is a MIG reconfiguration: it keeps no copy of the files it "
                          "replaced")
    assert "run ansible-playbook hpc.slurm_gres.mig_reconfigure again" in mig
    assert rr.undo_problem(root, rr.read_record(root, OTHER["run_id"])) == (
        "run 20261201T111600Z-0b1c is a maintenance run: it changed no Slurm file, there is nothing to put back")


def test_a_run_is_refused_by_name_while_a_rollback_holds_it(tmp_path):
    root = str(tmp_path)
    rollback = dict(OWNER, command="rollback of 20261130T090000Z-aa11")
    rr.acquire_lock(root, rollback)
    rr.create_record(root, rollback)
    with pytest.raises(rr.LockHeld) as exc:
        rr.check_lock(root, where="ctl01")
    assert str(exc.value).startswith("deploy refused, nothing was changed: a rollback holds the lock on ctl01")
    assert "-e hpc_gres_break_lock=20261201T111500Z-3fa9" in str(exc.value)
    # a run that lost the race for the lock is refused in its own name
    for command, text in (("MIG reconfiguration", "MIG reconfiguration refused, nothing was changed: a rollback"),
                          ("rollback of 20261201T000000Z-0000", "rollback of 20261201T000000Z-0000 refused, nothing "
                           "was changed: another rollback")):
        with pytest.raises(rr.LockHeld) as exc:
            rr.acquire_lock(root, dict(OWNER, run_id="20261201T111600Z-0b1c", command=command), where="ctl01")
        assert str(exc.value).startswith(text + " holds the lock on ctl01")


def test_which_unfinished_runs_are_a_deploys_to_finish():
    assert [rr.is_deploy(r) for r in ({}, {"command": "rollback of X"}, {"command": "maintenance"},
                                      {"command": rr.MIG_COMMAND})] == [True, True, False, False]


def _run(root, run_id, old, new, state="done"):
    owner = dict(OWNER, run_id=run_id)
    rr.create_record(root, owner)
    rr.add_changes(root, run_id, _changes(old, new), {rr.sha256(old): old})
    rr.set_state(root, run_id, state)
    return rr.read_record(root, run_id)


def test_a_named_rollback_is_refused_when_a_later_run_changed_its_files_or_it_was_undone_already(tmp_path):
    root = str(tmp_path)
    a0, a1, b1 = "File=/dev/nvidia0\n", "File=/dev/nvidia[0-1]\n", "File=/dev/nvidia[0-2]\n"
    first = _run(root, "20261201T100000Z-aaaa", a0, a1)
    assert rr.undo_problem(root, first) is None
    # a later deploy changed the same file: undoing the first would silently undo it too
    second = _run(root, "20261201T110000Z-bbbb", a1, b1)
    problem = rr.undo_problem(root, first)
    assert problem == ("a later run changed files of its hosts: gpu-a01 gres.conf (run 20261201T110000Z-bbbb); "
                       "putting back run 20261201T100000Z-aaaa's previous files would undo that run there too: roll "
                       "back run 20261201T110000Z-bbbb first (-e hpc_gres_rollback=20261201T110000Z-bbbb), then "
                       "this one")
    assert rr.undo_problem(root, second) is None
    # the later run rolled back by a named rollback (whose own record puts a1 back): the first may be undone now
    rr.set_state(root, second["run_id"], "rolled_back", note="rolled back by run 20261201T120000Z-cccc (done)")
    _run(root, "20261201T120000Z-cccc", b1, a1)
    assert rr.undo_problem(root, first) is None
    assert rr.undo_problem(root, rr.read_record(root, second["run_id"])) == (
        "run 20261201T110000Z-bbbb was rolled back already (rolled back by run 20261201T120000Z-cccc (done))")


def _run_files(root, run_id, files, state="done"):
    """A run that recorded gpu-a01 with several files: {name: (previous, new)}."""
    owner = dict(OWNER, run_id=run_id)
    rr.create_record(root, owner)
    changes = {"gpu-a01": {"node": "gpu-a01", "roles": ["slurmd"], "dir": "/etc/slurm", "files": {
        name: {"previous": rr.sha256(old), "new": rr.sha256(new), "changed": old != new}
        for name, (old, new) in files.items()}}}
    rr.add_changes(root, run_id, changes, {rr.sha256(old): old for old, _new in files.values()})
    rr.set_state(root, run_id, state)
    return rr.read_record(root, run_id)


def test_a_later_run_that_changed_another_file_of_the_host_refuses_too(tmp_path):
    # the rollback puts back every file the record holds for a host: R2 changed slurm.conf, which R1 left alone
    root = str(tmp_path)
    first = _run_files(root, "20261201T100000Z-aaaa", {"gres.conf": ("g1", "g2"), "slurm.conf": ("s1", "s1")})
    _run_files(root, "20261201T110000Z-bbbb", {"gres.conf": ("g2", "g2"), "slurm.conf": ("s1", "s2")})
    assert rr.undo_problem(root, first).startswith("a later run changed files of its hosts: gpu-a01 slurm.conf "
                                                   "(run 20261201T110000Z-bbbb)")


def test_a_later_run_that_put_the_previous_files_back_does_not_refuse(tmp_path):
    # an interrupted rollback of R1 (R2 recorded g2 -> g1, then killed), or a deploy of the reverted inventory:
    # the files are R1's previous ones again, and rolling R1 back changes nothing of R2
    root = str(tmp_path)
    first = _run_files(root, "20261201T100000Z-aaaa", {"gres.conf": ("g1", "g2")})
    _run_files(root, "20261201T110000Z-bbbb", {"gres.conf": ("g2", "g1")}, state="recorded")
    assert rr.undo_problem(root, first) is None
