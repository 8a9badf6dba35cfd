"""testinfra helpers for the deploy scenarios (default, mismatch, gpu-lost, rollback).

They share one cluster shape (molecule/shared/deploy_inventory): controller gres-ctl, GPU nodes gres-gpu01
(2 x V100) and gres-gpu02 (4 x H100). Besides looking at the containers, a test can run the deploy again, the
way an admin would, with the scenario's inventory plus an overriding one (a wrong GPU list, a corrected one).
Import from a scenario's tests/ directory:

    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
    import deploy_checks
"""

import hashlib
import json
import os
import re
import subprocess
import tempfile

import slurm_checks

CTL = "gres-ctl"
# the scenarios with one GPU node set DEPLOY_NODES (their molecule.yml verifier env)
NODES = tuple(os.environ.get("DEPLOY_NODES", "gres-gpu01,gres-gpu02").split(","))
DECLARED = {"gres-gpu01": {"gpu:v100": 2}, "gres-gpu02": {"gpu:h100": 4}}
CONFIG_FILES = ("slurm.conf", "cgroup.conf", "gres.conf")
PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY",
                         os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..")))
PLAYBOOK = os.path.join(PROJECT, "playbooks", "deploy-gres.yml")
RENDER = os.path.join(PROJECT, "playbooks", "render-gres.yml")
ROLLBACK = os.path.join(PROJECT, "playbooks", "rollback-gres.yml")
RUNS = "/var/lib/slurm-gres/runs"
FAULT_PLUGINS = os.path.join(os.path.dirname(__file__), "..", "callback_plugins")


def inventory():
    path = os.environ.get("MOLECULE_INVENTORY_FILE")
    assert path, "MOLECULE_INVENTORY_FILE is not set: run the tests through molecule (scripts/run-molecule.sh)"
    return path


def playbook_command(*args, extra_inventories=(), playbook=PLAYBOOK, fault=None):
    """(argv, env) of ansible-playbook with the scenario inventory (+ extra ones).

    ``fault``: DEPLOY_FAULT_* variables of the test-only callback molecule/shared/callback_plugins/deploy_fault.py
    (kill or hold the run at the start of a play).
    """
    cmd = ["ansible-playbook", "-i", inventory()]
    for extra in extra_inventories:
        cmd += ["-i", extra]
    cmd += [playbook] + list(args)
    env = dict(os.environ, ANSIBLE_NOCOLOR="1", ANSIBLE_FORCE_COLOR="0", PY_COLORS="0")
    if fault:
        env.update(fault, ANSIBLE_CALLBACK_PLUGINS=os.path.abspath(FAULT_PLUGINS),
                   ANSIBLE_CALLBACKS_ENABLED="deploy_fault")
    return cmd, env


def run_playbook(*args, extra_inventories=(), timeout=900, playbook=PLAYBOOK, fault=None):
    """ansible-playbook deploy-gres.yml with the scenario inventory (+ extra ones); returns (rc, output)."""
    cmd, env = playbook_command(*args, extra_inventories=extra_inventories, playbook=playbook, fault=fault)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env,
                          timeout=timeout, check=False)
    return proc.returncode, proc.stdout


def deploy(*args, extra_inventories=(), playbook=PLAYBOOK, fault=None):
    """The real deploy, as an admin runs it. Its output goes to the test log (pytest -s / on failure)."""
    rc, out = run_playbook(*args, extra_inventories=extra_inventories, playbook=playbook, fault=fault)
    print("=== ansible-playbook %s %s (rc %d)\n%s" % (os.path.basename(playbook), " ".join(args), rc, out))
    return rc, out


def flat(text):
    """The output with every run of whitespace made one space (the YAML callback wraps long messages)."""
    return " ".join(text.split())


def assert_changed_nothing(out):
    """Every host of the PLAY RECAP of ``out`` has changed=0 and failed=0 (a run with no recap fails too)."""
    recap = re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", out, re.M)
    assert recap, "no PLAY RECAP in the output:\n%s" % out[-3000:]
    moved = ["%s changed=%s failed=%s" % host for host in recap if host[1:] != ("0", "0")]
    assert not moved, "expected changed=0 failed=0 on every host, found %s:\n%s" % (", ".join(moved), out[-3000:])


def run_id(out):
    """The run id a deploy printed when it took the lock."""
    match = re.search(r"run (\S+): lock taken on", flat(out))
    assert match, "no run id in the output"
    return match.group(1)


def run_record(run):
    """The run record kept on the controller host."""
    text = slurm_checks.container(CTL).file("%s/%s/record.json" % (RUNS, run)).content_string
    return json.loads(text)


def lock():
    """The lock on the controller host (None when free)."""
    result = slurm_checks.container(CTL).run("cat %s/lock", RUNS)
    return json.loads(result.stdout) if result.rc == 0 else None


def render(extra_inventories=()):
    """Render-only run into a temporary directory: {relative path: content} of what the deploy installs."""
    with tempfile.TemporaryDirectory(prefix="gres-render-") as out_dir:
        rc, out = run_playbook("-e", "hpc_gres_render_dir=%s" % out_dir, extra_inventories=extra_inventories,
                               playbook=RENDER)
        assert rc == 0, "render-only run failed:\n%s" % out
        files = {}
        for base, _subdirs, names in os.walk(out_dir):
            for name in names:
                path = os.path.join(base, name)
                with open(path) as handle:
                    files[os.path.relpath(path, out_dir)] = handle.read()
        return files


def write_inventory(directory, host_vars, group_vars=None):
    """An inventory source that overrides host variables ({host: {var: value}}) and, with ``group_vars``, group
    variables ({group: {var: value}}; ``all`` for the cluster-wide ones, which the render reads on localhost);
    returns its path.

    The variables go to host_vars/ and group_vars/ directories beside it: the scenario inventory keeps its own
    there, which beat variables written in an inventory file, and the later source's directories win.
    """
    path = os.path.join(directory, "override")
    os.makedirs(os.path.join(path, "host_vars"), exist_ok=True)
    with open(os.path.join(path, "hosts.json"), "w") as handle:
        json.dump({"all": {"hosts": {host: {} for host in host_vars}}}, handle)
    for host, variables in host_vars.items():
        with open(os.path.join(path, "host_vars", host + ".json"), "w") as handle:
            json.dump(variables, handle)
    for group, variables in (group_vars or {}).items():
        os.makedirs(os.path.join(path, "group_vars"), exist_ok=True)
        with open(os.path.join(path, "group_vars", group + ".json"), "w") as handle:
            json.dump(variables, handle)
    return path


def sha256(host, path):
    """sha256 of a file in a container, None when it does not exist."""
    result = host.run("sha256sum %s", path)
    return result.stdout.split()[0] if result.rc == 0 else None


def unit(host, name):
    """systemd's view of a unit: MainPID, ActiveEnterTimestampMonotonic, ActiveState, NRestarts."""
    out = host.check_output("systemctl show %s -p MainPID -p ActiveEnterTimestampMonotonic -p ActiveState "
                            "-p ExecMainStartTimestampMonotonic", name)
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def snapshot():
    """Everything a refused or rolled-back deploy must leave alone: daemons, files, node states."""
    ctl = slurm_checks.container(CTL)
    state = {"slurmctld": unit(ctl, "slurmctld"),
             "ctl_files": {name: sha256(ctl, "/etc/slurm/" + name) for name in CONFIG_FILES},
             "nodes": {}}
    for name in NODES:
        node = slurm_checks.container(name)
        info = slurm_checks.show_node(ctl, name)
        state["nodes"][name] = {
            "slurmd": unit(node, "slurmd"),
            "files": {f: sha256(node, "/etc/slurm/" + f) for f in CONFIG_FILES},
            "state": info.get("State"),
            "gres": slurm_checks.gres_counts(info.get("Gres")),
            "reason": info.get("Reason"),
        }
    return state


def assert_unchanged(before, after):
    """A refused run left every daemon and file as it was (snapshot() before and after)."""
    assert after["slurmctld"] == before["slurmctld"]
    assert after["ctl_files"] == before["ctl_files"]
    for node in NODES:
        assert after["nodes"][node]["files"] == before["nodes"][node]["files"], node
        assert after["nodes"][node]["slurmd"] == before["nodes"][node]["slurmd"], node


def digest(text):
    return hashlib.sha256(text.encode()).hexdigest()
