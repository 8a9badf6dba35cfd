"""Compare the collection's Slurm core numbering with hwloc (and the real slurmd) on real topology files.

    .venv/bin/python scripts/topology-check.py [--slurmd] [--json OUT] [-v] FILE_OR_DIR...

FILE: an hwloc XML (.xml, .xml.xz; v1 or v2), a sysfs dump (.tar.bz2/.tar.gz with sys/devices/system/cpu,
as in hwloc's tests/hwloc/linux) or an x86 cpuid dump (hwloc's tests/hwloc/x86/*.tar.bz2). A directory is
searched for such files. For every Package, NUMA node and NVIDIA GPU of each topology it prints whether
``slurm_cores`` equals ``hwloc-calc --li --intersect core`` under Slurm's settings, for the sysfs path and the
hwloc path; whether the shape (packages, cores, PUs) equals hwloc's; whether the facts flag a node shape
Slurm cannot describe; with --slurmd, whether the real ``slurmd -C`` line and slurmd's CPU map agree too. On
Intel hybrid CPUs the P-core-only view (Slurm 23.02+ without allow_ecores) is compared with hwloc's restriction.
Needs hwloc-nox (lstopo-no-graphics, hwloc-calc); --slurmd needs slurmd.
"""
import argparse
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path[:0] = [os.path.join(ROOT, ".cache", "collections"), os.path.join(ROOT, "tests", "helpers"),
                os.path.join(ROOT, "tests", "emulator")]

import topology_corpus  # noqa: E402

SUFFIXES = (".xml", ".xml.xz", ".tar.bz2", ".tar.gz", ".tar.xz")
# sysfs dumps are thousands of small files: unpack them in memory where possible
SCRATCH = "/dev/shm" if os.access("/dev/shm", os.W_OK) else None


def inputs(paths):
    for path in paths:
        if os.path.isdir(path) and not os.path.isdir(os.path.join(path, "sys")) \
                and not os.path.exists(os.path.join(path, "hwloc-cpuid-info")):
            for name in sorted(os.listdir(path)):
                if name.endswith(SUFFIXES):
                    yield os.path.join(path, name)
        else:
            yield path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("paths", nargs="+")
    parser.add_argument("--slurmd", action="store_true", help="also ask the real slurmd (-C and its CPU map)")
    parser.add_argument("--json", help="write every result to this file")
    parser.add_argument("-v", "--verbose", action="store_true", help="print every mismatching placement")
    args = parser.parse_args()
    totals = {"topologies": 0, "failed": 0, "placements": 0, "ok": {"sysfs": 0, "hwloc": 0},
              "shape": {"sysfs": 0, "hwloc": 0}, "flagged": 0, "slurmd": {"sysfs": 0, "hwloc": 0},
              "slurmd_ok": {"sysfs": 0, "hwloc": 0}, "lossy": 0, "ecores": 0, "ecores_ok": 0}
    results = []
    start = time.time()
    for path in inputs(args.paths):
        with tempfile.TemporaryDirectory(prefix="topo-check-", dir=SCRATCH) as work:
            try:
                result = topology_corpus.check(path, work, slurmd=args.slurmd)
            except Exception as exc:  # noqa: BLE001 - report and go on with the next file
                totals["failed"] += 1
                print("%-48s ERROR %s" % (topology_corpus.name_of(path)[:48], str(exc).splitlines()[0][:200]))
                continue
        results.append(result)
        totals["topologies"] += 1
        n = len(result["placements"])
        totals["placements"] += n
        ok = {w: sum(topology_corpus.placement_ok(p, w) for p in result["placements"]) for w in ("sysfs", "hwloc")}
        lossy = sum(1 for p in result["placements"] if "converted" in p and p["converted"] != p["expected"])
        totals["lossy"] += lossy
        for w in ("sysfs", "hwloc"):
            totals["ok"][w] += ok[w]
            totals["shape"][w] += bool(topology_corpus.shape_ok(result, w))
        shape = result["shape"].get("hwloc") or result["shape"].get("sysfs") or {}
        if shape and not shape["fits"]:
            totals["flagged"] += 1
        verdict = ""
        if args.slurmd:
            marks = []
            for w in ("sysfs", "hwloc"):
                agree = topology_corpus.slurmd_ok(result, w)
                if agree is not None:
                    totals["slurmd"][w] += 1
                    totals["slurmd_ok"][w] += bool(agree)
                    marks.append("ok" if agree else "DIFF")
            verdict = " slurmd:%s" % "/".join(marks)
        pcores = [topology_corpus.ecores_ok(result, w) for w in ("sysfs", "hwloc")]
        if pcores[0] is not None:
            totals["ecores"] += 1
            totals["ecores_ok"] += all(pcores)
            verdict += " without-E-cores:%s" % "/".join("ok" if p else "DIFF" for p in pcores)
        print("%-48s %-6s %2d placements  sysfs %2d ok  hwloc %2d ok  shape %s/%s%s%s%s" % (
            result["name"][:48], result["kind"], n, ok["sysfs"], ok["hwloc"],
            "ok" if topology_corpus.shape_ok(result, "sysfs") else "DIFF",
            "ok" if topology_corpus.shape_ok(result, "hwloc") else "DIFF",
            "" if not shape or shape["fits"] else "  no-fit: " + "; ".join(p.split(":")[0] for p in shape["problems"]),
            verdict, "  (conversion lost %d)" % lossy if lossy else ""))
        if args.verbose:
            for p in result["placements"]:
                if any(p["got"].get(w) != p["expected"] for w in ("sysfs", "hwloc")):
                    print("    %-24s cpus %s expected %s sysfs %s hwloc %s%s" % (
                        p["label"], p["cpus"], p["expected"], p["got"].get("sysfs"), p["got"].get("hwloc"),
                        " converted %s" % p["converted"] if "converted" in p else ""))
            for error in result["errors"]:
                print("    error: %s" % error)
    elapsed = time.time() - start
    print("\n%d topologies (%d could not be read): placements matching hwloc: sysfs %d/%d, hwloc %d/%d; "
          "shape matching hwloc: sysfs %d/%d, hwloc %d/%d; %d flagged as not fitting Sockets x Cores x Threads"
          % (totals["topologies"], totals["failed"], totals["ok"]["sysfs"], totals["placements"],
             totals["ok"]["hwloc"], totals["placements"], totals["shape"]["sysfs"], totals["topologies"],
             totals["shape"]["hwloc"], totals["topologies"], totals["flagged"]))
    if totals["lossy"]:
        print("%d placements differ between hwloc on the XML and hwloc on its converted sysfs tree" % totals["lossy"])
    if args.slurmd:
        print("real slurmd -C line and CPU map equal: sysfs %d/%d (on the converted tree for XML and cpuid "
              "inputs), hwloc %d/%d" % (totals["slurmd_ok"]["sysfs"], totals["slurmd"]["sysfs"],
                                        totals["slurmd_ok"]["hwloc"], totals["slurmd"]["hwloc"]))
    if totals["ecores"]:
        print("Intel hybrid, P-cores only (Slurm 23.02+ without allow_ecores) equal to hwloc's restriction%s: %d/%d"
              % (" and slurmd" if args.slurmd else "", totals["ecores_ok"], totals["ecores"]))
    print("%.1f s" % elapsed)
    if args.json:
        for r in results:
            for shape in r["shape"].values():
                shape["block_map"] = {str(k): v for k, v in shape["block_map"].items()}
            if "slurmd" in r:
                r["slurmd"]["cpu_map"] = {str(k): v for k, v in r["slurmd"]["cpu_map"].items()}
            for mine in r.get("ecores", {}).get("ours", {}).values():
                mine["block_map"] = {str(k): v for k, v in mine["block_map"].items()}
            if "slurmd" in r.get("ecores", {}):
                r["ecores"]["slurmd"]["cpu_map"] = {str(k): v for k, v in r["ecores"]["slurmd"]["cpu_map"].items()}
        with open(args.json, "w") as handle:
            json.dump(results, handle, indent=1, sort_keys=True)
    return 0 if totals["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
