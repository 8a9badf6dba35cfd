# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Attribute blocks the modules share: where they run, and that they return no diff."""
from __future__ import annotations


class ModuleDocFragment(object):
    # A module that runs on a Linux host (a node or a controller).
    DOCUMENTATION = r"""
attributes:
  platform:
    platforms: posix
    support: full
    description: Linux.
"""

    # A module that returns no diff (read-only modules and the Slurm helpers).
    NO_DIFF = r"""
attributes:
  diff_mode:
    support: none
    description: No diff is returned.
"""

    # An action that does its work on the control machine (a documentation stub in modules/).
    CONTROLLER = r"""
attributes:
  action:
    support: full
    description: Runs on the controller only.
  platform:
    platforms: posix
    support: full
    description: The controller (the machine running ansible-playbook).
"""
