"""default: after the deploy (and the idempotence run), the cluster runs exactly the rendered configuration."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
ALL = (deploy_checks.CTL,) + deploy_checks.NODES


@pytest.fixture(scope="module")
def rendered():
    return deploy_checks.render()


def test_same_slurm_conf_everywhere_and_it_is_the_rendered_one(rendered):
    for name in ALL:
        host = slurm_checks.container(name)
        conf = host.file("/etc/slurm/slurm.conf")
        assert conf.content_string == rendered["slurm.conf"], name
        assert (conf.user, conf.group, conf.mode) == ("root", "root", 0o644), name
        assert host.file("/etc/slurm/cgroup.conf").content_string == rendered["cgroup.conf"], name


@pytest.mark.parametrize("name", deploy_checks.NODES)
def test_each_node_has_its_gres_conf(rendered, name):
    gres = slurm_checks.container(name).file("/etc/slurm/gres.conf")
    assert gres.content_string == rendered["%s/gres.conf" % name]
    assert (gres.user, gres.group, gres.mode) == ("root", "root", 0o644)
    print("%s gres.conf:\n%s" % (name, gres.content_string))
    assert not CTL.file("/etc/slurm/gres.conf").exists, "the controller is no GPU node"


@pytest.mark.parametrize("name", deploy_checks.NODES)
def test_node_idle_with_declared_gres(name):
    info = slurm_checks.wait_for_node(CTL, name)
    print("scontrol %s: State=%s Gres=%s CPUTot=%s" % (name, info["State"], info["Gres"], info["CPUTot"]))
    assert slurm_checks.gres_counts(info["Gres"]) == deploy_checks.DECLARED[name]
    assert "Reason" not in info


@pytest.mark.parametrize("name, gres, expected", [
    ("gres-gpu01", "gpu:v100:2", "0,1"),
    ("gres-gpu02", "gpu:h100:4", "0,1,2,3"),
])
def test_srun_gets_all_declared_gpus(name, gres, expected):
    slurm_checks.wait_for_node(CTL, name)
    assert slurm_checks.srun_env(CTL, name, gres) == expected


@pytest.mark.parametrize("name, gres, count, total", [
    ("gres-gpu01", "gpu:v100:1", 1, 2),
    ("gres-gpu02", "gpu:h100:3", 3, 4),
])
def test_srun_gets_some_of_the_gpus(name, gres, count, total):
    """Which GPUs a partial request gets is Slurm's choice (h100:3 gave 0,1,3 here): N distinct ones of the node."""
    slurm_checks.wait_for_node(CTL, name)
    seen = [int(i) for i in slurm_checks.srun_env(CTL, name, gres).split(",")]
    assert len(set(seen)) == count and set(seen) <= set(range(total)), seen


def test_srun_refuses_more_gpus_than_declared():
    result = CTL.run("timeout 30 srun -w gres-gpu01 --gres=gpu:v100:3 -N1 -n1 true")
    assert result.rc != 0
    assert "Requested node configuration is not available" in result.stderr


@pytest.mark.parametrize("name, unit, state_dir, files", [
    ("gres-gpu01", "slurmd", "/var/lib/slurm-gres/slurmd", ("slurm.conf", "cgroup.conf", "gres.conf")),
    ("gres-gpu02", "slurmd", "/var/lib/slurm-gres/slurmd", ("slurm.conf", "cgroup.conf", "gres.conf")),
    ("gres-ctl", "slurmctld", "/var/lib/slurm-gres/slurmctld", ("slurm.conf",)),
])
def test_second_run_restarted_nothing(name, unit, state_dir, files):
    """The deploy records the files a daemon runs with right after it (re)started it. The idempotence run would
    have restarted the daemon after that moment; the daemon started before it, so nothing was restarted."""
    host = slurm_checks.container(name)
    for fname in files:
        assert host.file("%s/%s" % (state_dir, fname)).content_string == \
            host.file("/etc/slurm/%s" % fname).content_string, fname
    recorded = int(host.check_output("stat -c %%Y %s/slurm.conf", state_dir))
    started = int(host.check_output("date -d \"$(systemctl show -p ActiveEnterTimestamp --value %s)\" +%%s", unit))
    print("%s: %s started at %d, its files recorded at %d" % (name, unit, started, recorded))
    assert started <= recorded
    assert host.service(unit).is_running
