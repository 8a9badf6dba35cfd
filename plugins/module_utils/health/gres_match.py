"""The live GPUs against the node's deployed gres.conf/slurm.conf: would slurmd register a wrong count or wrong
devices right now?

The comparison is the deploy's own (``node.verify.verify_node`` over ``nvidia.collect`` facts); the health check
keeps the checks whose errors mean slurmd would register a wrong count or the wrong devices (``count``,
``present``, ``type``, ``mig``, ``device``) and adds the MIG instance comparison: each ``MultipleFiles`` line's
GPU and compute instance capabilities must be live instances of that GPU (a layout rebuilt with other GI/CI ids
keeps the count but moves jobs to other instances). The CPU binding checks (``cores``, ``order``, ...) only
warn at a deploy and never take a node out. Findings are renamed ``gres_<check>``.

Plain Python 3 standard library.
"""
import copy
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.inputs import CommandFailed
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_type_fits
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import verify
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.collect import CollectError, collect
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import gres_counts_from_records

KEPT_CHECKS = ("count", "present", "type", "mig", "device")
PREFIX = "gres_"
_MIG_TYPE = re.compile(r"^\d+g\.\d+gb(\+[a-z.]+)?$", re.I)
_CAP = re.compile(r"/nvidia-cap(\d+)$")
_GPU_FILE = re.compile(r"/nvidia(\d+)$")


def _skipped(argv):
    """nvidia.collect's calls the comparison does not need: ``topo -m`` (CPU affinity, for the cores check) and
    ``--query-compute-apps`` (processes). Left: ``--query-gpu`` and, with MIG on, ``-L``, ``mig -lgi``, ``mig -lci``."""
    return argv[1:3] == ["topo", "-m"] or any(a.startswith("--query-compute-apps") for a in argv[1:])


def live_facts(runner, nvidia_smi, root="/"):
    """``(hpc_gres_hw facts or None, reason)`` from ``nvidia.collect`` with the runner's timeouts; the CPU topology
    from sysfs only (no hwloc: the CPU checks are not run)."""
    try:
        facts, _warnings, _commands = collect(runner.collect_run(_skipped), root or "/", nvidia_smi,
                                              which=runner.which, topology_source="sysfs")
    except CommandFailed as exc:
        return None, str(exc)
    except CollectError as exc:
        return None, str(exc)
    return facts, None


def _deferred(staged, node_name):
    """``{gres key: count}`` slurm.conf declares and gres.conf leaves to slurmd's AutoDetect (none without it)."""
    node = (staged["slurm"] or {}).get("nodes", {}).get(node_name)
    records = staged["records"] or []
    if node is None or not any(str(r.get("autodetect") or "").lower() not in ("", "off") for r in records):
        return None
    have = gres_counts_from_records(records)
    return {k: v for k, v in (node.get("gres") or {}).items() if k.split(":", 1)[0] == "gpu" and not have.get(k)}


def _deferred_mig_findings(deferred, hw):
    """AutoDetect MIG types (not in gres.conf): as many live MIG devices of each as slurm.conf declares."""
    out = []
    devices = [d for g in (hw or {}).get("gpus") or [] for d in g.get("mig_devices") or []]
    for key, want in sorted((deferred or {}).items()):
        gtype = key.split(":", 1)[1] if ":" in key else None
        if not gtype or not _MIG_TYPE.match(gtype):
            continue
        seen = sum(1 for d in devices if mig_type_fits(gtype, d))
        if seen < want:
            out.append(verify.finding("error", "present", None,
                                      "%d MIG devices of type %s (AutoDetect) visible to nvidia-smi" % (want, gtype),
                                      "declares %d %s, nvidia-smi sees %d" % (want, gtype, seen),
                                      "the MIG layout is gone or changed (MIG instances are lost at a reboot unless "
                                      "recreated); slurmctld would drain the node (count reported lower)"))
    return out


def _minor(path, dev_stat, pattern):
    entry = dev_stat.get(path)
    if entry and entry.get("minor") is not None:
        return entry["minor"]
    m = pattern.search(path)
    return int(m.group(1)) if m else None


def mig_instance_findings(records, hw, dev_stat):
    """Each ``MultipleFiles=/dev/nvidia<m>,<gi cap>,<ci cap>`` line names a live MIG instance of GPU ``m``.

    Live instances come with their cap minors (``gi_cap_minor``/``ci_cap_minor`` from mig-minors); a GPU whose
    cap minors are unknown is not judged here (the count and device checks still are).
    """
    by_minor = {g.get("minor"): g for g in (hw or {}).get("gpus") or []}
    out = []
    for rec in records or []:
        files = rec.get("multiple_files") or []
        if (rec.get("name") or "").lower() != "gpu" or len(files) < 3:
            continue
        gpu_minor = _minor(files[0], dev_stat, _GPU_FILE)
        gi_cap, ci_cap = _minor(files[1], dev_stat, _CAP), _minor(files[2], dev_stat, _CAP)
        gpu = by_minor.get(gpu_minor)
        if gpu is None or str(gpu.get("mig_mode") or "").lower() != "enabled" or gi_cap is None or ci_cap is None:
            continue  # present / mig / device say what is wrong with the GPU itself
        live = list(gpu.get("mig_devices") or [])
        if any(d.get("gi_cap_minor") is None or d.get("ci_cap_minor") is None for d in live):
            continue
        if any(d["gi_cap_minor"] == gi_cap and d["ci_cap_minor"] == ci_cap for d in live):
            continue
        where = "gres.conf line %s" % rec.get("line") if rec.get("line") is not None else "gres.conf"
        have = ", ".join("%s gi%s/ci%s (caps %s,%s)" % (d.get("profile"), d.get("gi_id"), d.get("ci_id"),
                                                        d["gi_cap_minor"], d["ci_cap_minor"]) for d in live) or "none"
        out.append(verify.finding(
            "error", "mig", gpu.get("index"),
            "%s: a live MIG instance of GPU %s with caps %d,%d (%s)" % (
                where, gpu.get("index"), gi_cap, ci_cap, rec.get("type") or "gpu"),
            "no such instance; live: %s" % have,
            "the MIG layout was rebuilt or lost since gres.conf was written: jobs would get other instances or "
            "none; apply the layout with the MIG runbook or deploy again"))
    return out


def gres_findings(node_name, slurm_text, gres_text, hw, root="/", type_patterns=None):
    """Compare the live GPUs with the deployed files of ``node_name``.

    Returns ``{"applies", "reason", "findings"}`` like a readiness check: it does not apply when a file is
    missing or does not parse, when slurm.conf has no NodeName line for the node, or when the live GPUs could not
    be read (``hw`` None). ``root``: where the device files gres.conf names are looked at (``<root>/dev/...``).
    """
    if hw is None:
        return {"check": "gres", "applies": False, "reason": "the live GPUs were not read", "findings": []}
    if slurm_text is None:
        return {"check": "gres", "applies": False, "reason": "slurm.conf not read", "findings": []}
    if gres_text is None:
        return {"check": "gres", "applies": False, "reason": "gres.conf not read", "findings": []}
    staged = verify.parse_staged(node_name, slurm_text, gres_text)
    if staged["findings"]:
        return {"check": "gres", "applies": False, "reason": "; ".join(
            "%s: %s" % (f["expected"], f["found"]) for f in staged["findings"]), "findings": []}
    if node_name not in staged["slurm"]["nodes"]:
        return {"check": "gres", "applies": False, "reason": "slurm.conf has no NodeName line for %s" % node_name,
                "findings": []}
    gpu_records = [r for r in staged["records"] or [] if (r.get("name") or "").lower() == "gpu"]
    declared = {k: v for k, v in (staged["slurm"]["nodes"][node_name].get("gres") or {}).items()
                if k.split(":", 1)[0] == "gpu"}
    if not gpu_records and not declared:
        return {"check": "gres", "applies": False, "reason": "no gpu GRES for %s in slurm.conf or gres.conf"
                % node_name, "findings": []}
    dev_stat = verify.stat_device_files(verify.device_paths(staged["records"] or []), root or "/")
    deferred = _deferred(staged, node_name)
    mig_deferred = {k: v for k, v in (deferred or {}).items() if ":" in k and _MIG_TYPE.match(k.split(":", 1)[1])}
    if mig_deferred:
        # verify_node knows MIG types from MultipleFiles lines only; AutoDetect ones are counted here instead
        staged = copy.deepcopy(staged)
        node = staged["slurm"]["nodes"][node_name]
        for key in mig_deferred:
            node["gres"].pop(key, None)
        node["gres_spec"] = ",".join("%s:%d" % item for item in node["gres"].items()) or None
        deferred = {k: v for k, v in deferred.items() if k not in mig_deferred}
    found = verify.verify_node(node_name, slurm_text, gres_text, hw, dev_stat, type_patterns=type_patterns,
                               staged=staged, deferred=deferred)
    kept = [f for f in found if f["check"] in KEPT_CHECKS]
    kept.extend(_deferred_mig_findings(mig_deferred, hw))
    kept.extend(mig_instance_findings(staged["records"], hw, dev_stat))
    for f in kept:
        f["check"] = PREFIX + f["check"]
    return {"check": "gres", "applies": True, "reason": None, "findings": kept,
            "gpus": len((hw or {}).get("gpus") or []), "declared": declared}
