"""The GRES Type of a MIG instance: the one naming rule, and its inverse.

The Type is the GPU-instance profile name, ``+me`` included (``Gres=gpu:1g.10gb:2``, ``Type=1g.10gb+me``,
``srun --gres=gpu:3g.40gb:1``), checked live on Slurm 22.05: types match exactly, so a ``1g.10gb`` job never lands
on the ``1g.10gb+me`` instance. slurm.conf's ``Gres=`` (the model), gres.conf's ``MultipleFiles`` lines (the
renderer, with or without live MIG facts) and the node-side checks (verify) all name MIG types through this
module, so the files always agree. ``gpu_type`` is taken so that a naming scheme that keeps the parent type
could be introduced here without touching any caller.

Pure Python: no Ansible imports.
"""

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import normalize_profile, profile_counts


def mig_gres_type(gpu_type, profile):
    """GRES type of one MIG instance of a GPU of ``gpu_type``: ``3g.40gb``."""
    return normalize_profile(profile)


def mig_gres_types(profiles, gpu_type=None):
    """``{gres type: count}`` for a GPU's layout, in natural profile order."""
    counts = {}
    for profile, count in profile_counts(profiles).items():
        key = mig_gres_type(gpu_type, profile)
        counts[key] = counts.get(key, 0) + count
    return counts


def mig_type_fits(gres_type, device):
    """Whether a live MIG device (``profile`` / ``gi_profile`` as gpu_facts reports them) is of ``gres_type``.

    The inverse of :func:`mig_gres_type` for the node side, which knows the device but not the inventory's
    GPU type.
    """
    want = str(gres_type or "").lower()
    for key in ("profile", "gi_profile"):
        profile = device.get(key) if isinstance(device, dict) else device
        if profile and mig_gres_type(None, profile).lower() == want:
            return True
    return False
