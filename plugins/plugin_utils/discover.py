"""Proposed ``host_vars/<host>.yml`` from a node's gathered hardware (``hpc_gres_hw`` from gpu_facts).

The admin reviews and commits the proposal: explicit configuration, seeded from reality. Nothing here guesses
silently: every value that could not be derived is left out and named in ``notes``.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.gpu_types import (
    DEFAULT_TYPE_PATTERNS,
    classify,
    compile_patterns,
    slurm_name,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges

# RealMemory above what the node has drains it ("Low RealMemory"), and MemTotal shrinks a little with kernel
# and firmware updates; propose a value rounded down to whole GiB on nodes with more than this many MiB.
MEMORY_ROUND_ABOVE_MIB = 4096
_TYPE_OK = re.compile(r"[^a-z0-9_.+-]+")
_YAML_PLAIN = re.compile(r"^[a-z][a-z0-9_.+-]*$")
_YAML_RESERVED = {"y", "n", "yes", "no", "on", "off", "true", "false", "null"}


def gres_type_for(name, type_patterns=None):
    """(type, how): the GRES type for an nvidia-smi name.

    User patterns win over the defaults; among several hits the longest type name wins (``l40s`` over ``l40``).
    Without any hit, Slurm's AutoDetect form of the name (``nvidia_t1000_8gb``), which verify matches as a
    substring exactly like Slurm does.
    """
    user = {str(k).lower(): v for k, v in (type_patterns or {}).items()}
    for table in (user, DEFAULT_TYPE_PATTERNS):
        hits = classify(name, compile_patterns(table)) if table else []
        if hits:
            return hits[0], "pattern"
    return _TYPE_OK.sub("_", slurm_name(name)).strip("_") or "gpu", "name"


def propose_real_memory(memtotal_mb):
    if memtotal_mb is None:
        return None
    memtotal_mb = int(memtotal_mb)
    if memtotal_mb > MEMORY_ROUND_ABOVE_MIB:
        return memtotal_mb - memtotal_mb % 1024
    return memtotal_mb


def propose_host_vars(hw, type_patterns=None, memtotal_mb=None):
    """Return ``{"vars": {...host_vars...}, "notes": [str]}`` for one node's ``hpc_gres_hw``."""
    notes = []
    proposal = {}
    cpu = (hw or {}).get("cpu") or {}
    for var, key in (("hpc_gres_node_sockets", "sockets"), ("hpc_gres_node_cores_per_socket", "cores_per_socket"),
                     ("hpc_gres_node_threads_per_core", "threads_per_core")):
        if cpu.get(key):
            proposal[var] = int(cpu[key])
        else:
            notes.append("%s: not derived (CPU topology not readable); take it from `slurmd -C`" % var)
    memory = propose_real_memory(memtotal_mb)
    if memory is not None:
        proposal["hpc_gres_node_real_memory"] = memory
        if memory != int(memtotal_mb):
            notes.append("hpc_gres_node_real_memory: %d MiB, MemTotal %d MiB rounded down to whole GiB so that a "
                         "slightly smaller MemTotal after an update does not drain the node" % (memory, memtotal_mb))
    else:
        notes.append("hpc_gres_node_real_memory: not derived (facts not gathered); take it from `slurmd -C`")
    notes.extend(_cpu_notes(cpu))
    gpus = []
    for gpu in sorted((hw or {}).get("gpus") or [], key=lambda g: g["index"]):
        entry = {"index": int(gpu["index"])}
        gtype, how = gres_type_for(gpu.get("name"), type_patterns)
        entry["type"] = gtype
        if how == "name":
            notes.append("GPU %d: no type pattern matches %r; proposed type %s (Slurm's AutoDetect form); "
                         "rename it and set type_patterns for gres_verify if you like" %
                         (gpu["index"], gpu.get("name"), gtype))
        cores = _cores(gpu.get("slurm_cores"))
        if cores:
            entry["cores"] = cores
        else:
            notes.append("GPU %d: no CPU affinity reported by nvidia-smi topo -m; cores left out" % gpu["index"])
        minor = gpu.get("minor")
        if minor is not None and int(minor) != int(gpu["index"]):
            entry["minor"] = int(minor)
        links = gpu.get("gpu_links")
        if links and any(v > 0 for v in links):
            entry["links"] = ",".join(str(v) for v in links)
        if str(gpu.get("mig_mode") or "").lower() == "enabled":
            notes.append("GPU %d: MIG mode is enabled; add its layout as mig: [<profiles>] (see the MIG docs)"
                         % gpu["index"])
        gpus.append(entry)
    proposal["hpc_gres_gpus"] = gpus
    if not gpus:
        notes.append("no GPUs seen by nvidia-smi")
    if any("links" in g for g in gpus):
        notes.append("links: NVLink counts from nvidia-smi topo -m (GPU 0, 1, ... in PCI order, -1 = this GPU). "
                     "With AutoDetect=nvml slurmd compares them with NVML, which does not count NVLinks through "
                     "NVSwitches: drop links there")
    return {"vars": proposal, "notes": notes}


def _cpu_notes(cpu):
    """Where the CPU topology came from, and what is wrong with the shape when it does not fit."""
    notes = []
    if cpu.get("source"):
        notes.append("CPU topology from %s%s; Cores= are hwloc logical core indexes, as slurmd numbers them"
                     % (cpu["source"], " (%s)" % cpu["source_detail"] if cpu.get("source_detail") else ""))
    if cpu.get("shape_fits") is False:
        notes.append("CPU shape: Sockets x CoresPerSocket x ThreadsPerCore does not describe this node: %s. "
                     "`slurmd -C` would print %s; the values below are those, which slurmd registers, so the node "
                     "is not drained for them, but Slurm's placement assumes a regular node: review them, and each "
                     "GPU's cores, before committing"
                     % ("; ".join(cpu.get("shape_problems") or ["(no reason given)"]), cpu.get("slurmd_c", "?")))
    return notes


def _cores(value):
    if value in (None, "", []):
        return None
    if isinstance(value, (list, tuple)):
        return format_int_ranges(value)
    return format_int_ranges(parse_int_ranges(str(value)))


def _scalar(value):
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    text = str(value)
    if _YAML_PLAIN.match(text) and text not in _YAML_RESERVED:
        return text
    return '"%s"' % text.replace("\\", "\\\\").replace('"', '\\"')


def render_host_vars(host, proposal, source=None):
    """YAML text of a proposal, with a header saying where it came from and the notes as comments."""
    lines = ["---",
             "# Proposed by hpc.slurm_gres.discover_gpus for %s%s." % (
                 host, " (%s)" % source if source else ""),
             "# Review before committing: these are the facts the node reported, not a checked configuration."]
    for note in proposal.get("notes") or []:
        lines.append("# NOTE: %s" % note)
    values = proposal["vars"]
    for key in ("hpc_gres_node_sockets", "hpc_gres_node_cores_per_socket", "hpc_gres_node_threads_per_core",
                "hpc_gres_node_real_memory"):
        if key in values:
            lines.append("%s: %s" % (key, _scalar(values[key])))
    gpus = values.get("hpc_gres_gpus") or []
    if not gpus:
        lines.append("hpc_gres_gpus: []")
    else:
        lines.append("hpc_gres_gpus:")
        for gpu in gpus:
            first = True
            for key in ("index", "type", "cores", "minor", "links"):
                if key not in gpu:
                    continue
                lines.append("%s%s: %s" % ("  - " if first else "    ", key, _scalar(gpu[key])))
                first = False
    return "\n".join(lines) + "\n"
