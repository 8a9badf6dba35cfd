"""The GPU boot order as a node runs it: PROGRAM_FILES and the hpc-gres-boot launcher in a directory of their own, run
by Python 3.9 in isolated mode with systemd's bare environment, against an emulated node that is power-cycled the
way a reboot treats GPUs (tests/emulator/emu_boot.py: MIG instances gone, MIG mode kept; the driver loaded or not)
and a real Slurm on loopback (slurmctld + slurmd, tests/integration/slurm_loopback.py).

(a) a MIG node after three power cycles: the boot order recreates the inventory's layout with the same GPU instance
    ids, placements and cap device files, and the deployed gres.conf (written from the ids before the first
    cycle) passes the health check: ready, exit 0;
(b) the driver not loaded: held back by the deadline (exit 1, the driver stage named), and a driver loaded while it
    waits is waited for; with nvidia-mig-manager doing the layout, a layout that is not there holds the node;
(c) against the real slurmctld: a hold drains the node with ``hpc-gres-boot: <stage>: ...``, the same hold again
    changes nothing, ``--resume`` resumes it; an admin's drain is never touched.
"""
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pytest
import testpaths

import slurm_loopback
from emulated_node import EMULATOR, Node, apply_mig_layout, node_nvidia_smi
from slurm_loopback import NODE

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import boot_units, program
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.render import render_mig_gres_lines
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import parse_mig_lgi, parse_mig_minors

sys.path.insert(0, EMULATOR)
import emu_boot  # noqa: E402  (the emulator's power-on and driver)

LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
NAME = "gpu-b01"


def python39():
    found = sorted(__import__("glob").glob("/root/.pyenv/versions/3.9*/bin/python3"))
    if not found:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true and no Python 3.9 under /root/.pyenv/versions")
        pytest.skip("no Python 3.9 under /root/.pyenv/versions")
    return found[-1]


def install(directory, python):
    """The library and the boot order's launcher, as the deploy writes them; returns the launcher's path."""
    lib = os.path.join(directory, "lib")
    for rel in program.PROGRAM_FILES:
        target = program.installed_path(lib, rel)
        os.makedirs(os.path.dirname(target), exist_ok=True)
        shutil.copyfile(os.path.join(testpaths.ROOT, rel), target)
    launcher = os.path.join(directory, "sbin", "hpc-gres-boot")
    os.makedirs(os.path.dirname(launcher), exist_ok=True)
    with open(launcher, "w") as handle:
        handle.write(program.launcher_text(lib, python=python, program="hpc-gres-boot"))
    os.chmod(launcher, 0o755)
    return launcher


class BootNode(object):
    """An emulated 8 x A100-80GB node with GPU 0 split as ``LAYOUT``, its deployed slurm.conf and gres.conf (the MIG
    lines from the live ids, as the deploy writes them), and the boot settings the deploy would write."""

    def __init__(self, directory, name=NAME):
        self.dir = directory
        self.node = Node(os.path.join(directory, "node"), name=name)
        self.name = name
        # the program reads proc/, sys/ and dev/ under one root; the emulated node keeps its device nodes apart
        os.symlink(os.path.join(self.node.dev_root, "dev"), os.path.join(self.node.root, "dev"))
        self.smi = node_nvidia_smi(self.node)
        applied = apply_mig_layout(self.node, {0: LAYOUT})
        self.gis = self.lgi()
        with open(os.path.join(self.node.root, "proc", "driver", "nvidia-caps", "mig-minors")) as handle:
            minors = parse_mig_minors(handle.read())
        gpu0 = [g for g in applied["hw"]["gpus"] if g["index"] == 0][0]
        mig_lines = render_mig_gres_lines(name, gpu0["minor"], gpu0["mig_devices"], minors, gpu_type="a100")
        self.gres_conf = os.path.join(directory, "gres.conf")
        with open(self.gres_conf, "w") as handle:
            handle.write("\n".join(mig_lines + ["NodeName=%s Name=gpu Type=a100 File=/dev/nvidia[1-7]" % name])
                         + "\n")
        self.slurm_conf = os.path.join(directory, "slurm.conf")
        with open(self.slurm_conf, "w") as handle:
            handle.write("ClusterName=b\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=%s Sockets=2 CoresPerSocket=32 "
                         "ThreadsPerCore=2 Gres=gpu:a100:7,gpu:3g.40gb:1,gpu:2g.20gb:1,gpu:1g.10gb:2\n" % name)
        self.config = os.path.join(directory, "boot.json")
        self.settings()

    def settings(self, mig="collection", wait=20):
        with open(self.config, "w") as handle:
            handle.write(boot_units.settings_text({
                "node": self.name, "wait": wait, "interval": 1, "mig": mig,
                "layouts": {str(i): (LAYOUT if i == 0 else None) for i in range(8)},
                "models": {str(i): "A100-80GB" for i in range(8)}}))

    @property
    def env(self):
        """systemd's environment for a unit (PATH and LANG only) plus what the emulator needs to find its node."""
        return {"PATH": "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8",
                "NVSMI_EMU_ROOT": self.node.root, "NVSMI_EMU_DEV_ROOT": self.node.dev_root}

    def args(self, *more):
        return ["--config", self.config, "--nvidia-smi", self.smi, "--root", self.node.root, "--kernel-log", "none",
                "--fabric-manager", "none", "--slurm-conf", self.slurm_conf, "--gres-conf", self.gres_conf,
                "--ack-file", os.path.join(self.dir, "acks"), "--timeout", "10"] + list(more)

    def lgi(self):
        proc = subprocess.run([self.smi, "mig", "-lgi"], env=self.env, capture_output=True, text=True, check=False)
        return sorted((g["gpu"], g["gi_id"], g["profile"], g["placement_start"], g["placement_size"])
                      for g in parse_mig_lgi(proc.stdout)) if proc.returncode == 0 else proc.stdout.strip()

    def power_on(self, driver=True):
        emu_boot.power_on(self.node.profile_path)
        if driver:
            emu_boot.load_driver(self.node.profile_path, self.node.dev_root, self.node.root)
        else:
            emu_boot.unload_driver(self.node.profile_path, self.node.dev_root, self.node.root)


def run(python, launcher, args, env, timeout=120):
    start = time.monotonic()
    proc = subprocess.run([python, "-I", launcher] + list(args), env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)
    return proc.returncode, proc.stdout, proc.stderr, time.monotonic() - start


@pytest.fixture(scope="module")
def installed():
    if os.geteuid() != 0:
        pytest.skip("the emulated nodes need device nodes (mknod): run as root")
    python = python39()
    with tempfile.TemporaryDirectory(prefix="hpc-gres-boot-") as directory:
        yield python, install(os.path.join(directory, "prog"), python), directory


# ----------------------------------------------------------------------------------------------------
# (a) and (b): the program alone


def test_three_power_cycles_come_back_with_the_same_layout(installed, record_property):
    python, launcher, directory = installed
    node = BootNode(os.path.join(directory, "mig"))
    assert sorted(g[2] for g in node.gis) == sorted(LAYOUT), node.gis
    times = []
    for cycle in range(3):
        node.power_on()
        assert node.lgi() != node.gis, "the power-on left the MIG instances in place"
        code, out, err, took = run(python, launcher, node.args("--scontrol", "none", "--json"), node.env)
        assert err == "" and code == 0, out + err
        doc = json.loads(out)
        assert doc["ready"] and [s["stage"] for s in doc["stages"]] == ["driver", "mig", "ready"], out
        assert doc["stages"][1]["detail"].startswith("GPU 0 enable_and_create") or \
            doc["stages"][1]["detail"].startswith("GPU 0 rebuild"), doc["stages"][1]
        assert node.lgi() == node.gis, "cycle %d: other GPU instances than before the reboot" % (cycle + 1)
        times.append(took)
    # a boot order run again on a node already right changes nothing and says so
    code, out, _err, _took = run(python, launcher, node.args("--scontrol", "none"), node.env)
    assert code == 0 and "mig: GPU 0 as declared" in out and "ready: healthy" in out, out
    record_property("boot_wall_s_max", round(max(times), 2))
    print("boot order after each power-on: %s s" % ", ".join("%.2f" % t for t in times))


def test_mig_mode_survives_and_the_gres_check_catches_a_missing_layout(installed):
    """Without the MIG stage (nvidia-mig-manager's job, which did not happen here) the ready stage names the layout
    that is not there and the node is held."""
    python, launcher, directory = installed
    node = BootNode(os.path.join(directory, "mgr"))
    node.settings(mig="mig-manager", wait=0)
    node.power_on()
    code, out, _err, _took = run(python, launcher, node.args("--scontrol", "none", "--json"), node.env)
    doc = json.loads(out)
    assert code == 1 and [s["stage"] for s in doc["stages"]] == ["driver", "ready"], out
    assert doc["reason"].startswith("hpc-gres-boot: ready: gres_"), doc["reason"]
    # wait=0: one pass, however long it took on a loaded machine
    assert re.search(r" \(after \d+ s\)$", doc["reason"]) and len(doc["reason"]) <= 200, doc["reason"]


def test_a_driver_not_loaded_holds_by_the_deadline_and_a_late_one_is_waited_for(installed):
    python, launcher, directory = installed
    node = BootNode(os.path.join(directory, "drv"))
    node.power_on(driver=False)
    code, out, _err, took = run(python, launcher, node.args("--scontrol", "none", "--wait", "3"), node.env)
    assert code == 1, out
    assert "hpc-gres-boot: driver: waiting: %s/dev/nvidiactl does not exist" % node.node.root in out, out
    assert "NOT ready after" in out and "slurmd held back: driver: " in out, out
    assert 3 <= took < 10, took

    node.power_on(driver=False)
    loader = threading.Timer(3, emu_boot.load_driver, (node.node.profile_path, node.node.dev_root, node.node.root))
    loader.start()
    try:
        code, out, _err, took = run(python, launcher, node.args("--scontrol", "none", "--json"), node.env)
    finally:
        loader.join()
    doc = json.loads(out)
    assert code == 0 and doc["stages"][0]["tries"] > 1, out
    assert took >= 3 and node.lgi() == node.gis


def test_nvidia_smi_failing_without_the_driver_is_named(installed):
    python, launcher, directory = installed
    node = BootNode(os.path.join(directory, "smi"))
    node.power_on(driver=False)
    emu_boot.load_driver(node.node.profile_path, node.node.dev_root, node.node.root)
    profile = json.load(open(node.node.profile_path))
    profile["driver"] = "not_loaded"  # the device nodes are there, NVML cannot talk to the module
    with open(node.node.profile_path, "w") as handle:
        json.dump(profile, handle)
    code, out, _err, _took = run(python, launcher, node.args("--scontrol", "none", "--json", "--wait", "0"),
                                 node.env)
    reason = json.loads(out)["reason"]
    assert code == 1 and reason.startswith("hpc-gres-boot: driver: nvidia-smi exited with status 9: NVIDIA-SMI has "
                                           "failed because it couldnt communicate with the NVIDIA driver"), reason  # quotes cleaned


# ----------------------------------------------------------------------------------------------------
# (c) against a real slurmctld


@pytest.fixture(scope="module")
def cluster(installed):
    slurm_loopback.require("a loopback Slurm cannot run")
    python, launcher, _directory = installed
    with tempfile.TemporaryDirectory(prefix="slurm-boot-") as directory:
        slurm = slurm_loopback.LoopbackSlurm(directory)
        try:
            slurm.write_slurm_conf("gpu:h100:8")
            with open(os.path.join(directory, "gres.conf"), "w") as handle:
                handle.write("NodeName=%s Name=gpu Type=h100 File=%s/dev/nvidia[0-7]\n" % (NODE, directory))
            slurm.start_munge()
            slurm.start_slurmctld()
            slurm.start_slurmd()
            slurm.wait_state("State=IDLE ", "gpu:h100:8")
            node = BootNode(os.path.join(directory, "boot"), name=NODE)
            node.power_on(driver=False)
            yield slurm, node, python, launcher
        finally:
            slurm.stop()


def boot_run(cluster, *more):
    slurm, node, python, launcher = cluster
    args = node.args("--wait", "0") + ["--slurm-conf", slurm.conf, "--node", NODE] + list(more)
    code, out, err, _took = run(python, launcher, args, dict(node.env, **slurm_env(slurm)))
    assert err == "", err
    return code, out.strip()


def slurm_env(slurm):
    return {k: v for k, v in slurm.env.items() if k.startswith(("SLURM", "MUNGE"))}


def test_a_hold_drains_with_the_stage_and_resume_releases(cluster):
    slurm = cluster[0]
    code, line = boot_run(cluster)
    assert code == 1 and line.endswith("Slurm: drained (slurmd held back)"), line
    slurm.wait_state("+DRAIN", "Reason=hpc-gres-boot: driver: ")
    code, line = boot_run(cluster)
    assert code == 1 and line.endswith("Slurm: already held for this"), line
    code, line = boot_run(cluster, "--resume")
    assert code == 0 and line == "hpc-gres-boot: node %s: Slurm: resumed (released)" % NODE, line
    slurm.wait(lambda: "DRAIN" not in slurm.node_line(), "the node resumed")
    code, line = boot_run(cluster, "--resume")
    assert line.endswith("Slurm: not held by the boot order"), line


def test_an_admins_drain_is_left_alone(cluster):
    slurm = cluster[0]
    assert slurm.scontrol("update", "NodeName=" + NODE, "State=DRAIN", "Reason=admin: cabling").returncode == 0
    try:
        slurm.wait_state("+DRAIN", "Reason=admin: cabling")
        code, line = boot_run(cluster)
        assert code == 1 and line.endswith("Slurm: drained by someone else (admin: cabling): left as it is"), line
        code, line = boot_run(cluster, "--resume")
        assert line.endswith("Slurm: not held by the boot order"), line
        assert "Reason=admin: cabling" in slurm.node_line()
    finally:
        slurm.scontrol("update", "NodeName=" + NODE, "State=RESUME")
        slurm.wait(lambda: "DRAIN" not in slurm.node_line(), "the admin's resume")
