"""Which GPUs of a shared server are free, and the environment line a user could run with.

Input is ``hpc_gres_hw`` from gpu_facts: GPUs with memory figures and their processes (joined by uuid).
A GPU is free when no process runs on it, it is not in MIG mode (a whole-GPU index is no use there), and at
least ``min_free_mib`` of its memory is free. A GPU nvidia-smi cannot reach, or one the inventory declares that
nvidia-smi does not list, is named on the line that sums up the node. nvidia-smi's index order is PCI bus order, so
with ``CUDA_DEVICE_ORDER=PCI_BUS_ID`` CUDA's device numbers are the same indexes.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_gres_used, reason_in_force


def _first(mapping, *keys):
    for key in keys:
        if mapping.get(key) not in (None, ""):
            return mapping[key]
    return None


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def declared_count(entries):
    """How many physical GPUs an ``hpc_gres_gpus`` list declares (a count-only entry its count, any other entry one:
    a GPU with a ``mig`` layout is one GPU), or None when the host has no such list. An entry whose ``file`` is a MIG
    capability (``/dev/nvidia-caps/...``, what the import writes for MIG lines) is an instance of a GPU, not a
    GPU."""
    if not isinstance(entries, (list, tuple)):
        return None
    total = 0
    for entry in entries:
        if isinstance(entry, dict) and "count" in entry:
            count = _int(entry.get("count"))
            total += count if count and count > 0 else 0
        elif not (isinstance(entry, dict) and str(entry.get("file") or "").startswith("/dev/nvidia-caps/")):
            total += 1
    return total


def gpu_status(hw, min_free_mib=0, declared=None):
    """``{"gpus": [...], "free": [indexes], "cuda_env": str or None, "lost": [...], "missing": int}`` for one node.

    ``lost``: the GPUs nvidia-smi lists but cannot reach (gpu_facts' ``lost_gpus``); ``missing``: how many of the
    ``declared`` GPUs (the inventory's count) nvidia-smi does not list at all (fallen off the bus before the driver
    loaded), 0 when ``declared`` is None."""
    min_free_mib = int(min_free_mib or 0)
    gpus = []
    for gpu in sorted((hw or {}).get("gpus") or [], key=lambda g: g["index"]):
        total = _int(gpu.get("memory_total_mib"))
        used = _int(gpu.get("memory_used_mib"))
        free_mib = total - used if total is not None and used is not None else None
        procs = []
        for proc in gpu.get("processes") or []:
            procs.append({
                "pid": _int(proc.get("pid")),
                "user": _first(proc, "user", "username"),
                "elapsed": _first(proc, "elapsed", "etime"),
                "command": _first(proc, "command", "cmdline", "process_name", "name"),
                "used_mib": _int(_first(proc, "used_mib", "used_memory_mib", "used_memory")),
            })
        mig = str(gpu.get("mig_mode") or "").lower() == "enabled"
        if procs:
            state, why = "busy", "%d process(es)" % len(procs)
        elif mig:
            state, why = "mig", "MIG mode: use its MIG devices (nvidia-smi -L)"
        elif free_mib is None:
            state, why = "unknown", "memory not reported"
        elif free_mib < min_free_mib:
            state, why = "busy", "%d MiB free < %d MiB asked (memory in use, no visible process)" % (
                free_mib, min_free_mib)
        else:
            state, why = "free", "%d MiB free" % free_mib
        gpus.append({"index": gpu["index"], "name": gpu.get("name"), "uuid": gpu.get("uuid"),
                     "pci_bus_id": gpu.get("pci_bus_id"), "memory_total_mib": total, "memory_used_mib": used,
                     "memory_free_mib": free_mib, "processes": procs, "state": state, "why": why})
    free = [g["index"] for g in gpus if g["state"] == "free"]
    cuda_env = None
    if free:
        cuda_env = "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=%s" % ",".join(str(i) for i in free)
    lost = [{"pci_bus_id": entry.get("pci_bus_id"), "index": entry.get("index"), "message": entry.get("message") or ""}
            for entry in (hw or {}).get("lost_gpus") or [] if isinstance(entry, dict)]
    missing = max(0, declared - len(gpus) - len(lost)) if declared is not None else 0
    return {"gpus": gpus, "free": free, "cuda_env": cuda_env, "lost": lost, "missing": missing}


def _lost_name(entry):
    """The bus id, else nvidia-smi's index (a message without a bus id: ``for GPU0: Unknown Error``)."""
    if entry.get("pci_bus_id"):
        return entry["pci_bus_id"]
    return "GPU %d" % entry["index"] if entry.get("index") is not None else "?"


def _mem(gpu):
    if gpu["memory_total_mib"] is None:
        return "?"
    return "%s/%d MiB" % ("?" if gpu["memory_used_mib"] is None else gpu["memory_used_mib"], gpu["memory_total_mib"])


def _proc_text(proc):
    parts = ["pid %s" % (proc["pid"] if proc["pid"] is not None else "?")]
    parts.append(proc["user"] or "?")
    parts.append(proc["elapsed"] or "?")
    if proc["used_mib"] is not None:
        parts.append("%d MiB" % proc["used_mib"])
    parts.append(proc["command"] or "?")
    return " ".join(str(p) for p in parts)


def slurm_text(record):
    """slurmctld's view of a node for its status line: the state, the GPUs allocated of those registered (from
    ``scontrol -d``'s GresUsed), the reason of a node out of service. ``record``: hpc.slurm_gres.slurm_node's."""
    if not isinstance(record, dict):
        return "slurmctld: node not known"
    parts = ["slurmctld: %s" % (record.get("State") or "?")]
    registered = sum(count for key, count in (record.get("gres") or {}).items() if key.split(":", 1)[0] == "gpu")
    used = parse_gres_used(record.get("GresUsed"))
    if used is not None and registered:
        parts.append("%d of %d GPU(s) allocated" % (used.get("gpu", 0), registered))
    if record.get("reason") and reason_in_force(record.get("State")):
        parts.append("reason: %s" % record["reason"])
    return ", ".join(parts)


def status_lines(host, report, slurm_node=False, slurm=None):
    """Fixed-width report lines for one node, ending with the CUDA environment line (or why there is none). On a
    Slurm node (``slurm_node``) the last line names the free GPUs without that line: jobs get GPUs from Slurm
    (``--gres``), and a process started past it would take GPUs Slurm hands to others. ``slurm``: slurmctld's record
    of the node (hpc.slurm_gres.slurm_node), said at the end of the last line when given."""
    lines = _status_lines(host, report, slurm_node)
    if slurm is not None:
        lines[-1] += "; " + slurm_text(slurm or None)
    return lines


def _status_lines(host, report, slurm_node):
    gpus = report["gpus"]
    trouble = []
    lost, missing = report.get("lost") or [], report.get("missing") or 0
    if lost:
        trouble.append("%d GPU(s) LOST: %s" % (len(lost), ", ".join(_lost_name(e) for e in lost)))
    if missing:
        trouble.append("%d GPU(s) the inventory declares not seen by nvidia-smi" % missing)
    # the fleet summary shows each node's last line: it carries the trouble too
    suffix = " [%s]" % "; ".join(trouble) if trouble else ""
    problem_lines = ["%s: GPU LOST %s: %s" % (host, _lost_name(e), e["message"]) for e in lost]
    if not gpus:
        return problem_lines + ["%s: no GPUs seen by nvidia-smi%s" % (host, suffix)]
    name_w = max(len(str(g["name"] or "?")) for g in gpus)
    mem_w = max(len(_mem(g)) for g in gpus)
    lines = []
    for gpu in gpus:
        head = "%s: GPU %-2d %-*s  %*s  %-5s" % (host, gpu["index"], name_w, gpu["name"] or "?", mem_w, _mem(gpu),
                                                 gpu["state"])
        if gpu["processes"]:
            for pos, proc in enumerate(gpu["processes"]):
                prefix = head if pos == 0 else " " * len(head)
                lines.append("%s  %s" % (prefix, _proc_text(proc)))
        else:
            lines.append("%s  %s" % (head, gpu["why"]))
    lines.extend(problem_lines)
    if report["cuda_env"] and slurm_node:
        lines.append("%s: %d GPU(s) free now (%s): a Slurm node, ask for GPUs with srun/sbatch --gres%s"
                     % (host, len(report["free"]), ",".join(str(i) for i in report["free"]), suffix))
    elif report["cuda_env"]:
        lines.append("%s: %s%s" % (host, report["cuda_env"], suffix))
    else:
        lines.append("%s: no free GPU%s" % (host, suffix))
    return lines
