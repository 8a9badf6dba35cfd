"""A refusal as an admin reads it (plugins/plugin_utils/problem_report.py): each problem once, its hosts as a
hostlist, its file where known; and the model keeps every host of a problem it lists (model_problems.Collector)."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import MAX_PROBLEMS
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import (
    host_expression,
    merged_entries,
    report_lines,
)

GPU = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1}


def test_one_problem_on_every_host_of_a_group_is_one_line_with_a_hostlist():
    problems = [Problem("gpu-%02d.lab" % i, "hpc_gres_gpus[0].index", "unique GPU index", "0") for i in (3, 1, 2, 8)]
    problems += [Problem("gpu-%02d.lab" % i, "hpc_gres_gpus[0].index", "unique GPU index", "0") for i in range(4, 8)]
    problems.append(Problem("gpu-09.lab", "hpc_gres_gpus[0].index", "unique GPU index", "1"))
    assert report_lines(problems) == [
        "hosts gpu-[01-08].lab: hpc_gres_gpus[0].index: expected unique GPU index, found 0",
        "host gpu-09.lab: hpc_gres_gpus[0].index: expected unique GPU index, found 1"]


def test_a_location_is_named_and_splits_a_group_whose_hosts_take_the_value_from_different_files():
    problems = [Problem(h, "hpc_gres_node_options.Reason", "one line", "'a\\nb'", "a newline")
                for h in ("n1", "n2", "n3")]
    where = {"n1": "group_vars/gpu.yml:4", "n2": "group_vars/gpu.yml:4", "n3": "host_vars/n3.yml:2"}
    assert report_lines(problems, lambda host, field: where[host]) == [
        "hosts n[1-2]: hpc_gres_node_options.Reason: expected one line, found 'a\\nb' (a newline); defined in "
        "group_vars/gpu.yml:4",
        "host n3: hpc_gres_node_options.Reason: expected one line, found 'a\\nb' (a newline); defined in "
        "host_vars/n3.yml:2"]


def test_one_mistake_in_several_entries_of_a_list_is_one_line_naming_the_entries_and_lines():
    where = {h: {i: "group_vars/gpu.yml:%d" % (10 + i) for i in range(8)} for h in ("n1", "n2")}
    where["n3"] = {i: "host_vars/n3.yml:%d" % (4 + i) for i in range(8)}
    problems = []
    for host in ("n1", "n2", "n3"):
        problems += [Problem(host, "hpc_gres_gpus[%d].tpye" % i, "a GPU key", "unknown key 'tpye'", "did you mean "
                             "type?") for i in range(8)]
        problems += [Problem(host, "hpc_gres_gpus[%d].cores" % i, "cores within 0-7", "'0-%d'" % (9 + i // 4))
                     for i in (0, 1, 2, 3, 5, 6, 7)]
    problems.append(Problem("n1", "hpc_gres_gpus[2].mig[1]", "a profile", "'4g'"))
    lines = report_lines(problems, lambda host, field: where[host][int(field.split("[")[1].split("]")[0])])
    assert lines == [
        "hosts n[1-2]: hpc_gres_gpus[0-7].tpye: expected a GPU key, found unknown key 'tpye' (did you mean type?); "
        "defined in group_vars/gpu.yml:10-17",
        "hosts n[1-2]: hpc_gres_gpus[0-3].cores: expected cores within 0-7, found '0-9'; defined in "
        "group_vars/gpu.yml:10-13",
        "hosts n[1-2]: hpc_gres_gpus[5-7].cores: expected cores within 0-7, found '0-10'; defined in "
        "group_vars/gpu.yml:15-17",
        "host n3: hpc_gres_gpus[0-7].tpye: expected a GPU key, found unknown key 'tpye' (did you mean type?); "
        "defined in host_vars/n3.yml:4-11",
        "host n3: hpc_gres_gpus[0-3].cores: expected cores within 0-7, found '0-9'; defined in host_vars/n3.yml:4-7",
        "host n3: hpc_gres_gpus[5-7].cores: expected cores within 0-7, found '0-10'; defined in host_vars/n3.yml:9-11",
        "host n1: hpc_gres_gpus[2].mig[1]: expected a profile, found '4g'; defined in group_vars/gpu.yml:12"]
    # the last index of the field: seven wrong profiles of one GPU's MIG layout, on one line of the file
    assert report_lines([Problem("n1", "hpc_gres_gpus[0].mig[%d]" % i, "an H100 profile", "'1g.5gb'")
                         for i in range(7)], lambda host, field: "host_vars/n1.yml:9") == [
        "host n1: hpc_gres_gpus[0].mig[0-6]: expected an H100 profile, found '1g.5gb'; defined in host_vars/n1.yml:9"]
    # the fields a merged line names are read back entry by entry (the import places each at its source line)
    assert merged_entries("hpc_gres_gpus[0-2,5].type") == ("hpc_gres_gpus", [0, 1, 2, 5], ".type")
    assert merged_entries("hpc_gres_gpus[0].mig[0-6]") == ("hpc_gres_gpus[0].mig", list(range(7)), "")
    assert merged_entries("hpc_gres_gpus[3].type") is None and merged_entries("hpc_gres_node_sockets") is None
    # without locations, and a field with no list index, nothing else changes
    assert report_lines([Problem("n1", "hpc_gres_gpus[%d].type" % i, "a type", "''") for i in (0, 1)] +
                        [Problem("n1", "hpc_gres_node_sockets", "an integer", "'x'")]) == [
        "host n1: hpc_gres_gpus[0-1].type: expected a type, found ''",
        "host n1: hpc_gres_node_sockets: expected an integer, found 'x'"]


def test_a_text_that_names_its_own_host_as_a_node_is_one_line_for_the_group():
    """Slurm's own message quoted with the node in it ("... for node gn03 doesn't match ...") on every host of a group
    is one problem: the line names the hosts once and the node as <node>; a word that only looks like a host name
    ("gres/gpu" on host gpu) and another host named in the text are left alone."""
    problems = [Problem("gn%02d.lab" % i, "hpc_gres_gpus[0].cores", "whole sockets", "0-15 for GPU 0: gres/gpu GRES "
                        "core specification 0-15 for node gn%02d doesn't match socket boundaries." % i)
                for i in range(1, 7)]
    problems += [Problem(h, "hpc_gres_node_name", "a name of its own", "'x', also used by host %s" % o)
                 for h, o in (("gpu", "cpu"), ("cpu", "gpu"))]
    assert report_lines(problems) == [
        "hosts gn[01-06].lab: hpc_gres_gpus[0].cores: expected whole sockets, found 0-15 for GPU 0: gres/gpu GRES core "
        "specification 0-15 for node <node> doesn't match socket boundaries.",
        "host gpu: hpc_gres_node_name: expected a name of its own, found 'x', also used by host cpu",
        "host cpu: hpc_gres_node_name: expected a name of its own, found 'x', also used by host gpu"]
    # one host: its own name stays
    assert report_lines(problems[:1])[0].endswith("for node gn01 doesn't match socket boundaries.")


def test_host_names_the_hostlist_syntax_cannot_hold_are_listed_as_they_are():
    assert host_expression(["b[1]", "a2", "a1", "a1", "x,y"]) == "a[1-2],b[1],x,y"
    assert host_expression(["localhost"]) == "localhost"
    assert host_expression(["10.0.0.%d" % i for i in range(1, 4)]) == "10.0.0.[1-3]"


def test_the_model_names_every_host_of_a_group_even_past_the_problem_limit():
    """4,096 hosts with the same mistake: every host is kept (one line after grouping), and the limit counts the
    distinct problems, not the hosts."""
    hosts = ["gpu%04d" % i for i in range(4096)]
    bad = dict(GPU, hpc_gres_gpus=[{"index": 0, "type": "a100", "cores": "0-99"}])
    with pytest.raises(GresError) as err:
        build_cluster_model({h: bad for h in hosts}, {"slurmd": hosts, "slurmctld": ["ctl"]}, {})
    assert len(err.value.problems) == 4096
    (line,) = report_lines(err.value.problems)
    assert line.startswith("hosts gpu[0000-4095]: hpc_gres_gpus[0].cores: expected Slurm logical core indices")


def test_past_the_limit_of_distinct_problems_the_rest_are_counted():
    hosts = ["n%d" % i for i in range(MAX_PROBLEMS + 5)]
    hostvars = {h: dict(GPU, hpc_gres_gpus=[{"index": 0, "type": "a100", "cores": str(100 + i)}])
                for i, h in enumerate(hosts)}
    with pytest.raises(GresError) as err:
        build_cluster_model(hostvars, {"slurmd": hosts, "slurmctld": ["ctl"]}, {})
    lines = report_lines(err.value.problems)
    assert len(lines) == MAX_PROBLEMS + 1
    assert lines[-1].endswith("expected at most %d distinct problems listed, found 5 more not shown (fix these and "
                              "run again)" % MAX_PROBLEMS)


def test_an_unknown_type_warns_once_per_host_naming_its_gpus():
    # a site's own type name on 16 GPUs (galaxyproject.slurm's 'tesla') is one line, not sixteen
    gpus = [{"index": i, "type": "tesla"} for i in range(16)] + [{"index": 16, "type": "h1OO"}]
    model = build_cluster_model({"dgx2-1": dict(GPU, hpc_gres_gpus=gpus)}, {"slurmd": ["dgx2-1"], "slurmctld": ["ctl"]},
                                {})
    assert model["warnings"] == [
        "host dgx2-1: hpc_gres_gpus[0].type: expected a type that names a GPU model the collection knows "
        "(module_utils/nvidia/gpu_types.py), found 'tesla' on GPUs 0-15 (ignore this for a name of your own)",
        "host dgx2-1: hpc_gres_gpus[16].type: expected a type that names a GPU model the collection knows "
        "(module_utils/nvidia/gpu_types.py), found 'h1OO' on GPU 16 (nearest known: h100, a100, b100; ignore this "
        "for a name of your own)"]


def test_warnings_are_grouped_too():
    hosts = ["gpu%d" % i for i in range(1, 5)]
    model = build_cluster_model({h: dict(GPU, hpc_gres_gpus=[{"index": 0, "type": "h1OO"}]) for h in hosts},
                                {"slurmd": hosts, "slurmctld": ["ctl"]}, {})
    assert model["warnings"] == [
        "hosts gpu[1-4]: hpc_gres_gpus[0].type: expected a type that names a GPU model the collection knows "
        "(module_utils/nvidia/gpu_types.py), found 'h1OO' on GPU 0 (nearest known: h100, a100, b100; ignore this "
        "for a name of your own)"]
