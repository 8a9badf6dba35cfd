"""MIG model table, placement search and layout validation (plugins/module_utils/mig/profiles.py).

The table is checked against real ``nvidia-smi mig -lgip``/``-lgipp``/``-lgi``/``-L`` outputs in
tests/fixtures; the search against the examples of issue 5 and against a brute-force oracle.
"""

import itertools
import os
import re

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import profiles as mig
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem

FIXTURES = testpaths.FIXTURES


def fixture(*parts):
    path = os.path.join(FIXTURES, *parts)
    with open(path, encoding="utf-8") as fh:
        text = fh.read()
    assert text.startswith("# source:"), "%s lost its # source: header" % path
    return text.split("# ---\n", 1)[1]


# --- small, independent readers of the real outputs (the project's parsers live in nvidia_smi.py) ----------

LGIPP_RE = re.compile(r"^\s*GPU\s+(\d+)\s+Profile ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,]+)\}:(\d+)", re.M)
LGIP_RE = re.compile(r"^\|\s+\d+\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s", re.M)
LGI_RE = re.compile(r"^\|\s+\d+\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s+\|", re.M)
LIST_GPU_RE = re.compile(r"^GPU \d+: (.+?) \(UUID: ", re.M)
LIST_MIG_RE = re.compile(r"^\s+MIG\s+(\S+)\s+Device\s+\d+:", re.M)


def lgipp(text):
    return {int(pid): (tuple(int(s) for s in starts.split(",")), int(size))
            for _gpu, pid, starts, size in LGIPP_RE.findall(text)}


def by_id(model):
    return {p["id"]: p for p in mig.MIG_MODELS[model]["profiles"]}


# --- the table against real outputs ------------------------------------------------------------------------

@pytest.mark.parametrize("fixture_name, model", [
    ("a100-lgipp-mig-user-guide.txt", "A100-40GB"),
    ("h100nvl-lgipp-colfax.txt", "H100-94GB"),
    ("a30-lgipp.txt", "A30-24GB"),
    ("h200-141gb-lgipp-mig-disabled-580.txt", "H200-141GB"),  # recorded by this project, 2026-12-04
    ("rtxpro6000se-610-lgipp-kubesimplify.txt", "RTX-PRO-6000-96GB"),  # 12-unit grid, "Placement :" for 0 and 32
])
def test_placements_match_real_lgipp(fixture_name, model):
    real = lgipp(fixture("nvidia-smi", "mig", fixture_name))
    table = by_id(model)
    assert set(real) == set(table), "profile ids differ from the real -lgipp"
    for pid, (starts, size) in real.items():
        assert table[pid]["placements"] == starts, table[pid]["name"]
        assert table[pid]["memory_slices"] == size, table[pid]["name"]


def test_eight_slice_models_share_the_real_lgipp_table():
    """A100, H100, H200, GH200 and B200 all use the -lgipp table NVIDIA prints for A100 and H100 NVL."""
    real = lgipp(fixture("nvidia-smi", "mig", "a100-lgipp-mig-user-guide.txt"))
    for model, spec in mig.MIG_MODELS.items():
        if spec["memory_slices"] != 8:
            continue
        assert spec["compute_slices"] == 7
        order = [p["id"] for p in mig.MIG_MODELS["A100-40GB"]["profiles"]]
        for ref_id, prof in zip(order, spec["profiles"]):
            starts, size = real[ref_id]
            assert (prof["placements"], prof["memory_slices"]) == (starts, size), (model, prof["name"])


@pytest.mark.parametrize("fixture_name, model", [
    ("a30-lgip-with-me-profiles.txt", "A30-24GB"),
    ("gh200-96gb-lgip-full-profile-list.txt", "GH200-96GB"),
    ("h200-141gb-lgip-mig-disabled-580.txt", "H200-141GB"),  # recorded by this project, 2026-12-04
    ("h100nvl-560-lgip-azure.txt", "H100-94GB"),
    ("rtxpro6000se-610-lgip-kubesimplify.txt", "RTX-PRO-6000-96GB"),  # +me, +gfx, +me.all and -me rows
])
def test_profiles_match_real_lgip(fixture_name, model):
    rows = LGIP_RE.findall(fixture("nvidia-smi", "mig", fixture_name))
    assert rows
    real = {name: (int(pid), int(total)) for name, pid, _free, total in rows}
    table = {p["name"]: (p["id"], p["max_instances"]) for p in mig.MIG_MODELS[model]["profiles"]}
    assert real == table


# Rows of real -lgip outputs posted in public threads, cut before the 3g row where they were read (facts only: name,
# profile id, instances); the eight-slice ids are A100's
@pytest.mark.parametrize("model, source, rows", [
    ("GB200-186GB", "https://github.com/NVIDIA/mig-parted/issues/227 (a production GB200 NVL node)",
     {"1g.23gb": (19, 7), "1g.23gb+me": (20, 1), "1g.47gb": (15, 4), "2g.47gb": (14, 3)}),
    ("B200-180GB", "https://github.com/NVIDIA/mig-parted/pull/166 and /pull/187",
     {"1g.23gb": (19, 7), "1g.23gb+me": (20, 1), "1g.45gb": (15, 4), "2g.45gb": (14, 3)}),
])
def test_blackwell_names_and_counts_match_real_lgip_rows(model, source, rows):
    table = {p["name"]: p for p in mig.MIG_MODELS[model]["profiles"]}
    a100_ids = [p["id"] for p in mig.MIG_MODELS["A100-80GB"]["profiles"]]
    for name, (pid, total) in rows.items():
        assert table[name]["max_instances"] == total, (source, name)
        assert a100_ids[list(table).index(name)] == pid, (source, name)
    assert mig.normalize_model("NVIDIA %s" % mig.MIG_MODELS[model]["nvidia_smi_names"][0]) == model


def test_rtx_pro_6000_engines_match_the_real_lgip():
    """Each profile's media engines (DEC, ENC, JPEG, OFA), and the whole GPU's (its 4g.96gb row), as -lgip prints
    them; read with the project's parser, checked on its own in test_nvidia_smi_mig.py."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import parse_mig_lgip
    rows = parse_mig_lgip(fixture("nvidia-smi", "mig", "rtxpro6000se-610-lgip-kubesimplify.txt"))
    real = {r["profile"]: (r["dec"], r["enc"], r["jpeg"], r["ofa"]) for r in rows}
    spec = mig.MIG_MODELS["RTX-PRO-6000-96GB"]
    assert real == {p["name"]: p["engines"] for p in spec["profiles"]}
    assert spec["engines"] == real["4g.96gb"]


@pytest.mark.parametrize("fixture_name, layout", [
    ("rtxpro6000se-610-lgi-4x1g-kubesimplify.txt", ["1g.24gb"] * 4),
    ("rtxpro6000se-610-cgi-2g1g1g-then-lgi-kubesimplify.txt", ["2g.48gb", "1g.24gb", "1g.24gb"]),
])
def test_real_rtx_pro_6000_lgi_placements_are_allowed_by_the_table(fixture_name, layout):
    rows = LGI_RE.findall(fixture("nvidia-smi", "mig", fixture_name))
    assert sorted(r[0] for r in rows) == sorted(layout)
    for name, pid, _gi, start, size in rows:
        prof = mig.profile_spec("RTX-PRO-6000-96GB", name)
        assert prof["id"] == int(pid)
        assert int(start) in prof["placements"] and prof["memory_slices"] == int(size)
    assert mig.validate_layout("h", 0, "NVIDIA RTX PRO 6000 Blackwell Server Edition", layout) == []
    assert sorted(mig.find_placement("RTX-PRO-6000-96GB", layout)) == sorted((r[0], int(r[3])) for r in rows)


@pytest.mark.parametrize("layout", [
    ["1g.24gb+me.all"] + ["1g.24gb-me"] * 3,
    ["2g.48gb+me.all", "2g.48gb-me"],
    ["2g.48gb+me.all", "1g.24gb-me", "1g.24gb-me"],
    ["1g.24gb+me"] + ["1g.24gb"] * 3,
    ["1g.24gb+gfx"] * 4,
    ["2g.48gb+gfx", "1g.24gb", "1g.24gb-me"],
    ["4g.96gb+gfx"],
])
def test_rtx_pro_6000_layouts_within_its_media_engines(layout):
    assert mig.validate_layout("h", 0, "RTX-PRO-6000-96GB", layout) == []
    assert mig.find_placement("RTX-PRO-6000-96GB", layout) is not None


def test_an_instance_beside_a_me_all_one_needs_a_me_less_profile():
    [p] = mig.validate_layout("gpu07", 1, "RTX-PRO-6000-96GB", ["1g.24gb+me.all", "1g.24gb-me", "2g.48gb"])
    assert (p.host, p.field) == ("gpu07", "hpc_gres_gpus[1].mig")
    assert p.expected == ("a layout within the RTX-PRO-6000-96GB's media engines (4 NVDEC, 4 NVENC, 4 NVJPG, "
                          "1 OFA)")
    assert "needs 6 of 4 NVDEC, 6 of 4 NVENC, 6 of 4 NVJPG" in p.found
    assert p.hint.startswith("a +me.all instance takes every media engine: give the other instances -me profiles")
    assert "2g.48gb 2 NVDEC, 2 NVENC, 2 NVJPG, 0 OFA" in p.hint
    # two instances that want the OFA: the rule every model has
    [p] = mig.validate_layout("gpu07", 1, "RTX-PRO-6000-96GB", ["1g.24gb+me", "1g.24gb+me.all"])
    assert "at most one +me instance" in p.expected
    # a profile of another model, and the count rule, as for every model
    [p] = mig.validate_layout("gpu07", 1, "RTX-PRO-6000-96GB", ["1g.23gb"])
    assert "1g.24gb+me.all" in p.expected and "B200-180GB" in p.hint
    [p] = mig.validate_layout("gpu07", 1, "RTX-PRO-6000-96GB", ["2g.48gb-me"] * 3)
    assert p.expected == "at most 2 x 2g.48gb-me per RTX-PRO-6000-96GB"


def test_real_a30_lgi_placements_are_allowed_by_the_table():
    rows = LGI_RE.findall(fixture("nvidia-smi", "mig", "a30-lgi-mixed-3instances.txt"))
    assert len(rows) == 3
    for name, pid, _gi, start, size in rows:
        prof = mig.profile_spec("A30-24GB", name)
        assert prof["id"] == int(pid)
        assert int(start) in prof["placements"] and prof["memory_slices"] == int(size)
    # and the search finds a placement for that layout
    assert mig.find_placement("A30-24GB", [r[0] for r in rows]) is not None


def test_every_profile_fits_its_model():
    for model, spec in mig.MIG_MODELS.items():
        names = [p["name"] for p in spec["profiles"]]
        assert len(names) == len(set(names)), model
        for p in spec["profiles"]:
            assert p["placements"], (model, p["name"])
            assert all(0 <= s and s + p["memory_slices"] <= spec["memory_slices"] for s in p["placements"])
            assert 1 <= p["max_instances"] <= len(p["placements"])
            assert re.match(r"^%dg\.\d+gb" % p["compute_slices"], p["name"]), p["name"]


# --- model names ------------------------------------------------------------------------------------------

@pytest.mark.parametrize("path, expected", [
    (("nvidia-smi", "list", "a30-mig-2g12gb-2x1g6gb-L.txt"), "A30-24GB"),
    (("nvidia-smi", "list", "gh200-mig-7x1g12gb-L.txt"), "GH200-96GB"),
    (("nvidia-smi", "list", "h100-80gb-hbm3-mig-mixed-4slices-container.txt"), "H100-80GB"),
    (("nvidia-smi", "list", "h100-8gpu-vm-list-gpus-rhelai.txt"), "H100-80GB"),
    (("nvidia-smi", "list", "h200-1gpu-L-580.txt"), "H200-141GB"),
    (("nvidia-smi", "list", "rtxpro6000se-8gpu-610-L-4x1g-kubesimplify.txt"), "RTX-PRO-6000-96GB"),
    (("nvidia-smi", "list", "h20-8gpu-570-L-mig-3g1g1g1g-blog.txt"), "H100-96GB"),
])
def test_normalize_model_from_real_nvidia_smi_L(path, expected):
    names = LIST_GPU_RE.findall(fixture(*path))
    assert names
    for name in names:
        assert mig.normalize_model(name) == expected, name


@pytest.mark.parametrize("path, expected", [
    (("nvidia-smi", "query", "a100sxm80-4gpu-name-mem-computecap-driver.txt"), "A100-80GB"),
    (("nvidia-smi", "query", "a800-8gpu-memfree-driver-computecap.txt"), "A800-80GB"),
])
def test_normalize_model_from_real_query_csv(path, expected):
    lines = [line for line in fixture(*path).splitlines() if line[:1].isdigit()]
    assert lines
    for line in lines:
        name, mem = [f.strip() for f in line.split(",")][1:3]
        assert mig.normalize_model(name, memory_mib=mem.split()[0]) == expected


@pytest.mark.parametrize("name, expected", [
    ("A100-80GB", "A100-80GB"), ("a100_80gb", "A100-80GB"), ("a100 80GB", "A100-80GB"),
    ("NVIDIA A100 80GB PCIe", "A100-80GB"), ("A100-SXM4-40GB", "A100-40GB"), ("NVIDIA A100-PCIE-40GB", "A100-40GB"),
    ("NVIDIA H100 NVL", "H100-94GB"), ("NVIDIA H100 PCIe", "H100-80GB"), ("NVIDIA H200", "H200-141GB"),
    ("NVIDIA H200 NVL", "H200-141GB"), ("NVIDIA GH200 144G HBM3e", "GH200-144GB"), ("NVIDIA A30", "A30-24GB"),
    ("a30-24gb", "A30-24GB"), ("NVIDIA B200", "B200-180GB"), ("NVIDIA GB200", "GB200-186GB"),
    ("NVIDIA GeForce RTX 4090", None), ("NVIDIA L40S", None), ("", None), (None, None),
])
def test_normalize_model(name, expected):
    assert mig.normalize_model(name) == expected


def test_normalize_model_uses_memory_for_names_without_a_size():
    assert mig.normalize_model("NVIDIA H100") is None
    assert mig.normalize_model("NVIDIA H100", memory_mib=81559) == "H100-80GB"
    assert mig.normalize_model("NVIDIA H100", memory_mib="95830") == "H100-94GB"
    assert mig.normalize_model("NVIDIA H100", memory_mib="[N/A]") is None


def test_real_mig_layouts_validate_on_the_model_of_their_gpu():
    """Every layout seen in a real -L output is valid for the model its GPU name maps to."""
    for name in ("a30-mig-2g12gb-2x1g6gb-L.txt", "gh200-mig-7x1g12gb-L.txt",
                 "h100-80gb-hbm3-mig-mixed-4slices-container.txt", "rtxpro6000se-8gpu-610-L-4x1g-kubesimplify.txt",
                 "h20-8gpu-570-L-mig-3g1g1g1g-blog.txt"):
        # one layout per GPU line and the MIG lines under it
        blocks = re.split(r"^(?=GPU \d+: )", fixture("nvidia-smi", "list", name), flags=re.M)[1:]
        layouts = [(LIST_GPU_RE.findall(b)[0], LIST_MIG_RE.findall(b)) for b in blocks if LIST_MIG_RE.search(b)]
        assert layouts
        for gpu_name, profiles in layouts:
            model = mig.normalize_model(gpu_name)
            assert mig.validate_layout("h", 0, model, profiles) == [], name
            assert mig.find_placement(model, profiles) is not None


# --- placement: the examples -----------------------------------------------------------------------

def placed_ok(model, profiles, placement):
    spec = mig.MIG_MODELS[model]
    assert sorted(p for p, _start in placement) == sorted(mig.normalize_profile(p) for p in profiles)
    used = set()
    for name, start in placement:
        prof = mig.profile_spec(model, name)
        assert start in prof["placements"]
        slots = set(range(start, start + prof["memory_slices"]))
        assert not (slots & used), placement
        assert max(slots) < spec["memory_slices"]
        used |= slots
    return True


@pytest.mark.parametrize("model, profiles", [
    ("A100-80GB", ["4g.40gb", "4g.40gb"]),
    ("A100-80GB", ["3g.40gb", "3g.40gb", "1g.10gb"]),
    ("A100-80GB", ["7g.80gb", "1g.10gb"]),
    ("A100-80GB", ["1g.20gb"] * 4 + ["1g.10gb"]),
    ("A100-80GB", ["2g.20gb"] * 3 + ["1g.20gb", "1g.10gb"]),
    ("A100-40GB", ["3g.20gb", "3g.20gb", "1g.5gb"]),
    ("A30-24GB", ["2g.12gb", "2g.12gb", "1g.6gb"]),
    ("A30-24GB", ["4g.24gb", "1g.6gb"]),
    ("A30-24GB", ["2g.12gb", "1g.6gb", "1g.6gb", "1g.6gb"]),
    ("H200-141GB", ["4g.71gb", "4g.71gb"]),
    ("H200-141GB", ["3g.71gb", "3g.71gb", "1g.18gb"]),
    ("H200-141GB", ["1g.35gb"] * 4 + ["1g.18gb"]),
    ("GH200-96GB", ["4g.48gb", "3g.48gb", "1g.12gb"]),
])
def test_impossible_layouts_have_no_placement(model, profiles):
    assert mig.find_placement(model, profiles) is None
    assert mig.creation_order(model, profiles) is None
    assert mig.validate_layout("h", 0, model, profiles), "validation must refuse it"


@pytest.mark.parametrize("model, profiles", [
    ("A100-80GB", ["3g.40gb", "2g.20gb", "2g.20gb"]),
    ("A100-80GB", ["4g.40gb", "2g.20gb", "1g.10gb"]),
    ("A100-80GB", ["4g.40gb", "3g.40gb"]),
    ("A100-80GB", ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]),
    ("A100-80GB", ["1g.10gb"] * 7),
    ("A100-80GB", ["1g.20gb"] * 4),
    ("A100-80GB", ["2g.20gb"] * 3 + ["1g.10gb"]),
    ("A100-80GB", ["1g.10gb+me"] + ["1g.10gb"] * 6),
    ("A100-80GB", ["7g.80gb"]),
    ("A100-40GB", ["3g.20gb", "2g.10gb", "1g.5gb", "1g.5gb"]),
    ("A30-24GB", ["2g.12gb", "1g.6gb", "1g.6gb"]),
    ("A30-24GB", ["2g.12gb", "2g.12gb"]),
    ("A30-24GB", ["1g.6gb"] * 4),
    ("A30-24GB", ["2g.12gb+me", "1g.6gb", "1g.6gb"]),
    ("A30-24GB", ["4g.24gb"]),
    ("H200-141GB", ["3g.71gb", "2g.35gb", "1g.18gb", "1g.18gb"]),
    ("H200-141GB", ["4g.71gb", "3g.71gb"]),
    ("H200-141GB", ["1g.18gb"] * 7),
    ("H200-141GB", ["1g.35gb", "1g.35gb", "2g.35gb", "1g.18gb+me"]),
    ("H100-80GB", ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]),
    ("GH200-96GB", ["1g.24gb", "1g.24gb", "1g.24gb", "1g.12gb"]),
])
def test_possible_layouts_are_placed(model, profiles):
    placement = mig.find_placement(model, profiles)
    assert placement is not None
    assert placed_ok(model, profiles, placement)
    assert mig.validate_layout("h", 0, model, profiles) == []


def test_search_backtracks_when_the_first_slot_is_wrong():
    # 3g first at slot 0 leaves only three 1g slots; the search must move it to slot 4
    assert mig.find_placement("A100-80GB", ["1g.10gb"] * 4 + ["3g.40gb"]) == [
        ("3g.40gb", 4), ("1g.10gb", 0), ("1g.10gb", 1), ("1g.10gb", 2), ("1g.10gb", 3)]
    assert mig.find_placement("A100-80GB", ["2g.20gb", "3g.40gb", "2g.20gb"]) == [
        ("3g.40gb", 4), ("2g.20gb", 0), ("2g.20gb", 2)]


def test_placement_is_deterministic_and_largest_first():
    a = mig.find_placement("A100-80GB", ["1g.10gb", "2g.20gb", "4g.40gb"])
    b = mig.find_placement("A100-80GB", ["4g.40gb", "1g.10gb", "2g.20gb"])
    assert a == b == [("4g.40gb", 0), ("2g.20gb", 4), ("1g.10gb", 6)]


def test_creation_order_carries_ids_and_placements():
    order = mig.creation_order("A100-80GB", ["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"])
    assert [(o["profile"], o["profile_id"], o["start"], o["size"]) for o in order] == [
        ("3g.40gb", 9, 4, 4), ("2g.20gb", 14, 0, 2), ("1g.10gb", 19, 2, 1), ("1g.10gb", 19, 3, 1)]
    sizes = [(o["size"], o["compute_slices"]) for o in order]
    assert sizes == sorted(sizes, reverse=True)


def brute_force_fits(model, profiles):
    """Independent oracle: try every combination of allowed starts."""
    specs = [mig.profile_spec(model, p) for p in profiles]
    for starts in itertools.product(*[s["placements"] for s in specs]):
        used = []
        for s, start in zip(specs, starts):
            used.extend(range(start, start + s["memory_slices"]))
        if len(used) == len(set(used)):
            return True
    return False


@pytest.mark.parametrize("model", ["A100-80GB", "A30-24GB", "H200-141GB"])
def test_search_agrees_with_brute_force_on_every_small_multiset(model):
    names = mig.profile_names(model)
    checked = 0
    for n in range(1, 6):
        for combo in itertools.combinations_with_replacement(names, n):
            assert (mig.find_placement(model, combo) is not None) == brute_force_fits(model, combo), combo
            checked += 1
    assert checked > 100


def test_search_is_the_placement_rule_not_a_slice_sum(monkeypatch):
    """A geometry whose sizes add up but whose start slots do not line up is refused with that reason."""
    monkeypatch.setitem(mig.MIG_MODELS, "TEST-8", mig._model(
        (mig._profile("2g.x", 1, 2, 2, 2, (0, 4)), mig._profile("4g.x", 2, 4, 4, 1, (2,))),
        ("TEST GPU",), compute_slices=8, memory_slices=8))
    assert mig.find_placement("TEST-8", ["2g.x", "2g.x", "4g.x"]) is None
    assert mig.find_placement("TEST-8", ["2g.x", "2g.x"]) == [("2g.x", 0), ("2g.x", 4)]
    problems = mig.validate_layout("gpu-t01", 0, "TEST-8", ["2g.x", "4g.x", "2g.x"])
    assert len(problems) == 1
    assert "slots do not line up" in problems[0].hint
    assert "4g.x {2}:4" in problems[0].hint


# --- validation messages -----------------------------------------------------------------------------------

def one_problem(problems):
    assert len(problems) == 1, [str(p) for p in problems]
    assert isinstance(problems[0], Problem)
    return problems[0]


def test_unknown_profile_lists_the_valid_ones_and_where_it_belongs():
    p = one_problem(mig.validate_layout("gpu-a01", 2, "A100-80GB", ["3g.40gb", "1g.5gb"]))
    assert p.host == "gpu-a01"
    assert p.field == "hpc_gres_gpus[2].mig[1]"
    assert p.found == "'1g.5gb'"
    assert "1g.10gb, 1g.10gb+me, 1g.20gb, 2g.20gb, 3g.40gb, 4g.40gb, 7g.80gb" in p.expected
    assert "A100-40GB" in p.hint
    assert str(p).startswith("host gpu-a01: hpc_gres_gpus[2].mig[1]: expected an A100-80GB MIG profile")


def test_compute_instance_profiles_are_not_gpu_instance_profiles():
    p = one_problem(mig.validate_layout("gpu-a01", 0, "A100-80GB", ["1c.3g.40gb"]))
    assert p.field == "hpc_gres_gpus[0].mig[0]"
    assert "compute-instance profile" in p.hint


def test_too_many_instances_of_a_profile():
    p = one_problem(mig.validate_layout("gpu-a01", 0, "A100-80GB", ["2g.20gb"] * 4))
    assert p.field == "hpc_gres_gpus[0].mig"
    assert p.expected == "at most 3 x 2g.20gb per A100-80GB"
    assert p.found == "4 x 2g.20gb"


def test_two_media_extension_instances():
    p = one_problem(mig.validate_layout("gpu-a01", 0, "A30-24GB", ["1g.6gb+me", "2g.12gb+me"]))
    assert "+me" in p.expected and p.found == "2: 1g.6gb+me, 2g.12gb+me"
    p = one_problem(mig.validate_layout("gpu-a01", 0, "A100-80GB", ["1g.10gb+me", "1g.10gb+me"]))
    assert p.found == "2: 1g.10gb+me, 1g.10gb+me"


def test_unplaceable_layout_explains_slices_and_placements():
    p = one_problem(mig.validate_layout("gpu-a01", 1, "A100-80GB", ["3g.40gb", "3g.40gb", "1g.10gb"]))
    assert p.field == "hpc_gres_gpus[1].mig"
    assert p.found.startswith("[3g.40gb, 3g.40gb, 1g.10gb]")
    assert "8 memory slices" in p.expected
    assert "needs 9 of 8 memory slices" in p.hint
    assert "3g.40gb {0,4}:4" in p.hint and "1g.10gb {0,1,2,3,4,5,6}:1" in p.hint


def test_unknown_model_and_missing_model():
    p = one_problem(mig.validate_layout("gpu-a01", 0, "RTX4090", ["1g.10gb"]))
    assert p.field == "hpc_gres_gpus[0].model"
    assert "A100-80GB" in p.expected and p.found == "'RTX4090'"
    p = one_problem(mig.validate_layout("gpu-a01", 0, None, ["1g.10gb"]))
    assert p.found == "no model"


@pytest.mark.parametrize("profiles, found", [([], "an empty list"), ("3g.40gb", "str '3g.40gb'")])
def test_layout_must_be_a_non_empty_list(profiles, found):
    p = one_problem(mig.validate_layout("gpu-a01", 0, "A100-80GB", profiles))
    assert p.found == found


def test_custom_field_names_and_nvidia_smi_spellings():
    problems = mig.validate_layout("n1", 5, "NVIDIA A100-SXM4-80GB", ["MIG 3g.40gb", "3G.40GB"],
                                   field="gpus[5].mig")
    assert problems == []
    p = one_problem(mig.validate_layout("n1", 5, "A100-80GB", ["9g.1gb"], field="gpus[5].mig"))
    assert p.field == "gpus[5].mig[0]"


def test_profile_counts_in_natural_order():
    assert mig.profile_counts(["3g.40gb", "1g.10gb", "MIG 1g.10gb", "2g.20gb", "1g.10gb+me"]) == {
        "1g.10gb": 2, "1g.10gb+me": 1, "2g.20gb": 1, "3g.40gb": 1}
    assert list(mig.profile_counts(["7g.141gb", "1g.18gb"])) == ["1g.18gb", "7g.141gb"]


def test_known_models_and_profile_names():
    assert {"A100-40GB", "A100-80GB", "H100-80GB", "H100-94GB", "H200-141GB", "A30-24GB", "GH200-96GB",
            "GH200-144GB"} <= set(mig.known_models())
    assert mig.profile_names("a100-80gb") == [
        "1g.10gb", "1g.10gb+me", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"]
    assert mig.profile_names("H200-141GB")[-1] == "7g.141gb"
    with pytest.raises(KeyError):
        mig.profile_names("RTX4090")


def test_an_unknown_model_is_named_with_the_hint_that_fits():
    # no model: say that `mig` needs one; a model without MIG (an L40S): say that it has none, not that one is needed
    [missing] = mig.validate_layout("h", 0, None, ["1g.10gb"])
    assert missing.found == "no model" and missing.hint.startswith("a GPU with `mig` needs `model`")
    [l40s] = mig.validate_layout("h", 0, "L40S", ["1g.10gb"])
    assert l40s.found == "'L40S'" and l40s.hint.startswith("no MIG profiles are known for this model")
    assert "leave `mig` out on a GPU without MIG" in l40s.hint
