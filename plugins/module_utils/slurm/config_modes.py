"""Which rendered file goes where in each config mode (files, configless, include), and what a daemon needs for new
files: the one list of each mode's files, and the node's and the controller's restart plans built on it.

The planner works on three slots, ``slurm.conf``, ``cgroup.conf`` and ``gres.conf``: what a daemon reads. In
include mode the collection's part of slurm.conf is the include file, so it takes the ``slurm.conf`` slot (it
parses as one: GresTypes, NodeName and PartitionName lines); in configless mode slurmd reads the cluster-wide
gres.conf slurmctld serves.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.restart_plan import (
    FILES,
    controller_plan as slurm_conf_plan,
    expected_gres,
    install_needed,
    node_restart_plan,
    same_meaning,
    slurm_conf_changes,
)

MODES = ("files", "configless", "include")


def node_file_names(mode, include_file):
    """(installed on the node, recorded as what slurmd runs with): file names under the config/state dirs."""
    if mode == "configless":
        return [], ["gres.conf", "cgroup.conf", "slurm.conf"]
    if mode == "include":
        return ["gres.conf", include_file], ["gres.conf", include_file]
    return ["gres.conf", "cgroup.conf", "slurm.conf"], ["gres.conf", "cgroup.conf", "slurm.conf"]


def controller_file_names(mode, include_file):
    """Files installed on (and recorded for) slurmctld hosts."""
    if mode == "configless":
        return ["cgroup.conf", "gres.conf", "slurm.conf"]
    if mode == "include":
        return [include_file]
    return ["cgroup.conf", "slurm.conf"]


def node_files(files, node_name, mode="files", include_file=None):
    """{file name: rendered text or None} of what slurmd on ``node_name`` runs with (the recorded names)."""
    _unused, names = node_file_names(mode, include_file)
    sources = {"slurm.conf": "slurm.conf", "cgroup.conf": "cgroup.conf",
               "gres.conf": "gres.conf" if mode == "configless" else "%s/gres.conf" % node_name}
    if include_file:
        sources[include_file] = include_file
    return {name: files.get(sources[name]) for name in names}


def plan_slots(by_name, mode="files", include_file=None):
    """{slurm.conf, cgroup.conf, gres.conf} the planner compares, from files keyed by their names on disk."""
    by_name = by_name or {}
    if mode == "include":
        return {"slurm.conf": by_name.get(include_file), "cgroup.conf": None, "gres.conf": by_name.get("gres.conf")}
    return {name: by_name.get(name) for name in FILES}


def configless_restart(applied, new):
    """Configless mode: slurmctld serves slurm.conf, gres.conf and cgroup.conf to the nodes as it read them at its
    start, so when any of them changes in meaning slurmctld must restart before the nodes' slurmd (which fetch
    them when they start). ``applied``/``new``: {file name: text or None} on the controller. Returns reasons."""
    reasons = []
    if slurm_conf_changes(applied.get("slurm.conf"), new.get("slurm.conf"))["changed"]:
        reasons.append("slurm.conf changed")
    if not same_meaning("cgroup.conf", None, applied, new):
        reasons.append("cgroup.conf changed")
    if applied.get("gres.conf") != new.get("gres.conf"):
        nodes = set()
        for text in (applied.get("slurm.conf"), new.get("slurm.conf")):
            if text:
                nodes.update(parse_slurm_conf(text)["nodes"])
        changed = sorted(n for n in nodes if not same_meaning("gres.conf", n, applied, new))
        if changed:
            reasons.append("gres.conf changed for %s (configless nodes fetch it from slurmctld)" % ", ".join(changed))
    return reasons


def deploy_files(files, role, node_name=None, mode="files", include_file=None):
    """``{"install": [names], "record": [names], "files": {name: text or None}}`` of a node or controller in
    ``mode``: what is installed in the config directory, what is recorded as what the daemon runs with, and the
    rendered text of each (``files``: the render's files, ``<node>/gres.conf`` for a node's own gres.conf)."""
    if mode not in MODES:
        raise ValueError("config mode: expected one of %s, found %r" % (", ".join(MODES), mode))
    if role == "node":
        install, record = node_file_names(mode, include_file)
        return {"install": install, "record": record, "files": node_files(files, node_name, mode, include_file)}
    if role == "controller":
        names = controller_file_names(mode, include_file)
        return {"install": names, "record": names, "files": {n: files.get(n) for n in names}}
    raise ValueError("role: expected node or controller, found %r" % (role,))


def node_plan(new, applied, node_name, installed=None, installed_attributes=None, wanted=None, mode="files",
              include_file=None):
    """Whether slurmd on ``node_name`` must restart for the ``new`` files, and whether anything is to be installed.

    ``new``/``applied``/``installed``: {file name on disk: text or None} (the include file in include mode);
    ``installed_attributes``: their ``file_tree.file_attributes``; ``wanted``: {mode, owner, group} of the install.
    Returns ``node_restart_plan``'s dict plus ``expected_gres``/``applied_gres`` (the Gres slurm.conf declares for
    the node now and before), ``gres_changed``, ``not_installed`` (new files whose installed text differs; with
    ``installed``) and ``install`` (false only when every new file is installed with the wanted attributes, and
    in configless mode, which installs nothing on the node). ValueError (ConfSyntaxError) on unreadable files.
    """
    by_name = new
    new, applied = plan_slots(by_name, mode, include_file), plan_slots(applied, mode, include_file)
    plan = node_restart_plan(node_name, applied, new)
    plan["expected_gres"] = expected_gres(new["slurm.conf"], node_name)
    plan["applied_gres"] = expected_gres(applied["slurm.conf"], node_name)
    plan["gres_changed"] = plan["expected_gres"] != plan["applied_gres"]
    names = node_file_names(mode, include_file)[0]
    if installed is not None:
        ordered = [n for n in FILES if n in names] + [n for n in names if n not in FILES]
        plan["not_installed"] = [name for name in ordered
                                 if by_name.get(name) is not None and installed.get(name) != by_name[name]]
    to_install = {n: by_name.get(n) for n in names}
    plan["install"] = bool(to_install) and install_needed(to_install, plan.get("not_installed"),
                                                          installed_attributes, wanted)
    return plan


def controller_plan(new, applied, targeted_nodes=None, mode="files", include_file=None):
    """When slurmctld restarts (before or after the slurmd restarts) or reconfigures for the ``new`` files.

    ``new``/``applied``: {file name on disk: text or None} of the controller's files in ``mode``. The node and
    partition lines are read from slurm.conf, or the include file in include mode. In configless mode slurmctld
    serves slurm.conf, gres.conf and cgroup.conf to the nodes as it read them at its start, so any change in
    meaning restarts it before the slurmd restarts, never after. See ``restart_plan.controller_plan``.
    """
    slot = include_file if mode == "include" else "slurm.conf"
    plan = slurm_conf_plan(applied.get(slot), new.get(slot),
                           list(targeted_nodes) if targeted_nodes is not None else None)
    if mode == "configless":
        reasons = configless_restart(applied, new)
        if reasons or plan["restart_after"]:
            plan["reasons"] = sorted(set(plan["reasons"]) | set(reasons))
            plan.update(restart_before=True, restart_after=False, reconfigure=False)
    return plan


def changed_files(installed, new, names):
    """Files (of ``names``) whose new text differs from the installed one; a file with no new text is left alone."""
    return [name for name in names if new.get(name) is not None and (installed or {}).get(name) != new.get(name)]
