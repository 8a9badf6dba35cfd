"""The MIG runbook's controller-side decisions (pure logic): what the GPUs have now, the model of one step.

The runbook (role ``slurm_gres_mig``) changes one node at a time. While it works on one node, slurm.conf must
carry that node's new ``Gres=`` and every other node's ``Gres=`` as its GPUs are *now*, or slurmctld would drain
the nodes whose turn has not come. :func:`live_layouts` reads what a node's GPUs have from a ``mig_layout``
result, :func:`step_model` builds the model of one step from it.
"""


def live_layouts(plan):
    """``{gpu index: [profiles] or None}`` from a ``mig_layout`` result's ``plan`` (what the GPUs have now).

    A GPU in MIG mode lists its GPU-instance profiles (sorted by name, one entry per instance); MIG off, or a
    GPU that cannot do MIG, gives None.
    """
    out = {}
    for gpu in plan or ():
        mode = str(gpu.get("mig_mode") or "")
        counts = gpu.get("current") or {}
        if mode == "Enabled" and counts:
            out[int(gpu["index"])] = [p for p in sorted(counts) for _ in range(int(counts[p]))]
        else:
            out[int(gpu["index"])] = None
    return out


def step_model(model, host, live):
    """The cluster model for one step of a serial MIG reconfiguration.

    ``host`` (an inventory host) keeps the layout the inventory declares; every other host named in ``live``
    (``{host: {gpu index: [profiles] or None}}``, see :func:`live_layouts`) gets the layout its GPUs have now,
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
