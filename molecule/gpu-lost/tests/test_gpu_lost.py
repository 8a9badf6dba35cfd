"""gpu-lost: after a good deploy a GPU of gres-gpu02 falls off the bus. The deploy must report it and change
nothing; with the inventory corrected it must deploy cleanly and the node must be IDLE with three H100."""

import os
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
NODE = slurm_checks.container("gres-gpu02")
PROFILE = "/etc/slurm-gres-emu/nvidia-smi-profile.json"
THREE_H100 = {"gres-gpu02": {"hpc_gres_gpus": [
    {"index": 0, "type": "h100", "cores": "24-27"},
    {"index": 1, "type": "h100", "cores": "16-19"},
    {"index": 2, "type": "h100", "cores": "28-31"},
]}}


def lose_gpu3():
    """The emulator stops enumerating GPU 3 (as after 'fallen off the bus'); its device node goes away."""
    NODE.check_output("python3 -c %s", "import json; p = %r; d = json.load(open(p)); "
                      "d['gpus'][3]['lost'] = 'missing'; json.dump(d, open(p, 'w'))" % PROFILE)
    NODE.check_output("rm -f /dev/nvidia3")


def repair_gpu3():
    """The GPU is back (reseated, replaced): enumerated again, device node back."""
    NODE.check_output("python3 -c %s", "import json; p = %r; d = json.load(open(p)); "
                      "d['gpus'][3].pop('lost', None); json.dump(d, open(p, 'w'))" % PROFILE)
    NODE.check_output("test -e /dev/nvidia3 || mknod -m 0666 /dev/nvidia3 c 195 3")


@pytest.fixture(scope="module")
def runs():
    slurm_checks.wait_for_node(CTL, "gres-gpu02")
    lose_gpu3()
    assert NODE.check_output("nvidia-smi -L").count("GPU ") == 3
    before = deploy_checks.snapshot()
    rc_lost, out_lost = deploy_checks.deploy()
    after_lost = deploy_checks.snapshot()
    with tempfile.TemporaryDirectory() as tmp:
        fixed = deploy_checks.write_inventory(tmp, THREE_H100)
        rc_fixed, out_fixed = deploy_checks.deploy(extra_inventories=[fixed])
        after_fixed = deploy_checks.snapshot()
        rc_again, out_again = deploy_checks.deploy(extra_inventories=[fixed])
        info_fixed = slurm_checks.wait_for_node(CTL, "gres-gpu02", timeout=10)
        srun_fixed = slurm_checks.srun_env(CTL, "gres-gpu02", "gpu:h100:3")
        gres_fixed = NODE.file("/etc/slurm/gres.conf").content_string
    repair_gpu3()
    rc_back, out_back = deploy_checks.deploy()  # the original inventory: four H100 again
    return {"before": before, "rc_lost": rc_lost, "out_lost": out_lost, "after_lost": after_lost,
            "rc_fixed": rc_fixed, "out_fixed": out_fixed, "after_fixed": after_fixed, "info_fixed": info_fixed,
            "srun_fixed": srun_fixed, "gres_fixed": gres_fixed, "rc_again": rc_again, "out_again": out_again,
            "rc_back": rc_back, "out_back": out_back}


def test_lost_gpu_is_reported(runs):
    assert runs["rc_lost"] != 0
    assert "gres_verify: the staged files do not fit node gres-gpu02" in runs["out_lost"]
    assert "declares 4 h100, nvidia-smi sees 3" in runs["out_lost"]
    assert "/dev/nvidia3" in runs["out_lost"]


def test_lost_gpu_run_changes_nothing(runs):
    before, after = runs["before"], runs["after_lost"]
    deploy_checks.assert_unchanged(before, after)
    for node in deploy_checks.NODES:
        assert after["nodes"][node]["reason"] is None, node


def test_corrected_inventory_deploys_cleanly(runs):
    assert runs["rc_fixed"] == 0, runs["out_fixed"][-3000:]
    out = runs["out_fixed"]
    # a count that goes down: slurmctld learns it before gres-gpu02's slurmd restarts, so no drain on the way
    assert "restart before the slurmd restarts" in out
    assert "node gres-gpu02: restarting slurmd" in out
    assert "node gres-gpu01: restarting slurmd" not in out
    assert "CUDA_VISIBLE_DEVICES=0,1,2" in out
    after = runs["after_fixed"]
    assert after["nodes"]["gres-gpu01"]["slurmd"] == runs["before"]["nodes"]["gres-gpu01"]["slurmd"]
    assert "/dev/nvidia3" not in runs["gres_fixed"] and "/dev/nvidia2" in runs["gres_fixed"]


def test_node_idle_with_three_gpus(runs):
    info = runs["info_fixed"]
    print("scontrol gres-gpu02: State=%s Gres=%s" % (info["State"], info["Gres"]))
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:h100": 3}
    assert "Reason" not in info
    assert runs["srun_fixed"] == "0,1,2"


def test_corrected_run_is_idempotent(runs):
    assert runs["rc_again"] == 0, runs["out_again"][-3000:]
    deploy_checks.assert_changed_nothing(runs["out_again"])


def test_gpu_back_count_goes_up_without_a_drain(runs):
    """A count that goes up: slurmd restarts first (slurmctld clamps to the old count), slurmctld after it, so the
    node's first registration with the restarted slurmctld already carries four GPUs: no drain, nothing to resume."""
    assert runs["rc_back"] == 0, runs["out_back"][-3000:]
    out = runs["out_back"]
    assert "restart after the slurmd restarts" in out
    assert out.index("node gres-gpu02: restarting slurmd") < out.index("slurmctld on gres-ctl: restarting")
    assert "node gres-gpu02: ok: registered: State=IDLE Gres=gpu:h100:4" in out
    assert "gres-gpu02: resumed" not in out
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3" in out
    info = slurm_checks.wait_for_node(CTL, "gres-gpu02", timeout=10)
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:h100": 4}
    assert "Reason" not in info
