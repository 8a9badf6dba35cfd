"""hpc_gres_boot_* in the model and the render result: what the deploy installs where, and what is refused."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.cluster_render import render_cluster
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model

GPU = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
       "hpc_gres_gpus": [{"index": 0, "type": "a100", "model": "A100-80GB", "cores": "0-31",
                          "mig": ["3g.40gb", "1g.10gb"]}, {"index": 1, "type": "a100", "cores": "32-63"}]}
CPU = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2}


def hosts():
    hostvars = {"gpu01": dict(GPU), "cpu01": dict(CPU), "ctl01": {}}
    groups = {"all": sorted(hostvars), "slurmctld": ["ctl01"], "slurmd": ["cpu01", "gpu01"]}
    return hostvars, groups


def build(**cluster):
    hostvars, groups = hosts()
    return build_cluster_model(hostvars, groups, cluster)


def test_on_by_default_for_the_gpu_nodes_only():
    model = build()
    assert model["boot"] == {"enabled": True, "mig": "collection", "timeout": 300, "retry_interval": 300,
                             "hosts": ["gpu01"]}
    hostvars, groups = hosts()
    result = render_cluster(hostvars, groups, {})
    assert result["boot"] == model["boot"]
    assert result["mig_nodes"]["gpu01"]["layouts"] == {0: ["3g.40gb", "1g.10gb"], 1: None}


def test_settings_are_taken():
    boot = build(hpc_gres_boot_mig="mig-manager", hpc_gres_boot_timeout=900, hpc_gres_boot_retry_interval=0,
                 hpc_gres_boot=False)["boot"]
    assert (boot["enabled"], boot["mig"], boot["timeout"], boot["retry_interval"]) == (False, "mig-manager", 900, 0)


@pytest.mark.parametrize("name, value, expected", [
    ("hpc_gres_boot", "yes", "true or false"),
    ("hpc_gres_boot_mig", "nvidia", "one of collection, mig-manager, none"),
    ("hpc_gres_boot_timeout", -1, "an integer 0-86400 (seconds)"),
    ("hpc_gres_boot_timeout", "5m", "an integer 0-86400 (seconds)"),
    ("hpc_gres_boot_retry_interval", True, "an integer 0-86400 (seconds)"),
])
def test_bad_values_are_refused_by_name(name, value, expected):
    with pytest.raises(GresError) as err:
        build(**{name: value})
    assert ["%s: %s" % (p.field, p.expected) for p in err.value.problems] == ["%s: %s" % (name, expected)]


def test_digit_strings_are_the_integers_they_spell_as_everywhere_else():
    """What -e name=300 passes (inventory.md: digit strings from -e are accepted for integers)."""
    boot = build(hpc_gres_boot_timeout="300", hpc_gres_boot_retry_interval="0")["boot"]
    assert (boot["timeout"], boot["retry_interval"]) == (300, 0)


def test_no_one_recreating_mig_instances_at_boot_is_warned():
    warnings = build(hpc_gres_boot_mig="none")["warnings"]
    assert any("hpc_gres_boot_mig" in w and "do not survive a reboot" in w and "gpu01" in w for w in warnings), warnings
    assert build(hpc_gres_boot_mig="none", hpc_gres_boot=False)["warnings"] == []
