"""The emulated nvidia-smi replays recorded ``nvidia-smi -q`` texts and recorded failures (tests/fixtures/readiness),
and what it prints reads the same through the readiness parsers as the recordings do."""
import json

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness, smi_q

import machines
import nvsmi_fixtures

H100_565 = "h100-8gpu-sxm-565-fabric-completed-clique0-recovery-none.txt"
H100_P5 = "h100-8gpu-sxm-535.183-fabric-completed.txt"  # the bus layout of the recorded AWS p5 lspci


def emulate(tmp_path, profile, *argv):
    path = tmp_path / "profile.json"
    machines.write(str(path), profile)
    return machines.run_emulator(path, argv)


def recorded(name):
    return nvsmi_fixtures.load("readiness", "nvidia-smi-q", name)


@pytest.mark.parametrize("name", [H100_565, "a10-1gpu-535-remapped-rows-pending.txt",
                                  "gtx680-1gpu-470-persistence-disabled.txt"])
def test_q_is_replayed_verbatim(tmp_path, name):
    for flag in ("-q", "--query"):
        assert emulate(tmp_path, machines.smi_q_profile(name), flag) == (0, recorded(name), "")


def test_profile_gpus_agree_with_the_recording(tmp_path):
    rc, out, _err = emulate(tmp_path, machines.smi_q_profile(H100_565), "--query-gpu=index,pci.bus_id,name",
                            "--format=csv,noheader")
    parsed = smi_q.parse_smi_q(recorded(H100_565))
    assert rc == 0
    assert out.splitlines() == ["%d, %s, %s" % (i, g["bus_id"], g["product_name"])
                                for i, g in enumerate(parsed["gpus"])]
    rc, out, _err = emulate(tmp_path, machines.smi_q_profile(H100_565), "-L")
    assert out.splitlines()[0] == "GPU 0: NVIDIA H100 80GB HBM3 (UUID: %s)" % parsed["gpus"][0]["uuid"]


@pytest.mark.parametrize("selector", ["1", "00000000:2A:00.0", "0000:2a:00.0",
                                      "GPU-7c3cadbd-17e5-0913-f69b-c618122ea0cd"])
def test_q_with_i_keeps_the_header_and_one_gpu(tmp_path, selector):
    rc, out, err = emulate(tmp_path, machines.smi_q_profile(H100_565), "-q", "-i", selector)
    parsed = smi_q.parse_smi_q(out)
    assert (rc, err) == (0, "")
    assert (parsed["driver_version"], parsed["attached_gpus"]) == ("565.57.01", 8)
    assert [g["bus_id"] for g in parsed["gpus"]] == ["00000000:2A:00.0"]


def test_q_with_an_unknown_gpu(tmp_path):
    assert emulate(tmp_path, machines.smi_q_profile(H100_565), "-q", "-i", "9")[:2] == (
        2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")


def test_lost_gpu_leaves_q_but_stays_on_lspci(tmp_path):
    """The fault "GPU gone from nvidia-smi, still on lspci": the p5's GPU 3 (86:00.0) marked lost."""
    profile = machines.smi_q_profile(H100_P5)
    profile["gpus"][3]["lost"] = True
    rc, out, _err = emulate(tmp_path, profile, "-q")
    parsed = smi_q.parse_smi_q(out)
    assert rc == 0 and parsed["attached_gpus"] == 7
    assert "00000000:86:00.0" not in [g["bus_id"] for g in parsed["gpus"]]
    lspci = readiness.parse_lspci(nvsmi_fixtures.load("readiness", "lspci",
                                                      "h100-8gpu-sxm5-aws-p5-nvswitch-lspci-grep.txt"))
    result = readiness.readiness_findings(smi_q=parsed, lspci=lspci,
                                          fabric_manager=readiness.parse_fabricmanager("active\n"))
    assert [(f["check"], f["gpu"]) for f in result["findings"]] == [("gpu_count", "00000000:86:00.0")]


def test_unreachable_gpu_in_q(tmp_path):
    profile = machines.smi_q_profile(H100_P5)
    profile["gpus"][2]["lost"] = "unreachable"
    rc, out, err = emulate(tmp_path, profile, "-q")
    assert rc == 15
    assert err == "Unable to determine the device handle for GPU2: 0000:75:00.0: Unknown Error\n"
    assert len(smi_q.parse_smi_q(out)["gpus"]) == 7
    failure = readiness.classify_smi_failure(rc, out, err)
    assert (failure["kind"], failure["gpus"]) == ("device_handle", [{
        "bus_id": "00000000:75:00.0", "reason": "Unknown Error",
        "line": "Unable to determine the device handle for GPU2: 0000:75:00.0: Unknown Error", "index": 2}])


def test_profile_without_a_recording(tmp_path):
    """-q is made from recorded blocks (test_emulator_synth_q.py); a recording, where there is one, wins."""
    profile = machines.load("a100-8gpu-p4d")
    rc, out, err = emulate(tmp_path, profile, "-q")
    assert (rc, err) == (0, "")
    assert smi_q.parse_smi_q(out)["driver_version"] == "535.183.01"
    assert "Product Name                          : NVIDIA A100-SXM4-40GB\n" in out
    assert emulate(tmp_path, profile, "-L")[0] == 0  # everything else as before


@pytest.mark.parametrize("failure, kind, version", [
    ("driver-library-mismatch", "driver_library_mismatch", "550.144"),
    ("driver-library-mismatch-no-version", "driver_library_mismatch", None),
    ("no-devices", "no_devices", None),
    ("no-driver", "no_driver", None),
])
def test_recorded_failures_on_every_call(tmp_path, failure, kind, version):
    (parts, lines, rc) = machines.FAILURES[failure]
    body = nvsmi_fixtures.load("readiness", *parts).split("\n")
    expected = "".join(line + "\n" for line in body[lines[0] - 1:lines[1]])
    profile = machines.with_failure(machines.smi_q_profile(H100_565), failure)
    for argv in (("-q",), ("--query-gpu=index", "--format=csv"), ("mig", "-lgi")):
        assert emulate(tmp_path, profile, *argv) == (rc, expected, ""), argv
    got = readiness.classify_smi_failure(rc, expected, "")
    assert (got["kind"], got["nvml_version"]) == (kind, version)


def test_mismatch_text_is_what_nvidia_smi_printed(tmp_path):
    profile = machines.with_failure(machines.load("a100-8gpu-p4d"), "driver-library-mismatch")
    assert emulate(tmp_path, profile, "-L") == (
        18, "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.144\n", "")


def test_failure_on_stderr_and_inline_text(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["failure"] = {"text": "No devices were found\n", "rc": 6, "stream": "stderr"}
    assert emulate(tmp_path, profile, "-L") == (6, "", "No devices were found\n")


def test_self_contained_inlines_the_recordings(tmp_path):
    profile = machines.self_contained(machines.with_failure(machines.smi_q_profile(H100_565), "no-devices"))
    assert "text_file" not in profile["smi_q"] and "text_file" not in profile["failure"]
    assert profile["smi_q"]["text"] == recorded(H100_565)
    path = tmp_path / "elsewhere.json"
    path.write_text(json.dumps(profile))
    assert machines.run_emulator(path, ["-L"]) == (6, "No devices were found\n", "")
    del profile["failure"]
    path.write_text(json.dumps(profile))
    assert machines.run_emulator(path, ["-q"]) == (0, recorded(H100_565), "")


def test_smi_q_profile_reads_the_gpus():
    profile = machines.smi_q_profile("a100-sxm4-80gb-4gpu-555-fabric-na.txt")
    assert profile["driver_version"] == "555.42.02"
    assert [(g["pci_bus_id"], g["minor"], g["mig_mode"]) for g in profile["gpus"]] == [
        ("00000000:68:00.0", 3, "Disabled"), ("00000000:9E:00.0", 4, "Disabled"), ("00000000:C2:00.0", 5, "Disabled"),
        ("00000000:D4:00.0", 6, "Disabled")]
    assert machines.smi_q_profile("l40s-1gpu-550-pcie.txt")["gpus"][0]["mig_mode"] is None
