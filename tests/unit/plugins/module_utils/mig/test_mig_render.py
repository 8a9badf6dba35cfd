"""Explicit-mode MIG gres.conf lines (plugins/module_utils/mig/render.py) against real MIG configurations.

The mig-minors tables come from the emulator's full table (tests/emulator/fake_sysfs.py), which is first
checked against every data point of the two real mig-minors excerpts, and are parsed by the project's
``nvidia_smi.parse_mig_minors``.
"""

import os
import re

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import render as mig_render
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import parse_mig_minors
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    gres_counts_from_records,
    parse_gres_conf,
)

import fake_sysfs  # noqa: E402  (tests/emulator is not a package)


def fixture(*parts):
    path = os.path.join(testpaths.FIXTURES, *parts)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert text.startswith("# source:"), "%s lost its # source: header" % path
    return text.split("# ---\n", 1)[1]


@pytest.fixture(scope="module")
def full_minors():
    return parse_mig_minors(fake_sysfs.mig_minors_text())


@pytest.mark.parametrize("name", ["mig-user-guide-mig-minors-excerpt.txt",
                                  "dra-driver-go-comment-mig-minors-excerpt.txt"])
def test_full_table_agrees_with_real_mig_minors_excerpts(name, full_minors):
    real = parse_mig_minors(fixture("nvidia-smi", "caps", name))
    assert len(real) >= 6
    for key, minor in real.items():
        assert full_minors[key] == minor, key


# --- the real GH200 node (CU Anschutz): 3x 1g.24gb (GI 3, 4, 5) + 1x 1g.12gb (GI 13) on GPU minor 0 -----

GH200_DEVICES = [  # as nvidia-smi -L / -lgi would report them: default CI 0 in each GI
    {"profile": "MIG 1g.24gb", "gi_id": 5, "ci_id": 0, "uuid": "MIG-aaaaaaaa-0000-5000-8000-000000000005"},
    {"profile": "MIG 1g.24gb", "gi_id": 3, "ci_id": 0},
    {"profile": "MIG 1g.24gb", "gi_id": 4, "ci_id": 0},
    {"profile": "MIG 1g.12gb", "gi_id": 13, "ci_id": 0},
]


def real_gh200_gi_caps():
    """{gi_id: cap minor} as the admin's gres.conf on that node wrote them (File= the GI access cap)."""
    text = fixture("slurm", "gh200-mig-gres-conf-nvidia-caps.txt")
    gis = re.findall(r"capabilities/gpu0/mig/gi(\d+)/access\nName=gpu Type=\S+ File=/dev/nvidia-caps/nvidia-cap(\d+)",
                     text)
    assert len(gis) == 4
    return {int(gi): int(cap) for gi, cap in gis}


def test_gh200_lines_use_the_real_gi_caps(full_minors):
    lines = mig_render.render_mig_gres_lines("a10-cuanschutz01", 0, GH200_DEVICES, full_minors)
    assert len(lines) == 4
    real = real_gh200_gi_caps()
    seen = {}
    for line in lines:
        m = re.match(r"^NodeName=a10-cuanschutz01 Name=gpu Type=(\S+) MultipleFiles=(\S+)$", line)
        assert m, line
        files = m.group(2).split(",")
        assert files[0] == "/dev/nvidia0"
        gi_cap = int(files[1].rsplit("nvidia-cap", 1)[1])
        ci_cap = int(files[2].rsplit("nvidia-cap", 1)[1])
        gi = [g for g, cap in real.items() if cap == gi_cap]
        assert gi, "GI cap %d is not one the real node used (%s)" % (gi_cap, real)
        seen[gi[0]] = m.group(1)
        # the CI access cap follows its GI's entry in the table (gpu0/giN/ci0/access)
        assert ci_cap == full_minors[("ci", 0, gi[0], 0)] == gi_cap + 1
    assert seen == {3: "1g.24gb", 4: "1g.24gb", 5: "1g.24gb", 13: "1g.12gb"}


def test_lines_are_ordered_by_gi_then_ci_whatever_the_input_order(full_minors):
    a = mig_render.render_mig_gres_lines("n1", 0, GH200_DEVICES, full_minors)
    b = mig_render.render_mig_gres_lines("n1", 0, list(reversed(GH200_DEVICES)), full_minors)
    assert a == b
    assert [int(re.search(r"nvidia-cap(\d+),", line).group(1)) for line in a] == [30, 39, 48, 120]


def test_rendered_lines_parse_back_as_one_device_each(full_minors):
    text = "\n".join(mig_render.render_mig_gres_lines("a10-cuanschutz01", 0, GH200_DEVICES, full_minors)) + "\n"
    records = parse_gres_conf(text, "a10-cuanschutz01")
    assert len(records) == 4
    assert all(len(r["multiple_files"]) == 3 for r in records)
    assert gres_counts_from_records(records) == {"gpu:1g.12gb": 1, "gpu:1g.24gb": 3}
    assert parse_gres_conf(text, "other-node") == []


# --- deepops#1214: what Slurm's own NVML AutoDetect produced on an A100 MIG node -----------------------

def test_same_file_list_as_slurm_autodetect_deepops():
    """Each slurmd line gives GPU file, GI cap, CI cap and (UniqueId) the GI/CI ids it read them for.

    The map below is exactly what that node's mig-minors held for those keys (Slurm looks them up by the
    GPU minor of /dev/nvidia1); our lines must name the same three files in the same order.
    """
    text = fixture("slurm", "deepops1214-slurmd-gres-mig-nvml-lines.txt")
    rows = re.findall(r"File:(/dev/nvidia(\d+),/dev/nvidia-caps/nvidia-cap(\d+),/dev/nvidia-caps/nvidia-cap(\d+)) "
                      r"UniqueId:MIG-GPU-[0-9a-f-]+/(\d+)/(\d+)", text)
    assert len(rows) == 4
    minors = {}
    devices = []
    for _files, gpu, gi_cap, ci_cap, gi, ci in rows:
        minors[("gi", int(gpu), int(gi), None)] = int(gi_cap)
        minors[("ci", int(gpu), int(gi), int(ci))] = int(ci_cap)
        devices.append({"profile": "1g.5gb", "gi_id": int(gi), "ci_id": int(ci)})
    lines = mig_render.render_mig_gres_lines("node1", int(rows[0][1]), devices, minors)
    rendered = sorted(line.split("MultipleFiles=")[1] for line in lines)
    assert rendered == sorted(r[0] for r in rows)


# --- errors and options -----------------------------------------------------------------------------------

def test_missing_mig_minors_entry_names_the_key(full_minors):
    with pytest.raises(GresError) as err:
        mig_render.render_mig_gres_lines("n1", 40, [{"profile": "1g.10gb", "gi_id": 1, "ci_id": 0}],
                                         full_minors, host="gpu-a01.example")
    text = str(err.value)
    assert "host gpu-a01.example: /proc/driver/nvidia-caps/mig-minors" in text
    assert "gpu40/gi1/access" in text and "gpu40/gi1/ci0/access" in text


def test_bad_device_records_are_refused(full_minors):
    with pytest.raises(GresError) as err:
        mig_render.render_mig_gres_lines("n1", 0, [{"profile": "1g.10gb", "gi_id": None, "ci_id": 0}], full_minors)
    assert "gi_id" in str(err.value)
    with pytest.raises(GresError):
        mig_render.render_mig_gres_lines("n1", "x", [], full_minors)


def test_cores_and_the_type_naming_rule(full_minors):
    lines = mig_render.render_mig_gres_lines("n1", 1, [{"profile": "MIG 1g.10gb+me", "gi_id": 9, "ci_id": 0}],
                                             full_minors, cores="0-31", gpu_type="a100")
    cap = full_minors[("gi", 1, 9, None)]
    assert mig_gres_type("a100", "1g.10gb+me") == "1g.10gb+me"
    assert lines == ["NodeName=n1 Name=gpu Type=1g.10gb+me MultipleFiles=/dev/nvidia1,"
                     "/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d Cores=0-31" % (cap, cap + 1)]
    assert cap == 3 + 135 * 1 + 9 * 9


def test_block_for_several_gpus_uses_minor_not_index(full_minors):
    gpus = [
        {"index": 1, "minor": 3, "cores": "32-63", "mig_devices": [{"profile": "3g.40gb", "gi_id": 2, "ci_id": 0}]},
        {"index": 0, "minor": 2, "mig_devices": GH200_DEVICES[:1]},
    ]
    text = mig_render.render_mig_gres_block("n1", gpus, full_minors)
    lines = text.splitlines()
    assert lines[0] == "# GPU 0 (minor 2) MIG 1g.24gb GI 5 CI 0 MIG-aaaaaaaa-0000-5000-8000-000000000005"
    assert lines[1].startswith("NodeName=n1 Name=gpu Type=1g.24gb MultipleFiles=/dev/nvidia2,")
    assert lines[2] == "# GPU 1 (minor 3) MIG 3g.40gb GI 2 CI 0"
    assert lines[3].endswith(" Cores=32-63") and "/dev/nvidia3," in lines[3]
    assert text.endswith("\n")
    assert mig_render.render_mig_gres_block("n1", [], full_minors) == ""


# --- live devices against the declared layout ---------------------------------------------------------

def test_live_devices_match_declared_layout_in_any_order():
    declared = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
    live = [{"profile": "MIG 1g.10gb"}, {"profile": "MIG 3g.40gb"}, "1g.10gb", {"profile": "2g.20gb"}]
    assert mig_render.check_live_against_layout(declared, live) == []


def test_live_devices_differing_are_named_by_profile_counts():
    problems = mig_render.check_live_against_layout(
        ["3g.40gb", "2g.20gb", "2g.20gb"], ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"],
        host="gpu-a01", field="hpc_gres_gpus[0].mig", gpu=0)
    assert len(problems) == 1
    p = problems[0]
    assert p.host == "gpu-a01" and p.field == "hpc_gres_gpus[0].mig"
    assert p.expected == "GPU 0 live MIG devices 2 x 2g.20gb, 1 x 3g.40gb"
    assert p.found == "2 x 1g.10gb, 1 x 2g.20gb, 1 x 3g.40gb"
    assert "missing 1 x 2g.20gb" in p.hint and "not declared 2 x 1g.10gb" in p.hint


def test_no_live_devices_and_compute_instance_splits():
    p = mig_render.check_live_against_layout(["7g.80gb"], [])[0]
    assert p.found == "no MIG devices"
    p = mig_render.check_live_against_layout(["3g.40gb"], ["1c.3g.40gb", "2c.3g.40gb"])[0]
    assert "compute-instance splits are not supported" in p.hint


def test_real_h100_container_listing_checks_against_its_layout():
    text = fixture("nvidia-smi", "list", "h100-80gb-hbm3-mig-mixed-4slices-container.txt")
    live = re.findall(r"^\s+MIG\s+(\S+)\s+Device", text, re.M)
    assert mig_render.check_live_against_layout(["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], live) == []
    assert mig_render.check_live_against_layout(["1g.10gb", "1g.10gb", "2g.20gb", "2g.20gb"], live) != []


def test_real_compute_instance_split_does_not_pass_as_the_declared_layout():
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import parse_mig_lci

    cis = parse_mig_lci(fixture("nvidia-smi", "mig", "a100sxm4-40gb-lci-4cis-placement-driver580-ssup2.txt"))
    problems = mig_render.check_live_against_layout(["4g.20gb", "2g.10gb", "1g.5gb"], cis, host="gpu-a40")
    assert len(problems) == 1
    assert problems[0].found == "2 x 1c.2g.10gb, 1 x 1g.5gb, 1 x 4g.20gb"
    assert "missing 1 x 2g.10gb" in problems[0].hint
    assert "compute-instance splits are not supported" in problems[0].hint
