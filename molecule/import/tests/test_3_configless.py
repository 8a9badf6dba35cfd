"""configless (after test_2_include): the site turns the node configless (no Slurm file on it, slurmd started
with --conf-server gres-ctl) and deploys the imported inventory with slurm_gres_config_mode: configless: the
controller holds slurm.conf (with enable_configless), cgroup.conf and the cluster-wide gres.conf; nothing is
installed on the node; slurmd runs what slurmctld serves and registers as before; a second deploy changes
nothing."""

import pytest

import adopt_checks
import slurm_checks

CTL, NODE = adopt_checks.CTL, adopt_checks.NODE
CONFIGLESS = ("-e", "slurm_gres_config_mode=configless")


@pytest.fixture(scope="module")
def runs():
    NODE.check_output("rm -f /etc/slurm/slurm.conf /etc/slurm/gres.conf /etc/slurm/cgroup.conf "
                      "/etc/slurm/slurm_gres.conf")
    adopt_checks.write(NODE, "/etc/default/slurmd", 'SLURMD_OPTIONS="--conf-server gres-ctl"\n')
    # Debian's unit starts slurmd only with a local slurm.conf; configless sites lift that
    NODE.check_output("mkdir -p /etc/systemd/system/slurmd.service.d")
    adopt_checks.write(NODE, "/etc/systemd/system/slurmd.service.d/configless.conf", "[Unit]\nConditionPathExists=\n")
    NODE.check_output("systemctl daemon-reload")
    first = adopt_checks.deploy(*CONFIGLESS)
    second = adopt_checks.deploy(*CONFIGLESS)
    return {"first": first, "second": second}


def test_deploys_and_a_second_run_changes_nothing(runs):
    assert runs["first"][0] == 0, runs["first"][1][-4000:]
    assert runs["second"][0] == 0, runs["second"][1][-4000:]
    assert adopt_checks.changed_nothing(runs["second"][1]), runs["second"][1][-3000:]


def test_nothing_installed_on_the_node(runs):
    for name in ("slurm.conf", "gres.conf", "cgroup.conf"):
        assert not NODE.file("/etc/slurm/" + name).exists, name


def test_the_controller_holds_one_gres_conf_for_the_cluster(runs):
    gres = CTL.file("/etc/slurm/gres.conf").content_string
    print(gres)
    assert "NodeName=gres-gpu01 Name=gpu File=/dev/nvidia0 Cores=0-13\n" in gres
    slurm = CTL.file("/etc/slurm/slurm.conf").content_string
    assert "SlurmctldParameters=enable_configless\n" in slurm and adopt_checks.NODE_LINE in slurm


def test_slurmd_runs_the_files_slurmctld_served(runs):
    fetched = NODE.file("/run/slurm/conf/gres.conf")
    assert fetched.exists
    assert fetched.content_string == CTL.file("/etc/slurm/gres.conf").content_string
    assert NODE.file("/var/lib/slurm-gres/slurmd/gres.conf").content_string == fetched.content_string
    assert "--conf-server gres-ctl" in NODE.check_output("ps -o args= -C slurmd")


def test_node_idle_with_its_gpus(runs):
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01")
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu": 2}
    assert "DRAIN" not in info["State"]
    out = CTL.check_output("srun -w gres-gpu01 --gres=gpu:2 printenv CUDA_VISIBLE_DEVICES")
    assert out.strip() == "0,1"
