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


def stand_ins(tmp_path):
    for name, text in (("srun", SRUN), ("scontrol", SCONTROL)):
        (tmp_path / name).write_text(text)
        (tmp_path / name).chmod(0o755)


def smoke(tmp_path, nodes):
    stand_ins(tmp_path)
    return playbook_run(tmp_path, [{
        "hosts": "localhost", "gather_facts": False,
        "tasks": [{"ansible.builtin.include_role": {"name": "hpc.slurm_gres.hpc_gres_slurmctld",
                                                    "tasks_from": "smoke.yml"},
                   "vars": {"hpc_gres_slurmctld_srun": str(tmp_path / "srun"),
                            "hpc_gres_slurmctld_scontrol": str(tmp_path / "scontrol"),
                            "hpc_gres_slurmctld_smoke": [
                                {"type": "a100", "node": node, "count": 2, "gres": "gpu:a100:2", "expected": "0,1",
                                 "busy": False} for node in nodes]}}]}])


def playbook_run(tmp_path, plays):
    playbook = tmp_path / "play.yml"
    playbook.write_text(yaml.safe_dump(plays))
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


# The MIG runbook's smoke test (roles/hpc_gres_mig/tasks/reconfigure.yml): gres_plan stage smoke plans the sruns of
# the one node from the step's files, where the render leaves a MIG node's MultipleFiles lines to the node, so its
# MIG types are tested too, at their positions in its Gres= (task/none here).
SLURM_CONF = """ClusterName=demo
SlurmctldHost=ctl
GresTypes=gpu
TaskPlugin=task/none
NodeName=mig01 CPUs=16 Gres=gpu:3g.40gb:1,gpu:1g.10gb:2,gpu:a100:1
NodeName=ok02 CPUs=16 Gres=gpu:a100:4
PartitionName=main Nodes=ALL Default=YES
"""
SRUN_BY_GRES = """#!/bin/sh
for arg in "$@"; do case "$arg" in --gres=*) gres=${arg#--gres=};; --nodelist=*) node=${arg#--nodelist=};; esac; done
echo "$node $gres" >> %s
case "$gres" in
  gpu:3g.40gb:1) echo 0;;
  gpu:1g.10gb:2) echo 1,2;;
  gpu:a100:1) echo 3;;
  *) echo "srun: error: Unable to allocate resources: Requested node configuration is not available" >&2; exit 1;;
esac
"""


def test_the_runbook_tests_every_gpu_type_of_its_node_mig_profiles_included(tmp_path):
    (tmp_path / "srun").write_text(SRUN_BY_GRES % (tmp_path / "sruns"))
    (tmp_path / "srun").chmod(0o755)
    files = {"slurm.conf": SLURM_CONF, "cgroup.conf": "ConstrainDevices=yes\n",
             "mig01/gres.conf": "NodeName=mig01 Name=gpu Type=a100 File=/dev/nvidia1\n",
             "ok02/gres.conf": "NodeName=ok02 Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"}
    rc, out = playbook_run(tmp_path, [{"hosts": "localhost", "gather_facts": False, "tasks": [
        {"hpc.slurm_gres.gres_plan": {"stage": "smoke", "files": files, "nodes": ["mig01"]}, "register": "planned"},
        {"ansible.builtin.include_role": {"name": "hpc.slurm_gres.hpc_gres_slurmctld", "tasks_from": "smoke.yml"},
         "vars": {"hpc_gres_slurmctld_srun": str(tmp_path / "srun"),
                  "hpc_gres_slurmctld_smoke": "{{ planned.plan.smoke }}"}}]}])
    assert rc == 0, out
    for gres, seen in (("gpu:1g.10gb:2", "1,2"), ("gpu:3g.40gb:1", "0"), ("gpu:a100:1", "3")):
        assert "smoke test srun --gres=%s on mig01: CUDA_VISIBLE_DEVICES=%s" % (gres, seen) in out, out
    # the one node only, though ok02 has more a100s
    assert sorted((tmp_path / "sruns").read_text().splitlines()) == [
        "mig01 gpu:1g.10gb:2", "mig01 gpu:3g.40gb:1", "mig01 gpu:a100:1"]


def test_a_failed_smoke_test_is_reported_with_the_sruns_message_not_the_loops(tmp_path):
    # the deploy's rescue (roles/hpc_gres_run/tasks/late_failure.yml) without a run: it fails as before
    stand_ins(tmp_path)
    sruns = [{"type": "a100", "node": node, "count": 2, "gres": "gpu:a100:2", "expected": "0,1", "busy": False}
             for node in ("ok01", "wrong01")]
    smoke_step = {"ansible.builtin.include_role": {"name": "hpc.slurm_gres.hpc_gres_slurmctld", "tasks_from": "smoke.yml"},
                  "vars": {"hpc_gres_slurmctld_srun": str(tmp_path / "srun"),
                           "hpc_gres_slurmctld_scontrol": str(tmp_path / "scontrol"), "hpc_gres_slurmctld_smoke": sruns}}
    rescue = {"ansible.builtin.import_role": {"name": "hpc.slurm_gres.hpc_gres_run", "tasks_from": "late_failure.yml"}}
    rc, out = playbook_run(tmp_path, [{"hosts": "localhost", "gather_facts": False,
                                       "tasks": [{"block": [smoke_step], "rescue": [rescue]}]}])
    assert rc != 0
    final = out[out.index("Fail as before without a run to roll back"):]
    assert "smoke test srun --gres=gpu:a100:2 on wrong01: expected CUDA_VISIBLE_DEVICES=0,1, found 0" in final, out
    assert "One or more items failed" not in final, out
