"""The program's command line: modes, exit status, and what it prints, on emulated nodes (the emulated nvidia-smi
is a real subprocess); Slurm is not asked here (--scontrol none; the real one is in
tests/integration/test_health_program.py)."""
import io
import json
import os

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import check, cli

import health_node
import nvsmi_fixtures

NVIDIA_SMI = os.path.join(nvsmi_fixtures.EMULATOR, "nvidia-smi")
SLURM = "ClusterName=x\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=n1 Gres=gpu:%s:8\n"


def node_args(tmp_path, profile, monkeypatch):
    root = tmp_path / "root"
    root.mkdir()
    monkeypatch.setenv("NVSMI_EMU_PROFILE", health_node.write_profile(str(tmp_path / "profile.json"), profile))
    paths = health_node.write_node(str(root), profile)
    (tmp_path / "slurm.conf").write_text(SLURM % "h100")
    (tmp_path / "gres.conf").write_text("NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia[0-7]\n")
    return ["--nvidia-smi", NVIDIA_SMI, "--root", str(root), "--slurm-conf", str(tmp_path / "slurm.conf"),
            "--kernel-log", paths["kernel_log"], "--fabric-manager", paths["fabric_manager"] or "none",
            "--ack-file", str(tmp_path / "ack"), "--node", "n1", "--scontrol", "none", "--timeout", "2"]


def main(argv, env=None):
    out = io.StringIO()
    code = cli.main(argv, env=env, out=out)
    return code, out.getvalue()


@pytest.mark.skipif(os.geteuid() != 0, reason="the gres comparison needs device nodes (mknod)")
def test_report_of_a_healthy_node(tmp_path, monkeypatch):
    code, out = main(node_args(tmp_path, health_node.node("h100-p5"), monkeypatch))
    assert code == 0, out
    assert out.startswith("hpc-gres-health: node n1 is healthy (0 error(s), 0 warning(s), ")
    assert "gres            passed" in out
    assert "driver_version  does not apply  the loaded kernel module's version was not read" in out
    assert "slurm: not asked (--scontrol none)" in out


def test_nhc_mode_prints_the_first_failure(tmp_path, monkeypatch):
    profile, _expected = health_node.with_fault("remapped-rows-pending")
    code, out = main(node_args(tmp_path, profile, monkeypatch) + ["--nhc"])
    assert (code, out) == (1, "hpc-gres-health: memory GPU 2: remapped rows pending (correctable 0, "
                              "uncorrectable 4)\n")


def test_json_document(tmp_path, monkeypatch):
    profile, _expected = health_node.with_fault("nvml-driver-mismatch")
    code, out = main(node_args(tmp_path, profile, monkeypatch) + ["--json"])
    doc = json.loads(out)
    assert code == 1 and doc["mode"] == "report" and doc["node"] == "n1"
    assert [f["check"] for f in doc["verdict"]["errors"]] == ["nvml", "driver_version"]
    assert doc["verdict"]["checks"][-1]["reason"].startswith("the live GPUs were not read: nvidia-smi could not list")
    assert [c["argv"][1:] for c in doc["commands"]] == [["-q"]]  # a failing nvidia-smi is not asked again


def test_last_mode_wins(tmp_path, monkeypatch):
    profile, _expected = health_node.with_fault("remapped-rows-pending")
    code, out = main(["--slurm"] + node_args(tmp_path, profile, monkeypatch) + ["--nhc"])
    assert code == 1 and out.startswith("hpc-gres-health: memory GPU 2")


def test_usage_error():
    assert main(["--no-such-option"])[0] == 2
    assert main(["--timeout", "soon"])[0] == 2
    assert main(["--type-pattern", "h100"])[0] == 2
    assert main(["--type-pattern", "h100=(unclosed"])[0] == 2


@pytest.mark.skipif(os.geteuid() != 0, reason="the gres comparison needs device nodes (mknod)")
def test_type_patterns_of_the_inventory(tmp_path, monkeypatch):
    """A site type the built-in patterns do not know is judged with the inventory's pattern."""
    args = node_args(tmp_path, health_node.node("h100-p5"), monkeypatch)
    (tmp_path / "slurm.conf").write_text(SLURM % "hopper")
    (tmp_path / "gres.conf").write_text("NodeName=n1 Name=gpu Type=hopper File=/dev/nvidia[0-7]\n")
    code, out = main(args + ["--json"])
    warnings = [f for f in json.loads(out)["verdict"]["findings"] if f["check"] == "gres_type"]
    assert code == 0 and warnings and warnings[0]["severity"] == "warning"
    code, out = main(args + ["--json", "--type-pattern", "hopper=H100|H200"])
    assert code == 0 and [f for f in json.loads(out)["verdict"]["findings"] if f["check"] == "gres_type"] == []
    code, out = main(args + ["--json", "--type-pattern", "hopper=H200"])
    assert code == 1 and "gres_type" in [f["check"] for f in json.loads(out)["verdict"]["errors"]]


def test_internal_error_never_changes_the_node(monkeypatch):
    def broken(*_args, **_kwargs):
        raise KeyError("gpus")

    monkeypatch.setattr(check, "check_node", broken)
    code, out = main(["--slurm", "--scontrol", "none"])
    assert code == 2
    assert out == "hpc-gres-health: internal error: KeyError: 'gpus'; the node was not drained or resumed\n"


def test_node_name_sources():
    assert check.node_name("x", {"SLURMD_NODENAME": "y"}) == "x"
    assert check.node_name(None, {"SLURMD_NODENAME": "y"}) == "y"
    assert check.node_name(None, {}) == __import__("socket").gethostname().split(".")[0]


def test_nvidia_smi_that_hangs_after_answering_q(tmp_path, monkeypatch):
    """-q answers, the next call (the gres comparison's --query-gpu) hangs: killed, an nvml error, nothing more."""
    args = node_args(tmp_path, health_node.node("h100-p5"), monkeypatch)
    recorded = tmp_path / "q.txt"
    recorded.write_text(nvsmi_fixtures.load("readiness", "nvidia-smi-q", health_node.P5_Q))
    fake = tmp_path / "nvidia-smi"
    fake.write_text('#!/bin/sh\nif [ "$1" = -q ]; then cat %s; else sleep 30; fi\n' % recorded)
    fake.chmod(0o755)
    args[args.index("--nvidia-smi") + 1] = str(fake)
    code, out = main(args + ["--json"])
    doc = json.loads(out)
    errors = doc["verdict"]["errors"]
    assert code == 1
    assert [(f["check"], f["found"]) for f in errors] == [("nvml", "nvidia-smi did not answer within 2 s (killed)")]
    assert errors[0]["expected"].startswith("nvidia-smi --query-gpu=index,uuid,name")
    assert doc["verdict"]["checks"][-1]["reason"].startswith("the live GPUs were not read: nvidia-smi did not answer")
    assert [c["timed_out"] for c in doc["commands"]] == [False, True]


def test_a_kernel_log_file_that_cannot_be_read_is_a_warning_not_a_silent_pass(tmp_path, monkeypatch):
    # the recorded Xid 119 log, named with a typo: the Xid check could not run, and the report says so
    profile, _expected = health_node.with_fault("remapped-rows-pending")
    args = node_args(tmp_path, profile, monkeypatch) + ["--json"]
    args[args.index("--kernel-log") + 1] = str(tmp_path / "kern.log.typo")
    doc = json.loads(main(args)[1])
    [warning] = [f for f in doc["verdict"]["findings"] if f["check"] == "xid"]
    assert warning["severity"] == "warning"
    assert warning["found"] == "%s is not readable" % (tmp_path / "kern.log.typo")
    assert warning["hint"].startswith("Xids are not checked")
    # a log read as asked gives no such warning
    (tmp_path / "again").mkdir()
    doc = json.loads(main(node_args(tmp_path / "again", profile, monkeypatch) + ["--json"])[1])
    assert not [f for f in doc["verdict"]["findings"] if f["check"] == "xid"]


def test_an_nvidia_smi_that_prints_nothing_is_not_reported_as_not_run(tmp_path, monkeypatch):
    args = node_args(tmp_path, health_node.node("h100-p5"), monkeypatch)
    fake = tmp_path / "nvidia-smi"
    fake.write_text("#!/bin/sh\nexit 0\n")
    fake.chmod(0o755)
    args[args.index("--nvidia-smi") + 1] = str(fake)
    doc = json.loads(main(args + ["--json"])[1])
    [nvml] = [c for c in doc["verdict"]["checks"] if c["check"] == "nvml"]
    assert nvml["reason"] == "nvidia-smi -q ran but printed no GPU listing"
