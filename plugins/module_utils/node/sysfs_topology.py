"""Build hwloc's CPU topology from Linux sysfs the way hwloc's Linux backend does (``hwloc/topology-linux.c``).

Used when the node has neither libhwloc nor lstopo to ask (see cpu_topology.py). Objects come from the
sibling *masks*, never from the ids, which are only labels:

- Core: ``core_cpus`` (``thread_siblings`` on kernels before 5.x), created at its first cpu. On AMD family
  15h/16h (compute units) threads whose ``core_id`` differ are separate cores.
- Cluster Group: ``cluster_cpus`` when it has more than one cpu and differs from the die and the package.
- Die: ``die_cpus`` when it has more than one cpu and differs from the package.
- Package: ``package_cpus`` (``core_siblings``), looked at only from the first cpu of a core / cluster / die.
- s390 books and drawers: ``book_siblings`` / ``drawer_siblings`` Groups.
- L3 caches: ``cache/index*/shared_cpu_map`` of level 3 (Slurm drops L1, L2, L4, L5 and i-caches).
- NUMA nodes: ``node*/cpumap``; a node whose cpus match no object gets a Group (sub-NUMA clustering);
  GPU-memory nodes (``/proc/driver/nvidia/gpus/*/numa_status``) are dropped; nodes overlapping an earlier one
  are ignored.
- Distance Groups: NUMA nodes grouped by the smallest value of ``node*/distance``, recursively, when there are
  more than two nodes and the matrix is symmetric with the smallest value on the diagonal.

Only online cpus with a ``topology`` directory are PUs; every ``cpuN`` directory is in the complete set.
The cgroup cpuset of this process (``/proc/self/cgroup`` + ``/proc/mounts``) gives the allowed cpus.
"""
import os
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpusets
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.hwloc_tree import (
    GROUP_KIND_DISTANCE,
    GROUP_KIND_LINUX_CLUSTER,
    GROUP_KIND_MEMORY,
    GROUP_KIND_S390_BOOK,
    Obj,
    Tree,
)

CPU_DIR = "sys/devices/system/cpu"
NODE_DIR = "sys/devices/system/node"


class SysfsReader(object):
    """Reads files under a root directory (``/`` on a node, an extracted dump in tests)."""

    def __init__(self, root="/"):
        self.root = root or "/"

    def path(self, rel):
        return os.path.join(self.root, rel.lstrip("/"))

    def text(self, rel):
        try:
            with open(self.path(rel)) as handle:
                return handle.read().split("\0", 1)[0]  # hwloc reads C strings: a NUL ends the value
        except (IOError, OSError, UnicodeDecodeError):
            return None

    def mask(self, rel):
        text = self.text(rel)
        if text is None:
            return None
        try:
            return cpusets.parse_kernel_mask(text)
        except ValueError:
            return None

    def cpulist(self, rel):
        text = self.text(rel)
        if text is None:
            return None
        try:
            return cpusets.parse_cpulist(text)
        except ValueError:
            return None

    def integer(self, rel):
        text = self.text(rel)
        if text is None:
            return None
        match = re.match(r"^\s*(-?\d+)", text)
        return int(match.group(1)) if match else None

    def listdir(self, rel):
        try:
            return os.listdir(self.path(rel))
        except (IOError, OSError):
            return []

    def exists(self, rel):
        return os.path.exists(self.path(rel))


def read_tree(root="/"):
    """The finished hwloc_tree.Tree for the sysfs under ``root``; ValueError when there is no cpu topology."""
    fs = SysfsReader(root)
    cpu_dirs = sorted(int(m.group(1)) for m in (re.match(r"^cpu(\d+)$", n) for n in fs.listdir(CPU_DIR)) if m)
    if not cpu_dirs:
        raise ValueError("no cpu directories under %s" % fs.path(CPU_DIR))
    old_names = _sibling_file_names(fs, cpu_dirs)
    if old_names is None:
        raise ValueError("no cpu topology under %s (expected cpuN/topology/core_cpus or thread_siblings)"
                         % fs.path(CPU_DIR))
    core_file, package_file = ("thread_siblings", "core_siblings") if old_names else ("core_cpus", "package_cpus")
    online = fs.cpulist(CPU_DIR + "/online")
    present = 0
    complete = 0
    for cpu in cpu_dirs:
        complete |= 1 << cpu
        if online is not None:
            if not online >> cpu & 1:
                continue
        else:
            flag = fs.integer("%s/cpu%d/online" % (CPU_DIR, cpu))
            if flag == 0:
                continue
        if not fs.exists("%s/cpu%d/topology" % (CPU_DIR, cpu)):
            continue
        present |= 1 << cpu
    if not present:
        raise ValueError("no online cpu with a topology directory under %s" % fs.path(CPU_DIR))

    arch = _architecture(fs)
    cpuinfo = _cpuinfo(fs)
    tree = Tree(complete)
    tree.infos["Architecture"] = arch
    amd_with_cu = cpuinfo.get("vendor_id") == "AuthenticAMD" and cpuinfo.get("cpu family") in ("21", "22")
    _look_cpus(fs, tree, present, core_file, package_file, arch, amd_with_cu)
    _look_nodes(fs, tree)
    tree.allowed = _allowed_cpus(fs)
    tree.cpukinds = _cpu_kinds(fs, present)
    return tree.finish(pus=present)


def _sibling_file_names(fs, cpu_dirs):
    """False for the current names (core_cpus, package_cpus), True for the old ones, None when neither."""
    candidates = [cpu_dirs[0]]
    online = fs.cpulist(CPU_DIR + "/online")
    if online:
        candidates.append(cpusets.first(online))
    for cpu in candidates:
        base = "%s/cpu%d/topology/" % (CPU_DIR, cpu)
        if fs.exists(base + "package_cpus") or fs.exists(base + "core_cpus"):
            return False
        if fs.exists(base + "core_siblings") or fs.exists(base + "thread_siblings"):
            return True
    return None


def _architecture(fs):
    """``uname -m`` of the dumped machine (/proc/hwloc-nofile-info in hwloc dumps), else of this one."""
    text = fs.text("proc/hwloc-nofile-info") or ""
    match = re.search(r"^Architecture: (\S+)", text, re.M)
    if match:
        return match.group(1)
    if fs.root in ("/", ""):
        return os.uname()[4]
    return ""


def _cpuinfo(fs):
    """First processor block of /proc/cpuinfo: {key: value}."""
    out = {}
    for line in (fs.text("proc/cpuinfo") or "").splitlines():
        if not line.strip():
            if out:
                break
            continue
        key, sep, value = line.partition(":")
        if sep:
            out.setdefault(key.strip(), value.strip())
    return out


def _look_cpus(fs, tree, present, core_file, package_file, arch, amd_with_cu):
    thread_with_core_id = None if amd_with_cu else False
    for cpu in cpusets.bits(present):
        topo = "%s/cpu%d/topology/" % (CPU_DIR, cpu)
        not_first_of_core = not_first_of_cluster = not_first_of_die = False
        coreset = fs.mask(topo + core_file)
        if coreset is not None:
            coreset &= present
            core_id = None
            if cpusets.weight(coreset) > 1 and thread_with_core_id is None:
                core_id = fs.integer(topo + "core_id")
                sibling = next(c for c in cpusets.bits(coreset) if c != cpu)
                thread_with_core_id = fs.integer("%s/cpu%d/topology/core_id" % (CPU_DIR, sibling)) != core_id
            if cpusets.first(coreset) != cpu:
                not_first_of_core = not_first_of_cluster = not_first_of_die = True
            if not not_first_of_core or thread_with_core_id:
                if core_id is None:
                    core_id = fs.integer(topo + "core_id")
                tree.insert(Obj("Core", (1 << cpu) if thread_with_core_id else coreset, core_id))
        clusterset = dieset = None
        if not not_first_of_core:
            clusterset = fs.mask(topo + "cluster_cpus")
            if clusterset is not None:
                clusterset &= present
                if cpusets.weight(clusterset) == 1:
                    clusterset = None
                elif cpusets.first(clusterset) != cpu:
                    clusterset = None
                    not_first_of_cluster = not_first_of_die = True
        if not not_first_of_cluster:
            dieset = fs.mask(topo + "die_cpus")
            if dieset is not None:
                dieset &= present
                if cpusets.weight(dieset) == 1:
                    dieset = None
                elif cpusets.first(dieset) != cpu:
                    dieset = None
                    not_first_of_die = True
                if clusterset is not None and dieset is not None and clusterset == dieset:
                    clusterset = None
        if not not_first_of_die:
            packageset = fs.mask(topo + package_file)
            if packageset is not None:
                packageset &= present
                if clusterset is not None and packageset == clusterset:
                    clusterset = None
                if dieset is not None and packageset == dieset:
                    dieset = None
                if cpusets.first(packageset) == cpu:
                    tree.insert(Obj("Package", packageset, fs.integer(topo + "physical_package_id")))
        if clusterset is not None:
            tree.insert(Obj("Group", clusterset, fs.integer(topo + "cluster_id"), kind=GROUP_KIND_LINUX_CLUSTER,
                            subtype="Cluster"))
        if dieset is not None:
            tree.insert(Obj("Die", dieset, fs.integer(topo + "die_id")))
        if arch.startswith("s390"):
            for subkind, name, label in ((0, "book", "Book"), (1, "drawer", "Drawer")):
                groupset = fs.mask(topo + name + "_siblings")
                if groupset is None:
                    break
                groupset &= present
                group_id = fs.integer(topo + name + "_id")
                if cpusets.first(groupset) == cpu and group_id is not None:
                    tree.insert(Obj("Group", groupset, group_id, kind=GROUP_KIND_S390_BOOK, subkind=subkind,
                                    subtype=label))
        tree.insert(Obj("PU", 1 << cpu, cpu))
        _look_caches(fs, tree, cpu, present, core_file)


def _look_caches(fs, tree, cpu, present, core_file):
    base = "%s/cpu%d/cache/" % (CPU_DIR, cpu)
    for index in range(10):
        cacheset = fs.mask("%sindex%d/shared_cpu_map" % (base, index))
        if cacheset is None:
            continue
        if not cacheset:
            coreset = fs.mask("%s/cpu%d/topology/%s" % (CPU_DIR, cpu, core_file))
            if coreset is not None:
                cacheset = coreset
        cacheset &= present
        if cpusets.first(cacheset) != cpu:
            continue
        level = fs.integer("%sindex%d/level" % (base, index))
        kind = (fs.text("%sindex%d/type" % (base, index)) or "Unified").strip()
        if level == 3 and not kind.startswith("Instruction"):
            tree.insert(Obj("L3Cache", cacheset, fs.integer("%sindex%d/id" % (base, index))))


def _look_nodes(fs, tree):
    indexes = sorted(int(m.group(1)) for m in (re.match(r"^node(\d+)$", n) for n in fs.listdir(NODE_DIR)) if m)
    if not indexes:
        return
    gpu_memory_nodes = _nvidia_gpu_memory_nodes(fs)
    nodes = {}  # os index -> cpuset, for the nodes hwloc keeps
    seen = 0
    for index in indexes:
        cpuset = fs.mask("%s/node%d/cpumap" % (NODE_DIR, index))
        if cpuset is None:
            continue
        if seen & cpuset:
            continue  # overlapping an earlier node: hwloc ignores it
        seen |= cpuset
        if index in gpu_memory_nodes:
            continue
        nodes[index] = cpuset
    tree.numa_nodes = dict(nodes)  # as the kernel lists them; the Groups below use hwloc's fixed-up locality
    distances = _node_distances(fs, indexes) if len(indexes) > 1 else None
    with_cpus = [i for i in indexes if i in nodes and nodes[i]]
    cpuless = [i for i in indexes if i in nodes and not nodes[i]]
    for index in with_cpus:
        _add_initiators(fs, nodes, index)
    for index in cpuless:
        if _add_initiators(fs, nodes, index) and nodes[index]:
            continue
        if distances is not None:
            _fixup_cpuless_from_distances(nodes, indexes, distances, index)
    for index in with_cpus + cpuless:
        _attach_memory(tree, nodes[index])
    if distances is None:
        return
    members = [i for i in indexes if i in nodes]
    if len(members) < 2:
        return
    matrix = [[distances[a][b] for b in members] for a in members]
    _group_by_distances(tree, [nodes[i] for i in members], matrix, needcheck=True, subkind=0)


def _add_initiators(fs, nodes, index):
    """HMAT initiators (access1, else access0): their cpus join the node's. False without that directory."""
    for access in ("access1", "access0"):
        rel = "%s/node%d/%s/initiators" % (NODE_DIR, index, access)
        if fs.exists(rel):
            for name in fs.listdir(rel):
                match = re.match(r"^node(\d+)$", name)
                if match and int(match.group(1)) != index and int(match.group(1)) in nodes:
                    nodes[index] |= nodes[int(match.group(1))]
            return True
    return False


def _fixup_cpuless_from_distances(nodes, indexes, distances, index):
    """A CPU-less node takes the cpus of the nodes strictly closest to it (unless all are equally far)."""
    others = [j for j in indexes if j != index and j in nodes]
    if not others:
        return
    minimum = min(distances[index][j] for j in others)
    closest = [j for j in others if distances[index][j] == minimum]
    if minimum <= distances[index][index] or len(closest) == len(indexes) - 1:
        return
    for j in closest:
        nodes[index] |= nodes[j]


def _nvidia_gpu_memory_nodes(fs):
    found = set()
    for name in fs.listdir("proc/driver/nvidia/gpus"):
        text = fs.text("proc/driver/nvidia/gpus/%s/numa_status" % name) or ""
        match = re.search(r"Node:\s*(\d+)", text)
        if match:
            found.add(int(match.group(1)))
    return found


def _attach_memory(tree, cpuset):
    """hwloc__find_insert_memory_parent: a Group for a NUMA node unless an object has exactly its cpus;
    a CPU-less node gets its own Group under the root, after every object with cpus."""
    if not cpuset:
        group = Obj("Group", 0, None, kind=GROUP_KIND_MEMORY)
        group.memory = True
        group.parent = tree.root
        tree.root.children.append(group)
        return
    parent = tree.find_covering(cpuset)
    if parent.type == "PU":
        parent = parent.parent or tree.root
    if parent is not tree.root and parent.cpuset == cpuset:
        parent.memory = True
        return
    group = Obj("Group", cpuset, None, kind=GROUP_KIND_MEMORY)
    attached = tree.insert(group, under=parent)
    (attached or parent).memory = True


def _node_distances(fs, indexes):
    rows = {}
    for index in indexes:
        text = fs.text("%s/node%d/distance" % (NODE_DIR, index))
        if text is None:
            return None
        values = [int(v) for v in text.split()]
        if len(values) != len(indexes):
            return None
        rows[index] = dict(zip(indexes, values))
    return rows


def _group_by_distances(tree, cpusets_, matrix, needcheck, subkind):
    """hwloc__groups_by_distances with accuracy 0: transitive groups of minimal distance, recursively."""
    count = len(cpusets_)
    if count <= 2:
        return
    if needcheck:
        for i in range(count):
            for j in range(i + 1, count):
                if matrix[i][j] != matrix[j][i] or matrix[i][j] <= matrix[i][i]:
                    return
    others = [matrix[i][j] for i in range(count) for j in range(count) if i != j]
    if not others:
        return
    minimum = min(others)
    group_of = [0] * count
    next_group = 1
    skipped = 0
    for i in range(count):
        if group_of[i]:
            continue
        group_of[i] = next_group
        size = 1
        first_found = i
        while first_found is not None:
            new_first = None
            for j in range(first_found, count):
                if group_of[j] != next_group:
                    continue
                for k in range(count):
                    if not group_of[k] and matrix[j][k] == minimum:
                        group_of[k] = next_group
                        size += 1
                        if new_first is None:
                            new_first = k
            first_found = new_first
        if size == 1:
            group_of[i] = 0
            skipped += 1
            continue
        next_group += 1
    groups = next_group - 1
    if groups == 0 or (groups == 1 and not skipped):
        return
    members = [[i for i in range(count) if group_of[i] == g] for g in range(1, groups + 1)]
    failed = False
    group_sets = []
    for member in members:
        groupset = 0
        for i in member:
            groupset |= cpusets_[i]
        group_sets.append(groupset)
        if groupset and tree.insert(Obj("Group", groupset, None, kind=GROUP_KIND_DISTANCE, subkind=subkind)) is None:
            failed = True
    if failed:
        return
    averaged = [[sum(matrix[i][j] for i in a for j in b) // (len(a) * len(b)) for b in members] for a in members]
    _group_by_distances(tree, group_sets, averaged, needcheck=False, subkind=subkind + 1)


def _allowed_cpus(fs):
    """The cpus this process's cgroup cpuset allows, or None when there is no cpuset restriction to read."""
    name = (fs.text("proc/self/cpuset") or "").strip() or None
    if name is None:
        for line in (fs.text("proc/self/cgroup") or "").splitlines():
            _hier, sep, rest = line.partition(":")
            if not sep:
                continue
            controllers, sep, path = rest.partition(":")
            if controllers == "cpuset" or (controllers == "" and sep):
                name = path.strip()
                break
    if name is None:
        return None
    mount = _cpuset_mount(fs)
    if mount is None:
        return None
    kind, directory = mount
    filename = {"cgroup2": "cpuset.cpus.effective", "cgroup1": "cpuset.cpus", "cpuset": "cpus"}[kind]
    return fs.cpulist("%s%s/%s" % (directory, name if name != "/" else "", filename))


def _cpuset_mount(fs):
    for line in (fs.text("proc/mounts") or "").splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        directory, fstype, options = fields[1], fields[2], fields[3].split(",")
        if fstype == "cgroup2":
            controllers = (fs.text(directory + "/cgroup.controllers") or "").split()
            if "cpuset" in controllers:
                return "cgroup2", directory
        elif fstype == "cpuset":
            return "cpuset", directory
        elif fstype == "cgroup" and "cpuset" in options:
            return ("cpuset" if "noprefix" in options else "cgroup1"), directory
    return None


def _cpu_kinds(fs, present):
    """Intel hybrid CPUs: the cpus of the ``cpu_core`` (P-core) and ``cpu_atom`` (E-core) PMUs."""
    kinds = []
    for pmu, core_type in (("cpu_atom", "IntelAtom"), ("cpu_core", "IntelCore")):
        cpus = fs.cpulist("sys/devices/%s/cpus" % pmu)
        if cpus:
            kinds.append((cpus & present, {"CoreType": core_type}))
    return kinds
