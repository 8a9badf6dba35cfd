"""Values Slurm's configuration parser itself refuses, for the string options whose syntax it checks while reading.

values.py decides which characters may be written at all; option_tables.py which keys and parser types a release
knows. Some string options are then parsed again by read_config.c while the file is read, and a value that fails
there stops slurmctld and slurmd ("Unable to process configuration file"). The shapes below are those checks, each
from the Slurm function named (22.05 to 26.05 unless said otherwise). Options not listed are not checked beyond
their characters: plugin names (but SelectType's removed plugins) and the other flag lists (DebugFlags,
PrologFlags, ...) are read by later code.

``check(table, option, value, version)`` returns None or (expected, found, hint).
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_tables import VALUE_KEYWORDS
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.options import release_for
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.plugin_tables import REMOVED_BEFORE, SHIPPED
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import parse_version
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.values import describe

# log_string2num (slurm_protocol_defs.c): a name, or anything starting with a digit (atoi).
LOG_LEVELS = ("quiet", "fatal", "error", "info", "verbose", "debug", "debug2", "debug3", "debug4", "debug5")
# time_str2secs / _is_valid_timespec (parse_time.c): min, min:sec, hr:min:sec, days-hr, days-hr:min[:sec].
_TIME_RE = re.compile(r"\A([0-9]+-[0-9]+(:[0-9]+(:[0-9]+)?)?|[0-9]+(:[0-9]+(:[0-9]+)?)?)\Z")
_TIME_WORDS = ("-1", "infinite", "unlimited")
# preempt_mode_num (slurm_protocol_defs.c): one mode, optionally with GANG or WITHIN (not both).
_PREEMPT_MODES = ("off", "cluster", "cancel", "requeue", "on", "suspend")
_PREEMPT_WITH = ("gang", "within")


def _log_level(value):
    if value[:1].isdigit() or value.lower() in LOG_LEVELS:
        return None
    return "a log level (%s) or 0-9" % ", ".join(LOG_LEVELS)


def _port(value):
    """SlurmctldPort: N or N-M with 0 < N < M (read_config.c, strtol)."""
    match = re.match(r"\A([0-9]+)(?:-([0-9]+))?\Z", value)
    if match and 0 < int(match.group(1)) <= 65535 and (
            match.group(2) is None or int(match.group(1)) < int(match.group(2)) <= 65535):
        return None
    return "a port 1-65535 or a range N-M such as 6817-6818"


def _time(value):
    if value.lower() in _TIME_WORDS or _TIME_RE.match(value):
        return None
    return "a time limit: INFINITE, minutes, minutes:seconds, hours:minutes:seconds or days-hours[:minutes[:seconds]]"


def _finite_time(value):
    """PriorityCalcPeriod: a time spec, not INFINITE (read_config.c refuses it: "Bad value")."""
    if _TIME_RE.match(value):
        return None
    return "a finite time: minutes, minutes:seconds, hours:minutes:seconds or days-hours[:minutes[:seconds]]"


def _preempt_mode(value):
    tokens = [t.lower() for t in value.split(",")]
    modes = [t for t in tokens if t in _PREEMPT_MODES]
    extras = [t for t in tokens if t in _PREEMPT_WITH]
    if len(modes) + len(extras) == len(tokens) and len(modes) <= 1 and len(extras) <= 1:
        return None
    return "one of OFF, CANCEL, REQUEUE, SUSPEND, optionally with ,GANG or ,WITHIN"


def _oversubscribe(value):
    """_parse_partitionname: NO, EXCLUSIVE, YES[:N], FORCE[:N]."""
    if re.match(r"\A(NO|EXCLUSIVE|YES(:[0-9]+)?|FORCE(:[0-9]+)?)\Z", value, re.IGNORECASE):
        return None
    return "NO, EXCLUSIVE, YES[:N] or FORCE[:N]"


def _partition_state(value):
    """_parse_partitionname compares the first letters: UP, DOWN, DRAIN, INACTIVE."""
    if value.upper().startswith(("UP", "DOWN", "DRAIN", "INACTIVE")):
        return None
    return "UP, DOWN, DRAIN or INACTIVE"


def _partition_select(value):
    """_parse_partitionname: CR_Core, CR_Core_Memory, CR_Socket, CR_Socket_Memory (compared by prefix)."""
    if value.lower().startswith(("cr_core", "cr_socket")):
        return None
    return "CR_Core, CR_Core_Memory, CR_Socket or CR_Socket_Memory"


def _suspend_time(value):
    """Partition SuspendTime: INFINITE, -1 or seconds up to 4294967295."""
    if value.lower() in ("infinite", "-1") or (value.isdigit() and value.isascii() and int(value) <= 0xFFFFFFFF):
        return None
    return "INFINITE, -1 or a number of seconds"


# _parse_select_type_param (read_config.c; 22.05: parse_select_type_param): at most one of these resource kinds,
# and CR_ONE_TASK_PER_CORE not with CR_CPU*.
_SELECT_KINDS = ("cr_socket", "cr_socket_memory", "cr_core", "cr_core_memory", "cr_memory", "cr_cpu", "cr_cpu_memory")


def _select_type_parameters(value, version):
    known = {k.lower(): k for k in VALUE_KEYWORDS["SelectTypeParameters"][release_for(version)]}
    tokens = [t.lower() for t in value.split(",") if t]
    unknown = [t for t in tokens if t not in known]
    kinds = [t for t in tokens if t in _SELECT_KINDS]
    cpu_and_core = "cr_one_task_per_core" in tokens and any(t.startswith("cr_cpu") for t in tokens)
    if tokens and not unknown and len(kinds) <= 1 and not cpu_and_core:
        return None
    kinds = ", ".join(sorted(known.values()))
    return "keywords Slurm %s reads, one resource kind at most (%s)" % (release_for(version), kinds)


def _enforce_part_limits(value):
    """parse_part_enforce_type (slurm_protocol_defs.c)."""
    if value.lower() in ("yes", "up", "true", "any", "no", "down", "false", "all"):
        return None
    return "ALL, ANY or NO"


# slurm_rlimits_info.c: the limits PropagateResourceLimits[Except] names, or ALL / NONE (case-sensitive there).
_RLIMITS = ("AS", "CORE", "CPU", "DATA", "FSIZE", "MEMLOCK", "NOFILE", "NPROC", "RSS", "STACK")


def _rlimits(value):
    if value in ("ALL", "NONE") or all(t in _RLIMITS for t in value.split(",")):
        return None
    return "ALL, NONE or a list of %s" % ", ".join(_RLIMITS)


def _usage_reset(value):
    """PriorityUsageResetPeriod (read_config.c)."""
    if value.lower() in ("none", "now", "daily", "weekly", "monthly", "quarterly", "yearly"):
        return None
    return "NONE, NOW, DAILY, WEEKLY, MONTHLY, QUARTERLY or YEARLY"


def _prio_process(value):
    """PropagatePrioProcess: 0, 1 or 2 (read_config.c, "Bad PropagatePrioProcess")."""
    return None if value in ("0", "1", "2") else "0, 1 or 2"


# _validate_accounting_storage_enforce (read_config.c, the same 22.05 to 26.05): "AccountingStorageEnforce invalid"
# stops slurmctld and slurmd; the words are compared without case, an empty one ends the list.
_ENFORCE_WORDS = ("1", "associations", "2", "limits", "safe", "wckeys", "qos", "all", "nojobs", "nosteps")


def _accounting_enforce(value):
    if all(word.lower() in _ENFORCE_WORDS for word in value.split(",") if word):
        return None
    return "a comma-separated list of %s" % ", ".join(_ENFORCE_WORDS)


def _at_least(minimum, maximum=None):
    """A uint option read_config.c refuses below `minimum` (MaxJobCount=0: "No jobs permitted") or above
    `maximum`."""
    def check(value):
        if value.upper() in ("INFINITE", "UNLIMITED"):
            return None if maximum is None else "%d-%d" % (minimum, maximum)
        number = int(value)
        if number < minimum or (maximum is not None and number > maximum):
            return "%d-%s" % (minimum, maximum if maximum is not None else "")
        return None
    return check


_CPU_BIND = ("no", "none", "socket", "sockets", "ldom", "ldoms", "core", "cores", "thread", "threads", "off", "v",
             "verbose")


def _cpu_bind(value):
    """xlate_cpu_bind_str (slurm_resource_info.c, the same 22.05 to 26.05): comma-separated keywords."""
    if all(t.lower() in _CPU_BIND for t in value.split(",")):
        return None
    return "none, socket, ldom, core or thread (optionally with ,verbose)"


def _cgroup_plugin(value, version):
    """cgroup.c: autodetect, cgroup/v1, cgroup/v2; 25.05+ also disabled."""
    choices = ["autodetect", "cgroup/v1", "cgroup/v2"]
    if parse_version(version) >= (25, 5):
        choices.append("disabled")
    if value in choices:
        return None
    return "one of %s" % ", ".join(choices)


SHAPES = {
    ("slurm.conf", "SlurmctldDebug"): _log_level,
    ("slurm.conf", "SlurmdDebug"): _log_level,
    ("slurm.conf", "SlurmctldSyslogDebug"): _log_level,
    ("slurm.conf", "SlurmdSyslogDebug"): _log_level,
    ("slurm.conf", "SlurmctldPort"): _port,
    ("slurm.conf", "PreemptMode"): _preempt_mode,
    ("slurm.conf", "EnforcePartLimits"): _enforce_part_limits,
    ("slurm.conf", "PropagateResourceLimits"): _rlimits,
    ("slurm.conf", "PropagateResourceLimitsExcept"): _rlimits,
    ("slurm.conf", "PropagatePrioProcess"): _prio_process,
    ("slurm.conf", "PriorityDecayHalfLife"): _time,
    ("slurm.conf", "PriorityCalcPeriod"): _finite_time,
    ("slurm.conf", "PriorityMaxAge"): _time,
    ("slurm.conf", "PriorityUsageResetPeriod"): _usage_reset,
    ("slurm.conf", "AccountingStorageEnforce"): _accounting_enforce,
    # read_config.c's own bounds on integers
    ("slurm.conf", "MaxJobCount"): _at_least(1),
    ("slurm.conf", "MaxStepCount"): _at_least(1),
    ("slurm.conf", "FirstJobId"): _at_least(1),
    ("slurm.conf", "TreeWidth"): _at_least(1),
    ("slurm.conf", "SchedulerTimeSlice"): _at_least(5),
    ("slurm.conf", "MaxDBDMsgs"): _at_least(10000),
    ("slurm.conf", "MaxArraySize"): _at_least(0, 4000001),
    ("partition", "MaxTime"): _time,
    ("partition", "DefaultTime"): _time,
    ("partition", "PreemptMode"): _preempt_mode,
    ("partition", "OverSubscribe"): _oversubscribe,
    ("partition", "Shared"): _oversubscribe,
    ("partition", "State"): _partition_state,
    ("partition", "SelectTypeParameters"): _partition_select,
    ("partition", "SuspendTime"): _suspend_time,
    ("partition", "CpuBind"): _cpu_bind,
    ("partition", "OverTimeLimit"): lambda v: None if v.upper() in ("INFINITE", "UNLIMITED") or (
        v.isdigit() and v.isascii() and int(v) < 0xFFFF) else "INFINITE or minutes 0-65534",
    ("cgroup.conf", "MemorySwappiness"): _at_least(0, 100),
    # read_config.c _validate_and_set_defaults, 22.05 to 26.05: values it logs as errors and then ignores or
    # resets (KeepAliveTime, also bounded there, is refused by name: it moved to CommunicationParameters).
    # "MessageTimeout is too high for effective fault-tolerance"
    ("slurm.conf", "MessageTimeout"): _at_least(0, 100),
    # "MinJobAge must be at least 2" (slurmctld resets it to 2)
    ("slurm.conf", "MinJobAge"): _at_least(2),
    # "MaxJobId can not exceed MAX_JOB_ID, resetting value" (slurm.h MAX_JOB_ID 0x03FFFFFF)
    ("slurm.conf", "MaxJobId"): _at_least(1, 0x03FFFFFF),
    # 24.11+: "Specified MaxNodeCount in slurm.conf (%d) is higher than the maximum allowed (%d)",
    # MAX_SLURM_NODES 65536; 22.05 to 24.05 have no bound and abort allocating the node table
    # ("grow_node_record_table_ptr: malloc failed", seen with MaxNodeCount=4294967294).
    ("slurm.conf", "MaxNodeCount"): _at_least(1, 65536),
}


def _epilog_msg_time(value, version):
    """25.11+: "EpilogMsgTime can not exceed %d, resetting value" (EPILOG_MSG_TIME_MAX 1000000 usec)."""
    if parse_version(version) < (25, 11):
        return None
    return _at_least(0, 1000000)(value)


def _autodetect(value, version):
    """gres.c _handle_autodetect_flags: the flags the release knows (``nvidia`` from 24.11); anything else is
    "unknown autodetect flag" and slurmd detects nothing."""
    known = VALUE_KEYWORDS["AutoDetect"][release_for(version)]
    if value.lower() in known:
        return None
    return "an AutoDetect flag Slurm %s knows (%s)" % (release_for(version), ", ".join(known))


# Select plugins a release no longer ships (src/plugins/select/ at each release's tag): slurmctld then stops with
# "fatal: Can't find plugin for select/cons_res" (select.c; recorded with slurmctld 24.11.5). Slurm converts only
# saved state from cons_res to cons_tres, never the configuration (23.11 RELEASE_NOTES: "Removed select/cons_res.
# Please update your configuration to select/cons_tres").
_REMOVED_SELECT = {"select/cons_res": "23.11", "select/cray_aries": "24.05"}


def _select_type(value, version):
    if not value.startswith("select/"):
        # select.c compares the value with each plugin's full "select/NAME", case-sensitively
        said = ("\"fatal: Can't find plugin for %s\" (select.c)" % value if parse_version(version) < (25, 5)
                else "\"cannot create select context for %s\", then \"fatal: failed to initialize node selection "
                     "plugin\"" % value)
        return ("select/cons_tres or select/linear (with the select/ prefix, in lower case)",
                "slurmctld cannot load SelectType=%s and stops: %s" % (value, said))
    removed = _REMOVED_SELECT.get(value.lower())
    if removed is None or parse_version(version) < parse_version(removed):
        return None
    return ("a select plugin Slurm %s ships (select/cons_tres or select/linear)" % release_for(version),
            "Slurm %s removed %s and slurmctld stops (\"fatal: Can't find plugin for %s\"); set "
            "SelectType=select/cons_tres (it schedules what select/cons_res did, and GPUs besides)"
            % (removed, value, value))


# Topology plugins each release ships (src/plugins/topology/ at its tag), from the release named on; read_config.c
# reads a value containing "none" (23.11 to 24.11) or "none"/"default" (25.05 on, any case) as the release's own
# default; before 23.11 the value names the plugin file as written (topology/none ships).
_TOPOLOGY_PLUGINS = (
    ("22.05", ("3d_torus", "hypercube", "none", "tree")),
    ("23.11", ("3d_torus", "block", "default", "tree")),
    ("25.05", ("block", "flat", "tree")),
    ("26.05", ("block", "flat", "ring", "torus3d", "tree")),
)


def _topology_plugin(value, version):
    target = parse_version(version)
    shipped = ([plugins for release, plugins in _TOPOLOGY_PLUGINS if parse_version(release) <= target]
               or [_TOPOLOGY_PLUGINS[0][1]])[-1]
    lower = value.lower()
    if (23, 11) <= target < (25, 5) and "none" in lower:
        return None
    if target >= (25, 5) and lower in ("none", "default", "topology/none", "topology/default"):
        return None
    # the plugin file's name: as written
    if value.startswith("topology/") and value[len("topology/"):] in shipped:
        return None
    return ("a topology plugin Slurm %s ships (%s)" % (release_for(version), ", ".join(
        "topology/" + p for p in shipped)),
        "slurmctld cannot load TopologyPlugin=%s and stops (\"fatal: Failed to initialize topology plugin\", "
        "read_config.c); topology/block came with 23.11, topology/flat (the "
        "default) with 25.05; topology/hypercube went with 23.11, topology/3d_torus with 25.05" % value)


_CPU_UNITS = ("none", "sockets", "cores", "threads")


def _task_plugin_param(value, version):
    """read_config.c (22.05 to 26.05): one of none/sockets/cores/threads, verbose, autobind= once, SlurmdOffSpec,
    OOMKillStep from 24.11; anything else is "Bad TaskPluginParam" and slurmctld stops."""
    known = ["none", "sockets", "cores", "threads", "verbose", "autobind=none|threads|cores|sockets", "SlurmdOffSpec"]
    if parse_version(version) >= (24, 11):
        known.append("OOMKillStep")
    units, autobind, said = 0, 0, None
    for token in filter(None, value.split(",")):
        lower = token.lower()
        if lower in _CPU_UNITS:
            units += 1
            said = None if units == 1 else "Bad TaskPluginParam: %s" % token
        elif lower.startswith("autobind="):
            autobind += 1
            said = ("Bad TaskPluginParam: autobind already set" if autobind > 1 else None) or (
                None if lower[len("autobind="):] in _CPU_UNITS
                else "Bad TaskPluginParam autobind value: %s" % token[len("autobind="):])
        elif lower not in ("verbose", "slurmdoffspec") and not (lower == "oomkillstep" and "OOMKillStep" in known):
            said = "Bad TaskPluginParam: %s" % token
        if said:
            return ("TaskPluginParam keywords Slurm %s reads (%s; one CPU unit and one autobind at most)"
                    % (release_for(version), ", ".join(known)),
                    "slurmctld stops on it (\"%s\", read_config.c)" % said)
    return None


# slurm.conf options that name plugins (a comma list for the *Plugins and AuthAltTypes), to their type under
# src/plugins/ (plugin_tables.py). SelectType and TopologyPlugin have their own rules above; MpiDefault names
# built libraries (pmix_v4), not directories.
PLUGIN_OPTIONS = {
    "AccountingStorageType": "accounting_storage", "AcctGatherEnergyType": "acct_gather_energy",
    "AcctGatherFilesystemType": "acct_gather_filesystem", "AcctGatherInterconnectType": "acct_gather_interconnect",
    "AcctGatherProfileType": "acct_gather_profile", "AuthAltTypes": "auth", "AuthType": "auth",
    "BurstBufferType": "burst_buffer", "CertmgrType": "certmgr", "CliFilterPlugins": "cli_filter", "CredType": "cred",
    "HashPlugin": "hash", "JobAcctGatherType": "jobacct_gather", "JobCompType": "jobcomp",
    "JobContainerType": "job_container", "JobSubmitPlugins": "job_submit", "MCSPlugin": "mcs",
    "NamespaceType": "namespace", "NodeFeaturesPlugins": "node_features", "PreemptType": "preempt",
    "PrEpPlugins": "prep", "PriorityType": "priority", "ProctrackType": "proctrack", "SchedulerType": "sched",
    "SwitchType": "switch", "TaskPlugin": "task", "TLSType": "tls",
}


# A plugin built in another type's directory: cred.c (23.11 on) loads CredType=cred/slurm from auth/slurm.
_BUILT_IN = {("cred", "slurm"): "auth"}


def _shipped_in(ptype, name):
    """The releases of plugin_tables that ship ``ptype/name``, oldest first; for a plugin removed before the first
    of them (REMOVED_BEFORE), the last series that shipped it."""
    source = _BUILT_IN.get((ptype, name), ptype)
    releases = [release for release in sorted(SHIPPED, key=parse_version)
                if name in SHIPPED[release].get(source, ())]
    if not releases and name in REMOVED_BEFORE.get(ptype, {}):
        return [REMOVED_BEFORE[ptype][name]]
    return releases


# Types whose interface writes "TYPE/" before a name given without it (each x_g_init at the tags of
# plugin_tables.SOURCES): (first release, last release or None). Every other type hands the value as written to
# plugin_context_create (plugin.c), which finds "proctrack/cgroup" but not "cgroup": the daemon loading it stops.
_BARE_NAMES = {
    "acct_gather_energy": ("22.05", None), "acct_gather_interconnect": ("22.05", None), "burst_buffer": ("22.05", None),
    "cli_filter": ("22.05", None), "hash": ("22.05", None), "job_container": ("22.05", None),
    "job_submit": ("22.05", None), "namespace": ("22.05", None), "node_features": ("22.05", None),
    "prep": ("22.05", None), "task": ("22.05", None),
    "auth": ("23.11", None), "cred": ("23.11", None),  # auth.c and cred.c from 23.11
    "tls": ("24.05", "24.11"),  # tls.c; from 25.05 conn.c loads the value as written
}
# Types whose value read_config.c frees when it contains "none" in any case (from 23.11): nothing is loaded. Before
# 23.11, and for the other types, "none" is a plugin name like any other (PreemptType: only "preempt/none").
_NONE_DROPPED = ("accounting_storage", "acct_gather_energy", "acct_gather_filesystem", "acct_gather_interconnect",
                 "acct_gather_profile", "cli_filter", "job_container", "jobacct_gather", "jobcomp", "mcs",
                 "namespace", "switch", "task")


def _bare_loads(ptype, release):
    first, last = _BARE_NAMES.get(ptype, (None, None))
    return first is not None and parse_version(first) <= parse_version(release) and (
        last is None or parse_version(release) <= parse_version(last))


def _load_failure(kind, entry, release):
    """What the daemons log when they cannot load ``entry`` (plugin.c and each interface's init)."""
    if kind == "switch":
        return "\"fatal: Can't find plugin for %s\" (switch.c)" % entry
    if kind == "jobcomp" and release == "22.05":
        return ("\"cannot create jobcomp context for %s\", and slurmctld 22.05 runs on without job completion "
                "records" % entry)
    return "\"cannot create %s context for %s\", and the daemon stops" % (kind, entry)


def _spelling(option, kind, entry, prefix, name, shipped, release):
    """(expected, hint) when Slurm cannot load ``entry`` as spelt: a prefix not in lower case, a bare name the
    release does not complete, or a shipped name in another case (plugin names are matched case-sensitively)."""
    right = "%s/%s" % (kind, next((n for n in sorted(shipped) if n.lower() == name.lower()), name))
    bare = _bare_loads(kind, release)
    if prefix and prefix != prefix.lower():
        # an interface that completes bare names does not know this prefix either: task/Task/affinity
        loaded = "%s/%s" % (kind, entry) if bare else entry
        why = "Slurm matches plugin names case-sensitively and loads %s=%s as %s" % (option, entry, loaded)
    elif not prefix and not bare:
        loaded = entry
        why = "Slurm %s loads %s=%s as written, not as %s" % (release, option, entry, right)
    elif name not in shipped and right != "%s/%s" % (kind, name):
        loaded = "%s/%s" % (kind, name)
        why = "Slurm matches plugin names case-sensitively and loads %s=%s as %s" % (option, entry, loaded)
    else:
        return None
    return ("%s (the plugin with its %s/ prefix, in lower case)" % (right, kind),
            "%s: %s" % (why, _load_failure(kind, loaded, release)))


def _plugin(option):
    ptype = PLUGIN_OPTIONS[option]

    def judge(value, version):
        """A plugin Slurm cannot load as written (_spelling), or that some release ships but not the target one (a
        site's own plugin, unknown to every release, and "none" where read_config.c frees it, are not
        judged)."""
        release = release_for(version)
        kinds = accepted = (ptype,)
        kind = ptype
        if ptype in ("job_container", "namespace"):
            # 25.11 loads JobContainerType as NamespaceType, either prefix as namespace/ (namespace.c); before,
            # job_container.c strips job_container/ only
            kinds = ("job_container", "namespace")
            kind = "namespace" if SHIPPED.get(release, {}).get("namespace") else "job_container"
            accepted = kinds if kind == "namespace" else ("job_container",)
        shipped = set(SHIPPED.get(release, {}).get(kind, ()))
        shipped.update(n for (t, n), source in _BUILT_IN.items() if t == kind and n in SHIPPED.get(release, {}).get(
            source, ()))
        for entry in value.split(","):
            entry = entry.strip()
            prefix, _sep, name = entry.rpartition("/")
            if "none" in entry.lower() and (
                    (kind in _NONE_DROPPED and parse_version(release) >= (23, 11)) or entry == "preempt/none"
                    # slurmctld 22.05 runs on without a jobcomp plugin it cannot load: no records, as asked
                    or (kind == "jobcomp" and release == "22.05")):
                continue
            if prefix and prefix.lower() not in kinds:
                continue
            spelling = _spelling(option, kind, entry, prefix, name, shipped, release)
            if spelling:
                return spelling
            if (not prefix or prefix in accepted) and name in shipped:
                continue
            found = [t for t in ((prefix,) if prefix else ()) + kinds if _shipped_in(t, name)]
            if not found:
                continue
            releases = _shipped_in(found[0], name)
            when = ("from Slurm %s on" % releases[0] if parse_version(releases[0]) > parse_version(release)
                    else "up to Slurm %s" % releases[-1])
            article = "an" if kind[0] in "aeiou" else "a"
            return ("%s %s plugin Slurm %s ships (%s)" % (article, kind, release, ", ".join(
                "%s/%s" % (kind, n) for n in sorted(shipped) if n != "none") or "none"),
                "%s/%s ships %s only (src/plugins/%s/ at each release's tag): the daemons that load it log "
                "\"Couldn't find the specified plugin name for %s/%s looking at all files\" (plugin.c) and fail to "
                "initialize it; set %s for the release in hpc_gres_slurm_version"
                % (found[0], name, when, _BUILT_IN.get((found[0], name), found[0]), found[0], name, option))
        return None
    return judge


VERSIONED_SHAPES = {
    ("slurm.conf", "SelectType"): _select_type,
    ("slurm.conf", "TopologyPlugin"): _topology_plugin,
    ("slurm.conf", "SelectTypeParameters"): _select_type_parameters,
    ("slurm.conf", "TaskPluginParam"): _task_plugin_param,
    ("slurm.conf", "EpilogMsgTime"): _epilog_msg_time,
    ("cgroup.conf", "CgroupPlugin"): _cgroup_plugin,
    ("gres.conf", "AutoDetect"): _autodetect,
}
VERSIONED_SHAPES.update({("slurm.conf", option): _plugin(option) for option in PLUGIN_OPTIONS})


def check(table, option, value, version):
    """None when Slurm's parser accepts `value` (already a checked string) for `option`, else (expected, found,
    hint). `option` is Slurm's spelling (options.lookup); `version` the target release "MAJOR.MINOR"."""
    shape = SHAPES.get((table, option))
    if shape is not None:
        expected = shape(value)
    elif (table, option) in VERSIONED_SHAPES:
        expected = VERSIONED_SHAPES[(table, option)](value, version)
    else:
        return None
    if expected is None:
        return None
    if isinstance(expected, tuple):
        expected, hint = expected
        return expected, describe(value), hint
    return expected, describe(value), "Slurm stops reading the file at a value it cannot parse for %s" % option


# Options read_config.c judges together (_validate_and_set_defaults and _parse_partitionname, the same 22.05 to
# 26.05): a combination it stops on, or where it ignores one of the values. Each rule takes the settings as
# written ({Slurm's spelling: text}, defaults included) and the release, and returns None or (the options
# involved, expected, found, hint).
_TIME_PARTS_RE = re.compile(r"[0-9]+")
_PRIORITY_WEIGHTS = ("PriorityWeightAge", "PriorityWeightAssoc", "PriorityWeightFairshare", "PriorityWeightJobSize",
                     "PriorityWeightPartition", "PriorityWeightQOS")


# (ignored, kept): read_config.c logs "DefMemPerCPU ignored, since it's mutually exclusive with DefMemPerNode" and
# runs on with the kept one, in slurm.conf and on a PartitionName= line alike (22.05 to 26.05).
IGNORED_BESIDE = (("DefMemPerCPU", "DefMemPerNode"), ("MaxMemPerCPU", "MaxMemPerNode"))


def _exclusive(ignored, kept):
    def rule(settings, version):
        if ignored in settings and kept in settings:
            return ((ignored, kept), "%s or %s, not both" % (ignored, kept), "both",
                    "Slurm ignores %s: \"mutually exclusive with %s\"" % (ignored, kept))
        return None
    return rule


def _allow_deny(allow, deny):
    def rule(settings, version):
        if deny in settings and allow in settings and settings[allow].upper() != "ALL":
            return ((deny, allow), "%s or %s, not both" % (allow, deny), "both",
                    "Slurm ignores %s: \"Both %s and %s are defined\"" % (deny, allow, deny))
        return None
    return rule


def _preempt(settings, version):
    """PreemptType and PreemptMode values incompatible; PreemptMode=SUSPEND requires GANG too."""
    mode = settings.get("PreemptMode", "OFF")
    tokens = [t.lower() for t in mode.split(",")]
    kind = ([t for t in tokens if t not in _PREEMPT_WITH] or ["off"])[0]
    kind = {"cluster": "off", "on": "suspend"}.get(kind, kind)
    ptype = settings.get("PreemptType", "preempt/none")
    if kind == "suspend" and tokens == [tokens[0]]:
        return (("PreemptMode",), "PreemptMode=SUSPEND,GANG", mode, "Slurm stops: \"PreemptMode=SUSPEND requires "
                "GANG too\"")
    without_gang = [t for t in tokens if t != "gang"]
    if ptype == "preempt/none" and without_gang and without_gang != ["off"] and without_gang != ["cluster"]:
        return (("PreemptMode", "PreemptType"), "PreemptMode=OFF (optionally with GANG) while PreemptType is "
                "preempt/none", "PreemptMode=%s" % mode, "set PreemptType (preempt/partition_prio or preempt/qos); "
                "Slurm stops: \"PreemptType and PreemptMode values incompatible\"")
    if ptype in ("preempt/qos", "preempt/partition_prio") and kind == "off":
        return (("PreemptType", "PreemptMode"), "a PreemptMode other than OFF with PreemptType=%s" % ptype,
                "PreemptMode=%s" % mode, "Slurm stops: \"PreemptType and PreemptMode values incompatible\"")
    return None


def _uint(settings, key, default):
    value = settings.get(key)
    if value is None:
        return default
    if value.upper() in ("INFINITE", "UNLIMITED"):
        return 0xFFFFFFFF
    return int(value) if value.isdigit() else default


def _priority_weights(settings, version):
    """"PriorityWeight values too high, job priority value may overflow": their sum must fit 32 bits."""
    total = sum(_uint(settings, key, 0) for key in _PRIORITY_WEIGHTS)
    if total > 0xFFFFFFFF:
        named = tuple(k for k in _PRIORITY_WEIGHTS if k in settings)
        return (named, "PriorityWeight* values whose sum is at most 4294967295", "a sum of %d" % total,
                "Slurm warns \"job priority value may overflow\"")
    return None


def _job_ids(settings, version):
    """FirstJobId > MaxJobId stops Slurm (defaults 1 and 0x03ff0000, read_config.h)."""
    first = _uint(settings, "FirstJobId", 1)
    last = min(_uint(settings, "MaxJobId", 0x03FF0000), 0x03FFFFFF)
    if first > last:
        return (("FirstJobId", "MaxJobId"), "FirstJobId at most MaxJobId (%d)" % last, str(first),
                "Slurm stops: \"FirstJobId > MaxJobId\"")
    return None


def _max_node_count(settings, version):
    """MaxNodeCount only compatible with cons_tres (the default SelectType from 23.11, select/linear before)."""
    if "MaxNodeCount" not in settings:
        return None
    default = "select/cons_tres" if parse_version(version) >= (23, 11) else "select/linear"
    select = settings.get("SelectType", default)
    if "cons_tres" not in select:
        return (("MaxNodeCount", "SelectType"), "MaxNodeCount only with SelectType=select/cons_tres",
                "SelectType=%s" % select, "Slurm stops: \"MaxNodeCount only compatible with cons_tres\"")
    return None


def _sched_log(settings, version):
    if _uint(settings, "SlurmSchedLogLevel", 0) and "SlurmSchedLogFile" not in settings:
        return (("SlurmSchedLogLevel",), "SlurmSchedLogFile set when SlurmSchedLogLevel is not 0",
                "no SlurmSchedLogFile", "Slurm stops: \"SlurmSchedLogLevel requires SlurmSchedLogFile value\"")
    return None


def _mcs(settings, version):
    plugin = settings.get("MCSPlugin")
    if "MCSParameters" in settings and plugin is None:
        return (("MCSParameters",), "MCSPlugin set when MCSParameters is", "no MCSPlugin",
                "Slurm stops: \"MCSParameters=... used and no MCSPlugin\"")
    if plugin == "mcs/group" and "MCSParameters" not in settings:
        return (("MCSPlugin",), "MCSParameters with MCSPlugin=mcs/group", "no MCSParameters",
                "Slurm stops: \"MCSPlugin is mcs/group and no MCSParameters\"")
    return None


def _decay(settings, version):
    """PriorityDecayHalfLife=0 needs PriorityUsageResetPeriod, else "the priority plugin will result in rolling
    over" and Slurm stops."""
    half_life = settings.get("PriorityDecayHalfLife")
    if half_life is None or "PriorityUsageResetPeriod" in settings:
        return None
    if half_life.lower() not in _TIME_WORDS and not any(int(n) for n in _TIME_PARTS_RE.findall(half_life)):
        return (("PriorityDecayHalfLife",), "PriorityDecayHalfLife other than 0, or PriorityUsageResetPeriod set",
                "PriorityDecayHalfLife=%s without PriorityUsageResetPeriod" % half_life,
                "Slurm stops: \"You have to either have PriorityDecayHalfLife != 0 or PriorityUsageResetPeriod "
                "set\"")
    return None


RELATIONS = {
    "slurm.conf": tuple(_exclusive(*pair) for pair in IGNORED_BESIDE) + (
        _preempt, _priority_weights, _job_ids, _max_node_count, _sched_log, _mcs, _decay),
    "partition": tuple(_exclusive(*pair) for pair in IGNORED_BESIDE) + (
        _allow_deny("AllowAccounts", "DenyAccounts"), _allow_deny("AllowQos", "DenyQos")),
}


def relation_problems(table, settings, version):
    """[(options involved, expected, found, hint)] for combinations of `settings` (one table's final {Slurm's
    spelling: text}, defaults included) that Slurm stops on, or where it ignores one of the values. The options
    involved are in the order a message should name them (the ignored or offending one first)."""
    problems = []
    for rule in RELATIONS.get(table, ()):
        found = rule(settings, version)
        if found:
            problems.append(found)
    return problems
