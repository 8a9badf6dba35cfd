"""default: the users' GPU guide on the real Slurm of the scenario.

The deploy installed USERS.md, the job templates and the login banner on gres-ctl (group
hpc_gres_users_guide). Every request line the guide prints is submitted with ``sbatch --test-only``; the
commands it gives for free GPUs are run; each template is submitted with sbatch as installed and must do what it
claims, measured from the job records and the jobs' own output, not by reading the scripts.

This cluster runs task/none (no device confinement in these containers), so its guide says CUDA_VISIBLE_DEVICES
holds the node-wide numbers; tests/integration/test_job_templates_confined.py runs the same templates under
task/cgroup with ConstrainDevices=yes, where they are numbered from 0.
"""

import os
import re
import sys
import time
from datetime import datetime

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

sys.path.insert(0, os.path.join(deploy_checks.PROJECT, ".cache", "collections"))
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import (  # noqa: E402
    DEFAULT_DIR,
    TEMPLATES,
    page_requests,
)

CTL = slurm_checks.container(deploy_checks.CTL)
TEMPLATE_DIR = DEFAULT_DIR + "/job-templates"
JOBS = "/tmp/guide-jobs"
MOTD = "/etc/motd.d/50-slurm-gpus"
ROLE_FILES = os.path.join(deploy_checks.PROJECT, "roles", "hpc_gres_users_guide", "files", "job-templates")


@pytest.fixture(scope="module")
def rendered():
    files = deploy_checks.render()
    for name in deploy_checks.NODES + (deploy_checks.CTL,):
        slurm_checks.container(name).run("mkdir -p %s", JOBS)
    for name in deploy_checks.NODES:
        slurm_checks.wait_for_node(CTL, name)
    return files


def job_record(job):
    """scontrol's view of a job (first record), {} once it is gone."""
    out = CTL.run("scontrol -o show job %s", job).stdout.strip()
    return slurm_checks.parse_oneliner(out.splitlines()[0]) if out else {}


def submit(*args):
    """sbatch --parsable from the login node, in JOBS; returns the job id."""
    cmd = CTL.run("sbatch --parsable --chdir=%s " + " ".join(["%s"] * len(args)), JOBS, *args)
    assert cmd.rc == 0, "sbatch %s: %s%s" % (" ".join(args), cmd.stdout, cmd.stderr)
    return cmd.stdout.strip().split(";")[0]


def wait_for(predicate, what, timeout=120, interval=2, explain=None):
    """predicate()'s first true value; on timeout an AssertionError with explain()'s text (what Slurm shows)."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError("timed out after %ss waiting for %s%s"
                                 % (timeout, what, "\n" + explain() if explain else ""))
        time.sleep(interval)


def job_story(job, template, node):
    """A job's output file and scontrol's record of it, for a failure message."""
    return "scontrol show job %s:\n%s\n%s-%s.out on %s:\n%s" % (
        job, CTL.run("scontrol show job %s", job).stdout, template, job, node, output_of(job, template, node))


def output_of(job, template, node):
    return slurm_checks.container(node).run("cat %s/%s-%s.out", JOBS, template.split(".")[0], job).stdout


def run_template(template, node, *options):
    """Submit an installed template with sbatch --wait on one node; returns its output."""
    cmd = CTL.run("timeout 120 sbatch --parsable --wait --chdir=%s -w %s " + " ".join(["%s"] * len(options))
                  + " %s/%s", JOBS, node, *(options + (TEMPLATE_DIR, template)))
    assert cmd.rc == 0, "%s on %s: rc %s %s%s" % (template, node, cmd.rc, cmd.stdout, cmd.stderr)
    output = output_of(cmd.stdout.strip().split(";")[0], template, node)
    print("%s on %s:\n%s" % (template, node, output))
    return output


def test_guide_templates_and_banner_are_installed_on_the_login_node(rendered):
    guide = CTL.file(DEFAULT_DIR + "/USERS.md")
    assert guide.content_string == rendered["USERS.md"]
    assert (guide.user, guide.group, guide.mode) == ("root", "root", 0o644)
    for name, _purpose, _key in TEMPLATES:
        installed = CTL.file("%s/%s" % (TEMPLATE_DIR, name))
        with open(os.path.join(ROLE_FILES, name)) as handle:
            assert installed.content_string == handle.read(), name
        assert "`%s/%s`" % (TEMPLATE_DIR, name) in rendered["USERS.md"], "the guide names the installed path"
    assert CTL.file(MOTD).content_string == rendered["USERS.motd"]
    assert "Guide and job templates: %s/USERS.md" % DEFAULT_DIR in rendered["USERS.motd"]
    assert not slurm_checks.container("gres-gpu01").file(DEFAULT_DIR).exists, "only the login node gets it"


def test_every_request_line_of_the_guide_is_accepted_by_slurm(rendered):
    requests = page_requests(rendered["USERS.md"])
    assert "-p main --gres=gpu:v100:2" in requests and "-p urgent --gres=gpu:h100:4" in requests
    refused = slurm_checks.refused_requests(CTL, requests)
    assert not refused, refused
    more = CTL.run("sbatch --test-only -p main --gres=gpu:h100:5 --wrap=true")
    assert more.rc != 0 and "Requested node configuration is not available" in more.stderr


def test_free_gpu_commands_of_the_guide_run(rendered):
    section = rendered["USERS.md"].split("## Which GPUs are free", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    commands = [line for line in section.splitlines() if line and not line.startswith("#")]
    assert [c.split()[0] for c in commands] == ["sinfo", "scontrol", "squeue"]
    outputs = []
    for command in commands:
        cmd = CTL.run(command)
        print("$ %s\n%s" % (command, cmd.stdout))
        assert cmd.rc == 0, (command, cmd.stderr)
        outputs.append(cmd.stdout)
    assert "GRES_USED" in outputs[0] and "gpu:h100:4" in outputs[0] and "gpu:v100:2" in outputs[0]
    assert "Gres=gpu:" in outputs[1] and "GresUsed=gpu:" in outputs[1]
    assert "TRES_PER_NODE" in outputs[2]


def test_the_guide_describes_this_clusters_numbering(rendered):
    assert "are **not** confined" in rendered["USERS.md"]


def test_one_gpu_template_from_0_and_node_wide_next_to_another_job(rendered):
    """Alone on the node the job gets GPU 0; next to a job holding it, the other one, named by its node-wide number
    in CUDA_VISIBLE_DEVICES, as the guide of this unconfined cluster says."""
    node = "gres-gpu01"
    alone = run_template("gpu-single.sbatch", node, "--gres=gpu:v100:1")
    assert "CUDA_VISIBLE_DEVICES=0 (node-wide: SLURM_JOB_GPUS=0)" in alone
    assert "step on %s: CUDA_VISIBLE_DEVICES=0" % node in alone
    blocker = submit("-w", node, "--gres=gpu:v100:1", "--wrap=sleep 300")
    try:
        wait_for(lambda: job_record(blocker).get("JobState") == "RUNNING", "the job holding one v100")
        held = re.search(r"IDX:(\d)", CTL.check_output("scontrol -d show node %s", node)).group(1)
        beside = run_template("gpu-single.sbatch", node, "--gres=gpu:v100:1")
    finally:
        CTL.run("scancel %s", blocker)
    other = str(1 - int(held))
    assert "CUDA_VISIBLE_DEVICES=%s (node-wide: SLURM_JOB_GPUS=%s)" % (other, other) in beside


def test_multi_gpu_template_gets_every_gpu_of_the_node(rendered):
    output = run_template("gpu-multi.sbatch", "gres-gpu02", "--gres=gpu:h100:4")
    assert "4 GPUs, CUDA_VISIBLE_DEVICES=0,1,2,3 (node-wide: SLURM_JOB_GPUS=0,1,2,3)" in output
    default = run_template("gpu-multi.sbatch", "gres-gpu02")
    assert "2 GPUs, CUDA_VISIBLE_DEVICES=" in default


def _intervals(job):
    """(start, end) of every array task that ran, from the job records (end None while running)."""
    out = CTL.check_output("scontrol -o show job %s", job)
    spans = []
    for line in out.splitlines():
        rec = slurm_checks.parse_oneliner(line)
        if not rec.get("ArrayTaskId", "").isdigit() or rec.get("StartTime") in (None, "Unknown", "None"):
            continue
        start = datetime.strptime(rec["StartTime"], "%Y-%m-%dT%H:%M:%S")
        end = None if rec["JobState"] == "RUNNING" else datetime.strptime(rec["EndTime"], "%Y-%m-%dT%H:%M:%S")
        if rec["JobState"] != "RUNNING" and start == end and rec["JobState"] == "CANCELLED":
            continue  # cancelled before it ran
        spans.append((start, end or datetime.max))
    return spans


def _most_at_once(spans):
    """Largest number of intervals [start, end) running at the same time."""
    events = sorted([(s, 1) for s, _end in spans] + [(e, -1) for _start, e in spans], key=lambda ev: (ev[0], ev[1]))
    running = most = 0
    for _when, step in events:
        running += step
        most = max(most, running)
    return most


def test_array_template_never_runs_more_tasks_than_its_limit(rendered):
    gpus = sum(slurm_checks.gres_counts(slurm_checks.show_node(CTL, n)["Gres"]).get(k, 0)
               for n in deploy_checks.NODES for k in ("gpu:v100", "gpu:h100"))
    assert gpus > 4, "the limit must be what holds the array back, not the cluster's size"
    job = submit("%s/gpu-array.sbatch" % TEMPLATE_DIR, "sleep", "3")
    seen = []
    try:
        def enough():
            seen.append(int(CTL.check_output("squeue -h -r -j %s -t RUNNING -o %%i | wc -l", job)))
            return len([s for s in _intervals(job) if s[1] != datetime.max]) >= 12
        wait_for(enough, "12 array tasks done", timeout=150, interval=1)
    finally:
        CTL.run("scancel %s", job)
    spans = _intervals(job)
    most = _most_at_once(spans)
    print("array %s: %d tasks ran, at most %d at once (records); squeue samples: %s" % (job, len(spans), most, seen))
    assert len(spans) >= 12
    assert most == 4, "at most 4 tasks at once (--array=0-99%%4) with %d GPUs free, found %d" % (gpus, most)
    assert max(seen) <= 4


def _run_lines(output, run):
    return [line for line in output.splitlines() if " run %d: " % run in line]


def _checkpoints(lines):
    return [int(m.group(1)) for m in (re.search(r"checkpoint written at step (\d+)", line) for line in lines) if m]


def _resumed(output):
    """The job's output once it says it resumed from its checkpoint, else None (for wait_for)."""
    return output if "run 1: resumed from the checkpoint" in output else None


def test_preemptible_template_checkpoints_is_requeued_and_resumes(rendered):
    """Three runs of the installed template at once, each with CKPT_INTERVAL=3:

    - warned (gres-gpu01, time limit 3 min; the template asks for USR1 120 s before it, so about 60 s in, after
      its periodic checkpoints): receives USR1 from Slurm, checkpoints and requeues itself;
    - requeued (gres-gpu01): ``scontrol requeue`` after two periodic checkpoints: SIGTERM, a last checkpoint,
      requeued by Slurm;
    - preempted (gres-gpu02): a job of partition urgent (PriorityTier 2, PreemptMode=REQUEUE) takes all four GPUs
      after two periodic checkpoints: SIGTERM, a last checkpoint, requeued by Slurm.

    Each resumes from its last checkpoint (same job id, Restarts counted)."""
    template = "%s/gpu-preemptible.sbatch" % TEMPLATE_DIR
    jobs = {
        "warned": (submit("-w", "gres-gpu01", "--time=3", "--export=ALL,CKPT_INTERVAL=3", template), "gres-gpu01"),
        "requeued": (submit("-w", "gres-gpu01", "--export=ALL,CKPT_INTERVAL=3", template), "gres-gpu01"),
        "preempted": (submit("-w", "gres-gpu02", "--export=ALL,CKPT_INTERVAL=3", template), "gres-gpu02"),
    }
    urgent = None

    def run0_checkpoints(name):
        job, node = jobs[name]
        return len(_checkpoints(_run_lines(output_of(job, "gpu-preemptible", node), 0))) >= 2

    outputs = {}
    try:
        story = {name: (lambda job=job, node=node: job_story(job, "gpu-preemptible", node))
                 for name, (job, node) in jobs.items()}
        wait_for(lambda: run0_checkpoints("requeued"), "two periodic checkpoints of the job to requeue", timeout=60,
                 explain=story["requeued"])
        assert CTL.run("scontrol requeue %s", jobs["requeued"][0]).rc == 0
        wait_for(lambda: run0_checkpoints("preempted"), "two periodic checkpoints of the job to preempt", timeout=60,
                 explain=story["preempted"])
        urgent = submit("-p", "urgent", "-w", "gres-gpu02", "--gres=gpu:h100:4", "--wrap=sleep 5")
        for name, (job, node) in jobs.items():
            outputs[name] = wait_for(
                lambda job=job, node=node: _resumed(output_of(job, "gpu-preemptible", node)),
                "job %s (%s) to resume after its requeue" % (job, name), timeout=300, explain=story[name])
            print("%s job %s on %s:\n%s" % (name, job, node, outputs[name]))
            assert int(job_record(job).get("Restarts", 0)) >= 1
    finally:
        CTL.run("scancel %s %s %s", *[job for job, _info in jobs.values()])
    assert job_record(urgent).get("JobState") == "COMPLETED", "the urgent job ran in the preempted job's place"
    for name, signal in (("warned", "USR1 from Slurm: the time limit is near"),
                         ("requeued", "SIGTERM (preemption, scontrol requeue or scancel)"),
                         ("preempted", "SIGTERM (preemption, scontrol requeue or scancel)")):
        first, second = _run_lines(outputs[name], 0), _run_lines(outputs[name], 1)
        assert any(signal in line for line in first), (name, first)
        steps = _checkpoints(first)
        assert steps and steps[-1] > 0, "%s: the checkpoint written on the signal: %s" % (name, first)
        resumed = int(re.search(r"resumed from the checkpoint at step (\d+)", "\n".join(second)).group(1))
        assert resumed == steps[-1], "%s: run 1 resumed at %d, the last checkpoint was %d" % (name, resumed, steps[-1])
    assert any("requeueing" in line for line in _run_lines(outputs["warned"], 0))
    assert "DUE TO JOB REQUEUE" in outputs["requeued"] and "DUE TO PREEMPTION" in outputs["preempted"]
    for name in ("requeued", "preempted"):  # two periodic checkpoints CKPT_INTERVAL apart, then the last one
        assert len(_checkpoints(_run_lines(outputs[name], 0))) >= 3, name
