"""Fleet GPU status: free/busy per GPU, process lines, the CUDA environment line."""
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.gpu_status import gpu_status, slurm_text, status_lines
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_show_node

# memory figures and processes as the H200-class fixture pair reports them (GPU 7: 58071 MiB used by a process in
# another PID namespace, "[Not Found]"); GPUs 8-9 added idle, GPU 10 in MIG mode
HW = {"cpu": {"sockets": 2, "cores_per_socket": 48, "threads_per_core": 2}, "gpus": [
    {"index": 0, "name": "NVIDIA H200", "uuid": "GPU-a44622e3", "mig_mode": "Disabled",
     "memory_total_mib": 143771, "memory_used_mib": 130013,
     "processes": [{"pid": 1328667, "used_memory_mib": 130004, "user": "alice", "elapsed": "1-02:03:04",
                    "process_name": "/usr/local/bin/python3.10"}]},
    {"index": 7, "name": "NVIDIA H200", "uuid": "GPU-28780eb0", "mig_mode": "Disabled",
     "memory_total_mib": 143771, "memory_used_mib": 58071,
     "processes": [{"pid": 1758887, "used_memory_mib": 58060, "user": None, "elapsed": None, "process_name": None}]},
    {"index": 8, "name": "NVIDIA H200", "uuid": "GPU-8", "mig_mode": "Disabled",
     "memory_total_mib": 143771, "memory_used_mib": 1, "processes": []},
    {"index": 9, "name": "NVIDIA H200", "uuid": "GPU-9", "mig_mode": "Disabled",
     "memory_total_mib": 143771, "memory_used_mib": 120000, "processes": []},
    {"index": 10, "name": "NVIDIA H200", "uuid": "GPU-10", "mig_mode": "Enabled",
     "memory_total_mib": 143771, "memory_used_mib": 0, "processes": []},
]}


def test_states():
    report = gpu_status(HW, min_free_mib=40000)
    assert [(g["index"], g["state"]) for g in report["gpus"]] == [
        (0, "busy"), (7, "busy"), (8, "free"), (9, "busy"), (10, "mig")]
    assert report["free"] == [8]
    assert report["cuda_env"] == "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=8"
    assert "no visible process" in report["gpus"][3]["why"]


def test_without_a_memory_threshold_memory_alone_does_not_block():
    report = gpu_status(HW)
    assert report["free"] == [8, 9]
    assert report["cuda_env"].endswith("CUDA_VISIBLE_DEVICES=8,9")


def test_process_fields_and_lines():
    report = gpu_status(HW, min_free_mib=40000)
    proc = report["gpus"][0]["processes"][0]
    assert proc == {"pid": 1328667, "user": "alice", "elapsed": "1-02:03:04",
                    "command": "/usr/local/bin/python3.10", "used_mib": 130004}
    lines = status_lines("gpu-h01", report)
    assert lines[0].startswith("gpu-h01: GPU 0  NVIDIA H200  130013/143771 MiB  busy")
    assert lines[0].endswith("pid 1328667 alice 1-02:03:04 130004 MiB /usr/local/bin/python3.10")
    assert lines[1].endswith("pid 1758887 ? ? 58060 MiB ?")
    assert lines[-1] == "gpu-h01: CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=8"
    # the state column lines up
    assert len({line.index(" busy") if " busy" in line else line.index(" free") if " free" in line
                else line.index(" mig") for line in lines[:-1]}) == 1


def test_a_slurm_node_names_its_free_gpus_without_a_cuda_line():
    report = gpu_status(HW)
    assert status_lines("gpu-h01", report, slurm_node=True)[-1] == (
        "gpu-h01: 2 GPU(s) free now (8,9): a Slurm node, ask for GPUs with srun/sbatch --gres")
    assert status_lines("n", gpu_status({"gpus": [HW["gpus"][0]]}), slurm_node=True)[-1] == "n: no free GPU"


def test_no_free_gpu_and_no_gpu():
    report = gpu_status({"gpus": [HW["gpus"][0]]})
    assert report["cuda_env"] is None
    assert status_lines("n", report)[-1] == "n: no free GPU"
    assert status_lines("n", gpu_status({"gpus": []})) == ["n: no GPUs seen by nvidia-smi"]


def test_unknown_memory_is_not_free():
    report = gpu_status({"gpus": [{"index": 0, "name": "X", "memory_total_mib": None, "memory_used_mib": None}]})
    assert report["gpus"][0]["state"] == "unknown" and report["free"] == []


def test_a_lost_gpu_and_a_declared_gpu_nvidia_smi_does_not_list_are_on_the_summary_line():
    # gpu_facts' lost_gpus as find_lost_gpus reads nvidia-smi's own message (R550+ shape); the inventory declares
    # 8 GPUs (7 whole, then a count-only entry of 1), nvidia-smi lists 5 and cannot reach 1: 2 are missing
    hw = dict(HW, lost_gpus=[{"pci_bus_id": "00000000:34:00.0",
                              "message": "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown "
                                         "Error"}])
    declared = [{"index": i, "type": "h200"} for i in range(7)] + [{"type": "h200", "count": 1}]
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.gpu_status import declared_count
    assert declared_count(declared) == 8 and declared_count(None) is None
    # MIG instances the import writes as entries with a capability file are instances, not GPUs; a GPU's own file
    # (WSL's /dev/dxg) or minor is one
    mig = [{"index": i, "type": "1g.10gb", "file": "/dev/nvidia-caps/nvidia-cap%d" % (21 + 9 * i)} for i in range(7)]
    assert declared_count(mig + [{"index": 7, "type": "rtx4090", "file": "/dev/dxg"}, {"index": 8, "minor": 1}]) == 2
    report = gpu_status(hw, declared=declared_count(declared))
    assert report["missing"] == 2 and report["lost"][0]["pci_bus_id"] == "00000000:34:00.0"
    lines = status_lines("gpu-h01", report)
    assert lines[-2] == ("gpu-h01: GPU LOST 00000000:34:00.0: Unable to determine the device handle for GPU1: "
                         "0000:34:00.0: Unknown Error")
    assert lines[-1] == ("gpu-h01: CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=8,9 [1 GPU(s) LOST: "
                         "00000000:34:00.0; 2 GPU(s) the inventory declares not seen by nvidia-smi]")
    # a message without a bus id names the GPU by nvidia-smi's index
    message = "Unable to determine the device handle for GPU0: Unknown Error"
    bare = gpu_status(dict(HW, lost_gpus=[{"pci_bus_id": None, "index": 0, "message": message}]))
    assert status_lines("n", bare)[-2] == "n: GPU LOST GPU 0: " + message
    # nothing declared, nothing lost: the line is as before
    assert status_lines("n", gpu_status({"gpus": []}, declared=0)) == ["n: no GPUs seen by nvidia-smi"]


def _record(line):
    """A node as hpc.slurm_gres.slurm_node returns it (parsed by the same parser, with its derived fields)."""
    record = next(iter(parse_show_node(line).values()))
    base, flags = (record["State"] + "+").split("+", 1)
    return dict(record, state_base=base, state_flags=[f for f in flags.split("+") if f],
                gres={"gpu:a100": 8} if "gpu:a100:8" in record.get("Gres", "") else {},
                reason=(record.get("Reason") or "").split(" [")[0] or None)


def test_slurmctlds_view_names_state_allocated_gpus_and_the_reason_of_a_node_out_of_service():
    busy = _record("NodeName=g1 State=MIXED Gres=gpu:a100:8(S:0-1) GresUsed=gpu:a100:3(IDX:0-2)")
    assert slurm_text(busy) == "slurmctld: MIXED, 3 of 8 GPU(s) allocated"
    drained = _record("NodeName=g1 State=IDLE+DRAIN Gres=gpu:a100:8(S:0-1) GresUsed=gpu:a100:0(IDX:N/A) "
                      "Reason=hpc-gres-health: xid 79 GPU 3 [root@2026-12-01T10:00:00]")
    assert slurm_text(drained) == "slurmctld: IDLE+DRAIN, 0 of 8 GPU(s) allocated, reason: hpc-gres-health: xid 79 GPU 3"
    # without scontrol -d there is no GresUsed: the state alone
    assert slurm_text(_record("NodeName=g1 State=IDLE Gres=gpu:a100:8")) == "slurmctld: IDLE"
    assert slurm_text(None) == "slurmctld: node not known"
    report = gpu_status({"gpus": []}, 0)
    assert status_lines("g1", report, True, busy)[-1] == (
        "g1: no GPUs seen by nvidia-smi; slurmctld: MIXED, 3 of 8 GPU(s) allocated")
    assert status_lines("g1", report, True)[-1] == "g1: no GPUs seen by nvidia-smi"
