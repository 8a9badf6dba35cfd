"""verify_node: every check, both severities, on a 2x32x2 node with 8 A100s (4 per socket)."""
import copy

import pytest

import nvsmi_fixtures

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import (
    NVIDIA_MAJOR,
    count_summary,
    parse_slurm_version,
    summarize,
    verify_node,
)

NODE = "gpu-a01"
# nvidia-smi names and bus ids as an HGX A100 8-GPU board reports them (cf. tests/fixtures query + topo files)
BUS = ["00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
       "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0"]
A100 = "NVIDIA A100-SXM4-80GB"

SLURM = """ClusterName=demo
SlurmctldHost=ctl01
GresTypes=gpu
NodeName=gpu-a01 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1031000 Gres=gpu:a100:8 State=UNKNOWN
PartitionName=main Nodes=ALL Default=YES
"""
GRES = """# rendered by hpc.slurm_gres
NodeName=gpu-a01 AutoDetect=off Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31
NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=32-63
"""


def hw(count=8, names=None, minors=None, mig=None, cpu=(2, 32, 2), cores=None):
    gpus = []
    for i in range(count):
        gpus.append({
            "index": i, "uuid": "GPU-%08d" % i, "name": (names or {}).get(i, A100), "pci_bus_id": BUS[i],
            "mig_mode": (mig or {}).get(i, "Disabled"), "memory_total_mib": 81920, "memory_used_mib": 0,
            "cpu_affinity": None, "numa_node": 0 if i < 4 else 1,
            "slurm_cores": (cores or {}).get(i, "0-31" if i < 4 else "32-63"),
            "minor": (minors or {}).get(i, i), "processes": []})
    return {"cpu": {"sockets": cpu[0], "cores_per_socket": cpu[1], "threads_per_core": cpu[2]}, "gpus": gpus}


def devs(count=8, **override):
    table = {"/dev/nvidia%d" % i: {"kind": "char", "major": NVIDIA_MAJOR, "minor": i} for i in range(count)}
    table.update(override)
    return table


def run(slurm=SLURM, gres=GRES, facts=None, dev=None, **kw):
    return verify_node(NODE, slurm, gres, facts if facts is not None else hw(), dev if dev is not None else devs(),
                       **kw)


def only(findings, check, severity=None):
    return [f for f in findings if f["check"] == check and (severity is None or f["severity"] == severity)]


def test_correct_node_has_no_findings_on_every_version():
    for version in (None, "slurm-wlm 22.05.8", "24.11.1", "25.11.0"):
        assert run(slurmd_version=version) == []


def test_every_finding_has_the_contract_keys():
    findings = run(facts=hw(count=7))
    assert findings
    for f in findings:
        assert set(f) == {"severity", "check", "gpu", "expected", "found", "hint"}
        assert f["severity"] in ("error", "warning")


# --- count: slurm.conf Gres= vs gres.conf ------------------------------------------------------------


def test_slurm_conf_count_differs_from_gres_conf():
    findings = run(slurm=SLURM.replace("gpu:a100:8", "gpu:a100:6"))
    errors = only(findings, "count", "error")
    assert len(errors) == 1
    assert "gpu:a100" in errors[0]["expected"] and "6" in errors[0]["expected"]
    assert errors[0]["found"] == "8"


def test_gres_conf_type_slurm_conf_does_not_declare():
    gres = GRES.replace("Type=a100 File=/dev/nvidia[4-7]", "Type=h100 File=/dev/nvidia[4-7]")
    errors = only(run(gres=gres), "count", "error")
    keys = sorted(e["expected"].split(":", 1)[0] + e["expected"].split(":", 1)[1][:5] for e in errors)
    assert any("gpu:a100" in e["expected"] for e in errors), keys
    assert any("gpu:h100" in e["expected"] for e in errors), keys


def test_node_missing_from_slurm_conf():
    findings = verify_node("gpu-a02", SLURM, GRES, hw(), devs())
    assert [(f["severity"], f["check"]) for f in findings] == [("error", "count")]
    assert "gpu-a02" in findings[0]["expected"]


def test_unparseable_gres_conf_is_one_parse_error():
    findings = run(gres=GRES + "NodeName=gpu-a01 Name=gpu Typ=a100 File=/dev/nvidia8\n")
    assert [(f["severity"], f["check"]) for f in findings] == [("error", "parse")]
    assert "Typ" in findings[0]["found"]


def test_bad_type_pattern_is_a_parse_error_not_a_traceback():
    findings = run(type_patterns={"a100": "A100("})
    assert findings[0]["check"] == "parse" and "type_patterns.a100" in findings[0]["found"]


# --- present: declared GPUs vs what nvidia-smi sees -------------------------------------------------


def test_lost_gpu_names_the_count():
    facts = hw(count=7)  # GPU 7 fell off the bus: nvidia-smi shows 7, /dev/nvidia7 is still there
    findings = run(facts=facts)
    present = only(findings, "present", "error")
    assert len(present) == 1
    assert present[0]["found"] == "declares 8 a100, nvidia-smi sees 7"
    stale = [f for f in only(findings, "device", "error") if "/dev/nvidia7" in f["found"]]
    assert stale and "minor 7" in stale[0]["found"]


def test_a_lost_gpus_hint_says_what_slurm_does_with_autodetect_and_without():
    # without AutoDetect slurmd counts File= entries: no drain, the dead GPU is handed to jobs (or slurmd exits when
    # its device file is gone); with it, slurmd counts what NVML finds and slurmctld drains the node
    off = only(run(facts=hw(count=7)), "present", "error")[0]["hint"]
    assert "slurmd counts gres.conf's File= entries (AutoDetect is off)" in off and "drain" not in off
    gres = GRES.replace("AutoDetect=off", "AutoDetect=nvml")
    nvml = only(run(gres=gres, facts=hw(count=7)), "present", "error")[0]["hint"]
    assert "slurmctld drains the node (count reported lower than configured)" in nvml
    untyped = only(run(slurm=SLURM.replace("gpu:a100:8", "gpu:8"), gres=GRES.replace(" Type=a100", ""),
                       facts=hw(count=6)), "present", "error")[0]["hint"]
    assert "File= entries" in untyped and "drain" not in untyped


def test_lost_gpu_with_untyped_gres_counts_the_total():
    slurm = SLURM.replace("gpu:a100:8", "gpu:8")
    gres = GRES.replace(" Type=a100", "")
    present = only(run(slurm=slurm, gres=gres, facts=hw(count=6)), "present", "error")
    assert [f["found"] for f in present] == ["declares 8 gpu, nvidia-smi sees 6"]


def test_gpu_of_another_model_counts_as_missing_for_the_type():
    findings = run(facts=hw(names={3: "NVIDIA H100 80GB HBM3"}))
    assert only(findings, "present", "error")[0]["found"] == "declares 8 a100, nvidia-smi sees 7"
    wrong = only(findings, "type", "error")
    assert [f["gpu"] for f in wrong] == [3]
    assert "H100" in wrong[0]["found"]


def test_gpu_in_no_gres_line_is_a_warning():
    slurm = SLURM.replace("gpu:a100:8", "gpu:a100:7")
    gres = GRES.replace("nvidia[4-7]", "nvidia[4-6]")
    findings = run(slurm=slurm, gres=gres)
    assert [(f["severity"], f["check"], f["gpu"]) for f in findings] == [("warning", "present", 7)]


# --- type: nvidia-smi name vs Type --------------------------------------------------------------------


def test_type_without_pattern_is_a_warning_once_per_type():
    slurm = SLURM.replace("gpu:a100:8", "gpu:ampere:8")
    gres = GRES.replace("Type=a100", "Type=ampere")
    findings = run(slurm=slurm, gres=gres)
    assert [(f["severity"], f["check"]) for f in findings] == [("warning", "type")]
    assert findings[0]["gpu"] == "0-7"
    assert "type_patterns" in findings[0]["hint"]
    assert run(slurm=slurm, gres=gres, type_patterns={"ampere": r"\bA100\b"}) == []


def test_autodetect_style_type_is_matched_as_a_substring_like_slurm_does():
    slurm = SLURM.replace("gpu:a100:8", "gpu:nvidia_a100-sxm4-80gb:8")
    gres = GRES.replace("Type=a100", "Type=nvidia_a100-sxm4-80gb")
    assert run(slurm=slurm, gres=gres) == []


def test_user_pattern_overrides_default():
    # a site that calls its A100s "a100" but wants only the 80 GB parts to match
    findings = run(type_patterns={"a100": r"A100-SXM4-40GB"})
    assert len(only(findings, "type", "error")) == 8


# --- device: File exists, is a char device, NVIDIA major, minor is the GPU ------------------------------


def test_missing_device_file():
    dev = devs()
    dev["/dev/nvidia5"] = None
    errors = only(run(dev=dev), "device", "error")
    assert len(errors) == 1
    assert errors[0]["found"] == "/dev/nvidia5 does not exist"
    assert errors[0]["gpu"] == 5  # nvidia-smi still sees the GPU with minor 5: the device node is what is gone
    assert "can't stat gres.conf file /dev/nvidia5" in errors[0]["hint"]


def test_device_file_absent_from_dev_stat_counts_as_missing():
    dev = devs()
    del dev["/dev/nvidia2"]
    assert only(run(dev=dev), "device", "error")[0]["found"] == "/dev/nvidia2 does not exist"


def test_regular_file_is_not_a_device():
    found = only(run(dev=devs(**{"/dev/nvidia1": {"kind": "file", "major": None, "minor": None}})),
                 "device", "error")
    assert [f["found"] for f in found] == ["/dev/nvidia1 is a file"]


def test_wrong_major():
    found = only(run(dev=devs(**{"/dev/nvidia1": {"kind": "char", "major": 1, "minor": 3}})), "device", "error")
    assert len(found) == 1 and "major 1" in found[0]["found"]


def test_minor_that_no_gpu_has():
    found = only(run(dev=devs(**{"/dev/nvidia1": {"kind": "char", "major": NVIDIA_MAJOR, "minor": 9}})),
                 "device", "error")
    assert len(found) == 1 and "minor 9" in found[0]["found"]


def test_device_name_and_minor_disagree_is_a_warning():
    dev = devs(**{"/dev/nvidia6": {"kind": "char", "major": NVIDIA_MAJOR, "minor": 7},
                  "/dev/nvidia7": {"kind": "char", "major": NVIDIA_MAJOR, "minor": 6}})
    findings = run(dev=dev)
    assert sorted((f["severity"], f["check"], f["gpu"]) for f in findings if f["check"] == "device") == [
        ("warning", "device", 6), ("warning", "device", 7)]


def test_minor_differs_from_index_maps_files_by_minor():
    # GPU index 0 has /dev/nvidia1 and index 1 /dev/nvidia0 (nondeterministic minor assignment)
    facts = hw(minors={0: 1, 1: 0}, names={0: "NVIDIA H100 80GB HBM3"})
    slurm = SLURM.replace("gpu:a100:8", "gpu:h100:1,gpu:a100:7")
    gres = ("NodeName=gpu-a01 AutoDetect=off Name=gpu Type=h100 File=/dev/nvidia1 Cores=0-31\n"
            "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0,2-3] Cores=0-31\n"
            "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=32-63\n")
    assert run(slurm=slurm, gres=gres, facts=facts) == []


def test_unknown_minors_are_assumed_equal_to_index_with_a_warning():
    facts = hw()
    for gpu in facts["gpus"]:
        del gpu["minor"]
    findings = run(facts=facts)
    assert [(f["severity"], f["check"]) for f in findings] == [("warning", "device")]


# --- mig ------------------------------------------------------------------------------------------------


def test_whole_gpu_line_on_a_mig_enabled_gpu():
    findings = run(facts=hw(mig={2: "Enabled"}))
    errors = only(findings, "mig", "error")
    assert [f["gpu"] for f in errors] == [2]
    # the count falls short by that GPU: the hint names MIG mode before "a GPU fell off the bus"
    [present] = only(findings, "present", "error")
    assert present["hint"].startswith("GPU 2 is in MIG mode, which counts as MIG devices, not as a whole GPU")
    assert not only(run(facts=hw(count=7)), "present", "error")[0]["hint"].startswith("GPU")


def test_multiple_files_line_on_a_gpu_without_mig():
    slurm = SLURM.replace("gpu:a100:8", "gpu:a100:7,gpu:3g.40gb:1")
    gres = ("NodeName=gpu-a01 AutoDetect=off Name=gpu Type=a100 File=/dev/nvidia[1-3] Cores=0-31\n"
            "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=32-63\n"
            "NodeName=gpu-a01 Name=gpu Type=3g.40gb "
            "MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22 Cores=0-31\n")
    dev = devs(**{"/dev/nvidia-caps/nvidia-cap21": {"kind": "char", "major": 236, "minor": 21},
                  "/dev/nvidia-caps/nvidia-cap22": {"kind": "char", "major": 236, "minor": 22}})
    findings = run(slurm=slurm, gres=gres, dev=dev)
    assert sorted((f["severity"], f["check"], f["gpu"]) for f in findings) == [
        ("error", "mig", 0), ("error", "present", None)]
    assert only(findings, "present")[0]["found"] == "declares 1 3g.40gb, nvidia-smi sees 0"
    # with MIG on and the instance present, the same files pass; a missing cap file is an error
    facts = hw(mig={0: "Enabled"})
    facts["gpus"][0]["mig_devices"] = [{"uuid": "MIG-1", "profile": "3g.40gb", "gi_id": 2, "ci_id": 0}]
    assert run(slurm=slurm, gres=gres, dev=dev, facts=facts) == []
    dev["/dev/nvidia-caps/nvidia-cap22"] = None
    errors = run(slurm=slurm, gres=gres, dev=dev, facts=facts)
    assert [f["found"] for f in errors] == ["/dev/nvidia-caps/nvidia-cap22 does not exist"]


def test_mig_devices_count_by_profile_or_gpu_instance_profile():
    slurm = SLURM.replace("gpu:a100:8", "gpu:a100:7,gpu:3g.40gb:2")
    gres = ("NodeName=gpu-a01 AutoDetect=off Name=gpu Type=a100 File=/dev/nvidia[1-3] Cores=0-31\n"
            "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=32-63\n"
            "NodeName=gpu-a01 Name=gpu Type=3g.40gb "
            "MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22 Cores=0-31\n"
            "NodeName=gpu-a01 Name=gpu Type=3g.40gb "
            "MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap30,/dev/nvidia-caps/nvidia-cap31 Cores=0-31\n")
    dev = devs(**{"/dev/nvidia-caps/nvidia-cap%d" % m: {"kind": "char", "major": 236, "minor": m}
                  for m in (21, 22, 30, 31)})
    facts = hw(mig={0: "Enabled"})
    facts["gpus"][0]["mig_devices"] = [
        {"uuid": "MIG-1", "profile": "3g.40gb", "gi_profile": "3g.40gb", "gi_id": 1, "ci_id": 0},
        {"uuid": "MIG-2", "profile": "1c.3g.40gb", "gi_profile": "3g.40gb", "gi_id": 2, "ci_id": 0}]
    assert run(slurm=slurm, gres=gres, dev=dev, facts=facts) == []
    facts["gpus"][0]["mig_devices"].pop()
    assert [f["found"] for f in run(slurm=slurm, gres=gres, dev=dev, facts=facts)] == [
        "declares 2 3g.40gb, nvidia-smi sees 1"]


def test_lost_gpu_message_from_nvidia_smi_is_in_the_hint():
    facts = hw(count=7)
    facts["lost_gpus"] = [{"pci_bus_id": "00000000:BD:00.0",
                           "message": "Unable to determine the device handle for GPU7: 0000:BD:00.0: Unknown Error"}]
    present = only(run(facts=facts), "present", "error")
    assert "Unable to determine the device handle for GPU7" in present[0]["hint"]


def test_count_summary():
    facts = hw(count=7)
    assert count_summary(NODE, SLURM, GRES, facts) == {
        "gpu:a100": {"slurm_conf": 8, "gres_conf": 8, "nvidia_smi": 7}}
    slurm = SLURM.replace("gpu:a100:8", "gpu:ampere:8")
    assert count_summary(NODE, slurm, GRES.replace("a100", "ampere"), facts)["gpu:ampere"]["nvidia_smi"] is None
    assert count_summary(NODE, SLURM, "Typ=1", facts) == {}


# --- cores -----------------------------------------------------------------------------------------------


def test_cores_of_the_other_socket_is_an_error_per_gpu():
    gres = GRES.replace("Cores=0-31", "Cores=32-63")
    errors = only(run(gres=gres), "cores", "error")
    assert [f["gpu"] for f in errors] == [0, 1, 2, 3]
    assert "socket 1 (cores 32-63)" in errors[0]["found"]
    assert "socket 0 (cores 0-31)" in errors[0]["expected"]


def test_cores_spanning_both_sockets_names_the_foreign_one():
    gres = GRES.replace("Cores=0-31", "Cores=0-63")
    errors = only(run(gres=gres), "cores", "error")
    assert len(errors) == 4 and "names socket 1" in errors[0]["found"]


def test_gpu_local_to_both_sockets_accepts_both():
    facts = hw(cores={i: "0-63" for i in range(4)})
    gres = GRES.replace("Cores=0-31", "Cores=0-63")
    assert only(run(gres=gres, facts=facts), "cores") == []


def test_cores_beyond_the_node_look_like_os_cpu_ids():
    gres = GRES.replace("Cores=32-63", "Cores=32-63,96-127")
    errors = only(run(gres=gres), "cores", "error")
    assert len(errors) == 1 and "0-63" in errors[0]["expected"]
    assert "OS CPU" in errors[0]["hint"]


def test_missing_cores_where_topology_is_known_is_a_warning():
    gres = GRES.replace(" Cores=32-63", "")
    findings = run(gres=gres)
    assert [(f["severity"], f["check"], f["gpu"]) for f in findings] == [("warning", "cores", "4-7")]
    assert "socket 1 (cores 32-63)" in findings[0]["expected"]


def test_missing_cores_without_topology_is_fine():
    gres = GRES.replace(" Cores=32-63", "")
    assert run(gres=gres, facts=hw(cores={i: None for i in range(4, 8)})) == []


def test_missing_cores_with_autodetect_is_fine():
    gres = GRES.replace("AutoDetect=off", "AutoDetect=nvml").replace(" Cores=32-63", "")
    assert run(gres=gres) == []


# --- socket boundaries (24.11+ drains) ----------------------------------------------------------------------


HALF = GRES.replace("File=/dev/nvidia[0-3] Cores=0-31", "File=/dev/nvidia[0-3] Cores=0-15")


@pytest.mark.parametrize("version,severity", [
    (None, "warning"), ("22.05.8", "warning"), ("24.05.8", "warning"), ("24.11.0", "error"), ("25.11.2", "error")])
def test_half_socket_cores(version, severity):
    findings = only(run(gres=HALF, slurmd_version=version), "socket_boundary")
    assert [f["severity"] for f in findings] == [severity]
    assert findings[0]["found"] == ("gres/gpu GRES core specification 0-15 for node gpu-a01 doesn't match socket "
                                    "boundaries. (Socket 0 is cores 0-31)")
    assert findings[0]["gpu"] == "0-3"


FOUR = GRES.replace("Cores=0-31", "Cores=0-63").replace("Cores=32-63", "Cores=0-63")


def test_two_of_four_sockets_is_fine_on_24_11_warned_before_25_11_error_after():
    facts = hw(cpu=(4, 16, 2), cores={i: "0-31" if i < 4 else "32-63" for i in range(8)})
    slurm = SLURM.replace("Sockets=2 CoresPerSocket=32", "Sockets=4 CoresPerSocket=16")
    gres = GRES
    assert [f["severity"] for f in run(slurm=slurm, gres=gres, facts=facts, slurmd_version="24.11.1")] == [
        "warning", "warning"]
    assert [f["severity"] for f in run(slurm=slurm, gres=gres, facts=facts, slurmd_version="25.11.0")] == [
        "error", "error"]
    # all cores is allowed by every rule
    assert run(slurm=slurm, gres=FOUR, facts=hw(cpu=(4, 16, 2), cores={i: "0-63" for i in range(8)}),
               slurmd_version="25.11.0") == []


def test_numa_as_socket_cannot_be_judged():
    slurm = SLURM.replace("GresTypes=gpu", "GresTypes=gpu\nSlurmdParameters=l3cache_as_socket")
    findings = run(slurm=slurm, gres=HALF, slurmd_version="24.11.1")
    assert [(f["severity"], f["check"]) for f in findings] == [("warning", "socket_boundary")]


def test_autodetected_affinity_is_checked_too():
    gres = HALF.replace("AutoDetect=off", "AutoDetect=nvml").replace(" Cores=0-15", "")
    facts = hw(cores={i: "0-15" for i in range(4)})  # NVML ideal CPU set = one NUMA node of socket 0
    findings = run(gres=gres, facts=facts, slurmd_version="24.11.3")
    assert [(f["severity"], f["check"]) for f in findings] == [("error", "socket_boundary")]
    assert findings[0]["found"].startswith("gres/gpu GRES autodetected core affinity 0-15 on node gpu-a01")


# --- order ---------------------------------------------------------------------------------------------------


def test_file_order_against_pci_order_is_a_warning():
    gres = GRES.replace("File=/dev/nvidia[0-3]", "File=/dev/nvidia1,/dev/nvidia0,/dev/nvidia2,/dev/nvidia3")
    findings = run(gres=gres)
    assert [(f["severity"], f["check"]) for f in findings] == [("warning", "order")]
    assert "/dev/nvidia0,/dev/nvidia1," in findings[0]["expected"]
    assert "/dev/nvidia1,/dev/nvidia0," in findings[0]["found"]


def test_pci_order_uses_bus_ids_not_minors():
    # minors 0 and 1 swapped: listing files by minor breaks PCI order, listing by bus id keeps it
    facts = hw(minors={0: 1, 1: 0})
    assert only(run(facts=facts), "order")
    gres = GRES.replace("File=/dev/nvidia[0-3]", "File=/dev/nvidia1,/dev/nvidia0,/dev/nvidia2,/dev/nvidia3")
    assert run(gres=gres, facts=facts) == []


def test_slurm_conf_type_order_decides_the_slurm_index():
    # h100 on the higher bus ids but declared first in slurm.conf: Slurm numbers the h100s 0-3
    facts = hw(names={i: "NVIDIA H100 80GB HBM3" for i in range(4, 8)})
    slurm = SLURM.replace("gpu:a100:8", "gpu:h100:4,gpu:a100:4")
    gres = GRES.replace("Type=a100 File=/dev/nvidia[4-7]", "Type=h100 File=/dev/nvidia[4-7]")
    assert [f["check"] for f in run(slurm=slurm, gres=gres, facts=facts)] == ["order"]
    assert run(slurm=slurm.replace("gpu:h100:4,gpu:a100:4", "gpu:a100:4,gpu:h100:4"), gres=gres, facts=facts) == []


def test_order_not_checked_under_autodetect():
    gres = GRES.replace("AutoDetect=off", "AutoDetect=nvml").replace(
        "File=/dev/nvidia[0-3]", "File=/dev/nvidia1,/dev/nvidia0,/dev/nvidia2,/dev/nvidia3")
    assert run(gres=gres) == []


# --- cpu_layout ---------------------------------------------------------------------------------------------


def test_slurm_conf_with_more_cpus_than_the_node():
    findings = run(facts=hw(cpu=(2, 32, 1)))
    assert [(f["severity"], f["check"]) for f in findings] == [("error", "cpu_layout")]
    assert "ThreadsPerCore=1" in findings[0]["expected"] and "ThreadsPerCore=2" in findings[0]["found"]


def test_slurm_conf_with_fewer_threads_is_a_warning():
    findings = run(slurm=SLURM.replace("ThreadsPerCore=2", "ThreadsPerCore=1"))
    assert [(f["severity"], f["check"]) for f in findings] == [("warning", "cpu_layout")]


# --- slurmd -G ----------------------------------------------------------------------------------------------

# Real slurmd 22.05.8 -G output (run on this project's test machine with HWLOC_SYNTHETIC="package:2 core:4
# pu:2"); the node and paths are adapted to this test's node.
G_2205_OK = """slurmd-gpu-a01: Gres Name=gpu Type=a100 Count=4 Index=0 ID=7696487 File=/dev/nvidia[0-3] Cores=0-31 CoreCnt=128 (null)
slurmd-gpu-a01: Gres Name=gpu Type=a100 Count=4 Index=0 ID=7696487 File=/dev/nvidia[4-7] Cores=32-63 CoreCnt=128 (null)
"""
G_2205_BAD_CORES = """slurmd-gpu-a01: error: xcpuinfo_abs_to_mac: failed
slurmd-gpu-a01: error: Invalid GRES data for gpu, Cores=4-40
slurmd-gpu-a01: Gres Name=gpu Type=a100 Count=4 Index=0 ID=7696487 File=/dev/nvidia[0-3] Cores=0-31 CoreCnt=128 (null)
slurmd-gpu-a01: Gres Name=gpu Type=a100 Count=4 Index=0 ID=7696487 File=/dev/nvidia[4-7] Cores=4-40 CoreCnt=128 (null)
"""
G_FATAL = """slurmd: error: Waiting for gres.conf file /dev/nvidia7
slurmd: error: Waiting for gres.conf file /dev/nvidia7
slurmd: fatal: can't stat gres.conf file /dev/nvidia7: No such file or directory
"""
# 25.05+ stderr format with a timestamp prefix and Flags=
G_2505 = (
    "[2025-06-01T10:00:00.000] Gres Name=gpu Type=a100 Count=1 Index=0 ID=7696487 File=/dev/nvidia0 Cores=0-31 "
    "CoreCnt=128 Links=-1,0,0,0,0,0,0,0 Flags=HAS_FILE,HAS_TYPE,ENV_NVML\n"
    "[2025-06-01T10:00:00.000] Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 Cores=0-31 "
    "CoreCnt=128 Links=0,-1,0,0,0,0,0,0 Flags=HAS_FILE,HAS_TYPE,ENV_NVML\n"
    "[2025-06-01T10:00:00.000] warning: The following autodetected GPUs are being ignored:\n"
)


def test_slurmd_g_matching_counts_is_clean():
    assert run(slurmd_g_output=G_2205_OK) == []


def test_slurmd_g_errors_become_findings_once_each():
    findings = only(run(slurmd_g_output=G_2205_BAD_CORES), "slurmd_g")
    assert [(f["severity"], f["found"]) for f in findings] == [
        ("error", "error: xcpuinfo_abs_to_mac: failed"), ("error", "error: Invalid GRES data for gpu, Cores=4-40")]


def test_slurmd_g_fatal_skips_the_count_comparison():
    findings = only(run(slurmd_g_output=G_FATAL), "slurmd_g")
    assert [(f["severity"], f["found"]) for f in findings] == [
        ("error", "error: Waiting for gres.conf file /dev/nvidia7"),
        ("error", "fatal: can't stat gres.conf file /dev/nvidia7: No such file or directory")]


def test_slurmd_g_lower_count_and_warnings():
    findings = only(run(slurmd_g_output=G_2505), "slurmd_g")
    assert [(f["severity"], f["found"]) for f in findings] == [
        ("warning", "warning: The following autodetected GPUs are being ignored:"),
        ("error", "slurmd -G reports 2 gpu:a100")]
    assert "(2 < 8)" in findings[1]["hint"]


def test_slurmd_g_a_count_only_gres_named_in_capitals_matches_slurm_conf():
    # UNIGE Baobab's slurmd -G (tests/fixtures/slurm): "Gres Name=VramPerGpu Type=(null) Count=51539607552 ...
    # Flags=CountOnly"; slurm.conf declares VramPerGpu:no_consume:48G, which the parser keys as "vrampergpu"
    recorded = nvsmi_fixtures.load("slurm", "unige-baobab-slurmd-G-a6000-nvml-countonly-vrampergpu.txt")
    vram = [line for line in recorded.splitlines() if "Name=VramPerGpu" in line]
    assert len(vram) == 1
    slurm = SLURM.replace("GresTypes=gpu", "GresTypes=gpu,VramPerGpu").replace(
        "Gres=gpu:a100:8", "Gres=gpu:a100:8,VramPerGpu:no_consume:48G")
    assert only(run(slurm=slurm, slurmd_g_output=G_2205_OK + vram[0] + "\n"), "slurmd_g") == []
    short = only(run(slurm=slurm, slurmd_g_output=G_2205_OK.splitlines()[0] + "\n" + vram[0] + "\n"), "slurmd_g")
    assert [f["found"] for f in short] == ["slurmd -G reports 4 gpu:a100"]
    assert "gres/gpu count reported lower than configured (4 < 8)" in short[0]["hint"]


def test_slurmd_g_with_no_gres_lines_reports_zero():
    findings = only(run(slurmd_g_output="slurmd: debug:  Log file re-opened\n"), "slurmd_g")
    assert [f["found"] for f in findings] == ["slurmd -G reports 0 gpu:a100"]


def test_slurmd_g_that_prints_nothing_is_unknown_not_zero():
    findings = only(run(slurmd_g_output=""), "slurmd_g")
    assert [(f["severity"], f["found"]) for f in findings] == [("warning", "no output at all")]


# --- helpers ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("text,expected", [
    ("slurm-wlm 22.05.8", (22, 5, 8)), ("slurm 24.11.1", (24, 11, 1)), ("25.11", (25, 11, 0)),
    ((24, 11), (24, 11, 0)), (None, None)])
def test_parse_slurm_version(text, expected):
    assert parse_slurm_version(text) == expected


def test_parse_slurm_version_rejects_junk():
    with pytest.raises(ValueError):
        parse_slurm_version("unknown")


def test_bad_version_is_a_parse_finding():
    assert run(slurmd_version="latest")[0]["check"] == "parse"


def test_summarize():
    assert summarize(run(facts=hw(count=7))) == {"errors": 2, "warnings": 0}


def test_inputs_are_not_modified():
    facts, dev = hw(count=7), devs()
    before = copy.deepcopy((facts, dev))
    run(facts=facts, dev=dev, slurmd_g_output=G_2505)
    assert (facts, dev) == before


def test_a_verification_parses_each_staged_file_once(monkeypatch):
    """What gres_verify does with a node's files: parse_staged, device paths, verify_node, count_summary."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import verify
    calls = {"slurm": 0, "gres": 0}
    real_slurm, real_gres = verify.parse_slurm_conf, verify.parse_gres_conf

    def count_slurm(text):
        calls["slurm"] += 1
        return real_slurm(text)

    def count_gres(text, node):
        calls["gres"] += 1
        return real_gres(text, node)
    monkeypatch.setattr(verify, "parse_slurm_conf", count_slurm)
    monkeypatch.setattr(verify, "parse_gres_conf", count_gres)
    staged = verify.parse_staged(NODE, SLURM, GRES)
    assert len(verify.device_paths(staged["records"])) == 8
    assert verify.verify_node(NODE, SLURM, GRES, hw(), devs(), staged=staged) == []
    assert verify.count_summary(NODE, SLURM, GRES, hw(), staged=staged)["gpu:a100"]["nvidia_smi"] == 8
    assert calls == {"slurm": 1, "gres": 1}


def test_a_gpus_own_device_file_must_exist_as_a_device_and_is_not_matched_to_nvidia_smi():
    """A GPU given as the inventory's file (WSL's /dev/dxg): a warning that it is not matched, errors only when
    slurmd could not use it."""
    slurm = SLURM.replace("gpu:a100:8", "gpu:1")
    gres = "NodeName=gpu-a01 Name=gpu File=/dev/dxg\n"
    dxg = {"/dev/dxg": {"kind": "char", "major": 10, "minor": 63}}
    found = only(run(slurm=slurm, gres=gres, facts=hw(count=1), dev=devs(1, **dxg)), "device")
    assert [(f["severity"], f["found"]) for f in found] == [
        ("warning", "/dev/dxg, a character device (major 10, minor 63)")]
    found = only(run(slurm=slurm, gres=gres, facts=hw(count=1), dev=devs(1)), "device", "error")
    assert [f["found"] for f in found] == ["/dev/dxg does not exist"]


def test_a_deploy_needs_root_and_a_dry_run_is_only_warned():
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import privileges_finding
    assert privileges_finding(0, check_mode=False) is None
    refused = privileges_finding(1000, check_mode=False)
    assert (refused["severity"], refused["check"], refused["found"]) == ("error", "privileges", "uid 1000")
    assert "-b" in refused["hint"] and refused["expected"].startswith("root")
    assert privileges_finding(1000, check_mode=True)["severity"] == "warning"


def test_with_autodetect_a_type_not_part_of_the_nvml_name_is_an_error_whatever_the_patterns_say():
    # gres_gpu.c _normalize_sys_gres_types: slurmd keeps a detected GPU's type only where a configured type is a
    # substring of "nvidia_a100-sxm4-80gb"; "a100sxm" is not, so the node registers no gpu:a100sxm
    slurm = SLURM.replace("gpu:a100:8", "gpu:a100sxm:8")
    gres = GRES.replace("AutoDetect=off", "AutoDetect=nvml").replace("Type=a100", "Type=a100sxm")
    findings = only(run(slurm=slurm, gres=gres, type_patterns={"a100sxm": r"A100-SXM"}), "type")
    assert [(f["severity"], f["gpu"], f["found"]) for f in findings] == [("error", "0-7", "Type=a100sxm")]
    assert "nvidia_a100-sxm4-80gb" in findings[0]["expected"] and "(a100)" in findings[0]["hint"]
    # a type that is part of the name passes, and without AutoDetect the pattern decides as before
    assert only(run(slurm=SLURM, gres=GRES.replace("AutoDetect=off", "AutoDetect=nvml")), "type") == []
    assert only(run(slurm=slurm, gres=GRES.replace("Type=a100", "Type=a100sxm"),
                    type_patterns={"a100sxm": r"A100-SXM"}), "type") == []

    # no known type is part of a GeForce name: the name itself, less "nvidia_", is offered
    names = {i: "NVIDIA GeForce RTX 4090" for i in range(8)}
    slurm = SLURM.replace("gpu:a100:8", "gpu:rtx4090:8")
    gres = GRES.replace("AutoDetect=off", "AutoDetect=nvml").replace("Type=a100", "Type=rtx4090")
    [finding] = only(run(slurm=slurm, gres=gres, facts=hw(names=names)), "type")
    assert "(geforce_rtx_4090)" in finding["hint"], finding
