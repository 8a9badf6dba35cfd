"""A stateful stand-in for slurmctld's commands (scontrol, squeue) for playbook tests over the local connection.

The state is a JSON file: nodes (State flags, Reason, Partitions, Gres, SlurmdStartTime, boots; a resumed node is not
responding for two seconds and keeps its reason, as on 24.11), jobs (node and
the time they end), slurmctld's config, GPU faults to inject at a node's next boot, and a log of every change with
each node's state after it, from which a test reads how many nodes were out of service at once. Only what the
collection's modules call is answered, in scontrol's own formats; the real behaviour is the molecule scenarios'.

    fake_slurm.py STATE scontrol ARGS...   (the scontrol wrapper a test writes)
    fake_slurm.py STATE squeue ARGS...
    fake_slurm.py STATE boot NODE          (what the test's reboot task file runs)
"""
import fcntl
import json
import os
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "..", ".cache", "collections"))
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist  # noqa: E402


def new_state(nodes, partitions="main", gres="gpu:a100:8(S:0-1)", config=None):
    return {"nodes": {n: {"flags": [], "reason": None, "partitions": partitions, "gres": gres, "boots": 0}
                      for n in nodes},
            "jobs": [], "faults": {}, "log": [],
            "config": config or {"RebootProgram": "(null)", "ResumeTimeout": "60 sec"}}


def busy(state, name, now=None):
    now = time.time() if now is None else now
    return [j for j in state["jobs"] if j["node"] == name and j["until"] > now]


def state_text(state, name):
    node = state["nodes"][name]
    text = "+".join(["ALLOCATED" if busy(state, name) else "IDLE"] + node["flags"])
    # not responding until slurmd answers the ping slurmctld sends after a resume (24.11 and later)
    return text + "*" if node.get("ping_at", 0) > time.time() else text


def node_line(state, name):
    node = state["nodes"][name]
    line = ("NodeName=%s Arch=x86_64 CoresPerSocket=32 CPUTot=128 Gres=%s Partitions=%s RealMemory=1000 Sockets=2 "
            "State=%s ThreadsPerCore=2 SlurmdStartTime=2026-12-01T10:%02d:00"
            % (name, node["gres"], node["partitions"], state_text(state, name), node["boots"]))
    if node["reason"]:
        line += " Reason=%s [root@2026-12-01T10:00:00]" % node["reason"]
    return line


def log(state, what):
    state["log"].append({"at": time.time(), "what": what,
                         "states": {n: state_text(state, n) for n in state["nodes"]}})


def boot(state, name):
    """The node reboots: slurmd starts again (a new SlurmdStartTime); a fault waiting for this boot happens."""
    node = state["nodes"][name]
    node["boots"] += 1
    fault = state["faults"].pop(name, None)
    if fault:
        with open(fault["profile"]) as handle:
            profile = json.load(handle)
        profile["gpus"][fault["index"]]["lost"] = "missing"
        with open(fault["profile"], "w") as handle:
            json.dump(profile, handle)
    log(state, "boot %s" % name)


def scontrol(state, args):
    args = [a for a in args if a != "-o"]
    if args[:2] == ["show", "config"]:
        print("\n".join("%-23s = %s" % item for item in sorted(state["config"].items())))
        return 0
    if args[:2] == ["show", "node"]:
        names = hostlist.expand_hostlist(args[2]) if len(args) > 2 else sorted(state["nodes"])
        rc = 0
        for name in names:
            if name in state["nodes"]:
                print(node_line(state, name))
            else:
                print("Node %s not found" % name)
                rc = 1
        return rc
    if args[:1] == ["update"]:
        opts = dict(a.split("=", 1) for a in args[1:])
        node = state["nodes"][opts["NodeName"]]
        if opts.get("State") == "DRAIN":
            if "DRAIN" not in node["flags"]:
                node["flags"].append("DRAIN")
            node["reason"] = opts["Reason"]
        elif opts.get("State") == "RESUME":
            # as 24.11: the drain goes, the reason stays (until a job runs there), a ping is due
            node["flags"] = [f for f in node["flags"] if f != "DRAIN"]
            node["ping_at"] = time.time() + 2
        log(state, " ".join(args))
        return 0
    if args[:1] == ["reboot"]:
        opts = dict(a.split("=", 1) for a in args[1:-1])
        node = state["nodes"][args[-1]]
        node["reason"] = opts.get("reason", node["reason"]) + " : reboot issued"
        boot(state, args[-1])
        return 0
    sys.stderr.write("fake scontrol: not handled: %s\n" % " ".join(args))
    return 2


def squeue(state, args):
    opts = dict(a[2:].split("=", 1) for a in args if a.startswith("--") and "=" in a)
    for job in busy(state, opts["nodelist"]):
        print("%s|%s|RUNNING|%s" % (job["id"], job["user"], job["name"]))
    return 0


def main(argv):
    path, command, args = argv[1], argv[2], argv[3:]
    with open(path + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        with open(path) as handle:
            state = json.load(handle)
        if command == "scontrol":
            rc = scontrol(state, args)
        elif command == "squeue":
            rc = squeue(state, args)
        else:
            boot(state, args[0])
            rc = 0
        with open(path + ".tmp", "w") as handle:
            json.dump(state, handle)
        os.rename(path + ".tmp", path)
    return rc


if __name__ == "__main__":
    sys.exit(main(sys.argv))
