"""Schema variables read from a real Ansible inventory (templates, group_vars, vault-free): the render action's body
(plugin_utils/inventory_vars.py, plugin_utils/cluster_render.py)."""
import pytest
from ansible.release import __version__ as ANSIBLE_VERSION
from render_helpers import load_inventory, write_inventory

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.cluster_render import cluster_vars, render_cluster
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import model_from_inventory

pytestmark = pytest.mark.ansible_core

HOSTS = {"all": {"children": {
    "slurmctld": {"hosts": {"ctl01": None}},
    "slurmd": {"children": {"gpu": {"hosts": {"gpu-a[01:03].lab": None}}, "cpu": {"hosts": {"cpu1": None}}}},
}}}
GPU_GROUP = {
    "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 16, "hpc_gres_node_threads_per_core": 2,
    "socket1": "16-31",
    "hpc_gres_gpus": [{"index": 0, "type": "a100", "cores": "0-15"}, {"index": 1, "type": "a100",
                                                                      "cores": "{{ socket1 }}"}],
    "unrelated_broken": "{{ this_is_never_defined }}",
}

ANSIBLE_CORE = tuple(int(part) for part in ANSIBLE_VERSION.split(".")[:2])


def test_templated_values_are_templated_per_host(tmp_path):
    # 16-23 is half a socket: a warning on 22.05, refused from 24.11 on
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": GPU_GROUP, "all": {"hpc_gres_slurm_version": "22.05"}},
                             host_vars={"gpu-a02.lab": {"hpc_gres_node_name": "{{ inventory_hostname_short }}x",
                                                        "socket1": "16-23"}})
    model = model_from_inventory(*load_inventory(source))
    nodes = {n["name"]: n for n in model["nodes"]}
    assert sorted(nodes) == ["cpu1", "gpu-a01", "gpu-a02x", "gpu-a03"]
    assert nodes["gpu-a01"]["gpus"][1]["cores"] == "16-31"
    assert nodes["gpu-a02x"]["gpus"][1]["cores"] == "16-23"
    assert type(nodes["gpu-a01"]["gpus"][0]["type"]) is str  # pylint: disable=unidiomatic-typecheck


def test_duplicate_index_from_group_vars_fails_with_host_and_index(tmp_path):
    bad = dict(GPU_GROUP, hpc_gres_gpus=[{"index": 0, "type": "a100"}, {"index": 0, "type": "a100"}])
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": bad})
    hostvars, groups, cluster = load_inventory(source)
    with pytest.raises(GresError) as err:
        model_from_inventory(hostvars, groups, cluster)
    message = str(err.value)
    assert "host gpu-a01.lab: hpc_gres_gpus[1].index: expected unique GPU index, found 0" in message
    assert "host gpu-a03.lab: hpc_gres_gpus[1].index" in message


def test_render_cluster_returns_files_summary_and_node_names(tmp_path):
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": GPU_GROUP, "all": {"hpc_gres_cluster_name": "lab"}},
                             host_vars={"gpu-a02.lab": {"hpc_gres_node_name": "a02"}})
    hostvars, groups, cluster = load_inventory(source)
    out = render_cluster(hostvars, groups, cluster)
    # the users' guide comes from the same model, in the same step (users_guide.inventory_guide_files)
    assert sorted(out["files"]) == ["USERS.md", "USERS.motd", "a02/gres.conf", "cgroup.conf", "gpu-a01/gres.conf",
                                    "gpu-a03/gres.conf", "slurm.conf"]
    assert "sbatch -p main --gres=gpu:a100:2 job.sh" in out["files"]["USERS.md"]
    assert "`roles/hpc_gres_users_guide/files/job-templates/`" in out["files"]["USERS.md"]
    assert "NodeName=a02,gpu-a[01,03] Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 Gres=gpu:a100:2" in out["files"][
        "slurm.conf"]
    assert out["summary"]["gpus_by_type"] == {"a100": 6}
    assert out["summary"]["cluster"] == "lab"
    assert out["summary"]["lines"][-1] == "files: 7 (slurm.conf, cgroup.conf, 3 gres.conf, USERS.md, USERS.motd)"
    # the node-name rule is applied once, by the model; every slurmd host is named, CPU-only ones too
    assert out["nodes"] == {"cpu1": "cpu1", "gpu-a01.lab": "gpu-a01", "gpu-a02.lab": "a02", "gpu-a03.lab": "gpu-a03"}
    assert out["mig_nodes"] == {}
    assert (out["config_mode"], out["include_file"]) == ("files", "slurm_gres.conf")


def test_render_cluster_tells_the_roles_the_config_mode_of_the_cluster_host(tmp_path):
    """The roles install per the mode the render read from the cluster host (localhost), not per node."""
    cluster = {"hpc_gres_cluster_name": "lab", "hpc_gres_config_mode": "include", "hpc_gres_include_file": "n.conf"}
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": GPU_GROUP, "all": cluster})
    out = render_cluster(*load_inventory(source))
    assert (out["config_mode"], out["include_file"]) == ("include", "n.conf")
    assert "n.conf" in out["files"] and "cgroup.conf" not in out["files"]


def test_render_cluster_gives_mig_hosts_their_spec_layouts_and_models(tmp_path):
    mig = dict(GPU_GROUP, hpc_gres_gpus=[
        {"index": 0, "type": "a100", "model": "A100-80GB", "cores": "0-15", "mig": ["3g.40gb", "3g.40gb"]},
        {"index": 1, "type": "a100", "model": "A100-80GB", "cores": "16-31"}])
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": mig})
    out = render_cluster(*load_inventory(source))
    entry = out["mig_nodes"]["gpu-a01.lab"]
    assert entry["layouts"] == {0: ["3g.40gb", "3g.40gb"], 1: None}
    assert entry["models"] == {0: "A100-80GB", 1: "A100-80GB"}
    assert entry["spec"]["node"]["name"] == "gpu-a01" and entry["spec"]["autodetect"] == "off"
    assert sorted(out["mig_nodes"]) == ["gpu-a01.lab", "gpu-a02.lab", "gpu-a03.lab"]


def test_a_mig_step_changes_only_that_hosts_gres(tmp_path):
    mig = dict(GPU_GROUP, hpc_gres_gpus=[
        {"index": 0, "type": "a100", "model": "A100-80GB", "cores": "0-15", "mig": ["3g.40gb", "3g.40gb"]},
        {"index": 1, "type": "a100", "model": "A100-80GB", "cores": "16-31"}])
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": mig})
    hostvars, groups, cluster = load_inventory(source)
    whole = {0: None, 1: None}
    out = render_cluster(hostvars, groups, cluster, mig_step="gpu-a02.lab",
                         live={"gpu-a01.lab": whole, "gpu-a02.lab": whole, "gpu-a03.lab": whole})
    assert "NodeName=gpu-a[01,03] Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 Gres=gpu:a100:2" in out["files"][
        "slurm.conf"]
    assert "NodeName=gpu-a02 Sockets=2 CoresPerSocket=16 ThreadsPerCore=2 Gres=gpu:3g.40gb:2,gpu:a100:1" in out[
        "files"]["slurm.conf"]
    # a step of the runbook is not the cluster users see: no guide
    assert "USERS.md" not in out["files"]


def test_plain_dict_hostvars_work_too():
    hostvars = {"ctl01": {}, "n1": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 4,
                                    "hpc_gres_node_threads_per_core": 1, "hpc_gres_gpus": [{"index": 0, "type": "t4"}]}}
    groups = {"all": ["ctl01", "n1"], "slurmctld": ["ctl01"], "slurmd": ["n1"]}
    assert model_from_inventory(hostvars, groups)["nodes"][0]["gpus"][0]["type"] == "t4"


def test_a_vars_file_with_non_string_keys_is_read_not_crashed_on(tmp_path):
    # YAML allows `1.5: x` in host_vars and Ansible keeps the float key (found by issue 11's second generator:
    # the filter failed with "'_AnsibleTaggedFloat' object has no attribute 'startswith'")
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": {**GPU_GROUP, 1.5: "x", 7: [1]}},
                             host_vars={"cpu1": {None: 1, True: "y"}})
    model = model_from_inventory(*load_inventory(source))
    assert sorted(n["name"] for n in model["nodes"]) == ["cpu1", "gpu-a01", "gpu-a02", "gpu-a03"]


def test_host_values_reads_only_the_named_variables_of_the_named_hosts(tmp_path):
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import host_values
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": GPU_GROUP})
    hostvars, groups, cluster = load_inventory(source)
    found = host_values(hostvars, ["gpu-a01.lab", "cpu1"], ("hpc_gres_node_sockets", "not_set_anywhere"))
    assert found == {"gpu-a01.lab": {"hpc_gres_node_sockets": 2}, "cpu1": {}}
    assert host_values({"n1": {"a": 1, "b": 2}}, ["n1", "n2"], ("a",)) == {"n1": {"a": 1}, "n2": {}}


def test_vars_ansible_cannot_load_are_refused_naming_host_and_variable(tmp_path):
    # found by issue 11's second generator: a host_vars file holding a string, and a template that fails, stopped
    # the render with Ansible's message alone ("failed to combine variables ..."), no host or field of ours
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": GPU_GROUP},
                             host_vars={"cpu1": "just a string",
                                        "gpu-a02.lab": {"hpc_gres_node_sockets": "{{ nosuch_variable }}"}})
    with pytest.raises(GresError) as err:
        model_from_inventory(*load_inventory(source))
    problems = {(p.host, p.field): p for p in err.value.problems}
    assert sorted(problems) == [("cpu1", "vars"), ("gpu-a02.lab", "hpc_gres_node_sockets")], str(err.value)
    found = problems[("cpu1", "vars")].found
    if ANSIBLE_CORE >= (2, 19):
        assert "host_vars/cpu1.yml" in found
    else:  # ansible-core 2.14's message ("failed to combine variables ...") names the value, not the file
        assert "host_vars/cpu1.yml" in found or '"just a string"' in found, found
    assert "nosuch_variable" in problems[("gpu-a02.lab", "hpc_gres_node_sockets")].found


def test_cluster_vars_whose_template_fails_name_the_variable():
    def template(value):
        if "{{" in str(value):
            raise ValueError("'nope' is undefined")
        return value
    with pytest.raises(GresError) as err:
        cluster_vars({"hpc_gres_cluster_name": "{{ nope }}", "hpc_gres_slurm_conf_options": {}}, template, "head")
    assert str(err.value) == ("host head: hpc_gres_cluster_name: expected a value whose template renders, found "
                              "'nope' is undefined")


def test_a_cluster_wide_variable_set_on_nodes_only_is_refused_not_ignored():
    # DeepOps keeps its Slurm settings in group_vars/slurm-cluster.yml, a group localhost is not in: the render reads
    # the cluster-wide variables from localhost, so the 26.05 there would have been ignored (24.11 rules, no word)
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import cluster_vars_elsewhere
    extracted = {"gpu01": {"hpc_gres_slurm_version": "26.05", "hpc_gres_cluster_name": "deepops",
                           "hpc_gres_gpus": [{"index": 0, "type": "a100"}]},
                 "gpu02": {"hpc_gres_slurm_version": "26.05", "hpc_gres_cluster_name": "deepops"},
                 "ctl": {"hpc_gres_cluster_name": "lab"}}
    found = cluster_vars_elsewhere(extracted, {"hpc_gres_cluster_name": "lab"}, "localhost")
    assert [(p.host, p.field, p.found) for p in found] == [
        ("gpu01", "hpc_gres_cluster_name", "'deepops' (string), while localhost has 'lab' (string)"),
        ("gpu01", "hpc_gres_slurm_version", "'26.05' (string), while localhost has none (the default '24.11' "
                                            "(string))"),
        ("gpu02", "hpc_gres_cluster_name", "'deepops' (string), while localhost has 'lab' (string)"),
        ("gpu02", "hpc_gres_slurm_version", "'26.05' (string), while localhost has none (the default '24.11' "
                                            "(string))")]
    assert "group_vars/all" in found[0].hint
    # the same value everywhere (group_vars/all reaches every host) is what the render reads: nothing to say
    assert cluster_vars_elsewhere({"gpu01": {"hpc_gres_cluster_name": "lab"}}, {"hpc_gres_cluster_name": "lab"},
                                  "localhost") == []
