#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the gres_deploy_plan action (plugins/action/gres_deploy_plan.py); it runs on the controller."""

DOCUMENTATION = r"""
module: gres_deploy_plan
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Make the deploy's cross-host decisions once, from what every host reported
description:
  - The decisions of C(playbooks/deploy-gres.yml) that depend on other hosts, each made once in Python from the
    facts the roles C(hpc.slurm_gres.hpc_gres_slurmd) and C(hpc.slurm_gres.hpc_gres_slurmctld) publish; the
    plays only read RV(plan). Use it with C(run_once) and C(register).
  - "O(stage=gate), after verification: the targeted nodes (play hosts in group C(slurmd)), their Slurm node names
    and the targeted controllers (play hosts in C(slurmctld)). Fails, naming them, unless every targeted node has
    C(hpc_gres_slurmd_verified): nothing is installed anywhere then."
  - "O(stage=order), after the read-only restart plans: fails when a node's Gres changes
    (C(hpc_gres_slurmd_plan.gres_changed)) and no slurmctld host is targeted; C(plan.check_gres_on_restart) is
    false when slurmctld restarts after the slurmd restarts (a count goes up), so those restarts do not yet
    compare the registered Gres; C(plan.expected_gres) is the Gres each node must register with, by node name
    (the confirmation reads every node in one call)."
  - "O(stage=restarted), after the slurmd restarts: C(plan.failed_nodes), the targeted nodes without
    C(hpc_gres_slurmd_done); slurmctld then holds back new, higher counts."
  - "O(stage=confirmed), after the confirmation: C(plan.smoke_nodes), nodes registered (C(ok) or C(resumed)),
    not drained and not DOWN, and C(plan.smoke_preferred_nodes), those this run restarted."
options:
  stage:
    description: Which decision to make.
    type: str
    required: true
    choices: [gate, order, restarted, confirmed]
  plan:
    description: The RV(plan) of the previous stage; required after O(stage=gate).
    type: dict
  hosts:
    description: The hosts of this deploy (O(stage=gate)). Default, C(ansible_play_hosts_all).
    type: list
    elements: str
  names:
    description:
      - Inventory host to Slurm node name, the RV(hpc.slurm_gres.gres_render_cluster#module:nodes) of the render.
    type: dict
    default: {}
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes.controller
attributes:
  check_mode:
    support: full
    description:
      - The same decisions, except that a refusal of O(stage=gate) does not fail the task; it is returned as
        C(plan.check_refusal) so that the check run can report every node (M(hpc.slurm_gres.gres_check_report))
        before it ends with that refusal.
"""

EXAMPLES = r"""
- name: Install nothing unless every targeted node passed
  hpc.slurm_gres.gres_deploy_plan:
    stage: gate
    names: "{{ hostvars['localhost'].hpc_gres_render_result.nodes }}"
  run_once: true
  register: hpc_gres_deploy

- name: slurmd restarts check the Gres at once unless slurmctld restarts after them
  ansible.builtin.debug:
    msg: "{{ hpc_gres_deploy.plan.check_gres_on_restart }}"
"""

RETURN = r"""
plan:
  description:
    - C(targets) (inventory hosts), C(names) (host to node name), C(controllers), C(unverified) and C(refusal)
      (the message when the deploy must stop, else null), in check mode C(check_refusal) (the gate's refusal,
      deferred); from O(stage=order) on also C(gres_changing),
      C(slurmctld_restart_after), C(check_gres_on_restart) and C(expected_gres); from O(stage=restarted) C(failed_nodes); from
      O(stage=confirmed) C(smoke_nodes) and C(smoke_preferred_nodes).
  returned: always
  type: dict
  sample: {"targets": ["gpu-a01.example.org"], "names": {"gpu-a01.example.org": "gpu-a01"},
           "controllers": ["ctl01"], "unverified": [], "refusal": null}
"""
