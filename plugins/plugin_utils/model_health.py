# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The GPU health check's settings (hpc_gres_health_*) and the slurm.conf lines that wire it (docs/health.md)."""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import options, versions
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_problems import describe, text_hint
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import CLUSTER_VARS

_PATH = re.compile(r"^/[A-Za-z0-9._+/-]+$")
_KERNEL_LOG = ("auto", "journal", "dmesg", "none")
_NODE_STATES = ("ALLOC", "ANY", "CYCLE", "IDLE", "MIXED", "NONDRAINED_IDLE", "START_ONLY")
# HealthCheckTimeout exists from Slurm 26.05 (option_tables.py); earlier releases wait a fixed 60 s. The program's
# commands share 30 s and its scontrol calls 20 s more (module_utils/health/inputs.py), so 60 s is never reached.
HEALTH_TIMEOUT = 60


def _get(cluster, name):
    return cluster.get(name, CLUSTER_VARS[name])


def health_settings(col, host, cluster, release):
    """Validated settings: ``{"enabled", "nhc", "interval", "node_state", "program", "kernel_log", "ack_file",
    "timeout"}``; problems go to ``col``."""
    out = {}
    for key, name in (("enabled", "hpc_gres_health"), ("nhc", "hpc_gres_health_nhc")):
        value = _get(cluster, name)
        if not isinstance(value, bool):
            col.add(host, name, "true or false", describe(value), text_hint(name, value))
            value = CLUSTER_VARS[name]
        out[key] = value
    for key, name, low, high in (("interval", "hpc_gres_health_interval", 0, 65535),
                                 ("timeout", "hpc_gres_health_timeout", 1, 60)):
        value = col.int_value(host, name, _get(cluster, name), low, high, note="seconds")
        out[key] = CLUSTER_VARS[name] if value is None else value
    state = _get(cluster, "hpc_gres_health_node_state")
    words = str(state).upper().split(",") if isinstance(state, str) else []
    start_only = versions.parse_version(options.release_for(release)) >= versions.parse_version("25.11")
    allowed = [w for w in _NODE_STATES if w != "START_ONLY" or start_only]
    if not words or any(w not in allowed for w in words) or len(set(words)) != len(words):
        col.add(host, "hpc_gres_health_node_state", "a comma-separated list of %s (Slurm %s)"
                % (", ".join(allowed), release), describe(state))
        words = [CLUSTER_VARS["hpc_gres_health_node_state"]]
    out["node_state"] = ",".join(words)
    if "NONDRAINED_IDLE" in words and out["enabled"] and not out["nhc"]:
        col.warn(host, "hpc_gres_health_node_state", "node states that include drained nodes (ANY)", out["node_state"],
                 "slurmd never runs the check on a drained node, so a node the check drained is never resumed")
    for key, name in (("program", "hpc_gres_health_program"), ("ack_file", "hpc_gres_health_ack_file")):
        value = _get(cluster, name)
        if not isinstance(value, str) or not _PATH.match(value) or "/../" in value + "/":
            col.add(host, name, "an absolute path of letters, digits and . _ + - /", describe(value))
            value = CLUSTER_VARS[name]
        out[key] = value
    log = _get(cluster, "hpc_gres_health_kernel_log")
    if not isinstance(log, str) or not (log in _KERNEL_LOG or _PATH.match(log)):
        col.add(host, "hpc_gres_health_kernel_log", "%s or the absolute path of a log file" % ", ".join(_KERNEL_LOG),
                describe(log))
        log = CLUSTER_VARS["hpc_gres_health_kernel_log"]
    out["kernel_log"] = log
    return out


def health_slurm_conf(health, release, mode):
    """The slurm.conf defaults that wire the program, before the site's hpc_gres_slurm_conf_options: none when the
    check is off, NHC runs it, or the site's own slurm.conf holds the options (include mode)."""
    if not health["enabled"] or health["nhc"] or mode == "include":
        return ()
    lines = [("HealthCheckProgram", health["program"]), ("HealthCheckInterval", health["interval"]),
             ("HealthCheckNodeState", health["node_state"])]
    try:
        options.lookup("slurm.conf", "HealthCheckTimeout", release)
        lines.append(("HealthCheckTimeout", HEALTH_TIMEOUT))
    except options.OptionError:
        pass
    return tuple(lines)


def check_health_program(col, host, health, merged, overrides, mode):
    """The site's own HealthCheckProgram against ours: one program per slurmd, so a different one is refused unless
    it is NHC (hpc_gres_health_nhc) or the check is off; NHC without a HealthCheckProgram never runs."""
    # a non-dict hpc_gres_slurm_conf_options is refused where the options are read; nothing of it is ours to name
    written = {str(k).lower(): k for k in (overrides if isinstance(overrides, dict) else {}) if isinstance(k, str)}
    key = written.get("healthcheckprogram", "HealthCheckProgram")
    program = merged.get("HealthCheckProgram")
    if not health["enabled"] or mode == "include":
        return
    if health["nhc"]:
        if not program:
            col.warn(host, "hpc_gres_slurm_conf_options.HealthCheckProgram",
                     "LBNL NHC as the HealthCheckProgram (hpc_gres_health_nhc is true)", "none",
                     "set HealthCheckProgram (/usr/sbin/nhc) and HealthCheckInterval in hpc_gres_slurm_conf_options; "
                     "without them slurmd never runs NHC and the GPU check file is never used")
        return
    if program != health["program"]:
        col.add(host, "hpc_gres_slurm_conf_options.%s" % key,
                "unset: the collection installs and runs %s (hpc_gres_health_program)" % health["program"],
                describe(program),
                "slurmd runs one HealthCheckProgram: if it is LBNL NHC set hpc_gres_health_nhc: true (the deploy "
                "writes an NHC check file), otherwise set hpc_gres_health: false to keep yours")
