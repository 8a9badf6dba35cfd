# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The maintenance run's decisions besides the waves (pure; controller side; ``gres_plan`` stage ``maintenance``).

``reboot_plan``  how nodes reboot: through slurmctld (``scontrol reboot``, which needs ``RebootProgram`` and a
                 ``ResumeTimeout`` longer than a reboot), through Ansible, or not at all (a GPU reset).
``lock_plan``    whether this run may take the deploy's lock: refused while a run holds it, or while a deploy
                 that did not finish (its files may be half installed); an interrupted maintenance run of this
                 control machine is taken over.
``resume_plan``  which interrupted maintenance run this one continues (the same change): its done nodes are
                 skipped; nodes it left drained are picked up by the planner from their drain reason.
``failure``      the drain reason a node that failed is left with, naming the step and what was found.
``summary``      one line per node and the run's final state.

The run record (``module_utils/common/run_record.py``, kept by ``gres_run``) of a maintenance run holds
``command: maintenance``, ``maintenance``: what the run does (change, reboot, caps, targets, the run it continues)
and one ``node:<name>`` field per node it finished (``status`` done or failed, ``at``, ``reason``). Its state stays
``maintaining`` until every target is done; a run that ends with nodes left (failed, skipped, blocked, or
interrupted) is continued by the next maintenance run of the same change.
"""
from __future__ import annotations

import ast
import os
import re

import yaml

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import DRAIN_FLAGS
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import run_lock
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.waves import failure_reason, is_ours, node_status

COMMAND = run_lock.MAINTENANCE
NODE_FIELD = "node:"
REBOOT_MODES = ("auto", "slurm", "ansible", "none")
_CONFIG_LINE = re.compile(r"^\s*(\w+)\s*=\s*(.*?)\s*$")


def show_config(text):
    """``scontrol show config`` -> {key: value}."""
    out = {}
    for line in (text or "").splitlines():
        match = _CONFIG_LINE.match(line)
        if match:
            out[match.group(1)] = match.group(2)
    return out


def _seconds(value):
    match = re.match(r"^\s*(\d+)", value or "")
    return int(match.group(1)) if match else None


def reboot_plan(mode, config_text, reboot_timeout, reboot_tasks=""):
    """``{"mode", "refusal", "notes"}``: the reboot mode this run uses.

    ``slurm`` needs slurmctld's ``RebootProgram`` (without it slurmd only logs ``RebootProgram isn't defined in
    config`` and slurmctld sets the node DOWN, ``reboot timed out``, after ``ResumeTimeout``) and a ``ResumeTimeout``
    of at least ``reboot_timeout`` seconds (slurmctld sets a node DOWN whose reboot takes longer). ``auto`` takes
    ``slurm`` when both hold, else ``ansible``. ``reboot_tasks``: the site's task file that reboots in ``ansible``
    mode (hpc_gres_maintenance_reboot_tasks), named in the notes instead of ansible.builtin.reboot.
    """
    by_ansible = ("reboot by the site's tasks (%s)" % reboot_tasks if reboot_tasks else
                  "reboot through Ansible (ansible.builtin.reboot)")
    if mode not in REBOOT_MODES:
        return {"mode": mode, "notes": [], "refusal": "hpc_gres_maintenance_reboot: expected one of %s, found %r"
                % (", ".join(REBOOT_MODES), mode)}
    if mode in ("ansible", "none"):
        return {"mode": mode, "notes": [by_ansible] if mode == "ansible" and reboot_tasks else [], "refusal": None}
    config = show_config(config_text)
    program = config.get("RebootProgram")
    resume = _seconds(config.get("ResumeTimeout"))
    problems = []
    if not program or program == "(null)":
        problems.append("slurmctld has no RebootProgram (set it in hpc_gres_slurm_conf_options and deploy)")
    if resume is not None and resume < reboot_timeout:
        problems.append("slurmctld's ResumeTimeout (%d s) is shorter than hpc_gres_maintenance_reboot_timeout (%d s): "
                        "slurmctld sets a node DOWN (reboot timed out) that takes longer to come back; raise "
                        "ResumeTimeout in hpc_gres_slurm_conf_options" % (resume, reboot_timeout))
    if not problems:
        return {"mode": "slurm", "notes": ["reboot through slurmctld: scontrol reboot (RebootProgram=%s, "
                                           "ResumeTimeout=%s s)" % (program, resume)], "refusal": None}
    if mode == "auto":
        return {"mode": "ansible", "notes": ["%s: %s" % (by_ansible, "; ".join(problems))], "refusal": None}
    return {"mode": mode, "notes": [], "refusal": "hpc_gres_maintenance_reboot=slurm: %s; or use "
            "hpc_gres_maintenance_reboot=ansible" % "; ".join(problems)}


def lock_plan(holder, holder_gone, unfinished, break_lock=""):
    """``{"refusal", "break_lock"}``: whether this maintenance may take the lock and which stale lock it breaks
    (``run_lock.lock_plan``, the rule the MIG runbook follows too)."""
    plan = run_lock.lock_plan(COMMAND, holder, holder_gone, unfinished, break_lock)
    return {"refusal": plan["refusal"], "break_lock": plan["break_lock"]}


def done_nodes(record):
    """Node names a maintenance record says are done."""
    return sorted((key[len(NODE_FIELD):] for key, value in (record or {}).items()
                   if key.startswith(NODE_FIELD) and isinstance(value, dict) and value.get("status") == "done"),
                  key=natural_key)


def resume_plan(unfinished, change, resume=True):
    """``{"continues", "done", "fields", "supersede", "lines"}``: the newest unfinished maintenance run of the same
    ``change`` is continued (its done nodes are skipped), unless ``resume`` is false; every unfinished maintenance
    run is marked superseded at this run's end."""
    runs = [r for r in unfinished or [] if r.get("command") == COMMAND]
    out = {"continues": None, "done": [], "fields": {}, "supersede": [r["run_id"] for r in runs], "lines": []}
    for record in reversed(runs):
        same = ((record.get("maintenance") or {}).get("change") or {}) == change
        if resume and same and out["continues"] is None:
            out["continues"] = record["run_id"]
            out["done"] = done_nodes(record)
            # this run's record carries them, so that a run continuing this one skips them too
            out["fields"] = {NODE_FIELD + name: {"status": "done", "reason": "done by run %s" % record["run_id"]}
                             for name in out["done"]}
            out["lines"].append("continuing maintenance run %s (started %s by %s, state %s): %d node(s) done there "
                                "are skipped: %s" % (record["run_id"], record.get("started"), record.get("user"),
                                                     record.get("state"), len(out["done"]),
                                                     ", ".join(out["done"]) or "none"))
        else:
            why = "-e hpc_gres_maintenance_resume=false" if same else "another change"
            out["lines"].append("maintenance run %s did not finish; not continued (%s); its done nodes are done "
                                "again, nodes it left drained are picked up" % (record["run_id"], why))
    return out


_STEP = re.compile(r"^(?:[\w.]+ : )?Maintenance (\w+) \| ")


def failure_text(task_name, result):
    """``<step>: <what was found>`` for a failed task of a node's cycle: the step from the task's name
    (``Maintenance readiness | ...``), the verification's error findings (``present: declares 2 v100, nvidia-smi
    sees 1``) or the task's message."""
    match = _STEP.match(task_name or "")
    step = match.group(1) if match else (task_name or "unknown step")
    result = result or {}
    errors = [f for f in result.get("findings") or [] if isinstance(f, dict) and f.get("severity") == "error"]
    if errors:
        detail = "; ".join("%s: %s" % (f.get("check"), f.get("found")) for f in errors)
    else:
        detail = str(result.get("msg") or result.get("stderr") or "failed").strip()
        lines = [line.strip() for line in detail.splitlines() if line.strip()]
        detail = lines[0] if lines else "failed"
    return "%s: %s" % (step, detail)


def failure_plan(reason, task_name, result, node):
    """``{"text", "reason", "drain", "kept"}`` for a node whose cycle failed: what failed, the drain reason to
    leave it with, and whether to set it (not over a drain someone else set meanwhile, whose reason is ``kept``)."""
    text = failure_text(task_name, result)
    current = (node or {}).get("reason")
    drained = bool(set((node or {}).get("state_flags") or []) & DRAIN_FLAGS)
    others = drained and bool(current) and not is_ours(current, reason)
    return {"text": text, "reason": failure_reason(reason, text), "drain": not others,
            "kept": current if others else None}


def summary(targets, outcomes, plan, nodes, run_id, continues=None):
    """``{"state", "lines", "failed", "left"}`` of the run: per target node its outcome and slurmctld's view.

    ``targets``: node names; ``outcomes``: node to ``{status: done|failed|skipped, reason}`` set by the node
    cycle (missing: not reached); ``plan``: the last ``plan_waves`` (skipped and blocked nodes); ``nodes``:
    slurm_node records now.
    """
    lines, failed, left = [], [], []
    for name in sorted(targets, key=natural_key):
        outcome = outcomes.get(name) or {}
        status = outcome.get("status")
        record = nodes.get(name) or {}
        state = record.get("State", "?")
        # 24.11 and later keep the reason of a resumed node until a job runs there: shown only while it is out
        if record.get("reason") and record.get("State") and node_status(record, "")["unavailable"]:
            state += " (%s)" % record["reason"]
        if status == "done":
            text = "done"
        elif status == "failed":
            text = "FAILED, left drained: %s" % outcome.get("reason")
            failed.append(name)
        elif name in (plan.get("done") or []):
            text = "done (by the run this one continues)"
        elif name in (plan.get("skipped") or {}):
            text = "skipped: %s" % plan["skipped"][name]
            left.append(name)
        elif name in (plan.get("blocked") or {}):
            text = "not done, blocked: %s" % plan["blocked"][name]
            left.append(name)
        else:
            text = "not done%s" % (" (the run stopped: %s)" % plan["stopped"] if plan.get("stopped") else "")
            left.append(name)
        lines.append("%s: %s; slurmctld: %s" % (name, text, state))
    state = "done" if not failed and not left else "maintaining"
    head = "maintenance run %s%s: %d node(s), %d done, %d failed, %d not done" % (
        run_id, " (continuing %s)" % continues if continues else "", len(targets),
        len(targets) - len(failed) - len(left), len(failed), len(left))
    tail = []
    if failed:
        tail.append("the run is not finished: fix the failed nodes (sinfo -R shows why each is drained), then run the "
                    "same command again: it continues this run (done nodes are skipped, failed ones go first)")
    elif left:
        tail.append("the run is not finished: run the same command again once the nodes left can be taken; it "
                    "continues this run (done nodes are skipped)")
    return {"state": state, "lines": [head] + lines + tail, "failed": failed, "left": left}


def _assigned_strings(source, wanted):
    """Top-level (and class-level) ``NAME = "..."`` string assignments of a Python source."""
    out = {}
    for statement in ast.walk(ast.parse(source)):
        if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Constant) and \
                isinstance(statement.value.value, str):
            for target in statement.targets:
                if getattr(target, "id", None) in wanted:
                    out[target.id] = statement.value.value
    return out


def module_options(path, collection="hpc.slurm_gres"):
    """The option names a module of this collection documents, read without importing it: its DOCUMENTATION's
    options and those of the collection's doc fragments it extends."""
    with open(path, encoding="utf-8") as handle:
        doc = yaml.safe_load(_assigned_strings(handle.read(), ("DOCUMENTATION",)).get("DOCUMENTATION") or "") or {}
    names = set(doc.get("options") or {})
    fragments = os.path.join(os.path.dirname(os.path.abspath(path)), os.pardir, "doc_fragments")
    for fragment in doc.get("extends_documentation_fragment") or []:
        if not fragment.startswith(collection + "."):
            continue
        parts = fragment[len(collection) + 1:].split(".")
        try:
            with open(os.path.join(fragments, parts[0] + ".py"), encoding="utf-8") as handle:
                source = handle.read()
        except OSError:
            continue
        attribute = parts[1].upper() if len(parts) > 1 else "DOCUMENTATION"
        text = _assigned_strings(source, (attribute,)).get(attribute)
        names.update((yaml.safe_load(text or "") or {}).get("options") or {})
    return sorted(names)
