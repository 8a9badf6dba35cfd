"""The deploy's srun smoke test (roles/hpc_gres_slurmctld/tasks/smoke.yml) run by ansible-playbook with a stand-in
srun and scontrol: a node that prints the expected CUDA_VISIBLE_DEVICES passes, one whose GPUs jobs hold (srun's
"Requested nodes are busy", slurmctld MIXED) is skipped with a line, a drained node or a wrong list fails. The real
srun on real Slurm daemons is the molecule scenarios' (mismatch, deploy-mig)."""
import os
import subprocess

import yaml

from emulated_node import ANSIBLE_PLAYBOOK, PYTHON, ROOT

SRUN = """#!/bin/sh
for arg in "$@"; do case "$arg" in --nodelist=*) node=${arg#--nodelist=};; esac; done
case "$node" in
  ok*) echo 0,1;;
  wrong*) echo 0;;
  *) echo "srun: error: Unable to allocate resources: Requested nodes are busy" >&2; exit 1;;
esac
"""
SCONTROL = """#!/bin/sh
node=$4
case "$node" in
  busy*) echo "NodeName=$node Arch=x86_64 CPUAlloc=16 State=MIXED Gres=gpu:a100:2";;
  *) echo "NodeName=$node Arch=x86_64 CPUAlloc=0 State=IDLE+DRAIN Gres=gpu:a100:2 Reason=admin";;
esac
"""


def smoke(tmp_path, nodes):
    for name, text in (("srun", SRUN), ("scontrol", SCONTROL)):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)
    playbook = tmp_path / "smoke.yml"
    playbook.write_text(yaml.safe_dump([{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [{"ansible.builtin.include_role": {"name": "hpc.slurm_gres.hpc_gres_slurmctld",
                                                    "tasks_from": "smoke.yml"},
                   "vars": {"hpc_gres_slurmctld_srun": str(tmp_path / "srun"),
                            "hpc_gres_slurmctld_scontrol": str(tmp_path / "scontrol"),
                            "hpc_gres_slurmctld_smoke": [
                                {"type": "a100", "node": node, "count": 2, "gres": "gpu:a100:2", "expected": "0,1",
                                 "busy": False} for node in nodes]}}]}]))
    env = dict(os.environ, ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([ANSIBLE_PLAYBOOK, "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + PYTHON,
                           str(playbook)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300, check=False)
    return proc.returncode, " ".join((proc.stdout + proc.stderr).split())


def test_a_busy_node_is_skipped_with_a_line_and_no_srun_result_is_dumped(tmp_path):
    rc, out = smoke(tmp_path, ["ok01", "busy01"])
    assert rc == 0, out
    assert "smoke test srun --gres=gpu:a100:2 on ok01: CUDA_VISIBLE_DEVICES=0,1" in out
    assert ("smoke test srun --gres=gpu:a100:2 on busy01: skipped: jobs hold GPUs of busy01 (State=MIXED), started "
            "after the confirmation read it idle") in out
    assert "stdout_lines" not in out and "invocation" not in out, out


def test_a_drained_node_or_a_wrong_device_list_fails_naming_what_was_found(tmp_path):
    rc, out = smoke(tmp_path, ["drained01", "wrong01"])
    assert rc != 0
    assert ("smoke test srun --gres=gpu:a100:2 on drained01: expected CUDA_VISIBLE_DEVICES=0,1, found (unset) srun: "
            "error: Unable to allocate resources: Requested nodes are busy (slurmctld: State=IDLE+DRAIN)") in out
    assert "smoke test srun --gres=gpu:a100:2 on wrong01: expected CUDA_VISIBLE_DEVICES=0,1, found 0" in out
    assert "stdout_lines" not in out, out
