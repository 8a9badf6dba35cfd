"""The collection's one variable namespace (plugins/plugin_utils/namespace.py): every hpc_gres_* name the roles and
playbooks use is one it knows, every name it knows is used, and names outside it are never read or refused."""
import glob
import os
import re

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
