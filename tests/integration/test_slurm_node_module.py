"""slurm_node (info, registered, drained, resumed) against a real slurmctld and slurmd on loopback.

The drain/resume rules are the heart of "never leave a node drained by our own mistake, never resume an admin's
drain"; the states here are produced by the real Slurm 22.05, not by fixtures.
"""

import json
import os
import shutil
import subprocess
import sys
import threading
import time

import pytest
import testpaths

import slurm_loopback
from slurm_loopback import NODE

ROOT = testpaths.ROOT
GOOD = {"gpu:a100": 2, "gpu:h100": 2}
GOOD_SPEC = "gpu:a100:2,gpu:h100:2"


def run_module(name, args, cluster, check=False):
    """Run hpc.slurm_gres.<name> on localhost through ansible; returns the task result."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="ansible.posix.json",
               ANSIBLE_LOAD_CALLBACK_PLUGINS="1", ANSIBLE_NOCOLOR="1")
    args = dict(args, slurm_conf=cluster.conf)
    ansible = os.path.join(os.path.dirname(sys.executable), "ansible")
    cmd = [ansible, "localhost", "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + sys.executable,
           "-m", "hpc.slurm_gres." + name,
           "-a", json.dumps(args)]
    if check:
        cmd.append("--check")
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          check=False)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("ansible printed no JSON (rc %d):\n%s\n%s" % (proc.returncode, proc.stdout, proc.stderr))
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


@pytest.fixture(scope="module")
def cluster():
    with slurm_loopback.running("gpu:a100:2,gpu:h100:2", 2, "", "gpu:a100:2") as slurm:
        yield slurm


@pytest.fixture
def healthy(cluster):
    """Every test starts from the good configuration, node IDLE and not drained."""
    if cluster.gres_declared != GOOD_SPEC or cluster.slurmd_timeout != 300:
        cluster.write_slurm_conf(GOOD_SPEC)
        cluster.restart_slurmctld()
    if "DRAIN" in cluster.node_line():
        cluster.scontrol("update", "NodeName=" + NODE, "State=RESUME")
    cluster.wait_state("State=IDLE ", "gpu:a100:2(")
    return cluster


@pytest.mark.ansible_core
def test_info_parses_the_live_node(healthy):
    result = run_module("slurm_node", {"nodes": [NODE, "nosuchnode"], "expected_gres": {NODE: GOOD}}, healthy)
    assert not result.get("failed"), result
    node = result["nodes"][NODE]
    assert node["state_base"] == "IDLE" and node["state_flags"] == []
    assert node["gres"] == GOOD
    assert node["CPUTot"] == "16"
    assert node["slurmd_start_time"]
    assert result["nodes"]["nosuchnode"] is None
    assert result["verdicts"][NODE]["status"] == "ok"


@pytest.mark.ansible_core
def test_registered_node_is_ok_and_unchanged(healthy):
    result = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": GOOD, "timeout": 5}, healthy)
    assert not result.get("failed"), result
    assert result["status"] == "ok" and result["changed"] is False


@pytest.mark.ansible_core
def test_refused_registration_fails_fast_with_scontrol_reason(healthy):
    healthy.write_slurm_conf("gpu:a100:3,gpu:h100:2")
    healthy.restart_slurmctld()
    healthy.wait_state("INVALID_REG")
    start = time.monotonic()
    result = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": {"gpu:a100": 3, "gpu:h100": 2},
                                       "timeout": 60}, healthy)
    assert result["failed"] and result["status"] == "failed"
    assert "gres/gpu count reported lower than configured (4 < 5)" in result["msg"]
    assert "INVALID_REG" in result["msg"]
    assert time.monotonic() - start < 30, "a refused registration must not wait for the timeout"


def test_gres_drain_is_resumed_once_the_node_registers_as_declared(healthy):
    # slurmctld drains the node for a count mismatch, then learns the right count again: the drain stays
    healthy.write_slurm_conf("gpu:a100:3,gpu:h100:2")
    healthy.restart_slurmctld()
    healthy.wait_state("INVALID_REG")
    healthy.write_slurm_conf("gpu:a100:2,gpu:h100:2")
    healthy.restart_slurmctld()
    healthy.wait_state("State=IDLE+DRAIN ", "count reported lower")
    assert "INVALID_REG" not in healthy.node_line()

    checked = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": GOOD, "timeout": 5}, healthy,
                         check=True)
    assert checked["changed"] and checked["status"] == "resumed"
    assert "DRAIN" in healthy.node_line(), "check mode must not resume"

    result = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": GOOD, "timeout": 20}, healthy)
    assert not result.get("failed"), result
    assert result["changed"] and result["resumed"] and result["status"] == "resumed"
    assert "State=IDLE " in healthy.node_line()


def test_gres_drain_is_not_resumed_while_the_gres_is_wrong(healthy):
    healthy.write_slurm_conf("gpu:a100:3,gpu:h100:2")
    healthy.restart_slurmctld()
    healthy.wait_state("INVALID_REG")
    result = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": {"gpu:a100": 3, "gpu:h100": 2},
                                       "timeout": 5, "check_gres": False}, healthy)
    assert result["failed"] and not result["resumed"]
    assert "DRAIN" in healthy.node_line()


def test_admin_drain_is_left_alone(healthy):
    healthy.scontrol("update", "NodeName=" + NODE, "State=DRAIN", "Reason=admin: fan swap, ticket=42")
    healthy.wait_state("DRAIN")
    result = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": GOOD, "timeout": 5}, healthy)
    assert not result.get("failed"), result
    assert result["status"] == "ok" and not result["resumed"] and result["changed"] is False
    assert "drained by someone else" in result["message"]
    assert "Reason=admin: fan swap, ticket=42" in healthy.node_line()


def wait_across_a_restart(cluster, tmp_path, args):
    """Run slurm_node with ``args`` (state registered) and restart slurmd once it polls; (before, result, polls).

    slurmd restarts only once the module polls (its scontrol leaves a line per call): however long ansible takes
    to start on a loaded machine, the module must first see the old registration and keep waiting."""
    before = run_module("slurm_node", {"nodes": [NODE]}, cluster)["nodes"][NODE]["slurmd_start_time"]
    time.sleep(1.1)  # SlurmdStartTime has a resolution of one second
    polls = tmp_path / "polls"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text('#!/bin/sh\necho "$*" >>%s\nexec %s "$@"\n' % (polls, shutil.which("scontrol")))
    scontrol.chmod(0o755)
    result = {}
    args = {k: (v if v != "BEFORE" else before) for k, v in args.items()}
    if "registrations" in args:
        args["registrations"] = {n: dict(r, since=before if r.get("since") == "BEFORE" else r.get("since"))
                                 for n, r in args["registrations"].items()}
    confirm = threading.Thread(target=lambda: result.update(run_module("slurm_node", dict(
        args, state="registered", timeout=60, interval=0.5, scontrol=str(scontrol)), cluster)))
    confirm.start()
    try:
        deadline = time.monotonic() + 120
        while not polls.exists() and confirm.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert polls.exists(), "slurm_node never ran scontrol"
        time.sleep(1)
        cluster.restart_slurmd()
    finally:
        confirm.join()
    return before, result, polls.read_text().splitlines()


def test_waits_for_the_registration_after_a_restart(healthy, tmp_path):
    before, result, polls = wait_across_a_restart(healthy, tmp_path, {"node": NODE, "gres": GOOD, "since": "BEFORE"})
    assert not result.get("failed"), result
    assert result["status"] == "ok"
    assert result["node"]["slurmd_start_time"] != before
    assert len(polls) >= 2, "accepted the registration from before the restart"


def test_a_batch_waits_for_its_restarted_node_and_fails_naming_the_one_slurmctld_does_not_know(healthy, tmp_path):
    batch = {NODE: {"gres": GOOD, "since": "BEFORE"}, "nosuchnode": {"gres": GOOD, "since": "None"}}
    before, result, polls = wait_across_a_restart(healthy, tmp_path, {"registrations": batch})
    assert result["failed"] and result["status"] == "failed", result
    assert result["msg"] == "node nosuchnode: not known to slurmctld (is it in slurm.conf on the controller?)"
    mine = result["registrations"][NODE]
    assert mine["status"] == "ok" and mine["node"]["slurmd_start_time"] != before
    # one read per poll for the whole batch, the unknown node settled by the first
    assert polls[0] == "-o show node %s,nosuchnode" % NODE
    assert len(polls) >= 2 and all(call == "-o show node %s" % NODE for call in polls[1:]), polls


def test_times_out_when_slurmd_does_not_come_back(healthy):
    before = run_module("slurm_node", {"nodes": [NODE]}, healthy)["nodes"][NODE]["slurmd_start_time"]
    result = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": GOOD, "since": before,
                                       "timeout": 3, "interval": 0.5}, healthy)
    assert result["failed"] and result["status"] == "timeout"
    assert "not registered as expected within 3 s" in result["msg"]
    assert "has not registered since the restart" in result["msg"]


# --- slurm_node drained and resumed: the runbook's drain and resume, against the real slurmctld ---------------------------------

def drain(cluster, check=False, **args):
    return run_module("slurm_node", dict({"state": "drained", "node": NODE, "reason": "MIG reconfiguration"}, **args), cluster,
                      check=check)


def test_drain_sets_the_reason_once_and_resume_lifts_only_that_drain(healthy):
    checked = drain(healthy, check=True)
    assert checked["changed"] and checked["ours"]
    assert "DRAIN" not in healthy.node_line(), "check mode must not drain"

    first = drain(healthy)
    assert not first.get("failed"), first
    assert first["changed"] and first["ours"] and first["drained_by_other"] is None
    assert "DRAIN" in first["node"]["state_flags"] and first["node"]["reason"] == "MIG reconfiguration"
    again = drain(healthy)
    assert again["changed"] is False and again["ours"], "a second drain changes nothing"

    resumed = drain(healthy, state="resumed")
    assert resumed["changed"] and resumed["ours"]
    healthy.wait_state("State=IDLE ")
    assert drain(healthy, state="resumed")["changed"] is False


def test_an_admins_drain_is_kept_and_never_resumed(healthy):
    healthy.scontrol("update", "NodeName=" + NODE, "State=DRAIN", "Reason=admin: fan swap")
    healthy.wait_state("DRAIN")
    kept = drain(healthy)
    assert kept["changed"] is False and kept["ours"] is False
    assert kept["drained_by_other"] == "admin: fan swap"
    left = drain(healthy, state="resumed")
    assert left["changed"] is False and left["drained_by_other"] == "admin: fan swap"
    assert "Reason=admin: fan swap" in healthy.node_line()


def test_waiting_for_jobs_fails_naming_them_and_the_node_stays_drained(healthy):
    job = subprocess.run(["sbatch", "--parsable", "--nodelist=" + NODE, "--job-name=hold", "--output=/dev/null",
                          "--wrap", "sleep 120"], env=healthy.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True, check=False)
    assert job.returncode == 0, job.stderr
    job_id = job.stdout.strip().split(";")[0]
    try:
        healthy.wait(lambda: "RUNNING" in subprocess.run(["squeue", "--noheader", "--jobs=" + job_id, "--format=%T"],
                                                         env=healthy.env, stdout=subprocess.PIPE, text=True, check=False).stdout,
                     "the job to run")
        result = drain(healthy, wait_for_jobs=True, timeout=3, interval=0.5)
        assert result["failed"]
        assert ("node %s: expected no running jobs after 3 s, found job %s (user root, RUNNING, hold); the node "
                "stays drained (MIG reconfiguration)" % (NODE, job_id)) in result["msg"]
        assert "Reason=MIG reconfiguration" in healthy.node_line()
    finally:
        subprocess.run(["scancel", job_id], env=healthy.env, check=False)
    done = drain(healthy, wait_for_jobs=True, timeout=60, interval=0.5)
    assert not done.get("failed"), done
    assert done["jobs"] == [] and done["changed"] is False and done["ours"]


def test_a_drained_node_set_down_while_slurmd_was_stopped_registers_and_is_resumed(healthy):
    # The MIG runbook drains the node, then keeps slurmd stopped (layout, verification, installs, slurmctld restart)
    # for longer than SlurmdTimeout on a loaded machine: slurmctld sets it DOWN ("Nodes ... not responding, setting
    # DOWN") and keeps the drain's reason, so ReturnToService=1 never returns it. Its fresh registration is judged
    # at once (not waited on until the timeout); the runbook's resume then brings it back.
    healthy.write_slurm_conf(GOOD_SPEC, slurmd_timeout=6)
    healthy.scontrol("reconfigure")
    try:
        first = drain(healthy)
        assert first["ours"], first
        before = first["node"]["slurmd_start_time"]
        healthy.stop_slurmd()
        healthy.wait_state("State=DOWN", "Reason=MIG reconfiguration", timeout=90)
        healthy.start_slurmd()
        start = time.monotonic()
        result = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": GOOD, "since": before,
                                           "timeout": 90, "interval": 0.5}, healthy)
        assert not result.get("failed"), result.get("msg")
        assert result["status"] == "ok" and not result["resumed"], result
        assert result["node"]["state_base"] == "DOWN" and result["node"]["slurmd_start_time"] != before
        assert "DOWN" in result["message"] and "MIG reconfiguration" in result["message"]
        assert time.monotonic() - start < 60, "a registered node must not be waited on until the timeout"

        resumed = drain(healthy, state="resumed")
        assert not resumed.get("failed") and resumed["changed"] and resumed["ours"], resumed
        final = run_module("slurm_node", {"state": "registered", "node": NODE, "gres": GOOD, "timeout": 60,
                                          "interval": 0.5}, healthy)
        assert final["status"] == "ok", final
        assert final["node"]["state_base"] == "IDLE" and final["node"]["state_flags"] == [], final["node"]
    finally:
        healthy.write_slurm_conf(GOOD_SPEC)
        healthy.restart_slurmctld()
        healthy.restart_slurmd()
        if "DOWN" in healthy.node_line() or "DRAIN" in healthy.node_line():
            healthy.scontrol("update", "NodeName=" + NODE, "State=RESUME")
