"""One health check's verdict: per check passed / failed / does not apply, the findings in check order, the drain
reason, and the texts the program prints. Pure functions over what the readiness rules and the gres comparison
returned.
"""
import json
import textwrap

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.slurm_state import drain_reason
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import format_findings_table, summarize
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness

CHECKS = tuple(readiness.CHECKS) + ("gres",)
PASSED, FAILED, NOT_APPLIED = "passed", "failed", "does not apply"


def _row_of(check):
    return "gres" if check.startswith("gres_") else check


def evaluate(ready, gres, extra_findings=()):
    """``ready``: ``readiness.readiness_findings`` result; ``gres``: ``gres_match.gres_findings`` result;
    ``extra_findings``: findings the reading itself produced (a command killed on timeout, a malformed
    acknowledgement line), each under the check it belongs to.

    Returns ``{"healthy", "checks": [{"check", "status", "reason", "errors", "warnings"}], "findings",
    "errors", "reason"}``: findings errors first, each group in :data:`CHECKS` order; ``reason`` the drain reason
    of the first error (None when healthy).
    """
    findings = list(ready["findings"]) + list(extra_findings)
    not_applied = dict(ready["not_applied"])
    if gres["applies"]:
        findings.extend(gres["findings"])
    else:
        not_applied["gres"] = gres["reason"]
    order = {c: n for n, c in enumerate(CHECKS)}
    findings = sorted(findings, key=lambda f: (f["severity"] != "error", order.get(_row_of(f["check"]), 99)))
    rows = []
    for check in CHECKS:
        mine = [f for f in findings if _row_of(f["check"]) == check]
        errors = sum(1 for f in mine if f["severity"] == "error")
        if errors:
            status = FAILED
        elif check in not_applied:
            status = NOT_APPLIED
        else:
            status = PASSED
        rows.append({"check": check, "status": status, "reason": not_applied.get(check), "errors": errors,
                     "warnings": len(mine) - errors})
    errors = [f for f in findings if f["severity"] == "error"]
    return {"healthy": not errors, "checks": rows, "findings": findings, "errors": errors,
            "reason": drain_reason(errors)}


def _detail(row):
    parts = []
    if row["errors"]:
        parts.append("%d error(s)" % row["errors"])
    if row["warnings"]:
        parts.append("%d warning(s)" % row["warnings"])
    if row["reason"] and row["status"] != FAILED:
        parts.append(row["reason"])
    return "; ".join(parts)


def format_checks(rows, width=110):
    """The per-check table: CHECK, RESULT, DETAIL (wrapped)."""
    lines = ["%-15s %-15s %s" % ("CHECK", "RESULT", "DETAIL"), "%-15s %-15s %s" % ("-" * 15, "-" * 15, "-" * 40)]
    for row in rows:
        detail = textwrap.wrap(_detail(row), max(width - 32, 30)) or [""]
        lines.append(("%-15s %-15s %s" % (row["check"], row["status"].upper() if row["status"] == FAILED else
                                          row["status"], detail[0])).rstrip())
        lines.extend(" " * 32 + more for more in detail[1:])
    return "\n".join(lines)


def format_report(node, verdict, slurm=None, seconds=None):
    """What ``--report`` prints: verdict line, per-check table, findings with hints, what Slurm would see."""
    counts = summarize(verdict["findings"])
    head = "hpc-gres-health: node %s is %s (%d error(s), %d warning(s)%s)" % (
        node, "healthy" if verdict["healthy"] else "NOT healthy", counts["errors"], counts["warnings"],
        ", %.2f s" % seconds if seconds is not None else "")
    out = [head, "", format_checks(verdict["checks"])]
    if verdict["findings"]:
        out.extend(["", format_findings_table(verdict["findings"])])
    out.append("")
    if verdict["reason"]:
        out.append("drain reason: %s" % verdict["reason"])
    if slurm is not None:
        out.append("slurm: %s" % slurm)
    return "\n".join(out).rstrip() + "\n"


def nhc_line(verdict):
    """``--nhc``: the drain reason of the first error (NHC prefixes it with ``NHC: ``), or nothing."""
    return verdict["reason"] or ""


def to_json(document):
    return json.dumps(document, indent=2, sort_keys=True, default=str) + "\n"
