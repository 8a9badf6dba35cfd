"""Generated inventories, valid and hostile, through the render-only playbook, judged by the real slurmd.

Each inventory from tests/helpers/inventory_strategies.py is written as an inventory directory (hosts.yml,
host_vars, group_vars/all.yml) and rendered with
``ansible-playbook playbooks/render-gres.yml -i INV -e hpc_gres_render_dir=OUT``. Then:
* a refusal must exit non-zero, write nothing, show no traceback, and name in its message exactly the hosts and
  fields the pure functions name for the same inventory (so Ansible's loading changes nothing);
* a render must write the files the pure functions render, and every GPU node's gres.conf must pass the real
  ``slurmd -N NODE -G`` with counts equal to slurm.conf (tests/integration/slurmd_oracle.py).
Every case that breaks a rule is printed with its inventory and kept under --keep for a regression test.

  .venv/bin/python scripts/fuzz-render.py --examples 40 [--seed N] [--keep DIR]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for sub in (".cache/collections", "tests/helpers", "tests/emulator", "tests/integration"):
    sys.path.insert(0, os.path.join(ROOT, sub))

import yaml  # noqa: E402
from hypothesis import HealthCheck, Phase, given, settings  # noqa: E402

import inventory_strategies as strategies  # noqa: E402
from test_render_property_slurmd import ORACLE_VERSION, judge_with_slurmd  # noqa: E402
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import MANIFEST  # noqa: E402

_PROBLEM_RE = re.compile(r"host (\S+): (\S+): expected")


def _plain(value):
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def write_inventory(path, inventory):
    hostvars, groups, cluster = inventory
    os.makedirs(os.path.join(path, "host_vars"))
    os.makedirs(os.path.join(path, "group_vars"))
    tree = {"all": {"children": {group: {"hosts": {h: None for h in hosts}}
                                 for group, hosts in groups.items() if group != "all" and hosts}}}
    with open(os.path.join(path, "hosts.yml"), "w") as handle:
        yaml.safe_dump(tree, handle, sort_keys=False)
    for host, variables in hostvars.items():
        with open(os.path.join(path, "host_vars", "%s.yml" % host), "w") as handle:
            yaml.safe_dump(_plain(variables), handle, sort_keys=False, allow_unicode=False)
    with open(os.path.join(path, "group_vars", "all.yml"), "w") as handle:
        yaml.safe_dump(_plain(cluster), handle, sort_keys=False, allow_unicode=False)
    return os.path.join(path, "hosts.yml")


def run_playbook(inventory_path, dest):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    cmd = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "playbooks/render-gres.yml", "-i",
           inventory_path, "-e", "hpc_gres_render_dir=%s" % dest]
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    return proc.returncode, proc.stdout


def judge_playbook(inventory, workdir):
    """None when the playbook did what the rules say, else why not."""
    try:
        expected = judge_with_slurmd(inventory)
    except AssertionError as exc:
        return "pure render broke a rule: %s" % str(exc)[:3000]
    inventory_path = write_inventory(os.path.join(workdir, "inv"), inventory)
    dest = os.path.join(workdir, "out")
    rc, out = run_playbook(inventory_path, dest)
    if "Traceback" in out:
        return "traceback in the playbook:\n%s" % out[-4000:]
    if isinstance(expected, strategies.Rendered):
        if rc != 0:
            return "the playbook refused what the pure functions render:\n%s" % out[-4000:]
        written = {}
        for folder, _subdirs, names in os.walk(dest):
            for name in names:
                if folder == dest and name == MANIFEST:  # the render's list of the files it owns
                    continue
                with open(os.path.join(folder, name)) as handle:
                    written[os.path.relpath(os.path.join(folder, name), dest)] = handle.read()
        if written != expected.files:
            return "the playbook wrote other files than the pure render: %s vs %s" % (
                sorted(written), sorted(expected.files))
        return None
    if rc == 0 or os.path.exists(dest):
        return "refused by the pure functions but the playbook exited %d (wrote: %s)" % (rc, os.path.exists(dest))
    named = set(_PROBLEM_RE.findall(" ".join(out.split())))
    wanted = {(p.host, p.field) for p in expected if " " not in p.field}
    if not wanted <= named:
        return "the playbook's refusal does not name %s:\n%s" % (sorted(wanted - named), out[-4000:])
    return None


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--examples", type=int, default=40)
    parser.add_argument("--seed", type=int, default=None, help="fixed seed (default: a new one each run)")
    parser.add_argument("--keep", help="directory to keep the inventories that broke a rule")
    opts = parser.parse_args()
    tally = {"rendered": 0, "refused": 0, "broke a rule": 0}
    failures = []
    start = time.time()

    @settings(max_examples=opts.examples, deadline=None, database=None, phases=[Phase.generate],
              suppress_health_check=list(HealthCheck), derandomize=opts.seed is not None)
    @given(strategies.inventories(slurm_version=ORACLE_VERSION))
    def one(inventory):
        workdir = tempfile.mkdtemp(prefix="fuzz-render-")
        try:
            why = judge_playbook(inventory, workdir)
            if why is None:
                outcome = strategies.judge(inventory)
                tally["rendered" if isinstance(outcome, strategies.Rendered) else "refused"] += 1
                return
            tally["broke a rule"] += 1
            failures.append((inventory, why))
            if opts.keep:
                kept = os.path.join(opts.keep, "case%03d" % len(failures))
                shutil.copytree(os.path.join(workdir, "inv"), kept, dirs_exist_ok=True)
        finally:
            shutil.rmtree(workdir, ignore_errors=True)

    one()
    elapsed = time.time() - start
    for inventory, why in failures:
        print("=" * 100)
        print(why)
        print(repr(inventory)[:3000])
    print("%d generated inventories through the render-only playbook in %.0f s (%.1f s each): %d rendered and "
          "accepted by slurmd, %d refused naming host and field, %d broke a rule"
          % (sum(tally.values()), elapsed, elapsed / max(sum(tally.values()), 1), tally["rendered"],
             tally["refused"], tally["broke a rule"]))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
