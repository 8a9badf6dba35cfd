# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Filter: inventory (hostvars + groups + cluster variables) -> validated Slurm GPU cluster model."""
from __future__ import annotations

DOCUMENTATION = r"""
name: gres_cluster_model
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Validate the inventory and build the Slurm GPU cluster model
description:
  - Reads the inventory schema of this collection from O(_input) (C(hostvars)) and O(groups) and returns one
    normalized model of the cluster, from which every Slurm file and check is derived.
  - Only the variables of the schema are read from each host (C(hpc_gres_node_*), C(hpc_gres_gpus),
    C(hpc_gres_controller_addr)), so this stays fast for thousands of hosts.
  - "Every problem found is reported at once, each naming the host, the field, what was expected and what was
    found, for example C(host gpu-a01.example.org: hpc_gres_gpus[3].index: expected unique GPU index, found 2
    (also used by hpc_gres_gpus[1]))."
  - "Checks: duplicate GPU index or minor, unknown keys in a GPU entry and unknown C(hpc_gres_node_*) variables,
    wrong types, C(cores) outside C(sockets*cores_per_socket), a GPU node without its CPU layout, two hosts
    mapping to one C(hpc_gres_node_name), GPU entries on a host outside the C(slurmd) group, invalid cluster-wide
    values. A host may be in both C(slurmctld) and C(slurmd)."
positional: groups, cluster
options:
  _input:
    description: The C(hostvars) of the play.
    type: dict
    required: true
  groups:
    description: The C(groups) of the play; C(slurmctld) and C(slurmd) (with any child groups) are used.
    type: dict
    required: true
  cluster:
    description:
      - Cluster-wide variables, normally taken from C(group_vars/all).
      - C(hpc_gres_cluster_name) (default V(cluster)), C(hpc_gres_slurm_version) (the Slurm release the cluster runs, V("22.05")
        to V("26.05"); default V("24.11")), C(hpc_gres_autodetect) (V(off), V(nvml), V(nvidia) from 24.11,
        V(full) from 26.05; default V(off)), C(hpc_gres_partitions) (list of C({name, group|nodes, default, options});
        default one partition V(main) with all nodes), C(hpc_gres_slurm_conf_options) and C(hpc_gres_cgroup_conf_options)
        (dicts merged over the defaults; V(null) drops a default), C(hpc_gres_types) (GRES names
        always in C(GresTypes)), C(hpc_gres_config_mode) (V(files), V(configless) or V(include)) and
        C(hpc_gres_include_file).
    type: dict
    default: {}
  cluster_host:
    description: Host name reported in problems with cluster-wide variables.
    type: str
    default: localhost
"""

EXAMPLES = r"""
- name: Build the cluster model
  ansible.builtin.set_fact:
    hpc_gres_model: >-
      {{ hostvars | hpc.slurm_gres.gres_cluster_model(groups, {'hpc_gres_cluster_name': 'demo',
                                                               'hpc_gres_autodetect': 'off'}) }}

# With host_vars of gpu-a01.example.org:
#   hpc_gres_node_sockets: 2
#   hpc_gres_node_cores_per_socket: 64
#   hpc_gres_node_threads_per_core: 2
#   hpc_gres_gpus:
#     - {index: 0, type: a100, cores: "0-63"}
# the model holds
#   nodes:
#     - {host: gpu-a01.example.org, name: gpu-a01, sockets: 2, cores_per_socket: 64, threads_per_core: 2,
#        real_memory: null, features: [], weight: null,
#        gpus: [{index: 0, type: a100, minor: 0, cores: "0-63", model: null, mig: null, shards: null}]}
"""

RETURN = r"""
_value:
  description:
    - "The cluster model, plain data: C(cluster_name), C(autodetect), C(controllers) (list of C({host, name, addr})),
      C(settings) (C(slurm_conf) and C(cgroup_conf) option dicts), C(partitions), C(nodes), C(hpc_gres_slurm_version) (the
      Slurm release the files are for) and C(cluster_host)."
    - C(nodes) holds every host of group C(slurmd), sorted by Slurm node name in natural order, each with
      C(host), C(name), C(sockets), C(cores_per_socket), C(threads_per_core), C(real_memory), C(features),
      C(weight) and C(gpus) (sorted by index; each C({index, type, minor, cores, model, mig, shards})).
  type: dict
"""

from ansible.errors import AnsibleFilterError

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import model_from_inventory


def gres_cluster_model(hostvars, groups, cluster=None, cluster_host="localhost"):
    try:
        return model_from_inventory(hostvars, groups, cluster, cluster_host)
    except TypeError as exc:
        raise AnsibleFilterError(str(exc))
    except GresError as exc:
        raise AnsibleFilterError("inventory check failed, nothing was rendered or written: %s" % exc)


class FilterModule(object):
    """hpc.slurm_gres inventory model filter."""

    def filters(self):
        return {"gres_cluster_model": gres_cluster_model}
