"""gpu-lost, the node health check on the real Slurm (issue 24): gres-gpu02 is an NVSwitch node (prepare.yml: its
GPUs at the bus ids of a recorded p5 lspci, that lspci, a stand-in nvidia-fabricmanager unit). A deploy with the
health check every HEALTH_INTERVAL seconds, then, one after another on that node, each fault of
tests/emulator/health_node.FAULTS (the definitions tests/integration/test_health_program.py replays on a loopback
Slurm) is injected: slurmd's own HealthCheckProgram must drain the node within one interval with a reason naming
check and GPU, a GPU job submitted meanwhile must wait, and clearing the fault must resume the node and let the job
run. An application Xid and an admin's drain change nothing; a deploy while a fault is on is refused before any
restart. The last deploy puts the scenario inventory back (HealthCheckInterval 300, no recorded lspci), so the
other test modules find the cluster as converge left it, whichever order they run in.
"""

import base64
import calendar
import json
import os
import sys
import tempfile
import time

import pytest

HERE = os.path.dirname(__file__)
sys.path.insert(0, os.path.join(HERE, "..", "..", "shared", "tests"))
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "tests", "emulator"))
import deploy_checks  # noqa: E402
import health_node  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
NAME = "gres-gpu02"
NODE = slurm_checks.container(NAME)
PROFILE = "/etc/slurm-gres-emu/nvidia-smi-profile.json"
LSPCI = "/etc/slurm-gres-emu/lspci.txt"  # prepare.yml: the recorded p5 lspci of this node's GPUs and NVSwitches
KERNEL_LOG = "/var/log/hpc-gres-emu/kernel.log"  # prepare.yml: empty on every slurmd host
ACK_FILE = "/etc/hpc-gres/xid-acknowledgements"
PROGRAM = "/usr/local/sbin/hpc-gres-health"
PREFIX = "hpc-gres-health: "
HEALTH_INTERVAL = 5
# Beyond one interval: the program's run (two emulated nvidia-smi calls, systemctl, scontrol: about 0.2 s) and
# slurmctld's update, judged by the drain's own time stamp (whole seconds, cut); SLACK adds this test's polling.
RUN = 3
SLACK = 5
POLL = 0.5
FATAL_XID_GPU = ("00000000:64:00.0", 1)  # where the recorded Xid 119 lands on this node (GPU 1)
APP_XID_GPU = "00000000:75:00.0"
# fault: (check, GPU) the drain reason must name first (None: node-wide), as health_node.FAULTS says for this node
FAULTS = (
    ("gpu-missing-on-pci", ("gpu_count", "00000000:86:00.0")),
    ("fabric-manager-stopped", ("fabric", 0)),
    ("xid-fatal", ("xid", FATAL_XID_GPU[1])),
    ("remapped-rows-pending", ("memory", 2)),
    ("nvml-driver-mismatch", ("nvml", None)),
)


def health_inventory(directory):
    """The health check as these tests need it: every HEALTH_INTERVAL s, the kernel log from KERNEL_LOG, and on
    gres-gpu02 the recorded lspci for the program and for the deploy's readiness checks."""
    readiness = {"kernel_log": KERNEL_LOG, "ack_file": ACK_FILE, "timeout": 10, "lspci": LSPCI}
    return deploy_checks.write_inventory(
        directory, {NAME: {"hpc_gres_slurmd_health_args": ["--lspci", LSPCI],
                           "hpc_gres_verify_readiness_options": readiness}},
        group_vars={"all": {"hpc_gres_health_interval": HEALTH_INTERVAL, "hpc_gres_health_kernel_log": KERNEL_LOG}})


# ----------------------------------------------------------------------------------------------------
# the node


def put(path, text, append=False):
    """Write (atomically: the health check may read it meanwhile) or append ``text`` to a file on gres-gpu02."""
    data = base64.b64encode(text.encode()).decode()
    if append:
        NODE.check_output("printf '%%s' %s | base64 -d >> %s", data, path)
    else:
        NODE.check_output("printf '%%s' %s | base64 -d > %s.new && mv %s.new %s", data, path, path, path)


def set_profile(profile):
    """The emulator's profile on the node, every recorded text inlined (the node has no fixtures)."""
    with tempfile.TemporaryDirectory() as tmp:
        path = health_node.write_profile(os.path.join(tmp, "profile.json"), profile, inline=True)
        with open(path) as handle:
            put(PROFILE, handle.read())


def with_fault(profile, name):
    changed = json.loads(json.dumps(profile))
    health_node.FAULTS[name][1](changed)
    return changed


def recorded_kernel_log(name, bus_id):
    scratch = {}
    health_node.FAULTS[name][1](scratch)
    return health_node.kernel_log_text(scratch["kernel_log"], bus_id)


def node():
    return slurm_checks.show_node(CTL, NAME)


def drained(info):
    return bool(slurm_checks.state_flags(info) & {"DRAIN", "DRAINED", "DRAINING"})


def ours(info):
    return drained(info) and (info.get("Reason") or "").startswith(PREFIX)


def in_service(info):
    flags = slurm_checks.state_flags(info)
    return bool(flags & {"IDLE", "ALLOCATED", "MIXED"}) and not drained(info) and "NOT_RESPONDING" not in flags


def wait(predicate, timeout):
    """(last node record, seconds) once ``predicate(record)`` holds; (record, None) after ``timeout``."""
    start = time.monotonic()
    while True:
        info = node()
        if predicate(info):
            return info, round(time.monotonic() - start, 1)
        if time.monotonic() - start > timeout:
            return info, None
        time.sleep(POLL)


def watch(seconds):
    """Every node record seen during ``seconds``."""
    seen, end = [], time.monotonic() + seconds
    while time.monotonic() < end:
        seen.append(node())
        time.sleep(POLL)
    return seen


def submit():
    out = CTL.check_output("sbatch --parsable -w %s --gres=gpu:h100:1 -o /dev/null --wrap true", NAME)
    return out.strip().split(";")[0]


def job(job_id):
    return slurm_checks.parse_oneliner(CTL.check_output("scontrol -o show job %s", job_id))


def wait_job_done(job_id, timeout=90):
    start = time.monotonic()
    while True:
        record = job(job_id)
        if record.get("JobState") in ("COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL"):
            return record, round(time.monotonic() - start, 1)
        if time.monotonic() - start > timeout:
            return record, None
        time.sleep(POLL)


def report(*options):
    """The program by hand on the node (the installed launcher; ``--report`` wins over its ``--slurm``)."""
    result = NODE.run("%s --report %s" % (PROGRAM, " ".join(options)))
    return result.rc, result.stdout


def ack_line():
    """The acknowledgement line the xid finding's hint gives (what an admin copies after resetting the GPU)."""
    _rc, out = report("--json")
    for finding in json.loads(out)["verdict"]["errors"]:
        if finding["check"] == "xid" and "acknowledge with the line '" in (finding.get("hint") or ""):
            return finding["hint"].split("acknowledge with the line '", 1)[1].split("'", 1)[0]
    raise AssertionError("no acknowledgement line in the xid finding:\n%s" % out)


# ----------------------------------------------------------------------------------------------------
# the run


class Faults(object):
    """Inject and clear each fault on gres-gpu02 as the node would show it."""

    def __init__(self, healthy):
        self.healthy = healthy

    def inject(self, name):
        if name == "fabric-manager-stopped":
            NODE.check_output("systemctl stop nvidia-fabricmanager")  # -q follows the unit (fabric_manager_unit)
        elif name in ("xid-fatal", "xid-application"):
            bus = FATAL_XID_GPU[0] if name == "xid-fatal" else APP_XID_GPU
            put(KERNEL_LOG, recorded_kernel_log(name, bus), append=True)
        else:
            set_profile(with_fault(self.healthy, name))

    def clear(self, name):
        if name == "fabric-manager-stopped":
            NODE.check_output("systemctl start nvidia-fabricmanager")
        elif name == "xid-fatal":
            # after `nvidia-smi -r`: the admin appends the line the finding's hint gives
            line = ack_line()
            NODE.check_output("mkdir -p %s", os.path.dirname(ACK_FILE))
            put(ACK_FILE, line + "  # GPU reset (molecule gpu-lost)\n", append=True)
            return line
        else:
            set_profile(self.healthy)
        return None

    def clear_all(self):
        set_profile(self.healthy)
        NODE.run("systemctl start nvidia-fabricmanager")
        NODE.run(": > %s", KERNEL_LOG)
        NODE.run("rm -f %s", ACK_FILE)


def fault_cycle(faults, name, during=None):
    """Inject, wait for the drain, submit a GPU job, (``during()``), clear, wait for the resume and the job."""
    out = {"fault": name}
    start = time.monotonic()
    injected = time.time()
    faults.inject(name)
    info, out["drained_after"] = wait(ours, 3 * HEALTH_INTERVAL + 10)
    out["drained"] = info
    out["drain_delay"] = drain_time(info) - injected if ours(info) else None
    out["job"] = submit()
    if during is not None:
        out["during"] = during()
    time.sleep(1)
    out["job_while_drained"] = job(out["job"])
    out["node_while_drained"] = node()
    # what slurmd itself logs about its HealthCheckProgram (for the record in docs/health.md)
    out["slurmd_log"] = NODE.run("grep -a -i 'health' /var/log/slurm/slurmd.log | tail -n 2").stdout
    out["ack"] = faults.clear(name)
    cleared = time.monotonic()
    info, out["resumed_after"] = wait(in_service, 3 * HEALTH_INTERVAL + 10)
    out["resumed"] = info
    out["job_done"], out["job_ran_after"] = wait_job_done(out["job"])
    out["total"] = round(time.monotonic() - start, 1)
    out["clear_to_resume"] = round(time.monotonic() - cleared, 1)
    print("slurmd.log: %s" % out["slurmd_log"].strip())
    print("%-24s drained after %s s (its time stamp %s s after the fault): %s" % (
        name, out["drained_after"], None if out["drain_delay"] is None else round(out["drain_delay"], 1),
        info_reason(out["drained"])))
    print("%24s job %s %s (%s) while drained; resumed %s s after the fault was cleared; the job %s %s s later "
          "(%s s in all)" % ("", out["job"], out["job_while_drained"].get("JobState"),
                             out["job_while_drained"].get("Reason"), out["resumed_after"],
                             out["job_done"].get("JobState"), out["job_ran_after"], out["total"]))
    return out


def drain_time(info):
    """The drain's time (epoch seconds) from its reason's ``[user@2026-12-03T18:46:55]``, slurmctld's local time."""
    stamp = info["Reason"].rsplit("@", 1)[1].rstrip("]")
    offset = CTL.check_output("date +%s", "%z")  # +HHMM of the controller's local time
    seconds = (int(offset[1:3]) * 3600 + int(offset[3:5]) * 60) * (-1 if offset[0] == "-" else 1)
    return calendar.timegm(time.strptime(stamp, "%Y-%m-%dT%H:%M:%S")) - seconds


def info_reason(info):
    return "State=%s Reason=%s" % (info.get("State"), info.get("Reason"))


def seen_states(records):
    """``N records over the window: State=IDLE (N), ...`` with each distinct state and reason."""
    counts = {}
    for info in records:
        counts[info_reason(info)] = counts.get(info_reason(info), 0) + 1
    return "%d records: %s" % (len(records), "; ".join("%s (%d)" % item for item in sorted(counts.items())))


class Clock(object):
    """Seconds per phase of the run, for the log."""

    def __init__(self):
        self.start = self.last = time.monotonic()
        self.laps = []

    def lap(self, what):
        now = time.monotonic()
        self.laps.append((what, now - self.last))
        self.last = now

    def summary(self):
        lines = ["%-40s %6.1f s" % lap for lap in self.laps]
        lines.append("%-40s %6.1f s" % ("in all", time.monotonic() - self.start))
        return "\n".join(["test_health phases:"] + lines)


def refused_deploy():
    """The deploy of the scenario inventory while the node is faulty: HealthCheckInterval differs, so it would
    restart slurmctld and every slurmd."""
    before = deploy_checks.snapshot()
    rc, out = deploy_checks.deploy()
    return {"before": before, "rc": rc, "out": out, "after": deploy_checks.snapshot()}


def by_hand_report():
    return {"report": report()}


# what runs while a fault has the node drained (besides the waiting job)
DURING = {"fabric-manager-stopped": refused_deploy, "xid-fatal": by_hand_report}


@pytest.fixture(scope="module")
def run():
    slurm_checks.wait_for_node(CTL, NAME)
    healthy = json.loads(NODE.file(PROFILE).content_string)
    faults = Faults(healthy)
    results = {"cycles": {}}
    clock = Clock()
    with tempfile.TemporaryDirectory() as tmp:
        inventory = health_inventory(tmp)
        try:
            results["rc_setup"], results["out_setup"] = deploy_checks.deploy(extra_inventories=[inventory])
            clock.lap("deploy with HealthCheckInterval=%d" % HEALTH_INTERVAL)
            assert results["rc_setup"] == 0, results["out_setup"][-3000:]
            results["slurm_conf"] = CTL.file("/etc/slurm/slurm.conf").content_string
            results["launcher"] = NODE.file(PROGRAM).content_string
            slurm_checks.wait_for_node(CTL, NAME)
            results["report_healthy"] = report()

            # an application Xid: the job's fault, never the node's
            faults.inject("xid-application")
            results["app_xid"] = watch(HEALTH_INTERVAL + SLACK)
            print("application Xid: %s" % seen_states(results["app_xid"]))
            clock.lap("application Xid")

            # an admin's drain on a healthy node: never resumed, never rewritten
            CTL.check_output("scontrol update NodeName=%s State=DRAIN Reason=%s", NAME, "admin: maintenance")
            results["admin"] = watch(HEALTH_INTERVAL + SLACK)
            print("admin's drain: %s" % seen_states(results["admin"]))
            CTL.check_output("scontrol update NodeName=%s State=RESUME", NAME)
            results["admin_resumed"] = wait(in_service, 30)[0]
            clock.lap("admin's drain")

            for name, _check in FAULTS:
                results["cycles"][name] = fault_cycle(faults, name, DURING.get(name))
                clock.lap(name)
        finally:
            faults.clear_all()
            if drained(node()):
                CTL.run("scontrol update NodeName=%s State=RESUME", NAME)
            results["rc_back"], results["out_back"] = deploy_checks.deploy()
            results["back"] = slurm_checks.wait_for_node(CTL, NAME, timeout=60)
            results["slurm_conf_back"] = CTL.file("/etc/slurm/slurm.conf").content_string
            clock.lap("deploy of the scenario inventory")
            print(clock.summary())
    return results


# ----------------------------------------------------------------------------------------------------
# the tests


def test_deploy_wires_the_check_with_the_inventorys_interval(run):
    assert "HealthCheckProgram=%s" % PROGRAM in run["slurm_conf"]
    assert "HealthCheckInterval=%d" % HEALTH_INTERVAL in run["slurm_conf"]
    assert "HealthCheckNodeState=ANY" in run["slurm_conf"]
    assert "--lspci" in run["launcher"] and LSPCI in run["launcher"] and KERNEL_LOG in run["launcher"]
    rc, out = run["report_healthy"]
    print(out)
    assert rc == 0 and out.startswith("hpc-gres-health: node %s is healthy" % NAME)
    # an NVSwitch node, seen from the node: the recorded NVSwitches and the running stand-in fabric manager
    assert "fabric          passed" in out and "gpu_count       passed" in out and "xid             passed" in out


@pytest.mark.parametrize("name, expected", FAULTS, ids=[f[0] for f in FAULTS])
def test_fault_drains_within_one_interval_naming_check_and_gpu(run, name, expected):
    cycle = run["cycles"][name]
    reason = cycle["drained"].get("Reason") or ""
    check, gpu = expected
    head = "%s%s%s: " % (PREFIX, check, "" if gpu is None else " GPU %s" % gpu)
    assert cycle["drained_after"] is not None, "not drained by the health check: %s" % info_reason(cycle["drained"])
    assert reason.startswith(head), reason
    assert -1 <= cycle["drain_delay"] <= HEALTH_INTERVAL + RUN, cycle["drain_delay"]
    assert cycle["drained_after"] <= HEALTH_INTERVAL + SLACK, cycle["drained_after"]


@pytest.mark.parametrize("name", [f[0] for f in FAULTS])
def test_gpu_job_waits_while_drained_then_runs(run, name):
    cycle = run["cycles"][name]
    waiting = cycle["job_while_drained"]
    assert waiting["JobState"] == "PENDING", waiting
    assert ours(cycle["node_while_drained"]), info_reason(cycle["node_while_drained"])
    assert cycle["job_done"]["JobState"] == "COMPLETED", cycle["job_done"]
    assert cycle["job_done"]["NodeList"] == NAME


@pytest.mark.parametrize("name", [f[0] for f in FAULTS])
def test_clearing_the_fault_resumes_the_node(run, name):
    cycle = run["cycles"][name]
    assert cycle["resumed_after"] is not None, info_reason(cycle["resumed"])
    assert cycle["resumed_after"] <= HEALTH_INTERVAL + SLACK, cycle["resumed_after"]


def test_application_xid_changes_nothing(run):
    seen = run["app_xid"]
    assert len(seen) >= (HEALTH_INTERVAL + SLACK) / 2
    assert all(in_service(info) and "Reason" not in info for info in seen), [info_reason(i) for i in seen]


def test_admin_drain_is_never_resumed_or_rewritten(run):
    seen = run["admin"]
    assert all(drained(info) for info in seen), [info_reason(i) for i in seen]
    assert {info["Reason"].split(" [")[0] for info in seen} == {"admin: maintenance"}
    assert in_service(run["admin_resumed"]), info_reason(run["admin_resumed"])


def test_deploy_on_a_faulty_node_is_refused_before_any_restart(run):
    refused = run["cycles"]["fabric-manager-stopped"]["during"]
    out = deploy_checks.flat(refused["out"])
    assert refused["rc"] != 0
    assert "gres_verify: the staged files do not fit node %s" % NAME in refused["out"]
    assert "fabric" in out and "In Progress" in out
    assert "restarting" not in out
    deploy_checks.assert_unchanged(refused["before"], refused["after"])


def test_by_hand_report_names_check_gpu_and_the_acknowledgement(run):
    cycle = run["cycles"]["xid-fatal"]
    rc, out = cycle["during"]["report"]
    print(out)
    assert rc == 1 and out.startswith("hpc-gres-health: node %s is NOT healthy" % NAME)
    assert "xid             FAILED" in out
    assert "drain reason: %sxid GPU %d: Xid 119 " % (PREFIX, FATAL_XID_GPU[1]) in out
    assert "already drained by the health check for this" in out
    assert cycle["ack"] == "%s 119 Sun Feb 23 16:30:13 2025" % FATAL_XID_GPU[0]


def test_last_deploy_puts_the_scenario_inventory_back(run):
    assert run["rc_back"] == 0, run["out_back"][-3000:]
    assert "HealthCheckInterval=300" in run["slurm_conf_back"]
    assert "Reason" not in run["back"]
