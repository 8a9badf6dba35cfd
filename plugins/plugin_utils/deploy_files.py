"""Which rendered file goes where in each config mode (files, configless, include), and how the restart planner
sees them.

The planner works on three slots, ``slurm.conf``, ``cgroup.conf`` and ``gres.conf``: what a daemon reads. In
include mode the collection's part of slurm.conf is the include file, so it takes the ``slurm.conf`` slot (it
parses as one: GresTypes, NodeName and PartitionName lines); in configless mode slurmd reads the cluster-wide
gres.conf slurmctld serves.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.restart_plan import (
    FILES,
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
