"""Slurm's core numbering on hwloc's own corpus of real topologies (tests/fixtures/hwloc, see its README) and on
real sysfs dumps from elsewhere (tests/fixtures/sysfs: Xeon servers in sub-NUMA clustering).

For every Package, NUMA node and NVIDIA GPU of every topology, ``slurm_cores`` from both of the collection's
paths (sysfs read like hwloc's Linux backend; the hwloc XML that libhwloc/lstopo export) must equal
``hwloc-calc --li --intersect core`` under Slurm's settings, the shape must be hwloc's, and the real slurmd
must print the same ``slurmd -C`` line and log the same CPU map. The checking code is shared with
``scripts/topology-check.py`` (tests/helpers/topology_corpus.py).
"""
import os
import tempfile

import pytest

import hwloc_oracle
import testpaths
import topology_corpus

# names relative to tests/fixtures: each corpus directory has a README that describes every file in it
CORPORA = ("hwloc/linux", "hwloc/xml", "hwloc/x86", "sysfs")
FILES = sorted(os.path.join(sub, name) for sub in CORPORA
               for name in os.listdir(os.path.join(testpaths.FIXTURES, sub)) if name.endswith((".tar.bz2", ".xml.xz")))
# sysfs dumps are thousands of small files: unpack them in memory where possible
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None
# hwloc XML files whose sysfs conversion cannot carry what hwloc knew (see hwloc_sysfs.py): none in this
# selection; a file listed here is still checked on the hwloc path and against hwloc on the converted tree.
CONVERSION_LOSSY = set()
# Why Sockets x CoresPerSocket x ThreadsPerCore does not describe a node (words of each shape problem); every
# other file must fit. slurmd's own -C line and CPU map are compared too, so these are Slurm's facts.
NO_FIT = {
    "hwloc/linux/16amd64-4n4c-cgroup-distance-merge.tar.bz2": ("cgroup",),
    "hwloc/linux/16amd64-8n2c-cpusets.tar.bz2": ("different core counts", "offline", "cgroup", "CPU map"),
    "hwloc/linux/16em64t-4s2c2t-offlines.tar.bz2": ("different core counts", "thread counts", "offline"),
    "hwloc/linux/20em64t-hybrid-1p6c2t+2ca4co1t.tar.bz2": ("thread counts",),
    "hwloc/linux/20s390-2g6s4c.tar.bz2": ("different core counts",),
    "hwloc/linux/2ps3-2t.tar.bz2": ("no Package", "CPU map"),
    "hwloc/linux/32amd64-4s2n4c-cgroup2.tar.bz2": ("cgroup",),
    "hwloc/linux/40intel64-4n10c+pci-conflicts.tar.bz2": ("CPU map",),
    "hwloc/linux/nvidiagpunumanodes.tar.bz2": ("CPU map",),
    "hwloc/linux/offline-cpu0-node0.tar.bz2": ("different core counts", "offline", "CPU map"),
    "hwloc/xml/nvidiaDGX2.xml.xz": ("CPU map",),
    "hwloc/xml/power8gpudistances.xml.xz": ("CPU map",),
    "hwloc/x86/Intel-RaptorLake-Corei7-1370P.tar.bz2": ("thread counts", "E-cores"),
}


def test_the_corpus_is_all_there():
    assert len(FILES) >= 36
    for name in FILES:
        corpus, _sep, rel = name.partition("/")
        with open(os.path.join(testpaths.FIXTURES, corpus, "README.md")) as handle:
            assert "`%s`" % rel in handle.read(), "%s is not described in tests/fixtures/%s/README.md" % (name, corpus)


@pytest.fixture(scope="module")
def slurmd_available():
    if hwloc_oracle.slurmd_path() is None or os.geteuid() != 0:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true and the slurmd oracle cannot run (needs Debian's slurmd, as root)")
        return False
    return True


@pytest.mark.parametrize("name", FILES)
def test_real_topology(name, slurmd_available):
    hwloc_oracle.require()
    with tempfile.TemporaryDirectory(prefix="hwloc-corpus-", dir=SCRATCH) as work:
        result = topology_corpus.check(os.path.join(testpaths.FIXTURES, name), work, slurmd=slurmd_available)
    assert result["errors"] == []
    assert result["placements"], "no package, NUMA node or GPU found in %s" % name
    for placement in result["placements"]:
        label = "%s %s (cpus %s)" % (name, placement["label"], placement["cpus"])
        assert placement["got"]["hwloc"] == placement["expected"], label
        if name in CONVERSION_LOSSY:
            assert placement["got"]["sysfs"] == placement.get("converted", placement["expected"]), label
        else:
            assert placement["got"]["sysfs"] == placement["expected"], label
            if "converted" in placement:
                assert placement["converted"] == placement["expected"], label
    for which in ("sysfs", "hwloc"):
        assert topology_corpus.shape_ok(result, which), (which, result["shape"][which], result["hwloc_counts"])
    if slurmd_available:
        for which in ("sysfs", "hwloc"):
            real = result["slurmd_converted" if which == "sysfs" and result["converted"] else "slurmd"]
            assert result["shape"][which]["slurmd_c"] == real["slurmd_c"], which
            assert result["shape"][which]["block_map"] == real["cpu_map"], which
    if "ecores" in result:  # Intel hybrid: what Slurm 23.02+ numbers without allow_ecores
        for which in ("sysfs", "hwloc"):
            assert topology_corpus.ecores_ok(result, which), (which, result["ecores"])
    shape = result["shape"]["hwloc"]
    assert shape["problems"] == result["shape"]["sysfs"]["problems"]
    words = NO_FIT.get(name, ())
    assert len(shape["problems"]) == len(words), shape["problems"]
    for word, problem in zip(words, shape["problems"]):
        assert word in problem, (word, shape["problems"])
    assert shape["fits"] is (not words)
