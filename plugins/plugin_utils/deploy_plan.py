# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy's cross-host decisions, made once each from what every host reported (pure; controller side).

``playbooks/deploy_gres.yml`` runs per host; whatever depends on *other* hosts is decided here, by the
``gres_plan`` action, and the plays only read the result:

``gate``       after every targeted node was read and verified (one ``gres_verify`` run each) and every controller's
               files and every daemon's version were read: the targets and their Slurm names; refused unless every
               targeted node passed and every daemon runs the release the files are rendered for (nothing is
               installed anywhere then); each controller's plan (when slurmctld restarts, before or after the slurmd
               restarts); refused when a node's Gres changes and no slurmctld is targeted, or slurm.conf changes the
               Gres of a node the run does not restart; the Gres each node must register with; in check mode, the
               report of what the deploy would do; the hosts the install and the slurmd restart plays run on (only
               those with something to do, so that a deploy that changes nothing evaluates no task per host there).
``restarted``  after the slurmd restarts: the nodes that did not finish (slurmctld then holds back new counts).
``registered`` after slurmctld's one read of every targeted node: the hosts to confirm one by one (not registered
               as declared yet); the others, those restarted in this run's batches included, are confirmed by that read.
``confirmed``  after the confirmation: the nodes the smoke test may use, the ones it should prefer, its sruns.

Each function takes ``state``: ``{host: {variable: value}}`` of what the hosts hold (``STAGE_FACTS``), and returns
the plan so far with ``refusal`` set (a message) when the deploy must stop.
"""
from ansible.module_utils.parsing.convert_bool import boolean

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import attributes_match
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import config_modes
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.restart_plan import (
    CTLD_ONLY_NODE_KEYS,
    SHARED_GRES,
    gpus_lost,
    gres_jobs_killed,
    nodes_removed,
    partitions_removed,
    state_changes,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_gres_used
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import version_problems
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import check_report
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.smoke import smoke_plan

# What the roles register: a node's one gres_verify run (verification, its files, its plan, slurmd -V), a
# controller's read of its files, the slurmctld/slurmdbd -V of every controller and slurmdbd host.
VERIFY = "hpc_gres_verify_result"
CTLD_READ = "hpc_gres_slurmctld_read"
CTLD_VERSIONS = "hpc_gres_slurmctld_versions"
STAGE_FACTS = {
    "gate": (VERIFY, CTLD_READ, CTLD_VERSIONS, "hpc_gres_slurmd_restart", "hpc_gres_slurmctld_restart",
             "hpc_gres_slurmctld_file_mode", "hpc_gres_slurmctld_file_owner", "hpc_gres_slurmctld_file_group",
             "hpc_gres_slurmctld_config_dir", "hpc_gres_slurmd_config_dir", "hpc_gres_slurmd_force_restart"),
    "restarted": ("hpc_gres_slurmd_done",),
    "confirmed": ("hpc_gres_slurmd_confirmed", "hpc_gres_slurmd_restarted", CTLD_READ),
}


def verified(result):
    """Whether a node's gres_verify run passed (a failed or skipped task, or none, did not; the deploy keeps a
    failure in the result, ``failed_when`` off, so that the gate judges every node at once: errors then)."""
    return (bool(result) and not result.get("failed") and not result.get("skipped") and "plan" in result
            and not result.get("errors"))


def _failure_text(host, name, result):
    """Why one node did not pass: the module's own message (its findings table, or what it could not read)."""
    if not result:
        return "host %s: no verification result (unreachable, or the verify step did not run there)" % host
    if result.get("skipped"):
        return "host %s: verification skipped (%s)" % (host, result.get("skip_reason") or "a condition was false")
    text = str(result.get("msg") or "did not pass verification").rstrip()
    first = text.split("\n", 1)[0]
    if host not in first and name not in first:
        text = "host %s: %s" % (host, text)
    stderr = str(result.get("module_stderr") or "").strip()
    if stderr:  # a module that crashed: the end of its traceback says why
        text += "\n" + "\n".join("    " + line for line in stderr.splitlines()[-8:])
    return text


def verify_failures(targets, names, results):
    """The lines saying why each targeted node did not pass verification, in the targets' order; nodes whose message
    is the same but for their own name share one copy of it, headed by their hostlist."""
    groups = {}
    for host in targets:
        if verified(results.get(host)):
            continue
        name = names.get(host, host)
        text = _failure_text(host, name, results.get(host))
        key = text.replace(host, "\0").replace(name, "\0")
        groups.setdefault(key, []).append((name, text))
    lines = []
    for members in groups.values():
        if len(members) > 1:
            nodes = hostlist.collect_hostlist(sorted((member[0] for member in members), key=natural_key))
            lines.append("%s: %d nodes, each with the findings below (shown for %s)"
                         % (nodes, len(members), members[0][0]))
        lines.extend(members[0][1].splitlines())
    return lines


def _given(files):
    return {name: text for name, text in (files or {}).items() if text is not None}


def node_installs(node_plan):
    """Whether the install step has anything to do on a node: files to install, or the files slurmd runs with to
    record (the first deploy by the role). The health check has its own step (``health_hosts``)."""
    return bool(node_plan.get("install") or (not node_plan.get("recorded") and _given(node_plan.get("running_files"))))


def selected(task_tags, run_tags=None, skip_tags=None):
    """Whether a task tagged ``task_tags`` runs under ``--tags run_tags --skip-tags skip_tags`` (the magic variables
    ansible_run_tags and ansible_skip_tags): ansible-core's rule (``Taggable.evaluate_tags``), step for step; a unit
    test compares the two on every combination of up to two tags."""
    untagged = not task_tags
    tags, only, skip = set(task_tags) or {"untagged"}, set(run_tags or ["all"]), set(skip_tags or [])
    run = ("always" in tags or ("all" in only and "never" not in tags) or bool(tags & only)
           or ("tagged" in only and not untagged and "never" not in tags))
    if run and skip:
        if "all" in skip:
            run = "always" in tags and "always" not in skip
        elif tags & skip:
            run = False
        elif "tagged" in skip and not untagged:
            run = False
    return run


def not_installed_refusal(targets, node_plans, names, config_dirs):
    """Why a run whose tags select the restart step but not the install step must not restart: the targeted nodes
    whose installed files are not the verified render, each with those files; None when there are none."""
    lines = ["%s (%s)" % (names[h], ", ".join("%s/%s" % (config_dirs.get(h) or "/etc/slurm", n)
                                              for n in node_plans[h]["not_installed"]))
             for h in targets if node_plans[h].get("not_installed")]
    if not lines:
        return None
    return ("the tags of this run select the slurmd restart but not the install, and %d node(s) have files other "
            "than the verified render installed: %s; expected the rendered files installed before slurmd restarts "
            "(run without --tags, or with --tags install,restart)" % (len(lines), "; ".join(lines)))


def node_restarts(node_plan, force=False):
    """Whether the restart step has anything to do on a node: a restart (due, forced or left for later), files
    not installed to refuse (a run with --tags restart), or new files to record as those slurmd runs with."""
    return bool(node_plan.get("restart") or force or node_plan.get("not_installed")
                or _given(node_plan.get("new_files")) != _given(node_plan.get("running_files")))


def controller_versions(results):
    """{host, daemon, version, error} of each ``DAEMON -V`` the controller role ran (its registered loop)."""
    out = []
    for item in (results or {}).get("results") or []:
        host, daemon = (item.get("item") or [None, None])[:2]
        ok = item.get("rc") == 0 and (item.get("stdout") or "").strip()
        error = None if ok else "%s -V: %s" % (daemon, ((item.get("stderr") or "").strip() or item.get("msg")
                                                        or "exit code %s" % item.get("rc")))
        out.append({"host": host, "daemon": daemon, "version": (item.get("stdout") or "").strip() if ok else "",
                    "error": error})
    return out


def controller_plan(files, read, targeted_nodes=None, mode="files", include_file=None, wanted=None):
    """A controller's plan for the rendered ``files``, from its ``config_tree`` read of the installed and recorded
    ones: ``config_modes.controller_plan`` plus ``new_files``, ``running_files`` (what slurmctld runs with, per
    file), ``recorded`` (this role recorded them before), ``install`` (the installed files are not the new ones
    with the ``wanted`` mode and owner), ``install_names`` and ``site`` (the installed slurm.conf and cgroup.conf,
    which decide device confinement in include mode)."""
    names = config_modes.controller_file_names(mode, include_file)
    new = {name: files.get(name) for name in names}
    contents = (read or {}).get("contents") or {}
    installed = contents.get("installed") or {}
    applied = {name: (contents.get("applied") or {}).get(name) for name in names}
    recorded = any(text is not None for text in applied.values())
    baseline = applied if recorded else {name: installed.get(name) for name in names}
    plan = config_modes.controller_plan(new, baseline, targeted_nodes, mode, include_file)
    not_installed = [n for n in names if new[n] is not None and installed.get(n) != new[n]]
    attributes = ((read or {}).get("attributes") or {}).get("installed") or {}
    wanted = wanted or {}
    plan.update(
        new_files=new,
        running_files={n: baseline.get(n) if baseline.get(n) is not None else installed.get(n) for n in names},
        recorded=recorded, install_names=names, not_installed=not_installed,
        install=bool(not_installed) or not all(
            attributes_match(attributes.get(n), wanted.get("mode", "0644"), wanted.get("owner", "root"),
                             wanted.get("group", "root")) for n in names if new[n] is not None),
        site={"slurm.conf": installed.get("slurm.conf"), "cgroup.conf": installed.get("cgroup.conf")})
    return plan


ALLOW = "-e hpc_gres_deploy_allow_state_change=true"


def _state_refusals(plan, node_plans, slot, allow_state_change, gate_run=True, partitions=True):
    """Why the run would make slurmctld or slurmd lose what they hold: every GPU of the cluster dropped (judged by
    the deploy's gate only), a partition removed (not judged for a rollback, ``partitions`` false: it may take away
    what its run added, on purpose), or restart_plan.STATE_OPTIONS changed. Nothing with ``allow_state_change``.
    ``slot``: the file that holds the node lines (slurm.conf, or the include file in include mode, where the site's
    slurm.conf is not the collection's). ClusterName and StateSaveLocation are judged on the targeted controllers
    (on a targeted node without one), SlurmdSpoolDir on every targeted node: each distinct pair of files once (the
    nodes of a cluster share them, and a slurm.conf of a thousand nodes takes tens of milliseconds to parse)."""
    if allow_state_change:
        return []

    def pair(files_running, files_new):
        return (files_running or {}).get(slot), (files_new or {}).get(slot)

    controllers = [(h,) + pair(p["running_files"], p["new_files"]) for h, p in plan["controller_plans"].items()]
    nodes = [(h,) + pair(node_plans[h].get("running_files"), node_plans[h].get("new_files")) for h in plan["targets"]]
    controllers = [p for p in controllers if p[1] is not None and p[2] is not None]
    nodes = [p for p in nodes if p[1] is not None and p[2] is not None]
    where = "the render" if gate_run else "the files to install"
    refusals = []
    host, running, new = (controllers + nodes + [(None, None, None)])[0]
    lost, absent = gpus_lost(running, new) if gate_run else ([], False)
    if lost:
        cause = ("none of them is in the render (renamed, or another inventory)" if absent else
                 "the inventory's GPU entries were not read (group_vars beside a playbook of your own are not read "
                 "by the collection's playbooks: put them beside the inventory, docs/inventory.md)")
        refusals.append("host %s: %s Gres: expected GPUs on the nodes that have them now (%s), found none on any of "
                        "them in the render: %s; every GPU job would be refused (to take the GPUs out, or rename "
                        "the nodes, on purpose: rerun with %s)"
                        % (host, slot, hostlist.collect_hostlist(lost), cause, ALLOW))
    ctl_host, ctl_running, ctl_new = (controllers or nodes[:1] or [(None, None, None)])[0]
    removed = partitions_removed(ctl_running, ctl_new) if partitions else []
    if removed:
        them = "it" if len(removed) == 1 else "them"
        refusals.append(
            "host %s: %s PartitionName: expected every partition slurmctld has now, found %s missing from %s: "
            "slurmctld fails the jobs queued or running in a partition it no longer has (NODE_FAIL, not "
            "requeued); add %s to hpc_gres_partitions, or, to remove %s on purpose, drain %s first (%s; then wait "
            "until squeue -p %s is empty) and rerun with %s"
            % (ctl_host, slot, ", ".join(removed), where, them, them, them,
               "; ".join("scontrol update PartitionName=%s State=DRAIN" % name for name in removed),
               ",".join(removed), ALLOW))
    gone = nodes_removed(ctl_running, ctl_new) if partitions else []
    if gone:
        names = hostlist.collect_hostlist(gone)
        refusals.append(
            "host %s: %s NodeName: expected every node of the %s slurmctld runs with, found %s missing from %s: "
            "slurmctld ends the jobs running on a node it no longer has (batch jobs requeued, the others NODE_FAIL) "
            "and the node leaves the cluster; add the host to the inventory's slurmd group (every node of the "
            "cluster is one; powered-down CLOUD or FUTURE nodes too: leave them out of a run with --limit), or, to "
            "remove it on purpose, drain it first (scontrol update NodeName=%s State=DRAIN Reason=removed; then wait "
            "until squeue -w %s is empty), stop its slurmd and rerun with %s"
            % (ctl_host, slot, slot, names, where, names, names, ALLOW))
    if slot != "slurm.conf":
        return refusals
    found = {}
    for judged, options in ((controllers or nodes[:1], ("ClusterName", "StateSaveLocation")),
                            (nodes, ("SlurmdSpoolDir",))):
        pairs = {}
        for host, running, new in judged:
            pairs.setdefault((running, new), []).append(host)
        for (running, new), hosts in pairs.items():
            for change in state_changes(running, new):
                if change[0] in options:
                    found.setdefault(change, []).extend(hosts)
    unset = "unset (Slurm's default)"
    for (option, before, after, consequence), hosts in found.items():
        if option == "ClusterName":
            fix = ("set hpc_gres_cluster_name (or import the cluster's files: docs/import.md); to rename the cluster "
                   "on purpose, stop slurmctld, remove the clustername file of StateSaveLocation (Slurm's own advice) "
                   "and rerun with %s" % ALLOW)
        else:
            fix = ("set it in hpc_gres_slurm_conf_options (the collection's default is a Debian path; an -e value "
                   "replaces the inventory's whole dict), or import the cluster's files (docs/import.md); having moved "
                   "the directory yourself, rerun with %s" % ALLOW)
        refusals.append(
            "host%s %s: slurm.conf %s: expected the value the daemons run with, %s, found %s in %s: %s; %s"
            % ("s" if len(hosts) > 1 else "", hostlist.collect_hostlist(hosts), option,
               unset if before is None else before, unset if after is None else after, where, consequence, fix))
    return refusals


def state_refusals_for_controller(host, controller_plan_, mode, include, allow_state_change, partitions=True):
    """_state_refusals for one controller's plan of files other than the gate's: the MIG runbook's step (rendered
    from the inventory, partitions judged), a rollback's previous files (``partitions`` false)."""
    return _state_refusals({"controller_plans": {host: controller_plan_}, "targets": []}, {},
                           include if mode == "include" else "slurm.conf", allow_state_change, gate_run=False,
                           partitions=partitions)


def gate(play_hosts, groups, render, state, check_mode=False, serial=None, steps=None, allow_state_change=False):
    """Targets, names, controllers and their plans, the refusal; see the module docstring.

    ``render``: the render result (``files``, ``nodes``: host to Slurm name, ``config_mode``, ``include_file``,
    ``summary.slurm_version``). ``steps``: ``{"install": bool, "restart": bool}``, whether this run's tags select
    each step (both by default). In check mode the refusal is kept as ``check_refusal`` and the plan carries the
    report of what the deploy would do (``report``: lines and diffs), with the refused nodes' diffs too; a real run
    that is not refused carries the report of what it does (lines only: the install shows its own diffs).
    """
    steps = dict({"install": True, "restart": True}, **(steps or {}))
    slurmd = set(groups.get("slurmd") or [])
    slurmctld = set(groups.get("slurmctld") or [])
    names = render.get("nodes") or {}
    files = render.get("files") or {}
    mode, include = render.get("config_mode") or "files", render.get("include_file")
    targets = [h for h in play_hosts if h in slurmd]
    controllers = [h for h in play_hosts if h in slurmctld]
    plan = {"targets": targets, "names": {h: names.get(h, h) for h in targets}, "controllers": controllers,
            "refusal": None}
    results = {h: state.get(h, {}).get(VERIFY) or {} for h in targets}
    plan["unverified"] = [h for h in targets if not verified(results[h])]
    plan["verify_failures"] = verify_failures(plan["unverified"], plan["names"], results)
    reasons = []
    if plan["unverified"]:
        reasons.append("%d of %d targeted node(s) did not pass verification: %s (their findings are above)"
                       % (len(plan["unverified"]), len(targets), ", ".join(plan["unverified"])))
    daemons = []
    read_by = [h for h in controllers if state.get(h, {}).get(CTLD_VERSIONS)] or [
        h for h in play_hosts if state.get(h, {}).get(CTLD_VERSIONS)]
    if read_by:
        daemons += controller_versions(state[read_by[0]][CTLD_VERSIONS])
    # named by inventory host, as every other refusal (gres_verify knows the node by its Slurm name)
    daemons += [dict(results[h]["daemon_version"], host=h) for h in targets if results[h].get("daemon_version")]
    release = (render.get("summary") or {}).get("slurm_version")
    problems = [str(p) for p in version_problems(release, daemons)] if release and daemons else []
    plan["version_problems"] = problems
    if problems:
        reasons.append("%d Slurm daemon(s) do not run Slurm %s (hpc_gres_slurm_version), the release the files are "
                       "rendered and proven for: %s" % (len(problems), release, "; ".join(problems)))

    node_plans = {h: results[h].get("plan") or {} for h in targets}
    plan["gres_changing"] = [h for h in targets if node_plans[h].get("gres_changed")]
    # as the role reads it (`| bool`)
    force = {h: boolean(state.get(h, {}).get("hpc_gres_slurmd_force_restart"), strict=False) for h in targets}
    plan["restart_hosts"] = [h for h in targets if node_restarts(node_plans[h], force[h])]
    installs = [h for h in targets if node_installs(node_plans[h])]
    plan["install_hosts"] = installs + [h for h in controllers if h not in installs]
    plan["health_hosts"] = [h for h in targets if (node_plans[h].get("health_install") or {}).get("needed")]
    if steps["restart"] and not steps["install"]:
        refusal = not_installed_refusal(
            plan["restart_hosts"], node_plans, plan["names"],
            {h: state.get(h, {}).get("hpc_gres_slurmd_config_dir") for h in targets})
        if refusal:
            reasons.append(refusal)
    plan["expected_gres"] = {plan["names"][h]: node_plans[h]["expected_gres"] for h in targets
                             if node_plans[h].get("expected_gres") is not None}
    targeted_names = sorted(plan["names"].values())
    plan["controller_plans"] = {}
    for host in controllers:
        facts = state.get(host, {})
        wanted = {"mode": facts.get("hpc_gres_slurmctld_file_mode", "0644"),
                  "owner": facts.get("hpc_gres_slurmctld_file_owner", "root"),
                  "group": facts.get("hpc_gres_slurmctld_file_group", "root")}
        plan["controller_plans"][host] = controller_plan(files, facts.get(CTLD_READ), targeted_names, mode, include,
                                                         wanted)
    reasons.extend(_state_refusals(plan, node_plans, include if mode == "include" else "slurm.conf",
                                   allow_state_change))
    held = _held_restart_refusals(plan, node_plans, state)
    if steps["restart"]:  # an install-only run restarts neither daemon: nothing can disagree
        reasons.extend(held)
    untargeted = sorted({n for p in plan["controller_plans"].values() for n in p["untargeted"]})
    if untargeted:
        reasons.append("slurm.conf changes the Gres of %s, which this run does not restart: expected every node whose "
                       "GRES definition changes among the targeted hosts (check --limit); restarting slurmctld "
                       "without them would drain them" % ", ".join(untargeted))
    plan["slurmctld_restart_after"] = any(p["restart_after"] for p in plan["controller_plans"].values())
    plan["check_gres_on_restart"] = not plan["slurmctld_restart_after"]
    if plan["gres_changing"] and not controllers:
        reasons.append("the Gres of %s changes, which needs slurmctld restarted, but no slurmctld host is targeted; "
                       "add the slurmctld group to --limit" % ", ".join(plan["names"][h] for h in plan["gres_changing"]))
    if reasons:
        plan["refusal"] = "nothing installed, nothing restarted: " + "; ".join(reasons)
    plan["job_loss"] = {} if allow_state_change or not steps["restart"] else job_loss(plan, release)
    if check_mode:
        plan["check_refusal"], plan["refusal"] = plan["refusal"], None
        plan["report"] = check_report.check_report(_report_entries(plan, state, files), plan["check_refusal"],
                                                   None if serial is None else str(serial))
    elif not plan["refusal"]:
        plan["report"] = check_report.check_report(_report_entries(plan, state, files), None,
                                                   None if serial is None else str(serial),
                                                   check_mode=False, would=not steps["install"],
                                                   header=_run_header(steps))
    # slurmctld aborts the jobs running on a node whose cores changed when it restarts (job_resources.c)
    layout = sorted({name for p in plan["controller_plans"].values()
                     for name in (p.get("slurm_conf") or {}).get("cores_changed") or {}}, key=natural_key)
    if plan.get("report") and layout:
        plan["report"]["lines"].append(
            "note: the cores (Sockets x CoresPerSocket) of %s change: slurmctld aborts the jobs running there when it "
            "restarts (\"change in "
            "socket/core configuration of allocated nodes\"); drain them and let their jobs end first"
            % hostlist.collect_hostlist(layout))
    # and kills the jobs of a GRES whose count on the node changes, or of a type the node no longer has (gres.c)
    for line in _gres_kill_notes(plan, release) if plan.get("report") else ():
        plan["report"]["lines"].append(line)
    changing = [plan["names"][h] for h in targets
                if "slurm.conf" in (node_plans[h].get("install_names") or ())
                and (node_plans[h].get("new_files") or {}).get("slurm.conf") is not None
                and (node_plans[h].get("new_files") or {}).get("slurm.conf")
                != (node_plans[h].get("installed") or {}).get("slurm.conf")]
    if plan.get("report") and changing and not controllers:
        plan["report"]["lines"].append(
            "note: slurm.conf changes on %s, but no slurmctld host is in this run: slurmctld keeps its slurm.conf "
            "(a partition or option change takes effect when a run includes the slurmctld group), and the hosts "
            "outside --limit keep theirs" % hostlist.collect_hostlist(changing))
    return plan


def _run_header(steps):
    """The first line of a real run's report, saying which steps the run's tags leave out."""
    passed = "Every targeted node passed verification. "
    if steps["install"] and steps["restart"]:
        return passed + "What this deploy does:"
    if steps["install"]:
        return passed + ("What this deploy does; the tags of this run leave out the restart step, so the restarts "
                         "below are left for a later run:")
    if steps["restart"]:
        return passed + ("The tags of this run leave out the install step (the installed files are the verified "
                         "ones). What a deploy would do, of which this run makes the restarts:")
    return passed + ("The tags of this run leave out the install and the restart steps: nothing is installed or "
                     "restarted. What a deploy would do:")


def _report_entries(plan, state, files):
    entries = []
    for host in plan["targets"]:
        facts = state.get(host, {})
        result = facts.get(VERIFY) or {}
        node_plan = result.get("plan")
        name = plan["names"][host]
        entries.append({
            "host": host, "name": name, "role": "slurmd", "verified": verified(result),
            "findings": result.get("findings"), "plan": node_plan,
            # a node whose installed files were not read (unreachable) shows no diff
            "config_dir": facts.get("hpc_gres_slurmd_config_dir", "/etc/slurm") if node_plan else None,
            "installed": (node_plan or {}).get("installed"),
            "new": {n: t for n, t in (node_plan or {}).get("new_files", {}).items()
                    if n in (node_plan or {}).get("install_names", ())},
            "restart_enabled": _restart_enabled(facts, "slurmd")})
    for host in plan["controllers"]:
        facts = state.get(host, {})
        ctl = plan["controller_plans"][host]
        read = facts.get(CTLD_READ)
        entries.append({
            "host": host, "name": host, "role": "slurmctld", "plan": ctl,
            "config_dir": facts.get("hpc_gres_slurmctld_config_dir", "/etc/slurm") if read else None,
            "installed": ((read or {}).get("contents") or {}).get("installed"),
            "new": ctl["new_files"] if read else {},
            "restart_enabled": _restart_enabled(facts, "slurmctld")})
    return entries


def _gres_kill_notes(plan, release):
    """The report's notes on the nodes where slurmctld's restart kills GPU jobs (restart_plan.gres_jobs_killed)."""
    counted, typed = {}, {}
    for ctl in plan["controller_plans"].values():
        killed = gres_jobs_killed(ctl.get("slurm_conf") or {}, release)
        for name, kinds in killed["count"].items():
            counted.setdefault(", ".join("gres/%s" % k for k in kinds), set()).add(name)
        for name, keys in killed["types"].items():
            typed.setdefault(", ".join(keys), set()).add(name)
    requeue = ("batch jobs are requeued and start over, --no-requeue, srun and salloc jobs end NODE_FAIL); drain them "
               "and let their jobs end first")
    lines = ["note: the %s count of %s changes: slurmctld kills the jobs using it there when it restarts (shard and "
             "MPS jobs on the GPUs too; \"count mismatch on node\"; %s"
             % (kinds, hostlist.collect_hostlist(sorted(names, key=natural_key)), requeue)
             for kinds, names in sorted(counted.items())]
    for keys, names in sorted(typed.items()):
        lines.append("note: %s no longer ha%s %s: slurmctld kills the jobs that asked for it when it restarts (\"type "
                     "not found on node\"; %s" % (hostlist.collect_hostlist(sorted(names, key=natural_key)),
                                                  "s" if len(names) == 1 else "ve", keys, requeue))
    return lines


def job_loss(plan, release):
    """``{node name: {"why": [text], "gres": [names], "cores": bool}}``: the nodes whose jobs slurmctld ends when it
    restarts in this run with the new files. ``gres``: a GRES count that changes, or a type the node no longer has
    (from 23.11; restart_plan.gres_jobs_killed): the jobs holding that GRES, or shards or MPS of it, are killed
    (gres.c); ``cores``: Sockets x CoresPerSocket change (restart_plan.node_cores): every job running there is
    aborted (job_resources.c valid_job_resources)."""
    out = {}

    def entry(name):
        return out.setdefault(name, {"why": set(), "gres": set(), "cores": False})

    for host, ctl in plan["controller_plans"].items():
        if not (ctl.get("restart_before") or ctl.get("restart_after")) or host in plan.get("held_controllers", ()):
            continue
        conf = ctl.get("slurm_conf") or {}
        killed = gres_jobs_killed(conf, release)
        for name, kinds in killed["count"].items():
            counts = dict((conf.get("gres_up") or {}).get(name) or {}, **((conf.get("gres_down") or {}).get(name) or {}))
            entry(name)["why"].add("its GRES count changes (%s)" % ", ".join(_count_changes(counts)))
            entry(name)["gres"].update(kinds)
        for name, keys in killed["types"].items():
            entry(name)["why"].add("it no longer has %s" % ", ".join(keys))
            entry(name)["gres"].update(key.split(":")[0] for key in keys)
        for name, (old, new) in (conf.get("cores_changed") or {}).items():
            entry(name)["why"].add("its cores change (Sockets x CoresPerSocket %s -> %s)" % (old, new))
            entry(name)["cores"] = True
    return {name: {"why": sorted(e["why"]), "gres": sorted(e["gres"]), "cores": e["cores"]}
            for name, e in out.items()}


def _alloc_tres(text):
    """``{TRES name: number}`` of ``AllocTRES=cpu=4,mem=8G,gres/gpu=2`` (a size counts as 1)."""
    out = {}
    for item in (text or "").split(","):
        key, _sep, value = item.partition("=")
        if key.strip():
            out[key.strip().lower()] = int(value) if value.isdigit() else (1 if value and value[0] != "0" else 0)
    return out


def node_jobs(node, loss=None):
    """What of a node read from slurmctld (``scontrol -d show node``, scontrol.parse_show_node) shows jobs that
    ``loss`` (a job_loss entry; every job when None) would end, or None.

    Any job: ALLOCATED or MIXED, CPUs allocated, or any TRES allocated (a suspended job keeps its memory and GRES
    while 22.05 shows the node IDLE). A job already completing is not revalidated (read_config.c). GRES only: the
    node's ``GresUsed`` of those GRES and of the shards and MPS they carry; without it, ``gres/NAME`` in AllocTRES;
    when neither says, any job."""
    try:
        cpus = int(node.get("CPUAlloc") or 0)
    except ValueError:
        cpus = 0
    tres = _alloc_tres(node.get("AllocTRES"))
    busy = ((node.get("state_base") or "").upper() in ("ALLOCATED", "MIXED") or cpus > 0
            or any(v for v in tres.values()))
    found = "State=%s CPUAlloc=%s%s%s" % (
        node.get("State"), node.get("CPUAlloc", "?"),
        " AllocTRES=%s" % node["AllocTRES"] if node.get("AllocTRES") else "",
        " GresUsed=%s" % node["GresUsed"] if node.get("GresUsed") else "")
    if not busy:
        return None
    if loss is None or loss.get("cores") or not loss.get("gres"):
        return found
    names = set(loss["gres"]) | set(SHARED_GRES)
    used = parse_gres_used(node.get("GresUsed"))
    if used is not None:
        return found if any(used.get(n) for n in names) else None
    if any(k.startswith("gres/") for k in tres):
        return found if any(v for k, v in tres.items() if k.split("/", 1)[-1].split(":")[0] in names
                            and k.startswith("gres/")) else None
    return found


def jobs_refusal(plan, read):
    """The refusal of a run whose slurmctld restart would end jobs (``plan["job_loss"]``) on nodes slurmctld shows
    busy in its one read (slurm_node's result ``read``); None when no such node has such a job. Nodes are grouped
    by what changes on them."""
    loss = plan.get("job_loss") or {}
    if read.get("failed") or not isinstance(read.get("nodes"), dict):
        names = hostlist.collect_hostlist(sorted(loss, key=natural_key))
        return ("nothing installed, nothing restarted: slurmctld: running jobs: expected to read %s from slurmctld "
                "(their GRES count or cores change, and slurmctld ends their jobs when it restarts), found "
                "scontrol failing: %s; start slurmctld and deploy again, or, when no job can run there, deploy with "
                "-e hpc_gres_deploy_allow_state_change=true" % (names, str(read.get("msg") or "no answer")[:300]))
    nodes = read["nodes"]
    groups = {}
    for name in sorted(loss, key=natural_key):
        found = node_jobs(nodes[name], loss[name]) if nodes.get(name) else None
        if found:
            groups.setdefault(" and ".join(loss[name]["why"]), []).append((name, found))
    if not groups:
        return None
    hosts = {name: host for host, name in (plan.get("names") or {}).items()}
    busy = sorted((n for members in groups.values() for n, _found in members), key=natural_key)
    names = hostlist.collect_hostlist(busy)
    parts = []
    for why, members in sorted(groups.items(), key=lambda g: natural_key(g[1][0][0])):
        shown = ["%s (host %s) %s" % (n, hosts.get(n, n), found) for n, found in members[:5]]
        more = " and %d more" % (len(members) - 5) if len(members) > 5 else ""
        parts.append("node%s %s: running jobs: expected none where %s, found %s%s" % (
            "s" if len(members) > 1 else "", hostlist.collect_hostlist([n for n, _f in members]), why,
            "; ".join(shown), more))
    return ("nothing installed, nothing restarted: %s. slurmctld ends those jobs when it restarts with the new "
            "slurm.conf (batch jobs are requeued and start over, --no-requeue, srun and salloc jobs end NODE_FAIL): "
            "drain the nodes (scontrol update nodename=%s state=drain reason=\"GRES change\"), wait until squeue -w "
            "%s shows no job and deploy again, then resume them (scontrol update nodename=%s state=resume); or "
            "deploy with -e hpc_gres_deploy_allow_state_change=true to let slurmctld end those jobs"
            % ("; ".join(parts), names, names, names))


def _restart_enabled(facts, role):
    # as the roles read it (`| bool`), true by default
    return boolean(facts.get("hpc_gres_%s_restart" % role, True), strict=False)


def _count_changes(counts):
    """``{gres key: [old, new]}`` (restart_plan's gres_up / gres_down) as ["gpu:a100 4 -> 8", ...]."""
    return ["%s %d -> %d" % (key, a, b) for key, (a, b) in sorted(counts.items())]


def _held_restart_refusals(plan, node_plans, state):
    """Sets ``held_nodes`` and ``held_controllers``: the targeted hosts whose daemon needs a restart that their
    ``hpc_gres_slurmd_restart`` / ``hpc_gres_slurmctld_restart`` false leaves for later. Refuses a held slurmd whose
    GRES count goes up while a slurmctld restarts: slurmctld would then expect the new count from a slurmd that
    still reports the old one and drain the node (a count that goes down is clamped, so it may wait). Refuses a
    held slurmctld where a node it would judge by its old definition (GRES, CPUs, memory, or added) restarts its
    slurmd on the new one: the two disagree and the confirmation fails. Hosts with the same change share one part."""
    plan["held_nodes"] = [h for h in plan["targets"]
                          if node_plans[h].get("restart") and not _restart_enabled(state.get(h, {}), "slurmd")]
    plan["held_controllers"] = [
        h for h, p in plan["controller_plans"].items()
        if (p.get("restart_before") or p.get("restart_after") or p.get("reconfigure"))
        and not _restart_enabled(state.get(h, {}), "slurmctld")]
    restarting_nodes = {plan["names"][h]: h for h in plan["targets"]
                        if node_plans[h].get("restart") and h not in plan["held_nodes"]}
    groups = {}
    for ctl in plan["held_controllers"]:
        changes = plan["controller_plans"][ctl].get("slurm_conf") or {}
        what = {name: "added" for name in changes.get("nodes_added") or ()}
        for name, keys in (changes.get("nodes_changed") or {}).items():
            counts = dict((changes.get("gres_down") or {}).get(name) or {})
            counts.update((changes.get("gres_up") or {}).get(name) or {})
            parts = _count_changes(counts)
            own = [k for k in keys if k not in CTLD_ONLY_NODE_KEYS and k != "gres"]
            parts += [", ".join(own) + " changed"] if own else []
            if parts:
                what[name] = "; ".join(parts)
        for name in set(what) & set(restarting_nodes):
            groups.setdefault((ctl, what[name]), []).append(restarting_nodes[name])
    refusals = [
        "host %s: hpc_gres_slurmctld_restart is false, but %s (%s) restart%s slurmd in this run: expected slurmctld "
        "restarted in this run, found it left for later; slurmctld would judge the node%s by the slurm.conf it runs "
        "with (a node that reports fewer GPUs or CPUs is drained, one that reports more has them left unused, an "
        "added node is refused) and the confirmation fails; let this run restart slurmctld, or install only (--tags "
        "install, or hpc_gres_slurmd_restart=false on %s as well) and restart both in a later run"
        % (ctl, hostlist.collect_hostlist(hosts), change, "s" if len(hosts) == 1 else "",
           "" if len(hosts) == 1 else "s", hostlist.collect_hostlist(hosts))
        for (ctl, change), hosts in sorted(groups.items())]
    restarting = [h for h, p in plan["controller_plans"].items()
                  if (p.get("restart_before") or p.get("restart_after")) and h not in plan["held_controllers"]]
    if not restarting:
        return refusals
    going_up = {}
    for ctl in plan["controller_plans"].values():
        going_up.update((ctl.get("slurm_conf") or {}).get("gres_up") or {})
    ups = {}
    for host in plan["held_nodes"]:
        up = going_up.get(plan["names"][host])
        if up:
            ups.setdefault(", ".join(_count_changes(up)), []).append(host)
    refusals += [
        "host %s: hpc_gres_slurmd_restart is false, but the GRES goes up (%s) and slurmctld restarts on %s: expected "
        "slurmd restarted in this run, found it left for later; slurmctld would expect the new count from a slurmd "
        "that still reports the old one and drain the node (\"gres/gpu count reported lower than configured\"); let "
        "this run restart slurmd there, or install only (--tags install, or hpc_gres_slurmctld_restart=false as "
        "well) and restart both in a later run"
        % (hostlist.collect_hostlist(hosts), change, ", ".join(restarting)) for change, hosts in sorted(ups.items())]
    return refusals


def held_unchanged(plan, node_plans, ctl_plans):
    """The hosts whose restart the gate found held (``held_nodes``, ``held_controllers``) and which have nothing to
    install: the run changes nothing there, so they are not the run's changes (else every later run would record
    the same pending restart again, and take the lock for it)."""
    nodes = {h for h in plan.get("held_nodes") or () if not node_installs(node_plans.get(h) or {})}
    return nodes | {h for h in plan.get("held_controllers") or () if not (ctl_plans.get(h) or {}).get("install")}


def restarted(plan, state):
    """The targeted nodes whose slurmd restart step did not finish in this run (by Slurm node name); the step ran
    on the ``restart_hosts`` of the gate only."""
    plan = dict(plan, refusal=None)
    plan["failed_nodes"] = [plan["names"][h] for h in plan.get("restart_hosts", plan["targets"])
                            if not state.get(h, {}).get("hpc_gres_slurmd_done")]
    return plan


def registered(plan, read, check_mode=False):
    """From slurmctld's one read of every targeted node (``slurm_node``'s ``nodes`` and ``verdicts``, or a skipped
    or failed read): ``confirm_hosts``, the targeted hosts to confirm one by one (not registered as declared: one
    that waits, a node this run restarted that slurmctld keeps DOWN, or a GRES-mismatch drain to resume),
    ``registered`` (node name to the confirmation of each other one, as the confirmation step would have set it)
    and ``registered_lines``. A node this run restarted had its new registration waited for in its batch, so the
    read confirms it like any other. In check mode nothing is confirmed."""
    plan = dict(plan, refusal=None)
    read = read or {}
    verdicts, nodes = read.get("verdicts") or {}, read.get("nodes") or {}
    confirm, done = [], {}
    for host in [] if check_mode else plan["targets"]:
        name = plan["names"][host]
        verdict = verdicts.get(name) or {}
        if verdict.get("status") != "ok":
            confirm.append(host)
        else:
            done[name] = {"status": "ok", "changed": False, "resumed": False, "waited": 0, "node": nodes.get(name),
                          "message": verdict.get("message", "")}
    plan["confirm_hosts"], plan["registered"] = confirm, done
    lines = []
    if done:
        lines.append("%d node(s) registered as declared (one scontrol read): %s"
                     % (len(done), hostlist.collect_hostlist(list(done))))
    if confirm:
        lines.append("%d node(s) to confirm one by one (not registered as declared yet): %s"
                     % (len(confirm), hostlist.collect_hostlist([plan["names"][h] for h in confirm])))
    plan["registered_lines"] = lines
    return plan


def confirmed(plan, state, files, mode="files"):
    """Nodes slurmctld shows registered (ok or resumed), not drained, not DOWN, idle ones and those this run
    restarted first, and the smoke test's sruns on them (one per GPU type; the site's own files decide confinement in include mode)."""
    plan = dict(plan, refusal=None)
    usable, preferred, busy = [], [], []
    for host in plan["targets"]:
        facts = state.get(host, {})
        confirm = facts.get("hpc_gres_slurmd_confirmed") or (plan.get("registered") or {}).get(
            plan["names"][host]) or {}
        if confirm.get("status") not in ("ok", "resumed"):
            continue
        node = confirm.get("node") or {}
        if "DRAIN" in (node.get("state_flags") or []) or node.get("state_base") == "DOWN":
            continue
        usable.append(plan["names"][host])
        if facts.get("hpc_gres_slurmd_restarted"):
            preferred.append(plan["names"][host])
        if node.get("state_base") in ("ALLOCATED", "MIXED") or "COMPLETING" in (node.get("state_flags") or []):
            busy.append(plan["names"][host])
    plan["smoke_nodes"] = usable
    plan["smoke_preferred_nodes"] = preferred
    site = None
    if mode == "include":
        sites = [p["site"] for p in (plan.get("controller_plans") or {}).values() if p.get("site")]
        site = sites[0] if sites else None
    plan["smoke"] = smoke_plan(files, usable, preferred, site, busy)
    return plan
