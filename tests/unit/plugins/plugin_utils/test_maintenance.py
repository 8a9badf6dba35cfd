"""The maintenance run's decisions (plugins/plugin_utils/maintenance.py): reboot mode from slurmctld's config, the
lock, the run it continues, a failed node's drain reason, the summary."""
import os

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import maintenance as m

R = "GPU maintenance"
CONFIG = """Configuration data as of 2026-12-03T10:00:00
AccountingStorageBackupHost = (null)
RebootProgram           = /usr/sbin/reboot
ResumeRate              = 300 nodes/min
ResumeTimeout           = 3600 sec
"""
HOLDER = {"run_id": "20261203T100000Z-abcd", "user": "bob", "control_host": "admin02", "pid": 7,
          "started": "2026-12-03T10:00:00Z", "command": "deploy"}


def test_slurm_reboots_need_a_reboot_program_and_a_resume_timeout_longer_than_a_reboot():
    assert m.reboot_plan("slurm", CONFIG, 1800)["mode"] == "slurm"
    assert m.reboot_plan("auto", CONFIG, 1800) == {
        "mode": "slurm", "refusal": None,
        "notes": ["reboot through slurmctld: scontrol reboot (RebootProgram=/usr/sbin/reboot, ResumeTimeout=3600 s)"]}
    short = CONFIG.replace("3600 sec", "60 sec")
    plan = m.reboot_plan("slurm", short, 1800)
    assert plan["refusal"] == (
        "hpc_gres_maintenance_reboot=slurm: slurmctld's ResumeTimeout (60 s) is shorter than "
        "hpc_gres_maintenance_reboot_timeout (1800 s): slurmctld sets a node DOWN (reboot timed out) that takes "
        "longer to come back; raise ResumeTimeout in hpc_gres_slurm_conf_options; or use "
        "hpc_gres_maintenance_reboot=ansible")
    none = CONFIG.replace("/usr/sbin/reboot", "(null)")
    assert "slurmctld has no RebootProgram" in m.reboot_plan("slurm", none, 60)["refusal"]
    auto = m.reboot_plan("auto", none, 60)
    assert auto["mode"] == "ansible" and auto["refusal"] is None
    assert auto["notes"] == ["reboot through Ansible (ansible.builtin.reboot): slurmctld has no RebootProgram (set it "
                             "in hpc_gres_slurm_conf_options and deploy)"]
    assert m.reboot_plan("none", "", 60) == {"mode": "none", "notes": [], "refusal": None}
    assert "expected one of auto, slurm, ansible, none, found 'kexec'" in m.reboot_plan("kexec", "", 60)["refusal"]


def test_the_sites_reboot_tasks_are_named_where_they_do_the_reboot():
    none = CONFIG.replace("/usr/sbin/reboot", "(null)")
    auto = m.reboot_plan("auto", none, 60, "/site/bmc-reboot.yml")
    assert auto["notes"] == ["reboot by the site's tasks (/site/bmc-reboot.yml): slurmctld has no RebootProgram (set "
                             "it in hpc_gres_slurm_conf_options and deploy)"]
    assert m.reboot_plan("ansible", "", 60, "/site/bmc-reboot.yml")["notes"] == [
        "reboot by the site's tasks (/site/bmc-reboot.yml)"]
    # slurmctld reboots: the site's file is not used, and not named
    assert m.reboot_plan("auto", CONFIG, 1800, "/site/bmc-reboot.yml")["mode"] == "slurm"


def test_the_lock_is_refused_while_another_run_holds_it_and_a_gone_maintenance_run_is_taken_over():
    refused = m.lock_plan(HOLDER, False, [])
    assert refused["refusal"].startswith("maintenance refused, nothing was changed: a deploy holds the lock: run "
                                         "20261203T100000Z-abcd by user bob from host admin02 (pid 7), started "
                                         "2026-12-03T10:00:00Z. Wait")
    assert refused["refusal"].endswith("-e hpc_gres_break_lock=20261203T100000Z-abcd")
    assert m.lock_plan(HOLDER, False, [], "20261203T100000Z-abcd") == {"refusal": None,
                                                                       "break_lock": "20261203T100000Z-abcd"}
    gone = dict(HOLDER, command="maintenance")
    assert m.lock_plan(gone, True, []) == {"refusal": None, "break_lock": HOLDER["run_id"]}
    assert m.lock_plan(None, False, []) == {"refusal": None, "break_lock": None}


def test_an_interrupted_deploy_must_be_finished_first():
    gone_deploy = m.lock_plan(HOLDER, True, [])
    assert "a deploy did not finish: " in gone_deploy["refusal"] and ", state unknown." in gone_deploy["refusal"]
    assert "ansible-playbook hpc.slurm_gres.deploy_gres -i INVENTORY" in gone_deploy["refusal"]
    unfinished = [dict(HOLDER, run_id="20261202T100000Z-0000", state="installed")]
    assert "a deploy did not finish: run 20261202T100000Z-0000 by user bob" in m.lock_plan(
        None, False, unfinished)["refusal"]
    maintenance_left = [dict(HOLDER, command="maintenance", state="maintaining")]
    assert m.lock_plan(None, False, maintenance_left)["refusal"] is None


def record(run_id, change, done=(), failed=(), state="maintaining"):
    rec = {"run_id": run_id, "command": "maintenance", "state": state, "started": "t", "user": "alice",
           "maintenance": {"change": change}}
    rec.update({"node:" + n: {"status": "done"} for n in done})
    rec.update({"node:" + n: {"status": "failed", "reason": "x"} for n in failed})
    return rec


def test_the_newest_unfinished_run_of_the_same_change_is_continued_its_done_nodes_skipped():
    change = {"tasks": "/site/driver.yml", "role": "", "reboot": "auto"}
    other = dict(change, tasks="/site/kernel.yml")
    runs = [record("r1", change, done=["n9"]), record("r2", other, done=["n1"]),
            record("r3", change, done=["n2", "n10"], failed=["n3"]), dict(HOLDER, state="installed")]
    plan = m.resume_plan(runs, change)
    assert plan["continues"] == "r3" and plan["done"] == ["n2", "n10"]
    assert plan["fields"] == {"node:n2": {"status": "done", "reason": "done by run r3"},
                              "node:n10": {"status": "done", "reason": "done by run r3"}}
    assert plan["supersede"] == ["r1", "r2", "r3"]
    assert plan["lines"][0].startswith("continuing maintenance run r3 (started t by alice, state maintaining): 2 "
                                       "node(s) done there are skipped: n2, n10")
    assert "maintenance run r2 did not finish; not continued (another change)" in plan["lines"][1]
    fresh = m.resume_plan(runs, change, resume=False)
    assert fresh["continues"] is None and fresh["done"] == [] and fresh["supersede"] == ["r1", "r2", "r3"]
    assert "not continued (-e hpc_gres_maintenance_resume=false)" in fresh["lines"][0]


def test_a_failure_names_the_step_and_the_findings_and_never_replaces_someone_elses_drain():
    result = {"failed": True, "msg": "gres_verify: the staged files do not fit ...\nSEVERITY ...",
              "findings": [{"severity": "error", "check": "present", "found": "declares 2 v100, nvidia-smi sees 1"},
                           {"severity": "warning", "check": "cores", "found": "x"}]}
    ours = {"state_flags": ["DRAIN"], "reason": R}
    plan = m.failure_plan(R, "Maintenance readiness | verify the node's GPUs", result, ours)
    assert plan == {"text": "readiness: present: declares 2 v100, nvidia-smi sees 1", "drain": True, "kept": None,
                    "reason": "GPU maintenance: failed: readiness: present: declares 2 v100, nvidia-smi sees 1"}
    timeout = {"failed": True, "msg": "node n1: not registered as expected within 600 s: state DOWN\nmore"}
    role_task = "hpc.slurm_gres.hpc_gres_maintenance : Maintenance registration | slurmctld shows the node"
    assert m.failure_plan(R, role_task, timeout, ours)["text"] == \
        "registration: node n1: not registered as expected within 600 s: state DOWN"
    admin = {"state_flags": ["DRAIN"], "reason": "bad PSU"}
    plan = m.failure_plan(R, "Maintenance resume | x", {"msg": "drained by someone"}, admin)
    assert plan["drain"] is False and plan["kept"] == "bad PSU"
    # a site task's own name when it is not one of the maintenance's steps
    assert m.failure_text("Install driver 580", {"msg": "No package"}) == "Install driver 580: No package"
    assert m.failure_plan(R, "x", {}, None)["drain"] is True


def test_the_summary_says_per_node_what_happened_and_the_run_stays_open_while_a_node_is_left():
    # n1 resumed on 24.11: the reason stays until a job runs there, and is not shown
    nodes = {"n1": {"State": "IDLE", "reason": R}, "n2": {"State": "IDLE+DRAIN", "reason": R + ": failed: readiness: x"},
             "n3": {"State": "IDLE+DRAIN", "reason": "bad PSU"}, "n4": {"State": "IDLE"}, "n5": {"State": "IDLE"}}
    outcomes = {"n1": {"status": "done"}, "n2": {"status": "failed", "reason": "readiness: x"}}
    plan = {"done": ["n1", "n4"], "skipped": {"n3": "out of service for another reason"}, "blocked": {},
            "stopped": None}
    out = m.summary(["n1", "n2", "n3", "n4", "n5"], outcomes, plan, nodes, "run1", continues="run0")
    assert out["state"] == "maintaining" and out["failed"] == ["n2"] and out["left"] == ["n3", "n5"]
    assert out["lines"][:6] == [
        "maintenance run run1 (continuing run0): 5 node(s), 2 done, 1 failed, 2 not done",
        "n1: done; slurmctld: IDLE",
        "n2: FAILED, left drained: readiness: x; slurmctld: IDLE+DRAIN (GPU maintenance: failed: readiness: x)",
        "n3: skipped: out of service for another reason; slurmctld: IDLE+DRAIN (bad PSU)",
        "n4: done (by the run this one continues); slurmctld: IDLE",
        "n5: not done; slurmctld: IDLE"]
    assert out["lines"][-1].startswith("the run is not finished")
    done = m.summary(["n1"], {"n1": {"status": "done"}}, {}, nodes, "run2")
    assert done["state"] == "done" and len(done["lines"]) == 2


def test_the_verify_modules_options_are_read_from_its_documentation():
    path = os.path.join(os.path.dirname(m.__file__), "..", "modules", "gres_verify.py")
    options = m.module_options(path)
    # nvidia_smi and sysfs_root come from the doc fragment hpc.slurm_gres.nvidia_smi
    assert {"gres_conf", "slurm_conf", "node_name", "plan", "nvidia_smi", "sysfs_root"} <= set(options)
    assert "readiness" not in options or "readiness" in open(path).read()
