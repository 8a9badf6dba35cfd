"""maintenance-gres.yml over the local connection: three emulated GPU nodes (their GPUs judged by the real
gres_verify) and a stateful stand-in for slurmctld's commands (fake_slurm.py) that logs every node's state after
each change. The waves and the cap, a job the drain waits for, the site's change, both reboot paths (Ansible with
the site's reboot tasks; slurmctld's scontrol reboot), a node failing its readiness check after the reboot, the
run continued by the next one, check mode, and a refusal while another run holds the lock. The same on the real
Slurm daemons: the molecule scenario gpu-lost (tests/test_maintenance.py)."""
import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from emulated_node import ANSIBLE_PLAYBOOK, ROOT, Node, node_nvidia_smi, write_inventory
import fake_slurm

HERE = os.path.dirname(os.path.abspath(__file__))
NODES = ("gpu-w01", "gpu-w02", "gpu-w03")
UNAVAILABLE = ("DRAIN", "DOWN", "REBOOT")
REASON = "GPU maintenance"


class Cluster(object):
    def __init__(self, tmp):
        self.tmp = tmp
        self.nodes = [Node(tmp / n, name=n) for n in NODES]
        self.state = str(tmp / "slurm.json")
        self.runs = str(tmp / "runs")
        self.write_state(fake_slurm.new_state(NODES))
        for command in ("scontrol", "squeue"):
            path = str(tmp / command)
            with open(path, "w") as handle:
                handle.write("#!/bin/sh\nexec %s %s %s %s \"$@\"\n"
                             % (sys.executable, os.path.join(HERE, "fake_slurm.py"), self.state, command))
            os.chmod(path, 0o755)
        with open(str(tmp / "reboot.yml"), "w") as handle:
            yaml.safe_dump([{"name": "The test's reboot: slurmd comes back with a new start time",
                             "ansible.builtin.command": "%s %s %s boot {{ inventory_hostname }}"
                                                        % (sys.executable, os.path.join(HERE, "fake_slurm.py"),
                                                           self.state),
                             "changed_when": True}], handle)
        with open(str(tmp / "change.yml"), "w") as handle:
            yaml.safe_dump([{"name": "The site's change: a marker on the node",
                             "ansible.builtin.copy": {"content": "driver 580\n", "dest": "{{ maint_marker }}",
                                                      "mode": "0644"}}], handle)
        self.render_files()

    def write_state(self, state):
        with open(self.state, "w") as handle:
            json.dump(state, handle)

    def read_state(self):
        with open(self.state) as handle:
            return json.load(handle)

    def edit_state(self, change):
        state = self.read_state()
        change(state)
        self.write_state(state)

    def inventory(self):
        hosts = {}
        for node in self.nodes:
            gpus = [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)]
            hosts[node.name] = {
                "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
                "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus,
                "hpc_gres_verify_nvidia_smi": node_nvidia_smi(node), "hpc_gres_verify_sysfs_root": node.root,
                "hpc_gres_verify_dev_root": node.dev_root, "hpc_gres_slurmd_config_dir": os.path.join(node.base, "etc"),
                "maint_marker": os.path.join(node.base, "changed")}
        cluster = {"hpc_gres_cluster_name": "maint", "hpc_gres_slurm_version": "24.11",
                   "hpc_gres_maintenance_scontrol": str(self.tmp / "scontrol"),
                   "hpc_gres_maintenance_squeue": str(self.tmp / "squeue"),
                   "hpc_gres_maintenance_poll_interval": 1, "hpc_gres_maintenance_job_timeout": 120,
                   "hpc_gres_maintenance_register_timeout": 20, "hpc_gres_run_root": self.runs}
        return write_inventory(self.tmp, self.nodes, hosts, cluster)

    def render_files(self):
        """The files a deploy would have installed: the render, copied to each node's config directory."""
        out = self.tmp / "render"
        argv = [ANSIBLE_PLAYBOOK, "-i", self.inventory(), os.path.join(ROOT, "playbooks", "render-gres.yml"),
                "-e", "hpc_gres_render_dir=%s" % out]
        proc = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True, check=False,
                              env=dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg")))
        assert proc.returncode == 0, proc.stdout + proc.stderr
        for node in self.nodes:
            etc = os.path.join(node.base, "etc")
            os.makedirs(etc, exist_ok=True)
            for name, source in (("slurm.conf", "slurm.conf"), ("gres.conf", node.name + "/gres.conf")):
                with open(str(out / source)) as src, open(os.path.join(etc, name), "w") as dst:
                    dst.write(src.read())

    def play(self, *extra):
        argv = [ANSIBLE_PLAYBOOK, "-i", self.inventory(), os.path.join(ROOT, "playbooks", "maintenance-gres.yml"),
                "-e", "hpc_gres_maintenance_tasks=%s" % (self.tmp / "change.yml")] + list(extra)
        env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
        print("=== maintenance-gres.yml %s (rc %d)\n%s" % (" ".join(extra), proc.returncode, proc.stdout[-6000:]))
        return proc.returncode, " ".join((proc.stdout + proc.stderr).split())

    def record(self, run_id):
        with open(os.path.join(self.runs, run_id, "record.json")) as handle:
            return json.load(handle)

    def lock(self):
        path = os.path.join(self.runs, "lock")
        return json.load(open(path)) if os.path.exists(path) else None


def out_of_service(entry):
    return sorted(n for n, s in entry["states"].items() if any(flag in s for flag in UNAVAILABLE))


def run_id(out):
    return out.split(": lock taken on", 1)[0].rsplit("run ", 1)[1]


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    return Cluster(tmp_path_factory.mktemp("maint"))


def test_check_mode_names_the_waves_and_changes_nothing(cluster):
    cluster.edit_state(lambda s: s["jobs"].append({"id": "7", "user": "alice", "name": "train", "node": "gpu-w01",
                                                   "until": time.time() + 3600}))
    rc, out = cluster.play("--check")
    assert rc == 0, out
    # the node with a job goes last: it may be idle by then
    assert "wave 1: gpu-w02" in out and "wave 2: gpu-w03" in out and "wave 3: gpu-w01" in out
    assert "at most this many nodes out of service per partition: main 1 of 3 (1)" in out
    assert "reboot through Ansible (ansible.builtin.reboot): slurmctld has no RebootProgram" in out
    assert "check mode: no node drained, nothing changed, no lock taken" in out
    assert cluster.read_state()["log"] == [] and cluster.lock() is None
    assert not os.path.exists(cluster.runs) or os.listdir(cluster.runs) == []
    cluster.edit_state(lambda s: s.update(jobs=[]))


def test_a_run_takes_one_node_at_a_time_waits_for_the_job_and_reboots_each_node_once(cluster):
    # a job on every node: none is idle, so they go in name order and gpu-w01's job still runs when it is drained
    cluster.edit_state(lambda s: s.update(jobs=[{"id": str(8 + i), "user": "alice", "name": "train", "node": n,
                                                 "until": time.time() + 30} for i, n in enumerate(NODES)]))
    rc, out = cluster.play("-e", "hpc_gres_maintenance_reboot_tasks=%s" % (cluster.tmp / "reboot.yml"))
    assert rc == 0, out
    state = cluster.read_state()
    log = state["log"]
    assert max(len(out_of_service(e)) for e in log) == 1, [e["states"] for e in log]
    assert {n: state["nodes"][n]["boots"] for n in NODES} == {n: 1 for n in NODES}
    assert all(not s["flags"] for s in state["nodes"].values())
    # the job's node was drained while the job ran, and rebooted only after it had ended
    drained = [e for e in log if e["what"].startswith("update NodeName=gpu-w01 State=DRAIN")][0]
    booted = [e for e in log if e["what"] == "boot gpu-w01"][0]
    job_end = state["jobs"][0]["until"]
    assert [e["what"] for e in log if e["what"].startswith("boot")] == ["boot gpu-w01", "boot gpu-w02", "boot gpu-w03"]
    assert drained["at"] < job_end < booted["at"]
    assert drained["states"]["gpu-w01"] == "ALLOCATED+DRAIN"
    for node in cluster.nodes:
        assert open(os.path.join(node.base, "changed")).read() == "driver 580\n"
    record = cluster.record(run_id(out))
    assert record["state"] == "done" and record["command"] == "maintenance"
    assert {n: record["node:" + n]["status"] for n in NODES} == {n: "done" for n in NODES}
    assert cluster.lock() is None
    assert "maintenance run %s: 3 node(s), 3 done, 0 failed, 0 not done" % run_id(out) in out


def test_a_node_failing_readiness_stays_drained_and_the_next_run_continues_through_slurmctld(cluster):
    """Reboots through slurmctld (RebootProgram set); gpu-w02 loses a GPU at its reboot."""
    for node in cluster.nodes:
        os.unlink(os.path.join(node.base, "changed"))
    cluster.edit_state(lambda s: s.update(config={"RebootProgram": "/usr/sbin/reboot", "ResumeTimeout": "3600 sec"},
                                          faults={"gpu-w02": {"profile": cluster.nodes[1].profile_path,
                                                              "index": 3}}, log=[]))
    limit = ("--limit", "gpu-w02,gpu-w03", "-e", "hpc_gres_maintenance_cap=2", "-e",
             "hpc_gres_maintenance_max_failures=1")
    rc, out = cluster.play(*limit)
    assert rc != 0
    state = cluster.read_state()
    w02, w03 = state["nodes"]["gpu-w02"], state["nodes"]["gpu-w03"]
    assert "reboot through slurmctld: scontrol reboot (RebootProgram=/usr/sbin/reboot" in out
    assert w02["flags"] == ["DRAIN"] and w02["boots"] == 2
    assert w02["reason"] == ("GPU maintenance: failed: readiness: present: declares 8 a100, nvidia-smi sees 7; device: "
                             "/dev/nvidia3 has minor 3 and nvidia-smi shows no GPU with that minor")
    assert not w03["flags"] and w03["boots"] == 2
    assert state["nodes"]["gpu-w01"]["boots"] == 1  # not in the --limit
    first = run_id(out)
    record = cluster.record(first)
    assert record["state"] == "maintaining" and cluster.lock() is None
    assert record["node:gpu-w02"]["status"] == "failed" and record["node:gpu-w03"]["status"] == "done"
    assert "gpu-w02: FAILED, left drained: readiness: present: declares 8 a100, nvidia-smi sees 7;" in out

    # the GPU is back: the same command continues the run, gpu-w03 (done) is skipped
    cluster.nodes[1].gpus[3].pop("lost", None)
    cluster.nodes[1].save()
    rc, out = cluster.play(*limit)
    assert rc == 0, out
    assert "continuing maintenance run %s" % first in out
    assert "wave 1: gpu-w02 (0 more planned after it)" in out
    state = cluster.read_state()
    assert state["nodes"]["gpu-w02"]["boots"] == 3 and state["nodes"]["gpu-w03"]["boots"] == 2
    assert not state["nodes"]["gpu-w02"]["flags"]
    assert cluster.record(first)["state"] == "superseded"
    second = cluster.record(run_id(out))
    assert second["state"] == "done" and second["maintenance"]["continues"] == first
    assert second["node:gpu-w03"] == {"status": "done", "reason": "done by run %s" % first}


def test_a_run_holding_the_lock_refuses_the_maintenance_and_nothing_changes(cluster):
    os.makedirs(cluster.runs, exist_ok=True)
    holder = {"run_id": "20261203T100000Z-abcd", "user": "bob", "control_host": "admin02", "pid": 1,
              "started": "2026-12-03T10:00:00Z", "command": "deploy"}
    with open(os.path.join(cluster.runs, "lock"), "w") as handle:
        json.dump(holder, handle)
    cluster.edit_state(lambda s: s.update(log=[]))
    try:
        rc, out = cluster.play()
    finally:
        os.unlink(os.path.join(cluster.runs, "lock"))
    assert rc != 0
    assert ("maintenance refused, nothing was changed: a deploy holds the lock: run 20261203T100000Z-abcd by user bob "
            "from host admin02 (pid 1), started 2026-12-03T10:00:00Z.") in out
    assert "-e hpc_gres_break_lock=20261203T100000Z-abcd" in out
    assert cluster.read_state()["log"] == []
