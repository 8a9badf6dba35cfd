"""Per-check verdicts of one health check: passed / failed / does not apply, errors first in check order, the
drain reason of the first error, and the tables the program prints."""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import results
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness


def finding(check, gpu=None, severity="error", found="f"):
    return {"severity": severity, "check": check, "gpu": gpu, "expected": "e", "found": found, "hint": "h"}


def ready(findings=(), not_applied=None):
    not_applied = not_applied or {}
    return {"findings": list(findings), "applied": [c for c in readiness.CHECKS if c not in not_applied],
            "not_applied": not_applied}


GRES_OK = {"check": "gres", "applies": True, "reason": None, "findings": []}


def test_healthy_node_rows():
    verdict = results.evaluate(ready(not_applied={"fabric": "no NVSwitch"}), GRES_OK)
    assert verdict["healthy"] and verdict["reason"] is None
    rows = {r["check"]: (r["status"], r["reason"]) for r in verdict["checks"]}
    assert list(rows) == list(readiness.CHECKS) + ["gres"]
    assert rows["fabric"] == ("does not apply", "no NVSwitch") and rows["nvml"] == ("passed", None)


def test_errors_first_in_check_order_and_warnings_do_not_drain():
    gres = dict(GRES_OK, findings=[finding("gres_present"), finding("gres_device", 3, "warning")])
    verdict = results.evaluate(ready([finding("xid", 4), finding("persistence", 1, "warning"), finding("memory", 2)]),
                               gres, [finding("fabric", None, "warning")])
    assert [(f["severity"], f["check"]) for f in verdict["findings"]] == [
        ("error", "memory"), ("error", "xid"), ("error", "gres_present"), ("warning", "persistence"),
        ("warning", "fabric"), ("warning", "gres_device")]
    assert verdict["reason"] == "hpc-gres-health: memory GPU 2: f (+2 more)"
    rows = {r["check"]: (r["status"], r["errors"], r["warnings"]) for r in verdict["checks"]}
    assert rows["persistence"] == ("passed", 0, 1) and rows["gres"] == ("failed", 1, 1)

    only_warnings = results.evaluate(ready([finding("persistence", 1, "warning")]), GRES_OK)
    assert only_warnings["healthy"] and only_warnings["reason"] is None


def test_gres_that_does_not_apply():
    verdict = results.evaluate(ready(), {"check": "gres", "applies": False, "reason": "gres.conf not read",
                                         "findings": [finding("gres_present")]})
    assert verdict["healthy"]
    assert verdict["checks"][-1] == {"check": "gres", "status": "does not apply", "reason": "gres.conf not read",
                                     "errors": 0, "warnings": 0}


def test_a_warning_keeps_a_check_that_could_not_read_its_input_not_applied():
    verdict = results.evaluate(ready(not_applied={"xid": "journalctl did not answer"}), GRES_OK,
                               [finding("xid", None, "warning")])
    [xid] = [c for c in verdict["checks"] if c["check"] == "xid"]
    assert xid["status"] == "does not apply" and verdict["healthy"]


def test_report_text():
    verdict = results.evaluate(ready([finding("nvml", None, found="nvidia-smi did not answer within 2 s (killed)")],
                                     {"persistence": "nvidia-smi -q was not read"}), GRES_OK)
    text = results.format_report("n1", verdict, slurm="IDLE; --slurm would: drain (unhealthy)", seconds=2.31)
    lines = text.splitlines()
    assert lines[0] == "hpc-gres-health: node n1 is NOT healthy (1 error(s), 0 warning(s), 2.31 s)"
    assert "nvml            FAILED          1 error(s)" in lines
    assert "persistence     does not apply  nvidia-smi -q was not read" in lines
    assert "drain reason: hpc-gres-health: nvml: nvidia-smi did not answer within 2 s (killed)" in lines
    assert lines[-1] == "slurm: IDLE; --slurm would: drain (unhealthy)"
    assert results.nhc_line(verdict) == "hpc-gres-health: nvml: nvidia-smi did not answer within 2 s (killed)"
