"""Bounded render: pathological inventories, each refused (or rendered) in under a second and a few hundred MB.

Every case runs build_cluster_model + render_all in a fresh process; the CPU time of that call and the process's
peak resident memory (interpreter included) are reported, with the outcome. Targets: < 300 MB each, and < 1 s CPU,
except for the cases as large as a valid 4,096-node cluster (bench/render_bench.py's size): those must stay within
twice the time of that valid cluster, measured here first as the yardstick.
Run: .venv/bin/python bench/hostile_bench.py [--json FILE]
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CPU_TARGET_S = 1.0
MEMORY_TARGET_MB = 300

YARDSTICK = "4,096 valid nodes, 8 GPUs each (yardstick)"
LARGE = ("256 partitions listing 4,096 nodes each", "4,096 hosts each with 3 bad values")
CASES = {
    YARDSTICK: "big()",
    "cores 0-100000000 on an 8-core node": "inv(gpus=[gpu(cores='0-100000000')])",
    "cores 0-65535 repeated 1000 times": "inv(gpus=[gpu(cores=','.join(['0-65535'] * 1000))])",
    "100,000 GPU entries": "inv(gpus=[gpu(index=i % 248) for i in range(100000)])",
    "100,000 MIG profiles on one GPU": "inv(gpus=[gpu(model='A100-80GB', mig=['1g.10gb'] * 100000)])",
    "100,000 features": "inv(node={'hpc_gres_node_features': ['f%d' % i for i in range(100000)]})",
    "a 10 MB feature name": "inv(node={'hpc_gres_node_features': ['x' * 10 ** 7]})",
    "a 10 MB option value": "inv(cluster={'hpc_gres_slurm_conf_options': {'SchedulerParameters': 'x' * 10 ** 7}})",
    "100,000 option keys": "inv(cluster={'hpc_gres_slurm_conf_options': {'Opt%d' % i: i for i in range(100000)}})",
    "a partition hostlist of 100,000 names": "inv(cluster={'hpc_gres_partitions': [{'name': 'p', "
                                             "'nodes': 'n[0-99999]'}]})",
    "a partition hostlist of 10^18 names": "inv(cluster={'hpc_gres_partitions': [{'name': 'p', 'nodes': "
                                           "'n[0-999999][0-999999][0-999999]'}]})",
    "10,000 partitions": "inv(cluster={'hpc_gres_partitions': [{'name': 'p%d' % i, 'nodes': 'ALL'} "
                         "for i in range(10000)]})",
    "256 partitions listing 4,096 nodes each": "big(partitions=256)",
    "a 10^5000 integer": "inv(node={'hpc_gres_node_sockets': 10 ** 5000})",
    "a list nested 5,000 deep": "inv(node={'hpc_gres_node_features': nested(5000)})",
    "4,096 hosts each with 3 bad values": "big(bad=True)",
    "1,000,000 hosts in group slurmd": "({'ctl': {}}, {'slurmctld': ['ctl'], 'slurmd': ['n%d' % i for i in "
                                       "range(10 ** 6)]}, {})",
    "an option in 200 spellings": "inv(cluster={'hpc_gres_slurm_conf_options': {''.join(c.upper() if (i >> k) & 1 else c "
                                  "for k, c in enumerate('maxjobcount')): 5 for i in range(200)}})",
}

PRELUDE = r"""
import resource, sys, time
sys.path.insert(0, %(collections)r)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
SHAPE = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1}

def gpu(**kw):
    return dict({"index": 0, "type": "a100"}, **kw)

def inv(node=None, gpus=None, cluster=None):
    hv = dict(SHAPE, **(node or {}))
    if gpus is not None:
        hv["hpc_gres_gpus"] = gpus
    return {"ctl": {}, "gpu01": hv}, {"slurmctld": ["ctl"], "slurmd": ["gpu01"]}, cluster or {}

def nested(depth):
    top = cur = []
    for _level in range(depth):
        cur.append([])
        cur = cur[0]
    return top

def big(partitions=0, bad=False):
    hv = {"ctl": {}}
    for i in range(4096):
        node = dict(SHAPE, hpc_gres_gpus=[gpu(index=j) for j in range(8)])
        if bad:
            node.update(hpc_gres_node_sockets="\u00b2", hpc_gres_node_weight=2 ** 40, hpc_gres_node_features=["ib\n"])
        hv["n%%04d" %% i] = node
    groups = {"slurmctld": ["ctl"], "slurmd": [h for h in hv if h != "ctl"]}
    parts = [{"name": "p%%d" %% i, "nodes": groups["slurmd"]} for i in range(partitions)]
    return hv, groups, {"hpc_gres_partitions": parts} if parts else {}

case = %(case)s
start = time.process_time()
try:
    files = render_all(build_cluster_model(*case))
    outcome = "rendered %%d files" %% len(files)
except GresError as exc:
    outcome = "refused: %%d problem(s), message %%d chars" %% (len(exc.problems), len(str(exc)))
cpu = time.process_time() - start
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0
print("%%.3f %%.1f %%s" %% (cpu, peak, outcome))
"""


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--json", help="also write the results as JSON here")
    opts = parser.parse_args()
    collections = os.path.join(ROOT, ".cache", "collections")
    results = {}
    ok = True
    cpu_target = CPU_TARGET_S
    for name, expr in CASES.items():
        code = PRELUDE % {"collections": collections, "case": expr}
        proc = subprocess.run([sys.executable, "-c", code], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=600, check=False)
        if proc.returncode != 0:
            print("%-42s FAILED (traceback):\n%s" % (name, proc.stdout[-2000:]))
            ok = False
            continue
        cpu, peak, outcome = proc.stdout.strip().split(" ", 2)
        if name == YARDSTICK:
            cpu_target = max(CPU_TARGET_S, 2 * float(cpu))
        limit = cpu_target if name in LARGE else CPU_TARGET_S
        met = name == YARDSTICK or (float(cpu) < limit and float(peak) < MEMORY_TARGET_MB)
        ok = ok and met
        results[name] = {"cpu_s": float(cpu), "peak_mb": float(peak), "outcome": outcome, "met": met}
        over = "" if met else "  <-- OVER TARGET"
        print("%-42s %6.3f s CPU %7.1f MB peak  %s%s" % (name, float(cpu), float(peak), outcome, over))
    print("targets (each < %.0f s CPU, the 4,096-node ones < %.2f s = 2x the yardstick; < %d MB; no traceback): %s"
          % (CPU_TARGET_S, cpu_target, MEMORY_TARGET_MB, "met" if ok else "MISSED"))
    if opts.json:
        os.makedirs(os.path.dirname(os.path.abspath(opts.json)), exist_ok=True)
        with open(opts.json, "w") as handle:
            json.dump(results, handle, indent=2)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
