"""Benchmark the deploy path: verify, and a no-change deploy, over emulated nodes on the local connection.

Builds N emulated GPU nodes (default 256; each an HGX A100 8-GPU board: the emulated nvidia-smi replaying a real
recorded ``topo -m``, a fake sysfs/procfs tree, real device nodes made with mknod, so it needs root) and an
inventory where every node is a local-connection host with its own config and state directories. Then measures,
interleaved, median of --runs:

* the floor: a one-task playbook that runs ``ansible.builtin.ping`` on every node (one module run per node);
* ``playbooks/verify-gres.yml``: render, then ``gres_verify`` on every node (three emulated nvidia-smi calls each);
* ``playbooks/deploy-gres.yml`` when nothing changes: the nodes and the controller already have the rendered files
  installed and recorded (seeded once, as a previous deploy leaves them), so it renders, verifies, plans, installs
  nothing, restarts nothing and confirms every node. The one emulated Slurm part: ``scontrol`` on the controller is
  a script answering ``show node`` with the node IDLE and its declared Gres; the smoke test (srun) is off.

Round trips are counted by a connection plugin (bench/connection_plugins/counting_local.py): one per command the
connection runs, which is one SSH round trip with pipelining on (ANSIBLE_PIPELINING=1 here).
Wall time is that of the whole ansible-playbook process; CPU time is its user+sys (children included).

Run: .venv/bin/python bench/deploy_bench.py [--nodes 256] [--runs 3] [--forks 20] [--json FILE]
"""
import argparse
import json
import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[:0] = [os.path.join(ROOT, ".cache", "collections"), os.path.join(ROOT, "tests", "integration"),
                os.path.join(ROOT, "tests", "helpers"), os.path.join(ROOT, "tests", "emulator")]

import yaml  # noqa: E402

from emulated_node import Node, local_slurm_release, node_nvidia_smi  # noqa: E402
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf  # noqa: E402

PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
PLAYBOOK_BIN = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
GPUS = [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)]

FLOOR_PLAYBOOK = """---
- name: Floor - one trivial module run per node
  hosts: slurmd
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""

FAKE_SCONTROL = """#!%(python)s
# Benchmark stand-in for scontrol on the controller: every node IDLE with the Gres the bench's slurm.conf declares.
import json, sys
sys.path.insert(0, %(collections)r)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.hostlist import expand_hostlist
GRES = json.load(open(%(gres)r))
args = sys.argv[1:]
if args[:1] == ["-o"]:
    args = args[1:]
if args[:2] == ["show", "node"] and len(args) == 3:
    rc = 0
    for name in expand_hostlist(args[2]):
        if name not in GRES:
            print("Node %%s not found" %% name)
            rc = 1
            continue
        print("NodeName=%%s Arch=x86_64 CoresPerSocket=32\\n   CPUAlloc=0 CPUEfctv=128 CPUTot=128 CPULoad=0.00\\n"
              "   Gres=%%s\\n   NodeAddr=%%s NodeHostName=%%s Version=22.05.8\\n   RealMemory=1000 Sockets=2 Boards=1\\n"
              "   State=IDLE ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\\n   Partitions=main\\n"
              "   BootTime=2026-01-01T00:00:00 SlurmdStartTime=2026-01-01T00:00:10"
              %% (name, GRES[name], name, name))
    sys.exit(rc)
elif args[:1] == ["ping"]:
    print("Slurmctld(primary) at ctl01 is UP")
elif args[:1] == ["reconfigure"]:
    pass
else:
    sys.stderr.write("bench scontrol: unsupported %%s\\n" %% " ".join(args))
    sys.exit(2)
"""


def build(out, count):
    """N emulated nodes (reused when already built), the inventory, the fake scontrol; returns (inventory, nodes)."""
    nodes_dir = os.path.join(out, "nodes")
    os.makedirs(nodes_dir, exist_ok=True)
    nodes = []
    for i in range(1, count + 1):
        name = "gpu%04d" % i
        base = os.path.join(nodes_dir, name)
        if os.path.exists(os.path.join(base, "profile.json")):
            node = Node.__new__(Node)
            node.base, node.name = base, name
            node.root, node.dev_root = os.path.join(base, "root"), os.path.join(base, "devroot")
            node.profile_path = os.path.join(base, "profile.json")
        else:
            shutil.rmtree(base, ignore_errors=True)
            node = Node(base, name=name)
        nodes.append(node)
    ctl = os.path.join(out, "ctl01")
    hosts = {}
    for node in nodes:
        hosts[node.name] = {
            "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
            "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": GPUS,
            "hpc_gres_verify_nvidia_smi": node_nvidia_smi(node), "hpc_gres_verify_sysfs_root": node.root,
            "hpc_gres_verify_dev_root": node.dev_root, "hpc_gres_verify_slurmd_version": "22.05.8",
            "hpc_gres_verify_show_table": False,
            "hpc_gres_slurmd_config_dir": os.path.join(node.base, "etc"),
            "hpc_gres_slurmd_state_dir": os.path.join(node.base, "state"),
            "hpc_gres_slurmd_health_program": os.path.join(node.base, "sbin", "hpc-gres-health"),
            "hpc_gres_slurmd_health_library_dir": os.path.join(node.base, "lib"),
        }
    all_vars = {"ansible_connection": "counting_local", "ansible_python_interpreter": PYTHON,
                "hpc_gres_cluster_name": "bench",
                # the deploy reads this machine's slurmd -V / slurmctld -V (local connection): name that release
                "hpc_gres_slurm_version": local_slurm_release(),
                "hpc_gres_slurmd_scontrol": os.path.join(ctl, "scontrol"),
                "hpc_gres_slurmctld_scontrol": os.path.join(ctl, "scontrol"),
                "hpc_gres_slurmctld_config_dir": os.path.join(ctl, "etc"),
                "hpc_gres_slurmctld_state_dir": os.path.join(ctl, "state")}
    inventory = {"all": {"vars": all_vars, "children": {"slurmctld": {"hosts": {"ctl01": None}},
                                                        "slurmd": {"hosts": hosts}}}}
    path = os.path.join(out, "hosts.yml")
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle)
    return path, nodes, ctl


def seed(out, inventory, nodes, ctl):
    """Install the rendered files everywhere and record them as running, the way a previous deploy leaves them."""
    rendered = os.path.join(out, "rendered")
    shutil.rmtree(rendered, ignore_errors=True)
    run([PLAYBOOK_BIN, "-i", inventory, "playbooks/render-gres.yml", "-e", "hpc_gres_render_dir=%s" % rendered])
    with open(os.path.join(rendered, "slurm.conf")) as handle:
        slurm_text = handle.read()
    for node in nodes:
        for sub in ("etc", "state"):
            folder = os.path.join(node.base, sub)
            os.makedirs(folder, exist_ok=True)
            for name, src in (("slurm.conf", "slurm.conf"), ("cgroup.conf", "cgroup.conf"),
                              ("gres.conf", "%s/gres.conf" % node.name)):
                shutil.copyfile(os.path.join(rendered, src), os.path.join(folder, name))
                os.chmod(os.path.join(folder, name), 0o644)
    for sub in ("etc", "state"):
        os.makedirs(os.path.join(ctl, sub), exist_ok=True)
        for name in ("slurm.conf", "cgroup.conf"):
            shutil.copyfile(os.path.join(rendered, name), os.path.join(ctl, sub, name))
            os.chmod(os.path.join(ctl, sub, name), 0o644)
    gres = {}
    for name, node in parse_slurm_conf(slurm_text)["nodes"].items():
        gres[name] = ",".join("%s:%d(S:0-1)" % kv for kv in node["gres"].items())
    with open(os.path.join(ctl, "gres.json"), "w") as handle:
        json.dump(gres, handle)
    with open(os.path.join(ctl, "scontrol"), "w") as handle:
        handle.write(FAKE_SCONTROL % {"python": sys.executable, "gres": os.path.join(ctl, "gres.json"),
                                      "collections": os.path.join(ROOT, ".cache", "collections")})
    os.chmod(os.path.join(ctl, "scontrol"), 0o755)


def run(args, env=None):
    """(wall s, cpu s, stdout) of one ansible-playbook run; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run(args, cwd=ROOT, env=env or bench_env(None), stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.stderr.write(proc.stdout[-6000:])
        raise SystemExit("playbook failed: %s" % " ".join(args))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


def bench_env(log, forks=20):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_PIPELINING="1",
               ANSIBLE_FORKS=str(forks), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CONNECTION_PLUGINS=os.path.join(ROOT, "bench", "connection_plugins"))
    if log:
        env["BENCH_ROUNDTRIP_LOG"] = log
    return env


def measured(name, args, out, forks, nodes):
    """One run: wall, CPU, round trips per node (all hosts' commands / nodes), and the recap's changed count."""
    log = os.path.join(out, "%s.roundtrips" % name)
    if os.path.exists(log):
        os.unlink(log)
    wall, cpu, stdout = run(args, bench_env(log, forks))
    with open(log) as handle:
        hosts = [line.strip() for line in handle if line.strip()]
    changed = sum(int(n) for n in re.findall(r"changed=(\d+)", stdout))
    return {"wall_s": wall, "cpu_s": cpu, "round_trips": len(hosts), "round_trips_per_node": len(hosts) / nodes,
            "controller_round_trips": sum(1 for h in hosts if h == "ctl01"), "changed": changed}


def median_of(runs, key):
    return statistics.median(r[key] for r in runs)


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, default=256)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "deploy"))
    parser.add_argument("--json", help="also write the results as JSON here")
    opts = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("deploy_bench: emulated nodes need mknod (run as root)")

    os.makedirs(opts.out, exist_ok=True)
    inventory, nodes, ctl = build(opts.out, opts.nodes)
    seed(opts.out, inventory, nodes, ctl)
    floor_pb = os.path.join(opts.out, "floor.yml")
    with open(floor_pb, "w") as handle:
        handle.write(FLOOR_PLAYBOOK)
    runs = {"floor": [], "verify": [], "deploy_no_change": []}
    commands = {
        "floor": [PLAYBOOK_BIN, "-i", inventory, floor_pb],
        "verify": [PLAYBOOK_BIN, "-i", inventory, "playbooks/verify-gres.yml"],
        "deploy_no_change": [PLAYBOOK_BIN, "-i", inventory, "playbooks/deploy-gres.yml",
                             "-e", "hpc_gres_deploy_smoke_test=false", "-e", "hpc_gres_deploy_serial=100%"],
    }
    for _run in range(opts.runs):
        for name, args in commands.items():
            runs[name].append(measured(name, args, opts.out, opts.forks, opts.nodes))
    result = {"nodes": opts.nodes, "runs": opts.runs, "forks": opts.forks, "all": runs}
    floor_wall, floor_cpu = median_of(runs["floor"], "wall_s"), median_of(runs["floor"], "cpu_s")
    print("%d emulated nodes (8 GPUs each), local connection with pipelining, forks %d, median of %d runs"
          % (opts.nodes, opts.forks, opts.runs))
    for name in commands:
        wall, cpu = median_of(runs[name], "wall_s"), median_of(runs[name], "cpu_s")
        trips = median_of(runs[name], "round_trips_per_node")
        changed = max(r["changed"] for r in runs[name])
        result[name] = {"wall_s": wall, "cpu_s": cpu, "s_per_node": wall / opts.nodes,
                        "wall_over_floor": wall / floor_wall, "cpu_over_floor": cpu / floor_cpu,
                        "round_trips_per_node": trips, "changed": changed}
        print("%-17s %7.1f s wall (%.3f s/node, %.2fx floor), %7.1f s CPU (%.2fx floor), %.2f round trips/node%s"
              % (name, wall, wall / opts.nodes, wall / floor_wall, cpu, cpu / floor_cpu, trips,
                 "" if name == "floor" else ", changed=%d" % changed))
    if opts.json:
        with open(opts.json, "w") as handle:
            json.dump(result, handle, indent=2)
    return 0 if result["deploy_no_change"]["changed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
