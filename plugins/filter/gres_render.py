# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: cluster model -> {relative path: content} for slurm.conf, cgroup.conf and each node's gres.conf."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_render
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Render slurm.conf, cgroup.conf and per-node gres.conf from the cluster model
description:
  - Renders the files of the whole cluster from the model made by P(hpc.slurm_gres.gres_cluster_model#filter).
  - C(slurm.conf) has one C(NodeName=) line per group of identical nodes, compressed with Slurm hostlist syntax
    (C(gpu-a[01-04]), zero padding kept), and C(Gres=gpu:TYPE:N,...) with types in order of their lowest GPU index.
    C(GresTypes) and C(AccountingStorageTRES) are derived from the GRES in use.
  - Each C(<node>/gres.conf) collapses consecutive GPUs (by index and minor) of one type and one Cores set into
    one line, for example C(NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-63); GPUs with
    C(shards) get C(Name=shard Count=N File=...) lines.
  - Before returning, the files are parsed back and, per node and GRES type, the count in slurm.conf must equal
    the count in gres.conf; otherwise the filter fails. The same model always gives the same bytes.
positional: _input
options:
  _input:
    description: The cluster model from P(hpc.slurm_gres.gres_cluster_model#filter).
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: Render every file of the cluster
  ansible.builtin.set_fact:
    hpc_gres_files: "{{ hpc_gres_model | hpc.slurm_gres.gres_render }}"

# hpc_gres_files:
#   slurm.conf: "# slurm.conf for cluster demo\n...NodeName=gpu-a[01-04] Sockets=2 ... Gres=gpu:a100:8\n..."
#   cgroup.conf: "...ConstrainDevices=yes\n..."
#   gpu-a01/gres.conf: "...NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-63\n..."
"""

RETURN = r"""
_value:
  description: Relative path to file content; C(slurm.conf), C(cgroup.conf) and C(<slurm node name>/gres.conf)
    for every node with GPUs.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all


def gres_render(model):
    if not isinstance(model, dict) or "nodes" not in model:
        raise AnsibleFilterError("gres_render: input must be the model from hpc.slurm_gres.gres_cluster_model")
    try:
        return render_all(model)
    except GresError as exc:
        raise AnsibleFilterError("rendered files are inconsistent, nothing was written: %s" % exc)


class FilterModule(object):
    """hpc.slurm_gres render filter."""

    def filters(self):
        return {"gres_render": gres_render}
