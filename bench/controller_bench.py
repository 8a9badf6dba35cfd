"""Benchmark the control machine's own work per host, at sizes the emulated nodes cannot reach, with and without
the callback hpc.slurm_gres.gc_freeze.

Every host of the inventory is a copy of one emulated node of bench/deploy_bench.py (bench/deploy_cluster.py: an
HGX A100 8-GPU board), under its own name. The connection (bench/connection_plugins/replay_local.py) runs each
module for real once, in a recording run on that one node, and then replays its answer to every host: the hosts
cost nothing, and what is measured is ansible-playbook itself, for

* ``floor``: one ``ansible.builtin.ping`` per host;
* ``verify``: ``playbooks/verify-gres.yml`` (the render, the argument check and ``gres_verify`` on every host, the
  summary).

Each is run with the callback off and on (``ANSIBLE_CALLBACKS_ENABLED=hpc.slurm_gres.gc_freeze``), interleaved, and
reported as the process's CPU (user+sys, children included) per host. On a real cluster the hosts' work runs on the
hosts, in parallel, so this is what bounds a large run on a given control machine.

Run (as root, for the emulated node's mknod): .venv/bin/python bench/controller_bench.py [--sizes 512,2048]
      [--runs 1] [--forks 20] [--json FILE]
"""
import argparse
import copy
import datetime
import json
import os
import shutil
import sys

import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(ROOT, ".cache", "collections"), os.path.join(ROOT, "tests", "integration"),
                os.path.join(ROOT, "tests", "helpers"), os.path.join(ROOT, "tests", "emulator")]

from deploy_bench import FLOOR_PLAYBOOK, git_commit, playbook_env, timed_playbook  # noqa: E402
from deploy_cluster import VARIANTS, build_nodes, write_inventory  # noqa: E402

CALLBACK = "hpc.slurm_gres.gc_freeze"


def inventory_of(template, size, out):
    """hosts-<size>.yml: ``size`` copies of the template's one node, named gpu0001..., replayed connection."""
    with open(template) as handle:
        inventory = yaml.safe_load(handle)
    group = inventory["all"]["children"]["slurmd"]["hosts"]
    (node,) = group.values()
    inventory["all"]["children"]["slurmd"]["hosts"] = {"gpu%04d" % i: copy.deepcopy(node) for i in range(1, size + 1)}
    inventory["all"]["vars"]["ansible_connection"] = "replay_local"
    path = os.path.join(out, "hosts-%d.yml" % size)
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="512,2048", help="inventory sizes (comma-separated)")
    parser.add_argument("--runs", type=int, default=1, help="runs per size, measurement and callback setting")
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "controller"))
    parser.add_argument("--json", help="also write the results as JSON here")
    opts = parser.parse_args()
    sizes = [int(s) for s in opts.sizes.split(",")]

    os.makedirs(opts.out, exist_ok=True)
    replay = os.path.join(opts.out, "replay")
    shutil.rmtree(replay, ignore_errors=True)
    os.makedirs(replay)
    logs = os.path.join(opts.out, "logs")
    os.makedirs(logs, exist_ok=True)
    floor = os.path.join(opts.out, "floor.yml")
    with open(floor, "w") as handle:
        handle.write(FLOOR_PLAYBOOK)
    nodes = build_nodes(os.path.join(ROOT, "bench", "out", "deploy"), 1)
    template = write_inventory(opts.out, nodes, VARIANTS[0], "22.05.8")

    base = playbook_env(opts.forks, BENCH_REPLAY_DIR=replay)
    settings = {"off": base, "on": dict(base, ANSIBLE_CALLBACKS_ENABLED=CALLBACK)}
    playbooks = {"floor": [floor], "verify": ["playbooks/verify-gres.yml"]}

    # the recording run: each module once, for real, on the one node
    first = inventory_of(template, 1, opts.out)
    for name, args in playbooks.items():
        timed_playbook(["-i", first] + args, base, os.path.join(logs, "record-%s.log" % name))
    recorded = sorted(os.listdir(replay))

    results = {}
    for size in sizes:
        inventory = inventory_of(template, size, opts.out)
        for attempt in range(opts.runs):
            for name, args in playbooks.items():
                for setting, env in settings.items():
                    wall, cpu, _stdout = timed_playbook(["-i", inventory] + args, env, os.path.join(
                        logs, "%d-%s-%s-%d.log" % (size, name, setting, attempt)))
                    row = results.setdefault("%d %s %s" % (size, name, setting), [])
                    row.append({"wall_s": wall, "cpu_s": cpu, "cpu_ms_per_host": 1000 * cpu / size})
                    print("%5d hosts  %-6s gc_freeze %-3s  wall %7.1f s  CPU %7.1f s  = %5.1f ms per host"
                          % (size, name, setting, wall, cpu, 1000 * cpu / size), flush=True)

    def median_ms(key):
        values = sorted(r["cpu_ms_per_host"] for r in results[key])
        return values[len(values) // 2]

    print("\nCPU ms per host (median): size, measurement, off -> on")
    for size in sizes:
        for name in playbooks:
            off, on = median_ms("%d %s off" % (size, name)), median_ms("%d %s on" % (size, name))
            print("  %5d %-6s %6.1f -> %6.1f (%+.0f%%)" % (size, name, off, on, 100 * (on - off) / off))
    if opts.json:
        with open(opts.json, "w") as handle:
            json.dump({"date": datetime.datetime.now().isoformat(timespec="seconds"), "commit": git_commit(),
                       "sizes": sizes, "forks": opts.forks, "recorded": recorded, "results": results}, handle,
                      indent=1)


if __name__ == "__main__":
    main()
