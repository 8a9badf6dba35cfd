"""Explicit-mode gres.conf lines for MIG devices, from the node's live MIG facts.

What Slurm's own NVML AutoDetect records for a MIG device (gpu_nvml.c ``_handle_mig``, 22.05 to 26.05) is
the file list ``/dev/nvidia<gpu minor>,/dev/nvidia-caps/nvidia-cap<GI minor>,/dev/nvidia-caps/nvidia-cap<CI
minor>``: the parent GPU, the GPU instance's ``access`` capability and the compute instance's ``access``
capability. The two cap minors are read from ``/proc/driver/nvidia-caps/mig-minors`` under the keys
``gpu<minor>/gi<gi>/access`` and ``gpu<minor>/gi<gi>/ci<ci>/access``, where ``<minor>`` is the GPU's device
minor (``nvmlDeviceGetMinorNumber``, "Device Minor" in /proc/driver/nvidia/gpus/<bdf>/information), not its
nvidia-smi index. Without AutoDetect (Debian's slurmd has no NVML plugin) this module writes the same list
as ``MultipleFiles=``, so a job gets the three device nodes CUDA needs for that one MIG device.

GI and CI ids exist only once the layout is applied, so these lines are rendered from the node's live facts,
after :func:`live_mig_gpus` has confirmed that the live devices are the ones the inventory declares (a node
whose layout differs is refused with the way out, ``mig-reconfigure.yml --limit HOST``).

Type: ``gres_type.mig_gres_type`` of the GPU's type and the device's profile, the rule slurm.conf's ``Gres=``
is made with.

Pure Python: no Ansible imports. The mig-minors text is parsed by ``nvidia_smi.parse_mig_minors``; this
module takes its result, a dict keyed ``("gpu", gpu_minor, None, None)``, ``("gi", gpu_minor, gi, None)``,
``("ci", gpu_minor, gi, ci)``.
"""

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import normalize_profile, profile_counts

MIG_MINORS_PATH = "/proc/driver/nvidia-caps/mig-minors"
CAPS_DIR = "/dev/nvidia-caps"
# The way out for a node whose GPUs do not have the layout the inventory declares.
RECONFIGURE_HINT = ("apply the inventory's layout with the MIG runbook, `ansible-playbook "
                    "hpc.slurm_gres.mig_reconfigure --limit %s -i INVENTORY` (from a checkout `ansible-playbook "
                    "playbooks/mig-reconfigure.yml --limit %s -i INVENTORY`; it drains the node and waits for its "
                    "jobs), or "
                    "declare the live layout in the inventory; then deploy again")


def _device_field(device, *names):
    for name in names:
        if isinstance(device, dict) and device.get(name) is not None:
            return device[name]
    return None


def _int(value):
    if isinstance(value, bool):
        raise ValueError(value)
    return int(value)


def mig_device_files(gpu_minor, gi_id, ci_id, mig_minors, host=None):
    """``[/dev/nvidia<minor>, /dev/nvidia-caps/nvidia-cap<GI>, /dev/nvidia-caps/nvidia-cap<CI>]`` for one device.

    Raises GresError naming the missing mig-minors key when the table has no entry for it (a driver that
    does not know that GPU minor, or a mig-minors file that was not read from this node).
    """
    gi_key = ("gi", gpu_minor, gi_id, None)
    ci_key = ("ci", gpu_minor, gi_id, ci_id)
    problems = []
    for key, text in ((gi_key, "gpu%s/gi%s/access" % (gpu_minor, gi_id)),
                      (ci_key, "gpu%s/gi%s/ci%s/access" % (gpu_minor, gi_id, ci_id))):
        if key not in mig_minors:
            problems.append(Problem(
                host or "?", MIG_MINORS_PATH,
                "an entry `%s <minor>`" % text, "none (%d entries read)" % len(mig_minors),
                hint="the cap minors are read from the node's own mig-minors file, keyed by the GPU minor",
            ))
    if problems:
        raise GresError(problems)
    return [
        "/dev/nvidia%d" % gpu_minor,
        "%s/nvidia-cap%d" % (CAPS_DIR, mig_minors[gi_key]),
        "%s/nvidia-cap%d" % (CAPS_DIR, mig_minors[ci_key]),
    ]


def _devices_sorted(mig_devices, host, where):
    rows = []
    problems = []
    for pos, dev in enumerate(mig_devices):
        profile = normalize_profile(_device_field(dev, "profile", "name"))
        gi = _device_field(dev, "gi_id", "gpu_instance_id", "gi")
        ci = _device_field(dev, "ci_id", "compute_instance_id", "ci")
        try:
            gi_i, ci_i = _int(gi), _int(ci)
        except (TypeError, ValueError):
            problems.append(Problem(host, "%s[%d]" % (where, pos), "a MIG device with profile, gi_id and ci_id",
                                    repr(dev)))
            continue
        if not isinstance(profile, str) or not profile:
            problems.append(Problem(host, "%s[%d]" % (where, pos), "a MIG device with a profile name", repr(dev)))
            continue
        rows.append((gi_i, ci_i, profile, dev))
    if problems:
        raise GresError(problems)
    rows.sort(key=lambda r: (r[0], r[1]))
    return rows


def render_mig_gres_lines(node_name, gpu_minor, mig_devices, mig_minors, cores=None, gpu_type=None, host=None):
    """One ``NodeName=<node> Name=gpu Type=<profile> MultipleFiles=...`` line per MIG device of one GPU.

    ``mig_devices``: dicts with ``profile`` (``1g.10gb`` or ``MIG 1g.10gb``), ``gi_id`` and ``ci_id`` (other
    keys such as ``uuid`` are ignored). Lines are ordered by (GI id, CI id) so an unchanged layout renders
    byte-identical files. ``cores`` (a Slurm core range of the parent GPU) adds ``Cores=``.
    """
    host = host or node_name
    try:
        minor = _int(gpu_minor)
    except (TypeError, ValueError):
        raise GresError(Problem(host, "gpu minor", "the GPU's device minor (an integer)", repr(gpu_minor)))
    lines = []
    for gi, ci, profile, _dev in _devices_sorted(mig_devices, host, "gpu%d MIG devices" % minor):
        files = mig_device_files(minor, gi, ci, mig_minors, host=host)
        gres_type = mig_gres_type(gpu_type, profile)
        line = "NodeName=%s Name=gpu Type=%s MultipleFiles=%s" % (node_name, gres_type, ",".join(files))
        if cores:
            line += " Cores=%s" % cores
        lines.append(line)
    return lines


def render_mig_gres_block(node_name, gpus, mig_minors=None, host=None):
    """gres.conf text for every MIG GPU of a node, each device line preceded by a comment that names it.

    ``gpus``: dicts with ``index``, ``minor``, ``mig_devices`` and optionally ``type`` (the inventory's GPU type),
    ``cores``, ``uuid`` and ``mig_minors`` (used when ``mig_minors`` is not given); GPUs are written in index order.
    """
    out = []
    for gpu in sorted(gpus, key=lambda g: _int(g["index"])):
        devices = gpu.get("mig_devices") or []
        minors = mig_minors if mig_minors is not None else gpu.get("mig_minors") or {}
        lines = render_mig_gres_lines(node_name, gpu["minor"], devices, minors, cores=gpu.get("cores"),
                                      gpu_type=gpu.get("type"), host=host)
        rows = _devices_sorted(devices, host or node_name, "gpu%s MIG devices" % gpu["minor"])
        for (gi, ci, profile, dev), line in zip(rows, lines):
            uuid = _device_field(dev, "uuid")
            out.append("# GPU %s (minor %s) MIG %s GI %d CI %d%s" % (
                gpu["index"], gpu["minor"], profile, gi, ci, (" " + uuid) if uuid else ""))
            out.append(line)
    return "\n".join(out) + ("\n" if out else "")


def check_live_against_layout(declared_profiles, live_devices, host="?", field="mig", gpu=None):
    """Compare a GPU's declared layout with its live MIG devices as multisets of profile names.

    ``live_devices``: profile names or dicts with ``profile``. Returns a list of Problem (empty = same).
    Compute-instance splits (``1c.3g.40gb``) never match a GPU-instance profile: the layout module creates one
    default compute instance per GPU instance.
    """
    declared = profile_counts(declared_profiles or [])
    live_names = []
    for dev in live_devices or []:
        name = dev if isinstance(dev, str) else _device_field(dev, "profile", "name")
        live_names.append(normalize_profile(name))
    live = profile_counts(live_names)
    if declared == live:
        return []
    missing = {k: declared[k] - live.get(k, 0) for k in declared if declared[k] > live.get(k, 0)}
    extra = {k: live[k] - declared.get(k, 0) for k in live if live[k] > declared.get(k, 0)}
    parts = []
    if missing:
        parts.append("missing " + ", ".join("%d x %s" % (n, k) for k, n in missing.items()))
    if extra:
        parts.append("not declared " + ", ".join("%d x %s" % (n, k) for k, n in extra.items()))
    hint = "; ".join(parts)
    if any(k.count(".") > 1 and "c." in k.split("g.")[0] for k in extra):
        hint += "; compute-instance splits are not supported, each GPU instance gets one default CI"
    hint += "; " + RECONFIGURE_HINT % (host, host)
    where = "GPU %s " % gpu if gpu is not None else ""
    return [Problem(
        host, field,
        "%slive MIG devices %s" % (where, _fmt(declared)),
        _fmt(live) if live else "no MIG devices",
        hint=hint,
    )]


def _fmt(counts):
    if not counts:
        return "none"
    return ", ".join("%d x %s" % (n, k) for k, n in counts.items())


def _mig_minors_from_devices(minor, devices):
    """The part of the parsed mig-minors table these devices need, from the cap minors gpu_facts recorded."""
    table = {}
    for dev in devices:
        if dev.get("gi_id") is None or dev.get("ci_id") is None:
            continue
        if dev.get("gi_cap_minor") is not None:
            table[("gi", minor, dev["gi_id"], None)] = dev["gi_cap_minor"]
        if dev.get("ci_cap_minor") is not None:
            table[("ci", minor, dev["gi_id"], dev["ci_id"])] = dev["ci_cap_minor"]
    return table


def live_mig_gpus(hw_facts, node, host=None):
    """The node's MIG GPUs as they live, checked against the inventory's layouts.

    ``node``: the model's node (``host``, ``name``, ``gpus`` with ``index``, ``type``, ``minor``, ``cores``,
    ``mig``); ``hw_facts``: ``hpc_gres_hw`` (gpu_facts, gres_verify, mig_layout). Checks that each GPU with
    ``mig`` is in MIG mode with exactly those GPU instances (as a multiset), that every device has its GI and CI
    ids and both cap minors, and that the driver's device minor is the inventory's. Returns
    ``[{index, minor, type, cores, uuid, mig_devices, mig_minors}]`` in index order; raises GresError with every
    problem found.
    """
    host = host or node.get("host") or node.get("name")
    hw_by_index = {g["index"]: g for g in (hw_facts or {}).get("gpus") or []}
    problems = []
    out = []
    for gpu in node.get("gpus") or []:
        if not gpu.get("mig"):
            continue
        index = gpu["index"]
        field = "hpc_gres_gpus (index %d).mig" % index
        live = hw_by_index.get(index)
        if live is None:
            problems.append(Problem(host, field, "GPU %d on the node" % index,
                                    "nvidia-smi GPU indexes %s" % (sorted(hw_by_index) or "none")))
            continue
        if live.get("mig_mode") != "Enabled":
            problems.append(Problem(host, field, "GPU %d in MIG mode with %s" % (index, _fmt(profile_counts(
                gpu["mig"]))), "MIG mode %s" % live.get("mig_mode"), hint=RECONFIGURE_HINT % (host, host)))
            continue
        devices = live.get("mig_devices") or []
        found = check_live_against_layout(gpu["mig"], devices, host=host, field=field, gpu=index)
        if found:
            problems.extend(found)
            continue
        minor = live.get("minor")
        if live.get("minor_source") == "proc" and gpu.get("minor") is not None and int(gpu["minor"]) != int(minor):
            problems.append(Problem(host, "hpc_gres_gpus (index %d).minor" % index,
                                    "the device minor the driver reports, %s" % minor, gpu["minor"],
                                    hint="the MIG lines name /dev/nvidia<minor> and its caps by this minor"))
            continue
        for dev in devices:
            if dev.get("gi_id") is None or dev.get("ci_id") is None:
                problems.append(Problem(host, "GPU %d MIG device %s" % (index, dev.get("uuid")),
                                        "GI and CI ids (from nvidia-smi mig -lci)", "unknown",
                                        hint="see the gpu_facts warnings"))
            elif dev.get("gi_cap_minor") is None or dev.get("ci_cap_minor") is None:
                problems.append(Problem(
                    host, MIG_MINORS_PATH,
                    "entries gpu%s/gi%s/access and gpu%s/gi%s/ci%s/access" % (minor, dev["gi_id"], minor,
                                                                              dev["gi_id"], dev["ci_id"]),
                    "none", hint="GPU %d %s; the cap minors are read from the node's own mig-minors file"
                    % (index, dev.get("profile"))))
        out.append({"index": index, "minor": int(minor), "type": gpu.get("type"), "cores": gpu.get("cores"),
                    "uuid": live.get("uuid"), "mig_devices": devices,
                    "mig_minors": _mig_minors_from_devices(int(minor), devices)})
    if problems:
        raise GresError(problems)
    return out
