"""deploy-gres.yml and rollback-gres.yml on an emulated node (local connection): the run record, the lock, the
rollback of a run that fails after the nodes restarted, a named rollback, the takeover of an interrupted run.

Daemon restarts are off here (no systemd); slurmctld's answers come from a script that prints the node as
registered and fails on demand (the confirmation after the restarts is then the late failure). The same
behaviour on the real Slurm daemons is proven by the molecule scenario run-safety.
"""
import json
import os
import re
import socket
import subprocess

import pytest
import yaml

from emulated_node import (ANSIBLE_PLAYBOOK, ROOT, Node, apply_mig_layout, local_slurm_release, node_nvidia_smi,
                           write_inventory)

SCONTROL = """#!/bin/sh
# slurmctld's view for the test: fails while the counter file holds a number above 0
n=$(cat "{fail}" 2>/dev/null || echo 0)
if [ "$n" -gt 0 ]; then
  echo $((n - 1)) > "{fail}"; echo "slurm_load_node error: Unable to contact slurm controller" >&2; exit 1
fi
[ "$1" = ping ] && {{ echo "Slurmctld(primary) at ctl01 is UP"; exit 0; }}
state=IDLE; cpus=0; used=0
[ -e "{busy}" ] && {{ state=MIXED; cpus=16; used=$(cat "{busy}"); }}
echo "NodeName=gpu-p01 Arch=x86_64 CoresPerSocket=32 CPUAlloc=$cpus CPUTot=128 Gres=gpu:a100:8(S:0-1) RealMemory=1000 \\
Sockets=2 State=$state ThreadsPerCore=2 SlurmdStartTime=2026-12-01T10:00:00 GresUsed=gpu:a100:$used(IDX:N/A)"
"""


class Cluster(object):
    def __init__(self, tmp_path):
        self.tmp = tmp_path
        self.node = Node(tmp_path / "p01", name="gpu-p01")
        self.fail = str(tmp_path / "scontrol-failures")
        self.scontrol = str(tmp_path / "scontrol")
        self.busy = str(tmp_path / "scontrol-busy")  # while it exists, the node runs jobs holding this many GPUs
        with open(self.scontrol, "w") as handle:
            handle.write(SCONTROL.format(fail=self.fail, busy=self.busy))
        os.chmod(self.scontrol, 0o755)
        self.runs = str(tmp_path / "runs")
        self.etc = tmp_path / "p01" / "etc"

    def inventory(self, cores=True, ctl_unreachable=False, gpus=8):
        count, gpus = gpus, [{"index": i, "type": "a100"} for i in range(gpus)]
        if cores:
            for gpu in gpus:
                gpu["cores"] = "0-31" if gpu["index"] < 4 else "32-63"
        host = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
                "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus,
                "hpc_gres_verify_nvidia_smi": node_nvidia_smi(self.node),
                "hpc_gres_verify_sysfs_root": self.node.root, "hpc_gres_verify_dev_root": self.node.dev_root,
                "hpc_gres_verify_slurmd_version": "22.05.8", "hpc_gres_verify_show_table": False,
                "hpc_gres_slurmd_config_dir": str(self.etc),
                "hpc_gres_slurmd_state_dir": str(self.tmp / "p01" / "state"),
                "hpc_gres_slurmd_health_program": str(self.tmp / "p01" / "sbin" / "hpc-gres-health"),
                "hpc_gres_slurmd_health_library_dir": str(self.tmp / "p01" / "lib"),
                "hpc_gres_slurmd_boot_program": str(self.tmp / "p01" / "sbin" / "hpc-gres-boot"),
                "hpc_gres_slurmd_boot_config": str(self.tmp / "p01" / "etc-hpc-gres" / "boot.json"),
                "hpc_gres_slurmd_boot_unit_dir": str(self.tmp / "p01" / "systemd"),
                "hpc_gres_slurmd_boot_mig_manager_dir": str(self.tmp / "p01" / "mig-manager"),
                "hpc_gres_slurmd_restart": False}
        cluster = {"hpc_gres_cluster_name": "run", "hpc_gres_slurm_version": local_slurm_release(),
                   "hpc_gres_slurmctld_restart": False,
                   "hpc_gres_slurmctld_config_dir": str(self.tmp / "ctl" / "etc"),
                   "hpc_gres_slurmctld_state_dir": str(self.tmp / "ctl" / "state"),
                   "hpc_gres_slurmd_scontrol": self.scontrol, "hpc_gres_slurmctld_scontrol": self.scontrol,
                   "hpc_gres_run_scontrol": self.scontrol, "hpc_gres_run_root": self.runs}
        directory = self.tmp / ("inv-%s-%s-%d" % ("cores" if cores else "nocores", int(ctl_unreachable), count))
        directory.mkdir(exist_ok=True)
        path = write_inventory(directory, [self.node], {self.node.name: host}, cluster)
        if ctl_unreachable:
            with open(path) as handle:
                inventory = yaml.safe_load(handle)
            inventory["all"]["children"]["slurmctld"]["hosts"]["ctl01"] = {
                "ansible_connection": "ssh", "ansible_host": "127.0.0.1", "ansible_port": 1}
            with open(path, "w") as handle:
                yaml.safe_dump(inventory, handle)
        return path

    def play(self, playbook, *extra, cores=True, scontrol_failures=0, ctl_unreachable=False, path=None, gpus=8):
        with open(self.fail, "w") as handle:
            handle.write(str(scontrol_failures))
        env = dict(self.node.env, NVSMI_EMU_ROOT=self.node.root, NVSMI_EMU_DEV_ROOT=self.node.dev_root,
                   ANSIBLE_NOCOLOR="1")
        if path:
            env["PATH"] = path + os.pathsep + env.get("PATH", os.environ.get("PATH", ""))
        argv = [ANSIBLE_PLAYBOOK, "-i", self.inventory(cores, ctl_unreachable, gpus),
                os.path.join(ROOT, "playbooks", playbook), "-e", "hpc_gres_deploy_smoke_test=false"] + list(extra)
        proc = subprocess.run(argv, cwd=ROOT, env=env, capture_output=True, text=True, timeout=900, check=False)
        out = " ".join((proc.stdout + proc.stderr).split())
        return proc.returncode, out

    def gres(self):
        with open(str(self.etc / "gres.conf")) as handle:
            return handle.read()

    def record(self, run_id):
        with open(os.path.join(self.runs, run_id, "record.json")) as handle:
            return json.load(handle)

    def lock(self):
        path = os.path.join(self.runs, "lock")
        if not os.path.exists(path):
            return None
        with open(path) as handle:
            return json.load(handle)


def run_id(out):
    return out.split(": lock taken on", 1)[0].rsplit("run ", 1)[1]


def fake_systemctl(tmp_path, script):
    """A directory holding ``systemctl`` with ``script``, to put first on PATH."""
    fake = tmp_path / "bin"
    fake.mkdir()
    (fake / "systemctl").write_text(script)
    (fake / "systemctl").chmod(0o755)
    return fake


def stateful_systemctl(tmp_path):
    """fake_systemctl with SYSTEMCTL_STATEFUL, slurmctld active."""
    (tmp_path / "state").write_text("active\n")
    return fake_systemctl(tmp_path, SYSTEMCTL_STATEFUL.format(here=tmp_path))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    cluster = Cluster(tmp_path_factory.mktemp("run"))
    rc, out = cluster.play("deploy-gres.yml")
    assert rc == 0, out
    cluster.first_out = out
    return cluster


def test_the_deploy_installed_the_health_check_which_runs_from_its_library_alone(cluster):
    program = cluster.tmp / "p01" / "sbin" / "hpc-gres-health"
    assert os.access(str(program), os.X_OK)
    with open(str(program)) as handle:
        launcher = handle.read()
    assert launcher.startswith("#!/usr/bin/python3 -IS\n") and str(cluster.tmp / "p01" / "lib") in launcher
    # the node's own Python, isolated (-I -S: no site packages, no collection on the path): the library is enough.
    # The program reads proc/, sys/ and dev/ under one root; the emulated node keeps its device nodes apart.
    dev = os.path.join(cluster.node.root, "dev")
    if not os.path.exists(dev):
        os.symlink(os.path.join(cluster.node.dev_root, "dev"), dev)
    proc = subprocess.run(["/usr/bin/python3", "-I", "-S", str(program), "--report", "--scontrol", "none",
                           "--nvidia-smi", node_nvidia_smi(cluster.node), "--root", cluster.node.root,
                           "--kernel-log", "none", "--fabric-manager", "none", "--node", "gpu-p01",
                           "--slurm-conf", str(cluster.etc / "slurm.conf")],
                          env=dict(cluster.node.env, NVSMI_EMU_ROOT=cluster.node.root,
                                   NVSMI_EMU_DEV_ROOT=cluster.node.dev_root),
                          capture_output=True, text=True, timeout=120, check=False)
    assert "hpc-gres-health: node gpu-p01 is healthy" in proc.stdout, proc.stdout + proc.stderr
    assert proc.returncode == 0
    # the boot order beside it (docs/boot.md): its program, the node's settings, the unit and slurmd's drop-in (no
    # systemd runs here: no daemon-reload)
    systemd = cluster.tmp / "p01" / "systemd"
    assert sorted(os.listdir(str(systemd))) == ["hpc-gres-boot-retry.service", "hpc-gres-boot-retry.timer",
                                                "hpc-gres-boot.service", "slurmd.service.d"]
    with open(str(cluster.tmp / "p01" / "etc-hpc-gres" / "boot.json")) as handle:
        assert json.load(handle)["node"] == "gpu-p01"
    assert os.access(str(cluster.tmp / "p01" / "sbin" / "hpc-gres-boot"), os.X_OK)
    assert re.search(r"Reload systemd \(the boot order's units changed\)\] \**\s*skipping", cluster.first_out)
    # a second deploy finds the program as it should be: nothing of it is written again
    rc, out = cluster.play("deploy-gres.yml")
    assert rc == 0, out
    assert "Install the health check" not in out and "Install the boot order" not in out


@pytest.mark.ansible_core
def test_a_second_deploy_changes_nothing_takes_no_lock_and_records_no_run(cluster):
    # ansible-core before 2.19 templates the free lock (null) to "": this deploy once failed there on 2.14
    runs = sorted(os.listdir(cluster.runs))
    rc, out = cluster.play("deploy-gres.yml")
    assert rc == 0, out
    assert "nothing changes on any host: no lock taken, no run recorded" in out
    assert cluster.lock() is None and sorted(os.listdir(cluster.runs)) == runs


def test_a_run_whose_every_node_fails_verification_prints_its_findings_once_and_refuses(cluster):
    """With every targeted node failing, Ansible would end the run at the failed task; the deploy keeps the
    failure in the result so that the gate prints each node's findings once and refuses, in check mode after
    saying what it would do."""
    before, runs = cluster.gres(), sorted(os.listdir(cluster.runs))
    for args in ((), ("--check",)):
        rc, out = cluster.play("deploy-gres.yml", *args, gpus=9)
        assert rc != 0, out
        assert out.count("gres_verify: the staged files do not fit node gpu-p01 (2 error(s), 0 warning(s))") == 1, out
        assert "error device - /dev/nvidia8 (gres.conf line 5) exists /dev/nvidia8 does not exist" in out
        assert ("nothing installed, nothing restarted: 1 of 1 targeted node(s) did not pass verification: gpu-p01 "
                "(their findings are above)") in out
        # the node fails on its own (the recap names it), in one short line after the table
        assert out.count("fatal: [gpu-p01]") == 1 and "NO MORE HOSTS LEFT" not in out
        assert ("%s: node gpu-p01 did not pass verification (its findings are above)" % (
            "check mode: the deploy would be refused" if args else
            "the deploy is refused, nothing was installed on any host")) in out, out
        assert re.search(r"gpu-p01 +: ok=\d+ +changed=\d+ +unreachable=0 +failed=1", out), out
        assert ("gpu-p01 would be refused at verify: present: expected 9 GPUs of type a100" in out) == bool(args)
    assert cluster.gres() == before and cluster.lock() is None and sorted(os.listdir(cluster.runs)) == runs


@pytest.mark.ansible_core
def test_the_run_reports_its_plan_once_and_tags_without_install_refuse_files_not_installed(cluster):
    # the gate reads the tags from ansible_run_tags and ansible_skip_tags, on every admitted ansible-core
    # the first deploy said what it does once, for the cluster, after the gate (not a line per host)
    assert "What this deploy does:" in cluster.first_out
    # (restarts are off here: hpc_gres_slurmd_restart is false)
    assert re.search(r"gpu-p01 installs slurm\.conf, cgroup\.conf, gres\.conf; slurmd restart needed \(gres\.conf "
                     r"changed; .*\), left for a later run: hpc_gres_slurmd_restart is false", cluster.first_out)
    # a gres.conf that is not the verified render: --tags restart must not restart slurmd with it
    path = str(cluster.etc / "gres.conf")
    before = cluster.gres()
    with open(path, "a") as handle:
        handle.write("# changed by hand\n")
    try:
        rc, out = cluster.play("deploy-gres.yml", "--tags", "restart")
        assert rc != 0, out
        assert ("the tags of this run select the slurmd restart but not the install, and 1 node(s) have files other "
                "than the verified render installed: gpu-p01 (%s)" % path) in out, out[-3000:]
        assert "lock taken on" not in out and cluster.lock() is None
        assert cluster.gres() == before + "# changed by hand\n"
        # the same tags with the install step go through
        rc, out = cluster.play("deploy-gres.yml", "--tags", "install,restart")
        assert rc == 0, out
        assert cluster.gres() == before
        # a hand edit of the installed file, the daemon's own files unchanged: put back, no run recorded, said so
        with open(path, "a") as handle:
            handle.write("# changed by hand\n")
        runs = sorted(os.listdir(cluster.runs))
        rc, out = cluster.play("deploy-gres.yml", "--tags", "install")
        assert rc == 0, out
        assert cluster.gres() == before
        assert ("nothing changes on any host: no lock taken, no run recorded; the installed files of gpu-p01 differ "
                "from those slurmd runs there and are put back (no restart)") in out, out[-3000:]
        assert sorted(os.listdir(cluster.runs)) == runs
    finally:
        with open(path, "w") as handle:
            handle.write(before)


def test_an_unreachable_controller_host_means_nothing_installed_anywhere(cluster):
    before = cluster.gres()
    rc, out = cluster.play("deploy-gres.yml", cores=False, ctl_unreachable=True)
    assert rc != 0
    assert "UNREACHABLE" in out
    assert "lock taken on" not in out
    assert cluster.gres() == before
    assert cluster.lock() is None


def test_a_change_of_the_health_check_alone_is_said_and_not_called_nothing(cluster):
    runs = sorted(os.listdir(cluster.runs))
    try:
        rc, out = cluster.play("deploy-gres.yml", "-e", "hpc_gres_slurmd_health_python=/usr/local/bin/python3")
        assert rc == 0, out
        assert "gpu-p01 installs the GPU health check" in out, out[-3000:]
        assert "the Slurm files change on no host: no lock taken, no run recorded;" in out, out[-3000:]
        assert ("the GPU health check or the boot order of slurmd is installed on 1 node(s) (gpu-p01): not part of a "
                "run record, a rollback does not undo it") in out
        with open(str(cluster.tmp / "p01" / "sbin" / "hpc-gres-health")) as handle:
            assert "/usr/local/bin/python3" in handle.read()
    finally:
        rc, out = cluster.play("deploy-gres.yml")
    assert rc == 0, out
    assert sorted(os.listdir(cluster.runs)) == runs and cluster.lock() is None


@pytest.mark.ansible_core
def test_late_failure_rolls_the_run_back_and_a_named_run_is_undone(cluster):
    before = cluster.gres()
    rc, out = cluster.play("deploy-gres.yml", cores=False, scontrol_failures=1)
    assert rc != 0
    late = run_id(out)
    assert "failed after the nodes restarted (gpu-p01: Read every node of the run from slurmctld in one call" in out
    assert "gpu-p01: old files again (rolled back)" in out
    assert cluster.gres() == before
    record = cluster.record(late)
    assert record["state"] == "rolled_back"
    assert record["hosts"]["gpu-p01"]["files"]["gres.conf"]["changed"]
    assert cluster.lock() is None

    rc, out = cluster.play("deploy-gres.yml", cores=False)
    assert rc == 0, out
    good = run_id(out)
    assert cluster.gres() != before
    assert "to undo this run: ansible-playbook hpc.slurm_gres.rollback_gres -i" in out
    assert "-e hpc_gres_rollback=%s" % good in out
    # a rollback limited to one node would match no play (the run id is read on localhost) and end rc 0 having
    # done nothing: refused, nothing changed
    changed = cluster.gres()
    rc, out = cluster.play("rollback-gres.yml", "-e", "hpc_gres_rollback=%s" % good, "--limit", "gpu-p01")
    assert rc != 0, out
    assert "rollback refused, nothing changed: --limit gpu-p01: expected no --limit" in out, out[-3000:]
    assert cluster.gres() == changed and cluster.record(good)["state"] == "done" and cluster.lock() is None
    # a check run says what the rollback would put back, with the diff (--diff), and changes nothing
    runs = sorted(os.listdir(cluster.runs))
    rc, out = cluster.play("rollback-gres.yml", "-e", "hpc_gres_rollback=%s" % good, "--check", "--diff")
    assert rc == 0, out
    assert ("check mode: nothing was changed. The rollback of run %s would put back the files of before it:" % good
            in out), out[-3000:]
    assert "gpu-p01: gres.conf; slurmd" in out
    assert "+NodeName=gpu-p01 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31" in out
    assert cluster.gres() == changed and cluster.lock() is None and sorted(os.listdir(cluster.runs)) == runs
    rc, out = cluster.play("rollback-gres.yml", "-e", "hpc_gres_rollback=%s" % good)
    assert rc == 0, out
    assert "(rollback of %s by" % good in out
    assert cluster.gres() == before
    assert cluster.record(good)["state"] == "rolled_back"


def test_a_named_rollback_to_files_the_gpus_no_longer_fit_is_refused_before_anything_changes(cluster):
    """GPU 0 split with MIG after the run: its previous gres.conf declares it a whole GPU, which slurmd would drain
    the node for. The rollback checks the previous files against the GPUs (as the deploy does), refuses with the
    reason, takes no lock and changes nothing; with the GPU whole again it goes through."""
    before = cluster.gres()
    rc, out = cluster.play("deploy-gres.yml", cores=False)
    assert rc == 0, out
    good = run_id(out)
    changed = cluster.gres()
    assert changed != before
    apply_mig_layout(cluster.node, {0: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]})
    try:
        rc, out = cluster.play("rollback-gres.yml", "-e", "hpc_gres_rollback=%s" % good)
        assert rc != 0, out
        assert ("rollback of %s refused, nothing changed: node gpu-p01: the files it ran before that run no longer "
                "fit it (gres_verify: the staged files do not fit node gpu-p01" % good) in out, out[-3000:]
        assert "MIG mode Enabled" in out
        assert cluster.gres() == changed and cluster.record(good)["state"] == "done" and cluster.lock() is None
    finally:
        apply_mig_layout(cluster.node, {0: None})
    rc, out = cluster.play("rollback-gres.yml", "-e", "hpc_gres_rollback=%s" % good)
    assert rc == 0, out
    assert cluster.gres() == before and cluster.record(good)["state"] == "rolled_back"


def test_a_held_lock_refuses_check_mode_takes_none_and_breaking_needs_the_holder(cluster):
    stale = {"run_id": "20261130T235900Z-dead", "user": "bob", "control_host": "admin-laptop", "pid": 4242,
             "started": "2026-11-30T23:59:00Z"}
    with open(os.path.join(cluster.runs, "lock"), "w") as handle:
        json.dump(stale, handle)
    before = cluster.gres()
    rc, out = cluster.play("deploy-gres.yml", cores=False)
    assert rc != 0
    assert ("another deploy holds the lock on %s (%s/lock): run 20261130T235900Z-dead by user bob from host "
            "admin-laptop (pid 4242), started 2026-11-30T23:59:00Z" % (socket.gethostname(), cluster.runs)) in out
    assert "rerun with -e hpc_gres_break_lock=20261130T235900Z-dead" in out
    assert cluster.gres() == before
    rc, out = cluster.play("deploy-gres.yml", "--check", cores=False)
    assert rc == 0, out
    assert "check mode: no lock taken, nothing recorded; the lock is held now by run 20261130T235900Z-dead" in out
    assert cluster.lock() == stale
    rc, out = cluster.play("deploy-gres.yml", "-e", "hpc_gres_break_lock=20261130T000000Z-nope")
    assert rc != 0 and "does not name the lock holder" in out
    rc, out = cluster.play("deploy-gres.yml", "-e", "hpc_gres_break_lock=20261130T235900Z-dead")
    assert rc == 0, out
    assert "the lock of run 20261130T235900Z-dead (user bob from admin-laptop" in out
    assert cluster.lock() is None


def test_an_interrupted_run_of_this_machine_is_taken_over_and_finished(cluster):
    gone = {"run_id": "20261201T000100Z-gone", "user": "root", "control_host": socket.gethostname(),
            "pid": 2 ** 22 + 7, "started": "2026-12-01T00:01:00Z", "command": "deploy"}
    # a killed MIG runbook run and a maintenance run left with nodes to do are their own playbooks' to continue
    others = [dict(gone, run_id="20261130T000000Z-mig0", command="MIG reconfiguration", state="reconfiguring"),
              dict(gone, run_id="20261130T000100Z-mnt0", command="maintenance", state="maintaining")]
    for record in [dict(gone, state="recorded")] + others:
        os.makedirs(os.path.join(cluster.runs, record["run_id"]))
        with open(os.path.join(cluster.runs, record["run_id"], "record.json"), "w") as handle:
            json.dump(dict(record, hosts={}, history=[]), handle)
    with open(os.path.join(cluster.runs, "lock"), "w") as handle:
        json.dump(gone, handle)
    rc, out = cluster.play("deploy-gres.yml", cores=False)
    assert rc == 0, out
    assert "taken over: its ansible-playbook is gone" in out
    assert "run 20261201T000100Z-gone (deploy by root" in out and "did not finish" in out
    assert cluster.record(gone["run_id"])["state"] == "superseded"
    assert "run 20261130T000000Z-mig0 (MIG reconfiguration by root" in out
    assert "Finish the layout change with ansible-playbook hpc.slurm_gres.mig_reconfigure" in out
    assert [cluster.record(record["run_id"])["state"] for record in others] == ["reconfiguring", "maintaining"]
    assert "run 20261130T000100Z-mnt0" not in out
    assert cluster.lock() is None


def test_a_slurmctld_that_does_not_come_back_stops_the_run_before_any_slurmd_restart(cluster, tmp_path):
    # an option change restarts slurmctld before the nodes; its restart fails (a systemctl that cannot restart it):
    # the run stops there with where it stands and the ways on, instead of a bare module error
    fake = fake_systemctl(tmp_path, "#!/bin/sh\necho 'Job for slurmctld.service failed' >&2\nexit 1\n")
    change = '{"hpc_gres_slurm_conf_options": {"MaxJobCount": 12345}, "hpc_gres_slurmctld_restart": true}'
    rc, out = cluster.play("deploy-gres.yml", "-e", change, cores=False, path=str(fake))
    assert rc != 0, out
    run = run_id(out)
    assert ("run %s: slurmctld on ctl01 did not come back after its restart" % run) in out, out[-3000:]
    assert "no slurmd was restarted. The new files are installed on the hosts of this run and the lock is held" in out
    assert "-e hpc_gres_rollback=%s" % run in out
    assert cluster.lock()["run_id"] == run
    # the next run (same machine, the holder gone) takes the lock over and finishes, back on the usual options
    rc, out = cluster.play("deploy-gres.yml", cores=False)
    assert rc == 0, out
    assert "taken over: its ansible-playbook is gone" in out
    assert cluster.lock() is None


SYSTEMCTL_STATEFUL = """#!/bin/sh
# slurmctld's unit for the test: a restart fails while {here}/fail exists (the unit is then failed); show reports it
echo "$*" >> "{here}/calls"
case "$1" in
  show) printf 'Id=slurmctld.service\\nLoadState=loaded\\nActiveState=%s\\nSubState=%s\\nUnitFileState=enabled\\n' \\
          "$(cat "{here}/state")" "$(cat "{here}/state")"; exit 0 ;;
  restart|start) if [ -e "{here}/fail" ]; then echo failed > "{here}/state"
                   echo 'Job for slurmctld.service failed' >&2; exit 1; fi
                 echo active > "{here}/state"; exit 0 ;;
esac
exit 0
"""


def test_the_rollback_of_a_run_whose_slurmctld_did_not_come_back_starts_it_on_the_previous_files(cluster, tmp_path):
    # the rollback's plan compares the previous files with those slurmctld last started with, which are the same:
    # without the unit's state it restarted nothing and left slurmctld down
    fake = stateful_systemctl(tmp_path)
    (tmp_path / "fail").write_text("")
    conf = cluster.tmp / "ctl" / "etc" / "slurm.conf"
    before = conf.read_text()
    change = '{"hpc_gres_slurm_conf_options": {"MaxJobCount": 23456}, "hpc_gres_slurmctld_restart": true}'
    rc, out = cluster.play("deploy-gres.yml", "-e", change, cores=False, path=str(fake))
    assert rc != 0, out
    run = run_id(out)
    assert "did not come back after its restart" in out and "starts slurmctld on them" in out, out[-3000:]
    assert "MaxJobCount=23456" in conf.read_text()
    assert (tmp_path / "state").read_text().strip() == "failed"
    (tmp_path / "fail").unlink()
    (tmp_path / "calls").write_text("")
    rc, out = cluster.play("rollback-gres.yml", "-e", "hpc_gres_rollback=%s" % run,
                           "-e", "hpc_gres_slurmctld_restart=true", cores=False, path=str(fake))
    assert rc == 0, out[-3000:]
    assert "slurmctld on ctl01: not running (failed/failed), starting it on the previous files" in out, out[-3000:]
    assert (tmp_path / "state").read_text().strip() == "active"
    # the daemon started on the files it last started with: the rollback's record holds no change
    assert "(rollback of %s by" % run in out and "no host changed the files its daemons run with" in out
    # systemd_service starts a unit that is not active rather than restart it
    assert [line for line in (tmp_path / "calls").read_text().splitlines() if "start " in line] == [
        "start slurmctld"]
    assert conf.read_text() == before
    assert cluster.lock() is None
    # a slurmctld that runs is only restarted for the change (a deploy, then its rollback)
    change = '{"hpc_gres_slurm_conf_options": {"MaxJobCount": 34567}, "hpc_gres_slurmctld_restart": true}'
    rc, out = cluster.play("deploy-gres.yml", "-e", change, cores=False, path=str(fake))
    assert rc == 0, out[-3000:]
    good = run_id(out)
    (tmp_path / "calls").write_text("")
    rc, out = cluster.play("rollback-gres.yml", "-e", "hpc_gres_rollback=%s" % good,
                           "-e", "hpc_gres_slurmctld_restart=true", cores=False, path=str(fake))
    assert rc == 0, out[-3000:]
    assert "not running" not in out
    assert [line for line in (tmp_path / "calls").read_text().splitlines() if "start " in line] == [
        "restart slurmctld"]
    assert conf.read_text() == before


def test_jobs_on_a_node_whose_gpu_count_changes_refuse_the_deploy_until_it_is_drained_or_allowed(cluster, tmp_path):
    # slurmctld kills the GPU jobs of a node whose gres/gpu count changes when it restarts (recorded on 22.05.8,
    # tests/integration/test_slurm_job_loss.py): one scontrol read of that node, refused while it runs jobs
    fake = stateful_systemctl(tmp_path)
    seven = '{"hpc_gres_slurmctld_restart": true}'
    before = cluster.gres()
    with open(cluster.busy, "w") as handle:
        handle.write("2")
    try:
        for args in ((), ("--check",)):
            rc, out = cluster.play("deploy-gres.yml", "-e", seven, *args, cores=False, path=str(fake), gpus=7)
            assert rc != 0, out[-3000:]
            assert ("nothing installed, nothing restarted: node gpu-p01: running jobs: expected none where its GRES "
                    "count changes (gpu:a100 8 -> 7), found gpu-p01 (host gpu-p01) State=MIXED CPUAlloc=16 "
                    "GresUsed=gpu:a100:2(IDX:N/A). slurmctld ends those jobs when it restarts" in out), out[-3000:]
            assert "squeue -w gpu-p01 shows no job" in out
            assert cluster.gres() == before and cluster.lock() is None
        rc, out = cluster.play("deploy-gres.yml", "-e", seven, "--check", "-e",
                               "hpc_gres_deploy_allow_state_change=true", cores=False, path=str(fake), gpus=7)
        assert rc == 0, out[-3000:]
        assert "running jobs" not in out and "slurmctld kills the jobs using it there" in out
        # jobs that hold no GPU there keep running through a GPU count change: not refused
        with open(cluster.busy, "w") as handle:
            handle.write("0")
        rc, out = cluster.play("deploy-gres.yml", "-e", seven, "--check", cores=False, path=str(fake), gpus=7)
        assert rc == 0 and "running jobs" not in out, out[-3000:]
    finally:
        os.unlink(cluster.busy)
    rc, out = cluster.play("deploy-gres.yml", "-e", seven, "--check", cores=False, path=str(fake), gpus=7)
    assert rc == 0, out[-3000:]
    assert "running jobs" not in out
    assert "TASK [Read the nodes whose jobs slurmctld's restart would end (one scontrol call)]" in out
    # nothing changes: nothing read
    rc, out = cluster.play("deploy-gres.yml", "--check", cores=False)
    assert rc == 0 and "slurmctld's restart would end (one scontrol call)] *** skipping" in out, out[-3000:]


def test_a_restart_the_inventory_holds_is_said_once_and_later_runs_change_nothing(cluster, tmp_path):
    # slurmctld once restarted with an option (recorded as what it runs with), then a change installed with
    # hpc_gres_slurmctld_restart false: the restart stays pending, and a rerun neither records a run nor takes the
    # lock for it (each later no-op deploy did, since the recorded files never catch up)
    # what ansible.builtin.service reads (systemctl show UNIT) and a restart that succeeds
    fake = fake_systemctl(tmp_path, "#!/bin/sh\n[ \"$1\" = show ] && printf 'Id=slurmctld.service\\nLoadState=loaded"
                                    "\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\n'\nexit 0\n")
    rc, out = cluster.play("deploy-gres.yml", "-e", '{"hpc_gres_slurm_conf_options": {"MaxJobCount": 777}, '
                           '"hpc_gres_slurmctld_restart": true}', cores=False, path=str(fake))
    assert rc == 0, out[-3000:]
    held = '{"hpc_gres_slurm_conf_options": {"MaxJobCount": 888}}'
    rc, out = cluster.play("deploy-gres.yml", "-e", held, cores=False, path=str(fake))
    assert rc == 0, out
    assert "hpc_gres_slurmctld_restart is false: no restart or reconfigure" in out
    runs = sorted(os.listdir(cluster.runs))
    rc, out = cluster.play("deploy-gres.yml", "-e", held, cores=False, path=str(fake))
    assert rc == 0, out
    assert "nothing changes on any host: no lock taken, no run recorded" in out, out[-3000:]
    assert ("ctl01 slurmctld host: files installed; slurmctld restart needed (options changed: maxjobcount), left "
            "for a later run: hpc_gres_slurmctld_restart is false") in out
    assert cluster.lock() is None and sorted(os.listdir(cluster.runs)) == runs
