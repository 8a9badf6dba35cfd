"""After the MIG runbook (converge + idempotence): the node runs GPU 0 split [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]
and GPU 1 whole, slurmctld shows it IDLE with exactly those Gres, and a 1g.10gb instance can be allocated."""
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import slurm_checks  # noqa: E402

NODE = "mig-gpu01"
LAYOUT = {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}


@pytest.fixture(scope="module")
def ctl():
    return slurm_checks.container("mig-ctl")


@pytest.fixture(scope="module")
def gpu():
    return slurm_checks.container(NODE)


def declared_gres(ctl):
    """The node's Gres= in the controller's slurm.conf, as {key: count}."""
    text = ctl.file("/etc/slurm/slurm.conf").content_string
    line = [l for l in text.splitlines() if l.startswith("NodeName=%s " % NODE)]
    assert len(line) == 1, text
    return slurm_checks.gres_counts(re.search(r"\bGres=(\S+)", line[0]).group(1))


def mig_type(declared, profile):
    """The GRES type slurm.conf uses for a profile (the profile itself, or <gpu type>_<profile>)."""
    found = [k.split(":", 1)[1] for k in declared if k.split(":", 1)[1] in (profile, "a100_" + profile)]
    assert len(found) == 1, declared
    return found[0]


def test_slurm_conf_declares_the_mig_instances_and_the_whole_gpu(ctl):
    declared = declared_gres(ctl)
    assert {mig_type(declared, p): n for p, n in LAYOUT.items()} == {
        k.split(":", 1)[1]: v for k, v in declared.items() if k != "gpu:a100"}
    assert declared["gpu:a100"] == 1


def test_node_registered_idle_with_the_declared_gres(ctl):
    info = slurm_checks.wait_for_node(ctl, NODE, timeout=60)
    print("%s: State=%s Gres=%s" % (NODE, info["State"], info["Gres"]))
    assert slurm_checks.gres_counts(info["Gres"]) == declared_gres(ctl)
    assert "Reason" not in info or info["Reason"] in ("", "(null)")


def test_gres_conf_has_one_multiplefiles_line_per_instance_with_existing_caps(gpu, ctl):
    text = gpu.file("/etc/slurm/gres.conf").content_string
    lines = [l for l in text.splitlines() if "MultipleFiles=" in l]
    assert len(lines) == 4, text
    for line in lines:
        files = re.search(r"MultipleFiles=(\S+)", line).group(1).split(",")
        assert files[0] == "/dev/nvidia0" and len(files) == 3
        for path in files[1:]:
            assert path.startswith("/dev/nvidia-caps/nvidia-cap")
            assert gpu.check_output("stat -c %%F %s", path) == "character special file", path
    assert ctl.file("/etc/slurm/slurm.conf").content_string == gpu.file("/etc/slurm/slurm.conf").content_string


def test_nvidia_smi_shows_the_layout(gpu):
    out = gpu.check_output("nvidia-smi -L")
    profiles = sorted(re.findall(r"^\s+MIG (\S+)\s+Device", out, re.M))
    assert profiles == sorted(p for p, n in LAYOUT.items() for _copy in range(n)), out


def test_one_1g_10gb_instance_can_be_allocated(ctl):
    declared = declared_gres(ctl)
    value = slurm_checks.srun_env(ctl, NODE, "gpu:%s:1" % mig_type(declared, "1g.10gb"))
    print("srun --gres=gpu:%s:1 -> CUDA_VISIBLE_DEVICES=%s" % (mig_type(declared, "1g.10gb"), value))
    assert value is not None


def test_two_1g_10gb_but_not_three(ctl):
    kind = mig_type(declared_gres(ctl), "1g.10gb")
    assert slurm_checks.srun_env(ctl, NODE, "gpu:%s:2" % kind) is not None
    cmd = ctl.run("timeout 30 srun -w %s --gres=gpu:%s:3 -N1 -n1 --immediate=5 true", NODE, kind)
    assert cmd.rc != 0
