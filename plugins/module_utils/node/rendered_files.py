"""This node's slurm.conf and gres.conf out of the render's files, as a role hands them to gres_verify."""

RENDER_ROLE = "hpc.slurm_gres.hpc_gres_render"


def _found_files(files):
    if isinstance(files, dict):
        return ", ".join(sorted(str(name) for name in files)) or "none"
    if files in (None, ""):
        return "nothing"
    return "%s %r" % (type(files).__name__, files if len(repr(files)) <= 80 else repr(files)[:77] + "...")


def node_files(files, node_name, origin=None):
    """``(slurm.conf text, gres.conf text or None)`` of ``node_name`` from the render's ``files``.

    gres.conf is ``<node_name>/gres.conf``; a node without one (no GPUs in the inventory) gets None. ``origin``
    (``{host, files, node_name}``: the inventory host and the names of the caller's variables) goes into the error.
    Raises ValueError naming the host, the variables, what was expected and what was found.
    """
    origin = origin or {}
    slurm_conf = files.get("slurm.conf") if isinstance(files, dict) else None
    name_ok = isinstance(node_name, str) and node_name.strip() != ""
    if isinstance(slurm_conf, str) and name_ok:
        gres_conf = files.get("%s/gres.conf" % node_name)
        if gres_conf is not None and not isinstance(gres_conf, str):
            raise ValueError("host %s: %s: expected %s/gres.conf as text, found %s" % (
                origin.get("host") or node_name, origin.get("files") or "files", node_name,
                type(gres_conf).__name__))
        return slurm_conf, gres_conf
    raise ValueError(
        "host %s: %s, %s: expected the rendered files of the %s role (slurm.conf, and <node>/gres.conf for a GPU "
        "node) and this host's Slurm node name, found files %s and node name %s" % (
            origin.get("host") or node_name or "(unknown)", origin.get("files") or "files",
            origin.get("node_name") or "node_name", RENDER_ROLE, _found_files(files),
            node_name if name_ok else "none (is the host in group slurmd?)"))
