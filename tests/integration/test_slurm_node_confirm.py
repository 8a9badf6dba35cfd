"""slurm_node_confirm and slurm_node_info against a real slurmctld and slurmd on loopback.

The drain/resume rules are the heart of "never leave a node drained by our own mistake, never resume an admin's
drain"; the states here are produced by the real Slurm 22.05, not by fixtures.
"""

import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import testpaths

import slurm_loopback
from slurm_loopback import NODE

ROOT = testpaths.ROOT
GOOD = {"gpu:a100": 2, "gpu:h100": 2}


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
    slurm_loopback.require("a loopback Slurm cannot run")
    with tempfile.TemporaryDirectory(prefix="slurm-loopback-") as directory:
        slurm = slurm_loopback.LoopbackSlurm(directory)
        try:
            slurm.write_slurm_conf("gpu:a100:2,gpu:h100:2")
            slurm.write_gres_conf(a100=2)
            slurm.start_munge()
            slurm.start_slurmctld()
            slurm.start_slurmd()
            slurm.wait_state("State=IDLE ", "gpu:a100:2")
            yield slurm
        finally:
            slurm.stop()


@pytest.fixture
def healthy(cluster):
    """Every test starts from the good configuration, node IDLE and not drained."""
    if "gpu:a100:2,gpu:h100:2" not in open(cluster.conf).read():
        cluster.write_slurm_conf("gpu:a100:2,gpu:h100:2")
        cluster.restart_slurmctld()
    if "DRAIN" in cluster.node_line():
        cluster.scontrol("update", "NodeName=" + NODE, "State=RESUME")
    cluster.wait_state("State=IDLE ", "gpu:a100:2(")
    return cluster


@pytest.mark.ansible_core
def test_info_parses_the_live_node(healthy):
    result = run_module("slurm_node_info", {"nodes": [NODE, "nosuchnode"], "expected_gres": {NODE: GOOD}}, healthy)
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
    result = run_module("slurm_node_confirm", {"node": NODE, "expected_gres": GOOD, "timeout": 5}, healthy)
    assert not result.get("failed"), result
    assert result["status"] == "ok" and result["changed"] is False


@pytest.mark.ansible_core
def test_refused_registration_fails_fast_with_scontrol_reason(healthy):
    healthy.write_slurm_conf("gpu:a100:3,gpu:h100:2")
    healthy.restart_slurmctld()
    healthy.wait_state("INVALID_REG")
    start = time.monotonic()
    result = run_module("slurm_node_confirm", {"node": NODE, "expected_gres": {"gpu:a100": 3, "gpu:h100": 2},
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

    checked = run_module("slurm_node_confirm", {"node": NODE, "expected_gres": GOOD, "timeout": 5}, healthy,
                         check=True)
    assert checked["changed"] and checked["status"] == "resumed"
    assert "DRAIN" in healthy.node_line(), "check mode must not resume"

    result = run_module("slurm_node_confirm", {"node": NODE, "expected_gres": GOOD, "timeout": 20}, healthy)
    assert not result.get("failed"), result
    assert result["changed"] and result["resumed"] and result["status"] == "resumed"
    assert "State=IDLE " in healthy.node_line()


def test_gres_drain_is_not_resumed_while_the_gres_is_wrong(healthy):
    healthy.write_slurm_conf("gpu:a100:3,gpu:h100:2")
    healthy.restart_slurmctld()
    healthy.wait_state("INVALID_REG")
    result = run_module("slurm_node_confirm", {"node": NODE, "expected_gres": {"gpu:a100": 3, "gpu:h100": 2},
                                               "timeout": 5, "check_gres": False}, healthy)
    assert result["failed"] and not result["resumed"]
    assert "DRAIN" in healthy.node_line()


def test_admin_drain_is_left_alone(healthy):
    healthy.scontrol("update", "NodeName=" + NODE, "State=DRAIN", "Reason=admin: fan swap, ticket=42")
    healthy.wait_state("DRAIN")
    result = run_module("slurm_node_confirm", {"node": NODE, "expected_gres": GOOD, "timeout": 5}, healthy)
    assert not result.get("failed"), result
    assert result["status"] == "ok" and not result["resumed"] and result["changed"] is False
    assert "drained by someone else" in result["message"]
    assert "Reason=admin: fan swap, ticket=42" in healthy.node_line()


def test_waits_for_the_registration_after_a_restart(healthy, tmp_path):
    before = run_module("slurm_node_info", {"nodes": [NODE]}, healthy)["nodes"][NODE]["slurmd_start_time"]
    time.sleep(1.1)  # SlurmdStartTime has a resolution of one second
    # slurmd restarts only once the module polls (its scontrol leaves a line per call): however long ansible
    # takes to start on a loaded machine, the module must first see the old registration and keep waiting.
    polls = tmp_path / "polls"
    scontrol = tmp_path / "scontrol"
    scontrol.write_text('#!/bin/sh\necho "$*" >>%s\nexec %s "$@"\n' % (polls, shutil.which("scontrol")))
    scontrol.chmod(0o755)
    result = {}
    confirm = threading.Thread(target=lambda: result.update(run_module("slurm_node_confirm", {
        "node": NODE, "expected_gres": GOOD, "since": before, "timeout": 60, "interval": 0.5,
        "scontrol": str(scontrol)}, healthy)))
    confirm.start()
    try:
        deadline = time.monotonic() + 120
        while not polls.exists() and confirm.is_alive() and time.monotonic() < deadline:
            time.sleep(0.1)
        assert polls.exists(), "slurm_node_confirm never ran scontrol"
        time.sleep(1)
        healthy.restart_slurmd()
    finally:
        confirm.join()
    assert not result.get("failed"), result
    assert result["status"] == "ok"
    assert result["node"]["slurmd_start_time"] != before
    assert len(polls.read_text().splitlines()) >= 2, "accepted the registration from before the restart"


def test_times_out_when_slurmd_does_not_come_back(healthy):
    before = run_module("slurm_node_info", {"nodes": [NODE]}, healthy)["nodes"][NODE]["slurmd_start_time"]
    result = run_module("slurm_node_confirm", {"node": NODE, "expected_gres": GOOD, "since": before,
                                               "timeout": 3, "interval": 0.5}, healthy)
    assert result["failed"] and result["status"] == "timeout"
    assert "not registered as expected within 3 s" in result["msg"]
    assert "has not registered since the restart" in result["msg"]
