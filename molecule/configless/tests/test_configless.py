"""configless: the controller holds every file, the node none; slurmd runs what slurmctld serves."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import slurm_checks  # noqa: E402

CTL = slurm_checks.container("gres-ctl")
NODE = slurm_checks.container("gres-gpu01")


def test_nothing_installed_on_the_node():
    for name in ("slurm.conf", "gres.conf", "cgroup.conf"):
        assert not NODE.file("/etc/slurm/" + name).exists, name


def test_the_controller_holds_one_gres_conf_for_the_cluster():
    gres = CTL.file("/etc/slurm/gres.conf").content_string
    print(gres)
    assert "NodeName=gres-gpu01 Name=gpu Type=v100 File=/dev/nvidia0 Cores=0-13\n" in gres
    assert "SlurmctldParameters=enable_configless\n" in CTL.file("/etc/slurm/slurm.conf").content_string


def test_slurmd_runs_the_files_slurmctld_served():
    fetched = NODE.file("/run/slurm/conf/gres.conf")
    assert fetched.exists
    assert fetched.content_string == CTL.file("/etc/slurm/gres.conf").content_string
    recorded = NODE.file("/var/lib/slurm-gres/slurmd/gres.conf")
    assert recorded.content_string == fetched.content_string


def test_node_idle_with_declared_gres():
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01")
    print("scontrol: State=%s Gres=%s" % (info["State"], info["Gres"]))
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:v100": 2}


def test_srun_gets_the_gpus():
    out = CTL.check_output("srun -w gres-gpu01 --gres=gpu:v100:2 printenv CUDA_VISIBLE_DEVICES")
    assert out.strip() == "0,1"
