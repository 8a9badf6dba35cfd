"""testinfra helpers for the molecule scenarios: talk to the real Slurm inside the scenario containers.

Import from a scenario's tests/ directory:

    import os, sys
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
    import slurm_checks

Containers are reached with testinfra's podman backend (``podman exec``), which is much faster than
the Ansible backend molecule would otherwise use for a ``containers.podman.podman`` connection.
run-molecule.sh exports CONTAINERS_CONF, which the podman CLI here needs.
"""

import re
import time

import testinfra

_KEY = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_/:.]*)=")


def container(name):
    """A testinfra host for the scenario container ``name``."""
    return testinfra.get_host("podman://" + name)


def parse_oneliner(text):
    """``scontrol -o show node X`` -> {key: value}; values may contain spaces (OS=, Reason=)."""
    text = text.strip()
    matches = list(_KEY.finditer(text))
    fields = {}
    for i, match in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(text)
        fields[match.group(1)] = text[match.end():end].strip()
    return fields


def show_node(ctl, node):
    """scontrol's view of one node, as a dict (State, Gres, Reason, CPUTot, ...)."""
    out = ctl.check_output("scontrol -o show node %s", node)
    return parse_oneliner(out)


def gres_counts(gres_field):
    """``gpu:a100:4(S:0-1),shard:8`` -> {"gpu:a100": 4, "shard": 8}."""
    counts = {}
    if not gres_field or gres_field == "(null)":
        return counts
    for item in re.sub(r"\([^)]*\)", "", gres_field).split(","):
        parts = item.split(":")
        if parts[-1].isdigit():
            counts[":".join(parts[:-1])] = counts.get(":".join(parts[:-1]), 0) + int(parts[-1])
    return counts


def state_flags(info):
    """``IDLE+DRAIN+INVALID_REG`` -> {"IDLE", "DRAIN", "INVALID_REG"}."""
    return set(info.get("State", "").split("+"))


def wait_for_node(ctl, node, want_state="IDLE", timeout=90, interval=2):
    """Poll until the node's base state is want_state with no DRAIN/INVALID_REG/NOT_RESPONDING flag.

    Returns the last scontrol record; raises AssertionError with it (and the reason) on timeout.
    """
    deadline = time.monotonic() + timeout
    bad = {"DRAIN", "DRAINED", "DRAINING", "INVALID_REG", "INVAL", "NOT_RESPONDING", "DOWN", "FAIL"}
    info = {}
    while True:
        info = show_node(ctl, node)
        flags = state_flags(info)
        if want_state in flags and not flags & bad and not info.get("State", "").endswith("*"):
            return info
        if time.monotonic() > deadline:
            raise AssertionError("node %s not %s after %ss: State=%s Reason=%s Gres=%s" % (
                node, want_state, timeout, info.get("State"), info.get("Reason"), info.get("Gres")))
        time.sleep(interval)


def srun_env(ctl, node, gres, variable="CUDA_VISIBLE_DEVICES", timeout=60):
    """Run ``srun -w node --gres=gres`` from ctl and return the job's value of variable (None if unset)."""
    script = 'echo "%s=${%s-__unset__}"' % (variable, variable)
    cmd = ctl.run("timeout %s srun -w %s --gres=%s -N1 -n1 sh -c %s", str(timeout), node, gres, script)
    assert cmd.rc == 0, "srun -w %s --gres=%s failed (rc %s): %s%s" % (node, gres, cmd.rc, cmd.stdout, cmd.stderr)
    value = cmd.stdout.strip().split("=", 1)[1]
    return None if value == "__unset__" else value


def refused_requests(ctl, requests):
    """Submit each request (sbatch options) with ``sbatch --test-only ... --wrap=true`` from ctl; returns the ones
    Slurm did not accept, each with its answer (empty when all were accepted). Prints every answer."""
    refused = []
    for options in requests:
        cmd = ctl.run("sbatch --test-only %s --wrap=true" % options)
        answer = (cmd.stdout + cmd.stderr).strip()
        print("%-45s %s" % (options, answer))
        if cmd.rc != 0 or " to start at " not in answer:
            refused.append("%s: %s" % (options, answer))
    return refused
