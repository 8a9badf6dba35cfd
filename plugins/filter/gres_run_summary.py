# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: the end-of-run summary, one line per host, with the command that undoes or finishes the run."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_run_summary
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.2.0"
short_description: Summarise a deploy run per host, with the command that undoes or finishes it
description:
  - One line for the run (id, who, when, state), one line per host of its record (old files, new files, installed
    but not restarted, unreachable and what it last received, slurmctld's state and drain reason of the node), and
    the command that undoes the run (C(rollback-gres.yml -e hpc_gres_rollback=RUN_ID)) or finishes it.
positional: _input, facts, reached, late, nodes, inventory_hint
options:
  _input:
    description: The run record (RV(hpc.slurm_gres.gres_run_record#module:record) of M(hpc.slurm_gres.gres_run_record)).
    type: dict
    required: true
  facts:
    description: Host to its facts (C(hostvars)); the node and controller roles' results and the rollback's.
    type: dict
    required: true
  reached:
    description: Hosts still in the play (the others failed or were unreachable).
    type: list
    elements: str
    required: true
  late:
    description: The run is being rolled back after a late failure.
    type: bool
    default: false
  nodes:
    description: Node name to its record from M(hpc.slurm_gres.slurm_node_info).
    type: dict
  inventory_hint:
    description: The inventory arguments shown in the commands.
    type: str
    default: "-i INVENTORY"
"""

EXAMPLES = r"""
- name: Summary
  ansible.builtin.debug:
    msg: "{{ (run.record | hpc.slurm_gres.gres_run_summary(hostvars, ansible_play_hosts, false, info.nodes)).lines }}"
"""

RETURN = r"""
_value:
  description:
    - C({state, statuses, lines}) - the run's final state, each host's C({phase, unreachable, error}), the summary.
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.deploy_run import run_outcome


FACTS = ("hpc_gres_slurmd_done", "hpc_gres_slurmd_restarted", "hpc_gres_slurmd_install_result",
         "hpc_gres_slurmctld_install_result", "hpc_gres_run_rolled_back", "hpc_gres_run_failure",
         "hpc_gres_run_undo_skipped")


def gres_run_summary(record, facts, reached, late=False, nodes=None, inventory_hint="-i INVENTORY"):
    if not isinstance(record, dict) or not hasattr(facts, "get"):
        raise AnsibleFilterError("gres_run_summary: expected the run record and a dict of host facts")
    plain = {}
    for host in record.get("hosts", {}):
        host_facts = facts.get(host) or {}
        plain[host] = {k: host_facts.get(k) for k in FACTS if k in host_facts}
    return run_outcome(record, plain, list(reached or []), bool(late), nodes or {}, inventory_hint)


class FilterModule(object):
    """hpc.slurm_gres run summary."""

    def filters(self):
        return {"gres_run_summary": gres_run_summary}
