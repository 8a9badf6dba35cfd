"""The collection's one variable namespace (plugins/plugin_utils/namespace.py): every hpc_gres_* name the roles and
playbooks use is one it knows, every name it knows is used, and names outside it are never read or refused."""
import glob
import os
import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import namespace
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import NAMESPACE

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
ROLES = {os.path.basename(path) for path in glob.glob(os.path.join(ROOT, "roles", "*"))}
# a name where it is text about the namespace (hpc_gres_node_*), not a variable
_NAME = re.compile(r"(?<![A-Za-z0-9_.*])(%s[a-z0-9_]*[a-z0-9])(?![*\w])" % NAMESPACE)


def used_names():
    names = set()
    for pattern in ("roles/**/*.yml", "playbooks/**/*.yml", "playbooks/**/*.j2"):
        for path in glob.glob(os.path.join(ROOT, pattern), recursive=True):
            with open(path, encoding="utf-8") as handle:
                names.update(_NAME.findall(handle.read()))
    return names - ROLES


def test_every_name_the_roles_and_playbooks_use_is_known():
    unknown = sorted(name for name in used_names() if namespace.unknown(name))
    assert not unknown, "add them to namespace.py (PLAYBOOK_VARS or STATE_VARS) or a role's argument spec: %s" % unknown


def test_every_name_namespace_py_lists_is_used():
    used = used_names() | {"hpc_gres_hw"}  # gpu_facts' fact, read as ansible_facts.hpc_gres_hw
    stale = sorted(n for n in namespace.PLAYBOOK_VARS + namespace.STATE_VARS if n not in used)
    assert not stale, stale


def test_the_roles_options_come_from_their_argument_specs():
    assert "hpc_gres_slurmd_restart" in namespace.role_options()
    assert "hpc_gres_render_dir" in namespace.role_options()
    assert all(name.startswith(NAMESPACE) for name in namespace.known())


def test_a_misspelt_name_of_the_namespace_is_refused_with_the_closest_one():
    expected, found, hint = namespace.unknown("hpc_gres_slurmd_restrat")
    assert found == "unknown variable hpc_gres_slurmd_restrat" and hint == "did you mean hpc_gres_slurmd_restart?"
    assert namespace.unknown("hpc_gres_gpus") is None


def test_other_roles_variables_are_neither_read_nor_refused():
    hostvars = {"ctl": {"slurm_partitions": [{"name": "x", "Default": "YES"}], "slurm_version": "20.11.7"},
                "n1": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 2,
                       "hpc_gres_gpus": [{"index": 0, "type": "a100"}], "slurm_node_ips": {"n1": "10.0.0.1"},
                       "slurm_gres_config": ["Name=gpu File=/dev/nvidia0"], "openhpc_cluster_name": "x"}}
    model = build_cluster_model(hostvars, {"slurmctld": ["ctl"], "slurmd": ["n1"]},
                                {"slurm_cluster_name": "theirs"})
    assert model["cluster_name"] == "cluster" and [n["name"] for n in model["nodes"]] == ["n1"]
    assert model["partitions"][0]["name"] == "main"


def test_each_role_option_has_one_spec_in_every_entry_point_that_takes_it():
    import yaml

    seen = {}
    for path in glob.glob(os.path.join(ROOT, "roles", "*", "meta", "argument_specs.yml")):
        with open(path, encoding="utf-8") as handle:
            entries = yaml.safe_load(handle)["argument_specs"]
        for entry, spec in entries.items():
            for name, option in (spec.get("options") or {}).items():
                checked = {k: v for k, v in option.items() if k in ("type", "elements", "choices", "options")}
                seen.setdefault(name, []).append((path, entry, checked))
    differ = {name: specs for name, specs in seen.items() if len({repr(s[2]) for s in specs}) > 1}
    assert not differ
    assert {name: spec for name, (role, spec) in namespace.role_option_specs().items()} == {
        name: specs[0][2] for name, specs in seen.items()}


def test_a_role_option_with_a_value_its_argument_spec_refuses_is_named_with_its_type_and_role():
    expected, found, hint = namespace.bad_role_value("hpc_gres_verify_checks", "maybe")
    assert expected == "a bool, as role hpc_gres_verify declares it (roles/hpc_gres_verify/meta/argument_specs.yml)"
    assert found == "'maybe' (string): not a boolean (true/false, yes/no, on/off, 1/0)" and hint is None
    expected, found, _hint = namespace.bad_role_value("hpc_gres_verify_type_patterns", ["a100"])
    assert expected.startswith("a dict, as role hpc_gres_verify ")
    assert found == "['a100'] (list): a list cannot be converted to a dict"
    expected, found, _hint = namespace.bad_role_value("hpc_gres_maintenance_reboot", "sometimes")
    assert expected.startswith("one of auto, slurm, ansible, none, as role hpc_gres_maintenance ")
    assert found == "'sometimes' (string): not one of them"
    expected, found, _hint = namespace.bad_role_value("hpc_gres_slurmd_register_timeout", "5m")
    assert expected.startswith("a int, ") and found.startswith("'5m' (string): ")


def test_what_the_argument_check_accepts_is_accepted():
    # as ansible-core's argument check converts them: -e gives strings
    for name, value in (("hpc_gres_verify_checks", "false"), ("hpc_gres_verify_checks", "yes"),
                        ("hpc_gres_verify_checks", True), ("hpc_gres_slurmd_register_timeout", "300"),
                        ("hpc_gres_verify_type_patterns", {"a100": "A100"}), ("hpc_gres_verify_nvidia_smi", "/x"),
                        ("hpc_gres_verify_checks", None), ("hpc_gres_maintenance_reboot", "slurm"),
                        ("hpc_gres_gpus", "not a role option: the model checks it")):
        assert namespace.bad_role_value(name, value) is None, (name, value)


def test_the_render_refuses_a_bad_role_option_on_every_host_that_has_it_and_judges_each_value_once(monkeypatch):
    calls = []
    real = namespace.bad_role_value
    monkeypatch.setattr(namespace, "bad_role_value", lambda name, value: calls.append(name) or real(name, value))
    shared = "maybe"
    node = {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 2, "hpc_gres_gpus": [{"index": 0}],
            "hpc_gres_verify_checks": shared, "hpc_gres_verify_nvidia_smi": "/usr/bin/nvidia-smi"}
    hostvars = {"ctl": {}, "n1": dict(node), "n2": dict(node), "n3": dict(node, hpc_gres_verify_checks=True)}
    with pytest.raises(GresError) as err:
        build_cluster_model(hostvars, {"slurmctld": ["ctl"], "slurmd": ["n1", "n2", "n3"]}, {})
    assert [(p.host, p.field) for p in err.value.problems] == [("n1", "hpc_gres_verify_checks"), ("n2", "hpc_gres_verify_checks")]
    # n1 and n2 share their value objects (as hosts of one group do); n3 has a value of its own
    assert sorted(c for c in calls if c.startswith("hpc_gres_verify")) == [
        "hpc_gres_verify_checks", "hpc_gres_verify_checks", "hpc_gres_verify_nvidia_smi"]
