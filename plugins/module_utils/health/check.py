"""One health check of this node: read the inputs, run the readiness rules and the gres comparison, judge.

:func:`check_node` is what every mode of the program runs; it changes nothing.
"""
import os
import socket
import time

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import gres_match, inputs, results
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import verify
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import finding
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness

DEFAULTS = {
    "nvidia_smi": "nvidia-smi",
    "root": "/",
    "kernel_log": "auto",
    "fabric_manager": "systemd",
    "systemctl": "systemctl",
    "lspci": None,
    "slurm_conf": None,
    "gres_conf": None,
    "ack_file": inputs.DEFAULT_ACK_FILE,
    "node": None,
    "timeout": inputs.DEFAULT_TIMEOUT,
    "budget": inputs.DEFAULT_BUDGET,
    "type_patterns": None,
}

_TIMEOUT_HINT = ("a hung nvidia-smi usually means a GPU or the driver no longer answers: read the kernel log (Xid 79, "
                 "119/120 GSP timeouts, 'fallen off the bus'); reset the GPU or reboot the node")


def node_name(explicit=None, env=None):
    """``explicit`` (--node), else ``$SLURMD_NODENAME`` (slurmd sets it for HealthCheckProgram), else the short
    host name."""
    env = os.environ if env is None else env
    return explicit or env.get("SLURMD_NODENAME") or socket.gethostname().split(".")[0]


def _command_findings(result, nvidia_smi):
    """A command other than the first ``nvidia-smi -q`` that was killed on its timeout: an ``nvml`` error for
    nvidia-smi (NVML hangs), else a warning of the check that needed it (which then does not apply)."""
    if result["rc"] is not None or result["error"]:
        return []
    tool = os.path.basename(result["argv"][0])
    expected = "%s answers within %s s" % (" ".join([tool] + result["argv"][1:3]),
                                           inputs.seconds_text(result.get("limit")))
    if result["argv"][0] == nvidia_smi:
        return [finding("error", "nvml", None, expected, inputs.describe_failure(result), _TIMEOUT_HINT)]
    check = "xid" if tool in ("journalctl", "dmesg") else "fabric" if tool == "systemctl" else "gres"
    return [finding("warning", check, None, expected, inputs.describe_failure(result),
                    "the check that needs it does not apply this time")]


def _options(options):
    opts = dict(DEFAULTS)
    opts.update({k: v for k, v in (options or {}).items() if v is not None})
    return opts


def read_readiness(opts, runner, node, sources):
    """The readiness half: read nvidia-smi -q, the kernel module version, the PCI functions, the kernel log, the
    fabric manager and the acknowledgements, and judge them. Returns ``(readiness_findings result, smi read,
    extra findings)``; ``sources`` receives where each input came from."""
    root = opts["root"] or "/"
    extra = []
    smi = inputs.read_smi(runner, opts["nvidia_smi"])
    sources["nvidia-smi -q"] = smi["path"] and "%s -q" % smi["path"] or smi["reason"]
    failure = smi["failure"]
    if failure and failure["kind"] in ("timeout", "not_run"):
        failure = dict(failure, kind="other")

    proc_version, proc_path = inputs.read_proc_version(root)
    sources["kernel module version"] = proc_path if proc_version else "%s not readable" % proc_path

    if opts["lspci"]:
        text = inputs.read_text(opts["lspci"])
        pci = readiness.parse_lspci(text) if text is not None else None
        sources["PCI functions"] = opts["lspci"] if text is not None else "%s not readable" % opts["lspci"]
    else:
        pci = inputs.read_pci(root)
        sources["PCI functions"] = inputs.under(root, "/sys/bus/pci/devices") + ("" if pci is not None else
                                                                                 " not there")

    kernel_text, sources["kernel log"] = inputs.read_kernel_log(runner, opts["kernel_log"], root)
    kernel_events = readiness.parse_kernel_log(kernel_text) if kernel_text is not None else None
    if kernel_text is None and opts["kernel_log"] not in inputs.KERNEL_LOG_SOURCES:
        # a log file named by hand (a typo, a log rotated away) would leave the Xid check off without a word
        extra.append(finding("warning", "xid", None, "the kernel log file given (--kernel-log) readable",
                             sources["kernel log"], "Xids are not checked; name a readable file, or auto"))

    fm, sources["fabric manager"] = inputs.read_fabric_manager(runner, opts["fabric_manager"], opts["systemctl"], root)

    acks, ack_problems = inputs.read_acknowledgements(opts["ack_file"], host=node)
    sources["acknowledgements"] = "%s (%d line(s))" % (opts["ack_file"], len(acks)) if acks or ack_problems else \
        "%s: none" % opts["ack_file"]
    for problem in ack_problems:
        extra.append(finding("warning", "xid", None, "well-formed acknowledgement lines", problem,
                             "the line is ignored; the other lines still count"))

    ready = readiness.readiness_findings(smi_q=smi["smi_q"], smi_failure=failure, proc_version=proc_version,
                                         lspci=pci, kernel_events=kernel_events, acknowledgements=acks,
                                         fabric_manager=fm)
    if smi["path"] is None:
        # a node checked as a GPU node without nvidia-smi: the driver's tools are gone, every check would pass
        ready["findings"].append(finding("error", "nvml", None, "nvidia-smi on this GPU node", smi["reason"],
                                         "install the NVIDIA driver's utilities, or give the path (--nvidia-smi)"))
        ready["not_applied"].pop("nvml", None)
    elif smi["smi_q"] is None and failure is None and "nvml" in ready["not_applied"]:
        # it ran and exited 0, but its output holds no GPU listing (the gres check says so)
        ready["not_applied"]["nvml"] = "nvidia-smi -q ran but printed no GPU listing"
    if smi["failure"] and smi["failure"]["kind"] == "timeout":
        for f in ready["findings"]:
            if f["check"] == "nvml":
                f["expected"] = "nvidia-smi -q answers within %s s" % inputs.seconds_text(smi["run"].get("limit"))
                f["hint"] = _TIMEOUT_HINT
    return ready, smi, extra


def check_readiness(options=None, runner=None, env=None):
    """The readiness checks alone (what the deploy runs before it restarts or resumes a node, inside gres_verify):
    ``{"ready", "findings", "not_applied", "inputs", "commands", "seconds"}``; changes nothing."""
    opts = _options(options)
    env = os.environ if env is None else env
    start = time.monotonic()
    runner = runner or inputs.Runner(opts["timeout"], opts["budget"], env=env)
    sources = {}
    ready, smi, extra = read_readiness(opts, runner, node_name(opts["node"], env), sources)
    for result in runner.runs[1 if smi["run"] is not None else 0:]:
        extra.extend(_command_findings(result, smi["path"]))
    findings = list(ready["findings"]) + extra
    return {"ready": not any(f["severity"] == "error" for f in findings), "findings": findings,
            "not_applied": dict(ready["not_applied"]), "inputs": sources,
            "commands": [r["argv"] for r in runner.runs], "seconds": round(time.monotonic() - start, 3)}


def configured_gpus(node, slurm_text, gres_text):
    """Whether slurm.conf gives ``node`` any gpu GRES or gres.conf a gpu line for it; None when neither file was
    read or slurm.conf does not name the node (then the node is checked as a GPU node)."""
    if slurm_text is None:
        return None
    try:
        staged = verify.parse_staged(node, slurm_text, gres_text or "")
    except GresError:
        return None
    declared = ((staged["slurm"] or {}).get("nodes") or {}).get(node)
    if declared is None:
        return None
    if any(key.split(":", 1)[0] == "gpu" for key in declared.get("gres") or {}):
        return True
    return any(str(r.get("name") or "").lower() == "gpu" for r in staged["records"] or [])


def _no_gpu(node, slurm_conf, start):
    reason = "node %s has no GPU in %s" % (node, slurm_conf)
    ready = {"findings": [], "not_applied": {c: reason for c in results.CHECKS}}
    gres = {"applies": False, "findings": [], "reason": reason}
    return {"node": node, "verdict": results.evaluate(ready, gres), "inputs": {"slurm.conf": slurm_conf},
            "commands": [], "seconds": round(time.monotonic() - start, 3)}


def check_node(options=None, runner=None, env=None):
    """Check this node; returns the whole document the program prints (``--json``): ``node``, ``verdict``
    (:func:`results.evaluate`), ``inputs`` (where each came from, or why it was not read), ``commands`` (argv,
    rc, seconds, timed_out of every external command), ``seconds``.

    A node whose slurm.conf declares no GPU for it and whose gres.conf has no gpu line (a CPU-only node, which
    runs the same HealthCheckProgram) is healthy without reading anything else."""
    opts = _options(options)
    env = os.environ if env is None else env
    start = time.monotonic()
    runner = runner or inputs.Runner(opts["timeout"], opts["budget"], env=env)
    node = node_name(opts["node"], env)
    root = opts["root"] or "/"
    sources = {}

    slurm_conf = inputs.find_slurm_conf(opts["slurm_conf"], env)
    gres_conf = inputs.find_gres_conf(opts["gres_conf"], slurm_conf)
    slurm_text = inputs.read_slurm_conf(slurm_conf) if slurm_conf else None
    gres_text = inputs.read_text(gres_conf) if gres_conf else None
    if configured_gpus(node, slurm_text, gres_text) is False:
        return _no_gpu(node, slurm_conf, start)

    ready, smi, extra = read_readiness(opts, runner, node, sources)
    sources["slurm.conf"] = slurm_conf if slurm_text is not None else "%s not readable" % (slurm_conf or "slurm.conf")
    sources["gres.conf"] = gres_conf if gres_text is not None else "%s not readable" % (gres_conf or "gres.conf")
    listed = smi["failure"] is None or smi["failure"]["kind"] in ("gpu_lost", "device_handle")
    if smi["smi_q"] is not None and listed:
        hw, why = gres_match.live_facts(runner, smi["path"], root)
    else:
        hw, why = None, "nvidia-smi could not list the GPUs (%s)" % (smi["reason"] or smi["failure"]["kind"])
    gres = gres_match.gres_findings(node, slurm_text, gres_text, hw, root, opts["type_patterns"])
    if hw is None:
        gres["reason"] = "the live GPUs were not read: %s" % why
    elif not gres["applies"] and slurm_text is None:
        gres["reason"] = "slurm.conf not read (%s)" % sources["slurm.conf"]
    elif not gres["applies"] and gres_text is None:
        gres["reason"] = "gres.conf not read (%s)" % sources["gres.conf"]

    for result in runner.runs[1 if smi["run"] is not None else 0:]:
        extra.extend(_command_findings(result, smi["path"]))
    verdict = results.evaluate(ready, gres, extra)
    return {
        "node": node,
        "verdict": verdict,
        "inputs": sources,
        "commands": [{"argv": r["argv"], "rc": r["rc"], "seconds": round(r["seconds"], 3), "timed_out": r["timed_out"],
                      "stuck": r["stuck"], "error": r["error"]} for r in runner.runs],
        "seconds": round(time.monotonic() - start, 3),
    }
