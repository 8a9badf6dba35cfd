"""The MIG runbook's controller-side decisions (pure logic): what the GPUs have now, the model of one step.

The runbook (role ``hpc_gres_mig``) changes one node at a time. While it works on one node, slurm.conf must
carry that node's new ``Gres=`` and every other node's ``Gres=`` as its GPUs are *now*, or slurmctld would drain
the nodes whose turn has not come. :func:`step_model` builds the model of one step from it, and :func:`runbook_status` decides whether a
node needs the runbook at all (so a rerun continues where a run stopped).
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.gres_conf import node_gres_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import DRAIN_FLAGS, same_drain_reason


def step_model(model, host, live):
    """The cluster model for one step of a serial MIG reconfiguration.

    ``host`` (an inventory host) keeps the layout the inventory declares; every other host named in ``live``
    (``{host: {gpu index: [profiles] or None}}``, see ``mig.plan.live_layouts``) gets the layout its GPUs have now,
    so the slurm.conf of this step changes the Gres of ``host`` only. Hosts not in ``live`` keep the inventory's
    layout. Returns a new model; the input is not changed.
    """
    nodes = []
    for node in model["nodes"]:
        have = live.get(node["host"]) if node["host"] != host else None
        if have is None:
            nodes.append(node)
            continue
        have = {int(k): v for k, v in have.items()}
        gpus = []
        for gpu in node["gpus"]:
            gpu = dict(gpu)
            if gpu["index"] in have:
                gpu["mig"] = list(have[gpu["index"]]) if have[gpu["index"]] else None
            gpus.append(gpu)
        nodes.append(dict(node, gpus=gpus))
    return dict(model, nodes=nodes)


def runbook_status(host, check, node, files_read, step, reason):
    """Whether the MIG runbook can leave ``host`` alone: ``{"done": bool, "why": [...], "ours": bool}``.

    ``check``: the node's ``mig_layout`` check-mode result (``changed``, ``hw``); ``node``: its
    ``slurm_node`` record; ``files_read``: ``config_tree`` read of the installed and the applied (what slurmd
    last started with) ``gres.conf`` and ``slurm.conf``; ``step``: the step's ``gres_render`` result;
    ``reason``: the runbook's drain reason. The node is done when its GPUs have the declared layout, the gres.conf
    rendered from its live MIG devices is installed and is what slurmd runs with, slurm.conf is the step's, and it
    is not drained by the runbook (a run that stopped after the drain is finished by the next).
    """
    why = []
    flags = set((node or {}).get("state_flags") or [])
    ours = bool(flags & DRAIN_FLAGS) and same_drain_reason((node or {}).get("reason"), reason)
    if check.get("changed"):
        why.append("the GPUs do not have the declared MIG layout")
    installed = (files_read.get("contents") or {}).get("installed") or {}
    applied = (files_read.get("contents") or {}).get("applied") or {}
    try:
        gres = node_gres_conf(step["mig_nodes"][host]["spec"], check.get("hw"))
    except GresError as exc:
        gres = None
        if not why:
            why.append(str(exc))
    if gres is not None:
        if gres != installed.get("gres.conf"):
            why.append("the installed gres.conf is not the one the live MIG devices give")
        elif gres != (applied.get("gres.conf") or installed.get("gres.conf")):
            why.append("slurmd does not run with the installed gres.conf yet")
    if step["files"]["slurm.conf"] != installed.get("slurm.conf"):
        why.append("slurm.conf is not this step's")
    if ours:
        why.append("the node is still drained by this runbook (%s)" % reason)
    return {"done": not why, "why": why, "ours": ours}
