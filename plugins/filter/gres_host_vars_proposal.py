# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: a node's gathered hardware -> proposed host_vars (values, notes and YAML text)."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_host_vars_proposal
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Propose host_vars for a GPU node from the hardware it reports
description:
  - Turns C(hpc_gres_hw) (from M(hpc.slurm_gres.gpu_facts)) into the inventory variables the collection reads
    (C(hpc_gres_node_sockets), C(hpc_gres_node_cores_per_socket), C(hpc_gres_node_threads_per_core),
    C(hpc_gres_node_real_memory), C(hpc_gres_gpus)).
  - Each GPU gets its nvidia-smi C(index), a C(type) from the name map (O(type_patterns) over the built-in
    patterns; without a match Slurm's AutoDetect form of the name), C(cores) from its CPU affinity converted to
    Slurm logical core indexes, and C(minor) where the device minor differs from the index.
  - Values that cannot be derived are left out and named in C(notes), which the YAML carries as comments.
positional: _input, host
options:
  _input:
    description: C(ansible_facts.hpc_gres_hw) of one node.
    type: dict
    required: true
  host:
    description: The inventory host name, written into the YAML header.
    type: str
    required: true
  memtotal_mb:
    description:
      - C(ansible_memtotal_mb) when facts were gathered; omit to leave C(hpc_gres_node_real_memory) out.
      - Above 4096 MiB the value is rounded down to whole GiB, so that a slightly smaller MemTotal after a
        kernel or firmware update does not drain the node (C(Low RealMemory)).
    type: int
  type_patterns:
    description: GRES type to a regular expression on the nvidia-smi name, searched case-insensitively; wins
      over the built-in patterns.
    type: dict
"""

EXAMPLES = r"""
- name: Propose host_vars
  ansible.builtin.copy:
    content: "{{ (ansible_facts.hpc_gres_hw | hpc.slurm_gres.gres_host_vars_proposal(inventory_hostname,
                  memtotal_mb=ansible_memtotal_mb | default(omit))).yaml }}"
    dest: "host_vars/{{ inventory_hostname }}.yml"
    force: false
  delegate_to: localhost
"""

RETURN = r"""
_value:
  description: C(vars) (the proposed variables), C(notes) (list of strings) and C(yaml) (the file text).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.discover import propose_host_vars, render_host_vars


def gres_host_vars_proposal(hw, host, memtotal_mb=None, type_patterns=None):
    if not isinstance(hw, dict) or "gpus" not in hw:
        raise AnsibleFilterError("gres_host_vars_proposal: input must be ansible_facts.hpc_gres_hw from "
                                 "hpc.slurm_gres.gpu_facts, found %s" % type(hw).__name__)
    try:
        proposal = propose_host_vars(hw, type_patterns=type_patterns, memtotal_mb=memtotal_mb)
    except ValueError as exc:
        raise AnsibleFilterError("gres_host_vars_proposal: host %s: %s" % (host, exc))
    proposal["yaml"] = render_host_vars(str(host), proposal)
    return proposal


class FilterModule(object):
    """hpc.slurm_gres discovery filter."""

    def filters(self):
        return {"gres_host_vars_proposal": gres_host_vars_proposal}
