#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the gres_check_report action (plugins/action/gres_check_report.py); it runs on the controller."""

DOCUMENTATION = r"""
module: gres_check_report
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.2.0"
short_description: Say what a check run of the deploy would do, per node, once for the whole cluster
description:
  - "Run by C(playbooks/deploy-gres.yml --check) once, after the restart plans. Prints one verdict line per group of
    nodes with the same verdict (C(would install FILES; slurmd would restart (REASONS)), C(would be refused at
    verify) with the first finding, C(unchanged)), the restarts in the order the deploy would make them, and with
    C(--diff) the unified diff of every file that would change, shown once per group of hosts with identical
    changes, headed by a Slurm hostlist (C(gpu-a[001-500]))."
  - "Reads the facts the roles publish (C(hpc_gres_slurmd_check_installed), C(hpc_gres_slurmd_verified), the
    verification result, C(hpc_gres_slurmd_new_files), C(hpc_gres_slurmd_plan),
    C(hpc_gres_slurmctld_check_installed), C(hpc_gres_slurmctld_plan)); writes nothing anywhere and never
    fails for a refused deploy (the refusal is in C(refusal) of RV(report); the playbook fails after the report).
    Print RV(msg) with M(ansible.builtin.debug) (see the examples); the result itself is not printed. The task is
    C(changed) when a file would change (as any task in check mode; Ansible shows a diff only then)."
options:
  plan:
    description: The RV(hpc.slurm_gres.gres_deploy_plan#module:plan) of stage C(order).
    type: dict
    required: true
  files:
    description: The rendered files. Default, the C(files) of C(hpc_gres_render_result) on localhost.
    type: dict
  serial:
    description: The slurmd restart batch size, to show in the restart order.
    type: raw
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.controller
attributes:
  check_mode:
    support: full
    description: Meant for check mode; it reads only.
  diff_mode:
    support: full
    description: The unified diffs, one per group of identical changes.
"""

EXAMPLES = r"""
- name: The diffs, once per group of identical changes (with --diff)
  hpc.slurm_gres.gres_check_report:
    plan: "{{ hpc_gres_deploy.plan }}"
    serial: "{{ hpc_gres_deploy_serial | default('25%') }}"
  run_once: true
  register: hpc_gres_check_report
  when: ansible_check_mode

- name: The verdicts and the restart order
  ansible.builtin.debug:
    msg: "{{ hpc_gres_check_report.msg }}"
  run_once: true
  when: ansible_check_mode
"""

RETURN = r"""
msg:
  description: The report for humans, one line each.
  returned: always
  type: list
  elements: str
  sample: ["check mode: nothing was changed. What this deploy would do:",
           "  gres-ctl     slurmctld host: would install slurm.conf",
           "  gres-gpu01   would install slurm.conf; slurmd would not restart"]
report:
  description:
    - "C(verdicts) (C({slurmd|slurmctld: {name: verdict}})), C(would_change) (C({name: [paths]})), C(restarts)
      (the steps in order) and C(refusal) (the message of a refused deploy, or null). The diffs are the task's
      diff (shown with C(--diff)), not part of the result."
  returned: always
  type: dict
"""
