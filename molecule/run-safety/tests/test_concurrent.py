"""concurrent: a deploy changing gres-gpu01's gres.conf holds the lock (caught at the start of its install play); a
second deploy of the same change started meanwhile is refused naming the holder and changes nothing; a check run
takes no lock. Then a stale lock left by a run from another machine refuses deploys (even one that changes nothing)
until it is broken as documented (-e hpc_gres_break_lock=RUN_ID)."""

import json
import os
import subprocess
import sys
import tempfile
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
NO_CORES = {"gres-gpu01": {"hpc_gres_gpus": [{"index": 0, "type": "v100"}, {"index": 1, "type": "v100"}]}}
STALE = {"run_id": "20261130T235900Z-dead", "user": "bob", "control_host": "admin-laptop", "pid": 4242,
         "command": "deploy", "started": "2026-11-30T23:59:00Z"}


def wait_for(path, proc, timeout=600):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, "the first deploy ended before it reached its install play"
        assert time.monotonic() < deadline, "the first deploy did not reach its install play"
        time.sleep(0.5)


@pytest.fixture(scope="module")
def runs():
    slurm_checks.wait_for_node(CTL, "gres-gpu01")
    before = deploy_checks.snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        change = [deploy_checks.write_inventory(tmp, NO_CORES)]
        hold, marker = os.path.join(tmp, "hold"), os.path.join(tmp, "reached")
        open(hold, "w").close()
        fault = {"DEPLOY_FAULT_PLAY": "Deploy | install the files", "DEPLOY_FAULT_HOLD": hold,
                 "DEPLOY_FAULT_MARKER": marker}
        cmd, env = deploy_checks.playbook_command(extra_inventories=change, fault=fault)
        log_path = os.path.join(tmp, "first.log")
        with open(log_path, "w") as log:
            first = subprocess.Popen(cmd, env=env, stdout=log, stderr=subprocess.STDOUT, text=True)
            try:
                wait_for(marker, first)
                held = deploy_checks.lock()
                rc_second, out_second = deploy_checks.deploy(extra_inventories=change)
                rc_check, out_check = deploy_checks.deploy("--check", extra_inventories=change)
                after_pair = deploy_checks.snapshot()
            finally:
                os.unlink(hold)
                first.wait(timeout=900)
        with open(log_path) as handle:
            out_first = handle.read()
        print("=== first deploy (held at its install play) rc %d\n%s" % (first.returncode, out_first))
        CTL.check_output("echo %s > %s/lock", json.dumps(STALE), deploy_checks.RUNS)
        rc_stale, out_stale = deploy_checks.deploy(extra_inventories=change)
        lock_stale = deploy_checks.lock()
        rc_wrong, out_wrong = deploy_checks.deploy("-e", "hpc_gres_break_lock=20261130T000000Z-nope",
                                                   extra_inventories=change)
        rc_break, out_break = deploy_checks.deploy("-e", "hpc_gres_break_lock=%s" % STALE["run_id"],
                                                   extra_inventories=change)
    result = {"before": before, "held": held, "rc_first": first.returncode, "out_first": out_first,
              "rc_second": rc_second, "out_second": out_second, "rc_check": rc_check, "out_check": out_check,
              "after_pair": after_pair, "rc_stale": rc_stale, "out_stale": out_stale, "lock_stale": lock_stale,
              "rc_wrong": rc_wrong, "out_wrong": out_wrong, "rc_break": rc_break, "out_break": out_break}
    return {k: deploy_checks.flat(v) if k.startswith("out") else v for k, v in result.items()}


def test_one_runs_the_other_is_refused_naming_the_holder(runs):
    held = runs["held"]
    assert held and held["run_id"] == deploy_checks.run_id(runs["out_first"])
    assert runs["rc_first"] == 0
    assert "node gres-gpu01: restarting slurmd" in runs["out_first"]
    assert runs["rc_second"] != 0
    out = runs["out_second"]
    assert "another deploy holds the lock" in out
    for field in ("run_id", "user", "control_host", "started"):
        assert str(held[field]) in out, field
    assert "-e hpc_gres_break_lock=%s" % held["run_id"] in out
    assert "lock taken on" not in out


def test_check_mode_takes_no_lock(runs):
    assert runs["rc_check"] == 0, runs["out_check"]
    assert "check mode: no lock taken, nothing recorded; the lock is held now by run %s" % runs["held"]["run_id"] \
        in runs["out_check"]


def test_nothing_changed_by_the_refused_runs(runs):
    before, after = runs["before"], runs["after_pair"]
    assert after["ctl_files"] == before["ctl_files"]
    assert after["nodes"] == before["nodes"]
    assert after["slurmctld"] == before["slurmctld"]


def test_stale_lock_refused_then_broken(runs):
    assert runs["rc_stale"] != 0
    assert "run %s by user bob from host admin-laptop (pid 4242), started 2026-11-30T23:59:00Z" % STALE["run_id"] \
        in runs["out_stale"]
    assert runs["lock_stale"] == STALE
    assert runs["rc_wrong"] != 0
    assert "does not name the lock holder" in runs["out_wrong"]
    assert runs["rc_break"] == 0, runs["out_break"]
    assert "the lock of run %s (user bob from admin-laptop" % STALE["run_id"] in runs["out_break"]
    assert deploy_checks.lock() is None
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01", timeout=30)
    assert info["State"] == "IDLE"
