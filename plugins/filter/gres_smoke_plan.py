# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: the post-deploy srun tests, one per GPU type, with the exact CUDA_VISIBLE_DEVICES expected."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_smoke_plan
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Plan the post-deploy srun smoke test, one per GPU type
description:
  - For each GPU type in the rendered files, picks the usable node with most GPUs of that type and requests all of
    them (C(--gres=gpu:TYPE:N)).
  - The expected C(CUDA_VISIBLE_DEVICES) is C(0,...,N-1) when jobs are confined to their devices (C(task/cgroup)
    with C(ConstrainDevices=yes)); otherwise Slurm passes the node's own device positions, which follow the order of
    the types in the node's C(Gres=) (seen live on Slurm 22.05), and those are expected.
  - MIG types (C(MultipleFiles) in gres.conf) are not tested.
positional: _input, usable_nodes, preferred_nodes
options:
  _input:
    description: The rendered files (C(slurm.conf), C(cgroup.conf), C(<node>/gres.conf)).
    type: dict
    required: true
  usable_nodes:
    description: Slurm node names the test may run on (registered, not drained). Null allows all.
    type: list
    elements: str
  preferred_nodes:
    description: Slurm node names to pick first for the types they have (the nodes the deploy restarted).
    type: list
    elements: str
  confinement:
    description:
      - C({"slurm.conf", "cgroup.conf"}) texts that decide device confinement (C(TaskPlugin), C(ConstrainDevices))
        when they are not the rendered files, as in include mode where the site's own files hold them.
    type: dict
"""

EXAMPLES = r"""
- name: Plan the smoke test
  ansible.builtin.set_fact:
    smoke: "{{ hpc_gres_files | hpc.slurm_gres.gres_smoke_plan(['gpu-a01', 'gpu-h01']) }}"
# smoke:
#   - {type: a100, node: gpu-a01, count: 8, gres: "gpu:a100:8", expected: "0,1,2,3,4,5,6,7"}
#   - {type: h100, node: gpu-h01, count: 4, gres: "gpu:h100:4", expected: "0,1,2,3"}
"""

RETURN = r"""
_value:
  description: A list of C({type, node, count, gres, expected}), sorted by type.
  type: list
  elements: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.smoke import smoke_plan


def gres_smoke_plan(files, usable_nodes=None, preferred_nodes=None, confinement=None):
    if not isinstance(files, dict) or "slurm.conf" not in files:
        raise AnsibleFilterError("gres_smoke_plan: the input must be the rendered files (with slurm.conf)")
    try:
        return smoke_plan(files, list(usable_nodes) if usable_nodes is not None else None,
                          list(preferred_nodes) if preferred_nodes is not None else None, confinement)
    except (ConfSyntaxError, ValueError) as exc:
        raise AnsibleFilterError("gres_smoke_plan: %s" % exc)


class FilterModule(object):
    """hpc.slurm_gres smoke test plan."""

    def filters(self):
        return {"gres_smoke_plan": gres_smoke_plan}
