# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: a mig_layout result's plan -> the MIG layout each GPU has now."""
from __future__ import annotations

DOCUMENTATION = r"""
name: mig_live_layouts
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: The MIG layout each GPU of a node has now, from a mig_layout result
description:
  - "Turns the RV(hpc.slurm_gres.mig_layout#module:plan) of a M(hpc.slurm_gres.mig_layout) run (usually in check mode)
    into C({gpu index: [profiles] or null}), one profile entry per GPU instance the GPU has now, sorted by name;
    C(null) for a GPU with MIG off or without MIG."
positional: _input
options:
  _input:
    description: The C(plan) list of a M(hpc.slurm_gres.mig_layout) result.
    type: list
    elements: dict
    required: true
"""

EXAMPLES = r"""
- name: What the GPUs have now
  hpc.slurm_gres.mig_layout:
    layouts: "{{ wanted }}"
  check_mode: true
  register: mig_now

- name: Remember it
  ansible.builtin.set_fact:
    live: "{{ mig_now.plan | hpc.slurm_gres.mig_live_layouts }}"
# live: {0: [1g.10gb, 1g.10gb, 2g.20gb, 3g.40gb], 1: null}
"""

RETURN = r"""
_value:
  description: GPU index to its list of GPU-instance profiles, or null.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import live_layouts


def mig_live_layouts(plan):
    if not isinstance(plan, list):
        raise AnsibleFilterError("mig_live_layouts: input must be the plan list of a hpc.slurm_gres.mig_layout result")
    return live_layouts(plan)


class FilterModule(object):
    """hpc.slurm_gres MIG live layout filter."""

    def filters(self):
        return {"mig_live_layouts": mig_live_layouts}
