"""Complete a node's gres.conf with its MIG lines, from the node's live facts (pure logic).

The render step writes every node's gres.conf from the inventory, but a MIG GPU's lines name
``/dev/nvidia-caps/nvidia-cap<N>`` files whose minors depend on the GI and CI ids the driver gave out when the
layout was applied. So the render step leaves one comment per MIG GPU::

    # MIG: GPU 0 (a100, /dev/nvidia0) a100_3g.40gb,...: MultipleFiles lines are completed on the node

and :func:`complete_gres_conf` replaces each of those comments, on the node, with the GPU's device lines
(``mig_render.render_mig_gres_block``), after checking that:

* the GPU is in MIG mode and its live GPU instances are the inventory's ``mig`` list (as multisets,
  ``mig_render.check_live_against_layout``);
* every live device has its GI and CI ids and both cap minors (read by ``gpu_facts`` from
  ``/proc/driver/nvidia-caps/mig-minors``);
* the GPU's device minor the driver reports (``/proc/driver/nvidia/gpus/<bdf>/information``) is the one the
  inventory declares;
* with ``slurm_conf``, the completed file gives this node exactly the counts slurm.conf declares.

Any failure raises GresError naming the host, the field, expected and found; nothing is returned then.
The GRES type of each line is what ``model.mig_gres_type`` (the function slurm.conf's ``Gres=`` is made with)
gives for the GPU's type and the profile, so the two files always agree.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.render import (
    check_live_against_layout,
    render_mig_gres_block,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    consistency_problems,
    parse_gres_conf,
)

MIG_COMMENT_RE = re.compile(r"^# MIG: GPU (\d+) .*completed on the node\s*$")


def type_prefix(gpu_type, profile):
    """The prefix ``mig_gres_type`` puts before a profile (None when the type is the bare profile)."""
    full = mig_gres_type(gpu_type, profile)
    if full == profile:
        return None
    if full.endswith("_" + profile):
        return full[:-len(profile) - 1]
    raise ValueError("mig_gres_type(%r, %r) = %r is neither the profile nor <prefix>_<profile>"
                     % (gpu_type, profile, full))


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


def _autodetect_nvml(text, node_name):
    try:
        records = parse_gres_conf(text, node_name)
    except ConfSyntaxError:
        return False
    return any((r.get("autodetect") or "").lower() == "nvml" for r in records)


def live_mig_gpus(hw_facts, node_spec, host=None):
    """Check the live MIG GPUs against the node spec; returns ``[{index, minor, cores, mig_devices, type}]``.

    Raises GresError with every problem found.
    """
    host = host or node_spec.get("host") or node_spec.get("name")
    hw_by_index = {g["index"]: g for g in (hw_facts or {}).get("gpus") or []}
    problems = []
    out = []
    for gpu in node_spec.get("gpus") or []:
        if not gpu.get("mig"):
            continue
        index = gpu["index"]
        field = "slurm_gres_gpus (index %d).mig" % index
        live = hw_by_index.get(index)
        if live is None:
            problems.append(Problem(host, field, "GPU %d on the node" % index,
                                    "nvidia-smi GPU indexes %s" % (sorted(hw_by_index) or "none")))
            continue
        if live.get("mig_mode") != "Enabled":
            problems.append(Problem(host, field, "GPU %d in MIG mode" % index,
                                    "MIG mode %s" % live.get("mig_mode"),
                                    hint="apply the layout first (hpc.slurm_gres.mig_layout)"))
            continue
        devices = live.get("mig_devices") or []
        found = check_live_against_layout(gpu["mig"], devices, host=host, field=field, gpu=index)
        if found:
            problems.extend(found)
            continue
        minor = live.get("minor")
        if live.get("minor_source") == "proc" and gpu.get("minor") is not None and int(gpu["minor"]) != int(minor):
            problems.append(Problem(host, "slurm_gres_gpus (index %d).minor" % index,
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
                    host, "/proc/driver/nvidia-caps/mig-minors",
                    "entries gpu%s/gi%s/access and gpu%s/gi%s/ci%s/access" % (minor, dev["gi_id"], minor,
                                                                              dev["gi_id"], dev["ci_id"]),
                    "none", hint="GPU %d %s; the cap minors are read from the node's own mig-minors file"
                    % (index, dev.get("profile"))))
        out.append({"index": index, "minor": int(minor), "cores": gpu.get("cores"), "uuid": live.get("uuid"),
                    "mig_devices": devices, "type": gpu.get("type")})
    if problems:
        raise GresError(problems)
    return out


def complete_gres_conf(base_text, hw_facts, node_spec, slurm_conf=None):
    """``base_text`` with each MIG comment replaced by that GPU's device lines (see the module docstring)."""
    node_name = node_spec["name"]
    host = node_spec.get("host") or node_name
    gpus = live_mig_gpus(hw_facts, node_spec, host)
    deferred = {}
    if gpus and _autodetect_nvml(base_text, node_name):
        # slurmd's NVML plugin finds the MIG devices itself (the live check above still ran), so the MIG
        # counts are not in the file; slurm.conf must still declare exactly the inventory's.
        text = base_text
        for gpu in node_spec.get("gpus") or []:
            for profile in gpu.get("mig") or ():
                key = ("gpu:" + mig_gres_type(gpu.get("type"), profile)).lower()
                deferred[key] = deferred.get(key, 0) + 1
    else:
        blocks = {}
        for gpu in gpus:
            prefixes = {type_prefix(gpu["type"], d["profile"]) for d in gpu["mig_devices"]}
            if len(prefixes) != 1:
                raise GresError(Problem(host, "GPU %d type" % gpu["index"], "one type prefix for every profile",
                                        sorted(str(p) for p in prefixes)))
            minors = _mig_minors_from_devices(gpu["minor"], gpu["mig_devices"])
            blocks[gpu["index"]] = render_mig_gres_block(node_name, [gpu], minors, type_prefix=prefixes.pop(),
                                                         host=host)
        lines = []
        for line in base_text.splitlines(True):
            m = MIG_COMMENT_RE.match(line)
            if m and int(m.group(1)) in blocks:
                lines.append(line if line.endswith("\n") else line + "\n")
                lines.append(blocks.pop(int(m.group(1))))
            else:
                lines.append(line)
        if blocks:
            raise GresError([Problem(host, "gres.conf", "the render step's comment `# MIG: GPU %d ... completed on "
                                     "the node`" % index, "no such line",
                                     hint="render gres.conf from the same inventory (roles/slurm_gres_render)")
                             for index in sorted(blocks)])
        text = "".join(lines)
    if slurm_conf is not None:
        problems = [p for p in consistency_problems(slurm_conf, {node_name: text}, {node_name: deferred})
                    if p.host in (node_name, "(all)")]
        if problems:
            raise GresError(problems)
    return text


def live_layouts(plan):
    """``{gpu index: [profiles] or None}`` from a ``mig_layout`` result's ``plan`` (what the GPUs have now).

    A GPU in MIG mode lists its GPU-instance profiles (sorted by name, one entry per instance); MIG off, or a
    GPU that cannot do MIG, gives None.
    """
    out = {}
    for gpu in plan or ():
        mode = str(gpu.get("mig_mode") or "")
        counts = gpu.get("current") or {}
        if mode == "Enabled" and counts:
            out[int(gpu["index"])] = [p for p in sorted(counts) for _copy in range(int(counts[p]))]
        else:
            out[int(gpu["index"])] = None
    return out


def step_model(model, host, live):
    """The cluster model for one step of a serial MIG reconfiguration.

    ``host`` (an inventory host) keeps the layout the inventory declares; every other host named in ``live``
    (``{host: {gpu index: [profiles] or None}}``, see :func:`live_layouts`) gets the layout its GPUs have now,
    so the slurm.conf of this step changes the Gres of ``host`` only. Hosts not in ``live`` keep the inventory's
    layout. Returns a new model; the input is not changed.
    """
    nodes = []
    for node in model["nodes"]:
        have = live.get(node["host"]) if node["host"] != host else None
        if have is None:
            nodes.append(node)
            continue
        have = {int(k): v for k, v in have.items()}
        gpus = []
        for gpu in node["gpus"]:
            gpu = dict(gpu)
            if gpu["index"] in have:
                gpu["mig"] = list(have[gpu["index"]]) if have[gpu["index"]] else None
            gpus.append(gpu)
        nodes.append(dict(node, gpus=gpus))
    return dict(model, nodes=nodes)
