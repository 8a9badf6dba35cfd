"""What slurmctld does to jobs when slurm.conf changes under them, on a real Slurm (the loopback instance): the facts
the deploy's gate refuses on (a partition removed; jobs on a node whose CPU layout or GPU count changes). The
collection's own rule is run on the same two files and node states, so a Slurm release that behaves otherwise, or a
rule that misses the change, fails here. Recorded first by hand on 22.05.8 (docs/dev/real-slurm-job-loss.md)."""
import os
import re
import subprocess
import time

import pytest

import slurm_loopback
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.restart_plan import (
    gres_jobs_killed,
    partitions_removed,
    slurm_conf_changes,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_show_node
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.deploy_plan import jobs_refusal, node_jobs

EXTRA = "PartitionName=extra Nodes=ALL MaxTime=INFINITE State=UP\n"


@pytest.fixture
def slurm():
    with slurm_loopback.running(extra_conf=EXTRA) as instance:
        try:
            yield instance
        finally:
            subprocess.run(["scancel", "--user=root"], env=instance.env, check=False, capture_output=True)


def sbatch(slurm, *args):
    proc = subprocess.run(["sbatch", "--parsable", "-o", "/dev/null"] + list(args) + ["--wrap", "sleep 300"],
                          env=slurm.env, capture_output=True, text=True, check=True)
    return proc.stdout.strip().split(";")[0]


def job(slurm, job_id):
    out = slurm.scontrol("-o", "show", "job", job_id).stdout
    return {key: (re.search(r"\b%s=(\S+)" % key, out) or [None, None])[1] for key in ("JobState", "Restarts")}


def wait_job(slurm, job_id, predicate, what, timeout=40):
    deadline = time.time() + timeout
    while time.time() < deadline:
        state = job(slurm, job_id)
        if predicate(state):
            return state
        time.sleep(0.5)
    raise AssertionError("job %s: %s not reached: %r\n%s" % (job_id, what, job(slurm, job_id), slurm.log_tail()))


def edit_conf(slurm, old, new):
    with open(slurm.conf) as handle:
        before = handle.read()
    assert old in before
    with open(slurm.conf, "w") as handle:
        handle.write(before.replace(old, new))
    return before, before.replace(old, new)


def test_the_deploys_refusal_reads_an_idle_node_and_a_cpu_only_job_as_slurmctld_shows_them(slurm):
    def read():
        return parse_show_node(slurm.scontrol("-d", "show", "node", slurm_loopback.NODE).stdout)[slurm_loopback.NODE]

    gres_loss = {"why": ["x"], "gres": ["gpu"], "cores": False}
    idle = read()
    assert idle["state_base"] == "IDLE" and node_jobs(idle) is None and node_jobs(idle, gres_loss) is None, idle
    cpu_only = sbatch(slurm, "-c", "2")
    wait_job(slurm, cpu_only, lambda s: s["JobState"] == "RUNNING", "RUNNING")
    busy = read()
    # a GPU count change leaves a CPU-only job running (gres.c revalidates the jobs holding GPUs): not refused;
    # a cores change ends it: refused
    assert node_jobs(busy, gres_loss) is None, busy
    assert node_jobs(busy, {"why": ["x"], "gres": [], "cores": True}).startswith("State=MIXED"), busy


def test_a_partition_slurmctld_no_longer_has_fails_its_jobs_even_on_a_reconfigure(slurm):
    doomed = sbatch(slurm, "-p", "extra", "-c", "2")
    kept = sbatch(slurm, "-p", "main", "-c", "2")
    for job_id in (doomed, kept):
        wait_job(slurm, job_id, lambda s: s["JobState"] == "RUNNING", "RUNNING")
    before, after = edit_conf(slurm, EXTRA, "")
    assert partitions_removed(before, after) == ["extra"]  # the gate refuses this render
    assert slurm.scontrol("reconfigure").returncode == 0
    failed = wait_job(slurm, doomed, lambda s: s["JobState"] not in ("RUNNING", "COMPLETING"),
                      "the end of the running job")
    assert failed == {"JobState": "NODE_FAIL", "Restarts": "0"}  # failed, not requeued
    assert job(slurm, kept)["JobState"] == "RUNNING"
    with open(os.path.join(slurm.dir, "slurmctld.log")) as handle:
        assert "Invalid partition (extra) for JobId=%s" % doomed in handle.read()


def test_a_core_count_change_aborts_the_jobs_running_on_the_node_at_the_restart(slurm):
    running = sbatch(slurm, "-c", "4")
    wait_job(slurm, running, lambda s: s["JobState"] == "RUNNING", "RUNNING")
    before, after = edit_conf(slurm, "CoresPerSocket=4", "CoresPerSocket=8")
    # the deploy's report names the node, its refusal counts every job there
    assert slurm_conf_changes(before, after)["cores_changed"] == {slurm_loopback.NODE: [8, 16]}
    slurm.restart_slurmctld()
    requeued = wait_job(slurm, running, lambda s: s["Restarts"] != "0" or s["JobState"] != "RUNNING",
                        "the abort of the running job")
    assert requeued["Restarts"] == "1" and requeued["JobState"] != "RUNNING"  # a batch job: requeued
    with open(os.path.join(slurm.dir, "slurmctld.log")) as handle:
        assert ("Aborting JobId=%s due to change in socket/core configuration of allocated nodes" % running
                in handle.read())


def test_the_same_cores_split_otherwise_abort_nothing_at_the_restart(slurm):
    # valid_job_resources compares Sockets x CoresPerSocket: 2 x 4 read as 4 x 2 keeps the job (the deploy does not
    # refuse it either)
    running = sbatch(slurm, "-c", "2")
    wait_job(slurm, running, lambda s: s["JobState"] == "RUNNING", "RUNNING")
    before, after = edit_conf(slurm, "Sockets=2 CoresPerSocket=4", "Sockets=4 CoresPerSocket=2")
    assert slurm_conf_changes(before, after)["cores_changed"] == {}
    slurm.restart_slurmctld()
    time.sleep(5)
    assert job(slurm, running) == {"JobState": "RUNNING", "Restarts": "0"}, slurm.log_tail()
    with open(os.path.join(slurm.dir, "slurmctld.log")) as handle:
        assert "Aborting JobId=%s" % running not in handle.read()


def test_a_gpu_count_change_kills_the_gpu_jobs_of_the_node_at_the_restart(slurm):
    # one GPU of type a100 less: the job on an h100 is killed too (the node's gres/gpu count is compared)
    on_a100 = sbatch(slurm, "--gres=gpu:a100:1")
    on_h100 = sbatch(slurm, "--gres=gpu:h100:1")
    cpu_only = sbatch(slurm, "-c", "2")
    for job_id in (on_a100, on_h100, cpu_only):
        wait_job(slurm, job_id, lambda s: s["JobState"] == "RUNNING", "RUNNING")
    before, after = edit_conf(slurm, "Gres=gpu:a100:2,gpu:h100:2", "Gres=gpu:a100:1,gpu:h100:2")
    assert gres_jobs_killed(slurm_conf_changes(before, after), "22.05")["count"] == {slurm_loopback.NODE: ["gpu"]}
    # the deploy's refusal reads the node as this slurmctld shows it (scontrol -d) with these jobs running
    nodes = parse_show_node(slurm.scontrol("-d", "show", "node", slurm_loopback.NODE).stdout)
    loss = {"why": ["its GRES count changes (gpu:a100 2 -> 1)"], "gres": ["gpu"], "cores": False}
    assert "GresUsed=gpu:a100:1" in node_jobs(nodes[slurm_loopback.NODE], loss), nodes
    plan = {"names": {}, "job_loss": {slurm_loopback.NODE: loss}}
    assert "running jobs: expected none where its GRES count changes" in jobs_refusal(plan, {"nodes": nodes})
    slurm.write_gres_conf(a100=1)
    slurm.restart_slurmctld()
    for job_id in (on_a100, on_h100):
        requeued = wait_job(slurm, job_id, lambda s: s["Restarts"] != "0" or s["JobState"] != "RUNNING",
                            "the abort of the running job")
        assert requeued["Restarts"] == "1" and requeued["JobState"] != "RUNNING"  # batch jobs: requeued
    assert job(slurm, cpu_only) == {"JobState": "RUNNING", "Restarts": "0"}
    with open(os.path.join(slurm.dir, "slurmctld.log")) as handle:
        log = handle.read()
    assert "Killing job %s: gres/gpu count mismatch on node %s (4 != 3)" % (on_h100, slurm_loopback.NODE) in log
