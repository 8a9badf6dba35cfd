"""The emulated nvidia-smi's MIG commands (tests/emulator/emu_mig.py) against real recordings and the driver's rules.

Each call runs the emulator script as a subprocess, the way the modules run nvidia-smi. Where a recording of
the same command exists, the emulator's output must equal it (after the fixture's ``# ---`` header and any
shell prompt line).
"""
import json
import os
import stat
import subprocess
import sys

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import (
    parse_list_gpus,
    parse_mig_lci,
    parse_mig_lgi,
    parse_mig_lgip,
    parse_mig_lgipp,
    parse_query_gpu,
)

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EMULATOR = os.path.join(ROOT, "tests", "emulator")
NVIDIA_SMI = os.path.join(EMULATOR, "nvidia-smi")
MKNOD_CAPS = os.path.join(EMULATOR, "mknod-caps")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
sys.path.insert(0, EMULATOR)
import fake_sysfs  # noqa: E402

GH200 = {"uuid": "GPU-4a7e2c9b-0f1d-5e3a-9c2b-7d6e5f4a3b21", "name": "NVIDIA GH200 480GB",
         "pci_bus_id": "00000009:01:00.0", "memory_total_mib": 97871, "mig_mode": "Enabled",
         "cpu_affinity": "0-71", "numa_affinity": "0"}
A30 = {"uuid": "GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bcd", "name": "NVIDIA A30", "pci_bus_id": "00000000:0B:00.0",
       "memory_total_mib": 24576, "mig_mode": "Enabled", "cpu_affinity": "0-7", "numa_affinity": "0"}
A100 = {"uuid": "GPU-a1000000-5807-0dbe-62e6-000000000000", "name": "NVIDIA A100-SXM4-80GB",
        "pci_bus_id": "00000000:07:00.0", "memory_total_mib": 81920, "mig_mode": "Disabled",
        "cpu_affinity": "0-31", "numa_affinity": "0"}


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as fh:
        text = fh.read()
    assert text.startswith("# source:")
    body = text.split("# ---\n", 1)[1]
    return "".join(line for line in body.splitlines(True) if "nvidia-smi" not in line)


class Emu(object):
    def __init__(self, tmp_path, *gpus, processes=()):
        self.path = str(tmp_path / "profile.json")
        self.env = dict(os.environ, NVSMI_EMU_PROFILE=self.path)
        for key in ("NVSMI_EMU_DEV_ROOT", "NVSMI_EMU_ROOT"):
            self.env.pop(key, None)
        with open(self.path, "w") as fh:
            json.dump({"gpus": [dict(g) for g in gpus], "processes": list(processes)}, fh)

    def __call__(self, *argv, rc=0):
        proc = subprocess.run([NVIDIA_SMI] + list(argv), env=self.env, check=False, capture_output=True, text=True,
                              timeout=60)
        assert proc.returncode == rc, (argv, proc.returncode, proc.stdout, proc.stderr)
        return proc.stdout

    @property
    def profile(self):
        with open(self.path) as fh:
            return json.load(fh)


def test_gh200_seven_1g_instances_get_the_recorded_out_of_order_ids(tmp_path):
    emu = Emu(tmp_path, GH200)
    out = emu("mig", "-cgi", "19,19,19,19,19,19,19", "-C")
    assert out == fixture("nvidia-smi", "mig", "gh200-cgi-create-7x1g12gb.txt")


def test_gh200_three_1g24gb_instances_match_the_recording(tmp_path):
    emu = Emu(tmp_path, GH200)
    assert emu("mig", "-cgi", "15,15,15", "-C") == fixture("nvidia-smi", "mig", "gh200-96gb-cgi-create-3x1g24gb.txt")


def test_second_media_engine_instance_is_insufficient_resources_as_recorded(tmp_path):
    emu = Emu(tmp_path, GH200)
    emu("mig", "-cgi", "1g.12gb+me:6", "-C")
    out = emu("mig", "-cgi", "20,20,20", "-C", rc=255)
    assert out == fixture("nvidia-smi", "mig", "gh200-96gb-cgi-insufficient-resources.txt")


def test_process_on_the_gpu_blocks_creation_as_recorded(tmp_path):
    emu = Emu(tmp_path, GH200, processes=[{"gpu_uuid": GH200["uuid"], "pid": 4242, "process_name": "nsys",
                                           "used_memory_mib": 500}])
    out = emu("mig", "-cgi", "20,20,20,20,20,20,20,20", "-C", rc=255)
    assert out == fixture("nvidia-smi", "mig", "gh200-96gb-cgi-in-use-by-another-client.txt")
    assert emu.profile["gpus"][0].get("mig", {}).get("gpu_instances", []) == []


def test_a30_session_reproduced_ids_listing_and_profiles(tmp_path):
    emu = Emu(tmp_path, A30)
    assert emu("mig", "-lgip") == fixture("nvidia-smi", "mig", "a30-lgip-with-me-profiles.txt")
    assert parse_mig_lgipp(emu("mig", "-lgipp")) == parse_mig_lgipp(fixture("nvidia-smi", "mig", "a30-lgipp.txt"))
    emu("mig", "-lgi", rc=6)
    emu("mig", "-cgi", "14,14,5", "-C")
    expected = parse_mig_lgi(fixture("nvidia-smi", "mig", "a30-lgi-mixed-3instances.txt"))
    assert parse_mig_lgi(emu("mig", "-lgi")) == expected
    listed = parse_list_gpus(emu("-L"))
    real = parse_list_gpus(fixture("nvidia-smi", "list", "a30-mig-2g12gb-2x1g6gb-L.txt"))
    assert [d["profile"] for d in listed[0]["mig_devices"]] == [d["profile"] for d in real[0]["mig_devices"]]


def test_gh200_lgip_matches_the_recording(tmp_path):
    emu = Emu(tmp_path, GH200)
    assert emu("mig", "-lgip") == fixture("nvidia-smi", "mig", "gh200-96gb-lgip-full-profile-list.txt")
    emu("mig", "-cgi", "9", "-C")
    free = {r["profile"]: (r["free"], r["total"]) for r in parse_mig_lgip(emu("mig", "-lgip"))}
    assert free["3g.48gb"] == (1, 2) and free["7g.96gb"] == (0, 1) and free["1g.12gb"] == (4, 7)


RTX_PRO_6000 = {"uuid": "GPU-8b89b58e-b427-108d-ac50-06138d78fe78",
                "name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "pci_bus_id": "00000000:41:00.0",
                "memory_total_mib": 97887, "mig_mode": "Enabled", "cpu_affinity": "0-15", "numa_affinity": "0"}


def test_rtx_pro_6000_listings_and_a_mixed_layout_match_the_recordings(tmp_path):
    emu = Emu(tmp_path, RTX_PRO_6000)
    # the 610 driver's wider Name column aside, the same rows (ids, counts, memory, engines)
    assert parse_mig_lgip(emu("mig", "-lgip")) == parse_mig_lgip(
        fixture("nvidia-smi", "mig", "rtxpro6000se-610-lgip-kubesimplify.txt"))
    assert parse_mig_lgipp(emu("mig", "-lgipp")) == parse_mig_lgipp(
        fixture("nvidia-smi", "mig", "rtxpro6000se-610-lgipp-kubesimplify.txt"))
    emu("mig", "-cgi", "2g.48gb,1g.24gb,1g.24gb", "-C")
    assert parse_mig_lgi(emu("mig", "-lgi")) == parse_mig_lgi(
        fixture("nvidia-smi", "mig", "rtxpro6000se-610-cgi-2g1g1g-then-lgi-kubesimplify.txt"))


def test_a100_placements_equal_the_mig_user_guide(tmp_path):
    emu = Emu(tmp_path, dict(A100, mig_mode="Enabled"))
    assert parse_mig_lgipp(emu("mig", "-lgipp")) == parse_mig_lgipp(
        fixture("nvidia-smi", "mig", "a100-lgipp-mig-user-guide.txt"))


@pytest.mark.parametrize("spec, ok", [
    ("4g.40gb,4g.40gb", False),
    ("3g.40gb,3g.40gb,1g.10gb", False),
    ("3g.40gb,2g.20gb,2g.20gb", True),
    ("4g.40gb,2g.20gb,1g.10gb", True),
    ("4g.40gb,3g.40gb", True),
    ("1g.10gb+me,1g.10gb+me", False),
    ("1g.20gb,1g.20gb,1g.20gb,1g.20gb", True),
    ("1g.20gb,1g.20gb,1g.20gb,1g.20gb,1g.10gb", False),
    ("7g.80gb,1g.10gb", False),
])
def test_driver_placement_rule_on_a100_80gb(tmp_path, spec, ok):
    emu = Emu(tmp_path, dict(A100, mig_mode="Enabled"))
    emu("mig", "-i", "0", "-cgi", spec, "-C", rc=0 if ok else 255)


def test_creation_order_matters_without_explicit_placement_and_not_with_it(tmp_path):
    """The known A100 advice: create 3g first (2g instances go to slices 4 and 0, leaving 3g no start)."""
    emu = Emu(tmp_path, dict(A100, mig_mode="Enabled"))
    out = emu("mig", "-cgi", "14,14,9", "-C", rc=255)
    assert "using profile 9: Insufficient Resources" in out
    assert len(parse_mig_lgi(emu("mig", "-lgi"))) == 2  # the two 2g instances stay, as on hardware
    emu("mig", "-dci")
    emu("mig", "-dgi")
    emu("mig", "-cgi", "9,14,14", "-C")
    emu("mig", "-dci")
    emu("mig", "-dgi")
    emu("mig", "-cgi", "14:0,14:2,9:4", "-C")
    assert sorted((r["profile"], r["placement_start"]) for r in parse_mig_lgi(emu("mig", "-lgi"))) == [
        ("2g.20gb", 0), ("2g.20gb", 2), ("3g.40gb", 4)]


def test_destroy_order_and_in_use(tmp_path):
    emu = Emu(tmp_path, dict(A100, mig_mode="Enabled"))
    emu("mig", "-cgi", "3g.40gb:4,2g.20gb:0", "-C")
    out = emu("mig", "-gi", "2", "-dgi", rc=255)
    assert out == ("Unable to destroy GPU instance ID  2 from GPU  0: In use by another client\n"
                   "Failed to destroy GPU instances: In use by another client\n")
    assert emu("mig", "-i", "0", "-gi", "2", "-ci", "0", "-dci") == (
        "Successfully destroyed compute instance ID  0 from GPU  0 GPU instance ID  2\n")
    assert emu("mig", "-i", "0", "-gi", "2", "-dgi") == "Successfully destroyed GPU instance ID  2 from GPU  0\n"
    assert [r["gi_id"] for r in parse_mig_lgi(emu("mig", "-lgi"))] == [3]
    emu("mig", "-gi", "2", "-dgi", rc=6)


def test_compute_instance_split_and_lci(tmp_path):
    emu = Emu(tmp_path, dict(A100, mig_mode="Enabled"))
    emu("mig", "-cgi", "3g.40gb:0")
    out = emu("mig", "-cci", "0,0,0", "-gi", "1")
    assert out.count("Successfully created compute instance ID") == 3
    rows = parse_mig_lci(emu("mig", "-lci"))
    assert [(r["gi_id"], r["ci_id"], r["profile"], r["placement_start"]) for r in rows] == [
        (1, 0, "1c.3g.40gb", 0), (1, 1, "1c.3g.40gb", 1), (1, 2, "1c.3g.40gb", 2)]
    emu("mig", "-cci", "0", "-gi", "1", rc=255)  # no compute slice left
    assert len(parse_list_gpus(emu("-L"))[0]["mig_devices"]) == 3


def test_mig_mode_enable_disable_and_pending(tmp_path):
    emu = Emu(tmp_path, A100, dict(A100, uuid=A100["uuid"][:-1] + "1", pci_bus_id="00000000:0F:00.0",
                                   mig_mode_change="pending"))
    assert emu("-i", "0", "-mig", "1") == "Enabled MIG Mode for GPU 00000000:07:00.0\nAll done.\n"
    out = emu("-i", "1", "-mig", "1")
    assert "Warning: MIG mode is in pending enable state for GPU 00000000:0F:00.0:Not Supported" in out
    rows = parse_query_gpu(emu("--query-gpu=index,mig.mode.current,mig.mode.pending", "--format=csv,noheader"),
                           ("index", "mig.mode.current", "mig.mode.pending"))
    assert [(r["mig.mode.current"], r["mig.mode.pending"]) for r in rows] == [("Enabled", "Enabled"),
                                                                              ("Disabled", "Enabled")]
    emu("mig", "-i", "0", "-cgi", "7g.80gb", "-C")
    assert "In use by another client" in emu("-i", "0", "-mig", "0", rc=255)
    emu("mig", "-i", "0", "-dci")
    emu("mig", "-i", "0", "-dgi")
    assert emu("-i", "0", "-mig", "0") == "Disabled MIG Mode for GPU 00000000:07:00.0\nAll done.\n"


def test_gpu_without_mig_is_not_supported(tmp_path):
    emu = Emu(tmp_path, dict(A100, name="NVIDIA L40S", mig_mode=None))
    assert "Not Supported" in emu("-mig", "1", rc=3)
    assert emu("mig", "-lgip", rc=6) == "No MIG-supported devices found.\n"


def _can_mknod(directory):
    probe = os.path.join(directory, "probe")
    try:
        os.mknod(probe, 0o600 | stat.S_IFCHR, os.makedev(508, 1))
    except OSError:
        return False
    os.unlink(probe)
    return True


def test_cap_nodes_follow_mig_minors_by_gpu_minor(tmp_path):
    if not _can_mknod(str(tmp_path)):
        if os.environ.get("CI", "").lower() == "true":
            pytest.fail("cannot mknod in %s" % tmp_path)
        pytest.skip("cannot mknod here (needs root)")
    root = tmp_path / "root"
    fake_sysfs.write_mig_minors(str(root))
    (root / "proc" / "devices").write_text("Character devices:\n195 nvidia-frontend\n237 nvidia-caps\n")
    dev = tmp_path / "devroot"
    emu = Emu(tmp_path, dict(A100, mig_mode="Enabled", minor=2))
    emu.env.update(NVSMI_EMU_DEV_ROOT=str(dev), NVSMI_EMU_ROOT=str(root))
    emu("mig", "-cgi", "3g.40gb:4", "-C")  # GI 2, CI 0 on GPU minor 2
    minors = {line.split()[0]: int(line.split()[1]) for line in fake_sysfs.mig_minors_text().splitlines()}
    for key in ("gpu2/gi2/access", "gpu2/gi2/ci0/access"):
        st = os.stat(str(dev / "dev" / "nvidia-caps" / ("nvidia-cap%d" % minors[key])))
        assert stat.S_ISCHR(st.st_mode) and os.major(st.st_rdev) == 237 and os.minor(st.st_rdev) == minors[key]
    # the standalone helper makes the same nodes for a profile (here into a fresh tree)
    other = tmp_path / "other"
    proc = subprocess.run([MKNOD_CAPS, "--profile", emu.path, "--root", str(root), "--dev-root", str(other)],
                          check=False, capture_output=True, text=True, timeout=60)
    assert proc.returncode == 0, proc.stderr
    assert sorted(os.listdir(str(other / "dev" / "nvidia-caps"))) == sorted(
        "nvidia-cap%d" % minors[k] for k in ("gpu2/gi2/access", "gpu2/gi2/ci0/access"))
