"""configless (after test_2_include): the site turns the node configless (no Slurm file on it, slurmd started
with --conf-server gres-ctl) and deploys the imported inventory with hpc_gres_config_mode: configless: the
controller holds slurm.conf (with enable_configless), cgroup.conf and the cluster-wide gres.conf; nothing is
installed on the node; slurmd runs what slurmctld serves and registers as before; a second deploy changes
nothing."""

import pytest

import adopt_checks

CTL, NODE = adopt_checks.CTL, adopt_checks.NODE
CONFIGLESS = ("-e", "hpc_gres_config_mode=configless")


@pytest.fixture(scope="module")
def runs():
    NODE.check_output("rm -f /etc/slurm/slurm.conf /etc/slurm/gres.conf /etc/slurm/cgroup.conf "
                      "/etc/slurm/slurm_gres.conf")
    adopt_checks.write(NODE, "/etc/default/slurmd", 'SLURMD_OPTIONS="--conf-server gres-ctl"\n')
    # Debian's unit starts slurmd only with a local slurm.conf; configless sites lift that
    NODE.check_output("mkdir -p /etc/systemd/system/slurmd.service.d")
    adopt_checks.write(NODE, "/etc/systemd/system/slurmd.service.d/configless.conf", "[Unit]\nConditionPathExists=\n")
    NODE.check_output("systemctl daemon-reload")
    return adopt_checks.deploy_twice(*CONFIGLESS)


def test_deploys_and_a_second_run_changes_nothing(runs):
    adopt_checks.assert_deployed_then_unchanged(runs)


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
    adopt_checks.assert_node_idle_with_its_gpus()
