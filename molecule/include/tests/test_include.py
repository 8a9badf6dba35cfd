"""include: the site's slurm.conf and cgroup.conf stay the site's; the collection owns the include file and
gres.conf."""

import os
import sys

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import slurm_checks  # noqa: E402

CTL = slurm_checks.container("gres-ctl")
NODE = slurm_checks.container("gres-gpu01")


@pytest.mark.parametrize("host", [CTL, NODE], ids=["gres-ctl", "gres-gpu01"])
def test_the_sites_files_are_untouched(host):
    assert host.run("sha256sum --check /root/site-files.sha256").rc == 0


@pytest.mark.parametrize("host", [CTL, NODE], ids=["gres-ctl", "gres-gpu01"])
def test_the_include_file_is_the_collections(host):
    text = host.file("/etc/slurm/slurm_gres.conf").content_string
    print(text)
    assert "GresTypes=gpu\n" in text
    assert "NodeName=gres-gpu01 Sockets=2 CoresPerSocket=14 ThreadsPerCore=2 RealMemory=1000 Gres=gpu:v100:2\n" in text
    assert "AuthType" not in text and "ClusterName" not in text


def test_the_node_has_its_gres_conf_and_the_controller_none():
    assert "NodeName=gres-gpu01 Name=gpu Type=v100 File=/dev/nvidia0 Cores=0-13\n" in NODE.file(
        "/etc/slurm/gres.conf").content_string
    assert not CTL.file("/etc/slurm/gres.conf").exists


def test_node_idle_with_declared_gres():
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01")
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:v100": 2}


def test_srun_gets_the_gpus():
    out = CTL.check_output("srun -w gres-gpu01 --gres=gpu:v100:2 printenv CUDA_VISIBLE_DEVICES")
    assert out.strip() == "0,1"
