"""The lock guard of a runbook that takes no lock of its own (roles/hpc_gres_run/tasks/guard.yml, used by the MIG
runbook), run by ansible-playbook against a run root where a deploy holds the lock: refused naming the holder, and
in check mode said and gone on; with the lock free it passes."""
import json
import os
import subprocess

import yaml

from emulated_node import ANSIBLE_PLAYBOOK, PYTHON, ROOT

HOLDER = {"run_id": "20261201T111500Z-3fa9", "user": "alice", "control_host": "admin01", "pid": 4242,
          "command": "deploy", "started": "2026-12-01T11:15:00Z"}


def guard(tmp_path, *extra):
    playbook = tmp_path / "guard.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [{"ansible.builtin.include_role": {"name": "hpc.slurm_gres.hpc_gres_run", "tasks_from": "guard.yml"},
                   "vars": {"hpc_gres_run_root": str(tmp_path / "runs"), "hpc_gres_run_host": "localhost",
                            "hpc_gres_run_command": "MIG reconfiguration"}},
                  {"ansible.builtin.debug": {"msg": "after the guard"}}]}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", "-e",
                           "ansible_python_interpreter=" + PYTHON, str(playbook)] + list(extra), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_the_mig_runbook_guard_refuses_while_a_deploy_holds_the_lock(tmp_path):
    (tmp_path / "runs").mkdir()
    rc, out = guard(tmp_path)
    assert rc == 0 and "after the guard" in out, out
    (tmp_path / "runs" / "lock").write_text(json.dumps(HOLDER))
    rc, out = guard(tmp_path)
    assert rc != 0
    assert "MIG reconfiguration refused, nothing was changed: a deploy holds the lock on" in out, out
    assert "run 20261201T111500Z-3fa9 by user alice from host admin01" in out and "after the guard" not in out
    rc, out = guard(tmp_path, "--check")
    assert rc == 0, out
    assert "check mode, a real run would stop here: MIG reconfiguration refused" in out and "after the guard" in out
    assert json.loads((tmp_path / "runs" / "lock").read_text()) == HOLDER
