# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Callback: freeze the control process's heap before each task's workers fork (plugin_utils/gc_freeze.py)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gc_freeze
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
type: aggregate
short_description: Spare each forked worker a garbage collection of the whole inventory (large clusters)
description:
  - ansible-playbook forks a worker process for every task on every host. Each worker inherits the control
    process's heap (the inventory, every host's variables, the results so far), and Python's cyclic garbage
    collector in the worker walks all of it while the worker templates the task's arguments. That cost grows with
    the inventory, so a play's control-machine CPU grows faster than its number of hosts.
  - This callback moves the control process's objects into Python's permanent generation (C(gc.freeze)) before
    each task and handler, so that the workers forked for it never walk them. At the start of each play it
    collects the cyclic garbage of the play before (C(gc.unfreeze), C(gc.collect), C(gc.freeze)); at the end of the
    run it unfreezes everything.
  - It prints nothing and changes no task, result or variable. Reference counting frees objects as before; only
    cyclic garbage made during a play waits for the next play's start.
  - Enable it where the inventory has hundreds of hosts or more (C(callbacks_enabled) in C(ansible.cfg), or
    E(ANSIBLE_CALLBACKS_ENABLED)). docs/performance.md gives what it saves.
requirements:
  - enabled in C(callbacks_enabled)
"""

EXAMPLES = r"""
# ansible.cfg
# [defaults]
# callbacks_enabled = hpc.slurm_gres.gc_freeze

# or for one run
# ANSIBLE_CALLBACKS_ENABLED=hpc.slurm_gres.gc_freeze ansible-playbook -i inventories/prod hpc.slurm_gres.deploy_gres
"""

from ansible.plugins.callback import CallbackBase

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import gc_freeze


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "hpc.slurm_gres.gc_freeze"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        gc_freeze.collect_and_freeze()

    def v2_playbook_on_task_start(self, task, is_conditional):
        gc_freeze.freeze()

    def v2_playbook_on_handler_task_start(self, task):
        gc_freeze.freeze()

    def v2_playbook_on_stats(self, stats):
        gc_freeze.release()
