"""GPU readiness rules: is this node's GPU stack fit to take jobs? Pure parsers and rules over recorded outputs.

Inputs are texts a node gives cheaply and without side effects: ``nvidia-smi -q`` (:mod:`smi_q`), the rc and text
of a failed nvidia-smi run, ``/proc/driver/nvidia/version``, ``lspci``, the kernel log since boot (``dmesg``,
``dmesg -T``, ``journalctl -k``), the fabric manager's ``systemctl status``/journal, and an admin's
acknowledgement file. Each parser turns one of them into plain data; each rule (``check_*``) reads parsed data
and returns ``{"check", "applies", "reason", "findings"}``: ``applies`` False (with the reason) when the rule has
nothing to look at on this node (no NVSwitch, a driver too old to have the field, an input not read), so a
caller can say "does not apply" instead of "passed". :func:`readiness_findings` runs them all.

Findings have the shape of the node verification's (``node.verify.finding``): ``{"severity": "error"|"warning",
"check", "gpu", "expected", "found", "hint"}``; ``gpu`` is the nvidia-smi index when it is known, else the PCI bus
id (``00000000:9B:00.0``), else None for the node as a whole. Every rule names its source (the full quotes are in
tests/fixtures/readiness/FACTS.md; the user-facing rules in docs/health.md).
"""
from __future__ import annotations

import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import finding
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import nvlink5_decode, xid_catalog
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import (
    INFOROM_CORRUPTED_RE,
    LOST_GPU_RE,
    RC_INFOROM_CORRUPTED,
    find_lost_gpus,
    normalize_bus_id,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi_q import output_lines

CHECKS = ("nvml", "driver_version", "persistence", "gpu_count", "fabric", "memory", "clocks", "license", "xid",
          "errors")

SOURCES = {
    "nvml": "nvidia-smi/NVML messages (observed: tests/fixtures/readiness/nvidia-smi-errors); "
            "https://github.com/NVIDIA/open-gpu-kernel-modules (osapi.c RmPerformVersionCheck)",
    "driver_version": "https://github.com/NVIDIA/open-gpu-kernel-modules (kernel-open/nvidia/nv-procfs.c, "
                      "osapi.c RmPerformVersionCheck: 'have the same version')",
    "persistence": "https://docs.nvidia.com/deploy/driver-persistence/persistence-daemon.html",
    "gpu_count": "https://github.com/NVIDIA/open-gpu-kernel-modules (osapi.c: 'fallen off the bus and is not "
                 "responding to commands'); "
                 "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html (Xid 79)",
    "fabric": "https://github.com/nvidia/yum-packaging-fabric-manager; "
              "https://github.com/siderolabs/extensions/pull/717; "
              "https://docs.nvidia.com/deploy/nvml-api/structnvmlGpuFabricInfo__t.html; "
              "https://github.com/Azure/azhpc-images/pull/506",
    "memory": "https://docs.nvidia.com/deploy/a100-gpu-mem-error-mgmt/error-recovery-and-response-flags.html; "
              "https://docs.nvidia.com/deploy/dpr-whitepaper/index.html",
    "clocks": "https://docs.nvidia.com/deploy/nvml-api/group__nvmlClocksEventReasons.html (HW Slowdown: 'reducing "
              "the core clocks by a factor of 2 or more'); DCGM nvvs DcgmRecorder.cpp CheckForClocksEvent (HW "
              "slowdown, HW/SW thermal, HW power brake fail the diagnostic)",
    "license": "https://docs.nvidia.com/ai-enterprise/release-8/latest/infra-software/vgpu/licensing.html ('enters a "
               "degraded state after a 20-minute grace period'); DCGM DcgmVgpu.cpp ConvertNvmlGridLicenseStateToString; "
               "observed: tests/fixtures/readiness/nvidia-smi-q/vgpu-guest-*",
    "xid": "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html",
    "errors": "nvidia-smi error markers (observed: tests/fixtures/readiness, FACTS.md section 3)",
}

# "580.173.02"; drivers before 2007 were numbered "1.0-9746"
_VERSION = re.compile(r"\b(\d+\.\d+(?:\.\d+)*(?:-\d+)?)\b")


def _bus(text):
    """A bus id in any form nvidia-smi, lspci or the kernel print (``0000:9b:00``, ``PCI:0000:9b:00``,
    ``06:00.0``, ``00000000:9B:00.0``) -> ``00000000:9B:00.0``; None when it is not one."""
    if text is None:
        return None
    text = text.strip()
    if text.upper().startswith("PCI:"):
        text = text[4:]
    if re.match(r"^[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-7]$", text):
        text = "0000:" + text
    elif re.match(r"^[0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}$", text):
        text += ".0"
    try:
        return normalize_bus_id(text)
    except ValueError:
        return None


def _result(check, applies, findings=None, reason=None, **extra):
    out = {"check": check, "applies": applies, "reason": reason, "findings": findings or []}
    out.update(extra)
    return out


def _not_applied(check, reason, **extra):
    return _result(check, False, reason=reason, **extra)


def gpu_indexes(smi_q):
    """``{bus id: nvidia-smi index}`` from an ``nvidia-smi -q`` parse: the order of the listing, which is NVML's
    index order, when the listing has every attached GPU (an ``-i`` run or an excerpt does not, and gives ``{}``);
    a table's own GPU numbers."""
    if not smi_q:
        return {}
    gpus = smi_q.get("gpus") or []
    if all(g.get("index") is not None for g in gpus):
        return {g["bus_id"]: g["index"] for g in gpus if g.get("bus_id")}
    attached = smi_q.get("attached_gpus")
    if attached is not None and attached == len(gpus) and all(g.get("bus_id") for g in gpus):
        return {g["bus_id"]: n for n, g in enumerate(gpus)}
    return {}


def _label(bus_id, index_map):
    if bus_id is None:
        return None
    return index_map.get(bus_id, bus_id)


def _gpu_label(gpu, index_map):
    if gpu.get("bus_id"):
        return _label(gpu["bus_id"], index_map)
    return gpu.get("index")


# ----------------------------------------------------------------------------------------------------
# nvml: a failed nvidia-smi run

_MISMATCH = re.compile(r"Driver/library version mismatch", re.I)
_NVML_VERSION = re.compile(r"NVML library version:\s*(\d+(?:\.\d+)*)")
_NO_DRIVER = re.compile(r"couldn.t communicate with the NVIDIA driver", re.I)  # any apostrophe, typographic too
_NO_LIBRARY = re.compile(r"couldn't find libnvidia-ml\.so|libnvidia-ml\.so[^\n]*(?:not found|cannot open)", re.I)
_NVML_INIT = re.compile(r"Failed to initialize NVML:\s*(.+)")
_NO_DEVICES = re.compile(r"^\s*No devices were found\s*$", re.M)
_GPU_LOST = re.compile(r"GPU is lost", re.I)
# NVML_ERROR_NOT_FOUND: the driver has no such GPU (it failed to initialise it), not a GPU in a fault state
_NOT_FOUND = re.compile(r"Not Found\s*$", re.I)
_NOT_READY = re.compile(r"system not yet initialized|cudaErrorSystemNotReady|CUDA_ERROR_SYSTEM_NOT_READY|"
                        r"returned 802\b", re.I)

SMI_FAILURES = ("ok", "driver_library_mismatch", "no_driver", "no_library", "nvml_init", "no_devices", "gpu_lost",
                "device_handle", "system_not_ready", "other")


def classify_smi_failure(rc, stdout="", stderr=""):
    """What a failed ``nvidia-smi`` run (any command) says is wrong.

    Returns ``{"kind", "rc", "nvml_version", "gpus": [{"bus_id", "reason", "line"}], "message"}`` with ``kind`` one of
    ``ok`` (rc 0 and no failure text), ``driver_library_mismatch`` ("Failed to initialize NVML: Driver/library
    version mismatch", with ``nvml_version`` from the "NVML library version: 580.159" line drivers print from
    about 550, else None), ``no_driver`` ("couldn't communicate with the NVIDIA driver"), ``no_library``,
    ``nvml_init`` (another "Failed to initialize NVML: ..." reason), ``no_devices`` ("No devices were found"),
    ``gpu_lost`` / ``device_handle`` ("Unable to determine the device handle for GPU<bus>: GPU is lost" /
    ": Unknown Error", also where "No devices were found" follows, which sets ``no_devices``; ``gpus`` lists each
    bus id, NVML index where printed, and reason), ``system_not_ready`` (CUDA error 802 "system not
    yet initialized", an NVSwitch system whose fabric is not up) and ``other`` (non-zero rc, unknown text). Exit
    code 14 with "infoROM is corrupted at gpu ..." is ``ok``: the output is whole (the errors check warns).
    Prompts, ``> `` quotes and text around the message (a CI banner, ``cat /proc/...``) are tolerated.
    """
    text = "\n".join(line for _n, line in output_lines("%s\n%s" % (stdout or "", stderr or "")))
    out = {"kind": "ok", "rc": rc, "nvml_version": None, "gpus": [], "message": None}

    def first(regex):
        m = regex.search(text)
        if not m:
            return None
        start = text.rfind("\n", 0, m.start()) + 1
        end = text.find("\n", m.end())
        return text[start:end if end >= 0 else len(text)].strip()

    lost = []
    for entry in find_lost_gpus(text):
        reason = entry["message"].split(":")[-1].strip() if ":" in entry["message"] else entry["message"]
        m = re.search(r"(?:GPU\s*)?[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]:\s*(.*)$", entry["message"])
        if m:
            reason = m.group(1).strip()
        lost.append({"bus_id": entry["pci_bus_id"], "reason": re.sub(r"\s+", " ", reason), "line": entry["message"],
                     "index": entry["index"]})
    if _MISMATCH.search(text):
        m = _NVML_VERSION.search(text)
        out.update(kind="driver_library_mismatch", nvml_version=m.group(1) if m else None, message=first(_MISMATCH))
    elif _NO_DRIVER.search(text):
        out.update(kind="no_driver", message=first(_NO_DRIVER))
    elif _NO_LIBRARY.search(text):
        out.update(kind="no_library", message=first(_NO_LIBRARY))
    elif _NVML_INIT.search(text):
        out.update(kind="nvml_init", message=first(_NVML_INIT))
    elif lost:
        # before "No devices were found", which nvidia-smi prints after the line when no GPU is left to show
        kind = "gpu_lost" if any(_GPU_LOST.search(g["reason"]) for g in lost) else "device_handle"
        out.update(kind=kind, gpus=lost, message=first(LOST_GPU_RE))
        if _NO_DEVICES.search(text):
            out["no_devices"] = True
    elif _NO_DEVICES.search(text):
        out.update(kind="no_devices", message="No devices were found")
    elif _NOT_READY.search(text):
        out.update(kind="system_not_ready", message=first(_NOT_READY))
    elif rc == RC_INFOROM_CORRUPTED and INFOROM_CORRUPTED_RE.search(text):
        pass  # nvidia-smi ran and printed its output; the infoROM warning is the errors check's (a warning)
    elif rc not in (0, None):
        lines = [line.strip() for line in text.split("\n") if line.strip()]
        out.update(kind="other", message=lines[-1] if lines else "exit status %s" % rc)
    return out


_NVML_HINTS = {
    "driver_library_mismatch": "the NVIDIA userspace libraries were upgraded while the old kernel module stays "
                               "loaded (an unattended upgrade): reboot the node, or stop every GPU user and "
                               "reload the nvidia modules",
    "no_driver": "the nvidia kernel module is not loaded: after a kernel update it may not be built for the running "
                 "kernel (DKMS); check 'lsmod | grep nvidia' and the kernel log",
    "no_library": "libnvidia-ml.so is not installed or not found: reinstall the driver's userspace package",
    "nvml_init": "NVML cannot start: check the kernel log (NVRM lines) and the driver installation",
    "no_devices": "the driver sees no usable GPU: check lspci, the kernel log (RmInitAdapter failed, 'requires use "
                  "of the NVIDIA open kernel modules', fallen off the bus) and the BIOS (Above 4G decoding)",
    "gpu_lost": "NVML lost this GPU: reboot the node to recover it (nvidia-smi's own advice), then check the "
                "kernel log for Xid 79",
    "device_handle": "NVML cannot open this GPU (overheated, fell off the bus, or in a fault state): read the "
                     "xid check and the kernel log; after an Xid 79 or 'fallen off the bus' reboot the node (a reset "
                     "does not bring the GPU back), otherwise reset the GPU (nvidia-smi -r) or reboot",
    "not_found": "the driver did not bring this GPU up: check the kernel log for 'RmInitAdapter failed' and the GSP "
                 "firmware, and that the driver (open or proprietary modules) supports this GPU; a reset does not "
                 "help while the driver cannot initialise it",
    "system_not_ready": "CUDA error 802: the NVLink fabric is not initialized; start nvidia-fabricmanager (and "
                        "NVLSM on B200-class systems)",
    "other": "nvidia-smi failed: read its message",
}


OTHER_DRIVER_HINT = ("the kernel log says the nvidia module was not called for %s GPU(s): another driver (nouveau, "
                     "rivafb, nvidiafb or rivatv) took them first. Blacklist it ('blacklist nouveau' and 'options "
                     "nouveau modeset=0' in /etc/modprobe.d), rebuild the initramfs and reboot")


def _other_driver(kernel_events):
    """The hint for GPUs another driver took before nvidia (the latest "probe routine was not called"), or None."""
    skipped = [e for e in kernel_events or [] if e["kind"] == "probe_skipped"]
    return OTHER_DRIVER_HINT % skipped[-1]["count"] if skipped else None


def failed_run_findings(rc, stdout="", stderr=""):
    """The ``nvml`` findings of one failed nvidia-smi run (a driver/library mismatch, no driver, a lost GPU, ...):
    what the deploy's verification reports when nvidia-smi cannot list the GPUs; [] when the run's output names no
    failure this check knows."""
    failure = classify_smi_failure(rc, stdout, stderr)
    if failure["kind"] in ("ok", "other"):
        return []
    return check_nvml(smi_failure=failure)["findings"]


def check_nvml(smi_failure=None, smi_q=None, proc_version=None, kernel_events=None):
    """nvidia-smi (NVML) must start and reach every GPU. An error per failure kind of
    :func:`classify_smi_failure`; a version mismatch names both versions (NVML's from its message, the kernel
    module's from ``/proc/driver/nvidia/version`` when read); where the kernel log says another driver took the
    GPUs, the hint says so. Applies when nvidia-smi was run."""
    if smi_failure is None:
        if smi_q is None:
            return _not_applied("nvml", "nvidia-smi was not run")
        return _result("nvml", True)
    kind = smi_failure.get("kind")
    if kind == "ok":
        return _result("nvml", True)
    hint = _NVML_HINTS.get(kind, _NVML_HINTS["other"])
    if kind in ("no_driver", "no_devices", "nvml_init", "other"):
        hint = _other_driver(kernel_events) or hint
    findings = []
    if kind in ("gpu_lost", "device_handle") and smi_failure.get("gpus"):
        for gpu in smi_failure["gpus"]:
            hint = _NVML_HINTS["gpu_lost" if _GPU_LOST.search(gpu["reason"]) else
                               "not_found" if _NOT_FOUND.match(gpu["reason"]) else "device_handle"]
            if gpu["bus_id"]:
                findings.append(finding("error", "nvml", gpu["bus_id"], "NVML can open GPU %s" % gpu["bus_id"],
                                        "Unable to determine the device handle: %s" % gpu["reason"], hint))
            else:  # no bus id, or one that is not one ("000:BA:80.0"): the line as nvidia-smi printed it
                index = gpu.get("index")
                findings.append(finding("error", "nvml", index,
                                        "NVML can open every GPU" if index is None else "NVML can open GPU %d" % index,
                                        gpu.get("line") or "Unable to determine the device handle: %s" % gpu["reason"],
                                        hint))
        return _result("nvml", True, findings)
    if kind == "driver_library_mismatch":
        kernel = (proc_version or {}).get("version")
        found = "Driver/library version mismatch: NVML library %s, loaded kernel module %s" % (
            smi_failure.get("nvml_version") or "version not printed",
            kernel or "version not read (/proc/driver/nvidia/version)")
        expected = "NVML library and loaded kernel module of the same driver version"
    else:
        found = smi_failure.get("message") or kind
        expected = "nvidia-smi runs (exit 0)"
    findings.append(finding("error", "nvml", None, expected, found, hint))
    return _result("nvml", True, findings)


# ----------------------------------------------------------------------------------------------------
# driver_version: /proc/driver/nvidia/version

_NVRM_VERSION = re.compile(r"NVRM version:\s*(.*?)\s*$", re.M)
_GCC_VERSION = re.compile(r"^\s*GCC version:\s*(.*?)\s*$", re.M)


def parse_nvrm_id(ident):
    """The driver's ID string (``NVIDIA UNIX Open Kernel Module for x86_64  565.57.01  Release Build
    (dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024`` / ``NVIDIA UNIX x86_64 Kernel Module  580.173.02
    Tue Jun 23 ...``) -> ``{"version", "flavour": "open"|"proprietary", "arch", "build_type", "builder", "date",
    "jetson"}``; None when no version is in it."""
    ident = (ident or "").strip()
    m = _VERSION.search(ident)
    if not m:
        return None
    version = m.group(1)
    arch = re.search(r"Module for (\S+)", ident) or re.search(r"UNIX (\S+) Kernel Module", ident)
    build = re.search(r"\b((?:Release|Debug|Develop)\s+Build)\b", ident)
    builder = re.search(r"\(([^()\s]*@[^()\s]*)\)", ident)
    tail = ident[(builder or build or m).end():].strip()
    major = int(version.split(".")[0])
    return {
        "version": version,
        "flavour": "open" if "Open Kernel Module" in ident else "proprietary",
        "arch": arch.group(1) if arch else None,
        "build_type": re.sub(r"\s+", " ", build.group(1)) if build else None,
        "builder": builder.group(1) if builder else None,
        "date": re.sub(r"\s+", " ", tail) or None,
        # Jetson (L4T) kernels print the L4T release (35.3.1), not a driver branch (>= 100 since R100, and
        # "1.0-NNNN" before it).
        "jetson": major < 100 and "-" not in version,
    }


def parse_proc_driver_version(text):
    """``/proc/driver/nvidia/version`` (or ``/sys/module/nvidia/version``, a bare version) -> :func:`parse_nvrm_id`'s
    dict plus ``gcc``; None when the text holds neither. Prompts and other lines around it are skipped, so
    the text of a whole pasted session will do."""
    lines = "\n".join(line for _n, line in output_lines(text))
    m = _NVRM_VERSION.search(lines)
    if m:
        parsed = parse_nvrm_id(m.group(1))
        if parsed is None:
            return None
        gcc = _GCC_VERSION.search(lines)
        parsed["gcc"] = gcc.group(1) if gcc else None
        return parsed
    bare = lines.strip()
    if re.match(r"^\d+\.\d+(?:\.\d+)*$", bare):
        return {"version": bare, "flavour": None, "arch": None, "build_type": None, "builder": None, "date": None,
                "jetson": int(bare.split(".", maxsplit=1)[0]) < 100, "gcc": None}
    return None


def versions_agree(a, b):
    """``580.159`` and ``580.159.02`` agree (NVML's message prints major.minor only); ``580.159`` and
    ``580.126.09`` do not."""
    pa, pb = a.split("."), b.split(".")
    n = min(len(pa), len(pb))
    return [int(x) if x.isdigit() else x for x in pa[:n]] == [int(x) if x.isdigit() else x for x in pb[:n]]


def check_driver_version(proc_version=None, nvml_version=None):
    """The NVML/userspace driver version must be the loaded kernel module's (the kernel refuses other clients:
    "Please make sure that this kernel module and all NVIDIA driver components have the same version",
    osapi.c). Applies when both versions are known and the module is not a Jetson (L4T) one."""
    if proc_version is None:
        return _not_applied("driver_version", "the loaded kernel module's version was not read "
                                              "(/proc/driver/nvidia/version)")
    if proc_version.get("jetson"):
        return _not_applied("driver_version", "Jetson (L4T %s): the kernel module reports an L4T release, not a "
                                              "driver version" % proc_version["version"])
    if not nvml_version:
        return _not_applied("driver_version", "the NVML library version is unknown (nvidia-smi did not print it)")
    if versions_agree(nvml_version, proc_version["version"]):
        return _result("driver_version", True)
    return _result("driver_version", True, [finding(
        "error", "driver_version", None, "NVML/userspace %s = loaded kernel module" % nvml_version,
        "loaded kernel module %s (%s)" % (proc_version["version"], proc_version.get("flavour") or "?"),
        _NVML_HINTS["driver_library_mismatch"])])


# ----------------------------------------------------------------------------------------------------
# persistence


def check_persistence(smi_q=None, bus_to_index=None):
    """Persistence mode should be Enabled on every GPU that reports it: "Once all clients have closed the device
    file, the GPU state will be unloaded unless persistence mode is enabled" (NVIDIA, persistence daemon), and it
    is reset to Disabled at every reboot (NVML). A warning, not an error: without it each job's first CUDA call
    initialises the GPU again (seconds), but the GPU computes correctly, and Ubuntu's packaged nvidia-persistenced
    unit runs with --no-persistence-mode. GPUs that print N/A or no field are not judged."""
    if smi_q is None:
        return _not_applied("persistence", "nvidia-smi -q was not read")
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    judged = [g for g in smi_q.get("gpus") or [] if g.get("persistence_mode") is not None]
    if not judged:
        return _not_applied("persistence", "no GPU reports a persistence mode")
    findings = [finding("warning", "persistence", _gpu_label(g, index_map), "persistence mode Enabled",
                        "persistence mode %s" % g["persistence_mode"],
                        "run nvidia-persistenced (NVIDIA's recommended way) or 'nvidia-smi -pm 1'; it is lost at "
                        "every reboot. Where nvidia-persistenced runs already, its unit may pass "
                        "--no-persistence-mode (Ubuntu's package does): drop that option in a systemd drop-in")
                for g in judged if g["persistence_mode"] != "Enabled"]
    return _result("persistence", True, findings)


# ----------------------------------------------------------------------------------------------------
# gpu_count: lspci

_LSPCI = re.compile(r"^\s*(?:(?P<domain>[0-9A-Fa-f]{4,8}):)?(?P<bus>[0-9A-Fa-f]{2}):(?P<dev>[0-9A-Fa-f]{2})\."
                    r"(?P<fn>[0-7])\s+(?P<cls>[^:\[]*?)(?:\s+\[(?P<cc>[0-9A-Fa-f]{4})\])?:\s+(?P<desc>.*)$")
# lspci -mm: 01:00.0 "3D controller" "NVIDIA Corporation" "GA107M [GeForce RTX 3050 Ti Mobile]" -ra1 -p00 ...
_LSPCI_MM = re.compile(r"^\s*(?:(?P<domain>[0-9A-Fa-f]{4,8}):)?(?P<bus>[0-9A-Fa-f]{2}):(?P<dev>[0-9A-Fa-f]{2})\."
                       r"(?P<fn>[0-7])\s+\"(?P<cls>[^\"]*)\"\s+\"(?P<vendor>[^\"]*)\"\s+\"(?P<device>[^\"]*)\"(?P<rest>.*)$")
_LSPCI_VMM_FIELD = re.compile(r"^\s*(Slot|Class|Vendor|Device|Rev):\s*(.*?)\s*$")
_LSPCI_IDS = re.compile(r"\[([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4})\]")
_LSPCI_BARE_IDS = re.compile(r"^([0-9A-Fa-f]{4}):([0-9A-Fa-f]{4})\b")
_LSPCI_ID = re.compile(r"\s*\[([0-9A-Fa-f]{4})\]$")
_LSPCI_UNNAMED = re.compile(r"\b(?:Unknown )?[Dd]evice ([0-9A-Fa-f]{4})\b")
_LSPCI_REV = re.compile(r"\s*\(rev ([0-9A-Fa-f]{2})\)")
_LSPCI_PROGIF = re.compile(r"\s*\(prog-if [^)]*(?:\[[^\]]*\])?\)")
_GPU_CLASSES = ("3d controller", "vga compatible controller", "display controller")
_GPU_CLASS_CODES = ("0300", "0302", "0380")
# NVIDIA's nForce chipsets (before 2010) put their Ethernet and other parts in class "Bridge" (0680) too; their
# device ids are below 0x1000, NVSwitches' above (1ac0-1ac2, 1af1, 22a3, ...)
_CHIPSET = re.compile(r"\b(?:MCP\d*\w*|nForce\w*|CK8\d*|C5[15]|Ethernet|SMBus|LPC|Memory Controller)\b", re.I)


def pci_kind(class_name, class_code, vendor_device=None, description=""):
    """``gpus``, ``nvswitches`` or ``other`` for an NVIDIA PCI function: GPUs are "3D controller" / "VGA compatible
    controller" / "Display controller" functions; NVSwitches are "Bridge" (class 0680, not a PCI bridge) functions
    that are not nForce chipset parts; audio, USB and the rest are ``other``."""
    cls = (class_name or "").strip().lower()
    if cls in _GPU_CLASSES or class_code in _GPU_CLASS_CODES:
        return "gpus"
    if cls == "bridge" or class_code == "0680":
        device = vendor_device.split(":")[1] if vendor_device else None
        if (device and int(device, 16) < 0x1000) or _CHIPSET.search(description or ""):
            return "other"
        return "nvswitches"
    return "other"


# the first line of an lspci -vmm record: "Slot:\t01:00.0"
_LSPCI_VMM_RECORD = re.compile(r"^\s*Slot:\s")


def _lspci_records(text):
    """``(bus, class name, class code, vendor name, vendor:device ids, description, rev)`` of each function in an
    ``lspci`` listing: the default, ``-nn``, ``-n``, ``-D``, ``-v``/``-k`` (first lines), ``-mm`` and ``-vmm``."""
    lines = [line for _n, line in output_lines(text)]
    records = []
    if any(_LSPCI_VMM_RECORD.match(line) for line in lines):  # -vmm: "Slot:\t01:00.0" ... records
        record = {}
        for line in lines + [""]:
            m = _LSPCI_VMM_FIELD.match(line)
            if m:
                record.setdefault(m.group(1), m.group(2))
            elif not line.strip() and record:
                slot = _LSPCI.match("%s x: x" % record.get("Slot", ""))
                if slot:
                    records.append(_lspci_vmm(slot, record))
                record = {}
        return records
    for line in lines:
        m = _LSPCI_MM.match(line)
        if m:
            rev = re.search(r"(?:^|\s)-r([0-9A-Fa-f]{2})\b", m.group("rest"))
            records.append(_lspci_fields(m, m.group("cls"), m.group("vendor"), m.group("device"),
                                         rev.group(1) if rev else None))
            continue
        m = _LSPCI.match(line)
        if not m:
            continue
        desc = _LSPCI_PROGIF.sub("", m.group("desc")).strip()
        rev = _LSPCI_REV.search(desc)
        desc = _LSPCI_REV.sub("", desc).strip()
        cls, code = m.group("cls").strip(), (m.group("cc") or "").lower() or None
        bare = _LSPCI_BARE_IDS.match(desc)
        if re.match(r"^[0-9A-Fa-f]{4}$", cls) and bare:  # lspci -n: "01:00.0 0300: 10de:1b80 (rev a1)"
            cls, code = None, cls.lower()
        ids = _LSPCI_IDS.findall(desc) or ([bare.groups()] if bare and cls is None else [])
        unnamed = _LSPCI_UNNAMED.search(desc)
        vendor = desc.split(" [", 1)[0] if desc.lower().startswith("nvidia corporation") else None
        vendor_device = ("%s:%s" % ids[-1]).lower() if ids else (
            "10de:%s" % unnamed.group(1).lower() if vendor and unnamed else None)
        records.append((_lspci_bus(m), cls, code, vendor, vendor_device, desc, rev.group(1) if rev else None))
    return records


def _lspci_bus(m):
    return normalize_bus_id("%s:%s:%s.%s" % (m.group("domain") or "0000", m.group("bus"), m.group("dev"),
                                             m.group("fn")))


def _split_id(text):
    """``"NVIDIA Corporation [10de]"`` -> (``"NVIDIA Corporation"``, ``"10de"``); a bare id gives (None, id)."""
    text = (text or "").strip()
    if re.match(r"^[0-9A-Fa-f]{4}$", text):
        return None, text.lower()
    m = _LSPCI_ID.search(text)
    return (text[:m.start()].strip(), m.group(1).lower()) if m else (text, None)


def _lspci_fields(m, cls_text, vendor_text, device_text, rev):
    cls, code = _split_id(cls_text)
    vendor, vendor_id = _split_id(vendor_text)
    device, device_id = _split_id(device_text)
    if device_id is None and device:
        unnamed = _LSPCI_UNNAMED.search(device)
        device_id = unnamed.group(1).lower() if unnamed else None
    if vendor_id is None and (vendor or "").lower().startswith("nvidia corporation"):
        vendor_id = "10de"
    vendor_device = "%s:%s" % (vendor_id, device_id) if vendor_id and device_id else None
    desc = " ".join(p for p in (vendor, device) if p)
    return (_lspci_bus(m), cls, code, vendor, vendor_device, desc, rev)


def _lspci_vmm(slot, record):
    return _lspci_fields(slot, record.get("Class"), record.get("Vendor"), record.get("Device"), record.get("Rev"))


def parse_lspci(text):
    """``lspci`` / ``lspci -nn`` / ``-n`` / ``-D`` / ``-mm`` / ``-vmm`` (or a grep of them) -> the NVIDIA devices:
    ``{"gpus": [...], "nvswitches": [...], "other": [...]}``, each ``{"bus_id", "class", "class_code",
    "vendor_device", "description", "rev", "gone"}``, kinds as :func:`pci_kind` tells them. ``gone`` is True for
    ``(rev ff)``: config space reads all ones, the device no longer answers. A function listed twice (``-n`` and
    named lines of one paste) is counted once."""
    out = {"gpus": [], "nvswitches": [], "other": []}
    seen = {}
    for bus, cls, code, vendor, vendor_device, desc, rev in _lspci_records(text):
        nvidia = (vendor_device or "").startswith("10de:") or (vendor or desc or "").lower().startswith(
            "nvidia corporation")
        if not nvidia:
            continue
        rev = rev.lower() if rev else None
        if bus in seen:
            known = seen[bus]
            for key, value in (("class", cls), ("class_code", code), ("vendor_device", vendor_device), ("rev", rev)):
                if known[key] is None and value is not None:
                    known[key] = value
            if _LSPCI_BARE_IDS.match(known["description"]) and not _LSPCI_BARE_IDS.match(desc):
                known["description"] = desc
            continue
        device = {"bus_id": bus, "class": cls, "class_code": code, "vendor_device": vendor_device,
                  "description": desc, "rev": rev, "gone": rev == "ff"}
        seen[bus] = device
        out[pci_kind(cls, code, vendor_device, desc)].append(device)
    for bus, driver in _lspci_drivers(text).items():
        if bus in seen:
            seen[bus]["driver"] = driver
    return out


_LSPCI_DRIVER = re.compile(r"^\s+Kernel driver in use:\s*(\S+)")
_LSPCI_VMM_SLOT_DRIVER = re.compile(r"^\s*(Slot|Driver):\s*(\S+)")


def _lspci_drivers(text):
    """``lspci -k`` (``Kernel driver in use:`` under a function) or ``-vmmk`` (``Driver:`` in its record): {bus id:
    the kernel driver in use}. A driver line counts for the function line right above it only (a grep that kept
    another function's driver line but not its slot line attaches nothing)."""
    drivers, bus = {}, None
    lines = [line for _number, line in output_lines(text)]
    records = any(_LSPCI_VMM_RECORD.match(line) for line in lines)  # -vmm: one "Field:\tvalue" line each
    for line in lines:
        if records:
            vmm = _LSPCI_VMM_SLOT_DRIVER.match(line)
            if not line.strip():
                bus = None
            elif vmm and vmm.group(1) == "Slot":
                slot = _LSPCI.match("%s x: x" % vmm.group(2))
                bus = _slot_bus(slot) if slot else None
            elif vmm and bus and bus not in drivers:
                drivers[bus] = vmm.group(2)
            continue
        driver = _LSPCI_DRIVER.match(line)
        if driver:
            if bus and bus not in drivers:
                drivers[bus] = driver.group(1)
            bus = None
            continue
        function = _LSPCI_MM.match(line) or _LSPCI.match(line)
        if function:
            bus = _slot_bus(function)
        elif line.strip() and not line[:1].isspace():
            bus = None
    return drivers


def _slot_bus(match):
    try:
        return _lspci_bus(match)
    except ValueError:
        return None


# Drivers a GPU is bound to on purpose instead of nvidia: passed through to a virtual machine.
PASSTHROUGH_DRIVERS = ("vfio-pci", "pci-stub")


def _smi_bus_ids(smi_q, smi_failure):
    """(bus ids nvidia-smi lists, or None when it could not list GPUs; reason)."""
    kind = (smi_failure or {}).get("kind")
    if kind in ("driver_library_mismatch", "no_driver", "no_library", "nvml_init", "other"):
        return None, "nvidia-smi could not list GPUs (nvml: %s)" % kind
    if smi_q is not None:
        gpus = smi_q.get("gpus") or []
        attached = smi_q.get("attached_gpus")
        if (attached is not None and attached != len(gpus)) or (attached is None and not all(
                g.get("bus_id") for g in gpus)):
            return None, "the nvidia-smi -q output read is not a full listing (an excerpt or an -i run)"
        return [g.get("bus_id") for g in gpus], None
    if kind == "no_devices" or (smi_failure or {}).get("no_devices"):
        return [], None
    if kind in ("gpu_lost", "device_handle", "system_not_ready", "ok"):
        return None, "nvidia-smi -q was not read"
    return None, "nvidia-smi was not run"


# kernel-log events about a GPU that go into the hint of a GPU nvidia-smi does not list
_GPU_COUNT_NOTE_KINDS = ("init_failed", "probe_failed", "aer_failed", "off_bus", "open_required")


def check_gpu_count(lspci=None, smi_q=None, smi_failure=None, kernel_events=None, bus_to_index=None):
    """Every NVIDIA GPU on the PCI bus (lspci) must be listed by nvidia-smi: a GPU that fell off the bus (Xid 79)
    stays on lspci but leaves NVML, and the node keeps taking jobs. One error per GPU nvidia-smi does not list
    (compared by bus id; by count when nvidia-smi's listing has no bus ids), and one per GPU lspci reads as
    ``(rev ff)``. Kernel log lines about that GPU (RmInitAdapter failed, fallen off the bus) go into the hint."""
    if lspci is None:
        return _not_applied("gpu_count", "lspci was not read")
    seen, reason = _smi_bus_ids(smi_q, smi_failure)
    if seen is None:
        return _not_applied("gpu_count", reason)
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    notes = {}
    for event in kernel_events or []:
        if event.get("bus_id") and event["kind"] in _GPU_COUNT_NOTE_KINDS:
            notes.setdefault(event["bus_id"], event["message"] + (
                " (the nvidia module could not take the GPU: most often a PCI BAR the BIOS left unassigned, 'BAR1 is "
                "0M' or 'request_mem_region failed' before it: enable Above 4G decoding or a larger MMIO space; or "
                "another driver holds it)" if event["kind"] == "probe_failed" else
                " (the driver could not initialise the GPU: reboot the node, with a power cycle where it persists; "
                "if it fails again, check that this driver supports the GPU and its firmware, then reseat or replace "
                "it)" if event["kind"] == "init_failed" else ""))
    findings = []
    listed = {b for b in seen if b}
    # a GPU bound to vfio-pci is the virtual machine's, not this node's: nvidia-smi never lists it
    gpus = [dev for dev in lspci["gpus"] if dev.get("driver") not in PASSTHROUGH_DRIVERS]
    for dev in gpus:
        if dev["gone"]:
            findings.append(finding("error", "gpu_count", _label(dev["bus_id"], index_map),
                                    "GPU %s answers on the PCI bus" % dev["bus_id"],
                                    "lspci: %s (rev ff): the device does not answer" % dev["description"],
                                    "the GPU fell off the bus: reboot the node; if it stays, reseat or replace it"))
    if all(seen):
        for dev in gpus:
            if dev["bus_id"] not in listed and not dev["gone"]:
                note = notes.get(dev["bus_id"])
                findings.append(finding(
                    "error", "gpu_count", dev["bus_id"], "GPU %s (lspci: %s) listed by nvidia-smi"
                    % (dev["bus_id"], dev["description"]),
                    "nvidia-smi lists %d of the %d NVIDIA GPUs on lspci, not this one" % (
                        len(listed), len(gpus)),
                    ("kernel log: %s" % note) if note else _other_driver(kernel_events) or
                    "check the kernel log for Xid 79 / RmInitAdapter failed; reboot, then reseat or replace"))
    elif len(seen) < len(gpus):
        findings.append(finding("error", "gpu_count", None, "%d GPUs listed by nvidia-smi (lspci)"
                                % len(gpus), "nvidia-smi lists %d" % len(seen),
                                _other_driver(kernel_events) or "check the kernel log for Xid 79 / RmInitAdapter failed"))
    return _result("gpu_count", True, findings)


# ----------------------------------------------------------------------------------------------------
# fabric


_FM_MISMATCH = re.compile(r"fabric manager NVIDIA GPU driver interface version (\d+(?:\.\d+)*) don't match with "
                          r"driver version (\d+(?:\.\d+)*)")
_FM_ACTIVE = re.compile(r"^\s*Active:\s*(\S+)(?:\s+\(([^)]*)\))?")
_FM_STARTED = re.compile(r"Started NVIDIA fabric manager service|Started \"Nvidia Fabric Manager\"", re.I)
_FM_FAILED = re.compile(r"status=\d+/FAILURE|failed! Exit code|Failed to start NVIDIA fabric manager|"
                        r"nvidia-fabricmanager\.service: Failed", re.I)
# systemd's and the start script's words when the service stops (not a failure): "Stopping nvidia-fabricmanager.service
# - NVIDIA fabric manager service...", 'Stopped "Nvidia Fabric Manager"', "nvidia-fabricmanager.service: Deactivated"
_FM_STOPPED = re.compile(r"Stopping (?:nvidia-fabricmanager\.service|NVIDIA fabric manager service)|"
                         r"Stopped (?:nvidia-fabricmanager\.service|NVIDIA fabric manager service|\"Nvidia Fabric "
                         r"Manager\")|nvidia-fabricmanager\.service: Deactivated", re.I)
# systemctl's own answer to a start or restart that failed
_FM_JOB_FAILED = re.compile(r"Job for nvidia-fabricmanager\.service failed", re.I)
_FM_ERROR = re.compile(r"\[ERROR\]\s*(?:\[tid \d+\]\s*)?(.*)$")
# the fabric manager's own words on a setting of its config file it cannot use; it does not start ("fabric manager
# config file item: FABRIC_NODE_CONFIG_FILE has an invalid value", siderolabs/extensions#511, repeated at each restart)
_FM_CONFIG = re.compile(r"(fabric manager config file item: \S+ has an invalid value.*)$", re.I)


def parse_fabricmanager(text):
    """``systemctl status nvidia-fabricmanager``, ``journalctl -u nvidia-fabricmanager``, ``systemctl is-active``
    or ``/var/log/fabricmanager.log`` -> ``{"active": True|False|None, "state", "version_mismatch": None |
    {"fabric_manager", "driver"}, "nothing_to_do", "started", "failed", "nvl5": True|False|None, "command",
    "errors": [messages of [ERROR] lines]}``.

    ``active`` comes from the ``Active:`` line (``active (running)`` -> True; ``failed``, ``inactive``,
    ``activating`` -> False) or a lone is-active word; without one, from the last start, stop or failure in the
    journal (systemctl's "Job for nvidia-fabricmanager.service failed" counts as a failure);
    None when the text says neither. ``nothing_to_do`` is FM's ``NV_WARN_NOTHING_TO_DO`` (no NVSwitch found, or
    NVLSM missing on NVL5 systems); ``nvl5`` from "Detected Pre-NVL5 system" (False) or an ``nv-fabricmanager
    ... -g <port GUID>`` command line (True); ``config_error`` its complaint about a config file setting (it then
    does not start: ``active`` False unless a later line says otherwise).
    """
    out = {"active": None, "state": None, "version_mismatch": None, "nothing_to_do": False, "started": False,
           "failed": False, "nvl5": None, "command": None, "errors": [], "config_error": None}
    journal = None
    lines = [line for _n, line in output_lines(text)]
    words = [line.strip() for line in lines if line.strip()]
    if len(words) == 1 and words[0] in ("active", "inactive", "failed", "activating", "deactivating", "unknown"):
        out.update(active=words[0] == "active", state=words[0])
        return out
    for line in lines:
        m = _FM_ACTIVE.match(line)
        if m and out["state"] is None:
            out["state"] = m.group(1) + (" (%s)" % m.group(2) if m.group(2) else "")
            out["active"] = m.group(1) == "active" and (m.group(2) or "running") == "running"
            out["failed"] = out["failed"] or m.group(1) == "failed"
            continue
        m = _FM_MISMATCH.search(line)
        if m:
            out["version_mismatch"] = {"fabric_manager": m.group(1), "driver": m.group(2)}
        if "NV_WARN_NOTHING_TO_DO" in line:
            out["nothing_to_do"] = True
        if "Detected Pre-NVL5 system" in line:
            out["nvl5"] = False
        m = re.search(r"(/\S*nv-fabricmanager\s.*)$", line)
        if m and out["command"] is None and "failed!" not in line:
            # systemctl status' "Process: 2114 ExecStart=... (code=exited, status=0/SUCCESS)" annotation left out
            out["command"] = re.sub(r"\s+\((?:code|status)=[^()]*\)$", "", m.group(1).strip())
            if re.search(r"\s-g\s+0x[0-9a-fA-F]+", m.group(1)):
                out["nvl5"] = True
        if _FM_STARTED.search(line):
            out["started"] = True
            journal = True
        if _FM_FAILED.search(line) or _FM_JOB_FAILED.search(line):
            out["failed"] = True
            journal = False
        elif _FM_STOPPED.search(line):
            journal = False
        m = _FM_ERROR.search(line)
        if m:
            out["errors"].append(m.group(1).strip())
        m = _FM_CONFIG.search(line)
        if m:
            out["config_error"] = m.group(1).strip()
            journal = False
    if out["active"] is None and journal is not None:
        out["active"] = journal
    if out["active"] is None and out["version_mismatch"] is not None:
        out["active"] = False  # "aborts the process" (FM user guide, via FACTS.md section 5)
    if out["active"] is None and out["nothing_to_do"]:
        out["active"] = False  # the fabric manager stops after "request to query NVSwitch device information failed"
    return out


_ZERO_UUID = re.compile(r"^[0-]+$")
_MNNVL_PRODUCT = re.compile(r"\bGB[23]00\b", re.I)


def is_mnnvl(smi_q):
    """A GB200/GB300-class node of a multi-node NVLink domain: a GPU's ClusterUUID is set and not all zeros, or
    the product name says GB200/GB300. Its fabric is managed outside the node (no local fabric manager)."""
    for gpu in (smi_q or {}).get("gpus") or []:
        fabric = gpu.get("fabric") or {}
        uuid = fabric.get("cluster_uuid")
        if uuid and not _ZERO_UUID.match(uuid):
            return True
        if gpu.get("product_name") and _MNNVL_PRODUCT.search(gpu["product_name"]):
            return True
    return False


def check_fabric(smi_q=None, lspci=None, fabric_manager=None, driver_version=None, bus_to_index=None):
    """NVLink fabric readiness, on NVSwitch systems only.

    Applies when the node shows NVSwitches (lspci NVIDIA "Bridge" functions) or a GPU reports a Fabric State other
    than N/A; it never looks at the inventory. Then:

    - every GPU that reports a fabric state must read State ``Completed`` and Status ``Success`` ("A ``Completed``
      state is shown when the GPU is successfully registered with the NVLink fabric", ``In Progress`` means the
      fabric manager is not running or NVLSM is missing: siderolabs/extensions#717; NVML: status "must be checked
      only if state returns complete");
    - on GB200/GB300-class nodes (:func:`is_mnnvl`) additionally ClusterUUID set (not all zeros) and CliqueId
      present (Azure's rule for NVLink-fabric VMs, Azure/azhpc-images#506), and the fabric manager is NOT
      required; a Health Summary other than Healthy is a warning;
    - elsewhere, where the NVSwitches are on this node's PCI bus or a fabric manager is installed, the fabric
      manager must be active and of the driver's version ("the version of fabricmanager must match the NVIDIA
      driver installed", NVIDIA/yum-packaging-fabric-manager). A pass-through VM that shows a Completed fabric
      but no NVSwitch (the fabric manager runs on its host) is only judged on the fabric state.

    ``fabric_manager``: :func:`parse_fabricmanager`'s dict, plus optional ``installed`` (bool) and ``version``
    (the package's version) from the caller.
    """
    gpus = (smi_q or {}).get("gpus") or []
    switches = (lspci or {}).get("nvswitches") or []
    with_state = [g for g in gpus if g.get("fabric")]
    if not switches and not with_state:
        if smi_q is None and lspci is None:
            return _not_applied("fabric", "neither nvidia-smi -q nor lspci was read", mnnvl=False,
                                fabric_manager_required=False)
        return _not_applied("fabric", "no NVSwitch: %s" % (
            "lspci shows no NVIDIA bridge and no GPU reports a fabric state" if lspci is not None and smi_q is not None
            else "no GPU reports a fabric state (lspci was not read)" if lspci is None
            else "lspci shows no NVIDIA bridge (nvidia-smi -q was not read)"),
            mnnvl=False, fabric_manager_required=False)
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    mnnvl = is_mnnvl(smi_q)
    findings = []
    for gpu in with_state:
        fabric = gpu["fabric"]
        label = _gpu_label(gpu, index_map)
        state, status = fabric.get("state"), fabric.get("status")
        if state != "Completed" or status != "Success":
            if state != "Completed" and not mnnvl and lspci is not None and not switches:
                hint = ("the GPU has not joined the NVLink fabric, and lspci shows no NVSwitch on this node: in a VM "
                        "with pass-through GPUs the fabric manager of the host registers them (ask its admin or "
                        "provider); on bare metal the NVSwitches are missing from the PCI bus")
            elif state != "Completed" and not mnnvl:
                hint = ("the GPU has not joined the NVLink fabric: start nvidia-fabricmanager (on B200-class systems "
                        "also NVLSM) and check its journal")
            else:
                hint = ("the fabric registration failed: check the fabric manager's log (IMEX / NVLink domain on "
                        "GB200) and the NVSwitch SXid lines in the kernel log")
            findings.append(finding("error", "fabric", label, "fabric State Completed, Status Success",
                                    "fabric State %s, Status %s" % (state, status or "N/A"), hint))
            continue
        if mnnvl:
            uuid, clique = fabric.get("cluster_uuid"), fabric.get("clique_id")
            if not uuid or _ZERO_UUID.match(uuid) or clique is None:
                findings.append(finding("error", "fabric", label, "ClusterUUID and CliqueId of the NVLink domain",
                                        "ClusterUUID %s, CliqueId %s" % (uuid or "N/A", clique or "N/A"),
                                        "the GPU is not part of its NVLink domain: check the domain's management "
                                        "(IMEX) and the compute tray's NVLink cabling"))
            elif fabric.get("health_summary") and fabric["health_summary"] != "Healthy":
                findings.append(finding("warning", "fabric", label, "fabric Health Summary Healthy",
                                        "fabric Health Summary %s" % fabric["health_summary"],
                                        "see the GPU's Fabric Health block in nvidia-smi -q"))
    installed = (fabric_manager or {}).get("installed")
    fm_required = not mnnvl and (bool(switches) or bool(installed))
    if fm_required:
        findings.extend(_fabric_manager_findings(fabric_manager, driver_version))
    return _result("fabric", True, findings, mnnvl=mnnvl, fabric_manager_required=fm_required)


def _fabric_manager_findings(fm, driver_version):
    if fm is None:
        return [finding("warning", "fabric", None, "nvidia-fabricmanager active, version %s" % (driver_version or
                        "of the driver"), "fabric manager state not read",
                        "read 'systemctl status nvidia-fabricmanager' on NVSwitch nodes")]
    out = []
    mismatch = fm.get("version_mismatch")
    if mismatch:
        out.append(finding("error", "fabric", None, "fabric manager version = driver version %s" % mismatch["driver"],
                           "fabric manager %s, driver %s: the fabric manager refused to start" % (
                               mismatch["fabric_manager"], mismatch["driver"]),
                           "install the fabric manager package of the driver's exact version"))
    version = fm.get("version")
    if version and driver_version and not versions_agree(version, driver_version) and not mismatch:
        out.append(finding("error", "fabric", None, "fabric manager version = driver version %s" % driver_version,
                           "fabric manager %s" % version, "install the fabric manager package of the driver's "
                                                          "exact version"))
    if fm.get("active") is False and not mismatch:
        hint = "systemctl start nvidia-fabricmanager; read its journal"
        if fm.get("nothing_to_do") and fm.get("nvl5"):
            hint = ("the fabric manager found nothing to manage (NV_WARN_NOTHING_TO_DO): on B200-class (NVL5) "
                    "systems NVLSM must run first")
        elif fm.get("config_error"):
            hint = ("the fabric manager does not start: '%s'; correct that setting in its config file "
                    "(/usr/share/nvidia/nvswitch/fabricmanager.cfg), then systemctl restart nvidia-fabricmanager"
                    % fm["config_error"])
        elif fm.get("nothing_to_do"):
            hint = ("the fabric manager found no NVSwitch to manage (NV_WARN_NOTHING_TO_DO%s): check that lspci "
                    "shows the NVSwitches and read the SXid lines in the kernel log; in a VM with pass-through GPUs "
                    "the host's fabric manager registers them%s" % (
                        " on a pre-NVL5 system" if fm.get("nvl5") is False else "",
                        "" if fm.get("nvl5") is False else "; on B200-class (NVL5) systems NVLSM must run first"))
        out.append(finding("error", "fabric", None, "nvidia-fabricmanager active (running)",
                           "nvidia-fabricmanager %s" % (fm.get("state") or "not running"), hint))
    elif fm.get("active") is None and not mismatch:
        out.append(finding("warning", "fabric", None, "nvidia-fabricmanager active (running)",
                           "the fabric manager's state is not in what was read", "read 'systemctl is-active "
                           "nvidia-fabricmanager'"))
    return out


# ----------------------------------------------------------------------------------------------------
# memory


# DCGM common/DcgmGPUHardwareLimits.h: DCGM_LIMIT_MAX_RETIRED_PAGES 63 ("updated to match the field diag"),
# DCGM_LIMIT_MAX_RETIRED_PAGES_SOFT_LIMIT 15 (double bit pages); NVIDIA's page retirement keeps at most 64 pages.
RETIRED_PAGES_LIMIT = 63
RETIRED_PAGES_DBE_WARN = 15


def check_memory(smi_q=None, bus_to_index=None):
    """Memory error state a GPU reports in ``nvidia-smi -q`` (NVIDIA, GPU memory error management, and the
    dynamic page retirement whitepaper):

    - remapped rows pending: "row-remapping will happen at the next GPU reset" -> error, reset the GPU;
    - remapping failure occurred: an RMA criterion (NVIDIA RMA policy, via FACTS.md section 4) -> error;
    - retired pages pending (pre-Ampere): "the driver will need to be reloaded for the retirement to take
      effect" -> error; 63 or more pages retired (DCGM's and the field diagnostic's limit; NVIDIA keeps at most 64)
      -> error; more than 15 pages retired for double bit errors (DCGM's soft limit) -> warning;
    - GPU Recovery Action other than None ("Reset", "Reboot", "Drain P2P", "Drain and Reset"...) -> error naming
      the action (anything but None/N/A counts, not only the names known today);
    - Reset Required Yes -> error; Drain and Reset Recommended Yes (NVML's deprecated field for the recovery action
      Drain and Reset) -> error;
    - volatile uncorrectable ECC errors since the last reset, the GPU's or a MIG device's (each instance counts its
      own) -> warning (the recovery action says what to do);
    - SRAM Threshold Exceeded Yes (R535 and later) and Unrepairable Memory Yes (R580) are RMA criteria (NVIDIA RMA
      policy) -> error; Channel or TPC Repair Pending Yes (R580: memory marked for repair, Xid 160, repaired at the
      next reset like a pending row remap) -> error, reset the GPU.

    Applies when some GPU reports any of these fields (row remapping exists from Ampere, the recovery action from
    about R565; MIG GPUs with instances do not report remapped rows).
    """
    if smi_q is None:
        return _not_applied("memory", "nvidia-smi -q was not read")
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    findings = []
    judged = False
    for gpu in smi_q.get("gpus") or []:
        label = _gpu_label(gpu, index_map)
        rows = gpu.get("remapped_rows") or {}
        pages = gpu.get("retired_pages") or {}
        action = gpu.get("recovery_action")
        ecc = gpu.get("ecc") or {}
        repair = gpu.get("memory_repair") or {}
        instances = [d for d in gpu.get("mig_devices") or [] if d.get("volatile_uncorrectable") is not None]
        if rows or pages or repair or action is not None or gpu.get("reset_required") is not None or \
                gpu.get("drain_and_reset_recommended") is not None or ecc.get("volatile_uncorrectable") is not None \
                or instances:
            judged = True
        if rows.get("pending"):
            findings.append(finding("error", "memory", label, "no remapped rows pending",
                                    "remapped rows pending (correctable %s, uncorrectable %s)" % (
                                        rows.get("correctable"), rows.get("uncorrectable")),
                                    "reset the GPU (nvidia-smi -r) or reboot: the remapping happens at the next reset"))
        if rows.get("failure"):
            findings.append(finding("error", "memory", label, "no row remapping failure",
                                    "Remapping Failure Occurred: Yes",
                                    "the GPU can no longer remap bad memory: an RMA criterion, replace it"))
        for key, field in (("unrepairable_memory", "Unrepairable Memory"),
                           ("sram_threshold_exceeded", "SRAM Threshold Exceeded")):
            if repair.get(key):
                findings.append(finding("error", "memory", label, "%s No" % field, "%s Yes" % field,
                                        "an RMA criterion (NVIDIA GPU memory error management, RMA policy): drain "
                                        "the node, run NVIDIA's field diagnostic, replace the GPU"))
        pending = [field for key, field in (("channel_repair_pending", "Channel Repair Pending"),
                                            ("tpc_repair_pending", "TPC Repair Pending")) if repair.get(key)]
        if pending:
            findings.append(finding("error", "memory", label, "no memory repair pending",
                                    ", ".join("%s Yes" % field for field in pending),
                                    "reset the GPU (nvidia-smi -r) or reboot: the repair happens at the next reset"))
        if pages.get("pending"):
            findings.append(finding("error", "memory", label, "no retired pages pending",
                                    "retired pages pending (single bit %s, double bit %s)" % (
                                        pages.get("sbe"), pages.get("dbe")),
                                    "reload the driver or reboot: the retirement takes effect then"))
        retired = (pages.get("sbe") or 0) + (pages.get("dbe") or 0)
        if retired >= RETIRED_PAGES_LIMIT:
            findings.append(finding("error", "memory", label,
                                    "fewer than %d retired pages" % RETIRED_PAGES_LIMIT,
                                    "%d retired pages (single bit %s, double bit %s)" % (
                                        retired, pages.get("sbe"), pages.get("dbe")),
                                    "at NVIDIA's page retirement limit (64 per GPU): the GPU can retire no more "
                                    "bad memory; run NVIDIA's field diagnostic and replace it"))
        elif (pages.get("dbe") or 0) > RETIRED_PAGES_DBE_WARN:
            findings.append(finding("warning", "memory", label,
                                    "at most %d pages retired for double bit errors" % RETIRED_PAGES_DBE_WARN,
                                    "%d pages retired for double bit errors" % pages["dbe"],
                                    "DCGM fails such a GPU once it retires more than one page a week: watch the "
                                    "count, and plan a field diagnostic"))
        if action is not None and action.lower() not in ("none",):
            findings.append(finding("error", "memory", label, "GPU Recovery Action None",
                                    "GPU Recovery Action %s" % action,
                                    "do what the driver asks (%s); see NVIDIA's recovery action flags" % action))
        if gpu.get("reset_required"):
            findings.append(finding("error", "memory", label, "Reset Required No", "Reset Required Yes",
                                    "reset the GPU (nvidia-smi -r) or reboot"))
        if gpu.get("drain_and_reset_recommended"):
            # the field NVML deprecated for the recovery action "Drain and Reset", judged the same
            findings.append(finding("error", "memory", label, "Drain and Reset Recommended No",
                                    "Drain and Reset Recommended Yes",
                                    "drain the node, let its jobs end, then reset the GPU (nvidia-smi -r) or reboot"))
        if (ecc.get("volatile_uncorrectable") or 0) > 0:
            findings.append(finding("warning", "memory", label, "no uncorrectable ECC error since the last reset",
                                    "%d volatile uncorrectable ECC error(s)" % ecc["volatile_uncorrectable"],
                                    "look for Xid 48/94/95 in the kernel log and at the remapped rows"))
        hit = [d for d in instances if d["volatile_uncorrectable"] > 0]
        if hit:
            findings.append(finding(
                "warning", "memory", label, "no uncorrectable ECC error in a MIG device since the last reset",
                "; ".join("MIG device %s (GPU instance %s, compute instance %s): %d volatile uncorrectable ECC "
                          "error(s)" % (d["index"], d["gi_id"], d["ci_id"], d["volatile_uncorrectable"]) for d in hit),
                "look for Xid 94 (contained: the instance's job failed, the others ran on) or 95 (uncontained: "
                "reset the GPU) in the kernel log"))
    if not judged:
        return _not_applied("memory", "no GPU reports remapped rows, retired pages, a recovery action or a reset "
                                      "status")
    return _result("memory", True, findings)


# ----------------------------------------------------------------------------------------------------
# clocks

# The clock event reasons that mean the hardware, not the workload or a setting, holds the clocks down (DCGM's
# diagnostic fails on these; Idle, SW Power Cap, Sync Boost and the clock settings are normal).
SLOWDOWNS = ("HW Slowdown", "HW Power Brake Slowdown", "HW Thermal Slowdown", "SW Thermal Slowdown")


def check_clocks(smi_q=None, bus_to_index=None):
    """A GPU whose clocks a hardware slowdown holds down (``Clocks Event Reasons``, ``Clocks Throttle Reasons``
    before R535): one of :data:`SLOWDOWNS` Active while the GPU is not at rest (Idle, or P8 or deeper and not
    busy) and its SM clock is below half its maximum (NVML: HW Slowdown reduces "the core clocks by a factor of 2 or
    more"), or the clocks or the maximum were not read (an excerpt such as ``-q -d PERFORMANCE``). A warning: the GPU
    works, jobs
    run at a fraction of its speed; NVML also reports HW Slowdown briefly "during PState or clock change", and a
    flag with the clock at its maximum (seen on a real H100) is no finding. Applies when a GPU reports the reasons
    (N/A on older GeForce drivers and vGPUs)."""
    if smi_q is None:
        return _not_applied("clocks", "nvidia-smi -q was not read")
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    findings = []
    judged = False
    for gpu in smi_q.get("gpus") or []:
        events = gpu.get("clock_events")
        if not events:
            continue
        sm, top = events.get("sm_mhz"), events.get("sm_max_mhz")
        slow = [reason for reason in SLOWDOWNS if reason in events["active"]]
        if (sm is None or not top) and not slow:
            continue  # -q -d PERFORMANCE prints no clocks: nothing to judge by
        judged = True
        # a GPU at rest (Idle, or P8 and deeper unless busy: a real idle RTX 5090 read Idle Not Active there, and a
        # laptop GPU held by a slowdown was reported busy at P8) has low clocks anyway
        busy = events.get("busy")
        resting = events.get("idle") or ((events.get("pstate") or 0) >= 8 and (busy is None or busy < 10))
        if not slow or resting or (sm is not None and top and sm * 2 > top):
            continue
        if sm is not None and top:
            clocks = "SM clock %d MHz of %d MHz" % (sm, top)
        else:  # an excerpt (-q -d PERFORMANCE, a paste): the slowdown alone, which NVML also sets briefly
            clocks = ("SM clock %d MHz, its maximum not read" % sm if sm is not None else "no clocks read") + \
                " (NVML also reports a slowdown for a moment during a clock change)"
        if "HW Power Brake Slowdown" in slow:
            hint = ("the platform asserts the power brake (power supply or BMC): check the PSU redundancy and the "
                    "BMC's power events, and that the server supports this GPU model")
        elif any("Thermal" in reason for reason in slow):
            hint = ("the GPU is too hot: check the fans, the airflow and the inlet temperature (nvidia-smi -q -d "
                    "TEMPERATURE)")
        else:
            hint = ("temperature, the power brake or too high a power draw (NVML): check the cooling and the power "
                    "supply")
        findings.append(finding("warning", "clocks", _gpu_label(gpu, index_map),
                                "clocks not held down by a hardware slowdown",
                                "%s Active, %s" % (", ".join(slow), clocks),
                                hint + "; jobs run at a fraction of the GPU's speed until it clears (read nvidia-smi "
                                "-q -d PERFORMANCE,CLOCK again a minute later)"))
    if not judged:
        return _not_applied("clocks", "no GPU reports its clock event reasons with its SM clocks")
    return _result("clocks", True, findings)


# ----------------------------------------------------------------------------------------------------
# errors


# Fields about the host rather than the GPU: the upstream port's PCIe generation, which NVML cannot read in some
# VMs and platforms (a healthy 8x V100 host reads "Unknown Error" there: tests/fixtures/readiness). A warning.
_HOST_SIDE_FIELDS = ("PCI/GPU Link Info/PCIe Generation/Host Max",)


def check_errors(smi_q=None, bus_to_index=None):
    """No field of ``nvidia-smi -q`` may read ``ERR!``, ``Unknown Error`` or ``[GPU requires reset]``: NVML failed
    to read it from the GPU. One error per GPU naming the fields (a warning for fields about the host side of the
    PCIe link), and a warning per GPU whose infoROM nvidia-smi says is corrupted. An output that lost its
    indentation is an error of its own (smi_q ``unindented``)."""
    if smi_q is None:
        return _not_applied("errors", "nvidia-smi -q was not read")
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    findings = []
    if smi_q.get("unindented"):
        findings.append(finding("error", "errors", None, "nvidia-smi -q as it prints, its sections indented",
                                "no indented line after the first GPU header",
                                "the output lost its leading blanks (a paste?): its sections cannot be told apart, "
                                "so no GPU state is judged from it; read nvidia-smi -q itself"))
    for gpu in smi_q.get("gpus") or []:
        label = _gpu_label(gpu, index_map)
        gpu_side = [e for e in gpu.get("errors") or [] if e["field"] not in _HOST_SIDE_FIELDS]
        host_side = [e for e in gpu.get("errors") or [] if e["field"] in _HOST_SIDE_FIELDS]
        for severity, errors in (("error", gpu_side), ("warning", host_side)):
            if errors:
                # "every nvidia-smi field": the default table is read the same way
                findings.append(finding(severity, "errors", label, "every nvidia-smi field readable",
                                        "; ".join("%s: %s" % (e["field"], e["value"]) for e in errors),
                                        "NVML could not read these fields: check the kernel log for Xids; a GPU "
                                        "that says 'GPU requires reset' needs nvidia-smi -r or a reboot"))
        if gpu.get("inforom_corrupted"):
            findings.append(finding("warning", "errors", label, "a valid infoROM",
                                    "nvidia-smi: infoROM is corrupted at gpu %s" % gpu["bus_id"],
                                    "the GPU runs, but the ECC counts and retired pages it keeps in its infoROM are "
                                    "not to be trusted: ask the vendor for an infoROM reflash or a replacement"))
    return _result("errors", True, findings)


# ----------------------------------------------------------------------------------------------------
# license: a vGPU guest's licence

LICENSE_HINT = ("start nvidia-gridd and read why it holds no licence (journalctl -u nvidia-gridd): the client "
                "configuration token in /etc/nvidia/ClientConfigToken/, FeatureType in /etc/nvidia/gridd.conf (4 for "
                "a C-series vGPU, Virtual Compute Server), the licence server reachable and the guest's clock right; "
                "the licence is taken without a reboot")


def check_license(smi_q=None, bus_to_index=None):
    """A vGPU guest's GPUs must hold a vGPU software licence (``License Status : Licensed (Expiry: ...)``). NVIDIA:
    an unlicensed vGPU "starts at full capability but enters a degraded state after a 20-minute grace period" in
    which compute runs "at an idle level" (vGPU for Compute licensing); older vGPU releases disable CUDA
    (``CUDA error: operation not supported``, recorded with ``License Status : Unlicensed``).
    ``Unlicensed (Restricted)`` and plain ``Unlicensed`` are errors (jobs crawl or fail); ``Unlicensed
    (Unrestricted)`` is the grace period, a warning. The expiry date is not judged: the licence client renews its
    lease itself. GPUs without the section (bare metal, passthrough without vGPU software, vGPU hosts) are not
    judged, nor a state nvidia-smi prints as ``Unknown``."""
    if smi_q is None:
        return _not_applied("license", "nvidia-smi -q was not read")
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    judged = [g for g in smi_q.get("gpus") or [] if (g.get("vgpu_license") or {}).get("status")]
    if not judged:
        return _not_applied("license", "no GPU reports a vGPU software licence (not a vGPU guest)")
    findings = []
    for gpu in judged:
        status = gpu["vgpu_license"]["status"]
        state = status.lower()
        if state.startswith("licensed") or not state.startswith("unlicensed"):
            continue
        grace = "unrestricted" in state
        product = gpu["vgpu_license"].get("product")
        findings.append(finding(
            "warning" if grace else "error", "license", _gpu_label(gpu, index_map),
            "a vGPU software licence (License Status Licensed)",
            "License Status %s%s" % (status, " (%s)" % product if product else ""),
            ("the vGPU runs at full speed only in its grace period: NVIDIA degrades an unlicensed vGPU after 20 "
             "minutes. " if grace else "an unlicensed vGPU runs compute at an idle level, or CUDA fails with "
             "'operation not supported'. ") + LICENSE_HINT))
    return _result("license", True, findings)


# ----------------------------------------------------------------------------------------------------
# xid: kernel log

# Xid -> (class, NVIDIA's immediate action, description), for every Xid of NVIDIA's catalogue (xid_catalog.py, the
# catalogue's words). Classes: "application" (the job's fault: no finding), "reset" (the GPU needs a reset or a driver
# reload), "reboot" (the node needs a reboot), "follow" (Xid 45: judged as the Xid it names in "caused by previous Xid
# N", else as application), "recovery" (Xid 154: judged by the recovery action it changes to), "unknown" (a warning:
# an action that asks a person to look, CONTACT_SUPPORT for the rows the catalogue calls "Unused", or none).
XID_ACTION_CLASSES = {
    "RESTART_APP": "application",
    "IGNORE": "application",
    "RESET_GPU": "reset",
    "WORKFLOW_XID_48": "reset",  # double-bit ECC error
    "WORKFLOW_NVLINK_ERR": "reset",  # this collection's reading of the NVLink workflow, not NVIDIA's words
    "WORKFLOW_NVLINK5_ERR": "reset",  # 144-150: each line decoded by nvlink5_decode first
    "RESTART_BM": "reboot",
    "RESTART_VM": "reboot",
    "WORKFLOW_XID_45": "follow",
    "XID_154": "recovery",
}
XID_CLASSES = {
    xid: (XID_ACTION_CLASSES.get(action, "unknown"), action or None, description)
    for xid, (_mnemonic, description, action) in xid_catalog.CATALOG.items()
}
XID_CLASSES.update({
    # the catalogue gives these no action; NVIDIA's memory-error page: "XID 48: ... an uncorrectable ECC error has
    # occurred. XID 171 indicates if it is DRAM and XID 172 indicates if it is SRAM"
    171: ("reset", "WORKFLOW_XID_48", "Uncorrectable DRAM error (additional to Xid 48)"),
    172: ("reset", "WORKFLOW_XID_48", "Uncorrectable SRAM error (additional to Xid 48)"),
})
FATAL_CLASSES = ("reset", "reboot")
# NVLink5 Xids (144-150) are decoded per interrupt: NVIDIA's decode rows marked "Non-fatal" resolve to IGNORE or
# XID_154_EVAL (the action of an Xid 154 that follows, if any), the "Fatal" ones to RESET_GPU; the driver writes
# which it is into the line ("RLW_SRC_TRACK Nonfatal XC1 i0 Link 17 ...").
_NVLINK5_XIDS = range(144, 151)
_NONFATAL = re.compile(r"\bNon-?fatal\b", re.I)
# The driver's own marks at the end of an error-containment Xid (94, 95 and others on Ampere and later):
# "... Contained: CE User Channel (0x9). RST: No, D-RST: No"; Yes when it marked the GPU for a reset, or for a drain
# and reset (gpuMarkDeviceForReset / gpuMarkDeviceForDrainAndReset, open-gpu-kernel-modules). A Yes makes any Xid a
# reset, whatever the catalogue says of its number.
_RESET_MARK = re.compile(r"(?<![\w-])RST:\s*Yes\b", re.I)
_DRAIN_RESET_MARK = re.compile(r"\bD-RST:\s*Yes\b", re.I)

# Line prefixes: dmesg "[  123.456789] ", dmesg -T/--ctime "[Mon Dec  1 10:00:00 2025] ", syslog/journal
# "Dec 01 10:00:00 host kernel: " (-o short-precise: "Dec 01 10:00:00.123456"; the month in the journal's locale too:
# "kwi 15", "11月 15"), an ISO time anywhere
# before the message ("2025-12-01T10:00:00+0000 host kernel: ", dmesg --time-format=iso "kern  :warn  :
# 2025-01-21T04:41:44,283302+00:00 ", Talos "host: kern: warning: [2026-04-22T21:26:20.599716692Z]: "), and
# "kernel: " alone.
# dmesg's seconds since boot; dmesg -H (--human) prints the minute ("[Oct25 17:01]"), then "+seconds" since the line
# before
_STAMP_DMESG = re.compile(r"\[\s*(\+?\d+\.\d+|[A-Z][a-z]{2}\s?\d{1,2} \d\d:\d\d)\]")
_STAMP_CTIME = re.compile(r"\[([A-Z][a-z]{2} [A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d \d{4})\]")
_STAMP_SYSLOG = re.compile(r"^\s*(\S{1,12} {1,2}\d{1,2} \d\d:\d\d:\d\d(?:\.\d+)?)\s")
_STAMP_ISO = re.compile(r"(\d{4}-\d\d-\d\d[T ]\d\d:\d\d:\d\d[^\s\]]*)")
_NVRM = re.compile(r"NVRM:\s?")
_CONTINUATION = re.compile(r"^\s+NVRM:\s?(.*)$")
# rsyslog writes a multi-line kernel message on one line, each newline as "#012"
_RSYSLOG_NEWLINE = re.compile(r"#012(?:\s*NVRM:\s?)?")
# a line of a multi-line message goes on in lower case or with a bracket ("NVRM: this kernel module has the version
# ...", "NVRM: (PCI ID: 10de:26b5) installed in ..."); a new message starts upper case, or with "loading NVIDIA UNIX"
# ... but a line that opens with the name of the driver function printing it ("nvAssertOkFailedNoLog: ...",
# "rpcRmApiAlloc_GSP: ...") is a message of its own
_GOES_ON = re.compile(r"^(?!loading )(?![A-Za-z_]\w*: )[^A-Z]")
_XID = re.compile(r"^Xid \((?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?)"
                  r"(?:\s+GPU-I:(\d+))?(?:\s+GPU-CI:(\d+))?\):\s*(\d+),\s*(.*)$")
# an Xid whose bus id is not one (elided or masked in a pasted log: "PCI:0000:xx:00"): still an Xid, of no known GPU
_XID_UNKNOWN_BUS = re.compile(r"^Xid \(([^)]*)\):\s*(\d+),\s*(.*)$")
_SXID = re.compile(r"SXid \((?:PCI:)?([0-9A-Fa-f:.]+)\):\s*(\d+),\s*(.*)$")
# PCI 0000:00:00.0 is the host bridge or root port, never a GPU: NVLink5 Xids of GB200 nodes name it
# ("Xid (PCI:0000:00:00): 149, NETIR_LINK_EVT Fatal ...", gpud#1160 and #1174); such an Xid names no GPU
_NO_GPU_BUS = "00000000:00:00.0"
# the kernel's driver core when the nvidia module's probe of a GPU fails ("nvidia: probe of 0000:af:00.0 failed with
# error -1", gpu-operator#232: a BAR the BIOS left unassigned); the GPU stays on lspci and out of nvidia-smi
_PROBE_FAILED = re.compile(r"nvidia: (probe of ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]) failed.*)$")
# the kernel's PCIe error recovery giving up on a GPU after an uncorrected error: "nvidia 0000:03:00.0: AER: can't
# recover (no error_detected callback)" (the driver registers no PCI error handlers, or returns DISCONNECT where it
# does: nv-pci.c "RM and clients don't yet support that"); the GPU stays failed until a reboot
# (NVIDIA/open-gpu-kernel-modules#1229, rwth-i6/returnn#1500)
_AER_FAILED = re.compile(r"nvidia ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): (AER: can't recover.*)$")
_PID_NAME = re.compile(r"^pid=('?<?[^,>']*>?'?)(?:,\s*name=(<unknown>|[^,]*))?,\s*(.*)$")
# a client named without its pid (open-gpu-kernel-modules#1229: "31, name=plasmashell, MMU Fault: ...")
_NAME_ONLY = re.compile(r"^name=(<unknown>|[^,]*),\s*(.*)$")
_CAUSED_BY = re.compile(r"caused by previous Xid (\d+)")
_RECOVERY = re.compile(r"recovery action changed from (0x[0-9A-Fa-f]+) \(([^)]*)\) to (0x[0-9A-Fa-f]+) \(([^)]*)\)")
_LOADING = re.compile(r"^loading (NVIDIA UNIX .*)$")
_PROBE_OFF_BUS = re.compile(r"The NVIDIA GPU ([0-9A-Fa-f:.]+).*fallen off the bus")
# "GPU 0000:09:00.0: GPU has fallen off the bus." and the older "GPU at 0000:01:00.0 has fallen off the bus."
_RUNTIME_OFF_BUS = re.compile(r"^GPU (?:at )?(?:PCI:)?([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}(?:\.[0-7])?):? "
                              r"(?:GPU )?has fallen off the bus")
# the driver's check/assert lines once the GPU stopped answering ("nvCheckOkFailedNoLog: Check failed: GPU lost from
# the bus [NV_ERR_GPU_IS_LOST] (0x0000000F) returned from ..."): the state of an Xid 79, often without its line
_LOST_FROM_BUS = re.compile(r"\[NV_ERR_GPU_IS_LOST\]")
# the same kind of line when the driver (GSP) refuses work until the GPU is reset ("nvAssertOkFailedNoLog: Assertion
# failed: Reset required [NV_ERR_RESET_REQUIRED] (0x00000062) returned from status @ kernel_channel.c:2874"): jobs on
# that GPU fail ("CUDA-capable device(s) is/are busy or unavailable", scitix/sichek#51), often with no Xid before it
_RESET_REQUIRED = re.compile(r"\[NV_ERR_RESET_REQUIRED\]")
# "nvGpuOpsReportFatalError: uvm encountered global fatal error 0x60, requiring os reboot to recover." (nv_gpu_ops.c):
# the UVM driver's state is poisoned for every GPU; with R560+ an Xid 154 (Node Reboot Required) usually follows
_UVM_FATAL = re.compile(r"uvm encountered global fatal error", re.I)
# the driver lines that name no GPU, and the event kind of each
_NO_BUS_EVENTS = ((_LOST_FROM_BUS, "gpu_lost"), (_RESET_REQUIRED, "reset_required"), (_UVM_FATAL, "uvm_fatal"))
_INIT_FAILED = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7]): (RmInitAdapter failed!.*)$")
_OPEN_REQUIRED = re.compile(r"The NVIDIA GPU ([0-9A-Fa-f:.]+).*requires use of the NVIDIA open kernel modules")
# "NVRM: The NVIDIA probe routine was not called for 3 device(s). ... This can occur when a driver such as: nouveau,
# rivafb, nvidiafb or rivatv was loaded and obtained ownership of the NVIDIA device(s)." (nv.c, at module init)
_PROBE_SKIPPED = re.compile(r"The NVIDIA probe routine was not called for (\d+) device")
# "the client has the version 390.25, but this kernel module has the version 390.12" and, from about 575, "the client
# 'kwin_wayland' (pid 1005) has the version 595.84, but ..."
_API_MISMATCH = re.compile(r"API mismatch: the client(?: .*?)? has the version (\d+(?:\.\d+)*), but this kernel "
                           r"module has the version (\d+(?:\.\d+)*)")

EVENT_KINDS = ("xid", "off_bus", "gpu_lost", "reset_required", "uvm_fatal", "driver_load", "init_failed",
               "probe_failed", "aer_failed", "open_required", "api_mismatch", "sxid", "probe_skipped", "driver_crash")

# The kernel's own reports of a CPU or a task stopped in the NVIDIA driver's modules (nvidia, nvidia_uvm,
# nvidia_modeset, nvidia_drm, nvidia_peermem): the first line of a crash (x86 "BUG: kernel NULL pointer
# dereference", "Oops: 0002 [#1]", "general protection fault", "invalid opcode", "kernel BUG at"; arm64 "Internal
# error: Oops", "Unable to handle kernel"), of a hang (the soft/hard lockup and RCU stall watchdogs, a task blocked
# for 120 s, the NMI backtrace of a stalled CPU) or of a WARN() ("WARNING: CPU: 3 PID: 12 at ..."), then the register
# dump whose instruction pointer names the function and module ("RIP: 0010:_nv017125rm+0x40/0x70 [nvidia]", the old
# "IP: [<...>] f+0x1f/0x170 [nvidia]", i686 "EIP:", arm64 "pc :"), or for a blocked task its stack.
# (not a user process's "traps: python[4001] general protection fault ip:7f... in libc.so.6")
_CRASH_HEAD = re.compile(r"BUG: (?:unable to handle|kernel NULL pointer|kernel paging request)|\bOops(?: - \w+)?: |"
                         r"general protection fault(?! ip:)|kernel BUG at |invalid opcode: |Internal error: Oops|"
                         r"Unable to handle kernel ")
_HANG_HEAD = re.compile(r"BUG: soft lockup|Watchdog detected hard LOCKUP|rcu_\w+ (?:self-)?detected stall|"
                        r"INFO: task \S.*? blocked for more than \d+ seconds|NMI backtrace for cpu")
_WARN_HEAD = re.compile(r"WARNING: CPU: \d+ PID: \d+ at ")
_NV_MODULE = r"\[(nvidia(?:_\w+)?)\]"
_REGS_IN_DRIVER = re.compile(r"(?:\bRIP: (?:[0-9a-f]{4}:)?(?:\[<[0-9a-f]+>\]\s+)*|\bE?IP: (?:[0-9a-f]{4}:)?(?:\[<[0-9a-f]+>\]\s+)*|"
                             r"\bpc : )([\w.$]+)(?:\+0x[0-9a-f]+/0x[0-9a-f]+)?\s+" + _NV_MODULE)
_FRAME_IN_DRIVER = re.compile(r"\s(\? )?([\w.$]+)\+0x[0-9a-f]+/0x[0-9a-f]+\s+" + _NV_MODULE)
# a lockup names the task that was stuck: the driver's own threads ("[irq/162-nvidia:1307]", "[nv_queue:812]")
_DRIVER_TASK = re.compile(r"\[((?:irq/\d+-nvidia|nv_queue|nv_open_q|nvidia[\w/-]*|UVM [\w ]+)):\d+\]")
_END_TRACE = re.compile(r"---\[ end (?:trace|Kernel panic)")
# the lines of one report: its first line to its register dump or a blocked task's frames
_REPORT_LINES = 80
_CRASH_WORDS = ("BUG", "Oops", "fault", "opcode", "rror", "nable", "LOCKUP", "stall", "blocked", "NMI", "WARNING",
                "IP:", "pc :", "[nvidia", "end ")
_HEADS = ((_CRASH_HEAD, "crash"), (_HANG_HEAD, "hang"), (_WARN_HEAD, "warning"))


def _event(number, stamp, message, kind=None, **fields):
    """One kernel-log event with every key :func:`parse_kernel_log` documents, unknown ones None."""
    event = {"kind": kind, "line": number, "stamp": stamp, "bus_id": None, "message": message, "xid": None,
             "pid": None, "name": None, "gpu_instance": None, "compute_instance": None, "caused_by": None,
             "recovery_from": None, "recovery_to": None, "version": None, "phase": "runtime"}
    event.update(fields)
    return event


def _driver_crashes(text):
    """``driver_crash`` events: one per crash, hang or WARN() the kernel reports in an NVIDIA module (``crash``:
    ``"crash"``, ``"hang"``, ``"warning"``, or ``"dump"`` for a register dump whose first line the log does not hold;
    ``function``, ``module``; ``message`` the first line). A trace in another module (a btrfs WARNING on a node that
    has the driver loaded) is none."""
    events = []
    current = None

    def close():
        # the kernel prints the instruction pointer again after "---[ end trace ]---": the same crash
        if current and current["function"] and not (
                current["crash"] == "dump" and any(e["function"] == current["function"] for e in events)):
            events.append(current)

    for number, line in output_lines(text):
        if not any(word in line for word in _CRASH_WORDS):
            continue
        if current and number - current["line"] > _REPORT_LINES:
            close()
            current = None
        line = line.replace("**", "")  # a forum post's emphasis
        head = kind = None
        for regex, name in _HEADS:
            head = regex.search(line)
            if head:
                kind = name
                break
        if head:
            if kind == "crash" and current and current["crash"] == "crash" and number - current["line"] < 12:
                continue  # "BUG: unable to handle ..." and then its "Oops: 0000 [#1] SMP": one crash
            close()
            task = _DRIVER_TASK.search(line[head.end():]) if kind == "hang" else None
            current = _event(number, _stamp(line[:head.start()]), line[head.start():].strip(), "driver_crash",
                             crash=kind, function="task " + task.group(1) if task else None,
                             module="nvidia" if task else None)
            continue
        if _END_TRACE.search(line):
            close()
            current = None
            continue
        regs = _REGS_IN_DRIVER.search(line)
        if regs:
            if current is None:
                current = _event(number, _stamp(line[:regs.start()]), line[regs.start():].strip(), "driver_crash",
                                 crash="dump", function=None, module=None)
            if not current["function"]:
                current.update(function=regs.group(1), module=regs.group(2))
            continue
        frame = _FRAME_IN_DRIVER.search(line)
        # a blocked task's stack: the first reliable frame in the driver is where it waits
        if frame and current and current["crash"] == "hang" and not current["function"] and not frame.group(1):
            current.update(function=frame.group(2), module=frame.group(3))
    close()
    return events


def _stamp(prefix):
    m = _STAMP_DMESG.search(prefix)
    if m:
        return m.group(1)
    m = _STAMP_CTIME.search(prefix)
    if m:
        return re.sub(r"\s+", " ", m.group(1))
    m = _STAMP_SYSLOG.search(prefix) or _STAMP_ISO.search(prefix)
    if m:
        return re.sub(r"\s+", " ", m.group(1))
    return None


def _unfinished(message):
    """A message a following line may go on: not an Xid/SXid line (always one line), not ended by a full stop."""
    return not message.startswith(("Xid ", "SXid ")) and not message.rstrip().endswith((".", "!"))


def _messages(text):
    """NVRM/SXid messages of a kernel log: ``(line number, stamp, message)``. The lines of a multi-line message
    are joined to its first: indented ones without a time (``               NVRM: fallen off the bus ...``), and
    ones that go on in lower case (not upper case) with the same time as an unfinished message (dmesg repeats the
    time on each line, bare ``NVRM:`` lines have none); rsyslog's ``#012`` is read as the line break it stands
    for."""
    messages = []
    for number, line in output_lines(text):
        line = _RSYSLOG_NEWLINE.sub(" ", line)
        cont = _CONTINUATION.match(line)
        if cont and messages and _GOES_ON.match(cont.group(1)) and _stamp(line[:line.find("NVRM:")]) is None:
            n, stamp, message = messages[-1]
            messages[-1] = (n, stamp, message + " " + cont.group(1).strip())
            continue
        m = _NVRM.search(line)
        sx = _SXID.search(line)
        if m:
            stamp, message = _stamp(line[:m.start()]), line[m.end():].strip()
            if messages and _GOES_ON.match(message) and messages[-1][1] == stamp and _unfinished(messages[-1][2]):
                messages[-1] = (messages[-1][0], stamp, messages[-1][2] + " " + message)
            else:
                messages.append((number, stamp, message))
        elif sx:
            messages.append((number, _stamp(line[:sx.start()]), line[sx.start():].strip()))
        else:
            probe = _PROBE_FAILED.search(line) or _AER_FAILED.search(line)
            if probe:
                messages.append((number, _stamp(line[:probe.start()]), line[probe.start():].strip()))
    return messages


def parse_kernel_log(text):
    """Kernel log (``dmesg``, ``dmesg -T``/``--ctime``, ``journalctl -k``, ``/var/log/syslog`` or bare ``NVRM:``
    lines) -> NVIDIA events in log order.

    Each event: ``{"kind", "line" (line number), "stamp" (the time as printed, blanks collapsed: "6781741.548779",
    "Sun Feb 23 16:24:18 2025", "May 11 19:25:29"; None for bare lines), "bus_id", "message", "xid", "pid",
    "name", "gpu_instance", "compute_instance", "caused_by", "recovery_from", "recovery_to", "version",
    "phase"}`` where ``kind`` is ``xid`` (``NVRM: Xid (PCI:0000:9b:00): 119, pid=..., name=..., ...``; also the
    old shape without pid/name and the MIG ``GPU-I:``/``GPU-CI:`` attribution), ``off_bus`` ("fallen off the bus"
    without an Xid: at probe, ``phase`` "probe", or at run time), ``gpu_lost`` (a driver line reporting
    ``[NV_ERR_GPU_IS_LOST]``, which names no GPU), ``reset_required`` (one reporting ``[NV_ERR_RESET_REQUIRED]``,
    which names no GPU either), ``uvm_fatal`` ("uvm encountered global fatal error ..., requiring os reboot"),
    ``driver_load`` ("NVRM: loading NVIDIA UNIX
    ... 570.158.01 ..."; ``version``), ``init_failed`` ("RmInitAdapter failed!"), ``probe_failed`` (the kernel's
    "nvidia: probe of <bus> failed with error -1"), ``aer_failed`` (the kernel's "nvidia <bus>: AER: can't
    recover ...": an uncorrected PCIe error left the GPU failed), ``open_required`` (the GPU
    needs the open kernel modules), ``api_mismatch`` (``version``: the client's, ``kernel_version``),
    ``probe_skipped`` (``count`` GPUs the nvidia module never probed: another driver such as nouveau owns them) or
    ``sxid`` (NVSwitch; ``xid`` holds the SXid). Xid 154 carries ``recovery_from``/``recovery_to`` as ``(code, name)``.
    """
    events = []
    for number, stamp, message in _messages(text):
        event = _event(number, stamp, message)
        m = _XID.match(message)
        groups = m.groups() if m else None
        if groups is None:
            loose = _XID_UNKNOWN_BUS.match(message)
            groups = (None, None, None, loose.group(2), loose.group(3)) if loose else None
        if groups:
            bus, gpu_instance, compute_instance, xid, rest = groups
            bus_id = _bus(bus)
            if bus_id == _NO_GPU_BUS:
                bus_id = None
            pm = _PID_NAME.match(rest)
            nm = None if pm else _NAME_ONLY.match(rest)
            if pm:
                event["pid"] = pm.group(1).strip("'")
                event["name"] = pm.group(2)
                rest = pm.group(3)
            elif nm:
                event["name"], rest = nm.group(1), nm.group(2)
            event.update(kind="xid", bus_id=bus_id, xid=int(xid), message=rest,
                         gpu_instance=int(gpu_instance) if gpu_instance else None,
                         compute_instance=int(compute_instance) if compute_instance else None)
            cb = _CAUSED_BY.search(rest)
            if cb:
                event["caused_by"] = int(cb.group(1))
            rc = _RECOVERY.search(rest)
            if rc:
                event["recovery_from"] = (int(rc.group(1), 16), rc.group(2))
                event["recovery_to"] = (int(rc.group(3), 16), rc.group(4))
            events.append(event)
            continue
        m = _SXID.match(message)
        if m:
            event.update(kind="sxid", bus_id=_bus(m.group(1)), xid=int(m.group(2)), message=m.group(3))
            events.append(event)
            continue
        m = _LOADING.match(message)
        if m:
            ident = parse_nvrm_id(m.group(1))
            event.update(kind="driver_load", version=ident["version"] if ident else None)
            events.append(event)
            continue
        m = _PROBE_OFF_BUS.search(message)
        if m:
            event.update(kind="off_bus", bus_id=_bus(m.group(1)), phase="probe")
            events.append(event)
            continue
        m = _RUNTIME_OFF_BUS.match(message)
        if m:
            event.update(kind="off_bus", bus_id=_bus(m.group(1)))
            events.append(event)
            continue
        kind = next((k for regex, k in _NO_BUS_EVENTS if regex.search(message)), None)
        if kind:
            event.update(kind=kind)
            events.append(event)
            continue
        m = _INIT_FAILED.match(message)
        if m:
            event.update(kind="init_failed", bus_id=_bus(m.group(1)), message=m.group(2))
            events.append(event)
            continue
        m = _PROBE_FAILED.match(message)
        if m:
            event.update(kind="probe_failed", bus_id=_bus(m.group(2)), message=message)
            events.append(event)
            continue
        m = _AER_FAILED.match(message)
        if m:
            event.update(kind="aer_failed", bus_id=_bus(m.group(1)), message=m.group(2))
            events.append(event)
            continue
        m = _OPEN_REQUIRED.search(message)
        if m:
            event.update(kind="open_required", bus_id=_bus(m.group(1)))
            events.append(event)
            continue
        m = _API_MISMATCH.search(message)
        if m:
            event.update(kind="api_mismatch", version=m.group(1), kernel_version=m.group(2))
            events.append(event)
            continue
        m = _PROBE_SKIPPED.search(message)
        if m:
            event.update(kind="probe_skipped", count=int(m.group(1)))
            events.append(event)
    crashes = _driver_crashes(text)
    if crashes:
        events = sorted(events + crashes, key=lambda e: e["line"])
    return events


# ----------------------------------------------------------------------------------------------------
# acknowledgements

_ACK_LINE = re.compile(r"^\s*(\S+)\s+(\S+)\s+(.*?)\s*$")
# the GPU column of an acknowledgement of the events that name no GPU ("*" would cover every GPU's too)
ACK_NODE = "node"


def parse_acknowledgements(text, host=None, source="acknowledgements"):
    """An admin's acknowledgement file -> ``[{"gpu", "xid", "stamp", "line"}]``.

    One acknowledgement a line: ``<gpu> <xid> <timestamp>  [# comment]``. ``gpu`` is the PCI bus id as the kernel
    or nvidia-smi print it (``0000:9b:00``, ``00000000:9B:00.0``), ``*`` (any GPU, and the node), or ``node`` (only
    the events that name no GPU: a crash in the driver, a UVM fatal error); ``xid`` a number or ``*`` (79 also
    covers "fallen off the bus" without an Xid); ``timestamp`` the event's time exactly as the kernel log prints
    it (``6781741.548779``, ``Sun Feb 23 16:30:13 2025``, ``May 11 19:25:29``; blanks may differ), or ``-`` for
    a line that has none. It acknowledges that event and every earlier one of the same GPU and Xid in the log; a
    later one is not covered. ``#`` starts a comment; blank lines are skipped. Malformed lines raise one
    ``GresError`` naming ``host``, each line (``<source> line N``), what was expected and what was found.
    """
    acks, problems = [], []
    for number, line in enumerate((text or "").replace("\r\n", "\n").split("\n"), 1):
        body = line.split("#", 1)[0]
        if not body.strip():
            continue
        field = "%s line %d" % (source, number)
        m = _ACK_LINE.match(body)
        if not m or not m.group(3):
            problems.append(Problem(host or "-", field, "'<gpu bus id, * or node> <xid or *> <timestamp as in the "
                                                        "kernel log>'", repr(line.strip())))
            continue
        gpu_text, xid_text, stamp = m.group(1), m.group(2), re.sub(r"\s+", " ", m.group(3)).strip("[]").strip()
        gpu = None if gpu_text == "*" else ACK_NODE if gpu_text == ACK_NODE else _bus(gpu_text)
        if gpu_text != "*" and gpu is None:
            problems.append(Problem(host or "-", field, "a PCI bus id such as 0000:9b:00 (or * or node)",
                                    repr(gpu_text)))
        elif xid_text != "*" and not xid_text.isdigit():
            problems.append(Problem(host or "-", field, "an Xid number (or *)", repr(xid_text)))
        else:
            acks.append({"gpu": gpu, "xid": None if xid_text == "*" else int(xid_text),
                         "stamp": None if stamp == "-" else stamp, "line": number})
    if problems:
        raise GresError(problems)
    return acks


def _ack_matches(ack, event):
    if ack["gpu"] == ACK_NODE:
        if event["bus_id"] is not None:
            return False
    elif ack["gpu"] is not None and ack["gpu"] != event["bus_id"]:
        return False
    if ack["xid"] is None:
        return True
    if event["kind"] in ("off_bus", "gpu_lost"):
        return ack["xid"] == 79
    if event["kind"] in _NO_XID_KINDS:
        return False  # it has no Xid: only "*" covers it
    return ack["xid"] == event["xid"]


# ----------------------------------------------------------------------------------------------------
# xid rule


# NVIDIA's Fabric Manager user guide on a fatal SXid: the NVLink traffic of the GPUs behind the NVSwitch stalls and
# their next access hangs; "Restart the system to reset the GPUs and NVSwitches".
_SXID_FATAL = re.compile(r"Fatal\b")
SXID_FATAL_CLASS = ("reboot", "RESTART_BM", "NVSwitch fatal error: the GPUs' NVLink traffic through it stalls")
# what the driver prints on the lines of an SXid that is no fault of its own: "Non-fatal, Link NN ..." and the
# Severity and Data lines after a fatal or non-fatal one; other SXid lines carry no severity word (the NVSwitch's
# management engine: "26006, SOE HALTED", soe_ls10.c NVSWITCH_PRINT_SXID): of unknown severity, a warning
_SXID_NO_FAULT = re.compile(r"(?:Non-?fatal|Severity|Data)\b", re.I)
SXID_UNMARKED_CLASS = ("unknown", None, "an NVSwitch error the driver prints without a severity")
RESET_REQUIRED_CLASS = ("reset", "RESET_GPU", "the driver refuses work until a GPU is reset (NV_ERR_RESET_REQUIRED)")
# Xid 63 records a retired page (pre-Ampere: "Dynamic Page Retirement: New page retired, reboot to activate") or a
# row marked for remapping ("Row Remapper: New row marked for remapping, reset gpu to activate"): in effect only after
# a reset or driver reload, the state the memory check calls pending (remapped rows or retired pages pending: error)
_PENDING_ACTIVATION = re.compile(r"\bto activate\b", re.I)
XID_63_PENDING_CLASS = ("reset", "reset the GPU when convenient", "a retired page or remapped row pending, in effect "
                        "after the next GPU reset or driver reload")
AER_FAILED_CLASS = ("reboot", "reboot", "an uncorrected PCIe error the kernel could not recover the GPU from (AER): "
                    "it stays failed until the node reboots")
UVM_FATAL_CLASS = ("reboot", "RESTART_BM", "the driver's unified memory (UVM) is in a global fatal state: new CUDA "
                   "work fails until the OS is rebooted")
# A crash or a hang inside the driver's code: the module cannot be unloaded (its state and locks are lost with the
# CPU or task that held them), so neither a GPU reset nor a driver reload recovers it; a WARN() is the driver
# reporting a condition it did not expect and carrying on.
DRIVER_CRASH_CLASSES = {
    "crash": ("reboot", "reboot", "the kernel crashed in the NVIDIA driver"),
    "dump": ("reboot", "reboot", "a kernel register dump with the CPU in the NVIDIA driver (a crash or a stall whose "
                                 "first line the log does not hold)"),
    "hang": ("reboot", "reboot", "a CPU or a task stuck in the NVIDIA driver"),
    "warning": ("unknown", None, "a kernel WARNING in the NVIDIA driver"),
}
# Events that name no GPU and are judged for the node unless a fatal Xid of a named GPU in the same driver load
# explains them.
_NODE_LEVEL_KINDS = ("reset_required", "uvm_fatal")
# Events that carry no Xid number: only "*" in an acknowledgement's Xid column covers them.
_NO_XID_KINDS = _NODE_LEVEL_KINDS + ("aer_failed", "driver_crash")


def _xid_class(event):
    """(class, action, description) of one event; 45 follows the Xid it names; 154 by its new action."""
    if event["kind"] in ("off_bus", "gpu_lost"):
        return XID_CLASSES[79]
    if event["kind"] == "reset_required":
        return RESET_REQUIRED_CLASS
    if event["kind"] == "uvm_fatal":
        return UVM_FATAL_CLASS
    if event["kind"] == "aer_failed":
        return AER_FAILED_CLASS
    if event["kind"] == "driver_crash":
        return DRIVER_CRASH_CLASSES[event["crash"]]
    if event["kind"] == "sxid":
        return SXID_FATAL_CLASS if _SXID_FATAL.match(event.get("message") or "") else SXID_UNMARKED_CLASS
    xid = event["xid"]
    if xid == 45 and event.get("caused_by") is not None:
        cls = XID_CLASSES.get(event["caused_by"])
        if cls and cls[0] in FATAL_CLASSES:
            return cls
        return ("application",) + XID_CLASSES[45][1:]
    if xid == 45:
        return ("application",) + XID_CLASSES[45][1:]
    if xid in _NVLINK5_XIDS and xid in XID_CLASSES:
        decoded = nvlink5_decode.decode(xid, event.get("message"))
        if decoded is not None:
            unit, intrinfo, status, action = decoded
            described = "%s, %s (0x%08x 0x%08x: %s by NVIDIA's decode)" % (
                XID_CLASSES[xid][2], unit, intrinfo, status, action)
            if action == "RESET_GPU":
                return ("reset", action, described)
            if action == "XID_154_EVAL":
                return ("application", action, described + "; a following Xid 154 judges the GPU")
            return ("application", action, described)
        if _NONFATAL.search(event.get("message") or ""):
            return ("application", "XID_154_EVAL",
                    XID_CLASSES[xid][2] + ", Nonfatal (a following Xid 154 judges the GPU)")
    if xid == 154:
        to = event.get("recovery_to")
        if to is None:
            # a line cut short (a pager's width, a log collector's limit) clears nothing
            return ("unknown", None, "GPU Recovery Action changed, to an action the line does not show")
        if to[0] == 0:
            return ("recovered", "XID_154", "GPU Recovery Action changed to None")
        return ("reboot" if "reboot" in to[1].lower() else "reset", to[1], "GPU Recovery Action: %s" % to[1])
    if xid == 63 and _PENDING_ACTIVATION.search(event.get("message") or ""):
        return XID_63_PENDING_CLASS
    cls = XID_CLASSES.get(xid, ("unknown", None, None))
    message = event.get("message") or ""
    drain = bool(_DRAIN_RESET_MARK.search(message))
    if cls[0] in ("application", "unknown") and (drain or _RESET_MARK.search(message)):
        return ("reset", "DRAIN_AND_RESET" if drain else "RESET_GPU", "%s; the driver marked the GPU for %s" % (
            cls[2] or "Xid %d" % xid, "drain and reset (D-RST: Yes)" if drain else "reset (RST: Yes)"))
    return cls


def xid_verdicts(events, acknowledgements=None):
    """Every Xid/fallen-off-the-bus event with ``class`` and ``dealt_with`` (None, ``"driver reload"``,
    ``"recovery action None"`` or ``"acknowledged (line N)"``).

    A driver load ("NVRM: loading NVIDIA UNIX ...", printed at the end of the module's init, after every GPU was
    probed: kernel-open/nvidia/nv.c) starts a new driver session. An event of an earlier session is dealt with by
    the reload; a probe-time "fallen off the bus" message belongs to the session its load line opens. An Xid 154
    that changes a GPU's recovery action to None deals with that GPU's earlier events. An acknowledgement deals
    with the event it names and the earlier ones it covers.
    """
    loads = [e["line"] for e in events if e["kind"] == "driver_load"]
    out = []
    xid79 = set()
    for position, event in enumerate(events):
        # an NVSwitch error: the driver prints "Fatal, Link NN ..." (NVSWITCH_REPORT_FATAL, intr_nvswitch.h) on the
        # first line of a fatal one, "Non-fatal, ..." otherwise, then Severity and Data lines of the same SXid
        if event["kind"] == "sxid" and _SXID_NO_FAULT.match(event.get("message") or ""):
            continue
        if event["kind"] not in ("xid", "off_bus", "gpu_lost", "sxid") + _NO_XID_KINDS:
            continue
        session = sum(1 for line in loads if line < event["line"])
        if event["phase"] == "probe":
            session += 1
        cls, action, description = _xid_class(event)
        if event["kind"] == "xid" and event["xid"] == 79:
            xid79.add((event["bus_id"], session))
        elif event["kind"] == "off_bus" and (event["bus_id"], session) in xid79:
            # "GPU has fallen off the bus." printed with the Xid 79 before it (osinit.c): the same event; it never
            # gives a finding of its own, but an acknowledgement may name its time.
            cls = "duplicate"
        elif event["kind"] == "gpu_lost" and any(s == session for _unused, s in xid79):
            # the checks that fail after an Xid 79 of this session (they name no GPU)
            cls = "duplicate"
        if event["kind"] == "off_bus":
            xid79.add((event["bus_id"], session))
        out.append(dict(event, position=position, session=session, **{
            "class": cls, "action": action, "description": description, "dealt_with": None}))
    explained = set(v["session"] for v in out if v["bus_id"] and v["class"] in FATAL_CLASSES)
    for v in out:
        if v["kind"] in _NODE_LEVEL_KINDS and v["session"] in explained:
            # what a fatal Xid of a named GPU in this driver load brings with it (before or after it): that Xid's
            # finding says it
            v["class"] = "duplicate"
    last_session = max([len(loads)] + [v["session"] for v in out])
    for v in out:
        if v["session"] < last_session:
            v["dealt_with"] = "driver reload"
    for v in out:
        if v["class"] == "recovered" and v["bus_id"]:
            for earlier in out:
                if earlier["bus_id"] == v["bus_id"] and earlier["position"] < v["position"] and \
                        earlier["dealt_with"] is None:
                    earlier["dealt_with"] = "recovery action None (Xid 154 at %s)" % (
                        v["stamp"] or "line %d" % v["line"])
    for ack in acknowledgements or []:
        anchors = [v["position"] for v in out if _ack_matches(ack, v) and v["stamp"] == ack["stamp"]]
        if not anchors:
            continue
        upto = max(anchors)
        for v in out:
            if v["position"] <= upto and _ack_matches(ack, v) and v["dealt_with"] is None:
                v["dealt_with"] = "acknowledged (line %d)" % ack["line"]
    return out


# What to do after the reset for an Xid whose cause may outlast it. Xid 64: a row remap that could not be recorded
# (the bank has no spare row left: "All reserved rows for bank are remapped"); NVIDIA's RMA policy for row remapping
# counts a remapping failure as a replacement criterion, the state the memory check reads as "Remapping Failure
# Occurred: Yes".
_XID_FOLLOW_UP = {
    64: "then read nvidia-smi -q -d ROW_REMAPPER: 'Remapping Failure Occurred: Yes' means the GPU is due for "
        "replacement (NVIDIA's RMA policy for row remapping): run the field diagnostic and open an RMA instead of "
        "acknowledging",
}


def _describe(v):
    if v["kind"] == "driver_crash":
        where = " at %s" % v["stamp"] if v["stamp"] else " (log line %d)" % v["line"]
        return "%s in %s [%s]%s: %s" % (DRIVER_CRASH_CLASSES[v["crash"]][2], v["function"], v["module"], where,
                                        v["message"][:120])
    what = {"xid": "Xid %s", "sxid": "NVSwitch SXid %s", "gpu_lost": "a GPU lost from the bus (no Xid, no bus id)%.0s",
            "reset_required": "a GPU reset required (no Xid, no bus id)%.0s",
            "uvm_fatal": "a UVM global fatal error (no Xid, no bus id)%.0s",
            "aer_failed": "an uncorrected PCIe error not recovered (AER, no Xid)%.0s",
            }.get(v["kind"], "fallen off the bus (no Xid)%.0s") % v["xid"]
    if v["kind"] == "xid" and v["xid"] == 45 and v.get("caused_by") is not None:
        what += " (caused by Xid %d)" % v["caused_by"]
    where = " at %s" % v["stamp"] if v["stamp"] else " (log line %d)" % v["line"]
    return "%s%s: %s" % (what, where, v["message"][:120])


# A warning of the xid check by the kind of its latest event: what to do, what acknowledging it takes, expected.
_WARNING_TEXTS = {
    "driver_crash": ("read the kernel log around it: the driver carried on, but a WARNING often comes before a crash "
                     "or a hang", "the GPUs work",
                     "no kernel WARNING in the NVIDIA driver since it was loaded (or each acknowledged)"),
    "sxid": ("look the SXid up in NVIDIA's Fabric Manager user guide (NVSwitch errors) and check that every GPU's "
             "Fabric State is Completed (nvidia-smi -q)", "the fabric is healthy",
             "no NVSwitch SXid of unknown severity since the driver was loaded (or each acknowledged)"),
    "xid": ("look the Xid up in NVIDIA's Xid catalogue", "the GPU is healthy",
            "no unknown Xid since the driver was loaded (or each acknowledged)"),
}


# What an Xid whose catalogue action asks a person to look calls for (a warning)
_XID_ACTION_TODO = {
    "CONTACT_SUPPORT": "collect nvidia-bug-report.sh and ask NVIDIA support (on a Volta or older GPU, look the Xid up "
                       "in NVIDIA's Xid table for those: the catalogue is for Ampere and newer)",
    "CHECK_MECHANICALS": "check the GPU's auxiliary power cables and its seating",
    "CHECK_UVM": "check the nvidia-uvm module and the job's use of unified memory",
    "UPDATE_SWFW": "update the driver, the vGPU software and the GPU's firmware",
    None: "read the kernel log around it",
}


def _catalogue_warning(v):
    """(todo, healthy, expected) of a warning about an Xid the catalogue has, with its row; None otherwise."""
    row = xid_catalog.CATALOG.get(v["xid"]) if v["kind"] == "xid" else None
    if row is None or (row[2] or None) != v["action"]:
        return None
    mnemonic, description, action = row
    return ("NVIDIA's Xid catalogue: %d %s (%s), immediate action %s: %s" % (
        v["xid"], mnemonic, description, action or "none", _XID_ACTION_TODO.get(action or None, _XID_ACTION_TODO[None])),
        "the GPU is healthy",
        "no Xid whose catalogue action asks for a check since the driver was loaded (or each acknowledged)")


def check_xid(kernel_events=None, acknowledgements=None, bus_to_index=None):
    """No fatal Xid since the driver was loaded, unless dealt with (:func:`xid_verdicts`).

    Classes from NVIDIA's Xid catalogue (``XID_CLASSES``): application Xids (13, 31, 43, 63, 94, ...) are the
    job's fault and never give a finding; "reset" and "reboot" Xids (48, 62, 64, 74, 79, 95, 109, 119, 120, 140,
    143, 154 with a recovery action other than None, ...) give one error per GPU naming the latest one and the
    acknowledgement line that would cover them all; an Xid whose catalogue action asks a person to look (the
    "Unused" rows' CONTACT_SUPPORT, CHECK_MECHANICALS, ...), or that the catalogue does not have, gives a warning.
    """
    if kernel_events is None:
        return _not_applied("xid", "the kernel log was not read")
    index_map = dict(bus_to_index or {})
    per_gpu = {}
    for v in xid_verdicts(kernel_events, acknowledgements):
        if v["dealt_with"] or v["class"] in ("application", "recovered", "duplicate"):
            continue
        per_gpu.setdefault(v["bus_id"], []).append(v)
    findings = []
    for bus, items in per_gpu.items():
        fatal = [v for v in items if v["class"] in FATAL_CLASSES]
        shown = fatal or items
        last = shown[-1]
        # The acknowledgement names the latest event and covers the earlier ones of its Xid, or of every Xid with "*"
        # where the GPU has several up to it (an Xid 79 or 62 and the Xid 154 the driver prints after it, an unknown
        # Xid before a fatal one); the finding shows the latest Xid line rather than the "fallen off the bus" line
        # that follows an Xid 79.
        numbers = {v["xid"] if v["kind"] in ("xid", "sxid") else "*" if v["kind"] in _NO_XID_KINDS else 79
                   for v in items if v["position"] <= last["position"]}
        ack = "%s %s %s" % (bus or ACK_NODE, numbers.pop() if len(numbers) == 1 else "*", last["stamp"] or "-")
        # the fault rather than what follows it: not the Xid 154 the driver prints after a fatal Xid (its recovery
        # action goes into the hint), not a retired page pending beside the DBE that caused it (an Xid 63)
        named = [v for v in shown if v["kind"] in ("xid", "sxid")]
        not_pending = [v for v in named if v["action"] != XID_63_PENDING_CLASS[1]]
        last = ([v for v in not_pending if v["xid"] != 154 or v["kind"] != "xid"] or not_pending or named or shown)[-1]
        recovery = [v for v in shown if v["kind"] == "xid" and v["xid"] == 154 and v["position"] > last["position"]]
        healthy = "the GPU is healthy"
        if fatal and last["kind"] == "sxid":
            todo = ("reboot the node: a fatal NVSwitch error needs the GPUs and NVSwitches reset (NVIDIA Fabric Manager "
                    "user guide: restart the system)")
            healthy = "the fabric is healthy (nvidia-smi -q: Fabric State Completed)"
        elif fatal and last["kind"] == "driver_crash":
            todo = ("reboot the node: the driver cannot be reloaded after a crash or a hang in it, and nvidia-smi and "
                    "new jobs may hang; if it happens again, collect nvidia-bug-report.sh for NVIDIA")
            healthy = "nvidia-smi and a CUDA job work (a crash in a part of the driver that jobs do not use)"
        elif fatal and last["kind"] == "aer_failed":
            todo = ("reboot the node: the nvidia driver does not recover a GPU from an uncorrected PCIe error; if it "
                    "comes back, check the slot, riser and cables, and the PCIe errors the kernel logged before it")
        elif fatal:
            reboot = any(v["class"] == "reboot" for v in fatal)
            action = last["action"] + ("; the driver's recovery action, Xid 154: %s" % recovery[-1]["action"]
                                       if recovery else "")
            todo = ("reboot the node (NVIDIA: %s)" % action) if reboot else \
                   ("reset the GPU (nvidia-smi -r) or reload the driver (NVIDIA: %s)" % action) if bus else \
                   ("reset the node's GPUs (nvidia-smi -r; the log names none) or reload the driver (NVIDIA: %s)"
                    % action)
            if last["kind"] == "xid" and last["xid"] in _XID_FOLLOW_UP:
                todo += "; " + _XID_FOLLOW_UP[last["xid"]]
        if fatal:
            severity = "error"
            expected = "no %s since the driver was loaded (or each acknowledged)" % (
                "fatal NVSwitch SXid" if last["kind"] == "sxid" else "crash or hang in the NVIDIA driver"
                if last["kind"] == "driver_crash" else "fatal Xid")
        else:
            severity = "warning"
            todo, healthy, expected = _catalogue_warning(last) or _WARNING_TEXTS.get(last["kind"], _WARNING_TEXTS["xid"])
        found = _describe(last) + ("" if len(shown) == 1 else " (and %d earlier)" % (len(shown) - 1))
        # an NVSwitch is not a GPU: named as such, so that no one looks for a GPU at its bus id
        device = "NVSwitch %s" % bus if last["kind"] == "sxid" else _label(bus, index_map)
        findings.append(finding(severity, "xid", device, expected, found,
                                "%s; then, if %s, acknowledge with the line '%s'" % (todo, healthy, ack)))
    return _result("xid", True, findings)


# ----------------------------------------------------------------------------------------------------
# all checks


def readiness_findings(smi_q=None, smi_failure=None, proc_version=None, lspci=None, kernel_events=None,
                       acknowledgements=None, fabric_manager=None, bus_to_index=None):
    """Run every readiness check on what was read from one node; any input may be None (not read).

    ``smi_q``: :func:`smi_q.parse_smi_q` (or ``parse_smi_table``) of a successful run; ``smi_failure``:
    :func:`classify_smi_failure` of the nvidia-smi run (None when it ran fine or was not run); ``proc_version``:
    :func:`parse_proc_driver_version`; ``lspci``: :func:`parse_lspci`; ``kernel_events``:
    :func:`parse_kernel_log` (of the log since boot); ``acknowledgements``: :func:`parse_acknowledgements`;
    ``fabric_manager``: :func:`parse_fabricmanager` (plus ``installed``/``version``); ``bus_to_index``: ``{bus
    id: nvidia-smi index}`` when the caller knows it (else taken from ``smi_q``).

    Returns ``{"findings": [...], "applied": [check, ...], "not_applied": {check: reason}}`` in ``CHECKS`` order.
    """
    index_map = dict(gpu_indexes(smi_q), **(bus_to_index or {}))
    nvml_version = (smi_q or {}).get("driver_version") or (smi_failure or {}).get("nvml_version")
    if not nvml_version:
        mismatch = [e for e in kernel_events or [] if e["kind"] == "api_mismatch"]
        nvml_version = mismatch[-1]["version"] if mismatch else None
    driver = (smi_q or {}).get("driver_version") or (proc_version or {}).get("version")
    results = [
        check_nvml(smi_failure, smi_q, proc_version, kernel_events),
        check_driver_version(proc_version, nvml_version),
        check_persistence(smi_q, index_map),
        check_gpu_count(lspci, smi_q, smi_failure, kernel_events, index_map),
        check_fabric(smi_q, lspci, fabric_manager, driver, index_map),
        check_memory(smi_q, index_map),
        check_clocks(smi_q, index_map),
        check_license(smi_q, index_map),
        check_xid(kernel_events, acknowledgements, index_map),
        check_errors(smi_q, index_map),
    ]
    return {
        "findings": [f for r in results if r["applies"] for f in r["findings"]],
        "applied": [r["check"] for r in results if r["applies"]],
        "not_applied": {r["check"]: r["reason"] for r in results if not r["applies"]},
    }
