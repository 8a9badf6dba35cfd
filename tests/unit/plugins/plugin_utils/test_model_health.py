"""hpc_gres_health_* in the model: the slurm.conf lines that wire the GPU health check, and what is refused."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

NODE = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
        "hpc_gres_gpus": [{"index": 0, "type": "h100", "cores": "0-31"}]}


def build(**cluster):
    hostvars = {"gpu01": dict(NODE), "ctl01": {}}
    groups = {"all": sorted(hostvars), "slurmctld": ["ctl01"], "slurmd": ["gpu01"]}
    return build_cluster_model(hostvars, groups, cluster)


def options(model):
    return parse_slurm_conf(render_all(model)["slurm.conf"])["options"]


def problems(**cluster):
    with pytest.raises(GresError) as err:
        build(**cluster)
    return ["%s: %s" % (p.field, p.expected) for p in err.value.problems]


def test_the_check_is_wired_by_default():
    model = build()
    opts = options(model)
    assert opts["healthcheckprogram"] == "/usr/local/sbin/hpc-gres-health"
    assert (opts["healthcheckinterval"], opts["healthchecknodestate"]) == ("300", "ANY")
    assert "healthchecktimeout" not in opts  # Slurm 24.11 does not read it
    assert model["health"]["enabled"] and not model["health"]["nhc"]


def test_slurm_26_05_gets_the_timeout_it_reads():
    assert options(build(hpc_gres_slurm_version="26.05"))["healthchecktimeout"] == "60"


def test_settings_reach_slurm_conf():
    opts = options(build(hpc_gres_health_interval=60, hpc_gres_health_node_state="idle,cycle",
                         hpc_gres_health_program="/opt/site/bin/gpu-health"))
    assert (opts["healthcheckinterval"], opts["healthchecknodestate"], opts["healthcheckprogram"]) == (
        "60", "IDLE,CYCLE", "/opt/site/bin/gpu-health")


def test_off_or_nhc_or_include_mode_writes_no_health_lines():
    assert "healthcheckprogram" not in options(build(hpc_gres_health=False))
    nhc = build(hpc_gres_health_nhc=True,
                hpc_gres_slurm_conf_options={"HealthCheckProgram": "/usr/sbin/nhc", "HealthCheckInterval": 300})
    assert options(nhc)["healthcheckprogram"] == "/usr/sbin/nhc"
    assert nhc["warnings"] == []


def test_nhc_without_a_health_check_program_is_warned():
    model = build(hpc_gres_health_nhc=True)
    assert any("HealthCheckProgram" in w and "NHC" in w for w in model["warnings"]), model["warnings"]


def test_a_site_program_of_its_own_is_refused_with_the_way_out():
    found = problems(hpc_gres_slurm_conf_options={"healthcheckprogram": "/usr/sbin/nhc"})
    assert found == ["hpc_gres_slurm_conf_options.healthcheckprogram: unset: the collection installs and runs "
                     "/usr/local/sbin/hpc-gres-health (hpc_gres_health_program)"]
    # the site's program with the check off is the site's business
    assert options(build(hpc_gres_health=False, hpc_gres_slurm_conf_options={
        "HealthCheckProgram": "/usr/sbin/nhc"}))["healthcheckprogram"] == "/usr/sbin/nhc"


@pytest.mark.parametrize("var,value", [
    ("hpc_gres_health", "yes"), ("hpc_gres_health_nhc", 1), ("hpc_gres_health_interval", -1),
    ("hpc_gres_health_interval", 70000), ("hpc_gres_health_interval", True), ("hpc_gres_health_timeout", 0),
    ("hpc_gres_health_node_state", "BUSY"), ("hpc_gres_health_node_state", "IDLE,IDLE"),
    ("hpc_gres_health_node_state", "START_ONLY"), ("hpc_gres_health_program", "hpc-gres-health"),
    ("hpc_gres_health_program", "/usr/bin/x;rm"), ("hpc_gres_health_ack_file", "/etc/../x"),
    ("hpc_gres_health_kernel_log", "syslog"),
])
def test_bad_values_are_refused_naming_the_variable(var, value):
    assert [p.split(":")[0] for p in problems(**{var: value})] == [var]


def test_start_only_from_25_11():
    assert options(build(hpc_gres_slurm_version="25.11", hpc_gres_health_node_state="START_ONLY"))[
        "healthchecknodestate"] == "START_ONLY"


def test_nondrained_idle_warns_that_drained_nodes_never_come_back():
    model = build(hpc_gres_health_node_state="NONDRAINED_IDLE")
    assert any("never resumed" in w for w in model["warnings"])


@pytest.mark.parametrize("value", [248, "HealthCheckProgram=/x", ["HealthCheckProgram"]])
def test_slurm_conf_options_that_are_not_a_mapping_are_refused_once_not_a_crash(value):
    # found by the property test (tests/integration/test_render_property_slurmd.py): 248 crashed the health check
    assert [p.split(":")[0] for p in problems(hpc_gres_slurm_conf_options=value)] == ["hpc_gres_slurm_conf_options"]
