"""nvidia_smi query CSV parsers on every recorded ``--query-gpu`` / ``--query-compute-apps`` output."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi as n

import nvsmi_fixtures


def load(name):
    return nvsmi_fixtures.load("nvidia-smi", "query", name)


def test_a100_header_with_units_names_the_columns():
    rows = n.parse_query_gpu(load("a100sxm80-4gpu-name-mem-computecap-driver.txt"))
    assert [r["index"] for r in rows] == [0, 1, 2, 3]
    assert {r["name"] for r in rows} == {"NVIDIA A100-SXM4-80GB"}
    assert {r["memory.total"] for r in rows} == {81920}
    assert {(r["compute_cap"], r["driver_version"]) for r in rows} == {("8.0", "580.105.08")}


def test_a800_memory_free_per_gpu():
    rows = n.parse_query_gpu(load("a800-8gpu-memfree-driver-computecap.txt"))
    assert [r["memory.free"] for r in rows] == [8404, 12549, 12459, 12549, 67547, 81148, 81032, 65326]


def test_cmp170hx_noheader_with_the_fields_that_were_asked():
    rows = n.parse_query_gpu(load("cmp170hx-mig-mode-csv-noheader.txt"),
                             ("name", "mig.mode.current", "mig.mode.pending"))
    assert rows == [{"name": "NVIDIA CMP 170HX", "mig.mode.current": "Enabled", "mig.mode.pending": "Enabled"}]


def test_wrong_field_count_is_an_error_naming_the_line():
    with pytest.raises(ValueError, match="line 2: expected 7 comma-separated values"):
        n.parse_query_gpu(load("cmp170hx-mig-mode-csv-noheader.txt"))


def test_h200_uuids_and_percent():
    rows = n.parse_query_gpu(load("h200class-8gpu-index-uuid-mem-util.txt"))
    assert rows[0]["uuid"] == "GPU-a44622e3-2296-6285-0a86-84d0f6c67900"
    assert [r["memory.used"] for r in rows] == [130013, 130053, 105851, 129993, 106091, 105851, 106139, 58071]
    assert [r["utilization.gpu"] for r in rows] == [100] * 7 + [0]


def test_compute_apps_not_found_name_is_none():
    apps = n.parse_query_apps(load("h200class-8gpu-compute-apps-notfound.txt"))
    assert len(apps) == 8
    assert apps[0] == {"gpu_uuid": "GPU-a44622e3-2296-6285-0a86-84d0f6c67900", "pid": 1328667,
                       "process_name": "/usr/local/bin/python3.10", "used_memory": 130004}
    assert apps[-1]["process_name"] is None
    assert apps[-1]["pid"] == 1758887


def test_two_outputs_in_one_file():
    gpu_text, apps_text = load("l40s-1gpu-query-and-compute-apps-triton.txt").split("\n\n")
    assert n.parse_query_gpu(gpu_text) == [{"index": 0, "name": "NVIDIA L40S", "memory.total": 46068,
                                            "memory.used": 9123, "memory.free": 36346}]
    apps = n.parse_query_apps(apps_text)
    assert [(a["pid"], a["used_memory"]) for a in apps] == [(44378, 1836), (44966, 974), (52114, 6294)]
    assert apps[1]["process_name"] == "/opt/tritonserver/backends/python/triton_python_backend_stub"


def test_mixed_models_and_bus_ids():
    rows = n.parse_query_gpu(load("rtx5060ti-rtx5060-mixed-gpu-summary.txt"))
    assert [(r["name"], r["pci.bus_id"], r["memory.total"]) for r in rows] == [
        ("NVIDIA GeForce RTX 5060 Ti", "00000000:01:00.0", 16311),
        ("NVIDIA GeForce RTX 5060", "00000000:07:00.0", 8151)]


def test_header_only_means_no_processes():
    assert n.parse_query_apps(load("rtxpro6000-server-compute-apps-header-only.txt")) == []


def test_long_names_with_spaces_and_the_command_line_before_them():
    rows = n.parse_query_gpu(load("t1000-2xrtxpro6000-mixed-index-name-busid.txt"))
    assert [r["name"] for r in rows] == ["NVIDIA T1000 8GB"] + ["NVIDIA RTX PRO 6000 Blackwell Workstation Edition"] * 2
    assert rows[1]["pci.bus_id"] == "00000000:5E:00.0"


def test_used_gpu_memory_header_is_reported_as_used_memory():
    apps = n.parse_query_apps(load("vllm-enginecore-compute-apps.txt"))
    assert apps == [{"pid": 3858903, "process_name": "VLLM::EngineCore", "used_memory": 6265},
                    {"pid": 3880364, "process_name": "VLLM::EngineCore", "used_memory": 5530}]


def test_noheader_nounits_in_contract_order():
    text = ("0, GPU-a44622e3-2296-6285-0a86-84d0f6c67900, NVIDIA H200, 00000000:18:00.0, [N/A], 143771, 130013\n"
            "1, GPU-4f31bb83-f8dc-d0af-029e-bc4356e6afeb, NVIDIA H200, 0000:2a:00.0, Disabled, 143771, 0\n")
    rows = n.parse_query_gpu(text)
    assert rows[0]["mig.mode.current"] is None
    assert rows[1]["pci.bus_id"] == "00000000:2A:00.0"
    assert rows[1]["memory.used"] == 0


def test_comma_in_a_process_name_stays_in_the_name():
    text = "GPU-1, 77, 512, python -c import a,b\n"
    assert n.parse_query_apps(text)[0]["process_name"] == "python -c import a,b"


def test_lost_gpu_lines_are_skipped_and_reported():
    text = ("Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error\n"
            "0, GPU-a, NVIDIA A100-SXM4-80GB, 00000000:07:00.0, Disabled, 81920, 0\n")
    assert [r["index"] for r in n.parse_query_gpu(text)] == [0]
    assert n.find_lost_gpus(text) == [{"pci_bus_id": "00000000:34:00.0", "index": 1,
                                       "message": "Unable to determine the device handle for GPU1: "
                                                  "0000:34:00.0: Unknown Error"}]
    # before R550 the line names the bus id only: "GPU0000" is not NVML's index 0
    older = n.find_lost_gpus("Unable to determine the device handle for GPU0000:08:00.0: Unknown Error")[0]
    assert (older["pci_bus_id"], older["index"]) == ("00000000:08:00.0", None)
    assert n.find_lost_gpus("Unable to determine the device handle for GPU0: Unknown Error") == [
        {"pci_bus_id": None, "index": 0, "message": "Unable to determine the device handle for GPU0: Unknown Error"}]


def test_memory_that_is_not_a_number_is_an_error():
    with pytest.raises(ValueError, match="memory.total"):
        n.parse_query_gpu("0, GPU-a, X, 00000000:07:00.0, Disabled, lots, 0\n")


@pytest.mark.parametrize("bus, expected, proc", [
    ("0000:3b:00.0", "00000000:3B:00.0", "0000:3b:00.0"),
    ("00000000:5E:00.0", "00000000:5E:00.0", "0000:5e:00.0"),
    ("00000009:01:00.0", "00000009:01:00.0", "0009:01:00.0"),
])
def test_bus_id_forms(bus, expected, proc):
    assert n.normalize_bus_id(bus) == expected
    assert n.proc_bus_id(bus) == proc


def test_bad_bus_id():
    with pytest.raises(ValueError):
        n.normalize_bus_id("3b:00")


def test_watts_are_read_with_their_decimals():
    fields = ("index", "name", "utilization.gpu", "utilization.memory", "memory.total", "memory.free", "memory.used",
              "temperature.gpu", "clocks.gr", "power.draw", "power.limit", "pstate", "clocks_event_reasons.active")
    [row] = n.parse_query_gpu(load("rtx3090-1gpu-stats-noheader-nounits-power-limit-watts.txt"), fields)
    assert (row["index"], row["name"], row["power.draw"], row["power.limit"], row["temperature.gpu"]) == (
        0, "NVIDIA GeForce RTX 3090", 118.42, 350.0, 29)
    [row] = n.parse_query_gpu(load("rtx2080ti-header-blank-line-power-watts-unknown-error.txt"))
    assert (row["name"], row["power.draw"], row["power.limit"], row["power.default_limit"]) == (
        "GeForce RTX 2080 Ti", 228.82, 210.0, None)
    with pytest.raises(ValueError, match="power.limit: expected watts"):
        n.parse_query_gpu("0, 210 watts\n", ("index", "power.limit"))


def test_a_field_nvidia_smi_failed_to_read_is_no_value_and_is_listed_apart_from_a_missing_one():
    # --help-query-gpu: "'N/A' indicates that the field is not supported ... An error message indicates that
    # retrieving the field failed." A GPU that needs a reset answers some fields with the error only.
    [row] = n.parse_query_gpu(load("h100-requires-reset-temperature-utilization-in-slurm-job.txt"))
    assert row == {"index": 0, "temperature.gpu": None, "utilization.gpu": None, "memory.used": 0,
                   n.READ_ERRORS: {"temperature.gpu": "[GPU requires reset]", "utilization.gpu": "[GPU requires reset]"}}
    rows = n.parse_query_gpu(load("gpu-loop-l1-unknown-error-after-first-sample.txt"),
                             ("utilization.gpu", "utilization.encoder", "utilization.decoder"))
    assert [r.get(n.READ_ERRORS) for r in rows] == [None] + [dict.fromkeys(
        ("utilization.gpu", "utilization.encoder", "utilization.decoder"), "[Unknown Error]")] * 2
    assert [r["utilization.gpu"] for r in rows] == [0, None, None]
    [row] = n.parse_query_gpu(load("rtx2080ti-header-blank-line-power-watts-unknown-error.txt"))
    assert row[n.READ_ERRORS] == {"power.default_limit": "[Unknown Error]"}
    # the table's unbracketed marker in a MiB field was refused as "expected MiB as an integer"
    [row] = n.parse_query_gpu("0, ERR!, 0\n", ("index", "memory.total", "memory.used"))
    assert row == {"index": 0, "memory.total": None, "memory.used": 0, n.READ_ERRORS: {"memory.total": "ERR!"}}
    # a field the GPU does not have is no error
    [row] = n.parse_query_gpu(load("h200-590-every-field-mixed-case-header-exporter-capture.txt"))
    assert n.READ_ERRORS not in row


def test_a_header_with_the_mixed_case_names_of_newer_drivers_names_the_columns():
    # R580+ --help-query-gpu names fields like pci.baseClass and fabric.cliqueId; the header was read as a row
    [row] = n.parse_query_gpu(load("h200-590-every-field-mixed-case-header-exporter-capture.txt"))
    assert (row["index"], row["name"], row["pci.bus_id"], row["memory.total"], row["mig.mode.current"]) == (
        0, "NVIDIA H200", "00000000:83:00.0", 143771, "Disabled")
    assert (row["pci.baseClass"], row["fabric.cliqueId"], row["fabric.state"], row["gpu_recovery_action"]) == (
        "0x3", "0", "Completed", "None")
    assert row["count"] == 1 and len(row) == 212  # every column of the header


def test_a_prompt_and_an_elision_are_not_rows():
    rows = n.parse_query_gpu(load("a100pcie-esxi-prompt-busid-migmode-enabled.txt"))
    assert rows == [{"pci.bus_id": "00000000:0F:00.0", "mig.mode.current": "Enabled"}]
    rows = n.parse_query_gpu(load("a100-migmode-disabled-poster-elision.txt"))
    assert rows == [{"mig.mode.current": "Disabled"}, {"mig.mode.current": "Disabled"}]


@pytest.mark.parametrize("name, bus", [
    ("rtx4070ti-gpu-lost-hint-on-its-own-line.txt", "00000000:01:00.0"),
    ("gtx840m-windows-prompt-gpu-lost-wrapped.txt", "00000000:03:00.0"),
])
def test_a_lost_gpu_whose_message_was_broken_over_two_lines(name, bus):
    # the verification reads the lost GPU from these lines; the second half of the message is no row
    text = load(name)
    assert n.parse_query_gpu(text) == [] and n.parse_list_gpus(text) == []
    assert [g["pci_bus_id"] for g in n.find_lost_gpus(text)] == [bus]
