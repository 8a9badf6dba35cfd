# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: inventory -> rendered, proven files and their summary, in one step."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_render_inventory
author: hpc.slurm_gres contributors
version_added: "0.1.0"
short_description: Validate the inventory, render every Slurm GPU file and prove it, in one step
description:
  - The same as P(hpc.slurm_gres.gres_cluster_model#filter) followed by P(hpc.slurm_gres.gres_render#filter) and
    P(hpc.slurm_gres.gres_summary#filter), done in one call so the cluster model never has to pass through
    Ansible's templating, which costs seconds for thousands of nodes.
  - Fails, naming host, field, expected and found, on any inventory problem, and when the rendered files do not
    agree per node and GPU type.
  - Also renders the users' GPU guide C(USERS.md) and its login banner C(USERS.motd) from the same model (see
    C(docs/users-guide.md)). When the inventory group C(slurm_gres_users_guide) has hosts, the guide names the
    directory they install it in (their C(slurm_gres_users_guide_dir), which must be the same on all of them).
positional: groups, cluster, cluster_host
options:
  _input:
    description: The C(hostvars) of the play.
    type: dict
    required: true
  groups:
    description: The C(groups) of the play.
    type: dict
    required: true
  cluster:
    description: Cluster-wide variables, see P(hpc.slurm_gres.gres_cluster_model#filter).
    type: dict
    default: {}
  cluster_host:
    description: Host name reported in problems with cluster-wide variables.
    type: str
    default: localhost
"""

EXAMPLES = r"""
- name: Render the cluster configuration
  ansible.builtin.set_fact:
    rendered: "{{ hostvars | hpc.slurm_gres.gres_render_inventory(groups, {'slurm_cluster_name': 'demo'}) }}"

- name: Show the summary
  ansible.builtin.debug:
    msg: "{{ rendered.summary.lines }}"
"""

RETURN = r"""
_value:
  description: C(files) (relative path to content, as P(hpc.slurm_gres.gres_render#filter) returns, plus
    C(USERS.md) and C(USERS.motd)) and C(summary) (as P(hpc.slurm_gres.gres_summary#filter) returns).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.filter.gres_cluster_model import model_from_inventory
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all, summarize
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import inventory_guide_files


def gres_render_inventory(hostvars, groups, cluster=None, cluster_host="localhost"):
    try:
        model = model_from_inventory(hostvars, groups, cluster, cluster_host)
    except GresError as exc:
        raise AnsibleFilterError("inventory check failed, nothing was rendered or written: %s" % exc)
    try:
        files = render_all(model)
    except GresError as exc:
        raise AnsibleFilterError("rendered files are inconsistent, nothing was written: %s" % exc)
    try:
        files.update(inventory_guide_files(model, files, hostvars, groups))
    except GresError as exc:
        raise AnsibleFilterError("users guide: nothing was rendered or written: %s" % exc)
    return {"files": files, "summary": summarize(model, files)}


class FilterModule(object):
    """hpc.slurm_gres one-step render filter."""

    def filters(self):
        return {"gres_render_inventory": gres_render_inventory}
