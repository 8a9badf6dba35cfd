# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: {slurm.conf, <node>/gres.conf} -> problems where the GRES counts disagree."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_consistency
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Prove that slurm.conf and gres.conf files agree on GRES counts
description:
  - Parses C(slurm.conf) and every C(<node>/gres.conf) of O(_input) with the collection's one Slurm config
    parser and returns the problems found; an empty list proves, per node and GRES type, that the count in
    slurm.conf's C(Gres=) equals the count gres.conf provides.
  - Also reports what slurmd would refuse or silently drop (unknown keys, C(Count) not matching C(File),
    a device in two records, a shard C(File) no gpu record lists), and nodes with GRES but no gres.conf.
positional: _input, deferred
options:
  _input:
    description: Relative path to content, as returned by P(hpc.slurm_gres.gres_render#filter).
    type: dict
    required: true
  deferred:
    description: "C({node: {gres_key: count}}) of GRES completed on the node later (MIG instances); they may be
      absent from gres.conf."
    type: dict
    default: {}
"""

EXAMPLES = r"""
- name: Prove the files on the controller agree
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems }}"
  vars:
    problems: "{{ hpc_gres_files | hpc.slurm_gres.gres_consistency }}"
"""

RETURN = r"""
_value:
  description: Problem messages, each naming the node, the GRES, the expected and the found count.
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import check_consistency

_SUFFIX = "/gres.conf"


def gres_consistency(files, deferred=None):
    if not isinstance(files, dict) or "slurm.conf" not in files:
        raise AnsibleFilterError("gres_consistency: input must map 'slurm.conf' and '<node>/gres.conf' to text")
    gres = {path[:-len(_SUFFIX)]: text for path, text in files.items() if path.endswith(_SUFFIX)}
    return check_consistency(files["slurm.conf"], gres, deferred or {})


class FilterModule(object):
    """hpc.slurm_gres consistency filter."""

    def filters(self):
        return {"gres_consistency": gres_consistency}
