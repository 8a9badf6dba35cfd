"""Every inventory validation: the error names host, field, what was expected and what was found."""
import copy

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

HOST = "gpu-a01.example.org"


def base():
    hostvars = {
        "ctl01": {},
        HOST: {
            "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
            "hpc_gres_gpus": [{"index": i, "type": "a100", "cores": "0-31" if i < 2 else "32-63"}
                              for i in range(4)],
        },
        "gpu-a02.example.org": {
            "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
            "hpc_gres_gpus": [{"index": 0, "type": "a100"}],
        },
    }
    groups = {"all": ["ctl01", HOST, "gpu-a02.example.org"], "slurmctld": ["ctl01"],
              "slurmd": [HOST, "gpu-a02.example.org"], "gpu": [HOST, "gpu-a02.example.org"]}
    return hostvars, groups, {}


def problems_of(hostvars, groups, cluster):
    with pytest.raises(GresError) as err:
        build_cluster_model(hostvars, groups, cluster)
    return err.value.problems


def gpu(hv, i):
    return hv[HOST]["hpc_gres_gpus"][i]


def set_gpu(key, value, i=1):
    def change(hv, groups, cluster):
        gpu(hv, i)[key] = value
    return change


def set_var(key, value, host=HOST):
    def change(hv, groups, cluster):
        hv[host][key] = value
    return change


def del_var(key, host=HOST):
    def change(hv, groups, cluster):
        del hv[host][key]
    return change


def set_cluster(key, value):
    def change(hv, groups, cluster):
        cluster[key] = value
    return change


def same_node_name(hv, groups, cluster):
    hv["gpu-a02.example.org"]["hpc_gres_node_name"] = "gpu-a01"


def gpus_on_controller(hv, groups, cluster):
    hv["ctl01"]["hpc_gres_gpus"] = [{"index": 0, "type": "a100"}]


def empty_controllers(hv, groups, cluster):
    groups["slurmctld"] = []


def mixed_case_type(hv, groups, cluster):
    hv["gpu-a02.example.org"]["hpc_gres_gpus"][0]["type"] = "A100"


def mixed_case_type_first(hv, groups, cluster):
    # the odd spelling on the first GPU seen: it is the entry refused, not every entry after it
    hv[HOST]["hpc_gres_gpus"][0]["type"] = "A100"


# (id, change, host, field, text in "expected ...", text in "found ...")
CASES = [
    ("duplicate index", set_gpu("index", 0), HOST, "hpc_gres_gpus[1].index", "unique GPU index",
     "0 (also used by hpc_gres_gpus[0])"),
    ("duplicate minor", set_gpu("minor", 3), HOST, "hpc_gres_gpus[3].minor", "unique GPU minor",
     "3 (also used by hpc_gres_gpus[1])"),
    ("unknown gpu key", set_gpu("coers", "0-31"), HOST, "hpc_gres_gpus[1].coers", "a GPU key (index, type",
     "unknown key 'coers'"),
    ("unknown node variable", set_var("hpc_gres_node_socket", 2), HOST, "hpc_gres_node_socket",
     "a variable of hpc.slurm_gres", "unknown variable hpc_gres_node_socket"),
    ("misspelt gpu list", set_var("hpc_gres_gpu", []), HOST, "hpc_gres_gpu",
     "a variable of hpc.slurm_gres", "unknown variable hpc_gres_gpu"),
    ("index not an integer", set_gpu("index", "one"), HOST, "hpc_gres_gpus[1].index", "an integer 0-247",
     "'one' (string)"),
    ("negative index", set_gpu("index", -1), HOST, "hpc_gres_gpus[1].index", "an integer 0-247", "-1"),
    ("bool index", set_gpu("index", True), HOST, "hpc_gres_gpus[1].index", "an integer 0-247", "True (bool)"),
    ("missing index", lambda hv, g, c: gpu(hv, 1).pop("index"), HOST, "hpc_gres_gpus[1].index",
     "the nvidia-smi index", "no index"),
    ("type on some GPUs only", lambda hv, g, c: gpu(hv, 1).pop("type"), HOST, "hpc_gres_gpus",
     "every GPU of a node typed, or none", "typed and untyped GPUs"),
    ("type with a colon", set_gpu("type", "a100:80gb"), HOST, "hpc_gres_gpus[1].type", "a GRES type",
     "'a100:80gb' (contains ':')"),
    ("type not a string", set_gpu("type", 100), HOST, "hpc_gres_gpus[1].type", "a GRES type", "100 (int)"),
    ("gpu entry not a mapping", lambda hv, g, c: hv[HOST]["hpc_gres_gpus"].append("a100"), HOST,
     "hpc_gres_gpus[4]", "a mapping like {index: 0, type: a100}", "'a100' (string)"),
    ("gpu list not a list", set_var("hpc_gres_gpus", {"index": 0}), HOST, "hpc_gres_gpus",
     "a list of GPU entries", "{'index': 0} (dict)"),
    ("sockets not an integer", set_var("hpc_gres_node_sockets", "two"), HOST, "hpc_gres_node_sockets",
     "an integer 1-65533 (Sockets=, uint16 in Slurm)", "'two' (string)"),
    ("zero cores per socket", set_var("hpc_gres_node_cores_per_socket", 0), HOST, "hpc_gres_node_cores_per_socket",
     "an integer 1-65533 (CoresPerSocket=, uint16 in Slurm)", "0"),
    ("real memory bad", set_var("hpc_gres_node_real_memory", "lots"), HOST, "hpc_gres_node_real_memory",
     "1-18446744073709551613 (RealMemory=, uint64 in Slurm)", "'lots' (string)"),
    ("real memory with a unit", set_var("hpc_gres_node_real_memory", "512G"), HOST, "hpc_gres_node_real_memory",
     "an integer number of MiB (RealMemory=)", "'512G' (string)"),
    ("features not a list", set_var("hpc_gres_node_features", {"a": 1}), HOST, "hpc_gres_node_features",
     "a list of feature names (or a comma-separated string)", "{'a': 1} (dict)"),
    ("weight negative", set_var("hpc_gres_node_weight", -5), HOST, "hpc_gres_node_weight",
     "0-4294967293 (Weight=, uint32 in Slurm)", "-5"),
    ("node name invalid", set_var("hpc_gres_node_name", "gpu a01"), HOST, "hpc_gres_node_name", "a Slurm node name",
     "'gpu a01' (contains a space)"),
    ("cores junk", set_gpu("cores", "0-15,x"), HOST, "hpc_gres_gpus[1].cores", "Slurm logical core indices",
     "'0-15,x' (string)"),
    ("cores outside sockets*cores_per_socket", set_gpu("cores", "32-95"), HOST, "hpc_gres_gpus[1].cores",
     "within 0-63 (hpc_gres_node_sockets 2 x hpc_gres_node_cores_per_socket 32)", "'32-95' (64-95 outside)"),
    ("shards zero", set_gpu("shards", 0), HOST, "hpc_gres_gpus[1].shards", "an integer 1-9223372036854775806", "0"),
    ("mig not a list", set_gpu("mig", "3g.40gb"), HOST, "hpc_gres_gpus[1].mig", "a non-empty list of MIG profile",
     "'3g.40gb' (string)"),
    ("mig empty", set_gpu("mig", []), HOST, "hpc_gres_gpus[1].mig", "a non-empty list", "[] (list)"),
    ("mig entry not a profile", set_gpu("mig", ["3g.40gb", 7, "big"]), HOST, "hpc_gres_gpus[1].mig",
     "MIG profile names", "7 (int), 'big' (string)"),
    ("mig with shards", lambda hv, g, c: gpu(hv, 1).update(mig=["7g.80gb"], shards=4), HOST,
     "hpc_gres_gpus[1].shards", "shards only on a GPU without MIG", "shards 4 together with mig"),
    ("model not a string", set_gpu("model", ["A100"]), HOST, "hpc_gres_gpus[1].model", "a GPU model name",
     "['A100'] (list)"),
    ("gpu node without sockets", del_var("hpc_gres_node_sockets"), HOST, "hpc_gres_node_sockets",
     "the node's CPU layout", "not set"),
    ("gpu node without cores per socket", del_var("hpc_gres_node_cores_per_socket"), HOST,
     "hpc_gres_node_cores_per_socket", "the node's CPU layout", "not set"),
    ("two hosts one node name", same_node_name, "gpu-a02.example.org", "hpc_gres_node_name",
     "a Slurm node name used by one inventory host only", "'gpu-a01' (also used by host gpu-a01.example.org)"),
    ("gpus outside slurmd", gpus_on_controller, "ctl01", "hpc_gres_gpus",
     "GPU entries only on hosts in inventory group slurmd", "1 GPU entries on a host outside slurmd"),
    ("type spelt two ways", mixed_case_type, "gpu-a02.example.org", "hpc_gres_gpus[0].type",
     "one spelling per GRES type", "'A100' (host gpu-a01.example.org and "),
    ("type spelt two ways on the first host", mixed_case_type_first, HOST, "hpc_gres_gpus[0].type",
     "one spelling per GRES type", "'A100' (host gpu-a01.example.org and "),
    ("no controller", empty_controllers, "localhost", "groups.slurmctld", "at least one controller host",
     "no hosts"),
    ("autodetect unknown", set_cluster("hpc_gres_autodetect", "yes"), "localhost", "hpc_gres_autodetect",
     "one of off, nvml, nvidia", "'yes' (string)"),
    ("autodetect true", set_cluster("hpc_gres_autodetect", True), "localhost", "hpc_gres_autodetect",
     "one of off, nvml, nvidia", "True (bool)"),
    ("cluster name", set_cluster("hpc_gres_cluster_name", "my cluster"), "localhost", "hpc_gres_cluster_name",
     "a cluster name", "'my cluster' (string, contains a space)"),
    ("owned slurm.conf option", set_cluster("hpc_gres_slurm_conf_options", {"GresTypes": "gpu,mps"}), "localhost",
     "hpc_gres_slurm_conf_options.GresTypes", "an option the renderer does not derive", "GresTypes (derived from"),
    ("option value a dict", set_cluster("hpc_gres_slurm_conf_options", {"SlurmctldDebug": {"level": 3}}), "localhost",
     "hpc_gres_slurm_conf_options.SlurmctldDebug", "a string, integer, boolean or list", "{'level': 3} (dict)"),
    ("options not a mapping", set_cluster("hpc_gres_cgroup_conf_options", ["ConstrainDevices=yes"]), "localhost",
     "hpc_gres_cgroup_conf_options", "a mapping of option name to value", "(list)"),
    ("gpu tres without slurmdbd", set_cluster("hpc_gres_slurm_conf_options", {"AccountingStorageTRES": "gres/gpu"}),
     "localhost", "hpc_gres_slurm_conf_options.AccountingStorageTRES", "AccountingStorageType=accounting_storage/slurmdbd",
     "gres/gpu without slurmdbd"),
    ("partition unknown group", set_cluster("hpc_gres_partitions", [{"name": "p", "group": "nope"}]), "localhost",
     "hpc_gres_partitions[0].group", "an inventory group", "'nope' (string)"),
    ("partition group misspelt", set_cluster("hpc_gres_partitions", [{"name": "p", "group": "gpus"}]), "localhost",
     "hpc_gres_partitions[0].group", "an inventory group", "'gpus' (string)"),
    ("partition unknown node", set_cluster("hpc_gres_partitions", [{"name": "p", "nodes": ["gpu-z9"]}]), "localhost",
     "hpc_gres_partitions[0].nodes", "Slurm node names of hosts in slurmd", "unknown 'gpu-z9'"),
    ("partition hostlist overlapping, one name unknown", set_cluster("hpc_gres_partitions", [
        {"name": "p", "nodes": "gpu-a[01-02],gpu-a[02-03]"}]), "localhost", "hpc_gres_partitions[0].nodes",
     "Slurm node names of hosts in slurmd", "unknown 'gpu-a03'"),
    ("partition hostlist far larger than the cluster", set_cluster("hpc_gres_partitions", [
        {"name": "p", "nodes": "gpu-a[0001-9999]"}]), "localhost", "hpc_gres_partitions[0].nodes",
     "ALL, or a hostlist of at most 1026 names", "'gpu-a[0001-9999]' (string) (9999 names)"),
    ("partition group and nodes", set_cluster("hpc_gres_partitions", [{"name": "p", "group": "gpu", "nodes": "ALL"}]),
     "localhost", "hpc_gres_partitions[0]", "exactly one of group or nodes", "both"),
    ("partition unknown key", set_cluster("hpc_gres_partitions", [{"name": "p", "nodes": "ALL", "maxtime": 5}]),
     "localhost", "hpc_gres_partitions[0].maxtime", "a partition key", "unknown key 'maxtime'"),
    ("two default partitions", set_cluster("hpc_gres_partitions", [
        {"name": "a", "nodes": "ALL", "default": True}, {"name": "b", "group": "gpu", "default": True}]),
     "localhost", "hpc_gres_partitions", "at most one partition with default: true", "2 (a, b)"),
    ("an option twice, in two spellings", set_cluster("hpc_gres_cgroup_conf_options", {
        "CgroupPlugin": "autodetect", "cgroupplugin": "cgroup/v1"}), "localhost",
     "hpc_gres_cgroup_conf_options.CgroupPlugin", "each option once", "CgroupPlugin and cgroupplugin"),
    ("options Slurm ignores one of, named as written", set_cluster("hpc_gres_slurm_conf_options", {
        "maxmempercpu": 4096, "MaxMemPerNode": 100000}), "localhost", "hpc_gres_slurm_conf_options.maxmempercpu",
     "MaxMemPerCPU or MaxMemPerNode, not both", "both"),
    ("a PreemptMode the default PreemptType stops on", set_cluster("hpc_gres_slurm_conf_options", {"PreemptMode": "REQUEUE"}),
     "localhost", "hpc_gres_slurm_conf_options.PreemptMode", "while PreemptType is preempt/none", "PreemptMode=REQUEUE"),
    ("partition options Slurm ignores one of", set_cluster("hpc_gres_partitions", [
        {"name": "p", "nodes": "ALL", "options": {"AllowQos": "normal", "DenyQos": "low"}}]), "localhost",
     "hpc_gres_partitions[0].options.DenyQos", "AllowQos or DenyQos, not both", "both"),
    ("fewer nodes allowed than the inventory has", set_cluster("hpc_gres_slurm_conf_options", {"maxnodecount": 1}),
     "localhost", "hpc_gres_slurm_conf_options.maxnodecount", "MaxNodeCount at least the number of nodes (2)", "1"),
    ("a node name whose number Slurm cannot hold", set_var("hpc_gres_node_name", "gpu99999999999999999999"), HOST,
     "hpc_gres_node_name", "whose final number is at most 18446744073709551614", "'gpu99999999999999999999'"),
]


@pytest.mark.parametrize("change, host, field, expected, found", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_names_host_field_expected_and_found(change, host, field, expected, found):
    hostvars, groups, cluster = base()
    change(hostvars, groups, cluster)
    problems = problems_of(hostvars, groups, cluster)
    matching = [p for p in problems if p.host == host and p.field == field]
    assert matching, "no problem for %s %s in %s" % (host, field, [str(p) for p in problems])
    text = str(matching[0])
    assert text.startswith("host %s: %s: expected " % (host, field))
    assert expected in matching[0].expected, text
    assert found in matching[0].found, text


def test_base_inventory_is_valid():
    build_cluster_model(*base())


def test_every_problem_is_reported_at_once():
    hostvars, groups, cluster = base()
    gpu(hostvars, 1)["index"] = 0
    hostvars["gpu-a02.example.org"]["hpc_gres_gpus"][0]["bogus"] = 1
    cluster["hpc_gres_autodetect"] = "sometimes"
    with pytest.raises(GresError) as err:
        build_cluster_model(hostvars, groups, cluster)
    message = str(err.value)
    assert message.startswith("3 problems:")
    assert "host gpu-a01.example.org: hpc_gres_gpus[1].index: expected unique GPU index" in message
    assert "host gpu-a02.example.org: hpc_gres_gpus[0].bogus" in message
    assert "host localhost: hpc_gres_autodetect" in message


def test_duplicate_index_does_not_also_report_the_defaulted_minor():
    hostvars, groups, cluster = base()
    gpu(hostvars, 1)["index"] = 0
    problems = problems_of(hostvars, groups, cluster)
    assert [p.field for p in problems] == ["hpc_gres_gpus[1].index"]


def test_os_cpu_ids_in_cores_get_a_hint():
    hostvars, groups, cluster = base()
    gpu(hostvars, 0)["cores"] = "0-15,64-79"
    problem = problems_of(hostvars, groups, cluster)[0]
    assert "look like OS CPU ids" in str(problem)


def test_a_misspelt_partition_group_gets_a_did_you_mean_hint():
    hostvars, groups, cluster = base()
    cluster["hpc_gres_partitions"] = [{"name": "p", "group": "gpus"}]
    [problem] = [p for p in problems_of(hostvars, groups, cluster) if p.field == "hpc_gres_partitions[0].group"]
    assert str(problem).endswith("found 'gpus' (string) (did you mean gpu?)"), str(problem)


def test_a_mig_layout_written_as_text_is_told_to_be_a_list():
    hostvars, groups, cluster = base()
    hostvars[HOST]["hpc_gres_gpus"][0]["mig"] = "3g.40gb,3g.40gb"
    [problem] = [p for p in problems_of(hostvars, groups, cluster) if p.field == "hpc_gres_gpus[0].mig"]
    assert str(problem).endswith("(write a list: mig: [3g.40gb, 3g.40gb])"), str(problem)


def test_unknown_variable_gets_a_did_you_mean_hint():
    hostvars, groups, cluster = base()
    hostvars[HOST]["hpc_gres_node_real_mem"] = 1000
    problem = problems_of(hostvars, groups, cluster)[0]
    assert problem.hint == "did you mean hpc_gres_node_real_memory?"


def test_host_in_slurmctld_and_slurmd_with_gpus_is_allowed():
    hostvars, groups, cluster = base()
    groups["slurmctld"] = [HOST]
    model = build_cluster_model(hostvars, groups, cluster)
    assert model["controllers"][0]["name"] == "gpu-a01"


def test_cluster_problems_name_the_given_cluster_host():
    hostvars, groups, cluster = base()
    cluster["hpc_gres_autodetect"] = "auto"
    with pytest.raises(GresError) as err:
        build_cluster_model(hostvars, groups, cluster, cluster_host="deploy-box")
    assert err.value.problems[0].host == "deploy-box"


def test_the_same_bad_group_vars_are_reported_for_every_host_sharing_them():
    hostvars, groups, cluster = base()
    shared = copy.deepcopy(hostvars[HOST])
    shared["hpc_gres_gpus"][3]["index"] = 0
    hostvars[HOST] = shared
    hostvars["gpu-a02.example.org"] = shared
    hosts = {p.host for p in problems_of(hostvars, groups, cluster)}
    assert hosts == {HOST, "gpu-a02.example.org"}


def test_mig_and_shards_in_one_cluster_are_refused_naming_host_and_mig():
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
    shape = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 8, "hpc_gres_node_threads_per_core": 1}
    hostvars = {
        "ctl": {},
        "gpu-s1": dict(shape, hpc_gres_gpus=[{"index": 0, "type": "l40s", "shards": 4}]),
        "gpu-m1": dict(shape, hpc_gres_gpus=[{"index": 0, "type": "a100", "model": "A100-80GB",
                                              "mig": ["3g.40gb", "2g.20gb"]}]),
    }
    groups = {"all": list(hostvars), "slurmctld": ["ctl"], "slurmd": ["gpu-s1", "gpu-m1"]}
    with pytest.raises(GresError) as err:
        build_cluster_model(hostvars, groups, {})
    text = str(err.value)
    assert "host gpu-m1: hpc_gres_gpus[0].mig" in text and "shards on host gpu-s1 GPU 0" in text
    # the line just added may be the shards: that entry is named too
    assert "host gpu-s1: hpc_gres_gpus[0].shards: expected shards only in a cluster without MIG instances, found " \
        "MIG instances on host gpu-m1 GPU 0" in text


def test_more_compute_hosts_than_slurm_holds_are_refused_before_any_is_read():
    hostvars, groups, cluster = base()
    groups["slurmd"] += ["n%d" % i for i in range(65535)]
    problems = problems_of(hostvars, groups, cluster)
    assert [(p.host, p.field, p.found) for p in problems] == [("localhost", "groups.slurmd", "65537 hosts")]


def test_only_the_odd_spelling_of_a_type_is_refused_wherever_it_comes_first():
    for change in (mixed_case_type, mixed_case_type_first):
        hostvars, groups, cluster = base()
        change(hostvars, groups, cluster)
        spelling = [p for p in problems_of(hostvars, groups, cluster) if "one spelling" in p.expected]
        assert [p.found.split(" ")[0] for p in spelling] == ["'A100'"], [str(p) for p in spelling]


def test_a_feature_name_may_hold_a_colon_but_no_feature_operator():
    hostvars, groups, cluster = base()
    hostvars[HOST]["hpc_gres_node_features"] = ["CPU_GEN:HSW", "ib"]
    assert "Features=CPU_GEN:HSW,ib" in render_all(build_cluster_model(hostvars, groups, cluster))["slurm.conf"]
    # the comma string of an INI inventory (hpc_gres_node_features=CPU_GEN:HSW,ib) is the same list
    hostvars[HOST]["hpc_gres_node_features"] = "CPU_GEN:HSW, ib"
    assert "Features=CPU_GEN:HSW,ib" in render_all(build_cluster_model(hostvars, groups, cluster))["slurm.conf"]
    hostvars[HOST]["hpc_gres_node_features"] = ["CPU_GEN:HSW", "a&b", ":x"]
    found = [(p.field, p.found) for p in problems_of(hostvars, groups, cluster) if "features" in p.field]
    assert found == [("hpc_gres_node_features[1]", "'a&b' (contains '&')"),
                     ("hpc_gres_node_features[2]", "':x' (starts with ':')")], found


def test_a_host_the_inventory_names_by_ip_address_needs_its_node_name():
    # "up to the first dot" of 10.0.2.1 was "10": NodeName=10, which slurmd never matches (a site's INI inventory)
    def renamed(name):
        hostvars, groups, cluster = base()
        hostvars[name] = hostvars.pop(HOST)
        groups = {g: [name if h == HOST else h for h in hosts] for g, hosts in groups.items()}
        return hostvars, groups, cluster
    for address in ("10.0.2.1", "fd00::21"):
        found = [(p.host, p.field, p.found) for p in problems_of(*renamed(address))]
        assert found == [(address, "hpc_gres_node_name", "not set (the inventory name %s is an IP address)" % address)]
    hostvars, groups, cluster = renamed("10.0.2.1")
    hostvars["10.0.2.1"]["hpc_gres_node_name"] = "gpu-a01"
    assert "NodeName=gpu-a01" in render_all(build_cluster_model(hostvars, groups, cluster))["slurm.conf"]


def test_a_cluster_without_any_gpu_entry_warns_where_the_variables_are_read():
    # a site's group_vars beside its own playbook are not read by the collection's playbooks: every node CPU-only
    hostvars, groups, cluster = base()
    for host in groups["slurmd"]:
        hostvars[host].pop("hpc_gres_gpus")
    model = build_cluster_model(hostvars, groups, cluster)
    [warning] = [w for w in model["warnings"] if "hpc_gres_gpus" in w]
    assert warning.startswith("host localhost: hpc_gres_gpus: expected GPU entries on the GPU nodes, found none on "
                              "any of the 2 hosts of group slurmd") and "beside the inventory" in warning
    assert not [w for w in build_cluster_model(*base())["warnings"] if "hpc_gres_gpus: expected GPU entries" in w]


@pytest.mark.parametrize("name, value, literal", [("hpc_gres_boot", "false", "false"),
                                                  ("hpc_gres_health_nhc", "yes", "true"),
                                                  ("hpc_gres_health", "TRUE", "true")])
def test_a_typed_variable_given_as_text_says_how_to_pass_it_typed(name, value, literal):
    # what -e name=value gives: a string, refused, with the JSON form that passes the type
    hostvars, groups, cluster = base()
    cluster[name] = value
    [problem] = [p for p in problems_of(hostvars, groups, cluster) if p.field == name]
    assert problem.hint == "-e %s=%s passes a string: write -e '{\"%s\": %s}', or unquoted in YAML" % (
        name, value, name, literal)


@pytest.mark.parametrize("name, value", [("hpc_gres_health_timeout", "5"), ("hpc_gres_health_interval", "600"),
                                         ("hpc_gres_boot_timeout", "600")])
def test_an_integer_variable_given_as_digits_is_that_integer(name, value):
    # what -e name=600 gives, accepted as for every other integer variable (inventory.md)
    hostvars, groups, cluster = base()
    cluster[name] = value
    model = build_cluster_model(hostvars, groups, cluster)
    key = {"hpc_gres_health_timeout": ("health", "timeout"), "hpc_gres_health_interval": ("health", "interval"),
           "hpc_gres_boot_timeout": ("boot", "timeout")}[name]
    assert model[key[0]][key[1]] == int(value)


def test_a_partition_of_a_group_whose_nodes_were_refused_is_not_called_empty():
    # the node's own problem is the one to fix; "group gpu has none" sent the admin to a group that is right
    hostvars, groups, cluster = base()
    for host in groups["gpu"]:
        del hostvars[host]["hpc_gres_node_cores_per_socket"]
    cluster["hpc_gres_partitions"] = [{"name": "gpu", "group": "gpu", "default": True}]
    fields = [(p.host, p.field) for p in problems_of(hostvars, groups, cluster)]
    assert ("localhost", "hpc_gres_partitions[0].group") not in fields
    assert (HOST, "hpc_gres_node_cores_per_socket") in fields
    # a group that holds no slurmd host at all still is
    hostvars, groups, cluster = base()
    groups["empty"] = ["ctl01"]
    cluster["hpc_gres_partitions"] = [{"name": "x", "group": "empty", "default": True}]
    assert [p.found for p in problems_of(hostvars, groups, cluster) if p.field == "hpc_gres_partitions[0].group"] == [
        "group empty has none"]


def test_sockets_per_board_beside_hpc_gres_node_sockets_is_refused():
    # oracle-quickstart/oci-hpc's H100 shapes write Boards=1 SocketsPerBoard=1 (a site's own node options) while the
    # inventory says 2 sockets: slurmd logs "Sockets=# and SocketsPerBoard=# is invalid , using SocketsPerBoard" and
    # takes one socket, so Cores=56-111 lay outside the node the cores were checked against
    hostvars, groups, cluster = base()
    hostvars[HOST]["hpc_gres_node_options"] = {"Boards": 1, "SocketsPerBoard": 1}
    [problem] = [p for p in problems_of(hostvars, groups, cluster) if "SocketsPerBoard" in p.field]
    assert (problem.host, problem.found) == (HOST, "SocketsPerBoard=1 with hpc_gres_node_sockets 2")
    # Boards alone, beside the sockets, is what Slurm reads as it is
    hostvars, groups, cluster = base()
    hostvars[HOST]["hpc_gres_node_options"] = {"Boards": 1}
    assert "Boards=1" in render_all(build_cluster_model(hostvars, groups, cluster))["slurm.conf"]


def test_cloud_nodes_in_files_mode_warn_to_use_configless():
    # oracle-quickstart/oci-hpc's elastic GPU nodes (State=CLOUD): gres.conf(5) wants one gres.conf naming every cloud
    # node on the controller and the cloud nodes, which files mode does not give
    hostvars, groups, cluster = base()
    hostvars[HOST]["hpc_gres_node_options"] = {"State": "CLOUD"}
    [warning] = [w for w in build_cluster_model(hostvars, groups, cluster)["warnings"] if "hpc_gres_config_mode" in w]
    assert "files, with 1 cloud node(s) (gpu-a01.example.org)" in warning
    cluster["hpc_gres_config_mode"] = "configless"
    assert not [w for w in build_cluster_model(hostvars, groups, cluster)["warnings"] if "hpc_gres_config_mode" in w]
