#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: read Slurm nodes, wait for a registration, drain and resume, through scontrol."""

DOCUMENTATION = r"""
module: slurm_node
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Read Slurm nodes, wait for a node to register with its Gres, drain or resume a node
description:
  - Talks to slurmctld through C(scontrol) (and C(squeue)), from a host that reaches it.
  - O(state=read) reads nodes (C(scontrol show node)) and returns each one's fields parsed, with the state split
    into base state and flags, the registered C(Gres=) as counts per GRES key and the drain reason without its
    C([user@time]) suffix. With O(expected_gres) it also judges each node against the Gres it should have, without
    waiting or changing anything. Read-only.
  - O(state=registered) polls one O(node) until slurmctld shows it registered (after a restart, with a new
    C(SlurmdStartTime) than O(since)), responding, without C(INVALID_REG), and with O(check_gres), with C(Gres=)
    equal to O(gres). It fails at once when the registration is refused or the Gres differs, and after O(timeout)
    seconds otherwise, with the node's state and scontrol's reason in the message. A node that registers as declared
    but is still drained by an earlier GRES mismatch (C(gres/gpu count reported lower than configured),
    C(gres/gpu:TYPE count too low), C(Count changed)) is resumed when O(resume) is true. Any other drain, an
    admin's in particular, is left alone and reported in RV(message).
  - With O(registrations) instead of O(node), O(state=registered) waits for several nodes at once (a batch of slurmd
    restarts), one C(scontrol -o show node HOSTLIST) per poll and one C(scontrol update) for the nodes it resumes
    in a poll. Each node is judged as one O(node) alone is, with its own O(gres), O(since) and O(resume); the task
    fails when any node is not registered as declared, and RV(registrations) holds each node's outcome.
  - O(state=drained) drains O(node) with O(reason) unless it is drained already; a drain with another reason, an
    admin's, is kept as it is and reported in RV(drained_by_other). With O(wait_for_jobs) it then waits until
    C(squeue) shows no job on the node and fails after O(timeout) seconds naming each job (id, user, state, name);
    the node stays drained.
  - O(state=resumed) resumes O(node) only when it is drained with O(reason), the drain this module sets.
options:
  state:
    description: What to do, see the description.
    type: str
    choices: [read, registered, drained, resumed]
    default: read
  nodes:
    description: With O(state=read), the Slurm node names to read. Empty reads every node. A name slurmctld does not
      know gives C(null).
    type: list
    elements: str
    default: []
  details:
    description: With O(state=read) and O(nodes), read with C(scontrol -d), which adds each node's C(GresUsed)
      (the GRES its jobs hold).
    type: bool
    default: false
  expected_gres:
    description: With O(state=read), node name to a dict of GRES key to count (C(gpu:a100) to 4); RV(verdicts) is
      then returned.
    type: dict
  node:
    description: The Slurm node name, for O(state=registered), V(drained) and V(resumed).
    type: str
  registrations:
    description:
      - With O(state=registered), instead of O(node), O(gres), O(since) and O(resume), the nodes to wait for at once -
        node name to a dict with keys C(gres) (GRES key to count), C(since) (optional, as O(since)) and C(resume)
        (optional, as O(resume); default true). O(check_gres), O(timeout) and O(interval) apply to every node.
    type: dict
  gres:
    description: With O(state=registered), GRES key to count the node must register with, as slurm.conf declares it.
    type: dict
    default: {}
  check_gres:
    description:
      - With O(state=registered), compare the registered Gres with O(gres). Turn it off while slurmctld still runs
        the previous definitions (it restarts after the slurmd restarts when a count goes up); a GRES drain is then
        not resumed either.
    type: bool
    default: true
  since:
    description:
      - With O(state=registered), the node's C(SlurmdStartTime) before slurmd was restarted (C(None) when it had
        never registered). Until it changes the node counts as not registered again. Unset, the current
        registration is judged.
    type: str
  resume:
    description: With O(state=registered), resume the node when an earlier GRES mismatch drained it and it now
      registers as declared.
    type: bool
    default: true
  reason:
    description: With O(state=drained) and V(resumed), the drain reason this module sets, and the only one it resumes.
    type: str
  wait_for_jobs:
    description: With O(state=drained), wait until no job runs on the node.
    type: bool
    default: false
  timeout:
    description: Seconds to wait for the registration (O(state=registered), default 120; C(0) judges the current
      state once) or for the node's jobs to end (O(state=drained), default 3600).
    type: int
  interval:
    description: Seconds between polls (default 2 for a registration, 10 for jobs).
    type: float
  squeue:
    description: The squeue command, a name looked up in E(PATH) or an absolute path.
    type: str
    default: squeue
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes
  - hpc.slurm_gres.scontrol
attributes:
  check_mode:
    support: full
    description:
      - V(read) and V(registered) read and wait as usual; a resume is reported as a change but not made.
      - V(drained) and V(resumed) report the drain or resume they would make and the jobs running now; nothing is
        changed, nothing waited for.
notes:
  - Slurm 22.05 pins a node's GRES count at its first registration after slurmctld starts; the deploy guide
    (docs/deploy.md) has the restart order that avoids drains.
"""

EXAMPLES = r"""
- name: Remember when slurmd last registered, before restarting it
  hpc.slurm_gres.slurm_node:
    nodes: [gpu-a01]
  delegate_to: "{{ groups['slurmctld'][0] }}"
  register: before

- name: Wait for gpu-a01 to come back with its eight A100
  hpc.slurm_gres.slurm_node:
    state: registered
    node: gpu-a01
    gres: {"gpu:a100": 8}
    since: "{{ before.nodes['gpu-a01'].slurmd_start_time | default('None', true) }}"
    timeout: 120
  delegate_to: "{{ groups['slurmctld'][0] }}"

- name: Drain gpu-a01 for a driver upgrade and wait up to an hour for its jobs
  hpc.slurm_gres.slurm_node:
    state: drained
    node: gpu-a01
    reason: driver upgrade
    wait_for_jobs: true
    timeout: 3600
  delegate_to: "{{ groups['slurmctld'][0] }}"

- name: Resume it, unless someone else drained it meanwhile
  hpc.slurm_gres.slurm_node:
    state: resumed
    node: gpu-a01
    reason: driver upgrade
  delegate_to: "{{ groups['slurmctld'][0] }}"

# A refused registration reads like:
# node gpu-a01: registration refused by slurmctld: State=IDLE+DRAIN+INVALID_REG Gres=gpu:a100:7(S:0-1)
#   Reason='gres/gpu count reported lower than configured (7 < 8)' SlurmdStartTime=2026-11-29T21:38:04
# A drain that waited too long:
# node gpu-a01: expected no running jobs after 3600 s, found job 4711 (user alice, RUNNING, train); the node
#   stays drained (driver upgrade)
"""

RETURN = r"""
nodes:
  description:
    - With O(state=read), node name to its record, or C(null) for a requested node slurmctld does not know.
    - A record has every field as scontrol prints it (C(State), C(Gres), C(CPUTot), C(SlurmdStartTime), ...) plus
      C(name), C(state_base), C(state_flags), C(not_responding), C(gres), C(reason), C(reason_user),
      C(reason_time) and C(slurmd_start_time) (null until slurmd has registered).
  returned: with O(state=read)
  type: dict
  sample:
    gpu-a01:
      name: gpu-a01
      State: IDLE+DRAIN+INVALID_REG
      state_base: IDLE
      state_flags: [DRAIN, INVALID_REG]
      not_responding: false
      Gres: gpu:a100:4(S:0-1)
      gres: {gpu:a100: 4}
      reason: gres/gpu count reported lower than configured (4 < 8)
      reason_user: slurm
      reason_time: "2026-11-29T21:37:55"
      slurmd_start_time: "2026-11-29T21:37:42"
verdicts:
  description: With O(expected_gres), node name to C({status, message, resume}); status is C(ok), C(resume),
    C(waiting) or C(failed).
  returned: with O(state=read) and O(expected_gres)
  type: dict
node:
  description: The node's last record read (as in RV(nodes); C(null) when slurmctld does not know it).
  returned: with O(state=registered), V(drained) and V(resumed)
  type: dict
registrations:
  description: With O(registrations), node name to its outcome C({status, message, error, node, resumed, waited})
    (as RV(status), RV(message), RV(node), RV(resumed) and RV(waited) of one node; C(error) says why a node failed or
    timed out, null otherwise).
  returned: with O(state=registered) and O(registrations)
  type: dict
status:
  description: With O(state=registered), C(ok) (registered as expected), C(resumed), C(failed) or C(timeout). With
    O(registrations), C(ok) when every node is ok or resumed, else C(failed).
  returned: with O(state=registered)
  type: str
  sample: ok
resumed:
  description: With O(state=registered), whether the node was (in check mode, would have been) resumed.
  returned: with O(state=registered)
  type: bool
ours:
  description: With O(state=drained) and V(resumed), whether the node is (or was, before a resume) drained with O(reason).
  returned: with O(state=drained) and V(resumed)
  type: bool
drained_by_other:
  description: The reason of a drain this module did not set and leaves alone, or null.
  returned: with O(state=drained) and V(resumed)
  type: str
jobs:
  description: With O(state=drained), jobs still on the node when the run ended (each C(id), C(user), C(state), C(name)).
  returned: with O(state=drained) and V(resumed)
  type: list
  elements: dict
waited:
  description: Seconds spent waiting.
  returned: with O(state=registered), V(drained) and V(resumed)
  type: float
message:
  description: What was seen, with state, Gres and reason.
  returned: with O(state=registered), V(drained) and V(resumed)
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

# first: the payload's other files are then compiled once, not twice (common/payload_import.py)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import payload_import  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.registrations import (
    failure_message,
    wait_registrations,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import (
    DRAIN_FLAGS,
    JOB_STATES,
    SCONTROL_ARGS,
    SQUEUE_FORMAT,
    Scontrol,
    describe,
    format_jobs,
    parse_show_node,
    parse_squeue,
    registration_verdict,
    same_drain_reason,
)


def _scontrol(module):
    p = module.params
    return Scontrol(module.run_command, module.get_bin_path(p["scontrol"], required=True), p["slurm_conf"])


def read(module):
    """{name: record or None} from ``scontrol show node`` (every node when none are named), and the verdicts."""
    scontrol = _scontrol(module)
    names = module.params["nodes"]
    if not names:
        rc, out, err = scontrol.run("show", "node")
        if rc != 0:
            module.fail_json(msg="scontrol show node failed (rc %d): %s" % (rc, err.strip() or out.strip()),
                             rc=rc, stdout=out, stderr=err)
        nodes = parse_show_node(out)
    else:
        nodes, error = scontrol.nodes(names, details=module.params["details"])
        if error:
            module.fail_json(msg=error)
    result = {"changed": False, "nodes": nodes}
    expected = module.params.get("expected_gres")
    if expected is not None:
        result["verdicts"] = {name: registration_verdict(nodes.get(name), gres)
                              for name, gres in sorted(expected.items())}
    module.exit_json(**result)


def _wait(module, wanted):
    """Each node's outcome (module_utils/slurm/registrations.py) with the module's timeout, interval and check_gres."""
    p = module.params
    return wait_registrations(_scontrol(module), wanted, 120 if p["timeout"] is None else p["timeout"],
                              2 if p["interval"] is None else p["interval"], check_gres=p["check_gres"],
                              check_mode=module.check_mode)


def registered_batch(module):
    """Wait for every node of ``registrations`` at once; fails naming each node not registered as declared."""
    wanted = {}
    for name, spec in module.params["registrations"].items():
        if not isinstance(spec, dict) or not isinstance(spec.get("gres", {}), dict):
            module.fail_json(msg="registrations: %s: expected a dict with gres (GRES key to count), since and resume, "
                                 "found %r" % (name, spec))
        wanted[str(name)] = {"gres": spec.get("gres") or {}, "since": spec.get("since"),
                             "resume": module.boolean(spec.get("resume", True))}
    outcomes = _wait(module, wanted)
    failure = failure_message(outcomes)
    result = dict(changed=any(o["resumed"] for o in outcomes.values()), registrations=outcomes,
                  status="failed" if failure else "ok", waited=max([o["waited"] for o in outcomes.values()] or [0]),
                  message=failure or "%d node(s) registered as declared" % len(outcomes))
    if failure:
        module.fail_json(msg=failure, **result)
    module.exit_json(**result)


def registered(module):
    """Poll until the node is registered as declared (resuming a GRES-mismatch drain), refused, or out of time."""
    p = module.params
    if p["registrations"] is not None:
        registered_batch(module)
    name = p["node"]
    outcome = _wait(module, {name: {"gres": p["gres"], "since": p["since"], "resume": p["resume"]}})[name]
    result = dict(changed=outcome["resumed"], node=outcome["node"], status=outcome["status"],
                  resumed=outcome["resumed"], waited=outcome["waited"], message=outcome["message"])
    if outcome["error"]:
        module.fail_json(msg="node %s: %s" % (name, outcome["error"]), **result)
    module.exit_json(**result)


class Drainer(object):
    """Drain (and wait for the jobs) or resume one node, touching only the drain with this module's reason."""

    def __init__(self, module):
        self.module = module
        p = module.params
        self.name = p["node"]
        self.reason = p["reason"]
        self.timeout = 3600 if p["timeout"] is None else p["timeout"]
        self.interval = 10 if p["interval"] is None else p["interval"]
        self.scontrol = _scontrol(module)
        self.result = {"changed": False, "ours": False, "drained_by_other": None, "jobs": [], "waited": 0.0}

    def fail(self, msg, **extra):
        self.result.update(extra)
        self.module.fail_json(msg="node %s: %s" % (self.name, msg), **self.result)

    def read(self):
        node, error = self.scontrol.node(self.name)
        if error:
            self.fail(error)
        if node is None:
            self.fail("expected a node slurmctld knows, found none; deploy the cluster first "
                      "(ansible-playbook hpc.slurm_gres.deploy_gres)")
        self.result["node"] = node
        return node

    def update(self, *args):
        if self.module.check_mode:
            return
        rc, out, err = self.scontrol.run("update", "NodeName=%s" % self.name, *args)
        if rc != 0:
            self.fail("scontrol update %s failed (rc %d): %s" % (" ".join(args), rc, (err or out).strip()))

    def jobs(self):
        squeue = self.module.get_bin_path(self.module.params["squeue"], required=True)
        rc, out, err = self.module.run_command(
            [squeue, "--noheader", "--nodelist=%s" % self.name, "--states=%s" % JOB_STATES,
             "--format=%s" % SQUEUE_FORMAT],
            environ_update=self.scontrol.environ)
        if rc != 0:
            return None, "squeue failing (rc %d): %s" % (rc, (err or out).strip())
        return parse_squeue(out), None

    def drained(self):
        node = self.read()
        drained = bool(set(node.get("state_flags") or []) & DRAIN_FLAGS)
        if drained and not same_drain_reason(node.get("reason"), self.reason):
            self.result["drained_by_other"] = node.get("reason") or "(no reason)"
        elif drained:
            self.result["ours"] = True
        else:
            self.update("State=DRAIN", "Reason=%s" % self.reason)
            self.result.update(changed=True, ours=True)
            if not self.module.check_mode:
                self.read()
        if self.module.params["wait_for_jobs"]:
            self.wait()

    def wait(self):
        start = time.monotonic()
        deadline = start + max(self.timeout, 0)
        while True:
            jobs, error = self.jobs()
            self.result["waited"] = round(time.monotonic() - start, 1)
            self.result["jobs"] = jobs or []
            if jobs == [] or self.module.check_mode:
                return
            if time.monotonic() >= deadline:
                kept = self.reason if self.result["ours"] else "drain reason left as it was: %s" % (
                    self.result["drained_by_other"])
                self.fail("expected no running jobs after %d s, found %s; the node stays drained (%s)"
                          % (self.timeout, error or format_jobs(jobs), kept))
            time.sleep(max(self.interval, 0.1))

    def resumed(self):
        node = self.read()
        if not set(node.get("state_flags") or []) & DRAIN_FLAGS:
            return
        if not same_drain_reason(node.get("reason"), self.reason):
            self.result["drained_by_other"] = node.get("reason") or "(no reason)"
            return
        self.result["ours"] = True
        self.update("State=RESUME")
        self.result["changed"] = True
        if not self.module.check_mode:
            self.read()


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["read", "registered", "drained", "resumed"], default="read"),
            nodes=dict(type="list", elements="str", default=[]),
            details=dict(type="bool", default=False),
            expected_gres=dict(type="dict"),
            node=dict(type="str"),
            registrations=dict(type="dict"),
            gres=dict(type="dict", default={}),
            check_gres=dict(type="bool", default=True),
            since=dict(type="str"),
            resume=dict(type="bool", default=True),
            reason=dict(type="str"),
            wait_for_jobs=dict(type="bool", default=False),
            timeout=dict(type="int"),
            interval=dict(type="float"),
            squeue=dict(type="str", default="squeue"),
            **SCONTROL_ARGS
        ),
        required_if=[("state", "registered", ("node", "registrations"), True), ("state", "drained", ("node", "reason")),
                     ("state", "resumed", ("node", "reason"))],
        mutually_exclusive=[("node", "registrations")],
        supports_check_mode=True,
    )
    state = module.params["state"]
    if state == "read":
        read(module)
    elif state == "registered":
        registered(module)
    drainer = Drainer(module)
    if state == "drained":
        drainer.drained()
    else:
        drainer.resumed()
    result = drainer.result
    result["message"] = "node %s: %s" % (drainer.name, describe(result.get("node")))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
