# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options of the modules that talk to slurmctld (module_utils/slurm/scontrol.py SCONTROL_ARGS)."""
from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  scontrol:
    description: The scontrol command, a name looked up in E(PATH) or an absolute path.
    type: str
    default: scontrol
  slurm_conf:
    description: Path of the slurm.conf scontrol reads (E(SLURM_CONF)); the system default when unset.
    type: path
notes:
  - Run it where scontrol reaches slurmctld, typically with C(delegate_to) a controller.
"""
