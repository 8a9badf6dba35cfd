"""Inventory -> one normalized, validated cluster model (plain JSON-able dicts).

Everything the collection renders or checks is derived from this model. ``build_cluster_model`` collects every
problem it finds before raising, so one run shows the admin all mistakes at once, each naming host, field,
expected and found.
"""
import difflib
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import validate_layout
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import (
    MAX_VALUES,
    format_int_ranges,
    parse_int_ranges,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import option_values, options, values
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model_gres
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import versions

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
# Host variables in these namespaces are ours: an unknown name there is a typo and is reported.
HOST_VAR_PREFIXES = ("hpc_gres_node_", "hpc_gres_gpu", "hpc_gres_controller_")

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
_CLUSTER_NAME_RE = re.compile(r"\A[A-Za-z0-9][^=]*\Z")
# slurm.conf keys that start a line of their own keys (DownNodes=x State=DOWN ...): not expressible as one option.
LINE_RECORD_KEYS = ("DownNodes", "FrontendName", "NodeSet", "PowerAction")
# String options whose documented values are command lines: written in double quotes, spaces allowed.
# Options whose value is a command line with arguments (written in quotes): slurmd runs RebootProgram verbatim
# (req.c _rpc_reboot, 22.05; a PowerAction's argv since 25.05), salloc InteractiveStepOptions as srun options.
COMMAND_LINE_OPTIONS = ("InteractiveStepOptions", "RebootProgram")


def target_version(model):
    """The Slurm release ("MAJOR.MINOR") the files are for: the model's slurm_version, else the default."""
    return model.get("slurm_version") or options.DEFAULT_SLURM_VERSION


def natural_key(text):
    """Sort key that orders ``node2`` before ``node10``."""
    return [int(p) if p.isdigit() else p for p in re.split(r"(\d+)", text)]


def short_name(host):
    """inventory_hostname_short: the host name up to the first dot."""
    return host.split(".", 1)[0]


def gpu_key(gtype):
    """slurm.conf GRES key of a GPU type: ``gpu:a100``, or ``gpu`` for untyped GPUs."""
    return "gpu:" + gtype if gtype else "gpu"


def node_gres_elements(node):
    """Ordered [(gres_key, count, slurm.conf element)] of one model node: ``("gpu:a100", 8, "gpu:a100:8")``.

    GPU types appear in order of their lowest GPU index, so Slurm's GPU numbering (slurm.conf type order, then
    gres.conf order) follows nvidia-smi's index order on mixed nodes; MIG instances count per profile type;
    count-only GPUs (AutoDetect finds them) follow; then shard, mps and the other GRES as the inventory lists them.
    """
    counts = {}
    for gpu in node["gpus"]:
        if gpu["mig"]:
            for profile in gpu["mig"]:
                key = gpu_key(mig_gres_type(gpu["type"], profile))
                counts[key] = counts.get(key, 0) + 1
        else:
            key = gpu_key(gpu["type"])
            counts[key] = counts.get(key, 0) + 1
    for group in node.get("gpu_counts") or ():
        key = gpu_key(group["type"])
        counts[key] = counts.get(key, 0) + group["count"]
    out = [(key, count, "%s:%d" % (key, count)) for key, count in counts.items()]
    shards = (node.get("shards") or 0) + sum(g["shards"] or 0 for g in node["gpus"])
    if shards:
        out.append(("shard", shards, "shard:%d" % shards))
    mps = (node.get("mps") or 0) + sum(g.get("mps") or 0 for g in node["gpus"])
    if mps:
        out.append(("mps", mps, "mps:%d" % mps))
    for rec in node.get("generic_gres") or ():
        key = rec["name"] + (":" + rec["type"] if rec["type"] else "")
        element = key + (":no_consume" if rec["no_consume"] else "") + ":" + rec["count_text"]
        out.append((key, rec["count"], element))
    return out


def node_gres(node):
    """Ordered {gres_key: count} for one model node: ``{"gpu:a100": 8, "gpu:3g.40gb": 2, "shard": 32}``
    (see node_gres_elements for the order)."""
    counts = {}
    for key, count, _unused in node_gres_elements(node):
        counts[key] = counts.get(key, 0) + count
    return counts


def node_autodetect(model, node):
    """The AutoDetect mode in force on a node: its own hpc_gres_node_autodetect, else the cluster's."""
    return node.get("autodetect") or model["autodetect"]


def gres_types(model, elements=None):
    """GresTypes: gpu, the shared GRES in use, the other GRES in use, then hpc_gres_types, each once.

    ``elements``: {node name: node_gres_elements(node)} when the caller has them already."""
    names = []
    for node in model["nodes"]:
        for key, _unused1, _unused2 in (elements[node["name"]] if elements else node_gres_elements(node)):
            name = key.split(":", 1)[0]
            if name not in names:
                names.append(name)
    first = [n for n in ("gpu",) if n in names]
    shared = [n for n in ("shard", "mps") if n in names]
    ordered = first + shared + [n for n in names if n not in first + shared]
    ordered.extend(n for n in model.get("gres_types") or () if n not in ordered)
    return ordered


def _plain(value):
    """Strip Ansible's tagged str/int/dict/list subclasses so the model is plain JSON-able data."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str(value)
    if isinstance(value, dict):
        return {_plain(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


_describe = values.describe


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


class _Collector(object):
    def __init__(self):
        self.problems = []
        self.count = 0
        # Hosts of one group share their group_vars objects: validate each distinct GPU list once per layout.
        self.gpu_cache = {}
        self.cores_cache = {}
        self.boundary_cache = {}
        self.warnings = []

    def add(self, host, field, expected, found, hint=None):
        self.extend([Problem(host, field, expected, found, hint)])

    def warn(self, host, field, expected, found, hint=None):
        self.warnings.append(Problem(host, field, expected, found, hint))

    def extend(self, problems):
        for problem in problems:
            self.count += 1
            if len(self.problems) < MAX_PROBLEMS:
                self.problems.append(problem)

    def result(self):
        """The problems to raise: the first MAX_PROBLEMS, and a last one that says how many more there were."""
        if self.count > len(self.problems):
            last = self.problems[-1]
            return self.problems + [Problem(last.host, last.field, "at most %d problems listed" % MAX_PROBLEMS,
                                            "%d more not shown" % (self.count - len(self.problems)),
                                            "fix these and run again")]
        return self.problems

    def int_value(self, host, field, value, minimum, maximum, what="an integer", note=None):
        """Return an int in [minimum, maximum], or None after recording a problem. ASCII digit strings (from -e)
        are accepted."""
        problem = values.check_int(value, minimum, maximum, what, note)
        if problem:
            self.add(host, field, *problem)
            return None
        return values.as_int(value)

    def check(self, host, field, problem):
        """Record a values.check_* result; True when there was nothing to record."""
        if problem:
            self.add(host, field, *problem)
            return False
        return True


def build_cluster_model(hostvars, groups, cluster, cluster_host="localhost"):
    """Validate the inventory and return the cluster model.

    ``hostvars``: {inventory host: {var: value}} holding at least the variables in HOST_VARS that are set
    (other keys are ignored unless they start with one of HOST_VAR_PREFIXES, then they must be known).
    ``groups``: {group: [hosts]} as Ansible's ``groups`` (``slurmd`` and ``slurmctld`` with all descendants).
    ``cluster``: the cluster-wide variables (keys of CLUSTER_VARS; missing ones take their defaults).
    ``cluster_host`` names the host reported for problems in cluster-wide variables.
    Raises GresError listing every problem found.
    """
    col = _Collector()
    # Ansible hands over string host names, str-keyed variable mappings and lists of host names; anything else
    # is not an inventory this model can name in a message, so it is read as empty.
    hostvars = {str(h): hv if isinstance(hv, dict) else {} for h, hv in (hostvars or {}).items()}
    groups = {str(g): [str(h) for h in members] if isinstance(members, (list, tuple)) else []
              for g, members in (groups or {}).items()}
    # A cluster variable set to null (or left out) takes its default.
    cluster = {k: v for k, v in (cluster or {}).items() if v is not None}
    slurmd_hosts = list(groups.get(SLURMD_GROUP) or [])
    ctld_hosts = list(groups.get(CTLD_GROUP) or [])
    slurmd_set = set(slurmd_hosts)
    release = _slurm_version(col, cluster_host, cluster.get("hpc_gres_slurm_version"))
    version = release or versions.DEFAULT_SLURM_VERSION

    if not ctld_hosts:
        col.add(cluster_host, "groups.%s" % CTLD_GROUP, "at least one controller host in inventory group %s"
                % CTLD_GROUP, "no hosts")
    if not slurmd_hosts:
        col.add(cluster_host, "groups.%s" % SLURMD_GROUP, "at least one compute host in inventory group %s"
                % SLURMD_GROUP, "no hosts")
    elif len(slurmd_hosts) > MAX_NODES:
        col.add(cluster_host, "groups.%s" % SLURMD_GROUP, "at most %d compute hosts (Slurm's MAX_SLURM_NODES; one "
                "hostlist range holds at most that many names)" % MAX_NODES, "%d hosts" % len(slurmd_hosts))
        slurmd_hosts = []

    for host in sorted(hostvars, key=natural_key):
        hv = hostvars[host] or {}
        for key in sorted(k for k in hv if isinstance(k, str)):
            if key.startswith(HOST_VAR_PREFIXES) and key not in HOST_VARS:
                close = difflib.get_close_matches(key, HOST_VARS, n=1)
                col.add(host, key, "a variable of the inventory schema (%s)" % ", ".join(HOST_VARS),
                        "unknown variable %s" % key, "did you mean %s?" % close[0] if close else None)
        if host not in slurmd_set and hv.get("hpc_gres_gpus"):
            col.add(host, "hpc_gres_gpus", "GPU entries only on hosts in inventory group %s" % SLURMD_GROUP,
                    "%d GPU entries on a host outside %s" % (_len(hv["hpc_gres_gpus"]), SLURMD_GROUP),
                    "add the host to group %s or remove hpc_gres_gpus" % SLURMD_GROUP)

    boundary = _socket_boundary_setting(col, cluster_host, cluster.get("hpc_gres_slurm_conf_options"), release)
    nodes = []
    by_name = {}
    for host in slurmd_hosts:
        node = _build_node(col, host, hostvars.get(host) or {}, version, boundary)
        if node is None:
            continue
        if node["name"] in by_name:
            col.add(host, "hpc_gres_node_name", "a Slurm node name used by one inventory host only",
                    "%r (also used by host %s)" % (node["name"], by_name[node["name"]]))
            continue
        by_name[node["name"]] = host
        nodes.append(node)
    nodes.sort(key=lambda n: natural_key(n["name"]))

    extra_types = model_gres.gres_types(col, cluster_host, cluster.get("hpc_gres_types"))
    _check_type_spelling(col, nodes)
    _check_mig_with_shards(col, nodes, extra_types)
    _check_count_only_autodetect(col, nodes, _autodetect(_Collector(), cluster_host, cluster.get(
        "hpc_gres_autodetect", CLUSTER_VARS["hpc_gres_autodetect"]), version))

    controllers = []
    for host in ctld_hosts:
        hv = hostvars.get(host) or {}
        name = _node_name(col, host, hv)
        addr = hv.get("hpc_gres_controller_addr")
        if addr is not None and not col.check(host, "hpc_gres_controller_addr", values.check_host_address(addr)):
            addr = None
        controllers.append({"host": host, "name": name, "addr": _plain(addr) if addr else None})

    _check_accounting(col, cluster_host, cluster.get("hpc_gres_slurm_conf_options"))
    autodetect = _autodetect(col, cluster_host, cluster.get("hpc_gres_autodetect",
                                                            CLUSTER_VARS["hpc_gres_autodetect"]), release)
    _check_autodetect_with_mig(col, cluster_host, autodetect, nodes)

    cgroup_conf = _options(col, cluster_host, "hpc_gres_cgroup_conf_options", DEFAULT_CGROUP_CONF,
                           cluster.get("hpc_gres_cgroup_conf_options"), (), "cgroup.conf", version)
    _check_cgroup_plugin(col, cluster_host, cgroup_conf, release)

    model = {
        "cluster_name": _cluster_name(col, cluster_host, cluster.get("hpc_gres_cluster_name",
                                                                     CLUSTER_VARS["hpc_gres_cluster_name"])),
        "slurm_version_default": "hpc_gres_slurm_version" not in cluster,
        "autodetect": autodetect,
        "controllers": controllers,
        "settings": {
            "slurm_conf": _options(col, cluster_host, "hpc_gres_slurm_conf_options", default_slurm_conf(version),
                                   cluster.get("hpc_gres_slurm_conf_options"), OWNED_SLURM_KEYS, "slurm.conf", version),
            "cgroup_conf": cgroup_conf,
        },
        "partitions": _partitions(col, cluster_host, cluster.get("hpc_gres_partitions"), groups, hostvars,
                                  slurmd_set, by_name, version),
        "nodes": nodes,
        "gres_types": extra_types,
        "slurm_version": version,
        "cluster_host": str(cluster_host),
        "warnings": [str(w) for w in col.warnings],
    }
    model["config_mode"], model["include_file"] = _config_mode(col, cluster_host, cluster, nodes)
    _check_max_node_count(col, cluster_host, cluster.get("hpc_gres_slurm_conf_options"), model["settings"]["slurm_conf"],
                          len(slurmd_hosts))
    if col.count:
        raise GresError(col.result())
    return model


def _check_max_node_count(col, host, overrides, settings, count):
    """node_conf.c: "Attempting to create node record past MaxNodeCount" for every node beyond it (22.05 to 26.05;
    the man page's "ignored if less than the number of nodes" is not what slurmd does)."""
    value = settings.get("MaxNodeCount")
    if value is None or not value.isdigit() or int(value) >= count:
        return
    key = [k for k in overrides if isinstance(k, str) and k.lower() == "maxnodecount"][0]
    col.add(host, "hpc_gres_slurm_conf_options.%s" % key, "MaxNodeCount at least the number of nodes (%d)" % count, value,
            "slurmd logs \"Attempting to create node record past MaxNodeCount\" for every node beyond it")


def _len(value):
    try:
        return len(value)
    except TypeError:
        return 1


def _node_name(col, host, hv):
    name = hv.get("hpc_gres_node_name")
    if name is None:
        name = short_name(str(host))
        problem = values.check_node_name(name)
        if problem:
            col.add(host, "hpc_gres_node_name", problem[0], "%s derived from the inventory name" % problem[1],
                    "set hpc_gres_node_name" + ("; " + problem[2] if problem[2] else ""))
        return name
    if not col.check(host, "hpc_gres_node_name", values.check_node_name(name)):
        return short_name(str(host))
    return str(name)


def _width(version, key):
    """The Slurm integer width (uint16, ...) of a NodeName= line key in that release."""
    return options.lookup("node", key, version)[1]


def _node_int(col, host, var, value, key, minimum, version):
    width = _width(version, key)
    return col.int_value(host, var, value, minimum, values.COUNT_MAX[width], note="%s=, %s in Slurm" % (key, width))


def _build_node(col, host, hv, version, boundary=None):
    before = col.count
    name = _node_name(col, host, hv)
    gpus_raw = hv.get("hpc_gres_gpus")
    if gpus_raw is None:
        gpus_raw = []
    if not isinstance(gpus_raw, (list, tuple)):
        col.add(host, "hpc_gres_gpus", "a list of GPU entries ({index, type, ...})", _describe(gpus_raw))
        gpus_raw = []
    elif len(gpus_raw) > MAX_GPUS:
        col.add(host, "hpc_gres_gpus", "at most %d GPU entries (one per /dev/nvidiaN minor)" % MAX_GPUS,
                "%d entries" % len(gpus_raw))
        gpus_raw = []
    has_gpus = len(gpus_raw) > 0
    generic_raw = hv.get("hpc_gres_node_gres")
    generic_list = generic_raw if isinstance(generic_raw, list) else ()
    needs_layout = any(isinstance(g, dict) and g.get("cores") is not None for g in list(gpus_raw) + list(generic_list))

    layout = {}
    for key, var, slurm_key in (("sockets", "hpc_gres_node_sockets", "Sockets"),
                                ("cores_per_socket", "hpc_gres_node_cores_per_socket", "CoresPerSocket"),
                                ("threads_per_core", "hpc_gres_node_threads_per_core", "ThreadsPerCore")):
        value = hv.get(var)
        if value is None:
            # Cores= is checked against sockets x cores_per_socket (threads_per_core defaults to 1 in Slurm). Without
            # them Cores= are written as given: slurmd judges them against the hardware it runs on (as it does the
            # same line today on an imported cluster), and so does the node verification, with the node's facts.
            bare = hv.get("hpc_gres_node_sockets") is None and hv.get("hpc_gres_node_cores_per_socket") is None
            if needs_layout and bare and key == "sockets":
                col.warn(host, "hpc_gres_node_sockets", "the node's CPU layout (sockets, cores_per_socket) on a node "
                         "whose GRES have cores", "not set", "Cores= are not checked here, only by the node "
                         "verification against the node's hardware; see `slurmd -C` on the node")
            elif needs_layout and not bare and key != "threads_per_core":  # half a layout: a slip, not a site's CPUs=
                col.add(host, var, "the node's CPU layout (sockets, cores_per_socket) on a node whose GRES have "
                        "cores", "not set", "Cores= is checked against it; see `slurmd -C` on the node")
            layout[key] = None
        else:
            layout[key] = _node_int(col, host, var, value, slurm_key, 1, version)
    if None not in layout.values():
        # Slurm derives CPUs= from the three and keeps it in a uint16 (read_config.c, slurm_conf_node_t.cpus).
        cpus_max = values.COUNT_MAX[_width(version, "CPUs")]
        cpus = layout["sockets"] * layout["cores_per_socket"] * layout["threads_per_core"]
        if cpus > cpus_max:
            col.add(host, "hpc_gres_node_threads_per_core", "sockets x cores_per_socket x threads_per_core at most "
                    "%d (CPUs=, %s in Slurm)" % (cpus_max, _width(version, "CPUs")),
                    "%d x %d x %d = %d" % (layout["sockets"], layout["cores_per_socket"], layout["threads_per_core"],
                                           cpus))
            layout = {k: None for k in layout}
    real_memory = hv.get("hpc_gres_node_real_memory")
    if real_memory is not None:
        real_memory = _node_int(col, host, "hpc_gres_node_real_memory", real_memory, "RealMemory", 1, version)
    weight = hv.get("hpc_gres_node_weight")
    if weight is not None:
        weight = _node_int(col, host, "hpc_gres_node_weight", weight, "Weight", 0, version)
    features = _features(col, host, hv.get("hpc_gres_node_features"))
    autodetect = hv.get("hpc_gres_node_autodetect")
    if autodetect is not None:
        autodetect = _autodetect(col, host, autodetect, version, "hpc_gres_node_autodetect")

    core_count = None
    if layout["sockets"] and layout["cores_per_socket"]:
        core_count = layout["sockets"] * layout["cores_per_socket"]
    cache_key = (id(gpus_raw), layout["sockets"], layout["cores_per_socket"], layout["threads_per_core"])
    cached = col.gpu_cache.get(cache_key)
    if cached is not None and cached[0] is gpus_raw:
        gpus = [dict(g, mig=list(g["mig"]) if g["mig"] else g["mig"]) for g in cached[1]]
        gpu_counts = [dict(g) for g in cached[2]]
    else:
        mark = col.count
        whole = [(i, e) for i, e in enumerate(gpus_raw) if not (isinstance(e, dict) and "count" in e)]
        counted = [(i, e) for i, e in enumerate(gpus_raw) if isinstance(e, dict) and "count" in e]
        gpus = [_build_gpu(col, host, i, entry, layout, core_count) for i, entry in whole]
        _check_unique(col, host, gpus, [e for _unused1, e in whole], [i for i, _unused2 in whole])
        gpu_counts = [_build_gpu_count(col, host, i, entry, layout, core_count) for i, entry in counted]
        order = sorted(range(len(gpus)), key=lambda k: gpus[k]["index"] if gpus[k]["index"] is not None else -1)
        model_gres.check_env_flags(col, host, lambda pos: "hpc_gres_gpus[%d]" % pos,
                                   [(whole[k][0], gpus[k]) for k in order if not gpus[k]["mig"]]
                                   + [(counted[k][0], g) for k, g in enumerate(gpu_counts)])
        gpus = [gpus[k] for k in order]
        _check_gpu_kinds(col, host, gpus, gpu_counts, [i for i, _unused in counted])
        if col.count == mark and (gpus or gpu_counts):
            col.gpu_cache[cache_key] = (gpus_raw, [dict(g) for g in gpus], [dict(g) for g in gpu_counts])
    shards = model_gres.shared_count(col, host, "hpc_gres_node_shards", hv.get("hpc_gres_node_shards"))
    mps = model_gres.shared_count(col, host, "hpc_gres_node_mps", hv.get("hpc_gres_node_mps"))
    for var, count, key in (("hpc_gres_node_shards", shards, "shards"), ("hpc_gres_node_mps", mps, "mps")):
        if count is None:
            continue
        if not gpus and not gpu_counts:
            col.add(host, var, "GPUs on the node to spread %s over" % key, "no hpc_gres_gpus",
                    "slurmd stops: SHARED specified without any SHARING found")
        elif any(g[key] for g in gpus):
            col.add(host, var, "a node-wide %s count or %s per GPU, not both" % (key, key),
                    "both", "slurmd stops on %s lines with and without File" % ("shard" if key == "shards" else key))
    gpu_shards = sum(g["shards"] or 0 for g in gpus) + (shards or 0)
    if gpu_shards > values.GRES_COUNT_MAX:
        col.add(host, "hpc_gres_gpus", "at most %d shards on one node (Slurm reads GRES counts as a signed 64-bit "
                "number)" % values.GRES_COUNT_MAX, "%d in all" % gpu_shards)
    generic = model_gres.generic_gres(col, host, generic_raw,
                                      lambda field, value: _cores(col, host, field, value, layout, core_count))
    node_options = model_gres.node_options(col, host, hv.get("hpc_gres_node_options"))
    if col.count == before and boundary:
        _check_socket_boundaries(col, host, name, gpus, gpus_raw, layout, boundary)
    if col.count != before:
        return None
    return {
        "host": str(host), "name": name,
        "sockets": layout["sockets"], "cores_per_socket": layout["cores_per_socket"],
        "threads_per_core": layout["threads_per_core"], "real_memory": real_memory,
        "features": [str(f) for f in features], "weight": weight,
        "autodetect": autodetect, "shards": shards, "mps": mps, "generic_gres": generic, "options": node_options,
        "gpus": gpus, "gpu_counts": gpu_counts,
    }


def _check_gpu_kinds(col, host, gpus, gpu_counts, counted_pos):
    """One node: GPUs typed or untyped, not both (slurmctld refuses a mix in Gres=); count-only entries only
    without whole-GPU entries (slurmd: File on all records or none) and once per type."""
    whole = [g for g in gpus if not g["mig"]]
    typed = [g["type"] is not None for g in whole] + [g["type"] is not None for g in gpu_counts]
    if any(g["mig"] for g in gpus):
        typed.append(True)
    if any(typed) and not all(typed):
        col.add(host, "hpc_gres_gpus", "every GPU of a node typed, or none (MIG instances are typed)",
                "typed and untyped GPUs", "slurmctld: Some gpu GRES in slurm.conf have a type while others do not")
    if gpu_counts and gpus:
        col.add(host, "hpc_gres_gpus[%d].count" % counted_pos[0], "count-only entries only on a node without "
                "indexed GPU entries", "both", "slurmd stops: some records have \"File\" specification while "
                "others do not")
    seen = {}
    for pos, group in zip(counted_pos, gpu_counts):
        key = (group["type"] or "").lower()
        if key in seen:
            col.add(host, "hpc_gres_gpus[%d].type" % pos, "one count-only entry per GPU type",
                    "%s again (first hpc_gres_gpus[%d])" % (group["type"] or "untyped", seen[key]))
        seen.setdefault(key, pos)


def _build_gpu_count(col, host, i, entry, layout, core_count):
    """{type, count, cores, flags}: GPUs declared by count, found by AutoDetect (gres.conf Count= without File)."""
    field = "hpc_gres_gpus[%d]" % i
    group = {"type": None, "count": None, "cores": None, "flags": None}
    allowed = ("type", "count", "cores", "flags")
    for key in sorted(set(entry) - set(allowed), key=str):
        col.add(host, "%s.%s" % (field, key), "with count: only %s (AutoDetect finds the devices)" % ", ".join(allowed),
                "%s together with count" % key)
    group["count"] = col.int_value(host, field + ".count", entry.get("count"), 1, values.GPU_MINOR_MAX + 1,
                                   note="GPUs AutoDetect finds")
    group["type"] = _gpu_type(col, host, field, entry.get("type"))
    if entry.get("cores") is not None:
        group["cores"] = _cores(col, host, field + ".cores", entry["cores"], layout, core_count)
    if entry.get("flags") is not None:
        group["flags"] = model_gres.flags_value(col, host, field + ".flags", entry["flags"])
    return group


def _gpu_type(col, host, field, gtype):
    """The GPU's GRES type, or None for an untyped GPU (no type given)."""
    if gtype is None:
        return None
    if col.check(host, field + ".type", values.check_gres_type(gtype)):
        hint = values.gres_type_reads_as_count(gtype)
        if hint:
            col.warn(host, field + ".type", "a GPU type that does not read as a count", repr(gtype), hint)
        return str(gtype)
    return None


def _features(col, host, features):
    """A list of feature names (each a Slurm name; feature expressions are built from them)."""
    if features is None:
        return []
    if not isinstance(features, (list, tuple)):
        col.add(host, "hpc_gres_node_features", "a list of feature names", _describe(features),
                "write [ib, nvme], not a comma-separated string" if isinstance(features, str) else None)
        return []
    if len(features) > MAX_FEATURES:
        col.add(host, "hpc_gres_node_features", "at most %d features (this collection's bound)" % MAX_FEATURES,
                "%d features" % len(features))
        return []
    good = [f for pos, f in enumerate(features)
            if col.check(host, "hpc_gres_node_features[%d]" % pos, values.check_name(f, "feature name"))]
    return good if len(good) == len(features) else []


def _build_gpu(col, host, i, entry, layout, core_count):
    field = "hpc_gres_gpus[%d]" % i
    gpu = {"index": None, "type": None, "minor": None, "file": None, "cores": None, "model": None, "mig": None,
           "shards": None, "mps": None, "links": None, "flags": None}
    if not isinstance(entry, dict):
        col.add(host, field, "a mapping like {index: 0, type: a100}", _describe(entry))
        return gpu
    for key in sorted(set(entry) - set(GPU_KEYS), key=str):
        col.add(host, "%s.%s" % (field, key), "a GPU key (%s)" % ", ".join(GPU_KEYS), "unknown key %r" % key)
    if "index" not in entry:
        col.add(host, field + ".index", "the nvidia-smi index of the GPU (integer 0-%d)" % values.GPU_MINOR_MAX,
                "no index", "or count: N for GPUs AutoDetect finds")
    else:
        gpu["index"] = col.int_value(host, field + ".index", entry["index"], 0, values.GPU_MINOR_MAX,
                                     note="the nvidia-smi index of the GPU")
    gpu["type"] = _gpu_type(col, host, field, entry.get("type"))
    if entry.get("file") is not None:
        gpu["file"] = model_gres.gpu_device_file(col, host, field + ".file", entry["file"])
        if entry.get("minor") is not None:
            col.add(host, field + ".minor", "minor or file, not both", "both",
                    "file names the GPU's device file when it is not /dev/nvidiaN (minor)")
    elif entry.get("minor") is not None:
        gpu["minor"] = col.int_value(host, field + ".minor", entry["minor"], 0, values.GPU_MINOR_MAX,
                                     note="the minor N of /dev/nvidiaN")
    elif gpu["index"] is not None:
        gpu["minor"] = gpu["index"]
    if entry.get("cores") is not None:
        gpu["cores"] = _cores(col, host, field + ".cores", entry["cores"], layout, core_count)
    if entry.get("model") is not None:
        model = entry["model"]
        if isinstance(model, str) and model.strip() and values.check_option_value(model, quoted_ok=True) is None:
            gpu["model"] = str(model)
        else:
            col.add(host, field + ".model", "a GPU model name such as A100-80GB (printable ASCII)", _describe(model))
    if entry.get("shards") is not None:
        gpu["shards"] = col.int_value(host, field + ".shards", entry["shards"], 1, values.GRES_COUNT_MAX,
                                      note="shards on this GPU")
    if entry.get("mps") is not None:
        gpu["mps"] = col.int_value(host, field + ".mps", entry["mps"], 1, values.GRES_COUNT_MAX,
                                   note="mps on this GPU")
    if entry.get("links") is not None:
        gpu["links"] = model_gres.links_text(col, host, field + ".links", entry["links"])
    if entry.get("flags") is not None:
        gpu["flags"] = model_gres.flags_value(col, host, field + ".flags", entry["flags"])
    if "mig" in entry and entry["mig"] is not None:
        mig = entry["mig"]
        if not isinstance(mig, (list, tuple)) or not mig:
            col.add(host, field + ".mig", "a non-empty list of MIG profile names such as [3g.40gb, 3g.40gb]",
                    _describe(mig), "leave mig unset to use the whole GPU")
        elif len(mig) > MAX_MIG_INSTANCES:
            col.add(host, field + ".mig", "at most %d MIG instances on one GPU" % MAX_MIG_INSTANCES,
                    "%d profiles" % len(mig))
        else:
            bad = [p for p in mig if not isinstance(p, str) or not MIG_PROFILE_RE.match(p)]
            if bad:
                col.add(host, field + ".mig", "MIG profile names like 1g.10gb or 1c.3g.40gb",
                        ", ".join(_describe(p) for p in bad[:4]))
            elif entry.get("model") is not None and gpu["model"] is None:
                pass  # the model's own problem is reported; a layout needs a valid model
            else:
                mig_problems = validate_layout(host, gpu["index"], gpu["model"], list(mig),
                                               field=field + ".mig", model_field=field + ".model")
                if mig_problems:
                    col.extend(mig_problems)
                else:
                    gpu["mig"] = [str(p) for p in mig]
        for key in ("shards", "mps", "links", "flags", "file"):
            if gpu[key] is not None:
                col.add(host, "%s.%s" % (field, key), "%s only on a GPU without MIG instances" % key,
                        "%s %s together with mig" % (key, gpu[key] if key != "flags" else ",".join(gpu[key])))
    return gpu


def _check_mig_with_shards(col, nodes, extra_types=()):
    """MIG instances and shards (or MPS) cannot share a cluster: GresTypes is cluster-wide, and with ``shard`` or
    ``mps`` in it the real slurmd 22.05 splits every MultipleFiles record into one Count=1 GPU per file
    (``slurmd -G`` lists /dev/nvidia0 and both nvidia-cap files as three GPUs for one MIG instance; seen with this
    collection's own integration test). The node would then report three GPUs per instance."""
    sharded = [(n["host"], g["index"]) for n in nodes for g in n["gpus"] if g["shards"] or g["mps"]]
    sharded += [(n["host"], "(node-wide count)") for n in nodes if n["shards"] or n["mps"]]
    sharded += [("(hpc_gres_types)", name) for name in extra_types if name in ("shard", "mps")]
    if not sharded:
        return
    for node in nodes:
        for pos, gpu in enumerate(node["gpus"]):
            if gpu["mig"]:
                col.add(node["host"], "hpc_gres_gpus[%d].mig" % pos,
                        "MIG instances only in a cluster without shards (GresTypes would include shard)",
                        "shards on host %s GPU %s" % sharded[0],
                        "Slurm 22.05's slurmd splits a MIG MultipleFiles record into one GPU per file when shard "
                        "is in GresTypes; use MIG or shards in one cluster, not both")


def _cores(col, host, field, value, layout, core_count):
    key = (value, core_count) if isinstance(value, str) else None
    if key is not None and key in col.cores_cache:
        return col.cores_cache[key]
    try:
        # Bounded before anything is expanded: no core index above Slurm's uint16 CPU count.
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise ValueError("not a range string")
        cores = parse_int_ranges(value, maximum=MAX_VALUES - 1)
    except ValueError as exc:
        expected = "Slurm logical core indices such as \"0-31\" or \"0-15,32-47\" (ASCII digits)"
        if core_count is not None:
            expected = "Slurm logical core indices within 0-%d, such as \"0-15,32-47\"" % (core_count - 1)
        col.add(host, field, expected, _describe(value), str(exc).split(" in ", 1)[0])
        return None
    if not cores:
        col.add(host, field, "at least one core index", _describe(value))
        return None
    if core_count is not None:
        outside = [c for c in cores if c >= core_count]
        if outside:
            hint = None
            threads = layout.get("threads_per_core") or 1
            if threads > 1 and max(cores) < core_count * threads:
                hint = ("these look like OS CPU ids with hyperthreads; Cores= takes Slurm logical core indices "
                        "(one per physical core)")
            col.add(host, field, "Slurm logical core indices within 0-%d (hpc_gres_node_sockets %d x "
                    "hpc_gres_node_cores_per_socket %d)" % (core_count - 1, layout["sockets"], layout["cores_per_socket"]),
                    "%s (%s outside)" % (values.describe(value).rsplit(" (", 1)[0], format_int_ranges(outside)), hint)
            return None
    text = format_int_ranges(cores)
    if key is not None:
        col.cores_cache[key] = text
    return text


def _check_unique(col, host, gpus, entries, positions):
    dup_index = set()
    for key in ("index", "minor", "file"):
        seen = {}
        for k, gpu in enumerate(gpus):
            i = positions[k]
            value = gpu[key]
            if value is None:
                continue
            explicit = isinstance(entries[k], dict) and entries[k].get(key) is not None
            if value in seen and key == "minor" and not explicit and i in dup_index:
                continue  # minor defaulted from an index already reported as duplicate
            if value in seen:
                if key == "index":
                    dup_index.add(i)
                hint = None
                if key == "minor":
                    hint = "minor defaults to index; set minor where /dev/nvidiaN differs from the index"
                col.add(host, "hpc_gres_gpus[%d].%s" % (i, key), "unique GPU %s" % key,
                        "%s (also used by hpc_gres_gpus[%d])" % (value, seen[value]), hint)
            else:
                seen[value] = i


def _check_type_spelling(col, nodes):
    spellings = {}
    for node in nodes:
        for i, gpu in enumerate(node["gpus"]):
            if gpu["type"] is None:
                continue
            first = spellings.setdefault(gpu["type"].lower(), (gpu["type"], node["host"]))
            if first[0] != gpu["type"]:
                col.add(node["host"], "hpc_gres_gpus[%d].type" % i,
                        "one spelling per GRES type (Slurm compares types case-insensitively)",
                        "%r (host %s spells it %r)" % (gpu["type"], first[1], first[0]))


def cluster_name_problem(value):
    """None for a ClusterName Slurm takes and this collection can write back, else what is expected.

    Slurm takes any non-empty word (read_config.c lower-cases it) and asks for at most 40 characters (the
    accounting database's table names, slurm.conf(5)); the collection writes it unquoted, so one word of
    printable ASCII starting with a letter or digit (``cloud1.pri.example``, ``hpc_a``, ``Tux-2``)."""
    if (not isinstance(value, str) or not _CLUSTER_NAME_RE.match(value) or len(value) > 40
            or values.check_option_value(value) is not None):
        return ("a cluster name: one word of printable ASCII starting with a letter or digit, no '\"', '#', '\\' "
                "or '=', at most 40 characters (slurm.conf(5))")
    return None


def _cluster_name(col, host, value):
    problem = cluster_name_problem(value)
    if problem:
        col.add(host, "hpc_gres_cluster_name", problem, _describe(value))
        return "cluster"
    return str(value)


def _autodetect(col, host, value, release, var="hpc_gres_autodetect"):
    """off, nvml, nvidia or full, and one the release's slurmd knows (versions.autodetect_modes)."""
    if value is False:  # YAML 1.1 reads an unquoted `off` as false
        return "off"
    if not (isinstance(value, str) and value.lower() in AUTODETECT_CHOICES):
        col.add(host, var, "one of %s" % ", ".join(AUTODETECT_CHOICES), _describe(value))
        return "off"
    mode = value.lower()
    if release is not None and mode not in versions.autodetect_modes(release):
        since = versions.autodetect_since(mode)
        col.add(host, var,
                "one of %s (the AutoDetect modes of Slurm %s, hpc_gres_slurm_version; %s needs Slurm %s or later)"
                % (", ".join(m for m in versions.autodetect_modes(release) if m in AUTODETECT_CHOICES), release,
                   mode, since), _describe(value),
                "slurmd %s logs 'error: unknown autodetect flag '%s'' and detects nothing" % (release, mode))
        return "off"
    return mode


def _check_autodetect_with_mig(col, host, mode, nodes):
    """AutoDetect=full loads gpu_nvml.so where slurmd has it (MIG instances detected) and gpu_nvidia.so otherwise
    (MIG not detected): which MIG lines gres.conf needs would depend on each node's Slurm build."""
    for node in nodes:  # a node's own hpc_gres_node_autodetect overrides the cluster's for that node
        if node.get("autodetect") == "full":
            mig = next((g["index"] for g in node["gpus"] if g["mig"]), None)
            if mig is not None:
                col.add(node["host"], "hpc_gres_node_autodetect", "nvml or nvidia on a node with MIG GPUs (or off)",
                        "'full' (GPU %s has mig)" % mig,
                        "AutoDetect=full picks gpu_nvml.so where slurmd has it (which detects MIG) and gpu_nvidia.so "
                        "otherwise (which does not), so the gres.conf MIG lines cannot be known; name the plugin")
    if mode != "full":
        return
    mig = next(((n["host"], g["index"]) for n in nodes if not n.get("autodetect")
                for g in n["gpus"] if g["mig"]), None)
    if mig:
        col.add(host, "hpc_gres_autodetect", "nvml or nvidia on a cluster with MIG GPUs (or off)",
                "'full' (host %s GPU %s has mig)" % mig,
                "AutoDetect=full picks gpu_nvml.so where slurmd has it (which detects MIG) and gpu_nvidia.so "
                "otherwise (which does not), so the gres.conf MIG lines cannot be known; name the plugin")


def _check_cgroup_plugin(col, host, cgroup_conf, release):
    """CgroupPlugin=cgroup/v1 where the release deprecates it: a warning (it still works)."""
    if release is None or versions.rule("cgroup_v1", release) != "deprecated":
        return
    for key, value in cgroup_conf.items():
        if key.lower() == "cgroupplugin" and value.strip().lower() == "cgroup/v1":
            col.warn(host, "hpc_gres_cgroup_conf_options.%s" % key,
                     "cgroup/v2 or autodetect (cgroup/v1 is deprecated in Slurm %s, hpc_gres_slurm_version)" % release, value,
                     "slurmd logs 'cgroup/v1 plugin is deprecated, please upgrade to cgroup/v2'; boot the nodes with "
                     "the unified hierarchy (systemd.unified_cgroup_hierarchy=1) and use cgroup/v2")


def _slurm_version(col, host, value):
    """The release the cluster runs, "24.11"; None after recording a problem. Unset: DEFAULT_SLURM_VERSION."""
    if value is None:
        return versions.DEFAULT_SLURM_VERSION
    expected = "a Slurm release %s to %s, quoted (\"24.11\"): %s" % (
        versions.SUPPORTED[0], versions.SUPPORTED[-1], ", ".join(versions.SUPPORTED))
    try:
        release = versions.release_of(value)
    except ValueError:
        col.add(host, "hpc_gres_slurm_version", expected, _describe(value))
        return None
    if release not in versions.SUPPORTED:
        hint = None
        if versions.parse_version(release) > versions.parse_version(versions.RELEASES[-1]):
            hint = ("a release newer than this collection knows: its rules go into "
                    "plugins/module_utils/slurm/versions.py")
        col.add(host, "hpc_gres_slurm_version", expected, _describe(value), hint)
        return None
    return release


# SlurmdParameters that make Slurm's "socket" a NUMA node or an L3 cache, which the inventory does not describe.
SOCKET_REDEFINING = ("numa_node_as_socket", "l3cache_as_socket")


def _socket_boundary_setting(col, host, options, release):
    """The release the socket-boundary rule is judged for, or None when it cannot be judged."""
    if release is None:
        return None
    if isinstance(options, dict):
        for key, value in options.items():
            if str(key).lower() == "slurmdparameters" and any(t in str(value).lower() for t in SOCKET_REDEFINING):
                col.warn(host, "hpc_gres_slurm_conf_options.%s" % key, "GPU Cores= checked against socket boundaries",
                         "%s: Slurm's sockets are then NUMA nodes or L3 caches, which the inventory does not "
                         "describe; not checked" % value)
                return None
    return release


def _check_socket_boundaries(col, host, name, gpus, entries, layout, release):
    """GPU Cores must line up with sockets the way slurmctld of the release (and later ones) demand."""
    sockets, per_socket = layout["sockets"], layout["cores_per_socket"]
    if not (sockets and per_socket):
        return
    position = {}
    for i, entry in enumerate(entries):
        if isinstance(entry, dict):
            position.setdefault(entry.get("index"), i)
    for gpu in gpus:
        if not gpu["cores"]:
            continue
        key = (gpu["cores"], sockets, per_socket, release)
        found = col.boundary_cache.get(key)
        if found is None:
            found = versions.socket_boundary_findings(parse_int_ranges(gpu["cores"]), sockets, per_socket, release)
            col.boundary_cache[key] = found
        for severity, since, expected, sock in found:
            cores = parse_int_ranges(gpu["cores"])
            if severity == "error":
                expected = "%s (Slurm %s, hpc_gres_slurm_version, drains the node otherwise)" % (expected, release)
                record = col.add
            else:
                expected = "%s (Slurm %s and later drain the node; this cluster runs %s)" % (expected, since, release)
                record = col.warn
            if versions.rule("socket_boundary", since) == "one_socket_or_all":
                remedy = "the one socket it is local to, or all cores (0-%d)" % (sockets * per_socket - 1)
            else:
                remedy = "the whole socket(s) it is local to (%s)" % _covering_sockets(cores, per_socket)
            record(host, "hpc_gres_gpus[%d].cores" % position.get(gpu["index"], 0), expected,
                   "%s for GPU %d: %s" % (gpu["cores"], gpu["index"],
                                          versions.socket_boundary_message(cores, name, sock, per_socket)),
                   "Slurm schedules GPUs per socket: give the GPU %s, or set SlurmdParameters=l3cache_as_socket or "
                   "numa_node_as_socket with Sockets/CoresPerSocket to match" % remedy)


def _covering_sockets(cores, per_socket):
    touched = sorted(set(c // per_socket for c in cores))
    return format_int_ranges(c for s in touched for c in range(s * per_socket, (s + 1) * per_socket))


def _config_mode(col, host, cluster, nodes):
    mode = cluster.get("hpc_gres_config_mode", CLUSTER_VARS["hpc_gres_config_mode"])
    if mode not in CONFIG_MODES:
        col.add(host, "hpc_gres_config_mode", "one of %s" % ", ".join(CONFIG_MODES), _describe(mode))
        mode = "files"
    include = cluster.get("hpc_gres_include_file", CLUSTER_VARS["hpc_gres_include_file"])
    if not isinstance(include, str) or not re.match(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", include) or (
            ".." in include.split("/")) or include in ("slurm.conf", "gres.conf", "cgroup.conf"):
        col.add(host, "hpc_gres_include_file", "a file name relative to the Slurm config directory, not "
                "slurm.conf, gres.conf or cgroup.conf", _describe(include))
        include = CLUSTER_VARS["hpc_gres_include_file"]
    if mode != "files":
        why = {"configless": "each MIG node completes its own gres.conf lines, and configless nodes get gres.conf "
                             "from slurmctld",
               "include": "the MIG runbook (mig-reconfigure.yml) installs the whole slurm.conf"}[mode]
        for node in nodes:
            for pos, gpu in enumerate(node["gpus"]):
                if gpu["mig"]:
                    col.add(node["host"], "hpc_gres_gpus[%d].mig" % pos, "no MIG GPUs with %s mode" % mode,
                            "mig with hpc_gres_config_mode %s" % mode, why)
    if mode == "include":
        for var in ("hpc_gres_slurm_conf_options", "hpc_gres_cgroup_conf_options"):
            if cluster.get(var):
                col.add(host, var, "nothing in include mode (the site's slurm.conf and cgroup.conf hold these)",
                        "%d option(s)" % len(cluster[var]) if isinstance(cluster[var], dict) else _describe(
                            cluster[var]))
    return mode, include


def _check_count_only_autodetect(col, nodes, cluster_mode):
    """GPUs given by count have no File: slurmd keeps them only when AutoDetect fills them in."""
    for node in nodes:
        if node["gpu_counts"] and (node["autodetect"] or cluster_mode) == "off":
            col.add(node["host"], "hpc_gres_gpus", "count-only GPU entries only where AutoDetect is on "
                    "(hpc_gres_node_autodetect or hpc_gres_autodetect)", "AutoDetect off",
                    "slurmd drops GPUs without File= from the final list when nothing detects them")


def _check_accounting(col, host, options):
    """slurmctld 22.05+ exits ("slurmdbd is required to run with TRES gres/gpu") on GRES TRES without slurmdbd."""
    if not isinstance(options, dict):
        return
    lower = {str(k).lower(): (k, v) for k, v in options.items()}
    tres = lower.get("accountingstoragetres")
    storage = lower.get("accountingstoragetype")
    if tres and tres[1] and "gres/" in str(tres[1]).lower() and not (
            storage and str(storage[1]).strip().lower() == "accounting_storage/slurmdbd"):
        col.add(host, "hpc_gres_slurm_conf_options.%s" % tres[0],
                "GRES TRES only with AccountingStorageType=accounting_storage/slurmdbd",
                "%s without slurmdbd" % tres[1],
                "slurmctld exits with 'slurmdbd is required to run with TRES gres/gpu'; with slurmdbd configured "
                "the gres/gpu TRES are added automatically")


def uses_slurmdbd(model):
    """True when slurm.conf sends accounting to slurmdbd (GRES TRES are only allowed then)."""
    for key, value in model["settings"]["slurm_conf"].items():
        if key.lower() == "accountingstoragetype":
            return value.strip().lower() == "accounting_storage/slurmdbd"
    return False


def _option_value(col, host, field, value, name, kind, table, version):
    """The text written for one option value, checked against its parser type and, for the options Slurm's parser
    reads again (option_values.py), their syntax; None after recording a problem."""
    text = _option_text(col, host, field, value, name, kind)
    if text is not None and not col.check(host, field, option_values.check(table, name, text, version)):
        return None
    return text


def _option_text(col, host, field, value, name, kind):
    if kind not in ("string", "record"):
        text, problem = values.check_typed_value(value, kind)
        if problem:
            col.add(host, field, *problem)
        return text
    quoted_ok = name in COMMAND_LINE_OPTIONS
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value if col.check(host, field, values.check_option_value(value, quoted_ok)) else None
    if isinstance(value, (list, tuple)) and value:
        parts = []
        for pos, item in enumerate(value):
            if isinstance(item, int) and not isinstance(item, bool):
                parts.append(str(item))
            elif isinstance(item, str) and col.check(host, "%s[%d]" % (field, pos),
                                                     values.check_option_value(item, quoted_ok)):
                parts.append(item)
            elif not isinstance(item, str):
                col.add(host, "%s[%d]" % (field, pos), "a string or integer list element", _describe(item))
        if len(parts) != len(value):
            return None
        text = ",".join(parts)
        return text if col.check(host, field, values.check_option_value(text, quoted_ok)) else None
    col.add(host, field, "a string, integer, boolean or list of those (null removes a default)", _describe(value))
    return None


def _options(col, host, var, defaults, overrides, owned, table, version):
    """Defaults merged with the user's dict (keys case-insensitive, written as Slurm spells them; null drops a
    default). Every key must be one the target Slurm release reads in `table`, every value fit its type."""
    merged = {}
    for key, value in defaults:
        name, _kind = options.lookup(table, key, version)
        merged[name] = str(value)
    if overrides is None:
        return merged
    if not isinstance(overrides, dict):
        col.add(host, var, "a mapping of option name to value", _describe(overrides))
        return merged
    if len(overrides) > len(options.table(table, version)):
        col.add(host, var, "at most %d options (the keys Slurm %s reads)" % (len(options.table(table, version)),
                                                                             options.release_for(version)),
                "%d keys" % len(overrides))
        return merged
    owned_lower = {k.lower(): k for k in owned}
    records = {k.lower() for k in LINE_RECORD_KEYS} if table == "slurm.conf" else set()
    written = {}  # Slurm's spelling -> the key as the user wrote it
    for key in sorted(overrides, key=str):
        value = overrides[key]
        field = "%s.%s" % (var, key)
        if not col.check(host, "%s[%r]" % (var, key), values.check_option_key(key)):
            continue
        twin = [k for k in overrides if k != key and isinstance(k, str) and k.lower() == key.lower()]
        if twin:
            col.add(host, field, "each option once (Slurm's option names are case-insensitive)",
                    "%s and %s" % (key, twin[0]))
            continue
        if key.lower() in owned_lower:
            col.add(host, field, "an option the renderer does not derive from the inventory",
                    "%s (derived from the inventory)" % owned_lower[key.lower()])
            continue
        if key.lower() in records:
            col.add(host, field, "an option with one value", "%s, a line with keys of its own" % key,
                    "write it with an Include file of your own")
            continue
        try:
            name, kind = options.lookup(table, key, version)
        except options.OptionError as exc:
            col.add(host, field, exc.expected, exc.found, exc.hint)
            continue
        if value is None:
            merged.pop(name, None)
            continue
        text = _option_value(col, host, field, value, name, kind, table, version)
        if text is not None:
            merged[name] = text
            written[name] = key
    for involved, expected, found, hint in option_values.relation_problems(table, merged, version):
        named = [k for k in involved if k in written] or [k for k in involved if k in merged] or list(involved)
        col.add(host, "%s.%s" % (var, written.get(named[0], named[0])), expected, found, hint)
    return merged


def _partitions(col, host, value, groups, hostvars, slurmd_set, by_name, version):
    if value is None:
        return [dict(DEFAULT_PARTITION, options=dict(DEFAULT_PARTITION["options"]))]
    if not isinstance(value, (list, tuple)) or not value:
        col.add(host, "hpc_gres_partitions", "a non-empty list of partitions ({name, group|nodes, ...})",
                _describe(value))
        return []
    if len(value) > MAX_PARTITIONS:
        col.add(host, "hpc_gres_partitions", "at most %d partitions (this collection's bound)" % MAX_PARTITIONS,
                "%d partitions" % len(value))
        return []
    host_to_name = {h: n for n, h in by_name.items()}
    # Node names in natural order, ranked once: every partition's list sorts by rank, not by natural_key again.
    known_names = {name: rank for rank, name in enumerate(sorted(by_name, key=natural_key))}
    result = []
    names = set()
    defaults = []
    for i, field, part in model_gres.keyed_entries(col, host, "hpc_gres_partitions", value, PARTITION_KEYS,
                                                   "partition mappings", "{name: gpu, group: gpu_nodes}"):
        name = part.get("name")
        if not col.check(host, field + ".name", values.check_name(name, "partition name",
                                                                  values.RESERVED_PARTITION_NAMES)):
            continue
        if name in names:
            col.add(host, field + ".name", "unique partition names", "%r twice" % name)
        names.add(name)
        nodes = _partition_nodes(col, host, field, part, groups, slurmd_set, host_to_name, known_names)
        default = part.get("default", False)
        if not isinstance(default, bool):
            col.add(host, field + ".default", "true or false", _describe(default))
            default = False
        if default:
            defaults.append(name)
        settings = _options(col, host, field + ".options", (("MaxTime", "INFINITE"), ("State", "UP")),
                            part.get("options"), ("PartitionName", "Nodes", "Default"), "partition", version)
        result.append({"name": str(name), "nodes": nodes, "default": default, "options": settings})
    if len(defaults) > 1:
        col.add(host, "hpc_gres_partitions", "at most one partition with default: true",
                "%d (%s)" % (len(defaults), ", ".join(defaults)))
    return result


def _hostlist_size(expr):
    """How many names a hostlist expression stands for, counted without expanding it (an upper bound)."""
    total = 0
    for item in re.split(r",(?![^\[]*\])", expr):
        size = 1
        for group in re.findall(r"\[([^\]]*)\]", item):
            count = 0
            for part in group.split(","):
                bounds = part.split("-", 1)
                if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
                    count += max(int(bounds[1]) - int(bounds[0]) + 1, 1)
                else:
                    count += 1
            size *= max(count, 1)
        total += size
    return total


def _partition_nodes(col, host, field, part, groups, slurmd_set, host_to_name, known_names):
    has_group = part.get("group") is not None
    has_nodes = part.get("nodes") is not None
    if has_group == has_nodes:
        col.add(host, field, "exactly one of group or nodes", "both" if has_group else "neither")
        return []
    if has_group:
        group = part["group"]
        if not isinstance(group, str) or group not in groups:
            col.add(host, field + ".group", "an inventory group", _describe(group))
            return []
        members = [host_to_name[h] for h in groups[group] if h in slurmd_set and h in host_to_name]
        if not members:
            col.add(host, field + ".group", "a group with hosts from %s" % SLURMD_GROUP,
                    "group %s has none" % group)
        return sorted(set(members), key=known_names.get)
    nodes = part["nodes"]
    if isinstance(nodes, str) and nodes.upper() == "ALL":
        return "ALL"
    if isinstance(nodes, str):
        size = _hostlist_size(nodes)
        if size > max(len(known_names), 1):
            col.add(host, field + ".nodes", "ALL, or a hostlist of at most %d names (the nodes of group %s)"
                    % (len(known_names), SLURMD_GROUP), "%s (%d names)" % (_describe(nodes), size))
            return []
        try:
            nodes = hostlist.expand_hostlist(nodes)
        except hostlist.BadHostlist:
            col.add(host, field + ".nodes", "ALL, a Slurm hostlist or a list of node names", _describe(nodes))
            return []
    if not isinstance(nodes, (list, tuple)) or not nodes:
        col.add(host, field + ".nodes", "ALL, a Slurm hostlist or a list of node names", _describe(nodes))
        return []
    not_names = [(pos, n) for pos, n in enumerate(nodes) if not isinstance(n, str)]
    for pos, item in not_names[:5]:
        col.add(host, "%s.nodes[%d]" % (field, pos), "a Slurm node name", _describe(item))
    if not_names:
        return []
    unknown = [n for n in nodes if n not in known_names]
    if unknown:
        col.add(host, field + ".nodes", "Slurm node names of hosts in %s" % SLURMD_GROUP,
                "unknown %s" % ", ".join(values.describe(n).rsplit(" (", 1)[0] for n in unknown[:5]))
        return []
    return sorted(set(nodes), key=known_names.get)
