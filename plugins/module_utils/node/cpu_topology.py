"""A node's CPU topology as Slurm sees it: its core numbering (``Cores=``), its shape, what ``slurmd -C`` prints.

Slurm's ``Cores=`` indices are hwloc's *logical* core indices (``Core L#`` in ``lstopo``) of the topology
slurmd loads (``src/slurmd/common/xcpuinfo.c``): whole system (cgroup-disallowed cpus included), L1/L2/L4/L5
caches and Misc dropped, L3 caches, Dies and Groups kept. hwloc numbers cores depth-first over that tree
(every object's children by their lowest cpu), so the OS numbering does not decide, and neither do the
``core_id``/``physical_package_id`` labels: on a Xeon in SNC2 with cpus interleaved across the two NUMA nodes
of a package, NUMA node 0's cores are ``0-9``, not every other core.

Where the topology comes from (``source``), in the order ``auto`` tries them:

- ``libhwloc``: slurmd's own hwloc library, asked with slurmd's settings (hwloc_query.py);
- ``lstopo``: hwloc's command line tool, same settings;
- ``sysfs``: sysfs read the way hwloc's Linux backend reads it (sysfs_topology.py), when hwloc is absent.

slurmd then builds its CPU map (``xcpuinfo_hwloc_topo_get``): sockets are the Packages that hold cores,
``CoresPerSocket = cores // sockets``, ``ThreadsPerCore = cpus // cores`` (integer divisions), and abstract
cpu ``core * ThreadsPerCore + t`` maps to the t-th PU of the core-th core; a PU whose OS index is not below the
number of cpus is left unmapped. The shape problems below are the cases where that description is not the
node (uneven packages, hybrid cores, offline or disallowed cpus, no packages, sparse cpu ids).
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpusets, hwloc_query, hwloc_tree
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import sysfs_topology

SOURCES = ("auto", "libhwloc", "lstopo", "sysfs")


class CpuTopology(object):
    """Slurm's view of one hwloc tree. ``source``/``detail`` say where the tree came from."""

    def __init__(self, tree, source, detail="", notes=()):
        self.tree = tree
        self.source = source
        self.detail = detail
        self.notes = list(notes)
        self.pu_mask = tree.pus()
        self.complete = (tree.complete or 0) | self.pu_mask
        self.allowed = tree.allowed
        self.numa_nodes = {k: cpusets.bits(v & self.pu_mask) for k, v in sorted(tree.numa_nodes.items())}
        self.packages = tree.objects("Package")
        self.cores = [cpusets.bits(c.cpuset) for c in tree.objects("Core")]
        self.core_of = {}
        for index, pus in enumerate(self.cores):
            for cpu in pus:
                self.core_of[cpu] = index
        self._slurm_map()

    # --- slurmd's computation (xcpuinfo_hwloc_topo_get) -----------------------------------------------------
    def _slurm_map(self):
        tree = self.tree
        cpus = cpusets.weight(self.pu_mask)
        core_objs = tree.objects("Core")
        packages = self.packages
        per_package = [len(tree.inside(p.cpuset, "Core")) for p in packages]
        used = [p for p, n in zip(packages, per_package) if n]
        sockets = len(used)
        cores_per_used = [n for n in per_package if n]
        if sockets == 0:
            sockets = max(len(packages), 1)
            cores_per_used = []
        cores = len(core_objs) or 1
        threads = cpus // cores
        first = tree.root.children[0] if tree.root.children else None
        boards = 1
        if first is not None and first.type == "Group":
            boards = max(len(tree.levels[first.depth]) if first.depth is not None else 1, 1)
        block = {}
        core_index = -1
        for socket, count in zip(used, cores_per_used):
            inside = tree.inside(socket.cpuset, "Core")
            for idx in range(count):
                core_index += 1
                pus = tree.inside(inside[idx].cpuset, "PU") if idx < len(inside) else []
                for t in range(threads):
                    if t >= len(pus):
                        continue
                    macid = pus[t].os_index
                    absid = core_index * threads + t
                    if macid >= cpus or absid >= cpus:
                        continue
                    block[absid] = macid
        self.cpus = cpus
        self.boards = boards
        self.sockets = sockets
        self.cores_per_socket = cores // sockets
        self.threads_per_core = threads
        self.cores_per_package = per_package
        self.block_map = block
        self.slurm_core_of = {mac: absid // threads for absid, mac in block.items()} if threads else {}

    def slurmd_c(self):
        """The hardware part of ``slurmd -C``'s line."""
        return "CPUs=%d Boards=%d SocketsPerBoard=%d CoresPerSocket=%d ThreadsPerCore=%d" % (
            self.cpus, self.boards, self.sockets // self.boards, self.cores_per_socket, self.threads_per_core)

    def shape_problems(self):
        """Why ``Sockets x CoresPerSocket x ThreadsPerCore`` does not describe this node (empty when it does)."""
        problems = []
        threads = sorted({len(c) for c in self.cores})
        if not self.packages:
            problems.append("hwloc sees no Package: slurmd counts 1 socket and maps cpus in OS order, not by core")
        elif len(set(n for n in self.cores_per_package if n)) > 1:
            problems.append("packages have different core counts (%s): slurmd -C reports CoresPerSocket=%d, "
                            "the integer average" % (", ".join(str(n) for n in self.cores_per_package if n),
                                                     self.cores_per_socket))
        if len(threads) > 1:
            problems.append("cores have different thread counts (%s; hybrid CPU or SMT partly off): slurmd -C "
                            "reports ThreadsPerCore=%d" % (" or ".join(str(t) for t in threads),
                                                           self.threads_per_core))
        offline = self.complete & ~self.pu_mask
        if offline:
            problems.append("%s offline: slurmd counts only the %d online cpus, and the shape changes when "
                            "they come back" % (_cpus_are(offline), self.cpus))
        if self.allowed is not None and self.pu_mask & ~self.allowed:
            problems.append("%s outside this node's cgroup cpuset: slurmd counts them (whole system) but jobs "
                            "cannot run there" % _cpus_are(self.pu_mask & ~self.allowed))
        mismatched = self.slurm_map_mismatch()
        if mismatched:
            problems.append("slurmd's CPU map does not follow the cores for %s (cpu ids not below the cpu "
                            "count %d, or cores outside packages): their Cores= binding is unreliable"
                            % (_cpus(cpusets.mask_of(mismatched)), self.cpus))
        pcores = self.without_ecores()
        if pcores is not None:
            problems.append("E-cores on %s (not in hwloc's IntelCore kind): Slurm 23.02 and later drop them unless "
                            "SlurmdParameters=allow_ecores; slurmd -C then prints %s and Cores= can only name the "
                            "%d P-cores (these facts number all cores, as with allow_ecores)"
                            % (_cpus(self.pu_mask & ~pcores.pu_mask), pcores.slurmd_c(), len(pcores.cores)))
        return problems

    def without_ecores(self):
        """The topology Slurm 23.02+ uses without ``SlurmdParameters=allow_ecores``, or None when that is this one.

        xcpuinfo.c's ``_remove_ecores`` (Slurm 24.11 and later) restricts hwloc's topology to the CPU kinds whose
        CoreType is IntelCore (the P-cores of an Intel hybrid CPU) and the kinds with the same FrequencyMaxMHz
        (P-cores that hwloc before 2.10 leaves unlabelled when a cpuset hides them); without an IntelCore kind
        nothing is removed. Slurm 23.02 to 24.05 keep only the first IntelCore kind.
        """
        pcores = 0
        frequencies = set()
        for cpuset, info in self.tree.cpukinds:
            if (info.get("CoreType") or "").lower() == "intelcore":
                pcores |= cpuset
                frequencies.add((info.get("FrequencyMaxMHz") or "").lower())
        frequencies.discard("")
        for cpuset, info in self.tree.cpukinds:
            if (info.get("FrequencyMaxMHz") or "").lower() in frequencies:
                pcores |= cpuset
        pcores &= self.pu_mask
        if not pcores or pcores == self.pu_mask:
            return None
        return CpuTopology(self.tree.restricted(pcores), self.source, self.detail, self.notes)

    def slurm_map_mismatch(self):
        """OS cpus whose slurmd abstract core is not their hwloc logical core (sorted)."""
        wrong = []
        for cpu in cpusets.bits(self.pu_mask):
            core = self.core_of.get(cpu)
            if core is None:
                continue
            if core * self.threads_per_core + self.cores[core].index(cpu) >= self.cpus:
                wrong.append(cpu)
                continue
            if len(self.cores[core]) > self.threads_per_core and self.cores[core].index(cpu) >= self.threads_per_core:
                continue  # a thread slurmd does not map at all (uneven threads): reported as such above
            if self.slurm_core_of.get(cpu) != core:
                wrong.append(cpu)
        return wrong

    # --- conversions --------------------------------------------------------------------------------------
    def slurm_cores(self, os_cpus, strict=True):
        """Slurm core range (``"0-31"``) for OS cpus: the cores they intersect (``hwloc-calc --intersect core``).

        ``strict``: ValueError naming cpus that are not PUs of this node; otherwise those are ignored.
        """
        if isinstance(os_cpus, str):
            os_cpus = parse_int_ranges(os_cpus) if os_cpus.strip() else []
        unknown = sorted(set(os_cpus) - set(self.core_of))
        if unknown and strict:
            raise ValueError("cpus %s are not online cpus with a topology on this node (online: %s)"
                             % (format_int_ranges(unknown), format_int_ranges(self.core_of)))
        return format_int_ranges(self.core_of[c] for c in os_cpus if c in self.core_of)

    def package_of_core(self):
        """``{core index: socket index}`` (Slurm's sockets: packages that hold cores, in logical order)."""
        result = {}
        socket = 0
        for package in self.packages:
            inside = self.tree.inside(package.cpuset, "Core")
            if not inside:
                continue
            for core in inside:
                result[self.core_of[cpusets.first(core.cpuset)]] = socket
            socket += 1
        return result

    def facts(self):
        """The ``cpu`` part of ``hpc_gres_hw`` (the first three keys are the long-standing ones)."""
        problems = self.shape_problems()
        pcores = self.without_ecores()
        offline = self.complete & ~self.pu_mask
        disallowed = self.pu_mask & ~self.allowed if self.allowed is not None else 0
        return {
            "sockets": self.sockets,
            "cores_per_socket": self.cores_per_socket,
            "threads_per_core": self.threads_per_core,
            "boards": self.boards,
            "cpus": self.cpus,
            "cores": len(self.cores),
            "cores_per_package": [n for n in self.cores_per_package if n],
            "threads_per_core_seen": sorted({len(c) for c in self.cores}),
            "offline_cpus": cpusets.to_cpulist(offline),
            "disallowed_cpus": cpusets.to_cpulist(disallowed),
            "numa_nodes": {str(k): format_int_ranges(v) for k, v in self.numa_nodes.items() if v},
            "slurmd_c": self.slurmd_c(),
            "slurmd_c_without_ecores": pcores.slurmd_c() if pcores is not None else None,
            "shape_fits": not problems,
            "shape_problems": problems,
            "source": self.source,
            "source_detail": self.detail,
            "source_notes": list(self.notes),
        }


def _cpus(mask):
    return "%s %s" % ("cpu" if cpusets.weight(mask) == 1 else "cpus", cpusets.to_cpulist(mask))


def _cpus_are(mask):
    return "%s %s" % (_cpus(mask), "is" if cpusets.weight(mask) == 1 else "are")


def from_hwloc_xml(text, source="hwloc-xml", detail="", notes=()):
    """CpuTopology of an hwloc XML (lstopo --of xml / hwloc_topology_export_xmlbuffer output)."""
    return CpuTopology(hwloc_tree.from_xml(text), source, detail, notes)


def from_sysfs(sysfs_root="/", notes=()):
    tree = sysfs_topology.read_tree(sysfs_root)
    return CpuTopology(tree, "sysfs", "%s/sys/devices/system/cpu" % (sysfs_root.rstrip("/") or ""), notes)


def read_cpu_topology(sysfs_root="/", source="auto", run=None, which=None):
    """The node's CpuTopology from the first source that works (see the module docstring).

    ``run(argv) -> (rc, out, err)`` and ``which(name) -> path or None`` are needed for the hwloc sources;
    without them only sysfs is read. Raises ValueError when nothing could be read (the message lists why).
    """
    if source not in SOURCES:
        raise ValueError("topology source must be one of %s, not %r" % (", ".join(SOURCES), source))
    notes = []
    wanted = ("libhwloc", "lstopo", "sysfs") if source == "auto" else (source,)
    for name in wanted:
        try:
            if name == "sysfs":
                return from_sysfs(sysfs_root, notes)
            if run is None:
                raise hwloc_query.HwlocUnavailable("%s: no command runner given" % name)
            if name == "libhwloc":
                text, detail = hwloc_query.query_libhwloc(run, sysfs_root)
            else:
                if which is None:
                    raise hwloc_query.HwlocUnavailable("lstopo: no PATH lookup given")
                text, detail = hwloc_query.query_lstopo(run, which, sysfs_root)
            return from_hwloc_xml(text, name, detail, notes)
        except (hwloc_query.HwlocUnavailable, ValueError) as exc:
            notes.append(str(exc))
    raise ValueError("; ".join(notes))
