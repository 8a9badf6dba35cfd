"""The maintenance's wave planner (plugins/plugin_utils/waves.py): caps per partition counting every node out of
service, nodes in several partitions, the order, skipped and blocked nodes, the failure budget; and, over random
clusters, that no wave ever takes a partition above its cap."""
import os

import pytest
from hypothesis import given, settings, strategies as st

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_show_node
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import waves

R = "GPU maintenance"
FIXTURES = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "slurm")


def node(name, state="IDLE", parts="main", reason=None):
    """A slurm_node record, through the real parser of `scontrol -o show node`."""
    line = "NodeName=%s Arch=x86_64 CPUTot=8 State=%s Partitions=%s" % (name, state, parts)
    if not parts:
        line = "NodeName=%s Arch=x86_64 CPUTot=8 State=%s" % (name, state)
    if reason:
        line += " Reason=%s [root@2026-12-03T10:00:00]" % reason
    return parse_show_node(line)[name]


def cluster(*records):
    return {r["name"]: r for r in records}


def plan(nodes, targets=None, **kw):
    return waves.plan_waves(nodes, list(nodes) if targets is None else targets, reason=R, **kw)


# ---------------------------------------------------------------------------------------------- caps

@pytest.mark.parametrize("value,parsed", [(1, ("count", 1)), ("3", ("count", 3)), (" 2 ", ("count", 2)),
                                          ("25%", ("percent", 25.0)), ("12.5 %", ("percent", 12.5)),
                                          ("100%", ("percent", 100.0))])
def test_a_cap_is_a_count_or_a_percentage(value, parsed):
    assert waves.parse_cap(value) == parsed


@pytest.mark.parametrize("value", [0, -1, "0", "0%", "101%", "x", "", None, True, "1.5", [1]])
def test_a_cap_that_allows_nothing_or_is_not_a_number_is_refused_by_name(value):
    with pytest.raises(ValueError) as err:
        waves.parse_cap(value)
    assert str(err.value).startswith("hpc_gres_maintenance_cap: expected a number of nodes (1 or more) or a "
                                     "percentage such as 25%, found ")


def test_the_failure_budget_may_be_zero():
    assert waves.parse_cap(0, minimum=0) == ("count", 0)
    assert waves.parse_cap("0%", minimum=0) == ("percent", 0.0)


@pytest.mark.parametrize("cap,size,limit", [(("count", 2), 10, 2), (("percent", 25.0), 10, 2),
                                            (("percent", 25.0), 3, 1), (("percent", 50.0), 10, 5),
                                            (("percent", 100.0), 7, 7), (("count", 5), 2, 5),
                                            (("percent", 10.0), 30, 3)])
def test_a_percentage_is_of_the_partitions_nodes_rounded_down_and_at_least_one(cap, size, limit):
    assert waves.cap_limit(cap, size) == limit


# ---------------------------------------------------------------------------------------------- reasons

def test_ours_is_the_reason_slurms_suffixes_and_the_failure_mark_nothing_else():
    assert waves.is_ours(R, R)
    assert waves.is_ours(R + " : reboot issued", R)
    assert waves.is_ours(R + " : Not responding", R)
    assert waves.is_ours(waves.failure_reason(R, "readiness: present: declares 2 v100"), R)
    assert not waves.is_ours(R + "s", R)
    assert not waves.is_ours("disk swap", R)
    assert not waves.is_ours(None, R)


def test_a_failure_reason_is_one_bounded_line():
    reason = waves.failure_reason(R, "readiness:\n  present: " + "x" * 500)
    assert reason.startswith(R + ": failed: readiness: present: xxx") and reason.endswith("...")
    assert len(reason) == 240 and "\n" not in reason


def test_a_failure_reason_quoting_scontrol_reads_back_as_this_maintenances_own():
    # a registration failure quotes scontrol's Key=value text, its old Reason= too; scontrol -o prints the reason
    # unquoted, so a Reason= inside it would be read back as the node's reason and the next run would skip the node
    what = ("registration: slurmd has not registered since the restart (SlurmdStartTime=2026-12-01T10:00:00) "
            "(State=IDLE+DRAIN Gres=gpu:a100:8(S:0-1) Reason='GPU maintenance')")
    reason = waves.failure_reason(R, what)
    assert "=" not in reason and "SlurmdStartTime: 2026-12-01T10:00:00" in reason
    record = node("gpu1", "IDLE+DRAIN", reason=reason)
    assert record["reason"] == reason
    assert waves.node_status(record, R)["ours"]


# ---------------------------------------------------------------------------------------------- waves

def test_three_idle_nodes_with_a_cap_of_one_go_one_at_a_time_in_name_order():
    nodes = cluster(node("gpu10"), node("gpu2"), node("gpu1"))
    out = plan(nodes, cap=1)
    assert out["waves"] == [["gpu1"], ["gpu2"], ["gpu10"]]
    assert out["wave"] == ["gpu1"] and not out["finished"]
    assert out["lines"][0].startswith("maintenance of 3 node(s): 0 done, 0 failed, 3 to do now in 3 wave(s)")
    assert out["lines"][1:] == ["wave 1: gpu1", "wave 2: gpu2", "wave 3: gpu10"]


def test_a_node_drained_by_someone_else_counts_against_the_cap_and_is_left_alone():
    nodes = cluster(node("a1"), node("a2"), node("a3", "IDLE+DRAIN", reason="bad DIMM"), node("a4"))
    out = plan(nodes, cap=2)
    assert out["waves"] == [["a1"], ["a2"], ["a4"]]
    assert out["skipped"] == {"a3": "out of service for another reason: IDLE+DRAIN (bad DIMM); left alone"}
    assert out["unavailable"] == {"main": ["a3"]}
    assert "already out of service in partition main (counted against its cap): a3" in out["lines"]


@pytest.mark.parametrize("state", ["DOWN*", "DOWN+DRAIN", "IDLE*", "MIXED+DRAIN", "IDLE+MAINT", "UNKNOWN",
                                   "IDLE+MAINTENANCE+RESERVED", "ALLOCATED+MAINTENANCE+RESERVED",
                                   "IDLE+DRAIN+REBOOT_REQUESTED", "DOWN+REBOOT_ISSUED", "IDLE+FAIL",
                                   "IDLE+POWERED_DOWN", "IDLE+NOT_RESPONDING", "FUTURE"])
def test_every_state_that_takes_no_new_job_counts_against_the_cap(state):
    nodes = cluster(node("n1"), node("n2"), node("other", state, parts="main"))
    out = plan(nodes, targets=["n1", "n2"], cap=1)
    assert out["waves"] == [] and out["finished"]
    assert out["blocked"] == {n: "partition main has 1 node(s) out of service, its cap is 1 (other)"
                              for n in ("n1", "n2")}
    assert "blocked n1: partition main has 1 node(s) out of service, its cap is 1 (other)" in out["lines"]


@pytest.mark.parametrize("state", ["IDLE", "MIXED", "ALLOCATED", "IDLE+COMPLETING", "IDLE+RESERVED",
                                   "IDLE+PLANNED", "ALLOCATED+CLOUD"])
def test_states_that_take_jobs_do_not_count(state):
    nodes = cluster(node("n1"), node("other", state))
    assert plan(nodes, targets=["n1"], cap=1)["wave"] == ["n1"]


def test_a_node_in_two_partitions_must_fit_in_both():
    nodes = cluster(node("a1", parts="gpu,all"), node("a2", parts="gpu,all"), node("b1", parts="cpu,all"),
                    node("b2", parts="cpu,all"))
    out = plan(nodes, cap=1, partition_caps={"all": 2})
    # gpu and cpu allow one each, all two: one of each per wave
    assert out["waves"] == [["a1", "b1"], ["a2", "b2"]]
    out = plan(nodes, cap=1)  # all allows one: one node per wave
    assert out["waves"] == [["a1"], ["a2"], ["b1"], ["b2"]]
    assert out["limits"] == {"gpu": 1, "cpu": 1, "all": 1}


def test_a_percentage_cap_is_of_each_partitions_size():
    nodes = cluster(*[node("g%02d" % i, parts="gpu") for i in range(1, 11)] +
                    [node("s%d" % i, parts="small") for i in range(1, 4)])
    out = plan(nodes, cap="25%")
    assert out["limits"] == {"gpu": 2, "small": 1}
    assert [len(w) for w in out["waves"]] == [3, 3, 3, 2, 2]  # two of gpu and one of small per wave
    assert out["caps"] == {"gpu": "25%", "small": "25%"}


def test_per_partition_caps_override_the_default_and_unknown_partitions_are_refused():
    nodes = cluster(node("a1"), node("a2"), node("a3"))
    assert plan(nodes, cap=1, partition_caps={"main": 3})["waves"] == [["a1", "a2", "a3"]]
    with pytest.raises(ValueError) as err:
        plan(nodes, cap=1, partition_caps={"mian": 2})
    assert str(err.value) == ("hpc_gres_maintenance_partition_caps: expected partitions slurmctld knows (main), "
                              "found mian")
    with pytest.raises(ValueError, match=r"^hpc_gres_maintenance_partition_caps\[main\]: expected"):
        plan(nodes, partition_caps={"main": "0%"})


def test_nodes_in_no_partition_share_the_cap_as_one_group():
    nodes = cluster(node("x1", parts=""), node("x2", parts=""))
    out = plan(nodes, cap=1)
    assert out["waves"] == [["x1"], ["x2"]] and out["limits"] == {waves.NO_PARTITION: 1}


def test_nodes_this_maintenance_drained_go_first_and_add_nothing():
    nodes = cluster(node("a1"), node("a2", "IDLE+DRAIN", reason=R),
                    node("a3", "DOWN+DRAIN", reason=waves.failure_reason(R, "readiness: present")),
                    node("a4", "IDLE+DRAIN", reason=R + " : reboot issued"))
    out = plan(nodes, cap=1)
    # three are out already (over the cap of one): they go now, the idle one when they are back
    assert out["waves"] == [["a2", "a3", "a4"], ["a1"]]


def test_nodes_the_collections_gpu_checks_drained_are_taken_first_and_drained_again_with_its_reason():
    """A node drained by hpc-gres-health (an Xid 79: reboot the node) or by the boot check is what a maintenance
    reboot is for; an admin's drain stays left alone."""
    nodes = cluster(node("a1"),
                    node("a2", "IDLE+DRAIN", reason="hpc-gres-health: xid GPU 00000000:4E:00.0: Xid 79 at 41.2"),
                    node("a3", "DOWN+DRAIN", reason="hpc-gres-boot: gpus: 7 of 8 GPUs (after 300 s)"),
                    node("a4", "IDLE+DRAIN", reason="bad DIMM"),
                    node("a5", "IDLE+DRAIN", reason=waves.failure_reason(R, "readiness: present")),
                    node("a6", "IDLE+DRAIN", reason=R))
    out = plan(nodes, cap=2)  # the admin's a4 counts against it throughout
    assert out["waves"] == [["a2", "a3", "a5", "a6"], ["a1"]]
    assert out["retake"] == ["a2", "a3", "a5"]
    assert list(out["skipped"]) == ["a4"]
    assert ("taken although drained by the collection's GPU check (a reboot may clear it; the readiness check judges "
            "it after): a2: IDLE+DRAIN (hpc-gres-health: xid GPU 00000000:4E:00.0: Xid 79 at 41.2)") in out["lines"]
    # a reason that only mentions the program is an admin's
    other = cluster(node("b1", "IDLE+DRAIN", reason="checking hpc-gres-health: output"))
    assert list(plan(other)["skipped"]) == ["b1"]


def test_idle_nodes_go_before_nodes_with_jobs():
    nodes = cluster(node("a1", "ALLOCATED"), node("a2", "MIXED"), node("a3"), node("a4", "IDLE+COMPLETING"))
    assert plan(nodes, cap=1)["waves"] == [["a3"], ["a1"], ["a2"], ["a4"]]


def test_done_and_failed_nodes_are_not_done_again_and_failed_ones_do_not_count():
    nodes = cluster(node("a1"), node("a2", "IDLE+DRAIN", reason=waves.failure_reason(R, "x")), node("a3"))
    out = plan(nodes, cap=1, done=["a1"], failed={"a2": "readiness"}, max_failures=1)
    assert out["waves"] == [["a3"]] and out["unavailable"] == {}
    assert out["lines"][0].startswith("maintenance of 3 node(s): 1 done, 1 failed, 1 to do now in 1 wave(s)")
    assert "failed a2: readiness" in out["lines"]


def test_more_failures_than_the_budget_stop_the_run():
    nodes = cluster(node("a1"), node("a2"), node("a3"))
    out = plan(nodes, cap=1, failed={"a1": "readiness"})
    assert out["finished"] and out["waves"] == [] and out["remaining"] == ["a2", "a3"]
    assert out["stopped"] == ("1 node(s) failed (a1), more than hpc_gres_maintenance_max_failures allows (0): no "
                              "further wave")
    assert plan(nodes, cap=1, failed={"a1": "x"}, max_failures=1)["wave"] == ["a2"]
    # a percentage of the targets, rounded down
    assert plan(nodes, cap=1, failed={"a1": "x"}, max_failures="50%")["wave"] == ["a2"]
    assert plan(nodes, cap=1, failed={"a1": "x"}, max_failures="33%")["stopped"]


def test_unknown_targets_are_skipped():
    out = plan(cluster(node("a1")), targets=["a1", "ghost"], cap=1)
    assert out["skipped"] == {"ghost": "not known to slurmctld"} and out["waves"] == [["a1"]]


def test_nothing_to_do_is_finished():
    out = plan(cluster(node("a1")), cap=1, done=["a1"])
    assert out["finished"] and out["waves"] == [] and out["stopped"] is None and not out["blocked"]


def test_a_cluster_with_non_targets_counts_them_but_takes_only_targets():
    nodes = cluster(node("a1"), node("a2"), node("a3", "DOWN*", reason="Not responding"), node("a4"))
    out = plan(nodes, targets=["a1", "a2"], cap="50%")
    assert out["limits"] == {"main": 2} and out["waves"] == [["a1"], ["a2"]]


def test_nodes_in_a_maintenance_reservation_as_scontrol_prints_them_count_against_the_cap():
    # slonk's recorded H100 nodes (Slurm 23.11), all four in a MAINT reservation: two drained, two ALLOCATED; scontrol
    # prints the flag MAINTENANCE (sinfo prints MAINT)
    path = os.path.join(FIXTURES, "slonk-2311rc1-drain-maint-reserved-reservationname.txt")
    with open(path) as handle:
        text = handle.read().split("# ---\n", 1)[1]
    nodes = {name: dict(record, Partitions="h100") for name, record in parse_show_node(text).items()}
    nodes["spare"] = node("spare", parts="h100")
    out = plan(nodes, targets=["spare"], cap=4)
    assert out["unavailable"] == {"h100": sorted(n for n in nodes if n != "spare")}
    assert out["waves"] == [] and "partition h100 has 4 node(s) out of service" in out["blocked"]["spare"]


# ---------------------------------------------------------------------------------------------- properties

STATES = ["IDLE", "IDLE", "IDLE", "MIXED", "ALLOCATED", "IDLE+DRAIN", "DOWN*", "MIXED+DRAIN",
          "IDLE+MAINTENANCE+RESERVED"]
PARTS = ["p1", "p2", "p3"]


@st.composite
def clusters(draw):
    count = draw(st.integers(1, 12))
    records, targets = {}, []
    for i in range(count):
        name = "n%02d" % i
        parts = draw(st.lists(st.sampled_from(PARTS), max_size=3, unique=True))
        state = draw(st.sampled_from(STATES))
        reason = None
        if "DRAIN" in state or "DOWN" in state:
            reason = draw(st.sampled_from([R, R + " : reboot issued", "admin", waves.failure_reason(R, "x")]))
        records[name] = node(name, state, ",".join(parts), reason)
        if draw(st.booleans()):
            targets.append(name)
    used = {p for r in records.values() for p in (r.get("Partitions") or "").split(",") if p}
    caps = {p: draw(st.one_of(st.integers(1, 4), st.sampled_from(["10%", "34%", "50%", "100%"]))) for p in PARTS
            if p in used and draw(st.booleans())}
    cap = draw(st.one_of(st.integers(1, 3), st.sampled_from(["25%", "50%"])))
    failed = {t: "x" for t in targets if draw(st.integers(0, 5)) == 0}
    done = [t for t in targets if t not in failed and draw(st.integers(0, 5)) == 0]
    return records, targets, cap, caps, failed, done


def _out_of_service(statuses, names, part):
    return {n for n in names if part in statuses[n]["partitions"]}


@settings(max_examples=400, deadline=None)
@given(clusters())
def test_no_wave_ever_takes_a_partition_above_its_cap_counting_nodes_already_out(case):
    records, targets, cap, caps, failed, done = case
    out = waves.plan_waves(records, targets, cap=cap, partition_caps=caps, max_failures=len(failed), done=done,
                           failed=failed, reason=R)
    statuses = {n: waves.node_status(r, R) for n, r in records.items()}
    # simulate the run: out of service now = every unavailable node but this run's failures; each wave's nodes
    # are out while it runs and back afterwards
    out_now = {n for n, s in statuses.items() if s["unavailable"] and n not in failed}
    seen = set()
    for wave in out["waves"]:
        assert wave and not set(wave) & seen, "a node in two waves"
        seen |= set(wave)
        during = out_now | set(wave)
        for part, limit in out["limits"].items():
            before = _out_of_service(statuses, out_now, part)
            now = _out_of_service(statuses, during, part)
            # never above the cap, unless the partition was above it already and the wave added nobody there
            assert len(now) <= limit or now == before, (part, limit, sorted(before), wave)
        out_now -= set(wave)
    # every wave node is a target still to do, in service or drained by this maintenance
    for name in seen:
        assert name in targets and name not in done and name not in failed
        assert not statuses[name]["unavailable"] or statuses[name]["ours"]
    # every target is accounted for exactly once
    accounted = seen | set(out["skipped"]) | set(out["blocked"]) | set(done) | set(failed)
    assert set(targets) == accounted
    assert out["wave"] == (out["waves"][0] if out["waves"] else [])


@settings(max_examples=200, deadline=None)
@given(clusters())
def test_a_blocked_node_really_does_not_fit_and_nodes_of_this_maintenance_are_never_blocked(case):
    records, targets, cap, caps, failed, done = case
    out = waves.plan_waves(records, targets, cap=cap, partition_caps=caps, max_failures=len(failed), done=done,
                           failed=failed, reason=R)
    statuses = {n: waves.node_status(r, R) for n, r in records.items()}
    for name in out["blocked"]:
        assert not statuses[name]["unavailable"]
    # every ours target still to do is in the first wave: it adds nothing to any partition
    ours = [t for t in targets if t in statuses and statuses[t]["ours"] and t not in done and t not in failed]
    assert set(ours) <= set(out["wave"])
