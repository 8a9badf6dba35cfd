"""nvidia_smi parsers for ``-L``, ``mig -lgi/-lci/-lgip/-lcip/-lgipp``, create results and mig-minors."""
import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi as n

import nvsmi_fixtures


def load(kind, name):
    return nvsmi_fixtures.load("nvidia-smi", kind, name)


# --- -L ------------------------------------------------------------------------------------------------

def test_L_a30_mig():
    gpus = n.parse_list_gpus(load("list", "a30-mig-2g12gb-2x1g6gb-L.txt"))
    assert [(g["index"], g["name"], g["uuid"]) for g in gpus] == [
        (0, "NVIDIA A30", "GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bcd")]
    assert [(d["device"], d["profile"], d["uuid"]) for d in gpus[0]["mig_devices"]] == [
        (0, "2g.12gb", "MIG-1b8509c0-e60d-502d-8263-d434867998aa"),
        (1, "1g.6gb", "MIG-41b9eab5-8d48-5c52-9f07-82bc59af3901"),
        (2, "1g.6gb", "MIG-55dcd9bd-e6b1-549a-bcb4-0b0496bfee9c")]
    assert all(d["gi_id"] is None and d["ci_id"] is None for d in gpus[0]["mig_devices"])


def test_L_plain_single_gpu():
    assert n.parse_list_gpus(load("list", "gb10-1gpu-L.txt")) == [
        {"index": 0, "name": "NVIDIA GB10", "uuid": "GPU-b0ec33a0-2589-53de-953c-0713d37d0794", "mig_devices": []}]


def test_L_gh200_seven_slices():
    gpus = n.parse_list_gpus(load("list", "gh200-mig-7x1g12gb-L.txt"))
    assert [d["device"] for d in gpus[0]["mig_devices"]] == list(range(7))
    assert {d["profile"] for d in gpus[0]["mig_devices"]} == {"1g.12gb"}


def test_L_h100_mixed():
    gpus = n.parse_list_gpus(load("list", "h100-80gb-hbm3-mig-mixed-4slices-container.txt"))
    assert [d["profile"] for d in gpus[0]["mig_devices"]] == ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


def test_L_list_gpus_long_form_with_prompt():
    gpus = n.parse_list_gpus(load("list", "h100-8gpu-vm-list-gpus-rhelai.txt"))
    assert [g["index"] for g in gpus] == list(range(8))
    assert gpus[7]["uuid"] == "GPU-5534d557-2a95-300a-81e6-7b626d87378a"


def test_L_compute_instance_profiles():
    gpus = n.parse_list_gpus(load("list", "a100sxm4-40gb-mig-1c-4devices-L-ssup2.txt"))
    assert [d["profile"] for d in gpus[0]["mig_devices"]] == ["4g.20gb", "1c.2g.10gb", "1c.2g.10gb", "1g.5gb"]


def test_L_old_driver_names_and_single_spaces():
    gpus = n.parse_list_gpus(load("list", "a100-40gb-old-name-L-mig-user-guide.txt"))
    assert gpus[0]["name"] == "A100-SXM4-40GB"
    assert [d["uuid"] for d in gpus[0]["mig_devices"]] == [
        "MIG-c7384736-a75d-5afc-978f-d2f1294409fd", "MIG-a28ad590-3fda-56dd-84fc-0a0b96edc58d"]


def test_L_pre_r470_mig_uuid_carries_gi_and_ci():
    text = ("GPU 0: A100-SXM4-40GB (UUID: GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77)\n"
            "  MIG 3g.20gb Device 0: (UUID: MIG-GPU-5d5ba0d6-d33d-2b2c-524d-9e3d8d2b8a77/1/0)\n")
    device = n.parse_list_gpus(text)[0]["mig_devices"][0]
    assert (device["gi_id"], device["ci_id"]) == (1, 0)


def test_L_junk_is_an_error():
    with pytest.raises(ValueError, match="line 1"):
        n.parse_list_gpus("GPU zero: something\n")


# --- mig -lgi / -lci -----------------------------------------------------------------------------------

def test_lgi_a30():
    assert n.parse_mig_lgi(load("mig", "a30-lgi-mixed-3instances.txt")) == [
        {"gpu": 0, "profile": "1g.6gb", "profile_id": 14, "gi_id": 3, "placement_start": 0, "placement_size": 1},
        {"gpu": 0, "profile": "1g.6gb", "profile_id": 14, "gi_id": 4, "placement_start": 1, "placement_size": 1},
        {"gpu": 0, "profile": "2g.12gb", "profile_id": 5, "gi_id": 2, "placement_start": 2, "placement_size": 2}]


def test_lgi_wider_r580_table():
    rows = n.parse_mig_lgi(load("mig", "a100sxm4-40gb-lgi-3gis-driver580-ssup2.txt"))
    assert [(r["gi_id"], r["profile"], r["profile_id"], r["placement_start"], r["placement_size"]) for r in rows] == [
        (9, "1g.5gb", 19, 6, 1), (3, "2g.10gb", 14, 4, 2), (2, "4g.20gb", 5, 0, 4)]


def test_lgi_none_found():
    assert n.parse_mig_lgi(load("mig", "a30-lgi-empty-notfound.txt")) == []


def test_lgi_no_mig_enabled_devices_is_empty():
    # R580 on an H200 with MIG disabled: this one line, exit status 0; `mig -lci` printed the same.
    text = load("mig", "h200-lgi-no-mig-enabled-devices-rc0-580.txt")
    assert text == "No MIG-enabled devices found.\n"
    assert n.parse_mig_lgi(text) == []
    assert n.parse_mig_lci(text) == []


def test_lci_with_placement():
    rows = n.parse_mig_lci(load("mig", "a100sxm4-40gb-lci-4cis-placement-driver580-ssup2.txt"))
    assert [(r["gpu"], r["gi_id"], r["ci_id"], r["profile"], r["profile_id"], r["placement_start"],
             r["placement_size"]) for r in rows] == [
        (0, 9, 0, "1g.5gb", 0, 0, 1), (0, 3, 0, "1c.2g.10gb", 0, 0, 1), (0, 3, 1, "1c.2g.10gb", 0, 1, 1),
        (0, 2, 0, "4g.20gb", 3, 0, 4)]


def test_lci_old_table_without_placement_and_indented():
    rows = n.parse_mig_lci(load("mig", "a100-lci-1c-3cis-no-placement-mig-user-guide.txt"))
    assert [(r["gi_id"], r["ci_id"], r["profile"], r["placement_start"]) for r in rows] == [
        (1, 0, "1c.3g.20gb", None), (1, 1, "1c.3g.20gb", None), (1, 2, "1c.3g.20gb", None)]


def test_lci_none_found():
    assert n.parse_mig_lci("No compute instances found: Not Found\n") == []


def test_lgi_unexpected_row_is_an_error():
    text = load("mig", "a30-lgi-mixed-3instances.txt").replace("2:2", "two")
    with pytest.raises(ValueError, match="unexpected row"):
        n.parse_mig_lgi(text)


# --- -lgip / -lcip / -lgipp ----------------------------------------------------------------------------

def test_lgip_a30_with_me_profiles():
    rows = n.parse_mig_lgip(load("mig", "a30-lgip-with-me-profiles.txt"))
    assert [(r["profile"], r["profile_id"], r["free"], r["total"], r["memory_gib"]) for r in rows] == [
        ("1g.6gb", 14, 4, 4, 5.81), ("1g.6gb+me", 21, 1, 1, 5.81), ("2g.12gb", 5, 2, 2, 11.69),
        ("2g.12gb+me", 6, 1, 1, 11.69), ("4g.24gb", 0, 1, 1, 23.44)]
    assert (rows[1]["ce"], rows[1]["jpeg"], rows[1]["ofa"]) == (1, 1, 1)


def test_lgip_gh200_full_list():
    rows = n.parse_mig_lgip(load("mig", "gh200-96gb-lgip-full-profile-list.txt"))
    assert [r["profile_id"] for r in rows] == [19, 20, 15, 14, 9, 5, 0]
    assert rows[-1]["sm"] == 132 and rows[-1]["ce"] == 8


def test_lgip_h200_mig_disabled_full_list():
    rows = n.parse_mig_lgip(load("mig", "h200-141gb-lgip-mig-disabled-580.txt"))
    assert [(r["profile"], r["profile_id"], r["free"], r["total"], r["memory_gib"], r["sm"]) for r in rows] == [
        ("1g.18gb", 19, 7, 7, 16.0, 16), ("1g.18gb+me", 20, 1, 1, 16.0, 16), ("1g.35gb", 15, 4, 4, 32.5, 26),
        ("2g.35gb", 14, 3, 3, 32.5, 32), ("3g.71gb", 9, 2, 2, 69.75, 60), ("4g.71gb", 5, 1, 1, 69.75, 64),
        ("7g.141gb", 0, 1, 1, 140.0, 132)]
    assert [(r["ce"], r["jpeg"], r["ofa"]) for r in rows] == [
        (1, 1, 0), (1, 1, 1), (1, 1, 0), (2, 2, 0), (3, 3, 0), (4, 4, 0), (8, 7, 1)]
    assert {(r["gpu"], r["p2p"]) for r in rows} == {(0, "No")}


def test_lgip_single_wide_profile():
    assert [(r["profile"], r["sm"]) for r in n.parse_mig_lgip(load("mig", "cmp170hx-lgip-single-wide-profile.txt"))] \
        == [("1g.64gb", 70)]


def test_lcip_two_tables_and_default_marks():
    rows = n.parse_mig_lcip(load("mig", "a30-lcip-gi2-gi3.txt"))
    assert [(r["gi_id"], r["profile"], r["profile_id"], r["default"]) for r in rows] == [
        (2, "1c.2g.12gb", 0, False), (2, "2g.12gb", 1, True), (3, "1g.6gb", 0, True)]


@pytest.mark.parametrize("name, expected", [
    ("a100-lgipp-mig-user-guide.txt", [(19, [0, 1, 2, 3, 4, 5, 6], 1), (20, [0, 1, 2, 3, 4, 5, 6], 1),
                                       (15, [0, 2, 4, 6], 2), (14, [0, 2, 4], 2), (9, [0, 4], 4), (5, [0], 4),
                                       (0, [0], 8)]),
    ("h100nvl-lgipp-colfax.txt", [(19, [0, 1, 2, 3, 4, 5, 6], 1), (20, [0, 1, 2, 3, 4, 5, 6], 1),
                                  (15, [0, 2, 4, 6], 2), (14, [0, 2, 4], 2), (9, [0, 4], 4), (5, [0], 4),
                                  (0, [0], 8)]),
    ("a30-lgipp.txt", [(14, [0, 1, 2, 3], 1), (21, [0, 1, 2, 3], 1), (5, [0, 2], 2), (6, [0, 2], 2), (0, [0], 4)]),
    ("h200-141gb-lgipp-mig-disabled-580.txt", [(19, [0, 1, 2, 3, 4, 5, 6], 1), (20, [0, 1, 2, 3, 4, 5, 6], 1),
                                               (15, [0, 2, 4, 6], 2), (14, [0, 2, 4], 2), (9, [0, 4], 4),
                                               (5, [0], 4), (0, [0], 8)]),
])
def test_lgipp(name, expected):
    rows = n.parse_mig_lgipp(load("mig", name))
    assert [(r["profile_id"], r["starts"], r["size"]) for r in rows] == expected
    assert {r["gpu"] for r in rows} == {0}


def test_lgipp_junk_is_an_error():
    with pytest.raises(ValueError, match="Placements"):
        n.parse_mig_lgipp("GPU  0 Profile 19 somewhere\n")


# --- -cgi / -cci results -------------------------------------------------------------------------------

def test_create_results_out_of_order_gi_ids():
    out = n.parse_mig_create(load("mig", "gh200-cgi-create-7x1g12gb.txt"))
    assert [g["gi_id"] for g in out["gpu_instances"]] == [13, 11, 12, 7, 8, 9, 10]
    assert {(c["gi_id"], c["ci_id"], c["profile_id"]) for c in out["compute_instances"]} == {
        (g, 0, 0) for g in (7, 8, 9, 10, 11, 12, 13)}
    assert out["errors"] == []


def test_create_results_ci_profile_id_7():
    out = n.parse_mig_create(load("mig", "gh200-96gb-cgi-create-3x1g24gb.txt"))
    assert [(g["gi_id"], g["profile"], g["profile_id"]) for g in out["gpu_instances"]] == [
        (5, "1g.24gb", 15), (3, "1g.24gb", 15), (4, "1g.24gb", 15)]
    assert {c["profile_id"] for c in out["compute_instances"]} == {7}


@pytest.mark.parametrize("name, reason", [("gh200-96gb-cgi-in-use-by-another-client.txt", "In use by another client"),
                                          ("gh200-96gb-cgi-insufficient-resources.txt", "Insufficient Resources")])
def test_create_errors(name, reason):
    out = n.parse_mig_create(load("mig", name))
    assert out["gpu_instances"] == []
    assert len(out["errors"]) == 2 and all(e.endswith(reason) for e in out["errors"])


# --- mig-minors ----------------------------------------------------------------------------------------

def test_mig_minors_user_guide_excerpt():
    minors = n.parse_mig_minors(load("caps", "mig-user-guide-mig-minors-excerpt.txt"))
    assert minors[("config", None, None, None)] == 1
    assert minors[("monitor", None, None, None)] == 2
    assert minors[("gi", 0, 0, None)] == 3
    assert minors[("ci", 0, 0, 2)] == 6
    assert minors[("ci", 31, 14, 7)] == 4322


def test_mig_minors_with_comment_prefix():
    minors = n.parse_mig_minors(load("caps", "dra-driver-go-comment-mig-minors-excerpt.txt"))
    assert minors[("ci", 3, 3, 3)] == 439
    assert minors[("ci", 6, 11, 7)] == 920
    assert ("config", None, None, None) not in minors


def test_mig_minors_agree_with_a_real_capability_listing():
    """The DeviceFileMinor values one real A100 showed for its GIs/CIs, against a full table."""
    import fake_sysfs

    minors = n.parse_mig_minors(fake_sysfs.mig_minors_text())
    listing = load("caps", "a100sxm4-40gb-capabilities-minor-map-ssup2.txt")
    seen = 0
    for gi, ci, minor in re.findall(r"gpu0/mig/gi(\d+)(?:/ci(\d+))?/access\s+\S+\s+/dev/nvidia-caps/nvidia-cap(\d+)",
                                    listing):
        key = ("ci", 0, int(gi), int(ci)) if ci else ("gi", 0, int(gi), None)
        assert minors[key] == int(minor)
        seen += 1
    assert seen == 7


def test_full_generated_table_matches_the_guide_excerpt():
    import fake_sysfs

    full = n.parse_mig_minors(fake_sysfs.mig_minors_text())
    excerpt = n.parse_mig_minors(load("caps", "mig-user-guide-mig-minors-excerpt.txt"))
    assert all(full[k] == v for k, v in excerpt.items())
    assert len(full) == 2 + 32 * 15 * 9


def test_mig_minors_junk_is_an_error():
    with pytest.raises(ValueError, match="line 2"):
        n.parse_mig_minors("config 1\ngpu0/gi0/access three\n")


def test_a_paste_with_a_blank_line_after_each_table_line():
    rows = n.parse_mig_lgi(load("mig", "a30-mig-lgi-4x1g6gb-double-spaced-blank-lines.txt"))
    assert [(r["gpu"], r["profile"], r["profile_id"], r["gi_id"], r["placement_start"], r["placement_size"])
            for r in rows] == [(0, "1g.6gb", 14, gi, start, 1) for gi, start in ((3, 0), (4, 1), (5, 2), (6, 3))]
    profiles = n.parse_mig_lgip(load("mig", "a30-mig-lgip-double-spaced-blank-lines.txt"))
    assert [(p["profile"], p["profile_id"], p["free"], p["total"]) for p in profiles] == [
        ("1g.6gb", 14, 0, 4), ("1g.6gb+me", 21, 0, 1), ("2g.12gb", 5, 0, 2), ("4g.24gb", 0, 0, 1)]


def test_text_after_a_table_still_ends_it():
    text = ("+---------------------------------------------------+\n"
            "| GPU instances:                                    |\n"
            "| GPU   Name             Profile  Instance   Placement  |\n"
            "|                          ID       ID       Start:Size |\n"
            "|===================================================|\n"
            "|   0  MIG 1g.6gb          14        3          0:1     |\n"
            "+---------------------------------------------------+\n"
            "\n"
            "then the poster's words\n"
            "|   0  MIG 1g.6gb          14        4          1:1     |\n")
    assert [r["gi_id"] for r in n.parse_mig_lgi(text)] == [3]


@pytest.mark.parametrize("name, indexes, mig", [
    # the poster's prompt before the command: "user@host:~$", ESXi's "[root@localhost:~]", "root@pod:/#"
    ("a100pcie-6gpu-old-mig-uuids-user-host-prompt-L.txt", [0, 1, 2, 3, 4, 5], [0, 0, 0, 0, 2, 2]),
    ("a100pcie-esxi-prompt-1g5gb-L.txt", [0], [1]),
    ("a100sxm4-80gb-7x1g10gb-root-prompt-L.txt", [0], [7]),
])
def test_L_after_a_shell_prompt(name, indexes, mig):
    gpus = n.parse_list_gpus(load("list", name))
    assert [g["index"] for g in gpus] == indexes
    assert [len(g["mig_devices"]) for g in gpus] == mig


def test_L_old_mig_uuids_give_the_instance_ids():
    gpus = n.parse_list_gpus(load("list", "a100pcie-6gpu-old-mig-uuids-user-host-prompt-L.txt"))
    found = [(d["profile"], d["gi_id"], d["ci_id"]) for d in gpus[5]["mig_devices"]]
    assert found == [("3g.20gb", 1, 0), ("3g.20gb", 2, 0)]


def test_two_L_outputs_run_together_are_refused_not_read_as_two_gpus_with_one_uuid():
    # two containers' -L in one log: read as two GPU 0s, the facts (keyed by UUID) kept one MIG device of two
    with pytest.raises(ValueError, match=r"nvidia-smi -L line 3: expected each GPU once, found GPU 0 again \(first at "
                                         r"line 1\)"):
        n.parse_list_gpus(load("list", "h200-two-containers-L-run-together-gpu0-twice-dra.txt"))


def test_L_lines_run_together_are_refused_not_read_as_one_gpu():
    # an issue form joined four "GPU N: ... (UUID: ...)" lines into one: the first GPU must not get the last UUID
    with pytest.raises(ValueError, match="nvidia-smi -L line 1: expected 'GPU N: name"):
        n.parse_list_gpus(load("list", "rtx2080ti-4gpu-L-collapsed-into-one-line.txt"))
