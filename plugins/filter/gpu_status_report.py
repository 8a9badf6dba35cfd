# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: a node's gathered hardware -> which GPUs are free, with report lines."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gpu_status_report
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Report GPU use on a node and the CUDA_VISIBLE_DEVICES line for its free GPUs
description:
  - From C(hpc_gres_hw) (M(hpc.slurm_gres.gpu_facts)), one entry per GPU with memory used and free, its
    processes (pid, user, elapsed time, command, MiB) and a state, C(free), C(busy), C(mig) or C(unknown).
  - A GPU is free when it runs no process, is not in MIG mode and has at least O(min_free_mib) MiB free.
  - nvidia-smi numbers GPUs in PCI bus order, so C(CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=<free
    indexes>) selects exactly the free GPUs.
positional: _input, host
options:
  _input:
    description: C(ansible_facts.hpc_gres_hw) of one node.
    type: dict
    required: true
  host:
    description: The name to start each report line with.
    type: str
    required: true
  min_free_mib:
    description: Free memory a GPU needs to count as free.
    type: int
    default: 0
  declared_gpus:
    description:
      - The node's C(hpc_gres_gpus) from the inventory. When given, GPUs it declares that nvidia-smi does not list
        are reported as missing; GPUs nvidia-smi cannot reach (C(lost_gpus)) are reported either way.
    type: list
    elements: dict
  slurm_node:
    description:
      - The node is a Slurm node (in group C(slurmd)). Its last line then names the free GPUs without a
        C(CUDA_VISIBLE_DEVICES) line, as jobs get their GPUs from Slurm (C(--gres)).
    type: bool
    default: false
  slurm:
    description:
      - slurmctld's record of the node, as M(hpc.slurm_gres.slurm_node) reads it (with O(hpc.slurm_gres.slurm_node#module:details)
        for C(GresUsed)); an empty dict for a node slurmctld does not know. The last line then ends with the node's
        state, the GPUs allocated of those it registered, and the reason of a node drained or down.
    type: dict
"""

EXAMPLES = r"""
- name: Show GPU use
  ansible.builtin.debug:
    msg: "{{ (ansible_facts.hpc_gres_hw | hpc.slurm_gres.gpu_status_report(inventory_hostname, 20000)).lines }}"
# msg:
#   - "gpu-h01: GPU 0  NVIDIA H200  130013/143771 MiB  busy   pid 1328667 alice 1-02:03:04 130004 MiB python3"
#   - "gpu-h01: GPU 1  NVIDIA H200       1/143771 MiB  free   143770 MiB free"
#   - "gpu-h01: CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1"
"""

RETURN = r"""
_value:
  description: C(gpus) (per GPU), C(free) (indexes), C(cuda_env) (the line, or null when none is free),
    C(lost) (GPUs nvidia-smi cannot reach), C(missing) (declared GPUs nvidia-smi does not list) and C(lines) (the
    report as text lines).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.gpu_status import declared_count, gpu_status, status_lines


def gpu_status_report(hw, host, min_free_mib=0, declared_gpus=None, slurm_node=False, slurm=None):
    if not isinstance(hw, dict) or "gpus" not in hw:
        raise AnsibleFilterError("gpu_status_report: input must be ansible_facts.hpc_gres_hw from "
                                 "hpc.slurm_gres.gpu_facts, found %s" % type(hw).__name__)
    try:
        min_free_mib = int(min_free_mib or 0)
    except (TypeError, ValueError):
        raise AnsibleFilterError("gpu_status_report: min_free_mib: expected an integer (MiB), found %r"
                                 % (min_free_mib,))
    report = gpu_status(hw, min_free_mib, declared_count(declared_gpus))
    if slurm is not None and not isinstance(slurm, dict):
        raise AnsibleFilterError("gpu_status_report: slurm: expected slurmctld's record of the node (a dict), found %s"
                                 % type(slurm).__name__)
    report["lines"] = status_lines(str(host), report, bool(slurm_node), slurm)
    return report


class FilterModule(object):
    """hpc.slurm_gres GPU status filter."""

    def filters(self):
        return {"gpu_status_report": gpu_status_report}
