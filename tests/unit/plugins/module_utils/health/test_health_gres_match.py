"""The live GPUs against the deployed gres.conf: the deploy's own comparison, only the errors that mean a wrong
count or wrong devices, plus the MIG instance comparison. Device nodes are real (mknod), so this runs as root."""
import os

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import gres_match

pytestmark = pytest.mark.skipif(os.geteuid() != 0, reason="needs root for mknod")

SLURM = "ClusterName=x\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=n1 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 " \
        "Gres=%s\n"
CAPS_MAJOR = 508
GRES_H100 = "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia[0-7]\n"


def gpu(index, name="NVIDIA H100 80GB HBM3", mig_mode="Disabled", mig_devices=(), cores=None):
    return {"index": index, "uuid": "GPU-%d" % index, "name": name, "pci_bus_id": "00000000:%02X:00.0" % (0x18 + index),
            "minor": index, "minor_source": "proc", "mig_mode": mig_mode, "mig_devices": list(mig_devices),
            "slurm_cores": cores}


def hw(gpus):
    return {"gpus": gpus, "lost_gpus": [], "cpu": None}


@pytest.fixture
def root(tmp_path):
    dev = tmp_path / "dev"
    (dev / "nvidia-caps").mkdir(parents=True)
    for minor in range(8):
        os.mknod(str(dev / ("nvidia%d" % minor)), 0o666 | 0o020000, os.makedev(195, minor))
    for minor in range(1, 40):
        os.mknod(str(dev / "nvidia-caps" / ("nvidia-cap%d" % minor)), 0o444 | 0o020000,
                 os.makedev(CAPS_MAJOR, minor))
    return str(tmp_path)


def checks(result):
    return [(f["severity"], f["check"], f["gpu"]) for f in result["findings"]]


def test_healthy_node(root):
    result = gres_match.gres_findings("n1", SLURM % "gpu:h100:8", GRES_H100, hw([gpu(i) for i in range(8)]), root)
    assert result["applies"] and result["findings"] == []


def test_gpu_gone_from_nvidia_smi(root):
    gpus = [gpu(i) for i in range(8) if i != 3]
    result = gres_match.gres_findings("n1", SLURM % "gpu:h100:8", GRES_H100, hw(gpus), root)
    assert ("error", "gres_present", None) in checks(result)
    assert ("error", "gres_device", None) in checks(result)
    present = [f for f in result["findings"] if f["check"] == "gres_present"][0]
    assert present["found"] == "declares 8 h100, nvidia-smi sees 7"


def test_wrong_model(root):
    gpus = [gpu(i) for i in range(8)]
    gpus[5]["name"] = "NVIDIA A100-SXM4-80GB"
    result = gres_match.gres_findings("n1", SLURM % "gpu:h100:8", GRES_H100, hw(gpus), root)
    assert ("error", "gres_type", 5) in checks(result)


def test_cpu_binding_checks_never_take_a_node_out(root):
    """Cores that do not match the GPUs' CPU affinity are a deploy warning; the health check drops them."""
    gres = "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia[0-3] Cores=4-7\n" \
           "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia[4-7] Cores=0-3\n"
    gpus = [gpu(i, cores=[0, 1, 2, 3] if i < 4 else [4, 5, 6, 7]) for i in range(8)]
    result = gres_match.gres_findings("n1", SLURM % "gpu:h100:8", gres, hw(gpus), root)
    assert result["applies"] and result["findings"] == []


def test_no_nodename_line(root):
    result = gres_match.gres_findings("other", SLURM % "gpu:h100:8", "Name=gpu File=/dev/nvidia0\n",
                                      hw([gpu(0)]), root)
    assert not result["applies"] and result["reason"] == "slurm.conf has no NodeName line for other"


def test_files_not_read(root):
    assert gres_match.gres_findings("n1", None, "", hw([]), root)["reason"] == "slurm.conf not read"
    assert gres_match.gres_findings("n1", SLURM % "gpu:1", None, hw([]), root)["reason"] == "gres.conf not read"
    assert not gres_match.gres_findings("n1", SLURM % "gpu:1", "", None, root)["applies"]


def mig_device(gi, ci, gi_cap, ci_cap, profile="3g.40gb"):
    return {"uuid": "MIG-%d-%d" % (gi, ci), "profile": profile, "device": 0, "gi_id": gi, "ci_id": ci,
            "gi_profile": profile, "gi_cap_minor": gi_cap, "ci_cap_minor": ci_cap}


MIG_GRES = ("NodeName=n1 Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,"
            "/dev/nvidia-caps/nvidia-cap22\n"
            "NodeName=n1 Name=gpu Type=3g.40gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap30,"
            "/dev/nvidia-caps/nvidia-cap31\n")


def test_mig_instances_as_deployed(root):
    live = gpu(0, "NVIDIA A100-SXM4-80GB", "Enabled", [mig_device(1, 0, 21, 22), mig_device(2, 0, 30, 31)])
    result = gres_match.gres_findings("n1", SLURM % "gpu:3g.40gb:2", MIG_GRES, hw([live]), root)
    assert result["applies"] and result["findings"] == []


def test_mig_layout_rebuilt_with_other_instances(root):
    """Same count and type, other GPU instances: slurmd would hand out caps of instances that are gone."""
    live = gpu(0, "NVIDIA A100-SXM4-80GB", "Enabled", [mig_device(1, 0, 21, 22), mig_device(5, 0, 66, 67)])
    result = gres_match.gres_findings("n1", SLURM % "gpu:3g.40gb:2", MIG_GRES, hw([live]), root)
    assert checks(result) == [("error", "gres_mig", 0)]
    assert result["findings"][0]["expected"].startswith(
        "gres.conf line 2: a live MIG instance of GPU 0 with caps 30,31")


def test_mig_instances_lost_at_a_reboot(root):
    live = gpu(0, "NVIDIA A100-SXM4-80GB", "Enabled", [])
    result = gres_match.gres_findings("n1", SLURM % "gpu:3g.40gb:2", MIG_GRES, hw([live]), root)
    assert ("error", "gres_present", None) in checks(result)


def test_autodetected_mig_types_are_counted(root):
    gres = "NodeName=n1 AutoDetect=nvml\n"
    lost = gpu(0, "NVIDIA A100-SXM4-80GB", "Enabled", [mig_device(1, 0, 21, 22)])
    result = gres_match.gres_findings("n1", SLURM % "gpu:3g.40gb:2", gres, hw([lost]), root)
    assert [(f["check"], f["found"]) for f in result["findings"] if f["severity"] == "error"] == [
        ("gres_present", "declares 2 3g.40gb, nvidia-smi sees 1")]
    full = gpu(0, "NVIDIA A100-SXM4-80GB", "Enabled", [mig_device(1, 0, 21, 22), mig_device(2, 0, 30, 31)])
    result = gres_match.gres_findings("n1", SLURM % "gpu:3g.40gb:2", gres, hw([full]), root)
    assert [f for f in result["findings"] if f["severity"] == "error"] == []


def test_collect_calls_the_health_check_skips():
    assert gres_match._skipped(["nvidia-smi", "topo", "-m"])
    assert gres_match._skipped(["nvidia-smi", "--query-compute-apps=gpu_uuid,pid", "--format=csv"])
    assert not gres_match._skipped(["nvidia-smi", "--query-gpu=index", "--format=csv"])
    assert not gres_match._skipped(["nvidia-smi", "mig", "-lgi"])
