"""``ansible localhost -m hpc.slurm_gres.gpu_facts`` against the emulated nvidia-smi and a fake sysfs tree.

Each case runs the real ansible-core ad-hoc command. Expected Slurm cores are computed from the fake
tree's definition (fake_sysfs.expected_slurm_cores over each socket's cpus), independently of the module.
"""
import json
import os
import subprocess

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpusets

ROOT = testpaths.ROOT
EMULATOR_DIR = os.path.join(ROOT, "tests", "emulator")

import fake_sysfs  # noqa: E402
import hwloc_oracle  # noqa: E402
import hwloc_sysfs  # noqa: E402
import machines  # noqa: E402
import topology_corpus  # noqa: E402

ANSIBLE = testpaths.ANSIBLE
PYTHON = testpaths.PYTHON
SMI = os.path.join(EMULATOR_DIR, "nvidia-smi")


def run_module(args, profile_file=None, log=None, check=False):
    if not os.path.exists(ANSIBLE):
        pytest.fail("%s missing: run make setup" % ANSIBLE)
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="json", ANSIBLE_NOCOLOR="1")
    env.pop("NVSMI_EMU_PROFILE", None)
    if profile_file:
        env["NVSMI_EMU_PROFILE"] = str(profile_file)
    if log:
        env["NVSMI_EMU_LOG"] = str(log)
    argv = [ANSIBLE, "localhost", "-i", "localhost,", "-c", "local", "-e", "ansible_python_interpreter=" + PYTHON,
            "-m", "hpc.slurm_gres.gpu_facts", "-a", args]
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, cwd=ROOT, env=env, check=False, capture_output=True, text=True, timeout=120)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("ansible output is not JSON (rc %d):\n%s\n%s" % (
            proc.returncode, proc.stdout, proc.stderr))
    return data["plays"][0]["tasks"][0]["hosts"]["localhost"]


def machine(tmp_path, profile):
    root = tmp_path / "root"
    path = tmp_path / "profile.json"
    machines.write(str(path), profile)
    lay = machines.build_sysfs(str(root), profile)
    return str(path), str(root), lay


def expected_cores(lay, profile):
    """Per GPU (in PCI order): the Slurm cores of the cpus the profile says are local to it."""
    out = []
    for gpu in sorted(profile["gpus"], key=lambda g: g["pci_bus_id"]):
        cpus = []
        for part in gpu["cpu_affinity"].split(","):
            lo, _sep, hi = part.partition("-")
            cpus.extend(range(int(lo), int(hi or lo) + 1))
        out.append(fake_sysfs._ranges(fake_sysfs.expected_slurm_cores(lay, cpus)))
    return out


SHAPES = [
    (2, 32, 2, "linear", 4),
    (2, 32, 2, "interleaved", 2),
    (2, 16, 1, "linear", 1),
    (4, 12, 2, "linear", 1),
    (1, 24, 2, "adjacent", 3),
]


@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "%dx%dx%d-%s-%dgpu" % s)
def test_generated_shapes(tmp_path, shape):
    profile = machines.shape_profile(*shape)
    path, root, lay = machine(tmp_path, profile)
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path)
    assert not result.get("failed"), result.get("msg")
    assert result["changed"] is False
    hw = result["ansible_facts"]["hpc_gres_hw"]
    assert {k: hw["cpu"][k] for k in ("sockets", "cores_per_socket", "threads_per_core")} == {
        "sockets": shape[0], "cores_per_socket": shape[1], "threads_per_core": shape[2]}
    assert hw["cpu"]["shape_fits"] is True
    assert hw["cpu"]["source"] == "libhwloc", hw["cpu"]["source_notes"]
    assert [g["slurm_cores"] for g in hw["gpus"]] == expected_cores(lay, profile)
    # Whole sockets: Slurm cores s*C .. s*C+C-1.
    per = shape[1]
    assert [g["slurm_cores"] for g in hw["gpus"]] == [
        "%d-%d" % (s * per, s * per + per - 1) for s in range(shape[0]) for _k in range(shape[4])]


@pytest.mark.parametrize("name", ["a100-8gpu-p4d", "h100-4gpu-nv6-8numa", "v100-2gpu-s116"])
def test_ready_profiles_replaying_real_topo(tmp_path, name):
    profile = machines.load(name)
    path, root, lay = machine(tmp_path, profile)
    log = tmp_path / "calls.log"
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path, log=log)
    assert not result.get("failed"), result.get("msg")
    hw = result["ansible_facts"]["hpc_gres_hw"]
    assert [g["slurm_cores"] for g in hw["gpus"]] == expected_cores(lay, profile)
    by_bus_id = sorted(profile["gpus"], key=lambda g: g["pci_bus_id"])
    assert [g["uuid"] for g in hw["gpus"]] == [g["uuid"] for g in by_bus_id]
    # Only the three calls of the contract, as argument lists (no MIG here).
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls == [
        ["--query-gpu=index,uuid,name,pci.bus_id,mig.mode.current,memory.total,memory.used",
         "--format=csv,noheader,nounits"],
        ["topo", "-m"],
        ["--query-compute-apps=gpu_uuid,pid,used_memory,process_name", "--format=csv,noheader,nounits"]]
    assert result["commands"][0][0] == SMI


@pytest.mark.parametrize("name, source", [("nvidiaDGX2", "auto"), ("nvidiaDGX2", "sysfs"),
                                          ("power8gpudistances", "auto"), ("24em64t-2n6c2t-pci", "lstopo")])
def test_real_machines_from_hwlocs_corpus(tmp_path, name, source):
    """DGX-2 (16 GPUs), POWER8 with 4 P100 and a Xeon with 3 Teslas from hwloc's test XMLs: every GPU's
    slurm_cores is hwloc-calc's answer on the machine's own topology, whichever source the module used."""
    hwloc_oracle.require()
    kind, xml = topology_corpus.prepare(os.path.join(ROOT, "tests", "fixtures", "hwloc", "xml", name + ".xml.xz"),
                                        str(tmp_path / "in"))
    full = hwloc_oracle.full_xml(xml, kind, str(tmp_path / "full.xml"))
    view = hwloc_oracle.slurm_view_xml(xml, kind, str(tmp_path / "view.xml"))
    root = tmp_path / "root"
    with open(full) as handle:
        info = hwloc_sysfs.write(str(root), handle.read())
    profile = machines.hwloc_profile(info, "hwloc tests/hwloc/xml/%s.xml" % name)
    fake_sysfs.write_gpu_information(str(root), [{"pci_bus_id": g["pci_bus_id"], "minor": g["minor"]}
                                                 for g in profile["gpus"]])
    path = tmp_path / "profile.json"
    machines.write(str(path), profile)
    result = run_module("nvidia_smi=%s sysfs_root=%s topology_source=%s" % (SMI, root, source), path)
    assert not result.get("failed"), result.get("msg")
    hw = result["ansible_facts"]["hpc_gres_hw"]
    assert hw["cpu"]["source"] == ("libhwloc" if source == "auto" else source)
    masks = [cpusets.to_hwloc_bitmap(cpusets.parse_cpulist(g["cpu_affinity"])) for g in profile["gpus"]]
    expected = hwloc_oracle.intersect_cores(view, masks)
    assert [g["slurm_cores"] for g in hw["gpus"]] == [fake_sysfs._ranges(cores) for cores in expected]
    assert len(hw["gpus"]) == len(info["gpus"]) > 0
    if hwloc_oracle.slurmd_path():
        assert hw["cpu"]["slurmd_c"] == hwloc_oracle.slurmd_view(view)["slurmd_c"]
    if not hw["cpu"]["shape_fits"]:
        assert any("slurmd -C would print: " + hw["cpu"]["slurmd_c"] in w for w in result.get("warnings", []))


@pytest.mark.ansible_core
def test_mig_profile_runs_the_mig_listings(tmp_path):
    path, root, _lay = machine(tmp_path, machines.load("a100-40gb-mig-ssup2"))
    log = tmp_path / "calls.log"
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path, log=log)
    assert not result.get("failed"), result.get("msg")
    gpu = result["ansible_facts"]["hpc_gres_hw"]["gpus"][0]
    assert [(d["profile"], d["gi_id"], d["ci_id"], d["gi_cap_minor"], d["ci_cap_minor"])
            for d in gpu["mig_devices"]] == [("4g.20gb", 2, 0, 21, 22), ("1c.2g.10gb", 3, 0, 30, 31),
                                             ("1c.2g.10gb", 3, 1, 30, 32), ("1g.5gb", 9, 0, 84, 85)]
    calls = [json.loads(line) for line in log.read_text().splitlines()]
    assert calls[3:] == [["-L"], ["mig", "-lgi"], ["mig", "-lci"]]


def test_processes_on_a_busy_node(tmp_path):
    path, root, _lay = machine(tmp_path, machines.load("h200-8gpu-busy"))
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path)
    gpus = result["ansible_facts"]["hpc_gres_hw"]["gpus"]
    assert [len(g["processes"]) for g in gpus] == [1] * 8
    assert gpus[0]["processes"][0]["pid"] == 1328667 and gpus[0]["processes"][0]["used_mib"] == 130004
    assert gpus[7]["processes"][0]["process_name"] is None
    assert [g["slurm_cores"] for g in gpus] == ["0-47"] * 4 + ["48-95"] * 4


def test_lost_gpus(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["gpus"][1]["lost"] = True
    profile["gpus"][6]["lost"] = "unreachable"
    path, root, _lay = machine(tmp_path, profile)
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path)
    assert not result.get("failed"), result.get("msg")
    hw = result["ansible_facts"]["hpc_gres_hw"]
    assert len(hw["gpus"]) == 6
    assert [x["pci_bus_id"] for x in hw["lost_gpus"]] == ["00000000:A0:1C.0"]
    assert any("cannot reach a GPU" in w for w in result.get("warnings", []))


@pytest.mark.ansible_core
def test_check_mode(tmp_path):
    path, root, _lay = machine(tmp_path, machines.shape_profile(2, 8, 2, "linear", 1))
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path, check=True)
    assert not result.get("failed"), result.get("msg")
    assert [g["slurm_cores"] for g in result["ansible_facts"]["hpc_gres_hw"]["gpus"]] == ["0-7", "8-15"]


@pytest.mark.ansible_core
def test_missing_nvidia_smi_fails_clearly(tmp_path):
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (tmp_path / "no-such-nvidia-smi", tmp_path))
    assert result["failed"]
    assert "nvidia_smi: expected an executable file" in result["msg"]
    assert "Traceback" not in json.dumps(result)
    result = run_module("nvidia_smi=nvidia-smi-not-installed-here")
    assert result["failed"] and "is not on PATH" in result["msg"]


def test_driver_not_loaded_fails_clearly(tmp_path):
    profile = machines.shape_profile(2, 8, 2, "linear", 1)
    profile["driver"] = "not_loaded"
    path, root, _lay = machine(tmp_path, profile)
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path)
    assert result["failed"]
    assert "exit code 9" in result["msg"] and "couldn't communicate with the NVIDIA driver" in result["msg"]


def test_no_gpus_is_an_empty_list(tmp_path):
    profile = machines.shape_profile(1, 4, 1, "linear", 1)
    profile["gpus"] = []
    path, root, _lay = machine(tmp_path, profile)
    result = run_module("nvidia_smi=%s sysfs_root=%s" % (SMI, root), path)
    assert not result.get("failed"), result.get("msg")
    assert result["ansible_facts"]["hpc_gres_hw"]["gpus"] == []
