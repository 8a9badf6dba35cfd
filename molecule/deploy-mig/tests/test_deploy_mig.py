"""After one deploy-gres.yml run (converge + idempotence): the MIG node runs GPU 0 split [3g.40gb, 2g.20gb, 1g.10gb,
1g.10gb] and GPU 1 whole, the plain node its two H100; slurmctld shows both IDLE with exactly those Gres, and a
1g.10gb instance and the H100s can be allocated."""
import os
import re
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import slurm_checks  # noqa: E402

MIG_NODE = "dmig-gpu01"
PLAIN_NODE = "dmig-gpu02"
LAYOUT = {"3g.40gb": 1, "2g.20gb": 1, "1g.10gb": 2}
DECLARED = {MIG_NODE: {"gpu:3g.40gb": 1, "gpu:2g.20gb": 1, "gpu:1g.10gb": 2, "gpu:a100": 1},
            PLAIN_NODE: {"gpu:h100": 2}}


@pytest.fixture(scope="module")
def ctl():
    return slurm_checks.container("dmig-ctl")


@pytest.fixture(scope="module")
def gpu():
    return slurm_checks.container(MIG_NODE)


def declared_gres(ctl, node):
    """The node's Gres= in the controller's slurm.conf, as {key: count}."""
    text = ctl.file("/etc/slurm/slurm.conf").content_string
    line = [l for l in text.splitlines() if l.startswith("NodeName=%s " % node)]
    assert len(line) == 1, text
    return slurm_checks.gres_counts(re.search(r"\bGres=(\S+)", line[0]).group(1))


@pytest.mark.parametrize("node", [MIG_NODE, PLAIN_NODE])
def test_slurm_conf_declares_the_inventorys_gres(ctl, node):
    assert declared_gres(ctl, node) == DECLARED[node]


@pytest.mark.parametrize("node", [MIG_NODE, PLAIN_NODE])
def test_both_nodes_registered_idle_with_the_declared_gres(ctl, node):
    info = slurm_checks.wait_for_node(ctl, node, timeout=60)
    print("%s: State=%s Gres=%s" % (node, info["State"], info["Gres"]))
    assert slurm_checks.gres_counts(info["Gres"]) == DECLARED[node]
    assert "Reason" not in info or info["Reason"] in ("", "(null)")


def test_mig_gres_conf_has_one_multiplefiles_line_per_instance_with_existing_caps(gpu, ctl):
    text = gpu.file("/etc/slurm/gres.conf").content_string
    lines = [l for l in text.splitlines() if "MultipleFiles=" in l]
    assert len(lines) == 4, text
    types = sorted(re.search(r" Type=(\S+)", l).group(1) for l in lines)
    assert types == sorted(p for p, n in LAYOUT.items() for _copy in range(n)), text
    for line in lines:
        files = re.search(r"MultipleFiles=(\S+)", line).group(1).split(",")
        assert files[0] == "/dev/nvidia0" and len(files) == 3
        for path in files[1:]:
            assert path.startswith("/dev/nvidia-caps/nvidia-cap")
            assert gpu.check_output("stat -c %%F %s", path) == "character special file", path
    assert "NodeName=dmig-gpu01 Name=gpu Type=a100 File=/dev/nvidia1 Cores=4-7" in text
    # what slurmd runs with is recorded, and it is the installed file
    assert gpu.file("/var/lib/slurm-gres/slurmd/gres.conf").content_string == text
    for name in (MIG_NODE, PLAIN_NODE):
        node = slurm_checks.container(name)
        assert ctl.file("/etc/slurm/slurm.conf").content_string == node.file("/etc/slurm/slurm.conf").content_string


def test_nvidia_smi_shows_the_layout(gpu):
    out = gpu.check_output("nvidia-smi -L")
    profiles = sorted(re.findall(r"^\s+MIG (\S+)\s+Device", out, re.M))
    assert profiles == sorted(p for p, n in LAYOUT.items() for _copy in range(n)), out


def test_one_1g_10gb_instance_and_the_h100s_can_be_allocated(ctl):
    value = slurm_checks.srun_env(ctl, MIG_NODE, "gpu:1g.10gb:1")
    print("srun --gres=gpu:1g.10gb:1 -> CUDA_VISIBLE_DEVICES=%s" % value)
    assert value is not None
    assert slurm_checks.srun_env(ctl, PLAIN_NODE, "gpu:h100:2") == "0,1"
