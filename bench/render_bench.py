"""Benchmark the renderer at scale: 16,384 nodes / 131,072 GPUs in 8 node shapes (--nodes-per-shape 2048).

Generates an inventory (one group per shape, shape variables in group_vars, so every node carries its own
hpc_gres_gpus through the normal variable machinery) and reports wall and CPU time for:
  * the pure functions (build_cluster_model, render_all with its consistency proof) on plain dicts;
  * the floor: a one-task playbook that merely reads every node's hpc_gres_gpus from the same inventory;
  * the whole render-only playbook (validation, rendering, proof and writing all 16,386 files), first into an
    empty directory, then again over the written tree (nothing changes).
Playbook wall time is that of the whole ansible-playbook process, CPU time its user+sys; floor and render runs
are interleaved so both see the same machine load.
Run: .venv/bin/python bench/render_bench.py [--nodes-per-shape N] [--runs N] [--json FILE]
"""
import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model  # noqa: E402
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all  # noqa: E402
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import users_guide_files  # noqa: E402

NODES_PER_SHAPE = 2048
GPUS_PER_NODE = 8

# name prefix, GPU type, sockets, cores/socket, threads/core, RealMemory MiB, shards per GPU, GPU minors swapped
SHAPES = [
    ("a100s", "a100", 2, 64, 2, 1031000, None),
    ("h100s", "h100", 2, 56, 2, 2063000, None),
    ("h200s", "h200", 2, 48, 2, 2063000, None),
    ("l40s", "l40s", 2, 32, 2, 770000, 4),
    ("a40s", "a40", 2, 24, 2, 515000, None),
    ("a6ks", "rtx_a6000", 1, 64, 2, 515000, 2),
    ("v100s", "v100", 2, 20, 2, 385000, None),
    ("gh", "h100_nvl", 2, 32, 1, 1547000, None),
]


def shape_vars(shape):
    _name, gtype, sockets, cps, tpc, mem, shards = shape
    per_socket = GPUS_PER_NODE // sockets
    gpus = []
    for i in range(GPUS_PER_NODE):
        sock = i // per_socket
        gpu = {"index": i, "type": gtype, "cores": "%d-%d" % (sock * cps, sock * cps + cps - 1)}
        if shards:
            gpu["shards"] = shards
        gpus.append(gpu)
    return {"hpc_gres_node_sockets": sockets, "hpc_gres_node_cores_per_socket": cps, "hpc_gres_node_threads_per_core": tpc,
            "hpc_gres_node_real_memory": mem, "hpc_gres_gpus": gpus}


def host_names(prefix):
    return ["%s%04d" % (prefix, n) for n in range(1, NODES_PER_SHAPE + 1)]


def write_inventory(path):
    if os.path.isdir(path):
        shutil.rmtree(path)
    os.makedirs(os.path.join(path, "group_vars"))
    lines = ["---", "all:", "  children:", "    slurmctld:", "      hosts:", "        ctl01:",
             "    slurmd:", "      children:"]
    for shape in SHAPES:
        prefix = shape[0]
        lines += ["        shape_%s:" % prefix, "          hosts:",
                  "            %s[0001:%04d]:" % (prefix, NODES_PER_SHAPE)]
        with open(os.path.join(path, "group_vars", "shape_%s.yml" % prefix), "w") as handle:
            handle.write("---\n" + json.dumps(shape_vars(shape), indent=1) + "\n")
    with open(os.path.join(path, "hosts.yml"), "w") as handle:
        handle.write("\n".join(lines) + "\n")
    with open(os.path.join(path, "group_vars", "all.yml"), "w") as handle:
        handle.write("---\nslurm_cluster_name: bench\nslurm_gres_autodetect: \"off\"\n")


FLOOR_PLAYBOOK = """---
- name: Floor - read every node's hpc_gres_gpus
  hosts: localhost
  connection: local
  gather_facts: false
  tasks:
    - name: Count the GPUs of every node
      ansible.builtin.debug:
        msg: "{{ groups['slurmd'] | map('extract', hostvars, 'hpc_gres_gpus') | map('length') | sum }}"
"""


def time_pure():
    hostvars = {"ctl01": {}}
    groups = {"all": ["ctl01"], "slurmctld": ["ctl01"], "slurmd": []}
    for shape in SHAPES:
        hv = shape_vars(shape)
        for host in host_names(shape[0]):
            hostvars[host] = hv
            groups["slurmd"].append(host)
            groups["all"].append(host)
    cluster = {"hpc_gres_cluster_name": "bench"}
    t0 = time.perf_counter()
    model = build_cluster_model(hostvars, groups, cluster)
    t1 = time.perf_counter()
    files = render_all(model)
    t2 = time.perf_counter()
    guide = users_guide_files(model)
    t3 = time.perf_counter()
    node_lines = sum(1 for line in files["slurm.conf"].splitlines() if line.startswith("NodeName="))
    gpus = sum(len(n["gpus"]) for n in model["nodes"])
    return {"build_cluster_model_s": t1 - t0, "render_all_s": t2 - t1, "users_guide_s": t3 - t2,
            "users_guide_request_lines": sum(1 for line in guide["USERS.md"].splitlines()
                                             if line.startswith("sbatch ")),
            "pure_total_s": t2 - t0,
            "nodes": len(model["nodes"]), "gpus": gpus, "files": len(files), "nodename_lines": node_lines}


def run_playbook(args, env):
    """(wall s, CPU s) of one ansible-playbook run."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    elapsed = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-5000:])
        raise SystemExit("playbook failed: %s" % " ".join(args))
    return elapsed, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def main():
    global NODES_PER_SHAPE
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3, help="playbook runs per measurement (median reported)")
    parser.add_argument("--nodes-per-shape", type=int, default=2048,
                        help="nodes in each of the 8 shapes (default %(default)s: 16,384 nodes)")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out"), help="work directory")
    parser.add_argument("--json", help="also write the results as JSON here")
    parser.add_argument("--pure-only", action="store_true", help="time only the pure functions")
    opts = parser.parse_args()
    NODES_PER_SHAPE = opts.nodes_per_shape

    inv = os.path.join(opts.out, "inventory")
    write_inventory(inv)
    floor_pb = os.path.join(opts.out, "floor.yml")
    with open(floor_pb, "w") as handle:
        handle.write(FLOOR_PLAYBOOK)
    render_dir = os.path.join(opts.out, "rendered")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    playbook = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
    if not os.path.exists(playbook):
        playbook = "ansible-playbook"

    result = {"pure": time_pure()}
    if opts.pure_only:
        print(json.dumps(result["pure"], indent=1))
        return 0
    runs = {"floor": [], "fresh": [], "rerun": []}
    render = [playbook, "-i", inv, "playbooks/render-gres.yml", "-e", "hpc_gres_render_dir=%s" % render_dir]
    for _run in range(opts.runs):
        runs["floor"].append(run_playbook([playbook, "-i", inv, floor_pb], env))
        if os.path.isdir(render_dir):
            shutil.rmtree(render_dir)
        runs["fresh"].append(run_playbook(render, env))
        runs["rerun"].append(run_playbook(render, env))
    written = sum(len(names) for _folder, _dirs, names in os.walk(render_dir))
    pb = {"runs": opts.runs, "files_written": written}
    for name, values in runs.items():
        pb[name + "_s"] = statistics.median(wall for wall, cpu in values)
        pb[name + "_cpu_s"] = statistics.median(cpu for wall, cpu in values)
        pb["all_" + name] = values
    pb["fresh_over_floor"] = pb["fresh_s"] / pb["floor_s"]
    pb["fresh_over_floor_cpu"] = pb["fresh_cpu_s"] / pb["floor_cpu_s"]
    pb["beyond_floor_s"] = pb["fresh_s"] - pb["floor_s"]
    result["playbooks"] = pb
    pure = result["pure"]
    print("inventory: %d nodes, %d GPUs, %d shapes (%s)" % (pure["nodes"], pure["gpus"], len(SHAPES), inv))
    print("pure functions: build_cluster_model %.3f s, render_all (with proof) %.3f s, total %.3f s"
          % (pure["build_cluster_model_s"], pure["render_all_s"], pure["pure_total_s"]))
    print("users' guide (USERS.md, USERS.motd): %.3f s, %d request lines"
          % (pure["users_guide_s"], pure["users_guide_request_lines"]))
    print("slurm.conf: %d NodeName lines; files rendered: %d, written: %d"
          % (pure["nodename_lines"], pure["files"], written))
    print("floor playbook (read every hpc_gres_gpus): %.2f s wall, %.2f s CPU (median of %d)"
          % (pb["floor_s"], pb["floor_cpu_s"], opts.runs))
    print("render-only playbook, empty dir: %.2f s wall = %.2fx floor; %.2f s CPU = %.2fx floor"
          % (pb["fresh_s"], pb["fresh_over_floor"], pb["fresh_cpu_s"], pb["fresh_over_floor_cpu"]))
    print("render-only playbook, unchanged tree: %.2f s wall, %.2f s CPU" % (pb["rerun_s"], pb["rerun_cpu_s"]))
    if opts.json:
        with open(opts.json, "w") as handle:
            json.dump(result, handle, indent=2)
    ok = (pure["nodename_lines"] < 20 and pb["fresh_over_floor"] <= 1.25)
    print("target (render-only <= 1.25x the floor, wall, same run; < 20 NodeName lines): %s"
          % ("met" if ok else "MISSED"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
