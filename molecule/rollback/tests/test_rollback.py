"""rollback: slurmd on gres-gpu01 cannot start with the new gres.conf. The deploy must put the previous files
back, restart slurmd, fail the node with the reason, and leave the node as it was."""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
NODE = slurm_checks.container("gres-gpu01")
FAULT = "/etc/systemd/system/slurmd.service.d/zz-injected-fault.conf"
# The change: no Cores= on gres-gpu01's GPUs (verification only warns), so gres.conf changes and slurmd restarts.
NO_CORES = {"gres-gpu01": {"hpc_gres_gpus": [{"index": 0, "type": "v100"}, {"index": 1, "type": "v100"}]}}


def inject_fault():
    """slurmd starts only with the gres.conf it has now (an ExecStartPre checksum tripwire)."""
    NODE.check_output("sha256sum /etc/slurm/gres.conf > /etc/slurm-gres-emu/good-gres.sha256")
    NODE.check_output("printf '[Service]\\nExecStartPre=/usr/bin/sha256sum --check --strict "
                      "/etc/slurm-gres-emu/good-gres.sha256\\n' > %s && systemctl daemon-reload", FAULT)


@pytest.fixture(scope="module")
def rolled_back():
    for node in deploy_checks.NODES:
        slurm_checks.wait_for_node(CTL, node)
    inject_fault()
    before = deploy_checks.snapshot()
    backups_before = set(NODE.check_output("ls /etc/slurm").split())
    with tempfile.TemporaryDirectory() as tmp:
        rc, out = deploy_checks.deploy(extra_inventories=[deploy_checks.write_inventory(tmp, NO_CORES)])
    after = deploy_checks.snapshot()
    backups = set(NODE.check_output("ls /etc/slurm").split()) - backups_before
    return {"before": before, "rc": rc, "out": out, "after": after, "backups": backups}


def test_deploy_fails_naming_the_node_and_the_reason(rolled_back):
    assert rolled_back["rc"] != 0
    out = rolled_back["out"]
    assert "node gres-gpu01: the new configuration did not come up" in out
    assert "Rolled back to the previous gres.conf, cgroup.conf, slurm.conf" in out
    assert "slurmd runs the previous files again" in out
    # the batch failed: the deploy stopped before the next batch and before any slurmctld restart
    assert "node gres-gpu02: restarting slurmd" not in out


def test_previous_files_are_back(rolled_back):
    before, after = rolled_back["before"], rolled_back["after"]
    assert after["nodes"]["gres-gpu01"]["files"] == before["nodes"]["gres-gpu01"]["files"]
    assert "Cores=0-13" in NODE.file("/etc/slurm/gres.conf").content_string
    # the state record still names the previous files: a later run will try the change again
    assert NODE.file("/var/lib/slurm-gres/slurmd/gres.conf").content_string == \
        NODE.file("/etc/slurm/gres.conf").content_string
    # the install kept a backup of the file it replaced
    assert any(name.startswith("gres.conf.") and name.endswith("~") for name in rolled_back["backups"]), \
        rolled_back["backups"]


def test_node_is_as_it_was(rolled_back):
    assert NODE.service("slurmd").is_running
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01", timeout=60)
    print("scontrol gres-gpu01: State=%s Gres=%s" % (info["State"], info["Gres"]))
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:v100": 2}
    assert "Reason" not in info
    assert slurm_checks.srun_env(CTL, "gres-gpu01", "gpu:v100:2") == "0,1"


def test_rest_of_cluster_untouched(rolled_back):
    before, after = rolled_back["before"], rolled_back["after"]
    assert after["slurmctld"] == before["slurmctld"]
    assert after["nodes"]["gres-gpu02"]["slurmd"] == before["nodes"]["gres-gpu02"]["slurmd"]
    assert after["nodes"]["gres-gpu02"]["files"] == before["nodes"]["gres-gpu02"]["files"]
