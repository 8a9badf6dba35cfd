# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory schema: the variables the collection reads, their defaults and the model's limits.

Every variable lives in the collection's namespace (``NAMESPACE``); nothing outside it is read or refused.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import values, versions


# Every variable the collection reads or sets starts with this; nothing outside it is read (namespace.py).
NAMESPACE = "hpc_gres_"

CTLD_GROUP = "slurmctld"


SLURMD_GROUP = "slurmd"


# Per-host inventory variables (host_vars or group_vars) this model reads.
NODE_VARS = (
    "hpc_gres_node_name",
    "hpc_gres_node_sockets",
    "hpc_gres_node_cores_per_socket",
    "hpc_gres_node_threads_per_core",
    "hpc_gres_node_real_memory",
    "hpc_gres_node_features",
    "hpc_gres_node_weight",
    "hpc_gres_node_autodetect",
    "hpc_gres_node_shards",
    "hpc_gres_node_mps",
    "hpc_gres_node_gres",
    "hpc_gres_node_options",
    "hpc_gres_gpus",
)


CONTROLLER_VARS = ("hpc_gres_controller_addr",)


HOST_VARS = NODE_VARS + CONTROLLER_VARS


GPU_KEYS = ("index", "type", "cores", "minor", "file", "mig", "shards", "mps", "model", "links", "flags", "count")


# Cluster-wide variables (group_vars/all) and their defaults.
CLUSTER_VARS = {
    "hpc_gres_cluster_name": "cluster",
    "hpc_gres_slurm_version": versions.DEFAULT_SLURM_VERSION,
    "hpc_gres_autodetect": "off",
    "hpc_gres_partitions": None,
    "hpc_gres_slurm_conf_options": {},
    "hpc_gres_cgroup_conf_options": {},
    "hpc_gres_types": [],
    "hpc_gres_config_mode": "files",
    "hpc_gres_include_file": "slurm_gres.conf",
}


# files: slurm.conf, cgroup.conf and each node's gres.conf on every node; configless: slurm.conf, cgroup.conf and
# one cluster-wide gres.conf on the controllers, nothing on the nodes (SlurmctldParameters=enable_configless);
# include: only a node/partition file the site's slurm.conf includes, and each node's gres.conf.
CONFIG_MODES = ("files", "configless", "include")


AUTODETECT_CHOICES = ("off", "nvml", "nvidia", "full")


PARTITION_KEYS = ("name", "group", "nodes", "default", "options")


# slurm.conf settings the renderer owns: derived from the inventory, never taken from hpc_gres_slurm_conf_options.
OWNED_SLURM_KEYS = ("ClusterName", "SlurmctldHost", "ControlMachine", "ControlAddr", "BackupController",
                    "BackupAddr", "GresTypes", "NodeName", "PartitionName", "Include")


DEFAULT_SLURM_CONF = (
    ("AuthType", "auth/munge"),
    ("CredType", "cred/munge"),
    ("SlurmUser", "slurm"),
    ("SlurmctldPort", 6817),
    ("SlurmdPort", 6818),
    ("StateSaveLocation", "/var/lib/slurm/slurmctld"),
    ("SlurmdSpoolDir", "/var/lib/slurm/slurmd"),
    ("SlurmctldPidFile", "/run/slurmctld.pid"),
    ("SlurmdPidFile", "/run/slurmd.pid"),
    ("SlurmctldLogFile", "/var/log/slurm/slurmctld.log"),
    ("SlurmdLogFile", "/var/log/slurm/slurmd.log"),
    ("ProctrackType", "proctrack/cgroup"),
    ("TaskPlugin", "task/cgroup,task/affinity"),
    ("MpiDefault", "none"),
    ("ReturnToService", 1),
    ("SchedulerType", "sched/backfill"),
    ("SelectType", "select/cons_tres"),
    ("SelectTypeParameters", "CR_Core_Memory"),
)


def default_slurm_conf(release):
    """DEFAULT_SLURM_CONF for a release: SlurmctldPidFile where that release's slurmctld unit can write it."""
    pidfile = versions.rule("slurmctld_pidfile", release or versions.DEFAULT_SLURM_VERSION)
    return tuple((key, pidfile if key == "SlurmctldPidFile" else value) for key, value in DEFAULT_SLURM_CONF)


DEFAULT_CGROUP_CONF = (
    ("CgroupPlugin", "autodetect"),
    ("ConstrainCores", "yes"),
    ("ConstrainDevices", "yes"),
    ("ConstrainRAMSpace", "yes"),
)


DEFAULT_PARTITION = {"name": "main", "nodes": "ALL", "default": True,
                     "options": {"MaxTime": "INFINITE", "State": "UP"}}


# MIG profile names as nvidia-smi / mig-parted write them: [<C>c.]<G>g.<GB>gb[+me|+me.all|+gfx|-me]
MIG_PROFILE_RE = re.compile(r"\A([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+me|\+me\.all|\+gfx|-me)?\Z")


# slurm.conf keys that start a line of their own keys (DownNodes=x State=DOWN ...): not expressible as one option.
LINE_RECORD_KEYS = ("DownNodes", "FrontendName", "NodeSet", "PowerAction")


# String options whose documented values are command lines: written in double quotes, spaces allowed.
# Options whose value is a command line with arguments (written in quotes): slurmd runs RebootProgram verbatim
# (req.c _rpc_reboot, 22.05; a PowerAction's argv since 25.05), salloc InteractiveStepOptions as srun options.
COMMAND_LINE_OPTIONS = ("InteractiveStepOptions", "RebootProgram")


# The most problems one refusal lists: a pathological inventory is refused in bounded time and message size.
MAX_PROBLEMS = 200


# The most partitions one cluster may declare (a bound of this collection, not of Slurm: it keeps the render,
# which writes each partition's node list as a hostlist, bounded).
MAX_PARTITIONS = 256


MAX_FEATURES = 256


# No NVIDIA GPU holds more than 7 GPU instances (MIG user guide); profiles.py checks each model's own limit.
MAX_MIG_INSTANCES = 7


# The most nodes a cluster can hold: MAX_SLURM_NODES (slurm.h, 24.11+); hostlist.c MAX_RANGE refuses a longer range.
MAX_NODES = 65536


# The most GPU entries a node can hold: one per /dev/nvidiaN minor (values.GPU_MINOR_MAX).
MAX_GPUS = values.GPU_MINOR_MAX + 1


# SlurmdParameters that make Slurm's "socket" a NUMA node or an L3 cache, which the inventory does not describe.
SOCKET_REDEFINING = ("numa_node_as_socket", "l3cache_as_socket")
