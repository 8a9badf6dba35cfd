"""The emulated nvidia-smi prints what real nvidia-smi printed (byte for byte where a recording exists)."""
import json

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi as nvidia_smi

import nvsmi_fixtures
import machines


def emulate(tmp_path, profile, *argv, log=None):
    path = tmp_path / "profile.json"
    machines.write(str(path), profile)
    return machines.run_emulator(path, argv, log=log)


def mig_a100():
    return machines.load("a100-40gb-mig-ssup2")


@pytest.mark.parametrize("argv, fixture", [
    (("mig", "-i", "0", "-lgi"), ("mig", "a100sxm4-40gb-lgi-3gis-driver580-ssup2.txt")),
    (("mig", "-i", "0", "-lci"), ("mig", "a100sxm4-40gb-lci-4cis-placement-driver580-ssup2.txt")),
    (("-i", "0", "-L"), ("list", "a100sxm4-40gb-mig-1c-4devices-L-ssup2.txt")),
])
def test_mig_outputs_equal_the_recording(tmp_path, argv, fixture):
    rc, out, err = emulate(tmp_path, mig_a100(), *argv)
    assert (rc, err) == (0, "")
    assert out == nvsmi_fixtures.load("nvidia-smi", *fixture)


def test_topo_is_replayed_verbatim(tmp_path):
    rc, out, _err = emulate(tmp_path, machines.load("v100-2gpu-s116"), "topo", "-m")
    assert rc == 0
    assert out == nvsmi_fixtures.load("nvidia-smi", "topo", "v100sxm2-2gpu-4nic-tabs-as-4spaces-s116.txt")


def test_query_gpu_formats(tmp_path):
    profile = mig_a100()
    rc, out, _err = emulate(tmp_path, profile, "--query-gpu=index,name,mig.mode.current,memory.total", "--format=csv")
    assert (rc, out) == (0, "index, name, mig.mode.current, memory.total [MiB]\n"
                            "0, NVIDIA A100-SXM4-40GB, Enabled, 40960 MiB\n")
    rc, out, _err = emulate(tmp_path, profile, "--query-gpu=memory.used,pci.bus_id,uuid",
                            "--format=csv,noheader,nounits")
    assert out == "249, 00000000:10:1C.0, GPU-9e4aeb94-01c0-5173-4811-4ca60f77b3a9\n"


def test_gpus_are_numbered_in_bus_order(tmp_path):
    profile = machines.load("v100-2gpu-s116")
    profile["gpus"].reverse()
    rc, out, _err = emulate(tmp_path, profile, "--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    assert out == "0, 00000000:3B:00.0\n1, 00000000:AF:00.0\n"


def test_selection_by_index_uuid_and_bus(tmp_path):
    profile = machines.load("v100-2gpu-s116")
    uuid = sorted(profile["gpus"], key=lambda g: g["pci_bus_id"])[1]["uuid"]
    for sel in ("1", uuid, "0000:af:00.0"):
        rc, out, _err = emulate(tmp_path, profile, "-i", sel, "--query-gpu=index", "--format=csv,noheader")
        assert (rc, out) == (0, "1\n"), sel


def test_compute_apps(tmp_path):
    rc, out, _err = emulate(tmp_path, machines.load("h200-8gpu-busy"), "--query-compute-apps=pid,used_memory,name",
                            "--format=csv")
    lines = out.splitlines()
    assert lines[0] == "pid, used_gpu_memory [MiB], process_name"
    assert lines[1] == "1328667, 130004 MiB, /usr/local/bin/python3.10"
    assert lines[-1] == "1758887, 58060 MiB, [Not Found]"
    # The same shape as the recorded output parses to the same values.
    recorded = nvidia_smi.parse_query_apps(nvsmi_fixtures.load("nvidia-smi", "query",
                                                               "h200class-8gpu-compute-apps-notfound.txt"))
    rc, out, _err = emulate(tmp_path, machines.load("h200-8gpu-busy"),
                            "--query-compute-apps=gpu_uuid,pid,process_name,used_gpu_memory", "--format=csv")
    assert nvidia_smi.parse_query_apps(out) == recorded


@pytest.mark.parametrize("argv, rc, text", [
    (("--bogus",), 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    (("--query-gpu=index,colour", "--format=csv"), 2, 'Field "colour" is not a valid field to query.\n\n'),
    (("--query-gpu=index",), 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
    (("topo", "-m", "-i", "0"), 2, "The -i command line argument must be used in conjunction with -n or -p.\n"),
    (("mig", "-frobnicate"), 2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n"),
])
def test_errors_like_nvidia_smi(tmp_path, argv, rc, text):
    got = emulate(tmp_path, machines.load("a100-8gpu-p4d"), *argv)
    assert got[:2] == (rc, text)


def test_mig_listing_on_a_gpu_without_mig(tmp_path):
    """As a real H200 on driver 580.159.04 answered with MIG disabled: exit status 0, the message on stdout
    (tests/fixtures/nvidia-smi/mig/h200-lgi-no-mig-enabled-devices-rc0-580.txt); the profiles are listed."""
    recorded = nvsmi_fixtures.load("nvidia-smi", "mig", "h200-lgi-no-mig-enabled-devices-rc0-580.txt")
    assert emulate(tmp_path, machines.load("a100-8gpu-p4d"), "mig", "-lgi")[:2] == (0, recorded)
    disabled = mig_a100()
    disabled["gpus"][0].update(mig_mode="Disabled", mig={"gpu_instances": []})
    assert emulate(tmp_path, disabled, "mig", "-i", "0", "-lgi")[:2] == (0, recorded)
    rc, out = emulate(tmp_path, disabled, "mig", "-i", "0", "-lgip")[:2]
    assert rc == 0 and "MIG 1g.5gb " in out and "MIG 7g.40gb " in out and " 7/7 " in out


def test_mig_enabled_without_instances(tmp_path):
    profile = mig_a100()
    profile["gpus"][0]["mig"] = {"gpu_instances": []}
    assert emulate(tmp_path, profile, "mig", "-lgi")[:2] == (6, "No GPU instances found: Not Found\n")
    assert emulate(tmp_path, profile, "mig", "-lci")[:2] == (6, "No compute instances found: Not Found\n")
    assert emulate(tmp_path, profile, "-L")[1] == \
        "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-9e4aeb94-01c0-5173-4811-4ca60f77b3a9)\n"


def test_lci_filters(tmp_path):
    rows = nvidia_smi.parse_mig_lci(emulate(tmp_path, mig_a100(), "mig", "-lci", "-gi", "3", "-ci", "1")[1])
    assert [(r["gi_id"], r["ci_id"]) for r in rows] == [(3, 1)]


def test_driver_not_loaded(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["driver"] = "not_loaded"
    rc, out, _err = emulate(tmp_path, profile, "-L")
    assert rc == 9 and "couldn't communicate with the NVIDIA driver" in out


def test_no_devices(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["gpus"] = []
    assert emulate(tmp_path, profile, "--query-gpu=index", "--format=csv")[:2] == (6, "No devices were found\n")


def test_missing_and_unreachable_gpus(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["gpus"][0]["lost"] = True
    profile["gpus"][2]["lost"] = "unreachable"
    rc, out, err = emulate(tmp_path, profile, "--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    assert rc == 15
    assert out.splitlines() == ["0, 00000000:10:1D.0", "2, 00000000:20:1D.0", "3, 00000000:90:1C.0",
                                "4, 00000000:90:1D.0", "5, 00000000:A0:1C.0", "6, 00000000:A0:1D.0"]
    assert err == "Unable to determine the device handle for GPU1: 0000:20:1C.0: Unknown Error\n"
    rc, out, err = emulate(tmp_path, profile, "topo", "-m")
    topo = nvidia_smi.parse_topo_matrix(out)
    # The matrix keeps NVML's indexes: the unreachable GPU1 has no row, the others keep their numbers.
    assert rc == 15 and [g["name"] for g in topo["gpus"]] == ["GPU0", "GPU2", "GPU3", "GPU4", "GPU5", "GPU6"]


def test_a_corrupted_infoROM_warns_after_the_whole_answer_and_exits_14(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["gpus"][3]["inforom"] = "corrupted"
    bus = profile["gpus"][3]["pci_bus_id"]
    warning = "WARNING: infoROM is corrupted at gpu %s\n" % bus[4:]
    healthy = machines.load("a100-8gpu-p4d")
    for argv in (["--query-gpu=index,pci.bus_id", "--format=csv,noheader"], ["-L"], ["topo", "-m"], ["-q"]):
        rc, out, err = emulate(tmp_path, profile, *argv)
        _rc, whole, _err = emulate(tmp_path, healthy, *argv)
        assert (rc, out, err) == (14, whole + warning, ""), argv
    rc, out, _err = emulate(tmp_path, profile, "--query-gpu=index,pci.bus_id", "--format=csv,noheader")
    assert nvidia_smi.inforom_corrupted_gpus(out) == [bus]
    assert len(nvidia_smi.parse_query_gpu(out, ("index", "pci.bus_id"))) == 8
    assert emulate(tmp_path, profile, "--bogus")[0] == 2  # a usage error prints no warning


def test_generated_topo_round_trips_through_the_parser(tmp_path):
    profile = machines.shape_profile(2, 8, 2, "interleaved", 2)
    profile["nics"] = [{"device": "mlx5_0", "links": {profile["gpus"][0]["uuid"]: "PIX"}}]
    for fmt in ("current", "old"):
        profile["topo_format"] = fmt
        topo = nvidia_smi.parse_topo_matrix(emulate(tmp_path, profile, "topo", "-m")[1])
        assert [g["cpu_affinity"] for g in topo["gpus"]] == [list(range(0, 32, 2))] * 2 + [list(range(1, 32, 2))] * 2
        assert topo["gpus"][0]["links"] == {"GPU1": "NV12", "GPU2": "NV12", "GPU3": "NV12",
                                            ("NIC0" if fmt == "current" else "mlx5_0"): "PIX"}
        assert topo["nics"][0]["device"] == "mlx5_0"


def test_calls_are_logged(tmp_path):
    log = tmp_path / "log"
    emulate(tmp_path, machines.load("a100-8gpu-p4d"), "topo", "-m", log=log)
    emulate(tmp_path, machines.load("a100-8gpu-p4d"), "-L", log=log)
    assert [json.loads(line) for line in log.read_text().splitlines()] == [["topo", "-m"], ["-L"]]


def test_default_profile_is_self_contained_and_current():
    with open(machines.os.path.join(machines.HERE, "profile.json")) as handle:
        default = json.load(handle)
    assert "text_file" not in default["topo"]
    assert default == machines.self_contained(machines.READY[machines.DEFAULT]())
