# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: does slurmd on a node need a restart for the new files, and which Gres must it then register."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_node_plan
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Decide whether slurmd must restart for new Slurm files, and what it must then register
description:
  - Compares the files slurmd last started with (O(applied)) with the files being deployed (O(_input)) by meaning,
    not bytes (C(slurm.conf) is parsed, so comments and line order do not count).
  - slurmd restarts when its C(gres.conf) or C(cgroup.conf) changed, when its own C(NodeName) definition changed
    (except slurmctld-only keys such as C(Weight) or C(Features)), when C(slurm.conf) options changed, or when nodes
    were added or removed. Other nodes' lines and partitions do not restart it.
positional: _input, applied, node_name, installed, installed_attributes, wanted
options:
  mode:
    description:
      - The config mode (V(files), V(configless), V(include)); the inputs are then keyed by file name on disk
        (the include file in include mode) and mapped to what slurmd reads
        (see P(hpc.slurm_gres.gres_deploy_files#filter)).
    type: str
    default: files
  include_file:
    description: The include file name in include mode.
    type: str
  _input:
    description: The new files, C({"slurm.conf", "cgroup.conf", "gres.conf"}) to text (null or absent = no file).
    type: dict
    required: true
  applied:
    description: The files slurmd runs with, same shape.
    type: dict
    required: true
  node_name:
    description: The Slurm node name.
    type: str
    required: true
  installed:
    description: The files installed now, same shape; when given, RV(_value.not_installed) lists the new files that
      differ from them.
    type: dict
  installed_attributes:
    description:
      - The installed files' ownership and permissions, as M(hpc.slurm_gres.slurm_conf_files) returns them for that
        directory (file name to C(mode), C(uid), C(gid), C(owner), C(group)).
      - With O(installed) and O(wanted), RV(_value.install) is false when every new file is installed with the
        wanted content, mode, owner and group already.
    type: dict
  wanted:
    description: The C(mode), C(owner) and C(group) the install gives the files.
    type: dict
"""

EXAMPLES = r"""
- name: Plan the restart of this node
  ansible.builtin.set_fact:
    plan: "{{ new_files | hpc.slurm_gres.gres_node_plan(applied_files, 'gpu-a01') }}"
# plan:
#   restart: true
#   reasons: ["gres.conf changed", "slurm.conf: this node's gres changed"]
#   files_changed: [slurm.conf, gres.conf]
#   expected_gres: {"gpu:a100": 8}
"""

RETURN = r"""
_value:
  description:
    - C(restart) (bool), C(reasons) (list of text), C(files_changed) (file names whose bytes differ),
      C(expected_gres) (C({gres key = count}) the new slurm.conf declares for the node), C(applied_gres) (the same
      for the applied slurm.conf), C(gres_changed) (the two differ), C(slurm_conf) (the parsed difference), with
      O(installed), C(not_installed) (names of new files whose installed content differs), and C(install) (false
      only when the installed files are the new ones with the wanted attributes, see O(installed_attributes), and
      in V(configless) mode, which installs nothing on the node).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.deploy_files import node_file_names, plan_slots
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.restart_plan import (
    FILES, expected_gres, install_needed, node_restart_plan)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError


def _check(value, what):
    if not isinstance(value, dict):
        raise AnsibleFilterError("gres_node_plan: %s must be a dict of file name to text, got %s"
                                 % (what, type(value).__name__))
    return value


def gres_node_plan(new, applied, node_name, installed=None, installed_attributes=None, wanted=None, mode="files",
                   include_file=None):
    by_name = _check(new, "the input")
    new, applied = plan_slots(by_name, mode, include_file), plan_slots(_check(applied, "applied"), mode, include_file)
    try:
        plan = node_restart_plan(node_name, applied, new)
        plan["expected_gres"] = expected_gres(new["slurm.conf"], node_name)
        plan["applied_gres"] = expected_gres(applied["slurm.conf"], node_name)
        plan["gres_changed"] = plan["expected_gres"] != plan["applied_gres"]
        if installed is not None:
            installed = _check(installed, "installed")
            names = node_file_names(mode, include_file)[0]
            names = [n for n in FILES if n in names] + [n for n in names if n not in FILES]
            plan["not_installed"] = [name for name in names
                                     if by_name.get(name) is not None and installed.get(name) != by_name[name]]
        # configless: nothing is installed on the node (slurmd fetches its files from slurmctld)
        to_install = {n: by_name.get(n) for n in node_file_names(mode, include_file)[0]}
        plan["install"] = bool(to_install) and install_needed(to_install, plan.get("not_installed"),
                                                              installed_attributes, wanted)
    except (ConfSyntaxError, ValueError) as exc:
        raise AnsibleFilterError("gres_node_plan: node %s: %s" % (node_name, exc))
    return plan


class FilterModule(object):
    """hpc.slurm_gres restart plan for a node."""

    def filters(self):
        return {"gres_node_plan": gres_node_plan}
