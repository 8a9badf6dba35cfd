"""Post-deploy smoke test: which ``srun --gres=gpu:TYPE:N`` to run, and what ``CUDA_VISIBLE_DEVICES`` must be.

Slurm sets ``CUDA_VISIBLE_DEVICES`` from the GRES it allocated. With device confinement (``task/cgroup`` and
``ConstrainDevices=yes``) the job sees only its GPUs, numbered from 0, so N GPUs read ``0,...,N-1``. Without it
(``task/none``, seen live on 22.05) the job sees the node's own device positions, numbered in the order of the
node's slurm.conf ``Gres=`` types, so an h100 pair after three a100 reads ``3,4``. Both are checked exactly.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError, cgroup_options, parse_gres_conf, parse_slurm_conf


def devices_confined(slurm_text, cgroup_text):
    """True when jobs see only their GPUs (task/cgroup plus ConstrainDevices=yes)."""
    options = parse_slurm_conf(slurm_text)["options"]
    plugins = [p.strip().lower() for p in options.get("taskplugin", "").split(",")]
    try:
        constrain = cgroup_options(cgroup_text).get("constraindevices", "no").lower()
    except ConfSyntaxError:  # a cgroup.conf slurmd cannot read confines nothing
        constrain = "no"
    return "task/cgroup" in plugins and constrain in ("yes", "true", "1")


def _type_positions(declared_gres, records):
    """{gpu type: [device positions on the node]} in the order slurmd numbers them without confinement.

    Seen live (22.05, task/none): positions follow the order of the types in the node's slurm.conf ``Gres=``
    (``Gres=gpu:h100:2,gpu:a100:3`` gives h100 ``0,1`` and a100 ``2,3,4`` whatever the device minors or the
    gres.conf line order), then the files within a type. Types that gres.conf backs with ``MultipleFiles``
    (MIG) take their places but get no test. The render leaves a MIG node's ``MultipleFiles`` lines to the node, so
    the deploy and the MIG runbook, which plan from the render's files, test its MIG types like the others (seen
    live on task/none: ``Gres=gpu:3g.40gb:1,gpu:2g.20gb:1,gpu:1g.10gb:2,gpu:a100:1`` gives 0, 1, 2-3 and 4).
    """
    mig_types = {(rec["type"] or "").lower() for rec in records if rec["name"] and rec["multiple_files"]}
    positions = {}
    index = 0
    for key, count in declared_gres.items():
        name, _sep, gres_type = key.partition(":")
        if name != "gpu":
            continue
        span = list(range(index, index + count))
        index += count
        if gres_type not in mig_types:
            positions[gres_type] = span  # "" for untyped GPUs (Gres=gpu:4)
    return positions


def smoke_plan(files, usable_nodes=None, preferred_nodes=None, confinement=None, busy_nodes=None):
    """One test per GPU type: the node with most GPUs of that type, all of them requested; a node running no job
    first (``busy_nodes``: those slurmctld shows ALLOCATED, MIXED or COMPLETING, whose GPUs a job may hold).

    ``files``: the rendered files (``slurm.conf``, ``cgroup.conf``, ``<node>/gres.conf``). ``usable_nodes``:
    node names the test may use (e.g. those registered and not drained); None means all. ``preferred_nodes``
    (e.g. the nodes this deploy restarted) are chosen over the others for the types they have. Returns
    ``[{"type", "node", "count", "gres", "expected", "busy"}]`` sorted by type (``""`` for untyped GPUs, asked as
    ``gpu:N``); ``expected`` is the exact ``CUDA_VISIBLE_DEVICES`` text. ``confinement``: the slurm.conf and
    cgroup.conf texts that decide device confinement when they are not the rendered ones (include mode: the site's).
    """
    confinement = confinement or {}
    confined = devices_confined(confinement.get("slurm.conf") or files["slurm.conf"],
                                confinement.get("cgroup.conf") if confinement else files.get("cgroup.conf"))
    declared = parse_slurm_conf(files["slurm.conf"])["nodes"]
    best = {}
    for path in sorted(files):
        if not path.endswith("/gres.conf"):
            continue
        node = path.rsplit("/", 1)[0]
        if usable_nodes is not None and node not in usable_nodes:
            continue
        gres = declared.get(node, {}).get("gres", {})
        for gres_type, positions in _type_positions(gres, parse_gres_conf(files[path], node)).items():
            rank = (node not in (busy_nodes or ()), node in (preferred_nodes or ()), len(positions))
            current = best.get(gres_type)
            if current is None or rank > current[2]:
                best[gres_type] = (node, positions, rank)
    plan = []
    for gres_type in sorted(best):
        node, positions, _score = best[gres_type]
        count = len(positions)
        expected = list(range(count)) if confined else positions
        plan.append({"type": gres_type, "node": node, "count": count,
                     "gres": "gpu:%s:%d" % (gres_type, count) if gres_type else "gpu:%d" % count,
                     "expected": ",".join(str(i) for i in expected), "busy": node in (busy_nodes or ())})
    return plan


def node_sruns(files, nodes, mode="files", site=None):
    """The smoke test of ``nodes`` alone (the MIG runbook's node after its new layout): ``smoke_plan`` with those
    nodes usable and preferred. ``site``: in include mode (``mode``), the installed slurm.conf and cgroup.conf, which
    decide device confinement (a controller plan's ``site``); ignored in the other modes."""
    return smoke_plan(files, list(nodes), list(nodes), site if mode == "include" else None)


def check_visible_devices(output, expected):
    """None when srun's output is exactly ``expected``, else a message saying what was seen."""
    seen = (output or "").strip()
    if seen == expected:
        return None
    return "CUDA_VISIBLE_DEVICES=%s, expected %s" % (seen or "(unset)", expected)
