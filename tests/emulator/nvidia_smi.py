"""Emulated ``nvidia-smi`` for tests: replays a machine profile (JSON) built from real recorded outputs.

Profile: the file named by ``$NVSMI_EMU_PROFILE``, else ``profile.json`` next to this script (format in
README.md beside it). Every call may be logged as one JSON line (its argv) to ``$NVSMI_EMU_LOG``.

Answers, in the formats real nvidia-smi prints (copied from recorded outputs under tests/fixtures/):
``--query-gpu=<fields> --format=csv[,noheader][,nounits]``, ``--query-compute-apps=...``, ``-L``,
``topo -m`` (verbatim recorded text, or a generated matrix), ``mig -lgi``, ``mig -lci``, ``-q`` (the
profile's recorded ``nvidia-smi -q`` text, key ``smi_q``; else recorded GPU blocks, ``Q_TEMPLATES``, with the
profile's GPUs written in); ``-i`` selects GPUs. Unknown options fail like
nvidia-smi (exit 2). Missing GPUs vanish from enumeration; unreachable ones print "Unable to determine the
device handle ..." and make the command exit 15. A GPU with ``"inforom": "corrupted"`` makes every call that
answers print its whole output, then "WARNING: infoROM is corrupted at gpu 0000:3B:00.0", and exit 14. A profile
with ``failure`` fails every call with that recorded text and exit status (driver/library mismatch, no devices, ...).

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
RC_INFOROM_CORRUPTED = 14
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
    "driver_version": ("driver_version", None, lambda i, g, m: m.profile.get("driver_version") or DEFAULT_DRIVER),
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
        # exit status 0, on stdout: a real H200, driver 580.159.04, MIG disabled
        # (tests/fixtures/nvidia-smi/mig/h200-lgi-no-mig-enabled-devices-rc0-580.txt)
        raise Exit(0, "No MIG-enabled devices found.\n")
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
    """``nvidia-smi -q [-i ...]``: the profile's recorded ``-q`` text (key ``smi_q``), verbatim, else one made by
    :func:`synthesized_q` from recorded blocks. GPU blocks whose bus id is a profile GPU marked ``lost`` are taken
    out (``Attached GPUs`` counts the rest; an ``unreachable`` one also prints "Unable to determine the device
    handle" and exits 15); ``-i`` keeps the header and the selected blocks (index in the recorded order, bus id
    or UUID)."""
    text = machine.recorded(machine.profile.get("smi_q") or {})
    if text is None:
        text = synthesized_q(machine)
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
# -q synthesized: a profile without smi_q gets, per GPU, a recorded GPU block (Q_TEMPLATES, at the end of this
# file) with what the profile knows written into it; everything else stays as recorded.

DEFAULT_DRIVER = "550.127.05"

# Product names -> "Product Architecture", for the architectures recordings print (tests/fixtures/readiness).
ARCHITECTURES = (
    (re.compile(r"\bG?H(?:100|200|800|20)\b"), "Hopper"),
    (re.compile(r"\bG?B(?:100|200|300)\b|\bRTX (?:PRO )?50\d0\b|Blackwell"), "Blackwell"),
    (re.compile(r"\bA(?:2|10G?|16|30|40|100|800)\b|\bRTX A\d{4}\b|\bRTX 30\d0\b"), "Ampere"),
    (re.compile(r"\bL(?:4|20|40S?)\b|\bRTX 40\d0\b|\bAda\b"), "Ada Lovelace"),
    (re.compile(r"\bV100\b|\bTITAN V\b"), "Volta"),
)
# NVML reports a fabric state "for Hopper or newer fully supported devices" (nvmlDeviceGetGpuFabricInfo); older
# GPUs print N/A even behind NVSwitches.
FABRIC_ARCHITECTURES = ("Hopper", "Blackwell")
# Driver branch -> the "CUDA Version" its nvidia-smi prints (each pair recorded under tests/fixtures/).
CUDA_VERSIONS = {"470": "11.4", "510": "11.6", "525": "12.0", "535": "12.2", "550": "12.4", "555": "12.5",
                 "560": "12.6", "565": "12.7", "570": "12.8"}
# Fabric lines of a healthy GPU: no NVSwitch (every recording without one), or registered with the fabric
# (h100-8gpu-sxm-535.183-fabric-completed.txt, and CliqueId/ClusterUUID of h200-1gpu-passthrough-550-...txt).
FABRIC_NONE = {"State": "N/A", "Status": "N/A", "CliqueId": "N/A", "ClusterUUID": "N/A"}
FABRIC_COMPLETED = {"State": "Completed", "Status": "Success", "CliqueId": "0",
                    "ClusterUUID": "00000000-0000-0000-0000-000000000000"}

_Q_FIELD = re.compile(r"^( *)(\S.*?)( *: )(.*)$")


class QBlock(object):
    """Lines of a recorded ``-q`` header or GPU block, fields addressed by path: the titles of the sections above
    a line (less indented) and its own key, ``("MIG Mode", "Current")``; the first line of a path wins."""

    def __init__(self, lines):
        self.lines = list(lines)
        self.paths = {}
        stack = []
        for n, line in enumerate(self.lines):
            if not line.strip():
                continue
            if _Q_GPU.match(line.rstrip("\n")):
                continue
            indent = _indent(line)
            m = _Q_FIELD.match(line.rstrip("\n"))
            key = m.group(2) if m else line.strip()
            while stack and stack[-1][0] >= indent:
                stack.pop()
            self.paths.setdefault(tuple(k for _i, k in stack) + (key,), n)
            stack.append((indent, key))

    def get(self, *path):
        n = self.paths.get(path)
        m = _Q_FIELD.match(self.lines[n].rstrip("\n")) if n is not None else None
        return m.group(4) if m else None

    def set(self, path, value):
        n = self.paths[path]
        m = _Q_FIELD.match(self.lines[n].rstrip("\n"))
        self.lines[n] = m.group(1) + m.group(2) + m.group(3) + value + "\n"

    def set_if_there(self, path, value):
        if self.get(*path) is not None:
            self.set(path, value)

    def text(self):
        return "".join(self.lines)


_PARSED_TEMPLATES = {}


def q_template(name):
    """``(head, block, facts)`` of a template: its header and GPU block as :class:`QBlock` (copies) and what the
    recording says about itself (driver, architecture, bus id, board id, GSP firmware)."""
    if name not in _PARSED_TEMPLATES:
        text = Q_TEMPLATES[name][2]
        split = text.index("\nGPU ") + 1
        head, block = QBlock(text[:split].splitlines(True)), QBlock(text[split:].splitlines(True))
        facts = {"driver": head.get("Driver Version"), "architecture": block.get("Product Architecture"),
                 "bus": _bus_key(block.lines[0].split()[1]), "board_id": block.get("Board ID"),
                 "gsp": block.get("GSP Firmware Version"), "source": Q_TEMPLATES[name][0], "gpu": Q_TEMPLATES[name][1]}
        _PARSED_TEMPLATES[name] = (head.lines, block.lines, facts)
    head, block, facts = _PARSED_TEMPLATES[name]
    return QBlock(head), QBlock(block), facts


def architecture(name):
    for pattern, arch in ARCHITECTURES:
        if pattern.search(name or ""):
            return arch
    return None


def _version(text):
    return tuple(int(p) for p in re.findall(r"\d+", text or ""))


def template_name(machine, gpu):
    """The template a GPU's block comes from: the profile's ``q_template``, else the recording of the GPU's
    architecture (every one when the name says none) whose driver is nearest the profile's."""
    name = machine.profile.get("q_template")
    if name:
        if name not in Q_TEMPLATES:
            raise Exit(255, "", "nvidia-smi emulator: q_template: no template %r (known: %s)\n"
                       % (name, ", ".join(sorted(Q_TEMPLATES))))
        return name
    arch = architecture(gpu.get("name")) if gpu else None
    names = sorted(Q_TEMPLATES)
    candidates = [n for n in names if q_template(n)[2]["architecture"] == arch] or names
    want = _version(machine.profile.get("driver_version") or DEFAULT_DRIVER)

    def distance(n):
        have = _version(q_template(n)[2]["driver"])
        return [abs(a - b) for a, b in zip(want + (0, 0, 0), have + (0, 0, 0))][:3]
    return min(candidates, key=distance)


def _q_fault(bus, template, message):
    raise Exit(255, "", "nvidia-smi emulator: q of GPU %s: %s in the recorded block it is made from (%s, %s)\n"
               % (bus, message, template["source"], template["gpu"]))


def gpu_block(machine, index, gpu):
    """The ``-q`` block of one GPU: its template's recorded block with the GPU's header line, Product Name,
    Product Architecture (when the name tells it), Persistence Mode, MIG mode, Serial Number, GPU UUID, Minor
    Number, Board ID and GSP Firmware Version (where the recording derives them from the bus id and driver), PCI
    bus/device/domain/Bus Id, FB memory (when the profile has it), Fabric and the faults of ``q``."""
    name = template_name(machine, gpu)
    _head, block, template = q_template(name)
    q = dict(machine.profile.get("q") or {}, **(gpu.get("q") or {}))
    domain, bus, device, function = _bus_key(gpu["pci_bus_id"])
    bus_id = "%08X:%02X:%02X.%d" % (domain, bus, device, function)
    driver = machine.profile.get("driver_version") or DEFAULT_DRIVER
    block.lines[0] = "GPU %s\n" % bus_id
    block.set(("Product Name",), gpu["name"])
    arch = architecture(gpu["name"]) or template["architecture"]
    if architecture(gpu["name"]):
        block.set_if_there(("Product Architecture",), arch)
    block.set(("Persistence Mode",), q.get("persistence", "Enabled"))
    block.set(("MIG Mode", "Current"), gpu.get("mig_mode") or "N/A")
    block.set(("MIG Mode", "Pending"), gpu.get("mig_mode_pending", gpu.get("mig_mode")) or "N/A")
    block.set(("Serial Number",), gpu.get("serial") or "N/A")
    block.set(("GPU UUID",), gpu["uuid"])
    block.set(("Minor Number",), str(gpu.get("minor", index)))
    t_bus = template["bus"]
    if template["board_id"] == "0x%x" % (t_bus[1] << 8 | t_bus[2]):
        block.set(("Board ID",), "0x%x" % (bus << 8 | device))
    if template["gsp"] == template["driver"]:
        block.set(("GSP Firmware Version",), driver)
    block.set(("PCI", "Bus"), "0x%02X" % bus)
    block.set(("PCI", "Device"), "0x%02X" % device)
    block.set(("PCI", "Domain"), "0x%04X" % domain)
    block.set(("PCI", "Bus Id"), bus_id)
    for path, value in sorted(Q_HEALTHY.get(name, {}).items()):
        block.set(path, value)
    if gpu.get("memory_total_mib") is not None:
        total, used = gpu["memory_total_mib"], gpu.get("memory_used_mib", 0)
        reserved = int(block.get("FB Memory Usage", "Reserved").split()[0])
        block.set(("FB Memory Usage", "Total"), "%d MiB" % total)
        block.set(("FB Memory Usage", "Used"), "%d MiB" % used)
        block.set(("FB Memory Usage", "Free"), "%d MiB" % max(total - reserved - used, 0))
    if block.get("Fabric", "State") is not None:
        fabric = dict(FABRIC_COMPLETED if machine.profile.get("nvswitch") and arch in FABRIC_ARCHITECTURES
                      else FABRIC_NONE)
        fault = q.get("fabric") or {}
        fabric.update({"State": fault.get("state", fabric["State"]), "Status": fault.get("status", fabric["Status"])})
        for key, value in sorted(fabric.items()):
            block.set_if_there(("Fabric", key), value)
    elif q.get("fabric"):
        _q_fault(bus_id, template, "q.fabric: no Fabric section")
    if q.get("remapped_pending"):
        if block.get("Remapped Rows", "Pending") is None:
            _q_fault(bus_id, template, "q.remapped_pending: no Remapped Rows counters (row remapping came "
                                       "with Ampere)")
        # What the recorded A100 (a100-sxm4-80gb-4gpu-555, GPU 1) and the 510 excerpt show after one remap.
        block.set(("Remapped Rows", "Correctable Error"), "1")
        block.set(("Remapped Rows", "Pending"), "Yes")
        histogram = ("Remapped Rows", "Bank Remap Availability Histogram")
        banks = int(block.get(*histogram + ("Max",)).split()[0])
        block.set(histogram + ("Max",), "%d bank(s)" % (banks - 1))
        block.set(histogram + ("High",), "1 bank(s)")
    if q.get("retired_pending"):
        if block.get("Retired Pages", "Pending Page Blacklist") in (None, "N/A"):
            _q_fault(bus_id, template, "q.retired_pending: no page retirement (pre-Ampere GPUs only)")
        # The counts of the recorded excerpt retired-pages-pending-page-blacklist-yes-excerpt.txt.
        block.set(("Retired Pages", "Single Bit ECC"), "2")
        block.set(("Retired Pages", "Double Bit ECC"), "0")
        block.set(("Retired Pages", "Pending Page Blacklist"), "Yes")
    return block.text()


def synthesized_q(machine):
    """``nvidia-smi -q`` of a profile without a recording: the header of the first GPU's template (Driver
    Version, CUDA Version of that branch, Attached GPUs filled in) and :func:`gpu_block` per enumerated GPU, in
    bus order, a blank line between blocks as nvidia-smi prints them."""
    enum = machine.enumerated()
    head, _block, _template = q_template(template_name(machine, enum[0][1] if enum else None))
    driver = machine.profile.get("driver_version") or DEFAULT_DRIVER
    head.set(("Driver Version",), driver)
    cuda = CUDA_VERSIONS.get(driver.split(".")[0])
    if cuda:
        head.set(("CUDA Version",), cuda)
    head.set(("Attached GPUs",), str(len(enum)))
    return head.text() + "\n".join(gpu_block(machine, index, gpu) for index, gpu in enum)


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


def inforom_warnings(machine):
    """What nvidia-smi prints after a whole answer when a GPU's infoROM is corrupted, on stdout (Azure's
    diagnostics tool greps it from ``nvidia-smi >nvidia-smi.out``: Azure/azhpc-diagnostics@8543969,
    Linux/src/gather_azhpc_vm_diagnostics.sh lines 645 and 760); the line as recorded in
    tests/fixtures/readiness/nvidia-smi-errors/v100-sxm2-32gb-8gpu-460-table-inforom-corrupted.txt."""
    return "".join("WARNING: infoROM is corrupted at gpu %s\n" % _short_bus(gpu["pci_bus_id"])
                   for _i, gpu in machine.enumerated()
                   if gpu.get("inforom") == "corrupted" and machine.state(gpu) == "ok")


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
        warnings = inforom_warnings(machine)
        if warnings:
            sys.stdout.write(warnings)
            return RC_INFOROM_CORRUPTED
        return RC_OK
    except Exit as exc:
        sys.stdout.write(exc.stdout)
        sys.stderr.write(exc.stderr)
        return exc.rc


# ----------------------------------------------------------------------------------------------------
# -q templates: the header and first GPU block of real recordings, byte for byte (trailing blanks written as
# \x20); tests/unit/emulator/test_emulator_synth_q.py compares each with its fixture. Name -> (source, GPU, text).

Q_TEMPLATES = {
    "hopper-535": (
        "tests/fixtures/readiness/nvidia-smi-q/h100-8gpu-sxm-535.183-fabric-completed.txt", "GPU 00000000:53:00.0",
        """\
==============NVSMI LOG==============

Timestamp                                 : Fri Jun 21 02:03:08 2024
Driver Version                            : 535.183.01
CUDA Version                              : 12.2

Attached GPUs                             : 8
GPU 00000000:53:00.0
    Product Name                          : NVIDIA H100 80GB HBM3
    Product Brand                         : NVIDIA
    Product Architecture                  : Hopper
    Display Mode                          : Disabled
    Display Active                        : Disabled
    Persistence Mode                      : Enabled
    Addressing Mode                       : None
    MIG Mode
        Current                           : Disabled
        Pending                           : Disabled
    Accounting Mode                       : Disabled
    Accounting Mode Buffer Size           : 4000
    Driver Model
        Current                           : N/A
        Pending                           : N/A
    Serial Number                         : 1655022005478
    GPU UUID                              : GPU-566e6f65-c38e-b12f-4824-6944218668b9
    Minor Number                          : 0
    VBIOS Version                         : 96.00.74.00.01
    MultiGPU Board                        : No
    Board ID                              : 0x5300
    Board Part Number                     : 692-2G520-0200-000
    GPU Part Number                       : 2330-885-A1
    FRU Part Number                       : N/A
    Module ID                             : 7
    Inforom Version
        Image Version                     : G520.0200.00.05
        OEM Object                        : 2.1
        ECC Object                        : 7.16
        Power Management Object           : N/A
    Inforom BBX Object Flush
        Latest Timestamp                  : 2024/06/20 21:24:53.799
        Latest Duration                   : 88355 us
    GPU Operation Mode
        Current                           : N/A
        Pending                           : N/A
    GSP Firmware Version                  : 535.183.01
    GPU Virtualization Mode
        Virtualization Mode               : Pass-Through
        Host VGPU Mode                    : N/A
    GPU Reset Status
        Reset Required                    : No
        Drain and Reset Recommended       : No
    IBMNPU
        Relaxed Ordering Mode             : N/A
    PCI
        Bus                               : 0x53
        Device                            : 0x00
        Domain                            : 0x0000
        Device Id                         : 0x233010DE
        Bus Id                            : 00000000:53:00.0
        Sub System Id                     : 0x16C110DE
        GPU Link Info
            PCIe Generation
                Max                       : 5
                Current                   : 5
                Device Current            : 5
                Device Max                : 5
                Host Max                  : N/A
            Link Width
                Max                       : 16x
                Current                   : 16x
        Bridge Chip
            Type                          : N/A
            Firmware                      : N/A
        Replays Since Reset               : 120
        Replay Number Rollovers           : 0
        Tx Throughput                     : 632 KB/s
        Rx Throughput                     : 531 KB/s
        Atomic Caps Inbound               : N/A
        Atomic Caps Outbound              : N/A
    Fan Speed                             : N/A
    Performance State                     : P0
    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    Sparse Operation Mode                 : Disabled
    FB Memory Usage
        Total                             : 81559 MiB
        Reserved                          : 551 MiB
        Used                              : 0 MiB
        Free                              : 81007 MiB
    BAR1 Memory Usage
        Total                             : 131072 MiB
        Used                              : 1 MiB
        Free                              : 131071 MiB
    Conf Compute Protected Memory Usage
        Total                             : 0 MiB
        Used                              : 0 MiB
        Free                              : 0 MiB
    Compute Mode                          : Default
    Utilization
        Gpu                               : 0 %
        Memory                            : 0 %
        Encoder                           : 0 %
        Decoder                           : 0 %
        JPEG                              : 0 %
        OFA                               : 0 %
    Encoder Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    FBC Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
            SRAM Threshold Exceeded       : No
        Aggregate Uncorrectable SRAM Sources
            SRAM L2                       : 0
            SRAM SM                       : 0
            SRAM Microcontroller          : 0
            SRAM PCIE                     : 0
            SRAM Other                    : 0
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 0
        Pending                           : No
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 2560 bank(s)
            High                          : 0 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)
    Temperature
        GPU Current Temp                  : 36 C
        GPU T.Limit Temp                  : 50 C
        GPU Shutdown T.Limit Temp         : -8 C
        GPU Slowdown T.Limit Temp         : -2 C
        GPU Max Operating T.Limit Temp    : 0 C
        GPU Target Temperature            : N/A
        Memory Current Temp               : 44 C
        Memory Max Operating T.Limit Temp : 0 C
    GPU Power Readings
        Power Draw                        : 71.97 W
        Current Power Limit               : 700.00 W
        Requested Power Limit             : 700.00 W
        Default Power Limit               : 700.00 W
        Min Power Limit                   : 200.00 W
        Max Power Limit                   : 700.00 W
    Module Power Readings
        Power Draw                        : N/A
        Current Power Limit               : N/A
        Requested Power Limit             : N/A
        Default Power Limit               : N/A
        Min Power Limit                   : N/A
        Max Power Limit                   : N/A
    Clocks
        Graphics                          : 345 MHz
        SM                                : 345 MHz
        Memory                            : 2619 MHz
        Video                             : 765 MHz
    Applications Clocks
        Graphics                          : 1980 MHz
        Memory                            : 2619 MHz
    Default Applications Clocks
        Graphics                          : 1980 MHz
        Memory                            : 2619 MHz
    Deferred Clocks
        Memory                            : N/A
    Max Clocks
        Graphics                          : 1980 MHz
        SM                                : 1980 MHz
        Memory                            : 2619 MHz
        Video                             : 1545 MHz
    Max Customer Boost Clocks
        Graphics                          : 1980 MHz
    Clock Policy
        Auto Boost                        : N/A
        Auto Boost Default                : N/A
    Voltage
        Graphics                          : 665.000 mV
    Fabric
        State                             : Completed
        Status                            : Success
    Processes                             : None
"""),
    "hopper-550": (
        "tests/fixtures/readiness/nvidia-smi-q/h100nvl-2gpu-550-pcie.txt", "GPU 00000000:AD:00.0",
        """\

==============NVSMI LOG==============

Timestamp                                 : Thu Nov 14 15:35:07 2024
Driver Version                            : 550.54.14
CUDA Version                              : 12.4

Attached GPUs                             : 2
GPU 00000000:AD:00.0
    Product Name                          : NVIDIA H100 NVL
    Product Brand                         : NVIDIA
    Product Architecture                  : Hopper
    Display Mode                          : Enabled
    Display Active                        : Disabled
    Persistence Mode                      : Enabled
    Addressing Mode                       : None
    MIG Mode
        Current                           : Disabled
        Pending                           : Disabled
    Accounting Mode                       : Disabled
    Accounting Mode Buffer Size           : 4000
    Driver Model
        Current                           : N/A
        Pending                           : N/A
    Serial Number                         : 1650724004565
    GPU UUID                              : GPU-806f8ea2-6428-1096-a076-bb687fb45fb0
    Minor Number                          : 4
    VBIOS Version                         : 96.00.74.00.11
    MultiGPU Board                        : No
    Board ID                              : 0xad00
    Board Part Number                     : 900-21010-0020-000
    GPU Part Number                       : 2321-886-A1
    FRU Part Number                       : N/A
    Module ID                             : 4
    Inforom Version
        Image Version                     : 1010.0210.00.02
        OEM Object                        : 2.1
        ECC Object                        : 7.16
        Power Management Object           : N/A
    Inforom BBX Object Flush
        Latest Timestamp                  : 2024/11/13 22:03:47.226
        Latest Duration                   : 135912 us
    GPU Operation Mode
        Current                           : N/A
        Pending                           : N/A
    GPU C2C Mode                          : Disabled
    GPU Virtualization Mode
        Virtualization Mode               : None
        Host VGPU Mode                    : N/A
        vGPU Heterogeneous Mode           : N/A
    GPU Reset Status
        Reset Required                    : No
        Drain and Reset Recommended       : No
    GSP Firmware Version                  : 550.54.14
    IBMNPU
        Relaxed Ordering Mode             : N/A
    PCI
        Bus                               : 0xAD
        Device                            : 0x00
        Domain                            : 0x0000
        Base Classcode                    : 0x3
        Sub Classcode                     : 0x2
        Device Id                         : 0x232110DE
        Bus Id                            : 00000000:AD:00.0
        Sub System Id                     : 0x183910DE
        GPU Link Info
            PCIe Generation
                Max                       : 5
                Current                   : 5
                Device Current            : 5
                Device Max                : 5
                Host Max                  : 5
            Link Width
                Max                       : 16x
                Current                   : 16x
        Bridge Chip
            Type                          : N/A
            Firmware                      : N/A
        Replays Since Reset               : 0
        Replay Number Rollovers           : 0
        Tx Throughput                     : 727 KB/s
        Rx Throughput                     : 525 KB/s
        Atomic Caps Inbound               : N/A
        Atomic Caps Outbound              : FETCHADD_32 FETCHADD_64 SWAP_32 SWAP_64 CAS_32 CAS_64\x20
    Fan Speed                             : N/A
    Performance State                     : P0
    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    Sparse Operation Mode                 : Disabled
    FB Memory Usage
        Total                             : 95830 MiB
        Reserved                          : 594 MiB
        Used                              : 0 MiB
        Free                              : 95235 MiB
    BAR1 Memory Usage
        Total                             : 131072 MiB
        Used                              : 1 MiB
        Free                              : 131071 MiB
    Conf Compute Protected Memory Usage
        Total                             : 0 MiB
        Used                              : 0 MiB
        Free                              : 0 MiB
    Compute Mode                          : Default
    Utilization
        Gpu                               : 0 %
        Memory                            : 0 %
        Encoder                           : 0 %
        Decoder                           : 0 %
        JPEG                              : 0 %
        OFA                               : 0 %
    Encoder Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    FBC Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
            SRAM Threshold Exceeded       : No
        Aggregate Uncorrectable SRAM Sources
            SRAM L2                       : 0
            SRAM SM                       : 0
            SRAM Microcontroller          : 0
            SRAM PCIE                     : 0
            SRAM Other                    : 0
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 0
        Pending                           : No
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 3072 bank(s)
            High                          : 0 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)
    Temperature
        GPU Current Temp                  : 32 C
        GPU T.Limit Temp                  : 55 C
        GPU Shutdown T.Limit Temp         : -8 C
        GPU Slowdown T.Limit Temp         : -2 C
        GPU Max Operating T.Limit Temp    : 0 C
        GPU Target Temperature            : N/A
        Memory Current Temp               : 40 C
        Memory Max Operating T.Limit Temp : 0 C
    GPU Power Readings
        Power Draw                        : 61.62 W
        Current Power Limit               : 310.00 W
        Requested Power Limit             : 310.00 W
        Default Power Limit               : 310.00 W
        Min Power Limit                   : 200.00 W
        Max Power Limit                   : 400.00 W
    GPU Memory Power Readings\x20
        Power Draw                        : N/A
    Module Power Readings
        Power Draw                        : N/A
        Current Power Limit               : N/A
        Requested Power Limit             : N/A
        Default Power Limit               : N/A
        Min Power Limit                   : N/A
        Max Power Limit                   : N/A
    Clocks
        Graphics                          : 345 MHz
        SM                                : 345 MHz
        Memory                            : 2619 MHz
        Video                             : 765 MHz
    Applications Clocks
        Graphics                          : 1785 MHz
        Memory                            : 2619 MHz
    Default Applications Clocks
        Graphics                          : 1785 MHz
        Memory                            : 2619 MHz
    Deferred Clocks
        Memory                            : N/A
    Max Clocks
        Graphics                          : 1785 MHz
        SM                                : 1785 MHz
        Memory                            : 2619 MHz
        Video                             : 1410 MHz
    Max Customer Boost Clocks
        Graphics                          : 1785 MHz
    Clock Policy
        Auto Boost                        : N/A
        Auto Boost Default                : N/A
    Voltage
        Graphics                          : 705.000 mV
    Fabric
        State                             : N/A
        Status                            : N/A
        CliqueId                          : N/A
        ClusterUUID                       : N/A
        Health
            Bandwidth                     : N/A
    Processes                             : None
"""),
    "ampere-555": (
        "tests/fixtures/readiness/nvidia-smi-q/a100-sxm4-80gb-4gpu-555-fabric-na.txt", "GPU 00000000:68:00.0",
        """\

==============NVSMI LOG==============

Timestamp                                 : Thu Nov 14 10:45:47 2024
Driver Version                            : 555.42.02
CUDA Version                              : 12.5

Attached GPUs                             : 4
GPU 00000000:68:00.0
    Product Name                          : NVIDIA A100-SXM4-80GB
    Product Brand                         : NVIDIA
    Product Architecture                  : Ampere
    Display Mode                          : Enabled
    Display Active                        : Disabled
    Persistence Mode                      : Enabled
    Addressing Mode                       : None
    MIG Mode
        Current                           : Disabled
        Pending                           : Disabled
    Accounting Mode                       : Disabled
    Accounting Mode Buffer Size           : 4000
    Driver Model
        Current                           : N/A
        Pending                           : N/A
    Serial Number                         : 1320222043305
    GPU UUID                              : GPU-31515c3d-1414-7c2c-004a-f86a898946ac
    Minor Number                          : 3
    VBIOS Version                         : 92.00.9E.00.02
    MultiGPU Board                        : No
    Board ID                              : 0x6800
    Board Part Number                     : 692-2G506-0212-005
    GPU Part Number                       : 20B2-896-A1
    FRU Part Number                       : N/A
    Module ID                             : 3
    Inforom Version
        Image Version                     : G506.0212.00.01
        OEM Object                        : 2.0
        ECC Object                        : 6.16
        Power Management Object           : N/A
    Inforom BBX Object Flush
        Latest Timestamp                  : 2024/07/10 08:30:24.927
        Latest Duration                   : 93357 us
    GPU Operation Mode
        Current                           : N/A
        Pending                           : N/A
    GPU C2C Mode                          : N/A
    GPU Virtualization Mode
        Virtualization Mode               : None
        Host VGPU Mode                    : N/A
        vGPU Heterogeneous Mode           : N/A
    GPU Reset Status
        Reset Required                    : No
        Drain and Reset Recommended       : No
    GSP Firmware Version                  : 555.42.02
    IBMNPU
        Relaxed Ordering Mode             : N/A
    PCI
        Bus                               : 0x68
        Device                            : 0x00
        Domain                            : 0x0000
        Base Classcode                    : 0x3
        Sub Classcode                     : 0x2
        Device Id                         : 0x20B210DE
        Bus Id                            : 00000000:68:00.0
        Sub System Id                     : 0x147F10DE
        GPU Link Info
            PCIe Generation
                Max                       : 4
                Current                   : 4
                Device Current            : 4
                Device Max                : 4
                Host Max                  : 5
            Link Width
                Max                       : 16x
                Current                   : 16x
        Bridge Chip
            Type                          : N/A
            Firmware                      : N/A
        Replays Since Reset               : 0
        Replay Number Rollovers           : 0
        Tx Throughput                     : 0 KB/s
        Rx Throughput                     : 0 KB/s
        Atomic Caps Inbound               : N/A
        Atomic Caps Outbound              : N/A
    Fan Speed                             : N/A
    Performance State                     : P0
    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    Sparse Operation Mode                 : N/A
    FB Memory Usage
        Total                             : 81920 MiB
        Reserved                          : 763 MiB
        Used                              : 1 MiB
        Free                              : 81158 MiB
    BAR1 Memory Usage
        Total                             : 131072 MiB
        Used                              : 1 MiB
        Free                              : 131071 MiB
    Conf Compute Protected Memory Usage
        Total                             : 0 MiB
        Used                              : 0 MiB
        Free                              : 0 MiB
    Compute Mode                          : Default
    Utilization
        Gpu                               : 0 %
        Memory                            : 0 %
        Encoder                           : 0 %
        Decoder                           : 0 %
        JPEG                              : 0 %
        OFA                               : 0 %
    Encoder Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    FBC Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
        Aggregate
            SRAM Correctable              : 0
            SRAM Uncorrectable Parity     : 0
            SRAM Uncorrectable SEC-DED    : 0
            DRAM Correctable              : 0
            DRAM Uncorrectable            : 0
            SRAM Threshold Exceeded       : No
        Aggregate Uncorrectable SRAM Sources
            SRAM L2                       : 0
            SRAM SM                       : 0
            SRAM Microcontroller          : 0
            SRAM PCIE                     : 0
            SRAM Other                    : 0
    Retired Pages
        Single Bit ECC                    : N/A
        Double Bit ECC                    : N/A
        Pending Page Blacklist            : N/A
    Remapped Rows
        Correctable Error                 : 0
        Uncorrectable Error               : 0
        Pending                           : No
        Remapping Failure Occurred        : No
        Bank Remap Availability Histogram
            Max                           : 640 bank(s)
            High                          : 0 bank(s)
            Partial                       : 0 bank(s)
            Low                           : 0 bank(s)
            None                          : 0 bank(s)
    Temperature
        GPU Current Temp                  : 25 C
        GPU T.Limit Temp                  : N/A
        GPU Shutdown Temp                 : 92 C
        GPU Slowdown Temp                 : 89 C
        GPU Max Operating Temp            : 85 C
        GPU Target Temperature            : N/A
        Memory Current Temp               : 43 C
        Memory Max Operating Temp         : 95 C
    GPU Power Readings
        Power Draw                        : 59.77 W
        Current Power Limit               : 500.00 W
        Requested Power Limit             : 500.00 W
        Default Power Limit               : 500.00 W
        Min Power Limit                   : 100.00 W
        Max Power Limit                   : 500.00 W
    GPU Memory Power Readings\x20
        Power Draw                        : N/A
    Module Power Readings
        Power Draw                        : N/A
        Current Power Limit               : N/A
        Requested Power Limit             : N/A
        Default Power Limit               : N/A
        Min Power Limit                   : N/A
        Max Power Limit                   : N/A
    Clocks
        Graphics                          : 210 MHz
        SM                                : 210 MHz
        Memory                            : 1593 MHz
        Video                             : 585 MHz
    Applications Clocks
        Graphics                          : 1140 MHz
        Memory                            : 1593 MHz
    Default Applications Clocks
        Graphics                          : 1140 MHz
        Memory                            : 1593 MHz
    Deferred Clocks
        Memory                            : N/A
    Max Clocks
        Graphics                          : 1410 MHz
        SM                                : 1410 MHz
        Memory                            : 1593 MHz
        Video                             : 1290 MHz
    Max Customer Boost Clocks
        Graphics                          : 1410 MHz
    Clock Policy
        Auto Boost                        : N/A
        Auto Boost Default                : N/A
    Voltage
        Graphics                          : 706.250 mV
    Fabric
        State                             : N/A
        Status                            : N/A
        CliqueId                          : N/A
        ClusterUUID                       : N/A
        Health
            Bandwidth                     : N/A
    Processes                             : None
    Capabilities
        EGM                               : disabled
"""),
    "volta-550": (
        "tests/fixtures/readiness/nvidia-smi-q/v100-sxm2-16gb-8gpu-550-retired-pages.txt", "GPU 00000000:00:04.0",
        """\

==============NVSMI LOG==============

Timestamp                                 : Mon Nov 18 12:16:13 2024
Driver Version                            : 550.127.05
CUDA Version                              : 12.4

Attached GPUs                             : 8
GPU 00000000:00:04.0
    Product Name                          : Tesla V100-SXM2-16GB
    Product Brand                         : Tesla
    Product Architecture                  : Volta
    Display Mode                          : Enabled
    Display Active                        : Disabled
    Persistence Mode                      : Enabled
    Addressing Mode                       : N/A
    MIG Mode
        Current                           : N/A
        Pending                           : N/A
    Accounting Mode                       : Disabled
    Accounting Mode Buffer Size           : 4000
    Driver Model
        Current                           : N/A
        Pending                           : N/A
    Serial Number                         : 0324218203972
    GPU UUID                              : GPU-f3bbf1a0-ec50-caa0-d5ab-180afe8207e3
    Minor Number                          : 0
    VBIOS Version                         : 88.00.4F.00.09
    MultiGPU Board                        : No
    Board ID                              : 0x4
    Board Part Number                     : 900-2G503-0300-000
    GPU Part Number                       : 1DB1-895-A1
    FRU Part Number                       : N/A
    Module ID                             : 4
    Inforom Version
        Image Version                     : G503.0201.00.03
        OEM Object                        : 1.1
        ECC Object                        : 5.0
        Power Management Object           : N/A
    Inforom BBX Object Flush
        Latest Timestamp                  : N/A
        Latest Duration                   : N/A
    GPU Operation Mode
        Current                           : N/A
        Pending                           : N/A
    GPU C2C Mode                          : N/A
    GPU Virtualization Mode
        Virtualization Mode               : None
        Host VGPU Mode                    : N/A
        vGPU Heterogeneous Mode           : N/A
    GPU Reset Status
        Reset Required                    : No
        Drain and Reset Recommended       : N/A
    GSP Firmware Version                  : N/A
    IBMNPU
        Relaxed Ordering Mode             : N/A
    PCI
        Bus                               : 0x00
        Device                            : 0x04
        Domain                            : 0x0000
        Base Classcode                    : 0x3
        Sub Classcode                     : 0x2
        Device Id                         : 0x1DB110DE
        Bus Id                            : 00000000:00:04.0
        Sub System Id                     : 0x121210DE
        GPU Link Info
            PCIe Generation
                Max                       : 3
                Current                   : 3
                Device Current            : 3
                Device Max                : 3
                Host Max                  : Unknown Error
            Link Width
                Max                       : 16x
                Current                   : 16x
        Bridge Chip
            Type                          : N/A
            Firmware                      : N/A
        Replays Since Reset               : 0
        Replay Number Rollovers           : 0
        Tx Throughput                     : 0 KB/s
        Rx Throughput                     : 50 KB/s
        Atomic Caps Inbound               : N/A
        Atomic Caps Outbound              : N/A
    Fan Speed                             : N/A
    Performance State                     : P0
    Clocks Event Reasons
        Idle                              : Active
        Applications Clocks Setting       : Not Active
        SW Power Cap                      : Not Active
        HW Slowdown                       : Not Active
            HW Thermal Slowdown           : Not Active
            HW Power Brake Slowdown       : Not Active
        Sync Boost                        : Not Active
        SW Thermal Slowdown               : Not Active
        Display Clock Setting             : Not Active
    Sparse Operation Mode                 : N/A
    FB Memory Usage
        Total                             : 16384 MiB
        Reserved                          : 240 MiB
        Used                              : 1 MiB
        Free                              : 16145 MiB
    BAR1 Memory Usage
        Total                             : 16384 MiB
        Used                              : 2 MiB
        Free                              : 16382 MiB
    Conf Compute Protected Memory Usage
        Total                             : 0 MiB
        Used                              : 0 MiB
        Free                              : 0 MiB
    Compute Mode                          : Default
    Utilization
        Gpu                               : 0 %
        Memory                            : 0 %
        Encoder                           : 0 %
        Decoder                           : 0 %
        JPEG                              : N/A
        OFA                               : N/A
    Encoder Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    FBC Stats
        Active Sessions                   : 0
        Average FPS                       : 0
        Average Latency                   : 0
    ECC Mode
        Current                           : Enabled
        Pending                           : Enabled
    ECC Errors
        Volatile
            Single Bit\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20
                Device Memory             : 0
                Register File             : 0
                L1 Cache                  : 0
                L2 Cache                  : 0
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : N/A
                Total                     : 0
            Double Bit\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20
                Device Memory             : 0
                Register File             : 0
                L1 Cache                  : 0
                L2 Cache                  : 0
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : 0
                Total                     : 0
        Aggregate
            Single Bit\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20
                Device Memory             : 0
                Register File             : 0
                L1 Cache                  : 0
                L2 Cache                  : 0
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : N/A
                Total                     : 0
            Double Bit\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20\x20
                Device Memory             : 0
                Register File             : 0
                L1 Cache                  : 0
                L2 Cache                  : 0
                Texture Memory            : N/A
                Texture Shared            : N/A
                CBU                       : 0
                Total                     : 0
    Retired Pages
        Single Bit ECC                    : 0
        Double Bit ECC                    : 0
        Pending Page Blacklist            : No
    Remapped Rows                         : N/A
    Temperature
        GPU Current Temp                  : 37 C
        GPU T.Limit Temp                  : N/A
        GPU Shutdown Temp                 : 90 C
        GPU Slowdown Temp                 : 87 C
        GPU Max Operating Temp            : 83 C
        GPU Target Temperature            : N/A
        Memory Current Temp               : 33 C
        Memory Max Operating Temp         : 85 C
    GPU Power Readings
        Power Draw                        : 44.50 W
        Current Power Limit               : 300.00 W
        Requested Power Limit             : 300.00 W
        Default Power Limit               : 300.00 W
        Min Power Limit                   : 150.00 W
        Max Power Limit                   : 300.00 W
    GPU Memory Power Readings\x20
        Power Draw                        : N/A
    Module Power Readings
        Power Draw                        : N/A
        Current Power Limit               : N/A
        Requested Power Limit             : N/A
        Default Power Limit               : N/A
        Min Power Limit                   : N/A
        Max Power Limit                   : N/A
    Clocks
        Graphics                          : 135 MHz
        SM                                : 135 MHz
        Memory                            : 877 MHz
        Video                             : 555 MHz
    Applications Clocks
        Graphics                          : 1312 MHz
        Memory                            : 877 MHz
    Default Applications Clocks
        Graphics                          : 1312 MHz
        Memory                            : 877 MHz
    Deferred Clocks
        Memory                            : N/A
    Max Clocks
        Graphics                          : 1530 MHz
        SM                                : 1530 MHz
        Memory                            : 877 MHz
        Video                             : 1372 MHz
    Max Customer Boost Clocks
        Graphics                          : 1530 MHz
    Clock Policy
        Auto Boost                        : N/A
        Auto Boost Default                : N/A
    Voltage
        Graphics                          : N/A
    Fabric
        State                             : N/A
        Status                            : N/A
        CliqueId                          : N/A
        ClusterUUID                       : N/A
        Health
            Bandwidth                     : N/A
    Processes                             : None
"""),
}
# Fields a template's own host got wrong that are not the GPU's: set to their healthy value in every block made
# from it (the V100 host's PCIe "Host Max" read "Unknown Error" on all 8 GPUs; the H100 recording prints N/A).
Q_HEALTHY = {
    "volta-550": {("PCI", "GPU Link Info", "PCIe Generation", "Host Max"): "N/A"},
}


# MIG mode, instance create/destroy and -lgip/-lgipp: emu_mig.py beside this script, when installed with it.
_HERE = os.path.dirname(os.path.realpath(__file__))
if os.path.exists(os.path.join(_HERE, "emu_mig.py")):
    sys.path.insert(0, _HERE)
    import emu_mig  # noqa: E402

    emu_mig.install(sys.modules[__name__])


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
