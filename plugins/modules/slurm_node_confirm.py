#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: wait until slurmctld shows a node registered with the Gres it should have; resume a GRES drain."""

DOCUMENTATION = r"""
module: slurm_node_confirm
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Wait for a Slurm node to register with its declared Gres, and resume a GRES-mismatch drain
description:
  - Polls C(scontrol show node NODE) until slurmctld shows the node registered (after a restart, with a new
    C(SlurmdStartTime)), responding, without C(INVALID_REG), and, with O(check_gres), with C(Gres=) equal to
    O(expected_gres). Fails at once when the registration is refused or the Gres differs, and after O(timeout)
    seconds otherwise, with the node's state and scontrol's reason in the message.
  - A node that registers as declared but is still drained by an earlier GRES mismatch (reason C(gres/gpu count
    reported lower than configured), C(gres/gpu:TYPE count too low) or C(Count changed)) is resumed with
    C(scontrol update NodeName=NODE State=RESUME) when O(resume) is true. Any other drain, an admin's in
    particular, is left alone and reported in RV(message).
options:
  node:
    description: The Slurm node name.
    type: str
    required: true
  expected_gres:
    description: GRES key to count that the node must have (for example C(gpu:a100) to 4), as slurm.conf declares it.
    type: dict
    default: {}
  check_gres:
    description:
      - Compare the registered Gres with O(expected_gres). Turn off while slurmctld still runs the previous
        definitions (it restarts after the slurmd restarts when a count goes up); a GRES drain is then not
        resumed either.
    type: bool
    default: true
  since:
    description:
      - The node's C(SlurmdStartTime) before slurmd was restarted (C(None) when it had never registered). Until it
        changes the node counts as not registered again. When unset, the current registration is judged.
    type: str
  resume:
    description: Resume the node when it is drained by an earlier GRES mismatch and now registers as declared.
    type: bool
    default: true
  timeout:
    description: Seconds to wait for the registration. C(0) judges the current state once.
    type: int
    default: 120
  interval:
    description: Seconds between polls.
    type: float
    default: 2
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes
  - hpc.slurm_gres.scontrol
attributes:
  check_mode:
    support: full
    description: Waits and judges as usual; a resume is reported as a change but not made.
notes:
  - Slurm 22.05 pins a node's GRES count at its first registration after slurmctld starts; see the deploy guide
    (docs/deploy.md) for the restart order that avoids drains.
seealso:
  - module: hpc.slurm_gres.slurm_node_info
"""

EXAMPLES = r"""
- name: Wait for gpu-a01 to come back with its eight A100
  hpc.slurm_gres.slurm_node_confirm:
    node: gpu-a01
    expected_gres: {"gpu:a100": 8}
    since: "{{ before.nodes['gpu-a01'].slurmd_start_time | default('None', true) }}"
    timeout: 120
  delegate_to: "{{ groups['slurmctld'][0] }}"

# A failure reads like:
# node gpu-a01: registration refused by slurmctld: State=IDLE+DRAIN+INVALID_REG Gres=gpu:a100:7(S:0-1)
#   Reason='gres/gpu count reported lower than configured (7 < 8)' SlurmdStartTime=2026-11-29T21:38:04
"""

RETURN = r"""
node:
  description: The last record read, as in M(hpc.slurm_gres.slurm_node_info) (C(null) when slurmctld does not know
    the node).
  returned: always
  type: dict
status:
  description: C(ok) (registered as expected), C(resumed), C(failed) or C(timeout).
  returned: always
  type: str
  sample: ok
message:
  description: What was seen, with state, Gres and reason.
  returned: always
  type: str
resumed:
  description: Whether the node was (in check mode, would have been) resumed.
  returned: always
  type: bool
waited:
  description: Seconds spent waiting.
  returned: always
  type: float
"""

import time

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import (
    SCONTROL_ARGS, Scontrol, describe, registration_verdict)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            node=dict(type="str", required=True),
            expected_gres=dict(type="dict", default={}),
            check_gres=dict(type="bool", default=True),
            since=dict(type="str"),
            resume=dict(type="bool", default=True),
            timeout=dict(type="int", default=120),
            interval=dict(type="float", default=2),
            **SCONTROL_ARGS
        ),
        supports_check_mode=True,
    )
    p = module.params
    name = p["node"]
    expected = {str(k): int(v) for k, v in p["expected_gres"].items()}
    scontrol = Scontrol(module.run_command, module.get_bin_path(p["scontrol"], required=True), p["slurm_conf"])
    start = time.monotonic()
    deadline = start + max(p["timeout"], 0)
    resumed = False
    while True:
        node, error = scontrol.node(name)
        if error:
            verdict = {"status": "waiting", "message": error, "resume": False}
        else:
            verdict = registration_verdict(node, expected, since=p["since"], check_gres=p["check_gres"])
        waited = round(time.monotonic() - start, 1)
        if verdict["status"] == "resume" and p["resume"] and not resumed:
            resumed = True
            if module.check_mode:
                module.exit_json(changed=True, node=node, status="resumed", resumed=True, waited=waited,
                                 message="would resume: %s" % verdict["message"])
            rc, out, err = scontrol.run("update", "NodeName=%s" % name, "State=RESUME")
            if rc != 0:
                module.fail_json(msg="node %s: scontrol update State=RESUME failed (rc %d): %s"
                                 % (name, rc, (err or out).strip()), node=node, status="failed", resumed=False,
                                 waited=waited, message=verdict["message"])
            time.sleep(0.5)
            continue
        if verdict["status"] == "ok":
            module.exit_json(changed=resumed, node=node, status="resumed" if resumed else "ok", resumed=resumed,
                             waited=waited, message=verdict["message"])
        if verdict["status"] == "failed":
            module.fail_json(msg="node %s: %s" % (name, verdict["message"]), node=node, status="failed",
                             resumed=resumed, waited=waited, message=verdict["message"])
        if time.monotonic() >= deadline:
            detail = verdict["message"]
            if not error and "State=" not in detail:
                detail += " (%s)" % describe(node)
            module.fail_json(msg="node %s: not registered as expected within %d s: %s" % (name, p["timeout"], detail),
                             node=node, status="timeout", resumed=resumed, waited=waited, message=verdict["message"])
        time.sleep(max(p["interval"], 0.1))


if __name__ == "__main__":
    main()
