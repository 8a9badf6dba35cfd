"""gpu_facts.build_facts on emulated machines built from every recorded topo -m output, plus MIG, processes
and lost GPUs.

The expected Slurm cores come from the fake sysfs layout's definition (fake_sysfs.expected_slurm_cores) and
the hand-read CPU lists of test_nvidia_smi_topo.EXPECTED, never from the code under test.
"""
import json
import os
import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpu_topology

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import facts as gpu_facts

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi as nvidia_smi
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges

import nvsmi_fixtures
import fake_sysfs
import machines
from test_nvidia_smi_topo import EXPECTED

# A CPU layout consistent with each recording: every GPU's CPU Affinity is one socket (or a subset of one,
# where a cgroup limited what the job saw).
LAYOUTS = {
    "4gpu-4numa-reversed-cpu-affinity-header-spaced-mlperf-nvidia.txt": (4, 16, 2, "linear"),
    "6gpu-3-nvlink-pairs-mlx5-embedded-python.txt": (2, 28, 2, "linear"),
    "a100-4gpu-adroit-strided-cpus-slurm-cgroup.txt": (2, 24, 1, "interleaved"),
    "a100-4gpu-nv4-della-i16g1.txt": (2, 24, 1, "linear"),
    "a100-8gpu-4nic-2s-ht-confluence.txt": (2, 32, 2, "linear"),
    "a100-8gpu-nonic-aws-p4d-style.txt": (2, 24, 2, "linear"),
    "a100pcie-4gpu-nv12-4numa-blog.txt": (4, 24, 1, "linear"),
    "a100pcie-8gpu-in-slurm-job-empty-cpu-affinity-dask-cuda1381.txt": (2, 28, 2, "linear"),
    "a100sxm40-8gpu-8nic-cloudvm-ph-glitch.txt": (1, 116, 1, "linear"),
    "b300-8gpu-9nic-ansi-header-sglang26039.txt": (2, 64, 2, "linear"),
    "dgxa100-8gpu-12nic-mlx5-headers-oldfmt.txt": (2, 64, 2, "linear"),
    "gb10-1gpu-4nic-roce-mixedcase.txt": (1, 20, 1, "linear"),
    # two 72-core Grace CPUs (0-71 / 72-143), no SMT
    "gb200-4gpu-8nic-gpu-numa-id-2-10-18-26-spaces.txt": (2, 72, 1, "linear"),
    "gb200-4gpu-8nic-openshift-numa-ranges-gpunumaid-na-580.txt": (2, 72, 1, "linear"),
    "gb200-4gpu-nonic-realigned-by-author-narrow-columns.txt": (2, 72, 1, "linear"),
    "gb200-4gpu-nonic-realigned-by-author-right-aligned-gpu-numa-id.txt": (2, 72, 1, "linear"),
    "gh200-1gpu-4nic-bluefield3-gpu-numa-id-1-aerial.txt": (1, 72, 1, "linear"),
    "h100-2gpu-nv18-kvm-90vcpu-spaces-sglang25073.txt": (1, 90, 1, "linear"),
    "h100-4gpu-nv6-4nic-strided-cpu-lists-nccl1617.txt": (8, 4, 1, "interleaved"),
    "h100-8gpu-12nic-topo-mp-deepep397.txt": (2, 48, 2, "interleaved"),
    # 2x Xeon 8468 (48 cores, no HT), node0 the even CPUs, node1 the odd ones (the doc's lscpu/numactl -H)
    "h100-8gpu-6nic-slurm-1cpu-empty-and-single-cpu-affinity-della-k17g3.txt": (2, 48, 1, "interleaved"),
    "h100-8gpu-nonic-spaces-thunderkittens167.txt": (2, 48, 2, "linear"),
    "h100-8gpu-vm-single-numa-nonic-rhelai.txt": (1, 64, 1, "linear"),
    "h200-1gpu-vm-esc-header-580.txt": (1, 16, 1, "linear"),
    "h20-3e-8gpu-8nic-pairs-spaces-sglang31046.txt": (2, 48, 2, "linear"),
    "h800-4gpu-17nic-empty-cpu-numa-affinity.txt": (2, 48, 2, "linear"),
    "k80-4gpu-mlx4-legacy-soc-legend-microway.txt": (2, 12, 1, "linear"),
    "l40s-1gpu-kvm-sglang23272.txt": (1, 8, 1, "linear"),
    "mixed-5gpu-2s-spaces-club3090-46.txt": (2, 8, 2, "linear"),
    "power9-v100-1gpu-traverse-numa-0-8-252-255.txt": (2, 16, 4, "adjacent"),
    "rtx4090-8gpu-2nic-allsys-gpuallocator17.txt": (2, 56, 2, "linear"),
    "rtx5090-2gpu-phb-threadripper-club3090-1229.txt": (1, 32, 2, "linear"),
    "rtxpro6000bw-1gpu-sglang24697.txt": (1, 14, 2, "linear"),
    "v100sxm2-2gpu-4nic-tabs-as-4spaces-s116.txt": (2, 14, 2, "linear"),
    "v100sxm2-8gpu-1nic-vastai-driver580.txt": (2, 20, 2, "linear"),
}


def profile_for_fixture(name):
    sockets, cores, threads, numbering = LAYOUTS[name]
    _attrs, gpus, _nics, _links = EXPECTED[name]
    return {
        "source": "topo -m: tests/fixtures/nvidia-smi/topo/%s" % name,
        "cpu_layout": {"sockets": sockets, "cores_per_socket": cores, "threads_per_core": threads,
                       "numbering": numbering},
        "topo": {"text_file": machines.fixture_rel("nvidia-smi", "topo", name)},
        "gpus": [machines.gpu("NVIDIA Test GPU", "00000000:%02X:00.0" % (0x10 + 8 * i), 81920, cpu, numa)
                 for i, (cpu, numa) in enumerate(gpus)],
        "processes": [],
    }


def gather(profile_file, root, with_mig=True):
    """Run the commands gpu_facts runs, on the emulator, and build the facts like the module does."""
    smi = "nvidia-smi"
    q = machines.run_emulator(profile_file, gpu_facts.query_gpu_command(smi)[1:])
    t = machines.run_emulator(profile_file, gpu_facts.topo_command(smi)[1:])
    a = machines.run_emulator(profile_file, gpu_facts.query_apps_command(smi)[1:])
    query_text = q[1] + q[2]
    outputs = {}
    if with_mig and gpu_facts.needs_mig_listing(query_text):
        for key, argv in gpu_facts.mig_commands(smi).items():
            rc, out, err = machines.run_emulator(profile_file, argv[1:])
            outputs[key] = out + err
    topology = cpu_topology.from_sysfs(root)
    minors = {}
    for row in nvidia_smi.parse_query_gpu(query_text):
        minor = gpu_facts.read_gpu_minor(root, row["pci.bus_id"])
        if minor is not None:
            minors[row["pci.bus_id"]] = minor
    pids = {x["pid"] for x in nvidia_smi.parse_query_apps(a[1])}
    mig_minors = gpu_facts.read_text(os.path.join(root, "proc", "driver", "nvidia-caps", "mig-minors"))
    return gpu_facts.build_facts(query_text, topo_text=t[1], apps_text=a[1], topology=topology, gpu_minors=minors,
                                 list_text=outputs.get("list"), lgi_text=outputs.get("lgi"),
                                 lci_text=outputs.get("lci"), mig_minors_text=mig_minors,
                                 processes={p: gpu_facts.read_process(root, p) for p in pids})


def setup_machine(tmp_path, profile):
    root = tmp_path / "root"
    path = tmp_path / "profile.json"
    machines.write(str(path), profile)
    lay = machines.build_sysfs(str(root), profile)
    return str(path), str(root), lay


def test_every_topo_fixture_has_a_layout():
    assert sorted(LAYOUTS) == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(LAYOUTS))
def test_slurm_cores_on_machines_built_from_real_topo(tmp_path, name):
    profile = profile_for_fixture(name)
    path, root, lay = setup_machine(tmp_path, profile)
    facts, warnings = gather(path, root)
    assert warnings == []
    shape = {k: facts["cpu"][k] for k in ("sockets", "cores_per_socket", "threads_per_core")}
    assert shape == {"sockets": lay.sockets, "cores_per_socket": lay.cores_per_socket,
                     "threads_per_core": lay.threads_per_core}
    assert facts["cpu"]["shape_fits"] is True and facts["cpu"]["source"] == "sysfs"
    gpus = EXPECTED[name][1]
    assert [g["index"] for g in facts["gpus"]] == list(range(len(gpus)))
    for gpu, (cpu_text, numa_text) in zip(facts["gpus"], gpus):
        if cpu_text is None:
            assert gpu["slurm_cores"] is None and gpu["cpu_affinity"] is None
            continue
        cpus = parse_int_ranges(cpu_text)
        assert gpu["cpu_affinity"] == cpus
        assert gpu["slurm_cores"] == format_int_ranges(fake_sysfs.expected_slurm_cores(lay, cpus)), gpu["index"]
        numa = parse_int_ranges(numa_text) if numa_text else None
        if numa and len(numa) == 1:
            assert gpu["numa_node"] == numa[0]


def test_affinity_is_whole_socket_where_no_cgroup_limited_it(tmp_path):
    name = "a100-8gpu-4nic-2s-ht-confluence.txt"
    path, root, _lay = setup_machine(tmp_path, profile_for_fixture(name))
    facts, _w = gather(path, root)
    assert [g["slurm_cores"] for g in facts["gpus"]] == ["0-31"] * 4 + ["32-63"] * 4


def test_power9_numa_list_resolves_to_the_node_with_the_gpus_cpus(tmp_path):
    path, root, _lay = setup_machine(tmp_path, profile_for_fixture("power9-v100-1gpu-traverse-numa-0-8-252-255.txt"))
    facts, _w = gather(path, root)
    gpu = facts["gpus"][0]
    assert gpu["numa_affinity"] == [0, 8, 252, 253, 254, 255]
    assert gpu["numa_node"] == 0
    assert gpu["slurm_cores"] == "0"


def test_numa_node_unknown_when_ambiguous():
    assert gpu_facts._numa_node([0, 1], [0, 1], {0: [0], 1: [1]}) is None
    assert gpu_facts._numa_node([0, 1], [0], {0: [0], 1: [1]}) == 0
    assert gpu_facts._numa_node([0, 1], [0], {}) is None
    assert gpu_facts._numa_node(None, [0], {}) is None
    # topo -m's N/A: the one node holding every cpu of the GPU's affinity, if one does
    assert gpu_facts._numa_node(None, [0, 1], {0: [0, 1, 2, 3]}) == 0
    assert gpu_facts._numa_node(None, [2, 3], {0: [0, 1], 1: [2, 3]}) == 1
    assert gpu_facts._numa_node(None, [1, 2], {0: [0, 1], 1: [2, 3]}) is None


def test_h200_vm_recorded_outputs_give_the_facts_read_off_them(tmp_path):
    """The outputs recorded on the project's lent H200 VM (2026-12-04) through the pure builder: --query-gpu with
    QUERY_GPU_FIELDS, topo -m (real ESC bytes in its header) and -L, on the VM's CPU shape (lscpu: 1 socket,
    16 cores, 1 thread per core, CPUs 0-15 on NUMA node 0). The values below are read off those files; the
    gpu_facts module run on that machine returned exactly these for the GPU (rc 0, slurm_cores "0-15")."""
    fake_sysfs.write_cpu_topology(str(tmp_path), fake_sysfs.layout(1, 16, 1, "linear"))
    topology = cpu_topology.from_sysfs(str(tmp_path))
    facts, warnings = gpu_facts.build_facts(
        nvsmi_fixtures.load("nvidia-smi", "query", "h200-1gpu-gpu-facts-fields-580.txt"),
        topo_text=nvsmi_fixtures.load("nvidia-smi", "topo", "h200-1gpu-vm-esc-header-580.txt"),
        apps_text="",  # --query-compute-apps printed nothing there (rc 0, no processes)
        topology=topology,
        gpu_minors={"00000000:00:06.0": 0},  # /proc/driver/nvidia/gpus/0000:00:06.0/information: Device Minor: 0
        list_text=nvsmi_fixtures.load("nvidia-smi", "list", "h200-1gpu-L-580.txt"))
    assert warnings == []
    [gpu] = facts["gpus"]
    assert (gpu["index"], gpu["name"], gpu["pci_bus_id"], gpu["uuid"]) == (
        0, "NVIDIA H200", "00000000:00:06.0", "GPU-1e34b30a-58cb-40c0-3a72-f27413d938f6")
    assert (gpu["memory_total_mib"], gpu["memory_used_mib"], gpu["mig_mode"]) == (143771, 0, "Disabled")
    assert gpu["cpu_affinity"] == list(range(16))
    assert (gpu["numa_affinity"], gpu["numa_node"]) == ([0], 0)
    assert gpu["slurm_cores"] == "0-15"
    assert (gpu["minor"], gpu["minor_source"]) == (0, "proc")
    assert (gpu["gpu_links"], gpu["mig_devices"], gpu["processes"]) == ([-1], [], [])
    assert facts["lost_gpus"] == []
    assert (facts["cpu"]["sockets"], facts["cpu"]["cores_per_socket"], facts["cpu"]["threads_per_core"]) == (1, 16, 1)


# --- ready profiles --------------------------------------------------------------------------------------

def ready(tmp_path, name, mutate=None):
    profile = machines.load(name)
    if mutate:
        mutate(profile)
    return setup_machine(tmp_path, profile)


def test_ready_profiles_are_current():
    for name, build in machines.READY.items():
        assert machines.load(name) == json.loads(json.dumps(build())), "rerun tests/emulator/machines.py"


def test_p4d_profile(tmp_path):
    path, root, _lay = ready(tmp_path, "a100-8gpu-p4d")
    facts, warnings = gather(path, root)
    assert warnings == []
    assert [g["slurm_cores"] for g in facts["gpus"]] == ["0-23"] * 4 + ["24-47"] * 4
    assert facts["gpus"][0]["pci_bus_id"] == "00000000:10:1C.0"
    assert [g["minor"] for g in facts["gpus"]] == list(range(8))
    assert {g["minor_source"] for g in facts["gpus"]} == {"proc"}
    assert all(g["mig_devices"] == [] and g["mig_mode"] is None for g in facts["gpus"])
    assert all(g["processes"] == [] for g in facts["gpus"])


def test_h100_strided_8_numa_profile(tmp_path):
    path, root, _lay = ready(tmp_path, "h100-4gpu-nv6-8numa")
    facts, _w = gather(path, root)
    # 6,14,22,30 is socket 6 of 8 interleaved sockets of 4 cores: Slurm cores 24-27.
    assert [g["slurm_cores"] for g in facts["gpus"]] == ["24-27", "16-19", "28-31", "20-23"]
    assert [g["numa_node"] for g in facts["gpus"]] == [3, 1, 7, 5]


def test_device_minors_from_proc_override_the_index(tmp_path):
    path, root, _lay = ready(tmp_path, "v100-2gpu-s116")
    fake_sysfs.write_gpu_information(root, [{"pci_bus_id": "00000000:3B:00.0", "minor": 1},
                                            {"pci_bus_id": "00000000:AF:00.0", "minor": 0}])
    facts, _w = gather(path, root)
    assert [(g["index"], g["minor"]) for g in facts["gpus"]] == [(0, 1), (1, 0)]


def test_minor_falls_back_to_index_without_proc(tmp_path):
    path, root, _lay = ready(tmp_path, "v100-2gpu-s116")
    import shutil
    shutil.rmtree(os.path.join(root, "proc", "driver", "nvidia"))
    facts, _w = gather(path, root)
    assert [(g["minor"], g["minor_source"]) for g in facts["gpus"]] == [(0, "index"), (1, "index")]


# --- MIG -------------------------------------------------------------------------------------------------

def real_mig_device_table():
    """(gpu, gi, ci, mig dev) rows of the real ``nvidia-smi`` MIG devices table."""
    text = nvsmi_fixtures.load("nvidia-smi", "mig", "a100sxm4-40gb-smi-mig-devices-table-ssup2.txt")
    return [tuple(int(x) for x in m) for m in re.findall(r"^\|\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s+\|", text, re.M)]


def real_cap_minors():
    text = nvsmi_fixtures.load("nvidia-smi", "caps", "a100sxm4-40gb-capabilities-minor-map-ssup2.txt")
    out = {}
    for gi, ci, minor in re.findall(r"gi(\d+)(?:/ci(\d+))?/access\s+\S+\s+/dev/nvidia-caps/nvidia-cap(\d+)", text):
        out[(int(gi), int(ci) if ci else None)] = int(minor)
    return out


def check_mig_devices(devices):
    table = real_mig_device_table()
    assert [(d["gi_id"], d["ci_id"], d["device"]) for d in devices] == [(gi, ci, dev) for _g, gi, ci, dev in table]
    caps = real_cap_minors()
    for d in devices:
        assert d["gi_cap_minor"] == caps[(d["gi_id"], None)]
        assert d["ci_cap_minor"] == caps[(d["gi_id"], d["ci_id"])]
    listed = nvidia_smi.parse_list_gpus(nvsmi_fixtures.load("nvidia-smi", "list",
                                                            "a100sxm4-40gb-mig-1c-4devices-L-ssup2.txt"))
    assert [(d["uuid"], d["profile"]) for d in devices] == [(m["uuid"], m["profile"])
                                                            for m in listed[0]["mig_devices"]]


def test_mig_join_on_the_emulated_a100(tmp_path):
    path, root, _lay = ready(tmp_path, "a100-40gb-mig-ssup2")
    facts, warnings = gather(path, root)
    assert warnings == []
    gpu = facts["gpus"][0]
    assert gpu["mig_mode"] == "Enabled"
    check_mig_devices(gpu["mig_devices"])
    assert [(d["gi_profile"], d["placement_start"], d["placement_size"]) for d in gpu["mig_devices"]] == [
        ("4g.20gb", 0, 4), ("2g.10gb", 4, 2), ("2g.10gb", 4, 2), ("1g.5gb", 6, 1)]


def test_mig_join_on_the_real_recorded_outputs():
    query = ("0, GPU-9e4aeb94-01c0-5173-4811-4ca60f77b3a9, NVIDIA A100-SXM4-40GB, 00000000:10:1C.0, Enabled, "
             "40960, 249\n")
    facts, warnings = gpu_facts.build_facts(
        query,
        list_text=nvsmi_fixtures.load("nvidia-smi", "list", "a100sxm4-40gb-mig-1c-4devices-L-ssup2.txt"),
        lgi_text=nvsmi_fixtures.load("nvidia-smi", "mig", "a100sxm4-40gb-lgi-3gis-driver580-ssup2.txt"),
        lci_text=nvsmi_fixtures.load("nvidia-smi", "mig", "a100sxm4-40gb-lci-4cis-placement-driver580-ssup2.txt"),
        mig_minors_text=fake_sysfs.mig_minors_text())
    assert warnings == []
    check_mig_devices(facts["gpus"][0]["mig_devices"])


def test_mig_mismatch_is_a_warning_not_a_guess():
    query = "0, GPU-9e4aeb94-01c0-5173-4811-4ca60f77b3a9, NVIDIA A100-SXM4-40GB, 00000000:10:1C.0, Enabled, 40960, 0\n"
    lci = nvsmi_fixtures.load("nvidia-smi", "mig", "a100sxm4-40gb-lci-4cis-placement-driver580-ssup2.txt")
    lci = lci.replace("MIG 4g.20gb   ", "MIG 3g.20gb   ")
    facts, warnings = gpu_facts.build_facts(
        query, list_text=nvsmi_fixtures.load("nvidia-smi", "list", "a100sxm4-40gb-mig-1c-4devices-L-ssup2.txt"),
        lgi_text="", lci_text=lci, mig_minors_text=None)
    assert all(d["gi_id"] is None for d in facts["gpus"][0]["mig_devices"])
    assert len(warnings) == 1 and "cannot match" in warnings[0]


def test_legacy_mig_uuids_carry_the_ids(tmp_path):
    def legacy(profile):
        profile["mig_uuid_style"] = "legacy"
    path, root, _lay = ready(tmp_path, "a100-40gb-mig-ssup2", legacy)
    facts, warnings = gather(path, root)
    assert warnings == []
    assert [d["uuid"] for d in facts["gpus"][0]["mig_devices"]][0] == \
        "MIG-GPU-9e4aeb94-01c0-5173-4811-4ca60f77b3a9/2/0"
    check_mig_devices([dict(d, uuid=u["uuid"]) for d, u in zip(
        facts["gpus"][0]["mig_devices"], nvidia_smi.parse_list_gpus(nvsmi_fixtures.load(
            "nvidia-smi", "list", "a100sxm4-40gb-mig-1c-4devices-L-ssup2.txt"))[0]["mig_devices"])])


def test_needs_mig_listing():
    assert gpu_facts.needs_mig_listing("0, GPU-a, A, 00000000:07:00.0, Enabled, 1, 0\n")
    assert not gpu_facts.needs_mig_listing("0, GPU-a, A, 00000000:07:00.0, [N/A], 1, 0\n")


# --- processes -------------------------------------------------------------------------------------------

def fake_process(root, pid, comm, argv0, uid, start_ticks):
    proc = os.path.join(root, "proc", str(pid))
    os.makedirs(proc)
    with open(os.path.join(proc, "status"), "w") as handle:
        handle.write("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n" % (comm, uid, uid, uid, uid))
    with open(os.path.join(proc, "stat"), "w") as handle:
        handle.write("%d (%s) S 1 %d %d 0 -1 4194304 " % (pid, comm, pid, pid) + " ".join(["0"] * 12)
                     + " %d 0 0\n" % start_ticks)
    with open(os.path.join(proc, "comm"), "w") as handle:
        handle.write(comm + "\n")
    with open(os.path.join(proc, "cmdline"), "w") as handle:
        handle.write(argv0 + "\0train.py\0")


def test_processes_joined_by_uuid_with_user_and_elapsed(tmp_path):
    path, root, _lay = ready(tmp_path, "h200-8gpu-busy")
    with open(os.path.join(root, "proc", "uptime"), "w") as handle:
        handle.write("100000.50 0.00\n")
    ticks = os.sysconf("SC_CLK_TCK")
    fake_process(root, 1328667, "python3.10", "/usr/local/bin/python3.10", 0, (100000 - 3725) * ticks)
    fake_process(root, 1425258, "python3", "python3", 54321, (100000 - 90061) * ticks)
    # Same pid, other process: a pid from another namespace must not borrow its user.
    fake_process(root, 1328668, "bash", "/bin/bash", 0, 5 * ticks)
    facts, _w = gather(path, root)
    procs = {p["pid"]: (g["index"], p) for g in facts["gpus"] for p in g["processes"]}
    assert len(procs) == 8
    index, p = procs[1328667]
    assert (index, p["used_mib"], p["process_name"], p["user"], p["elapsed_s"], p["elapsed"]) == (
        0, 130004, "/usr/local/bin/python3.10", "root", 3725, "01:02:05")
    index, p = procs[1425258]
    assert (index, p["user"], p["elapsed"]) == (2, "54321", "1-01:01:01")
    assert procs[1328668][1]["user"] is None and procs[1328668][1]["elapsed"] is None
    index, p = procs[1758887]
    assert (index, p["process_name"], p["user"]) == (7, None, None)
    assert facts["gpus"][7]["memory_used_mib"] == 58071


def test_failed_process_query_means_unknown_not_empty(tmp_path):
    facts, _w = gpu_facts.build_facts("0, GPU-a, A, 00000000:07:00.0, [N/A], 10, 0\n", apps_text=None)
    assert facts["gpus"][0]["processes"] is None


def test_elapsed_format():
    assert [gpu_facts.format_elapsed(s) for s in (0, 59, 61, 3600, 86399, 86400 + 61)] == [
        "00:00", "00:59", "01:01", "01:00:00", "23:59:59", "1-00:01:01"]


# --- lost GPUs, bad input ----------------------------------------------------------------------------------

def test_missing_gpu_closes_up_the_indexes(tmp_path):
    def lose(profile):
        profile["gpus"][3]["lost"] = True
    path, root, _lay = ready(tmp_path, "a100-8gpu-p4d", lose)
    facts, warnings = gather(path, root)
    assert len(facts["gpus"]) == 7
    assert [g["index"] for g in facts["gpus"]] == list(range(7))
    assert "00000000:20:1D.0" not in [g["pci_bus_id"] for g in facts["gpus"]]
    assert facts["lost_gpus"] == []
    # The topo matrix was regenerated for the 7 GPUs that are left; locality still comes out right.
    assert [g["slurm_cores"] for g in facts["gpus"]] == ["0-23"] * 3 + ["24-47"] * 4
    assert warnings == []


def test_unreachable_gpu_is_reported(tmp_path):
    def unreachable(profile):
        profile["gpus"][5]["lost"] = "unreachable"
    path, root, _lay = ready(tmp_path, "a100-8gpu-p4d", unreachable)
    facts, _warnings = gather(path, root)
    assert [g["index"] for g in facts["gpus"]] == [0, 1, 2, 3, 4, 6, 7]
    assert [x["pci_bus_id"] for x in facts["lost_gpus"]] == ["00000000:90:1D.0"]
    assert "GPU5" in facts["lost_gpus"][0]["message"]


def test_affinity_naming_cpus_the_node_does_not_have_is_a_warning(tmp_path):
    profile = profile_for_fixture("a100-8gpu-4nic-2s-ht-confluence.txt")
    profile["cpu_layout"]["threads_per_core"] = 1  # the recording says 2: cpus 64-127 do not exist here
    path, root, _lay = setup_machine(tmp_path, profile)
    facts, warnings = gather(path, root)
    assert facts["gpus"][0]["slurm_cores"] == "0-31"
    assert any("GPU 0: CPU affinity names cpus 64-95" in w for w in warnings)


def test_unparseable_query_output_raises():
    with pytest.raises(ValueError, match="expected 7 comma-separated values"):
        gpu_facts.build_facts("this is not csv, at all\n")


def test_no_devices_gives_no_gpus():
    facts, warnings = gpu_facts.build_facts("No devices were found\n", topo_text=None, apps_text=None)
    assert facts["gpus"] == [] and warnings == []


def test_commands_are_argument_lists():
    assert gpu_facts.query_gpu_command("/usr/bin/nvidia-smi") == [
        "/usr/bin/nvidia-smi", "--query-gpu=index,uuid,name,pci.bus_id,mig.mode.current,memory.total,memory.used",
        "--format=csv,noheader,nounits"]
    assert gpu_facts.topo_command("nvidia-smi") == ["nvidia-smi", "topo", "-m"]
    assert gpu_facts.query_apps_command("x") == ["x", "--query-compute-apps=gpu_uuid,pid,used_memory,process_name",
                                                 "--format=csv,noheader,nounits"]
    assert gpu_facts.mig_commands("x") == {"list": ["x", "-L"], "lgi": ["x", "mig", "-lgi"],
                                           "lci": ["x", "mig", "-lci"]}


def test_gpu_links_from_topo_nvlink_cells(tmp_path):
    # della-i16g1: four GPUs, every pair NV4 (recorded nvidia-smi topo -m)
    path, root, _lay = ready(tmp_path, "a100-8gpu-p4d")
    facts, _w = gather(path, root)
    assert all(len(g["gpu_links"]) == 8 and g["gpu_links"][g["index"]] == -1 for g in facts["gpus"])
    topo = nvsmi_fixtures.load("nvidia-smi", "topo", "a100-4gpu-nv4-della-i16g1.txt").split("\n", 1)[1]
    query = "".join("%d, GPU-%d, NVIDIA A100, 00000000:%02X:00.0, Disabled, 40000, 0\n" % (i, i, i + 1)
                    for i in range(4))
    facts, _w = gpu_facts.build_facts(query, topo_text=topo)
    assert [g["gpu_links"] for g in facts["gpus"]] == [[-1, 4, 4, 4], [4, -1, 4, 4], [4, 4, -1, 4], [4, 4, 4, -1]]


def test_collect_parses_each_nvidia_smi_output_once(tmp_path, monkeypatch):
    """collect() runs the commands through the emulator and must parse --query-gpu and the apps list once each."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import collect as gpu_collect
    profile_file, root, _env = ready(tmp_path, "h200-8gpu-busy")
    calls = {"query_gpu": 0, "query_apps": 0}
    real_gpu, real_apps = nvidia_smi.parse_query_gpu, nvidia_smi.parse_query_apps

    def count_gpu(*args, **kw):
        calls["query_gpu"] += 1
        return real_gpu(*args, **kw)

    def count_apps(*args, **kw):
        calls["query_apps"] += 1
        return real_apps(*args, **kw)
    monkeypatch.setattr(nvidia_smi, "parse_query_gpu", count_gpu)
    monkeypatch.setattr(nvidia_smi, "parse_query_apps", count_apps)

    def run(argv):
        return machines.run_emulator(profile_file, argv[1:])
    facts, warnings, commands = gpu_collect.collect(run, root, "nvidia-smi", which=lambda c: "/usr/bin/" + c)
    assert len(facts["gpus"]) == 8
    assert calls == {"query_gpu": 1, "query_apps": 1}
    assert any(g["processes"] for g in facts["gpus"])  # the recorded node runs jobs on its GPUs
    # without processes (gres_verify): no apps query, each GPU's processes unknown (null), not "none"
    calls.update(query_gpu=0, query_apps=0)
    lean, warnings, lean_commands = gpu_collect.collect(run, root, "nvidia-smi", which=lambda c: "/usr/bin/" + c,
                                                        processes=False)
    assert calls == {"query_gpu": 1, "query_apps": 0}
    assert len(lean_commands) == len(commands) - 1
    assert not [c for c in lean_commands if any("compute-apps" in part for part in c)]
    assert [g["processes"] for g in lean["gpus"]] == [None] * 8
    assert [g["cpu_affinity"] for g in lean["gpus"]] == [g["cpu_affinity"] for g in facts["gpus"]]


def test_collect_reads_the_output_of_an_exit_14_and_warns_of_the_infoROM():
    """nvidia-smi exits 14 after a whole output when it warns that a GPU's infoROM is corrupted (NVIDIA GPU Operator
    troubleshooting); the recorded H200 query and topo -m, with that warning after them."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import collect as gpu_collect
    query = nvsmi_fixtures.load("nvidia-smi", "query", "h200-1gpu-gpu-facts-fields-580.txt")
    topo = nvsmi_fixtures.load("nvidia-smi", "topo", "h200-1gpu-vm-esc-header-580.txt")
    warning = "WARNING: infoROM is corrupted at gpu 0000:00:06.0\n"

    def run(argv):
        if any(a.startswith("--query-gpu") for a in argv):
            return 14, query + warning, ""
        if "topo" in argv:
            return 14, topo + warning, ""
        return 1, "", "not on this test node"  # hwloc: the CPU topology is not what this test is about
    facts, warnings, _commands = gpu_collect.collect(run, "/nonexistent", "nvidia-smi",
                                                     which=lambda c: "/usr/bin/" + c, processes=False)
    assert [(g["pci_bus_id"], g["name"]) for g in facts["gpus"]] == [("00000000:00:06.0", "NVIDIA H200")]
    assert facts["gpus"][0]["cpu_affinity"] is not None
    assert [w for w in warnings if "infoROM" in w] == [
        "nvidia-smi: infoROM is corrupted at gpu 00000000:00:06.0 (exit code 14): the GPU runs, but the ECC counts and "
        "retired pages it keeps there are not to be trusted"]


def test_collect_lists_the_gpus_left_when_the_lost_gpus_message_is_broken_over_two_lines():
    """Exit 15: the recorded H200 query, and on stderr nvidia-smi's lost-GPU message as a post recorded it, its
    second half ("Reboot the system to recover this GPU") on a line of its own: the GPUs left are read, the lost
    one is named (the verification counts it missing), no "cannot read" failure."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import collect as gpu_collect
    query = nvsmi_fixtures.load("nvidia-smi", "query", "h200-1gpu-gpu-facts-fields-580.txt")
    lost = nvsmi_fixtures.load("nvidia-smi", "query", "rtx4070ti-gpu-lost-hint-on-its-own-line.txt")

    def run(argv):
        if any(a.startswith("--query-gpu") for a in argv):
            return 15, query, lost
        return 1, "", "not on this test node"
    facts, _warnings, _commands = gpu_collect.collect(run, "/nonexistent", "nvidia-smi",
                                                      which=lambda c: "/usr/bin/" + c, processes=False)
    assert [g["pci_bus_id"] for g in facts["gpus"]] == ["00000000:00:06.0"]
    assert [g["pci_bus_id"] for g in facts["lost_gpus"]] == ["00000000:01:00.0"]


def test_a_gpu_whose_fields_nvidia_smi_failed_to_read_is_listed_with_a_warning_naming_it():
    """The recorded H200 query with its MIG mode answered by the marker a GPU that needs a reset prints (recorded in
    nvidia-smi/query/h100-requires-reset-temperature-utilization-in-slurm-job.txt): the GPU is kept, its MIG mode is
    unknown (None), and a warning names the GPU, the field and the marker instead of reading it as "no MIG"."""
    query = nvsmi_fixtures.load("nvidia-smi", "query", "h200-1gpu-gpu-facts-fields-580.txt")
    failed = query.replace("Disabled, 143771", "[GPU requires reset], 143771")
    assert failed != query
    facts, warnings = gpu_facts.build_facts(failed)
    assert [(g["index"], g["mig_mode"], g["memory_total_mib"]) for g in facts["gpus"]] == [(0, None, 143771)]
    assert warnings == ["GPU 0 (00000000:00:06.0): nvidia-smi could not read mig.mode.current ([GPU requires reset]); "
                        "the GPU may need a reset (nvidia-smi -q -i 0 shows its state)"]
    assert gpu_facts.build_facts(query)[1] == []
