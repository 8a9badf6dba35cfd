"""cpu_topology: Slurm's core numbering and node shape from sysfs and from hwloc, on trees built to order.

The expected values come from the tree's definition (written out by hand in each test) and from hwloc itself:
``lstopo`` with Slurm's settings on the same tree, then ``hwloc-calc --li --intersect core`` (hwloc_oracle.py).
The module under test is never its own oracle. Real machines are in test_cpu_topology_corpus.py.
"""
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpu_topology as ct
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpusets
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import hwloc_query
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import parse_int_ranges

import fake_sysfs
import hwloc_oracle
import nvsmi_fixtures


def run(argv):
    proc = subprocess.run(argv, capture_output=True, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def layout_tree(tmp_path, *args, **kwargs):
    lay = fake_sysfs.layout(*args, **kwargs)
    fake_sysfs.build(str(tmp_path), lay, mig_minors=False)
    return lay, ct.from_sysfs(str(tmp_path))


def hwloc_cores(tmp_path, root, cpu_lists):
    """hwloc-calc's answer for each cpu list, on the tree under ``root`` loaded with Slurm's settings."""
    hwloc_oracle.require()
    view = hwloc_oracle.slurm_view_xml(str(root), "fsroot", str(tmp_path / "hwloc-view.xml"))
    masks = [cpusets.to_hwloc_bitmap(cpusets.mask_of(c)) for c in cpu_lists]
    return [cpusets.to_cpulist(cpusets.mask_of(cores)) for cores in hwloc_oracle.intersect_cores(view, masks)], view


def assert_like_hwloc(tmp_path, root, cpu_lists):
    """Every source (sysfs, the lstopo export, libhwloc) gives hwloc-calc's cores; returns them."""
    expected, view = hwloc_cores(tmp_path, root, cpu_lists)
    sources = {"sysfs": ct.from_sysfs(str(root))}
    with open(view) as handle:
        sources["hwloc-xml"] = ct.from_hwloc_xml(handle.read())
    sources["lstopo"] = ct.read_cpu_topology(str(root), source="lstopo", run=run, which=shutil.which)
    sources["libhwloc"] = ct.read_cpu_topology(str(root), source="libhwloc", run=run, which=shutil.which)
    for name, topo in sources.items():
        assert [topo.slurm_cores(c, strict=False) for c in cpu_lists] == expected, name
    counts = hwloc_oracle.counts(view)
    for name, topo in sources.items():
        found = (len(topo.packages), len(topo.cores), topo.cpus)
        assert found == (counts["package"], counts["core"], counts["pu"]), name
    return expected


# --- regular layouts: the numbering formula of fake_sysfs and hwloc agree with the module ---------------------

@pytest.mark.parametrize("shape", [(2, 32, 2, "linear"), (2, 8, 2, "interleaved"), (2, 8, 2, "adjacent"),
                                   (4, 6, 2, "linear"), (8, 4, 1, "interleaved"), (1, 16, 1, "linear")],
                         ids=lambda s: "%dx%dx%d-%s" % s)
def test_regular_layouts(tmp_path, shape):
    lay, topo = layout_tree(tmp_path, *shape)
    sockets = [fake_sysfs.socket_cpus(lay, s) for s in range(lay.sockets)]
    assert [topo.slurm_cores(c) for c in sockets] == [
        "%d-%d" % (s * lay.cores_per_socket, (s + 1) * lay.cores_per_socket - 1) if lay.cores_per_socket > 1
        else str(s) for s in range(lay.sockets)]
    assert assert_like_hwloc(tmp_path, tmp_path, sockets) == [topo.slurm_cores(c) for c in sockets]
    facts = topo.facts()
    assert (facts["sockets"], facts["cores_per_socket"], facts["threads_per_core"]) == shape[:3]
    assert facts["shape_fits"] is True and facts["shape_problems"] == []
    assert facts["slurmd_c"] == "CPUs=%d Boards=1 SocketsPerBoard=%d CoresPerSocket=%d ThreadsPerCore=%d" % (
        shape[0] * shape[1] * shape[2], shape[0], shape[1], shape[2])


def test_2x32x2_linux_numbering(tmp_path):
    _lay, topo = layout_tree(tmp_path, 2, 32, 2, "linear")
    assert topo.slurm_cores("0-31,64-95") == "0-31"
    assert topo.slurm_cores("32-63,96-127") == "32-63"
    assert topo.slurm_cores("64") == "0"


def test_core_ids_do_not_set_the_order(tmp_path):
    # core_id 3 holds cpu 0: hwloc calls it Core L#0.
    _lay, topo = layout_tree(tmp_path, 2, 4, 2, "linear", core_ids=[3, 1, 2, 0])
    assert [topo.core_of[c] for c in range(8)] == list(range(8))
    assert assert_like_hwloc(tmp_path, tmp_path, [[0], [3], [8], [11]]) == ["0", "3", "0", "3"]


def test_unknown_cpus_are_named_or_ignored(tmp_path):
    _lay, topo = layout_tree(tmp_path, 2, 4, 2, "linear", offline=[5, 13])
    with pytest.raises(ValueError, match=r"cpus 5,13 are not online"):
        topo.slurm_cores("4-7,12-15")
    assert topo.slurm_cores("4-7,12-15", strict=False) == "4-6"


# --- the cases the issue names: each from the sibling masks, checked against hwloc ------------------------------

def snc2_xeon_6230(root):
    """2 x Xeon Gold 6230 (20 cores, 2 threads) in SNC2 with the BIOS numbering the issue describes: within a
    package the NUMA nodes alternate core by core (node 0 = every other core of package 0, siblings +40)."""
    cpus, nodes = {}, {}
    for package in range(2):
        for slot in range(20):
            cpu = package + 2 * slot  # packages alternate too: package 0 = even cpus
            node = 2 * package + slot % 2
            for thread in range(2):
                cpus[cpu + 40 * thread] = {"package": package, "core": (package, slot), "core_id": slot}
                nodes.setdefault(node, []).append(cpu + 40 * thread)
    distances = {0: [10, 11, 21, 21], 1: [11, 10, 21, 21], 2: [21, 21, 10, 11], 3: [21, 21, 11, 10]}
    fake_sysfs.write_topology(str(root), cpus, nodes={n: sorted(c) for n, c in nodes.items()}, distances=distances)
    return nodes


def test_snc2_numbers_cores_numa_group_by_numa_group(tmp_path):
    nodes = snc2_xeon_6230(tmp_path)
    topo = ct.from_sysfs(str(tmp_path))
    # NUMA node 0 holds every other core of package 0: Slurm (hwloc) numbers its 10 cores first.
    assert [topo.slurm_cores(nodes[n]) for n in range(4)] == ["0-9", "10-19", "20-29", "30-39"]
    assert assert_like_hwloc(tmp_path, tmp_path, [nodes[n] for n in range(4)]) == ["0-9", "10-19", "20-29",
                                                                                   "30-39"]
    assert topo.slurmd_c() == "CPUs=80 Boards=1 SocketsPerBoard=2 CoresPerSocket=20 ThreadsPerCore=2"
    assert topo.facts()["shape_fits"] is True


def multi_die_amd_without_die_id(root):
    """Threadripper 2990WX on a kernel without die_id: 4 dies of 8 cores, core_id 0-7 repeated in every die
    of the one package; only thread_siblings tell the 32 cores apart. One NUMA node per die."""
    cpus, nodes = {}, {}
    for die in range(4):
        for slot in range(8):
            core = die * 8 + slot
            for thread in range(2):
                cpu = core + 32 * thread
                cpus[cpu] = {"package": 0, "core": core, "core_id": slot}
                nodes.setdefault(die, []).append(cpu)
    fake_sysfs.write_topology(str(root), cpus, nodes=nodes, old_names=True)
    return nodes


def test_repeated_core_id_without_die_id_keeps_every_core(tmp_path):
    nodes = multi_die_amd_without_die_id(tmp_path)
    topo = ct.from_sysfs(str(tmp_path))
    facts = topo.facts()
    assert (facts["sockets"], facts["cores_per_socket"], facts["threads_per_core"]) == (1, 32, 2)
    assert facts["shape_fits"] is True
    assert [topo.slurm_cores(nodes[d]) for d in range(4)] == ["0-7", "8-15", "16-23", "24-31"]
    assert assert_like_hwloc(tmp_path, tmp_path, [nodes[d] for d in range(4)]) == ["0-7", "8-15", "16-23", "24-31"]


def test_s390_package_id_minus_one(tmp_path):
    cpus = {cpu: {"package": cpu // 4, "package_id": -1, "core": cpu, "core_id": cpu % 4} for cpu in range(8)}
    fake_sysfs.write_topology(str(tmp_path), cpus, arch="s390x")
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.slurmd_c() == "CPUs=8 Boards=1 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=1"
    assert [p.os_index for p in topo.packages] == [-1, -1]
    assert assert_like_hwloc(tmp_path, tmp_path, [[0, 1, 2, 3], [4, 5, 6, 7]]) == ["0-3", "4-7"]


def test_itanium_packages_sharing_one_id(tmp_path):
    # Two packages whose cpus both say physical_package_id 0: the masks, not the ids, make the packages.
    cpus = {cpu: {"package": cpu % 2, "package_id": 0, "core": cpu, "core_id": cpu // 2} for cpu in range(8)}
    fake_sysfs.write_topology(str(tmp_path), cpus, arch="ia64")
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.slurmd_c() == "CPUs=8 Boards=1 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=1"
    assert topo.slurm_cores([0, 2, 4, 6]) == "0-3"
    assert assert_like_hwloc(tmp_path, tmp_path, [[0, 2, 4, 6], [1, 3, 5, 7]]) == ["0-3", "4-7"]


def test_cell_without_core_id(tmp_path):
    # PS3-like Cell: thread siblings but no core_id file, old sibling file names.
    cpus = {0: {"package": 0, "core": 0, "core_id": None}, 1: {"package": 0, "core": 0, "core_id": None}}
    fake_sysfs.write_topology(str(tmp_path), cpus, old_names=True, arch="ppc64")
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.cores == [[0, 1]]
    assert topo.slurmd_c() == "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=1 ThreadsPerCore=2"
    assert assert_like_hwloc(tmp_path, tmp_path, [[1]]) == ["0"]


def test_numa_nodes_grouped_by_distance_reorder_packages(tmp_path):
    # 4 packages numbered round robin; the distances pair packages 0+2 and 1+3, so hwloc (and Slurm) number
    # package 2 before package 1.
    cpus = {cpu: {"package": cpu % 4, "core": cpu} for cpu in range(16)}
    nodes = {n: [c for c in range(16) if c % 4 == n] for n in range(4)}
    distances = {0: [10, 20, 12, 20], 1: [20, 10, 20, 12], 2: [12, 20, 10, 20], 3: [20, 12, 20, 10]}
    fake_sysfs.write_topology(str(tmp_path), cpus, nodes=nodes, distances=distances)
    topo = ct.from_sysfs(str(tmp_path))
    assert [topo.slurm_cores(nodes[n]) for n in range(4)] == ["0-3", "8-11", "4-7", "12-15"]
    assert assert_like_hwloc(tmp_path, tmp_path, [nodes[n] for n in range(4)]) == ["0-3", "8-11", "4-7", "12-15"]
    assert topo.slurmd_c() == "CPUs=16 Boards=2 SocketsPerBoard=2 CoresPerSocket=4 ThreadsPerCore=1"


def test_interleaved_l3_and_clusters_order_cores(tmp_path):
    # One package, 8 cores; two L3 caches (and clusters) holding alternate cores.
    cpus = {cpu: {"package": 0, "core": cpu, "cluster": cpu % 2} for cpu in range(8)}
    fake_sysfs.write_topology(str(tmp_path), cpus, l3={0: [0, 2, 4, 6], 1: [1, 3, 5, 7]})
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.slurm_cores([0, 2, 4, 6]) == "0-3"
    assert assert_like_hwloc(tmp_path, tmp_path, [[0, 2, 4, 6], [1]]) == ["0-3", "4"]


def test_cpuless_numa_node_takes_the_cpus_of_its_closest_nodes(tmp_path):
    # HBM-like CPU-less node 2, equally close to nodes 0 and 1 of package 0 whose cpus interleave: hwloc gives
    # it both nodes' cpus, and the Group it needs puts those cores first.
    cpus = {cpu: {"package": 0 if cpu < 12 else 1, "core": cpu} for cpu in range(16)}
    nodes = {0: [0, 1, 2, 3], 1: [8, 9, 10, 11], 2: [], 3: [4, 5, 6, 7, 12, 13, 14, 15]}
    distances = {0: [10, 20, 30, 40], 1: [20, 10, 30, 40], 2: [30, 30, 10, 50], 3: [40, 40, 50, 10]}
    fake_sysfs.write_topology(str(tmp_path), cpus, nodes=nodes, distances=distances)
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.slurm_cores([8, 9, 10, 11]) == "4-7"
    assert assert_like_hwloc(tmp_path, tmp_path, [[0], [8, 9, 10, 11], [4, 5, 6, 7]]) == ["0", "4-7", "8-11"]


# --- shapes Sockets x CoresPerSocket x ThreadsPerCore cannot describe -------------------------------------------

def test_uneven_packages_are_flagged_with_the_slurmd_c_line(tmp_path):
    cpus = {cpu: {"package": 0 if cpu < 8 else 1, "core": cpu} for cpu in range(14)}
    fake_sysfs.write_topology(str(tmp_path), cpus)
    facts = ct.from_sysfs(str(tmp_path)).facts()
    assert facts["shape_fits"] is False
    assert facts["cores_per_package"] == [8, 6]
    assert "packages have different core counts (8, 6)" in facts["shape_problems"][0]
    assert facts["slurmd_c"] == "CPUs=14 Boards=1 SocketsPerBoard=2 CoresPerSocket=7 ThreadsPerCore=1"


def test_offline_cpus_are_flagged(tmp_path):
    _lay, topo = layout_tree(tmp_path, 2, 4, 2, "linear", offline=[5, 13])
    facts = topo.facts()
    assert facts["offline_cpus"] == "5,13"
    assert facts["shape_fits"] is False
    assert any("cpus 5,13 are offline" in p for p in facts["shape_problems"])
    assert facts["slurmd_c"].startswith("CPUs=14 ")
    assert assert_like_hwloc(tmp_path, tmp_path, [[4, 6, 7, 12, 14, 15]]) == ["4-6"]


def test_cgroup_restricted_cpus_are_counted_and_flagged(tmp_path):
    cpus = {cpu: {"package": cpu // 8, "core": cpu} for cpu in range(16)}
    fake_sysfs.write_topology(str(tmp_path), cpus, nodes={0: list(range(8)), 1: list(range(8, 16))},
                              allowed=list(range(4, 16)))
    topo = ct.from_sysfs(str(tmp_path))
    facts = topo.facts()
    assert facts["disallowed_cpus"] == "0-3"
    assert facts["slurmd_c"] == "CPUs=16 Boards=1 SocketsPerBoard=2 CoresPerSocket=8 ThreadsPerCore=1"
    assert any("outside this node's cgroup cpuset" in p for p in facts["shape_problems"])
    assert assert_like_hwloc(tmp_path, tmp_path, [list(range(8, 16))]) == ["8-15"]


def test_sparse_cpu_ids_break_slurmds_cpu_map(tmp_path):
    # cpus 0-3 and 8-11 online: slurmd maps only OS ids below its cpu count (8), so 8-11 are unmapped.
    cpus = {cpu: {"package": cpu // 8, "core": cpu} for cpu in list(range(4)) + list(range(8, 12))}
    fake_sysfs.write_topology(str(tmp_path), cpus)
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.slurm_map_mismatch() == [8, 9, 10, 11]
    assert any("slurmd's CPU map does not follow the cores for cpus 8-11" in p for p in topo.shape_problems())


def test_no_package_at_all(tmp_path):
    cpus = {0: {"package": 0, "core": 0}, 1: {"package": 0, "core": 1}}
    fake_sysfs.write_topology(str(tmp_path), cpus)
    for cpu in (0, 1):
        for name in ("package_cpus", "core_siblings", "package_cpus_list", "core_siblings_list"):
            os.remove(str(tmp_path / ("sys/devices/system/cpu/cpu%d/topology/%s" % (cpu, name))))
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.packages == []
    assert topo.slurmd_c() == "CPUs=2 Boards=1 SocketsPerBoard=1 CoresPerSocket=2 ThreadsPerCore=1"
    assert any("no Package" in p for p in topo.shape_problems())


# --- sources ----------------------------------------------------------------------------------------------------

def test_auto_prefers_libhwloc_and_says_so(tmp_path):
    hwloc_oracle.require()
    layout_tree(tmp_path, 2, 4, 2, "interleaved")
    topo = ct.read_cpu_topology(str(tmp_path), run=run, which=shutil.which)
    assert topo.source == "libhwloc" and "libhwloc.so" in topo.detail
    assert topo.facts()["source_notes"] == []


def test_libhwloc_loads_the_soname_without_searching(tmp_path):
    """find_library runs ldconfig -p (and a C compiler when that finds nothing) on every module run: the script
    asks it only when libhwloc.so.15 does not load."""
    hwloc_oracle.require()
    layout_tree(tmp_path, 1, 2, 1, "linear")
    guard = "import ctypes.util, sys\nctypes.util.find_library = lambda name: sys.exit('find_library(%r) called' % name)\n"
    rc, out, err = run([sys.executable, "-c", guard + hwloc_query.LIBHWLOC_SCRIPT, str(tmp_path)])
    assert (rc, err.strip()) == (0, "libhwloc.so.15") and "<topology" in out


def test_auto_falls_back_and_records_why(tmp_path):
    layout_tree(tmp_path, 2, 4, 2, "interleaved")

    def broken(argv):
        return 127, "", "%s: not found" % argv[0]
    topo = ct.read_cpu_topology(str(tmp_path), run=broken, which=lambda name: None)
    assert topo.source == "sysfs"
    assert topo.notes[0].startswith("libhwloc: ") and "not found" in topo.notes[0]
    assert topo.notes[1].startswith("lstopo: neither lstopo-no-graphics nor lstopo is on PATH")


def test_lstopo_failure_is_reported(tmp_path):
    layout_tree(tmp_path, 1, 2, 1, "linear")

    def fails(argv):
        return 1, "", "lstopo-no-graphics: unrecognized option '--filter'"
    with pytest.raises(ValueError, match=r"unrecognized option '--filter'"):
        ct.read_cpu_topology(str(tmp_path), source="lstopo", run=fails, which=lambda name: "/usr/bin/" + name)


def test_unknown_source_and_missing_topology(tmp_path):
    with pytest.raises(ValueError, match=r"topology source must be one of auto, libhwloc, lstopo, sysfs"):
        ct.read_cpu_topology("/", source="cpuid")
    with pytest.raises(ValueError, match=r"no cpu directories under"):
        ct.read_cpu_topology(str(tmp_path), source="sysfs")


def test_facts_keys(tmp_path):
    _lay, topo = layout_tree(tmp_path, 2, 4, 2, "linear")
    facts = topo.facts()
    assert sorted(facts) == sorted([
        "sockets", "cores_per_socket", "threads_per_core", "boards", "cpus", "cores", "cores_per_package",
        "threads_per_core_seen", "offline_cpus", "disallowed_cpus", "numa_nodes", "slurmd_c",
        "slurmd_c_without_ecores", "shape_fits", "shape_problems", "source", "source_detail", "source_notes"])
    assert facts["numa_nodes"] == {"0": "0-3,8-11", "1": "4-7,12-15"}
    assert facts["slurmd_c_without_ecores"] is None
    assert facts["source"] == "sysfs"


# --- recorded CPU maps (lscpu -p, numactl -H) turned into sysfs trees -------------------------------------------

def sysfs_from_lscpu_p(root, text, nodes=None):
    """A sysfs tree from ``lscpu -p`` rows (CPU,Core,Socket,Node,,L1d,L1i,L2,L3): lscpu's Core and Socket
    columns are its own grouping of the kernel's sibling masks, so they give the masks back."""
    rows = [line.split(",") for line in text.splitlines() if line[:1].isdigit()]
    cpus = {int(r[0]): {"package": int(r[2]), "core": (int(r[2]), int(r[1])), "core_id": int(r[1])} for r in rows}
    if nodes is None:
        nodes = {}
        for r in rows:
            nodes.setdefault(int(r[3] or 0), []).append(int(r[0]))
    fake_sysfs.write_topology(str(root), cpus, nodes=nodes)
    return cpus


def test_xeon_x5650_with_interleaved_numa_nodes(tmp_path):
    sysfs_from_lscpu_p(tmp_path, nvsmi_fixtures.load("cpu", "xeon-x5650-2s-interleaved-numa-lscpu-p.txt"))
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.slurmd_c() == "CPUs=12 Boards=1 SocketsPerBoard=2 CoresPerSocket=6 ThreadsPerCore=1"
    # NUMA node0 CPU(s): 0,2,4,6,8,10 in the old-format lscpu of the same machine = socket 0 = Slurm cores 0-5.
    old = nvsmi_fixtures.load("cpu", "xeon-x5650-2s-interleaved-numa-old-format.txt")
    node0 = re.search(r"NUMA node0 CPU\(s\):\s*(\S+)", old).group(1)
    node1 = re.search(r"NUMA node1 CPU\(s\):\s*(\S+)", old).group(1)
    assert [topo.slurm_cores(node0), topo.slurm_cores(node1)] == ["0-5", "6-11"]
    assert assert_like_hwloc(tmp_path, tmp_path, [parse_int_ranges(node0), parse_int_ranges(node1)]) == ["0-5",
                                                                                                         "6-11"]


def test_intel_hybrid_p_cores_with_threads_and_e_cores(tmp_path):
    sysfs_from_lscpu_p(tmp_path, nvsmi_fixtures.load("cpu", "intel-hybrid-12cpu-lscpu-p-pcore-ht-ecores.txt"))
    topo = ct.from_sysfs(str(tmp_path))
    facts = topo.facts()
    # 12 cpus on 8 cores (4 P-cores with 2 threads, 4 E-cores with 1): slurmd's integer division says 1 thread.
    assert facts["slurmd_c"] == "CPUs=12 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1"
    assert facts["threads_per_core_seen"] == [1, 2] and facts["shape_fits"] is False
    assert [topo.slurm_cores("0-7"), topo.slurm_cores("8-11")] == ["0-3", "4-7"]
    assert assert_like_hwloc(tmp_path, tmp_path, [list(range(8)), list(range(8, 12))]) == ["0-3", "4-7"]


def test_intel_hybrid_without_e_cores_as_slurm_23_02_and_later_see_it(tmp_path):
    """The kernel lists the P-cores' and E-cores' cpus in /sys/devices/cpu_core/cpus and cpu_atom/cpus; Slurm
    23.02+ without allow_ecores keeps only the P-cores (4 cores with 2 threads here). Real hybrid CPUs, with
    hwloc's own restriction and the real slurmd as oracles, are in test_cpu_topology_corpus.py."""
    sysfs_from_lscpu_p(tmp_path, nvsmi_fixtures.load("cpu", "intel-hybrid-12cpu-lscpu-p-pcore-ht-ecores.txt"))
    for pmu, cpus in (("cpu_core", "0-7"), ("cpu_atom", "8-11")):
        os.makedirs(str(tmp_path / "sys" / "devices" / pmu))
        (tmp_path / "sys" / "devices" / pmu / "cpus").write_text(cpus + "\n")
    topo = ct.from_sysfs(str(tmp_path))
    pcores = topo.without_ecores()
    assert pcores.slurmd_c() == "CPUs=8 Boards=1 SocketsPerBoard=1 CoresPerSocket=4 ThreadsPerCore=2"
    assert pcores.slurm_cores("0-7") == "0-3" and pcores.slurm_cores("8-11", strict=False) == ""
    facts = topo.facts()
    assert facts["slurmd_c"] == "CPUs=12 Boards=1 SocketsPerBoard=1 CoresPerSocket=8 ThreadsPerCore=1"
    assert facts["slurmd_c_without_ecores"] == pcores.slurmd_c()
    assert facts["shape_problems"][-1].startswith("E-cores on cpus 8-11 (not in hwloc's IntelCore kind): Slurm "
                                                  "23.02 and later drop them unless SlurmdParameters=allow_ecores; "
                                                  "slurmd -C then prints CPUs=8 ")
    # P-cores only, or no CPU kinds at all: nothing is removed
    (tmp_path / "sys" / "devices" / "cpu_atom" / "cpus").write_text("\n")
    (tmp_path / "sys" / "devices" / "cpu_core" / "cpus").write_text("0-11\n")
    assert ct.from_sysfs(str(tmp_path)).without_ecores() is None


def test_adroit_strided_affinity_of_a_cgroup_limited_job(tmp_path):
    """topo -m of a100-4gpu-adroit: GPU0's affinity 0,2,4,6,8,10 (a job's cgroup) on the node numactl -H
    describes (node 0 = even cpus): six cores of socket 0."""
    numactl = nvsmi_fixtures.load("cpu", "adroit-numactl-H-interleaved-even-odd.txt")
    nodes = {int(n): [int(c) for c in cpus.split()] for n, cpus in re.findall(r"node (\d+) cpus: ([\d ]+)", numactl)}
    cpus = {cpu: {"package": node, "core": cpu} for node, members in nodes.items() for cpu in members}
    fake_sysfs.write_topology(str(tmp_path), cpus, nodes=nodes)
    topo = ct.from_sysfs(str(tmp_path))
    assert topo.slurm_cores("0,2,4,6,8,10") == "0-5"
    assert assert_like_hwloc(tmp_path, tmp_path, [[0, 2, 4, 6, 8, 10], nodes[1]]) == ["0-5", "24-47"]
