"""The Slurm release table: version parsing, rule lookups, hostlist forms, socket boundaries, daemon mixes.

What each rule claims about a real release is proven against that release's real binaries in
tests/integration/test_release_rules.py; these tests pin the table's logic.
"""
import os
import random

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import versions as v


@pytest.mark.parametrize("value,expected", [
    ("slurm-wlm 22.05.8", (22, 5, 8)), ("slurm 24.11.5", (24, 11, 5)), ("24.11", (24, 11, 0)),
    ("26.05.3", (26, 5, 3)), (22.05, (22, 5, 0)), (24.11, (24, 11, 0)), ((25, 11), (25, 11, 0)),
    ("slurm 25.11.0-0rc1", (25, 11, 0)),
])
def test_parse_version(value, expected):
    assert v.parse_version(value) == expected


@pytest.mark.parametrize("value", [None, True, "", "latest", "slurm"])
def test_parse_version_rejects(value):
    with pytest.raises(ValueError):
        v.parse_version(value)


def test_release_of_pads_the_minor():
    assert v.release_of("22.5") == "22.05" and v.release_of(22.05) == "22.05"
    assert v.release_of("slurm 26.05.3") == "26.05"


@pytest.mark.parametrize("value,expected", [
    ("23.2", "23.02"), ("24.5.1", "24.05"), ("slurm 23.2.7", "23.02"), ("23.02", None), ("24.11.5", None),
    (23.2, None), ("23.20", None), ("latest", None)])
def test_short_month_names_the_two_digit_spelling(value, expected):
    assert v.short_month(value) == expected


def test_table_shape():
    keys = [v.parse_version(r) for r in v.RELEASES]
    assert keys == sorted(keys) and len(set(keys)) == len(keys)
    assert set(v.TESTED) <= set(v.SUPPORTED) <= set(v.RELEASES)
    assert v.DEFAULT_SLURM_VERSION in v.TESTED
    for row in v.RULES:
        assert row.since in v.RELEASES, row
        assert len(row.source) > 30, row  # every rule says where it comes from
    for name in v.RULE_NAMES:  # every rule has a value for every release
        for release in v.RELEASES:
            v.rule(name, release)


@pytest.mark.parametrize("release,suffix,modes,boundary,window,cgroup_v1", [
    ("22.05", False, ("off", "nvml"), "none", 2, "supported"),
    ("23.02", False, ("off", "nvml"), "none", 2, "supported"),
    ("23.11", True, ("off", "nvml"), "none", 2, "supported"),
    ("24.05", True, ("off", "nvml"), "none", 2, "supported"),
    ("24.11", True, ("off", "nvml", "nvidia"), "whole_sockets", 3, "supported"),
    ("25.05", True, ("off", "nvml", "nvidia"), "whole_sockets", 3, "supported"),
    ("25.11", True, ("off", "nvml", "nvidia"), "one_socket_or_all", 3, "supported"),
    ("26.05", True, ("off", "nvml", "nvidia", "full"), "one_socket_or_all", 3, "deprecated"),
])
def test_rules_per_release(release, suffix, modes, boundary, window, cgroup_v1):
    assert v.rule("hostlist_suffix", release) is suffix
    assert v.autodetect_modes(release) == modes
    assert v.rule("socket_boundary", release + ".7") == boundary
    assert v.rule("compat_window", release) == window
    assert v.rule("cgroup_v1", release) == cgroup_v1


def test_autodetect_plugins():
    assert v.autodetect_plugins("nvml", "22.05") == ("gpu_nvml.so",)
    assert v.autodetect_plugins("nvidia", "22.05") == ()
    assert v.autodetect_plugins("nvidia", "24.11") == ("gpu_nvidia.so",)
    assert v.autodetect_plugins("full", "24.11") == ()
    assert v.autodetect_plugins("full", "26.05") == ("gpu_nvml.so", "gpu_nvidia.so")  # the order slurmd tries
    assert v.autodetect_plugins("off", "26.05") == ()
    assert v.autodetect_since("nvidia") == "24.11" and v.autodetect_since("nvml") == "20.02"
    assert v.autodetect_since("full") == "26.05"


def test_unknown_rule_is_a_key_error():
    with pytest.raises(KeyError):
        v.rule("no_such_rule", "24.11")


# --- hostlists ------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("names,old,new", [
    (["node01-ib", "node02-ib"], "node01-ib,node02-ib", "node[01-02]-ib"),
    (["node01-ib0", "node02-ib0"], "node01-ib0,node02-ib0", "node[01-02]-ib0"),
    (["gpu-a01", "gpu-a02", "gpu-a03"], "gpu-a[01-03]", "gpu-a[01-03]"),
    (["r1n1", "r1n2", "r2n1", "r2n2"], "r[1-2]n[1-2]", "r[1-2]n[1-2]"),
    (["r1n1-ib", "r2n1-ib", "x"], "r1n1-ib,r2n1-ib,x", "r[1-2]n1-ib,x"),
    (["solo-ib"], "solo-ib", "solo-ib"),
])
def test_format_hostlist_per_release(names, old, new):
    assert v.format_hostlist(names, "22.05") == old
    assert v.format_hostlist(names, "23.02") == old
    assert v.format_hostlist(names, "23.11") == new
    assert v.format_hostlist(names, "26.05") == new


def test_hostlist_form_problem():
    assert v.hostlist_form_problem("node[01-02]-ib", "22.05") == "node[01-02]-ib"
    assert v.hostlist_form_problem("a,node[01-02]-ib,b", "22.05") == "node[01-02]-ib"
    assert v.hostlist_form_problem("node[01-02]-ib", "23.11") is None
    for ok in ("node[01-02]-ib[0]", "r[1-2]n[1-4]", "gpu-a[01,03-04],x", "plain-ib", "ALL"):
        assert v.hostlist_form_problem(ok, "22.05") is None, ok


def _random_names(rng):
    shapes = ["gpu%02d", "node%03d-ib", "r1n%d-ib0", "a%db", "h%d.lab", "dgx-%d-ib", "n%d"]
    names = set()
    for _draw in range(rng.randint(1, 40)):
        names.add(rng.choice(shapes) % rng.randint(0, 120))
    return sorted(names)


def test_format_hostlist_keeps_the_names_and_the_release_form():
    rng = random.Random(9)
    for _round in range(300):
        names = _random_names(rng)
        for release in ("22.05", "24.11"):
            expr = v.format_hostlist(names, release)
            assert sorted(hostlist.expand_hostlist(expr)) == names, (names, release, expr)
            assert v.hostlist_form_problem(expr, release) is None, (names, release, expr)


# --- socket boundaries ----------------------------------------------------------------------------------------


def test_socket_boundary_per_release():
    half = list(range(0, 16))  # 2 sockets x 32 cores
    assert v.socket_boundary_findings(half, 2, 32, "22.05") == [("warning", "24.11", "Cores covering whole sockets", 0)]
    assert v.socket_boundary_findings(half, 2, 32, "24.11") == [("error", "24.11", "Cores covering whole sockets", 0)]
    assert v.socket_boundary_findings(half, 2, 32, "26.05")[0][:2] == ("error", "25.11")
    assert v.socket_boundary_findings(list(range(32)), 2, 32, "26.05") == []
    assert v.socket_boundary_findings(list(range(64)), 2, 32, "26.05") == []


def test_two_whole_sockets_of_four():
    two = list(range(32))  # 4 sockets x 16 cores
    assert v.socket_boundary_findings(two, 4, 16, "24.11") == [
        ("warning", "25.11", "Cores covering exactly one whole socket, or all cores", 0)]
    assert v.socket_boundary_findings(two, 4, 16, "25.11")[0][0] == "error"
    assert v.socket_boundary_findings(list(range(64)), 4, 16, "25.11") == []


def test_socket_named_is_the_one_slurm_names():
    # socket 1 is the first with a partial count (whole-sockets rule); 25.11+ names the first socket with any core
    cores = list(range(0, 16)) + list(range(16, 24))
    assert v.socket_boundary_findings(cores, 4, 16, "24.11")[0][3] == 1
    assert v.socket_boundary_findings(cores, 4, 16, "26.05")[0][3] == 0
    assert v.socket_boundary_message(list(range(16, 24)), "gpu-a01", 1, 16) == (
        "gres/gpu GRES core specification 16-23 for node gpu-a01 doesn't match socket boundaries. "
        "(Socket 1 is cores 16-31)")


# --- daemon versions ------------------------------------------------------------------------------------------


def test_compatibility_window_matches_upgrades_html():
    # the table at https://slurm.schedmd.com/upgrades.html#compatibility_window
    assert v.compatible_older("23.11") == ("23.02", "22.05")
    assert v.compatible_older("24.05") == ("23.11", "23.02")
    assert v.compatible_older("24.11") == ("24.05", "23.11", "23.02")
    assert v.compatible_older("25.11.3") == ("25.05", "24.11", "24.05")
    assert v.compatible_older("26.05") == ("25.11", "25.05", "24.11")


def daemons(*entries):
    return [{"host": h, "daemon": d, "version": ver} for h, d, ver in entries]


def test_matching_cluster_has_no_problems():
    assert v.version_problems("24.11", daemons(("ctl", "slurmctld", "slurm-wlm 24.11.5"),
                                               ("gpu01", "slurmd", "slurm-wlm 24.11.5"),
                                               ("gpu02", "slurmd", "slurm 24.11.1"))) == []


def test_inventory_disagreement_names_the_host():
    problems = v.version_problems("24.11", daemons(("ctl", "slurmctld", "slurm-wlm 22.05.8"),
                                                   ("gpu01", "slurmd", "slurm-wlm 22.05.8")))
    text = [str(p) for p in problems]
    assert text[0].startswith("host ctl: slurmctld -V: expected Slurm 24.11 (hpc_gres_slurm_version), found 22.05.8")
    assert 'set hpc_gres_slurm_version: "22.05"' in text[0]
    assert text[1].startswith("host gpu01: slurmd -V: expected Slurm 24.11 (hpc_gres_slurm_version), found 22.05.8")


def test_slurmd_newer_than_slurmctld_is_an_unsupported_mix():
    problems = v.version_problems("24.11", daemons(("ctl", "slurmctld", "24.11.5"), ("gpu01", "slurmd", "26.05.3")))
    assert len(problems) == 1
    assert problems[0].host == "gpu01" and problems[0].field == "slurmd -V"
    assert problems[0].expected.startswith("a release slurmctld accepts: 24.11, 24.05, 23.11, 23.02")
    assert "Slurm does not support this mix" in problems[0].hint


def test_slurmd_too_old_for_slurmctld():
    problems = v.version_problems("24.11", daemons(("ctl", "slurmctld", "24.11.5"), ("gpu01", "slurmd", "22.05.8")))
    assert [(p.host, p.found) for p in problems] == [("gpu01", "22.05.8")]
    assert "does not support" in problems[0].hint


def test_older_slurmd_within_the_window_still_disagrees_with_the_inventory():
    problems = v.version_problems("24.11", daemons(("ctl", "slurmctld", "24.11.5"), ("gpu01", "slurmd", "24.05.8")))
    assert [(p.host, p.expected) for p in problems] == [("gpu01", "Slurm 24.11 (hpc_gres_slurm_version)")]
    assert "upgrade this node first" in problems[0].hint


def test_controllers_must_agree_and_slurmdbd_must_not_be_older():
    problems = v.version_problems("24.11", daemons(("ctl1", "slurmctld", "24.11.5"), ("ctl2", "slurmctld", "24.05.1"),
                                                   ("dbd", "slurmdbd", "24.05.1")))
    hosts = [(p.host, p.field) for p in problems]
    assert ("ctl2", "slurmctld -V") in hosts
    assert ("ctl1", "slurmctld -V") in hosts  # newer than its slurmdbd
    assert all(p.found for p in problems)


def test_a_newer_slurmdbd_is_fine_an_older_one_is_not():
    newer = daemons(("ctl", "slurmctld", "24.11.5"), ("dbd", "slurmdbd", "25.11.1"), ("gpu01", "slurmd", "24.11.5"))
    assert v.version_problems("24.11", newer) == []
    older = daemons(("ctl", "slurmctld", "24.11.5"), ("dbd", "slurmdbd", "24.05.2"))
    assert [(p.host, p.field) for p in v.version_problems("24.11", older)] == [("ctl", "slurmctld -V")]


def test_unreadable_version():
    problems = v.version_problems("24.11", daemons(("gpu01", "slurmd", "bash: slurmd: command not found")))
    assert problems[0].field == "slurmd -V" and "installed" in problems[0].hint


def test_a_failed_command_is_never_read_as_a_version():
    # the error text may hold a version (a path, a library name): it must not pass as the daemon's release
    entry = {"host": "gpu01", "daemon": "slurmd", "version": None,
             "error": "/opt/slurm-24.11/sbin/slurmd -V: error while loading shared libraries"}
    problems = v.version_problems("24.11", [entry])
    assert [(p.host, p.field, p.expected) for p in problems] == [("gpu01", "slurmd -V", "a Slurm version such as "
                                                                                        "24.11.5")]
    assert "error while loading shared libraries" in problems[0].found


def test_molecule_matrix_starts_with_the_default_release():
    with open(os.path.join(testpaths.ROOT, "molecule", "releases")) as handle:
        rows = [line.split() for line in handle if line.strip() and not line.startswith("#")]
    assert rows[0][0] == v.DEFAULT_SLURM_VERSION and rows[0][2:] == ["all"]
    assert sorted(r[0] for r in rows) == sorted(v.TESTED)
    for row in rows[1:]:
        # every other release registers nodes through a first deploy, the MIG runbook and a rollback (issue 9)
        assert {"default", "deploy-mig", "rollback"} <= set(row[2:]) or row[2:] == ["all"], row
