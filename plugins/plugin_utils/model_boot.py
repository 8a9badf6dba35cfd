# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU boot order's settings (hpc_gres_boot_*, docs/boot.md): what the deploy installs on every GPU node so that
slurmd starts only once its GPUs are ready and its MIG layout applied."""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.boot import MIG_MODES
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_problems import describe, text_hint
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import CLUSTER_VARS

MAX_SECONDS = 86400


def _get(cluster, name):
    return cluster.get(name, CLUSTER_VARS[name])


def boot_settings(col, host, cluster, nodes):
    """Validated settings: ``{"enabled", "mig", "timeout", "retry_interval", "hosts"}`` (``hosts``: the inventory
    hosts with GPUs, which get the boot order); problems and warnings go to ``col``."""
    out = {}
    enabled = _get(cluster, "hpc_gres_boot")
    if not isinstance(enabled, bool):
        col.add(host, "hpc_gres_boot", "true or false", describe(enabled), text_hint("hpc_gres_boot", enabled))
        enabled = CLUSTER_VARS["hpc_gres_boot"]
    out["enabled"] = enabled
    mig = _get(cluster, "hpc_gres_boot_mig")
    if mig not in MIG_MODES:
        col.add(host, "hpc_gres_boot_mig", "one of %s" % ", ".join(MIG_MODES), describe(mig))
        mig = CLUSTER_VARS["hpc_gres_boot_mig"]
    out["mig"] = mig
    for key, name in (("timeout", "hpc_gres_boot_timeout"), ("retry_interval", "hpc_gres_boot_retry_interval")):
        value = col.int_value(host, name, _get(cluster, name), 0, MAX_SECONDS, note="seconds")
        out[key] = CLUSTER_VARS[name] if value is None else value
    out["hosts"] = sorted(n["host"] for n in nodes if n["gpus"])
    split = sorted(n["host"] for n in nodes if any(g["mig"] for g in n["gpus"]))
    if enabled and mig == "none" and split:
        col.warn(host, "hpc_gres_boot_mig", "collection or mig-manager on a cluster with MIG layouts", "none",
                 "MIG instances do not survive a reboot and nothing recreates them at boot: the boot order holds "
                 "those nodes back (%s) until the layout is applied by hand or by the MIG runbook"
                 % ", ".join(split))
    return out
