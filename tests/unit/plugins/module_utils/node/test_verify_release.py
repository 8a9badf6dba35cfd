"""gres_verify judges the staged files for the node's own Slurm release, with the same table as the renderer."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import format_findings_table, verify_node

SLURM = ("ClusterName=t\nSlurmctldHost=ctl\nGresTypes=gpu\n"
         "NodeName=node[01-02]-ib Sockets=1 CoresPerSocket=4 ThreadsPerCore=1 Gres=gpu:a100:1\n"
         "PartitionName=main Nodes=node[01-02]-ib Default=YES\n")
GRES = "NodeName=node01-ib Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-3\n"
HW = {"cpu": {"sockets": 1, "cores_per_socket": 4, "threads_per_core": 1},
      "gpus": [{"index": 0, "minor": 0, "name": "NVIDIA A100-SXM4-80GB", "pci_bus_id": "00000000:07:00.0",
                "uuid": "GPU-0", "mig_mode": "Disabled", "cpu_affinity": None, "numa_node": None,
                "slurm_cores": "0-3", "mig_devices": []}]}
DEV = {"/dev/nvidia0": {"kind": "char", "major": 195, "minor": 0}}


def findings(slurm=SLURM, gres=GRES, version=None, plugins=None, check=None):
    out = verify_node("node01-ib", slurm, gres, HW, DEV, slurmd_version=version, gpu_plugins=plugins)
    return [f for f in out if check is None or f["check"] == check]


@pytest.mark.parametrize("version", ["slurm-wlm 22.05.8", "23.02.7"])
def test_suffix_hostlists_are_an_error_before_23_11(version):
    found = findings(version=version, check="release")
    assert [f["severity"] for f in found] == ["error", "error"]
    assert found[0]["expected"] == "slurm.conf line 4: NodeName= in a hostlist form Slurm %s parses" % (
        "22.05" if "22.05" in version else "23.02")
    assert found[0]["found"].startswith("node[01-02]-ib (text after the last ']'")
    assert found[1]["expected"].startswith("slurm.conf line 5: Nodes=")
    assert "Unable to create NodeAddr list" in found[0]["hint"]
    assert "release" in format_findings_table(found)


@pytest.mark.parametrize("version", [None, "23.11.10", "24.11.5", "26.05.3"])
def test_suffix_hostlists_are_fine_from_23_11_or_unknown(version):
    assert findings(version=version, check="release") == []


def test_the_comma_form_is_fine_on_22_05():
    slurm = SLURM.replace("node[01-02]-ib", "node01-ib,node02-ib")
    assert findings(slurm=slurm, version="22.05.8") == []


def test_autodetect_nvidia_unknown_to_22_05():
    gres = "NodeName=node01-ib AutoDetect=nvidia\n" + GRES
    slurm = SLURM.replace("node[01-02]-ib", "node01-ib,node02-ib")
    [f] = findings(slurm=slurm, gres=gres, version="22.05.8", check="release")
    assert f["severity"] == "error" and f["found"] == "AutoDetect=nvidia"
    assert f["expected"] == "gres.conf AutoDetect= a mode Slurm 22.05 knows (off, nvml)"
    assert "unknown autodetect flag" in f["hint"]
    assert findings(slurm=slurm, gres=gres, version="24.11.5", check="release") == []


def test_autodetect_nvidia_needs_gpu_nvidia_so():
    gres = "NodeName=node01-ib AutoDetect=nvidia\n" + GRES
    [f] = findings(gres=gres, version="24.11.5", plugins={"dir": "/usr/lib/slurm", "plugins": ["generic"]},
                   check="autodetect")
    assert f["severity"] == "error"
    assert f["expected"] == "gpu_nvidia.so in /usr/lib/slurm for AutoDetect=nvidia"
    assert f["found"] == "gpu_generic.so"
    assert findings(gres=gres, version="26.05.3", plugins={"dir": "/usr/lib/slurm", "plugins": ["generic", "nvidia"]},
                    check="autodetect") == []
    # on 22.05 the release check reports the mode; there is no plugin to look for
    slurm = SLURM.replace("node[01-02]-ib", "node01-ib,node02-ib")
    assert findings(slurm=slurm, gres=gres, version="22.05.8", plugins={"dir": "/x", "plugins": []},
                    check="autodetect") == []


def test_autodetect_full_is_26_05_and_needs_an_nvidia_gpu_plugin():
    gres = "NodeName=node01-ib AutoDetect=full\n" + GRES
    [f] = findings(gres=gres, version="24.11.5", check="release")
    assert f["found"] == "AutoDetect=full" and "(off, nvml, nvidia)" in f["expected"]
    assert findings(gres=gres, version="26.05.5", check="release") == []
    [f] = findings(gres=gres, version="26.05.5", plugins={"dir": "/usr/lib/slurm", "plugins": ["generic", "oneapi"]},
                   check="autodetect")
    assert f["expected"] == "gpu_nvml.so or gpu_nvidia.so in /usr/lib/slurm for AutoDetect=full"
    assert f["found"] == "gpu_generic.so, gpu_oneapi.so" and "falls back to gpu/generic" in f["hint"]
    for plugin in ("nvml", "nvidia"):  # either one serves: slurmd tries nvml first, then nvidia
        assert findings(gres=gres, version="26.05.5", plugins={"dir": "/x", "plugins": ["generic", plugin]},
                        check="autodetect") == []


def test_an_empty_slurmd_g_answer_is_never_read_as_no_gpus():
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import _check_slurmd_g
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import versions
    assert versions.point_fact("slurmd_g_silent", "slurm 24.11.1")
    assert not versions.point_fact("slurmd_g_silent", "slurm 24.11.3")
    assert not versions.point_fact("slurmd_g_silent", "24.11")  # which point release runs is not known
    assert not versions.point_fact("slurmd_g_silent", "slurm-wlm 22.05.8")

    class Node(object):
        @staticmethod
        def declared():
            return {"gpu:a100": 4}

    for version, words in (("slurm 24.11.2", "known regression"), ("slurm 24.11.5", "not as no GPUs"),
                           (None, "not as no GPUs")):
        found = _check_slurmd_g(Node(), "", version)
        assert [(f["severity"], f["check"]) for f in found] == [("warning", "slurmd_g")]
        assert words in found[0]["hint"]
    # an answer with lines is judged as before: too few GPUs is an error
    found = _check_slurmd_g(Node(), "slurmd: Gres Name=gpu Type=a100 Count=2 Index=0 ID=7696487 File=/dev/nvidia0\n",
                            "slurm 24.11.2")
    assert [f["severity"] for f in found] == ["error"]
