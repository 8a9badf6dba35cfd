"""AutoDetect=nvml needs slurmd's gpu_nvml plugin; Debian's Slurm has none (gpu_generic, gpu_rsmi only)."""
import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import find_gpu_plugins, verify_node

SLURM = ("ClusterName=t\nSlurmctldHost=ctl\nGresTypes=gpu\n"
         "NodeName=n1 Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 Gres=gpu:a100:1\n")
GRES_NVML = "NodeName=n1 AutoDetect=nvml\nNodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"
GRES_OFF = "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n"
HW = {"cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1},
      "gpus": [{"index": 0, "minor": 0, "name": "NVIDIA A100-SXM4-80GB", "pci_bus_id": "00000000:07:00.0",
                "uuid": "GPU-0", "mig_mode": "Disabled", "cpu_affinity": None, "numa_node": None,
                "slurm_cores": None, "mig_devices": []}]}
DEV = {"/dev/nvidia0": {"kind": "char", "major": 195, "minor": 0}}


def plugin_dir(tmp_path, names):
    for name in names:
        (tmp_path / name).write_text("")
    return find_gpu_plugins(str(tmp_path))


def autodetect_findings(gres, plugins):
    return [f for f in verify_node("n1", SLURM, gres, HW, DEV, gpu_plugins=plugins) if f["check"] == "autodetect"]


def test_nvml_without_the_plugin_is_an_error_naming_dir_and_what_was_found(tmp_path):
    plugins = plugin_dir(tmp_path, ["gpu_generic.so", "gpu_rsmi.so", "gres_gpu.so"])
    assert plugins == {"dir": str(tmp_path), "plugins": ["generic", "rsmi"]}
    [f] = autodetect_findings(GRES_NVML, plugins)
    assert f["severity"] == "error"
    assert f["expected"] == "gpu_nvml.so in %s for AutoDetect=nvml" % tmp_path
    assert f["found"] == "gpu_generic.so, gpu_rsmi.so"


def test_nvml_with_the_plugin_or_autodetect_off_has_no_finding(tmp_path):
    assert autodetect_findings(GRES_NVML, plugin_dir(tmp_path, ["gpu_nvml.so", "gpu_generic.so"])) == []
    assert autodetect_findings(GRES_OFF, {"dir": "/x", "plugins": []}) == []


def test_unknown_plugin_dir_is_a_warning():
    plugins = find_gpu_plugins(candidates=("/nonexistent/slurm-a", "/nonexistent/slurm-b"))
    assert plugins == {"dir": None, "plugins": []}
    [f] = autodetect_findings(GRES_NVML, plugins)
    assert f["severity"] == "warning"


def test_this_machines_debian_slurm_has_no_nvml_plugin():
    debian = "/usr/lib/x86_64-linux-gnu/slurm-wlm"
    if not os.path.isdir(debian):
        return  # not a Debian x86_64 Slurm install; the tests above cover the logic
    found = find_gpu_plugins()
    assert found["dir"] == debian and "generic" in found["plugins"] and "nvml" not in found["plugins"]
