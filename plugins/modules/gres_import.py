#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the gres_import action (plugins/action/gres_import.py)."""

DOCUMENTATION = r"""
module: gres_import
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Import a running cluster's slurm.conf and gres.conf into an inventory for this collection
description:
  - Reads a site's C(slurm.conf) (with its C(Include) files), C(gres.conf) (one for the cluster, or one per node)
    and C(cgroup.conf), and writes an inventory directory that renders the same configuration with this
    collection - C(hosts.yml) with groups C(slurmctld), C(slurmd) and one group per node shape, C(group_vars/),
    and C(host_vars/) only where a node has settings of its own.
  - Reads every node's GRES the way C(slurmd) does (file-less GPUs dropped, surplus cut, shards spread, types of an
    untyped C(Gres=) dropped) and carries over what the node registers today.
  - Proves itself before writing anything - the written inventory is read back, rendered, and per node and GRES
    the types, device files, counts, Cores, Links and Flags must equal the original's, as must every NodeName
    definition, slurm.conf option, partition and cgroup.conf option. Anything it cannot carry over exactly is
    refused, naming the file, line and node; then nothing is written.
  - Never overwrites - when any file it would write already exists under O(dest), it fails and writes nothing.
  - Runs on the control machine (action plugin); O(src) and O(dest) are paths there.
  - "A live import is two steps, as C(hpc.slurm_gres.import_config) runs them: O(read_config) on the first
    slurmctld host reads C(slurm.conf), every file it includes (at any depth), C(cgroup.conf), a cluster-wide
    C(gres.conf) and the release C(slurmctld -V) reports (registered as C(hpc_gres_import_controller)); each node's
    C(gres.conf) is read with M(hpc.slurm_gres.config_tree) (registered as C(hpc_gres_import_gres), label
    C(config)); then O(live) on the control machine imports what they read. The release slurmctld reports is the
    one the inventory is written for unless O(slurm_version) names another."
options:
  src:
    description:
      - Directory holding C(slurm.conf), its C(Include) files, optionally C(cgroup.conf), and either one
        cluster-wide C(gres.conf) (with C(NodeName=) lines) or C(<NodeName>/gres.conf) per node.
      - One of O(src), O(sources), O(read_config) and O(live) is required.
    type: path
  read_config:
    description: The Slurm config directory to read on the host the task runs on (the first slurmctld host).
    type: path
  slurmctld:
    description: With O(read_config), the slurmctld command whose C(-V) names the release the cluster runs.
    type: str
    default: slurmctld
  live:
    description: Import what the live import's reads registered on the controller and the nodes.
    type: bool
    default: false
  sources:
    description:
      - The files as texts, for imports read live from the cluster - C(slurm_conf), C(includes) (name to text),
        C(cgroup_conf) (text or null), C(gres_conf) (one cluster-wide file, or null), C(node_gres) (Slurm node name
        to its gres.conf text; a node without the file is left out).
    type: dict
  hosts:
    description: Slurm node (or controller) name to the inventory host name to use for it; others keep their name.
    type: dict
    default: {}
  dest:
    description: Inventory directory to write; created when missing. No file in it is ever overwritten. Required
      unless O(read_config).
    type: path
  header:
    description: Comment lines put at the top of every written file (where the import came from).
    type: list
    elements: str
    default: []
  slurm_version:
    description:
      - The Slurm release the cluster runs (V("22.05") to V("26.05")), written as C(hpc_gres_slurm_version) in
        C(group_vars/all.yml); the proof renders for that release.
      - Unset, the inventory sets none and the proof renders for the collection's default release, whose rules
        apply (from 24.11 GPU C(Cores) must cover whole sockets, so a site on an older release should name it).
    type: str
attributes:
  check_mode:
    support: full
    description: Imports, proves and reports the files it would write, without writing.
  diff_mode:
    support: none
    description: New files only; there is nothing to compare with.
  platform:
    platforms: posix
    support: full
    description: Runs on the control machine.
"""

EXAMPLES = r"""
- name: Import the files copied from the cluster into ./site-conf
  hpc.slurm_gres.gres_import:
    src: ./site-conf
    dest: ./inventories/imported
  register: imported

- name: Show what was written and what the import changed in form
  ansible.builtin.debug:
    msg: "{{ imported.written + imported.report }}"
"""

RETURN = r"""
written:
  description: Paths written under O(dest) (in check mode, the ones that would be).
  returned: success
  type: list
  elements: str
groups:
  description: Node-shape group name to its inventory hosts.
  returned: success
  type: dict
report:
  description:
    - What changed in form but not in meaning (null options, SocketsPerBoard written as Sockets, lines slurmd ignores
      and that were left out, ...), one line each.
  returned: success
  type: list
  elements: str
files:
  description: Relative path to the text of every file of the inventory.
  returned: success
  type: dict
refusals:
  description: On failure, each thing that cannot be carried over, naming file, line, node and why.
  returned: failure
  type: list
  elements: str
sources:
  description: With O(read_config), the files read on the controller (C(slurm_conf), C(includes), C(cgroup_conf),
    C(gres_conf)) and C(slurm_version), the release C(slurmctld -V) reports (null when it does not run).
  returned: with O(read_config)
  type: dict
slurm_version:
  description: The release the inventory was written and proven for (null when the collection's default applied).
  returned: success
  type: str
"""
