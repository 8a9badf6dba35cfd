"""MIG for the emulated nvidia-smi: mode changes, GPU/compute instance create and destroy, profile listings.

Installed into the ``nvidia-smi`` script by :func:`install` (one hook at its end). State lives in the profile
JSON the script loads (``gpu["mig_mode"]``, ``gpu["mig"]["gpu_instances"][].compute_instances``) and is
written back with ``machine.save()``, so every later call (``-L``, ``mig -lgi``, ``--query-gpu``) sees it.

Commands (output formats copied from the recordings in tests/fixtures/nvidia-smi/mig/):

* ``[-i IDS] -mig 0|1``: ``Enabled MIG Mode for GPU 00000000:36:00.0`` / ``All done.``. A GPU with
  ``"mig_mode_change": "pending"`` in its profile behaves like a VM or an A100 that needs a reset: the
  change stays pending (``mig.mode.pending``) and the warning real drivers print is shown.
* ``mig [-i IDS] -cgi P[:START][,P[:START]...] [-C]``: P is a profile id or name (``9``, ``3g.40gb``,
  ``MIG 3g.40gb``). Rules, as the driver enforces them: a GI takes a run of memory slices starting at one
  of its profile's allowed starts (the real ``-lgipp`` tables), no two GIs share a memory slice, the compute
  slices of all GIs fit the GPU, at most one ``+me`` GI. A violation prints ``Unable to create a GPU instance
  on GPU  0 using profile 20: Insufficient Resources`` / ``Failed to create GPU instances: Insufficient
  Resources``. A compute process on the GPU gives ``In use by another client`` (the recorded GH200 case).
* ``mig [-i IDS] -cci [CI profile ids] -gi IDS``; ``mig [-i] [-gi] [-ci] -dci``; ``mig [-i] [-gi] -dgi`` (a GI
  that still has CIs: ``In use by another client``, as real drivers answer).
* ``mig -lgip``, ``mig -lgipp`` from the model tables below; ``-lgi``, ``-lci`` and ``-L`` are the script's own.

GPU instance ids follow the driver's "swizzle id": a fixed id per memory span, 0 for the whole GPU, then
the halves, the quarters and the eighths in order (``id = 2**level - 1 + start / size``). That reproduces
every id in the driver-535 recordings: A30 ``1g.6gb`` at 0 and 1 -> GI 3 and 4, ``2g.12gb`` at 2 -> GI 2;
GH200 ``1g.24gb`` x3 -> GI 5, 3, 4; GH200 ``1g.12gb`` x7 -> GI 13, 11, 12, 7, 8, 9, 10; the MIG guide's
``-cgi 9,3g.20gb`` -> GI 2, 1. (The driver-580 A100 recording in a VM, GI 9 at slice 6, does not follow it; a
profile that replays it keeps its recorded ids.) Without ``:START`` the driver picks the start: the order
below reproduces those recordings (a 1-slice GI goes to 6, then 4, 5, 0, 1, 2, 3; 2 slices to 4, 0, 2, 6;
4 slices to 4, then 0); on the 4-slice A30 the lowest free start is taken. CI ids are the lowest free in
their GI.

Device nodes: real nvidia-smi runs ``nvidia-modprobe`` to create ``/dev/nvidia-caps/nvidia-cap<minor>`` for
every GI and CI it can see. Here, when ``$NVSMI_EMU_DEV_ROOT`` (or the profile's ``dev_root``) is set, every
call creates the missing nodes under ``<dev_root>/dev/nvidia-caps`` (never removes one, like the driver: a
minor belongs to a GI/CI id, not to an instance). Minors come from ``<root>/proc/driver/nvidia-caps/mig-minors``
(``$NVSMI_EMU_ROOT`` or the profile's ``sysfs_root``; the driver's full table when absent), keyed by the GPU's
``minor``; the major is the ``nvidia-caps`` line of ``<root>/proc/devices``, else 508 (see mknod-caps).
"""
import hashlib
import os
import re
import stat

import fake_sysfs

RC_INVALID_ARG = 2
RC_NOT_SUPPORTED = 3
RC_QUERY_FAILED = 6
RC_OTHER = 255  # nvidia-smi's "other error", what NVML errors such as Insufficient Resources map to
DEFAULT_CAPS_MAJOR = 508

# Placement geometry, from the real -lgipp recordings (a100-lgipp-mig-user-guide.txt, h100nvl-lgipp-colfax.txt,
# a30-lgipp.txt): kind -> (GI profile id, allowed starts, memory slices, compute slices).
EIGHT_SLICES = {
    "memory": 8, "compute": 7,
    "kinds": [("1g", 19, (0, 1, 2, 3, 4, 5, 6), 1, 1), ("1g+me", 20, (0, 1, 2, 3, 4, 5, 6), 1, 1),
              ("1g2", 15, (0, 2, 4, 6), 2, 1), ("2g", 14, (0, 2, 4), 2, 2), ("3g", 9, (0, 4), 4, 3),
              ("4g", 5, (0,), 4, 4), ("7g", 0, (0,), 8, 7)],
    # start preference when -cgi gives none (reproduces the GH200 and MIG-guide recordings, see above)
    "auto": {1: (6, 4, 5, 0, 1, 2, 3, 7), 2: (4, 0, 2, 6), 4: (4, 0), 8: (0,)},
}
FOUR_SLICES = {
    "memory": 4, "compute": 4,
    "kinds": [("1g", 14, (0, 1, 2, 3), 1, 1), ("1g+me", 21, (0, 1, 2, 3), 1, 1), ("2g", 5, (0, 2), 2, 2),
              ("2g+me", 6, (0, 2), 2, 2), ("4g", 0, (0,), 4, 4)],
    "auto": {},
}
# RTX PRO 6000 Blackwell: memory in 12 units (rtxpro6000se-610-lgipp-kubesimplify.txt); GI ids follow the swizzle rule
# there too (the recorded -lgi: 1g at 0/3/6/9 -> GI 3-6, 2g at 0 -> GI 1); without a start the lowest free one is
# taken (the recorded `-cgi 2g.48gb,1g.24gb,1g.24gb` -> 0, 6, 9). The media engines are shared: the GIs' DEC, ENC,
# JPEG and OFA together must fit the whole GPU's ("engine_budget").
TWELVE_UNITS = {
    "memory": 12, "compute": 4,
    "kinds": [("1g", 14, (0, 3, 6, 9), 3, 1), ("1g+me", 21, (0, 3, 6, 9), 3, 1), ("1g+gfx", 47, (0, 3, 6, 9), 3, 1),
              ("1g+me.all", 65, (0, 3, 6, 9), 3, 1), ("1g-me", 67, (0, 3, 6, 9), 3, 1), ("2g", 5, (0, 6), 6, 2),
              ("2g+gfx", 35, (0, 6), 6, 2), ("2g+me.all", 64, (0, 6), 6, 2), ("2g-me", 66, (0, 6), 6, 2),
              ("4g", 0, (0,), 12, 4), ("4g+gfx", 32, (0,), 12, 4)],
    "auto": {},
    "engine_budget": "4g",
}
# Default CI profile id by the GI's compute slices (NVML_COMPUTE_INSTANCE_PROFILE_*_SLICE); a 1g GI with two
# memory slices uses 1_SLICE_REV1 = 7 (recorded: GH200 `-cgi 15 -C` -> "1g.24gb (ID  7)").
CI_PROFILE_IDS = {1: 0, 2: 1, 3: 2, 4: 3, 7: 4, 8: 5, 6: 6}
CI_SLICES = {v: k for k, v in CI_PROFILE_IDS.items()}

# -lgip columns per kind: (memory GiB, SM, DEC, ENC, CE, JPEG, OFA).
# Recorded: A30 (a30-lgip-with-me-profiles.txt) and GH200 96GB (gh200-96gb-lgip-full-profile-list.txt).
A30_LGIP = {"1g": ("5.81", 14, 1, 0, 1, 0, 0), "1g+me": ("5.81", 14, 1, 0, 1, 1, 1),
            "2g": ("11.69", 28, 2, 0, 2, 0, 0), "2g+me": ("11.69", 28, 2, 0, 2, 1, 1),
            "4g": ("23.44", 56, 4, 0, 4, 1, 1)}
HOPPER_UNITS = {"1g": (16, 1, 0, 1, 1, 0), "1g+me": (16, 1, 0, 1, 1, 1), "1g2": (26, 1, 0, 1, 1, 0),
                "2g": (32, 2, 0, 2, 2, 0), "3g": (60, 3, 0, 3, 3, 0), "4g": (64, 4, 0, 4, 4, 0),
                "7g": (132, 7, 0, 8, 7, 1)}
# Recorded: rtxpro6000se-610-lgip-kubesimplify.txt (driver 610.43.02).
RTX_PRO_6000_LGIP = {"1g": ("23.62", 46, 1, 1, 1, 1, 0), "1g+me": ("23.62", 46, 1, 1, 1, 1, 1),
                     "1g+gfx": ("23.62", 46, 1, 1, 1, 1, 0), "1g+me.all": ("23.62", 46, 4, 4, 1, 4, 1),
                     "1g-me": ("23.62", 46, 0, 0, 1, 0, 0), "2g": ("47.38", 94, 2, 2, 2, 2, 0),
                     "2g+gfx": ("47.38", 94, 2, 2, 2, 2, 0), "2g+me.all": ("47.38", 94, 4, 4, 2, 4, 1),
                     "2g-me": ("47.38", 94, 0, 0, 2, 0, 0), "4g": ("95.12", 188, 4, 4, 4, 4, 1),
                     "4g+gfx": ("95.12", 188, 4, 4, 4, 4, 1)}
# Not recorded: A100 unit counts (SM 14 per slice, 98 for 7g, as NVIDIA's MIG guide tables give them).
AMPERE_UNITS = {"1g": (14, 0, 0, 1, 0, 0), "1g+me": (14, 1, 0, 1, 1, 1), "1g2": (14, 1, 0, 1, 0, 0),
                "2g": (28, 1, 0, 2, 0, 0), "3g": (42, 2, 0, 3, 0, 0), "4g": (56, 2, 0, 4, 0, 0),
                "7g": (98, 5, 0, 7, 1, 1)}


def _eight(names, gib, units):
    """names: 1g, 1g-double-memory, 2g, 3g, 4g, 7g profile names; gib: their memory column."""
    one, one2, two, three, four, seven = names
    by_kind = {"1g": one, "1g+me": one + "+me", "1g2": one2, "2g": two, "3g": three, "4g": four, "7g": seven}
    gib_by_kind = {"1g": gib[0], "1g+me": gib[0], "1g2": gib[1], "2g": gib[2], "3g": gib[3], "4g": gib[4],
                   "7g": gib[5]}
    return {"geometry": EIGHT_SLICES, "names": by_kind,
            "lgip": {k: (gib_by_kind[k],) + units[k] for k in by_kind}}


# Product name as nvidia-smi prints it (without "NVIDIA ") -> model. GH200 96GB numbers are the recording;
# the others keep the names of NVIDIA's MIG guide / mig-parted tables with memory scaled from them.
MODELS = {
    "A30": {"geometry": FOUR_SLICES,
            "names": {"1g": "1g.6gb", "1g+me": "1g.6gb+me", "2g": "2g.12gb", "2g+me": "2g.12gb+me", "4g": "4g.24gb"},
            "lgip": A30_LGIP},
    "GH200 480GB": _eight(("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
                          ("11.00", "23.00", "23.00", "46.50", "46.50", "93.00"), HOPPER_UNITS),
    "A100-SXM4-40GB": _eight(("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
                             ("4.75", "9.75", "9.75", "19.62", "19.62", "39.50"), AMPERE_UNITS),
    "A100-SXM4-80GB": _eight(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
                             ("9.75", "19.62", "19.62", "39.50", "39.50", "79.25"), AMPERE_UNITS),
    "H100 80GB HBM3": _eight(("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
                             ("9.75", "19.62", "19.62", "39.50", "39.50", "79.25"), HOPPER_UNITS),
    "H100 NVL": _eight(("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
                       ("10.75", "21.75", "21.75", "46.38", "46.38", "93.12"), HOPPER_UNITS),
    "H200": _eight(("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
                   ("16.00", "32.50", "32.50", "69.75", "69.75", "139.00"), HOPPER_UNITS),
    "RTX PRO 6000 Blackwell Server Edition": {
        "geometry": TWELVE_UNITS, "lgip": RTX_PRO_6000_LGIP,
        "names": {kind: {"1g": "1g.24gb", "2g": "2g.48gb", "4g": "4g.96gb"}[kind[:2]] + kind[2:]
                  for kind, _pid, _starts, _size, _compute in TWELVE_UNITS["kinds"]}},
}
ALIASES = {"A100-PCIE-40GB": "A100-SXM4-40GB", "A100 80GB PCIe": "A100-SXM4-80GB", "H100 PCIe": "H100 80GB HBM3",
           "GH200 120GB": "GH200 480GB", "H200 NVL": "H200", "H800 NVL": "H100 NVL"}


class MigError(Exception):
    def __init__(self, rc, stdout="", stderr=""):
        super(MigError, self).__init__(rc)
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


def model_of(gpu):
    """The model table of a GPU (by its profile ``mig_model`` or its product name), or None."""
    name = gpu.get("mig_model") or gpu["name"]
    if name.startswith("NVIDIA "):
        name = name[len("NVIDIA "):]
    name = ALIASES.get(name, name)
    return MODELS.get(name)


def profiles_of(model):
    """[{kind, name, id, starts, size, compute}] in -lgip order."""
    out = []
    for kind, pid, starts, size, compute in model["geometry"]["kinds"]:
        out.append({"kind": kind, "name": model["names"][kind], "id": pid, "starts": starts, "size": size,
                    "compute": compute})
    return out


def _find_profile(model, token):
    text = token.strip()
    if text.upper().startswith("MIG "):
        text = text[4:].strip()
    for prof in profiles_of(model):
        if text.isdigit() and int(text) == prof["id"]:
            return prof
        if text.lower() == prof["name"]:
            return prof
    return None


def swizzle_id(memory_slices, start, size):
    level = 0
    span = memory_slices
    while span > size:
        span //= 2
        level += 1
    return (2 ** level - 1) + start // size


def _gis(gpu):
    return gpu.setdefault("mig", {}).setdefault("gpu_instances", [])


def _occupied(gpu):
    used = set()
    for gi in _gis(gpu):
        start, size = gi["placement"]
        used.update(range(start, start + size))
    return used


def _compute_used(model, gpu):
    by_name = {p["name"]: p for p in profiles_of(model)}
    return sum(by_name[gi["profile"]]["compute"] if gi["profile"] in by_name else 0 for gi in _gis(gpu))


def _fits(model, gpu, prof, start):
    geo = model["geometry"]
    if start not in prof["starts"] or start + prof["size"] > geo["memory"]:
        return False
    if set(range(start, start + prof["size"])) & _occupied(gpu):
        return False
    if _compute_used(model, gpu) + prof["compute"] > geo["compute"]:
        return False
    if "+me" in prof["name"] and any("+me" in gi["profile"] for gi in _gis(gpu)):
        return False
    whole = model["geometry"].get("engine_budget")
    if whole:
        kinds = {p["name"]: p["kind"] for p in profiles_of(model)}
        used = [kinds.get(gi["profile"]) for gi in _gis(gpu)] + [prof["kind"]]
        for column in (2, 3, 5, 6):  # DEC, ENC, JPEG, OFA of the -lgip columns
            if sum(model["lgip"][k][column] for k in used if k) > model["lgip"][whole][column]:
                return False
    return True


def _gi_id(model, gpu, start, size):
    """The swizzle id; a profile replaying a recording with other ids gets the lowest free one on a clash."""
    taken = {gi["id"] for gi in _gis(gpu)}
    wanted = swizzle_id(model["geometry"]["memory"], start, size)
    if wanted not in taken:
        return wanted
    return min(i for i in range(len(taken) + 1) if i not in taken)


def _auto_start(model, gpu, prof):
    order = model["geometry"]["auto"].get(prof["size"]) or sorted(prof["starts"])
    for start in order:
        if _fits(model, gpu, prof, start):
            return start
    return None


def _busy(machine, gpu, uuids=None):
    """Compute processes on the GPU (or on the given MIG device UUIDs)."""
    if uuids is None:
        uuids = {gpu["uuid"]} | {machine.mig_uuid(gpu, gi, ci) for _n, gi, ci in machine.mig_devices(gpu)}
    return [p for p in machine.profile.get("processes", []) if p.get("gpu_uuid") in uuids]


def _new_ci_uuid(machine, gpu, gi_id, ci_id):
    serial = machine.profile.get("mig_serial", 0) + 1
    machine.profile["mig_serial"] = serial
    d = hashlib.sha1(("%s/%d/%d/%d" % (gpu["uuid"], gi_id, ci_id, serial)).encode()).hexdigest()
    return "MIG-%s-%s-5%s-%s-%s" % (d[:8], d[8:12], d[13:16], d[16:20], d[20:32])


def _ci_name(gi_profile, gi_compute, ci_compute):
    return gi_profile if ci_compute == gi_compute else "%dc.%s" % (ci_compute, gi_profile)


def _add_ci(machine, model, gpu, gi, ci_compute=None):
    by_name = {p["name"]: p for p in profiles_of(model)}
    gi_prof = by_name.get(gi["profile"])
    gi_compute = gi_prof["compute"] if gi_prof else 1
    ci_compute = ci_compute or gi_compute
    cis = gi.setdefault("compute_instances", [])
    used = set()
    for ci in cis:
        start, size = ci.get("placement", [0, gi_compute])
        used.update(range(start, start + size))
    start = None
    for s in range(0, gi_compute - ci_compute + 1, ci_compute):
        if not set(range(s, s + ci_compute)) & used:
            start = s
            break
    if ci_compute > gi_compute or start is None:
        return None
    ids = {ci["id"] for ci in cis}
    ci_id = min(i for i in range(len(cis) + 1) if i not in ids)
    if ci_compute == gi_compute and gi_prof is not None and gi_prof["kind"] == "1g2":
        profile_id = 7
    else:
        profile_id = CI_PROFILE_IDS.get(ci_compute, 0)
    ci = {"id": ci_id, "profile": _ci_name(gi["profile"], gi_compute, ci_compute), "profile_id": profile_id,
          "placement": [start, ci_compute], "uuid": _new_ci_uuid(machine, gpu, gi["id"], ci_id)}
    cis.append(ci)
    return ci


# ----------------------------------------------------------------------------------------------------
# commands

def _selected_mig_gpus(machine, ids, need_enabled=True):
    selected = [(i, g) for i, g in machine.select(ids) if machine.state(g) == "ok"]
    capable = [(i, g) for i, g in selected if g.get("mig_mode") is not None and model_of(g) is not None]
    if not capable:
        raise MigError(RC_QUERY_FAILED, "No MIG-supported devices found.\n")
    if not need_enabled:
        return capable
    enabled = [(i, g) for i, g in capable if g.get("mig_mode") == "Enabled"]
    if not enabled:
        raise MigError(RC_QUERY_FAILED, "No MIG-enabled devices found.\n")
    return enabled


def set_mig_mode(machine, value, ids):
    """``-mig 0|1`` (top-level action)."""
    if value not in ("0", "1"):
        raise MigError(RC_INVALID_ARG, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
    enable = value == "1"
    selected = [(i, g) for i, g in machine.select(ids) if machine.state(g) == "ok"]
    out = []
    rc = 0
    for index, gpu in selected:
        bus = gpu["pci_bus_id"]
        word = "enable" if enable else "disable"
        if gpu.get("mig_mode") is None or model_of(gpu) is None:
            out.append("Unable to %s MIG Mode for GPU %s: Not Supported" % (word, bus))
            rc = RC_NOT_SUPPORTED
            continue
        if _busy(machine, gpu) or (not enable and _gis(gpu)):
            out.append("Unable to %s MIG Mode for GPU %s: In use by another client" % (word, bus))
            rc = RC_OTHER
            continue
        state = "Enabled" if enable else "Disabled"
        if gpu.get("mig_mode_change") == "pending":
            gpu["mig_mode_pending"] = state
            if gpu.get("mig_mode") != state:
                out.append("Warning: MIG mode is in pending %s state for GPU %s:Not Supported" % (word, bus))
                out.append("Reboot the system or try nvidia-smi --gpu-reset to make MIG mode effective on GPU %s"
                           % bus)
                continue
        else:
            gpu["mig_mode"] = state
            gpu.pop("mig_mode_pending", None)
            if not enable:
                gpu.pop("mig", None)
        out.append("%s MIG Mode for GPU %s" % ("Enabled" if enable else "Disabled", bus))
    machine.save()
    out.append("All done.")
    text = "".join(line + "\n" for line in out)
    if rc:
        raise MigError(rc, text)
    return text


def create_gi(machine, args):
    spec = args.get("-cgi")
    if not spec:
        raise MigError(RC_INVALID_ARG, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")
    out = []
    for index, gpu in _selected_mig_gpus(machine, args.get("-i")):
        model = model_of(gpu)
        for token in spec.split(","):
            name, _sep, start_text = token.partition(":")
            prof = _find_profile(model, name)
            if prof is None:
                machine.save()
                raise MigError(RC_INVALID_ARG, "".join(out) + "Unable to create a GPU instance on GPU %2d using "
                               "profile %s: Invalid Argument\nFailed to create GPU instances: Invalid Argument\n"
                               % (index, name.strip()))
            if _busy(machine, gpu):
                machine.save()
                raise MigError(RC_OTHER, "".join(out) + "Unable to create a GPU instance on GPU %2d using profile "
                               "%s: In use by another client\nFailed to create GPU instances: In use by another "
                               "client\n" % (index, name.strip()))
            if start_text:
                start = int(start_text) if start_text.isdigit() and _fits(model, gpu, prof, int(start_text)) else None
            else:
                start = _auto_start(model, gpu, prof)
            if start is None:
                machine.save()
                raise MigError(RC_OTHER, "".join(out) + "Unable to create a GPU instance on GPU %2d using profile "
                               "%s: Insufficient Resources\nFailed to create GPU instances: Insufficient Resources\n"
                               % (index, name.strip()))
            gi = {"id": _gi_id(model, gpu, start, prof["size"]), "profile": prof["name"],
                  "profile_id": prof["id"], "placement": [start, prof["size"]], "compute_instances": []}
            _gis(gpu).append(gi)
            # -lgi lists GIs by profile id, largest id first, then by GI id (the A30 and A100 recordings)
            _gis(gpu).sort(key=lambda g: (-g["profile_id"], g["id"]))
            out.append("Successfully created GPU instance ID %2d on GPU %2d using profile MIG %s (ID %2d)\n"
                       % (gi["id"], index, prof["name"], prof["id"]))
            if args.get("-C"):
                ci = _add_ci(machine, model, gpu, gi)
                out.append("Successfully created compute instance ID %2d on GPU %2d GPU instance ID %2d using "
                           "profile MIG %s (ID %2d)\n" % (ci["id"], index, gi["id"], ci["profile"], ci["profile_id"]))
    machine.save()
    return "".join(out)


def _ids(value):
    if value is None:
        return None
    try:
        return {int(v) for v in value.split(",") if v.strip()}
    except ValueError:
        raise MigError(RC_INVALID_ARG, "Invalid combination of input arguments. Please run 'nvidia-smi -h' for help.\n")


def create_ci(machine, args):
    wanted_gi = _ids(args.get("-gi"))
    spec = args.get("-cci") or ""
    out = []
    for index, gpu in _selected_mig_gpus(machine, args.get("-i")):
        model = model_of(gpu)
        targets = [gi for gi in sorted(_gis(gpu), key=lambda g: g["id"]) if wanted_gi is None or gi["id"] in wanted_gi]
        if not targets:
            raise MigError(RC_QUERY_FAILED, "No GPU instances found: Not Found\n")
        for gi in targets:
            tokens = [t for t in spec.split(",") if t.strip()] or [None]
            for token in tokens:
                compute = None
                if token is not None:
                    text = token.strip().lower()
                    if text.startswith("mig "):
                        text = text[4:].strip()
                    split = re.match(r"^(\d+)c\.(.+)$", text)
                    if text.isdigit() and int(text) in CI_SLICES:
                        compute = CI_SLICES[int(text)]
                    elif split and split.group(2) == gi["profile"]:
                        compute = int(split.group(1))
                    elif text != gi["profile"]:
                        raise MigError(RC_INVALID_ARG, "Unable to create a compute instance on GPU %2d GPU instance "
                                       "ID %2d using profile %s: Invalid Argument\n" % (index, gi["id"], text))
                ci = _add_ci(machine, model, gpu, gi, compute)
                if ci is None:
                    machine.save()
                    raise MigError(RC_OTHER, "".join(out) + "Unable to create a compute instance on GPU %2d GPU "
                                   "instance ID %2d using profile %s: Insufficient Resources\nFailed to create compute "
                                   "instances: Insufficient Resources\n" % (index, gi["id"], token))
                out.append("Successfully created compute instance ID %2d on GPU %2d GPU instance ID %2d using "
                           "profile MIG %s (ID %2d)\n" % (ci["id"], index, gi["id"], ci["profile"], ci["profile_id"]))
    machine.save()
    return "".join(out)


def destroy_ci(machine, args):
    wanted_gi = _ids(args.get("-gi"))
    wanted_ci = _ids(args.get("-ci"))
    out = []
    failed = None
    for index, gpu in _selected_mig_gpus(machine, args.get("-i")):
        for gi in sorted(_gis(gpu), key=lambda g: g["id"]):
            if wanted_gi is not None and gi["id"] not in wanted_gi:
                continue
            for ci in sorted(gi.get("compute_instances", []), key=lambda c: c["id"]):
                if wanted_ci is not None and ci["id"] not in wanted_ci:
                    continue
                if _busy(machine, gpu, {machine.mig_uuid(gpu, gi, ci)}):
                    out.append("Unable to destroy compute instance ID %2d from GPU %2d GPU instance ID %2d: In use "
                               "by another client\n" % (ci["id"], index, gi["id"]))
                    failed = "In use by another client"
                    continue
                gi["compute_instances"].remove(ci)
                out.append("Successfully destroyed compute instance ID %2d from GPU %2d GPU instance ID %2d\n"
                           % (ci["id"], index, gi["id"]))
    machine.save()
    if not out:
        raise MigError(RC_QUERY_FAILED, "Failed to destroy compute instances: Not Found\n")
    if failed:
        raise MigError(RC_OTHER, "".join(out) + "Failed to destroy compute instances: %s\n" % failed)
    return "".join(out)


def destroy_gi(machine, args):
    wanted_gi = _ids(args.get("-gi"))
    out = []
    failed = None
    for index, gpu in _selected_mig_gpus(machine, args.get("-i")):
        for gi in sorted(_gis(gpu), key=lambda g: g["id"]):
            if wanted_gi is not None and gi["id"] not in wanted_gi:
                continue
            if gi.get("compute_instances"):
                out.append("Unable to destroy GPU instance ID %2d from GPU %2d: In use by another client\n"
                           % (gi["id"], index))
                failed = "In use by another client"
                continue
            _gis(gpu).remove(gi)
            out.append("Successfully destroyed GPU instance ID %2d from GPU %2d\n" % (gi["id"], index))
    machine.save()
    if not out:
        raise MigError(RC_QUERY_FAILED, "Failed to destroy GPU instances: Not Found\n")
    if failed:
        raise MigError(RC_OTHER, "".join(out) + "Failed to destroy GPU instances: %s\n" % failed)
    return "".join(out)


LGIP_RULE = "+-----------------------------------------------------------------------------+"
LGIP_HEAD = [
    "| GPU instance profiles:                                                      |",
    "| GPU   Name             ID    Instances   Memory     P2P    SM    DEC   ENC  |",
    "|                              Free/Total   GiB              CE    JPEG  OFA  |",
    "|=============================================================================|",
]


def _free(model, gpu, prof):
    """How many more GIs of this profile fit now (``Free`` of -lgip)."""
    placed = []
    trial = {"mig": {"gpu_instances": [dict(gi) for gi in _gis(gpu)]}}
    while True:
        start = _auto_start(model, trial, prof)
        if start is None:
            break
        trial["mig"]["gpu_instances"].append({"id": swizzle_id(model["geometry"]["memory"], start, prof["size"]),
                                              "profile": prof["name"], "placement": [start, prof["size"]]})
        placed.append(start)
    return len(placed)


def list_gi_profiles(machine, args):
    # with MIG disabled too (-lgip and -lgipp, exit status 0): a real H200, driver 580.159.04
    # (tests/fixtures/nvidia-smi/mig/h200-141gb-lgip-mig-disabled-580.txt, ...-lgipp-...)
    lines = [LGIP_RULE] + LGIP_HEAD
    for index, gpu in _selected_mig_gpus(machine, args.get("-i"), need_enabled=False):
        model = model_of(gpu)
        for prof in profiles_of(model):
            gib, sm, dec, enc, ce, jpeg, ofa = model["lgip"][prof["kind"]]
            total = 1 if "+me" in prof["name"] else len(prof["starts"])
            lines.append("|%4d  MIG %-13s%3d%8s        %-11s%-7s%-4s%4d%6d   |"
                         % (index, prof["name"], prof["id"], "%d/%d" % (_free(model, gpu, prof), total), gib, "No",
                            sm, dec, enc))
            lines.append("|%s%2d%6d%6d   |" % (" " * 60, ce, jpeg, ofa))
            lines.append(LGIP_RULE)
    return "".join(line + "\n" for line in lines)


def list_gi_placements(machine, args):
    lines = []
    for index, gpu in _selected_mig_gpus(machine, args.get("-i"), need_enabled=False):
        for prof in profiles_of(model_of(gpu)):
            word = "Placements:" if len(prof["starts"]) > 1 else "Placement :"
            starts = ",".join(str(s) for s in prof["starts"])
            lines.append("GPU %2d Profile ID %2d %s {%s}:%d" % (index, prof["id"], word, starts, prof["size"]))
    return "".join(line + "\n" for line in lines)


# ----------------------------------------------------------------------------------------------------
# parsing `nvidia-smi mig ...` and the hook

VALUE_OPTIONS = {"-i": "-i", "--id": "-i", "-gi": "-gi", "--gpu-instance-id": "-gi", "-ci": "-ci",
                 "--compute-instance-id": "-ci", "-cgi": "-cgi", "--create-gpu-instance": "-cgi"}
OPTIONAL_VALUE = {"-cci": "-cci", "--create-compute-instance": "-cci"}
FLAGS = {"-C": "-C", "--default-compute-instance": "-C"}
ACTIONS = {"-cgi": create_gi, "-cci": create_ci, "-dci": destroy_ci, "--destroy-compute-instance": destroy_ci,
           "-dgi": destroy_gi, "--destroy-gpu-instance": destroy_gi, "-lgip": list_gi_profiles,
           "--list-gpu-instance-profiles": list_gi_profiles, "-lgipp": list_gi_placements,
           "--list-gpu-instance-possible-placements": list_gi_placements}


def run_mig(smi, machine, argv):
    """``nvidia-smi mig ...``: the script's listings plus the commands above."""
    args = {}
    action = None
    invalid = smi.INVALID_ARGS + "\n"
    i = 0
    while i < len(argv):
        arg = argv[i]
        key, eq, value = arg.partition("=")
        if key in VALUE_OPTIONS:
            name = VALUE_OPTIONS[key]
            if not eq:
                if i + 1 >= len(argv):
                    raise MigError(RC_INVALID_ARG, invalid)
                value = argv[i + 1]
                i += 1
            args[name] = value
            if name == "-cgi":
                action = action or ("-cgi", create_gi)
        elif key in OPTIONAL_VALUE:
            action = action or ("-cci", create_ci)
            if eq:
                args["-cci"] = value
            elif i + 1 < len(argv) and not argv[i + 1].startswith("-"):
                args["-cci"] = argv[i + 1]
                i += 1
        elif arg in FLAGS:
            args[FLAGS[arg]] = True
        elif arg in ACTIONS and action is None:
            action = (arg, ACTIONS[arg])
        elif arg in smi.MIG_ACTIONS and action is None:
            action = (arg, smi.MIG_ACTIONS[arg])
        else:
            raise MigError(RC_INVALID_ARG, invalid)
        i += 1
    if action is None:
        raise MigError(RC_INVALID_ARG, invalid)
    if args.get("-C") and action[0] != "-cgi":
        raise MigError(RC_INVALID_ARG, invalid)
    return action[1](machine, args)


def install(smi):
    """Hook MIG into the nvidia-smi script module ``smi`` (called once at its end)."""
    original_run = smi.run

    def wrapped(fn):
        def call(*a):
            try:
                return fn(*a)
            except MigError as exc:
                raise smi.Exit(exc.rc, exc.stdout, exc.stderr)
        return call

    smi.run_mig = wrapped(lambda machine, argv: run_mig(smi, machine, argv))
    smi.TOP_LEVEL_ACTIONS["-mig"] = wrapped(set_mig_mode)
    smi.TOP_LEVEL_ACTIONS["--multi-instance-gpu"] = smi.TOP_LEVEL_ACTIONS["-mig"]

    def run_and_make_nodes(argv, machine):
        try:
            return original_run(argv, machine)
        finally:
            make_cap_nodes(machine.profile, base=machine.base)

    smi.run = run_and_make_nodes


# ----------------------------------------------------------------------------------------------------
# /dev/nvidia-caps nodes

def _root(profile, base, key, env):
    value = os.environ.get(env) or profile.get(key)
    if not value:
        return None
    return value if os.path.isabs(value) else os.path.join(base or ".", value)


def caps_major(root):
    try:
        with open(os.path.join(root, "proc", "devices")) as handle:
            for line in handle:
                parts = line.split()
                if len(parts) == 2 and parts[1] == "nvidia-caps" and parts[0].isdigit():
                    return int(parts[0])
    except (IOError, OSError):
        pass
    return DEFAULT_CAPS_MAJOR


def mig_minors(root):
    text = None
    if root:
        try:
            with open(os.path.join(root, "proc", "driver", "nvidia-caps", "mig-minors")) as handle:
                text = handle.read()
        except (IOError, OSError):
            text = None
    if text is None:
        text = fake_sysfs.mig_minors_text()
    table = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2 and parts[1].isdigit():
            table[parts[0]] = int(parts[1])
    return table


def live_caps(profile):
    """[(key, gpu minor, gi, ci or None)] for every GI and CI of the MIG-enabled GPUs in the profile."""
    gpus = sorted(profile.get("gpus", []), key=lambda g: g["pci_bus_id"])
    out = []
    for n, gpu in enumerate(gpus):
        if gpu.get("mig_mode") != "Enabled":
            continue
        minor = gpu.get("minor", n)
        for gi in (gpu.get("mig") or {}).get("gpu_instances", []):
            out.append(("gpu%d/gi%d/access" % (minor, gi["id"]), minor, gi["id"], None))
            for ci in gi.get("compute_instances", []):
                out.append(("gpu%d/gi%d/ci%d/access" % (minor, gi["id"], ci["id"]), minor, gi["id"], ci["id"]))
    return out


def make_cap_nodes(profile, base=None, dev_root=None, root=None, major=None, strict=False):
    """Create ``<dev_root>/dev/nvidia-caps/nvidia-cap<minor>`` for every live GI and CI; returns the paths made.

    Does nothing without a dev root. ``strict``: mknod errors (no CAP_MKNOD) raise (mknod-caps); inside the
    emulated nvidia-smi they are ignored, as a failing nvidia-modprobe is by the real one.
    """
    dev_root = dev_root or _root(profile, base, "dev_root", "NVSMI_EMU_DEV_ROOT")
    if not dev_root:
        return []
    root = root or _root(profile, base, "sysfs_root", "NVSMI_EMU_ROOT")
    major = major or caps_major(root or "/nonexistent")
    minors = mig_minors(root)
    made = []
    caps_dir = os.path.join(dev_root, "dev", "nvidia-caps")
    for key, _minor, _gi, _ci in live_caps(profile):
        if key not in minors:
            continue
        path = os.path.join(caps_dir, "nvidia-cap%d" % minors[key])
        if os.path.exists(path):
            continue
        try:
            os.makedirs(caps_dir, exist_ok=True)
            os.mknod(path, 0o444 | stat.S_IFCHR, os.makedev(major, minors[key]))
            made.append(path)
        except OSError:
            if strict:
                raise
    return made
