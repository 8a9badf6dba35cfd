"""cpu_topology: sysfs reading, CPU layout and OS cpu -> Slurm (hwloc logical) core indices.

Expected values come from the fake tree's definition (tests/emulator/fake_sysfs.py) or from hwloc itself
(``HWLOC_FSROOT`` pointed at the fake tree); the module under test is never its own oracle.
"""
import os
import re
import shutil
import subprocess
import xml.etree.ElementTree as ET

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpu_topology as ct
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges

import nvsmi_fixtures
import fake_sysfs


def tree(tmp_path, *args, **kwargs):
    lay = fake_sysfs.layout(*args, **kwargs)
    fake_sysfs.build(str(tmp_path), lay, mig_minors=False)
    return lay, ct.read_cpu_topology(str(tmp_path))


def test_2x32x2_socket0_affinity_is_cores_0_31(tmp_path):
    lay, topo = tree(tmp_path, 2, 32, 2, "linear")
    assert ct.os_cpus_to_slurm_cores("0-31,64-95", topo["cpus"]) == "0-31"
    assert ct.os_cpus_to_slurm_cores("32-63,96-127", topo["cpus"]) == "32-63"
    assert ct.cpu_layout(topo["cpus"]) == {"sockets": 2, "cores_per_socket": 32, "threads_per_core": 2,
                                           "cpus": 128, "uniform": True}


def test_interleaved_numbering_gives_a_different_answer(tmp_path):
    _lay, topo = tree(tmp_path, 2, 32, 2, "interleaved")
    # Socket 0 is the even cpus here, so 0-31,64-95 is half of each socket.
    assert ct.os_cpus_to_slurm_cores("0-31,64-95", topo["cpus"]) == "0-15,32-47"
    evens = list(range(0, 128, 2))
    assert ct.os_cpus_to_slurm_cores(evens, topo["cpus"]) == "0-31"


def test_hyperthreading_off(tmp_path):
    _lay, topo = tree(tmp_path, 2, 16, 1, "linear")
    assert ct.os_cpus_to_slurm_cores("16-31", topo["cpus"]) == "16-31"
    assert ct.cpu_layout(topo["cpus"])["threads_per_core"] == 1


def test_adjacent_siblings(tmp_path):
    _lay, topo = tree(tmp_path, 2, 8, 2, "adjacent")
    assert ct.os_cpus_to_slurm_cores("16-31", topo["cpus"]) == "8-15"
    assert ct.logical_core_map(topo["cpus"])[1] == 0


def test_core_ids_do_not_set_the_order_the_lowest_cpu_does(tmp_path):
    # core_id 3 holds cpu 0: hwloc calls it Core L#0 (checked against hwloc in test_matches_hwloc below).
    _lay, topo = tree(tmp_path, 2, 4, 2, "linear", core_ids=[3, 1, 2, 0])
    mapping = ct.logical_core_map(topo["cpus"])
    assert [mapping[c] for c in range(8)] == list(range(8))
    assert mapping[8] == 0 and mapping[11] == 3


def test_xeon_gapped_core_ids(tmp_path):
    _lay, topo = tree(tmp_path, 2, 6, 2, "linear", core_ids=[0, 1, 2, 8, 9, 10])
    assert ct.os_cpus_to_slurm_cores("0-5,12-17", topo["cpus"]) == "0-5"
    assert ct.cpu_layout(topo["cpus"])["cores_per_socket"] == 6


def test_package_ids_in_reverse(tmp_path):
    _lay, topo = tree(tmp_path, 2, 4, 1, "linear")
    for cpu in range(8):
        path = tmp_path / ("sys/devices/system/cpu/cpu%d/topology/physical_package_id" % cpu)
        path.write_text("%d\n" % (1 - int(path.read_text())))
    topo = ct.read_cpu_topology(str(tmp_path))
    assert ct.os_cpus_to_slurm_cores("0-3", topo["cpus"]) == "0-3"
    assert ct.socket_of_core(topo["cpus"])[0] == 0


def test_offline_cpus_are_left_out_and_named(tmp_path):
    _lay, topo = tree(tmp_path, 2, 4, 2, "linear", offline=[5, 13])
    assert 5 not in topo["cpus"] and 13 not in topo["cpus"]
    # cpu 5 and its sibling 13 were core slot 1 of socket 1: that core is gone, so socket 1 has 3 cores.
    assert ct.os_cpus_to_slurm_cores("4,6,7,12,14,15", topo["cpus"]) == "4-6"
    with pytest.raises(ValueError, match=r"cpus 5,13 are not online"):
        ct.os_cpus_to_slurm_cores("4-7,12-15", topo["cpus"])
    assert ct.os_cpus_to_slurm_cores("4-7,12-15", topo["cpus"], strict=False) == "4-6"


def test_missing_topology_is_an_error(tmp_path):
    with pytest.raises(ValueError, match="no cpu topology"):
        ct.read_cpu_topology(str(tmp_path))


def test_numa_nodes_are_read(tmp_path):
    _lay, topo = tree(tmp_path, 2, 4, 2, "interleaved")
    assert topo["numa_nodes"] == {0: [0, 2, 4, 6, 8, 10, 12, 14], 1: [1, 3, 5, 7, 9, 11, 13, 15]}


# --- real CPU maps: lscpu -p and numactl -H fixtures ------------------------------------------------------

def sysfs_from_lscpu_p(root, text):
    """Write cpuN/topology from ``lscpu -p`` rows (CPU,Core,Socket,...). lscpu's Core column is its own
    logical core number, which is as good as core_id for grouping threads."""
    rows = [line.split(",") for line in text.splitlines() if re.match(r"^\d+,", line)]
    base = os.path.join(root, "sys", "devices", "system", "cpu")
    for cpu, core, socket, *_rest in rows:
        topo = os.path.join(base, "cpu" + cpu, "topology")
        os.makedirs(topo)
        with open(os.path.join(topo, "physical_package_id"), "w") as handle:
            handle.write(socket + "\n")
        with open(os.path.join(topo, "core_id"), "w") as handle:
            handle.write(core + "\n")
    with open(os.path.join(base, "online"), "w") as handle:
        handle.write("0-%d\n" % (len(rows) - 1))
    return rows


def test_xeon_x5650_interleaved_lscpu_p(tmp_path):
    sysfs_from_lscpu_p(str(tmp_path), nvsmi_fixtures.load("cpu", "xeon-x5650-2s-interleaved-numa-lscpu-p.txt"))
    topo = ct.read_cpu_topology(str(tmp_path))
    assert ct.cpu_layout(topo["cpus"])["sockets"] == 2
    assert ct.cpu_layout(topo["cpus"])["cores_per_socket"] == 6
    # NUMA node0 CPU(s): 0,2,4,6,8,10 (old-format lscpu of the same machine) = socket 0 = Slurm cores 0-5.
    old = nvsmi_fixtures.load("cpu", "xeon-x5650-2s-interleaved-numa-old-format.txt")
    node0 = re.search(r"NUMA node0 CPU\(s\):\s*(\S+)", old).group(1)
    node1 = re.search(r"NUMA node1 CPU\(s\):\s*(\S+)", old).group(1)
    assert ct.os_cpus_to_slurm_cores(node0, topo["cpus"]) == "0-5"
    assert ct.os_cpus_to_slurm_cores(node1, topo["cpus"]) == "6-11"


def test_intel_hybrid_lscpu_p(tmp_path):
    sysfs_from_lscpu_p(str(tmp_path), nvsmi_fixtures.load("cpu", "intel-hybrid-12cpu-lscpu-p-pcore-ht-ecores.txt"))
    topo = ct.read_cpu_topology(str(tmp_path))
    layout = ct.cpu_layout(topo["cpus"])
    # 12 cpus on 8 cores (4 P-cores with 2 threads, 4 E-cores with 1): slurmd's integer division says 1.
    assert (layout["sockets"], layout["cores_per_socket"], layout["threads_per_core"]) == (1, 8, 1)
    assert layout["uniform"] is False
    assert ct.os_cpus_to_slurm_cores("0-7", topo["cpus"]) == "0-3"
    assert ct.os_cpus_to_slurm_cores("8-11", topo["cpus"]) == "4-7"


@pytest.mark.parametrize("numbering, expected", [("interleaved", "0-5"), ("linear", "0,2,4,6,8,10")])
def test_adroit_strided_affinity(tmp_path, numbering, expected):
    """topo a100-4gpu-adroit: GPU0's cgroup-limited affinity 0,2,4,6,8,10 on the node numactl -H describes."""
    numactl = nvsmi_fixtures.load("cpu", "adroit-numactl-H-interleaved-even-odd.txt")
    node0 = [int(c) for c in re.search(r"node 0 cpus: ([\d ]+)", numactl).group(1).split()]
    _lay, topo = tree(tmp_path, 2, 24, 1, numbering)
    if numbering == "interleaved":
        assert sorted(c for c, (p, _core) in topo["cpus"].items() if p == 0) == node0
    assert ct.os_cpus_to_slurm_cores("0,2,4,6,8,10", topo["cpus"]) == expected


# --- hwloc as the oracle ---------------------------------------------------------------------------------

HWLOC_SHAPES = [
    dict(args=(2, 32, 2, "linear")),
    dict(args=(2, 8, 2, "interleaved")),
    dict(args=(2, 6, 1, "interleaved")),
    dict(args=(2, 8, 2, "adjacent")),
    dict(args=(1, 16, 1, "linear")),
    dict(args=(4, 6, 2, "linear")),
    dict(args=(8, 4, 1, "interleaved")),
    dict(args=(2, 4, 2, "linear"), kwargs=dict(core_ids=[3, 1, 2, 0])),
    dict(args=(2, 6, 2, "linear"), kwargs=dict(core_ids=[0, 1, 2, 8, 9, 10])),
    dict(args=(2, 4, 2, "linear"), kwargs=dict(offline=[5, 13])),
]


def hwloc_core_map(root):
    """``{os cpu: Core L#}`` as hwloc 2 computes it from the fake tree (depth-first order of Core objects)."""
    lstopo = shutil.which("lstopo-no-graphics") or shutil.which("lstopo")
    if lstopo is None:
        if os.environ.get("CI") == "true":
            pytest.fail("lstopo (Debian package hwloc-nox) is required under CI")
        pytest.skip("lstopo not installed (apt-get install hwloc-nox)")
    env = dict(os.environ, HWLOC_FSROOT=root, HWLOC_COMPONENTS="linux,-x86", HWLOC_THISSYSTEM="0")
    xml = subprocess.run([lstopo, "--no-io", "--of", "xml", "-"], env=env, check=True, capture_output=True,
                         text=True).stdout
    mapping = {}
    cores = [o for o in ET.fromstring(xml).iter("object") if o.get("type") == "Core"]
    for logical, core in enumerate(cores):
        for pu in core.iter("object"):
            if pu.get("type") == "PU":
                mapping[int(pu.get("os_index"))] = logical
    return mapping


@pytest.mark.parametrize("shape", HWLOC_SHAPES, ids=lambda s: "-".join(map(str, s["args"])) + (
    "-" + "-".join("%s" % k for k in s.get("kwargs", {})) if s.get("kwargs") else ""))
def test_matches_hwloc(tmp_path, shape):
    lay, topo = tree(tmp_path, *shape["args"], **shape.get("kwargs", {}))
    assert ct.logical_core_map(topo["cpus"]) == hwloc_core_map(str(tmp_path))


@pytest.mark.parametrize("shape", HWLOC_SHAPES[:7], ids=lambda s: "-".join(map(str, s["args"])))
def test_matches_fake_tree_definition(tmp_path, shape):
    lay, topo = tree(tmp_path, *shape["args"])
    for s in range(lay.sockets):
        cpus = fake_sysfs.socket_cpus(lay, s)
        assert ct.os_cpus_to_slurm_cores(cpus, topo["cpus"]) == format_int_ranges(
            fake_sysfs.expected_slurm_cores(lay, cpus))
        assert parse_int_ranges(ct.os_cpus_to_slurm_cores(cpus, topo["cpus"])) == list(
            range(s * lay.cores_per_socket, (s + 1) * lay.cores_per_socket))
