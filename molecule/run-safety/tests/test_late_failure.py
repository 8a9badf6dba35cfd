"""late-failure: the deploy changes slurm.conf (gres-gpu01's RealMemory) on every host and gres-gpu01's gres.conf,
restarts slurmctld and slurmd, then its smoke test fails (srun given a partition that does not exist). The run
must put every host back on its previous files, restart them, and leave the node IDLE. Then a good deploy of the
same change is undone by name with rollback-gres.yml."""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
NODE = slurm_checks.container("gres-gpu01")
CHANGE = {"gres-gpu01": {"hpc_gres_node_real_memory": 900,
                         "hpc_gres_gpus": [{"index": 0, "type": "v100"}, {"index": 1, "type": "v100"}]}}
BAD_SMOKE = '{"hpc_gres_slurmctld_smoke_srun_args": ["--partition=no-such-partition"]}'


@pytest.fixture(scope="module")
def runs():
    slurm_checks.wait_for_node(CTL, "gres-gpu01")
    before = deploy_checks.snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        change = deploy_checks.write_inventory(tmp, CHANGE)
        rc_late, out_late = deploy_checks.deploy("-e", BAD_SMOKE, extra_inventories=[change])
        after_late = deploy_checks.snapshot()
        rc_good, out_good = deploy_checks.deploy(extra_inventories=[change])
        after_good = deploy_checks.snapshot()
    good_run = deploy_checks.run_id(out_good)
    rc_undo, out_undo = deploy_checks.deploy("-e", "hpc_gres_rollback=%s" % good_run,
                                             playbook=deploy_checks.ROLLBACK)
    after_undo = deploy_checks.snapshot()
    result = {"before": before, "rc_late": rc_late, "out_late": out_late, "after_late": after_late,
              "late_run": deploy_checks.run_id(out_late), "rc_good": rc_good, "after_good": after_good,
              "good_run": good_run, "rc_undo": rc_undo, "out_undo": out_undo, "after_undo": after_undo}
    return {k: deploy_checks.flat(v) if k.startswith("out") else v for k, v in result.items()}


def test_late_failure_is_reported_and_rolled_back(runs):
    assert runs["rc_late"] != 0
    out = runs["out_late"]
    assert "failed after the nodes restarted" in out
    # the failed srun's own message, not the looped task's "One or more items failed"
    assert ("failed after the nodes restarted (gres-ctl: CUDA_VISIBLE_DEVICES lists the GPUs Slurm allocated: smoke "
            "test srun --gres=gpu:v100:2 on gres-gpu01: expected CUDA_VISIBLE_DEVICES=0,1, found (unset)") in out
    assert "every host it changed is back on its previous files (rolled back)" in out
    assert "node gres-gpu01: restarting slurmd" in out  # the failure came after the restarts
    assert "gres-ctl: old files again (rolled back)" in out
    assert "gres-gpu01: old files again (rolled back)" in out


def test_every_host_back_on_its_previous_files(runs):
    before, after = runs["before"], runs["after_late"]
    assert after["ctl_files"] == before["ctl_files"]
    assert after["nodes"]["gres-gpu01"]["files"] == before["nodes"]["gres-gpu01"]["files"]
    # what the daemons are recorded to run with is the previous files too (the next deploy plans from them)
    assert NODE.file("/var/lib/slurm-gres/slurmd/gres.conf").content_string == \
        NODE.file("/etc/slurm/gres.conf").content_string
    assert CTL.file("/var/lib/slurm-gres/slurmctld/slurm.conf").content_string == \
        CTL.file("/etc/slurm/slurm.conf").content_string


def test_node_idle_with_its_gres(runs):
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01", timeout=60)
    print("scontrol gres-gpu01: State=%s Gres=%s RealMemory=%s" % (info["State"], info["Gres"], info["RealMemory"]))
    assert info["State"] == "IDLE"
    assert "Reason" not in info
    assert info["RealMemory"] == "1000"
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:v100": 2}


def test_run_record(runs):
    record = deploy_checks.run_record(runs["late_run"])
    assert record["state"] == "rolled_back"
    assert sorted(record["hosts"]) == ["gres-ctl", "gres-gpu01"]
    node = record["hosts"]["gres-gpu01"]["files"]
    before = runs["before"]["nodes"]["gres-gpu01"]["files"]
    for name in ("gres.conf", "slurm.conf"):
        assert node[name]["changed"] and node[name]["previous"] == before[name]
        assert CTL.file(node[name]["copy"]).exists
    assert deploy_checks.lock() is None


def test_named_run_rolled_back(runs):
    assert runs["rc_good"] == 0
    assert runs["after_good"]["nodes"]["gres-gpu01"]["files"] != runs["before"]["nodes"]["gres-gpu01"]["files"]
    assert runs["rc_undo"] == 0, runs["out_undo"]
    assert runs["after_undo"]["ctl_files"] == runs["before"]["ctl_files"]
    assert runs["after_undo"]["nodes"]["gres-gpu01"]["files"] == runs["before"]["nodes"]["gres-gpu01"]["files"]
    assert deploy_checks.run_record(runs["good_run"])["state"] == "rolled_back"
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01", timeout=60)
    assert info["State"] == "IDLE" and info["RealMemory"] == "1000"
