# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: the Slurm versions a cluster's daemons report -> what disagrees with the inventory or with Slurm."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_version_problems
author: hpc.slurm_gres contributors
version_added: "0.1.0"
short_description: Judge the Slurm versions a cluster's daemons report against the inventory and Slurm's rules
description:
  - Every daemon must run the Slurm release the inventory names in C(hpc_gres_slurm_version), the release the files are
    rendered and proven for.
  - "The mix must be one Slurm supports (U(https://slurm.schedmd.com/upgrades.html#compatibility_window)): all
    slurmctld hosts on one release; slurmdbd, slurmctld and slurmd each the same release as the next in that order
    or older, and no more than two major releases older (three from Slurm 24.11 on)."
  - An empty list means the cluster runs what the inventory says.
positional: _input, expected
options:
  _input:
    description:
      - One entry per daemon, C({host, daemon, version}); C(daemon) is V(slurmctld), V(slurmd) or V(slurmdbd),
        C(version) the output of C(DAEMON -V) (C(slurm-wlm 24.11.5)).
      - An optional C(error) says why C(DAEMON -V) could not be run; such an entry is a problem, whatever
        C(version) holds.
    type: list
    elements: dict
    required: true
  expected:
    description: The inventory's C(hpc_gres_slurm_version) (V("24.11")); the collection's default release when null.
    type: raw
"""

EXAMPLES = r"""
- name: Refuse a cluster that runs another release
  ansible.builtin.assert:
    that: problems | length == 0
    fail_msg: "{{ problems }}"
  vars:
    problems: >-
      {{ [{'host': 'ctl01', 'daemon': 'slurmctld', 'version': 'slurm-wlm 22.05.8'}]
         | hpc.slurm_gres.gres_version_problems('24.11') }}
"""

RETURN = r"""
_value:
  description: >-
    One message per daemon that disagrees, naming host, command, expected and found
    (C(host ctl01: slurmctld -V: expected Slurm 24.11 (hpc_gres_slurm_version), found 22.05.8 (...))).
  type: list
  elements: str
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import (
    DEFAULT_SLURM_VERSION,
    version_problems,
)


def gres_version_problems(daemons, expected=None):
    if not isinstance(daemons, list) or not all(isinstance(d, dict) and {"host", "daemon", "version"} <= set(d)
                                                for d in daemons):
        raise AnsibleFilterError("gres_version_problems: input must be a list of {host, daemon, version}")
    try:
        problems = version_problems(expected or DEFAULT_SLURM_VERSION, [
            {"host": str(d["host"]), "daemon": str(d["daemon"]), "version": str(d["version"] or ""),
             "error": str(d["error"]) if d.get("error") else None} for d in daemons])
    except ValueError as exc:
        raise AnsibleFilterError("gres_version_problems: expected: %s" % exc)
    return [str(p) for p in problems]


class FilterModule(object):
    """hpc.slurm_gres version filter."""

    def filters(self):
        return {"gres_version_problems": gres_version_problems}
