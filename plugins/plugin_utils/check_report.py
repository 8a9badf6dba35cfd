# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What a check run (``deploy-gres.yml --check --diff``) says the deploy would do, and what a real run says it does
before it installs anything (pure; controller side).

One report for the whole run, made once after the restart plans: a verdict per node (would install / would be
refused with the finding / unchanged), the restarts in the order the deploy would make them, and the unified
diff of every file that would change. Nodes with the same verdict share one line and nodes with the same diff of
the same file share one diff, each headed by a Slurm hostlist, so 500 identical slurm.conf changes read as one.

Input per host (the action gathers it from the facts the roles publish):
``{"host", "name" (Slurm node name or inventory host), "role": "slurmd"|"slurmctld", "config_dir",
"installed": {file: text or None}, "new": {file: text or None}, "verified": bool (slurmd only),
"findings": [gres_verify findings] (slurmd only), "plan": hpc_gres_slurmd_plan / hpc_gres_slurmctld_plan
or None, "restart_enabled": bool (False with hpc_gres_slurmd_restart / hpc_gres_slurmctld_restart false)}``.
"""
import difflib

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.hostlist import collect_hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.config_modes import changed_files

NODE_FILES = ("slurm.conf", "cgroup.conf", "gres.conf")
CONTROLLER_FILES = ("slurm.conf", "cgroup.conf")

UNCHANGED = "unchanged"
# A check run's report says what the deploy would do; a real run's, what it does (it was verified and not refused).
WOULD = {"install": "would install", "reset": "would reset", "restart": "slurmd would restart",
         "no_restart": "slurmd would not restart"}
DOES = {"install": "installs", "reset": "resets", "restart": "slurmd restarts", "no_restart": "slurmd does not restart"}


def node_new_files(files, node_name, gres_conf_text=None):
    """The files a node would get: slurm.conf and cgroup.conf of the render, its gres.conf (a MIG node's as its
    verification wrote it) or None when it has no GPUs."""
    gres = gres_conf_text if gres_conf_text is not None else files.get(node_name + "/gres.conf")
    return {"slurm.conf": files.get("slurm.conf"), "cgroup.conf": files.get("cgroup.conf"), "gres.conf": gres}


def _lines(text):
    lines = (text or "").splitlines(True)
    if lines and not lines[-1].endswith("\n"):
        lines[-1] += "\n"
    return lines


def unified_diff(path, old, new, where):
    """The unified diff of one file, installed -> rendered; ``where`` names the hosts (a hostlist)."""
    old_label = "%s on %s (installed)" % (path, where) if old is not None else "/dev/null (%s: not installed)" % where
    return "".join(difflib.unified_diff(_lines(old), _lines(new), old_label, "%s (would be installed)" % path))


def hosts_label(names):
    """A Slurm hostlist of ``names`` (natural order)."""
    return collect_hostlist(sorted(set(names), key=natural_key))


def _finding_text(findings):
    errors = [f for f in findings or [] if f.get("severity") == "error"]
    if not errors:
        return "verification failed (see its output above)"
    first = errors[0]
    text = "%s: expected %s, found %s" % (first.get("check"), first.get("expected"), first.get("found"))
    if len(errors) > 1:
        text += " (and %d more error(s) above)" % (len(errors) - 1)
    return text


def node_verdict(entry, refused, would=True):
    """One line for a node: what the deploy would do there (``would``), or does."""
    words = WOULD if would else DOES
    if not entry.get("verified"):
        return "would be refused at verify: " + _finding_text(entry.get("findings"))
    changed = changed_files(entry.get("installed"), entry.get("new"), NODE_FILES)
    if refused:
        return ("passes verification; %s nothing: the deploy is refused" % words["install"] if changed or
                (entry.get("plan") or {}).get("restart") else UNCHANGED)
    plan = entry.get("plan") or {}
    parts = []
    if changed:
        parts.append("%s %s" % (words["install"], ", ".join(changed)))
    elif plan.get("install"):
        parts.append("%s the mode or owner of the installed files" % words["reset"])
    if plan.get("restart") and entry.get("restart_enabled", True):
        parts.append("%s (%s)" % (words["restart"], "; ".join(plan.get("reasons") or [])))
    elif plan.get("restart"):
        parts.append("slurmd restart needed (%s), left for a later run: hpc_gres_slurmd_restart is false"
                     % "; ".join(plan.get("reasons") or []))
    elif changed:
        parts.append(words["no_restart"])
    health = plan.get("health_install") or {}
    extras = [what for what, needed in (
        ("the GPU health check", health.get("library") or health.get("launcher") is not None
         or health.get("nhc") is not None),
        ("the boot order of slurmd", (health.get("boot") or {}).get("needed"))) if needed]
    if extras:
        parts.append("%s %s" % (words["install"], " and ".join(extras)))
    return "; ".join(parts) if parts else UNCHANGED


def controller_verdict(entry, refused, would=True):
    words = WOULD if would else DOES
    changed = changed_files(entry.get("installed"), entry.get("new"), CONTROLLER_FILES)
    plan = entry.get("plan") or {}
    pending = plan.get("restart_before") or plan.get("restart_after") or plan.get("reconfigure")
    if not changed and pending and not entry.get("restart_enabled", True):
        return ("slurmctld host: files installed; slurmctld restart needed (%s), left for a later run: "
                "hpc_gres_slurmctld_restart is false" % "; ".join(plan.get("reasons") or []))
    if not changed:
        return "slurmctld host: " + UNCHANGED
    if refused:
        return "slurmctld host: %s nothing: the deploy is refused" % words["install"]
    held = "" if entry.get("restart_enabled", True) else "; hpc_gres_slurmctld_restart is false: no restart or reconfigure"
    return "slurmctld host: %s %s%s" % (words["install"], ", ".join(changed), held)


def restart_steps(entries, serial=None):
    """The restarts in the order the deploy makes them (docs/deploy.md, "The order, and why")."""
    controllers = [e for e in entries if e["role"] == "slurmctld" and e.get("restart_enabled", True)]
    nodes = [e for e in entries if e["role"] == "slurmd" and (e.get("plan") or {}).get("restart")
             and e.get("restart_enabled", True)]

    def ctld(flag, label, reasons):
        steps = []
        for entry in controllers:
            plan = entry.get("plan") or {}
            if plan.get(flag):
                why = plan.get(reasons, plan.get("reasons")) or []
                steps.append("slurmctld on %s: %s (%s)" % (entry["name"], label, "; ".join(why)))
        return steps

    steps = ctld("restart_before", "restart before the slurmd restarts", "reasons_before")
    if nodes:
        batches = " in batches of %s" % serial if serial not in (None, "") else ""
        steps.append("slurmd on %s: restart%s, each registration confirmed with scontrol"
                     % (hosts_label([e["name"] for e in nodes]), batches))
    steps += ctld("restart_after", "restart after the slurmd restarts", "reasons_after")
    steps += ctld("reconfigure", "scontrol reconfigure", "reasons")
    return steps


def _diff_groups(entries):
    """{(path, old, new): [names]} of every file that would change, in a stable order."""
    groups = {}
    for entry in entries:
        names = NODE_FILES if entry["role"] == "slurmd" else CONTROLLER_FILES
        base = (entry.get("config_dir") or "/etc/slurm").rstrip("/")
        for name in changed_files(entry.get("installed"), entry.get("new"), names):
            key = (base + "/" + name, (entry.get("installed") or {}).get(name), entry["new"][name])
            groups.setdefault(key, []).append(entry["name"])
    return groups


def check_report(entries, refusal=None, serial=None, check_mode=True, header=None, would=None):
    """The report of a check run; with ``check_mode`` false, that of a real run the gate let through (no diffs: the
    install shows its own). ``would`` (default ``check_mode``): the verdicts say what the deploy would do, else
    what it does. ``header`` replaces the first line.

    Returns ``{"lines": [...], "diffs": [unified diff text, ...], "verdicts": {"slurmd"|"slurmctld": {name: verdict}},
    "would_change": {name: [paths]}, "restarts": [step, ...], "refusal": refusal}``; ``refusal`` (the gate's
    message, deferred to the end of a check run) means nothing would be installed or restarted.
    """
    entries = sorted(entries, key=lambda e: (e["role"] != "slurmctld", natural_key(e["name"])))
    refused = bool(refusal)
    verdicts, by_verdict = {"slurmd": {}, "slurmctld": {}}, {}
    would = check_mode if would is None else would
    for entry in entries:
        verdict = (node_verdict(entry, refused, would) if entry["role"] == "slurmd"
                   else controller_verdict(entry, refused, would))
        verdicts[entry["role"]][entry["name"]] = verdict
        by_verdict.setdefault(verdict, []).append(entry["name"])
    groups = _diff_groups(entries)
    would_change = {}
    diffs = []
    for (path, old, new), names in groups.items():
        for name in names:
            if path not in would_change.setdefault(name, []):
                would_change[name].append(path)
        if check_mode:
            diffs.append(unified_diff(path, old, new, hosts_label(names)))
    steps = [] if refused else restart_steps(entries, serial)
    lines = [header or ("check mode: nothing was changed. What this deploy would do:" if check_mode else
                        "Every targeted node passed verification. What this deploy does:")]
    width = max([len(hosts_label(names)) for names in by_verdict.values()] + [4])
    for verdict, names in by_verdict.items():
        lines.append("  %-*s  %s" % (width, hosts_label(names), verdict))
    if refused:
        lines.append("restarts: none, nothing would be installed or restarted: " + refusal)
    elif steps:
        lines.append("restarts, in this order:")
        lines += ["  %d. %s" % (i, step) for i, step in enumerate(steps, 1)]
    else:
        lines.append("restarts: none")
    if would_change and not check_mode:
        shown = "" if would else "; --diff shows each host's changes as they are installed"
        lines.append("files change on %d host(s)%s" % (len(would_change), shown))
    elif diffs:
        lines.append("%d file change(s) on %d host(s), shown once per group of identical changes%s"
                     % (len(diffs), len(would_change), " (the diffs of a refused deploy: not installed)"
                        if refused else ""))
    return {"lines": lines, "diffs": diffs, "verdicts": verdicts, "would_change": would_change,
            "restarts": steps, "refusal": refusal}
