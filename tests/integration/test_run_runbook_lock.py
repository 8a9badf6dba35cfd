"""The lock a runbook takes (roles/hpc_gres_run/tasks/runbook_begin.yml, runbook_lock.yml and runbook_finish.yml,
used by the MIG runbook), run by ansible-playbook against a run root on this machine: taken and released with a record; refused
while a deploy holds the lock or did not finish (check mode says so and goes on); the lock of a killed runbook run of
this control machine taken over and that run superseded at the end; a stopped run recorded as such."""
import json
import os
import socket
import subprocess

import pytest
import yaml

from emulated_node import ANSIBLE_PLAYBOOK, PYTHON, ROOT

HOLDER = {"run_id": "20261201T111500Z-3fa9", "user": "alice", "control_host": "admin01", "pid": 4242,
          "command": "deploy", "started": "2026-12-01T11:15:00Z"}


def runbook(tmp_path, *extra, state="done"):
    playbook = tmp_path / "runbook.yml"
    role_vars = {"hpc_gres_run_root": str(tmp_path / "runs"), "hpc_gres_run_host": "localhost",
                 "hpc_gres_run_command": "MIG reconfiguration", "hpc_gres_run_runbook_state": state,
                 "hpc_gres_run_runbook_note": "stopped at host gpu-a01 (MIG | apply the layout): boom"}

    def step(name):
        return {"ansible.builtin.include_role": {"name": "hpc.slurm_gres.hpc_gres_run", "tasks_from": name},
                "vars": role_vars}
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [step("runbook_begin.yml"), step("runbook_lock.yml"), step("runbook_lock.yml"),
                  {"ansible.builtin.debug": {"msg": "the runbook runs with lock {{ lookup('file', '%s') }}"
                                             % (tmp_path / "runs" / "lock")}, "when": "not ansible_check_mode"},
                  step("runbook_finish.yml")]}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", "-e",
                           "ansible_python_interpreter=" + PYTHON, str(playbook)] + list(extra), cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def records(tmp_path):
    runs = tmp_path / "runs"
    return {p.name: json.loads((p / "record.json").read_text()) for p in runs.iterdir() if (p / "record.json").is_file()}


@pytest.mark.ansible_core
def test_the_runbook_holds_the_lock_while_it_runs_and_releases_it_with_its_record(tmp_path):
    (tmp_path / "runs").mkdir()
    rc, out = runbook(tmp_path)
    assert rc == 0, out
    assert "(MIG reconfiguration): lock taken on localhost" in out, out
    assert '"command": "MIG reconfiguration"' in out.replace("\\", "")  # the lock, read while it runs
    assert not (tmp_path / "runs" / "lock").exists()
    (record,) = records(tmp_path).values()
    assert record["command"] == "MIG reconfiguration" and record["state"] == "done" and record["hosts"] == {}
    assert [h["state"] for h in record["history"]] == ["locked", "reconfiguring", "done"]
    assert record["targets"] == ["localhost"]
    # a node failed: the run ends stopped there, the lock released
    rc, out = runbook(tmp_path, state="stopped")
    assert rc == 0, out
    stopped = [r for r in records(tmp_path).values() if r["state"] == "stopped"]
    assert len(stopped) == 1 and stopped[0]["history"][-1]["note"].startswith("stopped at host gpu-a01")
    assert not (tmp_path / "runs" / "lock").exists()


def test_refused_while_a_deploy_holds_the_lock_or_did_not_finish(tmp_path):
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "lock").write_text(json.dumps(HOLDER))
    rc, out = runbook(tmp_path)
    assert rc != 0
    assert ("MIG reconfiguration refused, nothing was changed: a deploy holds the lock: run 20261201T111500Z-3fa9 by "
            "user alice from host admin01 (pid 4242), started 2026-12-01T11:15:00Z.") in out, out
    assert "the runbook runs" not in out and records(tmp_path) == {}
    rc, out = runbook(tmp_path, "--check")
    assert rc == 0, out
    assert "check mode: no lock taken, nothing recorded; a real run would stop here: MIG reconfiguration refused" in out
    assert json.loads((tmp_path / "runs" / "lock").read_text()) == HOLDER
    # the deploy was killed on another machine and its lock broken: its record says it did not finish
    (tmp_path / "runs" / "lock").unlink()
    run_dir = tmp_path / "runs" / HOLDER["run_id"]
    run_dir.mkdir()
    (run_dir / "record.json").write_text(json.dumps(dict(HOLDER, state="installed", hosts={}, history=[])))
    rc, out = runbook(tmp_path)
    assert rc != 0
    assert "a deploy did not finish: run %s by user alice" % HOLDER["run_id"] in out, out
    assert "state installed. Its files may be half installed" in out, out
    assert "ansible-playbook hpc.slurm_gres.deploy_gres -i INVENTORY" in out
    assert not (tmp_path / "runs" / "lock").exists()


def test_the_lock_of_a_killed_runbook_run_of_this_machine_is_taken_over_and_that_run_superseded(tmp_path):
    ended = subprocess.Popen(["true"])  # its pid: an ansible-playbook that was killed
    ended.wait()
    killed = dict(HOLDER, run_id="20261201T120000Z-0001", command="MIG reconfiguration",
                  control_host=socket.gethostname(), pid=ended.pid)
    runs = tmp_path / "runs"
    (runs / killed["run_id"]).mkdir(parents=True)
    (runs / "lock").write_text(json.dumps(killed))
    record = dict(killed, state="reconfiguring", hosts={}, history=[])
    (runs / killed["run_id"] / "record.json").write_text(json.dumps(record))
    rc, out = runbook(tmp_path)
    assert rc == 0, out
    assert "the lock of run 20261201T120000Z-0001 was taken over: its ansible-playbook is gone" in out, out
    assert "it continues run 20261201T120000Z-0001, which did not finish" in out
    states = {run_id: r["state"] for run_id, r in records(tmp_path).items()}
    assert states.pop(killed["run_id"]) == "superseded" and list(states.values()) == ["done"]
    assert not (runs / "lock").exists()


def test_the_final_play_of_the_runbook_ends_the_run_even_when_every_host_fails_it(tmp_path):
    """The runbook's own last play (playbooks/mig_reconfigure.yml) with its role replaced by a failure on some or
    every node: a play whose every host fails ends the playbook, so the run's end is in the block's always."""
    with open(os.path.join(ROOT, "playbooks", "mig_reconfigure.yml")) as handle:
        final = yaml.safe_load(handle)[-1]
    [block] = final["tasks"]
    assert block["block"][0]["ansible.builtin.import_role"]["name"] == "hpc.slurm_gres.hpc_gres_slurmd"
    block["block"] = [{"ansible.builtin.fail": {"msg": "slurm.conf refused"},
                       "when": "inventory_hostname in failing.split(',')"}]
    take = {"hosts": "localhost", "gather_facts": False, "tasks": [
        {"ansible.builtin.include_role": {"name": "hpc.slurm_gres.hpc_gres_run", "tasks_from": name}}
        for name in ("runbook_begin.yml", "runbook_lock.yml")]}
    playbook = tmp_path / "final.yml"
    playbook.write_text(yaml.safe_dump([take, final]))
    inventory = tmp_path / "hosts.yml"
    inventory.write_text(yaml.safe_dump({"all": {
        "vars": {"ansible_connection": "local", "ansible_python_interpreter": PYTHON,
                 "hpc_gres_run_root": str(tmp_path / "runs"), "hpc_gres_run_host": "localhost",
                 "hpc_gres_run_command": "MIG reconfiguration"},
        "hosts": {"localhost": {}},
        "children": {"slurmd": {"hosts": {"gpu-a01": {}, "gpu-a02": {}}}}}}))
    for failing, state in (("gpu-a02", "stopped"), ("gpu-a01,gpu-a02", "stopped"), ("", "done")):
        proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", str(inventory), "-e", "failing=" + failing, str(playbook)],
                              cwd=ROOT, env=dict(os.environ, ANSIBLE_NOCOLOR="1"), capture_output=True, text=True,
                              timeout=300, check=False)
        out = " ".join((proc.stdout + proc.stderr).split())
        assert (proc.returncode != 0) == bool(failing), out
        assert not (tmp_path / "runs" / "lock").exists(), out
        [last] = [r for run_id, r in records(tmp_path).items() if run_id == max(records(tmp_path))]
        assert last["state"] == state, out
        if failing:
            assert last["history"][-1]["note"] == "the final slurm.conf failed on " + failing.replace(",", ", ")
