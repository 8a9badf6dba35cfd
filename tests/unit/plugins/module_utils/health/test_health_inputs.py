"""What the health check reads on a node: real subprocesses for the timeouts (a hung command and its children
are killed as a group), fake roots for sysfs/procfs, small executables standing in for journalctl, dmesg and
systemctl where their answers are the point."""
import os
import stat
import time

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import inputs
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness

import health_node
import nvsmi_fixtures


def script(directory, name, body):
    path = os.path.join(str(directory), name)
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\n" + body + "\n")
    os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return path


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:  # a zombie is dead for our purposes
        with open("/proc/%d/stat" % pid) as handle:
            return handle.read().split(") ", 1)[1][0] != "Z"
    except OSError:
        return False


# ----------------------------------------------------------------------------------------------------
# commands and timeouts


def test_a_hung_command_and_its_children_are_killed(tmp_path):
    pids = tmp_path / "pids"
    hang = script(tmp_path, "hang", "sleep 60 & echo $! > %s; echo $$ >> %s; echo partial; wait" % (pids, pids))
    start = time.monotonic()
    result = inputs.run_command([hang], 0.5)
    took = time.monotonic() - start
    assert result["timed_out"] and result["rc"] is None and not result["stuck"]
    assert result["stdout"] == "partial\n"
    assert took < 3
    child, shell = [int(x) for x in pids.read_text().split()]
    deadline = time.monotonic() + 2
    while (alive(child) or alive(shell)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(child) and not alive(shell)


def test_describe_a_timeout():
    result = inputs.run_command(["sleep", "5"], 0.2)
    result["limit"] = 0.2
    assert inputs.describe_failure(result) == "sleep did not answer within 0.2 s (killed)"


def test_a_command_that_answers():
    result = inputs.run_command(["sh", "-c", "echo out; echo err >&2; exit 3"], 5)
    assert (result["rc"], result["stdout"], result["stderr"], result["timed_out"]) == (3, "out\n", "err\n", False)


def test_a_command_that_cannot_start(tmp_path):
    result = inputs.run_command([str(tmp_path / "nothing")], 5)
    assert result["rc"] is None and not result["timed_out"] and "nothing" in result["error"]


def test_runner_budget_stops_further_commands():
    runner = inputs.Runner(timeout=5, budget=0.3)
    first = runner.run(["sleep", "5"])
    assert first["timed_out"] and first["limit"] <= 0.3
    second = runner.run(["true"])
    assert second["rc"] is None and "budget" in second["error"]
    runner.extend(5)  # the Slurm calls after the checks get time of their own
    assert runner.run(["true"])["rc"] == 0


def test_runner_path_finds_system_tools_without_path(tmp_path):
    runner = inputs.Runner(env={})
    assert runner.env["PATH"].split(os.pathsep) == list(inputs.SEARCH_PATH)
    assert runner.env["LC_ALL"] == "C"
    assert runner.which("sh") in ("/usr/bin/sh", "/bin/sh")
    assert runner.which(str(tmp_path / "missing")) is None


def test_collect_run_skips_and_raises_on_timeout(tmp_path):
    runner = inputs.Runner(timeout=0.3)
    run = runner.collect_run(lambda argv: argv[-1] == "skip")
    assert run(["true", "skip"]) == (1, "", "not run by the health check")
    assert run(["sh", "-c", "echo hi"]) == (0, "hi\n", "")
    with pytest.raises(inputs.CommandFailed, match="did not answer within 0.3 s"):
        run(["sleep", "5"])


# ----------------------------------------------------------------------------------------------------
# nvidia-smi -q


def emulated(tmp_path, profile, monkeypatch):
    path = health_node.write_profile(str(tmp_path / "profile.json"), profile)
    monkeypatch.setenv("NVSMI_EMU_PROFILE", path)
    return inputs.Runner(timeout=1.5)


def test_read_smi_healthy(tmp_path, monkeypatch):
    runner = emulated(tmp_path, health_node.node("h100-p5"), monkeypatch)
    smi = inputs.read_smi(runner, os.path.join(nvsmi_fixtures.EMULATOR, "nvidia-smi"))
    assert smi["failure"] is None and smi["reason"] is None
    assert [g["bus_id"] for g in smi["smi_q"]["gpus"]][:2] == ["00000000:53:00.0", "00000000:64:00.0"]


def test_read_smi_hung_is_killed(tmp_path, monkeypatch):
    profile, _expected = health_node.with_fault("nvidia-smi-hung")
    runner = emulated(tmp_path, profile, monkeypatch)
    start = time.monotonic()
    smi = inputs.read_smi(runner, os.path.join(nvsmi_fixtures.EMULATOR, "nvidia-smi"))
    assert time.monotonic() - start < 5
    assert smi["smi_q"] is None
    assert smi["failure"]["kind"] == "timeout"
    assert smi["failure"]["message"] == "nvidia-smi did not answer within 1.5 s (killed)"


def test_read_smi_mismatch(tmp_path, monkeypatch):
    profile, _expected = health_node.with_fault("nvml-driver-mismatch")
    runner = emulated(tmp_path, profile, monkeypatch)
    smi = inputs.read_smi(runner, os.path.join(nvsmi_fixtures.EMULATOR, "nvidia-smi"))
    assert (smi["failure"]["kind"], smi["failure"]["nvml_version"], smi["smi_q"]) == (
        "driver_library_mismatch", "580.178", None)


def test_read_smi_missing(tmp_path):
    smi = inputs.read_smi(inputs.Runner(), str(tmp_path / "nvidia-smi"))
    assert smi["path"] is None and "not found" in smi["reason"]


# ----------------------------------------------------------------------------------------------------
# procfs / sysfs


def test_pci_functions_from_a_fake_root_look_like_lspci(tmp_path):
    """sysfs written from the recorded p5 lspci reads the way readiness.parse_lspci reads that lspci."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness

    profile = health_node.node("h100-p5")
    profile["pci"]["gone"] = ["0000:97:00.0"]
    health_node.write_pci(str(tmp_path), health_node.pci_functions(profile))
    got = inputs.read_pci(str(tmp_path))
    recorded = readiness.parse_lspci(nvsmi_fixtures.load("readiness", "lspci", health_node.P5_LSPCI))
    for kind in ("gpus", "nvswitches"):
        assert [d["bus_id"] for d in got[kind]] == [d["bus_id"] for d in recorded[kind]]
        assert [d["class"] for d in got[kind]] == [d["class"] for d in recorded[kind]]
    assert [(d["bus_id"], d["gone"], d["rev"]) for d in got["gpus"] if d["gone"] or d["rev"] != "a1"] == [
        ("00000000:97:00.0", True, "ff")]
    assert got["other"] == []


def test_the_driver_a_pci_function_is_bound_to_is_read_from_sysfs(tmp_path):
    # one GPU passed through to a VM (driver -> vfio-pci), as the recorded lspci -nnk of a Quadro T500 shows it
    profile = health_node.node("h100-p5")
    health_node.write_pci(str(tmp_path), health_node.pci_functions(profile))
    base = tmp_path / "sys" / "bus" / "pci" / "devices"
    first = sorted(p.name for p in base.iterdir())[0]
    drivers = tmp_path / "sys" / "bus" / "pci" / "drivers" / "vfio-pci"
    drivers.mkdir(parents=True)
    os.symlink(str(drivers), str(base / first / "driver"))
    got = inputs.read_pci(str(tmp_path))
    bound = [(d["bus_id"], d["driver"]) for kind in ("gpus", "nvswitches", "other") for d in got[kind] if d["driver"]]
    assert len(bound) == 1 and bound[0][1] == "vfio-pci"
    assert bound[0][0].lower().endswith(first[-7:].lower())


def test_pci_without_sysfs(tmp_path):
    assert inputs.read_pci(str(tmp_path)) is None


def test_non_nvidia_functions_are_left_out(tmp_path):
    health_node.write_pci(str(tmp_path), [
        {"bus": "0000:01:00.0", "vendor": "15b3", "device": "101c", "class": "020700", "revision": None,
         "gone": False},
        {"bus": "0000:02:00.1", "vendor": "10de", "device": "22ba", "class": "040300", "revision": "a1",
         "gone": False}])
    got = inputs.read_pci(str(tmp_path))
    assert got["gpus"] == [] and [d["class"] for d in got["other"]] == ["Audio device"]


def test_proc_version(tmp_path):
    assert inputs.read_proc_version(str(tmp_path))[0] is None
    (tmp_path / "proc" / "driver" / "nvidia").mkdir(parents=True)
    (tmp_path / "proc" / "driver" / "nvidia" / "version").write_text(
        nvsmi_fixtures.load("readiness", "fabricmanager", "proc-driver-nvidia-version-565-open.txt"))
    parsed, path = inputs.read_proc_version(str(tmp_path))
    assert (parsed["version"], parsed["flavour"]) == ("565.57.01", "open")
    assert path == str(tmp_path / "proc" / "driver" / "nvidia" / "version")


# ----------------------------------------------------------------------------------------------------
# kernel log


def test_kernel_log_from_a_file_and_none(tmp_path):
    log = tmp_path / "kern.log"
    log.write_text("NVRM: Xid (PCI:0000:9b:00): 79, GPU has fallen off the bus.\n")
    assert inputs.read_kernel_log(inputs.Runner(), str(log)) == (log.read_text(), str(log))
    assert inputs.read_kernel_log(inputs.Runner(), "none")[0] is None
    assert "not readable" in inputs.read_kernel_log(inputs.Runner(), str(tmp_path / "no"))[1]


def test_kernel_log_auto_does_not_read_the_running_kernel_for_another_root(tmp_path):
    text, why = inputs.read_kernel_log(inputs.Runner(), "auto", root=str(tmp_path))
    assert text is None and "--kernel-log FILE" in why


def test_kernel_log_auto_falls_back_to_dmesg(tmp_path):
    script(tmp_path, "journalctl", "echo '-- No entries --'")
    script(tmp_path, "dmesg", "echo '[ 1843.308145] NVRM: Xid (PCI:0000:9b:00): 119, pid=1, name=x, Timeout'")
    runner = inputs.Runner(env={"PATH": str(tmp_path)})
    text, source = inputs.read_kernel_log(runner, "auto")
    assert source == "dmesg" and "Xid" in text
    assert [r["argv"][1:] for r in runner.runs] == [["-k", "-b", "--no-pager"], []]


def test_kernel_log_journal_that_hangs(tmp_path):
    script(tmp_path, "journalctl", "sleep 30")
    runner = inputs.Runner(timeout=0.3, env={"PATH": str(tmp_path)})
    text, why = inputs.read_kernel_log(runner, "journal")
    assert text is None and why == "journalctl did not answer within 0.3 s (killed)"


# ----------------------------------------------------------------------------------------------------
# fabric manager


def systemctl(tmp_path, show, status=""):
    return script(tmp_path, "systemctl", 'case "$1" in show) printf "%s";; status) printf "%s"; exit 3;; esac'
                  % (show.replace("\n", "\\n"), status.replace("\n", "\\n").replace("%", "%%")))


def test_fabric_manager_running(tmp_path):
    path = systemctl(tmp_path, "LoadState=loaded\nActiveState=active\nSubState=running\nUnitFileState=enabled\n")
    runner = inputs.Runner()
    fm, source = inputs.read_fabric_manager(runner, "systemd", path)
    assert (fm["installed"], fm["active"], fm["state"]) == (True, True, "active (running)")
    assert [r["argv"][1] for r in runner.runs] == ["show"]  # no status call for a running service


def test_fabric_manager_failed_on_a_version_mismatch(tmp_path):
    journal = nvsmi_fixtures.load("readiness", "fabricmanager", "fm-550-version-mismatch-journal-akash-docs.txt")
    path = systemctl(tmp_path, "LoadState=loaded\nActiveState=failed\nSubState=failed\n", journal)
    fm, _source = inputs.read_fabric_manager(inputs.Runner(), "systemd", path)
    assert (fm["installed"], fm["active"], fm["state"]) == (True, False, "failed (failed)")
    assert fm["version_mismatch"] == {"fabric_manager": "550.127.05", "driver": "550.120"}


def test_fabric_manager_not_installed(tmp_path):
    path = systemctl(tmp_path, "LoadState=not-found\nActiveState=inactive\nSubState=dead\n")
    fm, _source = inputs.read_fabric_manager(inputs.Runner(), "systemd", path, root=str(tmp_path))
    assert (fm["installed"], fm["active"]) == (False, False)


def test_fabric_manager_without_systemd_but_with_a_unit_file(tmp_path):
    path = script(tmp_path, "systemctl", "echo 'System has not been booted with systemd as init system' >&2; exit 1")
    unit = tmp_path / "usr" / "lib" / "systemd" / "system"
    unit.mkdir(parents=True)
    (unit / "nvidia-fabricmanager.service").write_text("[Service]\n")
    fm, source = inputs.read_fabric_manager(inputs.Runner(), "systemd", path, root=str(tmp_path))
    assert fm == {"installed": True, "active": None, "state": None}
    assert "not been booted with systemd" in source
    fm, _source = inputs.read_fabric_manager(inputs.Runner(), "systemd", path, root=str(tmp_path / "x"))
    assert fm is None


def test_fabric_manager_from_a_recording(tmp_path):
    status = tmp_path / "status"
    status.write_text(nvsmi_fixtures.load("readiness", "fabricmanager",
                                          "a100-p4d-bottlerocket-systemctl-status-active-running.txt"))
    fm, source = inputs.read_fabric_manager(inputs.Runner(), str(status))
    assert (fm["installed"], fm["active"], source) == (True, True, str(status))
    assert inputs.read_fabric_manager(inputs.Runner(), "none")[0] is None


# ----------------------------------------------------------------------------------------------------
# acknowledgements, Slurm's files


def test_acknowledgements_keep_good_lines_and_report_bad_ones(tmp_path):
    ack = tmp_path / "ack"
    ack.write_text("# comment\n00000000:9B:00.0  119  Sun Feb 23 16:30:13 2025\nnonsense\n*  *  1843.308145\n")
    acks, problems = inputs.read_acknowledgements(str(ack), host="n1")
    assert [(a["gpu"], a["xid"], a["line"]) for a in acks] == [("00000000:9B:00.0", 119, 2), (None, None, 4)]
    assert len(problems) == 1 and "line 3" in problems[0] and "nonsense" in problems[0]
    assert inputs.read_acknowledgements(str(tmp_path / "missing")) == ([], [])


def test_slurm_conf_lookup(tmp_path):
    assert inputs.find_slurm_conf("/x/slurm.conf", {"SLURM_CONF": "/y"}) == "/x/slurm.conf"
    assert inputs.find_slurm_conf(None, {"SLURM_CONF": "/y/slurm.conf"}) == "/y/slurm.conf"
    assert inputs.find_gres_conf(None, "/y/slurm.conf") == "/y/gres.conf"
    assert inputs.find_gres_conf("/z/gres.conf", "/y/slurm.conf") == "/z/gres.conf"


def test_slurm_conf_includes_are_inlined(tmp_path):
    (tmp_path / "slurm.conf").write_text("ClusterName=x\nInclude nodes.d/*.conf\ninclude /nonexistent.conf\n")
    (tmp_path / "nodes.d").mkdir()
    (tmp_path / "nodes.d" / "b.conf").write_text("NodeName=b Gres=gpu:2\n")
    (tmp_path / "nodes.d" / "a.conf").write_text("NodeName=a Gres=gpu:1\n")
    text = inputs.read_slurm_conf(str(tmp_path / "slurm.conf"))
    assert text == "ClusterName=x\nNodeName=a Gres=gpu:1\n\nNodeName=b Gres=gpu:2\n\n"


class RecordedSmi:
    """A Runner whose nvidia-smi answers with a recorded output, a warning line and an exit code (nvidia-smi exits 14
    when it warns that a GPU's infoROM is corrupted: NVIDIA GPU Operator 23.3.1 troubleshooting, "infoROM is
    corrupted (nvidia-smi return code 14)")."""

    def __init__(self, stdout, rc, stderr=""):
        self.result = {"rc": rc, "stdout": stdout, "stderr": stderr, "seconds": 0.1, "timed_out": False,
                       "stuck": False, "error": None}

    def which(self, command):
        return "/usr/bin/" + command

    def run(self, argv, timeout=None):
        return dict(self.result, argv=list(argv))


INFOROM_WARNING = "WARNING: infoROM is corrupted at gpu 0000:3b:00.0\n"


@pytest.mark.parametrize("stdout_extra, stderr", [(INFOROM_WARNING, ""), ("", INFOROM_WARNING)])
def test_read_smi_exit_14_infoROM_corrupted_is_read_and_warned(stdout_extra, stderr):
    listing = nvsmi_fixtures.load("readiness", "nvidia-smi-q", "h100-8gpu-sxm-535-fabric-completed.txt")
    smi = inputs.read_smi(RecordedSmi(listing + stdout_extra, 14, stderr))
    assert (smi["failure"], smi["reason"]) == (None, None)
    assert len(smi["smi_q"]["gpus"]) == 8
    findings = readiness.readiness_findings(smi_q=smi["smi_q"])["findings"]
    # (the recording's GPUs are held down by the power brake: a clocks warning each)
    assert [(f["severity"], f["check"], f["gpu"]) for f in findings if f["check"] != "clocks"] == [
        ("warning", "errors", 1)]


def test_read_smi_exit_14_without_the_warning_stays_a_failure():
    listing = nvsmi_fixtures.load("readiness", "nvidia-smi-q", "h100-8gpu-sxm-535-fabric-completed.txt")
    smi = inputs.read_smi(RecordedSmi(listing, 14))
    assert smi["failure"]["kind"] == "other" and smi["smi_q"] is None
