"""smi_q.parse_smi_q on every recorded ``nvidia-smi -q`` output under tests/fixtures/readiness, and
smi_q.parse_smi_table on the recorded plain tables.

The expected values were read off each fixture by eye (``grep`` on the file), not produced by the parser. The
files are loaded as recorded (only the ``# source:`` header is taken off): prompts, ``> `` quotes, ``[...]`` and
grep's ``--`` stay in the text the parser sees.
"""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi_q

import nvsmi_fixtures


def load(name, kind="nvidia-smi-q"):
    return nvsmi_fixtures.load("readiness", kind, name)


def parse(name, kind="nvidia-smi-q"):
    return smi_q.parse_smi_q(load(name, kind))


# file -> (driver, attached, GPUs parsed, first bus id, first product name, first minor, first persistence)
EXPECTED = {
    "a10-1gpu-535-remapped-rows-pending.txt":
        ("535.129.03", 1, 1, "00000000:07:00.0", "NVIDIA A10", 0, "Enabled"),
    "a100-sxm4-80gb-4gpu-555-fabric-na.txt":
        ("555.42.02", 4, 4, "00000000:68:00.0", "NVIDIA A100-SXM4-80GB", 3, "Enabled"),
    "a40-10gpu-550-p8-sm-0mhz.txt":
        ("550.127.05", 10, 10, "00000000:4F:00.0", "NVIDIA A40", 0, "Enabled"),
    "a100-sxm4-80gb-8gpu-510-remapped-rows-pending-excerpt.txt":
        ("510.73.08", 8, 1, "00000000:10:1C.0", "NVIDIA A100-SXM4-80GB", None, None),
    "ecc-errors-sram-uncorrectable-volatile1-aggregate5-excerpt.txt":
        (None, None, 1, None, None, None, None),
    "gh200-1gpu-550-fabric-na.txt":
        ("550.127.05", 1, 1, "00000000:DD:00.0", "NVIDIA GH200 480GB", 0, "Enabled"),
    "gtx680-1gpu-470-persistence-disabled.txt":
        ("470.256.02", 1, 1, "00000000:08:00.0", "NVIDIA GeForce GTX 680", 0, "Disabled"),
    "h100-8gpu-sxm-535-fabric-completed.txt":
        ("535.161.08", 8, 8, "00000000:19:00.0", "NVIDIA H100 80GB HBM3", 0, "Enabled"),
    "h100-8gpu-sxm-535.183-fabric-completed.txt":
        ("535.183.01", 8, 8, "00000000:53:00.0", "NVIDIA H100 80GB HBM3", 0, "Enabled"),
    "h100-8gpu-sxm-565-fabric-completed-clique0-recovery-none.txt":
        ("565.57.01", 8, 8, "00000000:18:00.0", "NVIDIA H100 80GB HBM3", 0, "Enabled"),
    "h100nvl-2gpu-550-pcie.txt":
        ("550.54.14", 2, 2, "00000000:AD:00.0", "NVIDIA H100 NVL", 4, "Enabled"),
    "h200-1gpu-passthrough-550-fabric-completed.txt":
        ("550.90.12", 1, 1, "00000000:03:00.0", "NVIDIA H200", 0, "Enabled"),
    "h200-1gpu-vm-580-open-fabric-na-cc-off.txt":
        ("580.159.04", 1, 1, "00000000:00:06.0", "NVIDIA H200", 0, "Enabled"),
    "l40s-1gpu-550-pcie.txt":
        ("550.127.05", 1, 1, "00000000:A1:00.0", "NVIDIA L40S", 6, "Enabled"),
    "retired-pages-pending-page-blacklist-yes-excerpt.txt":
        (None, None, 1, None, None, None, None),
    "rtx4090-8gpu-535-addressing-mode-unknown-error.txt":
        ("535.154.05", 8, 8, "00000000:01:00.0", "NVIDIA GeForce RTX 4090", 2, "Enabled"),
    "rtx4090-8gpu-535-five-under-load-p2.txt":
        ("535.154.05", 8, 8, "00000000:01:00.0", "NVIDIA GeForce RTX 4090", 3, "Enabled"),
    "rtx4090-8gpu-535-healthy.txt":
        ("535.154.05", 8, 8, "00000000:01:00.0", "NVIDIA GeForce RTX 4090", 2, "Enabled"),
    "rtx5090-1gpu-570-reset-status-deprecated-recovery-none.txt":
        ("570.124.06", 1, 1, "00000000:02:00.0", "NVIDIA GeForce RTX 5090", 1, "Enabled"),
    "titanv-1gpu-560-persistence-disabled.txt":
        ("560.35.03", 1, 1, "00000000:01:00.0", "NVIDIA TITAN V", 0, "Disabled"),
    "v100-sxm2-16gb-8gpu-550-retired-pages.txt":
        ("550.127.05", 8, 8, "00000000:00:04.0", "Tesla V100-SXM2-16GB", 0, "Enabled"),
    "h100class-550-q-ecc-rowremapper-pending-ecc-mode-unknown-error.txt":
        ("550.90.07", 8, 1, "00000000:52:00.0", None, None, None),
    "rtx3090-gpu2-535-q-i2-excerpt-reset-required-not-ready.txt":
        (None, None, 1, None, None, None, None),
    # R610 on Windows: the driver version from "KMD Version" (the deprecated "Driver Version" carries a note);
    # no minor number and no persistence mode under WDDM
    "rtx3060-laptop-1gpu-610-windows-deprecated-driver-version-kmd-version.txt":
        ("610.88", 1, 1, "00000000:01:00.0", "NVIDIA GeForce RTX 3060 Laptop GPU", None, None),
    # every line 4 blanks to the right (a Markdown code block): the global lines are where the GPU header is
    "mx330-1gpu-465-q-d-performance-markdown-indented-cut.txt":
        ("465.27", 1, 1, "00000000:2D:00.0", None, None, None),
    "v100-sxm2-32gb-c4130-power-brake-excerpt-no-max-clocks.txt":
        (None, None, 1, None, None, None, None),
    # a vGPU guest: "Attached vGPUs : 1"
    "vgpu-guest-grid-v100d-8c-535-attached-vgpus-k8s-pod.txt":
        ("535.216.01", 1, 1, "00000000:02:00.0", "GRID V100D-8C", 0, "Enabled"),
    # the product name is the GPU's, not the one in the licence section; the banner indented by the page
    "vgpu-guest-rtxa6000-24q-535-unlicensed-cuda-operation-not-supported.txt":
        ("535.183.06", 1, 1, "00000000:00:10.0", "NVIDIA RTXA6000-24Q", 0, "Enabled"),
    "vgpu-guest-rtxa6000-24q-535-unlicensed-unrestricted-gridd-failed.txt":
        ("535.183.06", 1, 1, "00000000:00:10.0", "NVIDIA RTXA6000-24Q", 0, "Disabled"),
    # MIG on, R590: each instance's "MIG Device" block (its own ECC Errors, FB memory) is part of its GPU, not a GPU
    "h100-1gpu-590-mig-4-devices-r590-layout-idle.txt":
        ("590.48.01", 1, 1, "00000000:00:09.0", "NVIDIA H100 80GB HBM3", 0, "Enabled"),
    "h200-1gpu-590-mig-5-devices-two-ci-one-gi.txt":
        ("590.48.01", 1, 1, "00000000:83:00.0", "NVIDIA H200", 0, "Enabled"),
    # Windows: no minor number or persistence mode; a process named "Insufficient Permissions" is no read error
    "gtx1660super-windows-462-wddm-process-insufficient-permissions.txt":
        ("462.31", 1, 1, "00000000:01:00.0", "GeForce GTX 1660 SUPER", None, None),
}


def test_every_q_fixture_has_expectations():
    assert sorted(EXPECTED) == nvsmi_fixtures.names("readiness/nvidia-smi-q")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_headline_values(name):
    driver, attached, count, bus, product, minor, persistence = EXPECTED[name]
    q = parse(name)
    assert (q["driver_version"], q["attached_gpus"], len(q["gpus"])) == (driver, attached, count)
    first = q["gpus"][0]
    assert (first["bus_id"], first["product_name"], first["minor_number"], first["persistence_mode"]) == (
        bus, product, minor, persistence)


def test_a_yes_or_no_followed_by_a_posters_mark():
    gpu = parse("h100class-550-q-ecc-rowremapper-pending-ecc-mode-unknown-error.txt")["gpus"][0]
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 1, "pending": True, "failure": False}


def test_a10_remapped_rows_pending():
    gpu = parse("a10-1gpu-535-remapped-rows-pending.txt")["gpus"][0]
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 4, "pending": True, "failure": False}
    assert (gpu["reset_required"], gpu["drain_and_reset_recommended"]) == (False, None)
    assert gpu["fabric"] is None  # State N/A
    assert gpu["retired_pages"] is None  # all N/A on Ampere
    assert gpu["uuid"] == "GPU-73d12ef7-f589-f867-4259-c7090ab44736"
    assert gpu["mig_mode"] is None
    assert gpu["errors"] == []
    assert gpu["ecc"]["mode"] == "Enabled"


def test_a100_4gpu_remapped_rows_per_gpu():
    # GPU 00000000:9E:00.0 (the second) reads Correctable 1 / Pending Yes; GPU 00000000:C2:00.0 Correctable 1 /
    # Pending No (the README's one-line summary says "Pending No", which is true of the other three only).
    q = parse("a100-sxm4-80gb-4gpu-555-fabric-na.txt")
    assert [g["bus_id"] for g in q["gpus"]] == ["00000000:68:00.0", "00000000:9E:00.0", "00000000:C2:00.0",
                                                "00000000:D4:00.0"]
    assert [g["remapped_rows"]["pending"] for g in q["gpus"]] == [False, True, False, False]
    assert [g["remapped_rows"]["correctable"] for g in q["gpus"]] == [0, 1, 1, 0]
    assert [g["minor_number"] for g in q["gpus"]] == [3, 4, 5, 6]
    assert {g["mig_mode"] for g in q["gpus"]} == {"Disabled"}
    assert {g["fabric"] is None for g in q["gpus"]} == {True}  # State N/A on every GPU
    assert q["gpus"][1]["ecc"]["volatile_correctable"] == 353


def test_a100_excerpt_with_elisions():
    q = parse("a100-sxm4-80gb-8gpu-510-remapped-rows-pending-excerpt.txt")
    assert (q["cuda_version"], q["timestamp"]) == ("11.6", "Wed Jun  7 19:32:16 2023")
    gpu = q["gpus"][0]
    assert gpu["remapped_rows"] == {"correctable": 1, "uncorrectable": 0, "pending": True, "failure": False}
    assert gpu["ecc"]["volatile_correctable"] == 177 and gpu["ecc"]["aggregate_correctable"] == 177
    assert gpu["ecc"]["volatile_uncorrectable"] == 0


def test_ecc_excerpt_without_gpu_header():
    gpu = parse("ecc-errors-sram-uncorrectable-volatile1-aggregate5-excerpt.txt")["gpus"][0]
    assert gpu["bus_id"] is None
    assert (gpu["ecc"]["volatile_uncorrectable"], gpu["ecc"]["aggregate_uncorrectable"]) == (1, 5)
    assert smi_q.find(gpu["sections"], "ECC Errors", "Aggregate", "SRAM Uncorrectable") == "5"


def test_gh200_uncorrectable_row_not_pending():
    gpu = parse("gh200-1gpu-550-fabric-na.txt")["gpus"][0]
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 1, "pending": False, "failure": False}
    assert gpu["ecc"]["aggregate_uncorrectable"] == 1
    assert smi_q.find(gpu["sections"], "GPU C2C Mode") is not None


def test_gtx680_old_branch_shapes():
    gpu = parse("gtx680-1gpu-470-persistence-disabled.txt")["gpus"][0]
    assert gpu["remapped_rows"] is None  # "Remapped Rows : N/A" on one line
    assert smi_q.find(gpu["sections"], "Remapped Rows") == "N/A"
    assert gpu["fabric"] is None and smi_q.find(gpu["sections"], "Fabric") is None  # no Fabric section in 470
    assert gpu["retired_pages"] is None
    assert gpu["reset_required"] is None and gpu["recovery_action"] is None
    # Pre-R510 ECC block: "Single Bit" / "Double Bit" headers (with trailing blanks), all N/A.
    assert smi_q.find(gpu["sections"], "ECC Errors", "Volatile", "Double Bit", "Total") == "N/A"
    assert gpu["ecc"] is None


@pytest.mark.parametrize("name", ["h100-8gpu-sxm-535-fabric-completed.txt",
                                  "h100-8gpu-sxm-535.183-fabric-completed.txt"])
def test_h100_535_fabric_state_and_status_only(name):
    q = parse(name)
    assert [g["fabric"]["state"] for g in q["gpus"]] == ["Completed"] * 8
    assert [g["fabric"]["status"] for g in q["gpus"]] == ["Success"] * 8
    assert {g["fabric"]["clique_id"] for g in q["gpus"]} == {None}  # 535 prints State and Status only
    assert [g["minor_number"] for g in q["gpus"]] == list(range(8))
    assert {g["mig_mode"] for g in q["gpus"]} == {"Disabled"}
    assert {g["drain_and_reset_recommended"] for g in q["gpus"]} == {False}


def test_h100_565_clique_cluster_and_recovery_action():
    q = parse("h100-8gpu-sxm-565-fabric-completed-clique0-recovery-none.txt")
    fabric = q["gpus"][0]["fabric"]
    assert fabric["clique_id"] == "0"
    assert fabric["cluster_uuid"] == "00000000-0000-0000-0000-000000000000"
    assert fabric["health"] == {"Bandwidth": "N/A"} and fabric["health_summary"] is None
    assert {g["recovery_action"] for g in q["gpus"]} == {"None"}
    assert {g["reset_required"] for g in q["gpus"]} == {False}
    assert q["gpus"][1]["bus_id"] == "00000000:2A:00.0"


def test_h100nvl_and_l40s_pcie_without_fabric():
    q = parse("h100nvl-2gpu-550-pcie.txt")
    assert [g["bus_id"] for g in q["gpus"]] == ["00000000:AD:00.0", "00000000:AE:00.0"]
    assert [g["fabric"] for g in q["gpus"]] == [None, None]
    assert [g["minor_number"] for g in q["gpus"]] == [4, 5]
    l40s = parse("l40s-1gpu-550-pcie.txt")["gpus"][0]
    assert l40s["remapped_rows"]["pending"] is False and l40s["fabric"] is None


def test_h200_passthrough_fabric_completed_zero_uuid():
    gpu = parse("h200-1gpu-passthrough-550-fabric-completed.txt")["gpus"][0]
    assert gpu["fabric"]["state"] == "Completed" and gpu["fabric"]["status"] == "Success"
    assert gpu["fabric"]["cluster_uuid"] == "00000000-0000-0000-0000-000000000000"
    assert smi_q.find(gpu["sections"], "GPU Virtualization Mode", "Virtualization Mode") == "Pass-Through"


def test_h200_580_recorded_on_our_lent_machine():
    # Read off the file: R580 prints no "GPU Reset Status" block, Fabric State N/A (no NVSwitch, no fabric),
    # Retired Pages all N/A (Hopper remaps rows), one section header with a trailing blank.
    q = parse("h200-1gpu-vm-580-open-fabric-na-cc-off.txt")
    assert (q["cuda_version"], q["timestamp"]) == ("13.0", "Fri Dec  4 18:38:53 2026")
    gpu = q["gpus"][0]
    assert gpu["uuid"] == "GPU-1e34b30a-58cb-40c0-3a72-f27413d938f6"
    assert gpu["mig_mode"] == "Disabled"
    assert gpu["remapped_rows"] == {"correctable": 0, "uncorrectable": 0, "pending": False, "failure": False}
    assert gpu["retired_pages"] is None
    assert gpu["fabric"] is None
    assert smi_q.find(gpu["sections"], "Fabric", "Health", "Partition Assigned") == "N/A"
    assert gpu["recovery_action"] == "None"
    assert (gpu["reset_required"], gpu["drain_and_reset_recommended"]) == (None, None)
    assert smi_q.find(gpu["sections"], "GPU Reset Status") is None
    assert gpu["ecc"] == {"mode": "Enabled", "volatile_uncorrectable": 0, "aggregate_uncorrectable": 0,
                          "volatile_correctable": 0, "aggregate_correctable": 0}
    assert gpu["errors"] == []  # "Display Mode : Requested functionality has been deprecated" is no error
    assert smi_q.find(gpu["sections"], "GPU Virtualization Mode", "Virtualization Mode") == "Pass-Through"
    assert smi_q.find(gpu["sections"], "GPU Memory Power Readings", "Average Power Draw") == "28.71 W"
    assert smi_q.find(gpu["sections"], "FB Memory Usage", "Total") == "143771 MiB"
    assert smi_q.find(gpu["sections"], "Capabilities", "EGM") == "disabled"


def test_mig_devices_each_with_its_own_ecc_count():
    h200 = smi_q.parse_smi_q(load("h200-1gpu-590-mig-5-devices-two-ci-one-gi.txt"))["gpus"][0]
    # two MIG devices share GPU instance 2 (compute instances 0 and 1)
    assert [(d["index"], d["gi_id"], d["ci_id"], d["volatile_uncorrectable"]) for d in h200["mig_devices"]] == [
        (0, 2, 0, 0), (1, 2, 1, 0), (2, 3, 0, 0), (3, 9, 0, 0), (4, 10, 0, 0)]
    h100 = smi_q.parse_smi_q(load("h100-1gpu-590-mig-4-devices-r590-layout-idle.txt"))["gpus"][0]
    assert len(h100["mig_devices"]) == 4
    # the GPU's own ECC block is not a MIG device's
    assert h100["ecc"]["volatile_uncorrectable"] == 0
    a100 = smi_q.parse_smi_q(load("a100-sxm4-80gb-8gpu-510-remapped-rows-pending-excerpt.txt"))["gpus"][0]
    assert a100["mig_devices"] == []


def test_retired_pages_excerpt_lower_case_heading():
    gpu = parse("retired-pages-pending-page-blacklist-yes-excerpt.txt")["gpus"][0]
    assert gpu["retired_pages"] == {"sbe": 2, "dbe": 0, "pending": True}


def test_rtx4090_unknown_error_on_every_gpu():
    q = parse("rtx4090-8gpu-535-addressing-mode-unknown-error.txt")
    assert [g["errors"] for g in q["gpus"]] == [[{"field": "Addressing Mode", "value": "Unknown Error"}]] * 8
    healthy = parse("rtx4090-8gpu-535-healthy.txt")
    assert [g["errors"] for g in healthy["gpus"]] == [[]] * 8
    assert smi_q.find(healthy["gpus"][0]["sections"], "Addressing Mode") == "None"


def test_rtx5090_deprecated_reset_status_and_recovery_none():
    gpu = parse("rtx5090-1gpu-570-reset-status-deprecated-recovery-none.txt")["gpus"][0]
    assert (gpu["reset_required"], gpu["drain_and_reset_recommended"]) == (None, None)
    assert smi_q.find(gpu["sections"], "GPU Reset Status", "Reset Required") == \
        "Requested functionality has been deprecated"
    assert gpu["recovery_action"] == "None"
    assert gpu["remapped_rows"] is None and gpu["fabric"] is None
    assert smi_q.find(gpu["sections"], "Fabric", "Health", "Route Unhealthy") == "N/A"
    assert smi_q.find(gpu["sections"], "Platform Info", "Chassis Serial Number") == ""


def test_titanv_processes_kept_generically():
    gpu = parse("titanv-1gpu-560-persistence-disabled.txt")["gpus"][0]
    processes = gpu["sections"]["Processes"]
    assert [p["_value"] for p in processes["Process ID"]] == ["100607", "100838", "101815"]
    assert [p["Name"] for p in processes["Process ID"]] == ["/usr/lib/xorg/Xorg", "/usr/bin/gnome-shell",
                                                            "/opt/test"]
    assert gpu["fabric"] is None  # State N/A
    assert gpu["retired_pages"] is None  # Single/Double Bit ECC and Pending Page Blacklist all N/A


def test_v100_retired_pages_counted_and_host_side_unknown_error():
    q = parse("v100-sxm2-16gb-8gpu-550-retired-pages.txt")
    # GPU 4 has one page retired for single-bit errors, none pending.
    assert [g["retired_pages"]["sbe"] for g in q["gpus"]] == [0, 0, 0, 0, 1, 0, 0, 0]
    assert {(g["retired_pages"]["dbe"], g["retired_pages"]["pending"]) for g in q["gpus"]} == {(0, False)}
    assert {g["remapped_rows"] is None for g in q["gpus"]} == {True}
    assert q["gpus"][0]["errors"] == [{"field": "PCI/GPU Link Info/PCIe Generation/Host Max",
                                       "value": "Unknown Error"}]
    assert q["gpus"][0]["ecc"]["volatile_uncorrectable"] == 0


# Fabric blocks of nvidia-smi -q in the fabricmanager/ fixtures (grep excerpts with prompts, a column-0 block).
@pytest.mark.parametrize("name, fabric", [
    ("h100-p5-570-fabric-completed-grep.txt",
     {"state": "Completed", "status": "Success", "clique_id": None, "cluster_uuid": None, "health_summary": None,
      "health": None}),
    ("h100-p5-570-fabric-in-progress-grep.txt",
     {"state": "In Progress", "status": None, "clique_id": None, "cluster_uuid": None, "health_summary": None,
      "health": None}),
    ("azure-nvlink-node-fabric-completed-insufficient-resources.txt",
     {"state": "Completed", "status": "Insufficient Resources", "clique_id": "0",
      "cluster_uuid": "00000000-0000-0000-0000-000000000000", "health_summary": None, "health": None}),
    ("gb200-mnnvl-fabric-grep-clique2-health-unhealthy.txt",
     {"state": "Completed", "status": "Success", "clique_id": "2",
      "cluster_uuid": "dc6e40c4-d722-4357-9ba6-5291dd461278", "health_summary": "Unhealthy",
      "health": {"Summary": "Unhealthy", "Bandwidth": "Full"}}),
])
def test_fabric_excerpts(name, fabric):
    q = parse(name, "fabricmanager")
    assert [g["fabric"] for g in q["gpus"]] == [fabric]
    assert q["gpus"][0]["bus_id"] is None


def test_repeated_sections_of_an_excerpt_are_separate_gpus():
    block = nvsmi_fixtures.load("readiness", "fabricmanager", "h100-p5-570-fabric-completed-grep.txt")
    q = smi_q.parse_smi_q(block + "--\n" + block)
    assert len(q["gpus"]) == 2


def test_quoted_and_crlf_text_parses_the_same():
    text = load("a10-1gpu-535-remapped-rows-pending.txt")
    quoted = "".join("> " + line + "\r\n" for line in text.split("\n"))
    assert smi_q.parse_smi_q(quoted)["gpus"][0]["remapped_rows"] == \
        smi_q.parse_smi_q(text)["gpus"][0]["remapped_rows"]


def test_pending_page_retirement_label_and_error_markers():
    text = ("GPU 0000:3b:00.0\n    Retired Pages\n        Single Bit ECC : 0\n        Double Bit ECC : 1\n"
            "        Pending Page Retirement : Yes\n    Fan Speed : ERR!\n    Clocks\n"
            "        SM : [GPU requires reset]\n")
    gpu = smi_q.parse_smi_q(text)["gpus"][0]
    assert gpu["bus_id"] == "00000000:3B:00.0"
    assert gpu["retired_pages"] == {"sbe": 0, "dbe": 1, "pending": True}
    assert gpu["errors"] == [{"field": "Fan Speed", "value": "ERR!"},
                             {"field": "Clocks/SM", "value": "[GPU requires reset]"}]


def test_nothing_to_parse():
    assert smi_q.parse_smi_q("")["gpus"] == []
    assert smi_q.parse_smi_q("Failed to initialize NVML: Driver/library version mismatch\n")["gpus"] == []


# ----------------------------------------------------------------------------------------------------- tables


def test_table_err_in_fan_cell():
    table = smi_q.parse_smi_table(load("geforce-1gpu-525-table-fan-err.txt", "nvidia-smi-errors"))
    assert (table["driver_version"], table["cuda_version"]) == ("525.125.06", "12.0")
    gpu = table["gpus"][0]
    assert (gpu["index"], gpu["bus_id"], gpu["product_name"], gpu["persistence_mode"]) == (
        0, "00000000:01:00.0", "NVIDIA GeForce ...", "Disabled")
    assert gpu["errors"] == [{"field": "Fan", "value": "ERR!"}]
    assert gpu["mig_mode"] is None


def test_table_healthy_h100():
    table = smi_q.parse_smi_table(load("h100-8gpu-550-table-healthy.txt", "nvidia-smi-errors"))
    assert (table["driver_version"], table["cuda_version"]) == ("550.90.07", "12.4")
    assert [g["index"] for g in table["gpus"]] == list(range(8))
    assert [g["bus_id"] for g in table["gpus"]][-1] == "00000000:DB:00.0"
    assert {g["persistence_mode"] for g in table["gpus"]} == {"Enabled"}
    assert {g["mig_mode"] for g in table["gpus"]} == {"Disabled"}
    assert {g["ecc"]["volatile_uncorrectable"] for g in table["gpus"]} == {0}
    assert [g["errors"] for g in table["gpus"]] == [[]] * 8


def test_table_r610_header_names_its_versions_kmd_and_cuda_umd():
    # before R610 "Driver Version:" and "CUDA Version:"; a header not recognised left every field unnamed
    text = load("rtxpro6000-2gpu-610-table-mig-4x1g-kubesimplify.txt", "nvidia-smi-errors")
    table = smi_q.parse_smi_table(text)
    assert (table["driver_version"], table["cuda_version"]) == ("610.43.02", "13.3")
    assert [(g["index"], g["bus_id"], g["mig_mode"]) for g in table["gpus"]] == [
        (2, "00000000:41:00.0", "Enabled"), (3, "00000000:61:00.0", "Enabled")]
    assert [g["errors"] for g in table["gpus"]] == [[], []]
    broken = smi_q.parse_smi_table(text.replace("40W /  600W", "ERR! /  600W"))
    assert broken["gpus"][0]["errors"] == [{"field": "Pwr:Usage/Cap", "value": "ERR!"}]


def test_table_healthy_h200_580():
    table = smi_q.parse_smi_table(load("h200-1gpu-580-table-healthy.txt", "nvidia-smi-errors"))
    assert (table["driver_version"], table["cuda_version"]) == ("580.159.04", "13.0")
    [gpu] = table["gpus"]
    assert (gpu["index"], gpu["bus_id"], gpu["product_name"], gpu["persistence_mode"]) == (
        0, "00000000:00:06.0", "NVIDIA H200", "Enabled")
    assert gpu["mig_mode"] == "Disabled"
    assert gpu["ecc"]["volatile_uncorrectable"] == 0
    assert gpu["errors"] == []
