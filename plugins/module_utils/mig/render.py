"""Explicit-mode gres.conf lines for MIG devices, from the node's live MIG facts.

What Slurm's own NVML AutoDetect records for a MIG device (gpu_nvml.c ``_handle_mig``, 22.05 to 26.05) is
the file list ``/dev/nvidia<gpu minor>,/dev/nvidia-caps/nvidia-cap<GI minor>,/dev/nvidia-caps/nvidia-cap<CI
minor>``: the parent GPU, the GPU instance's ``access`` capability and the compute instance's ``access``
capability. The two cap minors are read from ``/proc/driver/nvidia-caps/mig-minors`` under the keys
``gpu<minor>/gi<gi>/access`` and ``gpu<minor>/gi<gi>/ci<ci>/access``, where ``<minor>`` is the GPU's device
minor (``nvmlDeviceGetMinorNumber``, "Device Minor" in /proc/driver/nvidia/gpus/<bdf>/information), not its
nvidia-smi index. Without AutoDetect (Debian's slurmd has no NVML plugin) this module writes the same list
as ``MultipleFiles=``, so a job gets the three device nodes CUDA needs for that one MIG device.

GI and CI ids exist only once the layout is applied, so these lines are rendered on the node, after
``check_live_against_layout`` has confirmed that the live devices are the ones the inventory declares.

Type: the GPU-instance profile name, ``+me`` included (``Type=1g.10gb+me``; Slurm 22.05 accepts it in
gres.conf, slurm.conf and ``srun --gres=gpu:1g.10gb+me:1``, and matches types exactly, so a ``1g.10gb`` job
never lands on the ``+me`` instance). ``type_prefix`` gives ``<prefix>_<profile>`` for clusters that keep the
parent model in the type (``a100_1g.10gb``).

Pure Python: no Ansible imports. The mig-minors text is parsed by ``nvidia_smi.parse_mig_minors``; this
module takes its result, a dict keyed ``("gpu", gpu_minor, None, None)``, ``("gi", gpu_minor, gi, None)``,
``("ci", gpu_minor, gi, ci)``.
"""

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import mig_gres_types, normalize_profile

MIG_MINORS_PATH = "/proc/driver/nvidia-caps/mig-minors"
CAPS_DIR = "/dev/nvidia-caps"


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


def render_mig_gres_lines(node_name, gpu_minor, mig_devices, mig_minors, cores=None, type_prefix=None,
                          host=None):
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
        gres_type = "%s_%s" % (type_prefix, profile) if type_prefix else profile
        line = "NodeName=%s Name=gpu Type=%s MultipleFiles=%s" % (node_name, gres_type, ",".join(files))
        if cores:
            line += " Cores=%s" % cores
        lines.append(line)
    return lines


def render_mig_gres_block(node_name, gpus, mig_minors, type_prefix=None, host=None):
    """gres.conf text for every MIG GPU of a node, each device line preceded by a comment that names it.

    ``gpus``: dicts with ``index``, ``minor``, ``mig_devices`` and optionally ``cores`` and ``uuid``; GPUs are
    written in index order.
    """
    out = []
    for gpu in sorted(gpus, key=lambda g: _int(g["index"])):
        devices = gpu.get("mig_devices") or []
        lines = render_mig_gres_lines(node_name, gpu["minor"], devices, mig_minors, cores=gpu.get("cores"),
                                      type_prefix=type_prefix, host=host)
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
    declared = mig_gres_types(declared_profiles or [])
    live_names = []
    for dev in live_devices or []:
        name = dev if isinstance(dev, str) else _device_field(dev, "profile", "name")
        live_names.append(normalize_profile(name))
    live = mig_gres_types(live_names)
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
    hint += "; apply the layout (hpc.slurm_gres.mig_layout) before rendering gres.conf"
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
