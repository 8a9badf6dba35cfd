"""Property, judged by the real slurmd: any inventory, valid or hostile, either renders files that ``slurmd -G``
accepts on every GPU node with counts equal to slurm.conf, or is refused naming host and field.

The inventories come from tests/helpers/inventory_strategies.py (the unit-level property test checks the same
generator without slurmd, with more examples). Each rendered GPU node is given to ``slurmd -N NODE -G`` with its
CPU shape, its device files and the rendered cgroup.conf (slurmd reads it and stops on a bad key); a cluster
without GPU nodes has its first node judged with an empty gres.conf, so slurm.conf and cgroup.conf are always
read by slurmd. MIG GPUs get the MultipleFiles lines a freshly partitioned GPU would have (test_render_slurmd).

Bounded: EXAMPLES["slurmd"] examples, derandomized under the ``ci`` profile (tests/conftest.py). The examples
this test (and the unit one) found while the validation was being written are kept below as @example cases.
"""
from hypothesis import example, given, settings

import slurmd_oracle
from inventory_strategies import Rendered, examples, inventories, judge
from test_render_slurmd import complete_mig_lines

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf

# The release the local slurmd runs: inventories are rendered for it (Debian 12: 22.05).
ORACLE_VERSION = slurmd_oracle.slurmd_release() or "22.05"
CTL = {"ctl": {}}
GROUPS = {"slurmctld": ["ctl"], "slurmd": ["gpu01"]}
SHAPE = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1}


def _one(gpus=None, cluster=None, **node):
    hostvars = dict(CTL, gpu01=dict(SHAPE, hpc_gres_gpus=gpus or [{"index": 0, "type": "a100"}], **node))
    return hostvars, dict(GROUPS), dict(cluster or {}, hpc_gres_slurm_version=ORACLE_VERSION)


def judge_with_slurmd(inventory):
    outcome = judge(inventory)
    if not isinstance(outcome, Rendered):
        return outcome
    model, files = outcome.model, outcome.files
    declared = parse_slurm_conf(files["slurm.conf"])["nodes"]
    judged = [n for n in model["nodes"] if n["gpus"]] or model["nodes"][:1]
    for node in judged:
        gres = files.get(node["name"] + "/gres.conf", "")
        shape = (node["sockets"] or 1, node["cores_per_socket"] or 1, node["threads_per_core"] or 1)
        result = slurmd_oracle.run_slurmd_g(node["name"], files["slurm.conf"], complete_mig_lines(node, gres),
                                            *shape, extra_files={"cgroup.conf": files["cgroup.conf"]})
        assert result.ok, "slurmd refused what was rendered for %s: %s\n%s\n--- slurm.conf\n%s\n--- gres.conf\n%s" % (
            node["name"], result.problems, result.describe(), files["slurm.conf"], gres)
        want = {k.lower(): v for k, v in declared[node["name"]]["gres"].items()}
        found = {k.lower(): v for k, v in result.counts().items()}
        assert found == want, "%s: slurmd counts %s, slurm.conf Gres= says %s\n%s" % (
            node["name"], found, want, result.describe())
    return outcome


@settings(max_examples=examples("slurmd"))
@given(inventories(slurm_version=ORACLE_VERSION))
# Found by the generator while this validation was written (each refused now, naming host and field):
@example(_one(gpus=[{"index": 0, "type": "a100\n"}]))                               # type ends in a newline
@example(_one(gpus=[{"index": 0, "type": "no_consume"}]))                           # a Gres flag as type
@example(_one(gpus=[{"index": 0, "type": "a100", "cores": "0-100000000"}]))         # range expanded first
@example(_one(gpus=[{"index": 0, "type": "a100", "cores": -1}]))                    # Cores=-1
@example(_one(gpus=[{"index": 2 ** 64, "type": "a100"}]))                           # /dev/nvidia18446744073709551616
@example(_one(gpus=[{"index": 0, "type": "a100", "shards": 2 ** 64}]))              # wider than strtoll
@example(_one(hpc_gres_node_sockets="\u00b2"))                                         # isdigit() but not int()
@example(_one(hpc_gres_node_sockets=256, hpc_gres_node_cores_per_socket=256, hpc_gres_node_threads_per_core=2))  # CPUs uint16
@example(_one(hpc_gres_node_features=["ib\n"]))                                        # $ matches before \n
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"MaxJobCount": "1000 MinJobAge=5"}}))  # a second key
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"SlurmctldParameters": ["a", "b\nFoo=1"]}}))  # a line in a list
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"SchedulerTyp": "sched/backfill"}}))  # unknown key stops slurmctld
@example(_one(cluster={"hpc_gres_cgroup_conf_options": {"ConstrainDevice": "yes"}}))   # cgroup.conf never read back
@example(_one(cluster={"hpc_gres_partitions": [{"name": "p", "nodes": [{"name": "gpu01"}]}]}))  # unhashable
@example(_one(cluster={"hpc_gres_partitions": [{"name": "DEFAULT", "nodes": "ALL"}]}))  # reserved word
@example(_one(cluster={"hpc_gres_partitions": [{"name": "p", "nodes": "ALL", "options": {"MaxTime": "1 Nodes=x"}}]}))
@example(({"ctl": {"hpc_gres_controller_addr": "10.0.0.1\nFoo=bar"}, "gpu01": dict(SHAPE)}, dict(GROUPS),
          {"hpc_gres_slurm_version": ORACLE_VERSION}))
# Found by a second, independent generator (random mutations of any value, key or container; issue 11's
# acceptance run), each once rendered into files slurmd refused or crashed on:
@example(({"ctl": {}, "node01-ib": dict(SHAPE, hpc_gres_gpus=[{"index": 0, "type": "a100"}]),
           "node02-ib": dict(SHAPE, hpc_gres_gpus=[{"index": 0, "type": "a100"}])},
          {"slurmctld": ["ctl"], "slurmd": ["node01-ib", "node02-ib"]}, {"hpc_gres_slurm_version": ORACLE_VERSION}))
@example(({"ctl": {}, "n1": dict(SHAPE), "n2": dict(SHAPE, hpc_gres_gpus=[{"index": 0, "type": "a100"}])},
          {"slurmctld": ["ctl"], "slurmd": ["n1", "n2"]},
          {"hpc_gres_slurm_version": ORACLE_VERSION, "hpc_gres_slurm_conf_options": {"MaxNodeCount": 1}}))  # "past MaxNodeCount"
@example(_one(cluster={"hpc_gres_autodetect": "nvidia"}))                        # unknown to 22.05's slurmd
@example(_one(hpc_gres_node_name="gpu37030640169483212613"))                          # cut to ULONG_MAX by strtoul
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"PreemptMode": "REQUEUE"}}))          # needs a PreemptType
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"MaxNodeCount": 4294967294}}))       # slurmd aborts: malloc failed
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"MaxMemPerCPU": 4096, "MaxMemPerNode": 1}}))  # one is ignored
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"MessageTimeout": 65533}}))           # "too high"
@example(_one(cluster={"hpc_gres_slurm_conf_options": {"PriorityWeightAge": 2 ** 32 - 1, "PriorityWeightQOS": 5}}))
@example(_one(cluster={"hpc_gres_cgroup_conf_options": {"AllowedDevicesFile": "/etc/slurm/devices.conf"}}))
@example(_one(cluster={"hpc_gres_cgroup_conf_options": {"CgroupPlugin": "autodetect", "cgroupplugin": "cgroup/v1"}}))
@example(_one(cluster={"hpc_gres_slurm_conf_options": {1: 2}, "hpc_gres_partitions": [{"name": "p", "nodes": "ALL", 7: 1}]}))
def test_rendered_files_pass_slurmd_or_the_inventory_is_refused_naming_host_and_field(inventory):
    slurmd_oracle.require_oracle()
    judge_with_slurmd(inventory)
