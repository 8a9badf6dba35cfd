"""Node-side proof that staged slurm.conf + gres.conf agree with the GPUs, devices and CPUs of one node.

``verify_node`` is pure: it takes the staged file texts, the hardware facts gathered by ``gpu_facts``
(``ansible_facts.hpc_gres_hw``), the stat results of the device files and, optionally, the output of
``slurmd -N NODE -G`` run on the staged files. It returns findings; it never touches the node.

Every finding is ``{"severity": "error"|"warning", "check", "gpu", "expected", "found", "hint"}``.
``gpu`` is the nvidia-smi index (int), a string when a finding covers several GPUs, or None.
"""
import os
import re
import textwrap

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.gpu_types import (
    compile_patterns,
    merged_patterns,
    slurm_name,
    type_matches,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import normalize_bus_id
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges, parse_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_counts
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_type_fits
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.render import RECONFIGURE_HINT
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import versions
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    conf_problems,
    gres_counts_from_records,
    node_consistency_problems,
    parse_gres_conf,
    parse_slurm_conf,
)

NVIDIA_MAJOR = 195
CHECKS = ("privileges", "parse", "release", "count", "present", "type", "mig", "device", "cores", "socket_boundary",
          "order", "cpu_layout", "autodetect", "slurmd_g")
_AUTODETECT_ON = ("nvml", "nvidia", "full")


def finding(severity, check, gpu, expected, found, hint=None):
    return {"severity": severity, "check": check, "gpu": gpu, "expected": expected, "found": found,
            "hint": hint}


def privileges_finding(uid, check_mode):
    """A deploy writes Slurm's files and restarts its daemons: root only. None when the module runs as root."""
    if uid == 0:
        return None
    return finding("warning" if check_mode else "error", "privileges",
                   None, "root (the deploy writes Slurm's files and restarts slurmd)", "uid %d" % uid,
                   "connect as root or add -b (become) to the command")


def parse_slurm_version(text):
    """``"slurm-wlm 22.05.8"`` / ``"slurm 24.11.1"`` / ``"24.11"`` -> (22, 5, 8) / (24, 11, 1) / (24, 11, 0); None
    stays None (unknown)."""
    if text is None:
        return None
    try:
        return versions.parse_version(text)
    except ValueError:
        raise ValueError("slurmd_version: expected a Slurm version such as 22.05.8, found %r" % (text,))


# ---------------------------------------------------------------------------------------------- parsing


def parse_slurmd_g(text):
    """Parse ``slurmd -G`` output (stderr; any prefix such as ``slurmd: `` or ``[timestamp] ``).

    Returns ``{"gres": [{"name", "type", "count", "file", "cores"}], "messages": [(level, text)]}``
    with ``level`` one of fatal, error, warning (messages de-duplicated, in order).
    """
    gres, messages, seen = [], [], set()
    for raw in (text or "").splitlines():
        pos = raw.find("Gres Name=")
        if pos >= 0:
            fields = {}
            for token in raw[pos + len("Gres "):].split():
                key, sep, value = token.partition("=")
                if sep:
                    fields[key.lower()] = value
            gtype = fields.get("type")
            count = fields.get("count", "1")
            gres.append({
                "name": fields.get("name"),
                "type": None if gtype in (None, "(null)", "") else gtype,
                "count": int(count) if count.isdigit() else count,
                "file": fields.get("file"),
                "cores": fields.get("cores"),
            })
            continue
        match = re.search(r"\b(fatal|error|warning|WARNING):\s*(.*)$", raw)
        if match:
            level = match.group(1).lower()
            msg = match.group(2).strip()
            if (level, msg) not in seen:
                seen.add((level, msg))
                messages.append((level, msg))
    return {"gres": gres, "messages": messages}


def _cores_of(value):
    if value is None or value == "" or value == []:
        return None
    if isinstance(value, (list, tuple, set)):
        return sorted(set(int(v) for v in value))
    return parse_int_ranges(str(value))


def _rec_get(record, *keys):
    for key in keys:
        if key in record and record[key] not in (None, ""):
            return record[key]
    return None


def _type_key(name, gtype):
    return "%s:%s" % (name, gtype.lower()) if gtype else name


def _split_key(key):
    name, _sep, gtype = key.partition(":")
    return name, (gtype or None)


def _dev_kind(entry):
    if entry is None:
        return "missing"
    return entry.get("kind") or entry.get("type") or "other"


def _gpu_label(gpu):
    parts = [str(gpu.get("name") or "?")]
    if gpu.get("pci_bus_id"):
        parts.append(str(gpu["pci_bus_id"]))
    return "GPU %s (%s)" % (gpu.get("index"), ", ".join(parts))


def _gpus_label(indexes):
    indexes = sorted(set(i for i in indexes if isinstance(i, int)))
    if not indexes:
        return None
    if len(indexes) == 1:
        return indexes[0]
    return format_int_ranges(indexes)


# ---------------------------------------------------------------------------------------------- verify


class _Node(object):
    """What the checks share: parsed files, GPUs by minor, CPU layout, the Slurm-ordered device slots."""

    def __init__(self, node_name, slurm, records, hw_facts, dev_stat, patterns, gres_text=None):
        self.name = node_name
        self.slurm = slurm
        self.node = slurm["nodes"].get(node_name)
        self.records = records
        self.gres_text = gres_text
        self.gpus = sorted((hw_facts or {}).get("gpus") or [], key=lambda g: g.get("index", 0))
        self.lost_gpus = (hw_facts or {}).get("lost_gpus") or []
        cpu = (hw_facts or {}).get("cpu") or {}
        self.sockets = cpu.get("sockets")
        self.cores_per_socket = cpu.get("cores_per_socket")
        self.threads_per_core = cpu.get("threads_per_core")
        self.dev_stat = dev_stat or {}
        self.patterns = patterns
        self.minor_assumed = any(g.get("minor") is None or g.get("minor_source") == "index" for g in self.gpus)
        self.by_minor = {}
        for gpu in self.gpus:
            minor = gpu.get("minor")
            self.by_minor[gpu.get("index") if minor is None else minor] = gpu
        options = slurm.get("options") or {}
        self.slurmd_parameters = str(options.get("slurmdparameters") or "").lower()
        self.autodetect = _node_autodetect(records)
        self.slots = self._slots()

    @property
    def total_cores(self):
        if self.sockets and self.cores_per_socket:
            return self.sockets * self.cores_per_socket
        return None

    def declared(self):
        return dict((self.node or {}).get("gres") or {})

    def gpu_records_in_slurm_order(self):
        """gpu records the way slurmd numbers them: slurm.conf type order, then gres.conf order."""
        gpu_records = [r for r in self.records if (r.get("name") or "").lower() == "gpu"]
        # slurmd reads every Name= line before every NodeName= line, whatever the file order
        gpu_records.sort(key=lambda r: r.get("nodes") is not None)
        ordered, used = [], set()
        for key in self.declared():
            name, gtype = _split_key(key)
            if name != "gpu":
                continue
            for pos, rec in enumerate(gpu_records):
                if pos in used:
                    continue
                if gtype is None or (rec.get("type") or "").lower() == gtype.lower():
                    ordered.append(rec)
                    used.add(pos)
        ordered.extend(rec for pos, rec in enumerate(gpu_records) if pos not in used)
        return ordered

    def _slots(self):
        """One slot per device file a gpu record claims (MultipleFiles: one slot, the parent GPU file)."""
        slots = []
        for rec in self.gpu_records_in_slurm_order():
            multiple = rec.get("multiple_files") or []
            if multiple:
                slots.append(self._slot(rec, multiple[0], multiple))
            for path in rec.get("files") or []:
                slots.append(self._slot(rec, path, None))
        return slots

    def _slot(self, rec, path, multiple):
        entry = self.dev_stat.get(path)
        gpu = None
        if _dev_kind(entry) == "char" and entry.get("major") == NVIDIA_MAJOR:
            gpu = self.by_minor.get(entry.get("minor"))
        return {"record": rec, "file": path, "multiple": multiple, "stat": entry, "gpu": gpu,
                "type": rec.get("type")}


def _node_autodetect(records):
    """The AutoDetect value in force: a NodeName line's wins over a bare global line."""
    for rec in records:
        if rec.get("nodes") is not None and rec.get("autodetect"):
            return str(rec["autodetect"]).lower()
    for rec in records:
        if rec.get("name") is None and rec.get("autodetect"):
            return str(rec["autodetect"]).lower()
    return None


def _autodetect_on(node):
    return any(word in (node.autodetect or "") for word in _AUTODETECT_ON)


def parse_staged(node_name, slurm_text, gres_text):
    """Parse the two staged files once for everything a verification needs.

    Returns ``{"slurm": parsed slurm.conf or None, "records": this node's gres.conf records or None,
    "text": the gres.conf text, "findings": [parse error findings]}``; a file that does not parse is None and
    reported as a finding.
    """
    staged = {"slurm": None, "records": None, "text": gres_text, "findings": []}
    try:
        staged["slurm"] = parse_slurm_conf(slurm_text)
    except (GresError, ValueError) as exc:
        staged["findings"].append(finding("error", "parse", None, "a slurm.conf Slurm can read", str(exc),
                                          "fix the inventory; the staged slurm.conf was not installed"))
        return staged
    try:
        staged["records"] = parse_gres_conf(gres_text, node_name)
    except (GresError, ValueError) as exc:
        staged["findings"].append(finding("error", "parse", None, "a gres.conf Slurm can read", str(exc),
                                          "fix the inventory; the staged gres.conf was not installed"))
    return staged


def verify_node(node_name, slurm_text, gres_text, hw_facts, dev_stat, slurmd_g_output=None,
                slurmd_version=None, type_patterns=None, gpu_plugins=None, staged=None, deferred=None):
    """Return the list of findings for ``node_name`` (empty: the staged files fit this node).

    ``hw_facts``: ``hpc_gres_hw`` from gpu_facts (``cpu`` and ``gpus``; a GPU may carry ``minor``, its
    /dev/nvidiaN minor number; without it the nvidia-smi index is assumed).
    ``dev_stat``: ``{path as written in gres.conf: None (missing) or {"kind": "char"|"block"|"file"|"dir"|
    "other", "major": int, "minor": int}}`` (see ``stat_device_files``).
    ``slurmd_g_output``: stderr+stdout of ``slurmd -N NODE -G`` on the staged files, or None.
    ``slurmd_version``: the node's Slurm version (``"24.11.1"`` or a tuple), or None when unknown.
    ``type_patterns``: ``{type: regex}`` merged over ``gpu_types.DEFAULT_TYPE_PATTERNS``.
    ``gpu_plugins``: ``{"dir": path or None, "plugins": ["generic", "rsmi", ...]}``, the gpu_*.so plugins of the
    node's slurmd (``find_gpu_plugins``), or None when not looked at.
    ``staged``: :func:`parse_staged` of the same texts, when the caller parsed them already.
    ``deferred``: ``{gres key: count}`` slurm.conf declares that gres.conf leaves to slurmd (MIG with
    AutoDetect=nvml); they may be absent from gres.conf.
    """
    findings = []
    try:
        compiled = compile_patterns(merged_patterns(type_patterns))
    except ValueError as exc:
        return [finding("error", "parse", None, "type_patterns: regular expressions", str(exc))]
    try:
        version = parse_slurm_version(slurmd_version)
    except ValueError as exc:
        return [finding("error", "parse", None, "slurmd_version: a Slurm version", str(exc))]
    staged = staged or parse_staged(node_name, slurm_text, gres_text)
    if staged["findings"]:
        return list(staged["findings"])

    node = _Node(node_name, staged["slurm"], staged["records"], hw_facts, dev_stat, compiled,
                 staged.get("text", gres_text))
    if node.node is None:
        findings.append(finding(
            "error", "count", None, "a NodeName line for %s in slurm.conf" % node_name, "none",
            "slurmd -N %s would exit: slurmd initialization failed" % node_name))
        return findings

    findings.extend(_check_release(node, slurm_text, version))
    findings.extend(_check_counts(node, deferred))
    findings.extend(_check_present(node))
    findings.extend(_check_devices(node))
    findings.extend(_check_types(node))
    findings.extend(_check_mig(node))
    findings.extend(_check_cores(node))
    findings.extend(_check_socket_boundaries(node, version))
    findings.extend(_check_order(node))
    findings.extend(_check_cpu_layout(node))
    findings.extend(_check_autodetect_plugin(node, gpu_plugins, version))
    if slurmd_g_output is not None:
        findings.extend(_check_slurmd_g(node, slurmd_g_output, slurmd_version))
    return findings


GPU_PLUGIN_DIRS = ("/usr/lib/x86_64-linux-gnu/slurm-wlm", "/usr/lib/aarch64-linux-gnu/slurm-wlm",
                   "/usr/lib64/slurm", "/usr/lib/slurm", "/usr/local/lib/slurm", "/opt/slurm/lib/slurm")


def find_gpu_plugins(plugin_dir=None, candidates=GPU_PLUGIN_DIRS, listdir=os.listdir):
    """The gpu_*.so plugins slurmd can load: ``{"dir": path or None, "plugins": sorted names}``.

    ``plugin_dir`` is slurm.conf's PluginDir when set; otherwise the usual install locations are tried.
    """
    for directory in ([plugin_dir] if plugin_dir else list(candidates)):
        try:
            names = listdir(directory)
        except OSError:
            continue
        plugins = sorted(n[len("gpu_"):-len(".so")] for n in names if n.startswith("gpu_") and n.endswith(".so"))
        return {"dir": directory, "plugins": plugins}
    return {"dir": None, "plugins": []}


_HOSTLIST_KEYS = re.compile(r"(?:^|\s)(NodeName|Nodes)=(\S+)", re.IGNORECASE)


def _check_release(node, slurm_text, version):
    """What the node's Slurm release cannot read: hostlist forms in slurm.conf, the AutoDetect mode of gres.conf."""
    if version is None:
        return []
    out = []
    release = versions.release_of(version)
    for lineno, raw in enumerate(slurm_text.splitlines(), 1):
        line = raw.split("#", 1)[0]
        for key, expr in _HOSTLIST_KEYS.findall(line):
            bad = versions.hostlist_form_problem(expr, release)
            if bad:
                out.append(finding(
                    "error", "release", None,
                    "slurm.conf line %d: %s= in a hostlist form Slurm %s parses" % (lineno, key, release),
                    "%s (text after the last ']' of %s)" % (expr, bad),
                    "Slurm before 23.11 cannot read a suffix after a bracket (fatal: Unable to create NodeAddr "
                    "list); render with hpc_gres_slurm_version: \"%s\"" % release))
    mode = node.autodetect
    if mode and mode != "off":
        known = [m for m in versions.autodetect_modes(release) if m != "off"]
        if not any(m in mode for m in known):
            out.append(finding(
                "error", "release", None, "gres.conf AutoDetect= a mode Slurm %s knows (%s)"
                % (release, ", ".join(versions.autodetect_modes(release))), "AutoDetect=%s" % mode,
                "slurmd logs 'error: unknown autodetect flag '%s'' and detects nothing; set hpc_gres_autodetect "
                "and hpc_gres_slurm_version to what the cluster runs" % mode))
    return out


def _check_autodetect_plugin(node, gpu_plugins, version):
    """AutoDetect=nvml|nvidia|full needs a gpu plugin of slurmd for NVIDIA GPUs (versions.autodetect_plugins);
    without one nothing is detected or checked."""
    mode = next((m for m in _AUTODETECT_ON if m in (node.autodetect or "")), None)
    if gpu_plugins is None or mode is None:
        return []
    plugins = versions.autodetect_plugins(mode, version or versions.RELEASES[-1])
    if not plugins:
        return []  # a mode the release does not know: the release check reports it
    if any(p[len("gpu_"):-len(".so")] in gpu_plugins["plugins"] for p in plugins):
        return []
    wanted = " or ".join(plugins)
    if gpu_plugins["dir"] is None:
        return [finding("warning", "autodetect", None, "slurmd's %s plugin for AutoDetect=%s" % (wanted, mode),
                        "no Slurm plugin directory found (set PluginDir in slurm.conf)")]
    found = ", ".join("gpu_%s.so" % p for p in gpu_plugins["plugins"]) or "no gpu_*.so"
    if mode == "nvml":
        hint = ("this slurmd was built without NVML (Debian's is): AutoDetect=nvml would detect and check nothing; "
                "set hpc_gres_autodetect: 'off' (the explicit File/MultipleFiles lines are kept) or install a Slurm "
                "built with NVML")
    else:
        hint = ("AutoDetect=%s would detect and check nothing%s; install the slurmd package that has %s or set "
                "hpc_gres_autodetect: 'off'" % (mode, " (slurmd falls back to gpu/generic)" if mode == "full" else "",
                                                wanted))
    return [finding("error", "autodetect", None, "%s in %s for AutoDetect=%s" % (wanted, gpu_plugins["dir"], mode),
                    found, hint)]


def _check_counts(node, deferred=None):
    """slurm.conf Gres= for the node equals gres.conf's count per type (slurmconf's shared proof)."""
    out = []
    for problem in conf_problems(node.slurm) + node_consistency_problems(node.slurm, node.name, node.gres_text,
                                                                         deferred, node.records):
        check = "count" if "count" in problem.field.lower() or problem.field == "gres.conf" else "parse"
        hint = problem.hint
        if hint is None and problem.field.startswith("gres.conf count"):
            hint = ("slurmctld drains a node that reports fewer than slurm.conf declares "
                    "(gres/gpu count reported lower than configured); slurmd ignores extra gres.conf entries")
        out.append(finding("error", check, None, "%s: %s" % (problem.field, problem.expected), problem.found, hint))
    return out


def _mig_types(node):
    types = set()
    for rec in node.records:
        if rec.get("multiple_files"):
            types.add(_type_key(rec.get("name") or "gpu", rec.get("type")))
    return types


def _seen_count(node, key, mig_types):
    """How many devices of ``key`` nvidia-smi shows: whole GPUs (MIG mode off) whose name fits the type, or MIG
    devices of that type (``gres_type.mig_type_fits``). None when the type cannot be judged."""
    _name, gtype = _split_key(key)
    if key in mig_types:
        if gtype is None:
            return None
        devices = [d for g in node.gpus for d in (g.get("mig_devices") or [])]
        return sum(1 for d in devices if mig_type_fits(gtype, d))
    whole = [g for g in node.gpus if str(g.get("mig_mode") or "").lower() != "enabled"]
    if gtype is None:
        return len(whole)
    verdicts = [type_matches(gtype, g.get("name"), node.patterns) for g in whole]
    if whole and all(v is None for v in verdicts):
        return None
    return sum(1 for v in verdicts if v)


def count_summary(node_name, slurm_text, gres_text, hw_facts, type_patterns=None, staged=None):
    """``{gres_key: {"slurm_conf": n, "gres_conf": n, "nvidia_smi": n or None}}`` for the node's gpu GRES.

    Returns {} when a file does not parse (verify_node reports that)."""
    staged = staged or parse_staged(node_name, slurm_text, gres_text)
    if staged["findings"]:
        return {}
    try:
        compiled = compile_patterns(merged_patterns(type_patterns))
    except ValueError:
        return {}
    slurm, records = staged["slurm"], staged["records"]
    node = _Node(node_name, slurm, records, hw_facts, {}, compiled)
    declared = node.declared()
    # what slurmd registers from gres.conf (file-less GPUs dropped, surplus cut), as the count check reads it
    view = node_view(slurm, gres_text, node_name)
    from_gres = gres_counts_from_records(records) if view["fatal"] else view_counts(view)
    mig_types = _mig_types(node)
    summary = {}
    for key in list(declared) + [k for k in from_gres if k not in declared]:
        if _split_key(key)[0] != "gpu":
            continue
        summary[key] = {"slurm_conf": declared.get(key, 0), "gres_conf": from_gres.get(key, 0),
                        "nvidia_smi": _seen_count(node, key, mig_types)}
    return summary


def _lost_text(node):
    lost = [entry.get("message") or entry.get("pci_bus_id") or "?" for entry in node.lost_gpus]
    return "; nvidia-smi reports: %s" % " | ".join(lost) if lost else ""


def _shortfall_effect(node):
    """What Slurm does with fewer GPUs than gres.conf declares: slurmd counts the GPUs it detects with AutoDetect,
    else the File= entries (gres.c _my_stat waits 20 s for a missing one, then exits)."""
    if _autodetect_on(node):
        return "slurmd detects the GPUs it finds and slurmctld drains the node (count reported lower than configured)"
    return ("slurmd counts gres.conf's File= entries (AutoDetect is off): while the device file is there the node "
            "keeps its count and jobs are given the missing GPU; without it slurmd exits after waiting 20 s for it")


def _check_present(node):
    """The GPUs (and MIG devices) nvidia-smi sees cover what is declared."""
    out = []
    mig_types = _mig_types(node)
    declared = [(k, v) for k, v in node.declared().items() if _split_key(k)[0] == "gpu"]
    gpus = node.gpus
    per_type_shortfall = False
    for key, want in declared:
        _name, gtype = _split_key(key)
        if gtype is None:
            continue
        seen = _seen_count(node, key, mig_types)
        if seen is None or want <= seen:
            continue
        per_type_shortfall = True
        if key in mig_types:
            out.append(finding(
                "error", "present", None, "%d MIG devices of type %s visible to nvidia-smi -L" % (want, gtype),
                "declares %d %s, nvidia-smi sees %d" % (want, gtype, seen),
                "apply the MIG layout first (MIG instances are lost on reboot unless recreated)" + _lost_text(node)))
            continue
        names = sorted(set(g.get("name") or "?" for g in gpus))
        split = [str(g.get("index")) for g in gpus if str(g.get("mig_mode") or "").lower() == "enabled"]
        why = ("GPU %s %s in MIG mode, which counts as MIG devices, not as a whole GPU: declare its MIG layout "
               "(mig:) or turn MIG mode off; or " % (", ".join(split), "is" if len(split) == 1 else "are")
               if split else "")
        out.append(finding(
            "error", "present", None, "%d GPUs of type %s visible to nvidia-smi" % (want, gtype),
            "declares %d %s, nvidia-smi sees %d" % (want, gtype, seen),
            "%sa GPU fell off the bus, is held by a failed driver or is of another model (nvidia-smi names: %s); "
            "%s%s" % (why, "; ".join(names) or "none", _shortfall_effect(node), _lost_text(node))))
    whole = [(k, v) for k, v in declared if k not in mig_types]
    total_want = sum(v for _key, v in whole)
    if not per_type_shortfall and total_want > len(gpus):
        out.append(finding(
            "error", "present", None, "%d GPUs visible to nvidia-smi" % total_want,
            "declares %d gpu, nvidia-smi sees %d" % (total_want, len(gpus)),
            "check nvidia-smi -L and dmesg for Xid / fallen-off-the-bus; " + _shortfall_effect(node)
            + _lost_text(node)))
    claimed = set(id(s["gpu"]) for s in node.slots if s["gpu"] is not None)
    all_files_known = all(s["gpu"] is not None for s in node.slots)
    if all_files_known and declared:
        for gpu in gpus:
            if id(gpu) not in claimed:
                out.append(finding(
                    "warning", "present", gpu.get("index"), "every GPU in gres.conf",
                    "%s is in no gres.conf File" % _gpu_label(gpu),
                    "Slurm will not schedule it; add it to hpc_gres_gpus if it should be used"))
    return out


def _check_devices(node):
    """Every File exists, is a character device with the NVIDIA major, and its minor is a GPU nvidia-smi sees."""
    out = []
    if node.minor_assumed and node.gpus:
        out.append(finding(
            "warning", "device", None, "device minor of each GPU (/proc/driver/nvidia/gpus/*/information)",
            "unknown; assumed /dev/nvidiaN is nvidia-smi GPU N",
            "the File-to-GPU checks of this table rest on that assumption"))
    for slot in node.slots:
        files = slot["multiple"] or [slot["file"]]
        for pos, path in enumerate(files):
            rec = slot["record"]
            where = "gres.conf line %s" % rec.get("line") if rec.get("line") is not None else "gres.conf"
            out.extend(_check_one_device(node, slot, path, pos == 0, where))
    return out


def _check_one_device(node, slot, path, is_gpu_file, where):
    entry = slot["stat"] if is_gpu_file else node.dev_stat.get(path)
    kind = _dev_kind(entry)
    gpu_word = "GPU " if is_gpu_file else ""
    named = re.search(r"/nvidia(\d+)$", path) if is_gpu_file else None
    named_gpu = node.by_minor.get(int(named.group(1))) if named else None
    named_index = named_gpu.get("index") if named_gpu else None
    if kind == "missing":
        return [finding(
            "error", "device", named_index, "%s (%s) exists" % (path, where), "%s does not exist" % path,
            "slurmd would wait 20 s, then exit: fatal: can't stat gres.conf file %s" % path)]
    if kind != "char":
        return [finding(
            "error", "device", named_index, "%s is a character device" % path, "%s is a %s" % (path, kind),
            "Slurm 23.02+: is not a valid character or block device; device cgroups cannot confine it")]
    if not is_gpu_file:
        return []
    major, minor = entry.get("major"), entry.get("minor")
    if not re.match(r"^/dev/nvidia\d+$", path) and major != NVIDIA_MAJOR:
        # a GPU's own device file (the inventory's ``file``: WSL's /dev/dxg, Jetson's /dev/nvgpu/..., MIG caps as
        # plain File lines): slurmd only needs it to be a device; nothing ties it to one nvidia-smi GPU
        return [finding(
            "warning", "device", None, "%s (%s) is an NVIDIA GPU device node /dev/nvidiaN" % (path, where),
            "%s, a character device (major %s, minor %s)" % (path, major, minor),
            "slurmd and its device cgroup use it as written; this GPU is not matched against nvidia-smi")]
    if major != NVIDIA_MAJOR:
        return [finding(
            "error", "device", None, "%s is an NVIDIA %sdevice (major %d)" % (path, gpu_word, NVIDIA_MAJOR),
            "%s has major %s, minor %s" % (path, major, minor), "this is not an NVIDIA GPU device node")]
    out = []
    gpu = slot["gpu"]
    if gpu is None:
        known = format_int_ranges(node.by_minor) if node.by_minor else "none"
        out.append(finding(
            "error", "device", None, "%s is a GPU nvidia-smi sees (minors %s)" % (path, known),
            "%s has minor %s and nvidia-smi shows no GPU with that minor" % (path, minor),
            "the GPU is lost (fallen off the bus / failed) or the device node is stale"))
    if named and int(named.group(1)) != minor:
        out.append(finding(
            "warning", "device", gpu.get("index") if gpu else None,
            "%s has minor %s" % (path, named.group(1)), "minor %s" % minor,
            "the name and the device disagree; Slurm and cgroups use the device number"))
    return out


def _check_types(node):
    """Each GPU's nvidia-smi name matches the Type its File line claims; with AutoDetect on, the Type is also part of
    the name as slurmd reads it (gres_gpu.c _normalize_sys_gres_types), whatever the name patterns say."""
    out = []
    unknown = {}
    not_in_name = {}
    for slot in node.slots:
        gpu, gtype = slot["gpu"], slot["type"]
        if gpu is None or not gtype or slot["multiple"]:
            continue
        if _autodetect_on(node) and gtype.lower() not in slurm_name(gpu.get("name")):
            not_in_name.setdefault(gtype.lower(), []).append(gpu)
            continue
        verdict = type_matches(gtype, gpu.get("name"), node.patterns)
        if verdict is None:
            unknown.setdefault(gtype.lower(), []).append(gpu)
        elif verdict is False:
            pattern = node.patterns[gtype.lower()].pattern if gtype.lower() in node.patterns else gtype
            out.append(finding(
                "error", "type", gpu.get("index"),
                "%s: a %s (name matching /%s/)" % (slot["file"], gtype, pattern),
                "%s" % _gpu_label(gpu),
                "jobs asking for gpu:%s would get another model; fix the GPU's type in the inventory" % gtype))
    for gtype, gpus in sorted(not_in_name.items()):
        name = slurm_name(gpus[0].get("name"))
        fits = [key for key in sorted(node.patterns, key=lambda k: (-len(k), k))
                if key in name and node.patterns[key].search(gpus[0].get("name") or "")]
        if not fits and name.startswith("nvidia_") and len(name) > len("nvidia_"):
            fits = [name[len("nvidia_"):]]  # rtx4090 is no part of nvidia_geforce_rtx_4090: geforce_rtx_4090 is
        out.append(finding(
            "error", "type", _gpus_label(g.get("index") for g in gpus),
            "with AutoDetect=%s a type that is part of the device name slurmd reads (%s)" % (node.autodetect, name),
            "Type=%s" % gtype,
            "slurmd registers these GPUs as gpu:%s (\"Could not find an unused configuration record with a GRES type "
            "that is a substring of system device\", gres_gpu.c) and slurmctld drains the node for too few gpu:%s; "
            "use a type that is part of the name%s, or set hpc_gres_autodetect: 'off'"
            % (name, gtype, " (%s)" % fits[0] if fits else "")))
    for gtype, gpus in sorted(unknown.items()):
        out.append(finding(
            "warning", "type", _gpus_label(g.get("index") for g in gpus),
            "a name pattern for type %s" % gtype,
            "none, and %r is not part of the name %r" % (gtype, gpus[0].get("name")),
            "set type_patterns: {%s: '<regex on the nvidia-smi name>'} so the model can be checked" % gtype))
    return out


def _check_mig(node):
    """A whole-GPU File line must not name a GPU in MIG mode; a MIG line's parent must be in MIG mode."""
    out = []
    for slot in node.slots:
        gpu = slot["gpu"]
        if gpu is None:
            continue
        mode = str(gpu.get("mig_mode") or "").lower()
        if slot["multiple"] and mode != "enabled":
            out.append(finding(
                "error", "mig", gpu.get("index"), "MIG mode Enabled on %s (MultipleFiles line)" % slot["file"],
                "MIG mode %s" % (gpu.get("mig_mode") or "unknown"),
                "the GPU does not have the MIG layout the inventory declares; "
                + RECONFIGURE_HINT % (node.name, node.name)))
        elif not slot["multiple"] and mode == "enabled":
            out.append(finding(
                "error", "mig", gpu.get("index"), "%s as a whole GPU (MIG mode off)" % slot["file"],
                "MIG mode Enabled",
                "jobs would get no usable CUDA device: the GPU has a MIG layout the inventory does not declare "
                "(to turn MIG off, the runbook needs the GPU's `model` in the inventory); "
                + RECONFIGURE_HINT % (node.name, node.name)))
    return out


def _record_gpus(node, rec):
    return [s["gpu"] for s in node.slots if s["record"] is rec and s["gpu"] is not None]


def _socket_of(node, core):
    return core // node.cores_per_socket


def _socket_span(node, sockets):
    return ", ".join("socket %d (cores %s)" % (s, format_int_ranges(
        range(s * node.cores_per_socket, (s + 1) * node.cores_per_socket))) for s in sorted(sockets))


def _check_cores(node):
    """Cores lie within the socket(s) each GPU is local to, within the node, and are set where known."""
    out = []
    total = node.total_cores
    for rec in node.gpu_records_in_slurm_order():
        try:
            cores = _cores_of(_rec_get(rec, "cores", "cpus"))
        except ValueError as exc:
            out.append(finding("error", "cores", None, "Cores= a Slurm core range", str(exc)))
            continue
        gpus = _record_gpus(node, rec)
        label = _gpus_label(g.get("index") for g in gpus)
        where = "gres.conf line %s" % rec.get("line")
        if cores is None:
            local = _local_cores_union(gpus)
            if local and not _autodetect_on(node) and node.cores_per_socket:
                sockets = sorted(set(_socket_of(node, c) for c in local))
                out.append(finding(
                    "warning", "cores", label, "%s: Cores= naming %s" % (where, _socket_span(node, sockets)),
                    "no Cores=",
                    "without Cores Slurm cannot bind jobs to the GPU's socket (enforce-binding, --gpus-per-socket)"))
            continue
        if total is not None and cores[-1] >= total:
            out.append(finding(
                "error", "cores", label, "%s: Cores= within 0-%d (this node's cores)" % (where, total - 1),
                "Cores=%s" % format_int_ranges(cores),
                "slurmd: Invalid GRES data for gpu, Cores=...; Cores are Slurm logical core indexes, "
                "not OS CPU ids (nvidia-smi topo -m CPU Affinity)"))
            continue
        for gpu in gpus:
            local = _cores_of(gpu.get("slurm_cores"))
            if not local:
                continue
            if node.cores_per_socket:
                local_sockets = set(_socket_of(node, c) for c in local)
                foreign = [c for c in cores if _socket_of(node, c) not in local_sockets]
                if foreign:
                    other = sorted(set(_socket_of(node, c) for c in foreign))
                    out.append(finding(
                        "error", "cores", gpu.get("index"),
                        "%s: Cores within %s, local to %s" % (where, _socket_span(node, local_sockets),
                                                              _gpu_label(gpu)),
                        "Cores=%s names %s" % (format_int_ranges(cores), _socket_span(node, other)),
                        "jobs would run on the far socket; this GPU's local cores are %s (hpc_gres_gpus "
                        "cores, as gpu_facts reports them)" % format_int_ranges(local)))
            else:
                foreign = [c for c in cores if c not in set(local)]
                if foreign:
                    out.append(finding(
                        "warning", "cores", gpu.get("index"),
                        "%s: Cores within %s (local to GPU %s)" % (where, format_int_ranges(local), gpu.get("index")),
                        "Cores=%s" % format_int_ranges(cores), "CPU layout unknown: cannot tell the sockets"))
    return out


def _local_cores_union(gpus):
    cores = set()
    for gpu in gpus:
        try:
            local = _cores_of(gpu.get("slurm_cores"))
        except ValueError:
            local = None
        if not local:
            return None
        cores.update(local)
    return sorted(cores) if cores else None


def _check_socket_boundaries(node, version):
    """Cores must line up with sockets the way the node's release demands (versions.py, socket_boundary):
    an error where its slurmctld drains the node, a warning where a later release would (all warnings when the
    release is unknown)."""
    out = []
    if not (node.sockets and node.cores_per_socket):
        return out
    for token in ("numa_node_as_socket", "l3cache_as_socket"):
        if token in node.slurmd_parameters:
            return [finding(
                "warning", "socket_boundary", None, "sockets as physical packages",
                "SlurmdParameters=%s" % token,
                "Slurm's sockets are then NUMA nodes / L3 caches, which this check cannot see; not checked")]
    judged = versions.release_of(version) if version is not None else versions.SUPPORTED[0]
    for rec in node.gpu_records_in_slurm_order():
        try:
            cores = _cores_of(_rec_get(rec, "cores", "cpus"))
        except ValueError:
            continue
        gpus = _record_gpus(node, rec)
        autodetected = False
        if cores is None:
            if not _autodetect_on(node):
                continue
            cores = _local_cores_union(gpus)
            autodetected = True
            if not cores:
                continue
        if cores[-1] >= node.total_cores:
            continue  # reported by the cores check
        found = versions.socket_boundary_findings(cores, node.sockets, node.cores_per_socket, judged)
        for severity, since, expected, sock in found:
            if version is None:
                expected = "%s (enforced from Slurm %s; the node's release is unknown)" % (expected, since)
                hint = "after an upgrade to %s+ slurmctld sets the node INVAL and drains it" % since
            elif severity == "error":
                expected = "%s (Slurm %s)" % (expected, judged)
                hint = "slurmctld sets the node INVAL and drains it"
            else:
                expected = "%s (rule from Slurm %s; node runs %s)" % (expected, since, judged)
                hint = "fine on this version; after an upgrade to %s+ slurmctld drains the node" % since
            out.append(finding(
                "warning" if version is None else severity, "socket_boundary",
                _gpus_label(g.get("index") for g in gpus), "gres.conf line %s: %s" % (rec.get("line"), expected),
                versions.socket_boundary_message(cores, node.name, sock, node.cores_per_socket, autodetected), hint))
    return out


def _bus_key(gpu):
    try:
        bus = normalize_bus_id(gpu.get("pci_bus_id"))
    except ValueError:
        bus = None
    return (bus is None, bus or "", gpu.get("index", 0))


def _check_order(node):
    """File order follows PCI bus order, the order CUDA_DEVICE_ORDER=PCI_BUS_ID numbers GPUs in."""
    slots = [s for s in node.slots if not s["multiple"]]
    if _autodetect_on(node):
        return []  # AutoDetect re-sorts GPUs into NVML (PCI bus) order itself
    known = [s for s in slots if s["gpu"] is not None]
    if len(known) < 2:
        return []
    actual = [s["file"] for s in known]
    wanted = [s["file"] for s in sorted(known, key=lambda s: _bus_key(s["gpu"]))]
    if actual == wanted:
        return []
    return [finding(
        "warning", "order", None, "Slurm GPU order = PCI bus order: %s" % ",".join(wanted),
        "Slurm order (slurm.conf type order, then gres.conf File order): %s" % ",".join(actual),
        "Slurm index i is not CUDA device i under CUDA_DEVICE_ORDER=PCI_BUS_ID: without ConstrainDevices "
        "jobs use GPUs they were not given; list the GPUs (hpc_gres_gpus minor) in PCI bus order")]


def _check_cpu_layout(node):
    """slurm.conf's Sockets/CoresPerSocket/ThreadsPerCore against the CPUs the node has."""
    out = []
    if not node.sockets:
        return out
    entry = node.node
    pairs = (("sockets", ("sockets", "socketsperboard"), node.sockets),
             ("cores_per_socket", ("corespersocket",), node.cores_per_socket),
             ("threads_per_core", ("threadspercore",), node.threads_per_core))
    conf, hw = {}, {}
    for label, keys, have in pairs:
        value = _rec_get(entry, *keys)
        if value is None or have is None:
            return out
        try:
            conf[label] = int(value)
        except (TypeError, ValueError):
            return out
        hw[label] = have
    if conf == hw:
        return out
    conf_total = conf["sockets"] * conf["cores_per_socket"] * conf["threads_per_core"]
    hw_total = hw["sockets"] * hw["cores_per_socket"] * hw["threads_per_core"]
    text = "Sockets=%(sockets)d CoresPerSocket=%(cores_per_socket)d ThreadsPerCore=%(threads_per_core)d"
    severity = "error" if conf_total > hw_total or conf["sockets"] != hw["sockets"] else "warning"
    out.append(finding(
        severity, "cpu_layout", None, "slurm.conf %s (as the node has)" % (text % hw), "slurm.conf %s" % (text % conf),
        "slurmctld drains a node with fewer CPUs than configured (Low socket*core*thread count); "
        "Cores= indexes assume the real layout"))
    return out


def _check_slurmd_g(node, output, version=None):
    """slurmd -G on the staged files: its errors, and its counts against slurm.conf. An answer without a single
    line is never read as "no GPUs" (slurmd 24.11.0 to 24.11.2 print nothing at all: versions.POINT_FACTS)."""
    out = []
    parsed = parse_slurmd_g(output)
    if not (output or "").strip():
        known = versions.point_fact("slurmd_g_silent", version)
        return [finding("warning", "slurmd_g", None, "slurmd -G lists the GRES it reads", "no output at all",
                        "%s; the cross-check with the real slurmd was not made" % (
                            "a known regression of this slurmd (%s)" % versions.POINT_FACTS["slurmd_g_silent"][2]
                            if known else "slurmd printed nothing: read as unknown, not as no GPUs"))]
    fatal = False
    for level, message in parsed["messages"]:
        if level == "fatal":
            fatal = True
        severity = "warning" if level == "warning" else "error"
        out.append(finding(severity, "slurmd_g", None, "slurmd -G without %s" % level,
                           "%s: %s" % (level, message), "the real slurmd rejects or changes this configuration"))
    if fatal:
        return out
    counts = {}
    for entry in parsed["gres"]:
        count = entry["count"] if isinstance(entry["count"], int) else 0
        # keyed as slurm.conf's Gres= is read (conf.parse_gres_spec folds names and types to lower case)
        key = ((entry["name"] or "").lower(), (entry["type"] or "").lower())
        counts[key] = counts.get(key, 0) + count
    for key, want in node.declared().items():
        name, gtype = _split_key(key)
        if gtype is None:
            have = sum(v for (n, _type), v in counts.items() if n == name)
        else:
            have = counts.get((name, gtype.lower()), 0)
        if have < want:
            out.append(finding(
                "error", "slurmd_g", None, "slurmd -G: %d %s (slurm.conf Gres=%s:%d)" % (want, key, key, want),
                "slurmd -G reports %d %s" % (have, key),
                "slurmctld would drain the node: gres/%s count reported lower than configured (%d < %d)"
                % (name, have, want)))
        elif have > want:
            out.append(finding(
                "warning", "slurmd_g", None, "slurmd -G: %d %s" % (want, key),
                "slurmd -G reports %d %s" % (have, key), "slurmctld ignores the excess count"))
    return out


# ---------------------------------------------------------------------------------------------- helpers


def stat_device_files(paths, dev_root="/"):
    """Stat each gres.conf path under ``dev_root`` -> the ``dev_stat`` mapping verify_node takes."""
    import os
    import stat as stat_mod

    result = {}
    for path in paths:
        full = os.path.join(dev_root, path.lstrip("/")) if dev_root not in (None, "", "/") else path
        try:
            st = os.stat(full)
        except OSError:
            result[path] = None
            continue
        mode = st.st_mode
        if stat_mod.S_ISCHR(mode):
            kind = "char"
        elif stat_mod.S_ISBLK(mode):
            kind = "block"
        elif stat_mod.S_ISREG(mode):
            kind = "file"
        elif stat_mod.S_ISDIR(mode):
            kind = "dir"
        else:
            kind = "other"
        dev = st.st_rdev if kind in ("char", "block") else None
        result[path] = {"kind": kind, "major": os.major(dev) if dev is not None else None,
                        "minor": os.minor(dev) if dev is not None else None}
    return result


def device_paths(records):
    """Every File / MultipleFiles path of the records, in order, without repeats."""
    paths = []
    for rec in records:
        for path in list(rec.get("files") or []) + list(rec.get("multiple_files") or []):
            if path not in paths:
                paths.append(path)
    return paths


def summarize(findings):
    errors = sum(1 for f in findings if f["severity"] == "error")
    return {"errors": errors, "warnings": len(findings) - errors}


_COLUMNS = (("severity", "SEVERITY", 8), ("check", "CHECK", 15), ("gpu", "GPU", 16),  # 16: a PCI bus id
            ("expected", "EXPECTED", 46), ("found", "FOUND", 46))


def format_findings_table(findings, title=None):
    """A fixed-width table, errors first; long cells wrap, each hint follows its row."""
    if not findings:
        return (title + "\n" if title else "") + "no findings"
    ordered = sorted(findings, key=lambda f: (0 if f["severity"] == "error" else 1,
                                              CHECKS.index(f["check"]) if f["check"] in CHECKS else 99))
    widths = []
    for key, header, limit in _COLUMNS:
        longest = max([len(header)] + [len(_cell(f.get(key))) for f in ordered])
        widths.append(min(longest, limit))
    lines = []
    if title:
        lines.append(title)
    lines.append("  ".join(h.ljust(w) for (_key, h, _align), w in zip(_COLUMNS, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    indent = " " * (sum(widths[:3]) + 6)
    for f in ordered:
        cells = [textwrap.wrap(_cell(f.get(key)), w, break_long_words=True, break_on_hyphens=False) or [""]
                 for (key, _header, _align), w in zip(_COLUMNS, widths)]
        for row in range(max(len(c) for c in cells)):
            lines.append("  ".join((c[row] if row < len(c) else "").ljust(w)
                                   for c, w in zip(cells, widths)).rstrip())
        if f.get("hint"):
            for pos, part in enumerate(textwrap.wrap(f["hint"], max(40, sum(widths[3:]) + 2), break_on_hyphens=False)):
                lines.append(indent + ("hint: " if pos == 0 else "      ") + part)
    counts = summarize(findings)
    lines.append("%d error(s), %d warning(s)" % (counts["errors"], counts["warnings"]))
    return "\n".join(lines)


def _cell(value):
    return "-" if value is None else str(value)
