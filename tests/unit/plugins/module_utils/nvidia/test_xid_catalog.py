"""NVIDIA's Xid catalogue (module_utils/nvidia/xid_catalog.py) against gpud's generated copy of it
(tests/fixtures/readiness/xid-catalogue), and what each row's immediate action makes of a real Xid line."""
import importlib.util
import os
import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import nvlink5_decode, readiness as r, xid_catalog

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", ".."))
SOURCE = os.path.join(ROOT, "tests", "fixtures", "readiness", "xid-catalogue", "gpud-catalog_generated.go")
_SPEC = importlib.util.spec_from_file_location("derive_xid_catalog",
                                               os.path.join(ROOT, "scripts", "derive-xid-catalog.py"))
derive = importlib.util.module_from_spec(_SPEC)
_SPEC.loader.exec_module(derive)


def _read(path):
    with open(path, encoding="utf-8") as f:
        return f.read()


def _line(xid):
    # the recorded Xid 62 line (RTX 5080, driver 595) with its number replaced
    text = _read(os.path.join(ROOT, "tests", "fixtures", "readiness", "kernel-log",
                              "rtx5080-595-xid62-pmu-halted-xid154-gpu-reset-required.txt"))
    return next(line for line in text.split("\n") if "): 62," in line).replace("): 62,", "): %d," % xid)


def test_the_module_is_what_the_script_generates_from_the_fixture():
    assert derive.generate(_read(SOURCE)) == _read(os.path.join(
        ROOT, "plugins", "module_utils", "nvidia", "xid_catalog.py"))


def test_the_catalogue_has_every_xid_up_to_172_with_the_catalogues_words():
    assert sorted(xid_catalog.CATALOG) == list(range(1, 173))
    assert xid_catalog.CATALOG[79] == ("ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS", "GPU has fallen off the bus",
                                       "RESTART_BM")
    # a cell with a line break in the spreadsheet
    assert xid_catalog.CATALOG[13][0] == "ROBUST_CHANNEL_GR_EXCEPTION / ROBUST_CHANNEL_GR_ERROR_SW_NOTIFY"
    assert xid_catalog.CATALOG[162][2] == ""


def test_a_changed_or_broken_source_is_noticed(tmp_path):
    text = _read(SOURCE)
    changed = text.replace('Description: "GPU has fallen off the bus", ImmediateResolution: "RESTART_BM"',
                           'Description: "GPU has fallen off the bus", ImmediateResolution: "RESET_GPU"')
    assert changed != text
    (tmp_path / "src.go").write_text(changed)
    assert derive.main(["--source", str(tmp_path / "src.go"), "--output", os.path.join(
        ROOT, "plugins", "module_utils", "nvidia", "xid_catalog.py"), "--check"]) == 1
    with pytest.raises(ValueError, match="twice"):
        derive.parse(text.replace("{Code: 2,", "{Code: 1,"))
    with pytest.raises(ValueError, match="no catalogEntries"):
        derive.parse(text.replace("# source:", "# from:"))


def test_the_nvlink5_decode_rows_are_every_row_of_the_sheet():
    # read here with a looser pattern than the script's: a row the script's pattern skipped would be missing
    rule = re.compile(r'\{Xid: (\d+), Unit: "([^"]*)", IntrinfoPatternV1: "([^"]*)", IntrinfoPatternV2: "([^"]*)", '
                      r'ErrorStatus: (0x[0-9a-fA-F]+), Resolution: "([^"]*)"')
    rows = tuple((int(m[0]), m[1], m[2], m[3], int(m[4], 16), m[5]) for m in rule.findall(_read(SOURCE)))
    assert len(rows) == _read(SOURCE).count("{Xid: ") == 94
    assert rows == xid_catalog.NVLINK5_RULES == nvlink5_decode.RULES
    with pytest.raises(ValueError, match="nvlinkRules"):
        derive.parse(_read(SOURCE).replace("var nvlinkRules ", "var otherRules "))


@pytest.mark.parametrize("xid", sorted(xid_catalog.CATALOG))
def test_every_row_is_judged_by_its_immediate_action(xid):
    _mnemonic, _description, action = xid_catalog.CATALOG[xid]
    events = r.parse_kernel_log(_line(xid))
    [verdict] = r.xid_verdicts(events)
    findings = r.check_xid(events)["findings"]
    expected = {"RESTART_APP": [], "IGNORE": [], "RESET_GPU": ["error"], "RESTART_BM": ["error"],
                "RESTART_VM": ["error"], "WORKFLOW_XID_48": ["error"], "WORKFLOW_NVLINK_ERR": ["error"],
                # 144-150: a line without the registers and without "Nonfatal" is judged fatal
                "WORKFLOW_NVLINK5_ERR": ["error"],
                # 45 without "caused by previous Xid N"; 154 without "changed from ... to ..."
                "WORKFLOW_XID_45": [], "XID_154": ["warning"]}.get(action, ["warning"])
    if xid in (171, 172):  # no action in the catalogue; the detail of an Xid 48 (NVIDIA's memory-error page)
        expected = ["error"]
    assert [f["severity"] for f in findings] == expected, (xid, action, verdict)


@pytest.mark.parametrize("xid, words", [
    (61, ["61 PMU_BREAKPOINT (Unused), immediate action CONTACT_SUPPORT", "nvidia-bug-report.sh", "Volta or older"]),
    (54, ["54 SILENT_RUNNING_PWR_REDUCED_CLOCKING (Auxiliary power is not connected to the GPU board), immediate "
          "action CHECK_MECHANICALS: check the GPU's auxiliary power cables"]),
    (159, ["immediate action CHECK_UVM: check the nvidia-uvm module"]),
    (78, ["vGPU Start Error), immediate action UPDATE_SWFW: update the driver"]),
    (167, ["167 PCIE_FATAL_TIMEOUT (PCIE_FATAL_TIMEOUT), immediate action none: read the kernel log around it"]),
])
def test_a_warning_says_what_the_catalogue_asks_for(xid, words):
    [finding] = r.check_xid(r.parse_kernel_log(_line(xid)))["findings"]
    assert finding["severity"] == "warning" and finding["found"].startswith("Xid %d (log line 1): " % xid)
    assert all(w in finding["hint"] for w in words), finding["hint"]
    assert finding["expected"].startswith("no Xid whose catalogue action asks for a check")


def test_an_xid_the_catalogue_does_not_have_keeps_the_general_warning():
    [finding] = r.check_xid(r.parse_kernel_log(_line(999)))["findings"]
    assert finding["severity"] == "warning" and finding["hint"].startswith("look the Xid up in NVIDIA's Xid catalogue")
