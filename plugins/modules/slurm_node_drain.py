#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: drain a Slurm node for maintenance and wait for its jobs, or resume it; only ever its own drain."""

DOCUMENTATION = r"""
module: slurm_node_drain
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Drain a Slurm node and wait for its jobs, or resume it, touching only the drain it set
description:
  - O(state=drained) drains the node with O(reason) (C(scontrol update NodeName=NODE State=DRAIN Reason=...)) unless
    it is drained already. A drain with another reason, an admin's, is kept as it is and reported in RV(ours).
  - With O(wait_for_jobs), it then waits until C(squeue) shows no job on the node (configuring, running, completing,
    suspended or stopped) and fails after O(timeout) seconds naming each job (id, user, state, name); the node stays
    drained.
  - O(state=resumed) resumes the node only when it is drained with O(reason), the drain this module sets. Any other
    drain is left alone and reported.
  - A second run changes nothing.
options:
  node:
    description: The Slurm node name.
    type: str
    required: true
  state:
    description: V(drained) or V(resumed).
    type: str
    choices: [drained, resumed]
    default: drained
  reason:
    description: The drain reason this module sets, and the only one it resumes.
    type: str
    required: true
  wait_for_jobs:
    description: With O(state=drained), wait until no job runs on the node.
    type: bool
    default: false
  timeout:
    description: Seconds to wait for the node's jobs to end.
    type: int
    default: 3600
  interval:
    description: Seconds between job checks.
    type: float
    default: 10
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
    description: Reports the drain or resume it would make and the jobs running now; changes nothing, waits for nothing.
seealso:
  - module: hpc.slurm_gres.slurm_node_info
"""

EXAMPLES = r"""
- name: Drain gpu-a01 for the MIG change and wait up to an hour for its jobs
  hpc.slurm_gres.slurm_node_drain:
    node: gpu-a01
    reason: MIG reconfiguration
    wait_for_jobs: true
    timeout: 3600
  delegate_to: "{{ groups['slurmctld'][0] }}"

- name: Resume it, unless someone else drained it meanwhile
  hpc.slurm_gres.slurm_node_drain:
    node: gpu-a01
    reason: MIG reconfiguration
    state: resumed
  delegate_to: "{{ groups['slurmctld'][0] }}"

# A timeout reads like:
# node gpu-a01: expected no running jobs after 3600 s, found job 4711 (user alice, RUNNING, train); the node
#   stays drained (MIG reconfiguration)
"""

RETURN = r"""
node:
  description: The node's record after the run, as M(hpc.slurm_gres.slurm_node_info) returns it.
  returned: always
  type: dict
ours:
  description: Whether the node is (or was, before a resume) drained with O(reason).
  returned: always
  type: bool
drained_by_other:
  description: The reason of a drain this module did not set and leaves alone, or null.
  returned: always
  type: str
jobs:
  description: Jobs still on the node when the run ended (each C(id), C(user), C(state), C(name)).
  returned: always
  type: list
  elements: dict
waited:
  description: Seconds spent waiting for jobs.
  returned: always
  type: float
message:
  description: The node as slurmctld shows it after the run (state, Gres, reason).
  returned: always
  type: str
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import (
    DRAIN_FLAGS,
    JOB_STATES,
    SCONTROL_ARGS,
    SQUEUE_FORMAT,
    Scontrol,
    describe,
    format_jobs,
    parse_squeue,
    same_drain_reason,
)


class Drainer(object):
    def __init__(self, module):
        self.module = module
        p = module.params
        self.name = p["node"]
        self.reason = p["reason"]
        self.scontrol = Scontrol(module.run_command, module.get_bin_path(p["scontrol"], required=True),
                                 p["slurm_conf"])
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
                      "(playbooks/deploy-gres.yml)")
        self.result["node"] = node
        return node

    def update(self, *args):
        if self.module.check_mode:
            return
        rc, out, err = self.scontrol.run("update", "NodeName=%s" % self.name, *args)
        if rc != 0:
            self.fail("scontrol update %s failed (rc %d): %s" % (" ".join(args), rc, (err or out).strip()))

    def jobs(self):
        p = self.module.params
        squeue = self.module.get_bin_path(p["squeue"], required=True)
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
        p = self.module.params
        start = time.monotonic()
        deadline = start + max(p["timeout"], 0)
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
                          % (p["timeout"], error or format_jobs(jobs), kept))
            time.sleep(max(p["interval"], 0.1))

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
            node=dict(type="str", required=True),
            state=dict(type="str", choices=["drained", "resumed"], default="drained"),
            reason=dict(type="str", required=True),
            wait_for_jobs=dict(type="bool", default=False),
            timeout=dict(type="int", default=3600),
            interval=dict(type="float", default=10),
            squeue=dict(type="str", default="squeue"),
            **SCONTROL_ARGS
        ),
        supports_check_mode=True,
    )
    drainer = Drainer(module)
    if module.params["state"] == "drained":
        drainer.drained()
    else:
        drainer.resumed()
    result = drainer.result
    result["message"] = "node %s: %s" % (drainer.name, describe(result.get("node")))
    module.exit_json(**result)


if __name__ == "__main__":
    main()
