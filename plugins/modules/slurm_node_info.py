#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: what slurmctld says about nodes (scontrol show node), parsed."""

DOCUMENTATION = r"""
module: slurm_node_info
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Read slurmctld's view of Slurm nodes (state, registered Gres, drain reason)
description:
  - Runs C(scontrol show node) on a host that can reach slurmctld and returns each node's fields parsed, with the
    state split into base state and flags, the registered C(Gres=) as counts per GRES key and the drain reason
    without its C([user@time]) suffix.
  - Optionally judges each node against the Gres it should have, the way M(hpc.slurm_gres.slurm_node_confirm)
    does, without waiting or changing anything.
options:
  nodes:
    description: Slurm node names to read. Empty reads every node. A name slurmctld does not know gives C(null).
    type: list
    elements: str
    default: []
  expected_gres:
    description: Node name to a dict of GRES key to count (for example C(gpu:a100) to 4). When set, RV(verdicts) is returned.
    type: dict
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes
  - hpc.slurm_gres.scontrol
attributes:
  check_mode:
    support: full
    description: Read-only.
seealso:
  - module: hpc.slurm_gres.slurm_node_confirm
"""

EXAMPLES = r"""
- name: Remember when slurmd last registered, before restarting it
  hpc.slurm_gres.slurm_node_info:
    nodes: [gpu-a01]
  delegate_to: "{{ groups['slurmctld'][0] }}"
  register: before

- name: Show the state
  ansible.builtin.debug:
    msg: "{{ before.nodes['gpu-a01'].State }} {{ before.nodes['gpu-a01'].slurmd_start_time }}"
"""

RETURN = r"""
nodes:
  description:
    - Node name to its record, or C(null) for a requested node slurmctld does not know.
    - A record has every field as scontrol prints it (C(State), C(Gres), C(CPUTot), C(SlurmdStartTime), ...) plus
      C(name), C(state_base), C(state_flags), C(not_responding), C(gres), C(reason), C(reason_user),
      C(reason_time) and C(slurmd_start_time) (null until slurmd has registered).
  returned: always
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
  returned: when expected_gres is set
  type: dict
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import (
    SCONTROL_ARGS,
    Scontrol,
    parse_show_node,
    registration_verdict,
)


def read_nodes(module, scontrol, names):
    """{name: record or None} from ``scontrol show node``; fails the module on any other scontrol error."""
    if not names:
        rc, out, err = scontrol.run("show", "node")
        if rc != 0:
            module.fail_json(msg="scontrol show node failed (rc %d): %s" % (rc, err.strip() or out.strip()),
                             rc=rc, stdout=out, stderr=err)
        return parse_show_node(out)
    result, error = scontrol.nodes(names)
    if error:
        module.fail_json(msg=error)
    return result


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nodes=dict(type="list", elements="str", default=[]),
            expected_gres=dict(type="dict"),
            **SCONTROL_ARGS
        ),
        supports_check_mode=True,
    )
    scontrol = Scontrol(module.run_command, module.get_bin_path(module.params["scontrol"], required=True),
                        module.params["slurm_conf"])
    nodes = read_nodes(module, scontrol, module.params["nodes"])
    result = {"changed": False, "nodes": nodes}
    expected = module.params.get("expected_gres")
    if expected is not None:
        result["verdicts"] = {name: registration_verdict(nodes.get(name), gres)
                              for name, gres in sorted(expected.items())}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
