"""What restarting slurmctld and slurmd does to jobs, measured on a real Slurm (the loopback instance of the tests).

A job runs on the node and another waits for its GPUs; the script then
  * restarts slurmctld (SIGTERM, start) and measures how long it does not answer `scontrol ping`, whether an
    `sbatch` sent while it is down waits and succeeds, and whether the running and pending jobs are still there;
  * restarts slurmd and measures the time until the node answers again, and whether the running job survived.
Run as root: .venv/bin/python bench/restart_impact.py [--runs 3] [--json FILE]
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "integration"))

from slurm_loopback import NODE, LoopbackSlurm  # noqa: E402


def cmd(slurm, *args):
    return subprocess.run(list(args), env=slurm.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)


def job_state(slurm, job):
    out = cmd(slurm, "squeue", "-h", "-j", job, "-o", "%T").stdout.strip()
    return out or "GONE"


def started(slurm):
    return [f for f in slurm.node_line().split() if f.startswith("SlurmdStartTime=")]


def submit(slurm, gpus, seconds):
    out = cmd(slurm, "sbatch", "--parsable", "-w", NODE, "--gres=gpu:a100:%d" % gpus, "-o", "/dev/null",
              "--wrap", "sleep %d" % seconds)
    return out.returncode, out.stdout.strip()


def one_run(workdir):
    slurm = LoopbackSlurm(workdir)
    slurm.write_slurm_conf("gpu:a100:2,gpu:h100:2")
    slurm.write_gres_conf(2)
    slurm.start_munge()
    result = {}
    try:
        slurm.start_slurmctld()
        slurm.start_slurmd()
        slurm.wait_state("State=IDLE")
        _rc, running = submit(slurm, 2, 600)
        slurm.wait(lambda: job_state(slurm, running) == "RUNNING", "the first job to run")
        _rc, pending = submit(slurm, 1, 10)
        slurm.wait(lambda: job_state(slurm, pending) == "PENDING", "the second job to wait")

        late = {}

        def late_sbatch():
            start = time.monotonic()
            late["rc"], late["job"] = submit(slurm, 1, 10)
            late["seconds"] = time.monotonic() - start

        start = time.monotonic()
        slurm._stop("slurmctld.pid")
        down = time.monotonic()
        sender = threading.Thread(target=late_sbatch)
        sender.start()
        subprocess.run([os.path.join("/usr/sbin", "slurmctld"), "-f", slurm.conf], check=True, env=slurm.env)
        slurm.wait(lambda: " is UP" in slurm.scontrol("ping").stdout, "slurmctld to answer ping", timeout=120)
        result["slurmctld_unanswered_s"] = time.monotonic() - start
        result["slurmctld_stop_s"] = down - start
        sender.join(180)
        result["sbatch_while_down_rc"] = late.get("rc")
        result["sbatch_while_down_s"] = late.get("seconds")
        result["running_job_after_slurmctld"] = job_state(slurm, running)
        result["pending_job_after_slurmctld"] = job_state(slurm, pending)

        before = started(slurm)
        time.sleep(1.1)  # SlurmdStartTime has a resolution of one second
        start = time.monotonic()
        slurm.restart_slurmd()
        slurm.wait(lambda: started(slurm) != before and "NOT_RESPONDING" not in slurm.node_line()
                   and ("State=MIXED" in slurm.node_line() or "State=ALLOCATED" in slurm.node_line()),
                   "the node to register again", timeout=120)
        result["slurmd_back_s"] = time.monotonic() - start
        result["running_job_after_slurmd"] = job_state(slurm, running)
        cmd(slurm, "scancel", running, pending, late.get("job") or "0")
    finally:
        slurm.stop()
    return result


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--json")
    args = parser.parse_args()
    release = subprocess.run(["/usr/sbin/slurmctld", "-V"], stdout=subprocess.PIPE, text=True,
                             check=False).stdout.strip()
    runs = []
    for _run in range(args.runs):
        with tempfile.TemporaryDirectory(prefix="restart-impact-") as workdir:
            runs.append(one_run(workdir))
    print("%s, %d runs" % (release, len(runs)))
    for key in sorted(runs[0]):
        values = [r[key] for r in runs]
        if all(isinstance(v, float) for v in values):
            print("  %-30s median %.1f s (min %.1f, max %.1f)" % (key, statistics.median(values), min(values),
                                                                  max(values)))
        else:
            print("  %-30s %s" % (key, ", ".join(str(v) for v in values)))
    if args.json:
        with open(args.json, "w") as handle:
            json.dump({"release": release, "runs": runs}, handle, indent=1)


if __name__ == "__main__":
    main()
