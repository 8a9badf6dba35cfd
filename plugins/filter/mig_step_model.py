# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter for the serial MIG runbook: the cluster model of one node's step."""
from __future__ import annotations

DOCUMENTATION = r"""
name: mig_step_model
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: The cluster model for one node's step of a serial MIG reconfiguration
description:
  - The MIG runbook (C(hpc.slurm_gres.mig_reconfigure)) changes one node at a time, and slurmctld restarts at each
    step. The slurm.conf of a step must therefore carry the new Gres of the node being changed and the Gres every
    other node has I(now), or slurmctld would drain the nodes whose turn has not come.
  - Returns a copy of the model where O(host) keeps the inventory's layout and each other host named in O(live)
    gets the layout its GPUs have now (from P(hpc.slurm_gres.mig_live_layouts#filter)). Hosts not in O(live) keep
    the inventory's layout.
positional: _input, host, live
options:
  _input:
    description: The cluster model (P(hpc.slurm_gres.gres_cluster_model#filter)).
    type: dict
    required: true
  host:
    description: The inventory host whose new layout this step applies.
    type: str
    required: true
  live:
    description: "Inventory host to C({gpu index: [profiles] or null}), the layouts the nodes have now."
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Files for this node's step
  ansible.builtin.set_fact:
    step_files: >-
      {{ slurm_gres_model | hpc.slurm_gres.mig_step_model(inventory_hostname, live_by_host) | hpc.slurm_gres.gres_render }}
"""

RETURN = r"""
_value:
  description: The model for this step.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import step_model


def mig_step_model(model, host, live):
    if not isinstance(model, dict) or "nodes" not in model:
        raise AnsibleFilterError("mig_step_model: input must be the model from hpc.slurm_gres.gres_cluster_model")
    if not isinstance(live, dict):
        raise AnsibleFilterError("mig_step_model: live must map inventory hosts to {gpu index: profiles}")
    return step_model(model, host, live)


class FilterModule(object):
    """hpc.slurm_gres MIG step model filter."""

    def filters(self):
        return {"mig_step_model": mig_step_model}
