# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: does the MIG runbook need to touch this node, or is it done already."""
from __future__ import annotations

DOCUMENTATION = r"""
name: mig_runbook_status
author: hpc.slurm_gres contributors
version_added: "0.1.0"
short_description: Decide whether the MIG runbook can leave a node alone
description:
  - The idempotence check of the role C(hpc.slurm_gres.hpc_gres_mig), in Python. A node is done when its GPUs have
    the declared MIG layout (the M(hpc.slurm_gres.mig_layout) check reports no change), the gres.conf rendered from
    its live MIG devices is the installed one and the one slurmd last started with, slurm.conf is the step's, and
    the node is not drained by the runbook. Anything else is a reason to run the runbook on it; a run that stopped
    half-way is therefore finished by the next.
positional: _input, check, node, files_read, step, reason
options:
  _input:
    description: The inventory host.
    type: str
    required: true
  check:
    description: The node's M(hpc.slurm_gres.mig_layout) result in check mode (C(changed), C(hw)).
    type: dict
    required: true
  node:
    description: The node's record from M(hpc.slurm_gres.slurm_node_info).
    type: dict
    required: true
  files_read:
    description:
      - The M(hpc.slurm_gres.slurm_conf_files) result for C(installed) and C(applied), names C(gres.conf) and
        C(slurm.conf).
    type: dict
    required: true
  step:
    description:
      - The M(hpc.slurm_gres.gres_render_cluster) result of this step
        (O(hpc.slurm_gres.gres_render_cluster#module:mig_step)).
    type: dict
    required: true
  reason:
    description: The runbook's drain reason.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Decide
  ansible.builtin.set_fact:
    status: >-
      {{ inventory_hostname | hpc.slurm_gres.mig_runbook_status(check, info.nodes[name], read, step,
                                                                'MIG reconfiguration') }}
# status: {done: false, why: ["the GPUs do not have the declared MIG layout"], ours: false}
"""

RETURN = r"""
_value:
  description: C(done) (bool), C(why) (the reasons it is not done) and C(ours) (drained with the runbook's reason).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import runbook_status


def mig_runbook_status(host, check, node, files_read, step, reason):
    if not isinstance(step, dict) or host not in (step.get("mig_nodes") or {}):
        raise AnsibleFilterError("mig_runbook_status: step must be the gres_render_cluster result of this step, "
                                 "with %s in its mig_nodes" % host)
    return runbook_status(host, check or {}, node, files_read or {}, step, reason)


class FilterModule(object):
    """hpc.slurm_gres MIG runbook decision."""

    def filters(self):
        return {"mig_runbook_status": mig_runbook_status}
