"""Build a fake ``<root>/sys`` and ``<root>/proc`` tree for a CPU layout and a set of GPUs (test helper).

What it writes, in the kernel's formats:

- ``sys/devices/system/cpu/{online,possible,present,offline}`` and, for every online cpu,
  ``cpuN/topology/{physical_package_id,die_id,core_id,core_cpus,core_cpus_list,thread_siblings,
  thread_siblings_list,package_cpus,package_cpus_list,core_siblings,core_siblings_list}``
  (hex masks as comma-separated 32-bit words, lists as range strings), plus ``sys/bus/cpu/devices``
  links and ``sys/devices/system/node/nodeN/cpulist`` (one NUMA node per socket). That is enough for
  hwloc itself (``HWLOC_FSROOT=<root>``) to load the tree, which the tests use as an oracle.
- ``proc/driver/nvidia-caps/mig-minors``: the full table the driver writes (``config 1``, ``monitor 2``,
  then ``gpuG/giI/access`` and ``gpuG/giI/ciC/access`` for 32 GPUs x 15 GIs x 8 CIs, numbered in order).
- ``proc/driver/nvidia/gpus/<domain:bus:dev.fn>/information`` with ``Device Minor:`` for each GPU.

CPU numbering schemes (``numbering``):

- ``"linear"``: what Linux gives on most Intel and AMD servers: socket ``s`` holds cpus
  ``s*C .. s*C+C-1`` and the hyperthread siblings follow at ``+S*C`` (``0-31,64-95`` on a 2x32x2 node).
- ``"interleaved"``: sockets alternate by cpu id (socket = cpu mod S; socket 0 = even cpus on two
  sockets), siblings again at ``+S*C``. Seen on older BIOSes (Xeon X5650 ``lscpu -p`` fixture, Princeton
  adroit ``numactl -H``).
- ``"adjacent"``: a core's threads are consecutive (``cpu = (s*C + c)*T + t``), as on POWER and on some
  hypervisors (the A800 VM of the query fixtures numbers its hyperthreads this way).

``expected_slurm_cores(layout, os_cpus)`` is the independent answer the tests compare against: it is
derived from the numbering formula, not from reading the tree back.
"""
import os

from collections import namedtuple

CpuLayout = namedtuple("CpuLayout", "sockets cores_per_socket threads_per_core numbering core_ids offline")

MIG_MAX_GPUS = 32
MIG_MAX_GIS = 15
MIG_MAX_CIS = 8


def layout(sockets, cores_per_socket, threads_per_core=1, numbering="linear", core_ids=None, offline=()):
    """Describe a CPU layout. ``core_ids``: the sysfs core_id of each core slot within a socket
    (default ``0..C-1``; real Xeons have gaps such as ``0,1,2,8,9,10``). ``offline``: OS cpu ids that
    are offline (they get no topology directory, like on a real kernel)."""
    if numbering not in ("linear", "interleaved", "adjacent"):
        raise ValueError("numbering must be 'linear', 'interleaved' or 'adjacent', not %r" % (numbering,))
    if core_ids is None:
        core_ids = list(range(cores_per_socket))
    if len(core_ids) != cores_per_socket:
        raise ValueError("core_ids needs %d entries" % cores_per_socket)
    return CpuLayout(sockets, cores_per_socket, threads_per_core, numbering, list(core_ids),
                     frozenset(offline))


def os_cpu_id(lay, socket, core, thread):
    """The OS cpu id of (socket, core slot, thread) under the layout's numbering scheme."""
    per_thread = lay.sockets * lay.cores_per_socket
    if lay.numbering == "adjacent":
        return (socket * lay.cores_per_socket + core) * lay.threads_per_core + thread
    if lay.numbering == "linear":
        return thread * per_thread + socket * lay.cores_per_socket + core
    return thread * per_thread + core * lay.sockets + socket


def cpu_table(lay):
    """``{os_cpu: (socket, core_slot, thread)}`` for every cpu of the layout (offline ones included)."""
    table = {}
    for s in range(lay.sockets):
        for c in range(lay.cores_per_socket):
            for t in range(lay.threads_per_core):
                table[os_cpu_id(lay, s, c, t)] = (s, c, t)
    return table


def socket_cpus(lay, socket, online_only=True):
    """Sorted OS cpus of one socket (what nvidia-smi topo -m shows as a GPU's CPU Affinity)."""
    return sorted(cpu for cpu, (s, _c, _t) in cpu_table(lay).items()
                  if s == socket and not (online_only and cpu in lay.offline))


def expected_slurm_cores(lay, os_cpus):
    """Slurm (hwloc logical) core indices for a set of OS cpus, from the layout definition alone.

    All numbering schemes keep, within a socket, the lowest cpu of core slot ``c`` below the lowest cpu
    of slot ``c+1``, so hwloc's logical order is socket-major then slot order: index ``s*C + c``.
    """
    table = cpu_table(lay)
    return sorted({table[cpu][0] * lay.cores_per_socket + table[cpu][1] for cpu in os_cpus})


def _mask(cpus, nr_cpus):
    words = max(1, (nr_cpus + 31) // 32)
    value = 0
    for cpu in cpus:
        value |= 1 << cpu
    parts = ["%08x" % ((value >> (32 * w)) & 0xFFFFFFFF) for w in reversed(range(words))]
    return ",".join(parts)


def _ranges(values):
    values = sorted(values)
    parts = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else "%d-%d" % (values[i], values[j]))
        i = j + 1
    return ",".join(parts)


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def write_cpu_topology(root, lay):
    """Write the cpu part of the tree under ``root`` for the layout; returns ``cpu_table(lay)``."""
    table = cpu_table(lay)
    nr = max(table) + 1
    online = sorted(c for c in table if c not in lay.offline)
    base = os.path.join(root, "sys", "devices", "system", "cpu")
    _write(os.path.join(base, "possible"), _ranges(table) + "\n")
    _write(os.path.join(base, "present"), _ranges(table) + "\n")
    _write(os.path.join(base, "online"), _ranges(online) + "\n")
    _write(os.path.join(base, "offline"), (_ranges(lay.offline) if lay.offline else "") + "\n")
    bus = os.path.join(root, "sys", "bus", "cpu", "devices")
    os.makedirs(bus, exist_ok=True)
    for cpu, (s, c, _t) in sorted(table.items()):
        cpu_dir = os.path.join(base, "cpu%d" % cpu)
        os.makedirs(cpu_dir, exist_ok=True)
        link = os.path.join(bus, "cpu%d" % cpu)
        if not os.path.lexists(link):
            os.symlink(os.path.relpath(cpu_dir, bus), link)
        if cpu != 0:
            _write(os.path.join(cpu_dir, "online"), "0\n" if cpu in lay.offline else "1\n")
        if cpu in lay.offline:
            continue
        siblings = [x for x, (s2, c2, _t2) in table.items() if s2 == s and c2 == c and x not in lay.offline]
        package = [x for x, (s2, _c2, _t2) in table.items() if s2 == s and x not in lay.offline]
        topo = os.path.join(cpu_dir, "topology")
        files = {
            "physical_package_id": str(s),
            "die_id": "0",
            "core_id": str(lay.core_ids[c]),
            "core_cpus": _mask(siblings, nr),
            "core_cpus_list": _ranges(siblings),
            "thread_siblings": _mask(siblings, nr),
            "thread_siblings_list": _ranges(siblings),
            "package_cpus": _mask(package, nr),
            "package_cpus_list": _ranges(package),
            "core_siblings": _mask(package, nr),
            "core_siblings_list": _ranges(package),
        }
        for name, value in files.items():
            _write(os.path.join(topo, name), value + "\n")
    nodes = os.path.join(root, "sys", "devices", "system", "node")
    _write(os.path.join(nodes, "online"), _ranges(range(lay.sockets)) + "\n")
    _write(os.path.join(nodes, "possible"), _ranges(range(lay.sockets)) + "\n")
    for s in range(lay.sockets):
        cpus = socket_cpus(lay, s)
        _write(os.path.join(nodes, "node%d" % s, "cpulist"), _ranges(cpus) + "\n")
        _write(os.path.join(nodes, "node%d" % s, "cpumap"), _mask(cpus, nr) + "\n")
    return table


def write_topology(root, cpus, nodes=None, distances=None, offline=(), allowed=None, l3=None, arch=None,
                   old_names=False, cpuinfo=None):
    """Write a cpu topology described cpu by cpu, for cases the regular layouts cannot express.

    ``cpus``: ``{cpu: {"package": key, "core": key, "die": key (optional), "cluster": key (optional),
    "package_id": label, "core_id": label (None: no core_id file), "die_id": label}}``. The grouping keys build
    the sibling masks; the ``*_id`` labels (default: the key when it is an int) are written as they are, so
    two packages may share a ``physical_package_id`` or a core_id may repeat within a package, like on real
    kernels. ``nodes``: ``{node: [cpus]}``; ``distances``: ``{node: [row]}``; ``offline``: cpus written without
    a topology directory and left out of ``online``; ``allowed``: the cpus of this process's cgroup v2 cpuset;
    ``l3``: ``{key: [cpus]}`` L3 caches; ``arch``: ``uname -m`` for ``proc/hwloc-nofile-info``;
    ``old_names``: only ``thread_siblings``/``core_siblings`` (kernels before 4.x's core_cpus/package_cpus).
    """
    everything = sorted(set(cpus) | set(offline))
    nr = max(everything) + 1
    online = [c for c in everything if c not in offline]
    base = os.path.join(root, "sys", "devices", "system", "cpu")
    _write(os.path.join(base, "possible"), _ranges(everything) + "\n")
    _write(os.path.join(base, "present"), _ranges(everything) + "\n")
    _write(os.path.join(base, "online"), _ranges(online) + "\n")

    def members(field, key):
        return [c for c, d in cpus.items() if c not in offline and d.get(field) == key]

    for cpu in everything:
        cpu_dir = os.path.join(base, "cpu%d" % cpu)
        os.makedirs(cpu_dir, exist_ok=True)
        if cpu in offline:
            _write(os.path.join(cpu_dir, "online"), "0\n")
            continue
        desc = cpus[cpu]
        topo = os.path.join(cpu_dir, "topology")
        files = {}
        core = members("core", desc["core"])
        package = members("package", desc["package"])
        if old_names:
            files.update(thread_siblings=core, core_siblings=package)
        else:
            files.update(core_cpus=core, thread_siblings=core, package_cpus=package, core_siblings=package)
        if desc.get("die") is not None:
            files["die_cpus"] = members("die", desc["die"])
        if desc.get("cluster") is not None:
            files["cluster_cpus"] = members("cluster", desc["cluster"])
        for name, value in files.items():
            _write(os.path.join(topo, name), _mask(value, nr) + "\n")
            _write(os.path.join(topo, name + "_list"), _ranges(value) + "\n")
        labels = {"physical_package_id": desc.get("package_id", desc["package"]),
                  "core_id": desc.get("core_id", desc["core"]), "die_id": desc.get("die_id", desc.get("die"))}
        for name, value in labels.items():
            if isinstance(value, int):
                _write(os.path.join(topo, name), "%d\n" % value)
    for key, members_ in sorted((l3 or {}).items()):
        for cpu in members_:
            cache = os.path.join(base, "cpu%d" % cpu, "cache", "index3")
            _write(os.path.join(cache, "level"), "3\n")
            _write(os.path.join(cache, "type"), "Unified\n")
            _write(os.path.join(cache, "shared_cpu_map"), _mask(members_, nr) + "\n")
    node_base = os.path.join(root, "sys", "devices", "system", "node")
    for node, node_cpus in sorted((nodes or {}).items()):
        _write(os.path.join(node_base, "node%d" % node, "cpumap"), _mask(node_cpus, nr) + "\n")
        _write(os.path.join(node_base, "node%d" % node, "cpulist"), _ranges(node_cpus) + "\n")
        if distances:
            _write(os.path.join(node_base, "node%d" % node, "distance"),
                   " ".join(str(v) for v in distances[node]) + "\n")
    if arch:
        _write(os.path.join(root, "proc", "hwloc-nofile-info"), "Architecture: %s\n" % arch)
    if cpuinfo:
        _write(os.path.join(root, "proc", "cpuinfo"), cpuinfo)
    if allowed is not None:
        _write(os.path.join(root, "proc", "self", "cgroup"), "0::/job\n")
        _write(os.path.join(root, "proc", "mounts"), "cgroup2 /sys/fs/cgroup cgroup2 rw 0 0\n")
        _write(os.path.join(root, "sys", "fs", "cgroup", "cgroup.controllers"), "cpuset cpu memory\n")
        _write(os.path.join(root, "sys", "fs", "cgroup", "job", "cpuset.cpus.effective"), _ranges(allowed) + "\n")
        _write(os.path.join(root, "sys", "fs", "cgroup", "job", "cpuset.mems.effective"),
               _ranges(sorted(nodes or [0])) + "\n")
    return root


def mig_minors_text():
    """The full ``/proc/driver/nvidia-caps/mig-minors`` table, as the driver lays it out."""
    lines = ["config 1", "monitor 2"]
    minor = 3
    for gpu in range(MIG_MAX_GPUS):
        for gi in range(MIG_MAX_GIS):
            lines.append("gpu%d/gi%d/access %d" % (gpu, gi, minor))
            minor += 1
            for ci in range(MIG_MAX_CIS):
                lines.append("gpu%d/gi%d/ci%d/access %d" % (gpu, gi, ci, minor))
                minor += 1
    return "\n".join(lines) + "\n"


def write_mig_minors(root):
    path = os.path.join(root, "proc", "driver", "nvidia-caps", "mig-minors")
    _write(path, mig_minors_text())
    return path


def proc_bus_id(pci_bus_id):
    """``00000000:3B:00.0`` (nvidia-smi) -> ``0000:3b:00.0`` (the /proc/driver/nvidia/gpus directory)."""
    domain, rest = pci_bus_id.split(":", 1)
    return ("%04x:%s" % (int(domain, 16), rest)).lower()


def write_gpu_information(root, gpus):
    """``gpus``: dicts with ``pci_bus_id``, ``minor`` and optionally ``name`` and ``uuid``."""
    for gpu in gpus:
        bdf = proc_bus_id(gpu["pci_bus_id"])
        text = ("Model: \t\t %s\nIRQ:   \t\t 0\nGPU UUID: \t %s\nVideo BIOS: \t ??.??.??.??.??\n"
                "Bus Type: \t PCIe\nDMA Size: \t 47 bits\nDMA Mask: \t 0x7fffffffffff\n"
                "Bus Location: \t %s\nDevice Minor: \t %d\nGPU Excluded:\t No\n"
                % (gpu.get("name", "NVIDIA GPU"), gpu.get("uuid", ""), bdf, gpu["minor"]))
        _write(os.path.join(root, "proc", "driver", "nvidia", "gpus", bdf, "information"), text)


def build(root, lay, gpus=(), mig_minors=True):
    """Write the whole tree (cpu topology, mig-minors, GPU information files) under ``root``."""
    write_cpu_topology(root, lay)
    if mig_minors:
        write_mig_minors(root)
    write_gpu_information(root, gpus)
    return root
