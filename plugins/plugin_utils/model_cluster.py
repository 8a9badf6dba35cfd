# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of the cluster-wide variables: name, release, options, partitions, config mode."""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import option_values, options, values, versions
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model_access, model_gres
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_problems import describe, did_you_mean
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import (
    CLUSTER_VARS,
    COMMAND_LINE_OPTIONS,
    CONFIG_MODES,
    DEFAULT_PARTITION,
    LINE_RECORD_KEYS,
    MAX_PARTITIONS,
    PARTITION_KEYS,
    SLURMD_GROUP,
)


def check_max_node_count(col, host, overrides, settings, count):
    """node_conf.c: "Attempting to create node record past MaxNodeCount" for every node beyond it (22.05 to 26.05;
    the man page's "ignored if less than the number of nodes" is not what slurmd does)."""
    value = settings.get("MaxNodeCount")
    if value is None or not value.isdigit() or int(value) >= count:
        return
    key = [k for k in overrides if isinstance(k, str) and k.lower() == "maxnodecount"][0]
    col.add(host, "hpc_gres_slurm_conf_options.%s" % key, "MaxNodeCount at least the number of nodes (%d)" % count, value,
            "slurmd logs \"Attempting to create node record past MaxNodeCount\" for every node beyond it")


_CLUSTER_NAME_RE = re.compile(r"\A[A-Za-z0-9][^=]*\Z")


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


def cluster_name(col, host, value):
    problem = cluster_name_problem(value)
    if problem:
        col.add(host, "hpc_gres_cluster_name", problem, model_gres.describe_chars(value, r"[A-Za-z0-9!$-<>-\[\]-~]"))
        return "cluster"
    return str(value)


def check_cgroup_plugin(col, host, cgroup_conf, release):
    """CgroupPlugin=cgroup/v1 where the release deprecates it: a warning (it still works)."""
    if release is None or versions.rule("cgroup_v1", release) != "deprecated":
        return
    for key, value in cgroup_conf.items():
        if key.lower() == "cgroupplugin" and value.strip().lower() == "cgroup/v1":
            col.warn(host, "hpc_gres_cgroup_conf_options.%s" % key,
                     "cgroup/v2 or autodetect (cgroup/v1 is deprecated in Slurm %s, hpc_gres_slurm_version)" % release, value,
                     "slurmd logs 'cgroup/v1 plugin is deprecated, please upgrade to cgroup/v2'; boot the nodes with "
                     "the unified hierarchy (systemd.unified_cgroup_hierarchy=1) and use cgroup/v2")


def slurm_release(col, host, value):
    """The release the cluster runs, "24.11"; None after recording a problem. Unset: DEFAULT_SLURM_VERSION."""
    if value is None:
        return versions.DEFAULT_SLURM_VERSION
    expected = "a Slurm release %s to %s, quoted (\"24.11\"): %s" % (
        versions.SUPPORTED[0], versions.SUPPORTED[-1], ", ".join(versions.SUPPORTED))
    short = versions.short_month(value)
    if short is not None:
        col.add(host, "hpc_gres_slurm_version", expected, describe(value),
                "Slurm writes the month with two digits: %s if that is the release slurmctld -V prints" % short)
        return None
    try:
        release = versions.release_of(value)
    except ValueError:
        col.add(host, "hpc_gres_slurm_version", expected, describe(value))
        return None
    if release not in versions.SUPPORTED:
        hint = None
        if versions.parse_version(release) > versions.parse_version(versions.RELEASES[-1]):
            hint = ("a release newer than this collection knows: its rules go into "
                    "plugins/module_utils/slurm/versions.py")
        col.add(host, "hpc_gres_slurm_version", expected, describe(value), hint)
        return None
    return release


def config_mode(col, host, cluster, nodes):
    mode = cluster.get("hpc_gres_config_mode", CLUSTER_VARS["hpc_gres_config_mode"])
    if mode not in CONFIG_MODES:
        col.add(host, "hpc_gres_config_mode", "one of %s" % ", ".join(CONFIG_MODES), describe(mode))
        mode = "files"
    include = cluster.get("hpc_gres_include_file", CLUSTER_VARS["hpc_gres_include_file"])
    if not isinstance(include, str) or not re.match(r"^[A-Za-z0-9_.-]+(/[A-Za-z0-9_.-]+)*$", include) or (
            ".." in include.split("/")) or include in ("slurm.conf", "gres.conf", "cgroup.conf"):
        col.add(host, "hpc_gres_include_file", "a file name relative to the Slurm config directory, not "
                "slurm.conf, gres.conf or cgroup.conf", model_gres.describe_chars(include, r"[A-Za-z0-9_./-]"))
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
                        "%d option(s)" % len(cluster[var]) if isinstance(cluster[var], dict) else describe(
                            cluster[var]))
    return mode, include


def check_accounting(col, host, options):
    """slurmctld 22.05+ exits ("slurmdbd is required to run with TRES gres/gpu") on GRES TRES without slurmdbd."""
    if not isinstance(options, dict):
        return
    tres = {str(k).lower(): (k, v) for k, v in options.items()}.get("accountingstoragetres")
    if tres and tres[1] and "gres/" in str(tres[1]).lower() and not model_access.names_slurmdbd(options):
        col.add(host, "hpc_gres_slurm_conf_options.%s" % tres[0],
                "GRES TRES only with AccountingStorageType=accounting_storage/slurmdbd",
                "%s without slurmdbd" % tres[1],
                "slurmctld exits with 'slurmdbd is required to run with TRES gres/gpu'; with slurmdbd configured "
                "the gres/gpu TRES are added automatically")


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
                col.add(host, "%s[%d]" % (field, pos), "a string or integer list element", describe(item))
        if len(parts) != len(value):
            return None
        text = ",".join(parts)
        return text if col.check(host, field, values.check_option_value(text, quoted_ok)) else None
    col.add(host, field, "a string, integer, boolean or list of those (null removes a default)", describe(value))
    return None


def merged_options(col, host, var, defaults, overrides, owned, table, version):
    """Defaults merged with the user's dict (keys case-insensitive, written as Slurm spells them; null drops a
    default). Every key must be one the target Slurm release reads in `table`, every value fit its type."""
    merged = {}
    for key, value in defaults:
        name, _kind = options.lookup(table, key, version)
        merged[name] = str(value)
    if overrides is None:
        return merged
    if not isinstance(overrides, dict):
        col.add(host, var, "a mapping of option name to value", describe(overrides))
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


def partitions(col, host, value, groups, hostvars, slurmd_set, by_name, version):
    if value is None:
        return [dict(DEFAULT_PARTITION, options=dict(DEFAULT_PARTITION["options"]))]
    if not isinstance(value, (list, tuple)) or not value:
        col.add(host, "hpc_gres_partitions", "a non-empty list of partitions ({name, group|nodes, ...})",
                describe(value))
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
            col.add(host, field + ".default", "true or false", describe(default))
            default = False
        if default:
            defaults.append(name)
        settings = merged_options(col, host, field + ".options", (("MaxTime", "INFINITE"), ("State", "UP")),
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
            col.add(host, field + ".group", "an inventory group", describe(group),
                    did_you_mean(group, [g for g in groups if g not in ("all", "ungrouped")])
                    if isinstance(group, str) else None)
            return []
        members = [host_to_name[h] for h in groups[group] if h in slurmd_set and h in host_to_name]
        if not members and not any(h in slurmd_set for h in groups[group]):
            # (a group whose slurmd hosts were all refused for their own values has its problems named there)
            col.add(host, field + ".group", "a group with hosts from %s" % SLURMD_GROUP,
                    "group %s has none" % group)
        return sorted(set(members), key=known_names.get)
    nodes = part["nodes"]
    if isinstance(nodes, str) and nodes.upper() == "ALL":
        return "ALL"
    if isinstance(nodes, str):
        size = _hostlist_size(nodes)
        # bounded before it is expanded; a little over the node count still expands, so that a name written twice
        # or an unknown one is what the refusal names
        if size > len(known_names) + 1024:
            col.add(host, field + ".nodes", "ALL, or a hostlist of at most %d names (the %d nodes of group %s and "
                    "1024 more)" % (len(known_names) + 1024, len(known_names), SLURMD_GROUP),
                    "%s (%d names)" % (describe(nodes), size))
            return []
        try:
            nodes = hostlist.expand_hostlist(nodes)
        except hostlist.BadHostlist:
            col.add(host, field + ".nodes", "ALL, a Slurm hostlist or a list of node names", describe(nodes))
            return []
    if not isinstance(nodes, (list, tuple)) or not nodes:
        col.add(host, field + ".nodes", "ALL, a Slurm hostlist or a list of node names", describe(nodes))
        return []
    not_names = [(pos, n) for pos, n in enumerate(nodes) if not isinstance(n, str)]
    for pos, item in not_names[:5]:
        col.add(host, "%s.nodes[%d]" % (field, pos), "a Slurm node name", describe(item))
    if not_names:
        return []
    unknown = [n for n in nodes if n not in known_names]
    if unknown:
        col.add(host, field + ".nodes", "Slurm node names of hosts in %s" % SLURMD_GROUP,
                "unknown %s" % ", ".join(values.describe(n).rsplit(" (", 1)[0] for n in unknown[:5]))
        return []
    return sorted(set(nodes), key=known_names.get)
