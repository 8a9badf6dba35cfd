"""The control machine's CPU per task and host, as each forked worker spends it, over the deploy bench's nodes.

ansible-playbook forks a worker for every task on every host; the worker templates the task's arguments, builds the
module's payload and waits for the host. This runs one of the deploy bench's commands (``verify``:
``playbooks/verify-gres.yml``, ``deploy``: a no-change ``playbooks/deploy-gres.yml``) with every worker timing its
own CPU (``time.process_time``: the module and the commands it runs on the host are children, not counted) and
counting the Jinja templates it compiles, and prints per task: hosts, mean CPU per host in ms, mean compilations.
The whole run's CPU (user+sys, children included) and wall time come too; they also hold the hosts' share.

A comparison of two commits: run it on each, in the order A, B, B, A (the machine's speed drifts; docs/performance.md).

Run (as root: mknod): .venv/bin/python bench/worker_cpu.py [--size 128] [--runs 2] [--command deploy] [--seed]
      --seed first installs the rendered files of this size on its nodes and deploys once (a no-change deploy
      needs the state a deploy of the same size left).
"""
import argparse
import collections
import glob
import json
import os
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def wrap_playbook(out_dir, argv):
    """Run ansible-playbook in this process with every worker writing ``host, task, cpu s, compilations``."""
    import time

    import jinja2.environment
    from ansible.cli.playbook import main as playbook_main
    from ansible.executor.process import worker

    compiled = [0]
    compile_template = jinja2.environment.Environment.compile

    def counting_compile(self, *args, **kwargs):
        compiled[0] += 1
        return compile_template(self, *args, **kwargs)

    run = worker.WorkerProcess._run  # pylint: disable=protected-access

    def timed_run(self):
        start, compiled[0] = time.process_time(), 0
        try:
            return run(self)
        finally:
            with open(os.path.join(out_dir, "%d.json" % os.getpid()), "w") as handle:
                json.dump([self._host.name, self._task.get_name(),  # pylint: disable=protected-access
                           time.process_time() - start, compiled[0]], handle)

    jinja2.environment.Environment.compile = counting_compile
    worker.WorkerProcess._run = timed_run  # pylint: disable=protected-access
    sys.argv = ["ansible-playbook"] + argv
    return playbook_main()


def per_task(out_dir):
    """{task: (hosts, mean CPU ms, mean compilations)} from the workers' records."""
    rows = collections.defaultdict(list)
    for path in glob.glob(os.path.join(out_dir, "*.json")):
        with open(path) as handle:
            _host, task, cpu, compiled = json.load(handle)
        rows[task].append((cpu, compiled))
    return {task: (len(v), 1000.0 * sum(cpu for cpu, _n in v) / len(v), sum(n for _cpu, n in v) / float(len(v)))
            for task, v in rows.items()}


def main():
    if len(sys.argv) > 2 and sys.argv[1] == "--wrap":
        return wrap_playbook(sys.argv[2], sys.argv[3:])
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--size", type=int, default=128)
    parser.add_argument("--runs", type=int, default=2)
    parser.add_argument("--command", choices=["verify", "deploy"], default="deploy")
    parser.add_argument("--seed", action="store_true", help="first install this size's files and deploy once")
    parser.add_argument("--forks", type=int, default=20)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(HERE), "bench", "out", "deploy"))
    opts = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("worker_cpu: emulated nodes need mknod (run as root)")
    sys.path[:0] = [HERE]
    import deploy_bench
    from deploy_cluster import build_nodes
    from deploy_fakes import write_systemctl
    from emulated_node import local_slurm_release

    bench = deploy_bench.Bench(argparse.Namespace(forks=opts.forks, out=opts.out, serial="64"))
    write_systemctl(bench.fakebin, bench.ctl)
    inventory = os.path.join(opts.out, "hosts-%d-plain.yml" % opts.size)
    if opts.seed or not os.path.exists(inventory):
        inventory = deploy_bench.seed_plain(bench, build_nodes(opts.out, opts.size), local_slurm_release())
    print("worker CPU, %s at %d nodes, commit %s" % (opts.command, opts.size, deploy_bench.git_commit()), flush=True)
    deploy_bench.PLAYBOOK_BIN = os.path.join(tempfile.mkdtemp(prefix="worker-cpu-"), "ansible-playbook")
    wrapper = '#!/bin/sh\nexec "%s" "%s" --wrap "$WORKER_CPU_DIR" "$@"\n' % (sys.executable, os.path.abspath(__file__))
    with open(deploy_bench.PLAYBOOK_BIN, "w") as handle:
        handle.write(wrapper)
    os.chmod(deploy_bench.PLAYBOOK_BIN, 0o755)
    for run in range(opts.runs):
        out_dir = tempfile.mkdtemp(prefix="worker-cpu-run-")
        env = bench.env()
        env["WORKER_CPU_DIR"] = out_dir
        log = os.path.join(opts.out, "logs", "%d-worker-cpu-%s-%d.log" % (opts.size, opts.command, run))
        wall, cpu, _stdout = deploy_bench.timed_playbook(bench.commands(inventory)[opts.command], env, log)
        print("run %d: %.1f s wall, %.1f s CPU (hosts' share included)" % (run + 1, wall, cpu))
        tasks = per_task(out_dir)
        for task, (hosts, ms, compiled) in sorted(tasks.items(), key=lambda kv: -kv[1][0] * kv[1][1])[:5]:
            print("  %5d hosts  %7.1f ms/host  %5.1f compilations/host  %s" % (hosts, ms, compiled, task[:80]))
        shutil.rmtree(out_dir)
    shutil.rmtree(os.path.dirname(deploy_bench.PLAYBOOK_BIN))
    return 0


if __name__ == "__main__":
    sys.exit(main())
