"""Slurm releases and the rules that differ between them: one table, each rule with the source it comes from.

The renderer (controller) and ``gres_verify`` (node) both read this table: the controller judges the inventory for
the release the cluster runs (``hpc_gres_slurm_version``), the node judges the staged files for the release its slurmd
reports (``slurmd -V``). A new release is one line in ``RELEASES`` plus a row per rule that changes in it.

Option names a release added, removed or renamed are not here: they come with the option tables of issue 11
(``options.py``, branch ``hostile``), which read ``DEFAULT_SLURM_VERSION`` and the model's ``slurm_version``.
"""
import re
from collections import namedtuple

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import hostlists
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges

# Every major release, oldest first. Slurm's upgrade compatibility window is counted in these steps.
RELEASES = ("20.02", "20.11", "21.08", "22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05")
# What the collection renders for: the releases from which on its rules are known.
SUPPORTED = RELEASES[RELEASES.index("22.05"):]
# Proven end to end by the test suite (real daemons of each: Debian bookworm, trixie and sid).
TESTED = ("22.05", "24.11", "26.05")
# The release assumed when the inventory does not set hpc_gres_slurm_version (docs/inventory.md says why: Debian 13's, the
# middle of what GPU sites run, 23.11 to 25.x, and the strictest rule set among them that still matches most).
DEFAULT_SLURM_VERSION = "24.11"

Rule = namedtuple("Rule", "name since value source")

# name, first release it holds for (until a later row of the same name), value, where it comes from.
RULES = (
    Rule("hostlist_suffix", "20.02", False,
         "src/common/hostlist.c _hostlist_create_bracketed (22.05): a ']' must end the token or be followed by ','; "
         "slurmctld 22.05 stops with 'fatal: Unable to create NodeAddr list from node[01-02]-ib'"),
    Rule("hostlist_suffix", "23.11", True,
         "NEWS 23.11.0: 'Allow for a shared suffix to be used with the hostlist format. E.g., "
         "\"node[0001-0010]-int\".' (commit 0994b5f198)"),
    # AutoDetect mode -> the gpu plugins slurmd may load for it on NVIDIA GPUs, in the order it tries them.
    Rule("autodetect", "20.02", (("off", ()), ("nvml", ("gpu_nvml.so",))),
         "gres.conf(5) 22.05 AutoDetect: 'nvml: Automatically detect NVIDIA GPUs. Requires the NVIDIA Management "
         "Library (NVML).'; src/plugins/gpu/nvml"),
    Rule("autodetect", "24.11", (("off", ()), ("nvml", ("gpu_nvml.so",)), ("nvidia", ("gpu_nvidia.so",))),
         "gres.conf(5) 24.11 AutoDetect: 'nvidia: Automatically detect NVIDIA GPUs. No library required, but "
         "doesn't detect MIGs or NVlinks. Added in Slurm 24.11.'; src/plugins/gpu/nvidia (22.05's slurmd logs "
         "'error: unknown autodetect flag 'nvidia'')"),
    Rule("autodetect", "26.05", (("off", ()), ("nvml", ("gpu_nvml.so",)), ("nvidia", ("gpu_nvidia.so",)),
                                 ("full", ("gpu_nvml.so", "gpu_nvidia.so"))),
         "RELEASE_NOTES 26.05, gres.conf: 'Add AutoDetect=full option to try all GRES plugin AutoDetection types on "
         "slurmd start.'; src/interfaces/gpu.c _gpu_plugin_init_full probes nvml, then nvidia, rsmi, oneapi (22.05 "
         "and 24.11 log 'error: unknown autodetect flag 'full'')"),
    # How GPU Cores= must line up with sockets: none, whole sockets, or exactly one whole socket or all cores.
    Rule("socket_boundary", "20.02", "none",
         "gres.conf(5) 22.05 Cores: 'should generally be used to identify all cores on some socket' (not checked)"),
    Rule("socket_boundary", "24.11", "whole_sockets",
         "gres.conf(5) 24.11 Cores: 'If this option is used, all the cores in a socket* must be specified "
         "together.'; src/interfaces/gres.c _check_core_range_matches_sock (commit b886b6e82f, first in 24.11.0): "
         "slurmctld drains the node"),
    Rule("socket_boundary", "25.11", "one_socket_or_all",
         "commit 06fa614909 'Don't allow gres to have affinity to multiple sockets' (first in 25.11.0): "
         "_check_core_range_matches_sock accepts all cores or exactly one whole socket"),
    # The default SlurmctldPidFile: where slurmctld of the release's own systemd unit can write it.
    Rule("slurmctld_pidfile", "20.02", "/run/slurmctld.pid",
         "etc/slurmctld.service.in (22.05): slurmctld runs as root; etc/slurm.conf.example SlurmctldPidFile="
         "/var/run/slurmctld.pid"),
    Rule("slurmctld_pidfile", "23.11", "/run/slurmctld/slurmctld.pid",
         "etc/slurmctld.service.in 23.11: User=slurm, RuntimeDirectory=slurmctld (commits 7b9a362d7f, f08835f2f0): "
         "slurmctld cannot write /run/slurmctld.pid ('error: Unable to open pidfile')"),
    # How many major releases older than itself a daemon accepts (slurmdbd > slurmctld > slurmd, commands).
    Rule("compat_window", "20.02", 2,
         "upgrades.html#compatibility_window: 'Slurm has long supported in-place upgrades from the previous two "
         "major releases.'"),
    Rule("compat_window", "24.11", 3,
         "upgrades.html#compatibility_window: 'Slurm 24.11 introduced compatibility with the previous three major "
         "releases.'"),
    # The cgroup/v1 plugin (CgroupPlugin=cgroup/v1, or autodetect on a host with the legacy hierarchy).
    Rule("cgroup_v1", "20.02", "supported",
         "cgroup.conf(5) 22.05 CgroupPlugin: 'cgroup/v1 which supports the legacy interface of cgroup v1'"),
    Rule("cgroup_v1", "26.05", "deprecated",
         "26.05 slurmd logs 'warning: cgroup/v1 plugin is deprecated, please upgrade to cgroup/v2 at your earliest "
         "convenience' (Debian 26.05.5; 24.11.5 does not); cgroup.conf(5): 'cgroup/v1 plugin is deprecated and no "
         "new features will be added to it'"),
)
RULE_NAMES = tuple(sorted(set(r.name for r in RULES)))

# Facts of point releases: name -> (first affected version, first fixed version or None, source).
POINT_FACTS = {
    "slurmd_g_silent": ("24.11.0", "24.11.3",
                        "Slurm CHANGELOG/slurm-24.11.md, 'Changes in Slurm 24.11.3': 'Fix regression where slurmd -G "
                        "gives no output.'"),
}


def point_fact(name, value):
    """Whether the point-release fact ``name`` holds for the version ``value`` (``"slurm 24.11.1"``); False for a
    version without its point release (``"24.11"``: which one runs is not known)."""
    first, fixed, _source = POINT_FACTS[name]
    text = str(value or "")
    if not re.search(r"\d{2}\.\d{1,2}\.\d+", text):
        return False
    version = parse_version(text)
    return parse_version(first) <= version and (fixed is None or version < parse_version(fixed))


_VERSION_RE = re.compile(r"(?<![\d.])(\d{2})\.(\d{1,2})(?:\.(\d+))?")


def parse_version(value):
    """``"slurm-wlm 22.05.8"`` / ``"slurm 24.11.5"`` / ``"24.11"`` / ``24.11`` (YAML float) -> (22, 5, 8) ...

    Raises ValueError when no MAJOR.MINOR version is in the value.
    """
    if isinstance(value, bool) or value is None:
        raise ValueError("expected a Slurm version such as 24.11, found %r" % (value,))
    if isinstance(value, (tuple, list)):
        parts = [int(v) for v in value] + [0, 0, 0]
        return tuple(parts[:3])
    if isinstance(value, float):
        value = "%.2f" % value  # an unquoted 22.05 in YAML
    match = _VERSION_RE.search(str(value))
    if not match:
        raise ValueError("expected a Slurm version such as 24.11, found %r" % (value,))
    return (int(match.group(1)), int(match.group(2)), int(match.group(3) or 0))


def short_month(value):
    """``"23.02"`` for a release written with a one-digit month (``"23.2"``), else None. Slurm writes every release
    with two (``slurmctld -V``: ``slurm 23.02.7``); ``23.2`` may be 23.02 or a cut-off 23.11, so it is not guessed."""
    if not isinstance(value, str):
        return None
    match = re.match(r"^\s*(?:slurm(?:-wlm)?\s+)?(\d{2})\.(\d)(?![\d])", value)
    return "%s.0%s" % (match.group(1), match.group(2)) if match else None


def release_of(value):
    """The major release ``"24.11"`` of any version form parse_version takes."""
    major, minor = parse_version(value)[:2]
    return "%02d.%02d" % (major, minor)


def _key(release):
    return parse_version(release)[:2]


def known(release):
    return release in RELEASES


def rule_row(name, value):
    """The table row of rule ``name`` in force for the release of ``value`` (KeyError for an unknown rule)."""
    if name not in RULE_NAMES:
        raise KeyError(name)
    key = _key(value)
    chosen = None
    for row in RULES:
        if row.name == name and _key(row.since) <= key:
            chosen = row
    if chosen is None:
        raise ValueError("no %s rule for Slurm %s" % (name, release_of(value)))
    return chosen


def rule(name, value):
    """The value of rule ``name`` for the release of ``value``."""
    return rule_row(name, value).value


def rules(value):
    """{rule name: value} for one release."""
    return dict((name, rule(name, value)) for name in RULE_NAMES)


def first_release(name, predicate):
    """The first release from which rule ``name`` satisfies ``predicate(value)``, or None."""
    for row in sorted((r for r in RULES if r.name == name), key=lambda r: _key(r.since)):
        if predicate(row.value):
            return row.since
    return None


# ---------------------------------------------------------------------------------------------- AutoDetect


def autodetect_modes(value):
    """The AutoDetect modes the release knows, in table order (``off`` first)."""
    return tuple(pair[0] for pair in rule("autodetect", value))


def autodetect_plugins(mode, value):
    """The gpu plugins (``("gpu_nvml.so",)``) slurmd of that release may load for ``mode`` on NVIDIA GPUs, in the
    order it tries them; ``()`` for off or a mode the release does not know."""
    return dict(rule("autodetect", value)).get(mode, ())


def autodetect_since(mode):
    return first_release("autodetect", lambda modes: mode in dict(modes))


# ---------------------------------------------------------------------------------------------- hostlists


def _tokens(expr):
    """Top-level comma-separated tokens of a hostlist expression (commas inside brackets kept)."""
    tokens, depth, start = [], 0, 0
    for pos, char in enumerate(expr):
        if char == "[":
            depth += 1
        elif char == "]":
            depth -= 1
        elif char == "," and depth == 0:
            tokens.append(expr[start:pos])
            start = pos + 1
    tokens.append(expr[start:])
    return [t for t in tokens if t]


def hostlist_form_problem(expr, value):
    """None when Slurm of that release parses the hostlist ``expr``; else the first token it rejects.

    Without suffix support (before 23.11) the last ``]`` of a token must end it: ``node[01-02]-ib`` is rejected,
    ``node[01-02]-ib[0]`` and ``rack[1-2]-n[01-04]`` are read.
    """
    if rule("hostlist_suffix", value):
        return None
    for token in _tokens(expr):
        close = token.rfind("]")
        if close >= 0 and close != len(token) - 1:
            return token
    return None


def format_hostlist(names, value):
    """A Slurm hostlist for ``names`` in a form the release of ``value`` parses: ``hostlists.slurm_hostlist`` (the
    renderer's), with suffix tokens (``node[01-02]-ib``) written name by name before 23.11."""
    return hostlists.slurm_hostlist(list(names), suffix=rule("hostlist_suffix", value))


# ---------------------------------------------------------------------------------------------- socket boundary


def _violation(cores, sockets, cores_per_socket, kind):
    """The first socket Slurm's _check_core_range_matches_sock names for ``kind``, or None (mirrors its loop)."""
    if kind == "none":
        return None
    coreset = set(cores)
    total = len(coreset)
    if kind == "one_socket_or_all" and total == sockets * cores_per_socket:
        return None
    for sock in range(sockets):
        first, last = sock * cores_per_socket, (sock + 1) * cores_per_socket
        count = sum(1 for c in range(first, last) if c in coreset)
        if not count:
            continue
        if kind == "whole_sockets" and count == cores_per_socket:
            continue
        if kind == "one_socket_or_all" and count == cores_per_socket == total:
            continue
        return sock
    return None


def socket_boundary_message(cores, node_name, sock, cores_per_socket, autodetected=False):
    """Slurm's own text (gres.c): what slurmctld logs and sets as the node's drain reason."""
    what = ("autodetected core affinity %s on node" if autodetected else "core specification %s for node")
    return "gres/gpu GRES %s %s doesn't match socket boundaries. (Socket %d is cores %d-%d)" % (
        what % format_int_ranges(cores), node_name, sock, sock * cores_per_socket, (sock + 1) * cores_per_socket - 1)


_BOUNDARY_EXPECTED = {
    "whole_sockets": "Cores covering whole sockets",
    "one_socket_or_all": "Cores covering exactly one whole socket, or all cores",
}


def socket_boundary_findings(cores, sockets, cores_per_socket, value):
    """The first socket-boundary rule the cores break, as ``[(severity, since, expected, socket)]`` (or ``[]``).

    ``error``: the release of ``value`` drains the node (``since`` is the release that brought the rule).
    ``warning``: a later release does (the node would drain after an upgrade). ``socket`` is the one Slurm names
    (``socket_boundary_message`` gives Slurm's text).
    """
    out = []
    own = rule("socket_boundary", value)
    seen = set()
    for row in sorted((r for r in RULES if r.name == "socket_boundary"), key=lambda r: _key(r.since)):
        if row.value == "none" or row.value in seen:
            continue
        seen.add(row.value)
        later = _key(row.since) > _key(value)
        if not later and row.value != own:
            continue  # an older rule the release's own rule replaced
        sock = _violation(cores, sockets, cores_per_socket, row.value)
        if sock is None:
            continue
        out.append(("warning" if later else "error", row.since, _BOUNDARY_EXPECTED[row.value], sock))
        break  # later rules are stricter: the first one broken is what the admin must fix first
    return out


# ---------------------------------------------------------------------------------------------- daemon versions


def releases_apart(older, newer):
    """How many major releases ``newer`` is after ``older`` (negative when it is before); None if one is unknown."""
    a, b = release_of(older), release_of(newer)
    if a not in RELEASES or b not in RELEASES:
        return None
    return RELEASES.index(b) - RELEASES.index(a)


def compatible_older(value):
    """The releases a daemon of this release accepts besides its own (upgrades.html compatibility window)."""
    release = release_of(value)
    if release not in RELEASES:
        return ()
    pos = RELEASES.index(release)
    window = rule("compat_window", release)
    return tuple(reversed(RELEASES[max(0, pos - window):pos]))


def version_problems(expected, daemons):
    """Problems with the Slurm versions a cluster's daemons report.

    ``expected``: the inventory's ``hpc_gres_slurm_version``. ``daemons``: ``[{"host", "daemon": "slurmctld" | "slurmd" |
    "slurmdbd", "version": output of DAEMON -V, "error": why it could not be run (optional)}]``. Every slurmctld
    and slurmd must run the release the inventory names (the files are rendered and proven for it), and the mix
    must be one Slurm supports (upgrades.html): every slurmctld the same release, slurmdbd >= slurmctld >= slurmd,
    each within the newer one's compatibility window (slurmdbd may be newer than hpc_gres_slurm_version: it is upgraded
    first).
    """
    want = release_of(expected)
    problems = []
    parsed = []
    for entry in daemons:
        field = "%s -V" % entry["daemon"]
        try:
            if entry.get("error"):
                raise ValueError(entry["error"])
            version = parse_version(entry["version"])
        except ValueError:
            problems.append(Problem(entry["host"], field, "a Slurm version such as 24.11.5",
                                    repr(entry.get("error") or entry.get("version")),
                                    "is %s installed and on root's PATH? the roles' variables hpc_gres_slurmd_slurmd, "
                                    "hpc_gres_slurmctld_slurmctld and _slurmdbd name the commands"
                                    % entry["daemon"]))
            continue
        parsed.append(dict(entry, release=release_of(version), text="%d.%02d.%d" % version))

    ctlds = [d for d in parsed if d["daemon"] == "slurmctld"]
    ctld_releases = sorted(set(d["release"] for d in ctlds), key=_key)
    if len(ctld_releases) > 1:
        first = ctlds[0]
        for other in ctlds[1:]:
            if other["release"] != first["release"]:
                problems.append(Problem(
                    other["host"], "slurmctld -V", "the release of every other slurmctld (%s on %s)"
                    % (first["release"], first["host"]), other["text"],
                    "upgrades.html: when multiple slurmctld hosts are used, all should be upgraded simultaneously"))
    ctld = ctlds[0] if ctlds else None
    for entry in parsed:
        if entry["daemon"] == "slurmd" and ctld is not None:
            problem = _mix_problem(entry, ctld, "slurmctld is upgraded first: slurmd may be older, never newer")
            if problem:
                problems.append(problem)
        elif entry["daemon"] == "slurmctld" and entry is ctld:
            for dbd in (d for d in parsed if d["daemon"] == "slurmdbd"):
                problem = _mix_problem(entry, dbd, "slurmdbd is upgraded first: slurmctld may be older, never newer")
                if problem:
                    problems.append(problem)
    # A daemon already reported for an unsupported mix is not reported again for disagreeing with the inventory.
    reported = set((p.host, p.field) for p in problems)
    for entry in parsed:
        if entry["daemon"] == "slurmdbd":
            continue
        if entry["release"] != want and (entry["host"], "%s -V" % entry["daemon"]) not in reported:
            hint = "set hpc_gres_slurm_version: \"%s\" in the inventory if the whole cluster runs it" % entry["release"]
            if entry["daemon"] == "slurmd":
                hint = ("the files are rendered and proven for Slurm %s; upgrade this node first, or set "
                        "hpc_gres_slurm_version to the release the whole cluster runs" % want)
            problems.append(Problem(entry["host"], "%s -V" % entry["daemon"],
                                    "Slurm %s (hpc_gres_slurm_version)" % want, entry["text"], hint))
    return problems


def _mix_problem(entry, newer, rule_text):
    """A Problem when ``entry`` may not talk to ``newer`` (it must be the same or an older compatible release)."""
    apart = releases_apart(entry["release"], newer["release"])
    allowed = (newer["release"],) + compatible_older(newer["release"])
    if apart is not None and 0 <= apart and entry["release"] in allowed:
        return None
    expected = "a release %s accepts: %s (%s %s on %s)" % (
        newer["daemon"], ", ".join(allowed), newer["daemon"], newer["text"], newer["host"])
    return Problem(entry["host"], "%s -V" % entry["daemon"], expected, entry["text"],
                   "Slurm does not support this mix; %s (upgrades.html#compatibility_window)" % rule_text)
