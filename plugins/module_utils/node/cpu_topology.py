"""CPU topology from sysfs, and OS cpu ids -> the core indices Slurm uses in ``Cores=``.

Slurm numbers cores in gres.conf ``Cores=`` by hwloc's *logical* core index (``Core L#`` in ``lstopo``),
and translates them to OS cpus itself (``xcpuinfo_abs_to_mac``). The OS numbering can be anything:
``0-31,64-95`` is socket 0 on a 2x32x2 Linux box (siblings at +64), even cpus are socket 0 on some
older BIOSes. So a GPU's CPU affinity (OS ids from ``nvidia-smi topo -m``) must be mapped through the
node's real topology.

The rule used here is hwloc's, checked against hwloc 2.9 itself (``HWLOC_FSROOT`` on a fake tree, see
tests/unit/plugins/module_utils/node/test_cpu_topology.py):

- a *core* is the set of online cpus with the same ``(physical_package_id, die_id, core_id)``
  (``die_id`` only where the kernel exposes it);
- hwloc orders sibling objects by their cpusets, that is by the lowest OS cpu they contain, so
  packages come in the order of their lowest cpu (usually, but not necessarily, package id order), and
  cores within a package in the order of their lowest cpu, **not** by ``core_id``: a core with
  ``core_id`` 3 that holds cpu 0 is ``Core L#0``;
- logical index = position in that order, one index per core whatever its thread count.

Only sysfs is read (``<root>/sys/devices/system/cpu/online`` and ``cpuN/topology/*``); cpus that are
offline or have no topology directory are left out, like hwloc leaves them out of the allowed set.
Caches and NUMA nodes between package and core are not read: hwloc's depth-first order equals the
order above unless a cache or NUMA node groups cores whose cpu ids interleave *inside* one package.
"""
import glob
import os
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges


def _read(path):
    try:
        with open(path) as handle:
            return handle.read().strip()
    except (IOError, OSError):
        return None


def read_cpu_topology(sysfs_root="/"):
    """Read the cpu topology under ``sysfs_root``.

    Returns ``{"cpus": {os_cpu: (package_id, core_key)}, "online": [...], "skipped": [...],
    "numa_nodes": {node: [cpus]}}`` where ``core_key`` is the sysfs ``core_id`` (or ``(die_id, core_id)``
    when dies are exposed with more than one die per package). ``skipped``: cpus listed online whose
    topology could not be read. Raises ValueError when no cpu topology is found at all.
    """
    base = os.path.join(sysfs_root, "sys", "devices", "system", "cpu")
    present = sorted(int(m.group(1)) for m in (re.match(r".*/cpu(\d+)$", p) for p in glob.glob(base + "/cpu[0-9]*"))
                     if m)
    online_text = _read(os.path.join(base, "online"))
    if online_text:
        online = set(parse_int_ranges(online_text))
    else:
        online = set(present)
    raw = {}
    skipped = []
    for cpu in present:
        if cpu not in online:
            continue
        topo = os.path.join(base, "cpu%d" % cpu, "topology")
        package = _read(os.path.join(topo, "physical_package_id"))
        core = _read(os.path.join(topo, "core_id"))
        if package is None or core is None or not re.match(r"^-?\d+$", package) or not re.match(r"^-?\d+$", core):
            skipped.append(cpu)
            continue
        die = _read(os.path.join(topo, "die_id"))
        raw[cpu] = (int(package), int(die) if die and re.match(r"^-?\d+$", die) else 0, int(core))
    if not raw:
        raise ValueError("no cpu topology under %s (expected cpuN/topology/physical_package_id and core_id)" % base)
    multi_die = any(len({d for (p2, d, _c) in raw.values() if p2 == p}) > 1 for (p, _d, _c) in raw.values())
    cpus = {}
    for cpu, (package, die, core) in raw.items():
        cpus[cpu] = (package, (die, core) if multi_die else core)
    return {"cpus": cpus, "online": sorted(raw), "skipped": skipped, "numa_nodes": read_numa_nodes(sysfs_root)}


def read_numa_nodes(sysfs_root="/"):
    """``{node: [cpus]}`` from ``<root>/sys/devices/system/node/nodeN/cpulist`` (empty when absent)."""
    nodes = {}
    for path in glob.glob(os.path.join(sysfs_root, "sys", "devices", "system", "node", "node[0-9]*", "cpulist")):
        m = re.match(r".*/node(\d+)/cpulist$", path)
        text = _read(path)
        if m is None or text is None:
            continue
        nodes[int(m.group(1))] = parse_int_ranges(text) if text else []
    return nodes


def _cpus_of(topology_or_cpus):
    if isinstance(topology_or_cpus, dict) and "cpus" in topology_or_cpus and isinstance(topology_or_cpus["cpus"], dict):
        return topology_or_cpus["cpus"]
    return topology_or_cpus


def _cores(cpus):
    """``[(package_id, core_key, [os cpus])]`` in hwloc logical order."""
    members = {}
    for cpu, (package, core) in cpus.items():
        members.setdefault((package, core), []).append(cpu)
    package_first = {}
    for (package, _core), cpu_list in members.items():
        first = min(cpu_list)
        package_first[package] = min(package_first.get(package, first), first)
    ordered = sorted(members.items(), key=lambda item: (package_first[item[0][0]], min(item[1])))
    return [(package, core, sorted(cpu_list)) for (package, core), cpu_list in ordered]


def logical_core_map(cpus):
    """``{os_cpu: slurm_core_index}`` (hwloc logical core order, see the module docstring)."""
    cpus = _cpus_of(cpus)
    mapping = {}
    for index, (_package, _core, cpu_list) in enumerate(_cores(cpus)):
        for cpu in cpu_list:
            mapping[cpu] = index
    return mapping


def socket_of_core(cpus):
    """``{slurm_core_index: socket_index}`` with sockets numbered like hwloc's ``Package L#``."""
    cpus = _cpus_of(cpus)
    result = {}
    package_rank = {}
    for index, (package, _core, _cpu_list) in enumerate(_cores(cpus)):
        package_rank.setdefault(package, len(package_rank))
        result[index] = package_rank[package]
    return result


def cpu_layout(cpus):
    """``{"sockets", "cores_per_socket", "threads_per_core"}`` as slurmd computes them from hwloc
    (cores = all cores / sockets, threads = all cpus / all cores, integer division), plus ``cpus`` (online
    cpus counted) and ``uniform`` (every socket has the same core count and every core the same thread
    count; false on hybrid CPUs, where the integer division hides the difference)."""
    cpus = _cpus_of(cpus)
    cores = _cores(cpus)
    packages = {}
    threads = set()
    for package, _core, cpu_list in cores:
        packages[package] = packages.get(package, 0) + 1
        threads.add(len(cpu_list))
    sockets = len(packages)
    total_cores = len(cores)
    return {
        "sockets": sockets,
        "cores_per_socket": total_cores // sockets if sockets else 0,
        "threads_per_core": len(cpus) // total_cores if total_cores else 0,
        "cpus": len(cpus),
        "uniform": len(set(packages.values())) <= 1 and len(threads) <= 1,
    }


def os_cpus_to_slurm_cores(os_cpus, cpus, strict=True):
    """Slurm core range string (``"0-31"``) for a list (or range string) of OS cpu ids.

    ``strict``: raise ValueError naming the cpus the topology does not know (offline, or a CPU list
    that belongs to another machine); otherwise those are ignored. Returns "" for an empty set.
    """
    if isinstance(os_cpus, str):
        os_cpus = parse_int_ranges(os_cpus)
    mapping = logical_core_map(cpus)
    unknown = sorted(set(os_cpus) - set(mapping))
    if unknown and strict:
        raise ValueError("cpus %s are not online cpus with a topology on this node (online: %s)"
                         % (format_int_ranges(unknown), format_int_ranges(mapping)))
    return format_int_ranges(mapping[c] for c in os_cpus if c in mapping)
