"""Values Slurm's configuration parser itself refuses, for the string options whose syntax it checks while reading.

values.py decides which characters may be written at all; option_tables.py which keys and parser types a release
knows. Some string options are then parsed again by read_config.c while the file is read, and a value that fails
there stops slurmctld and slurmd ("Unable to process configuration file"). The shapes below are those checks, each
from the Slurm function named (22.05 to 26.05 unless said otherwise). Options not listed are not checked beyond
their characters: plugin names and the other flag lists (DebugFlags, PrologFlags, ...) are read by later code.

``check(table, option, value, version)`` returns None or (expected, found, hint).
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_tables import VALUE_KEYWORDS
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.options import parse_version, release_for
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
    return "keywords Slurm %s reads, one resource kind at most (%s)" % (release_for(version),
                                                                         ", ".join(sorted(known.values())))


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
}
VERSIONED_SHAPES = {
    ("slurm.conf", "SelectTypeParameters"): _select_type_parameters,
    ("cgroup.conf", "CgroupPlugin"): _cgroup_plugin,
}


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
    return expected, describe(value), "Slurm stops reading the file at a value it cannot parse for %s" % option
