# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module attributes shared by the collection's modules."""
from __future__ import annotations


class ModuleDocFragment:
    """``hpc.slurm_gres.attributes`` (every module) plus one of its variants, for example
    ``hpc.slurm_gres.attributes.read_only``."""

    # Every module: runs on the managed node, which is POSIX (Linux for anything NVIDIA).
    DOCUMENTATION = r"""
attributes:
  platform:
    platforms: posix
    support: full
    description: Runs on the managed node; any POSIX system with Python 3.9 or later (Linux for the NVIDIA driver).
"""

    # Modules that only read the node.
    READ_ONLY = r"""
attributes:
  check_mode:
    support: full
    description: Reads only, so it runs the same in check mode.
  diff_mode:
    support: none
    description: Changes nothing, so there is nothing to show a diff of.
"""

    # Modules that return facts.
    FACTS = r"""
attributes:
  facts:
    support: full
    description: Returns its results as facts (RV(ansible_facts)), available to later tasks without C(register).
"""
