# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only callback: stop ansible-playbook at the start of a named play, as an admin's Ctrl-C or a lost session
would, or hold it there until a file disappears (a deploy caught holding the lock). Used by the molecule scenario
`run-safety` (test_interrupted, test_concurrent) through ANSIBLE_CALLBACK_PLUGINS / ANSIBLE_CALLBACKS_ENABLED; not shipped.

    DEPLOY_FAULT_PLAY    play name prefix to stop at
    DEPLOY_FAULT_MARKER  file written when the play is reached
    DEPLOY_FAULT_HOLD    wait while this file exists
    DEPLOY_FAULT_KILL    kill ansible-playbook (SIGKILL: no cleanup of any kind) when the play is reached
"""
from __future__ import annotations

DOCUMENTATION = r"""
name: deploy_fault
type: aggregate
short_description: Kill or hold ansible-playbook at the start of a named play (molecule tests only)
description:
  - Kill or hold ansible-playbook at the start of a named play (molecule tests only).
requirements:
  - enable in configuration
"""

import os
import signal
import time

from ansible.plugins.callback import CallbackBase


class CallbackModule(CallbackBase):
    CALLBACK_VERSION = 2.0
    CALLBACK_TYPE = "aggregate"
    CALLBACK_NAME = "deploy_fault"
    CALLBACK_NEEDS_ENABLED = True

    def v2_playbook_on_play_start(self, play):
        target = os.environ.get("DEPLOY_FAULT_PLAY")
        if not target or not play.get_name().startswith(target):
            return
        marker = os.environ.get("DEPLOY_FAULT_MARKER")
        if marker:
            with open(marker, "w") as handle:
                handle.write(play.get_name())
        hold = os.environ.get("DEPLOY_FAULT_HOLD")
        while hold and os.path.exists(hold):
            time.sleep(0.2)
        if os.environ.get("DEPLOY_FAULT_KILL"):
            os.kill(os.getpid(), signal.SIGKILL)
