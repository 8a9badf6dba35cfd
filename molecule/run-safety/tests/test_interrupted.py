"""interrupted: a deploy changing gres-gpu01's gres.conf is killed (SIGKILL, as a lost session) at the start of
the first restart play, after the install. It runs after test_concurrent, whose last run left gres-gpu01 without
Cores; the change here puts the inventory's Cores back. The next run takes over its lock, finishes it and ends where an
uninterrupted run ends: the rendered files, slurmd restarted with them, the node IDLE and not drained."""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
NODE = slurm_checks.container("gres-gpu01")
CORES = {"gres-gpu01": {"hpc_gres_gpus": [{"index": 0, "type": "v100", "cores": "0-13"},
                                          {"index": 1, "type": "v100", "cores": "14-27"}]}}
KILL = {"DEPLOY_FAULT_PLAY": "Deploy | restart slurmctld first", "DEPLOY_FAULT_KILL": "1"}


@pytest.fixture(scope="module")
def runs():
    slurm_checks.wait_for_node(CTL, "gres-gpu01")
    before = deploy_checks.snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        change = [deploy_checks.write_inventory(tmp, CORES)]
        rc_killed, out_killed = deploy_checks.deploy(extra_inventories=change, fault=KILL)
        killed = deploy_checks.snapshot()
        lock_killed = deploy_checks.lock()
        rc_next, out_next = deploy_checks.deploy(extra_inventories=change)
        after = deploy_checks.snapshot()
        rendered = deploy_checks.render(extra_inventories=change)
    result = {"before": before, "rc_killed": rc_killed, "out_killed": out_killed, "killed": killed,
              "lock_killed": lock_killed, "killed_run": deploy_checks.run_id(out_killed), "rc_next": rc_next,
              "out_next": out_next, "after": after, "rendered": rendered}
    return {k: deploy_checks.flat(v) if k.startswith("out") else v for k, v in result.items()}


def test_killed_between_install_and_restart(runs):
    assert runs["rc_killed"] != 0
    before, killed = runs["before"], runs["killed"]
    # installed, not restarted: new gres.conf in place, slurmd still the same process, the lock still held
    assert killed["nodes"]["gres-gpu01"]["files"]["gres.conf"] != before["nodes"]["gres-gpu01"]["files"]["gres.conf"]
    assert killed["nodes"]["gres-gpu01"]["slurmd"] == before["nodes"]["gres-gpu01"]["slurmd"]
    assert runs["lock_killed"]["run_id"] == runs["killed_run"]
    assert deploy_checks.run_record(runs["killed_run"])["hosts"]["gres-gpu01"]["files"]["gres.conf"]["changed"]


def test_next_run_takes_over_and_finishes(runs):
    assert runs["rc_next"] == 0, runs["out_next"]
    out = runs["out_next"]
    assert "the lock of run %s" % runs["killed_run"] in out
    assert "taken over: its ansible-playbook is gone" in out
    assert "run %s (deploy by" % runs["killed_run"] in out and "did not finish" in out
    assert "node gres-gpu01: restarting slurmd" in out
    assert deploy_checks.run_record(runs["killed_run"])["state"] == "superseded"
    assert deploy_checks.run_record(deploy_checks.run_id(out))["state"] == "done"
    assert deploy_checks.lock() is None


def test_same_end_state_as_an_uninterrupted_run(runs):
    gres = NODE.file("/etc/slurm/gres.conf").content_string
    assert gres == runs["rendered"]["gres-gpu01/gres.conf"]
    assert NODE.file("/etc/slurm/slurm.conf").content_string == runs["rendered"]["slurm.conf"]
    assert NODE.file("/var/lib/slurm-gres/slurmd/gres.conf").content_string == gres
    slurmd_after = runs["after"]["nodes"]["gres-gpu01"]["slurmd"]
    slurmd_before = runs["before"]["nodes"]["gres-gpu01"]["slurmd"]
    assert slurmd_after["MainPID"] != slurmd_before["MainPID"]


def test_no_node_drained(runs):
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01", timeout=60)
    print("scontrol gres-gpu01: State=%s Gres=%s" % (info["State"], info["Gres"]))
    assert info["State"] == "IDLE"
    assert "Reason" not in info
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:v100": 2}
