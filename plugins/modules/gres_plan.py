#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the gres_plan action (plugins/action/gres_plan.py); it runs on the controller."""

DOCUMENTATION = r"""
module: gres_plan
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: The cross-host decisions of the deploy, the rollback, the MIG runbook and the maintenance (used by the playbooks)
description:
  - The decisions of C(hpc.slurm_gres.deploy_gres), C(hpc.slurm_gres.rollback_gres),
    C(hpc.slurm_gres.mig_reconfigure) and C(hpc.slurm_gres.maintenance_gres) that depend on more than one host,
    each made once in Python on the control machine from what the hosts reported; the plays only read RV(plan). It
    is part of those playbooks, not an interface for plays of your own.
  - "O(stage=gate), after every targeted node ran M(hpc.slurm_gres.gres_verify) (registered as
    C(hpc_gres_verify_result)) and the controllers read their files and the daemons' versions: the targeted nodes
    (play hosts in group C(slurmd)) and their Slurm names, the targeted controllers and each one's plan (restart
    slurmctld before or after the slurmd restarts, or reconfigure), the Gres each node must register with. Fails,
    naming them, unless every targeted node passed verification and every daemon runs the release the files are
    rendered for, when a node's Gres changes without a targeted slurmctld, and when slurm.conf changes the Gres of
    a node the run does not restart, and when the run's tags select the restart step but not the install while a
    targeted node has files other than the render installed. Nothing is installed anywhere then. In check mode the
    refusal is deferred (C(plan.check_refusal)) and RV(report_lines) say what the deploy would do, with the diffs
    grouped by hostlist; a real run the gate lets through gets RV(report_lines) saying what it does."
  - "O(stage=jobs): after the gate, from slurmctld's one read O(read) (M(hpc.slurm_gres.slurm_node)) of the nodes in
    the gate's C(plan.job_loss) (those whose jobs slurmctld ends when it restarts with the new files: a GRES count or
    cores that change, a GPU type removed from 23.11), the refusal while any of them runs such a job."
  - "O(stage=restarted): C(plan.failed_nodes), the targeted nodes whose slurmd restart did not finish."
  - "O(stage=registered): from slurmctld's one read O(read) of every targeted node (M(hpc.slurm_gres.slurm_node)
    with O(hpc.slurm_gres.slurm_node#module:nodes)), C(plan.confirm_hosts), the hosts to confirm one by one
    (not registered as declared yet: waiting, DOWN, or a GRES-mismatch drain to resume; a node restarted by this run
    was waited for in its batch and is judged like any other), C(plan.registered) (node name to the confirmation of
    each other node) and C(plan.registered_lines)."
  - "O(stage=confirmed): C(plan.smoke_nodes) (registered, not drained, not DOWN), C(plan.smoke_preferred_nodes)
    (restarted by this run) and C(plan.smoke), the sruns of the smoke test with the C(CUDA_VISIBLE_DEVICES) each
    must print."
  - "O(stage=smoke): C(plan.smoke), the smoke test's sruns on the O(nodes) alone (Slurm node names), one per GPU type
    they have, MIG types included, with the C(CUDA_VISIBLE_DEVICES) each must print; the files O(files) say which
    types and how many (the MIG runbook, after a node's new layout)."
  - "O(stage=controller): one controller's plan for O(files), from its M(hpc.slurm_gres.config_tree) read O(read)
    (the MIG runbook and a rollback plan with files other than the render's)."
  - "O(stage=owner): who runs this deploy (user, control machine, ansible-playbook's pid) and whether the lock
    holder O(lock) is an interrupted run of this control machine whose lock may be taken over."
  - "O(stage=lock): whether the MIG runbook (O(command=MIG reconfiguration)) may take the O(lock): refused while
    another run holds it or a deploy or rollback of the O(unfinished) runs did not finish. C(plan.owner) (as
    O(stage=owner)), C(plan.break_lock) (the stale lock it takes over, or null) and C(plan.continues) (the run ids
    of interrupted runs of the same command, superseded at its end)."
  - "O(stage=changes): what the run changes per host (the files each daemon runs with against the new ones, from
    the hosts' plans), for M(hpc.slurm_gres.gres_run)'s record; C(plan.install_lines), one line per host whose
    install writes something (the files, the restart), for a check run of a rollback."
  - "O(stage=summary): the end of a run, one line per host of the O(record), its final state."
  - "O(stage=mig_status): whether the MIG runbook can leave O(host) alone."
  - "O(stage=health_library): the GPU health check's library as this collection ships it, RV(files) and RV(sha256)
    (the deploy installs it on a node whose copy differs)."
  - "O(stage=restart_batch): the slurmd restarts of one batch of the role hpc_gres_slurmd's handler, from what the
    O(target_hosts) requested: C(plan.nodes) (their Slurm names, read before the restarts) and C(plan.lines) (one
    per node, with its reasons); with
    O(read) (that read) also C(plan.registrations), node name to C({gres, since, resume}) of each node whose
    restart did not fail, for M(hpc.slurm_gres.slurm_node)'s O(hpc.slurm_gres.slurm_node#module:registrations)."
  - "O(stage=waves): the maintenance's next wave and every wave after it (C(plan.wave), C(plan.wave_hosts),
    C(plan.waves)), from slurmctld's O(slurm_nodes) and the outcomes the node cycles left on the O(target_hosts):
    in every partition the nodes out of service (down, drained, rebooting, ..., whoever made them so; this run's
    failed nodes count against O(max_failures) instead) plus the wave's available nodes stay within O(cap) or
    O(partition_caps); nodes this maintenance drained already go first, idle nodes before busy ones. Also
    C(plan.skipped), C(plan.blocked), C(plan.finished), C(plan.stopped), C(plan.expected_gres) (host to the Gres
    its node registers with) and C(plan.lines). A cap that is not a count or a percentage fails the task."
  - "O(stage=maintenance): the maintenance run's other decisions by O(phase): V(reboot) how the nodes reboot
    (O(reboot), slurmctld's O(config)); V(lock) whether the run may take the O(lock) (refused while another run
    holds it or a deploy did not finish); V(resume) which of the O(unfinished) runs of the same O(change) it
    continues; V(failure) the drain reason of a node whose cycle failed (O(task), O(result), O(node)); V(summary)
    one line per node and the run's final state."
options:
  stage:
    description: Which decision to make.
    type: str
    required: true
    choices: [gate, jobs, restarted, registered, confirmed, controller, owner, changes, summary, mig_status, waves, maintenance,
              health_library, restart_batch, lock, smoke]
  plan:
    description: The RV(plan) of the gate (O(stage=restarted), V(registered), V(confirmed), V(changes)); of O(stage=waves) for
      O(stage=maintenance) O(phase=summary).
    type: dict
  serial:
    description: O(stage=gate) in check mode, the slurmd restart batch size the report names.
    type: raw
  allow_state_change:
    description:
      - O(stage=gate) and O(stage=controller), install a C(slurm.conf) whose C(ClusterName), C(StateSaveLocation) or
        C(SlurmdSpoolDir) differs from the one the daemons run with. Refused by default, since slurmctld then starts
        without its jobs and node states (or stops on the cluster name), and slurmd no longer finds the running job
        steps.
      - O(stage=gate) also lets through a render that drops a partition or a node slurmctld has (their jobs fail)
        or every GPU of the nodes that have GPUs now.
    type: bool
    default: false
  defer_refusal:
    description: O(stage=gate), return the refusal in C(plan.refusal) without failing, for a play that prints
      C(plan.verify_failures) first and then fails with it.
    type: bool
    default: false
  judge_partitions:
    description: O(stage=controller), refuse files that drop a partition or a node slurmctld has (false for a
      rollback, which may take away a partition or a node its run added).
    type: bool
    default: true
  files:
    description: O(stage=controller) and O(stage=smoke), the files to plan for (file name to text, a node's
      gres.conf as C(NODE/gres.conf)).
    type: dict
  read:
    description: O(stage=controller) and V(mig_status), the host's M(hpc.slurm_gres.config_tree) read of its files;
      O(stage=registered), the M(hpc.slurm_gres.slurm_node) read of every targeted node (skipped or failed - every
      node is confirmed one by one); O(stage=restart_batch), its read of the batch's nodes before the restarts;
      O(stage=jobs), its read of the nodes in the gate's C(plan.job_loss).
    type: dict
  targeted_nodes:
    description: O(stage=controller), the Slurm nodes this run restarts; a Gres change of any other is refused.
    type: list
    elements: str
  wanted:
    description: O(stage=controller), the C(mode), C(owner) and C(group) the install gives the files.
    type: dict
  config_mode:
    description: O(stage=controller), how the cluster gets its files (C(files), C(configless), C(include)); default the
      render's on localhost. O(stage=smoke), the same (default C(files)).
    type: str
    choices: [files, configless, include]
  include_file:
    description: O(stage=controller) in include mode, the include file's name; default the render's.
    type: str
  site:
    description: O(stage=smoke) in include mode, the site's installed C(slurm.conf) and C(cgroup.conf) (a controller
      plan's C(site)), which decide whether jobs see their GPUs numbered from 0.
    type: dict
  command:
    description: O(stage=owner) and O(stage=lock), what the run does (C(deploy), C(rollback of RUN_ID), C(MIG reconfiguration)).
    type: str
    default: deploy
  lock:
    description: O(stage=owner), O(stage=lock) and O(stage=maintenance) O(phase=lock), the lock as M(hpc.slurm_gres.gres_run)
      O(hpc.slurm_gres.gres_run#module:step=inspect) returned it (its holder), or null.
    type: raw
  nodes:
    description: O(stage=changes), the node hosts of the run; O(stage=smoke), the Slurm node names to test.
    type: list
    elements: str
  names:
    description: O(stage=changes), node host to Slurm node name.
    type: dict
  controllers:
    description: O(stage=changes), the controller hosts of the run.
    type: list
    elements: str
  record:
    description: O(stage=summary), the run record.
    type: dict
  late:
    description: O(stage=summary), the run is being rolled back after a late failure.
    type: bool
    default: false
  node_records:
    description: O(stage=summary), node name to its record from M(hpc.slurm_gres.slurm_node).
    type: dict
  inventory_hint:
    description: O(stage=summary), the inventory arguments shown in the commands of the summary.
    type: str
    default: -i INVENTORY
  host:
    description: O(stage=mig_status), the inventory host.
    type: str
  check:
    description: O(stage=mig_status), the node's M(hpc.slurm_gres.mig_layout) result in check mode.
    type: dict
  node:
    description: O(stage=mig_status) and O(stage=maintenance) O(phase=failure), the node's record from
      M(hpc.slurm_gres.slurm_node).
    type: raw
  step:
    description: O(stage=mig_status), the M(hpc.slurm_gres.gres_render) result of this step.
    type: dict
  reason:
    description: O(stage=mig_status), the runbook's drain reason; O(stage=waves) and O(stage=maintenance), the
      maintenance's.
    type: str
  target_hosts:
    description: O(stage=waves) and O(stage=maintenance) O(phase=summary), the inventory hosts of the maintenance run;
      O(stage=restart_batch), the hosts of the batch (C(ansible_play_batch)).
    type: list
    elements: str
  slurm_nodes:
    description: O(stage=waves) and O(stage=maintenance) O(phase=summary), every node slurmctld knows (the
      RV(hpc.slurm_gres.slurm_node#module:nodes) of O(hpc.slurm_gres.slurm_node#module:state=info)).
    type: dict
  cap:
    description: O(stage=waves), nodes out of service at once per partition, a number or a percentage (C(25%)).
    type: raw
    default: 1
  partition_caps:
    description: O(stage=waves), partition name to its own cap.
    type: dict
    default: {}
  max_failures:
    description: O(stage=waves), failed nodes tolerated, a number or a percentage of O(target_hosts).
    type: raw
    default: 0
  done:
    description: O(stage=waves), node names done by the run this one continues.
    type: list
    elements: str
    default: []
  phase:
    description: O(stage=maintenance), which decision.
    type: str
    choices: [lock, resume, reboot, failure, summary]
  unfinished:
    description: O(stage=lock), and O(stage=maintenance) O(phase=lock) and V(resume), the records of the runs that did not finish.
    type: list
    elements: dict
    default: []
  break_lock:
    description: O(stage=lock) and O(stage=maintenance) O(phase=lock), the run id whose lock an admin breaks.
    type: str
    default: ""
  change:
    description: O(stage=maintenance) O(phase=resume), what the run does (its task file, role, reboot).
    type: dict
    default: {}
  resume:
    description: O(stage=maintenance) O(phase=resume), continue a run of the same change that did not finish.
    type: bool
    default: true
  reboot:
    description: O(stage=maintenance) O(phase=reboot), V(auto), V(slurm), V(ansible) or V(none).
    type: str
    default: auto
  config:
    description: O(stage=maintenance) O(phase=reboot), what C(scontrol show config) printed.
    type: str
    default: ""
  reboot_timeout:
    description: O(stage=maintenance) O(phase=reboot), seconds a reboot may take.
    type: int
    default: 1800
  reboot_tasks:
    description: O(stage=maintenance) O(phase=reboot), the site's task file that reboots a node when the mode is
      V(ansible) (named in the plan's notes instead of C(ansible.builtin.reboot)).
    type: str
    default: ""
  run_id:
    description: O(stage=maintenance) O(phase=summary), the run.
    type: str
  continues:
    description: O(stage=maintenance) O(phase=summary), the run this one continues.
    type: str
  task:
    description: O(stage=maintenance) O(phase=failure), the name of the task that failed.
    type: str
  result:
    description: O(stage=maintenance) O(phase=failure), its result.
    type: raw
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes.controller
attributes:
  check_mode:
    support: full
    description:
      - The same decisions, except that a refusal of O(stage=gate) does not fail the task; it is returned as
        C(plan.check_refusal) with the report, so that the check run reports every node before it ends with it.
"""

EXAMPLES = r"""
- name: Install nothing unless every targeted node passed
  hpc.slurm_gres.gres_plan:
    stage: gate
  run_once: true
  register: hpc_gres_deploy

- name: slurmd restarts check the Gres at once unless slurmctld restarts after them
  ansible.builtin.debug:
    msg: "{{ hpc_gres_deploy.plan.check_gres_on_restart }}"
"""

RETURN = r"""
files:
  description: O(stage=health_library), the library's files (path relative to the collection root to text).
  returned: with O(stage=health_library)
  type: dict
sha256:
  description: O(stage=health_library), the library's digest (as the deploy compares it with a node's copy).
  returned: with O(stage=health_library)
  type: str
plan:
  description:
    - O(stage=gate), C(targets) (inventory hosts), C(names) (host to node name), C(controllers),
      C(controller_plans) (host to its plan), C(unverified), C(verify_failures) (the lines saying why each of
      those did not pass, its findings table or error, nodes with the same findings grouped), C(version_problems),
      C(gres_changing),
      C(slurmctld_restart_after), C(check_gres_on_restart), C(expected_gres), C(install_hosts),
      C(health_hosts) and C(restart_hosts) (the hosts the install, the health check's install and the slurmd restart
      steps have something to do on) and C(refusal)
      (the message when the deploy must stop, else null); in check mode C(check_refusal). O(stage=restarted) adds C(failed_nodes),
      O(stage=registered) C(confirm_hosts), C(registered) and C(registered_lines), O(stage=confirmed) C(smoke_nodes),
      C(smoke_preferred_nodes) and C(smoke).
    - The other stages return their decision (a controller plan, the owner, the changes, the summary, the status).
  returned: always
  type: dict
  sample: {"targets": ["gpu-a01.example.org"], "names": {"gpu-a01.example.org": "gpu-a01"},
           "controllers": ["ctl01"], "unverified": [], "refusal": null}
report_lines:
  description:
    - O(stage=gate), what the deploy would do in check mode, or does in a real run the gate lets through (verdicts
      per group of nodes, the restarts in order).
  returned: with O(stage=gate), in check mode or when the deploy is not refused
  type: list
  elements: str
"""
