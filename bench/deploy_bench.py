"""Benchmark the deploy path over emulated nodes on the local connection, at several cluster sizes in one run.

For each size (default 128, 256, 512 nodes; the nodes are built once for the largest, bench/deploy_cluster.py) the
bench seeds the state a previous deploy leaves (the rendered files installed and recorded as running, then one
deploy that installs the GPU health check and finds nothing else to do) and measures, interleaved, --runs times:

* ``floor``: a one-task playbook that runs ``ansible.builtin.ping`` on every node (one module run per node);
* ``verify``: ``playbooks/verify-gres.yml`` (render, then ``gres_verify`` on every node with its readiness checks);
* ``no_change``: ``playbooks/deploy-gres.yml`` when nothing changes: it renders, verifies, plans, installs nothing,
  restarts nothing and confirms every node (it must report changed=0);
* ``changing``: ``playbooks/deploy-gres.yml`` with the other inventory of the size, whose every node's gres.conf
  differs in meaning (GPU ``Flags=nvidia_gpu_env`` on or off): every node gets its new gres.conf installed and its
  slurmd restarted, in batches of --serial nodes (``hpc_gres_deploy_serial``), each restart confirmed through
  scontrol. Runs alternate the two inventories, so the next run's verify and no-change deploy start from the
  state this one left.

The emulated parts (bench/deploy_fakes.py): ``scontrol`` on the controller answers every node IDLE with its
declared Gres and the SlurmdStartTime of its last restart; ``systemctl`` first on PATH restarts ``slurmd@<node>``
by recording that time (a registration takes no time here: on a real cluster each batch also waits for its
slurmd daemons to register); the smoke test (srun) is off.

Round trips are counted by a connection plugin (bench/connection_plugins/counting_local.py): one per command the
connection runs, which is one SSH round trip with pipelining on (ANSIBLE_PIPELINING=1 here); commands delegated to
the controller count as controller round trips. Wall time is that of the whole ansible-playbook process; CPU time
is its user+sys (children included). The connection plugin also times each command's own CPU (the module and what it
runs, nvidia-smi included): on a real cluster that work runs on the hosts, each on its own CPUs, while here every
host's share runs on this machine's cores too. "hosts' CPU" is that sum; "ctl machine CPU" is the rest, what the
control machine itself spends (templating, task results, forks), compared with the floor's. Load average (1 min) is
read before and after every measurement.

Run (as root: mknod): .venv/bin/python bench/deploy_bench.py [--sizes 128,256,512] [--runs 3] [--runs-large 1]
      [--forks 20] [--serial 64] [--json FILE] [--profile]
"""
import argparse
import datetime
import json
import os
import re
import resource
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [HERE, os.path.join(ROOT, ".cache", "collections"), os.path.join(ROOT, "tests", "integration"),
                os.path.join(ROOT, "tests", "helpers"), os.path.join(ROOT, "tests", "emulator")]

from deploy_cluster import (VARIANTS, build_nodes, gres_conf_differs, seed_files,  # noqa: E402
                            write_inventory)
from deploy_fakes import write_systemctl  # noqa: E402

PLAYBOOK_BIN = os.path.join(ROOT, ".venv", "bin", "ansible-playbook")
MEASUREMENTS = ("floor", "verify", "no_change", "changing")
RESTART_PLAY = "PLAY [Deploy | restart slurmd where its files changed"

FLOOR_PLAYBOOK = """---
- name: Floor - one trivial module run per node
  hosts: slurmd
  gather_facts: false
  tasks:
    - name: Ping
      ansible.builtin.ping:
"""


class Bench(object):
    def __init__(self, opts):
        self.opts = opts
        self.out = opts.out
        self.ctl = os.path.join(self.out, "ctl01")
        self.fakebin = os.path.join(self.out, "fakebin")

    def env(self, log=None, nvsmi_log=None, profile=False):
        env = playbook_env(self.opts.forks, PATH=self.fakebin + os.pathsep + os.environ.get("PATH", ""))
        for key in ("BENCH_ROUNDTRIP_LOG", "BENCH_NVSMI_LOG"):
            env.pop(key, None)
        if log:
            env["BENCH_ROUNDTRIP_LOG"] = log
        if nvsmi_log:
            env["BENCH_NVSMI_LOG"] = nvsmi_log
        if profile:
            env["ANSIBLE_CALLBACKS_ENABLED"] = "ansible.posix.profile_tasks"
            env["PROFILE_TASKS_TASK_OUTPUT_LIMIT"] = "40"
        return env

    def playbook(self, args, env, log_name):
        """(wall s, cpu s, stdout) of one ansible-playbook run, its output kept in logs/; exits on failure."""
        os.makedirs(os.path.join(self.out, "logs"), exist_ok=True)
        return timed_playbook(args, env, os.path.join(self.out, "logs", "%s.log" % log_name))

    def commands(self, inventory):
        deploy = ["-i", inventory, "playbooks/deploy-gres.yml", "-e", "hpc_gres_deploy_smoke_test=false",
                  "-e", "hpc_gres_deploy_serial=%s" % self.opts.serial]
        return {"floor": ["-i", inventory, os.path.join(self.out, "floor.yml")],
                "verify": ["-i", inventory, "playbooks/verify-gres.yml"],
                "deploy": deploy}

    def measured(self, name, args, size, profile=False, run=0):
        """One run: wall, CPU, round trips (nodes, controller), changes per host, restarts, batches, load."""
        log = os.path.join(self.out, "%s.roundtrips" % name)
        nvsmi = os.path.join(self.out, "%s.nvidia-smi" % name)
        for path in (log, nvsmi, os.path.join(self.ctl, "scontrol.log")):
            if os.path.exists(path):
                os.unlink(path)
        restarts_before = count_lines(os.path.join(self.ctl, "restarts.log"))
        load_before, molecule = os.getloadavg()[0], molecule_runs()
        wall, cpu, stdout = self.playbook(args, self.env(log, nvsmi, profile), "%d-%s-%d" % (size, name, run))
        load_after = os.getloadavg()[0]
        rows = [line.split() for line in open(log) if line.strip()] if os.path.exists(log) else []
        trips = [row[0] for row in rows]
        command_cpu = sum(float(row[1]) for row in rows if len(row) > 1)
        recap = {m.group(1): int(m.group(2)) for m in
                 re.finditer(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)", stdout, re.M)}
        node_trips = sum(1 for h in trips if h != "ctl01")
        result = {
            "wall_s": wall, "cpu_s": cpu, "s_per_node": wall / size,
            # what the hosts' commands took (on a real cluster, on the hosts) and what is left: the control machine's
            "command_cpu_s": command_cpu, "control_cpu_s": cpu - command_cpu,
            "round_trips_per_node": len(trips) / size, "node_round_trips_per_node": node_trips / size,
            "controller_round_trips": len(trips) - node_trips,
            "changed": sum(recap.values()),
            "nodes_changed": sum(1 for h, c in recap.items() if h.startswith("gpu") and c > 0),
            "restarts": count_lines(os.path.join(self.ctl, "restarts.log")) - restarts_before,
            # a play that matches no host prints its header once, with "skipping: no hosts matched"
            "restart_batches": stdout.count(RESTART_PLAY) - len(re.findall(
                re.escape(RESTART_PLAY) + r"[^\n]*\nskipping: no hosts matched", stdout)),
            "scontrol_calls": count_lines(os.path.join(self.ctl, "scontrol.log")),
            "nvidia_smi_per_node": count_lines(nvsmi) / size,
            "load_before": load_before, "load_after": load_after, "molecule_running": molecule,
        }
        if profile:
            result["profile"] = profile_lines(stdout)
        return result

    def render(self, inventory, size, variant):
        rendered = os.path.join(self.out, "rendered-%d-%s" % (size, variant))
        self.playbook(["-i", inventory, "playbooks/render-gres.yml", "-e", "hpc_gres_render_dir=%s" % rendered],
                      self.env(), "%d-render-%s" % (size, variant))
        return rendered


def playbook_env(forks, **extra):
    """The environment every bench run of ansible-playbook starts from: the checkout's ansible.cfg, pipelining, the
    bench's connection plugins, no callback enabled from outside; ``extra`` added."""
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_PIPELINING="1",
               ANSIBLE_FORKS=str(forks), ANSIBLE_NOCOLOR="1",
               ANSIBLE_CONNECTION_PLUGINS=os.path.join(HERE, "connection_plugins"))
    env.pop("ANSIBLE_CALLBACKS_ENABLED", None)
    env.update(extra)
    return env


def timed_playbook(args, env, log):
    """(wall s, cpu s, stdout) of one ansible-playbook run (CPU: user+sys, children included), its output written
    to ``log``; exits on failure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    proc = subprocess.run([PLAYBOOK_BIN] + args, cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    with open(log, "w") as handle:
        handle.write(proc.stdout)
    if proc.returncode != 0:
        failures = [line for line in proc.stdout.splitlines() if line.startswith(("fatal:", "failed:"))]
        sys.stderr.write("\n".join(failures[:5]) + "\n" + proc.stdout[-3000:])
        raise SystemExit("playbook failed (rc %d, output in %s): %s" % (proc.returncode, log, " ".join(args)))
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), proc.stdout


def count_lines(path):
    if not os.path.exists(path):
        return 0
    with open(path) as handle:
        return sum(1 for line in handle if line.strip())


def molecule_runs():
    """How many `molecule test` processes run on this machine (other engineers' tests share it)."""
    proc = subprocess.run(["pgrep", "-fc", "bin/molecule test"], stdout=subprocess.PIPE, text=True, check=False)
    return int(proc.stdout.strip() or 0)


def profile_lines(stdout):
    """profile_tasks' summary: the slowest tasks, 'NAME ---- 12.34s' lines after the recap."""
    tail = stdout.split("PLAY RECAP", 1)[-1]
    return [line.strip() for line in tail.splitlines() if re.search(r"-{3,} +\d+\.\d+s$", line.strip())]


def git_commit():
    proc = subprocess.run(["git", "-C", ROOT, "rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE, text=True,
                          check=False)
    dirty = subprocess.run(["git", "-C", ROOT, "status", "--porcelain", "--untracked-files=no", "--", "plugins",
                            "roles", "playbooks"], stdout=subprocess.PIPE, text=True, check=False).stdout.strip()
    return proc.stdout.strip() + (" (with uncommitted changes in plugins/roles/playbooks)" if dirty else "")


def summarize(runs, floor):
    """Median and spread of each run's figures; ratios to the floor's median."""
    wall = statistics.median(r["wall_s"] for r in runs)
    cpu = statistics.median(r["cpu_s"] for r in runs)
    out = {key: statistics.median(r[key] for r in runs) for key in runs[0] if isinstance(runs[0][key], (int, float))}
    out.update(wall_s=wall, cpu_s=cpu, walls=[round(r["wall_s"], 1) for r in runs],
               loads=[round(r["load_before"], 1) for r in runs] + [round(runs[-1]["load_after"], 1)],
               changed_max=max(r["changed"] for r in runs), nodes_changed_min=min(r["nodes_changed"] for r in runs))
    if floor:
        out["wall_over_floor"] = wall / floor["wall_s"]
        out["cpu_over_floor"] = cpu / floor["cpu_s"]
        out["control_over_floor"] = out["control_cpu_s"] / floor["control_cpu_s"]
    return out


def measure_size(bench, nodes, release, runs):
    """Seed, then --runs rounds of floor, verify, no-change deploy, changing deploy at len(nodes) nodes."""
    size = len(nodes)
    inventories = {v: write_inventory(bench.out, nodes, v, release) for v in VARIANTS}
    rendered = {v: bench.render(inventories[v], size, v) for v in VARIANTS}
    if not gres_conf_differs(rendered["plain"], rendered["env"], nodes):
        raise SystemExit("deploy bench: the two inventories must differ in every gres.conf and not in slurm.conf")
    state = "plain"
    seed_files(bench.out, nodes, rendered[state])
    seed = bench.measured("seed", bench.commands(inventories[state])["deploy"], size)
    print("  %d nodes seeded: %.0f s (health check installed where missing; %d restarts)"
          % (size, seed["wall_s"], seed["restarts"]), flush=True)
    if seed["restarts"]:
        raise SystemExit("deploy bench: the seed deploy restarted slurmd (%d): the seeded files are not the render's"
                         % seed["restarts"])
    per = {m: [] for m in MEASUREMENTS}
    problems = []
    for number in range(runs):
        other = "env" if state == "plain" else "plain"
        now = bench.commands(inventories[state])
        run = number + 1
        per["floor"].append(bench.measured("floor", now["floor"], size, run=run))
        per["verify"].append(bench.measured("verify", now["verify"], size, run=run))
        per["no_change"].append(bench.measured("no_change", now["deploy"], size, run=run))
        per["changing"].append(bench.measured("changing", bench.commands(inventories[other])["deploy"], size,
                                              run=run))
        state = other
        nc, ch = per["no_change"][-1], per["changing"][-1]
        if nc["changed"] or nc["restarts"]:
            problems.append("%d nodes, run %d: no-change deploy reported changed=%d, %d restarts"
                            % (size, number + 1, nc["changed"], nc["restarts"]))
        if ch["nodes_changed"] != size or ch["restarts"] != size:
            problems.append("%d nodes, run %d: changing deploy changed %d nodes, restarted %d slurmd (expected %d)"
                            % (size, number + 1, ch["nodes_changed"], ch["restarts"], size))
        print("  %d nodes, run %d/%d: %s" % (size, number + 1, runs, ", ".join(
            "%s %.0f s" % (m, per[m][-1]["wall_s"]) for m in MEASUREMENTS)), flush=True)
    floor = summarize(per["floor"], None)
    summary = {"floor": floor}
    for name in MEASUREMENTS[1:]:
        summary[name] = summarize(per[name], floor)
    summary["floor"]["wall_over_floor"] = summary["floor"]["cpu_over_floor"] = 1.0
    summary["floor"]["control_over_floor"] = 1.0
    return {"runs": per, "summary": summary, "seed": seed}, problems


def print_table(results, sizes):
    head = ("nodes", "measurement", "wall s", "runs (wall s)", "s/node", "x floor", "CPU s", "CPU x fl",
            "hosts' CPU s", "ctl machine CPU x fl", "trips/node", "ctl trips", "restarts", "batches", "load")
    rows = [head]
    for size in sizes:
        for name in MEASUREMENTS:
            s = results[size]["summary"][name]
            rows.append((str(size), name, "%.1f" % s["wall_s"], "/".join("%.0f" % w for w in s["walls"]),
                         "%.3f" % s["s_per_node"], "%.2f" % s["wall_over_floor"], "%.0f" % s["cpu_s"],
                         "%.2f" % s["cpu_over_floor"], "%.0f" % s["command_cpu_s"],
                         "%.2f" % s["control_over_floor"], "%.2f" % s["round_trips_per_node"],
                         "%d" % s["controller_round_trips"], "%d" % s["restarts"], "%d" % s["restart_batches"],
                         "-".join("%.1f" % x for x in (min(s["loads"]), max(s["loads"])))))
    widths = [max(len(r[i]) for r in rows) for i in range(len(head))]
    for row in rows:
        print("  ".join(c.rjust(w) if i > 1 else c.ljust(w) for i, (c, w) in enumerate(zip(row, widths))))


def targets(results, sizes):
    """Issue 27's acceptance figures, each with its value and whether it is met."""
    small, large = results[sizes[0]]["summary"], results[sizes[-1]]["summary"]
    out = [
        ("no-change deploy at %d nodes <= 2.5x floor" % sizes[-1], large["no_change"]["wall_over_floor"], 2.5),
        ("no-change deploy round trips per node <= 2 (controller's included)",
         large["no_change"]["round_trips_per_node"], 2.0),
        ("verify at %d nodes <= 2x floor" % sizes[-1], large["verify"]["wall_over_floor"], 2.0),
    ]
    if len(sizes) > 1:
        for name in MEASUREMENTS:
            out.append(("%s s/node at %d / at %d <= 1.2" % (name, sizes[-1], sizes[0]),
                        large[name]["s_per_node"] / small[name]["s_per_node"], 1.2))
    return [{"target": t, "value": round(v, 3), "limit": limit, "met": v <= limit} for t, v, limit in out]


def seed_plain(bench, nodes, release):
    """The plain inventory of len(nodes) nodes, its render installed on them and deployed once: the state a
    no-change deploy of that size starts from. Returns the inventory's path."""
    inventory = write_inventory(bench.out, nodes, "plain", release)
    seed_files(bench.out, nodes, bench.render(inventory, len(nodes), "plain"))
    bench.measured("seed", bench.commands(inventory)["deploy"], len(nodes))
    return inventory


def profile(bench, nodes, release):
    """profile_tasks over verify and a no-change deploy at len(nodes) nodes (seeded as for a measurement)."""
    size = len(nodes)
    inventory = seed_plain(bench, nodes, release)
    out = {}
    for name, args in (("verify", bench.commands(inventory)["verify"]),
                       ("no_change", bench.commands(inventory)["deploy"])):
        out[name] = bench.measured(name, args, size, profile=True)
        print("%s at %d nodes: %.1f s wall, %.1f s CPU, %.2f nvidia-smi runs per node; slowest tasks:"
              % (name, size, out[name]["wall_s"], out[name]["cpu_s"], out[name]["nvidia_smi_per_node"]))
        for line in out[name]["profile"][:15]:
            print("    " + line)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default="128,256,512", help="cluster sizes to measure (comma-separated)")
    parser.add_argument("--runs", type=int, default=3, help="runs per size up to 256 nodes (median reported)")
    parser.add_argument("--runs-large", type=int, default=1, help="runs per size above 256 nodes")
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--serial", default="64", help="hpc_gres_deploy_serial: slurmd restarts per batch")
    parser.add_argument("--out", default=os.path.join(ROOT, "bench", "out", "deploy"))
    parser.add_argument("--json", help="also write the results as JSON here")
    parser.add_argument("--profile", action="store_true",
                        help="instead: profile_tasks over verify and a no-change deploy at the smallest size")
    opts = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("deploy_bench: emulated nodes need mknod (run as root)")
    sizes = sorted({int(s) for s in opts.sizes.split(",")})
    from emulated_node import local_slurm_release

    bench = Bench(opts)
    os.makedirs(opts.out, exist_ok=True)
    with open(os.path.join(opts.out, "floor.yml"), "w") as handle:
        handle.write(FLOOR_PLAYBOOK)
    write_systemctl(bench.fakebin, bench.ctl)
    release = local_slurm_release()
    started = datetime.datetime.now()
    print("deploy bench, %s, commit %s, forks %d, restarts in batches of %s; load %.1f, molecule runs: %d"
          % (started.strftime("%Y-%m-%d %H:%M"), git_commit(), opts.forks, opts.serial, os.getloadavg()[0],
             molecule_runs()), flush=True)
    nodes = build_nodes(opts.out, sizes[-1])
    if opts.profile:
        result = {"profile": profile(bench, nodes[:sizes[0]], release)}
        if opts.json:
            with open(opts.json, "w") as handle:
                json.dump(result, handle, indent=2)
        return 0
    results, problems = {}, []
    for size in sizes:
        runs = opts.runs if size <= 256 else opts.runs_large
        results[size], found = measure_size(bench, nodes[:size], release, runs)
        problems.extend(found)
    print("\n%d to %d emulated nodes (8 GPUs each), local connection with pipelining, forks %d, serial %s; "
          "median of the runs; %s" % (sizes[0], sizes[-1], opts.forks, opts.serial,
                                      ", ".join("%d: %d run(s)" % (s, len(results[s]["runs"]["floor"]))
                                                for s in sizes)))
    print_table(results, sizes)
    if len(sizes) > 1:
        print("growth, s/node at %d / at %d: %s" % (sizes[-1], sizes[0], ", ".join(
            "%s %.2f" % (m, results[sizes[-1]]["summary"][m]["s_per_node"] / results[sizes[0]]["summary"][m]["s_per_node"])
            for m in MEASUREMENTS)))
    checks = targets(results, sizes)
    for check in checks:
        print("%-8s %s: %.2f" % ("met" if check["met"] else "MISSED", check["target"], check["value"]))
    for problem in problems:
        print("WRONG: " + problem)
    print("took %.0f min; load average now %.1f" % ((datetime.datetime.now() - started).total_seconds() / 60,
                                                    os.getloadavg()[0]))
    if opts.json:
        with open(opts.json, "w") as handle:
            json.dump({"date": started.isoformat(timespec="minutes"), "commit": git_commit(), "forks": opts.forks,
                       "serial": opts.serial, "sizes": sizes, "results": {str(s): r for s, r in results.items()},
                       "targets": checks, "problems": problems}, handle, indent=2)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
