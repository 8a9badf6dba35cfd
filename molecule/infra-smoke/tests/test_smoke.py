"""infra-smoke: the real Slurm in the scenario containers schedules the emulated GPUs."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import slurm_checks  # noqa: E402

CTL = slurm_checks.container("smoke-ctl")
NODE = "smoke-gpu01"


def test_daemons_running():
    assert CTL.service("munge").is_running
    assert CTL.service("slurmctld").is_running
    node = slurm_checks.container(NODE)
    assert node.service("munge").is_running
    assert node.service("slurmd").is_running


def test_device_nodes_are_character_devices():
    node = slurm_checks.container(NODE)
    for minor in range(4):
        path = "/dev/nvidia%d" % minor
        # %F: file type, %t:%T: major:minor in hex (195 = 0xc3)
        assert node.check_output("stat -c '%%F %%t:%%T' %s", path) == "character special file c3:%x" % minor


def test_node_idle_with_declared_gres_and_shape():
    info = slurm_checks.wait_for_node(CTL, NODE)
    print("scontrol: State=%s Gres=%s CPUTot=%s" % (info["State"], info["Gres"], info["CPUTot"]))
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:a100": 4}
    # HWLOC_SYNTHETIC made slurmd report the declared 2x4x2 layout, not the container host's CPUs
    assert info["CPUTot"] == "16"
    assert (info["Sockets"], info["CoresPerSocket"], info["ThreadsPerCore"]) == ("2", "4", "2")
    sinfo = CTL.check_output("sinfo -h -N -n %s -o '%%N %%t %%G'", NODE)
    print("sinfo: " + sinfo)
    assert sinfo.split()[:2] == [NODE, "idle"]


def test_srun_gets_two_gpus():
    slurm_checks.wait_for_node(CTL, NODE)
    assert slurm_checks.srun_env(CTL, NODE, "gpu:a100:2") == "0,1"


def test_srun_without_gres_sees_no_gpu():
    slurm_checks.wait_for_node(CTL, NODE)
    assert slurm_checks.srun_env(CTL, NODE, "none") is None
