# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: what a deploy run changes per host, as the run record keeps it."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_run_changes
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.2.0"
short_description: What a deploy run changes per host, for its run record
description:
  - Compares, per host, the files its daemon runs with to the files this run brings and returns the hosts that
    change with the previous and new sha256 of each managed file, and each distinct previous content once.
  - The result is what M(hpc.slurm_gres.gres_run_record) stores with
    O(hpc.slurm_gres.gres_run_record#module:step=record).
positional: _input, nodes_new, names, ctl_running, ctl_new
options:
  _input:
    description: Node host to the files slurmd runs with (name to content, null for an absent file).
    type: dict
    required: true
  nodes_new:
    description: Node host to the files this run installs there.
    type: dict
    required: true
  names:
    description: Node host to its Slurm node name.
    type: dict
    required: true
  ctl_running:
    description: Controller host to the files slurmctld runs with.
    type: dict
    required: true
  ctl_new:
    description: Controller host to the files this run installs there.
    type: dict
    required: true
"""

EXAMPLES = r"""
- name: What this run changes
  ansible.builtin.set_fact:
    changes: "{{ nodes_running | hpc.slurm_gres.gres_run_changes(nodes_new, names, ctl_running, ctl_new) }}"
# changes:
#   changes:
#     gpu-a01.example: {node: gpu-a01, roles: [slurmd], dir: /etc/slurm,
#                       files: {gres.conf: {previous: 3b1f..., new: 9c2e..., changed: true}, ...}}
#   blobs: {3b1f...: "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia0 ..."}
"""

RETURN = r"""
_value:
  description: C({changes, blobs}).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.deploy_run import run_changes


def gres_run_changes(nodes_running, nodes_new, names, ctl_running, ctl_new):
    for label, value in (("_input", nodes_running), ("nodes_new", nodes_new), ("names", names),
                         ("ctl_running", ctl_running), ("ctl_new", ctl_new)):
        if not isinstance(value, dict):
            raise AnsibleFilterError("gres_run_changes: %s: expected a dict, found %s" % (label, type(value).__name__))
    return run_changes(nodes_running, nodes_new, names, ctl_running, ctl_new)


class FilterModule(object):
    """hpc.slurm_gres run record input."""

    def filters(self):
        return {"gres_run_changes": gres_run_changes}
