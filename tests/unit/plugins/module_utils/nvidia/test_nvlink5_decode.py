"""NVIDIA's decode of the NVLink5 Xids 144-150 (module_utils/nvidia/nvlink5_decode.py), on the registers of real
lines (tests/fixtures/readiness/kernel-log: gpud#1160, gpud#1174, NVSentinel#1357) and on edge cases."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import nvlink5_decode as d


@pytest.mark.parametrize("xid, message, unit, sub_code, action", [
    # gpud#1160: gpud printed these as 144.0, 149.38 and 149.37 (the sub-code is intrinfo bits 25-20)
    (144, "SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008 0x00000000 0x00000000 0x00000000 0x00000000)",
     "SAW_MVB", 0, "IGNORE"),
    (149, "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
     "NETIR_LINK_EVT/NETIR_LINK_DOWN", 38, "IGNORE"),
    (149, "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x025001c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
     "NETIR_LINK_EVT/NETIR_LINK_DOWN", 37, "RESET_GPU"),
    # gpud#1174
    (149, "NETIR Fatal XC0 i0 Link -1 (0x000fe406 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)",
     "NETIR/NETIR_INT", 0, "RESET_GPU"),
    (145, "RLW_RXPIPE Nonfatal XC0 i0 Link 13 (0x0409a0c2 0x00000008 0x00000001 0x00000000 0x00100000 0x00000004)",
     "RLW_RXPIPE", 0, "IGNORE"),
    # NVSentinel#1357, its closing parenthesis lost in the post
    (145, "RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 0x00000004 0x00000000 0x00000000 0x00000000 0x00000000",
     "RLW_SRC_TRACK", 0, "XID_154_EVAL"),
])
def test_real_lines_decode_to_the_catalogues_action(xid, message, unit, sub_code, action):
    got_unit, intrinfo, _status, got_action = d.decode(xid, message)
    assert (got_unit, (intrinfo >> 20) & 0x3F, got_action) == (unit, sub_code, action)


def test_lines_without_registers_or_rows_decode_to_nothing():
    assert d.decode(145, "RLW_RXPIPE Nonfatal XC0 i0 Link 11 (...)") is None  # masked in the post (nccl#2241)
    assert d.decode(145, "RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 (0x04084507 0x00000400)") is None  # no such status
    assert d.decode(146, "SAW_MVB Nonfatal XC0 i0 Link 0 (0x00000001 0x00000008)") is None  # another Xid's unit
    assert d.decode(149, "") is None and d.decode(149, None) is None


def test_a_unit_is_matched_by_either_of_its_names_or_the_whole():
    row = next(r for r in d.RULES if r[1] == "NETIR/NETIR_INT")
    line = "%s Fatal XC0 i0 Link -1 (0x000fe406 0x%08x)"
    for name in ("NETIR", "NETIR_INT", "NETIR/NETIR_INT", "netir"):
        assert d.decode(149, line % (name, row[4]))[3] == row[5]


def test_every_row_is_well_formed():
    assert len(d.RULES) == 94
    for xid, unit, layout1, layout2, status, action in d.RULES:
        assert 144 <= xid <= 150 and unit and 0 <= status < 2 ** 32
        assert len(layout1) == len(layout2) == 32 and set(layout1 + layout2) <= set("01-")
        assert action in ("RESET_GPU", "IGNORE", "XID_154_EVAL")
