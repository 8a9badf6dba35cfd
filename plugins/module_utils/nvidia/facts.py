"""Assemble ``ansible_facts.hpc_gres_hw`` from nvidia-smi outputs and sysfs/procfs data (pure logic).

The ``gpu_facts`` module runs the commands and reads the files; everything it learns goes through
:func:`build_facts`, which is what the unit tests drive with recorded real outputs.
"""
import os
import pwd
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi as nvidia_smi
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges


def query_gpu_command(nvidia_smi_path):
    return [nvidia_smi_path, "--query-gpu=" + ",".join(nvidia_smi.QUERY_GPU_FIELDS), "--format=csv,noheader,nounits"]


def query_apps_command(nvidia_smi_path):
    return [nvidia_smi_path, "--query-compute-apps=" + ",".join(nvidia_smi.QUERY_APPS_FIELDS),
            "--format=csv,noheader,nounits"]


def topo_command(nvidia_smi_path):
    return [nvidia_smi_path, "topo", "-m"]


def mig_commands(nvidia_smi_path):
    """Only run when a GPU has MIG enabled: ``-L``, ``mig -lgi``, ``mig -lci``."""
    return {"list": [nvidia_smi_path, "-L"], "lgi": [nvidia_smi_path, "mig", "-lgi"],
            "lci": [nvidia_smi_path, "mig", "-lci"]}


# ----------------------------------------------------------------------------------------------------
# procfs readers (file I/O, but no Ansible: the module calls them, tests point them at a fake root)

def parse_gpu_information(text):
    """``Device Minor:`` from ``/proc/driver/nvidia/gpus/<bdf>/information`` (None when absent)."""
    m = re.search(r"^\s*Device Minor:\s*(\d+)\s*$", text or "", re.M)
    return int(m.group(1)) if m else None


def read_gpu_minor(root, pci_bus_id):
    """The GPU's device minor (``/dev/nvidia<minor>``) from procfs under ``root``, or None."""
    try:
        path = os.path.join(root, "proc", "driver", "nvidia", "gpus", nvidia_smi.proc_bus_id(pci_bus_id),
                            "information")
        with open(path) as handle:
            return parse_gpu_information(handle.read())
    except (IOError, OSError, ValueError):
        return None


def read_text(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError):
        return None


def format_elapsed(seconds):
    """``ps -o etime`` style: ``[[DD-]hh:]mm:ss``."""
    seconds = max(0, int(seconds))
    days, rem = divmod(seconds, 86400)
    hours, rem = divmod(rem, 3600)
    minutes, secs = divmod(rem, 60)
    if days:
        return "%d-%02d:%02d:%02d" % (days, hours, minutes, secs)
    if hours:
        return "%02d:%02d:%02d" % (hours, minutes, secs)
    return "%02d:%02d" % (minutes, secs)


def read_process(root, pid, clock_ticks=None):
    """``{"pid", "uid", "user", "comm", "argv0", "elapsed_s"}`` for ``root/proc/<pid>``, None if not visible."""
    proc = os.path.join(root, "proc", str(pid))
    status = read_text(os.path.join(proc, "status"))
    stat = read_text(os.path.join(proc, "stat"))
    if status is None or stat is None:
        return None
    info = {"pid": int(pid), "uid": None, "user": None, "comm": None, "argv0": None, "elapsed_s": None}
    m = re.search(r"^Uid:\s*(\d+)", status, re.M)
    if m:
        info["uid"] = int(m.group(1))
        try:
            info["user"] = pwd.getpwuid(info["uid"]).pw_name
        except KeyError:
            info["user"] = str(info["uid"])
    comm = read_text(os.path.join(proc, "comm"))
    info["comm"] = comm.strip() if comm is not None else None
    cmdline = read_text(os.path.join(proc, "cmdline"))
    if cmdline:
        info["argv0"] = cmdline.split("\0")[0]
    # stat: "pid (comm) state ppid ..."; field 22 (starttime, clock ticks since boot) counts after ")".
    after = stat.rsplit(")", 1)[-1].split()
    uptime = read_text(os.path.join(root, "proc", "uptime"))
    if len(after) >= 20 and uptime:
        ticks = clock_ticks or os.sysconf("SC_CLK_TCK")
        try:
            info["elapsed_s"] = int(float(uptime.split()[0]) - int(after[19]) / float(ticks))
        except ValueError:
            pass
    return info


# ----------------------------------------------------------------------------------------------------
# assembly

def _numa_node(numa_affinity, cpu_affinity, numa_nodes):
    if not numa_affinity:
        # topo -m prints N/A (one NUMA node, some VMs): the node whose cpus hold all of the GPU's, if exactly one does
        if cpu_affinity and numa_nodes:
            holding = [n for n, cpus in numa_nodes.items() if set(cpu_affinity) <= set(cpus)]
            if len(holding) == 1:
                return holding[0]
        return None
    if len(numa_affinity) == 1:
        return numa_affinity[0]
    # Several nodes (POWER9 lists GPU memory nodes too): keep the one that holds the GPU's cpus.
    if cpu_affinity and numa_nodes:
        holding = [n for n in numa_affinity if set(numa_nodes.get(n, ())) & set(cpu_affinity)]
        if len(holding) == 1:
            return holding[0]
    return None


def _process_matches(info, process_name):
    """Is ``/proc/<pid>`` the process nvidia-smi named (and not another pid namespace's)?"""
    if info is None:
        return False
    if not process_name:
        return False
    base = os.path.basename(process_name.split()[0])
    if info.get("comm") is not None and base[:15] == info["comm"][:15]:
        return True
    argv0 = info.get("argv0")
    return argv0 is not None and (argv0 == process_name.split()[0] or os.path.basename(argv0) == base)


def _join_mig_devices(gpu, listed, lci_rows, lgi_rows, minors, gpu_minor, warnings):
    """MIG devices of one GPU: -L devices joined to (GI, CI) from -lci by device order (see docs)."""
    devices = [dict(d) for d in sorted(listed.get("mig_devices", []), key=lambda d: d["device"])]
    cis = sorted((r for r in lci_rows if r["gpu"] == gpu["index"]), key=lambda r: (r["gi_id"], r["ci_id"]))
    gis = {r["gi_id"]: r for r in lgi_rows if r["gpu"] == gpu["index"]}
    if devices and all(d["gi_id"] is not None for d in devices):
        pass  # old -L format carried GI/CI in the UUID
    elif len(devices) == len(cis) and all(d["profile"] == c["profile"] for d, c in zip(devices, cis)):
        # NVML enumerates MIG devices by GPU instance id, then compute instance id.
        for d, c in zip(devices, cis):
            d["gi_id"], d["ci_id"] = c["gi_id"], c["ci_id"]
    elif devices or cis:
        listed_text = ", ".join(d["profile"] for d in devices) or "none"
        cis_text = ", ".join("%s gi%d/ci%d" % (c["profile"], c["gi_id"], c["ci_id"]) for c in cis) or "none"
        warnings.append("GPU %d: cannot match nvidia-smi -L MIG devices (%s) to mig -lci compute instances (%s); "
                        "gi_id/ci_id left unknown" % (gpu["index"], listed_text, cis_text))
    result = []
    for d in devices:
        gi = gis.get(d["gi_id"]) if d["gi_id"] is not None else None
        entry = {
            "uuid": d["uuid"],
            "profile": d["profile"],
            "device": d["device"],
            "gi_id": d["gi_id"],
            "ci_id": d["ci_id"],
            "gi_profile": gi["profile"] if gi else None,
            "gi_profile_id": gi["profile_id"] if gi else None,
            "placement_start": gi["placement_start"] if gi else None,
            "placement_size": gi["placement_size"] if gi else None,
            "gi_cap_minor": None,
            "ci_cap_minor": None,
        }
        if minors is not None and d["gi_id"] is not None:
            entry["gi_cap_minor"] = minors.get(("gi", gpu_minor, d["gi_id"], None))
            entry["ci_cap_minor"] = minors.get(("ci", gpu_minor, d["gi_id"], d["ci_id"]))
            if entry["gi_cap_minor"] is None or entry["ci_cap_minor"] is None:
                warnings.append("GPU %d: mig-minors has no entry for gpu%d/gi%d/ci%d" % (
                    gpu["index"], gpu_minor, d["gi_id"], d["ci_id"]))
        result.append(entry)
    return result


def _parsed(parsed, key, text, parse):
    """``parse(text)`` once: taken from ``parsed`` when the caller has it, stored there otherwise."""
    if parsed.get(key) is None:
        parsed[key] = parse(text)
    return parsed[key]


def build_facts(query_gpu_text, topo_text=None, apps_text=None, topology=None, gpu_minors=None,
                list_text=None, lgi_text=None, lci_text=None, mig_minors_text=None, processes=None, parsed=None):
    """Build ``hpc_gres_hw`` from command outputs and sysfs/procfs data.

    ``topology``: a :class:`cpu_topology.CpuTopology` (None when unreadable);
    ``gpu_minors``: ``{pci_bus_id: minor}``; ``processes``: ``{pid: read_process(...) result}``;
    ``topo_text`` / ``apps_text`` None when the command failed (the facts then say null, not empty).
    ``parsed``: a dict shared with the caller so each output is parsed once: rows it already holds under
    ``query``, ``apps``, ``lgi``, ``lci`` are used instead of parsing the text again, and what is parsed here is
    left in it (``mig.apply`` reads the ``lgi``/``lci`` rows from it).
    Returns ``(facts, warnings)``. Raises ValueError on output that does not parse.
    """
    warnings = []
    parsed = {} if parsed is None else parsed
    rows = _parsed(parsed, "query", query_gpu_text,
                   lambda text: nvidia_smi.parse_query_gpu(text, nvidia_smi.QUERY_GPU_FIELDS))
    lost = nvidia_smi.find_lost_gpus(query_gpu_text)
    topo = nvidia_smi.parse_topo_matrix(topo_text) if topo_text is not None and rows else None
    topo_by_index = {g["index"]: g for g in topo["gpus"]} if topo else {}
    if topo is not None and len(topo["gpus"]) != len(rows):
        warnings.append("nvidia-smi topo -m shows %d GPUs, --query-gpu %d" % (len(topo["gpus"]), len(rows)))

    numa_nodes = topology.numa_nodes if topology else {}
    cpu_fact = None
    if topology is not None:
        cpu_fact = topology.facts()
        if not cpu_fact["shape_fits"]:
            warnings.append("CPU topology does not fit Sockets x CoresPerSocket x ThreadsPerCore (%s); slurmd -C "
                            "would print: %s" % ("; ".join(cpu_fact["shape_problems"]), cpu_fact["slurmd_c"]))

    apps = None
    if apps_text is not None or parsed.get("apps") is not None:
        apps = _parsed(parsed, "apps", apps_text,
                       lambda text: nvidia_smi.parse_query_apps(text, nvidia_smi.QUERY_APPS_FIELDS))
    gpu_minors = gpu_minors or {}
    listed = {g["uuid"]: g for g in nvidia_smi.parse_list_gpus(list_text)} if list_text else {}
    lgi_rows = _parsed(parsed, "lgi", lgi_text, lambda text: nvidia_smi.parse_mig_lgi(text) if text else [])
    lci_rows = _parsed(parsed, "lci", lci_text, lambda text: nvidia_smi.parse_mig_lci(text) if text else [])
    minors = nvidia_smi.parse_mig_minors(mig_minors_text) if mig_minors_text is not None else None

    gpus = []
    for row in sorted(rows, key=lambda r: r["index"]):
        failed = row.get(nvidia_smi.READ_ERRORS)
        if failed:
            warnings.append("GPU %d (%s): nvidia-smi could not read %s; the GPU may need a reset (nvidia-smi -q -i %d "
                            "shows its state)" % (row["index"], row["pci.bus_id"] or "no bus id", ", ".join(
                                "%s (%s)" % item for item in sorted(failed.items())), row["index"]))
        t = topo_by_index.get(row["index"])
        affinity = t["cpu_affinity"] if t else None
        numa_affinity = t["numa_affinity"] if t else None
        slurm_cores = None
        if affinity and topology is not None:
            known = [c for c in affinity if c in topology.core_of]
            if len(known) != len(affinity):
                warnings.append("GPU %d: CPU affinity names cpus %s that are not online on this node"
                                % (row["index"], format_int_ranges(set(affinity) - set(known))))
            slurm_cores = topology.slurm_cores(known, strict=False) or None
        minor = gpu_minors.get(row["pci.bus_id"])
        gpu = {
            "index": row["index"],
            "uuid": row["uuid"],
            "name": row["name"],
            "pci_bus_id": row["pci.bus_id"],
            "minor": minor if minor is not None else row["index"],
            "minor_source": "proc" if minor is not None else "index",
            "mig_mode": row["mig.mode.current"],
            "memory_total_mib": row["memory.total"],
            "memory_used_mib": row["memory.used"],
            "cpu_affinity": affinity,
            "numa_affinity": numa_affinity,
            "numa_node": _numa_node(numa_affinity, affinity, numa_nodes),
            "gpu_links": _gpu_links(t["links"], row["index"], [r["index"] for r in rows]) if t else None,
            "slurm_cores": slurm_cores,
            "processes": [] if apps is not None else None,
            "mig_devices": [],
        }
        if gpu["mig_mode"] == "Enabled":
            gpu["mig_devices"] = _join_mig_devices(gpu, listed.get(gpu["uuid"], {}), lci_rows, lgi_rows, minors,
                                                   gpu["minor"], warnings)
        gpus.append(gpu)

    if apps is not None:
        by_uuid = {g["uuid"]: g for g in gpus}
        mig_parent = {d["uuid"]: g for g in gpus for d in g["mig_devices"]}
        for app in apps:
            uuid = app.get("gpu_uuid")
            gpu = by_uuid.get(uuid) or mig_parent.get(uuid)
            if gpu is None:
                warnings.append("process %s runs on %s, which --query-gpu does not list" % (app.get("pid"), uuid))
                continue
            info = (processes or {}).get(app.get("pid"))
            visible = _process_matches(info, app.get("process_name"))
            gpu["processes"].append({
                "pid": app.get("pid"),
                "used_mib": app.get("used_memory"),
                "process_name": app.get("process_name"),
                "mig_uuid": uuid if uuid in mig_parent else None,
                "user": info["user"] if visible else None,
                "elapsed_s": info["elapsed_s"] if visible else None,
                "elapsed": format_elapsed(info["elapsed_s"]) if visible and info["elapsed_s"] is not None else None,
            })

    facts = {"cpu": cpu_fact, "gpus": gpus, "lost_gpus": lost}
    return facts, warnings


def _gpu_links(links, index, indexes):
    """gres.conf Links= of one GPU from its ``nvidia-smi topo -m`` row: NVLink count to GPU 0, 1, ... in index
    (PCI) order, -1 for itself, 0 where the path is not NVLink (PIX, PXB, PHB, NODE, SYS)."""
    out = []
    for other in sorted(indexes):
        if other == index:
            out.append(-1)
            continue
        cell = str((links or {}).get("GPU%d" % other) or "")
        match = re.match(r"^NV(\d+)$", cell.strip())
        out.append(int(match.group(1)) if match else 0)
    return out


def mig_enabled(rows):
    """True when any parsed ``--query-gpu`` row reports MIG mode Enabled."""
    return any(r.get("mig.mode.current") == "Enabled" for r in rows)


def needs_mig_listing(query_gpu_text):
    """True when any GPU reports MIG mode Enabled (then -L / mig -lgi / mig -lci are worth running)."""
    return mig_enabled(nvidia_smi.parse_query_gpu(query_gpu_text, nvidia_smi.QUERY_GPU_FIELDS))
