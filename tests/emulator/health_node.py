"""Whole GPU nodes for the node health check: what a node shows besides nvidia-smi, and the faults, all from real
recorded outputs (tests/fixtures/readiness; each file's header names its source).

A profile (machines.py format) may carry, besides what the emulated nvidia-smi reads:

- ``proc_version``: a recorded ``/proc/driver/nvidia/version`` (``{"text_file"|"text", "lines"}``);
- ``pci``: the NVIDIA PCI functions for ``<root>/sys/bus/pci/devices``: ``{"lspci": <recorded lspci>}`` (every
  NVIDIA function of the recording, as recorded) or ``{"from": "gpus"}`` (one 3D controller per profile GPU, for
  a node whose lspci was not recorded). GPUs marked ``lost`` stay on the bus; ``"gone": [bus ids]`` makes
  functions read all ones (lspci's ``(rev ff)``);
- ``kernel_log``: recorded kernel log excerpts, concatenated into one file;
- ``fabric_manager``: recorded ``systemctl status`` / ``is-active`` text of the fabric manager;
- ``q_sections`` (profile or GPU) and ``hang_s``: read by nvidia_smi.py (README.md).

:func:`write_node` writes them under a root (``--root``), with ``/proc/driver/nvidia/gpus/*/information`` for
the GPU minors and, as root, ``/dev/nvidia<minor>`` device nodes. :data:`FAULTS` turns a healthy node into a
faulty one.
"""
import copy
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import fake_sysfs  # noqa: E402
import machines  # noqa: E402
from machines import recording  # noqa: E402

NVIDIA_MAJOR = 195
P5_Q = "h100-8gpu-sxm-535.183-fabric-completed.txt"  # recorded on the bus layout of the recorded AWS p5 lspci
P5_LSPCI = "h100-8gpu-sxm5-aws-p5-nvswitch-lspci-grep.txt"
XE9680_Q = "h100-8gpu-sxm-535-fabric-completed.txt"  # the bus layout of the recorded XE9680 Xid logs (9b, cb)
KERNEL_LOG = "var/log/hpc-gres-emu/kernel.log"
FABRIC_MANAGER = "var/log/hpc-gres-emu/fabricmanager.status"

_LSPCI = re.compile(r"^(?:(?P<domain>[0-9a-fA-F]{4}):)?(?P<bus>[0-9a-fA-F]{2}):(?P<dev>[0-9a-fA-F]{2})\."
                    r"(?P<fn>[0-7]) (?P<cls>[^:\[]+?)(?: \[(?P<code>[0-9a-fA-F]{4})\])?: (?P<desc>.*?)"
                    r"(?: \[(?P<vendor>[0-9a-fA-F]{4}):(?P<device>[0-9a-fA-F]{4})\])?"
                    r"(?: \(rev (?P<rev>[0-9a-fA-F]{2})\))?$")
_CLASS_CODES = {"3D controller": "0302", "VGA compatible controller": "0300", "Bridge": "0680",
                "Audio device": "0403"}


def h100_p5():
    """8x H100 SXM5 with 4 NVSwitches: ``-q`` recorded on the AWS p5 bus layout, the p5's lspci for the PCI
    functions (GPUs and NVSwitches at the same bus ids), its fabric manager running (a recorded
    ``systemctl status``, of a p4d). Not recorded for driver 535.183.01: ``/proc/driver/nvidia/version``."""
    profile = machines.smi_q_profile(P5_Q)
    profile["source"] += ("; PCI functions: tests/fixtures/readiness/lspci/%s (real); fabric manager: "
                          "fabricmanager/a100-p4d-bottlerocket-systemctl-status-active-running.txt (real, another "
                          "NVSwitch host); kernel log: none (no NVRM line)" % P5_LSPCI)
    profile["pci"] = {"lspci": recording("readiness", "lspci", P5_LSPCI, lines=[2, 13])}
    profile["fabric_manager"] = recording("readiness", "fabricmanager",
                                          "a100-p4d-bottlerocket-systemctl-status-active-running.txt")
    profile["kernel_log"] = []
    return profile


def h100_xe9680():
    """8x H100 SXM on the bus layout of the recorded Dell XE9680 kernel logs (GPU 4 at 9b:00, GPU 6 at cb:00).
    No lspci recorded: one 3D controller per GPU; no NVSwitch function, so the fabric rule reads the GPUs'
    Fabric state only."""
    profile = machines.smi_q_profile(XE9680_Q)
    profile["source"] += "; PCI functions: one per GPU of the -q (no lspci recorded); kernel log: none"
    profile["pci"] = {"from": "gpus"}
    profile["kernel_log"] = []
    return profile


NODES = {"h100-p5": h100_p5, "h100-xe9680": h100_xe9680}


def _gpu(profile, bus):
    return next(g for g in profile["gpus"] if g["pci_bus_id"] == bus)


def _gpu_missing(profile):
    _gpu(profile, "00000000:86:00.0")["lost"] = True  # GPU 3: gone from nvidia-smi, still on the PCI bus


# Without the fabric manager every GPU's fabric stays "In Progress" (recorded on the same p5 before its fabric
# manager was started).
FABRIC_IN_PROGRESS = recording("readiness", "fabricmanager", "h100-p5-570-fabric-in-progress-grep.txt", lines=[2, 4])


def _fabric_manager_stopped(profile):
    profile["fabric_manager"] = {"text": "inactive\n"}  # systemctl is-active's answer for a stopped unit
    profile["q_sections"] = {"Fabric": FABRIC_IN_PROGRESS}


def fabric_follows_unit(profile, unit="nvidia-fabricmanager"):
    """The profile for a test node with a real (stand-in) systemd unit: ``-q`` shows every GPU's fabric In
    Progress whenever ``systemctl is-active UNIT`` is not ``active``."""
    profile["fabric_manager_unit"] = {"unit": unit, "q_sections": {"Fabric": FABRIC_IN_PROGRESS}}
    return profile


def _remapped_rows_pending(profile):
    # the A10's recorded Remapped Rows block (Uncorrectable Error 4, Pending Yes) on GPU 2
    _gpu(profile, "00000000:75:00.0")["q_sections"] = {
        "Remapped Rows": recording("readiness", "nvidia-smi-q", "a10-1gpu-535-remapped-rows-pending.txt",
                                   lines=[139, 149])}


def _nvml_mismatch(profile):
    # one recording holds both sides: NVML 580.178 against the loaded module 580.173.02
    profile.update(machines.with_failure(profile, "driver-library-mismatch-580"))
    profile["proc_version"] = recording("readiness", "fabricmanager", "proc-driver-nvidia-version-580-proprietary.txt")


def _hung(profile):
    profile["hang_s"] = 60


def _xid_fatal(profile):
    profile["kernel_log"] = [recording("readiness", "kernel-log", "h100-xe9680-xid119-gsp-timeout-dmesg-T.txt")]


def _driver_crash(profile):
    # a NULL pointer Oops in nvidia_uvm (recorded during a laptop's suspend): a crash in the driver, for the node
    profile["kernel_log"] = [recording("readiness", "kernel-log", "driver-crash-nvidia-uvm-suspend-syslog-ubuntuforums.txt")]


def _inforom_corrupted(profile):
    # GPU 5: nvidia-smi prints its whole answer, then the recorded warning line, and exits 14 (emulator README)
    _gpu(profile, "00000000:A8:00.0")["inforom"] = "corrupted"


def _xid_application(profile):
    # the three Xid 13 lines (Graphics SM exceptions), without the Xid 109 that follows them in the recording
    profile["kernel_log"] = [recording("readiness", "kernel-log",
                                       "h100-xid13-pid-unknown-xid109-ctx-switch-timeout-dmesg-ctime-md-quoted.txt",
                                       lines=[1, 4])]


# name: (node, change, what the health check must report: (check, GPU) of the first error, or None)
FAULTS = {
    "gpu-missing-on-pci": ("h100-p5", _gpu_missing, ("gpu_count", "00000000:86:00.0")),
    "fabric-manager-stopped": ("h100-p5", _fabric_manager_stopped, ("fabric", 0)),
    "remapped-rows-pending": ("h100-p5", _remapped_rows_pending, ("memory", 2)),
    "nvml-driver-mismatch": ("h100-p5", _nvml_mismatch, ("nvml", None)),
    "nvidia-smi-hung": ("h100-p5", _hung, ("nvml", None)),
    "xid-fatal": ("h100-xe9680", _xid_fatal, ("xid", 4)),
    "xid-application": ("h100-xe9680", _xid_application, None),
    "driver-crash": ("h100-xe9680", _driver_crash, ("xid", None)),
    "inforom-corrupted": ("h100-p5", _inforom_corrupted, None),
}


def node(name):
    return NODES[name]()


def with_fault(name):
    """(profile with the fault, expected (check, GPU) of the first error or None)."""
    base, change, expected = FAULTS[name]
    profile = node(base)
    change(profile)
    profile["source"] += "; fault %s" % name
    return profile, expected


# ----------------------------------------------------------------------------------------------------
# writing a node's root


def _recorded(spec, base=machines.PROFILES):
    """The text a profile spec names (``text`` or ``text_file`` relative to ``base``, header dropped, ``lines``)."""
    if "text" in spec:
        text = spec["text"]
    else:
        with open(os.path.join(base, spec["text_file"])) as handle:
            text = handle.read()
        head, sep, body = text.partition("\n# ---\n")
        text = body if sep and head.startswith("# source:") else text
    if spec.get("lines"):
        first, last = spec["lines"]
        text = "".join(line + "\n" for line in text.split("\n")[first - 1:last])
    return text


def pci_functions(profile, base=machines.PROFILES):
    """``[{"bus", "vendor", "device", "class", "revision", "gone"}]``: sysfs names (``0000:53:00.0``) and hex values."""
    spec = profile.get("pci") or {}
    gone = {machines_bus(b) for b in spec.get("gone", [])}
    out = []
    if "lspci" in spec:
        for line in _recorded(spec["lspci"], base).splitlines():
            m = _LSPCI.match(line.strip())
            if not m or not (m.group("vendor") == "10de" or m.group("desc").startswith("NVIDIA Corporation")):
                continue
            bus = "%s:%s:%s.%s" % ((m.group("domain") or "0000").lower(), m.group("bus").lower(),
                                   m.group("dev").lower(), m.group("fn"))
            code = (m.group("code") or _CLASS_CODES.get(m.group("cls").strip(), "ff00")).lower()
            out.append({"bus": bus, "vendor": "10de", "device": m.group("device"), "class": code + "00",
                        "revision": m.group("rev"), "gone": bus in gone})
    elif spec.get("from") == "gpus":
        for gpu in profile.get("gpus", []):
            bus = machines_bus(gpu["pci_bus_id"])
            out.append({"bus": bus, "vendor": "10de", "device": None, "class": "030200", "revision": None,
                        "gone": bus in gone})
    return out


def machines_bus(bus_id):
    """``00000000:53:00.0`` / ``53:00.0`` -> ``0000:53:00.0`` (sysfs' name)."""
    parts = bus_id.split(":")
    domain = int(parts[0], 16) if len(parts) == 3 else 0
    return ("%04x:%s:%s" % (domain, parts[-2], parts[-1])).lower()


def write_pci(root, functions):
    for fn in functions:
        d = os.path.join(root, "sys", "bus", "pci", "devices", fn["bus"])
        os.makedirs(d, exist_ok=True)
        values = {"vendor": fn["vendor"], "device": fn["device"], "class": fn["class"], "revision": fn["revision"]}
        for name, value in values.items():
            if value is not None:
                with open(os.path.join(d, name), "w") as handle:
                    handle.write("0x%s\n" % value.lower())
        with open(os.path.join(d, "config"), "wb") as handle:
            if fn["gone"]:
                handle.write(b"\xff" * 64)
            else:
                head = bytes.fromhex(fn["vendor"])[::-1] + bytes.fromhex(fn["device"] or "0000")[::-1]
                handle.write(head + b"\0" * 60)


def write_node(root, profile, base=machines.PROFILES, dev_dirs=("/dev",)):
    """Write the node's files under ``root``; returns ``{"kernel_log": path or None, "fabric_manager": path or None}``
    (what to pass as ``--kernel-log`` / ``--fabric-manager``). Device nodes ``<dir>/nvidia<minor>`` under ``root``
    for each of ``dev_dirs`` when running as root (mknod)."""
    out = {"kernel_log": None, "fabric_manager": None}
    if profile.get("proc_version"):
        path = os.path.join(root, "proc", "driver", "nvidia", "version")
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(_recorded(profile["proc_version"], base))
    write_pci(root, pci_functions(profile, base))
    gpus = [{"pci_bus_id": g["pci_bus_id"], "minor": g.get("minor", n), "name": g.get("name", "NVIDIA GPU"),
             "uuid": g.get("uuid", "")} for n, g in enumerate(profile.get("gpus", []))]
    fake_sysfs.write_gpu_information(root, gpus)
    if os.geteuid() == 0:
        for directory in dev_dirs:
            target = os.path.join(root, directory.lstrip("/"))
            os.makedirs(target, exist_ok=True)
            for gpu in gpus:
                node_path = os.path.join(target, "nvidia%d" % gpu["minor"])
                if not os.path.exists(node_path):
                    os.mknod(node_path, 0o666 | 0o020000, os.makedev(NVIDIA_MAJOR, gpu["minor"]))
    if "kernel_log" in profile:
        path = out["kernel_log"] = os.path.join(root, KERNEL_LOG)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write("".join(_recorded(spec, base) for spec in profile["kernel_log"]))
    if profile.get("fabric_manager"):
        path = out["fabric_manager"] = os.path.join(root, FABRIC_MANAGER)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(_recorded(profile["fabric_manager"], base))
    return out


def write_profile(path, profile, inline=False):
    """machines.write for health profiles: every ``text_file`` (nested ones too) rebased to ``path``'s directory,
    or with ``inline`` replaced by its text (a profile.json that works copied anywhere, beside nvidia_smi.py)."""
    profile = copy.deepcopy(profile)
    directory = os.path.dirname(os.path.abspath(path))

    def rebase(value):
        if isinstance(value, dict):
            if "text_file" in value and not os.path.isabs(value["text_file"]):
                if inline:
                    lines = value.pop("lines", None)
                    value["text"] = _recorded(dict(value, lines=lines))
                    del value["text_file"]
                else:
                    value["text_file"] = os.path.relpath(os.path.normpath(os.path.join(
                        machines.PROFILES, value["text_file"])), directory)
            for item in value.values():
                rebase(item)
        elif isinstance(value, list):
            for item in value:
                rebase(item)

    rebase(profile)
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(profile, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)  # atomic: a health check running meanwhile sees the old or the new machine
    return path


# ----------------------------------------------------------------------------------------------------
# a molecule node as an NVSwitch node (molecule/gpu-lost, tests/test_health.py: the faults on a real Slurm)


def p5_lspci_lines():
    """The recorded p5 ``lspci | grep H100`` lines (8 GPUs, then 4 NVSwitches), prompt left out."""
    return [line for line in _recorded(recording("readiness", "lspci", P5_LSPCI, lines=[2, 13])).splitlines()
            if _LSPCI.match(line)]


def nvswitch_node(profile):
    """(profile, lspci text) of a node whose N GPUs sit at the first N GPU bus ids of the recorded p5 lspci, next to
    the p5's 4 NVSwitches: GPUs keep their order (NVML numbers them by bus id, so every index stays), ``-q`` shows
    the fabric ``Completed`` (``nvswitch``) and, whenever the stand-in ``nvidia-fabricmanager`` unit is not
    active, the recorded ``In Progress`` block (:func:`fabric_follows_unit`). The lspci text is the recording's
    lines of those GPUs and of the NVSwitches, under a header naming the source."""
    profile = copy.deepcopy(profile)
    lines = p5_lspci_lines()
    gpu_lines = [line for line in lines if " 3D controller: " in line]
    switch_lines = [line for line in lines if " Bridge: " in line]
    gpus = sorted(profile["gpus"], key=lambda g: g["pci_bus_id"].upper())
    if len(gpus) > len(gpu_lines):
        raise ValueError("the recorded p5 lspci has %d GPUs, the profile %d" % (len(gpu_lines), len(gpus)))
    for gpu, line in zip(gpus, gpu_lines):
        gpu["pci_bus_id"] = "00000000:%s" % line.split()[0].upper()
    profile["nvswitch"] = True
    fabric_follows_unit(profile)
    profile["source"] = profile.get("source", "") + (
        "; bus ids and NVSwitches: tests/fixtures/readiness/lspci/%s (real, first %d GPUs); fabric In Progress "
        "while nvidia-fabricmanager is not active: fabricmanager/h100-p5-570-fabric-in-progress-grep.txt (real)"
        % (P5_LSPCI, len(gpus)))
    text = ("# source: tests/fixtures/readiness/lspci/%s (real: AWS p5.48xlarge), the lines of its first %d GPUs "
            "and its 4 NVSwitches\n# ---\n" % (P5_LSPCI, len(gpus)))
    return profile, text + "".join(line + "\n" for line in gpu_lines[:len(gpus)] + switch_lines)


_XID_ADDRESS = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F]{4}:[0-9a-fA-F]{2}:[0-9a-fA-F]{2})\)")


def kernel_log_text(specs, bus_id=None):
    """The recorded kernel log excerpts ``specs`` (a fault's ``kernel_log``) as a node's log file holds them: a
    Markdown quote prefix of the recording dropped and, with ``bus_id`` (``00000000:64:00.0``), the one GPU
    address of the recording's Xid lines moved to that GPU wherever it appears (``PCI:0000:9b:00``,
    ``0000:9b:00.0``), so a recorded Xid lands on a GPU of the node that replays it."""
    text = "".join(_recorded(spec) for spec in specs)
    text = "".join(re.sub(r"^> ?", "", line) for line in text.splitlines(True))
    if bus_id is not None:
        found = {m.lower() for m in _XID_ADDRESS.findall(text)}
        if len(found) != 1:
            raise ValueError("the recording's Xid lines name %d GPUs, not one: %s" % (len(found), sorted(found)))
        old = found.pop()
        new = machines_bus(bus_id)[:-2]  # 0000:64:00
        text = re.sub(re.escape(old), new, text, flags=re.I)
    return text


def main(argv):
    """``health_node.py nvswitch-node PROFILE OUT_PROFILE OUT_LSPCI``: :func:`nvswitch_node` of a profile, written
    self-contained (molecule/gpu-lost/prepare.yml)."""
    if len(argv) != 4 or argv[0] != "nvswitch-node":
        sys.stderr.write("usage: health_node.py nvswitch-node PROFILE OUT_PROFILE OUT_LSPCI\n")
        return 2
    with open(argv[1]) as handle:
        profile, lspci = nvswitch_node(json.load(handle))
    write_profile(argv[2], profile, inline=True)
    with open(argv[3], "w") as handle:
        handle.write(lspci)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
