# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: which rendered files a node or a controller installs and records, per config mode."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_deploy_files
author: hpc.slurm_gres contributors
version_added: "0.2.0"
short_description: The files a node or controller installs, per config mode
description:
  - V(files) mode installs C(slurm.conf), C(cgroup.conf) and the node's C(gres.conf) on every node, C(slurm.conf)
    and C(cgroup.conf) on the controllers.
  - V(configless) mode installs nothing on the nodes (slurmd fetches its files from slurmctld) and C(slurm.conf),
    C(cgroup.conf) and the cluster-wide C(gres.conf) on the controllers; what a node runs with is still recorded
    on it, so the restart logic is the same.
  - V(include) mode installs only the include file (and each node's C(gres.conf)); the site's C(slurm.conf) and
    C(cgroup.conf) are left alone.
positional: _input, role, node_name, mode, include_file
options:
  _input:
    description: The rendered files (C(hpc_gres_files)).
    type: dict
    required: true
  role:
    description: V(node) or V(controller).
    type: str
    required: true
  node_name:
    description: The Slurm node name (for V(node)).
    type: str
  mode:
    description: V(files), V(configless) or V(include).
    type: str
    default: files
  include_file:
    description: The include file name (include mode).
    type: str
    default: slurm_gres.conf
"""

EXAMPLES = r"""
- name: What this node installs
  ansible.builtin.set_fact:
    deploy_files: "{{ hpc_gres_files | hpc.slurm_gres.gres_deploy_files('node', 'gpu-a01', 'configless') }}"
# deploy_files: {install: [], record: [gres.conf, cgroup.conf, slurm.conf], files: {gres.conf: ..., ...}}
"""

RETURN = r"""
_value:
  description: C(install) (file names installed in the config directory), C(record) (file names recorded as what
    the daemon runs with) and C(files) (file name to rendered text, null where there is none).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.deploy_files import (
    MODES,
    controller_file_names,
    node_file_names,
    node_files,
)


def gres_deploy_files(files, role, node_name=None, mode="files", include_file="slurm_gres.conf"):
    if mode not in MODES:
        raise AnsibleFilterError("gres_deploy_files: mode: expected one of %s, found %r" % (", ".join(MODES), mode))
    if role == "node":
        install, record = node_file_names(mode, include_file)
        return {"install": install, "record": record, "files": node_files(files, node_name, mode, include_file)}
    if role == "controller":
        names = controller_file_names(mode, include_file)
        return {"install": names, "record": names, "files": {n: files.get(n) for n in names}}
    raise AnsibleFilterError("gres_deploy_files: role: expected node or controller, found %r" % role)


class FilterModule(object):
    """hpc.slurm_gres files per config mode."""

    def filters(self):
        return {"gres_deploy_files": gres_deploy_files}
