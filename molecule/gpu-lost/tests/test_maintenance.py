"""gpu-lost, after test_gpu_lost.py: the rolling maintenance (playbooks/maintenance-gres.yml) on the real Slurm.

1. Three GPU nodes, a cap of one node out of service, a job on every node: a sampler on the controller reads every
   node's state twice a second throughout; never more than one node is out of service; each node is drained while
   its job still runs and rebooted (podman kill + start) only after it ended; the jobs finish (COMPLETED, not
   killed, not requeued); each container boots exactly once (a boot counter unit); the site's change is on every
   node; all three end IDLE, not drained; the run record is done.
2. One of gres-gpu02's four H100 vanishes at its next boot (the emulated nvidia-smi drops it): a run over gres-gpu02 and
   gres-gpu03 (cap two, one failure tolerated) fails gres-gpu02 at the readiness check, leaves it drained with the
   reason, and completes gres-gpu03.
"""
import json
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
NODES = ("gres-gpu01", "gres-gpu02", "gres-gpu03")
PLAYBOOK = os.path.join(deploy_checks.PROJECT, "playbooks", "maintenance-gres.yml")
SCENARIO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARGS = ("-e", "hpc_gres_maintenance_reboot=ansible",
        "-e", "hpc_gres_maintenance_reboot_tasks=%s" % os.path.join(SCENARIO, "..", "shared", "tasks",
                                                                    "reboot_container.yml"),
        "-e", "hpc_gres_maintenance_tasks=%s" % os.path.join(SCENARIO, "files", "maintenance-change.yml"),
        "-e", "hpc_gres_maintenance_poll_interval=2", "-e", "hpc_gres_maintenance_register_timeout=120",
        "-e", "hpc_gres_maintenance_reboot_timeout=300")
OUT_OF_SERVICE = ("DRAIN", "DOWN", "REBOOT", "FAIL", "MAINT", "NOT_RESPONDING", "UNKNOWN")
BOOT_UNIT = """[Unit]
Description=Count this container's boots (molecule maintenance test)
[Service]
Type=oneshot
ExecStart=/bin/sh -c 'date +%%s >> /var/lib/maint-boots'
[Install]
WantedBy=multi-user.target
"""
# Twice a second: every node's State, one JSON line per sample, until /tmp/maint-sampler.stop exists.
SAMPLER = r"""
import json, subprocess, time
while True:
    try:
        open('/tmp/maint-sampler.stop')
        break
    except OSError:
        pass
    out = subprocess.run(['scontrol', '-o', 'show', 'node'], capture_output=True, text=True).stdout
    states = {}
    for line in out.splitlines():
        fields = dict(f.split('=', 1) for f in line.split() if '=' in f)
        if 'NodeName' in fields:
            states[fields['NodeName']] = fields.get('State', '?')
    print(json.dumps({'at': time.time(), 'states': states}), flush=True)
    time.sleep(0.5)
"""


def out_of_service(state):
    return state.endswith("*") or any(flag in state for flag in OUT_OF_SERVICE)


def boots(node):
    result = slurm_checks.container(node).run("cat /var/lib/maint-boots")
    return [int(line) for line in result.stdout.split()] if result.rc == 0 else []


def job(job_id):
    return slurm_checks.parse_oneliner(CTL.check_output("scontrol -o show job %s", job_id))


def maintenance(*args):
    return deploy_checks.deploy(*(ARGS + args), playbook=PLAYBOOK)


@pytest.fixture(scope="module")
def runs():
    for node in NODES:
        slurm_checks.wait_for_node(CTL, node)
        slurm_checks.container(node).check_output(
            "cat > /etc/systemd/system/maint-boot-count.service <<'EOF'\n" + BOOT_UNIT + "EOF\n"
            "systemctl enable maint-boot-count.service && rm -f /var/lib/maint-boots")
    # a job on every node, long enough to still run when the waves are planned: none is idle, so the nodes go in
    # name order, and gres-gpu01 is drained while its job runs
    jobs = {}
    for node in NODES:
        out = CTL.check_output("sbatch --parsable -w %s --gres=gpu:1 -o /dev/null --wrap 'sleep 60'", node)
        jobs[node] = out.strip().split(";")[0]
    for node in NODES:
        deadline = time.monotonic() + 60
        while job(jobs[node]).get("JobState") != "RUNNING":
            assert time.monotonic() < deadline, job(jobs[node])
            time.sleep(1)
    CTL.check_output("rm -f /tmp/maint-sampler.stop /tmp/maint-samples && "
                     "cat > /tmp/maint-sampler.py <<'EOF'\n" + SAMPLER + "EOF")
    CTL.check_output("setsid nohup python3 /tmp/maint-sampler.py > /tmp/maint-samples 2>/dev/null < /dev/null &")
    started = time.time()
    rc, out = maintenance("-e", "hpc_gres_maintenance_cap=1")
    CTL.check_output("touch /tmp/maint-sampler.stop")
    time.sleep(1.5)
    samples = [json.loads(line) for line in CTL.check_output("cat /tmp/maint-samples").splitlines() if line]
    first = {"rc": rc, "out": out, "seconds": time.time() - started, "samples": samples,
             "boots": {n: boots(n) for n in NODES}, "jobs": {n: job(j) for n, j in jobs.items()},
             "nodes": {n: slurm_checks.show_node(CTL, n) for n in NODES},
             "change": {n: slurm_checks.container(n).run("cat /var/lib/maint-change").stdout for n in NODES}}

    slurm_checks.container("gres-gpu02").check_output("echo 1 > /etc/slurm-gres-emu/hide-gpu-at-boot")
    started = time.time()
    rc, out = maintenance("--limit", "gres-gpu02,gres-gpu03", "-e", "hpc_gres_maintenance_cap=2",
                          "-e", "hpc_gres_maintenance_max_failures=1")
    second = {"rc": rc, "out": out, "seconds": time.time() - started, "boots": {n: boots(n) for n in NODES},
              "nodes": {n: slurm_checks.show_node(CTL, n) for n in NODES}}
    print("maintenance runs: %.0f s and %.0f s" % (first["seconds"], second["seconds"]))
    return first, second


def test_never_more_than_one_node_out_of_service(runs):
    first = runs[0]
    assert first["rc"] == 0, first["out"][-3000:]
    samples = first["samples"]
    assert len(samples) > 40, "the sampler took %d samples" % len(samples)
    counts = [sum(out_of_service(s["states"].get(n, "?")) for n in NODES) for s in samples]
    print("samples: %d, out of service per sample: %s" % (len(samples), "".join(str(c) for c in counts)))
    assert max(counts) == 1, [s["states"] for s, c in zip(samples, counts) if c > 1][:3]
    # each node was seen out of service, one after the other in name order
    seen = [n for s in samples for n in NODES if out_of_service(s["states"].get(n, "?"))]
    order = [n for i, n in enumerate(seen) if i == 0 or seen[i - 1] != n]
    assert order == list(NODES), order


def test_each_node_was_drained_while_its_job_ran_and_the_jobs_finished(runs):
    first = runs[0]
    drained_busy = {n for s in first["samples"] for n in NODES
                    if "DRAIN" in s["states"].get(n, "") and s["states"][n].split("+")[0] in ("MIXED", "ALLOCATED")}
    assert "gres-gpu01" in drained_busy, "gres-gpu01 never seen drained with its job running"
    for node, record in first["jobs"].items():
        assert record["JobState"] == "COMPLETED" and record["ExitCode"] == "0:0", (node, record)
        assert record.get("Restarts", "0") == "0", (node, record)


def test_each_node_rebooted_once_after_its_job_and_all_are_idle(runs):
    first = runs[0]
    for node in NODES:
        assert len(first["boots"][node]) == 1, (node, first["boots"][node])
        info = first["nodes"][node]
        # (24.11 and later keep the reason of a resumed node until a job runs there)
        assert slurm_checks.state_flags(info) == {"IDLE"}, (node, info)
        assert first["change"][node].startswith("changed by maintenance run "), node
    job_end = int(CTL.check_output("date -d %s +%%s", first["jobs"]["gres-gpu01"]["EndTime"]))
    assert first["boots"]["gres-gpu01"][0] >= job_end
    out = deploy_checks.flat(first["out"])
    assert "wave 1: gres-gpu01 (2 more planned after it)" in out
    assert "0 failed, 0 not done" in out
    run = deploy_checks.run_record(out.split(": lock taken on", 1)[0].rsplit("run ", 1)[1])
    assert run["state"] == "done" and {run["node:" + n]["status"] for n in NODES} == {"done"}
    assert deploy_checks.lock() is None


def test_a_node_failing_readiness_stays_drained_with_the_reason_and_the_other_completes(runs):
    second = runs[1]
    out = deploy_checks.flat(second["out"])
    assert second["rc"] != 0
    failed = second["nodes"]["gres-gpu02"]
    print("gres-gpu02: State=%s Reason=%s" % (failed["State"], failed.get("Reason")))
    assert "DRAIN" in failed["State"]
    assert failed["Reason"].startswith("GPU maintenance: failed: readiness: present: declares 4 h100, nvidia-smi "
                                       "sees 3")
    done = second["nodes"]["gres-gpu03"]
    assert slurm_checks.state_flags(done) == {"IDLE"}
    assert len(second["boots"]["gres-gpu02"]) == 2 and len(second["boots"]["gres-gpu03"]) == 2
    assert len(second["boots"]["gres-gpu01"]) == 1  # not in the --limit
    assert "gres-gpu02: FAILED, left drained: readiness: present: declares 4 h100, nvidia-smi sees 3" in out
    assert "gres-gpu03: done" in out
    assert deploy_checks.lock() is None
