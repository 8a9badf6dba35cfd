"""``hpc-gres-boot``: the GPU boot order of slurmd (docs/boot.md). ``hpc-gres-boot.service`` runs it before slurmd,
which starts only when it succeeds; slurmd's drop-in runs ``--resume`` once slurmd has started.

Exit status: 0 ready (slurmd may start); 1 not ready by the deadline (slurmd is held back, the node drained in Slurm
with ``hpc-gres-boot: <stage>: ...`` where slurmctld answers); 2 usage or internal error, which the unit counts as
success, so a bug in this program never keeps a node out of service by itself (the health check still judges it).
"""
import argparse
import json
import os
import stat
import sys
import time

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import boot, check, inputs, slurm_state
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.cli import add_node_inputs, node_options
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.apply import ApplyError, apply_layouts

PROG = "hpc-gres-boot"
EXIT_READY, EXIT_HELD, EXIT_ERROR = 0, 1, 2
DEFAULT_CONFIG = "/etc/hpc-gres/boot.json"
CONTROL_DEVICE = "/dev/nvidiactl"


def parser():
    p = argparse.ArgumentParser(prog=PROG, description="Before slurmd starts: wait for the NVIDIA driver, apply the "
                                "node's MIG layout, wait until the GPU health check passes. Exit status 0 ready, 1 "
                                "not ready (slurmd held back), 2 usage or internal error.")
    p.add_argument("--resume", dest="mode", action="store_const", const="resume", default="boot",
                   help="after slurmd has started: resume the node if this program held it (reason '%s...')"
                        % boot.PREFIX)
    p.add_argument("--config", default=DEFAULT_CONFIG,
                   help="the node's boot settings written by the deploy (default %s)" % DEFAULT_CONFIG)
    p.add_argument("--wait", type=float, metavar="SECONDS", help="how long to wait in all (default: the settings')")
    p.add_argument("--interval", type=float, metavar="SECONDS", help="seconds between tries (default: the settings')")
    add_node_inputs(p, node_help="Slurm node name (default: the settings', else the short host name)")
    return p


def read_config(path):
    """The settings file, checked (``boot.read_settings``); a file that is not there gives the defaults (no MIG)."""
    try:
        with open(path) as handle:
            doc = json.load(handle)
    except FileNotFoundError:
        doc = {}
    except (IOError, OSError, ValueError) as exc:
        raise ValueError("%s: not readable as JSON (%s)" % (path, exc))
    return boot.read_settings(doc, path)


def _is_char_device(path):
    try:
        return stat.S_ISCHR(os.stat(path).st_mode)
    except OSError:
        return False


def _first_line(text):
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def driver_probe(args, new_runner):
    """The driver stage: ``/dev/nvidiactl`` exists and ``nvidia-smi --query-gpu`` lists GPUs (NVML initialised)."""
    def probe():
        control = inputs.under(args.root, CONTROL_DEVICE)
        if not _is_char_device(control):
            return False, "%s does not exist (the NVIDIA kernel module is not loaded)" % control
        runner = new_runner()
        smi = runner.which(args.nvidia_smi)
        if smi is None:
            return False, "nvidia-smi not found (%s)" % args.nvidia_smi
        result = runner.run([smi, "--query-gpu=index,pci.bus_id", "--format=csv,noheader"])
        if result["rc"] is None:
            return False, inputs.describe_failure(result)
        said = _first_line(result["stdout"]) or _first_line(result["stderr"])
        if result["rc"] != 0:
            return False, "nvidia-smi exited with status %d: %s" % (result["rc"], said or "no output")
        rows = [line for line in result["stdout"].splitlines() if line.strip()]
        if not rows:
            return False, "nvidia-smi lists no GPU"
        return True, "%d GPU(s) listed by nvidia-smi" % len(rows)
    return probe


def _applied_text(result):
    parts = []
    for gpu in result["plan"]:
        if gpu["action"] == "none":
            parts.append("GPU %d as declared" % gpu["index"])
        else:
            parts.append("GPU %d %s: %s" % (gpu["index"], gpu["action"], ", ".join(gpu["desired"] or ["MIG off"])))
    return "; ".join(parts)


def mig_probe(args, settings, node, new_runner):
    """The MIG stage: the inventory's layouts applied with the collection's own code (``mig.apply``), as the MIG
    runbook applies them: placements and GI ids as at the deploy, so the gres.conf caps stay valid."""
    layouts = boot.mig_layouts(settings)

    def probe():
        runner = new_runner()
        try:
            result = apply_layouts(runner.collect_run(), node, layouts, settings["models"], sysfs_root=args.root,
                                   nvidia_smi_path=args.nvidia_smi, which=runner.which)
        except ApplyError as exc:
            return False, str(exc)
        except inputs.CommandFailed as exc:
            return False, str(exc)
        return True, _applied_text(result)
    return probe


def ready_probe(args, node, env, new_runner):
    """The ready stage: the node health check (readiness and the live GPUs against the deployed gres.conf)."""
    def probe():
        doc = check.check_node(node_options(args, node), runner=new_runner(), env=env)
        verdict = doc["verdict"]
        if verdict["healthy"]:
            return True, "healthy"
        return False, verdict["reason"][len(slurm_state.PREFIX):]
    return probe


def _slurm(args, env, node, decide_with):
    """Read the node in Slurm and carry out ``decide_with(node_view)``; returns the part of the result doc."""
    slurm_env = dict(env)
    if args.slurm_conf:
        slurm_env["SLURM_CONF"] = args.slurm_conf
    runner = inputs.Runner(args.timeout, inputs.SLURM_BUDGET, env=slurm_env)
    if args.scontrol == "none":
        return {"state": None, "error": "not asked (--scontrol none)", "decision": None, "done": False}
    scontrol = runner.which(args.scontrol)
    if scontrol is None:
        return {"state": None, "error": "%s not found" % args.scontrol, "decision": None, "done": False}
    state, error = slurm_state.read_node(runner, scontrol, node)
    if state is None:
        return {"state": None, "error": error, "decision": None, "done": False}
    decision = decide_with(state)
    done, error = slurm_state.apply(runner, scontrol, node, decision)
    return {"state": state, "error": error, "decision": decision, "done": done}


def _slurm_text(slurm):
    if slurm["decision"] is None:
        return "Slurm not changed (%s)" % slurm["error"]
    words = {"drain": "drained", "update_reason": "reason updated", "resume": "resumed", "undrain": "undrained"}
    action = slurm["decision"]["action"]
    if action == "none":
        return "Slurm: %s" % slurm["decision"]["why"]
    if slurm["done"]:
        return "Slurm: %s (%s)" % (words[action], slurm["decision"]["why"])
    return "Slurm: %s FAILED: %s" % (action, slurm["error"])


def run_boot(args, settings, env, out, clock, sleep):
    node = args.node or settings["node"] or check.node_name(None, env)
    wait = settings["wait"] if args.wait is None else args.wait
    interval = settings["interval"] if args.interval is None else args.interval

    def new_runner():
        return inputs.Runner(args.timeout, inputs.DEFAULT_BUDGET, env=env)

    stages = [("driver", driver_probe(args, new_runner))]
    if boot.mig_layouts(settings):
        stages.append(("mig", mig_probe(args, settings, node, new_runner)))
    stages.append(("ready", ready_probe(args, node, env, new_runner)))

    def log(stage, detail):
        if not args.json:
            out.write("%s: %s: waiting: %s\n" % (PROG, stage, " ".join(str(detail).split())))
            out.flush()

    result = boot.run_stages(stages, clock, sleep, wait, interval, log=log)
    doc = {"node": node, "mode": "boot", "mig": settings["mig"], "wait": wait, "ready": result["ok"],
           "stages": result["stages"], "seconds": result["seconds"]}
    if result["ok"]:
        doc["slurm"] = None
        text = "%s: node %s ready after %s s (%s); slurmd may start\n" % (
            PROG, node, inputs.seconds_text(result["seconds"]),
            "; ".join("%s: %s" % (s["stage"], s["detail"]) for s in result["stages"]))
        out.write(boot_json(doc) if args.json else text)
        return EXIT_READY
    reason = boot.hold_reason(result["stage"], result["detail"], result["seconds"])
    slurm = _slurm(args, env, node, lambda state: boot.hold_decision(state, reason))
    doc.update(reason=reason, slurm=slurm)
    out.write(boot_json(doc) if args.json else "%s: node %s NOT ready after %s s, slurmd held back: %s; %s\n" % (
        PROG, node, inputs.seconds_text(result["seconds"]), reason[len(boot.PREFIX):], _slurm_text(slurm)))
    return EXIT_HELD


def run_resume(args, settings, env, out):
    node = args.node or settings["node"] or check.node_name(None, env)
    slurm = _slurm(args, env, node, boot.release_decision)
    doc = {"node": node, "mode": "resume", "slurm": slurm}
    out.write(boot_json(doc) if args.json else "%s: node %s: %s\n" % (PROG, node, _slurm_text(slurm)))
    return EXIT_READY


def boot_json(doc):
    return json.dumps(doc, indent=2, sort_keys=True, default=str) + "\n"


def main(argv=None, env=None, out=None, clock=time.monotonic, sleep=time.sleep):
    """The program; returns its exit status."""
    out = out or sys.stdout
    env = os.environ if env is None else env
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_READY if exc.code == 0 else EXIT_ERROR
    try:
        settings = read_config(args.config)
        if args.mode == "resume":
            return run_resume(args, settings, env, out)
        return run_boot(args, settings, env, out, clock, sleep)
    except Exception as exc:  # noqa: BLE001 - a bug must end in exit 2, which does not hold slurmd back
        out.write("%s: internal error: %s: %s; slurmd is not held back by this program\n"
                  % (PROG, type(exc).__name__, exc))
        return EXIT_ERROR
