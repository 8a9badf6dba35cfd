# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Keep the control process's heap out of the garbage collection of the workers it forks (callback gc_freeze).

ansible-playbook forks a worker for every task on every host. A fork inherits the parent's whole heap (the
inventory, every host's variables, the results so far), and Python's cyclic collector in the worker walks all of
it each time the worker's own allocations (templating the task's arguments) trigger a full collection: work that
grows with the inventory, per task and host, and writes the objects' GC headers, which copies their pages. Objects
frozen before the fork (gc.freeze) are never walked. Reference counting still frees everything as before; only
cyclic garbage made while frozen waits for the next collect_and_freeze.
"""
from __future__ import annotations

import gc


def freeze():
    """Before a task's workers are forked: move every object tracked now into the permanent generation."""
    gc.freeze()


def collect_and_freeze():
    """At a play's start: give the frozen objects back to the collector, collect the garbage, freeze the rest."""
    gc.unfreeze()
    gc.collect()
    gc.freeze()


def release():
    """At the end of the run: give every frozen object back to the collector."""
    gc.unfreeze()
