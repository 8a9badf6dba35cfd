"""The node health check as a node runs it: PROGRAM_FILES and the launcher copied into a directory of their own, run
by Python 3.9 in isolated mode (standard library only, the oldest Python the modules support), with slurmd's
empty environment, against emulated nodes built from recorded outputs (tests/emulator/health_node.py) and a real
Slurm on loopback (slurmctld + slurmd 22.05, tests/integration/slurm_loopback.py).

(a) --report on each recorded fault: the check and GPU named first, the exit status (a corrupted infoROM: a
    warning on its GPU, no error).
(b) --slurm against the real slurmctld: a fault drains with the prefixed reason, the same fault again changes
    nothing, clearing it resumes, an admin's drain is never resumed or rewritten, an application Xid changes
    nothing; and the program as slurmd's own HealthCheckProgram drains and resumes within HealthCheckInterval
    while a GPU job waits.
"""
import glob
import json
import os
import shutil
import statistics
import subprocess
import tempfile
import time

import pytest
import testpaths

import health_node
import slurm_loopback
from slurm_loopback import NODE

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import program

EMULATOR = os.path.join(testpaths.ROOT, "tests", "emulator")
TIMEOUT = 2  # per command; the hung nvidia-smi is killed after it


def python39():
    found = sorted(glob.glob("/root/.pyenv/versions/3.9*/bin/python3"))
    if not found:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true and no Python 3.9 under /root/.pyenv/versions")
        pytest.skip("no Python 3.9 under /root/.pyenv/versions")
    return found[-1]


def install(directory, python, args=()):
    """What the deploy puts on a node: the library files and the launcher; returns the launcher's path."""
    lib = os.path.join(directory, "lib")
    for rel in program.PROGRAM_FILES:
        target = program.installed_path(lib, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(testpaths.ROOT, rel), target)
    launcher = os.path.join(directory, "bin", "hpc-gres-%s" % ("health" if not args else "slurm-check"))
    os.makedirs(os.path.dirname(launcher), exist_ok=True)
    with open(launcher, "w") as handle:
        handle.write(program.launcher_text(lib, python=python, args=args))
    os.chmod(launcher, 0o755)
    return launcher


def emulator_copy(directory):
    """nvidia-smi and nvidia_smi.py in a directory of their own: the profile is profile.json beside them, as on a
    test node (slurmd passes no NVSMI_EMU_PROFILE)."""
    os.makedirs(directory, exist_ok=True)
    for name in ("nvidia-smi", "nvidia_smi.py"):
        shutil.copy2(os.path.join(EMULATOR, name), os.path.join(directory, name))
    return os.path.join(directory, "nvidia-smi")


class Node(object):
    """An emulated node whose state can be switched atomically: ``root`` is a symlink to the current tree,
    ``profile.json`` beside the emulator copy is replaced whole."""

    def __init__(self, directory, dev_dirs=("/dev",)):
        self.dir = directory
        self.dev_dirs = dev_dirs
        self.nvidia_smi = emulator_copy(os.path.join(directory, "emu"))
        self.root = os.path.join(directory, "root")
        self.generation = 0

    def set(self, profile):
        self.generation += 1
        tree = os.path.join(self.dir, "root.%d" % self.generation)
        os.makedirs(tree)
        health_node.write_node(tree, profile, dev_dirs=self.dev_dirs)
        link = self.root + ".new"
        os.symlink(tree, link)
        os.replace(link, self.root)
        health_node.write_profile(os.path.join(self.dir, "emu", "profile.json"), profile, inline=True)

    def args(self, slurm_conf, gres_conf=None):
        out = ["--nvidia-smi", self.nvidia_smi, "--root", self.root, "--slurm-conf", slurm_conf,
               "--kernel-log", os.path.join(self.root, health_node.KERNEL_LOG),
               "--fabric-manager", os.path.join(self.root, health_node.FABRIC_MANAGER),
               "--ack-file", os.path.join(self.dir, "xid-acknowledgements"), "--timeout", str(TIMEOUT)]
        return out + (["--gres-conf", gres_conf] if gres_conf else [])


def run(python, launcher, args, env=None):
    """The program as slurmd starts a HealthCheckProgram: isolated Python, an environment with SLURMD_NODENAME
    only (no PATH)."""
    start = time.monotonic()
    proc = subprocess.run([python, "-I", launcher] + list(args), env=env if env is not None else {}, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


# ----------------------------------------------------------------------------------------------------
# (a) --report on emulated nodes, one row per recorded fault

SLURM_CONF = "ClusterName=x\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=%s Gres=gpu:h100:8\n" % NODE
GRES_CONF = "NodeName=%s Name=gpu Type=h100 File=/dev/nvidia[0-7]\n" % NODE
CASES = [("healthy", None)] + sorted((name, fault[2]) for name, fault in health_node.FAULTS.items())


@pytest.fixture(scope="module")
def installed():
    if os.geteuid() != 0:
        pytest.skip("the emulated nodes need device nodes (mknod): run as root")
    python = python39()
    with tempfile.TemporaryDirectory(prefix="hpc-gres-health-") as directory:
        with open(os.path.join(directory, "slurm.conf"), "w") as handle:
            handle.write(SLURM_CONF)
        with open(os.path.join(directory, "gres.conf"), "w") as handle:
            handle.write(GRES_CONF)
        yield python, install(directory, python), directory


def emulated(directory, name, where=None):
    node = Node(os.path.join(directory, where or name))
    node.set(health_node.node("h100-p5") if name == "healthy" else health_node.with_fault(name)[0])
    return node


@pytest.mark.parametrize("name, expected", CASES, ids=[c[0] for c in CASES])
def test_report_names_check_and_gpu_of_each_fault(installed, name, expected):
    python, launcher, directory = installed
    node = emulated(directory, name)
    args = node.args(os.path.join(directory, "slurm.conf")) + ["--node", NODE, "--scontrol", "none"]
    code, out, err, took = run(python, launcher, ["--report", "--json"] + args)
    assert err == ""
    doc = json.loads(out)
    errors = doc["verdict"]["errors"]
    if expected is None:
        assert (code, errors) == (0, []), out
        statuses = {r["check"]: r["status"] for r in doc["verdict"]["checks"]}
        assert statuses["gres"] == "passed" and statuses["xid"] == "passed" and statuses["fabric"] == "passed"
        warned = [(f["check"], f["gpu"], f["found"]) for f in doc["verdict"]["findings"] if f["severity"] == "warning"]
        if name == "inforom-corrupted":  # nvidia-smi exits 14 after its whole output: read, and warned of
            assert warned == [("errors", 5, "nvidia-smi: infoROM is corrupted at gpu 00000000:A8:00.0")], out
            assert statuses["memory"] == "passed" and statuses["persistence"] == "passed"
        elif health_node.FAULTS.get(name, ("",))[0] == "h100-xe9680":
            # its -q is a recording whose GPUs the power brake holds at 86 MHz: the clocks check warns
            assert warned == [("clocks", i, "HW Slowdown, HW Power Brake Slowdown Active, SM clock 86 MHz of "
                               "1980 MHz") for i in range(8)], out
        else:
            assert warned == [], out
    else:
        assert code == 1
        assert (errors[0]["check"], errors[0]["gpu"]) == expected, errors[0]
        gpu = " GPU %s" % expected[1] if expected[1] is not None else ""
        assert doc["verdict"]["reason"].startswith("hpc-gres-health: %s%s: " % (expected[0], gpu))
    if name == "nvidia-smi-hung":
        assert errors[0]["found"] == "nvidia-smi did not answer within %d s (killed)" % TIMEOUT
        assert took < TIMEOUT + 4
    else:
        assert took < 5, "a health check must finish in a few seconds (%.1f s)" % took
    code, text, _err, _took = run(python, launcher, args)  # the by-hand table, same verdict
    assert code == (0 if expected is None else 1)
    assert text.startswith("hpc-gres-health: node %s is %s" % (NODE, "healthy" if expected is None else "NOT healthy"))


def test_healthy_run_wall_time(installed, record_property):
    """Wall time of a whole healthy run (Python start to exit), and its nvidia-smi calls (-q and --query-gpu)."""
    python, launcher, directory = installed
    node = emulated(directory, "healthy", "timed")
    args = node.args(os.path.join(directory, "slurm.conf")) + ["--node", NODE, "--scontrol", "none", "--nhc"]
    times = []
    for _n in range(5):
        code, out, _err, took = run(python, launcher, args)
        assert (code, out) == (0, "")
        times.append(took)
    _code, out, _err, _took = run(python, launcher, args + ["--json"])
    calls = [c["argv"][1:2] for c in json.loads(out)["commands"]]
    assert calls == [["-q"], ["--query-gpu=index,uuid,name,pci.bus_id,mig.mode.current,memory.total,memory.used"]]
    record_property("healthy_wall_s_median", round(statistics.median(times), 3))
    print("healthy run wall time: median %.2f s, max %.2f s (%s)" % (
        statistics.median(times), max(times), ", ".join("%.2f" % t for t in times)))
    assert statistics.median(times) < 3


# ----------------------------------------------------------------------------------------------------
# (b) --slurm against a real slurmctld


@pytest.fixture(scope="module")
def cluster():
    slurm_loopback.require("a loopback Slurm cannot run")
    python = python39()
    with tempfile.TemporaryDirectory(prefix="slurm-health-") as directory:
        slurm = slurm_loopback.LoopbackSlurm(directory)
        try:
            slurm.write_slurm_conf("gpu:h100:8")
            gres = os.path.join(directory, "gres.conf")
            with open(gres, "w") as handle:
                handle.write("NodeName=%s Name=gpu Type=h100 File=%s/dev/nvidia[0-7]\n" % (NODE, directory))
            slurm.start_munge()
            slurm.start_slurmctld()
            slurm.start_slurmd()
            slurm.wait_state("State=IDLE ", "gpu:h100:8")
            node = Node(os.path.join(directory, "node"), dev_dirs=(os.path.join(directory, "dev"),))
            yield slurm, node, python, install(os.path.join(directory, "prog"), python)
        finally:
            slurm.stop()


def check(cluster, profile):
    slurm, node, python, launcher = cluster
    node.set(profile)
    code, out, err, _took = run(python, launcher, ["--slurm"] + node.args(slurm.conf),
                                env={"SLURMD_NODENAME": NODE})
    assert err == "", err
    return code, out.strip()


def reason(slurm):
    record = slurm.node_line()
    return record.split("Reason=", 1)[1] if "Reason=" in record else None


def test_fault_drains_same_fault_keeps_new_fault_updates_clear_resumes(cluster):
    slurm = cluster[0]
    code, line = check(cluster, health_node.node("h100-xe9680"))
    assert (code, line) == (0, "hpc-gres-health: node %s is healthy; healthy" % NODE)

    code, line = check(cluster, health_node.with_fault("xid-fatal")[0])
    assert line.startswith("hpc-gres-health: node %s is NOT healthy (xid GPU 4: Xid 119 " % NODE), line
    assert code == 1 and line.endswith("; drained (unhealthy)")
    slurm.wait_state("+DRAIN", "Reason=hpc-gres-health: xid GPU 4: Xid 119 at Sun Feb 23 16:30:13 2025")
    first = reason(slurm)

    code, line = check(cluster, health_node.with_fault("xid-fatal")[0])
    assert code == 1 and line.endswith("already drained by the health check for this")
    assert reason(slurm) == first  # same text, same [user@time]: no churn

    code, line = check(cluster, health_node.with_fault("remapped-rows-pending")[0])
    assert code == 1 and "drain reason updated" in line
    slurm.wait_state("+DRAIN", "Reason=hpc-gres-health: memory GPU 2: remapped rows pending")

    code, line = check(cluster, health_node.node("h100-p5"))
    assert code == 0 and line.endswith("resumed (healthy again)")
    slurm.wait(lambda: "DRAIN" not in slurm.node_line() and "State=IDLE" in slurm.node_line(), "the node resumed")


def test_admin_drain_is_never_resumed_or_rewritten(cluster):
    slurm = cluster[0]
    assert slurm.scontrol("update", "NodeName=" + NODE, "State=DRAIN", "Reason=admin: bad fan").returncode == 0
    try:
        slurm.wait_state("+DRAIN", "Reason=admin: bad fan")
        code, line = check(cluster, health_node.with_fault("gpu-missing-on-pci")[0])
        assert code == 1 and line.endswith("drained by someone else (admin: bad fan): left as it is")
        code, line = check(cluster, health_node.node("h100-p5"))
        assert code == 0 and line.endswith("healthy; drained by someone else (admin: bad fan): left as it is")
        assert reason(slurm).startswith("admin: bad fan [")
        assert "+DRAIN" in slurm.node_line()
    finally:
        slurm.scontrol("update", "NodeName=" + NODE, "State=RESUME")
        slurm.wait(lambda: "DRAIN" not in slurm.node_line(), "the admin's resume")


def test_application_xid_changes_nothing(cluster):
    slurm = cluster[0]
    slurm.wait_state("State=IDLE ")  # a resumed node is IDLE+NOT_RESPONDING until slurmd registers again
    before = slurm.node_line()
    code, line = check(cluster, health_node.with_fault("xid-application")[0])
    assert (code, line) == (0, "hpc-gres-health: node %s is healthy; healthy" % NODE)
    assert "DRAIN" not in slurm.node_line() and "Reason=" not in slurm.node_line()
    assert before.split("State=")[1].split()[0] == slurm.node_line().split("State=")[1].split()[0]


def test_usage_error_leaves_the_node_alone(cluster):
    slurm, node, python, launcher = cluster
    node.set(health_node.with_fault("xid-fatal")[0])
    code, out, _err, _took = run(python, launcher, ["--slurm", "--timeout", "soon"] + node.args(slurm.conf)[:2],
                                 env={"SLURMD_NODENAME": NODE})
    assert code == 2 and "DRAIN" not in slurm.node_line()


def test_as_slurmds_health_check_program(cluster):
    """slurmd runs the program (no arguments, SLURMD_NODENAME only) every HealthCheckInterval: a fault drains the
    node within an interval or two, a GPU job waits, clearing the fault resumes the node and the job runs."""
    slurm, node, python, _launcher = cluster
    interval = 5
    node.set(health_node.node("h100-p5"))
    program_path = install(os.path.join(slurm.dir, "hc"), python, ["--slurm"] + node.args(slurm.conf))
    with open(slurm.conf, "a") as handle:
        handle.write("HealthCheckProgram=%s\nHealthCheckInterval=%d\nHealthCheckNodeState=ANY\n"
                     % (program_path, interval))
    slurm.restart_slurmctld()
    slurm.restart_slurmd()
    slurm.wait_state("State=IDLE ", "gpu:h100:8")
    try:
        start = time.monotonic()
        node.set(health_node.with_fault("fabric-manager-stopped")[0])
        slurm.wait_state("+DRAIN", "Reason=hpc-gres-health: fabric GPU 0: fabric State In Progress",
                         timeout=3 * interval + 10)
        drained_after = time.monotonic() - start
        job = subprocess.run(["sbatch", "--parsable", "-w", NODE, "--gres=gpu:h100:1", "-o", "/dev/null",
                              "--wrap", "true"], env=slurm.env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True, check=True).stdout.strip()
        time.sleep(2)
        state = slurm.scontrol("-o", "show", "job", job).stdout
        assert "JobState=PENDING" in state, state
        start = time.monotonic()
        node.set(health_node.node("h100-p5"))
        slurm.wait(lambda: "DRAIN" not in slurm.node_line(), "the health check to resume the node",
                   timeout=3 * interval + 10)
        resumed_after = time.monotonic() - start
        slurm.wait(lambda: "JobState=COMPLETED" in slurm.scontrol("-o", "show", "job", job).stdout,
                   "the waiting job to run once the node is back", timeout=30)
        print("HealthCheckInterval=%d: drained %.1f s after the fault, resumed %.1f s after it cleared"
              % (interval, drained_after, resumed_after))
    finally:
        with open(slurm.conf) as handle:
            text = handle.read()
        with open(slurm.conf, "w") as handle:
            handle.write(text.split("HealthCheckProgram=")[0])
        slurm.restart_slurmctld()
        slurm.restart_slurmd()
