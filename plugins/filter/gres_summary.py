# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: cluster model (+ rendered files) -> counts for a human-readable summary."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_summary
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Summarize a Slurm GPU cluster model and its rendered files
description:
  - Counts nodes, GPUs per type, MIG instances, shards, C(NodeName=) lines and files, and gives them as a few
    lines of text as well.
positional: _input, files
options:
  _input:
    description: The cluster model from P(hpc.slurm_gres.gres_cluster_model#filter).
    type: dict
    required: true
  files:
    description: The files from P(hpc.slurm_gres.gres_render#filter), to count them.
    type: dict
"""

EXAMPLES = r"""
- name: Print what was rendered
  ansible.builtin.debug:
    msg: "{{ (hpc_gres_model | hpc.slurm_gres.gres_summary(hpc_gres_files)).lines }}"
# msg:
#   - "cluster demo: 23 nodes (7 with GPUs, 16 CPU-only), controller slurm-ctl01"
#   - "GPUs: 44 (a100 34, h100_pcie 8, l40s 2)"
#   - "slurm.conf: 4 NodeName lines"
#   - "files: 9 (slurm.conf, cgroup.conf, 7 gres.conf)"
"""

RETURN = r"""
_value:
  description:
    - C(cluster), C(controllers), C(nodes), C(gpu_nodes), C(cpu_only_nodes), C(gpus), C(gpus_by_type),
      C(mig_instances_by_type), C(shards), C(nodename_lines), C(files), C(gres_conf_files) and C(lines)
      (the summary as text lines).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import summarize


def gres_summary(model, files=None):
    if not isinstance(model, dict) or "nodes" not in model:
        raise AnsibleFilterError("gres_summary: input must be the model from hpc.slurm_gres.gres_cluster_model")
    return summarize(model, files)


class FilterModule(object):
    """hpc.slurm_gres summary filter."""

    def filters(self):
        return {"gres_summary": gres_summary}
