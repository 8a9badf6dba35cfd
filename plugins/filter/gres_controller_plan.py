# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: what slurmctld needs for a new slurm.conf: restart before / after the slurmd restarts, or reconfigure."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_controller_plan
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Decide when slurmctld restarts for a new slurm.conf
description:
  - Compares the slurm.conf slurmctld last started with (O(applied)) with the new one (O(_input)) by meaning.
  - Slurm 22.05 pins a node's GRES count at its first registration after slurmctld starts, and refuses a count
    change with C(File=) by C(scontrol reconfigure). So a count that goes down needs slurmctld restarted
    C(before) the node's slurmd, a count that goes up needs it restarted C(after); other node-definition or
    global changes restart it before; partitions or scheduling-only node keys need only C(scontrol reconfigure).
positional: _input, applied, targeted_nodes
options:
  configless:
    description:
      - Configless mode. C(new) and C(applied) each map the controller's file names (C(slurm.conf), C(cgroup.conf),
        C(gres.conf)) to their text. slurmctld serves these files to the nodes as it read them at its start, so any
        change in meaning restarts it before the slurmd restarts (never after).
    type: dict
  _input:
    description: The new slurm.conf text.
    type: str
    required: true
  applied:
    description: The slurm.conf slurmctld runs with; null when there is none.
    type: str
    required: true
  targeted_nodes:
    description:
      - Slurm node names this run restarts slurmd on when needed. Nodes whose GRES definition changes but are not
        listed are returned in C(untargeted); restarting slurmctld without them would drain them.
      - Null skips that check.
    type: list
    elements: str
"""

EXAMPLES = r"""
- name: Plan slurmctld
  ansible.builtin.set_fact:
    ctld_plan: "{{ new_slurm_conf | hpc.slurm_gres.gres_controller_plan(applied_slurm_conf, ['gpu-a01', 'gpu-a02']) }}"
# ctld_plan:
#   restart_before: false
#   restart_after: true
#   reconfigure: false
#   reasons: ["GRES count goes up on gpu-a02"]
#   untargeted: []
"""

RETURN = r"""
_value:
  description: C(restart_before), C(restart_after), C(reconfigure) (bools), C(reasons), C(untargeted) (node names)
    and C(slurm_conf) (the parsed difference).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.deploy_files import configless_restart
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.restart_plan import controller_plan
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError


def gres_controller_plan(new, applied, targeted_nodes=None, configless=None):
    if not isinstance(new, str):
        raise AnsibleFilterError("gres_controller_plan: the input must be slurm.conf text, got %s"
                                 % type(new).__name__)
    if applied is not None and not isinstance(applied, str):
        raise AnsibleFilterError("gres_controller_plan: applied must be slurm.conf text or null, got %s"
                                 % type(applied).__name__)
    try:
        plan = controller_plan(applied, new, list(targeted_nodes) if targeted_nodes is not None else None)
        if configless:
            reasons = configless_restart(configless.get("applied") or {}, configless.get("new") or {})
            if reasons or plan["restart_after"]:
                plan["reasons"] = sorted(set(plan["reasons"]) | set(reasons))
                plan.update(restart_before=True, restart_after=False, reconfigure=False)
        return plan
    except (ConfSyntaxError, ValueError) as exc:
        raise AnsibleFilterError("gres_controller_plan: %s" % exc)


class FilterModule(object):
    """hpc.slurm_gres restart plan for slurmctld."""

    def filters(self):
        return {"gres_controller_plan": gres_controller_plan}
