#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Documentation of the gres_render action (plugins/action/gres_render.py), run on the controller."""

DOCUMENTATION = r"""
module: gres_render
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Render and prove the whole cluster's Slurm GPU configuration once, on the controller
description:
  - Reads the inventory schema of every host from C(hostvars) (C(hpc_gres_node_*), C(hpc_gres_gpus),
    C(hpc_gres_controller_addr)) and the cluster-wide variables of the host the task runs for (C(hpc_gres_cluster_name),
    C(hpc_gres_slurm_version), C(hpc_gres_autodetect), C(hpc_gres_partitions), C(hpc_gres_slurm_conf_options),
    C(hpc_gres_cgroup_conf_options)), validates them, renders C(slurm.conf), C(cgroup.conf) and one C(gres.conf) per
    GPU node, parses them back and proves per node and GPU type that the counts agree. Any problem fails the task
    before anything is written; every message names the host, the field, what was expected and what was found.
  - A refusal lists each problem once (RV(problems)), with the hosts it applies to as one hostlist
    (C(hosts gpu-[01-08]) before the field) and, where an inventory file holds the value the hosts have, that file and line
    (C(defined in group_vars/gpu.yml:7)), read from the C(host_vars) and C(group_vars) files beside the inventory
    sources and the playbook, and from the C(vars) of YAML inventory files. A value no such file holds as it is (C(-e), a template's
    result, a vaulted value) is named without a file. C(msg) is one short line.
  - The files follow the rules of the Slurm release in C(hpc_gres_slurm_version) (V(22.05) to V(26.05); unset, the default
    release, and the summary says so); hostlist forms its parser reads, its AutoDetect modes, GPU C(Cores=) on
    socket boundaries from 24.11 (refused; a warning for older releases). The rules are one table,
    C(plugins/module_utils/slurm/versions.py).
  - The cluster model is built and used inside this one step; it never becomes a variable. The task returns the
    files, a summary, the Slurm node name of every host (RV(nodes)) and, for hosts whose GPUs have a C(model) or
    C(mig), what their MIG layouts and live gres.conf need (RV(mig_nodes)).
  - With O(dest), writes the tree there on the controller, all or nothing, touching only files whose content or
    mode differs (render-only mode); the files are then not returned unless O(return_files) is set.
  - The render owns only the files it wrote in O(dest); it lists them in O(dest)C(/.hpc_gres_render_files). A file
    listed there that the render no longer writes (the C(gres.conf) of a node taken out of the inventory, the
    C(gres.conf) of configless mode after a switch to files mode) is removed, with the folders it leaves empty;
    RV(removed) names them. A file that list does not name is never touched, nor one reached through a symbolic
    link. Check mode reports what would be removed and removes nothing; diff mode shows each removed file.
  - Runs entirely on the controller and contacts no host.
options:
  dest:
    description:
      - Directory on the controller to write C(slurm.conf), C(cgroup.conf) and C(<node>/gres.conf) into; created if
        missing. Files under it that the render did not write are left alone; those it wrote and no longer renders
        are removed (see the description).
    type: path
  mode:
    description: Permissions of the written files.
    type: raw
    default: "0644"
  directory_mode:
    description: Permissions of directories created under O(dest).
    type: raw
    default: "0755"
  return_files:
    description: Return RV(files), RV(nodes) and RV(mig_nodes). Default, true unless O(dest) is set.
    type: bool
  mig_step:
    description:
      - Render one step of the MIG runbook (role C(hpc.slurm_gres.hpc_gres_mig)) instead of the inventory's target
        state. This inventory host gets the layout the inventory declares; every other C(slurmd) host that carries
        the fact C(hpc_gres_mig_live) (set by the role's C(read) entry point) keeps the layout its GPUs have now,
        so slurm.conf changes the C(Gres=) of this host only.
    type: str
  cluster_host:
    description:
      - Host whose cluster-wide variables (C(hpc_gres_cluster_name), C(hpc_gres_slurm_conf_options), ...) are read, and named in
        problems with them. Default, the host the task runs for.
    type: str
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.controller
attributes:
  check_mode:
    support: full
    description: Renders and proves as usual; with O(dest), reports the files that would change or be removed and
      writes or removes nothing.
  diff_mode:
    support: full
    description: With O(dest), the before and after text of every file that changes or is removed.
notes:
  - Use it once, on the controller (a play on C(localhost), or C(run_once)), and read its registered result from
    there; the roles C(hpc.slurm_gres.hpc_gres_slurmd), C(hpc.slurm_gres.hpc_gres_verify) and
    C(hpc.slurm_gres.hpc_gres_slurmctld) take the files and node names from C(hpc_gres_render_result) of
    C(localhost) by default.
seealso:
  - module: hpc.slurm_gres.gres_verify
  - module: hpc.slurm_gres.config_tree
"""

EXAMPLES = r"""
- name: Render and prove the cluster's files, keep them for the deploy plays
  hpc.slurm_gres.gres_render:
  register: rendered

- name: Each node verifies its own gres.conf
  hpc.slurm_gres.gres_verify:
    slurm_conf_content: "{{ hostvars['localhost'].rendered.files['slurm.conf'] }}"
    gres_conf_content: "{{ hostvars['localhost'].rendered.files[node ~ '/gres.conf'] }}"
    node_name: "{{ node }}"
  vars:
    node: "{{ hostvars['localhost'].rendered.nodes[inventory_hostname] }}"

- name: Render-only, into a directory on the controller
  hpc.slurm_gres.gres_render:
    dest: /srv/slurm-render
"""

RETURN = r"""
summary:
  description:
    - Counts for a human (nodes, GPUs per type, MIG instances, shards, NodeName lines) and C(lines) of text.
    - C(hpc_gres_slurm_version) (the release the files are rendered for), C(slurm_version_default) (true when the inventory
      does not set it) and C(warnings) (rules of later releases this inventory breaks, one line each).
  returned: success
  type: dict
files:
  description: Relative path to content, C(slurm.conf), C(cgroup.conf) and C(<slurm node name>/gres.conf).
  returned: when O(return_files)
  type: dict
nodes:
  description: Inventory host to Slurm node name, for every host of group C(slurmd) (the model's one naming rule).
  returned: when O(return_files)
  type: dict
  sample: {"gpu-a01.example.org": "gpu-a01"}
mig_nodes:
  description:
    - For hosts whose GPUs have a C(model) or C(mig), C(name), C(spec) (what M(hpc.slurm_gres.gres_verify) renders
      the node's gres.conf again from, with the live MIG devices), C(layouts) (GPU index to profiles or null, as
      M(hpc.slurm_gres.mig_layout) takes them) and C(models).
  returned: when O(return_files)
  type: dict
boot:
  description:
    - The GPU boot order of slurmd the deploy installs (docs/boot.md), from the inventory's C(hpc_gres_boot_*),
      C(enabled), C(mig) (V(collection), V(mig-manager) or V(none)), C(timeout), C(retry_interval) and C(hosts) (the
      inventory hosts with GPUs, which get it).
  returned: when O(return_files)
  type: dict
  sample: {"enabled": true, "mig": "collection", "timeout": 300, "retry_interval": 300, "hosts": ["gpu-a01"]}
config_mode:
  description: The inventory's C(hpc_gres_config_mode) (V(files), V(configless) or V(include)); the roles
    C(hpc.slurm_gres.hpc_gres_slurmd) and C(hpc.slurm_gres.hpc_gres_slurmctld) install per it.
  returned: success
  type: str
include_file:
  description: The inventory's C(hpc_gres_include_file) (include mode).
  returned: success
  type: str
dest:
  description: Absolute path of O(dest).
  returned: when O(dest) is set
  type: str
written:
  description: Relative paths that were (or in check mode would be) created or replaced.
  returned: when O(dest) is set
  type: list
  elements: str
unchanged:
  description: Number of files that already had the wanted content and mode.
  returned: when O(dest) is set
  type: int
removed:
  description: Relative paths the render wrote before and no longer writes, removed (in check mode, to be removed).
  returned: when O(dest) is set
  type: list
  elements: str
problems:
  description:
    - Every inventory problem once, one line each (ended by a newline, so that the YAML callback prints it as a
      block), naming its hosts as a hostlist and, where known, the inventory file and line of its value.
  returned: failure
  type: list
  elements: str
  sample: ["hosts gpu-[01-08]: hpc_gres_gpus[0].tpye: expected a GPU key (index, type, ...), found unknown key
    'tpye' (did you mean type?); defined in inventories/prod/group_vars/gpu.yml:7\n"]
"""
