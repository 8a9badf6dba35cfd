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
    refused, naming the file and line it read it from, and the node; then nothing is written.
  - Lists every difference between the site's files and the rendered ones that the first deploy would make, in
    what Slurm reads (options, NodeName and PartitionName definitions, cgroup.conf options, each node's gres.conf
    records and AutoDetect), as C(first deploy:) lines of RV(report); keeps the site's C(AccountingStorageTRES)
    (C(hpc_gres_accounting_gpu_tres) false where the collection would add GPU entries).
  - Never overwrites - when any file it would write already exists under O(dest), it fails and writes nothing.
  - Runs on the control machine (action plugin); O(src) and O(dest) are paths there.
  - "A live import is two steps, as C(hpc.slurm_gres.import_config) runs them: O(read_config) on the first
    slurmctld host reads C(slurm.conf), every file it includes (at any depth), C(cgroup.conf), a cluster-wide
    C(gres.conf) and the release C(slurmctld -V) (else C(scontrol --version)) reports (registered as
    C(hpc_gres_import_controller)); each node's
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
  scontrol:
    description: With O(read_config), the command whose C(--version) names the release when O(slurmctld) does not
      run on the controller.
    type: str
    default: scontrol
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
        C(group_vars/all.yml); the files are judged and the proof renders for that release's rules.
      - Unset, a live import takes the release C(slurmctld -V) (else C(scontrol --version)) reports on the
        controller. Otherwise the files are judged by the rules of every release from 22.05 to 26.05 (option names
        each reads, AutoDetect modes, hostlist forms, GPU Cores on socket boundaries); the collection's default
        release (24.11) is taken when they fit it, else the oldest release they fit (Debian 12's
        C(CgroupAutomount=yes) fits up to 23.02, so 22.05 is taken). RV(report) starts with one line naming the
        release taken, why, and the C(-e hpc_gres_import_slurm_version=...) that names another; a refused import
        ends its message with it.
    type: str
  drop_invalid_cores:
    description:
      - Import GPUs whose C(Cores=) slurmd drops today (beyond the cores slurm.conf declares) without the binding,
        instead of refusing them. slurmctld then no longer receives the C(Cores=) text it keeps a topology record
        for; the report lists each such GPU as a C(CHANGE:) line. The playbook's C(hpc_gres_import_drop_invalid_cores).
    type: bool
    default: false
  mig_model:
    description:
      - Import C(MultipleFiles=) (MIG) lines as MIG layouts (C(mig:) and C(model:) per parent GPU) of this GPU model
        (C(A100-80GB), C(H100-80GB), ... see docs/mig.md), instead of refusing them. Only lines typed by their MIG
        profile (C(Type=3g.40gb)) with one C(/dev/nvidiaN) and its C(nvidia-caps) files are imported so; the
        rendered gres.conf then leaves those lines to the node, which writes them from its live MIG devices when
        the deploy verifies it (and refuses it while the live layout differs). The report lists each such GPU as a
        C(CHANGE:) line. The playbook's C(hpc_gres_import_mig_model).
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
    - First the Slurm release the import was judged and written for (and, when it was not named, why and how to
      name another); then what changed in form but not in meaning (null options, SocketsPerBoard written as
      Sockets, lines slurmd ignores and that were left out, ...), the repairs asked for (C(CHANGE:)), and every
      difference the first deploy makes in what Slurm reads (C(first deploy:)), one line each.
  returned: success
  type: list
  elements: str
changes:
  description: The C(CHANGE:) lines of RV(report) - what O(drop_invalid_cores) and O(mig_model) changed.
  returned: success
  type: list
  elements: str
notes:
  description: On a refusal, the line naming the Slurm release the files were judged by.
  returned: failure
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
    C(gres_conf)), C(slurm_version), the release C(slurmctld -V) or else C(scontrol --version) reports (null when
    neither does), and C(slurmctld_version), what they answered.
  returned: with O(read_config)
  type: dict
slurm_version:
  description: The release the inventory was written and proven for (always written as C(hpc_gres_slurm_version)).
  returned: success
  type: str
"""
