# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: a node's rendered gres.conf + its live MIG facts -> the gres.conf with its MIG lines completed."""
from __future__ import annotations

DOCUMENTATION = r"""
name: mig_gres_conf
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Complete a node's gres.conf with one MultipleFiles line per live MIG device
description:
  - "The render step (P(hpc.slurm_gres.gres_render#filter)) cannot know the C(/dev/nvidia-caps) files of a MIG GPU:
    their minors depend on the GPU and compute instance ids the driver handed out when the layout was applied. It
    leaves one comment per MIG GPU, C(# MIG: GPU 0 (...): MultipleFiles lines are completed on the node)."
  - This filter replaces each such comment with one line per MIG device,
    C(NodeName=N Name=gpu Type=TYPE MultipleFiles=/dev/nvidia<minor>,/dev/nvidia-caps/nvidia-cap<GI>,/dev/nvidia-caps/nvidia-cap<CI>),
    the file list Slurm's own NVML AutoDetect records, with the cap minors the node's
    C(/proc/driver/nvidia-caps/mig-minors) gives (as M(hpc.slurm_gres.gpu_facts) or M(hpc.slurm_gres.mig_layout)
    report them). Lines are ordered by GI then CI id, so an unchanged layout gives the same bytes.
  - "Before that it checks, failing with a message naming the host, field, expected and found: each MIG GPU of the
    node spec is in MIG mode and its live GPU instances are exactly its C(mig) list (as a multiset); every device
    has GI and CI ids and both cap minors; the driver's device minor is the inventory's C(minor)."
  - With O(slurm_conf), the completed file must also give the node exactly the GRES counts slurm.conf declares.
  - With C(AutoDetect=nvml) in the gres.conf, the MIG lines are left to slurmd; the live check still runs.
positional: _input, hw_facts, node_spec
options:
  _input:
    description: The node's gres.conf as rendered, C(slurm_gres_files['<node>/gres.conf']).
    type: str
    required: true
  hw_facts:
    description: The node's C(slurm_gres_hw) facts (M(hpc.slurm_gres.gpu_facts)) or the RV(hpc.slurm_gres.mig_layout#module:hw)
      return value, read after the layout was applied.
    type: dict
    required: true
  node_spec:
    description: The node's entry of the cluster model's C(nodes) (P(hpc.slurm_gres.gres_cluster_model#filter)).
    type: dict
    required: true
  slurm_conf:
    description: The rendered slurm.conf text; when given, the completed file's counts must equal its C(Gres=).
    type: str
"""

EXAMPLES = r"""
- name: Complete this node's gres.conf with its live MIG devices
  ansible.builtin.copy:
    content: "{{ slurm_gres_files[node ~ '/gres.conf'] | hpc.slurm_gres.mig_gres_conf(slurm_gres_hw, node_spec,
                 slurm_conf=slurm_gres_files['slurm.conf']) }}"
    dest: /etc/slurm/gres.conf
    mode: "0644"
  vars:
    node: "{{ inventory_hostname_short }}"
    node_spec: "{{ slurm_gres_model.nodes | selectattr('host', 'equalto', inventory_hostname) | first }}"

# NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia1 Cores=0-31
# # MIG: GPU 0 (a100, /dev/nvidia0) a100_3g.40gb,a100_1g.10gb: MultipleFiles lines are completed on the node
# # GPU 0 (minor 0) MIG 3g.40gb GI 2 CI 0 MIG-...
# NodeName=gpu-a01 Name=gpu Type=a100_3g.40gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22 Cores=0-31
"""

RETURN = r"""
_value:
  description: The gres.conf text with the MIG lines in place of the render step's comments.
  type: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import complete_gres_conf


def mig_gres_conf(base_gres_conf, hw_facts, node_spec, slurm_conf=None):
    if not isinstance(base_gres_conf, str):
        raise AnsibleFilterError("mig_gres_conf: input must be the node's rendered gres.conf text")
    if not isinstance(hw_facts, dict) or "gpus" not in hw_facts:
        raise AnsibleFilterError("mig_gres_conf: hw_facts must be slurm_gres_hw (hpc.slurm_gres.gpu_facts)")
    if not isinstance(node_spec, dict) or "name" not in node_spec or "gpus" not in node_spec:
        raise AnsibleFilterError("mig_gres_conf: node_spec must be one entry of the cluster model's nodes")
    try:
        return complete_gres_conf(base_gres_conf, hw_facts, node_spec, slurm_conf=slurm_conf)
    except GresError as exc:
        raise AnsibleFilterError("MIG gres.conf lines not rendered, nothing was written: %s" % exc)


class FilterModule(object):
    """hpc.slurm_gres MIG gres.conf filter."""

    def filters(self):
        return {"mig_gres_conf": mig_gres_conf}
