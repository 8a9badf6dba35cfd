"""A site's slurm.conf + gres.conf -> the collection's inventory variables, or refusals naming what cannot be.

Every node's GRES are read the way slurmd reads them (``slurmd_gres.node_view``: what the node registers with
slurmctld today) and carried into the schema; whatever the schema cannot hold exactly is refused with the file,
line and node. ``import_proof.prove`` then renders the result and compares it with the original, node by node.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import (
    known_models,
    normalize_model,
    normalize_profile,
    profile_names,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    parse_cgroup_conf,
    parse_slurm_conf,
    slurm_boolean,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.hostlists import trailing_hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import option_tables, options
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import values as values_mod
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import (
    SHARED_NAMES,
    gres_types_order,
    merge_count_only,
    node_view,
    view_counts,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key, short_name
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model_schema
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_cluster import cluster_name_problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_source import SourceError, combine_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_gres import NODE_OPTION_KEYS
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import host_expression

NVIDIA_FILE_RE = re.compile(r"^/dev/nvidia(\d+)$")
# Device files of other vendors' GPUs (AMD ROCm, Intel): the collection deploys NVIDIA GPU configuration.
OTHER_GPU_FILE_RE = re.compile(r"^/dev/(dri/|kfd|accel/|davinci|renderD)")
# Any other device file is carried as the GPU's own ``file`` (model_gres.gpu_device_file takes the same paths).
DEVICE_FILE_RE = re.compile(r"^/[A-Za-z0-9_.+:-]+(/[A-Za-z0-9_.+:-]+)*$")
PER_NODE_OPTIONS = ("NodeAddr", "NodeHostname", "BcastAddr", "Port")
_NODE_CANON = {k.lower(): k for k in NODE_OPTION_KEYS}
_NODE_CANON["procs"] = "CPUs"
LEGACY_CONTROLLER_KEYS = ("controlmachine", "controladdr", "backupcontroller", "backupaddr")
_FLAG_CANON = {"countonly": "CountOnly"}
# slurm.conf options Slurm reads and ignores at this value (read_config.c): {lower-case key: (value, why)}; any other
# value of them stops slurmctld. Not imported; import_proof leaves them out of its comparison.
IGNORED_OPTIONS = {"fastschedule": ("1", "Slurm ignores it since 20.11 (slurmctld: Ignoring obsolete FastSchedule=1 "
                                         "option. Please remove from your configuration.)")}
# The admin's opt-in repairs: name in import_cluster's ``repairs`` -> the playbook variable that sets it. By default
# the import refuses what they repair; each repair it makes is a change the report lists.
REPAIRS = {"drop_invalid_cores": "hpc_gres_import_drop_invalid_cores", "mig_model": "hpc_gres_import_mig_model"}
MIG_CAP_FILE_RE = re.compile(r"^/dev/nvidia-caps/nvidia-cap\d+$")
_SUFFIXES = ((1024 ** 5, "P"), (1024 ** 4, "T"), (1024 ** 3, "G"), (1024 ** 2, "M"), (1024, "K"))


class Refusal(object):
    """What the import cannot carry over exactly: where (file and line), node, what, and why."""

    __slots__ = ("where", "node", "what", "why")

    def __init__(self, where, node, what, why=None):
        self.where = where
        self.node = node
        self.what = what
        self.why = why

    def __str__(self):
        return self.text([self.node] if self.node else [])

    def text(self, nodes):
        """The refusal as one line, naming `nodes` (this refusal's node, or every node it applies to)."""
        text = self.where
        if len(nodes) == 1:
            text += ", node %s" % nodes[0]
        elif nodes:
            text += ", nodes %s" % host_expression(nodes)
        text += ": " + self.what
        if self.why:
            text += " (%s)" % self.why
        return text


class ImportRefused(Exception):
    """Raised with every refusal found; nothing is written."""

    def __init__(self, refusals, notes=()):
        self.refusals = list(refusals)
        self.notes = list(notes)
        self._lines = self._grouped_lines()
        super(ImportRefused, self).__init__(
            "import refused, nothing written: %d problem(s):\n- %s%s" % (
                len(self._lines), "\n- ".join(self._lines), "".join("\n" + n for n in self.notes)))

    def lines(self):
        """One line per refusal, slurm.conf's first, then file by file in line order; refusals that differ only in
        their node (one gres.conf line for many nodes) are one line naming the nodes as a hostlist."""
        return list(self._lines)

    def _grouped_lines(self):
        groups, order = {}, []
        for refusal in _in_file_order(self.refusals):
            key = (refusal.where, refusal.what, refusal.why or "", refusal.node is None)
            if key not in groups:
                groups[key] = (refusal, [])
                order.append(key)
            if refusal.node is not None and refusal.node not in groups[key][1]:
                groups[key][1].append(refusal.node)
        return [groups[key][0].text(groups[key][1]) for key in order]


_WHERE_RE = re.compile(r"\A(?P<file>.+?) line (?P<line>\d+)\Z")
_NOTE_AT_LINE = re.compile(r"\A(?P<file>\S+) line (?P<line>\d+): (?P<text>.*)\Z", re.S)


def _in_file_order(refusals):
    """The refusals sorted by file (slurm.conf first, the others in the order they first appear) and line; one
    without a line stays before the lines of its file."""
    files = ["slurm.conf"]
    keys = []
    for refusal in refusals:
        match = _WHERE_RE.match(refusal.where or "")
        name, line = (match.group("file"), int(match.group("line"))) if match else (refusal.where, 0)
        if name not in files:
            files.append(name)
        keys.append((name, line))
    order = sorted(range(len(refusals)), key=lambda i: (files.index(keys[i][0]), keys[i][1], i))
    return [refusals[i] for i in order]


def count_text(count):
    """4294967296 -> "4G": slurmd's own suffixes where they are exact."""
    for factor, suffix in _SUFFIXES:
        if count >= factor and count % factor == 0:
            return "%d%s" % (count // factor, suffix)
    return str(count)


class _Import(object):
    def __init__(self, source, hosts, repairs=None):
        self.source = source
        self.hosts = hosts or {}
        self.repairs = repairs or {}
        self.refusals = []
        self.report = []
        self.changed_nodes = {}
        self.origin = None
        self.conf = None
        self.views = {}
        self.provenance = {}
        self.mig = {}

    def refuse(self, where, node, what, why=None):
        self.refusals.append(Refusal(where, node, what, why))

    def mark(self, node, field, where):
        """Where an inventory value came from: (Slurm node name or None for the cluster, field) -> "FILE line N"."""
        self.provenance.setdefault((node, field.lower()), where)

    def note(self, text):
        if text not in self.report:
            self.report.append(text)

    def change(self, where, node, text):
        """A change to what runs today that the admin asked for (REPAIRS): the report lists it as one line per
        file line and change, naming every node it applies to (one gres.conf line for many nodes is one line)."""
        key = ("CHANGE", where, text)
        self.note(key)
        nodes = self.changed_nodes.setdefault(key, [])
        if node not in nodes:
            nodes.append(node)

    def report_lines(self):
        """The report: a note said alike of several lines of one file (one per NodeName line) is one line naming
        them all, where the first stood; a change names its nodes."""
        groups, order = {}, []
        for line in self.report:
            if isinstance(line, tuple):
                order.append(self._change_line(line))
                continue
            match = _NOTE_AT_LINE.match(line)
            if not match:
                order.append(line)
                continue
            key = (match.group("file"), match.group("text"))
            if key not in groups:
                groups[key] = []
                order.append(key)
            groups[key].append(int(match.group("line")))
        return [item if isinstance(item, str) else "%s line%s %s: %s" % (
            item[0], "s" if len(groups[item]) > 1 else "", format_int_ranges(groups[item]), item[1])
            for item in order]

    def changes_made(self):
        return [self._change_line(line) for line in self.report if isinstance(line, tuple)]

    def _change_line(self, key):
        nodes = self.changed_nodes[key]
        return "CHANGE: %s, %s: %s" % (key[1], "node %s" % nodes[0] if len(nodes) == 1
                                       else "nodes %s" % host_expression(nodes), key[2])

    def where(self, lineno):
        return self.origin.where(lineno) if self.origin else "slurm.conf line %s" % lineno

    def _map_message(self, text):
        """'slurm.conf line N: ...' of the combined text -> the original file and line."""
        match = re.match(r"^slurm\.conf line (\d+): (.*)$", text)
        if not match:
            return "slurm.conf", text
        return self.where(int(match.group(1))), match.group(2)


def _int(value):
    try:
        return int(str(value).strip())
    except ValueError:
        return None


def import_cluster(source, hosts=None, slurm_version=None, repairs=None, judged_release=None):
    """Translate a site's files into inventory variables.

    ``source``: ``{"slurm.conf": text, "includes": {name: text}, "cgroup.conf": text or None, "gres.conf": text or
    None (one file for every node), "node_gres": {node: text} (per node)}`` as read_source_dir returns.
    ``hosts``: {Slurm node or controller name: inventory host name} (live imports keep the inventory's names).
    ``slurm_version``: the release the cluster runs ("24.11"), written as the inventory's hpc_gres_slurm_version; the proof
    renders for it (unset: the model's default release, whose rules, e.g. whole-socket GPU Cores, then apply).
    ``repairs``: the admin's opt-ins (``REPAIRS``): ``drop_invalid_cores`` (True), ``mig_model`` (a MIG model name).
    ``judged_release``: the release the admin named, which the refusals of options no release reads speak of (unset:
    the default release's words).
    Returns ``{"hostvars", "groups", "cluster", "node_hosts": {node: host}, "controllers": [hosts],
    "report": [str], "changes": [str], "views": {node: node_view}, "conf": parsed slurm.conf, "provenance":
    {(node or None, lower-case field): "FILE line N"}, "mig": {node: {gres type: count}}}``; raises ImportRefused
    with every refusal.
    """
    imp = _Import(source, hosts, repairs)
    try:
        text, imp.origin = combine_slurm_conf(source["slurm.conf"], source.get("includes") or {})
    except SourceError as exc:
        where, _unused, what = str(exc).partition(": ")
        raise ImportRefused([Refusal(where, None, what)])
    try:
        conf = parse_slurm_conf(text)
    except ConfSyntaxError as exc:
        where, what = imp._map_message(str(exc))
        raise ImportRefused([Refusal(where, None, what, "slurmctld cannot read this line")])
    imp.conf = conf
    for err in conf["errors"]:
        where, what = imp._map_message(err)
        imp.refuse(where, None, what, "slurmctld refuses this")
    cluster = _cluster_options(imp, conf)
    if slurm_version is not None:
        cluster["hpc_gres_slurm_version"] = str(slurm_version)
    controllers = _controllers(imp, conf)
    node_vars = {}
    for name in sorted(conf["nodes"], key=natural_key):
        node_vars[name] = _node(imp, conf, name)
    _stray_node_gres(imp, conf)
    for ctl in controllers:  # a controller that is also a node keeps its NodeName line
        imp.mark(ctl["name"], "", ctl["where"])
    _autodetect_modes(imp, node_vars, cluster)
    cluster["hpc_gres_partitions"] = _partitions(imp, conf)
    _gres_types(imp, conf, node_vars, cluster)
    _cgroup(imp, source, cluster)
    if imp.refusals:
        raise ImportRefused(imp.refusals + _options_no_release_reads(imp, cluster, judged_release))
    node_hosts = {name: imp.hosts.get(name, name) for name in node_vars}
    hostvars = {}
    for name, values in node_vars.items():
        host = node_hosts[name]
        if short_name(host) != name:
            values["hpc_gres_node_name"] = name
        hostvars[host] = values
    ctl_hosts = []
    for ctl in controllers:
        host = imp.hosts.get(ctl["name"], ctl["name"])
        values = hostvars.setdefault(host, {})
        if ctl["addr"]:
            values["hpc_gres_controller_addr"] = ctl["addr"]
        if short_name(host) != ctl["name"]:
            values.setdefault("hpc_gres_node_name", ctl["name"])
        ctl_hosts.append(host)
    groups = {"slurmctld": ctl_hosts, "slurmd": [node_hosts[n] for n in node_vars]}
    ctl_names = {imp.hosts.get(ctl["name"], ctl["name"]): ctl["name"] for ctl in controllers}
    return {"hostvars": hostvars, "groups": groups, "cluster": cluster, "node_hosts": node_hosts,
            "controllers": ctl_hosts, "report": imp.report_lines(), "changes": imp.changes_made(), "views": imp.views,
            "conf": conf, "slurm_text": text, "provenance": imp.provenance, "mig": imp.mig, "origin": imp.origin,
            "controller_names": ctl_names}


def _options_no_release_reads(imp, cluster, release=None):
    """Refusals for the slurm.conf and cgroup.conf keys that no release of the option tables reads (removed, or
    dropped before them), in the words of the render's check. That check runs only on an import this stage accepts,
    so without these a site would learn of them in a second round, after fixing the refusals of this one."""
    out = []
    for table, variable in (("slurm.conf", "hpc_gres_slurm_conf_options"),
                            ("cgroup.conf", "hpc_gres_cgroup_conf_options")):
        for key, value in sorted((cluster.get(variable) or {}).items()):
            if value is None or any(_reads(table, key, release) for release in option_tables.RELEASES):
                continue
            try:
                options.lookup(table, key, release)
            except options.OptionError as exc:
                field = "%s.%s" % (variable, key)
                out.append(Refusal(imp.provenance.get((None, field.lower()), table), None, "%s: expected %s, "
                                   "found %s" % (field, exc.expected, exc.found), exc.hint))
    return out


def _reads(table, key, release):
    """Whether `release` reads `key`, or only logs it as defunct and runs on (the import then leaves it out)."""
    try:
        options.lookup(table, key, release)
    except options.OptionError:
        return options.defunct(table, key, release) is not None
    return True


# --------------------------------------------------------------------------------------------- cluster


def _cluster_options(imp, conf):
    cluster = {"hpc_gres_slurm_conf_options": {}}
    options = cluster["hpc_gres_slurm_conf_options"]
    seen = {}
    for entry in conf["entries"]:
        key = entry["key"]
        low = key.lower()
        where = imp.where(entry["line"])
        if low in ("nodename", "partitionname"):
            continue
        if low in ("nodeset", "frontendname", "downnodes"):
            imp.refuse(where, None, "%s=%s" % (key, entry["value"]),
                       "the inventory has no %s; list the nodes in the partitions instead" % key)
            continue
        if low in seen and low != "slurmctldhost":  # one line per controller, the first the primary
            imp.note("%s: %s is set again (first on %s); slurmctld uses this last value" % (where, key, seen[low]))
        seen[low] = where
        if low == "clustername":
            imp.mark(None, "hpc_gres_cluster_name", where)
            cluster["hpc_gres_cluster_name"] = entry["value"]
            problem = cluster_name_problem(entry["value"])
            if problem:
                imp.refuse(where, None, "ClusterName=%s" % entry["value"], "expected %s" % problem)
        elif low in ("slurmctldhost", "grestypes") or low in LEGACY_CONTROLLER_KEYS:
            if low == "grestypes":
                imp.mark(None, "hpc_gres_types", where)
            continue
        elif low in IGNORED_OPTIONS:
            value, why = IGNORED_OPTIONS[low]
            if entry["value"].strip() == value:
                imp.note("%s: %s=%s not imported: %s" % (where, key, entry["value"], why))
            else:
                imp.refuse(where, None, "%s=%s" % (key, entry["value"]), "slurmctld stops on it since Slurm 20.11 "
                           "(The FastSchedule option has been removed; FastSchedule=2 is "
                           "SlurmdParameters=config_overrides); fix slurm.conf first")
        elif "#" in entry["value"] or "\n" in entry["value"]:
            imp.refuse(where, None, "%s=%s" % (key, entry["value"]), "a value with '#' cannot be written back")
        else:
            for other in [k for k in options if k.lower() == low]:
                del options[other]
            options[key] = entry["value"]
            imp.provenance[(None, "hpc_gres_slurm_conf_options.%s" % low)] = where  # the last line is the one in force
    if "hpc_gres_cluster_name" not in cluster:
        imp.refuse("slurm.conf", None, "no ClusterName", "slurmctld and slurmd stop: ClusterName needs to be specified")
    present = {k.lower() for k in options}
    dropped = []
    for key, _unused in model_schema.DEFAULT_SLURM_CONF:
        if key.lower() not in present:
            options[key] = None
            dropped.append(key)
    _note_left_to_slurm(imp, "hpc_gres_slurm_conf_options", "slurm.conf", dropped)
    # the GPU health check changes slurm.conf (HealthCheckProgram): an import keeps the site's, and says how to add it
    cluster["hpc_gres_health"] = False
    program = [options[k] for k in options if k.lower() == "healthcheckprogram"]
    imp.note("hpc_gres_health: false, so slurm.conf keeps %s: set hpc_gres_health: true to install the collection's "
             "GPU health check and run it as HealthCheckProgram%s (docs/health.md)"
             % ("HealthCheckProgram=%s" % program[0] if program else "no HealthCheckProgram",
                " (with hpc_gres_health_nhc: true where %s is LBNL NHC)" % program[0] if program else ""))
    configless = [options[k] for k in options if k.lower() == "slurmctldparameters"
                  and "enable_configless" in str(options[k] or "").lower()]
    if configless:
        imp.note("WARNING: SlurmctldParameters=%s: the site runs configless slurmd, so set hpc_gres_config_mode: "
                 "configless in group_vars/all.yml before the first deploy; with the default (files) the deploy "
                 "installs slurm.conf and gres.conf on every node, which slurmd started with --conf-server does not "
                 "read (docs/import.md)" % configless[0])
    # the GPU boot order changes how slurmd starts (a systemd drop-in, its checks before every start): not on import
    cluster["hpc_gres_boot"] = False
    imp.note("hpc_gres_boot: false, so slurmd starts as it does today: set hpc_gres_boot: true to hold slurmd back "
             "after a reboot until the GPUs pass the readiness checks, which the deploy then runs too (docs/boot.md)")
    return cluster


def _controllers(imp, conf):
    out = []
    legacy = {}
    for entry in conf["entries"]:
        low = entry["key"].lower()
        if low == "slurmctldhost":
            match = re.match(r"^([^()]+)(?:\(([^()]*)\))?$", entry["value"])
            if not match or not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", match.group(1)):
                imp.refuse(imp.where(entry["line"]), None, "SlurmctldHost=%s" % entry["value"],
                           "expected a host name, optionally with (address)")
                continue
            out.append({"name": match.group(1), "addr": match.group(2) or None, "where": imp.where(entry["line"])})
        elif low in LEGACY_CONTROLLER_KEYS:
            legacy[low] = (entry["value"], imp.where(entry["line"]), entry["key"])
    if legacy and not out:
        for host_key, addr_key in (("controlmachine", "controladdr"), ("backupcontroller", "backupaddr")):
            if host_key in legacy:
                addr = legacy.get(addr_key, (None,))[0]
                out.append({"name": legacy[host_key][0], "addr": addr, "where": legacy[host_key][1]})
                imp.note("%s: %s=%s written as SlurmctldHost=%s%s (the same for slurmctld)"
                         % (legacy[host_key][1], legacy[host_key][2], legacy[host_key][0], legacy[host_key][0],
                            "(%s)" % addr if addr else ""))
    elif legacy:
        imp.refuse(legacy[sorted(legacy)[0]][1], None, "ControlMachine/BackupController together with SlurmctldHost",
                   "slurmctld refuses both forms at once")
    if not out:
        imp.refuse("slurm.conf", None, "no SlurmctldHost", "slurmctld needs one")
    return out


# --------------------------------------------------------------------------------------------- nodes


def _node(imp, conf, name):
    node = conf["nodes"][name]
    where = imp.where(node["line"])
    imp.mark(name, "", where)
    values = {}
    options = {}
    if not re.match(r"^[A-Za-z0-9][A-Za-z0-9_.-]*$", name):
        imp.refuse(where, name, "NodeName %s" % name, "the inventory takes letters, digits, '-', '_' and '.'")
    for key, value in node.items():
        if key in ("gres", "gres_spec", "line"):
            continue
        if key in ("sockets", "corespersocket", "threadspercore", "realmemory", "weight"):
            var = {"sockets": "hpc_gres_node_sockets", "corespersocket": "hpc_gres_node_cores_per_socket",
                   "threadspercore": "hpc_gres_node_threads_per_core", "realmemory": "hpc_gres_node_real_memory",
                   "weight": "hpc_gres_node_weight"}[key]
            number = _int(value)
            if number is None:
                imp.refuse(where, name, "%s=%s" % (key, value), "expected an integer")
            else:
                values[var] = number
        elif key in ("features", "feature"):
            features = [f for f in value.split(",") if f]
            if any(values_mod.check_feature_name(f) for f in features):
                imp.refuse(where, name, "Features=%s" % value,
                           "the inventory takes feature names of %s" % values_mod.FEATURE_CHARS)
            values["hpc_gres_node_features"] = features
        elif key in _NODE_CANON:
            options[_NODE_CANON[key]] = value
        else:
            imp.refuse(where, name, "NodeName option %s=%s" % (key, value), "not a slurm.conf NodeName option")
    if "hpc_gres_node_sockets" not in values and "SocketsPerBoard" in options and options.get("Boards", "1") == "1":
        number = _int(options.pop("SocketsPerBoard"))
        options.pop("Boards", None)
        if number is not None:
            values["hpc_gres_node_sockets"] = number
            imp.note("%s: SocketsPerBoard written as Sockets (one board: the same for Slurm)" % where)
    if "hpc_gres_node_sockets" in values and "SocketsPerBoard" in options:
        both = "Sockets=%s with SocketsPerBoard=%s" % (values["hpc_gres_node_sockets"], options["SocketsPerBoard"])
        imp.refuse(where, name, both,
                   "slurmd logs \"Sockets=# and SocketsPerBoard=# is invalid , using SocketsPerBoard\" and ignores "
                   "Sockets; keep one of the two (Sockets is the node's total: Boards x SocketsPerBoard)")
    if options:
        values["hpc_gres_node_options"] = options
    _node_gres(imp, conf, name, values)
    return values


def _gres_text(imp, name):
    if imp.source.get("read_nodes") is not None or imp.source.get("node_gres"):
        text = imp.source["node_gres"].get(name)
        return text, "%s/gres.conf" % name
    return imp.source.get("gres.conf"), "gres.conf"


def _stray_node_gres(imp, conf):
    """A <NodeName>/gres.conf of the source directory that names no node of slurm.conf would be dropped without a
    word (a directory named by FQDN, a node whose line is commented out)."""
    if imp.source.get("read_nodes") is not None:
        return
    known = {name.lower(): name for name in conf["nodes"]}
    for entry in sorted(imp.source.get("node_gres") or {}, key=natural_key):
        if entry in conf["nodes"]:
            continue
        short = entry.split(".")[0]
        hint = ("name the directory %s, the node's NodeName" % known[short.lower()] if short.lower() in known else
                "name the directory for a NodeName of slurm.conf, or remove it if that host is not a node of this "
                "cluster")
        imp.refuse("%s/gres.conf" % entry, None, "expected a directory named for a NodeName of slurm.conf, found "
                   "%s, which slurm.conf declares no node of" % entry, "its gres.conf would not be imported; " + hint)


def _node_gres(imp, conf, name, values):
    text, fname = _gres_text(imp, name)
    read = imp.source.get("read_nodes")
    if read is not None and name not in read and conf["nodes"][name].get("gres_spec"):
        imp.refuse(imp.where(conf["nodes"][name]["line"]), name, "node %s is in slurm.conf but no host of the "
                   "inventory's slurmd group is it" % name, "its gres.conf was not read; add the host (with "
                   "hpc_gres_node_name when its name differs)")
        return
    view = node_view(conf, text, name)
    imp.views[name] = view
    node_where = imp.where(conf["nodes"][name]["line"])

    def at(line):
        return "%s line %d" % (fname, line) if line else node_where

    if view["fatal"] is not None:
        fatal_line = next((m["line"] for m in view["messages"] if m["level"] == "fatal"), None)
        imp.refuse(at(fatal_line), name, "slurmd stops here: %s" % view["fatal"],
                   "slurmd does not start with these files; fix them first")
        return
    for msg in view["messages"]:
        text_ = msg["text"]
        if msg["level"] == "info":
            if "skips this line" in text_:
                imp.note("%s: %s" % (at(msg["line"]), text_))
            elif "are dropped" in text_:
                imp.note("%s, node %s: %s; imported as slurmd uses it" % (at(msg["line"]), name, text_))
            continue
        if text_.startswith("Invalid GRES data for") or "more configured than expected" in text_ or (
                "SHARING configuration lacks" in text_):
            # an invalid Cores= matters only on a record slurmd keeps (refused there); the rest are cut records
            continue
        elif text_.startswith("Invalid GRES configured on node"):
            # node_conf.c gres_name_filter: slurmctld and slurmd both drop a Gres= name GresTypes lacks, so the node
            # has none of it today; the inventory says the same by leaving it out (the rendered Gres= and GresTypes
            # could only list it together, which would add GRES the node does not have today)
            imp.note("WARNING: %s, node %s: Gres=%s names a GRES that GresTypes does not list: slurmctld and slurmd "
                     "ignore it today (%s), so the node has none of it for Slurm; not imported. To schedule it, add "
                     "it to the inventory (and so to GresTypes) after the import"
                     % (node_where, name, text_.split(": ", 1)[1], text_))
        else:
            imp.note("%s, node %s: slurmd: %s; not imported (slurmd ignores it too)" % (at(msg["line"]), name, text_))
    for elem in (conf["nodes"][name].get("gres_spec") or "").split(","):
        parts = elem.split("(")[0].strip().split(":")
        if len(parts) > 1 and parts[-1].isdigit() and int(parts[-1]) == 0:
            spec = conf["nodes"][name]["gres_spec"]
            imp.refuse(node_where, name, "Gres=%s with a count of 0 (%s)" % (spec, elem.strip()),
                       "the node has none of it for Slurm, and the inventory writes no count of 0: take %s out of "
                       "the node's Gres= and import again" % elem.strip())
            return
    declared = view["declared"]
    autodetect = view["autodetect"]
    if autodetect and autodetect not in model_schema.AUTODETECT_CHOICES:
        imp.refuse(at(view["autodetect_line"]), name, "AutoDetect=%s" % autodetect,
                   "the collection deploys NVIDIA GPUs (AutoDetect off, nvml or nvidia)")
        return
    if declared.get("gpu", {}).get("count"):
        # AutoDetect only matters where slurm.conf declares GPUs (slurmd keeps no undeclared GPU)
        values["__autodetect"] = autodetect or "off"
        imp.mark(name, "hpc_gres_node_autodetect", at(view["autodetect_line"]))
    if not autodetect:
        _check_registered(imp, name, node_where, declared, view)
    gpus, counts, generic = [], [], []
    shares = {"shard": [], "mps": []}
    for rec, parts in merge_count_only(view["records"]):
        low = rec["name"].lower()
        where = at(rec["line"])
        if len(parts) > 1:
            imp.note("%s, node %s: %s %s without File or Cores are one count for slurmctld; imported as Count=%d"
                     % (where, name, ":".join(filter(None, (rec["name"], rec["type"]))),
                        " + ".join(_part_text(r) for r in parts), rec["count"]))
        if low == "gpu":
            _gpu_record(imp, name, where, rec, gpus, counts)
        elif low in SHARED_NAMES:
            if rec["flags"] - ({"one_sharing"} if low == "mps" else set()) or rec["env"]:
                imp.refuse(where, name, "Flags= on a %s line" % low, "the inventory has no flags for %s" % low)
            shares[low].append(rec)
        else:
            imp.mark(name, "hpc_gres_node_gres[%d]" % len(generic), where)
            _generic_record(imp, name, where, rec, declared, generic)
    gpus.extend(_mig_gpus(imp, name))
    if not gpus and not counts:
        for low, recs in shares.items():
            if any(r["count"] for r in recs):
                imp.refuse(node_where, name, "%s without GPUs" % low, "slurmd stops: SHARED without SHARING")
    _place_gpus(imp, name, node_where, gpus, values)
    if counts:
        for entry in counts:
            imp.mark(name, "hpc_gres_gpus[%d]" % len(values.get("hpc_gres_gpus", [])), entry.pop("where"))
            values.setdefault("hpc_gres_gpus", []).append(entry)
    for low, key in (("shard", "shards"), ("mps", "mps")):
        total = declared.get(low, {}).get("count", 0)
        if not total:
            continue
        form = view["shared"].get(low) or ("files" if any(r["files"] for r in shares[low]) else "spread")
        if form == "files":
            # slurmd divides a line's Count over its files (with AutoDetect the view has not split them yet)
            by_file = {}
            for rec in shares[low]:
                for path in rec["files"]:
                    by_file[path] = by_file.get(path, 0) + rec["count"] // len(rec["files"])
            if counts:
                # GPUs that AutoDetect finds are counts in the inventory, with no device file to hang a count on
                rec = next((r for r in shares[low] if r["files"]), shares[low][0] if shares[low] else None)
                imp.refuse(at(rec["line"]) if rec else node_where, name, "%s with File= on GPUs AutoDetect finds" % low,
                           "the inventory holds those GPUs as a count without device files, so it has no per-GPU %s "
                           "count or Cores to write; list the GPUs with File= in gres.conf, or give %s one Count= "
                           "without File (slurmd spreads it over the GPUs)" % (low, low))
                continue
            for gpu in values.get("hpc_gres_gpus", []):
                count = by_file.get(gpu.get("file") or "/dev/nvidia%d" % gpu.get("minor", gpu.get("index")), 0)
                if count:
                    gpu[key] = count
        else:
            values["hpc_gres_node_%s" % key] = total
    if generic:
        values["hpc_gres_node_gres"] = generic


def _part_text(rec):
    return "%d (%s)" % (rec["count"], "line %d" % rec["line"] if rec["line"] else "slurmd's rest of slurm.conf's count")


def _check_registered(imp, name, where, declared, view):
    """The node today registers what slurm.conf declares; otherwise slurmctld drains it and there is nothing
    exact to carry over."""
    want = {}
    for context, counts in declared.items():
        if counts["types"]:
            for gtype, count in counts["types"]:
                key = "%s:%s" % (context.lower(), gtype.lower())
                want[key] = want.get(key, 0) + count
        elif counts["count"]:
            want[context.lower()] = counts["count"]
    got = view_counts(view)
    for key in sorted(set(want) | set(got)):
        if want.get(key, 0) != got.get(key, 0):
            gres, _colon, gtype = key.partition(":")
            lines = sorted(set(r["line"] for r in view["records"] if r["line"] and r["name"].lower() == gres
                               and (not gtype or (r["type"] or "").lower() == gtype)))
            source = " (%s %s %s)" % (_gres_text(imp, name)[1], "line" if len(lines) == 1 else "lines", ", ".join(
                str(n) for n in lines)) if lines else " (no gres.conf line gives it)"
            if got.get(key, 0) < want.get(key, 0):
                # slurmctld's reason (gres.c, 22.05 to 26.05): the GRES's total is checked first, then each type
                total_got, total_want = (sum(counts.get(k, 0) for k in set(want) | set(got)
                                             if k.partition(":")[0] == gres) for counts in (got, want))
                if total_got < total_want:
                    reason = "gres/%s count reported lower than configured (%d < %d)" % (gres, total_got, total_want)
                else:
                    reason = "%s count too low (%d < %d)" % (key, got.get(key, 0), want.get(key, 0))
                hint = "slurmctld drains this node today: %s; fix the files first" % reason
            else:
                hint = "slurmctld's view of this node differs from slurm.conf today; fix the files first"
            has_gres_conf = imp.source.get("gres.conf") is not None or bool(imp.source.get("node_gres"))
            if gres == "gpu" and not lines and got.get(key, 0) == 0 and has_gres_conf:
                hint += ("; slurmd keeps a GPU only with a File= line (Name=%s%s File=/dev/nvidiaN) or AutoDetect "
                         "finding it" % (gres, " Type=%s" % gtype if gtype else ""))
            if not lines and not has_gres_conf:
                hint = ("no gres.conf was found in the source directory (expected gres.conf beside slurm.conf, or "
                        "NODE/gres.conf per node): if the nodes have one, copy it there and import again; with none, "
                        "slurmctld drains this node today")
            imp.refuse(where, name, "slurm.conf declares %s:%d, slurmd registers %d%s" % (
                key, want.get(key, 0), got.get(key, 0), source), hint)


def _flags_list(rec):
    words = []
    if rec["env"]:
        words.extend(sorted(rec["env"]))
    if rec["no_gpu_env"]:
        words.append("no_gpu_env")
    words.extend(_FLAG_CANON.get(w, w) for w in sorted(rec["flags"]))
    return words or None


def _bad_cores(imp, name, where, rec):
    if rec["cores_text"] is not None and rec["cores"] is None:
        # slurmd judges Cores= against conf->sockets * conf->cores (xcpuinfo_abs_to_mac), slurm.conf's layout on every
        # node slurmctld keeps in service (slurmd.c _read_config), and drops the binding; but it still sends the
        # Cores= text to slurmctld, which logs "invalid GRES core specification" and keeps a topology record for it
        # (gres_node_config_validate). An inventory without the binding changes that record; only the text keeps it.
        key = rec.get("cores_key") or "Cores"
        if imp.repairs.get("drop_invalid_cores"):
            imp.change(where, name, "%s %s=%s is left out (%s=true): slurmd drops this binding today (Invalid "
                       "GRES data for %s), so the GPUs stay unbound for jobs; slurmctld, which receives the Cores= "
                       "text today and keeps a topology record for it, no longer gets it (scontrol show node -d "
                       "changes)" % (rec["name"], key, rec["cores_text"], REPAIRS["drop_invalid_cores"],
                                     rec["name"]))
            return False
        imp.refuse(where, name, "%s %s=%s" % (rec["name"], key, rec["cores_text"]),
                   "%sslurmd drops this binding (Invalid GRES data for %s): it checks Cores= against the cores "
                   "slurm.conf declares (Sockets x CoresPerSocket), also on hardware with more; slurmctld still gets "
                   "the Cores= text and keeps a topology record for it, which an import without the binding would "
                   "change; fix %s or slurm.conf's layout (slurmd -C), then import, or import without the "
                   "binding: -e %s=true (the report lists it as a change)"
                   % ("slurmd reads CPUs= as Cores=, core indices, not the CPU ids of hyperthreads: " if key == "CPUs"
                      else "", rec["name"], "the core indices" if key == "CPUs" else "Cores=",
                      REPAIRS["drop_invalid_cores"]))
        return True
    return False


def _gpu_record(imp, name, where, rec, gpus, counts):
    if _bad_cores(imp, name, where, rec):
        return
    if rec["multiple"]:
        _mig_record(imp, name, where, rec)
        return
    if not rec["files"]:
        counts.append(dict(_compact({"type": rec["type"], "count": rec["count"], "cores": rec["cores"],
                                     "flags": _flags_list(rec)}), where=where))
        return
    for path in rec["files"]:
        match = NVIDIA_FILE_RE.match(path)
        if OTHER_GPU_FILE_RE.match(path):
            imp.refuse(where, name, "AMD/Intel GPU device file %s" % path,
                       "the collection deploys NVIDIA GPUs, whose files are /dev/nvidiaN")
            continue
        if not match and not DEVICE_FILE_RE.match(path):
            imp.refuse(where, name, "device file %s" % path, "the inventory takes a GPU's device file as an absolute "
                       "path of letters, digits, '/', '.', '_', '+', ':' and '-'")
            continue
        gpu = {"minor": int(match.group(1)) if match else None, "file": None if match else path,
               "type": rec["type"], "cores": rec["cores"], "links": rec["links"], "flags": _flags_list(rec),
               "where": where}
        gpus.append(gpu)


def _mig_record(imp, name, where, rec):
    """A MultipleFiles= (MIG) line: refused, or with hpc_gres_import_mig_model one instance of its parent GPU's
    layout (``mig:``), which the node's own MultipleFiles lines then describe (written from its live devices)."""
    gtype = rec["type"] or ""
    parents = [int(m.group(1)) for m in (NVIDIA_FILE_RE.match(p) for p in rec["files"]) if m]
    others = [p for p in rec["files"] if not NVIDIA_FILE_RE.match(p)]
    profile = normalize_profile(gtype)
    fits = [m for m in known_models() if profile in profile_names(m)]
    model = imp.repairs.get("mig_model")
    why = None
    if len(parents) != 1 or not all(MIG_CAP_FILE_RE.match(p) for p in others):
        why = ("its files are not one /dev/nvidiaN and its /dev/nvidia-caps/nvidia-capN files, as the node's own "
               "MultipleFiles lines would name them")
    elif profile != gtype or not fits:
        why = ("Type=%s is not a MIG profile name (1g.10gb, 3g.40gb, ...): the collection types MIG instances by "
               "their profile, so an import would rename this GRES" % (gtype or "(none)"))
    elif rec["flags"] or rec["env"] or rec["links"]:
        why = "the collection writes MIG lines without Flags= or Links="
    if model is None or why:
        hint = "describe the MIG layout with mig: [...] and model: per GPU (docs/mig.md); the node completes these " \
               "lines itself"
        if why:
            hint += "; this line cannot be imported so: " + why
        else:
            hint += "; or import it so: -e %s=MODEL (MODEL one of %s; the report lists it as a change)" % (
                REPAIRS["mig_model"], ", ".join(fits))
        imp.refuse(where, name, "MultipleFiles= (MIG) line", hint)
        return
    canon = normalize_model(model)
    if canon is None or profile not in profile_names(canon):
        imp.refuse(where, name, "MultipleFiles= (MIG) line Type=%s" % gtype, "%s=%s: expected a MIG model whose "
                   "profiles include %s: %s" % (REPAIRS["mig_model"], model, profile, ", ".join(fits)))
        return
    gpu = imp.mig.setdefault(name, {}).setdefault(parents[0], {
        "minor": parents[0], "model": canon, "mig": [], "cores": rec["cores"], "where": where, "lines": []})
    if gpu["cores"] != rec["cores"]:
        imp.refuse(where, name, "MIG instances of /dev/nvidia%d with different Cores= (%s, %s)"
                   % (parents[0], gpu["cores"], rec["cores"]), "the collection binds a MIG GPU's instances to the "
                   "GPU's cores")
        return
    gpu["mig"].append(profile)
    gpu["lines"].append(rec["line"])


def _mig_gpus(imp, name):
    """The node's MIG GPUs (hpc_gres_import_mig_model), each with the change the first deploy makes to its lines."""
    out = []
    fname = _gres_text(imp, name)[1]
    for minor in sorted(imp.mig.get(name, {})):
        gpu = imp.mig[name][minor]
        out.append(gpu)
        imp.change("%s line(s) %s" % (fname, ",".join(str(n) for n in gpu["lines"])), name,
                   "the MultipleFiles= lines of /dev/nvidia%d are imported as mig: [%s], "
                   "model: %s (%s); the rendered gres.conf leaves them to the node, which writes one line per live "
                   "MIG device (Type=profile MultipleFiles=/dev/nvidia%d,GI cap,CI cap) when the deploy verifies it, "
                   "and refuses the node while its live MIG layout differs"
                   % (minor, ", ".join(gpu["mig"]), gpu["model"], REPAIRS["mig_model"], minor))
    return [dict(g, type=None, file=None, links=None, flags=None) for g in out]


def _place_gpus(imp, name, where, gpus, values):
    """Index = Slurm's order. Where the device minors rise in that order (the usual case) index = minor. MIG GPUs
    (imported with hpc_gres_import_mig_model) are indexed by their minor after the whole GPUs."""
    mig = [g for g in gpus if g.get("mig")]
    gpus = [g for g in gpus if not g.get("mig")]
    if not gpus and not mig:
        return
    minors = [g["minor"] for g in gpus]
    files = [g["file"] for g in gpus if g["file"]]
    rising = not files and all(a < b for a, b in zip(minors, minors[1:]))
    if files:
        imp.note("%s, node %s: device files %s are not /dev/nvidiaN: carried as each GPU's file, written to "
                 "gres.conf as they are; index follows Slurm's order" % (where, name, _files_text(files)))
    elif not rising:
        imp.note("%s, node %s: Slurm numbers the GPUs %s in this order; index follows Slurm's order, minor "
                 "keeps the device file" % (where, name, ",".join("/dev/nvidia%d" % m for m in minors)))
    out = []
    for pos, gpu in enumerate(gpus):
        entry = {"index": gpu["minor"] if rising else pos}
        if gpu["type"] is not None:
            entry["type"] = gpu["type"]
        if gpu["file"]:
            entry["file"] = gpu["file"]
        elif not rising and gpu["minor"] != pos:
            entry["minor"] = gpu["minor"]
        for key in ("cores", "links", "flags"):
            if gpu[key]:
                entry[key] = gpu[key]
        out.append((entry, gpu["where"]))
    taken = {e["index"] for e, _unused in out} | {e.get("minor", e["index"]) for e, _unused in out}
    for gpu in mig:
        if gpu["minor"] in taken:
            imp.refuse(gpu["where"], name, "MIG GPU /dev/nvidia%d next to whole GPUs numbered in another order"
                       % gpu["minor"], "the inventory indexes a MIG GPU by its device minor, which another GPU of "
                       "this node takes in Slurm's order; describe the node with mig: [...] by hand (docs/mig.md)")
            continue
        entry = {"index": gpu["minor"], "model": gpu["model"], "mig": gpu["mig"]}
        if gpu["cores"]:
            entry["cores"] = gpu["cores"]
        out.append((entry, gpu["where"]))
    if mig:
        out.sort(key=lambda pair: pair[0]["index"])
    for pos, (_unused, gpu_where) in enumerate(out):
        imp.mark(name, "hpc_gres_gpus[%d]" % pos, gpu_where)
    values["hpc_gres_gpus"] = [entry for entry, _unused in out]


def _files_text(files):
    try:
        return hostlist.collect_hostlist(files) if len(set(files)) == len(files) else ",".join(files)
    except hostlist.BadHostlist:
        return ",".join(files)


def _generic_record(imp, name, where, rec, declared, generic):
    if _bad_cores(imp, name, where, rec):
        return
    context = rec["context"]
    entry = {"name": context}
    if rec["type"]:
        entry["type"] = rec["type"]
    if rec["files"]:
        entry["file"] = hostlist.collect_hostlist(rec["files"]) if len(set(rec["files"])) == len(rec["files"]) \
            else ",".join(rec["files"])
        if len(rec["files"]) != rec["count"]:
            imp.refuse(where, name, "%s with %d files and Count=%d" % (context, len(rec["files"]), rec["count"]),
                       "the inventory needs one count per file for other GRES")
    else:
        entry["count"] = count_text(rec["count"])
    if declared.get(context, {}).get("no_consume"):
        entry["no_consume"] = True
    if rec["cores"]:
        entry["cores"] = rec["cores"]
    flags = _flags_list(rec)
    if flags:
        entry["flags"] = flags
    generic.append(entry)


def _compact(entry):
    return {k: v for k, v in entry.items() if v is not None}


def _autodetect_modes(imp, node_vars, cluster):  # node_vars: {Slurm node name: its variables}
    """The cluster's AutoDetect is the commonest node mode; nodes that differ get hpc_gres_node_autodetect."""
    modes = {}
    for values in node_vars.values():
        mode = values.get("__autodetect")
        if mode is not None:
            modes[mode] = modes.get(mode, 0) + 1
    common = max(sorted(modes), key=lambda m: (modes[m], m == "off")) if modes else "off"
    cluster["hpc_gres_autodetect"] = common
    for name, values in node_vars.items():
        mode = values.pop("__autodetect", None)
        if mode is not None and mode != common:
            values["hpc_gres_node_autodetect"] = mode
        elif mode is not None:
            imp.mark(None, "hpc_gres_autodetect", imp.provenance[(name, "hpc_gres_node_autodetect")])


# --------------------------------------------------------------------------------------------- partitions


def _partitions(imp, conf):
    out = []
    for pname, part in conf["partitions"].items():
        where = imp.where(part["line"])
        entry = {"name": pname}
        nodes = part.get("nodes")
        if nodes is None or nodes == "":
            imp.refuse(where, None, "PartitionName=%s without Nodes=" % pname, "the inventory needs the nodes")
            continue
        if nodes.upper() == "ALL":
            entry["nodes"] = "ALL"
        else:
            try:
                names = hostlist.expand_hostlist(nodes)
            except hostlist.BadHostlist:
                imp.refuse(where, None, "PartitionName=%s Nodes=%s" % (pname, nodes), "not a hostlist")
                continue
            unknown = [n for n in names if n not in conf["nodes"]]
            if unknown:
                imp.refuse(where, None, "PartitionName=%s Nodes= names %s" % (pname, ",".join(unknown[:5])),
                           "not a NodeName of slurm.conf (node sets are not supported)")
                continue
            entry["nodes"] = trailing_hostlist(names)
        default = slurm_boolean(part.get("default", "NO"))
        if default is None:
            imp.refuse(where, None, "PartitionName=%s Default=%s" % (pname, part.get("default")),
                       "slurmctld reads Default= as a boolean (YES, NO, TRUE, FALSE, UP, DOWN, 1, 0) and stops on "
                       "anything else (\"is not a valid option for \"Default\"\", parse_value.c)")
            continue
        entry["default"] = default
        options = {}
        for key, value in _partition_options(conf, pname):
            if key.lower() in ("nodes", "default"):
                continue
            options[key] = value
        for key, default_value in (("MaxTime", "INFINITE"), ("State", "UP")):
            if not any(k.lower() == key.lower() for k in options):
                options[key] = None
        entry["options"] = options
        imp.mark(None, "hpc_gres_partitions[%d]" % len(out), where)
        out.append(entry)
    defaults = [p for p in out if p["default"]]
    for part in defaults[:-1]:
        part["default"] = False
    if len(defaults) > 1:
        imp.note("partitions %s are all Default=YES: slurmctld takes the last one (%s), so the others are written "
                 "default: false" % (", ".join(p["name"] for p in defaults), defaults[-1]["name"]))
    if not out:
        imp.note("slurm.conf has no partition; the rendered slurm.conf would add the default partition main")
        return None
    return out


def _partition_options(conf, pname):
    """(key as written, value) of a partition, PartitionName=DEFAULT lines first, in file order."""
    merged = []
    for entry in conf["entries"]:
        if entry["key"].lower() != "partitionname":
            continue
        if entry["value"].upper() == "DEFAULT" or entry["value"] == pname:
            for key, value in entry["options"]:
                merged = [(k, v) for k, v in merged if k.lower() != key.lower()]
                merged.append((key, value))
    return merged


# --------------------------------------------------------------------------------------------- types, cgroup


def _gres_types(imp, conf, node_vars, cluster):
    """GresTypes names no node uses are kept in hpc_gres_types (they change what slurmd does, e.g. shard)."""
    names, problems = gres_types_order(conf["options"].get("grestypes"))
    for problem in problems:
        imp.refuse(imp.provenance.get((None, "hpc_gres_types"), "slurm.conf"), None, problem)
    used = set()
    for values in node_vars.values():
        if values.get("hpc_gres_gpus"):
            used.add("gpu")
        if values.get("hpc_gres_node_shards") or any(g.get("shards") for g in values.get("hpc_gres_gpus", [])):
            used.add("shard")
        if values.get("hpc_gres_node_mps") or any(g.get("mps") for g in values.get("hpc_gres_gpus", [])):
            used.add("mps")
        used.update(rec["name"] for rec in values.get("hpc_gres_node_gres", []))
    extra = [n for n in names if n not in used]
    if extra:
        cluster["hpc_gres_types"] = extra


def _cgroup(imp, source, cluster):
    text = source.get("cgroup.conf")
    if text is None:
        imp.note("WARNING: no cgroup.conf in the source: a deploy would install the collection's (%s); put the "
                 "site's cgroup.conf next to slurm.conf to keep it" % ", ".join(
                     "%s=%s" % kv for kv in model_schema.DEFAULT_CGROUP_CONF))
        return
    try:
        options = parse_cgroup_conf(text)
    except ConfSyntaxError as exc:
        where, _unused, what = str(exc).partition(": ")
        imp.refuse(where, None, what, "slurmd and slurmctld cannot read this line")
        return
    for lineno, raw in enumerate(text.split("\n"), 1):  # parse_cgroup_conf's reading: the last line of a key wins
        key = raw.split("#", 1)[0].partition("=")[0].strip()
        if key and "=" in raw.split("#", 1)[0]:
            imp.provenance[(None, "hpc_gres_cgroup_conf_options.%s" % key.lower())] = "cgroup.conf line %d" % lineno
    imp.mark(None, "hpc_gres_cgroup_conf_options", "cgroup.conf line 1")
    present = {k.lower() for k in options}
    dropped = []
    for key, _unused in model_schema.DEFAULT_CGROUP_CONF:
        if key.lower() not in present:
            options[key] = None
            dropped.append(key)
    _note_left_to_slurm(imp, "hpc_gres_cgroup_conf_options", "cgroup.conf", dropped)
    cluster["hpc_gres_cgroup_conf_options"] = options


def _note_left_to_slurm(imp, variable, conf_name, keys):
    """The report line for the collection's defaults the site's file does not set: null, left to Slurm's."""
    if keys:
        them = "it" if len(keys) == 1 else "them"
        imp.note("%s: %s set to null: the site's %s does not set %s, so the rendered %s leaves %s to Slurm's "
                 "default%s as today" % (variable, ", ".join(keys), conf_name, them, conf_name, them,
                                         "" if len(keys) == 1 else "s"))
