"""Emulated ``nvidia-smi`` for tests: replays a machine profile (JSON) built from real recorded outputs.

Profile: the file named by ``$NVSMI_EMU_PROFILE``, else ``profile.json`` next to this script (format in
README.md beside it). Every call may be logged as one JSON line (its argv) to ``$NVSMI_EMU_LOG``.

Answers, in the formats real nvidia-smi prints (copied from recorded outputs under tests/fixtures/):
``--query-gpu=<fields> --format=csv[,noheader][,nounits]``, ``--query-compute-apps=...``, ``-L``,
``topo -m`` (verbatim recorded text, or a generated matrix), ``mig -lgi``, ``mig -lci``, ``-q`` (the
profile's recorded ``nvidia-smi -q`` text, key ``smi_q``); ``-i`` selects GPUs. Unknown options fail like
nvidia-smi (exit 2). Missing GPUs vanish from enumeration; unreachable ones print "Unable to determine the
device handle ..." and make the command exit 15. A profile with ``failure`` fails every call with that
recorded text and exit status (driver/library mismatch, no devices, ...).

Extending: MIG mutations (``-mig``, ``mig -cgi/-cci/-dci/-dgi``) and more listings (``-lgip``, ``-lgipp``)
are added as entries of ``MIG_ACTIONS`` / ``TOP_LEVEL_ACTIONS``; they get the loaded :class:`Machine`, can
change ``machine.profile`` and call ``machine.save()``.
"""
import hashlib
import json
import os
import re
import sys
import time

RC_OK = 0
RC_INVALID_ARG = 2
RC_NOT_SUPPORTED = 3
RC_QUERY_FAILED = 6
RC_NO_DRIVER = 9
RC_GPU_LOST = 15

INVALID_ARGS = "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help."
NO_DRIVER = ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. "
             "Make sure that the latest NVIDIA driver is installed and running.")


class Exit(Exception):
    def __init__(self, rc, stdout="", stderr=""):
        super().__init__(rc)
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


# ----------------------------------------------------------------------------------------------------
# machine state

def _strip_fixture_header(text):
    marker = "\n# ---\n"
    if text.startswith("# source:") and marker in text:
        return text.split(marker, 1)[1]
    return text


def _ranges(text):
    """``"0-3,8"`` -> [0, 1, 2, 3, 8]; None stays None."""
    if text is None or text == "":
        return None
    out = []
    for part in str(text).split(","):
        lo, _sep, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def _mig_uuid(gpu_uuid, gi, ci):
    digest = hashlib.sha1(("%s/%d/%d" % (gpu_uuid, gi, ci)).encode()).hexdigest()
    return "MIG-%s-%s-%s-%s-%s" % (digest[:8], digest[8:12], "5" + digest[13:16], digest[16:20], digest[20:32])


class Machine(object):
    """The loaded profile plus the views every command needs (visible GPUs, their indexes)."""

    def __init__(self, path):
        self.path = path
        with open(path) as handle:
            self.profile = json.load(handle)
        self.base = os.path.dirname(os.path.abspath(path))
        self._fill_defaults()

    def _fill_defaults(self):
        """Fields a hand-written profile may leave out (not written back unless a command saves)."""
        for n, gpu in enumerate(self.profile.get("gpus", [])):
            gpu.setdefault("pci_bus_id", "00000000:%02X:00.0" % (0x10 + 8 * n))
            gpu.setdefault("name", "NVIDIA GPU")
            if "uuid" not in gpu:
                d = hashlib.sha1(("%s/%s" % (self.path, gpu["pci_bus_id"])).encode()).hexdigest()
                gpu["uuid"] = "GPU-%s-%s-%s-%s-%s" % (d[:8], d[8:12], d[12:16], d[16:20], d[20:32])

    def save(self):
        tmp = self.path + ".tmp"
        with open(tmp, "w") as handle:
            json.dump(self.profile, handle, indent=2, sort_keys=False)
            handle.write("\n")
        os.replace(tmp, self.path)

    # GPU states: "ok", "missing" (gone from the bus: not enumerated, indexes close up),
    # "unreachable" (enumerated, but NVML cannot get a handle: "Unable to determine the device handle").
    @staticmethod
    def state(gpu):
        lost = gpu.get("lost")
        if lost is True or lost == "missing":
            return "missing"
        if lost == "unreachable":
            return "unreachable"
        return gpu.get("state", "ok")

    def enumerated(self):
        """(index, gpu) for GPUs the driver enumerates, in PCI bus order (NVML's order)."""
        gpus = [g for g in self.profile.get("gpus", []) if self.state(g) != "missing"]
        gpus.sort(key=lambda g: _bus_key(g["pci_bus_id"]))
        return list(enumerate(gpus))

    def select(self, ids):
        """Apply ``-i``: indexes, UUIDs or PCI bus ids, comma separated."""
        enum = self.enumerated()
        if ids is None:
            return enum
        chosen = []
        for token in ids.split(","):
            token = token.strip()
            match = [(i, g) for i, g in enum if token == str(i) or token == g.get("uuid")
                     or (":" in token and _bus_key(token) == _bus_key(g["pci_bus_id"]))]
            if not match:
                raise Exit(RC_INVALID_ARG, "No devices were found\n" if not enum else
                           "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
            chosen.extend(m for m in match if m not in chosen)
        return chosen

    def lost_messages(self, selected):
        lines = []
        for index, gpu in selected:
            if self.state(gpu) == "unreachable":
                lines.append("Unable to determine the device handle for GPU%d: %s: Unknown Error"
                             % (index, _short_bus(gpu["pci_bus_id"])))
        return lines

    def topo_text(self):
        return self.recorded(self.profile.get("topo") or {})

    def recorded(self, spec):
        """A recorded output the profile names: ``{"text": "..."}`` or ``{"text_file": "<path relative to the
        profile>"}`` (a fixture's ``# source:`` header left out); ``"lines": [first, last]`` keeps only those
        lines of it (1-based, inclusive: a fixture's prompt or banner lines are not nvidia-smi's). None when
        the spec names no text."""
        if "text" in spec:
            text = spec["text"]
        elif "text_file" in spec:
            with open(os.path.join(self.base, spec["text_file"])) as handle:
                text = _strip_fixture_header(handle.read())
        else:
            return None
        if spec.get("lines"):
            first, last = spec["lines"]
            text = "".join(line + "\n" for line in text.split("\n")[first - 1:last])
        return text

    def mig_devices(self, gpu):
        """[(device index, gi, ci)] in NVML enumeration order: GPU instance id, then compute instance id."""
        pairs = []
        for gi in (gpu.get("mig") or {}).get("gpu_instances", []):
            for ci in gi.get("compute_instances", []):
                pairs.append((gi, ci))
        pairs.sort(key=lambda p: (p[0]["id"], p[1]["id"]))
        return [(n, gi, ci) for n, (gi, ci) in enumerate(pairs)]

    def mig_uuid(self, gpu, gi, ci):
        if self.profile.get("mig_uuid_style") == "legacy":
            return "MIG-%s/%d/%d" % (gpu["uuid"], gi["id"], ci["id"])
        return ci.get("uuid") or _mig_uuid(gpu["uuid"], gi["id"], ci["id"])


def _bus_key(bus_id):
    domain, rest = bus_id.split(":", 1)
    bus, rest = rest.split(":", 1)
    dev, fn = rest.split(".", 1)
    return (int(domain, 16), int(bus, 16), int(dev, 16), int(fn))


def _short_bus(bus_id):
    domain, rest = bus_id.split(":", 1)
    return "%04X:%s" % (int(domain, 16), rest.upper())


# ----------------------------------------------------------------------------------------------------
# --query-gpu / --query-compute-apps

def _mib(value):
    return "[N/A]" if value is None else str(value)


def _mig_mode(value):
    if value is None:
        return "[N/A]"
    return value


GPU_FIELDS = {
    # name: (header, unit, getter(index, gpu, machine))
    "index": ("index", None, lambda i, g, m: str(i)),
    "uuid": ("uuid", None, lambda i, g, m: g["uuid"]),
    "gpu_uuid": ("uuid", None, lambda i, g, m: g["uuid"]),
    "name": ("name", None, lambda i, g, m: g["name"]),
    "gpu_name": ("name", None, lambda i, g, m: g["name"]),
    "pci.bus_id": ("pci.bus_id", None, lambda i, g, m: g["pci_bus_id"]),
    "gpu_bus_id": ("pci.bus_id", None, lambda i, g, m: g["pci_bus_id"]),
    "mig.mode.current": ("mig.mode.current", None, lambda i, g, m: _mig_mode(g.get("mig_mode"))),
    "mig.mode.pending": ("mig.mode.pending", None,
                         lambda i, g, m: _mig_mode(g.get("mig_mode_pending", g.get("mig_mode")))),
    "memory.total": ("memory.total [MiB]", "MiB", lambda i, g, m: _mib(g.get("memory_total_mib"))),
    "memory.used": ("memory.used [MiB]", "MiB", lambda i, g, m: _mib(g.get("memory_used_mib", 0))),
    "memory.free": ("memory.free [MiB]", "MiB", lambda i, g, m: _mib(
        None if g.get("memory_total_mib") is None else g["memory_total_mib"] - g.get("memory_used_mib", 0))),
    "driver_version": ("driver_version", None, lambda i, g, m: m.profile.get("driver_version", "550.127.05")),
    "count": ("count", None, lambda i, g, m: str(len(m.enumerated()))),
    "minor_number": ("minor_number", None, lambda i, g, m: str(g.get("minor", i))),
    "serial": ("serial", None, lambda i, g, m: g.get("serial", "[N/A]")),
    "compute_cap": ("compute_cap", None, lambda i, g, m: g.get("compute_cap", "[N/A]")),
}

APP_FIELDS = {
    "gpu_uuid": ("gpu_uuid", None, lambda p, g, m: p["gpu_uuid"]),
    "gpu_name": ("gpu_name", None, lambda p, g, m: g["name"]),
    "gpu_bus_id": ("gpu_bus_id", None, lambda p, g, m: g["pci_bus_id"]),
    "gpu_serial": ("gpu_serial", None, lambda p, g, m: g.get("serial", "[N/A]")),
    "pid": ("pid", None, lambda p, g, m: str(p["pid"])),
    "process_name": ("process_name", None, lambda p, g, m: p.get("process_name") or "[Not Found]"),
    "name": ("process_name", None, lambda p, g, m: p.get("process_name") or "[Not Found]"),
    "used_memory": ("used_gpu_memory [MiB]", "MiB", lambda p, g, m: str(p.get("used_memory_mib", 0))),
    "used_gpu_memory": ("used_gpu_memory [MiB]", "MiB", lambda p, g, m: str(p.get("used_memory_mib", 0))),
}


def _csv(fields, table, rows, fmt):
    """Render rows (list of tuples of getter args) as nvidia-smi's csv."""
    if fmt is None:
        raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
    options = [o.strip() for o in fmt.split(",")]
    if "csv" not in options or any(o not in ("csv", "noheader", "nounits") for o in options):
        raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
    names = [f.strip() for f in fields.split(",") if f.strip()]
    for name in names:
        if name not in table:
            raise Exit(RC_INVALID_ARG, 'Field "%s" is not a valid field to query.\n\n' % name)
    lines = []
    if "noheader" not in options:
        lines.append(", ".join(table[n][0] if "nounits" not in options else table[n][0].split(" [")[0]
                               for n in names))
    for args in rows:
        values = []
        for name in names:
            _header, unit, getter = table[name]
            value = getter(*args)
            if unit and "nounits" not in options and not value.startswith("["):
                value = "%s %s" % (value, unit)
            values.append(value)
        lines.append(", ".join(values))
    return "".join(line + "\n" for line in lines)


def query_gpu(machine, fields, fmt, ids):
    selected = machine.select(ids)
    lost = machine.lost_messages(selected)
    rows = [(i, g, machine) for i, g in selected if machine.state(g) == "ok"]
    out = _csv(fields, GPU_FIELDS, rows, fmt)
    if not selected:
        raise Exit(RC_QUERY_FAILED, "No devices were found\n")
    if lost:
        raise Exit(RC_GPU_LOST, out, "".join(line + "\n" for line in lost))
    return out


def query_apps(machine, fields, fmt, ids):
    selected = machine.select(ids)
    by_uuid = {}
    for _i, gpu in selected:
        if machine.state(gpu) == "ok":
            by_uuid[gpu["uuid"]] = gpu
            for _n, gi, ci in machine.mig_devices(gpu):
                by_uuid[machine.mig_uuid(gpu, gi, ci)] = gpu
    rows = [(p, by_uuid[p["gpu_uuid"]], machine) for p in machine.profile.get("processes", [])
            if p["gpu_uuid"] in by_uuid]
    out = _csv(fields, APP_FIELDS, rows, fmt)
    if not selected:
        raise Exit(RC_QUERY_FAILED, "No devices were found\n")
    lost = machine.lost_messages(selected)
    if lost:
        raise Exit(RC_GPU_LOST, out, "".join(line + "\n" for line in lost))
    return out


# ----------------------------------------------------------------------------------------------------
# -L

def list_gpus(machine, ids):
    selected = machine.select(ids)
    if not selected:
        raise Exit(RC_QUERY_FAILED, "No devices were found\n")
    lines = []
    lost = []
    for index, gpu in selected:
        if machine.state(gpu) != "ok":
            lost.extend(machine.lost_messages([(index, gpu)]))
            continue
        lines.append("GPU %d: %s (UUID: %s)" % (index, gpu["name"], gpu["uuid"]))
        if gpu.get("mig_mode") == "Enabled":
            for n, gi, ci in machine.mig_devices(gpu):
                lines.append("  MIG %s Device %2d: (UUID: %s)" % (
                    ci["profile"].ljust(11), n, machine.mig_uuid(gpu, gi, ci)))
    out = "".join(line + "\n" for line in lines)
    if lost:
        raise Exit(RC_GPU_LOST, out, "".join(line + "\n" for line in lost))
    return out


# ----------------------------------------------------------------------------------------------------
# topo -m

LEGEND = """
Legend:

  X    = Self
  SYS  = Connection traversing PCIe as well as the SMP interconnect between NUMA nodes (e.g., QPI/UPI)
  NODE = Connection traversing PCIe as well as the interconnect between PCIe Host Bridges within a NUMA node
  PHB  = Connection traversing PCIe as well as a PCIe Host Bridge (typically the CPU)
  PXB  = Connection traversing multiple PCIe bridges (without traversing the PCIe Host Bridge)
  PIX  = Connection traversing at most a single PCIe bridge
  NV#  = Connection traversing a bonded set of # NVLinks
"""


def _fmt_ranges(values):
    values = sorted(set(values))
    parts = []
    i = 0
    while i < len(values):
        j = i
        while j + 1 < len(values) and values[j + 1] == values[j] + 1:
            j += 1
        parts.append(str(values[i]) if i == j else "%d-%d" % (values[i], values[j]))
        i = j + 1
    return ",".join(parts)


def _gpu_link(machine, a, b):
    """Link between two enumerated GPUs: explicit ``links`` by uuid or name, else the profile default."""
    for src, dst in ((a, b), (b, a)):
        links = src.get("links") or {}
        if dst["uuid"] in links:
            return links[dst["uuid"]]
    default = machine.profile.get("gpu_links")
    if default:
        return default
    same_node = _ranges(a.get("numa_affinity")) == _ranges(b.get("numa_affinity"))
    return "NODE" if same_node else "SYS"


def generated_topo(machine):
    """A ``topo -m`` matrix in the current (R535+) tab layout for the enumerated, reachable GPUs."""
    enum = [(i, g) for i, g in machine.enumerated() if machine.state(g) == "ok"]
    nics = machine.profile.get("nics", [])
    old = machine.profile.get("topo_format") == "old"
    gpu_names = ["GPU%d" % i for i, _g in enum]
    nic_names = [n["device"] if old else "NIC%d" % k for k, n in enumerate(nics)]
    attrs = ["CPU Affinity", "NUMA Affinity"] + ([] if old else ["GPU NUMA ID"])
    lines = ["\t" + "\t".join(gpu_names + nic_names + attrs)]
    for row, (i, gpu) in enumerate(enum):
        cells = []
        for col, (_j, other) in enumerate(enum):
            cells.append(" X " if row == col else _gpu_link(machine, gpu, other))
        for nic in nics:
            cells.append((nic.get("links") or {}).get(gpu["uuid"], "SYS"))
        cpu = _ranges(gpu.get("cpu_affinity"))
        numa = _ranges(gpu.get("numa_affinity"))
        tail = [_fmt_ranges(cpu) if cpu else "N/A", _fmt_ranges(numa) if numa else "N/A"]
        if not old:
            gnid = gpu.get("gpu_numa_id")
            tail += ["", "N/A" if gnid is None else str(gnid)]
        lines.append("\t".join([gpu_names[row]] + cells + tail))
    for k, nic in enumerate(nics):
        cells = [(nic.get("links") or {}).get(g["uuid"], "SYS") for _i, g in enum]
        for k2, other in enumerate(nics):
            cells.append(" X " if k == k2 else (nic.get("links") or {}).get(other["device"], "SYS"))
        lines.append("\t".join([nic_names[k]] + cells))
    text = "\n".join(lines) + "\n" + LEGEND
    if nics and not old:
        text += "\nNIC Legend:\n\n" + "".join("  NIC%d: %s\n" % (k, n["device"]) for k, n in enumerate(nics))
    return text


def topo_matrix(machine):
    enum = machine.enumerated()
    if not enum:
        raise Exit(RC_QUERY_FAILED, "No devices were found\n")
    lost = machine.lost_messages(enum)
    verbatim = machine.topo_text()
    all_there = len(enum) == len(machine.profile.get("gpus", [])) and not lost
    text = verbatim if verbatim is not None and all_there else generated_topo(machine)
    if lost:
        raise Exit(RC_GPU_LOST, text, "".join(line + "\n" for line in lost))
    return text


# ----------------------------------------------------------------------------------------------------
# mig listings (box tables as R580 prints them; see tests/fixtures/nvidia-smi/mig/*ssup2*)

LGI_WIDTH = 59
LGI_HEAD = ["| GPU instances:", "| GPU   Name               Profile  Instance   Placement",
            "|                            ID       ID       Start:Size"]
LCI_WIDTH = 70
LCI_HEAD = ["| Compute instances:", "| GPU     GPU       Name             Profile   Instance   Placement",
            "|       Instance                       ID        ID       Start:Size",
            "|         ID"]


def _box(width, head, rows):
    rule = "+" + "-" * (width - 2) + "+"
    lines = [rule] + [h.ljust(width - 1) + "|" for h in head] + ["|" + "=" * (width - 2) + "|"]
    for row in rows:
        lines.append(row.ljust(width - 1) + "|")
        lines.append(rule)
    return "".join(line + "\n" for line in lines)


def _mig_gpus(machine, ids):
    selected = [(i, g) for i, g in machine.select(ids) if machine.state(g) == "ok"]
    mig = [(i, g) for i, g in selected if g.get("mig_mode") == "Enabled"]
    if not mig:
        raise Exit(RC_QUERY_FAILED, "No MIG-enabled devices found.\n")
    return mig


def mig_list_gi(machine, args):
    rows = []
    for index, gpu in _mig_gpus(machine, args.get("-i")):
        wanted = _id_filter(args.get("-gi"))
        for gi in (gpu.get("mig") or {}).get("gpu_instances", []):
            if wanted is not None and gi["id"] not in wanted:
                continue
            start, size = gi["placement"]
            rows.append("|%4d  MIG %-16s%4d%9d%11d:%d" % (
                index, gi["profile"], gi["profile_id"], gi["id"], start, size))
    if not rows:
        raise Exit(RC_QUERY_FAILED, "No GPU instances found: Not Found\n")
    return _box(LGI_WIDTH, LGI_HEAD, rows)


def mig_list_ci(machine, args):
    rows = []
    for index, gpu in _mig_gpus(machine, args.get("-i")):
        wanted = _id_filter(args.get("-gi"))
        wanted_ci = _id_filter(args.get("-ci"))
        for gi in (gpu.get("mig") or {}).get("gpu_instances", []):
            if wanted is not None and gi["id"] not in wanted:
                continue
            for ci in sorted(gi.get("compute_instances", []), key=lambda c: c["id"]):
                if wanted_ci is not None and ci["id"] not in wanted_ci:
                    continue
                start, size = ci.get("placement", [0, 1])
                rows.append("|%4d%7d       MIG %-13s%5d%10d%11d:%d" % (
                    index, gi["id"], ci["profile"], ci["profile_id"], ci["id"], start, size))
    if not rows:
        raise Exit(RC_QUERY_FAILED, "No compute instances found: Not Found\n")
    return _box(LCI_WIDTH, LCI_HEAD, rows)


def _id_filter(value):
    if value is None:
        return None
    return {int(v) for v in value.split(",") if v.strip() != ""}


# name -> (function(machine, args) -> stdout, options that take a value)
MIG_ACTIONS = {
    "-lgi": mig_list_gi, "--list-gpu-instances": mig_list_gi,
    "-lci": mig_list_ci, "--list-compute-instances": mig_list_ci,
}
MIG_VALUE_OPTIONS = {"-i", "--id", "-gi", "--gpu-instance-id", "-ci", "--compute-instance-id"}
MIG_ALIASES = {"--id": "-i", "--gpu-instance-id": "-gi", "--compute-instance-id": "-ci"}
# Top-level actions other helpers may add, e.g. "-mig": function(machine, value, ids) -> stdout.
TOP_LEVEL_ACTIONS = {}


def run_mig(machine, argv):
    action = None
    args = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        if "=" in arg and arg.split("=", 1)[0] in MIG_VALUE_OPTIONS:
            key, value = arg.split("=", 1)
            args[MIG_ALIASES.get(key, key)] = value
        elif arg in MIG_VALUE_OPTIONS:
            if i + 1 >= len(argv):
                raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
            args[MIG_ALIASES.get(arg, arg)] = argv[i + 1]
            i += 1
        elif arg in MIG_ACTIONS and action is None:
            action = MIG_ACTIONS[arg]
        else:
            raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
        i += 1
    if action is None:
        raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
    return action(machine, args)


# ----------------------------------------------------------------------------------------------------
# -q (recorded) and recorded failures

_Q_GPU = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*$")
_Q_UUID = re.compile(r"^\s*GPU UUID\s*:\s*(\S+)\s*$", re.M)
_Q_ATTACHED = re.compile(r"^(Attached GPUs\s*:\s*)\d+", re.M)


def query_text(machine, ids):
    """``nvidia-smi -q [-i ...]``: the profile's recorded ``-q`` text (key ``smi_q``), verbatim. GPU blocks whose
    bus id is a profile GPU marked ``lost`` are taken out (``Attached GPUs`` counts the rest; an ``unreachable``
    one also prints "Unable to determine the device handle" and exits 15); ``-i`` keeps the header and the
    selected blocks (index in the recorded order, bus id or UUID)."""
    text = machine.recorded(machine.profile.get("smi_q") or {})
    if text is None:
        raise Exit(255, "", "nvidia-smi emulator: the profile has no recorded -q output (key smi_q)\n")
    head, blocks = [], []
    for line in text.splitlines(True):
        m = _Q_GPU.match(line.rstrip("\r\n"))
        if m:
            blocks.append((m.group(1), [line]))
        elif blocks:
            blocks[-1][1].append(line)
        else:
            head.append(line)
    states = {_bus_key(g["pci_bus_id"]): machine.state(g) for g in machine.profile.get("gpus", [])}
    blocks = [(bus, replace_sections(machine, bus, body)) for bus, body in blocks]
    kept = [(bus, body) for bus, body in blocks if states.get(_bus_key(bus), "ok") != "missing"]
    lost = ["Unable to determine the device handle for GPU%d: %s: Unknown Error" % (i, _short_bus(bus))
            for i, (bus, _body) in enumerate(kept) if states.get(_bus_key(bus)) == "unreachable"]
    reachable = [(i, bus, body) for i, (bus, body) in enumerate(kept) if states.get(_bus_key(bus)) != "unreachable"]
    if len(kept) != len(blocks):
        head = [_Q_ATTACHED.sub(lambda m: m.group(1) + str(len(kept)), line) for line in head]
    if not kept:
        raise Exit(RC_QUERY_FAILED, "No devices were found\n")
    if ids is not None:
        chosen = []
        for token in ids.split(","):
            token = token.strip()
            match = [item for item in reachable if token == str(item[0])
                     or (":" in token and _bus_key(token) == _bus_key(item[1]))
                     or (token.startswith("GPU-") and token in _Q_UUID.findall("".join(item[2])))]
            if not match:
                raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
            chosen.extend(m for m in match if m not in chosen)
        reachable = chosen
        lost = []
    out = "".join(head) + "".join("".join(body) for _i, _bus, body in reachable)
    if lost:
        raise Exit(RC_GPU_LOST, out, "".join(line + "\n" for line in lost))
    return out


def _indent(line):
    return len(line) - len(line.lstrip(" "))


_UNIT_ACTIVE = {}


def fabric_manager_active(unit):
    """``systemctl is-active UNIT`` on the node the emulator runs on (a test node with a stand-in unit); asked
    once per call of the emulator."""
    import subprocess

    if unit in _UNIT_ACTIVE:
        return _UNIT_ACTIVE[unit]
    try:
        proc = subprocess.run(["systemctl", "is-active", unit], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                              universal_newlines=True, timeout=5, check=False)
    except (OSError, subprocess.TimeoutExpired):
        _UNIT_ACTIVE[unit] = False
        return False
    _UNIT_ACTIVE[unit] = proc.stdout.strip() == "active"
    return _UNIT_ACTIVE[unit]


def replace_sections(machine, bus, body):
    """A GPU block of the recorded ``-q`` with sections replaced by recorded ones: ``q_sections`` of the profile
    (every GPU) and of the GPU itself (``{"Fabric": {"text_file": ..., "lines": [...]}}``). A section is its
    title line at the block's first indentation (``    Fabric``) and the deeper lines under it; the recorded
    text replaces it whole, indentation as recorded."""
    gpu = next((g for g in machine.profile.get("gpus", []) if _bus_key(g["pci_bus_id"]) == _bus_key(bus)), {})
    sections = dict(machine.profile.get("q_sections") or {})
    when_down = machine.profile.get("fabric_manager_unit")
    if when_down and not fabric_manager_active(when_down["unit"]):
        sections.update(when_down["q_sections"])
    sections.update(gpu.get("q_sections") or {})
    for name, spec in sorted(sections.items()):
        title = [i for i, line in enumerate(body) if line.rstrip("\r\n") == "    " + name]
        if not title:
            raise Exit(255, "", "nvidia-smi emulator: q_sections: no section %r in the recorded -q of GPU %s\n"
                       % (name, bus))
        start = title[0]
        end = start + 1
        while end < len(body) and body[end].strip() and _indent(body[end]) > 4:
            end += 1
        text = machine.recorded(spec) or ""
        body = body[:start] + [line + "\n" for line in text.rstrip("\n").split("\n")] + body[end:]
    return body


def recorded_failure(machine):
    """``failure``: every call prints the recorded text (``text``/``text_file``, ``lines``) on ``stream``
    (stdout unless "stderr") and exits with ``rc``."""
    spec = machine.profile.get("failure")
    if not spec:
        return
    text = machine.recorded(spec) or ""
    rc = spec.get("rc", 255)
    if spec.get("stream") == "stderr":
        raise Exit(rc, "", text)
    raise Exit(rc, text, "")


# ----------------------------------------------------------------------------------------------------
# command line

def run(argv, machine):
    if machine.profile.get("hang_s"):
        # a hung nvidia-smi (NVML waiting on a GPU that no longer answers): no output until killed
        time.sleep(float(machine.profile["hang_s"]))
    recorded_failure(machine)
    if machine.profile.get("driver") == "not_loaded":
        raise Exit(RC_NO_DRIVER, NO_DRIVER + "\n\n")
    if argv and argv[0] == "topo":
        rest = argv[1:]
        if rest in (["-m"], ["--matrix"], ["-mp"], ["--matrix_pci"]):
            return topo_matrix(machine)
        if "-i" in rest or any(a.startswith("--id") for a in rest):
            raise Exit(RC_INVALID_ARG, "The -i command line argument must be used in conjunction with -n or -p.\n")
        raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
    if argv and argv[0] == "mig":
        return run_mig(machine, argv[1:])
    opts = {}
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if key in ("--query-gpu", "--query-compute-apps", "--format", "--id") and eq:
            opts[key] = value
        elif arg in ("-i", "--id") and i + 1 < len(argv):
            opts["--id"] = argv[i + 1]
            i += 1
        elif arg in ("-L", "--list-gpus"):
            opts["-L"] = True
        elif arg in ("-q", "--query"):
            opts["-q"] = True
        elif key in TOP_LEVEL_ACTIONS:
            opts["action"] = (key, value if eq else (argv[i + 1] if i + 1 < len(argv) else None))
            if not eq:
                i += 1
        else:
            raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")
        i += 1
    if "action" in opts:
        name, value = opts["action"]
        return TOP_LEVEL_ACTIONS[name](machine, value, opts.get("--id"))
    if "--query-gpu" in opts and "--query-compute-apps" not in opts and "-L" not in opts:
        return query_gpu(machine, opts["--query-gpu"], opts.get("--format"), opts.get("--id"))
    if "--query-compute-apps" in opts and "--query-gpu" not in opts and "-L" not in opts:
        return query_apps(machine, opts["--query-compute-apps"], opts.get("--format"), opts.get("--id"))
    if opts.get("-L") and len([k for k in opts if k != "--id"]) == 1:
        return list_gpus(machine, opts.get("--id"))
    if opts.get("-q") and len([k for k in opts if k != "--id"]) == 1:
        return query_text(machine, opts.get("--id"))
    raise Exit(RC_INVALID_ARG, INVALID_ARGS + "\n")


def profile_path():
    return os.environ.get("NVSMI_EMU_PROFILE") or os.path.join(os.path.dirname(os.path.realpath(__file__)),
                                                               "profile.json")


def main(argv):
    log = os.environ.get("NVSMI_EMU_LOG")
    if log:
        with open(log, "a") as handle:
            handle.write(json.dumps(argv) + "\n")
    path = profile_path()
    try:
        machine = Machine(path)
    except (IOError, OSError, ValueError) as exc:
        sys.stderr.write("nvidia-smi emulator: cannot load profile %s: %s\n" % (path, exc))
        return 255
    try:
        out = run(argv, machine)
        sys.stdout.write(out)
        return RC_OK
    except Exit as exc:
        sys.stdout.write(exc.stdout)
        sys.stderr.write(exc.stderr)
        return exc.rc


# MIG mode, instance create/destroy and -lgip/-lgipp: emu_mig.py beside this script, when installed with it.
_HERE = os.path.dirname(os.path.realpath(__file__))
if os.path.exists(os.path.join(_HERE, "emu_mig.py")):
    sys.path.insert(0, _HERE)
    import emu_mig  # noqa: E402

    emu_mig.install(sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
