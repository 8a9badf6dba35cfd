"""``nvidia-smi -q`` of a profile without a recording (``smi_q``): made of recorded GPU blocks (nvidia_smi.Q_TEMPLATES)
with the profile's GPUs written in. The templates are the recordings byte for byte, a block made for a recording's
own GPUs is that recording, every ready and generated profile reads as healthy through the project's parsers and
lists the GPUs ``--query-gpu`` lists, and each fault key prints what a recording of that fault shows."""
import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness, smi_q

import machines
import nvidia_smi
import nvsmi_fixtures

Q_DIR = ("readiness", "nvidia-smi-q")
READY = sorted(machines.READY)
SHAPES = [(2, 32, 2, "linear", 4), (2, 32, 2, "interleaved", 2), (2, 16, 1, "linear", 1), (4, 12, 2, "linear", 1),
          (1, 24, 2, "adjacent", 3)]


def emulate(tmp_path, profile, *argv):
    path = tmp_path / "profile.json"
    machines.write(str(path), profile)
    return machines.run_emulator(path, argv)


def recorded(name):
    return nvsmi_fixtures.load(*Q_DIR + (name,))


def template_file(name):
    return os.path.basename(nvidia_smi.Q_TEMPLATES[name][0])


def split_blocks(text):
    """(header, [GPU block, ...]) of a -q text; a block keeps its trailing blank line."""
    starts = [m.start() for m in re.finditer(r"^GPU ", text, re.M)]
    return text[:starts[0]], [text[a:b] for a, b in zip(starts, starts[1:] + [len(text)])]


def with_healthy_fields(name, text):
    """A recording with the template's Q_HEALTHY fields set as the emulator sets them (the V100 host's Host Max)."""
    blocks = split_blocks(text)
    out = [blocks[0]]
    for body in blocks[1]:
        block = nvidia_smi.QBlock(body.splitlines(True))
        for path, value in nvidia_smi.Q_HEALTHY.get(name, {}).items():
            block.set(path, value)
        out.append(block.text())
    return "".join(out)


def recording_profile(name, template):
    """The machine of a recording without its text: GPUs (smi_q_profile's plain reading), serial numbers and
    driver; -q has to be made from the template."""
    profile = machines.smi_q_profile(name)
    del profile["smi_q"]
    profile["q_template"] = template
    body = recorded(name)
    for gpu, serial in zip(profile["gpus"], re.findall(r"^    Serial Number\s*: (\S+)$", body, re.M)):
        gpu["serial"] = serial
    if re.search(r"^        State\s*: Completed$", body, re.M):
        profile["nvswitch"] = True
    return profile


def query_gpus(tmp_path, profile):
    rc, out, _err = emulate(tmp_path, profile, "--query-gpu=index,pci.bus_id,minor_number,name,uuid",
                            "--format=csv,noheader")
    assert rc == 0
    return [tuple(line.split(", ")) for line in out.splitlines()]


def listed(parsed):
    return [(str(n), g["bus_id"], str(g["minor_number"]), g["product_name"], g["uuid"])
            for n, g in enumerate(parsed["gpus"])]


def profiles():
    out = [("ready:" + name, machines.load(name)) for name in READY]
    out += [("shape:%dx%dx%d-%s-%dgpu" % s, machines.shape_profile(*s)) for s in SHAPES]
    info = {"gpus": [{"bus_id": "0000:%02x:00.0" % b, "cpuset": 0xff << (8 * n), "numa": n}
                     for n, b in enumerate((0x3b, 0x5e, 0x86, 0xaf))]}
    out.append(("hwloc", machines.hwloc_profile(info, "made up for this test")))
    out.append(("minimal", {"gpus": [{}, {}, {}]}))
    out.append(("h100-535", dict(machines.shape_profile(2, 8, 1, "linear", 4, name="NVIDIA H100 80GB HBM3"),
                                 driver_version="535.183.01", nvswitch=True)))
    return out


PROFILES = profiles()


# ----------------------------------------------------------------------------------------------------
# the templates are the recordings


@pytest.mark.parametrize("name", sorted(nvidia_smi.Q_TEMPLATES))
def test_template_is_the_start_of_its_recording(name):
    source, gpu, text = nvidia_smi.Q_TEMPLATES[name]
    body = recorded(template_file(name))
    assert body.startswith(text)
    assert body[len(text):].startswith("\nGPU ")  # the whole first block, up to the blank line before the next
    assert split_blocks(text)[1][0].splitlines()[0] == gpu
    assert os.path.exists(os.path.join(os.path.dirname(nvsmi_fixtures.FIXTURES), "..", source))


@pytest.mark.parametrize("name", sorted(nvidia_smi.Q_TEMPLATES))
def test_made_for_the_recordings_own_gpus_it_is_the_recording(tmp_path, name):
    """The header and first block byte for byte; in the others, every line the emulator writes equals the
    recorded line (the rest of a block is the first GPU's: temperatures, clocks, serial-bound part numbers)."""
    rc, out, err = emulate(tmp_path, recording_profile(template_file(name), name), "-q")
    assert (rc, err) == (0, "")
    want = with_healthy_fields(name, recorded(template_file(name)))
    (head, blocks), (want_head, want_blocks) = split_blocks(out), split_blocks(want)
    assert head == want_head
    assert blocks[0] == want_blocks[0]
    assert len(blocks) == len(want_blocks)
    written = [("Product Name",), ("Product Architecture",), ("Persistence Mode",), ("MIG Mode", "Current"),
               ("MIG Mode", "Pending"), ("Serial Number",), ("GPU UUID",), ("Minor Number",), ("Board ID",),
               ("GSP Firmware Version",), ("PCI", "Bus"), ("PCI", "Device"), ("PCI", "Domain"), ("PCI", "Bus Id"),
               ("Fabric", "State"), ("Fabric", "Status"), ("Fabric", "CliqueId"), ("Fabric", "ClusterUUID")]
    for got, expected in zip(blocks, want_blocks):
        got, expected = nvidia_smi.QBlock(got.splitlines(True)), nvidia_smi.QBlock(expected.splitlines(True))
        assert got.lines[0] == expected.lines[0]
        for path in written:
            assert got.get(*path) == expected.get(*path), path
    assert out.endswith("\n") and not out.endswith("\n\n")


def test_the_a100_recording_reads_like_the_emulated_one_except_its_pending_gpu(tmp_path):
    """The A100 recording's GPU 1 has remapped rows pending; with that fault the emulated GPU 1 prints the same
    Remapped Rows section, and the whole output gives the recording's findings."""
    name = "a100-sxm4-80gb-4gpu-555-fabric-na.txt"
    profile = recording_profile(name, "ampere-555")
    profile["gpus"][1]["q"] = {"remapped_pending": True}
    rc, out, _err = emulate(tmp_path, profile, "-q")
    got = nvidia_smi.QBlock(split_blocks(out)[1][1].splitlines(True))
    want = nvidia_smi.QBlock(split_blocks(recorded(name))[1][1].splitlines(True))
    section = [p for p in want.paths if p[0] == "Remapped Rows"]
    assert rc == 0 and len(section) == 11  # the title, 4 counters, the histogram and its 5 rows
    assert [got.lines[got.paths[p]] for p in section] == [want.lines[want.paths[p]] for p in section]

    def findings(text):
        return [(f["check"], f["gpu"], f["found"]) for f in readiness.readiness_findings(
            smi_q=smi_q.parse_smi_q(text))["findings"]]
    assert findings(out) == findings(recorded(name)) == [
        ("memory", 1, "remapped rows pending (correctable 1, uncorrectable 0)")]


# ----------------------------------------------------------------------------------------------------
# every profile: parses, lists what --query-gpu lists, healthy


@pytest.mark.parametrize("label, profile", PROFILES, ids=[p[0] for p in PROFILES])
def test_every_profile_answers_q_like_query_gpu_and_is_healthy(tmp_path, label, profile):
    rc, out, err = emulate(tmp_path, profile, "-q")
    assert (rc, err) == (0, "")
    parsed = smi_q.parse_smi_q(out)
    assert listed(parsed) == query_gpus(tmp_path, profile)
    assert parsed["attached_gpus"] == len(parsed["gpus"]) == len(profile["gpus"])
    assert parsed["driver_version"] == profile.get("driver_version", nvidia_smi.DEFAULT_DRIVER)
    assert [g["mig_mode"] for g in parsed["gpus"]] == [
        g.get("mig_mode") for g in sorted(profile["gpus"], key=lambda g: g.get("pci_bus_id", ""))]
    assert {g["persistence_mode"] for g in parsed["gpus"]} == {"Enabled"}
    result = readiness.readiness_findings(smi_q=parsed)
    assert result["findings"] == []
    assert {"persistence", "errors"} <= set(result["applied"])
    if profile.get("nvswitch"):
        assert {(g["fabric"]["state"], g["fabric"]["status"]) for g in parsed["gpus"]} == {("Completed", "Success")}
        assert "fabric" in result["applied"]
    else:
        assert {g["fabric"] for g in parsed["gpus"]} == {None}


@pytest.mark.parametrize("profile, template", [
    ("a100-8gpu-p4d", "ampere-555"), ("a100-40gb-mig-ssup2", "ampere-555"), ("h100-4gpu-nv6-8numa", "hopper-550"),
    ("h200-8gpu-busy", "hopper-550"), ("v100-2gpu-s116", "volta-550")])
def test_template_follows_architecture_then_driver(tmp_path, profile, template):
    profile = machines.load(profile)
    rc, out, _err = emulate(tmp_path, profile, "-q")
    block = nvidia_smi.QBlock(split_blocks(out)[1][0].splitlines(True))
    _head, recorded_block, _facts = nvidia_smi.q_template(template)
    assert rc == 0
    assert block.get("VBIOS Version") == recorded_block.get("VBIOS Version")
    titles = [line for line in block.lines if ":" not in line and line.strip()]
    assert titles == [line for line in recorded_block.lines if ":" not in line]


def test_unknown_product_and_a_535_driver_take_the_535_recording(tmp_path):
    rc, out, _err = emulate(tmp_path, {"driver_version": "535.104.05", "gpus": [{}]}, "-q")
    head, blocks = split_blocks(out)
    assert rc == 0 and "CUDA Version                              : 12.2\n" in head
    assert "    GSP Firmware Version                  : 535.104.05\n" in blocks[0]
    assert "    Product Architecture                  : Hopper\n" in blocks[0]  # the recording's, name says none


def test_memory_is_the_profiles(tmp_path):
    parsed = emulate(tmp_path, machines.load("h200-8gpu-busy"), "-q")[1]
    block = nvidia_smi.QBlock(split_blocks(parsed)[1][0].splitlines(True))
    assert [block.get("FB Memory Usage", k) for k in ("Total", "Used")] == ["143771 MiB", "130013 MiB"]


def test_mig_mode_pending_as_the_profile_says(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["gpus"][2].update(mig_mode="Disabled", mig_mode_pending="Enabled")
    parsed = smi_q.parse_smi_q(emulate(tmp_path, profile, "-q")[1])
    assert smi_q.find(parsed["gpus"][2]["sections"], "MIG Mode") == {"Current": "Disabled", "Pending": "Enabled"}


def test_the_emulator_alone_answers_q(tmp_path):
    """Molecule installs nvidia_smi.py alone (no fixtures, no emu_mig.py beside it)."""
    lone = tmp_path / "lib" / "nvidia-smi"
    lone.parent.mkdir()
    shutil.copy(machines.EMULATOR, str(lone))
    path = tmp_path / "profile.json"
    machines.write(str(path), machines.self_contained(machines.load("v100-2gpu-s116")))
    proc = subprocess.run([sys.executable, str(lone), "-q"], env=dict(os.environ, NVSMI_EMU_PROFILE=str(path)),
                          capture_output=True, text=True, check=False)
    assert (proc.returncode, proc.stderr) == (0, "")
    assert proc.stdout == emulate(tmp_path, machines.load("v100-2gpu-s116"), "-q")[1]


# ----------------------------------------------------------------------------------------------------
# lost GPUs and -i: the rules of the recorded path


def test_missing_gpu_leaves_q_and_indexes_close_up(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["gpus"][3]["lost"] = True
    rc, out, _err = emulate(tmp_path, profile, "-q")
    parsed = smi_q.parse_smi_q(out)
    assert rc == 0 and parsed["attached_gpus"] == 7
    assert listed(parsed) == query_gpus(tmp_path, profile)
    assert profile["gpus"][3]["pci_bus_id"] not in [g["bus_id"] for g in parsed["gpus"]]


def test_unreachable_gpu(tmp_path):
    profile = machines.load("h200-8gpu-busy")
    profile["gpus"][2]["lost"] = "unreachable"
    rc, out, err = emulate(tmp_path, profile, "-q")
    assert rc == 15
    assert err == "Unable to determine the device handle for GPU2: 0000:3A:00.0: Unknown Error\n"
    parsed = smi_q.parse_smi_q(out)
    assert parsed["attached_gpus"] == 8 and len(parsed["gpus"]) == 7
    failure = readiness.classify_smi_failure(rc, out, err)
    assert failure["kind"] == "device_handle"


@pytest.mark.parametrize("selector", ["5", "00000000:AB:00.0", "0000:ab:00.0",
                                      "GPU-8e137fa6-c3d9-6980-7733-0d8df296756e"])
def test_q_with_i(tmp_path, selector):
    rc, out, err = emulate(tmp_path, machines.load("h200-8gpu-busy"), "-q", "-i", selector)
    parsed = smi_q.parse_smi_q(out)
    assert (rc, err) == (0, "")
    assert (parsed["driver_version"], parsed["attached_gpus"]) == ("550.163.01", 8)
    assert [(g["bus_id"], g["uuid"]) for g in parsed["gpus"]] == [
        ("00000000:AB:00.0", "GPU-8e137fa6-c3d9-6980-7733-0d8df296756e")]


def test_q_with_an_unknown_gpu_and_no_gpus(tmp_path):
    assert emulate(tmp_path, machines.load("v100-2gpu-s116"), "-q", "-i", "2")[:2] == (
        2, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
    assert emulate(tmp_path, {"gpus": []}, "-q")[:2] == (6, "No devices were found\n")


# ----------------------------------------------------------------------------------------------------
# fault keys


def fault_findings(tmp_path, profile):
    rc, out, err = emulate(tmp_path, profile, "-q")
    assert (rc, err) == (0, "")
    parsed = smi_q.parse_smi_q(out)
    return out, [(f["severity"], f["check"], f["gpu"], f["found"])
                 for f in readiness.readiness_findings(smi_q=parsed)["findings"]]


def test_persistence_disabled(tmp_path):
    profile = machines.load("a100-8gpu-p4d")
    profile["gpus"][5]["q"] = {"persistence": "Disabled"}
    out, findings = fault_findings(tmp_path, profile)
    assert findings == [("warning", "persistence", 5, "persistence mode Disabled")]
    line = "    Persistence Mode                      : Disabled\n"
    assert out.count(line) == 1 and line in recorded("titanv-1gpu-560-persistence-disabled.txt")


def test_persistence_disabled_on_every_gpu(tmp_path):
    profile = dict(machines.load("v100-2gpu-s116"), q={"persistence": "Disabled"})
    assert [f[1:3] for f in fault_findings(tmp_path, profile)[1]] == [("persistence", 0), ("persistence", 1)]


@pytest.mark.parametrize("name", ["a100-8gpu-p4d", "h100-4gpu-nv6-8numa"])
def test_remapped_rows_pending(tmp_path, name):
    profile = machines.load(name)
    profile["gpus"][1]["q"] = {"remapped_pending": True}
    _out, findings = fault_findings(tmp_path, profile)
    assert findings == [("error", "memory", 1, "remapped rows pending (correctable 1, uncorrectable 0)")]


def test_retired_pages_pending_on_volta(tmp_path):
    profile = machines.load("v100-2gpu-s116")
    profile["gpus"][1]["q"] = {"retired_pending": True}
    _out, findings = fault_findings(tmp_path, profile)
    assert findings == [("error", "memory", 1, "retired pages pending (single bit 2, double bit 0)")]
    excerpt = smi_q.parse_smi_q(recorded("retired-pages-pending-page-blacklist-yes-excerpt.txt"))
    assert excerpt["gpus"][0]["retired_pages"] == {"sbe": 2, "dbe": 0, "pending": True}


def test_fabric_in_progress_is_the_recorded_block(tmp_path):
    profile = dict(machines.shape_profile(2, 8, 1, "linear", 4, name="NVIDIA H100 80GB HBM3"),
                   driver_version="535.183.01", nvswitch=True)
    profile["gpus"][0]["q"] = {"fabric": {"state": "In Progress", "status": "N/A"}}
    out, findings = fault_findings(tmp_path, profile)
    assert findings == [("error", "fabric", 0, "fabric State In Progress, Status N/A")]
    grep = nvsmi_fixtures.load("readiness", "fabricmanager", "h100-p5-570-fabric-in-progress-grep.txt")
    section = "".join(grep.splitlines(True)[1:4])
    assert section.startswith("    Fabric\n") and split_blocks(out)[1][0].count(section) == 1


def test_fabric_of_550_gpus_on_nvswitches(tmp_path):
    profile = dict(machines.load("h200-8gpu-busy"), nvswitch=True)
    out, findings = fault_findings(tmp_path, profile)
    parsed = smi_q.parse_smi_q(out)
    assert findings == []
    assert {(g["fabric"]["clique_id"], g["fabric"]["cluster_uuid"]) for g in parsed["gpus"]} == {
        ("0", "00000000-0000-0000-0000-000000000000")}
    assert not readiness.is_mnnvl(parsed)


def test_nvswitch_leaves_pre_hopper_fabric_na(tmp_path):
    profile = dict(machines.load("a100-8gpu-p4d"), nvswitch=True)
    out, findings = fault_findings(tmp_path, profile)
    assert findings == [] and {g["fabric"] for g in smi_q.parse_smi_q(out)["gpus"]} == {None}


def test_q_sections_and_the_fabric_manager_unit_apply_to_made_blocks(tmp_path):
    import health_node
    profile = health_node.fabric_follows_unit(dict(machines.load("h200-8gpu-busy"), nvswitch=True),
                                              unit="hpc-gres-no-such-unit")
    path = health_node.write_profile(str(tmp_path / "profile.json"), profile)
    rc, out, _err = machines.run_emulator(path, ["-q"])
    parsed = smi_q.parse_smi_q(out)
    assert rc == 0 and {(g["fabric"]["state"], g["fabric"]["status"]) for g in parsed["gpus"]} == {
        ("In Progress", None)}  # the parser reads N/A as None


@pytest.mark.parametrize("name, q, message", [
    ("v100-2gpu-s116", {"remapped_pending": True}, "no Remapped Rows counters"),
    ("a100-8gpu-p4d", {"retired_pending": True}, "no page retirement"),
])
def test_a_fault_the_block_cannot_show_fails_the_call(tmp_path, name, q, message):
    profile = machines.load(name)
    profile["gpus"][0]["q"] = q
    rc, out, err = emulate(tmp_path, profile, "-q")
    assert (rc, out) == (255, "") and message in err and "tests/fixtures/readiness/nvidia-smi-q/" in err


def test_unknown_template(tmp_path):
    rc, _out, err = emulate(tmp_path, dict(machines.load("v100-2gpu-s116"), q_template="pascal"), "-q")
    assert rc == 255 and "q_template: no template 'pascal'" in err
