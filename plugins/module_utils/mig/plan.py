"""Plan the ``nvidia-smi`` commands that bring GPUs to their declared MIG layouts (logic of ``mig_layout``).

Input is what the node reports (parsed by ``nvidia_smi``) and what the inventory declares; output is a plan:
per GPU the action and the exact argv lists to run, plus the problems that forbid running any of them.
Nothing here runs a command.

Rules (the same as NVIDIA mig-parted's apply, pkg/mig/config/config.go, plus the Slurm-side refusals):

* A GPU whose GPU instances already are the declared multiset of profiles, each with exactly one compute
  instance that spans it (the default CI, as ``-cgi ... -C`` creates), is left alone: placements and GI ids
  are not compared, so an applied layout is never rebuilt and its gres.conf cap paths stay valid.
* Otherwise the GPU is rebuilt: every compute instance is destroyed, then every GPU instance (a GI that still
  has CIs cannot be destroyed: "In use by another client"), then the GIs are created largest first, each at
  the placement ``mig.find_placement`` chose (``-cgi <profile>:<start> -C``, which also creates the default CI).
* MIG mode is enabled first when needed; a GPU whose layout is removed (``None``) gets its instances destroyed
  and MIG mode disabled.
* Any GPU that must change while compute processes run on it (joined by GPU or MIG device UUID) refuses the
  whole plan, naming pid, process and user; so does a pending MIG mode change (needs a GPU reset or reboot),
  a GPU that cannot do MIG, a model that differs from the one the inventory declares, and an invalid layout.

Current state of one GPU (keys as the parsers produce them; extra keys ignored)::

    {"index": 0, "uuid": "GPU-...", "name": "NVIDIA A100-SXM4-80GB", "memory_total": 81920,
     "mig_mode": "Enabled", "mig_mode_pending": "Enabled",           # query-gpu values; pending optional
     "gpu_instances": [{"gi_id": 1, "profile": "3g.40gb", "placement_start": 4, "placement_size": 4}],
     "compute_instances": [{"gi_id": 1, "ci_id": 0, "profile": "3g.40gb"}],
     "mig_devices": [{"uuid": "MIG-...", "profile": "3g.40gb"}]}    # optional, for the process join

Processes: ``parse_query_apps`` rows (``gpu_uuid``, ``pid``, ``process_name``, ``used_memory``) with an
optional ``user`` that the caller resolved from /proc.
"""

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import (
    creation_order,
    normalize_model,
    normalize_profile,
    profile_counts,
    validate_layout,
)

NVIDIA_SMI = "nvidia-smi"


def _mode(value):
    """``Enabled``/``Disabled`` -> True/False; anything else (``[N/A]``, None) -> None (not MIG-capable)."""
    text = str(value or "").strip().strip("[]").lower()
    if text in ("enabled", "1", "true", "on"):
        return True
    if text in ("disabled", "0", "false", "off"):
        return False
    return None


def _get(gpu, *keys):
    """First present key: the plan takes both its own names and the query-gpu field names."""
    for key in keys:
        if gpu.get(key) is not None:
            return gpu[key]
    return None


def _fmt_counts(counts):
    return ", ".join("%d x %s" % (n, k) for k, n in counts.items()) if counts else "none"


def _gpu_rows(rows, index):
    """Rows of a flat -lgi/-lci list that belong to GPU ``index`` (rows without ``gpu`` are kept)."""
    return [r for r in rows or [] if r.get("gpu") is None or int(r["gpu"]) == int(index)]


def current_layout(gpu):
    """``(profiles_by_gi, clean)`` for a GPU: the GI profiles and whether every GI has exactly its default CI."""
    index = gpu.get("index")
    gis = _gpu_rows(gpu.get("gpu_instances"), index)
    cis = _gpu_rows(gpu.get("compute_instances"), index)
    by_gi = {int(g["gi_id"]): normalize_profile(g["profile"]) for g in gis}
    ci_by_gi = {}
    for ci in cis:
        ci_by_gi.setdefault(int(ci["gi_id"]), []).append(normalize_profile(ci["profile"]))
    clean = set(ci_by_gi) <= set(by_gi) and all(ci_by_gi.get(gi) == [prof] for gi, prof in by_gi.items())
    return by_gi, clean


def _argv_mode(index, enable):
    return [NVIDIA_SMI, "-i", str(index), "-mig", "1" if enable else "0"]


def _teardown_steps(index, gpu):
    steps = []
    for ci in sorted(_gpu_rows(gpu.get("compute_instances"), index), key=lambda c: (int(c["gi_id"]), int(c["ci_id"]))):
        steps.append({"action": "destroy_ci", "gpu": index, "gi_id": int(ci["gi_id"]), "ci_id": int(ci["ci_id"]),
                      "argv": [NVIDIA_SMI, "mig", "-i", str(index), "-gi", str(ci["gi_id"]), "-ci", str(ci["ci_id"]),
                               "-dci"]})
    for gi in sorted(_gpu_rows(gpu.get("gpu_instances"), index), key=lambda g: int(g["gi_id"])):
        steps.append({"action": "destroy_gi", "gpu": index, "gi_id": int(gi["gi_id"]),
                      "profile": normalize_profile(gi["profile"]),
                      "argv": [NVIDIA_SMI, "mig", "-i", str(index), "-gi", str(gi["gi_id"]), "-dgi"]})
    return steps


def _create_steps(index, order):
    return [{"action": "create_gi", "gpu": index, "profile": o["profile"], "start": o["start"], "size": o["size"],
             "argv": [NVIDIA_SMI, "mig", "-i", str(index), "-cgi", "%s:%d" % (o["profile"], o["start"]), "-C"]}
            for o in order]


def _uuids(gpu):
    found = set()
    if gpu.get("uuid"):
        found.add(str(gpu["uuid"]))
    for dev in gpu.get("mig_devices") or []:
        if isinstance(dev, dict) and dev.get("uuid"):
            found.add(str(dev["uuid"]))
    return found


def _describe_process(proc):
    parts = [proc.get("process_name") or "unknown process", "user %s" % (proc.get("user") or "unknown")]
    if proc.get("used_memory") is not None:
        parts.append("%s MiB" % proc["used_memory"])
    return "pid %s (%s)" % (proc.get("pid"), ", ".join(parts))


def plan_gpu(host, desired, gpu, processes=(), model=None, field=None, refuse_busy=True):
    """Plan one GPU. ``desired``: list of profiles, or None for MIG off. ``model``: the inventory's model.

    Returns ``{"index", "uuid", "model", "desired", "current", "action", "steps", "placement", "problems",
    "busy"}``; ``action`` is ``none``, ``rebuild``, ``enable_and_create`` or ``disable``; ``busy`` lists the
    compute processes on a GPU that must change, which is a problem unless ``refuse_busy`` is false.
    """
    index = int(gpu["index"])
    field = field or "hpc_gres_gpus[%d].mig" % index
    problems = []
    live_model = (normalize_model(gpu.get("name"), _get(gpu, "memory_total", "memory.total"))
                  if gpu.get("name") else None)
    declared_model = normalize_model(model) if model else None
    use_model = declared_model or live_model
    by_gi, clean = current_layout(gpu)
    current = profile_counts(by_gi.values())
    mode_text = _get(gpu, "mig_mode", "mig.mode.current")
    pending_text = _get(gpu, "mig_mode_pending", "mig.mode.pending")
    enabled = _mode(mode_text)
    pending = _mode(pending_text) if pending_text is not None else enabled
    result = {"index": index, "uuid": gpu.get("uuid"), "model": use_model,
              "desired": list(desired) if desired is not None else None, "current": current,
              "mig_mode": mode_text, "action": "none", "steps": [], "placement": None,
              "problems": problems, "busy": [], "refuse_busy": refuse_busy}

    if desired is None:
        if enabled:
            result["action"] = "disable"
            result["steps"] = _teardown_steps(index, gpu) + [
                {"action": "disable_mig", "gpu": index, "argv": _argv_mode(index, False)}]
        elif enabled is False and pending:
            problems.append(Problem(host, "GPU %d MIG mode" % index, "MIG mode Disabled",
                                    "Disabled with Enabled pending",
                                    hint="run `nvidia-smi -i %d -mig 0` to cancel it" % index))
        return _finish(host, result, gpu, processes)

    if model and declared_model is None:
        problems.extend(validate_layout(host, index, model, desired, field=field))
        return _finish(host, result, gpu, processes)
    if declared_model and live_model and declared_model != live_model:
        problems.append(Problem(host, field.rsplit(".", 1)[0] + ".model", "the GPU's model %s (%s)" % (
            live_model, gpu.get("name")), declared_model,
            hint="the inventory declares a model the GPU at index %d is not" % index))
        return _finish(host, result, gpu, processes)
    if use_model is None:
        problems.append(Problem(host, field.rsplit(".", 1)[0] + ".model", "a MIG-capable model",
                                repr(gpu.get("name")) if gpu.get("name") else "no model and no GPU name"))
        return _finish(host, result, gpu, processes)
    problems.extend(validate_layout(host, index, use_model, desired, field=field))
    if problems:
        return _finish(host, result, gpu, processes)
    if enabled is None:
        problems.append(Problem(host, "GPU %d MIG mode" % index, "a GPU that supports MIG (Enabled or Disabled)",
                                str(mode_text)))
        return _finish(host, result, gpu, processes)
    if enabled != pending:
        problems.append(Problem(
            host, "GPU %d MIG mode" % index, "no pending MIG mode change",
            "%s with %s pending" % ("Enabled" if enabled else "Disabled", "Enabled" if pending else "Disabled"),
            hint="reset the GPU (`nvidia-smi -r -i %d`, all processes stopped) or reboot, then rerun" % index))
        return _finish(host, result, gpu, processes)

    wanted = profile_counts(desired)
    order = creation_order(use_model, list(wanted_profiles(wanted)))
    result["placement"] = order
    if enabled and clean and current == wanted:
        return _finish(host, result, gpu, processes)
    if not enabled:
        result["action"] = "enable_and_create"
        result["steps"] = [{"action": "enable_mig", "gpu": index, "argv": _argv_mode(index, True)}]
        result["steps"] += _create_steps(index, order)
    else:
        result["action"] = "rebuild"
        result["steps"] = _teardown_steps(index, gpu) + _create_steps(index, order)
    return _finish(host, result, gpu, processes)


def wanted_profiles(counts):
    for name, n in counts.items():
        for _copy in range(n):
            yield name


def _finish(host, result, gpu, processes):
    refuse = result.pop("refuse_busy")
    if result["steps"]:
        uuids = _uuids(gpu)
        busy = [p for p in processes or () if str(p.get("gpu_uuid")) in uuids]
        result["busy"] = [dict(p, gpu=result["index"]) for p in busy]
        if busy and refuse:
            result["problems"].append(Problem(
                host, "GPU %d (%s)" % (result["index"], gpu.get("uuid") or "no uuid"),
                "no compute processes on a GPU whose MIG layout changes",
                "; ".join(_describe_process(p) for p in busy),
                hint="drain the node and wait for its jobs to end (the playbook hpc.slurm_gres.mig_reconfigure "
                     "does), then rerun",
            ))
    return result


def plan_node(host, desired_layouts, gpus, processes=(), models=None, fields=None, refuse_busy=True):
    """Plan every GPU named in ``desired_layouts`` (``{index: [profiles] or None}``).

    ``gpus``: current GPU dicts; ``models``: ``{index: model}`` from the inventory; ``fields``:
    ``{index: "hpc_gres_gpus[k].mig"}`` when inventory positions differ from GPU indexes.
    Returns ``{"changed", "ok", "problems", "busy", "gpus", "commands"}``. ``busy`` lists the compute processes on
    GPUs that must change (a problem too unless ``refuse_busy`` is false). ``commands`` lists every argv in order
    and is empty when there is any problem: nothing may run then.
    """
    models = models or {}
    fields = fields or {}
    by_index = {int(g["index"]): g for g in gpus}
    plans = []
    problems = []
    for index in sorted(int(i) for i in desired_layouts):
        field = fields.get(index) or "hpc_gres_gpus[%d].mig" % index
        gpu = by_index.get(index)
        if gpu is None:
            problems.append(Problem(host, field, "a GPU with index %d on the node" % index,
                                    "GPU indexes %s" % (sorted(by_index) or "none")))
            continue
        plan = plan_gpu(host, desired_layouts.get(index, desired_layouts.get(str(index))), gpu, processes,
                        model=models.get(index), field=field, refuse_busy=refuse_busy)
        problems.extend(plan["problems"])
        plans.append(plan)
    commands = [] if problems else [s["argv"] for p in plans for s in p["steps"]]
    return {"changed": any(p["steps"] for p in plans), "ok": not problems, "problems": problems,
            "busy": [b for p in plans for b in p["busy"]], "gpus": plans, "commands": commands}


def check_applied(host, desired, gpu, model=None, field=None):
    """After applying: problems if the GPU is not exactly at ``desired`` (re-read state in ``gpu``)."""
    plan = plan_gpu(host, desired, gpu, model=model, field=field)
    if plan["problems"]:
        return plan["problems"]
    if plan["steps"]:
        index = int(gpu["index"])
        by_gi, clean = current_layout(gpu)
        found = _fmt_counts(profile_counts(by_gi.values()))
        if not clean:
            found += " (not every GPU instance has exactly its default compute instance)"
        expected = "MIG off" if desired is None else "GPU instances %s, each with its default compute instance" % (
            _fmt_counts(profile_counts(desired)))
        return [Problem(host, field or "hpc_gres_gpus[%d].mig" % index, expected,
                        "MIG mode %s, GPU instances %s" % (_get(gpu, "mig_mode", "mig.mode.current"), found),
                        hint="the layout did not take; see the nvidia-smi output above")]
    return []


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
