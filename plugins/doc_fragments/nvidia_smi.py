# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Options of the modules that read a node's GPUs (module_utils/nvidia/collect.py COLLECT_ARGS)."""
from __future__ import annotations


class ModuleDocFragment(object):
    DOCUMENTATION = r"""
options:
  nvidia_smi:
    description: The nvidia-smi command, a name looked up in E(PATH) or an absolute path.
    type: str
    default: nvidia-smi
  sysfs_root:
    description:
      - Root under which C(sys/devices/system/cpu), C(proc/driver/nvidia-caps/mig-minors),
        C(proc/driver/nvidia/gpus/*/information) and C(proc/<pid>) are read. Tests point it at a fake tree
        (hwloc is then pointed at it too, with C(HWLOC_FSROOT)).
    type: path
    default: /
"""
