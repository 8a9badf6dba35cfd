"""The eleven inventories of issue 11 that once reached a Slurm file (or a traceback), and the 148 refusals that
named no inventory field: cases 2 to 11 are refused now by validation, naming host and field, before anything is
rendered; case 1 (valid input) renders a hostlist the target release reads.

Each case is one small inventory; the general rule behind it is tested in tests/unit/plugins/module_utils/slurm
(values, options) and by the property tests. tests/integration/test_hostile_playbook.py runs the same cases
through the render-only playbook.
"""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf

SHAPE = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1}


def inventory(node=None, gpu=None, cluster=None, ctl=None, hosts=None):
    gpu01 = dict(SHAPE, hpc_gres_gpus=[dict({"index": 0, "type": "a100", "cores": "0-3"}, **(gpu or {}))])
    gpu01.update(node or {})
    hostvars = {"ctl": dict(ctl or {}), "gpu01": gpu01}
    hostvars.update(hosts or {})
    groups = {"slurmctld": ["ctl"], "slurmd": [h for h in hostvars if h != "ctl"]}
    return hostvars, groups, dict({"hpc_gres_slurm_version": "22.05"}, **(cluster or {}))


# (case, inventory, host, field, text in "expected", text in "found")
CASES = [
    ("2 non-ASCII digit in an integer", inventory(node={"hpc_gres_node_sockets": "\u00b2"}), "gpu01",
     "hpc_gres_node_sockets", "an integer 1-65533 (Sockets=, uint16 in Slurm)", "'\u00b2' (string)"),
    ("3 nested value in a partition's nodes", inventory(cluster={"hpc_gres_partitions": [
        {"name": "p", "nodes": [{"name": "gpu01"}]}]}), "localhost", "hpc_gres_partitions[0].nodes[0]",
     "a Slurm node name", "{'name': 'gpu01'} (dict)"),
    ("4 a range expanded before its bound", inventory(gpu={"cores": "0-100000000"}), "gpu01",
     "hpc_gres_gpus[0].cores", "within 0-7", "'0-100000000' (string)"),
    ("5 sockets wider than uint16", inventory(node={"hpc_gres_node_sockets": 65536}), "gpu01", "hpc_gres_node_sockets",
     "1-65533 (Sockets=, uint16 in Slurm)", "65536"),
    ("5 cores wider than uint16", inventory(node={"hpc_gres_node_cores_per_socket": 70000}), "gpu01",
     "hpc_gres_node_cores_per_socket", "uint16", "70000"),
    ("5 threads wider than uint16", inventory(node={"hpc_gres_node_threads_per_core": 65536}), "gpu01",
     "hpc_gres_node_threads_per_core", "uint16", "65536"),
    ("5 CPUs wider than uint16", inventory(node={"hpc_gres_node_sockets": 256, "hpc_gres_node_cores_per_socket": 256,
                                                 "hpc_gres_node_threads_per_core": 2}),
     "gpu01", "hpc_gres_node_threads_per_core", "at most 65533 (CPUs=, uint16 in Slurm)", "256 x 256 x 2 = 131072"),
    ("5 weight 2^32", inventory(node={"hpc_gres_node_weight": 2 ** 32}), "gpu01", "hpc_gres_node_weight",
     "0-4294967293 (Weight=, uint32 in Slurm)", "4294967296"),
    ("5 real memory 2^64", inventory(node={"hpc_gres_node_real_memory": 2 ** 64}), "gpu01", "hpc_gres_node_real_memory",
     "(RealMemory=, uint64 in Slurm)", "18446744073709551616"),
    ("5 shards 2^64", inventory(gpu={"shards": 2 ** 64}), "gpu01", "hpc_gres_gpus[0].shards",
     "1-9223372036854775806 (shards on this GPU)", "18446744073709551616"),
    ("5 index 2^64", inventory(gpu={"index": 2 ** 64}), "gpu01", "hpc_gres_gpus[0].index",
     "0-247 (the nvidia-smi index of the GPU)", "18446744073709551616"),
    ("6 a Gres flag as type", inventory(gpu={"type": "no_consume"}), "gpu01", "hpc_gres_gpus[0].type",
     "a GRES type other than no_consume", "'no_consume'"),
    ("7 a newline in the controller address", inventory(ctl={"hpc_gres_controller_addr": "10.0.0.1\nFoo=bar"}), "ctl",
     "hpc_gres_controller_addr", "a host name or IP address", "contains a newline"),
    ("7 '#' in the controller address", inventory(ctl={"hpc_gres_controller_addr": "10.0.0.1#x"}), "ctl", "hpc_gres_controller_addr",
     "a host name or IP address", "contains '#'"),
    ("7 '(' in the controller address", inventory(ctl={"hpc_gres_controller_addr": "ctl(x"}), "ctl", "hpc_gres_controller_addr",
     "a host name or IP address", "contains '('"),
    ("8 a newline in a list element", inventory(cluster={"hpc_gres_slurm_conf_options": {
        "SchedulerParameters": ["defer", "bf_window=10\nFoo=bar"]}}), "localhost",
     "hpc_gres_slurm_conf_options.SchedulerParameters[1]", "no whitespace", "contains a newline"),
    ("8 '#' truncates a value", inventory(cluster={"hpc_gres_slurm_conf_options": {"SchedulerParameters": "defer#x"}}),
     "localhost", "hpc_gres_slurm_conf_options.SchedulerParameters", "'#'", "contains '#'"),
    ("8 a space injects a second key", inventory(cluster={"hpc_gres_slurm_conf_options": {"MaxJobCount": "1000 MinJobAge=5"}}),
     "localhost", "hpc_gres_slurm_conf_options.MaxJobCount", "INFINITE or an integer 0-4294967295 (uint32 in Slurm)",
     "'1000 MinJobAge=5'"),
    ("8 a space in a partition option", inventory(cluster={"hpc_gres_partitions": [
        {"name": "p", "nodes": "ALL", "options": {"MaxTime": "1 Nodes=nosuch"}}]}), "localhost",
     "hpc_gres_partitions[0].options.MaxTime", "no whitespace", "contains a space"),
    ("8 a trailing backslash joins the next line", inventory(cluster={"hpc_gres_slurm_conf_options": {
        "SchedulerParameters": "defer\\"}}), "localhost", "hpc_gres_slurm_conf_options.SchedulerParameters", "'\\'",
     "contains '\\'"),
    ("8 an unknown key stops slurmctld", inventory(cluster={"hpc_gres_slurm_conf_options": {"SchedulerTyp": "sched/backfill"}}),
     "localhost", "hpc_gres_slurm_conf_options.SchedulerTyp", "a slurm.conf option that Slurm 22.05 reads",
     "unknown option SchedulerTyp"),
    ("8 cgroup.conf keys are checked too", inventory(cluster={"hpc_gres_cgroup_conf_options": {"ConstrainDevice": "yes"}}),
     "localhost", "hpc_gres_cgroup_conf_options.ConstrainDevice", "a cgroup.conf option that Slurm 22.05 reads",
     "unknown option ConstrainDevice"),
    ("9 trailing newline in a partition name", inventory(cluster={"hpc_gres_partitions": [
        {"name": "main\n", "nodes": "ALL"}]}), "localhost", "hpc_gres_partitions[0].name", "a partition name",
     "contains a newline"),
    ("9 trailing newline in a feature", inventory(node={"hpc_gres_node_features": ["ib\n"]}), "gpu01",
     "hpc_gres_node_features[0]", "a feature name", "contains a newline"),
    ("10 a host called default", inventory(hosts={"default.lab": dict(SHAPE)}), "default.lab", "hpc_gres_node_name",
     "other than Slurm's reserved words DEFAULT and ALL", "'default' derived from the inventory name"),
    ("10 a node called ALL", inventory(node={"hpc_gres_node_name": "ALL"}), "gpu01", "hpc_gres_node_name",
     "reserved words DEFAULT and ALL", "'ALL'"),
    ("10 PartitionName=DEFAULT", inventory(cluster={"hpc_gres_partitions": [{"name": "DEFAULT", "nodes": "ALL"}]}),
     "localhost", "hpc_gres_partitions[0].name", "other than Slurm's reserved word DEFAULT", "'DEFAULT'"),
    ("11 a negative integer as cores", inventory(gpu={"cores": -1}), "gpu01", "hpc_gres_gpus[0].cores",
     "Slurm logical core indices within 0-7", "-1 (int)"),
    ("148 a GRES type ending in a newline", inventory(gpu={"type": "a100\n"}), "gpu01", "hpc_gres_gpus[0].type",
     "a GRES type such as a100", "contains a newline"),
]


@pytest.mark.parametrize("inv, host, field, expected, found", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_each_case_is_refused_by_validation_naming_host_and_field(inv, host, field, expected, found):
    with pytest.raises(GresError) as err:
        build_cluster_model(*inv)
    matching = [p for p in err.value.problems if (p.host, p.field) == (host, field)]
    assert matching, [str(p) for p in err.value.problems]
    assert expected in matching[0].expected, str(matching[0])
    assert found in matching[0].found, str(matching[0])


def test_the_cases_differ_from_a_valid_inventory_in_the_named_value_only():
    files = render_all(build_cluster_model(*inventory()))
    assert parse_slurm_conf(files["slurm.conf"])["nodes"]["gpu01"]["gres"] == {"gpu:a100": 1}


@pytest.mark.parametrize("version, written", [
    ("22.05", "NodeName=node01-ib,node02-ib "),    # 22.05: "Unable to create NodeAddr list from node[01-02]-ib"
    ("23.11", "NodeName=node[01-02]-ib "),         # NEWS 23.11.0: a shared suffix after the brackets
])
def test_1_identical_suffixed_nodes_render_a_hostlist_the_release_reads(version, written):
    hostvars, groups, cluster = inventory(hosts={"node01-ib": dict(SHAPE), "node02-ib": dict(SHAPE)})
    cluster["hpc_gres_slurm_version"] = version
    cluster["hpc_gres_partitions"] = [{"name": "ib", "nodes": ["node01-ib", "node02-ib"]}]
    files = render_all(build_cluster_model(hostvars, groups, cluster))
    assert written in files["slurm.conf"]
    assert "Nodes=%s " % written.split("=")[1].strip() in files["slurm.conf"]
    assert sorted(parse_slurm_conf(files["slurm.conf"])["nodes"]) == ["gpu01", "node01-ib", "node02-ib"]


def test_autodetect_nvidia_is_refused_before_24_11_naming_the_release_that_added_it():
    with pytest.raises(GresError) as err:
        build_cluster_model(*inventory(cluster={"hpc_gres_autodetect": "nvidia", "hpc_gres_slurm_version": "22.05"}))
    (problem,) = err.value.problems
    assert (problem.host, problem.field) == ("localhost", "hpc_gres_autodetect")
    assert problem.expected == ("one of off, nvml (the AutoDetect modes of Slurm 22.05, hpc_gres_slurm_version; nvidia needs "
                                "Slurm 24.11 or later)")
    assert "unknown autodetect flag 'nvidia'" in problem.hint
    model = build_cluster_model(*inventory(cluster={"hpc_gres_autodetect": "nvidia", "hpc_gres_slurm_version": "24.11"}))
    assert "AutoDetect=nvidia" in render_all(model)["gpu01/gres.conf"]
