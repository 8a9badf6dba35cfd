"""deploy_run: what the run record keeps per host, and the end-of-run summary."""
import hashlib

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.deploy_run import run_changes, run_outcome

SLURM_OLD, SLURM_NEW = "NodeName=gpu-a01 Gres=gpu:a100:4\n", "NodeName=gpu-a01 Gres=gpu:a100:8\n"
CGROUP = "ConstrainDevices=yes\n"
GRES_OLD, GRES_NEW = "Name=gpu Type=a100 File=/dev/nvidia[0-3]\n", "Name=gpu Type=a100 File=/dev/nvidia[0-7]\n"


def sha(text):
    return hashlib.sha256(text.encode()).hexdigest()


def node_files(slurm, gres):
    return {"slurm.conf": slurm, "cgroup.conf": CGROUP, "gres.conf": gres}


def changes():
    return run_changes({"a01": node_files(SLURM_OLD, GRES_OLD), "a02": node_files(SLURM_NEW, GRES_NEW)},
                       {"a01": node_files(SLURM_NEW, GRES_NEW), "a02": node_files(SLURM_NEW, GRES_NEW)},
                       {"a01": "gpu-a01", "a02": "gpu-a02"},
                       {"ctl": {"slurm.conf": SLURM_OLD, "cgroup.conf": CGROUP}},
                       {"ctl": {"slurm.conf": SLURM_NEW, "cgroup.conf": CGROUP}})


def test_only_hosts_that_change_are_recorded_with_every_managed_file():
    result = changes()
    assert sorted(result["changes"]) == ["a01", "ctl"]
    files = result["changes"]["a01"]["files"]
    assert files["gres.conf"] == {"previous": sha(GRES_OLD), "new": sha(GRES_NEW), "changed": True}
    assert files["cgroup.conf"] == {"previous": sha(CGROUP), "new": sha(CGROUP), "changed": False}
    assert result["changes"]["a01"]["node"] == "gpu-a01"
    assert result["changes"]["ctl"]["roles"] == ["slurmctld"]


def test_each_previous_content_is_kept_once():
    blobs = changes()["blobs"]
    assert sorted(blobs.values()) == sorted([SLURM_OLD, CGROUP, GRES_OLD])


def test_a_host_in_both_groups_is_one_entry():
    result = run_changes({"h": node_files(SLURM_OLD, GRES_OLD)}, {"h": node_files(SLURM_NEW, GRES_OLD)},
                         {"h": "h"}, {"h": {"slurm.conf": SLURM_OLD, "cgroup.conf": CGROUP}},
                         {"h": {"slurm.conf": SLURM_NEW, "cgroup.conf": CGROUP}})
    assert result["changes"]["h"]["roles"] == ["slurmd", "slurmctld"]
    assert sorted(result["changes"]["h"]["files"]) == ["cgroup.conf", "gres.conf", "slurm.conf"]


def record():
    return {"run_id": "20261201T111500Z-3fa9", "user": "alice", "control_host": "admin01",
            "started": "2026-12-01T11:15:00Z", "command": "deploy", "hosts": changes()["changes"]}


def test_a_good_run_is_done_and_says_how_to_undo_it():
    facts = {"a01": {"hpc_gres_slurmd_done": True, "hpc_gres_slurmd_restarted": True,
                     "hpc_gres_slurmd_install_result": {}},
             "ctl": {"hpc_gres_slurmctld_install_result": {}}}
    out = run_outcome(record(), facts, ["a01", "ctl"], False,
                      {"gpu-a01": {"State": "IDLE"}}, "-i inventories/prod")
    assert out["state"] == "done"
    assert out["lines"][0].startswith("run 20261201T111500Z-3fa9 (deploy by alice from admin01")
    assert "a01: new files, slurmd restarted [gres.conf, slurm.conf]" in out["lines"][1]
    assert "slurmctld: gpu-a01 IDLE" in out["lines"][1]
    assert out["lines"][-1] == ("to undo this run: ansible-playbook hpc.slurm_gres.rollback_gres -i inventories/prod "
                                "-e hpc_gres_rollback=20261201T111500Z-3fa9")


def test_a_named_rollback_calls_the_files_it_put_back_those_of_before_the_run_it_undid():
    facts = {"a01": {"hpc_gres_slurmd_done": True, "hpc_gres_slurmd_restarted": True,
                     "hpc_gres_slurmd_install_result": {}},
             "ctl": {"hpc_gres_slurmctld_install_result": {}}}
    rollback = dict(record(), command="rollback of 20261130T090000Z-aa11")
    out = run_outcome(rollback, facts, ["a01", "ctl"], False, {}, "-i inventories/prod")
    assert out["lines"][0].startswith("run 20261201T111500Z-3fa9 (rollback of 20261130T090000Z-aa11 by alice")
    assert out["lines"][1] == ("a01: the files of before run 20261130T090000Z-aa11, slurmd restarted [gres.conf, "
                               "slurm.conf]")
    facts["a01"] = {}
    out = run_outcome(rollback, facts, ["ctl"], False, {}, "-i inventories/prod")
    assert out["lines"][1] == ("a01: UNREACHABLE; last received: the files of run 20261130T090000Z-aa11 "
                               "(unreachable before the install) [gres.conf, slurm.conf]")


def test_an_unreachable_node_is_named_with_what_it_last_received():
    facts = {"a01": {"hpc_gres_slurmd_install_result": {}}, "ctl": {"hpc_gres_slurmctld_install_result": {}}}
    out = run_outcome(record(), facts, ["ctl"], False,
                      {"gpu-a01": {"State": "IDLE*", "reason": "Not responding"}})
    assert out["state"] == "restarted"  # not final: the next run finishes it
    line = [l for l in out["lines"] if l.startswith("a01:")][0]
    assert "UNREACHABLE; last received: NEW files installed, daemon not restarted" in line
    assert "[gres.conf, slurm.conf]" in line and "(drained or down: Not responding)" in line
    assert out["lines"][-1].startswith("to finish this run: ansible-playbook hpc.slurm_gres.deploy_gres")


def test_a_reason_slurmctld_kept_after_a_resume_is_not_called_a_drain():
    facts = {"a01": {"hpc_gres_slurmd_done": True, "hpc_gres_slurmd_restarted": True,
                     "hpc_gres_slurmd_install_result": {}}, "ctl": {"hpc_gres_slurmctld_install_result": {}}}
    idle = run_outcome(record(), facts, ["a01", "ctl"], False, {"gpu-a01": {"State": "IDLE", "reason": "GPU work"}})
    assert idle["lines"][1].endswith("slurmctld: gpu-a01 IDLE")
    drained = run_outcome(record(), facts, ["a01", "ctl"], False,
                          {"gpu-a01": {"State": "IDLE+DRAIN", "reason": "GPU work"}})
    assert drained["lines"][1].endswith("slurmctld: gpu-a01 IDLE+DRAIN (drained or down: GPU work)")
    # a powered-down cloud node is not down
    cloud = run_outcome(record(), facts, ["a01", "ctl"], False,
                        {"gpu-a01": {"State": "IDLE+CLOUD+POWERED_DOWN", "reason": "GPU work"}})
    assert cloud["lines"][1].endswith("slurmctld: gpu-a01 IDLE+CLOUD+POWERED_DOWN")
    down = run_outcome(record(), facts, ["a01", "ctl"], False, {"gpu-a01": {"State": "DOWN*", "reason": "x"}})
    assert down["lines"][1].endswith("(drained or down: x)")


def test_an_install_only_run_ends_installed_not_restarted():
    # --tags install: every host answered, the files are in place, no node's restart step ran
    facts = {"a01": {"hpc_gres_slurmd_install_result": {}}, "ctl": {"hpc_gres_slurmctld_install_result": {}}}
    out = run_outcome(record(), facts, ["a01", "ctl"], False, {"gpu-a01": {"State": "IDLE"}})
    assert out["state"] == "installed"  # not final: the next run (or --tags restart) restarts
    assert out["lines"][0].endswith(": installed")
    assert "a01: NEW files installed, daemon NOT restarted [gres.conf, slurm.conf]" in out["lines"][1]
    assert out["lines"][-1].startswith("to finish this run: ansible-playbook hpc.slurm_gres.deploy_gres")


def test_late_failure_rolled_back_or_not():
    facts = {"a01": {"hpc_gres_run_rolled_back": True},
             "ctl": {"hpc_gres_run_rolled_back": True, "hpc_gres_run_failure": {"msg": "smoke"}}}
    out = run_outcome(record(), facts, ["a01", "ctl"], True)
    assert out["state"] == "rolled_back"
    assert out["lines"][1].startswith("a01: old files again (rolled back)")
    partial = run_outcome(record(), facts, ["ctl"], True)
    assert partial["state"] == "rollback_failed"
    assert partial["lines"][1] == "a01: NOT ROLLED BACK (failed or unreachable in this run: not reached by the " \
        "rollback); last known: old files (nothing installed) [gres.conf, slurm.conf]"
    # a node that restarted on the new files, then failed: said so, not "unreachable"
    facts["a01"] = {"hpc_gres_slurmd_done": True, "hpc_gres_slurmd_restarted": True, "hpc_gres_slurmd_install_result": {}}
    partial = run_outcome(record(), facts, ["ctl"], True)
    assert partial["lines"][1].startswith("a01: NOT ROLLED BACK (failed or unreachable in this run: not reached by "
                                          "the rollback); last known: new files, slurmd restarted [gres.conf, "
                                          "slurm.conf]")
    assert partial["lines"][-1].startswith("to finish this run")
