# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The run record's input and the end-of-run summary (pure; controller side).

``run_changes`` turns what the plays know per host (the files each daemon runs with, the files this run brings)
into the record the module ``gres_run`` keeps on the controller host: per host and file the previous and
new sha256, and each distinct previous content once (slurm.conf is the same on every host).

``run_summary`` says per host what it runs now, one line each, with the run id and the command that undoes or
finishes the run.
"""
from __future__ import annotations

import hashlib
import os
import pwd
import socket

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.config_modes import changed_files
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import reason_in_force


def _sha(text):
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_changes(nodes_running, nodes_new, names, ctl_running, ctl_new, node_dir="/etc/slurm", ctl_dir="/etc/slurm"):
    """``{"changes": {host: {node, roles, dir, files: {name: {previous, new, changed}}}}, "blobs": {sha: text}}``.

    Hosts whose files all stay the same are left out: the record names what the run changes. Every managed file
    of a changed host is kept (changed or not), so that a rollback puts back exactly what its daemons ran with.
    """
    changes, blobs = {}, {}

    def add(host, role, directory, running, new, node=None):
        files = {}
        for name in sorted(set(running) | set(new)):
            before, after = running.get(name), new.get(name)
            files[name] = {"previous": _sha(before), "new": _sha(after), "changed": before != after}
        if not any(f["changed"] for f in files.values()):
            return
        for name, text in running.items():
            if text is not None:
                blobs[_sha(text)] = text
        entry = changes.setdefault(host, {"node": None, "roles": [], "dir": directory, "files": {}})
        entry["roles"].append(role)
        if node:
            entry["node"] = node
        for name, sums in files.items():
            if name in entry["files"] and entry["files"][name]["changed"]:
                continue
            entry["files"][name] = sums

    for host in sorted(nodes_new):
        add(host, "slurmd", node_dir, nodes_running.get(host) or {}, nodes_new[host] or {}, names.get(host, host))
    for host in sorted(ctl_new):
        add(host, "slurmctld", ctl_dir, ctl_running.get(host) or {}, ctl_new[host] or {})
    return {"changes": changes, "blobs": blobs}


def install_lines(node_plans, ctl_plans, names):
    """One line per host whose install writes something, from its plan: the files that differ from the installed
    ones and the daemon restart it plans (a check run of a rollback says with them what the real one would do)."""
    lines = []
    for role, plans in (("slurmd", node_plans), ("slurmctld", ctl_plans)):
        for host in sorted(plans, key=natural_key):
            plan = plans[host] or {}
            if not plan.get("install"):
                continue
            files = plan.get("not_installed") if role == "slurmctld" else changed_files(
                plan.get("installed"), plan.get("new_files") or {}, plan.get("install_names") or [])
            if role == "slurmd":
                restart = "slurmd would restart" if plan.get("restart") else "slurmd runs them already"
            else:
                restart = ("slurmctld would restart" if plan.get("restart_before") or plan.get("restart_after")
                           else "slurmctld would reconfigure" if plan.get("reconfigure")
                           else "slurmctld runs them already")
            node = names.get(host)
            lines.append("%s%s: %s; %s" % (host, "" if node in (None, host) else " (node %s)" % node,
                                           ", ".join(files or []) or "the files' mode or owner", restart))
    return lines


def _changed(entry):
    return [name for name, sums in sorted(entry.get("files", {}).items()) if sums.get("changed")]


def _files_words(record):
    """What a host's files are called in the summary: a deploy's old and new files; a rollback puts back the files
    of before the run it undoes (its "new" files) over that run's own."""
    command = record.get("command") or "deploy"
    if command.startswith("rollback of "):
        undone = command[len("rollback of "):]
        return {"old": "the files of run %s" % undone, "new": "the files of before run %s" % undone,
                "NEW": "the files of before run %s" % undone}
    return {"old": "old files", "new": "new files", "NEW": "NEW files"}


def _reached_text(status, words):
    """What a host that answered has, by its phase (``host_status``)."""
    phase = status.get("phase") or "recorded"
    return {"recorded": "%s (nothing installed)" % words["old"],
            "installed": "%s installed, daemon NOT restarted" % words["NEW"],
            "restarted": words["new"] + ("" if status.get("restarted") is None else
                                         ", slurmd restarted" if status.get("restarted") else
                                         ", slurmd runs them already or its restart is pending"),
            "rolled_back": "%s again (rolled back), its daemon runs them" % words["old"],
            "rollback_failed": "ROLLBACK FAILED: %s" % (status.get("error") or "?")}.get(phase, phase)


def host_line(host, entry, status, node, words=None):
    """One line for a host of the record: which files it has now, its daemon, slurmctld's view of the node."""
    words = words or _files_words({})
    changed = ", ".join(_changed(entry)) or "no file"
    phase = status.get("phase") or "recorded"
    if status.get("unreachable") and phase == "rollback_failed":
        # failed or unreachable: the play cannot tell which; what it had when it left the run is known
        what = "NOT ROLLED BACK (failed or unreachable in this run: %s); last known: %s" % (
            status.get("error") or "?", _reached_text(status.get("before") or {}, words))
    elif status.get("unreachable"):
        files = {"recorded": "%s (unreachable before the install)" % words["old"],
                 "installed": "%s installed, daemon not restarted (unreachable after the install)" % words["NEW"],
                 "restarted": "%s (unreachable after its restart)" % words["new"],
                 "rolled_back": "%s (unreachable after the rollback)" % words["old"]}.get(phase, phase)
        what = "UNREACHABLE; last received: %s" % files
    else:
        what = _reached_text(status, words)
    line = "%s: %s [%s]" % (host, what, changed)
    if node is not None:
        state = node.get("State") or "?"
        line += "; slurmctld: %s %s" % (entry.get("node") or host, state)
        if node.get("reason") and reason_in_force(node.get("State")):
            line += " (drained or down: %s)" % node["reason"]
    return line


def host_status(host, entry, facts, reached, late):
    """``{phase, unreachable, error}`` of a host of the record, from the facts the roles published on it."""
    facts = facts or {}
    failure = facts.get("hpc_gres_run_failure") or {}
    if late:
        phase = "rolled_back" if reached and facts.get("hpc_gres_run_rolled_back") else "rollback_failed"
        error = (facts.get("hpc_gres_run_undo_skipped") or failure.get("msg")
                 or ("" if phase == "rolled_back" else "not reached by the rollback"))
        return {"phase": phase, "unreachable": not reached, "error": error,
                "before": host_status(host, entry, facts, True, False)}
    node_role = "slurmd" in (entry.get("roles") or [])
    installed = (facts.get("hpc_gres_slurmd_install_result") is not None
                 or facts.get("hpc_gres_slurmctld_install_result") is not None)
    restarted = facts.get("hpc_gres_slurmd_done") if node_role else (installed and reached)
    phase = "restarted" if restarted else ("installed" if installed else "recorded")
    return {"phase": phase, "unreachable": not reached, "error": "",
            "restarted": bool(facts.get("hpc_gres_slurmd_restarted")) if node_role else None}


def run_state(statuses):
    """The state a run that was not rolled back ends in: ``done`` when every host of the record restarted on the
    new files; ``restarted`` (not final) when a host was lost on the way; ``installed`` (not final) when every host
    answered but a node's restart step did not run (``--tags install``)."""
    statuses = list(statuses)
    if any(s["unreachable"] for s in statuses):
        return "restarted"
    return "done" if all(s["phase"] == "restarted" for s in statuses) else "installed"


def run_outcome(record, facts, reached, late, nodes=None, inventory_hint="-i INVENTORY"):
    """The run's final state, each host's status and the summary lines.

    ``facts``: host to the facts published on it; ``reached``: hosts still in the play (the others failed or were
    unreachable); ``late``: the run is being rolled back after a late failure.
    """
    hosts = record.get("hosts", {})
    statuses = {h: host_status(h, hosts[h], facts.get(h), h in reached, late) for h in hosts}
    if late:
        state = "rolled_back" if all(s["phase"] == "rolled_back" for s in statuses.values()) else "rollback_failed"
    else:
        state = run_state(statuses.values())
    lines = run_summary(dict(record, state=state), statuses, nodes or {}, inventory_hint)
    return {"state": state, "statuses": statuses, "lines": lines}


def run_summary(record, statuses, nodes, inventory_hint="-i INVENTORY"):
    """Lines: the run and its outcome, one line per host of the record, the command that undoes or finishes it.

    ``statuses``: ``{host: {"phase": recorded|installed|restarted|rolled_back|rollback_failed, "unreachable": bool,
    "error": text}}``; ``nodes``: slurm_node's ``nodes`` (node name to record) for the nodes of the record.
    """
    run_id = record.get("run_id", "?")
    state = record.get("state", "?")
    lines = ["run %s (%s by %s from %s, started %s): %s"
             % (run_id, record.get("command") or "deploy", record.get("user", "?"), record.get("control_host", "?"),
                record.get("started", "?"), state)]
    hosts = record.get("hosts", {})
    if not hosts:
        lines.append("no host changed the files its daemons run with")
    for host in sorted(hosts):
        entry = hosts[host]
        node = (nodes or {}).get(entry.get("node")) if entry.get("node") else None
        lines.append(host_line(host, entry, statuses.get(host, {}), node, _files_words(record)))
    undo = "ansible-playbook hpc.slurm_gres.rollback_gres %s -e hpc_gres_rollback=%s" % (inventory_hint, run_id)
    redo = "ansible-playbook hpc.slurm_gres.deploy_gres %s" % inventory_hint
    if state in ("rolled_back",):
        lines.append("the cluster runs the files it ran before this run; to try again: %s" % redo)
    elif state == "rollback_failed" or any(s.get("unreachable") or s.get("phase") == "installed"
                                           for s in statuses.values()):
        lines.append("to finish this run: %s (the next run finishes what this one left); to undo it: %s"
                     % (redo, undo))
    elif hosts:
        lines.append("to undo this run: %s" % undo)
    return lines


def process_is_ansible(pid):
    """Whether process ``pid`` of this machine runs Ansible (/proc), or at least exists (elsewhere)."""
    if not pid:
        return False
    if os.path.isdir("/proc/self"):
        try:
            with open("/proc/%d/cmdline" % int(pid), "rb") as handle:
                return b"ansible" in handle.read()
        except OSError:
            return False
    try:
        os.kill(int(pid), 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def lock_owner(command, holder=None, parent_pid=None):
    """Who runs this deploy, and whether the lock's ``holder`` is an interrupted run of this control machine.

    ``{"owner": {user, control_host, pid, command}, "holder_gone": bool}``: ``pid`` is ansible-playbook's (the
    parent of the worker process an action runs in); a holder ran from this machine and whose process no longer
    runs Ansible is gone, so its lock may be taken over (the next run finishes what it left).
    """
    try:
        user = os.environ.get("USER") or pwd.getpwuid(os.getuid())[0]
    except KeyError:
        user = str(os.getuid())
    owner = {"user": user, "control_host": socket.gethostname(),
             "pid": int(parent_pid if parent_pid is not None else os.getppid()), "command": command}
    gone = bool(holder) and holder.get("control_host") == owner["control_host"] and \
        not process_is_ansible(holder.get("pid"))
    return {"owner": owner, "holder_gone": gone}
