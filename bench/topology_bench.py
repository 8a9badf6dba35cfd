"""Benchmark reading a node's CPU topology the three ways gpu_facts can (docs/cpu-topology.md).

For this machine (``/``) and for the larger real sysfs dumps in tests/fixtures (unpacked once), reports the
median wall time of ``cpu_topology.read_cpu_topology(root, source=S)`` for S = ``sysfs`` (pure Python, reads
sysfs like hwloc's Linux backend), ``lstopo`` (runs lstopo-no-graphics) and ``libhwloc`` (a child Python that
loads libhwloc.so.15 through ctypes), plus the Slurm core numbers of every NUMA node from the result
(``slurm_cores``), which is what gpu_facts adds per GPU. A source that is not installed is reported as such.
Run: .venv/bin/python bench/topology_bench.py [--runs N] [--json FILE]
"""
import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpu_topology  # noqa: E402

FIXTURES = os.path.join(ROOT, "tests", "fixtures")
# the largest real dumps of each corpus: two SNC2 Xeons, a 128-core ARM, a 96-cpu x86 with uneven packages
DUMPS = ["sysfs/xeon-2s-snc2-pmem.tar.bz2", "sysfs/xeon-2s-snc2-interleaved.tar.bz2",
         "hwloc/linux/128arm-2pa2n8cluster4co.tar.bz2", "hwloc/linux/96em64t-4no4pa3ca2co.tar.bz2"]
SOURCES = ("sysfs", "lstopo", "libhwloc")


def run(argv):
    proc = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def unpack(archive, dest):
    subprocess.run(["tar", "-C", dest, "-xf", archive], check=True)
    for dirpath, dirnames, _files in os.walk(dest):
        if os.path.isdir(os.path.join(dirpath, "sys", "devices", "system", "cpu")):
            return dirpath
    raise SystemExit("%s holds no sys/devices/system/cpu" % archive)


def time_source(root, source, runs):
    times = []
    topo = None
    for _run in range(runs):
        t0 = time.perf_counter()
        try:
            topo = cpu_topology.read_cpu_topology(root, source=source, run=run, which=shutil.which)
        except ValueError as exc:
            return {"error": str(exc).splitlines()[0][:160]}
        for cpus in topo.numa_nodes.values():
            if cpus:
                topo.slurm_cores(cpus)
        times.append(time.perf_counter() - t0)
    return {"median_ms": round(statistics.median(times) * 1000, 1), "cpus": topo.cpus, "cores": len(topo.cores)}


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=5, help="runs per measurement (median reported)")
    parser.add_argument("--json", help="also write the results as JSON here")
    opts = parser.parse_args()
    results = {}
    with tempfile.TemporaryDirectory(prefix="topology-bench-") as work:
        roots = [("this machine", "/")]
        for rel in DUMPS:
            dest = os.path.join(work, os.path.basename(rel).split(".")[0])
            os.makedirs(dest)
            roots.append((os.path.basename(rel).split(".")[0], unpack(os.path.join(FIXTURES, rel), dest)))
        print("%-34s %12s %12s %12s" % ("topology (cpus)", *SOURCES))
        for name, root in roots:
            row = {s: time_source(root, s, opts.runs) for s in SOURCES}
            results[name] = row
            cpus = next((r["cpus"] for r in row.values() if "cpus" in r), "?")
            print("%-34s %12s %12s %12s" % ("%s (%s)" % (name, cpus), *(
                "%.1f ms" % row[s]["median_ms"] if "median_ms" in row[s] else "n/a" for s in SOURCES)))
            for source in SOURCES:
                if "error" in row[source]:
                    print("    %s: %s" % (source, row[source]["error"]))
    if opts.json:
        os.makedirs(os.path.dirname(os.path.abspath(opts.json)), exist_ok=True)
        with open(opts.json, "w") as handle:
            json.dump(results, handle, indent=1, sort_keys=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
