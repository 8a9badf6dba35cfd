"""mismatch: gres-gpu02 declares five H100, the node has four; or the inventory names another Slurm release than
the cluster runs. The deploy must refuse and touch nothing."""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
FIVE_H100 = {"gres-gpu02": {"hpc_gres_gpus": [
    {"index": 0, "type": "h100", "cores": "24-27"},
    {"index": 1, "type": "h100", "cores": "16-19"},
    {"index": 2, "type": "h100", "cores": "28-31"},
    {"index": 3, "type": "h100", "cores": "20-23"},
    {"index": 4, "type": "h100", "cores": "20-23"},
]}}


@pytest.fixture(scope="module")
def refused():
    for node in deploy_checks.NODES:
        slurm_checks.wait_for_node(CTL, node)
    before = deploy_checks.snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = deploy_checks.deploy(extra_inventories=[deploy_checks.write_inventory(tmp, FIVE_H100)])
    return {"before": before, "rc": rc, "out": out, "after": deploy_checks.snapshot()}


def test_play_fails_at_verify_naming_node_and_counts(refused):
    assert refused["rc"] != 0
    out = refused["out"]
    assert out.count("gres_verify: the staged files do not fit node gres-gpu02") == 1
    # the node fails on its own in one short line (the recap and AWX's host status name it), not with its result
    assert out.count("fatal: [gres-gpu02]") == 1
    assert ("the deploy is refused, nothing was installed on any host: node gres-gpu02 did not pass verification "
            "(its findings are above)") in " ".join(out.split())
    assert "declares 5 h100, nvidia-smi sees 4" in out
    assert "nothing installed, nothing restarted: 1 of 2 targeted node(s) did not pass verification: gres-gpu02" in out
    # the gate stops the playbook before any install or restart task runs
    assert "Install the new files" not in out
    assert "restarting slurmd" not in out


def test_files_unchanged(refused):
    before, after = refused["before"], refused["after"]
    assert after["ctl_files"] == before["ctl_files"]
    for node in deploy_checks.NODES:
        assert after["nodes"][node]["files"] == before["nodes"][node]["files"], node


def test_no_daemon_restarted(refused):
    before, after = refused["before"], refused["after"]
    assert after["slurmctld"] == before["slurmctld"]
    for node in deploy_checks.NODES:
        assert after["nodes"][node]["slurmd"] == before["nodes"][node]["slurmd"], node
        assert after["nodes"][node]["slurmd"]["ActiveState"] == "active"


def test_nodes_not_drained(refused):
    for node in deploy_checks.NODES:
        info = slurm_checks.wait_for_node(CTL, node, timeout=10)
        print("scontrol %s: State=%s Gres=%s" % (node, info["State"], info["Gres"]))
        assert slurm_checks.gres_counts(info["Gres"]) == deploy_checks.DECLARED[node]
        assert refused["after"]["nodes"][node]["reason"] is None


# The release the containers run (scripts/run-molecule.sh), and another one the inventory could wrongly name.
RUNNING = os.environ.get("SLURM_GRES_SLURM_VERSION", "24.11")
OTHER = "22.05" if RUNNING != "22.05" else "24.11"


@pytest.fixture(scope="module")
def wrong_release(refused):
    """The inventory names another Slurm release than the cluster runs: refused before anything is staged."""
    before = deploy_checks.snapshot()
    rc, out = deploy_checks.deploy("-e", "hpc_gres_slurm_version=%s" % OTHER)
    return {"before": before, "rc": rc, "out": out, "after": deploy_checks.snapshot()}


def test_a_release_the_cluster_does_not_run_is_refused_naming_each_daemon(wrong_release):
    assert wrong_release["rc"] != 0
    out = wrong_release["out"]
    for host, daemon in (("gres-ctl", "slurmctld"), ("gres-gpu01", "slurmd"), ("gres-gpu02", "slurmd")):
        assert "host %s: %s -V: expected Slurm %s (hpc_gres_slurm_version), found %s." % (host, daemon, OTHER, RUNNING) in out
    assert "nothing installed, nothing restarted: 3 Slurm daemon(s) do not run Slurm %s" % OTHER in out
    assert "Stage the files, verify them" not in out  # refused before verification staged anything


def test_a_refused_release_changes_nothing(wrong_release):
    deploy_checks.assert_unchanged(wrong_release["before"], wrong_release["after"])


THREE_H100 = {"gres-gpu02": {"hpc_gres_gpus": FIVE_H100["gres-gpu02"]["hpc_gres_gpus"][:3]}}


@pytest.fixture(scope="module")
def limited(refused):
    """A valid GRES change (gres-gpu02 down to three H100), deployed with a --limit that cannot do it safely."""
    before = deploy_checks.snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        inventory = [deploy_checks.write_inventory(tmp, THREE_H100)]
        no_controller = deploy_checks.deploy("--limit", "gres-gpu02", extra_inventories=inventory)
        node_left_out = deploy_checks.deploy("--limit", "gres-ctl,gres-gpu01", extra_inventories=inventory)
        after = deploy_checks.snapshot()
        # the same change with a sufficient limit (localhost not in it: the deploy renders on its own)
        allowed = deploy_checks.deploy("--limit", "gres-ctl,gres-gpu02", extra_inventories=inventory)
    return {"before": before, "no_controller": no_controller, "node_left_out": node_left_out, "after": after,
            "allowed": allowed, "after_allowed": deploy_checks.snapshot()}


def test_gres_change_without_slurmctld_is_refused(limited):
    rc, out = limited["no_controller"]
    assert rc != 0
    assert ("the Gres of gres-gpu02 changes, which needs slurmctld restarted, but no slurmctld host is targeted"
            in out)
    assert "Install the new files" not in out


def test_gres_change_for_a_node_outside_the_limit_is_refused(limited):
    rc, out = limited["node_left_out"]
    assert rc != 0
    assert "slurm.conf changes the Gres of gres-gpu02, which this run does not restart" in out
    assert "Install the new files" not in out


def test_refused_limits_change_nothing(limited):
    deploy_checks.assert_unchanged(limited["before"], limited["after"])


def test_a_sufficient_limit_deploys(limited):
    rc, out = limited["allowed"]
    assert rc == 0, out[-3000:]
    assert "smoke test srun --gres=gpu:h100:3 on gres-gpu02: CUDA_VISIBLE_DEVICES=0,1,2" in out
    info = slurm_checks.wait_for_node(CTL, "gres-gpu02", timeout=10)
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:h100": 3}
    # gres-gpu01 was outside the limit: not touched at all
    before, after = limited["before"], limited["after_allowed"]
    assert after["nodes"]["gres-gpu01"] == before["nodes"]["gres-gpu01"]
