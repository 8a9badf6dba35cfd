"""Where a refused value is defined (plugins/plugin_utils/var_origin.py), with inventories Ansible itself loads:
the file and line when a file holds the value the host has, nothing when none does."""
import os

import pytest
from render_helpers import load_inventory, write_inventory

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import _read_schema_hostvars
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.var_origin import (
    VarOrigins, field_path, group_ancestors, plain)

pytestmark = pytest.mark.ansible_core

HOSTS = {"all": {"children": {
    "slurmctld": {"hosts": {"ctl": None}},
    "slurmd": {"children": {"gpu": {"hosts": {"gpu-[01:04].lab": None}}}},
}}}
GPUS = [{"index": 0, "type": "a100"}, {"index": 1, "type": "h1OO"}]


def origins(source, cwd=None, extra=None, hierarchy=True):
    hostvars, groups, _cluster = load_inventory(source)
    values, _problems = _read_schema_hostvars(hostvars, list(groups["all"]) + ["localhost"],
                                              lambda name: name.startswith("hpc_gres_"))
    for host, found in (extra or {}).items():
        values.setdefault(host, {}).update(found)

    def value_of(host, name):
        return plain(values.get(host, {}).get(name, VarOrigins.MISSING))
    return VarOrigins(value_of, groups, [source], cwd=cwd or os.path.dirname(source),
                      ancestors=group_ancestors(hostvars) if hierarchy else None)


def test_a_group_vars_value_is_located_at_the_line_of_the_field(tmp_path):
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": {"hpc_gres_node_sockets": 2, "hpc_gres_gpus": GPUS}})
    where = origins(source).where
    # write_inventory writes block YAML: line 1 sockets, 2 hpc_gres_gpus:, 3 "- index: 0", 4 type, 5 "- index: 1", 6
    assert where("gpu-03.lab", "hpc_gres_gpus[1].type") == "group_vars/gpu.yml:6"
    assert where("gpu-03.lab", "hpc_gres_gpus[1]") == "group_vars/gpu.yml:5"
    assert where("gpu-03.lab", "hpc_gres_gpus[1].nosuch") == "group_vars/gpu.yml:5"
    assert where("gpu-03.lab", "hpc_gres_gpus") == "group_vars/gpu.yml:2"
    assert where("gpu-03.lab", "hpc_gres_node_real_memory") is None  # not set anywhere
    assert where("gpu-03.lab", "vars") is None and where("localhost", "groups.slurmd") is None


def test_a_host_vars_value_that_overrides_the_group_is_located_in_host_vars_only(tmp_path):
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": {"hpc_gres_gpus": GPUS}},
                             host_vars={"gpu-02.lab": {"hpc_gres_gpus": GPUS[:1]}})
    where = origins(source).where
    assert where("gpu-02.lab", "hpc_gres_gpus[0].type") == "host_vars/gpu-02.lab.yml:3"
    assert where("gpu-01.lab", "hpc_gres_gpus[0].type") == "group_vars/gpu.yml:3"


def test_a_value_in_two_files_is_located_in_both_and_paths_outside_cwd_are_absolute(tmp_path):
    source = write_inventory(tmp_path / "inv", HOSTS, group_vars={"gpu": {"hpc_gres_node_sockets": 2},
                                                                  "slurmd": {"hpc_gres_node_sockets": 2}})
    found = origins(source, cwd=str(tmp_path / "elsewhere")).where("gpu-01.lab", "hpc_gres_node_sockets")
    assert found == "%s:1 and %s:1" % (tmp_path / "inv" / "group_vars" / "gpu.yml",
                                       tmp_path / "inv" / "group_vars" / "slurmd.yml")


def test_inline_vars_of_a_yaml_inventory_and_a_group_vars_directory(tmp_path):
    hosts = {"all": {"children": {
        "slurmctld": {"hosts": {"ctl": None}},
        "slurmd": {"vars": {"hpc_gres_node_sockets": 2},
                   "children": {"gpu": {"hosts": {"gpu-[01:04].lab": {"hpc_gres_node_weight": 7}}}}},
    }}}
    source = write_inventory(tmp_path, hosts)
    os.makedirs(tmp_path / "group_vars" / "gpu")
    (tmp_path / "group_vars" / "gpu" / "gpus.yml").write_text("---\n# GPUs\nhpc_gres_gpus:\n  - {index: 0, tpye: a100}\n")
    where = origins(source).where
    assert where("gpu-04.lab", "hpc_gres_node_sockets") == "hosts.yml:8"
    assert where("gpu-04.lab", "hpc_gres_node_weight") == "hosts.yml:13"
    assert where("gpu-04.lab", "hpc_gres_gpus[0].tpye") == "group_vars/gpu/gpus.yml:4"


def test_a_value_no_file_holds_as_it_is_gets_no_location(tmp_path):
    """-e, a template's result or a vaulted value: the location is left out rather than guessed."""
    source = write_inventory(tmp_path, HOSTS, group_vars={"gpu": {"hpc_gres_node_sockets": 2}})
    where = origins(source, extra={"gpu-01.lab": {"hpc_gres_node_sockets": 4}}).where
    assert where("gpu-01.lab", "hpc_gres_node_sockets") is None
    assert where("gpu-02.lab", "hpc_gres_node_sockets") == "group_vars/gpu.yml:1"
    (tmp_path / "group_vars" / "gpu.yml").write_text(
        "hpc_gres_node_sockets: !vault |\n  $ANSIBLE_VAULT;1.1;AES256\n  3132\n")
    where = origins(source, extra={"gpu-01.lab": {"hpc_gres_node_sockets": "2"}}).where
    assert where("gpu-01.lab", "hpc_gres_node_sockets") is None


def test_field_paths():
    assert field_path("hpc_gres_gpus[12].mig") == ("hpc_gres_gpus", [12, "mig"])
    assert field_path("hpc_gres_slurm_conf_options.SchedulerParameters[1]") == (
        "hpc_gres_slurm_conf_options", ["SchedulerParameters", 1])
    assert field_path("hpc_gres_slurm_conf_options['bad key']") == ("hpc_gres_slurm_conf_options", ["bad key"])
    assert field_path("slurm.conf line 4") == ("slurm", ["conf line 4"])


SHAPES = {"all": {"children": {
    "slurmctld": {"hosts": {"ctl": None}},
    "slurmd": {"children": {"gpu": {"children": {
        "gpu_a100": {"hosts": {"gpu-a[01:02].lab": None}, "children": {"a100_big": {"hosts": {"gpu-a01.lab": None}}}},
        "gpu_h100": {"hosts": {"gpu-h01.lab": None, "gpu-a02.lab": None}}}}}}}}}
A100 = [{"index": i, "type": "a100"} for i in range(4)]
H100 = [{"index": i, "type": "h100"} for i in range(8)]


def test_a_host_in_two_sibling_groups_that_set_different_gpus_gets_a_warning_naming_both(tmp_path):
    # Ansible loads both group_vars and keeps gpu_h100's (the later name at the same depth): gpu-a02 would be
    # rendered with 8 H100s, with no error from Ansible
    source = write_inventory(tmp_path, SHAPES, group_vars={"gpu_a100": {"hpc_gres_gpus": A100},
                                                           "gpu_h100": {"hpc_gres_gpus": H100},
                                                           "a100_big": {"hpc_gres_gpus": A100 * 2}})
    found = origins(source).sibling_conflicts(["gpu-a01.lab", "gpu-a02.lab", "gpu-h01.lab"])
    assert [(p.host, p.field) for p in found] == [("gpu-a02.lab", "hpc_gres_gpus")]
    assert found[0].found == ("groups gpu_a100 (group_vars/gpu_a100.yml:1) and gpu_h100 (group_vars/gpu_h100.yml:1), "
                              "neither a child of the other, set different values; the host has the value of gpu_h100")
    assert "take the host out of gpu_a100, or set hpc_gres_gpus in its host_vars" in found[0].hint


def test_a_child_group_that_overrides_its_parent_and_a_host_vars_value_give_no_warning(tmp_path):
    # a100_big is gpu_a100's child: its value for gpu-a01 is an override Ansible intends
    source = write_inventory(tmp_path, SHAPES, group_vars={"gpu_a100": {"hpc_gres_gpus": A100},
                                                           "a100_big": {"hpc_gres_gpus": A100 * 2},
                                                           "gpu_h100": {"hpc_gres_gpus": H100}},
                             host_vars={"gpu-a02.lab": {"hpc_gres_gpus": H100[:2]}})
    assert origins(source).sibling_conflicts(["gpu-a01.lab", "gpu-a02.lab", "gpu-h01.lab"]) == []
    # equal values in two sibling groups are no conflict either
    source = write_inventory(tmp_path / "same", SHAPES, group_vars={"gpu_a100": {"hpc_gres_node_sockets": 2},
                                                                    "gpu_h100": {"hpc_gres_node_sockets": 2}})
    assert origins(source).sibling_conflicts(["gpu-a02.lab"]) == []


FLAT = {"all": {"children": {
    "slurmctld": {"hosts": {"master": None}},
    "slurmd": {"children": {"workers": None}},
    "workers": {"hosts": {"worker[1:4]": None}},
    "slurm_gpu": {"hosts": {"worker[1:2]": None}}}}}


def test_a_smaller_group_beside_a_wider_one_is_no_child_of_it(tmp_path):
    # a flat INI-style inventory (a site's, JManuel-Mendoza/HPC-Ansible): slurm_gpu's hosts all belong to workers,
    # but both are children of all, so Ansible keeps workers' empty list (the later name): the GPU nodes lost their
    # GPUs. Taking the subset for a child said nothing; the inventory's own parents say they are siblings.
    source = write_inventory(tmp_path, FLAT, group_vars={"workers": {"hpc_gres_gpus": []},
                                                         "slurm_gpu": {"hpc_gres_gpus": A100[:1]}})
    found = origins(source).sibling_conflicts(["worker1", "worker2", "worker3"])
    assert [(p.host, p.field) for p in found] == [("worker1", "hpc_gres_gpus"), ("worker2", "hpc_gres_gpus")]
    assert found[0].found.endswith("the host has the value of workers")
    # without the inventory's parents (no InventoryManager at hand), a subset is taken for a child, as before
    assert origins(source, hierarchy=False).sibling_conflicts(["worker1"]) == []
