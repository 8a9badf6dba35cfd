"""``hpc-gres-health``: the node's GPU health check, by hand (``--report``), as Slurm's HealthCheckProgram
(``--slurm``) or inside an LBNL NHC check (``--nhc``).

Exit status: 0 healthy, 1 not healthy, 2 usage or internal error. An internal error never drains a node.
"""
import argparse
import os
import re
import sys
import time

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import check, inputs, results, slurm_state

PROG = "hpc-gres-health"
EXIT_HEALTHY, EXIT_UNHEALTHY, EXIT_ERROR = 0, 1, 2


def _type_pattern(text):
    gtype, sep, regex = text.partition("=")
    if not sep or not gtype:
        raise argparse.ArgumentTypeError("expected TYPE=REGEX, found %r" % text)
    try:
        re.compile(regex)
    except re.error as exc:
        raise argparse.ArgumentTypeError("%s: not a regular expression (%s)" % (regex, exc))
    return gtype, regex


def add_node_inputs(p, node_help):
    """The options of what a check reads on the node, shared by hpc-gres-health and hpc-gres-boot."""
    p.add_argument("--nvidia-smi", default="nvidia-smi", help="nvidia-smi to run (default: nvidia-smi on PATH)")
    p.add_argument("--root", default="/", help="root of sysfs, procfs and /dev to read (default /)")
    p.add_argument("--kernel-log", default="auto", metavar="SOURCE",
                   help="auto (journal, else dmesg), journal, dmesg, none, or a file (default auto; with --root "
                        "other than / only a file is read)")
    p.add_argument("--fabric-manager", default="systemd", metavar="SOURCE",
                   help="systemd (ask systemctl), none, or a file with recorded 'systemctl status "
                        "nvidia-fabricmanager' text (default systemd)")
    p.add_argument("--systemctl", default="systemctl", help=argparse.SUPPRESS)
    p.add_argument("--lspci", metavar="FILE", help="recorded lspci output to read instead of <root>/sys/bus/pci")
    p.add_argument("--slurm-conf", help="the installed slurm.conf (default $SLURM_CONF, /etc/slurm/slurm.conf, or "
                                        "configless slurmd's copy); also given to scontrol")
    p.add_argument("--gres-conf", help="the installed gres.conf (default: beside slurm.conf)")
    p.add_argument("--ack-file", default=inputs.DEFAULT_ACK_FILE,
                   help="Xid acknowledgement file (default %s)" % inputs.DEFAULT_ACK_FILE)
    p.add_argument("--type-pattern", type=_type_pattern, action="append", default=[], metavar="TYPE=REGEX",
                   help="how a gres.conf Type is recognised in the nvidia-smi GPU name (the inventory's "
                        "hpc_gres_verify_type_patterns), over the built-in ones; repeatable")
    p.add_argument("--node", help=node_help)
    p.add_argument("--timeout", type=float, default=inputs.DEFAULT_TIMEOUT, metavar="SECONDS",
                   help="limit for each external command; one that does not answer is killed and reported "
                        "(default %s)" % inputs.seconds_text(inputs.DEFAULT_TIMEOUT))
    p.add_argument("--scontrol", default="scontrol",
                   help="scontrol to run (default: scontrol on PATH); none: do not ask Slurm")
    p.add_argument("--json", action="store_true", help="print the whole result as JSON")


def node_options(args, node):
    """check.check_node's options from the arguments of add_node_inputs, for the Slurm node ``node``."""
    return {"nvidia_smi": args.nvidia_smi, "root": args.root, "kernel_log": args.kernel_log,
            "fabric_manager": args.fabric_manager, "systemctl": args.systemctl, "lspci": args.lspci,
            "slurm_conf": args.slurm_conf, "gres_conf": args.gres_conf, "ack_file": args.ack_file,
            "node": node, "timeout": args.timeout, "type_patterns": dict(args.type_pattern) or None}


def parser():
    p = argparse.ArgumentParser(prog=PROG, description="GPU health of this Slurm node: the readiness checks and "
                                "the live GPUs against the deployed gres.conf. Exit status 0 healthy, 1 not "
                                "healthy, 2 usage or internal error.")
    # not exclusive: the last mode given wins, so a launcher's built-in --slurm can be overridden by hand
    p.add_argument("--report", dest="mode", action="store_const", const="report",
                   help="print every check (passed / failed with findings / does not apply with the reason); "
                        "change nothing (the default, except in the hpc-gres-health the deploy installs, which runs "
                        "--slurm unless given --report)")
    p.add_argument("--slurm", dest="mode", action="store_const", const="slurm",
                   help="Slurm's HealthCheckProgram: check, then drain this node (reason '%s...') or resume "
                        "a node this check drained; print one line" % slurm_state.PREFIX)
    p.add_argument("--nhc", dest="mode", action="store_const", const="nhc",
                   help="for an LBNL NHC check: print the first failure as one line; change nothing")
    add_node_inputs(p, node_help="Slurm node name (default $SLURMD_NODENAME, else the short host name)")
    return p


def _slurm_env(args, env):
    env = dict(env)
    if args.slurm_conf:
        env["SLURM_CONF"] = args.slurm_conf
    return env


def _slurm_line(node, verdict, decision, done, error, state_error):
    health = "healthy" if verdict["healthy"] else "NOT healthy (%s)" % verdict["reason"][len(slurm_state.PREFIX):]
    if state_error:
        return "%s: node %s is %s; Slurm state not read (%s): nothing changed" % (PROG, node, health, state_error)
    words = {"drain": "drained", "update_reason": "drain reason updated", "resume": "resumed",
             "undrain": "undrained"}
    if decision["action"] == "none":
        what = decision["why"]
    elif done:
        what = "%s (%s)" % (words[decision["action"]], decision["why"])
    else:
        what = "%s FAILED: %s" % (decision["action"], error)
    return "%s: node %s is %s; %s" % (PROG, node, health, what)


def run(args, env, out):
    start = time.monotonic()
    runner = inputs.Runner(args.timeout, inputs.DEFAULT_BUDGET, env=_slurm_env(args, env))
    doc = check.check_node(node_options(args, args.node), runner=runner, env=env)
    verdict, node = doc["verdict"], doc["node"]
    code = EXIT_HEALTHY if verdict["healthy"] else EXIT_UNHEALTHY
    doc["mode"] = args.mode

    if args.mode == "nhc":
        doc["seconds"] = round(time.monotonic() - start, 3)
        out.write(results.to_json(doc) if args.json else (results.nhc_line(verdict) + "\n" if not verdict["healthy"]
                                                          else ""))
        return code

    runner.extend(inputs.SLURM_BUDGET)
    scontrol = None if args.scontrol == "none" else runner.which(args.scontrol)
    if scontrol is None:
        state, state_error = None, "not asked (--scontrol none)" if args.scontrol == "none" else \
            "%s not found" % args.scontrol
    else:
        state, state_error = slurm_state.read_node(runner, scontrol, node)
    decision = slurm_state.decide(state, not verdict["healthy"], verdict["reason"])
    doc["slurm"] = {"state": state, "state_error": state_error, "decision": decision}
    if args.mode == "slurm":
        done, error = True, None
        if state is not None:
            done, error = slurm_state.apply(runner, scontrol, node, decision)
        doc["slurm"].update(done=done, error=error)
        doc["commands"] = doc["commands"] + [
            {"argv": r["argv"], "rc": r["rc"], "seconds": round(r["seconds"], 3), "timed_out": r["timed_out"],
             "stuck": r["stuck"], "error": r["error"]} for r in runner.runs[len(doc["commands"]):]]
        doc["seconds"] = round(time.monotonic() - start, 3)
        out.write(results.to_json(doc) if args.json else
                  _slurm_line(node, verdict, decision, done, error, state_error) + "\n")
        return code

    doc["seconds"] = round(time.monotonic() - start, 3)
    if args.json:
        out.write(results.to_json(doc))
        return code
    if state_error:
        slurm = state_error if args.scontrol == "none" else "state not read (%s)" % state_error
    else:
        slurm = "%s%s; --slurm would: %s (%s)" % (
            "+".join([state["base"]] + state["flags"]), ", Reason=%s" % state["reason"] if state["reason"] else "",
            decision["action"], decision["why"])
    out.write(results.format_report(node, verdict, slurm=slurm, seconds=doc["seconds"]))
    out.write("inputs:\n%s\n" % "\n".join("  %s: %s" % kv for kv in doc["inputs"].items()))
    return code


def main(argv=None, env=None, out=None):
    """The program; returns its exit status."""
    out = out or sys.stdout
    env = os.environ if env is None else env
    try:
        args = parser().parse_args(argv)
    except SystemExit as exc:
        return EXIT_HEALTHY if exc.code == 0 else EXIT_ERROR  # --help: 0; a usage error: 2
    args.mode = args.mode or "report"
    try:
        return run(args, env, out)
    except Exception as exc:  # noqa: BLE001 - any bug must end in exit 2 and an untouched node
        out.write("%s: internal error: %s: %s; the node was %s\n" % (
            PROG, type(exc).__name__, exc, "not drained or resumed" if args.mode == "slurm" else "not changed"))
        return EXIT_ERROR
