"""The emulator's whole-node pieces for the health check (health_node.py, q_sections, hang_s): each fault is the
recorded text in the place the node shows it."""
import os

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import inputs
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness, smi_q

import health_node
import machines
import nvsmi_fixtures


def emulate(tmp_path, profile, *argv):
    path = health_node.write_profile(str(tmp_path / "profile.json"), profile)
    return machines.run_emulator(path, argv)


def test_fabric_section_of_every_gpu_is_the_recorded_in_progress_block(tmp_path):
    profile, _expected = health_node.with_fault("fabric-manager-stopped")
    rc, out, _err = emulate(tmp_path, profile, "-q")
    healthy = nvsmi_fixtures.load("readiness", "nvidia-smi-q", health_node.P5_Q)
    assert rc == 0
    assert out.count("        State                             : In Progress\n") == 8
    assert out.count("\n") == healthy.count("\n")  # three lines for three lines, nothing else moved
    parsed = smi_q.parse_smi_q(out)
    assert {(g["fabric"]["state"], g["fabric"]["status"]) for g in parsed["gpus"]} == {("In Progress", None)}


def test_remapped_rows_of_one_gpu(tmp_path):
    profile, _expected = health_node.with_fault("remapped-rows-pending")
    rc, out, _err = emulate(tmp_path, profile, "-q")
    rows = [g["remapped_rows"] for g in smi_q.parse_smi_q(out)["gpus"]]
    assert rc == 0 and [r["pending"] for r in rows] == [False, False, True] + [False] * 5
    assert rows[2]["uncorrectable"] == 4


def test_a_section_the_recording_lacks_fails_the_call(tmp_path):
    profile = health_node.node("h100-p5")
    profile["q_sections"] = {"No Such Section": {"text": "    No Such Section\n"}}
    rc, _out, err = emulate(tmp_path, profile, "-q")
    assert rc == 255 and "no section 'No Such Section'" in err


def test_hung_nvidia_smi_is_killed(tmp_path):
    profile = health_node.node("h100-p5")
    profile["hang_s"] = 30
    path = health_node.write_profile(str(tmp_path / "profile.json"), profile)
    result = inputs.run_command([os.path.join(nvsmi_fixtures.EMULATOR, "nvidia-smi"), "-L"], 1.0,
                                dict(os.environ, NVSMI_EMU_PROFILE=path))
    assert result["timed_out"] and result["seconds"] < 4 and result["stdout"] == ""


def test_write_node(tmp_path):
    profile, _expected = health_node.with_fault("nvml-driver-mismatch")
    profile["kernel_log"] = [machines.recording("readiness", "kernel-log", "h100-xe9680-xid119-gsp-timeout-dmesg-T.txt",
                                                lines=[1, 3])] * 2
    paths = health_node.write_node(str(tmp_path), profile)
    version = (tmp_path / "proc" / "driver" / "nvidia" / "version").read_text()
    assert version == nvsmi_fixtures.load("readiness", "fabricmanager",
                                          "proc-driver-nvidia-version-580-proprietary.txt")
    log = open(paths["kernel_log"]).read()
    assert len(log.splitlines()) == 6 and log.splitlines()[2].startswith("[Sun Feb 23 16:24:18 2025] NVRM: Xid")
    fm = open(paths["fabric_manager"]).read()
    assert readiness.parse_fabricmanager(fm)["active"] is True
    functions = health_node.pci_functions(profile)
    assert [f["class"] for f in functions] == ["030200"] * 8 + ["068000"] * 4
    assert [f["bus"] for f in functions][:2] == ["0000:53:00.0", "0000:64:00.0"]
    info = tmp_path / "proc" / "driver" / "nvidia" / "gpus" / "0000:86:00.0" / "information"
    assert "Device Minor: \t 3" in info.read_text()
    if os.geteuid() == 0:
        assert os.major(os.stat(str(tmp_path / "dev" / "nvidia7")).st_rdev) == 195


@pytest.mark.parametrize("name", sorted(health_node.FAULTS))
def test_every_fault_names_its_node_and_keeps_the_source(name):
    profile, expected = health_node.with_fault(name)
    assert profile["source"].endswith("fault %s" % name)
    assert expected is None or expected[0] in readiness.CHECKS


def test_fabric_follows_a_fabric_manager_unit(tmp_path):
    """Where systemctl says the unit is not active (here: no systemd, or no such unit), -q shows In Progress."""
    profile = health_node.fabric_follows_unit(health_node.node("h100-p5"), unit="hpc-gres-no-such-unit")
    rc, out, _err = emulate(tmp_path, profile, "-q")
    assert rc == 0 and {g["fabric"]["state"] for g in smi_q.parse_smi_q(out)["gpus"]} == {"In Progress"}


def test_fabric_completed_while_the_unit_is_active(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "systemctl"
    fake.parent.mkdir()
    fake.write_text('#!/bin/sh\n[ "$1 $2" = "is-active nvidia-fabricmanager" ] && echo active\n')
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", "%s:%s" % (fake.parent, os.environ["PATH"]))
    rc, out, _err = emulate(tmp_path, health_node.fabric_follows_unit(health_node.node("h100-p5")), "-q")
    assert rc == 0 and out == nvsmi_fixtures.load("readiness", "nvidia-smi-q", health_node.P5_Q)
