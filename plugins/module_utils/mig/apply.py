"""Read a node's MIG state, run the plan ``mig_plan`` made, re-read and check it (the I/O half of ``mig_layout``).

``run`` is ``AnsibleModule.run_command``-like: ``run(argv) -> (rc, stdout, stderr)``; it is always given an
argument list, never a shell string. The state is read with the same calls ``gpu_facts`` makes (through
``gpu_collect.collect``), plus one ``--query-gpu=index,mig.mode.pending`` for pending mode changes.

The sequence of :func:`apply_layouts`:

1. read the state; plan every GPU named in ``layouts`` (``mig_plan.plan_node``);
2. any problem (compute processes on a GPU that must change, pending mode change, invalid layout, wrong
   model) refuses the whole plan: nothing runs;
3. check mode, or nothing to do: return the plan;
4. run the steps in order and stop at the first failing one. After a MIG mode change the mode is queried
   again: a change that stays pending (it needs a GPU reset or a reboot) stops the run with that advice;
5. re-read the state and ``mig_plan.check_applied`` every GPU.

A stopped run leaves the GPU part-way; the plan is made from the live state, so running again continues.
"""

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi as nvidia_smi
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.collect import CollectError, collect
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import normalize_profile
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.plan import check_applied, plan_node

PENDING_FIELDS = ("index", "mig.mode.pending")


class ApplyError(Exception):
    """A refusal or a failed step: ``str()`` is the message; ``result`` is what the module returns with it."""

    def __init__(self, msg, result):
        super(ApplyError, self).__init__(msg)
        self.result = result


def pending_command(smi):
    return [smi, "--query-gpu=" + ",".join(PENDING_FIELDS), "--format=csv,noheader,nounits"]


def normalize_layouts(layouts, host="?"):
    """``{index: [profiles] or None}`` with int keys; ``[]`` means MIG off. Raises ValueError naming the key."""
    if not isinstance(layouts, dict) or not layouts:
        raise ValueError("host %s: layouts: expected a dict of GPU index -> list of MIG profiles (or null for MIG "
                         "off), found %r" % (host, layouts))
    out = {}
    for key, value in layouts.items():
        try:
            index = int(key)
        except (TypeError, ValueError):
            raise ValueError("host %s: layouts: expected GPU indexes as keys, found %r" % (host, key))
        if index in out:
            raise ValueError("host %s: layouts: expected each GPU index once, found %d twice" % (host, index))
        if value is None or value == []:
            out[index] = None
        elif isinstance(value, (list, tuple)) and all(isinstance(p, str) for p in value):
            out[index] = [normalize_profile(p) for p in value]
        else:
            raise ValueError("host %s: layouts[%s]: expected a list of MIG profile names such as [3g.40gb, 1g.10gb] "
                             "or null, found %r" % (host, key, value))
    return out


def normalize_models(models, host="?"):
    out = {}
    for key, value in (models or {}).items():
        try:
            out[int(key)] = value
        except (TypeError, ValueError):
            raise ValueError("host %s: models: expected GPU indexes as keys, found %r" % (host, key))
    return out


def read_state(run, sysfs_root="/", nvidia_smi_path="nvidia-smi", which=None):
    """The node's GPUs as ``mig_plan`` wants them, plus the facts and the commands that were run.

    Returns ``{"smi", "gpus", "processes", "hw", "warnings", "commands"}``; raises CollectError.
    """
    parsed = {}
    # The MIG plan needs no core numbers: sysfs is enough, and spares starting hwloc on every runbook step.
    hw, warnings, commands = collect(run, sysfs_root, nvidia_smi_path, which, parsed=parsed, topology_source="sysfs")
    smi = commands[0][0]
    gis = parsed.get("lgi") or []
    cis = parsed.get("lci") or []
    pending = {}
    if hw["gpus"]:
        argv = pending_command(smi)
        commands.append(argv)
        rc, out, err = run(argv)
        if rc == 0:
            try:
                rows = nvidia_smi.parse_query_gpu(out, PENDING_FIELDS)
                pending = {r["index"]: r.get("mig.mode.pending") for r in rows}
            except ValueError as exc:
                warnings.append("cannot read %s: %s; pending MIG mode changes are unknown" % (" ".join(argv), exc))
        else:
            warnings.append("%s failed (exit code %d): %s; pending MIG mode changes are unknown"
                            % (" ".join(argv), rc, (out or err or "").strip()[:300]))
    gpus = []
    processes = []
    for gpu in hw["gpus"]:
        index = gpu["index"]
        gpus.append({
            "index": index, "uuid": gpu["uuid"], "name": gpu["name"], "memory_total": gpu["memory_total_mib"],
            "minor": gpu["minor"], "mig_mode": gpu["mig_mode"], "mig_mode_pending": pending.get(index),
            "gpu_instances": [r for r in gis if r["gpu"] == index],
            "compute_instances": [r for r in cis if r["gpu"] == index],
            "mig_devices": gpu["mig_devices"],
        })
        for proc in gpu["processes"] or ():
            processes.append({"gpu_uuid": proc.get("mig_uuid") or gpu["uuid"], "pid": proc.get("pid"),
                              "process_name": proc.get("process_name"), "used_memory": proc.get("used_mib"),
                              "user": proc.get("user")})
    return {"smi": smi, "gpus": gpus, "processes": processes, "hw": hw, "warnings": warnings, "commands": commands}


def summarize(gpus, indexes):
    """Per GPU named in ``indexes``: MIG mode and live instances, for the module's result."""
    out = []
    for gpu in gpus:
        if gpu["index"] not in indexes:
            continue
        devices = sorted(gpu.get("mig_devices") or [],
                         key=lambda d: (d.get("gi_id") is None, d.get("gi_id"), d.get("ci_id")))
        keys = ("profile", "gi_id", "ci_id", "uuid", "placement_start", "placement_size")
        out.append({"index": gpu["index"], "uuid": gpu["uuid"], "name": gpu["name"], "mig_mode": gpu["mig_mode"],
                    "mig_devices": [{k: d.get(k) for k in keys} for d in devices]})
    return out


def _plan_view(plan, smi):
    gpus = []
    for p in plan["gpus"]:
        gpus.append({"index": p["index"], "uuid": p["uuid"], "model": p["model"], "mig_mode": p["mig_mode"],
                     "desired": p["desired"], "current": p["current"], "action": p["action"],
                     "placement": p["placement"],
                     "commands": [[smi] + s["argv"][1:] for s in p["steps"]]})
    return gpus


def _problem_text(problems):
    return [str(p) for p in problems]


def apply_layouts(run, host, layouts, models=None, check_mode=False, sysfs_root="/", nvidia_smi_path="nvidia-smi",
                  which=None, report_busy=False):
    """Bring the GPUs named in ``layouts`` to their layouts. Returns the result dict; raises ApplyError.

    Result: ``changed``, ``plan`` (per GPU: action, current and desired counts, placement, commands),
    ``busy`` (compute processes on GPUs that must change), ``commands`` (every argv run, reads included),
    ``results`` (each mutating argv with rc/stdout/stderr), ``gpus`` (MIG mode and devices after), ``hw`` (the
    facts after, as ``gpu_facts`` returns them), ``warnings``. ``report_busy`` (check mode only) lists busy
    processes in ``busy`` without refusing; a run that changes the GPUs always refuses them.
    """
    try:
        layouts = normalize_layouts(layouts, host)
        models = normalize_models(models, host)
    except ValueError as exc:
        raise ApplyError(str(exc), {"changed": False})
    try:
        state = read_state(run, sysfs_root, nvidia_smi_path, which)
    except CollectError as exc:
        details = dict(exc.details)
        details["changed"] = False
        raise ApplyError("host %s: cannot read the GPUs: %s" % (host, exc), details)
    smi = state["smi"]
    commands = list(state["commands"])
    warnings = list(state["warnings"])
    plan = plan_node(host, layouts, state["gpus"], state["processes"], models=models,
                     refuse_busy=not (check_mode and report_busy))
    result = {"changed": plan["changed"], "plan": _plan_view(plan, smi), "busy": plan["busy"],
              "commands": commands, "results": [],
              "gpus": summarize(state["gpus"], layouts), "hw": state["hw"], "warnings": warnings,
              "problems": _problem_text(plan["problems"])}
    if not plan["ok"]:
        result["changed"] = False
        raise ApplyError("host %s: MIG layout refused, nothing was changed:\n- %s" % (
            host, "\n- ".join(result["problems"])), result)
    if check_mode or not plan["changed"]:
        return result

    by_index = {g["index"]: g for g in state["gpus"]}
    for gplan in plan["gpus"]:
        for step in gplan["steps"]:
            argv = [smi] + step["argv"][1:]
            commands.append(argv)
            rc, out, err = run(argv)
            result["results"].append({"argv": argv, "rc": rc, "stdout": out, "stderr": err})
            created = nvidia_smi.parse_mig_create(out + "\n" + err) if step["action"] == "create_gi" else None
            if rc != 0 or (created is not None and created["errors"]):
                text = (out or "").strip() or (err or "").strip() or "(no output)"
                raise ApplyError(
                    "host %s: GPU %d: `%s` failed with exit code %d: %s\nThe GPU may be part-way to its layout; "
                    "nothing after this command ran. Fix the cause and run again: the plan is made from the live "
                    "state, so a rerun continues." % (host, gplan["index"], " ".join(argv), rc, text), result)
            if step["action"] in ("enable_mig", "disable_mig"):
                _check_mode_took(run, host, smi, gplan["index"], step["action"] == "enable_mig",
                                 by_index[gplan["index"]].get("uuid"), commands, result)

    try:
        after = read_state(run, sysfs_root, nvidia_smi_path, which)
    except CollectError as exc:
        raise ApplyError("host %s: the layout was applied but the GPUs cannot be read back: %s" % (host, exc), result)
    commands.extend(after["commands"])
    warnings.extend(w for w in after["warnings"] if w not in warnings)
    result["gpus"] = summarize(after["gpus"], layouts)
    result["hw"] = after["hw"]
    after_by_index = {g["index"]: g for g in after["gpus"]}
    problems = []
    for index, desired in sorted(layouts.items()):
        gpu = after_by_index.get(index)
        if gpu is None:
            problems.append(Problem(host, "hpc_gres_gpus[%d].mig" % index, "GPU %d after the apply" % index,
                                    "no such GPU any more"))
            continue
        problems.extend(check_applied(host, desired, gpu, model=models.get(index)))
    if problems:
        result["problems"] = _problem_text(problems)
        raise ApplyError("host %s: the MIG layout did not take:\n- %s" % (host, "\n- ".join(result["problems"])),
                         result)
    return result


def _check_mode_took(run, host, smi, index, enable, uuid, commands, result):
    """After ``-mig 0|1``: the mode must be current, not pending (A100/A30 need a GPU reset, VMs a reboot)."""
    argv = [smi, "-i", str(index), "--query-gpu=index,mig.mode.current,mig.mode.pending",
            "--format=csv,noheader,nounits"]
    commands.append(argv)
    rc, out, err = run(argv)
    rows = []
    if rc == 0:
        try:
            rows = nvidia_smi.parse_query_gpu(out, ("index", "mig.mode.current", "mig.mode.pending"))
        except ValueError:
            rows = []
    want = "Enabled" if enable else "Disabled"
    row = rows[0] if rows else {}
    if row.get("mig.mode.current") == want:
        return
    raise ApplyError(
        "host %s: GPU %d (%s): MIG mode is %s with %s pending after `%s -i %d -mig %d`; the change needs a GPU "
        "reset (`nvidia-smi -r -i %d`, no process may hold the GPU; stop nvidia-persistenced, dcgm and "
        "nvidia_drm users) or a reboot. Then run again." % (
            host, index, uuid or "no uuid", row.get("mig.mode.current") or "unknown",
            row.get("mig.mode.pending") or "unknown", smi, index, 1 if enable else 0, index), result)
