# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Render once: inventory -> model -> proven files, and the small maps the deploy plays read (controller only).

This is the body of the ``gres_render`` action. The model is built and consumed here and never leaves:
what the plays get is the files, a summary, ``{host: node name}`` (the node-name rule applied once, by the model)
and, for hosts whose GPUs have a ``model`` or ``mig``, what the node and the MIG runbook need to render its
gres.conf again from live MIG facts (``spec``) and to apply its layout (``layouts``, ``models``).
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.health_program import deploy_health
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import model_from_inventory
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import step_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import report_lines
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import CLUSTER_VARS
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import gres_spec, render_all, summarize
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import inventory_guide_files

# The fact a host carries once the MIG runbook has read its GPUs (role hpc_gres_mig, entry point read).
MIG_LIVE_FACT = "hpc_gres_mig_live"


def cluster_vars(variables, template=None, host="localhost"):
    """The cluster-wide variables (``model.CLUSTER_VARS``, the one list) from a host's variables, templated.

    Raises GresError naming ``host`` and each variable whose template fails.
    """
    template = template or (lambda value: value)
    values = {}
    problems = []
    for name in CLUSTER_VARS:
        if name in variables:
            try:
                values[name] = template(variables[name])
            except Exception as exc:  # Ansible's templating raises many types; each message names its cause
                problems.append(Problem(host, name, "a value whose template renders", " ".join(str(exc).split())))
    if problems:
        raise GresError(problems)
    return values


def mig_node(model, node):
    """What a host with MIG-capable GPUs needs on its own: its gres spec, GPU layouts and models."""
    return {
        "name": node["name"],
        "spec": gres_spec(model, node),
        "layouts": {g["index"]: list(g["mig"]) if g["mig"] else None for g in node["gpus"]},
        "models": {g["index"]: g["model"] for g in node["gpus"] if g["model"]},
    }


def render_cluster(hostvars, groups, cluster, cluster_host="localhost", mig_step=None, live=None, into=None,
                   where=None, conflicts=None):
    """Validate, render and prove; return ``{"files", "summary", "nodes", "mig_nodes", "config_mode",
    "include_file", "health", "boot"}``.

    The files are slurm.conf, cgroup.conf, every ``<node>/gres.conf`` and the users' guide (``USERS.md``,
    ``USERS.motd``, from the same model). ``mig_step`` (an inventory host) renders one step of the MIG runbook
    instead: that host with the layout the inventory declares, every host in ``live`` (``{host: {gpu index:
    [profiles] or None}}``) with the layout its GPUs have now, and no guide (a step is not what users get).
    ``into`` and ``where`` as ``model_from_inventory`` takes them (the warnings are located with ``where``);
    ``conflicts(hosts)``: more warnings about the inventory's hosts (``VarOrigins.sibling_conflicts``).
    Raises GresError (inventory, guide directory or proof) or TypeError (bad arguments).
    """
    model = model_from_inventory(hostvars, groups, cluster, cluster_host, into=into, where=where)
    if conflicts is not None:
        model["warnings"] = report_lines(conflicts([node["host"] for node in model["nodes"]]), where) + \
            model["warnings"]
    if mig_step is not None:
        model = step_model(model, mig_step, live or {})
    files = render_all(model)
    if mig_step is None:
        files.update(inventory_guide_files(model, hostvars, groups))
    return {
        "files": files,
        "summary": summarize(model, files),
        "nodes": {node["host"]: node["name"] for node in model["nodes"]},
        "mig_nodes": {node["host"]: mig_node(model, node) for node in model["nodes"]
                      if any(g["model"] or g["mig"] for g in node["gpus"])},
        # how the files reach the daemons (files, configless, include): the roles install per this
        "config_mode": model["config_mode"],
        "include_file": model["include_file"],
        # the GPU health check the deploy installs and wires (docs/health.md)
        "health": deploy_health(model["health"]),
        # the GPU boot order of slurmd the deploy installs on the GPU nodes (docs/boot.md)
        "boot": model["boot"],
    }


def tree_lines(written, check_mode=False):
    """What writing the render directory did (file_tree.apply_owned_tree's result), for the summary: the counts,
    then each file removed because the render no longer writes it (a node taken out of the inventory)."""
    removed = written.get("removed") or []
    counts = "%d changed, %d unchanged, %d removed, in %s" % (
        len(written["written"]), written["unchanged"], len(removed), written["dest"])
    if check_mode:
        lines = ["check mode, nothing written: " + counts.replace(" changed", " would change", 1)
                 .replace(" removed", " would be removed", 1)]
    else:
        lines = ["written: " + counts]
    lines.extend("%s: %s (the render no longer writes it)" % ("would remove" if check_mode else "removed", rel)
                 for rel in removed)
    return lines
