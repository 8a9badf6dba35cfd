"""readiness: the parsers on every recorded output under tests/fixtures/readiness, and each rule's verdict on them.

Expected values were read off the fixtures by eye. Files are loaded as recorded (only the ``# source:`` header is
taken off), so prompts, ``> `` quotes, CI banners and ``cat /proc/...`` lines stay in what the parsers see.
"""
import os

import re

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness as r
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi_q

import nvsmi_fixtures


def load(kind, name):
    return nvsmi_fixtures.load("readiness", kind, name)


def q(name):
    return smi_q.parse_smi_q(load("nvidia-smi-q", name))


def checks(result, check):
    return [f for f in result["findings"] if f["check"] == check]


def summary(findings):
    return [(f["severity"], f["check"], f["gpu"]) for f in findings]


def test_every_readiness_fixture_is_named_in_a_test():
    here = os.path.dirname(os.path.abspath(__file__))
    text = ""
    for name in ("test_readiness.py", "test_smi_q.py"):
        with open(os.path.join(here, name)) as handle:
            text += handle.read()
    missing = [kind + "/" + name
               for kind in ("nvidia-smi-q", "nvidia-smi-errors", "lspci", "kernel-log", "fabricmanager")
               for name in nvsmi_fixtures.names("readiness/" + kind) if name not in text]
    assert missing == []


def test_findings_have_the_node_verification_shape():
    result = r.readiness_findings(smi_q=q("a10-1gpu-535-remapped-rows-pending.txt"))
    assert result["findings"] and all(
        sorted(f) == ["check", "expected", "found", "gpu", "hint", "severity"] for f in result["findings"])
    assert sorted(result) == ["applied", "findings", "not_applied"]
    assert set(result["applied"]) | set(result["not_applied"]) == set(r.CHECKS)


def test_nothing_read_nothing_applies():
    result = r.readiness_findings()
    assert result["findings"] == [] and result["applied"] == []
    assert result["not_applied"]["fabric"] == "neither nvidia-smi -q nor lspci was read"
    assert result["not_applied"]["xid"] == "the kernel log was not read"


# ------------------------------------------------------------------------------------------- nvidia-smi-errors

# file -> (kind, nvml version, [(bus id, reason)])
SMI_ERRORS = {
    "2015-unable-to-determine-device-handle-old-shape.txt":
        ("device_handle", None, [("00000000:0B:00.0", "Unknown Error")]),
    # the Windows build's wording ("detect")
    "a10-hyperv-windows-unable-to-detect-device-handle-easygpupv276.txt":
        ("device_handle", None, [("00000000:B1:00.0", "Unknown Error")]),
    "open-515-lowercase-gpu-device-handle-not-found-ogkm246.txt":
        ("device_handle", None, [("00000000:01:00.0", "Not Found")]),
    "460-couldnt-communicate-with-driver.txt": ("no_driver", None, []),
    "460-driver-library-mismatch-no-version-line.txt": ("driver_library_mismatch", None, []),
    "ci-550-driver-library-mismatch-nvml-version.txt": ("driver_library_mismatch", "550.144", []),
    "gcp-debian11-couldnt-communicate-with-driver.txt": ("no_driver", None, []),
    "gpu-is-lost-reboot-to-recover.txt":
        ("gpu_lost", None, [("00000000:03:00.0", "GPU is lost. Reboot the system to recover this GPU")]),
    "h100-p5-570-devicequery-802-system-not-yet-initialized.txt": ("system_not_ready", None, []),
    "h100-vm-after-xid79-unable-to-determine-handle-md-quoted.txt":
        ("device_handle", None, [("00000000:91:00.0", "Unknown Error")]),
    "lapras-580-open-driver-library-mismatch-with-proc-version.txt": ("driver_library_mismatch", "580.159", []),
    "p2p-570-driver-library-mismatch-nvml-version.txt": ("driver_library_mismatch", "570.124", []),
    "rtx5090-575-no-devices-were-found.txt": ("no_devices", None, []),
    "rtx5090-no-devices-were-found-rminitadapter-failed-syslog.txt": ("no_devices", None, []),
    "tesla-p4-unable-to-determine-device-handle-unknown-error.txt":
        ("device_handle", None, [("00000000:07:00.0", "Unknown Error")]),
    "truenas-580-driver-library-mismatch-nvml-version-and-proc-version.txt": ("driver_library_mismatch", "580.178", []),
    # the device handle line before "No devices were found" (the only GPU, or every GPU, unreachable): the GPU it
    # names, not "no devices"; two nodes' output of one probe job in the first file
    "h100-two-nodes-device-handle-gpu0-index-and-bus-then-no-devices-probe-job.txt":
        ("device_handle", None, [("00000000:23:00.0", "Unknown Error"), ("00000000:C3:00.0", "Unknown Error")]),
    "rtx5090-device-handle-gpu0-no-bus-id-then-no-devices-handbook.txt": ("device_handle", None, [(None, "Unknown Error")]),
    "rtx5060ti-610-device-handle-gpu1-index-and-bus-x1-slot-prompt.txt":
        ("device_handle", None, [("00000000:84:00.0", "Unknown Error")]),
    # Tables of a successful run: nothing to classify.
    "a40-8gpu-525-table-gpu4-every-field-err-gsp-timeout-ogkm446.txt": ("ok", None, []),
    "geforce-1gpu-525-table-fan-err.txt": ("ok", None, []),
    "h100-8gpu-550-table-healthy.txt": ("ok", None, []),
    "h200-1gpu-580-table-healthy.txt": ("ok", None, []),
    "rtxpro6000-2gpu-610-table-mig-4x1g-kubesimplify.txt": ("ok", None, []),
    "v100-sxm2-32gb-8gpu-460-table-inforom-corrupted.txt": ("ok", None, []),
}


def test_every_error_fixture_is_classified():
    assert sorted(SMI_ERRORS) == nvsmi_fixtures.names("readiness/nvidia-smi-errors")


@pytest.mark.parametrize("name", sorted(SMI_ERRORS))
def test_classify_smi_failure(name):
    kind, version, gpus = SMI_ERRORS[name]
    rc = 0 if kind == "ok" else {"no_driver": 9, "no_devices": 6, "driver_library_mismatch": 18}.get(kind, 15)
    got = r.classify_smi_failure(rc, load("nvidia-smi-errors", name), "")
    assert (got["kind"], got["nvml_version"], [(g["bus_id"], g["reason"]) for g in got["gpus"]]) == (
        kind, version, gpus)


def test_a_gpu_nvml_cannot_open_is_named_by_its_index_where_the_line_has_no_bus_id():
    # R550+ prints NVML's index before the bus id ("for GPU1: 0000:84:00.0: ..."); a line without the bus id names
    # the GPU by that index; the older shape "for GPU0000:08:00.0: ..." has no index
    got = r.classify_smi_failure(15, load("nvidia-smi-errors", "rtx5060ti-610-device-handle-gpu1-index-and-bus-x1-slot-prompt.txt"))
    assert [g["index"] for g in got["gpus"]] == [1]
    got = r.classify_smi_failure(6, load("nvidia-smi-errors", "rtx5090-device-handle-gpu0-no-bus-id-then-no-devices-handbook.txt"))
    [f] = r.readiness_findings(smi_failure=got)["findings"]
    assert (f["check"], f["severity"], f["gpu"], f["expected"]) == ("nvml", "error", 0, "NVML can open GPU 0")
    assert f["hint"].startswith("NVML cannot open this GPU")
    # "No devices were found" after it: nvidia-smi lists no GPU, so every GPU lspci shows is missing from its listing
    lspci = r.parse_lspci("01:00.0 3D controller [0302]: NVIDIA Corporation Device [10de:2b85] (rev a1)\n")
    [count] = checks(r.readiness_findings(smi_failure=got, lspci=lspci), "gpu_count")
    assert (count["severity"], count["gpu"]) == ("error", "00000000:01:00.0")
    old = r.classify_smi_failure(15, load("nvidia-smi-errors", "2015-unable-to-determine-device-handle-old-shape.txt"))
    assert [g["index"] for g in old["gpus"]] == [None]


def test_no_driver_with_a_typographic_apostrophe():
    # as posted in https://github.com/qixuema/envs/issues/4 (U+2018; the sanity test keeps such quotes out of files)
    text = "NVIDIA-SMI has failed because it couldn\u2018t communicate with the NVIDIA driver. Make sure that the latest"
    assert r.classify_smi_failure(9, text + "\n", "")["kind"] == "no_driver"


def test_failure_text_on_stderr_with_empty_stdout():
    got = r.classify_smi_failure(18, "", "Failed to initialize NVML: Driver/library version mismatch\n"
                                         "NVML library version: 550.144\n")
    assert (got["kind"], got["nvml_version"]) == ("driver_library_mismatch", "550.144")
    assert r.classify_smi_failure(0, "index\n0\n", "")["kind"] == "ok"
    assert r.classify_smi_failure(255, "something new\n", "")["kind"] == "other"


@pytest.mark.parametrize("name, nvml, kernel", [
    ("lapras-580-open-driver-library-mismatch-with-proc-version.txt", "580.159", "580.126.09"),
    ("truenas-580-driver-library-mismatch-nvml-version-and-proc-version.txt", "580.178", "580.173.02"),
])
def test_mismatch_names_both_versions(name, nvml, kernel):
    text = load("nvidia-smi-errors", name)
    result = r.readiness_findings(smi_failure=r.classify_smi_failure(18, text),
                                  proc_version=r.parse_proc_driver_version(text))
    [nvml_finding] = checks(result, "nvml")
    assert nvml_finding["severity"] == "error" and nvml in nvml_finding["found"] and kernel in nvml_finding["found"]
    [version_finding] = checks(result, "driver_version")
    assert nvml in version_finding["expected"] and kernel in version_finding["found"]
    assert "gpu_count" in result["not_applied"] and "persistence" in result["not_applied"]


def test_mismatch_without_version_line():
    text = load("nvidia-smi-errors", "460-driver-library-mismatch-no-version-line.txt")
    result = r.readiness_findings(smi_failure=r.classify_smi_failure(18, text))
    [finding] = checks(result, "nvml")
    assert finding["found"] == ("Driver/library version mismatch: NVML library version not printed, loaded kernel "
                                "module version not read (/proc/driver/nvidia/version)")
    assert result["not_applied"]["driver_version"].startswith("the loaded kernel module's version was not read")


def test_p2p_mismatch_versions_agree_on_major_minor_only():
    # NVML prints 570.124 for a 570.124.04 userspace; the kernel module is 570.124.06. The nvml check sees the
    # mismatch; the version comparison cannot (NVML's line is too short), which is why both exist.
    failure = r.classify_smi_failure(18, load("nvidia-smi-errors", "p2p-570-driver-library-mismatch-nvml-version.txt"))
    result = r.readiness_findings(smi_failure=failure, proc_version=r.parse_proc_driver_version("570.124.06\n"))
    assert summary(result["findings"]) == [("error", "nvml", None)]
    assert "driver_version" in result["applied"]


@pytest.mark.parametrize("name, bus", [
    ("tesla-p4-unable-to-determine-device-handle-unknown-error.txt", "00000000:07:00.0"),
    ("gpu-is-lost-reboot-to-recover.txt", "00000000:03:00.0"),
    ("2015-unable-to-determine-device-handle-old-shape.txt", "00000000:0B:00.0"),
    ("a10-hyperv-windows-unable-to-detect-device-handle-easygpupv276.txt", "00000000:B1:00.0"),
    ("open-515-lowercase-gpu-device-handle-not-found-ogkm246.txt", "00000000:01:00.0"),
])
def test_unreachable_gpu_is_an_nvml_error_naming_it(name, bus):
    result = r.readiness_findings(smi_failure=r.classify_smi_failure(15, load("nvidia-smi-errors", name)))
    assert summary(result["findings"]) == [("error", "nvml", bus)]
    # NVML's "Not Found": the driver has no such GPU (it failed to bring it up), which a reset does not cure
    hint = result["findings"][0]["hint"]
    assert ("RmInitAdapter failed" in hint) is name.startswith("open-515")
    assert ("otherwise reset the GPU (nvidia-smi -r) or reboot" in hint) is (
        "Unknown Error" in load("nvidia-smi-errors", name))


@pytest.mark.parametrize("name, kind", [
    ("460-couldnt-communicate-with-driver.txt", "no_driver"),
    ("gcp-debian11-couldnt-communicate-with-driver.txt", "no_driver"),
    ("rtx5090-575-no-devices-were-found.txt", "no_devices"),
    ("h100-p5-570-devicequery-802-system-not-yet-initialized.txt", "system_not_ready"),
])
def test_node_wide_nvml_errors(name, kind):
    result = r.readiness_findings(smi_failure=r.classify_smi_failure(1, load("nvidia-smi-errors", name)))
    [finding] = result["findings"]
    assert (finding["check"], finding["gpu"], finding["hint"]) == ("nvml", None, r._NVML_HINTS[kind])


def test_no_devices_with_rminitadapter_in_syslog():
    text = load("nvidia-smi-errors", "rtx5090-no-devices-were-found-rminitadapter-failed-syslog.txt")
    events = r.parse_kernel_log(text)
    assert [(e["kind"], e["bus_id"], e["message"], e["stamp"]) for e in events] == [
        ("init_failed", "00000000:01:00.0", "RmInitAdapter failed! (0x22:0x56:884)", "Jul 01 22:55:07")]
    lspci = {"gpus": [{"bus_id": "00000000:01:00.0", "description": "NVIDIA Corporation Device [10de:2b85]",
                       "gone": False}], "nvswitches": [], "other": []}
    result = r.readiness_findings(smi_failure=r.classify_smi_failure(6, text), lspci=lspci, kernel_events=events)
    [count] = checks(result, "gpu_count")
    assert count["gpu"] == "00000000:01:00.0" and "RmInitAdapter failed! (0x22:0x56:884)" in count["hint"]
    assert checks(result, "xid") == []


def test_table_fixtures_through_the_rules():
    bad = smi_q.parse_smi_table(load("nvidia-smi-errors", "geforce-1gpu-525-table-fan-err.txt"))
    result = r.readiness_findings(smi_q=bad)
    assert summary(result["findings"]) == [("warning", "persistence", 0), ("error", "errors", 0)]
    assert checks(result, "errors")[0]["found"] == "Fan: ERR!"
    good = smi_q.parse_smi_table(load("nvidia-smi-errors", "h100-8gpu-550-table-healthy.txt"))
    result = r.readiness_findings(smi_q=good)
    assert result["findings"] == [] and "persistence" in result["applied"]
    # a GPU whose every field reads ERR! (a GSP timeout, Xid 119): one error naming each field once, the others
    # nothing (the table shows persistence mode on)
    a40 = smi_q.parse_smi_table(load("nvidia-smi-errors", "a40-8gpu-525-table-gpu4-every-field-err-gsp-timeout-ogkm446.txt"))
    [err] = r.readiness_findings(smi_q=a40)["findings"]
    assert (err["severity"], err["check"], err["gpu"], err["expected"]) == (
        "error", "errors", 4, "every nvidia-smi field readable")
    assert err["found"] == ("Name: ERR!; Volatile Uncorr. ECC: ERR!; Fan: ERR!; Temp: ERR!; Perf: ERR!; "
                            "Pwr:Usage/Cap: ERR!; GPU-Util: ERR!; MIG M.: ERR!")
    h200 = smi_q.parse_smi_table(load("nvidia-smi-errors", "h200-1gpu-580-table-healthy.txt"))
    result = r.readiness_findings(smi_q=h200)
    assert result["findings"] == [] and "persistence" in result["applied"]
    # R610's header (KMD Version), MIG on: healthy
    rtxpro = smi_q.parse_smi_table(load("nvidia-smi-errors", "rtxpro6000-2gpu-610-table-mig-4x1g-kubesimplify.txt"))
    result = r.readiness_findings(smi_q=rtxpro)
    assert result["findings"] == [] and "persistence" in result["applied"]


def test_an_uncorrectable_ecc_error_in_one_mig_device_is_named():
    # the real R590 layout of an H200 with five MIG devices, one instance's SRAM counter set and the GPU's own
    # volatile counters left at 0: only the instance's block says it
    text = load("nvidia-smi-q", "h200-1gpu-590-mig-5-devices-two-ci-one-gi.txt")
    lines = text.split("\n")
    mig_sram = [i for i, line in enumerate(lines) if line.startswith("                SRAM Uncorrectable ")]
    assert len(mig_sram) == 5
    lines[mig_sram[3]] = lines[mig_sram[3]].replace(": 0", ": 2")
    [f] = r.check_memory(smi_q=smi_q.parse_smi_q("\n".join(lines)))["findings"]
    assert (f["severity"], f["check"], f["gpu"]) == ("warning", "memory", 0)
    assert f["found"] == ("MIG device 3 (GPU instance 9, compute instance 0): 2 volatile uncorrectable ECC "
                          "error(s)")
    assert "Xid 94" in f["hint"] and "95" in f["hint"]
    assert r.check_memory(smi_q=smi_q.parse_smi_q(text))["findings"] == []


# ------------------------------------------------------------------------------------------------ nvidia-smi -q

# file -> [(severity, check, gpu)] of readiness_findings(smi_q=...) alone
Q_VERDICTS = {
    "a10-1gpu-535-remapped-rows-pending.txt": [("error", "memory", 0)],
    "a100-sxm4-80gb-4gpu-555-fabric-na.txt": [("error", "memory", 1)],
    "a100-sxm4-80gb-8gpu-510-remapped-rows-pending-excerpt.txt": [("error", "memory", "00000000:10:1C.0")],
    "ecc-errors-sram-uncorrectable-volatile1-aggregate5-excerpt.txt": [("warning", "memory", None)],
    "gh200-1gpu-550-fabric-na.txt": [],
    "gtx680-1gpu-470-persistence-disabled.txt": [("warning", "persistence", 0)],
    # every GPU held at 86 of 1980 MHz by the power brake (HW Slowdown, HW Power Brake Slowdown Active, not idle)
    "h100-8gpu-sxm-535-fabric-completed.txt": [("warning", "clocks", n) for n in range(8)],
    "h100-8gpu-sxm-535.183-fabric-completed.txt": [],
    # under load (P2, Idle Not Active, SM up to 3105 MHz; two with SW Power Cap Active at the power limit): normal
    "rtx4090-8gpu-535-five-under-load-p2.txt": [],
    # clock-gated at rest: SM 0 MHz at P8 (two with SW Power Cap Active)
    "a40-10gpu-550-p8-sm-0mhz.txt": [],
    "h100-8gpu-sxm-565-fabric-completed-clique0-recovery-none.txt": [],
    "h100nvl-2gpu-550-pcie.txt": [],
    "h200-1gpu-passthrough-550-fabric-completed.txt": [],
    "h200-1gpu-vm-580-open-fabric-na-cc-off.txt": [],
    "l40s-1gpu-550-pcie.txt": [],
    "retired-pages-pending-page-blacklist-yes-excerpt.txt": [("error", "memory", None)],
    "rtx4090-8gpu-535-addressing-mode-unknown-error.txt": [("error", "errors", i) for i in range(8)],
    "rtx4090-8gpu-535-healthy.txt": [],
    "rtx5090-1gpu-570-reset-status-deprecated-recovery-none.txt": [],
    "titanv-1gpu-560-persistence-disabled.txt": [("warning", "persistence", 0)],
    "v100-sxm2-16gb-8gpu-550-retired-pages.txt": [("warning", "errors", i) for i in range(8)],
    # -q -d ECC,ROW_REMAPPER -i 52:00.0 after Xid 48: ECC mode unreadable, a row remap pending (the poster's "<===" after
    # "Pending : Yes")
    "h100class-550-q-ecc-rowremapper-pending-ecc-mode-unknown-error.txt": [
        ("error", "memory", "00000000:52:00.0"), ("error", "errors", "00000000:52:00.0")],
    # the poster's pick of -q lines, unindented: Reset Required Yes
    "rtx3090-gpu2-535-q-i2-excerpt-reset-required-not-ready.txt": [("error", "memory", None)],
    # R610: "Driver Version : 610.88 [Deprecated; ... Use KMD Version instead]" and "KMD Version : 610.88"
    "rtx3060-laptop-1gpu-610-windows-deprecated-driver-version-kmd-version.txt": [],
    "mx330-1gpu-465-q-d-performance-markdown-indented-cut.txt": [],
    # HW Power Brake Slowdown Active at 382 MHz, the maximum not in the excerpt: a warning that says so
    "v100-sxm2-32gb-c4130-power-brake-excerpt-no-max-clocks.txt": [("warning", "clocks", None)],
    "vgpu-guest-grid-v100d-8c-535-attached-vgpus-k8s-pod.txt": [],
    # the same vGPU guest twice: CUDA failed unlicensed; after a reboot with nvidia-gridd failed, the grace period
    # (and persistence mode off)
    "vgpu-guest-rtxa6000-24q-535-unlicensed-cuda-operation-not-supported.txt": [("error", "license", 0)],
    # healthy GPUs with MIG on (sweep of 2026-12-07): the MIG devices' own sections give nothing
    "h100-1gpu-590-mig-4-devices-r590-layout-idle.txt": [],
    "h200-1gpu-590-mig-5-devices-two-ci-one-gi.txt": [],
    "gtx1660super-windows-462-wddm-process-insufficient-permissions.txt": [],
    "vgpu-guest-rtxa6000-24q-535-unlicensed-unrestricted-gridd-failed.txt": [
        ("warning", "persistence", 0), ("warning", "license", 0)],
}


def test_r610_versions_are_read_without_the_deprecation_note():
    parsed = q("rtx3060-laptop-1gpu-610-windows-deprecated-driver-version-kmd-version.txt")
    assert (parsed["driver_version"], parsed["cuda_version"]) == ("610.88", "13.3")
    assert r.check_driver_version({"version": "610.88", "jetson": False}, parsed["driver_version"])["findings"] == []
    # the old names alone, with the note (an excerpt without the KMD line)
    old = smi_q.parse_smi_q("Driver Version : 610.88 [Deprecated; will be removed in CUDA 14.0. Use KMD Version "
                            "instead]\nCUDA Version : 13.3 [Deprecated; will be removed in CUDA 14.0. Use CUDA UMD "
                            "Version instead]\n")
    assert (old["driver_version"], old["cuda_version"]) == ("610.88", "13.3")


def test_every_q_fixture_has_a_verdict():
    assert sorted(Q_VERDICTS) == nvsmi_fixtures.names("readiness/nvidia-smi-q")


@pytest.mark.parametrize("name", sorted(Q_VERDICTS))
def test_q_verdicts(name):
    assert summary(r.readiness_findings(smi_q=q(name))["findings"]) == Q_VERDICTS[name]


def test_nvml_not_ready_is_an_unreadable_field():
    text = ("GPU 00000000:39:00.0\n    Product Name : NVIDIA GeForce RTX 3090\n"
            "    Fan Speed : System is not in ready state\n    Persistence Mode : Enabled\n")
    [finding] = r.check_errors(smi_q.parse_smi_q(text))["findings"]
    assert (finding["severity"], finding["found"]) == ("error", "Fan Speed: System is not in ready state")


def test_a_corrupted_inforom_is_a_warning_on_its_gpu():
    table = smi_q.parse_smi_table(load("nvidia-smi-errors", "v100-sxm2-32gb-8gpu-460-table-inforom-corrupted.txt"))
    assert [g["bus_id"] for g in table["gpus"] if g["inforom_corrupted"]] == ["00000008:00:00.0"]
    [finding] = r.check_errors(table)["findings"]
    assert (finding["severity"], finding["gpu"], finding["found"]) == (
        "warning", 7, "nvidia-smi: infoROM is corrupted at gpu 00000008:00:00.0")
    assert "reflash" in finding["hint"]
    # the same warning on nvidia-smi -q's stderr (health/inputs.read_smi marks it from there)
    listing = q("h100-8gpu-sxm-535-fabric-completed.txt")
    assert smi_q.mark_inforom(listing, "WARNING: infoROM is corrupted at gpu 0000:3b:00.0\n") == ["00000000:3B:00.0"]
    assert [(f["severity"], f["gpu"]) for f in r.check_errors(listing)["findings"]] == [("warning", 1)]


def test_a10_memory_finding_text():
    [finding] = r.readiness_findings(smi_q=q("a10-1gpu-535-remapped-rows-pending.txt"))["findings"]
    assert finding["found"] == "remapped rows pending (correctable 0, uncorrectable 4)"
    assert "reset" in finding["hint"]


@pytest.mark.parametrize("name, applied", [
    ("h100-8gpu-sxm-535-fabric-completed.txt", True),
    ("h100-8gpu-sxm-535.183-fabric-completed.txt", True),
    ("h100-8gpu-sxm-565-fabric-completed-clique0-recovery-none.txt", True),
    ("h200-1gpu-passthrough-550-fabric-completed.txt", True),
    ("a100-sxm4-80gb-4gpu-555-fabric-na.txt", False),
    ("h100nvl-2gpu-550-pcie.txt", False),
    ("h200-1gpu-vm-580-open-fabric-na-cc-off.txt", False),
    ("gtx680-1gpu-470-persistence-disabled.txt", False),
    ("rtx5090-1gpu-570-reset-status-deprecated-recovery-none.txt", False),
])
def test_fabric_applies_only_with_a_fabric(name, applied):
    result = r.check_fabric(smi_q=q(name))
    assert (result["applies"], result["findings"]) == (applied, [])
    assert result["fabric_manager_required"] is False  # no NVSwitch on lspci, no fabric manager installed
    if not applied:
        assert result["reason"].startswith("no NVSwitch")


def test_a_vgpu_guest_needs_its_licence_and_only_a_vgpu_guest_is_judged():
    [failing] = r.check_license(q("vgpu-guest-rtxa6000-24q-535-unlicensed-cuda-operation-not-supported.txt"))[
        "findings"]
    assert (failing["found"], failing["expected"]) == (
        "License Status Unlicensed (NVIDIA RTX Virtual Workstation)", "a vGPU software licence (License Status Licensed)")
    assert failing["hint"].startswith("an unlicensed vGPU runs compute at an idle level, or CUDA fails")
    assert "journalctl -u nvidia-gridd" in failing["hint"] and "FeatureType" in failing["hint"]
    [grace] = r.check_license(q("vgpu-guest-rtxa6000-24q-535-unlicensed-unrestricted-gridd-failed.txt"))["findings"]
    assert grace["severity"] == "warning" and "after 20 minutes" in grace["hint"]
    licensed = r.check_license(q("vgpu-guest-grid-v100d-8c-535-attached-vgpus-k8s-pod.txt"))
    assert licensed["applies"] and licensed["findings"] == []  # its expiry, long past now, is not judged
    assert r.readiness_findings(smi_q=q("h100-8gpu-sxm-535.183-fabric-completed.txt"))["not_applied"]["license"] == (
        "no GPU reports a vGPU software licence (not a vGPU guest)")
    # excerpts as published: a guide's `nvidia-smi -q | grep -A 5 "vGPU Software Licensed"` on an H200-70C guest
    # before its token (code index file id 55109344753), and AWS's Windows guide for GRID drivers (file id 9179622570,
    # the section's name before vGPU 13)
    restricted = smi_q.parse_smi_q("    vGPU Software Licensed Product\n        Product Name              : NVIDIA AI "
                                   "Enterprise\n        License Status            : Unlicensed (Restricted)\n")
    [finding] = r.check_license(restricted)["findings"]
    assert (finding["severity"], finding["gpu"], finding["found"]) == (
        "error", None, "License Status Unlicensed (Restricted) (NVIDIA AI Enterprise)")
    grid = smi_q.parse_smi_q("   GRID Licensed Product\n       Product Name              : GRID vGaming\n"
                             "       License Status            : Licensed\n")
    assert grid["gpus"][0]["vgpu_license"] == {"product": "GRID vGaming", "status": "Licensed"}
    assert r.check_license(grid) == {"check": "license", "applies": True, "findings": [], "reason": None}


def test_persistence_and_memory_do_not_apply_without_the_fields():
    result = r.readiness_findings(smi_q=q("gtx680-1gpu-470-persistence-disabled.txt"))
    assert result["not_applied"]["memory"].startswith("no GPU reports remapped rows")
    result = r.readiness_findings(smi_q=q("ecc-errors-sram-uncorrectable-volatile1-aggregate5-excerpt.txt"))
    assert result["not_applied"]["persistence"] == "no GPU reports a persistence mode"


def test_recovery_action_and_reset_required():
    base = q("rtx5090-1gpu-570-reset-status-deprecated-recovery-none.txt")
    gpu = base["gpus"][0]
    for action in ("GPU Reset", "Node Reboot", "Drain P2P", "Drain and Reset", "Bus Reset"):
        gpu["recovery_action"] = action
        [finding] = r.check_memory(base)["findings"]
        assert (finding["gpu"], finding["found"]) == (0, "GPU Recovery Action %s" % action)
    gpu.update(recovery_action="None", reset_required=True, drain_and_reset_recommended=True)
    gpu["remapped_rows"] = {"correctable": 0, "uncorrectable": 9, "pending": False, "failure": True}
    assert [(f["severity"], f["found"]) for f in r.check_memory(base)["findings"]] == [
        ("error", "Remapping Failure Occurred: Yes"), ("error", "Reset Required Yes"),
        ("error", "Drain and Reset Recommended Yes")]


R580_Q = "h200-1gpu-vm-580-open-fabric-na-cc-off.txt"


def test_r580_memory_repair_flags_are_read_and_a_healthy_gpu_passes():
    assert q(R580_Q)["gpus"][0]["memory_repair"] == {
        "channel_repair_pending": False, "tpc_repair_pending": False, "unrepairable_memory": False,
        "sram_threshold_exceeded": False}
    assert q("h100-8gpu-sxm-535-fabric-completed.txt")["gpus"][0]["memory_repair"] == {
        "channel_repair_pending": None, "tpc_repair_pending": None, "unrepairable_memory": None,
        "sram_threshold_exceeded": False}  # R535 prints the SRAM flag only
    assert q("gtx680-1gpu-470-persistence-disabled.txt")["gpus"][0]["memory_repair"] is None
    result = r.check_memory(q(R580_Q))
    assert (result["applies"], result["findings"]) == (True, [])


@pytest.mark.parametrize("fields, found, hint", [
    (["Unrepairable Memory"], "Unrepairable Memory Yes", "RMA criterion"),
    (["SRAM Threshold Exceeded"], "SRAM Threshold Exceeded Yes", "RMA criterion"),
    (["Channel Repair Pending"], "Channel Repair Pending Yes", "the repair happens at the next reset"),
    (["Channel Repair Pending", "TPC Repair Pending"], "Channel Repair Pending Yes, TPC Repair Pending Yes",
     "the repair happens at the next reset"),
])
def test_r580_memory_repair_flags_set_are_errors(fields, found, hint):
    # No recording of a GPU with these flags set is known: the real R580 output with the flags' lines changed.
    text = load("nvidia-smi-q", R580_Q)
    for field in fields:
        text, n = re.subn(r"(\n\s+%s\s+: )No\n" % field, r"\1Yes\n", text)
        assert n == 1
    [finding] = r.check_memory(smi_q.parse_smi_q(text))["findings"]
    assert (finding["severity"], finding["gpu"], finding["found"]) == ("error", 0, found)
    assert hint in finding["hint"]


# ------------------------------------------------------------------------------------------------------ lspci

# file -> (GPUs, NVSwitches, other NVIDIA functions, first GPU bus, first GPU vendor:device, first switch bus,
#          GPUs that read (rev ff))
LSPCI = {
    "a10-1gpu-qemu-vm-lspci-nn.txt": (1, 0, 0, "00000000:06:00.0", "10de:2236", None, 0),
    "a100-8gpu-sxm4-azure-nvswitch-bridges-lspci-nn.txt": (8, 6, 0, "00000001:00:00.0", "10de:20b2", "00000005:00:00.0", 0),
    # an old pci.ids names neither: "3D controller: NVIDIA Corporation Device 20b0", "Bridge: ... Device 1af1"
    "a100-dgx-8gpu-6nvswitch-old-pciids-lspci-grep-prompt.txt": (8, 6, 0, "00000000:07:00.0", "10de:20b0",
                                                                 "00000000:C4:00.0", 0),
    # "lspci -n" line (0300: 10de:0322) and the named line of the same function: one GPU
    "geforce-fx5200-2006-lspci-n-line-and-named-line.txt": (1, 0, 0, "00000000:01:0A.0", "10de:0322", None, 0),
    "gh200-1gpu-domain-0009-lspci-grep.txt": (1, 0, 0, "00000009:01:00.0", "10de:2342", None, 0),
    "gtx1050ti-laptop-lspci-vmm-gpu-rev-ff.txt": (1, 0, 0, "00000000:01:00.0", None, None, 1),
    "h100-8gpu-hgx-kvm-host-4nvswitch-lspci-Dnn-egrep.txt": (8, 4, 0, "00000000:1B:00.0", "10de:2330",
                                                             "00000000:07:00.0", 0),
    "h100-8gpu-sxm5-aws-p5-nvswitch-lspci-grep.txt": (8, 4, 0, "00000000:53:00.0", None, "00000000:CF:00.0", 0),
    # "nVidia Corporation", as pci.ids spelled it before about 2011
    "laptop-2012-old-pciids-nvidia-lowercase-gpu-rev-ff-lspci.txt": (1, 0, 0, "00000000:01:00.0", "10de:0df4", None, 1),
    # the nForce chipset's Ethernet is class Bridge [0680] too: not an NVSwitch
    "nforce-mcp61-ethernet-is-bridge-0680-lspci-nnk-grep.txt": (0, 0, 1, None, None, None, 0),
    # audio, USB and USB Type-C UCSI functions of the board
    "rtx2060m-turing-vga-audio-usb-ucsi-lspci-grep.txt": (1, 0, 3, "00000000:01:00.0", "10de:1f15", None, 0),
    "rtx3050ti-laptop-lspci-mm.txt": (1, 0, 0, "00000000:01:00.0", None, None, 0),
    # lspci -nnk: the GPU bound to vfio-pci (passed through to a VM)
    "quadro-t500-laptop-vfio-pci-passthrough-lspci-nnk.txt": (1, 0, 0, "00000000:01:00.0", "10de:1fbb", None, 0),
}


def test_every_lspci_fixture_is_parsed():
    assert sorted(LSPCI) == nvsmi_fixtures.names("readiness/lspci")


@pytest.mark.parametrize("name", sorted(LSPCI))
def test_parse_lspci(name):
    gpus, switches, others, first, ids, switch, gone = LSPCI[name]
    got = r.parse_lspci(load("lspci", name))
    assert (len(got["gpus"]), len(got["nvswitches"]), len(got["other"])) == (gpus, switches, others)
    assert ((got["gpus"][0]["bus_id"], got["gpus"][0]["vendor_device"]) if got["gpus"] else (None, None)) == (first, ids)
    assert (got["nvswitches"][0]["bus_id"] if got["nvswitches"] else None) == switch
    assert sum(d["gone"] for d in got["gpus"]) == gone
    assert {d["rev"] for d in got["gpus"] if not d["gone"]} <= {"a1"}


def test_lspci_machine_readable_formats_read_like_the_default_one():
    mm = r.parse_lspci(load("lspci", "rtx3050ti-laptop-lspci-mm.txt"))["gpus"][0]
    assert (mm["class"], mm["description"], mm["rev"], mm["gone"]) == (
        "3D controller", "NVIDIA Corporation GA107M [GeForce RTX 3050 Ti Mobile]", "a1", False)
    vmm = r.parse_lspci(load("lspci", "gtx1050ti-laptop-lspci-vmm-gpu-rev-ff.txt"))["gpus"][0]
    assert (vmm["class"], vmm["description"], vmm["rev"]) == (
        "3D controller", "NVIDIA Corporation GP107M [GeForce GTX 1050 Ti Mobile]", "ff")
    # with -nn the ids come in brackets, with -n alone bare
    nn = r.parse_lspci('01:00.0 "3D controller [0302]" "NVIDIA Corporation [10de]" "GA107M [GeForce RTX 3050 Ti '
                       'Mobile] [25a0]" -ra1 -p00 "Dell [1028]" "Device [0b19]"\n')["gpus"][0]
    assert (nn["class_code"], nn["vendor_device"]) == ("0302", "10de:25a0")
    n = r.parse_lspci("Slot:\t01:00.0\nClass:\t0302\nVendor:\t10de\nDevice:\t1c8c\nRev:\ta1\n\n")["gpus"][0]
    assert (n["class_code"], n["vendor_device"], n["rev"]) == ("0302", "10de:1c8c", "a1")
    fx = r.parse_lspci(load("lspci", "geforce-fx5200-2006-lspci-n-line-and-named-line.txt"))["gpus"][0]
    assert (fx["class"], fx["class_code"], fx["description"]) == (
        "VGA compatible controller", "0300", "nVidia Corporation NV34 [GeForce FX 5200]")


def test_a_gpu_gone_from_an_old_laptop_is_found_and_an_nforce_bridge_needs_no_fabric_manager():
    old = r.parse_lspci(load("lspci", "laptop-2012-old-pciids-nvidia-lowercase-gpu-rev-ff-lspci.txt"))
    result = r.check_gpu_count(old, smi_failure=r.classify_smi_failure(6, "No devices were found\n"))
    assert [f["found"] for f in result["findings"]] == [
        "lspci: nVidia Corporation Device 0df4 (rev ff): the device does not answer"]
    nforce = r.parse_lspci(load("lspci", "nforce-mcp61-ethernet-is-bridge-0680-lspci-nnk-grep.txt"))
    assert r.check_fabric(lspci=nforce)["applies"] is False
    assert r.pci_kind("Bridge", "0680", "10de:22a3", "NVIDIA Corporation GH100 [H100 NVSwitch]") == "nvswitches"
    assert r.pci_kind("Bridge", "0680", "10de:03ef", "NVIDIA Corporation MCP61 Ethernet") == "other"
    assert r.pci_kind("Bridge", None, None, "nVidia Corporation MCP51 Ethernet Controller") == "other"


def test_lspci_details():
    a10 = r.parse_lspci(load("lspci", "a10-1gpu-qemu-vm-lspci-nn.txt"))["gpus"][0]
    assert (a10["class"], a10["class_code"], a10["description"]) == (
        "3D controller", "0302", "NVIDIA Corporation GA102GL [A10] [10de:2236]")
    azure = r.parse_lspci(load("lspci", "a100-8gpu-sxm4-azure-nvswitch-bridges-lspci-nn.txt"))
    assert [d["bus_id"][:8] for d in azure["gpus"]] == ["0000000%s" % c for c in "1234BCDE"]
    assert {d["vendor_device"] for d in azure["nvswitches"]} == {"10de:1af1"}
    p5 = r.parse_lspci(load("lspci", "h100-8gpu-sxm5-aws-p5-nvswitch-lspci-grep.txt"))
    assert {d["description"] for d in p5["nvswitches"]} == {"NVIDIA Corporation GH100 [H100 NVSwitch]"}


def test_rev_ff_is_gone():
    text = load("lspci", "a10-1gpu-qemu-vm-lspci-nn.txt").replace("[10de:2236] (rev a1)", "[10de:2236] (rev ff)")
    lspci = r.parse_lspci(text)
    assert lspci["gpus"][0]["gone"] is True
    result = r.check_gpu_count(lspci, smi_failure=r.classify_smi_failure(6, "No devices were found\n"))
    assert [(f["gpu"], f["found"]) for f in result["findings"]] == [
        ("00000000:06:00.0",
         "lspci: NVIDIA Corporation GA102GL [A10] [10de:2236] (rev ff): the device does not answer")]


def test_gpu_count_p5_lspci_against_its_nvidia_smi():
    lspci = r.parse_lspci(load("lspci", "h100-8gpu-sxm5-aws-p5-nvswitch-lspci-grep.txt"))
    full = q("h100-8gpu-sxm-535.183-fabric-completed.txt")  # the same bus layout (53, 64, ..., CA)
    assert r.check_gpu_count(lspci, full)["findings"] == []
    # GPU 3 (86:00.0) fell off: NVML no longer lists it, lspci still does.
    lost = dict(full, gpus=[g for g in full["gpus"] if g["bus_id"] != "00000000:86:00.0"], attached_gpus=7)
    [finding] = r.check_gpu_count(lspci, lost)["findings"]
    assert (finding["severity"], finding["gpu"]) == ("error", "00000000:86:00.0")
    assert finding["found"] == "nvidia-smi lists 7 of the 8 NVIDIA GPUs on lspci, not this one"


def test_a_gpu_passed_through_to_a_vm_is_not_counted_missing():
    # lspci -k: the GPU is vfio-pci's, for a virtual machine; nvidia-smi never lists it and nothing is wrong
    lspci = r.parse_lspci(load("lspci", "quadro-t500-laptop-vfio-pci-passthrough-lspci-nnk.txt"))
    assert lspci["gpus"][0]["driver"] == "vfio-pci"
    no_devices = r.classify_smi_failure(6, load("nvidia-smi-errors", "rtx5090-575-no-devices-were-found.txt"))
    assert r.check_gpu_count(lspci, smi_failure=no_devices)["findings"] == []
    # the same GPU with no driver bound (the nvidia module failed to take it) is missing
    unbound = load("lspci", "quadro-t500-laptop-vfio-pci-passthrough-lspci-nnk.txt").replace(
        "        Kernel driver in use: vfio-pci\n", "")
    assert summary(r.check_gpu_count(r.parse_lspci(unbound), smi_failure=no_devices)["findings"]) == [
        ("error", "gpu_count", "00000000:01:00.0")]


def test_a_driver_line_counts_for_the_function_right_above_it_only():
    text = load("lspci", "quadro-t500-laptop-vfio-pci-passthrough-lspci-nnk.txt")
    # a grep that kept the GPU's slot and driver lines and another function's driver line without its slot line
    grep = text.replace("        Kernel driver in use: vfio-pci\n", "        Kernel driver in use: nvidia\n") + \
        "        Kernel driver in use: vfio-pci\n"
    assert r.parse_lspci(grep)["gpus"][0]["driver"] == "nvidia"
    # quoted in Markdown, indented, and as lspci -vmmk prints it
    assert r.parse_lspci("".join("> " + line + "\n" for line in text.splitlines()))["gpus"][0]["driver"] == "vfio-pci"
    vmm = ("Slot:\t01:00.0\nClass:\t3D controller\nVendor:\tNVIDIA Corporation\nDevice:\tTU117GLM [Quadro T500 "
           "Mobile]\nRev:\ta1\nDriver:\tvfio-pci\nModule:\tnouveau\n\n")
    assert r.parse_lspci(vmm)["gpus"][0]["driver"] == "vfio-pci"


def test_a_failed_probe_in_the_kernel_log_goes_into_the_missing_gpus_hint():
    lspci = r.parse_lspci(load("lspci", "a10-1gpu-qemu-vm-lspci-nn.txt"))  # its GPU at 06:00.0
    no_devices = r.classify_smi_failure(6, load("nvidia-smi-errors", "rtx5090-575-no-devices-were-found.txt"))
    log = load("kernel-log", "t4x4-dl380-probe-failed-request-mem-region-0M-dmesg-gpuop232.txt").replace(
        "0000:af:00.0", "0000:06:00.0")
    [finding] = r.check_gpu_count(lspci, smi_failure=no_devices, kernel_events=r.parse_kernel_log(log))["findings"]
    assert finding["hint"].startswith("kernel log: nvidia: probe of 0000:06:00.0 failed with error -1 (the nvidia "
                                      "module could not take the GPU")
    assert "Above 4G decoding" in finding["hint"]


def test_gpu_count_no_devices_and_not_applied():
    lspci = r.parse_lspci(load("lspci", "a10-1gpu-qemu-vm-lspci-nn.txt"))
    no_devices = r.classify_smi_failure(6, load("nvidia-smi-errors", "rtx5090-575-no-devices-were-found.txt"))
    assert summary(r.check_gpu_count(lspci, smi_failure=no_devices)["findings"]) == [
        ("error", "gpu_count", "00000000:06:00.0")]
    mismatch = r.classify_smi_failure(18, load("nvidia-smi-errors", "ci-550-driver-library-mismatch-nvml-version.txt"))
    assert r.check_gpu_count(lspci, smi_failure=mismatch)["reason"] == \
        "nvidia-smi could not list GPUs (nvml: driver_library_mismatch)"
    excerpt = q("a100-sxm4-80gb-8gpu-510-remapped-rows-pending-excerpt.txt")
    assert r.check_gpu_count(lspci, excerpt)["applies"] is False


# ----------------------------------------------------------------------------------------------- fabricmanager

# file -> parse_fabricmanager fields (active, state, version_mismatch, nothing_to_do, nvl5, errors)
FM = {
    "8gpu-nvswitch-fabricmanager-log-multicast-team.txt":
        (None, None, None, False, None, ["detected NVSwitch non-fatal error 12028 on fid 0 on NVSwitch pci bus id "
                                         "00000000:86:00.0 physical id 3 port 61"]),
    "a100-p4d-bottlerocket-systemctl-status-active-running.txt": (True, "active (running)", None, False, None, []),
    "b200-bottlerocket-nvlsm-systemctl-status-active-running.txt": (True, "active (running)", None, False, True, []),
    "fm-525-vs-530-version-mismatch-message-only.txt":
        (False, None, {"fabric_manager": "525.85.12", "driver": "530.41.03"}, False, None, []),
    "fm-530-version-mismatch-syslog-line.txt":
        (False, None, {"fabric_manager": "530.30.02", "driver": "530.41.03"}, False, None, []),
    "fm-550-version-mismatch-journal-akash-docs.txt":
        (False, None, {"fabric_manager": "550.127.05", "driver": "550.120"}, False, None, []),
    "h100-p5-570-journalctl-fabricmanager-started.txt": (True, None, None, False, False, []),
    "rtx4090-no-nvswitch-fabricmanager-failed-nothing-to-do-journal.txt": (False, None, None, True, False, []),
    # the journal in a Chinese locale ("11月 15"): the start failed, nothing to do (no NVSwitch)
    "fm-a40-520-nothing-to-do-journal-chinese-month-gpuop610.txt": (False, None, None, True, None, []),
    # a restart that failed: the journal shows the earlier start, then the stop
    "fm-h20-ppcie-restart-failed-journal-started-then-stopped-nvtrust128.txt": (False, None, None, False, False, []),
    # killed by a signal: "Active: failed (Result: signal)", "Main PID: 9946 (code=killed, signal=KILL)"
    "fm-580-systemctl-status-failed-result-signal.txt": (False, "failed (Result: signal)", None, False, None, []),
    "h100-kvm-guest-systemctl-status-active-running-process-line.txt": (True, "active (running)", None, False, None,
                                                                        []),
    # a setting of its config file it cannot use: it does not start
    "h200x8-talos-fm-config-item-invalid-value-sidero511.txt": (False, None, None, False, None, []),
}
PROC_VERSIONS = {
    "proc-driver-nvidia-version-384-proprietary.txt":
        ("384.98", "proprietary", "x86_64", None, None, "Thu Oct 26 15:16:01 PDT 2017", False),
    "proc-driver-nvidia-version-525-open-distro-build-no-date.txt":
        ("525.60.11", "open", "x86_64", "Release Build", "archlinux-builder@localhost", None, False),
    "proc-driver-nvidia-version-565-open.txt":
        ("565.57.01", "open", "x86_64", "Release Build", "dvs-builder@U16-A24-9-2", "Thu Oct 10 12:15:00 UTC 2024",
         False),
    "proc-driver-nvidia-version-580-proprietary.txt":
        ("580.173.02", "proprietary", "x86_64", None, None, "Tue Jun 23 08:38:17 UTC 2026", False),
    # Nix build: "(nixbld@)" with an empty host, no date after it, trailing blanks.
    "proc-driver-nvidia-version-580.159.04-open-nixbld.txt":
        ("580.159.04", "open", "x86_64", "Release Build", "nixbld@", None, False),
    "proc-driver-nvidia-version-jetson-l4t-35.3.1-aarch64.txt":
        ("35.3.1", "open", "aarch64", "Release Build", "buildbrain@mobile-u64-6289-d7000",
         "Sun Mar 19 08:09:33 PDT 2023", True),
    # before 2007 drivers were numbered 1.0-NNNN: not a Jetson's L4T release
    "proc-driver-nvidia-version-1.0-9746-x86-2006-quoted.txt":
        ("1.0-9746", "proprietary", "x86", None, None, "Fri Dec 15 09:54:45 PST 2006", False),
    "proc-driver-nvidia-version-390.46-ppc64le.txt":
        ("390.46", "proprietary", "ppc64le", None, None, "Fri Mar 16 21:03:39 PDT 2018", False),
    # a Jetson on L4T R36 prints a driver version (540.4.0), which NVML prints too
    "proc-driver-nvidia-version-540.4.0-jetson-orin-r36-open.txt":
        ("540.4.0", "open", "aarch64", "Release Build", "buildbrain@mobile-u64-6336-d8000",
         "Tue Jan 7 17:35:12 PST 2025", False),
}
# GCC lines that are not "gcc version ...": none (a one-line quote), and the Jetson module's odd text
GCC = {"proc-driver-nvidia-version-1.0-9746-x86-2006-quoted.txt": None,
       "proc-driver-nvidia-version-540.4.0-jetson-orin-r36-open.txt": "collect2: error: ld returned 1 exit status"}
FABRIC_GREPS = ("azure-nvlink-node-fabric-completed-insufficient-resources.txt",
                "gb200-mnnvl-fabric-grep-clique2-health-unhealthy.txt", "h100-p5-570-fabric-completed-grep.txt",
                "h100-p5-570-fabric-in-progress-grep.txt")


def test_a_config_file_setting_the_fabric_manager_cannot_use_is_named_in_the_hint():
    fm = r.parse_fabricmanager(load("fabricmanager", "h200x8-talos-fm-config-item-invalid-value-sidero511.txt"))
    assert fm["config_error"] == "fabric manager config file item: FABRIC_NODE_CONFIG_FILE has an invalid value"
    [finding] = r._fabric_manager_findings(fm, "550.127.05")
    assert finding["severity"] == "error" and finding["found"] == "nvidia-fabricmanager not running"
    assert finding["hint"].startswith("the fabric manager does not start: 'fabric manager config file item: "
                                      "FABRIC_NODE_CONFIG_FILE has an invalid value'; correct that setting")


def test_every_fabricmanager_fixture_is_parsed():
    assert sorted(list(FM) + list(PROC_VERSIONS) + list(FABRIC_GREPS)) == \
        nvsmi_fixtures.names("readiness/fabricmanager")


@pytest.mark.parametrize("name", sorted(FM))
def test_parse_fabricmanager(name):
    got = r.parse_fabricmanager(load("fabricmanager", name))
    assert (got["active"], got["state"], got["version_mismatch"], got["nothing_to_do"], got["nvl5"],
            got["errors"]) == FM[name]


def test_fabricmanager_command_lines_and_is_active():
    b200 = r.parse_fabricmanager(load("fabricmanager", "b200-bottlerocket-nvlsm-systemctl-status-active-running.txt"))
    assert b200["command"] == "/usr/bin/nv-fabricmanager -c /etc/nvidia/fabricmanager.cfg -g 0xe09d7303003f3bf8"
    assert r.parse_fabricmanager("inactive\n")["active"] is False
    assert r.parse_fabricmanager("active\n")["active"] is True
    assert r.parse_fabricmanager("     Active: failed (Result: exit-code) since Mon\n")["state"] == \
        "failed (Result: exit-code)"
    killed = r.parse_fabricmanager(load("fabricmanager", "fm-580-systemctl-status-failed-result-signal.txt"))
    assert killed["failed"] is True
    assert r.check_fabric(lspci=r.parse_lspci(load("lspci", "h100-8gpu-hgx-kvm-host-4nvswitch-lspci-Dnn-egrep.txt")),
                          fabric_manager=killed)["findings"][0]["severity"] == "error"
    # systemctl status' "Process: 2114 ExecStart=... (code=exited, status=0/SUCCESS)" comes before the CGroup line
    guest = r.parse_fabricmanager(load("fabricmanager",
                                       "h100-kvm-guest-systemctl-status-active-running-process-line.txt"))
    assert guest["command"] == "/usr/bin/nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg"
    old = r.parse_proc_driver_version(load("fabricmanager", "proc-driver-nvidia-version-1.0-9746-x86-2006-quoted.txt"))
    assert r.check_driver_version(old, "1.0-9746")["findings"] == []
    assert summary(r.check_driver_version(old, "1.0-9755")["findings"]) == [("error", "driver_version", None)]


@pytest.mark.parametrize("name", sorted(PROC_VERSIONS))
def test_parse_proc_driver_version(name):
    got = r.parse_proc_driver_version(load("fabricmanager", name))
    assert (got["version"], got["flavour"], got["arch"], got["build_type"], got["builder"], got["date"],
            got["jetson"]) == PROC_VERSIONS[name]
    if name in GCC:
        assert got["gcc"] == GCC[name]
    else:
        assert got["gcc"].startswith("gcc version ")


def test_proc_version_other_shapes():
    assert r.parse_proc_driver_version("595.45.04\n")["version"] == "595.45.04"  # /sys/module/nvidia/version
    assert r.parse_proc_driver_version("cat: /proc/driver/nvidia/version: No such file or directory\n") is None
    jetson = r.parse_proc_driver_version(load("fabricmanager",
                                              "proc-driver-nvidia-version-jetson-l4t-35.3.1-aarch64.txt"))
    assert r.check_driver_version(jetson, "35.3.1")["applies"] is False
    ok = r.parse_proc_driver_version(load("fabricmanager", "proc-driver-nvidia-version-565-open.txt"))
    assert r.check_driver_version(ok, "565.57.01") == {"check": "driver_version", "applies": True, "reason": None,
                                                       "findings": []}
    assert summary(r.check_driver_version(ok, "565.77")["findings"]) == [("error", "driver_version", None)]


def test_h200_node_recorded_on_our_lent_machine_is_ready():
    """The H200 VM's own recordings together (nvidia-smi -q, the dmesg excerpt, /proc/driver/nvidia/version),
    as the health check read them there: no finding; fabric does not apply (no NVSwitch, Fabric State N/A)."""
    node = q("h200-1gpu-vm-580-open-fabric-na-cc-off.txt")
    events = r.parse_kernel_log(load("kernel-log", "h200-vm-580-open-driver-load-no-xid-dmesg-excerpt.txt"))
    proc = r.parse_proc_driver_version(load("fabricmanager", "proc-driver-nvidia-version-580.159.04-open-nixbld.txt"))
    assert events[0]["version"] == "580.159.04" and proc["gcc"] == "gcc version 15.3.0 (GCC)"
    result = r.readiness_findings(smi_q=node, kernel_events=events, proc_version=proc)
    assert result["findings"] == []
    assert {"driver_version", "persistence", "memory", "xid", "errors"} <= set(result["applied"])
    assert "fabric" in result["not_applied"]


def p5_node(fabric_grep=None, fm=None):
    """The AWS p5 of the fixtures: its lspci (8 H100 + 4 NVSwitch) and an 8-GPU nvidia-smi -q of the same layout;
    its GPUs' fabric block replaced by one of the recorded p5 greps."""
    node = q("h100-8gpu-sxm-535.183-fabric-completed.txt")
    if fabric_grep:
        fabric = smi_q.parse_smi_q(load("fabricmanager", fabric_grep))["gpus"][0]["fabric"]
        for gpu in node["gpus"]:
            gpu["fabric"] = dict(fabric)
    lspci = r.parse_lspci(load("lspci", "h100-8gpu-sxm5-aws-p5-nvswitch-lspci-grep.txt"))
    return node, lspci, fm


def test_p5_fabric_completed_and_fabric_manager_started():
    node, lspci, _log = p5_node("h100-p5-570-fabric-completed-grep.txt")
    fm = r.parse_fabricmanager(load("fabricmanager", "h100-p5-570-journalctl-fabricmanager-started.txt"))
    result = r.check_fabric(node, lspci, fm, node["driver_version"])
    assert (result["applies"], result["fabric_manager_required"], result["mnnvl"], result["findings"]) == (
        True, True, False, [])
    assert r.readiness_findings(smi_q=node, lspci=lspci, fabric_manager=fm)["findings"] == []


def test_p5_fabric_in_progress_is_an_error_per_gpu():
    node, lspci, _log = p5_node("h100-p5-570-fabric-in-progress-grep.txt")
    result = r.check_fabric(node, lspci, r.parse_fabricmanager("inactive\n"), node["driver_version"])
    assert summary(result["findings"]) == [("error", "fabric", i) for i in range(8)] + [("error", "fabric", None)]
    assert result["findings"][0]["found"] == "fabric State In Progress, Status N/A"
    assert result["findings"][-1]["found"] == "nvidia-fabricmanager inactive"


def test_fabric_manager_stopped_on_an_nvswitch_node():
    node, lspci, _log = p5_node()
    result = r.readiness_findings(smi_q=node, lspci=lspci, fabric_manager=r.parse_fabricmanager("failed\n"))
    assert summary(result["findings"]) == [("error", "fabric", None)]
    result = r.readiness_findings(smi_q=node, lspci=lspci)
    assert summary(result["findings"]) == [("warning", "fabric", None)]  # state not read


@pytest.mark.parametrize("name, found", [
    ("fm-530-version-mismatch-syslog-line.txt", "fabric manager 530.30.02, driver 530.41.03"),
    ("fm-525-vs-530-version-mismatch-message-only.txt", "fabric manager 525.85.12, driver 530.41.03"),
    ("fm-550-version-mismatch-journal-akash-docs.txt", "fabric manager 550.127.05, driver 550.120"),
])
def test_fabric_manager_version_mismatch(name, found):
    node, lspci, _log = p5_node()
    [finding] = r.check_fabric(node, lspci, r.parse_fabricmanager(load("fabricmanager", name)),
                               node["driver_version"])["findings"]
    assert finding["found"].startswith(found)


def test_fabric_manager_package_version_against_driver():
    node, lspci, _log = p5_node()
    fm = dict(r.parse_fabricmanager("active\n"), version="535.161.08")
    [finding] = r.check_fabric(node, lspci, fm, node["driver_version"])["findings"]
    assert (finding["expected"], finding["found"]) == ("fabric manager version = driver version 535.183.01",
                                                       "fabric manager 535.161.08")


def test_nothing_to_do_on_a_switchless_box_with_fabric_manager_installed():
    fm = dict(r.parse_fabricmanager(load("fabricmanager",
                                         "rtx4090-no-nvswitch-fabricmanager-failed-nothing-to-do-journal.txt")),
              installed=True)
    # No NVSwitch and no fabric state: the check does not apply, whatever the fabric manager says.
    result = r.check_fabric(q("rtx4090-8gpu-535-healthy.txt"), {"gpus": [], "nvswitches": [], "other": []}, fm)
    assert result["applies"] is False


def test_a_fabric_in_progress_without_nvswitch_on_the_bus_points_at_the_host_not_at_starting_the_fabric_manager():
    """A VM given SXM GPUs but not their NVSwitches: the GPU waits for a fabric this node cannot manage."""
    node, p5_lspci, _log = p5_node("h100-p5-570-fabric-in-progress-grep.txt")
    no_switch = dict(p5_lspci, nvswitches=[])
    findings = r.check_fabric(node, no_switch)["findings"]
    assert len(findings) == 8 and all(f["severity"] == "error" for f in findings)
    assert "lspci shows no NVSwitch on this node: in a VM with pass-through GPUs" in findings[0]["hint"]
    # with the NVSwitches on the bus (or lspci not read), starting the fabric manager is the advice
    for lspci in (p5_lspci, None):
        assert r.check_fabric(node, lspci)["findings"][0]["hint"].startswith(
            "the GPU has not joined the NVLink fabric: start nvidia-fabricmanager")


def test_nothing_to_do_says_which_fabric_manager_cannot_work_here():
    journal = load("fabricmanager", "rtx4090-no-nvswitch-fabricmanager-failed-nothing-to-do-journal.txt")
    node, lspci, _log = p5_node()
    hints = {}
    for name, text in (("journal", journal),
                       # the same messages without the service's exit lines: the fabric manager stops after them
                       ("messages", "\n".join(line.split(": ", 1)[1] for line in journal.splitlines()[:2]) + "\n"),
                       ("nvl5", journal.replace("Detected Pre-NVL5 system", "started") +
                        "nv-fabricmanager -c /usr/share/nvidia/nvswitch/fabricmanager.cfg -g 0x1234\n")):
        fm = r.parse_fabricmanager(text)
        assert fm["active"] is False and fm["nothing_to_do"], name
        [finding] = r.check_fabric(node, lspci, fm, node["driver_version"])["findings"]
        hints[name] = finding["hint"]
    assert hints["journal"] == hints["messages"]
    assert "found no NVSwitch to manage (NV_WARN_NOTHING_TO_DO on a pre-NVL5 system)" in hints["journal"]
    assert "NVLSM" not in hints["journal"]
    assert hints["nvl5"].endswith("on B200-class (NVL5) systems NVLSM must run first")


def test_azure_nvswitch_lspci_with_a_running_fabric_manager():
    lspci = r.parse_lspci(load("lspci", "a100-8gpu-sxm4-azure-nvswitch-bridges-lspci-nn.txt"))
    fm = r.parse_fabricmanager(load("fabricmanager", "a100-p4d-bottlerocket-systemctl-status-active-running.txt"))
    result = r.check_fabric(None, lspci, fm)
    assert (result["applies"], result["fabric_manager_required"], result["findings"]) == (True, True, [])


def test_fabric_log_errors_are_parsed_not_judged():
    fm = r.parse_fabricmanager(load("fabricmanager", "8gpu-nvswitch-fabricmanager-log-multicast-team.txt"))
    assert fm["active"] is None
    node, lspci, _log = p5_node()
    assert summary(r.check_fabric(node, lspci, fm, "535.183.01")["findings"]) == [("warning", "fabric", None)]


def test_azure_status_insufficient_resources():
    excerpt = smi_q.parse_smi_q(load("fabricmanager", "azure-nvlink-node-fabric-completed-insufficient-resources.txt"))
    [finding] = r.check_fabric(excerpt)["findings"]
    assert finding["found"] == "fabric State Completed, Status Insufficient Resources"


def test_gb200_domain_needs_no_fabric_manager():
    excerpt = smi_q.parse_smi_q(load("fabricmanager", "gb200-mnnvl-fabric-grep-clique2-health-unhealthy.txt"))
    assert r.is_mnnvl(excerpt)
    lspci = {"gpus": [], "nvswitches": [{"bus_id": "00000000:05:00.0"}], "other": []}
    result = r.check_fabric(excerpt, lspci, None, "570.133.20")
    assert (result["applies"], result["mnnvl"], result["fabric_manager_required"]) == (True, True, False)
    assert [(f["severity"], f["found"]) for f in result["findings"]] == [
        ("warning", "fabric Health Summary Unhealthy")]
    # Not yet in its NVLink domain: ClusterUUID zero (a GB200 by name) or CliqueId missing.
    excerpt["gpus"][0].update(product_name="NVIDIA GB200")
    excerpt["gpus"][0]["fabric"].update(cluster_uuid="00000000-0000-0000-0000-000000000000", health_summary=None)
    [finding] = r.check_fabric(excerpt)["findings"]
    assert finding["found"] == "ClusterUUID 00000000-0000-0000-0000-000000000000, CliqueId 2"


# ------------------------------------------------------------------------------------------------- kernel-log

# file -> [(kind, bus id, xid, stamp)]
KERNEL = {
    "a100-xid63-row-remapper-new-row-reset-to-activate.txt": [("xid", "00000000:10:1C.0", 63, None)],
    # the kernel's PCIe error recovery giving up on the GPU (no NVRM line at all), twice; the audio function's and the
    # root port's lines are not the GPU's
    "aer-fatal-sdes-cmplto-nvidia-cant-recover-no-nvrm-dmesg-H-returnn1500.txt": [
        ("aer_failed", "00000000:03:00.0", None, "+0.000844"), ("aer_failed", "00000000:03:00.0", None, "+0.000921")],
    "rtx5090-egpu-610-aer-cmplto-cant-recover-xid31-ogkm1229.txt": [
        ("aer_failed", "00000000:63:00.0", None, None), ("xid", "00000000:63:00.0", 31, None)],
    "xid48-dbe-xid63-dynamic-page-retirement-reboot-to-activate-nvdocker849.txt": [
        ("xid", "00000000:8A:00.0", 48, "Mon Oct 29 12:07:39 2018"),
        ("xid", "00000000:8A:00.0", 63, "Mon Oct 29 12:07:40 2018")],
    "geforce-laptop-2015-xid32-xid31-old-shape-dmesg.txt": [
        ("xid", "00000000:01:00.0", 32, "24128.828315"), ("xid", "00000000:01:00.0", 32, "24128.828608"),
        ("xid", "00000000:01:00.0", 31, "24128.834365")],
    "h100-vm-xid79-pid-unknown-sxid20034-dmesg-md-quoted.txt": [
        ("xid", "00000000:91:00.0", 79, "6781741.548779"), ("off_bus", "00000000:91:00.0", None, "6781741.548783")] + [
        ("sxid", bus, 20034, stamp) for bus, stamp in [
            ("00000000:06:00.0", "6781753.400584"), ("00000000:05:00.0", "6781753.404587"),
            ("00000000:07:00.0", "6781753.404848"), ("00000000:05:00.0", "6781753.406566"),
            ("00000000:07:00.0", "6781753.407899"), ("00000000:05:00.0", "6781753.408138"),
            ("00000000:07:00.0", "6781753.409504"), ("00000000:05:00.0", "6781753.409792")]],
    "h100-xe9680-xid119-gsp-timeout-dmesg-T.txt": [
        ("xid", "00000000:9B:00.0", 119, stamp) for stamp in (
            "Sun Feb 23 16:24:18 2025", "Sun Feb 23 16:24:24 2025", "Sun Feb 23 16:24:30 2025",
            "Sun Feb 23 16:27:12 2025", "Sun Feb 23 16:30:13 2025")],
    "h100-xid13-pid-unknown-xid109-ctx-switch-timeout-dmesg-ctime-md-quoted.txt": [
        ("xid", "00000000:CB:00.0", 13, "Fri Aug 30 11:43:09 2024")] * 3 + [
        ("xid", "00000000:CB:00.0", 109, "Fri Aug 30 11:43:14 2024")],
    # Only the NVRM load line is an event; taint, Nvlink Core, FBHUB interrupt and persistence notice are not.
    "h200-vm-580-open-driver-load-no-xid-dmesg-excerpt.txt": [("driver_load", None, None, "0.591721")],
    "nvlink5-590-xid45-caused-by-previous-xid145-149-journal.txt": [
        ("xid", "00000000:%s:00.0" % b, 45, None) for b in ("DC", "ED", "BA", "97", "DC", "BA", "ED")],
    "pci-10de-26b5-570-fallen-off-bus-at-probe-no-xid-dmesg.txt": [
        ("off_bus", "00000000:B3:00.0", None, "1843.308145"), ("driver_load", None, None, "1843.439669")],
    "rtx5080-595-xid62-pmu-halted-xid154-gpu-reset-required.txt": [
        ("xid", "00000000:01:00.0", 62, None), ("xid", "00000000:01:00.0", 154, None)],
    "rtx5090-595-proprietary-requires-open-modules-journal.txt": [
        ("driver_load", None, None, "May 11 19:25:29"), ("open_required", "00000000:01:00.0", None, "May 11 19:25:29"),
        ("init_failed", "00000000:01:00.0", None, "May 11 19:25:29")],
    # Talos "host: kern: warning: [ISO]: " prefix; the GSP trace lines before the Xid are no events
    "a100sxm4x8-talos-kern-iso-xid119-gsp-timeout-vllm40652.txt": [
        ("xid", "00000000:0B:00.0", 119, "2026-04-22T21:29:21.342163186Z")],
    # dmesg --decode --time-format=iso
    "gpud-dmesg-decode-iso-xid13x16-xid43.txt": [
        ("xid", "00000000:38:00.0", 13, "2025-01-21T04:41:44,%s+00:00" % us) for us in (
            "283302", "283390", "283575", "283671", "283758", "283937", "284042", "284250", "284345", "284433",
            "284616", "284705", "284792", "284971", "285060", "285147")] + [
        ("xid", "00000000:38:00.0", 43, "2025-01-21T04:41:44,287197+00:00")],
    # journal in a Polish locale (month "kwi"); the GPU's UUID line is no event
    "gpu07-590-xid38-xid109-journal-polish-month-ogkm1045.txt": [
        ("xid", "00000000:07:00.0", 38, "kwi 15 07:56:59")] + [("xid", "00000000:07:00.0", 109, "kwi 15 07:56:59")] * 5,
    # the older "GPU at <bus> has fallen off the bus." (no Xid 79 line)
    "optimus-laptop-2014-gpu-at-has-fallen-off-bus-old-shape-dmesg-bumblebee554.txt": [
        ("off_bus", "00000000:01:00.0", None, "49.261458"), ("off_bus", "00000000:01:00.0", None, "49.261472")],
    # bare NVRM lines indented as a code block: three messages, not one
    "rhel8-xid79-pid-no-name-rminitadapter-nvidia-readme-560-quoted-popos3363.txt": [
        ("xid", "00000000:09:00.0", 79, None), ("off_bus", "00000000:09:00.0", None, None),
        ("init_failed", "00000000:09:00.0", None, None)],
    # API mismatch: the message's four lines as dmesg, the journal, bare lines, rsyslog's #012, and dmesg repeating
    # the time on each line
    "api-mismatch-367-journal-aligned-continuation-nvdocker182.txt": [("api_mismatch", None, None, "Aug 26 14:08:07")],
    "api-mismatch-390-bare-lines-negativo17-43.txt": [("api_mismatch", None, None, None)],
    "api-mismatch-535-vs-530-rsyslog-012-escapes-stackhpc287.txt": [("api_mismatch", None, None, "Jun 30 11:07:05")],
    "api-mismatch-570-vgpu-guest-same-stamp-every-line-dmesg-vgpuarchive1.txt": [
        ("driver_load", None, None, "6.252567"), ("api_mismatch", None, None, "8957.099615")],
    "api-mismatch-570-vs-575-journal-client-nvidia-powerd-ogkm829.txt": [("api_mismatch", None, None, "Apr 19 12:34:42")],
    "api-mismatch-570.153-vs-570.144-rminitadapter-no-gsp-firmware-dmesg-bazzite2668.txt": [
        ("api_mismatch", None, None, stamp) for stamp in ("12.014918", "12.105293", "12.107719")] + [
        ("init_failed", "00000000:07:00.0", None, "23.991672")],
    # R595: the driver prints an Xid 154 (recovery action) after the fatal Xid, in the journal and in rsyslog's
    # RFC 3339 stamps
    "rtx4080-595-journal-host-xid79-xid154-node-reboot-gpu-lost-kargarisaac.txt": [
        ("xid", "00000000:01:00.0", 79, "Jun 01 20:11:11"), ("off_bus", "00000000:01:00.0", None, "Jun 01 20:11:11"),
        ("xid", "00000000:01:00.0", 154, "Jun 01 20:11:11"), ("gpu_lost", None, None, "Jun 01 20:11:11")],
    "rtx4080-595-rsyslog-rfc3339-xid79-off-bus-xid154-node-reboot-kargarisaac.txt": [
        ("xid", "00000000:01:00.0", 79, "2026-06-01T15:55:06.218036+03:00"),
        ("off_bus", "00000000:01:00.0", None, "2026-06-01T15:55:06.218037+03:00"),
        ("gpu_lost", None, None, "2026-06-01T15:55:06.218447+03:00"),
        ("xid", "00000000:01:00.0", 154, "2026-06-01T15:55:06.218530+03:00")],
    "rtxpro6000-595-xid120-gsp-exception-xid154-journal-no-host-forum364958.txt": [
        ("xid", "00000000:01:00.0", 120, "Mar 29 15:38:59"), ("xid", "00000000:01:00.0", 154, "Mar 29 15:38:59")],
    # an NVLink5 Xid 145 the driver calls Nonfatal (NVIDIA's decode: IGNORE / XID_154_EVAL), its line cut in the post
    "aws-node-xid145-rlw-nonfatal-unclosed-paren-nvsentinel1357.txt": [("xid", "00000000:C5:00.0", 145, None)],
    # NVLink5 lines of GB200-class nodes quoted in gpud's pull requests; PCI 0000:00:00 names no GPU
    "gb200-nvlink5-xid144-nonfatal-xid149-netir-link-evt-pci-0000-00-00-gpud1160.txt": [
        ("xid", "00000000:01:00.0", 144, None), ("xid", None, 149, None), ("xid", None, 149, None)],
    "gb200-nvlink5-xid149-netir-fatal-0019-xid149-pci-0000-00-00-xid145-rxpipe-nonfatal-gpud1174.txt": [
        ("xid", "00000019:01:00.0", 149, None), ("xid", None, 149, None), ("xid", "00000018:01:00.0", 145, None)],
    # PCI domain 0001, the GSP trace lines around each Xid no events
    "a100x8-domain0001-xid119-gsp-timeout-45s-two-gpus-dmesg-T-vllm40652-lqquan.txt": [
        ("xid", "00000001:6C:00.0", 119, "Sun Apr 26 23:12:26 2026"),
        ("xid", "00000001:96:00.0", 119, "Sun Apr 26 23:13:11 2026")],
    # dmesg -H: "+seconds" stamps, each line its own message (sweep of 2026-12-06)
    "rtx5080-laptop-580-open-dmesg-H-relative-stamps-gsp-fmc-boot-error-ogkm935.txt": [
        ("driver_load", None, None, "+0.009910")],
    # the driver's failed checks after the GPU stopped answering, no Xid line and no bus id
    "gpu-lost-from-the-bus-nvcheckokfailed-no-xid-dmesg-john5835.txt": [
        ("gpu_lost", None, None, stamp) for stamp in ("35.564060", "35.564062", "35.564063", "35.564065")],
    # the driver refusing work until a reset, no Xid and no bus id; the GspRmAlloc line before it is no event
    "gsp-nv-err-reset-required-no-xid-dmesg-T-sichek51.txt": [
        ("reset_required", None, None, "Sun Jan 11 09:52:01 2026")],
    "gb200-nv-err-reset-required-dmesg-one-line-dradriver982.txt": [("reset_required", None, None, "373871.354096")],
    # the kernel's driver-core line for a failed probe (no NVRM: prefix); the request_mem_region message is no event
    "t4x4-dl380-probe-failed-request-mem-region-0M-dmesg-gpuop232.txt": [
        ("probe_failed", "00000000:AF:00.0", None, "204.163305")],
    # NVIDIA's example lines in a driver source comment: prefix and quotes around each, bare (no time)
    "nvidia-rm-source-comment-xid94-xid95-rst-d-rst-flags-ga100.txt": [
        ("xid", "00000000:01:00.0", 94, None), ("xid", "00000000:01:00.0", 94, None),
        ("xid", "00000000:01:00.0", 95, None)],
    "gpu-19-00-xid48-dbe-xid63-row-remap-xid94-contained-dmesg-iso-peermem-gpud.txt": [
        ("xid", "00000000:19:00.0", 48, "2024-11-15T12:02:03,470068+00:00"),
        ("xid", "00000000:19:00.0", 63, "2024-11-15T12:02:03,498753+00:00")] + [
        ("xid", "00000000:19:00.0", 94, "2024-11-15T12:02:03,%s+00:00" % us) for us in (
            "506595", "521616", "552642", "561522", "570101", "578496", "587265", "630019", "638794")],
    "journal-lowercase-month-april-xid79-pid-name-vivaldi-off-bus-ogkm1010.txt": [
        ("xid", "00000000:01:00.0", 79, "april 24 16:22:15"), ("off_bus", "00000000:01:00.0", None, "april 24 16:22:15")],
    "h100-ppcie-tdx-570-rminitadapter-failed-sxid22013-nonfatal-dmesg-nvtrust124.txt": [
        ("init_failed", "00000000:05:00.0", None, "38.268983")] + [
        ("sxid", "00000000:04:00.0", 22013, stamp) for stamp in (
            "38.269013", "38.271047", "38.279408", "38.281613", "38.283653", "38.286738", "38.288716")],
    "rtx5080-laptop-rminitadapter-failed-then-xid120-gsp-crashcat-dmesg-grep-ogkm876.txt": [
        ("init_failed", "00000000:01:00.0", None, "84.811879"), ("xid", "00000000:01:00.0", 120, "87.526689")],
    # SXids the driver prints without a severity word (sweep of 2026-12-07)
    "nvswitch-sxid26006-26008-soe-halted-no-severity-word-nvsentinel.txt": [
        ("sxid", "00000004:00:00.0", xid, None) for xid in (26008, 26006, 26007, 26006)],
    # nouveau took the GPUs: the module was not called for them (the "No NVIDIA graphics adapter probed!" of an
    # earlier load is no event)
    "v100x3-nouveau-probe-routine-not-called-3-devices-dmesg-bigdata133.txt": [
        ("probe_skipped", None, None, "188549.976351")],
    # neither the iwlwifi WARNING splat nor nvidia-modeset's "WARNING: GPU:0: Lost display notification" is an event
    "journal-nixos-iwlwifi-warning-xid16-xid8-xid32-modeset-warning.txt": [
        ("xid", "00000000:01:00.0", xid, "Sep 09 12:24:%s" % sec)
        for xid, sec in [(16, "27"), (8, "31")] + [(32, "31")] * 7 + [(32, "34")] * 2 + [(32, "39")] * 2],
    "gtx660-384-xid61-pmu-breakpoint-after-resume-console.txt": [
        ("xid", "00000000:01:00.0", 61, "975.844436"), ("xid", "00000000:01:00.0", 61, "975.850605")],
    # pid='<unknown>' quoted
    "llmjp-a055-xid140-uncorrectable-ecc-dmesg-T-ansible-items.txt": [
        ("xid", "00000000:2A:00.0", 140, "Sun Aug 25 %s 2024" % t)
        for t in ("20:10:45", "20:10:51", "20:10:52", "20:11:08", "20:11:09", "20:26:17", "20:31:38")],
    "h100-xid64-all-reserved-rows-remapped-xid94-dmesg-imbue.txt": [
        ("xid", "00000000:0F:00.0", 94, "2397166.983093"), ("xid", "00000000:0F:00.0", 64, "2397166.923949")],
    # the Xid 119 banner line after them names no Xid ("_kgspLogXid119: ***...") and is no event
    "a100sxm4x8-talos-kern-iso-xid45-74-154-vllm40652.txt": [
        ("xid", "00000000:48:00.0", xid, "2026-04-22T21:26:20.%sZ" % ns)
        for xid, ns in ((45, "599488292"), (45, "599595837"), (74, "599716692"), (154, "695845708"))],
    # crashes and hangs in the driver's modules (sweep of 2026-12-07): one event per crash, its first line's time
    "driver-crash-340-i686-eip-in-nvidia-no-first-line-dmesg-ubuntuforums.txt": [
        ("driver_crash", None, None, "72.799496")],
    # the first line lost its "[ ": no time
    "driver-crash-470-null-deref-sbatchd-collapsed-blanks-gpuop274.txt": [("driver_crash", None, None, None)],
    # the excerpt ends before the pc line: the module that crashed cannot be told
    "driver-crash-arm64-oops-bti-insmod-no-pc-line-ogkm771.txt": [],
    # the second Oops is at a stack address, the RIP printed again after the end of the trace is the same crash
    "driver-crash-invalid-opcode-irq-nvidia-thread-second-oops-syslog-ubuntuforums.txt": [
        ("driver_crash", None, None, "3076.302042")],
    "driver-crash-nvidia-modeset-xorg-syslog-ubuntuforums.txt": [("driver_crash", None, None, "98.305905")],
    "driver-crash-nvidia-uvm-suspend-syslog-ubuntuforums.txt": [("driver_crash", None, None, "18883.633804")],
    "driver-crash-old-format-ip-line-nvidia-smi-azure-nc-msdocs.txt": [("driver_crash", None, None, "32.811290")],
    "driver-hang-525-a30-xid119-nvidia-smi-blocked-120s-in-nvidia-dmesg-T-ogkm446.txt": [
        ("xid", "00000000:61:00.0", 119, "Fri Mar 3 04:%s 2023" % t) for t in (
            "23:22", "24:07", "24:52", "25:38", "26:23", "27:08", "27:53", "28:38", "29:23", "30:08", "30:53", "31:38",
            "32:23", "33:08", "33:53", "34:38", "35:23")] + [
        ("driver_crash", None, None, "Fri Mar 3 04:36:03 2023"), ("xid", "00000000:61:00.0", 119, "Fri Mar 3 04:36:08 2023"),
        ("xid", "00000000:61:00.0", 119, "Fri Mar 3 04:36:53 2023")],
    "driver-hang-rtx2080ti-xid62-stall-blocked-soft-lockup-md-bold-ubuntuforums.txt": [
        ("xid", "00000000:02:00.0", 62, "94555.573310"), ("xid", "00000000:02:00.0", 31, "94556.085056")] + [
        ("xid", "00000000:02:00.0", 45, stamp) for stamp in (
            "94558.085056", "94558.087626", "94558.090174", "94558.589088", "94558.591566", "94559.093060",
            "94559.095561", "94559.098059", "94559.100552", "94560.601022", "94560.603464", "94560.605997",
            "94560.608458", "94560.610856", "94560.613302", "94560.615733", "94560.618185", "94560.620655",
            "94560.623070", "94560.625559", "94560.627971", "94560.630432")] + [
        ("driver_crash", None, None, stamp) for stamp in ("94626.718836", "94731.516213", "124630.280245")],
    # a WARNING in btrfs on a node with the driver loaded: the driver only in "Modules linked in"
    "warning-in-btrfs-on-a-node-with-nvidia-loaded-no-driver-frame.txt": [],
}
# file -> (client version, kernel module version) of each api_mismatch event
API_MISMATCH = {
    "api-mismatch-367-journal-aligned-continuation-nvdocker182.txt": [("367.44", "367.35")],
    "api-mismatch-390-bare-lines-negativo17-43.txt": [("390.25", "390.12")],
    "api-mismatch-535-vs-530-rsyslog-012-escapes-stackhpc287.txt": [("535.54.03", "530.30.02")],
    "api-mismatch-570-vgpu-guest-same-stamp-every-line-dmesg-vgpuarchive1.txt": [("570.148.08", "570.148.06")],
    "api-mismatch-570-vs-575-journal-client-nvidia-powerd-ogkm829.txt": [("570.133.07", "575.51.02")],
    "api-mismatch-570.153-vs-570.144-rminitadapter-no-gsp-firmware-dmesg-bazzite2668.txt": [("570.153.02", "570.144")] * 3,
}
# file -> [(severity, gpu)] of the xid check with no acknowledgement
XID_VERDICTS = {
    # a crash or a hang in the driver: an error for the node (no GPU named), beside the Xids of the GPU
    "driver-crash-340-i686-eip-in-nvidia-no-first-line-dmesg-ubuntuforums.txt": [("error", None)],
    "driver-crash-470-null-deref-sbatchd-collapsed-blanks-gpuop274.txt": [("error", None)],
    "driver-crash-arm64-oops-bti-insmod-no-pc-line-ogkm771.txt": [],
    "driver-crash-invalid-opcode-irq-nvidia-thread-second-oops-syslog-ubuntuforums.txt": [("error", None)],
    "driver-crash-nvidia-modeset-xorg-syslog-ubuntuforums.txt": [("error", None)],
    "driver-crash-nvidia-uvm-suspend-syslog-ubuntuforums.txt": [("error", None)],
    "driver-crash-old-format-ip-line-nvidia-smi-azure-nc-msdocs.txt": [("error", None)],
    "driver-hang-525-a30-xid119-nvidia-smi-blocked-120s-in-nvidia-dmesg-T-ogkm446.txt": [
        ("error", "00000000:61:00.0"), ("error", None)],
    "driver-hang-rtx2080ti-xid62-stall-blocked-soft-lockup-md-bold-ubuntuforums.txt": [
        ("error", "00000000:02:00.0"), ("error", None)],
    "warning-in-btrfs-on-a-node-with-nvidia-loaded-no-driver-frame.txt": [],
    # a GPU the kernel could not recover from an uncorrected PCIe error: failed until a reboot (the Xid 31 after it is
    # a symptom, not the job's fault)
    "aer-fatal-sdes-cmplto-nvidia-cant-recover-no-nvrm-dmesg-H-returnn1500.txt": [("error", "00000000:03:00.0")],
    "rtx5090-egpu-610-aer-cmplto-cant-recover-xid31-ogkm1229.txt": [("error", "00000000:63:00.0")],
    "xid48-dbe-xid63-dynamic-page-retirement-reboot-to-activate-nvdocker849.txt": [("error", "00000000:8A:00.0")],
    # a row marked for remapping, in effect after a reset: pending, as the memory check calls it from -q
    "a100-xid63-row-remapper-new-row-reset-to-activate.txt": [("error", "00000000:10:1C.0")],
    "geforce-laptop-2015-xid32-xid31-old-shape-dmesg.txt": [],
    # the Xid 79, and a fatal SXid 20034 on each of the three NVSwitches (their Severity/Data lines are not)
    "h100-vm-xid79-pid-unknown-sxid20034-dmesg-md-quoted.txt": [
        ("error", "00000000:91:00.0"), ("error", "NVSwitch 00000000:06:00.0"),
        ("error", "NVSwitch 00000000:05:00.0"), ("error", "NVSwitch 00000000:07:00.0")],
    "h100-xe9680-xid119-gsp-timeout-dmesg-T.txt": [("error", "00000000:9B:00.0")],
    "h100-xid13-pid-unknown-xid109-ctx-switch-timeout-dmesg-ctime-md-quoted.txt": [("error", "00000000:CB:00.0")],
    "h200-vm-580-open-driver-load-no-xid-dmesg-excerpt.txt": [],
    "nvlink5-590-xid45-caused-by-previous-xid145-149-journal.txt": [
        ("error", "00000000:DC:00.0"), ("error", "00000000:ED:00.0"), ("error", "00000000:BA:00.0"),
        ("error", "00000000:97:00.0")],
    "pci-10de-26b5-570-fallen-off-bus-at-probe-no-xid-dmesg.txt": [("error", "00000000:B3:00.0")],
    "rtx5080-595-xid62-pmu-halted-xid154-gpu-reset-required.txt": [("error", "00000000:01:00.0")],
    "rtx5090-595-proprietary-requires-open-modules-journal.txt": [],
    "a100sxm4x8-talos-kern-iso-xid119-gsp-timeout-vllm40652.txt": [("error", "00000000:0B:00.0")],
    "gpud-dmesg-decode-iso-xid13x16-xid43.txt": [],
    "gpu07-590-xid38-xid109-journal-polish-month-ogkm1045.txt": [("error", "00000000:07:00.0")],
    "optimus-laptop-2014-gpu-at-has-fallen-off-bus-old-shape-dmesg-bumblebee554.txt": [("error", "00000000:01:00.0")],
    "rhel8-xid79-pid-no-name-rminitadapter-nvidia-readme-560-quoted-popos3363.txt": [("error", "00000000:09:00.0")],
    "rtx4080-595-journal-host-xid79-xid154-node-reboot-gpu-lost-kargarisaac.txt": [("error", "00000000:01:00.0")],
    "rtx4080-595-rsyslog-rfc3339-xid79-off-bus-xid154-node-reboot-kargarisaac.txt": [("error", "00000000:01:00.0")],
    "rtxpro6000-595-xid120-gsp-exception-xid154-journal-no-host-forum364958.txt": [("error", "00000000:01:00.0")],
    "aws-node-xid145-rlw-nonfatal-unclosed-paren-nvsentinel1357.txt": [],
    "gb200-nvlink5-xid144-nonfatal-xid149-netir-link-evt-pci-0000-00-00-gpud1160.txt": [("error", None)],
    "gb200-nvlink5-xid149-netir-fatal-0019-xid149-pci-0000-00-00-xid145-rxpipe-nonfatal-gpud1174.txt": [
        ("error", "00000019:01:00.0"), ("error", None)],
    "a100x8-domain0001-xid119-gsp-timeout-45s-two-gpus-dmesg-T-vllm40652-lqquan.txt": [
        ("error", "00000001:6C:00.0"), ("error", "00000001:96:00.0")],
    "rtx5080-laptop-580-open-dmesg-H-relative-stamps-gsp-fmc-boot-error-ogkm935.txt": [],
    # a node-level error: the lines name no GPU
    "gpu-lost-from-the-bus-nvcheckokfailed-no-xid-dmesg-john5835.txt": [("error", None)],
    "gsp-nv-err-reset-required-no-xid-dmesg-T-sichek51.txt": [("error", None)],
    "gb200-nv-err-reset-required-dmesg-one-line-dradriver982.txt": [("error", None)],
    "t4x4-dl380-probe-failed-request-mem-region-0M-dmesg-gpuop232.txt": [],
    # the contained 94s (RST: No) are the job's; the 95 is a reset
    "nvidia-rm-source-comment-xid94-xid95-rst-d-rst-flags-ga100.txt": [("error", "00000000:01:00.0")],
    # the Xid 48 (double bit error: reset); 63 and 94 are the driver containing it
    "gpu-19-00-xid48-dbe-xid63-row-remap-xid94-contained-dmesg-iso-peermem-gpud.txt": [("error", "00000000:19:00.0")],
    "journal-lowercase-month-april-xid79-pid-name-vivaldi-off-bus-ogkm1010.txt": [("error", "00000000:01:00.0")],
    # non-fatal SXids; the GPU that failed to initialise is the gpu_count check's (lspci against nvidia-smi)
    "h100-ppcie-tdx-570-rminitadapter-failed-sxid22013-nonfatal-dmesg-nvtrust124.txt": [],
    "rtx5080-laptop-rminitadapter-failed-then-xid120-gsp-crashcat-dmesg-grep-ogkm876.txt": [("error", "00000000:01:00.0")],
    # the NVSwitch's management engine halted: no severity word, a warning on the NVSwitch
    "nvswitch-sxid26006-26008-soe-halted-no-severity-word-nvsentinel.txt": [("warning", "NVSwitch 00000004:00:00.0")],
    "h100-xid64-all-reserved-rows-remapped-xid94-dmesg-imbue.txt": [("error", "00000000:0F:00.0")],
    "a100sxm4x8-talos-kern-iso-xid45-74-154-vllm40652.txt": [("error", "00000000:48:00.0")],
    "v100x3-nouveau-probe-routine-not-called-3-devices-dmesg-bigdata133.txt": [],
    # catalogue rows "Unused" (CONTACT_SUPPORT): a warning quoting the row; the Xid 8 and 32 (RESTART_APP) and the
    # iwlwifi WARNING splat and nvidia-modeset's "WARNING:" message give nothing
    "journal-nixos-iwlwifi-warning-xid16-xid8-xid32-modeset-warning.txt": [("warning", "00000000:01:00.0")],
    "gtx660-384-xid61-pmu-breakpoint-after-resume-console.txt": [("warning", "00000000:01:00.0")],
    "llmjp-a055-xid140-uncorrectable-ecc-dmesg-T-ansible-items.txt": [("error", "00000000:2A:00.0")],
}
XID_VERDICTS.update((name, []) for name in API_MISMATCH)


@pytest.mark.parametrize("name", sorted(n for n in XID_VERDICTS if XID_VERDICTS[n]))
def test_the_acknowledgement_line_a_finding_gives_deals_with_every_event_it_names(name):
    # the hint's line, copied into the acknowledgement file, leaves that GPU no finding: also where the driver
    # printed an Xid 154 after the fatal Xid (R560+), so the GPU has two Xid numbers
    events = r.parse_kernel_log(load("kernel-log", name))
    findings = r.check_xid(events)["findings"]
    lines = [re.search(r"acknowledge with the line '([^']*)'", f["hint"]).group(1) for f in findings]
    assert r.check_xid(events, r.parse_acknowledgements("\n".join(lines) + "\n"))["findings"] == []
    for finding, line in zip(findings, lines):  # each line covers its own GPU only
        others = [f for f in findings if f is not finding]
        assert r.check_xid(events, r.parse_acknowledgements(line + "\n"))["findings"] == others


def test_the_fault_is_shown_with_the_recovery_action_of_the_xid_154_after_it():
    [finding] = r.check_xid(r.parse_kernel_log(load("kernel-log", "a100sxm4x8-talos-kern-iso-xid45-74-154-vllm40652.txt"))
                            )["findings"]
    assert finding["found"].startswith("Xid 74 at 2026-04-22T21:26:20.599716692Z: NVLink: fatal error detected on "
                                       "link 8")
    assert finding["found"].endswith("(and 1 earlier)")
    assert ("reset the GPU (nvidia-smi -r) or reload the driver (NVIDIA: WORKFLOW_NVLINK_ERR; the driver's recovery "
            "action, Xid 154: GPU Reset Required)") in finding["hint"]
    assert finding["hint"].endswith("'00000000:48:00.0 * 2026-04-22T21:26:20.695845708Z'")


def test_an_xid_64_says_to_read_the_row_remapper_before_acknowledging():
    [finding] = r.check_xid(r.parse_kernel_log(load("kernel-log", "h100-xid64-all-reserved-rows-remapped-xid94-dmesg-imbue.txt"))
                            )["findings"]
    assert finding["found"].startswith("Xid 64 at 2397166.923949: Row Remapper Error")
    assert "nvidia-smi -q -d ROW_REMAPPER: 'Remapping Failure Occurred: Yes' means the GPU is due for replacement" in \
        finding["hint"]
    assert finding["hint"].endswith("'00000000:0F:00.0 64 2397166.923949'")


def test_an_sxid_without_a_severity_word_is_a_warning_on_the_nvswitch():
    events = r.parse_kernel_log(load("kernel-log", "nvswitch-sxid26006-26008-soe-halted-no-severity-word-nvsentinel.txt"))
    [finding] = r.check_xid(events)["findings"]
    assert finding["severity"] == "warning" and finding["gpu"] == "NVSwitch 00000004:00:00.0"
    assert finding["expected"] == "no NVSwitch SXid of unknown severity since the driver was loaded (or each acknowledged)"
    assert finding["found"].startswith("NVSwitch SXid 26006 (log line 4): SOE HALT data[0]")
    assert "Fabric Manager user guide" in finding["hint"] and finding["hint"].endswith("'00000004:00:00.0 * -'")
    # the Severity and Data lines of a fatal or non-fatal SXid stay no finding
    plain = ("nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 12028, Severity 0 Engine instance 30 Sub-engine instance 00\n"
             "nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 12028, Data {0x00000000, 0x00000000, 0x00000000}\n"
             "nvidia-nvswitch3: SXid (PCI:0000:07:00.0): 12028, Non-fatal, Link 30 egress non-posted PRIV error\n")
    assert r.check_xid(r.parse_kernel_log(plain))["findings"] == []


def test_gpus_another_driver_took_are_named_in_the_nvml_and_gpu_count_hints():
    events = r.parse_kernel_log(load("kernel-log", "v100x3-nouveau-probe-routine-not-called-3-devices-dmesg-bigdata133.txt"))
    failure = r.classify_smi_failure(9, load("nvidia-smi-errors", "460-couldnt-communicate-with-driver.txt"))
    [finding] = r.check_nvml(failure, kernel_events=events)["findings"]
    assert finding["hint"].startswith("the kernel log says the nvidia module was not called for 3 GPU(s): another "
                                      "driver (nouveau, rivafb, nvidiafb or rivatv) took them first")
    assert "'blacklist nouveau'" in finding["hint"]
    # without that line, the usual hint
    assert r.check_nvml(failure)["findings"][0]["hint"].startswith("the nvidia kernel module is not loaded")


def test_a_gpu_lost_line_is_the_xid_79_before_it_or_a_node_level_error_without_one():
    lost = ("[  41.2] NVRM: nvCheckOkFailedNoLog: Check failed: GPU lost from the bus [NV_ERR_GPU_IS_LOST] "
            "(0x0000000F) returned from _memdescFreeInternal @ mem_desc.c:1281\n")
    xid79 = "[  40.9] NVRM: Xid (PCI:0000:06:00): 79, pid=1204, name=python3, GPU has fallen off the bus.\n"
    [finding] = r.check_xid(r.parse_kernel_log(xid79 + lost * 3))["findings"]
    assert finding["gpu"] == "00000000:06:00.0" and finding["found"].startswith("Xid 79 at 40.9")
    [finding] = r.check_xid(r.parse_kernel_log(lost * 2))["findings"]
    assert finding["gpu"] is None and finding["severity"] == "error"
    assert finding["found"].startswith("a GPU lost from the bus (no Xid, no bus id) at 41.2")
    assert "reboot the node" in finding["hint"] and finding["hint"].endswith("'node 79 41.2'")
    # a driver reload after it deals with it, as with an Xid
    reload = "[  90.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.86.15  Wed Jan 22 02:00:00 UTC 2025\n"
    assert r.check_xid(r.parse_kernel_log(lost + reload))["findings"] == []


def test_a_reset_required_line_is_a_node_level_reset_unless_a_fatal_xid_of_the_session_says_it():
    text = load("kernel-log", "gsp-nv-err-reset-required-no-xid-dmesg-T-sichek51.txt")
    [finding] = r.check_xid(r.parse_kernel_log(text))["findings"]
    assert (finding["severity"], finding["gpu"]) == ("error", None)
    assert finding["found"].startswith("a GPU reset required (no Xid, no bus id) at Sun Jan 11 09:52:01 2026")
    assert "reset the node's GPUs (nvidia-smi -r; the log names none)" in finding["hint"]
    # no Xid number: only "*" acknowledges it
    assert finding["hint"].endswith("'node * Sun Jan 11 09:52:01 2026'")
    assert r.check_xid(r.parse_kernel_log(text), r.parse_acknowledgements(
        "* 79 Sun Jan 11 09:52:01 2026\n"))["findings"] == [finding]
    # after a fatal Xid of a named GPU in the same driver session it is that Xid's consequence
    xid = "[Sun Jan 11 09:51:58 2026] NVRM: Xid (PCI:0000:1b:00): 119, pid=77, name=python, Timeout after 6s\n"
    [finding] = r.check_xid(r.parse_kernel_log(xid + text))["findings"]
    assert finding["gpu"] == "00000000:1B:00.0" and finding["found"].startswith("Xid 119")
    # an application Xid before it does not explain it
    xid13 = "[Sun Jan 11 09:51:58 2026] NVRM: Xid (PCI:0000:1b:00): 13, pid=77, name=python, Graphics Exception\n"
    assert [f["gpu"] for f in r.check_xid(r.parse_kernel_log(xid13 + text))["findings"]] == [None]
    # an assertion naming the status in its expression (not as the returned status) is no event
    assert r.parse_kernel_log("NVRM: nvAssertFailedNoLog: Assertion failed: (status == NV_OK) || (status == "
                              "NV_ERR_RESET_REQUIRED) @ rs_server.c:259\n") == []


def test_a_uvm_global_fatal_error_is_a_node_reboot_unless_a_fatal_xid_of_the_load_explains_it():
    """nv_gpu_ops.c nvGpuOpsReportFatalError: the UVM driver's state is poisoned for every GPU; R560+ print an Xid 154
    (Node Reboot Required) with it, older drivers only this line (continued on a second line in dmesg)."""
    uvm = ("[ 812.5] NVRM: nvGpuOpsReportFatalError: uvm encountered global fatal error 0x60,\n"
           "               NVRM: requiring os reboot to recover.\n")
    [event] = r.parse_kernel_log(uvm)
    assert event["kind"] == "uvm_fatal" and event["message"].endswith("requiring os reboot to recover.")
    [finding] = r.check_xid(r.parse_kernel_log(uvm))["findings"]
    assert (finding["severity"], finding["gpu"]) == ("error", None) and "reboot the node" in finding["hint"]
    assert finding["found"].startswith("a UVM global fatal error (no Xid, no bus id) at 812.5")
    assert finding["hint"].endswith("'node * 812.5'")
    # an Xid 154 after it, in the same driver load, names the GPU: one finding, the GPU's
    xid154 = ("[ 812.6] NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x0 (None) to 0x2 "
              "(Node Reboot Required)\n")
    [finding] = r.check_xid(r.parse_kernel_log(uvm + xid154))["findings"]
    assert finding["gpu"] == "00000000:01:00.0"
    # a reload of the driver deals with it
    reload = "[ 900.0] NVRM: loading NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar  5 22:23:56 UTC 2024\n"
    assert r.check_xid(r.parse_kernel_log(uvm + reload))["findings"] == []


def crashes(name):
    return [(e["crash"], e["function"], e["module"]) for e in r.parse_kernel_log(load("kernel-log", name))
            if e["kind"] == "driver_crash"]


def test_a_crash_or_a_hang_in_the_driver_names_where_and_asks_for_a_reboot():
    assert crashes("driver-crash-nvidia-uvm-suspend-syslog-ubuntuforums.txt") == [
        ("crash", "_raw_q_schedule", "nvidia_uvm")]
    assert crashes("driver-crash-nvidia-modeset-xorg-syslog-ubuntuforums.txt") == [
        ("crash", "_nv002691kms", "nvidia_modeset")]
    # the old "IP: [<...>]" line between the BUG line and its Oops line: one crash
    assert crashes("driver-crash-old-format-ip-line-nvidia-smi-azure-nc-msdocs.txt") == [
        ("crash", "_nv011740rm", "nvidia")]
    # i686: EIP lines; the fault in the kernel's own vmalloc_fault, taken from the driver: the driver's frame
    assert crashes("driver-crash-340-i686-eip-in-nvidia-no-first-line-dmesg-ubuntuforums.txt") == [
        ("dump", "_nv000768rm", "nvidia")]
    # a blocked task's first reliable frame in the driver; a stalled CPU's RIP whose first line the post left out;
    # a soft lockup of the driver's IRQ thread
    assert crashes("driver-hang-rtx2080ti-xid62-stall-blocked-soft-lockup-md-bold-ubuntuforums.txt") == [
        ("dump", "_nv030887rm", "nvidia"), ("hang", "os_acquire_mutex", "nvidia"),
        ("hang", "task irq/162-nvidia", "nvidia")]
    name = "driver-crash-invalid-opcode-irq-nvidia-thread-second-oops-syslog-ubuntuforums.txt"
    [finding] = r.check_xid(r.parse_kernel_log(load("kernel-log", name)))["findings"]
    assert finding["expected"] == "no crash or hang in the NVIDIA driver since the driver was loaded (or each acknowledged)"
    assert finding["found"] == ("the kernel crashed in the NVIDIA driver in _nv017125rm [nvidia] at 3076.302042: "
                                "invalid opcode: 0000 [#1] SMP NOPTI")
    assert finding["hint"].startswith("reboot the node: the driver cannot be reloaded after a crash or a hang in it")
    assert finding["hint"].endswith("acknowledge with the line 'node * 3076.302042'")
    acks = r.parse_acknowledgements("node * 3076.302042\n")
    assert r.check_xid(r.parse_kernel_log(load("kernel-log", name)), acks)["findings"] == []
    # "node" acknowledges the events that name no GPU, and not a GPU's Xid ("*" would cover both)
    events = r.parse_kernel_log(load("kernel-log", "driver-hang-rtx2080ti-xid62-stall-blocked-soft-lockup-md-bold-"
                                                   "ubuntuforums.txt"))
    [node, gpu] = sorted(r.check_xid(events)["findings"], key=lambda f: f["gpu"] is not None)
    assert node["hint"].endswith("'node * 124630.280245'") and "(and 2 earlier)" in node["found"]
    assert r.check_xid(events, r.parse_acknowledgements("node * 124630.280245\n"))["findings"] == [gpu]
    assert r.check_xid(events, r.parse_acknowledgements("* * 124630.280245\n"))["findings"] == []
    # the Xid 119 of the GPU does not explain the task stuck in the driver: a GPU reset does not free it
    name = "driver-hang-525-a30-xid119-nvidia-smi-blocked-120s-in-nvidia-dmesg-T-ogkm446.txt"
    node = [f for f in r.check_xid(r.parse_kernel_log(load("kernel-log", name)))["findings"] if f["gpu"] is None]
    assert node[0]["found"].startswith("a CPU or a task stuck in the NVIDIA driver in os_acquire_rwlock_write [nvidia] "
                                       "at Fri Mar 3 04:36:03 2023: INFO: task nvidia-smi:1346229 blocked")


def test_a_report_without_the_driver_does_not_take_a_later_frame_of_it():
    """A user process's general protection fault is no kernel crash; a report's first line does not reach a driver
    frame far below it (a trace cut from its own first line belongs to no report)."""
    frame = "[  900.2]  os_acquire_mutex+0x34/0x40 [nvidia]\n"
    gpf = "[  900.0] traps: python3[4001] general protection fault ip:7f01 sp:7ffc error:0 in libc.so.6[7f00+1000]\n"
    regs = "[  900.1] RIP: 0010:_nv030887rm+0x12/0x40 [nvidia]\n"
    [dump] = r.parse_kernel_log(gpf + regs)
    assert (dump["crash"], dump["message"]) == ("dump", "RIP: 0010:_nv030887rm+0x12/0x40 [nvidia]")
    hung = "[  800.0] INFO: task kworker/3:1:77 blocked for more than 120 seconds.\n"
    other = "".join("[  800.%d]  schedule+0x46/0xb0\n" % n for n in range(1, 90))
    assert r.parse_kernel_log(hung + other + frame) == []
    assert [e["crash"] for e in r.parse_kernel_log(hung + frame)] == ["hang"]


def test_a_warning_in_the_driver_is_a_warning_and_one_elsewhere_is_nothing():
    # the btrfs WARNING as recorded gives nothing; the same trace with its module read as the driver's (the lines
    # changed here: no real WARNING in the driver was found) gives a warning
    text = load("kernel-log", "warning-in-btrfs-on-a-node-with-nvidia-loaded-no-driver-frame.txt")
    assert r.parse_kernel_log(text) == []
    [finding] = r.check_xid(r.parse_kernel_log(text.replace("[btrfs]", "[nvidia]")))["findings"]
    assert finding["severity"] == "warning"
    assert finding["found"].startswith("a kernel WARNING in the NVIDIA driver in lookup_inline_extent_backref [nvidia] "
                                       "at 34067.303865: WARNING: CPU: 10 PID: 55370 at fs/btrfs/extent-tree.c:862")
    assert finding["hint"].startswith("read the kernel log around it")


def test_the_drivers_reset_marks_make_any_xid_a_reset():
    """An error-containment Xid ends in the driver's marks "RST: Yes|No, D-RST: Yes|No" (kern_gpu_error_cont_ga100.c);
    a Yes means the driver marked the GPU for a reset (or a drain and reset), whatever the number's catalogue row."""
    lines = load("kernel-log", "nvidia-rm-source-comment-xid94-xid95-rst-d-rst-flags-ga100.txt").splitlines()
    contained = lines[1]
    assert [v["class"] for v in r.xid_verdicts(r.parse_kernel_log(contained))] == ["application"]
    for marks, action in (("RST: Yes, D-RST: No", "RESET_GPU"), ("RST: No, D-RST: Yes", "DRAIN_AND_RESET"),
                          ("RST: Yes, D-RST: Yes", "DRAIN_AND_RESET")):
        marked = contained.replace("RST: No, D-RST: No", marks)
        [verdict] = r.xid_verdicts(r.parse_kernel_log(marked))
        assert (verdict["class"], verdict["action"]) == ("reset", action)
        assert verdict["description"].startswith("Contained memory error; the driver marked the GPU for ")
        [finding] = r.check_xid(r.parse_kernel_log(marked))["findings"]
        assert finding["severity"] == "error" and finding["gpu"] == "00000000:01:00.0"
    # the catalogue's reset or reboot stays what it is
    [verdict] = r.xid_verdicts(r.parse_kernel_log(lines[2]))
    assert (verdict["class"], verdict["action"], verdict["description"]) == (
        "reset", "RESET_GPU", "Uncontained memory error")


def test_dmesg_human_stamps_are_read_and_keep_messages_apart():
    events = r.parse_kernel_log("[Oct25 17:01] NVRM: Xid (PCI:0000:01:00): 79, GPU has fallen off the bus.\n"
                                "[  +0.000004] NVRM: GPU 0000:01:00.0: GPU has fallen off the bus.\n")
    assert [(e["kind"], e["stamp"]) for e in events] == [("xid", "Oct25 17:01"), ("off_bus", "+0.000004")]


def test_a_nonfatal_nvlink5_xid_gives_no_finding_and_a_fatal_one_a_reset():
    nonfatal = r.parse_kernel_log(load("kernel-log", "aws-node-xid145-rlw-nonfatal-unclosed-paren-nvsentinel1357.txt"))
    [verdict] = r.xid_verdicts(nonfatal)
    assert (verdict["class"], verdict["action"]) == ("application", "XID_154_EVAL")
    # registers no row of NVIDIA's decode has: the line's own word decides (Fatal: the Xid's action)
    fatal = "[ 9.0] NVRM: Xid (PCI:0000:c5:00): 145, RLW_SRC_TRACK Fatal XC1 i0 Link 17 (0x04084507 0x00000400)\n"
    [finding] = r.check_xid(r.parse_kernel_log(fatal))["findings"]
    assert finding["severity"] == "error" and "WORKFLOW_NVLINK5_ERR" in finding["hint"]
    masked = "[ 9.0] NVRM: Xid (PCI:0000:c5:00): 145, RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)\n"
    assert r.check_xid(r.parse_kernel_log(masked))["findings"] == []
    # a Nonfatal line the driver follows with an Xid 154 is judged by the 154
    then = r.parse_kernel_log(load("kernel-log", "aws-node-xid145-rlw-nonfatal-unclosed-paren-nvsentinel1357.txt")
                              + "NVRM: Xid (PCI:0000:c5:00): 154, GPU recovery action changed from 0x0 (None) to "
                                "0x1 (GPU Reset Required)\n")
    [finding] = r.check_xid(then)["findings"]
    assert finding["found"].startswith("Xid 154") and "GPU Reset Required" in finding["hint"]


def test_nvlink5_xids_are_judged_by_nvidias_decode_of_their_registers_not_by_the_word_fatal():
    """NVIDIA's catalogue, sheet "XID 144-150 Decode" (via gpud's generated copy, module nvlink5_decode): the unit,
    intrinfo and error status give the immediate action; NETIR_LINK_EVT sub-code 38 is "Link Fatal" yet IGNORE."""
    events = r.parse_kernel_log(load("kernel-log", "gb200-nvlink5-xid144-nonfatal-xid149-netir-link-evt-pci-0000-00-00-gpud1160.txt"))
    # PCI 0000:00:00 is the host bridge or root port, never a GPU: those Xids name no GPU
    assert [(e["xid"], e["bus_id"]) for e in events] == [(144, "00000000:01:00.0"), (149, None), (149, None)]
    assert [(v["class"], v["action"]) for v in r.xid_verdicts(events)] == [
        ("application", "IGNORE"), ("application", "IGNORE"), ("reset", "RESET_GPU")]
    [finding] = r.check_xid(events)["findings"]
    assert (finding["severity"], finding["gpu"]) == ("error", None)
    assert finding["found"].startswith("Xid 149 (log line 3): NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6")
    assert finding["hint"].startswith("reset the node's GPUs (nvidia-smi -r; the log names none) or reload the driver")
    assert finding["hint"].endswith("acknowledge with the line 'node 149 -'")
    # sub-code 38 alone (the first 149 line): no finding
    only38 = [e for e in events if "0x026001c6" in e["message"]]
    assert r.check_xid(only38)["findings"] == []
    events = r.parse_kernel_log(load("kernel-log", "gb200-nvlink5-xid149-netir-fatal-0019-xid149-pci-0000-00-00-xid145-rxpipe-nonfatal-gpud1174.txt"))
    assert [(v["bus_id"], v["xid"], v["class"], v["action"]) for v in r.xid_verdicts(events)] == [
        ("00000019:01:00.0", 149, "reset", "RESET_GPU"), (None, 149, "reset", "RESET_GPU"),
        ("00000018:01:00.0", 145, "application", "IGNORE")]
    assert [(f["gpu"], f["severity"]) for f in r.check_xid(events)["findings"]] == [
        ("00000019:01:00.0", "error"), (None, "error")]


def test_a_gpu_the_kernel_could_not_recover_from_a_pcie_error_is_a_reboot_and_a_pending_page_a_reset():
    aer = r.check_xid(r.parse_kernel_log(load(
        "kernel-log", "aer-fatal-sdes-cmplto-nvidia-cant-recover-no-nvrm-dmesg-H-returnn1500.txt")))
    [finding] = aer["findings"]
    assert finding["found"].startswith("an uncorrected PCIe error not recovered (AER, no Xid) at +0.000921: AER: "
                                       "can't recover (no error_detected callback) (and 1 earlier)")
    assert finding["hint"].startswith("reboot the node: the nvidia driver does not recover a GPU from an uncorrected "
                                      "PCIe error")
    # only "*" acknowledges it (it has no Xid), as the hint's line says
    assert "acknowledge with the line '00000000:03:00.0 * +0.000921'" in finding["hint"]
    pending = r.check_xid(r.parse_kernel_log(
        "[ 5.0] NVRM: Xid (PCI:0000:8a:00): 63, Dynamic Page Retirement: New retired page, reload the driver to "
        "activate. (0x00000000002ce8ac)\n"))
    [finding] = pending["findings"]
    assert finding["severity"] == "error" and finding["hint"].startswith(
        "reset the GPU (nvidia-smi -r) or reload the driver (NVIDIA: reset the GPU when convenient)")
    # the DBE that retired the page is what the finding names
    [dbe] = r.check_xid(r.parse_kernel_log(load(
        "kernel-log", "xid48-dbe-xid63-dynamic-page-retirement-reboot-to-activate-nvdocker849.txt")))["findings"]
    assert dbe["found"].startswith("Xid 48 at Mon Oct 29 12:07:39 2018") and dbe["found"].endswith("(and 1 earlier)")
    # an Xid 63 that records a remap with nothing left to activate is still no finding
    assert r.check_xid(r.parse_kernel_log("[ 5.0] NVRM: Xid (PCI:0000:8a:00): 63, Row remapper: New row marked for "
                                          "remapping\n"))["findings"] == []


def test_every_kernel_log_fixture_is_parsed():
    assert sorted(KERNEL) == sorted(XID_VERDICTS) == nvsmi_fixtures.names("readiness/kernel-log")


@pytest.mark.parametrize("name", sorted(KERNEL))
def test_parse_kernel_log(name):
    events = r.parse_kernel_log(load("kernel-log", name))
    assert [(e["kind"], e["bus_id"], e["xid"], e["stamp"]) for e in events] == KERNEL[name]


@pytest.mark.parametrize("name", sorted(API_MISMATCH))
def test_api_mismatch_versions(name):
    events = [e for e in r.parse_kernel_log(load("kernel-log", name)) if e["kind"] == "api_mismatch"]
    assert [(e["version"], e["kernel_version"]) for e in events] == API_MISMATCH[name]


def test_a_new_message_on_an_indented_bare_line_is_not_joined_to_the_one_before():
    text = ("    NVRM: Xid (PCI:0000:09:00): 79, pid=2172, GPU has fallen off the bus.\n"
            "    NVRM: GPU 0000:09:00.0: RmInitAdapter failed! (0x26:0x65:1239)\n"
            "[   12.0] NVRM: The NVIDIA GPU 0000:b3:00.0\n"
            "           NVRM: (PCI ID: 10de:26b5) installed in this system has\n"
            "           NVRM: fallen off the bus and is not responding to commands.\n")
    kinds = [(e["kind"], e["message"]) for e in r.parse_kernel_log(text)]
    assert kinds == [("xid", "GPU has fallen off the bus."), ("init_failed", "RmInitAdapter failed! (0x26:0x65:1239)"),
                     ("off_bus", "The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has "
                                 "fallen off the bus and is not responding to commands.")]


@pytest.mark.parametrize("prefix, stamp", [
    ("Dec 01 10:00:00 gpu01 kernel: ", "Dec 01 10:00:00"),  # journalctl -k (short)
    ("Dec 01 10:00:00.123456 gpu01 kernel: ", "Dec 01 10:00:00.123456"),  # -o short-precise
    ("2025-12-01T10:00:00+0100 gpu01 kernel: ", "2025-12-01T10:00:00+0100"),  # -o short-iso
    ("2025-12-01T10:00:00.123456+01:00 gpu01 kernel: ", "2025-12-01T10:00:00.123456+01:00"),  # -o short-iso-precise
    ("[  123.456789] ", "123.456789"),
    ("[Mon Dec  1 10:00:00 2025] ", "Mon Dec 1 10:00:00 2025"),
])
def test_kernel_log_times(prefix, stamp):
    [event] = r.parse_kernel_log(prefix + "NVRM: Xid (PCI:0000:07:00): 109, pid=326, name=x, channel 0x7\n")
    assert (event["xid"], event["stamp"]) == (109, stamp)


def test_same_time_lines_join_only_an_unfinished_message():
    # journal lines of one second: an Xid line is always whole, so a lower-case line after it is its own
    text = ("Apr 19 12:34:42 h kernel: NVRM: Xid (PCI:0000:07:00): 109, pid=326, name=modprobe, channel 0x7\n"
            "Apr 19 12:34:42 h kernel: NVRM: _kgspLogXid119: ****\n"
            "Apr 19 12:34:42 h kernel: NVRM: loading NVIDIA UNIX x86_64 Kernel Module  570.144  Release Build\n")
    events = r.parse_kernel_log(text)
    assert [(e["kind"], e["message"]) for e in events] == [
        ("xid", "channel 0x7"), ("driver_load", "loading NVIDIA UNIX x86_64 Kernel Module  570.144  Release Build")]


@pytest.mark.parametrize("name", sorted(XID_VERDICTS))
def test_xid_verdicts(name):
    result = r.check_xid(r.parse_kernel_log(load("kernel-log", name)))
    assert [(f["severity"], f["gpu"]) for f in result["findings"]] == XID_VERDICTS[name]


def test_xid_event_details():
    [e63] = r.parse_kernel_log(load("kernel-log", "a100-xid63-row-remapper-new-row-reset-to-activate.txt"))
    assert (e63["pid"], e63["name"], e63["message"]) == (
        "1896", None, "Row Remapper: New row marked for remapping, reset gpu to activate.")
    e119 = r.parse_kernel_log(load("kernel-log", "h100-xe9680-xid119-gsp-timeout-dmesg-T.txt"))[-1]
    assert (e119["pid"], e119["name"]) == ("1240590", "gpud")
    e79 = r.parse_kernel_log(load("kernel-log", "h100-vm-xid79-pid-unknown-sxid20034-dmesg-md-quoted.txt"))[0]
    assert (e79["pid"], e79["name"], e79["message"]) == ("<unknown>", "<unknown>", "GPU has fallen off the bus.")
    e45 = r.parse_kernel_log(load("kernel-log", "nvlink5-590-xid45-caused-by-previous-xid145-149-journal.txt"))[0]
    assert (e45["caused_by"], e45["name"]) == (149, "python3")
    e31 = r.parse_kernel_log(load("kernel-log", "rtx5090-egpu-610-aer-cmplto-cant-recover-xid31-ogkm1229.txt"))[-1]
    assert (e31["pid"], e31["name"], e31["message"][:10]) == (None, "plasmashell", "MMU Fault:")
    e154 = r.parse_kernel_log(load("kernel-log", "rtx5080-595-xid62-pmu-halted-xid154-gpu-reset-required.txt"))[1]
    assert (e154["recovery_from"], e154["recovery_to"]) == ((0, "None"), (1, "GPU Reset Required"))
    off, load_line = r.parse_kernel_log(load("kernel-log",
                                             "pci-10de-26b5-570-fallen-off-bus-at-probe-no-xid-dmesg.txt"))
    assert off["message"] == ("The NVIDIA GPU 0000:b3:00.0 (PCI ID: 10de:26b5) installed in this system has fallen "
                              "off the bus and is not responding to commands.")
    assert (off["phase"], load_line["version"]) == ("probe", "570.158.01")
    events = r.parse_kernel_log(load("kernel-log", "rtx5090-595-proprietary-requires-open-modules-journal.txt"))
    assert events[0]["version"] == "595.71.05"
    assert events[2]["message"] == "RmInitAdapter failed! (0x22:0x56:1017)"


def test_an_xid_154_line_cut_before_its_new_action_clears_nothing():
    # the Xid 62 and its Xid 154 as recorded, the 154 cut where a pager or a collector's line limit would cut it
    text = load("kernel-log", "rtx5080-595-xid62-pmu-halted-xid154-gpu-reset-required.txt")
    line = next(line for line in text.split("\n") if "): 154," in line)
    cut = text.replace(line, line[:line.index(" to 0x")])
    assert cut != text
    verdicts = r.xid_verdicts(r.parse_kernel_log(cut))
    assert [(v["xid"], v["class"], v["dealt_with"]) for v in verdicts] == [(62, "reset", None), (154, "unknown", None)]
    [finding] = r.check_xid(r.parse_kernel_log(cut))["findings"]
    assert finding["severity"] == "error" and finding["found"].startswith("Xid 62")
    # a recovery action changed to None, as NVIDIA prints it, still deals with the Xid before it
    healed = text.replace(line, line.replace("to 0x1 (GPU Reset Required)", "to 0x0 (None)"))
    assert [v["dealt_with"] for v in r.xid_verdicts(r.parse_kernel_log(healed))][0].startswith("recovery action None")


def test_application_xids_never_give_a_finding():
    text = load("kernel-log", "h100-xid13-pid-unknown-xid109-ctx-switch-timeout-dmesg-ctime-md-quoted.txt")
    only13 = "\n".join(line for line in text.split("\n") if "): 109," not in line)
    assert r.check_xid(r.parse_kernel_log(only13)) == {"check": "xid", "applies": True, "reason": None,
                                                       "findings": []}


def test_mig_attributed_xid():
    [event] = r.parse_kernel_log("[ 99.1] NVRM: Xid (PCI:0000:01:00 GPU-I:05): 94, pid=7194, Contained: CE User "
                                 "Channel (0x9). RST: No, D-RST: No\n")
    assert (event["xid"], event["gpu_instance"], event["pid"], event["stamp"]) == (94, 5, "7194", "99.1")


XID79 = "h100-vm-xid79-pid-unknown-sxid20034-dmesg-md-quoted.txt"
RELOAD = ("[6790000.000001] NVRM: loading NVIDIA UNIX Open Kernel Module for x86_64  570.158.01  Release Build  "
          "(dvs-builder@U22-I3-B10-02-5)  Mon Jun  2 13:13:04 UTC 2025\n")


def test_xid79_dealt_with_by_a_later_driver_load():
    text = load("kernel-log", XID79)
    assert r.check_xid(r.parse_kernel_log(text + "\n" + RELOAD))["findings"] == []
    # A load line before the Xid does not help.
    assert len([f for f in r.check_xid(r.parse_kernel_log(RELOAD + text))["findings"]
                if f["gpu"] == "00000000:91:00.0"]) == 1


@pytest.mark.parametrize("ack, cleared", [
    ("0000:91:00 79 6781741.548779\n", True),
    ("00000000:91:00.0 79 [6781741.548779]   # reseated, dcgmi diag -r 2 passed (jdoe)\n", True),
    ("* * 6781741.548779\n", True),
    ("0000:91:00 79 6781741.548783\n", True),  # the "fallen off the bus" line's time also covers the Xid before it
    ("0000:92:00 79 6781741.548779\n", False),  # another GPU
    ("0000:91:00 48 6781741.548779\n", False),  # another Xid
    ("0000:91:00 79 6781741.5\n", False),  # not the event's time
    ("# 0000:91:00 79 6781741.548779\n", False),  # commented out
])
def test_xid79_acknowledged(ack, cleared):
    events = r.parse_kernel_log(load("kernel-log", XID79))
    findings = [f for f in r.check_xid(events, r.parse_acknowledgements(ack))["findings"]
                if f["gpu"] == "00000000:91:00.0"]
    assert (findings == []) is cleared


def test_a_fatal_nvswitch_sxid_is_an_error_its_severity_and_data_lines_and_nonfatal_ones_are_not():
    # the NVSwitch driver prints "Fatal, Link NN ..." first (NVSWITCH_REPORT_FATAL, intr_nvswitch.h), then Severity
    # and Data lines of the same SXid; a non-fatal one says "Non-fatal" (line shapes of the recorded SXid 20034)
    events = r.parse_kernel_log(load("kernel-log", XID79))
    [switch] = [f for f in r.check_xid(events)["findings"] if f["gpu"] == "NVSwitch 00000000:07:00.0"]
    assert switch["expected"] == "no fatal NVSwitch SXid since the driver was loaded (or each acknowledged)"
    assert switch["found"] == "NVSwitch SXid 20034 at 6781753.407899: Fatal, Link 37 LTSSM Fault Up"
    assert switch["hint"].startswith("reboot the node: a fatal NVSwitch error needs the GPUs and NVSwitches reset")
    assert switch["hint"].endswith("acknowledge with the line '00000000:07:00.0 20034 6781753.407899'")
    nonfatal = ("[  100.0] nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Non-fatal, Link 47 egress non-posted "
                "PRIV error (First)\n[  100.1] nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Severity 0 Engine "
                "instance 47 Sub-engine instance 00\n[  100.2] nvidia-nvswitch1: SXid (PCI:0000:84:00.0): 12028, Data "
                "{0x000001c0, 0x00000000}\n")
    assert r.check_xid(r.parse_kernel_log(nonfatal))["findings"] == []
    # the hint's acknowledgement line clears that NVSwitch only; a driver load after it clears it too
    acked = r.check_xid(events, r.parse_acknowledgements("00000000:07:00.0 20034 6781753.407899\n"))["findings"]
    assert "NVSwitch 00000000:07:00.0" not in [f["gpu"] for f in acked] and len(acked) == 3
    reloaded = r.parse_kernel_log(load("kernel-log", XID79) + "\n" + RELOAD)
    assert r.check_xid(reloaded)["findings"] == []
    # the drain reason names the NVSwitch as one
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import slurm_state
    assert slurm_state.drain_reason([switch]).startswith("hpc-gres-health: xid NVSwitch 00000000:07:00.0: NVSwitch "
                                                         "SXid 20034")


def test_acknowledgement_covers_earlier_events_only():
    events = r.parse_kernel_log(load("kernel-log", "h100-xe9680-xid119-gsp-timeout-dmesg-T.txt"))
    [finding] = r.check_xid(events)["findings"]
    assert finding["hint"].endswith("acknowledge with the line '00000000:9B:00.0 119 Sun Feb 23 16:30:13 2025'")
    assert r.check_xid(events, r.parse_acknowledgements("00000000:9B:00.0 119 Sun Feb 23 16:30:13 2025"))[
        "findings"] == []
    [finding] = r.check_xid(events, r.parse_acknowledgements("0000:9b:00 119 Sun Feb 23  16:24:30 2025\n"))["findings"]
    assert finding["found"].startswith("Xid 119 at Sun Feb 23 16:30:13 2025: Timeout after 6s")
    assert finding["found"].endswith("(and 1 earlier)")


def test_recovery_action_back_to_none_deals_with_the_gpu():
    text = load("kernel-log", "rtx5080-595-xid62-pmu-halted-xid154-gpu-reset-required.txt")
    [finding] = r.check_xid(r.parse_kernel_log(text))["findings"]
    # the Xid 62 is shown, the recovery action of the Xid 154 after it is in the hint
    assert finding["found"].startswith("Xid 62 (log line 1): ") and finding["found"].endswith("(and 1 earlier)")
    assert "(NVIDIA: RESET_GPU; the driver's recovery action, Xid 154: GPU Reset Required)" in finding["hint"]
    assert finding["hint"].endswith("'00000000:01:00.0 * -'")
    recovered = text + "NVRM: Xid (PCI:0000:01:00): 154, GPU recovery action changed from 0x1 (GPU Reset Required) " \
                       "to 0x0 (None)\n"
    assert r.check_xid(r.parse_kernel_log(recovered))["findings"] == []
    assert r.check_xid(r.parse_kernel_log(text), r.parse_acknowledgements("0000:01:00 * -"))["findings"] == []


def test_probe_time_off_bus_is_cleared_by_a_second_load_only():
    text = load("kernel-log", "pci-10de-26b5-570-fallen-off-bus-at-probe-no-xid-dmesg.txt")
    assert len(r.check_xid(r.parse_kernel_log(text))["findings"]) == 1
    assert r.check_xid(r.parse_kernel_log(text + RELOAD))["findings"] == []


def test_unknown_xid_is_a_warning():
    [finding] = r.check_xid(r.parse_kernel_log("[ 5.0] NVRM: Xid (PCI:0000:3b:00): 999, pid=1, name=x, new\n"))[
        "findings"]
    assert (finding["severity"], finding["gpu"]) == ("warning", "00000000:3B:00.0")


def test_xid_gpu_named_by_index_when_nvidia_smi_is_read():
    events = r.parse_kernel_log(load("kernel-log", "h100-xe9680-xid119-gsp-timeout-dmesg-T.txt"))
    node = q("h100-8gpu-sxm-535-fabric-completed.txt")  # GPU 4 at 00000000:9B:00.0
    result = r.readiness_findings(smi_q=node, kernel_events=events)
    assert summary(checks(result, "xid")) == [("error", "xid", 4)]


def test_api_mismatch_line_gives_the_client_version():
    log = ("[ 10.0] NVRM: API mismatch: the client 'nvidia-smi' (pid 1234)\n"
           "         NVRM: has the version 580.159, but this kernel module has\n"
           "         NVRM: the version 580.126.09.  Please make sure that this\n")
    events = r.parse_kernel_log(log)
    assert [(e["kind"], e["version"], e["kernel_version"]) for e in events] == [("api_mismatch", "580.159",
                                                                                "580.126.09")]
    result = r.readiness_findings(kernel_events=events, proc_version=r.parse_proc_driver_version("580.126.09"))
    assert summary(checks(result, "driver_version")) == [("error", "driver_version", None)]


@pytest.mark.parametrize("text, message", [
    ("0000:91:00 79\n", "host gpu-a01: /etc/ack line 1: expected '<gpu bus id, * or node> <xid or *> <timestamp as "
                         "in the kernel log>', found '0000:91:00 79'"),
    ("\n\ngpu0 79 1.0\n", "host gpu-a01: /etc/ack line 3: expected a PCI bus id such as 0000:9b:00 (or * or node), "
                          "found 'gpu0'"),
    ("* xid79 1.0\n", "host gpu-a01: /etc/ack line 1: expected an Xid number (or *), found 'xid79'"),
])
def test_bad_acknowledgements(text, message):
    with pytest.raises(GresError) as caught:
        r.parse_acknowledgements(text, host="gpu-a01", source="/etc/ack")
    assert str(caught.value) == message


def test_every_bad_acknowledgement_is_named():
    with pytest.raises(GresError) as caught:
        r.parse_acknowledgements("bad\n0000:91:00 79 1.0\n* x 2.0\n")
    assert [p.field for p in caught.value.problems] == ["acknowledgements line 1", "acknowledgements line 3"]


def test_acknowledgement_file_shape():
    acks = r.parse_acknowledgements("# reset 2025-02-24 by jdoe\n\n0000:9b:00.0  119  Sun Feb 23 16:30:13 2025  # ok\n"
                                    "*  *  -\n")
    assert acks == [{"gpu": "00000000:9B:00.0", "xid": 119, "stamp": "Sun Feb 23 16:30:13 2025", "line": 3},
                    {"gpu": None, "xid": None, "stamp": None, "line": 4}]


@pytest.mark.parametrize("line, stamp", [
    ("Dec 01 10:00:00 gpu-a01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, pid=1, name=x, GPU has fallen off the bus.",
     "Dec 01 10:00:00"),
    ("Dec  1 10:00:00 gpu-a01 kernel: [  812.004] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
     "812.004"),
    ("2025-12-01T10:00:00+0000 gpu-a01 kernel: NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
     "2025-12-01T10:00:00+0000"),
    ("[Mon Dec  1 10:00:00 2025] NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
     "Mon Dec 1 10:00:00 2025"),
])
def test_kernel_log_line_shapes(line, stamp):
    [event] = r.parse_kernel_log(line + "\n")
    assert (event["xid"], event["bus_id"], event["stamp"]) == (79, "00000000:3B:00.0", stamp)
    acknowledged = r.parse_acknowledgements("0000:3b:00 79 %s\n" % stamp.replace(" ", "  "))
    assert r.check_xid([event], acknowledged)["findings"] == []


ALL_FIXTURES = [(kind, name) for kind in ("nvidia-smi-q", "nvidia-smi-errors", "lspci", "kernel-log", "fabricmanager")
                for name in nvsmi_fixtures.names("readiness/" + kind)]
PARSERS = (smi_q.parse_smi_q, smi_q.parse_smi_table, r.parse_lspci, r.parse_kernel_log, r.parse_fabricmanager,
           r.parse_proc_driver_version, lambda text: r.classify_smi_failure(1, text, ""))


@pytest.mark.parametrize("kind, name", ALL_FIXTURES)
def test_every_parser_reads_every_fixture_without_raising(kind, name):
    text = load(kind, name)
    parsed = [parse(text) for parse in PARSERS]
    r.readiness_findings(smi_q=parsed[0], lspci=parsed[2], kernel_events=parsed[3], fabric_manager=parsed[4],
                         proc_version=parsed[5], smi_failure=parsed[6])


# Lines made of the pieces real outputs are made of, in any order: no parser may raise on them.
_PIECES = st.sampled_from(["GPU 00000000:3B:00.0", "    Fabric", "        State : Completed", "    Remapped Rows : N/A",
                           "        Pending : Yes", "NVRM: Xid (PCI:0000:3b:00): 79, GPU has fallen off the bus.",
                           "               NVRM: fallen off the bus", "[ 1.0] NVRM: loading NVIDIA UNIX x", "> ",
                           "$ nvidia-smi", "3b:00.0 3D controller: NVIDIA Corporation X (rev ff)", "|ERR! |",
                           "     Active: failed", "NVRM version: NVIDIA UNIX", "Attached GPUs : x", ":", "[...]"])


@settings(max_examples=150)
@given(st.lists(st.one_of(_PIECES, st.text(max_size=30)), max_size=25))
def test_parsers_never_raise_on_arbitrary_lines(lines):
    text = "\n".join(lines)
    parsed = [parse(text) for parse in PARSERS]
    r.readiness_findings(smi_q=parsed[0], lspci=parsed[2], kernel_events=parsed[3], fabric_manager=parsed[4],
                         proc_version=parsed[5], smi_failure=parsed[6])


def test_exit_14_with_the_infoROM_warning_is_no_nvidia_smi_failure():
    # the Azure sample's table and its warning; nvidia-smi exits 14 then (NVIDIA GPU Operator troubleshooting)
    table = load("nvidia-smi-errors", "v100-sxm2-32gb-8gpu-460-table-inforom-corrupted.txt")
    assert r.classify_smi_failure(14, table, "")["kind"] == "ok"
    assert r.classify_smi_failure(14, "some other text\n", "")["kind"] == "other"


@pytest.mark.parametrize("xid, cls", [(110, "reset"), (136, "reset"), (146, "reset"), (147, "reset"), (148, "reset"),
                                      (151, "reboot"), (38, "application"), (44, "application"),
                                      (137, "application"), (139, "application"), (160, "application")])
def test_catalogue_rows_beyond_the_first_table_are_classed_by_their_immediate_action(xid, cls):
    # the recorded Xid 62 line with its number replaced: the class comes from the catalogue row (FACTS.md)
    text = load("kernel-log", "rtx5080-595-xid62-pmu-halted-xid154-gpu-reset-required.txt")
    line = next(line for line in text.split("\n") if "): 62," in line)
    [verdict] = r.xid_verdicts(r.parse_kernel_log(line.replace("): 62,", "): %d," % xid)))
    assert verdict["class"] == cls
    findings = r.check_xid(r.parse_kernel_log(line.replace("): 62,", "): %d," % xid)))["findings"]
    assert [f["severity"] for f in findings] == (["error"] if cls != "application" else [])


# ------------------------------------------------------------------------------------------------ clocks


def test_a_gpu_held_down_by_the_power_brake_is_named_with_its_clock_and_the_way_on():
    result = r.readiness_findings(smi_q=q("h100-8gpu-sxm-535-fabric-completed.txt"))
    first = checks(result, "clocks")[0]
    assert (first["gpu"], first["expected"], first["found"]) == (
        0, "clocks not held down by a hardware slowdown",
        "HW Slowdown, HW Power Brake Slowdown Active, SM clock 86 MHz of 1980 MHz")
    assert first["hint"].startswith("the platform asserts the power brake (power supply or BMC)")
    # the same flags on a GPU whose clock is at its maximum (GPU 2 of the 535.183 recording): no finding
    other = q("h100-8gpu-sxm-535.183-fabric-completed.txt")
    assert "HW Power Brake Slowdown" in other["gpus"][2]["clock_events"]["active"]
    assert checks(r.readiness_findings(smi_q=other), "clocks") == []
    assert "clocks" in r.readiness_findings(smi_q=other)["applied"]


def test_the_old_throttle_reasons_key_is_read_and_an_idle_gpu_is_not_judged():
    # The Clocks Throttle Reasons and Clocks blocks of a real V100-SXM2 held by its server's power brake
    # (l4rz.net/dell-idrac-reverse-engineering, pre-R530 alignment), with the GPU header and the V100's Max Clocks
    # SM (1530 MHz, its datasheet) added: the excerpt carries neither.
    text = """GPU 00000000:1A:00.0
    Clocks Throttle Reasons
        Idle                              : Not Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Active
    Clocks
        Graphics                          : 382 MHz
        SM                                : 382 MHz
        Memory                            : 877 MHz
        Video                             : 1372 MHz
    Max Clocks
        SM                                : 1530 MHz
"""
    gpu = smi_q.parse_smi_q(text)["gpus"][0]
    assert gpu["clock_events"] == {"active": ["HW Power Brake Slowdown", "HW Slowdown"], "idle": False,
                                   "pstate": None, "busy": None, "sm_mhz": 382, "sm_max_mhz": 1530}
    assert [f["found"] for f in checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(text)), "clocks")] == [
        "HW Slowdown, HW Power Brake Slowdown Active, SM clock 382 MHz of 1530 MHz"]
    thermal = text.replace("HW Thermal Slowdown           : Not Active", "HW Thermal Slowdown           : Active") \
        .replace("HW Power Brake Slowdown       : Active", "HW Power Brake Slowdown       : Not Active")
    finding = checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(thermal)), "clocks")[0]
    assert finding["hint"].startswith("the GPU is too hot")
    # idle: low clocks are the GPU at rest, whatever the flags
    idle = text.replace("Idle                              : Not Active", "Idle                              : Active")
    assert checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(idle)), "clocks") == []
    # no reason readable (older GeForce drivers print N/A): the check does not apply
    gtx = r.readiness_findings(smi_q=q("gtx680-1gpu-470-persistence-disabled.txt"))
    assert gtx["not_applied"]["clocks"] == "no GPU reports its clock event reasons with its SM clocks"
    # at P8 the clocks rest low whatever Idle says (a real RTX 5090 read Idle Not Active there)
    rest = text.replace("GPU 00000000:1A:00.0\n", "GPU 00000000:1A:00.0\n    Performance State                     : P8\n")
    assert checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(rest)), "clocks") == []
    # busy at P8 with a slowdown (reported of laptop GPUs held at 210 MHz under load): judged
    busy = rest.replace("    Clocks\n", "    Utilization\n        Gpu                               : 97 %\n    Clocks\n")
    assert [f["gpu"] for f in checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(busy)), "clocks")] == [
        "00000000:1A:00.0"]
    # the reasons without the clocks (nvidia-smi -q -d PERFORMANCE), or the clocks without the maximum (the excerpt
    # as published): a slowdown Active is a warning that says what was not read; with none Active, not judged
    bare = text.split("    Clocks\n", maxsplit=1)[0]
    no_max = text.split("    Max Clocks\n", maxsplit=1)[0]
    assert [f["found"] for f in checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(bare)), "clocks")] == [
        "HW Slowdown, HW Power Brake Slowdown Active, no clocks read (NVML also reports a slowdown for a moment "
        "during a clock change)"]
    [finding] = checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(no_max)), "clocks")
    assert finding["severity"] == "warning" and finding["found"].startswith(
        "HW Slowdown, HW Power Brake Slowdown Active, SM clock 382 MHz, its maximum not read")
    calm = bare.replace("HW Slowdown                       : Active", "HW Slowdown                       : Not Active") \
        .replace("HW Power Brake Slowdown       : Active", "HW Power Brake Slowdown       : Not Active")
    assert "clocks" in r.readiness_findings(smi_q=smi_q.parse_smi_q(calm))["not_applied"]
    assert checks(r.readiness_findings(smi_q=smi_q.parse_smi_q(bare.replace(
        "Idle                              : Not Active", "Idle                              : Active"))), "clocks") == []


def test_retired_pages_at_the_limit_are_an_error_and_many_double_bit_ones_a_warning():
    # the real V100 recording's GPU 4 (sbe 1) with its counts raised: no recording at the limit was found
    text = load("nvidia-smi-q", "v100-sxm2-16gb-8gpu-550-retired-pages.txt")
    block = ("Single Bit ECC                    : 1\n"
             "        Double Bit ECC                    : 0")
    assert block in text

    def memory(sbe, dbe):
        changed = text.replace(block, block.replace(": 1\n", ": %d\n" % sbe).replace(": 0", ": %d" % dbe))
        return [(f["severity"], f["gpu"], f["found"]) for f in checks(
            r.readiness_findings(smi_q=smi_q.parse_smi_q(changed)), "memory")]

    assert memory(1, 0) == []
    assert memory(50, 13) == [("error", 4, "63 retired pages (single bit 50, double bit 13)")]
    assert memory(2, 16) == [("warning", 4, "16 pages retired for double bit errors")]
    assert memory(40, 15) == []


def test_gpus_clock_gated_at_zero_mhz_are_judged_and_at_rest():
    # real A40s at P8 read "SM : 0 MHz": their clocks are read (the check applies), and they rest
    result = r.readiness_findings(smi_q=q("a40-10gpu-550-p8-sm-0mhz.txt"))
    assert "clocks" in result["applied"] and checks(result, "clocks") == []
    loaded = q("rtx4090-8gpu-535-five-under-load-p2.txt")
    assert sorted({g["clock_events"]["pstate"] for g in loaded["gpus"]}) == [2, 8]
    assert checks(r.readiness_findings(smi_q=loaded), "clocks") == []


def test_a_device_handle_line_whose_bus_id_is_not_one_is_quoted_as_printed():
    # dcgm-exporter issue 604, as posted: a three-digit domain and device 0x80
    line = "Unable to determine the device handle for GPU 000:BA:80.0: Unknown Error"
    [finding] = r.failed_run_findings(255, line + "\n")
    assert (finding["gpu"], finding["expected"], finding["found"]) == (None, "NVML can open every GPU", line)


def test_an_xid_whose_bus_id_was_masked_in_a_pasted_log_is_still_judged_for_the_node():
    text = "[ 12.3] NVRM: Xid (PCI:0000:xx:00): 48, pid=1, name=python3, An uncorrectable double bit error\n"
    [event] = r.parse_kernel_log(text)
    assert (event["kind"], event["bus_id"], event["xid"], event["name"]) == ("xid", None, 48, "python3")
    [finding] = r.check_xid([event])["findings"]
    assert finding["gpu"] is None and finding["hint"].endswith("acknowledge with the line 'node 48 12.3'")
    assert r.check_xid([event], r.parse_acknowledgements("* 48 12.3\n"))["findings"] == []


def test_an_nvidia_smi_q_that_lost_its_indentation_is_an_error_not_a_healthy_gpu():
    # the same fault, pasted without leading blanks: its Remapped Rows section cannot be told from the others
    text = load("nvidia-smi-q", "a10-1gpu-535-remapped-rows-pending.txt")
    assert [f["check"] for f in r.readiness_findings(smi_q=smi_q.parse_smi_q(text))["findings"]] == ["memory"]
    flat = "\n".join(line.lstrip() for line in text.splitlines())
    parsed = smi_q.parse_smi_q(flat)
    assert parsed["unindented"] is True and smi_q.parse_smi_q(text)["unindented"] is False
    [finding] = r.readiness_findings(smi_q=parsed)["findings"]
    assert (finding["severity"], finding["check"], finding["gpu"]) == ("error", "errors", None)
