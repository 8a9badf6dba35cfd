"""scontrol show node parsing and the registration verdict, against real outputs (public and recorded live)."""
import os

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import scontrol
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_gres_spec

FIXTURES = os.path.join(testpaths.FIXTURES, "slurm")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read().split("# ---\n", 1)[1]


def one(name):
    nodes = scontrol.parse_show_node(fixture(name))
    assert len(nodes) == 1
    return next(iter(nodes.values()))


@pytest.mark.parametrize("name, node, state, flags, gres, reason, user", [
    ("awsome195-scontrol-node-gres-lower-0lt1.txt", "yigou-dev-102-68", "IDLE", ["DRAIN"],
     {"gpu:nvidia-rtx-3090": 1}, "gres/gpu count reported lower than configured (0 < 1)", "slurm"),
    ("slinky45-scontrol-node-gres-socket-list.txt", "esc8000a-1", "IDLE", ["DYNAMIC_NORM"],
     {"gpu:a40": 1}, None, None),
    ("live2205-multiline-idle.txt", "vm", "IDLE", [], {"gpu:a100": 2, "gpu:h100": 2}, None, None),
    ("live2205-multiline-admin-drain.txt", "vm", "IDLE", ["DRAIN"], {"gpu:a100": 2, "gpu:h100": 2},
     "admin: bad fan, ticket=123 see x", "root"),
    ("live2205-oneliner-admin-drain.txt", "vm", "IDLE", ["DRAIN"], {"gpu:a100": 2, "gpu:h100": 2},
     "admin: bad fan, ticket=123 see x", "root"),
    ("live2205-multiline-count-too-low-invalid-reg.txt", "vm", "IDLE", ["DRAIN", "INVALID_REG"],
     {"gpu:a100": 2, "gpu:h100": 3}, "gres/gpu count reported lower than configured (5 < 6)", "root"),
    ("live2205-multiline-type-count-too-low.txt", "vm", "IDLE", ["DRAIN", "INVALID_REG"],
     {"gpu:a100": 2, "gpu:h100": 2}, "gres/gpu:h100 count too low (2 < 3)", "root"),
    ("live2205-multiline-gres-drain-valid-registration.txt", "vm", "IDLE", ["DRAIN"],
     {"gpu:a100": 3, "gpu:h100": 2}, "gres/gpu:h100 count too low (2 < 3)", "root"),
    ("live2205-multiline-down-drain-registered.txt", "itest01", "DOWN", ["DRAIN"],
     {"gpu:a100": 2, "gpu:h100": 2}, "MIG reconfiguration", "root"),
])
def test_parse_real_outputs(name, node, state, flags, gres, reason, user):
    rec = one(name)
    assert rec["name"] == node
    assert rec["state_base"] == state
    assert rec["state_flags"] == flags
    assert rec["gres"] == gres
    assert rec["reason"] == reason
    assert rec["reason_user"] == user
    assert not rec["not_responding"]


def test_fields_with_spaces_and_equals_are_kept_whole():
    rec = one("live2205-oneliner-admin-drain.txt")
    assert rec["OS"] == "Linux 6.18.44-fc-v657 #1 SMP PREEMPT_DYNAMIC @0"
    assert rec["CfgTRES"] == "cpu=16,mem=1000M,billing=16"
    assert rec["AllocTRES"] == ""
    assert rec["slurmd_start_time"] == "2026-11-29T21:40:01"
    assert rec["reason_time"] == "2026-11-29T21:40:51"
    slinky = one("slinky45-scontrol-node-gres-socket-list.txt")
    assert slinky["Comment"] == '{"namespace":"slurm","podName":"slurm-compute-esc8000a-1"}'


def test_multiline_and_oneliner_agree():
    multi = one("live2205-multiline-admin-drain.txt")
    oneline = one("live2205-oneliner-admin-drain.txt")
    for key in ("State", "Gres", "reason", "SlurmdStartTime", "CPUTot", "RealMemory", "Partitions"):
        assert multi[key] == oneline[key], key


def test_several_nodes_in_one_output():
    text = fixture("live2205-multiline-idle.txt") + "\n" + fixture("awsome195-scontrol-node-gres-lower-0lt1.txt")
    nodes = scontrol.parse_show_node(text)
    assert sorted(nodes) == ["vm", "yigou-dev-102-68"]
    assert nodes["vm"]["reason"] is None


@pytest.mark.parametrize("text, expected", [
    ("IDLE", ("IDLE", [], False)),
    ("IDLE*", ("IDLE", [], True)),
    ("IDLE+NOT_RESPONDING", ("IDLE", [], True)),
    ("DOWN*+DRAIN", ("DOWN", ["DRAIN"], True)),
    ("MIXED+DRAIN+INVALID_REG", ("MIXED", ["DRAIN", "INVALID_REG"], False)),
    ("", ("", [], False)),
])
def test_parse_state(text, expected):
    assert scontrol.parse_state(text) == expected


@pytest.mark.parametrize("text, expected", [
    ("gpu:a100:4(S:0-1)", {"gpu:a100": 4}),
    ("gpu:A100:4(S:0-1),gpu:h100:2(S:1),shard:8", {"gpu:a100": 4, "gpu:h100": 2, "shard": 8}),
    ("gpu:4", {"gpu": 4}),
    ("gpu:1g.10gb:7(S:0)", {"gpu:1g.10gb": 7}),
    ("gpu:a40:1(S:0,2,4,6,8,10)", {"gpu:a40": 1}),
    ("(null)", {}),
    ("", {}),
])
def test_parse_gres_field(text, expected):
    assert scontrol.parse_gres_field(text) == expected


@pytest.mark.parametrize("reason, gres, registration", [
    ("gres/gpu count reported lower than configured (4 < 8)", True, False),
    ("gres/gpu:h100 count too low (2 < 3)", True, False),
    ("gres/gpu: Count changed on node nodegpu1 (4 != 3)", True, False),
    ("Low RealMemory (reported:1000 < 100.00% of configured:2000)", False, True),
    ("admin: bad fan, ticket=123 see x", False, False),
    ("gres count is wrong, check later", False, False),
    (None, False, False),
])
def test_reason_classes(reason, gres, registration):
    assert scontrol.is_gres_drain_reason(reason) is gres
    assert scontrol.is_registration_drain_reason(reason) is registration


def test_magiccastle_log_lines_are_gres_reasons():
    lines = [l for l in fixture("magiccastle361-mig-count-changed-inval.txt").splitlines() if l.strip()]
    assert scontrol.is_gres_drain_reason(lines[0].split("slurmctld: ", 2)[-1])
    assert scontrol.is_gres_drain_reason(lines[1].split("reason:", 1)[1])


def test_untyped_declaration_folds_typed_report():
    assert scontrol.gres_differences({"gpu": 4}, {"gpu:a100": 4}) == []
    assert scontrol.gres_differences({"gpu": 4}, {"gpu:a100": 3}) == [("gpu", 4, 3)]
    assert scontrol.gres_differences({"gpu:a100": 4}, {"gpu:a100": 4, "gpu:h100": 1}) == [("gpu:h100", 0, 1)]


EXPECTED = {"gpu:a100": 3, "gpu:h100": 2}


@pytest.mark.parametrize("name, expected, since, check_gres, status", [
    ("live2205-multiline-idle.txt", {"gpu:a100": 2, "gpu:h100": 2}, None, True, "ok"),
    # registration refused: never waits, never resumes
    ("live2205-multiline-count-too-low-invalid-reg.txt", {"gpu:a100": 2, "gpu:h100": 4}, None, True, "failed"),
    ("live2205-multiline-type-count-too-low.txt", {"gpu:a100": 2, "gpu:h100": 3}, None, False, "failed"),
    # valid registration, Gres as declared, still drained by the GRES mismatch: resume
    ("live2205-multiline-gres-drain-valid-registration.txt", EXPECTED, None, True, "resume"),
    # ... but not while slurmctld still runs the old definitions
    ("live2205-multiline-gres-drain-valid-registration.txt", EXPECTED, None, False, "ok"),
    # Gres pinned to an old count: failed even though the registration is "valid"
    ("live2205-multiline-gres-drain-valid-registration.txt", {"gpu:a100": 3, "gpu:h100": 3}, None, True, "failed"),
    # an admin's drain is never resumed, and does not fail the deploy
    ("live2205-multiline-admin-drain.txt", {"gpu:a100": 2, "gpu:h100": 2}, None, True, "ok"),
    # slurmd restarted but not registered again yet
    ("live2205-multiline-idle.txt", {"gpu:a100": 2, "gpu:h100": 2}, "2026-11-29T21:40:01", True, "waiting"),
    ("live2205-multiline-idle.txt", {"gpu:a100": 2, "gpu:h100": 2}, "2026-11-29T21:00:00", True, "ok"),
    # drained, set DOWN while slurmd was stopped: registered again, DOWN stays (settled, not waited on) ...
    ("live2205-multiline-down-drain-registered.txt", {"gpu:a100": 2, "gpu:h100": 2}, "2026-12-01T08:59:27", True,
     "ok"),
    # ... but the Gres is still checked
    ("live2205-multiline-down-drain-registered.txt", {"gpu:a100": 3, "gpu:h100": 2}, "2026-12-01T08:59:27", True,
     "failed"),
    # ... while slurmd is stopped, and without a restart to compare with, DOWN may still change
    ("live2205-multiline-down-drain-stopped.txt", {"gpu:a100": 2, "gpu:h100": 2}, "2026-12-01T08:59:27", True,
     "waiting"),
    ("live2205-multiline-down-drain-stopped.txt", {"gpu:a100": 2, "gpu:h100": 2}, None, True, "waiting"),
    ("live2205-multiline-down-drain-registered.txt", {"gpu:a100": 2, "gpu:h100": 2}, None, True, "waiting"),
])
def test_registration_verdict(name, expected, since, check_gres, status):
    rec = one(name)
    verdict = scontrol.registration_verdict(rec, expected, since=since, check_gres=check_gres)
    assert verdict["status"] == status, verdict
    assert verdict["resume"] is (status == "resume")


def test_verdict_messages_name_state_and_reason():
    rec = one("live2205-multiline-count-too-low-invalid-reg.txt")
    verdict = scontrol.registration_verdict(rec, {"gpu:a100": 2, "gpu:h100": 4})
    assert "IDLE+DRAIN+INVALID_REG" in verdict["message"]
    assert "count reported lower than configured (5 < 6)" in verdict["message"]
    rec = one("live2205-multiline-gres-drain-valid-registration.txt")
    verdict = scontrol.registration_verdict(rec, {"gpu:a100": 3, "gpu:h100": 3})
    assert "gpu:h100: expected 3, slurmctld has 2" in verdict["message"]


def test_verdict_unknown_and_not_responding_nodes_wait():
    rec = one("live2205-multiline-idle.txt")
    for state in ("IDLE*", "UNKNOWN", "DOWN+NOT_RESPONDING", "IDLE+NOT_RESPONDING"):
        changed = dict(rec)
        changed["state_base"], changed["state_flags"], changed["not_responding"] = scontrol.parse_state(state)
        assert scontrol.registration_verdict(changed, rec["gres"])["status"] == "waiting", state
    assert scontrol.registration_verdict(None, {})["status"] == "failed"


def test_down_after_a_fresh_registration_is_reported_with_the_way_back():
    rec = one("live2205-multiline-down-drain-registered.txt")
    verdict = scontrol.registration_verdict(rec, rec["gres"], since="2026-12-01T08:59:27")
    assert "DOWN and drained by someone else" in verdict["message"]
    assert "Reason='MIG reconfiguration'" in verdict["message"]
    # DOWN without a drain (ReturnToService=0, or an admin's State=DOWN): left DOWN, the resume command named
    down = dict(rec, state_flags=[], reason="Not responding")
    verdict = scontrol.registration_verdict(down, rec["gres"], since="2026-12-01T08:59:27")
    assert verdict["status"] == "ok"
    assert "scontrol update NodeName=itest01 State=RESUME" in verdict["message"]
    # a GRES-mismatch drain on a DOWN node is resumed as on an IDLE one (the resume clears DOWN too)
    gres = dict(rec, reason="gres/gpu count reported lower than configured (2 < 4)")
    assert scontrol.registration_verdict(gres, rec["gres"], since="2026-12-01T08:59:27")["status"] == "resume"


def test_registration_drain_after_restart_fails():
    rec = dict(one("live2205-multiline-admin-drain.txt"))
    rec["reason"] = "Low RealMemory (reported:1000 < 100.00% of configured:99999)"
    assert scontrol.registration_verdict(rec, rec["gres"])["status"] == "failed"


def test_squeue_jobs_are_read_and_named_for_messages():
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import format_jobs, parse_squeue
    jobs = parse_squeue("4711|alice|RUNNING|train|v2\n\n4712|bob|COMPLETING|eval\n")
    assert jobs == [{"id": "4711", "user": "alice", "state": "RUNNING", "name": "train|v2"},
                    {"id": "4712", "user": "bob", "state": "COMPLETING", "name": "eval"}]
    assert format_jobs(jobs) == "job 4711 (user alice, RUNNING, train|v2); job 4712 (user bob, COMPLETING, eval)"
    assert parse_squeue("") == []


def test_scontrol_runner_passes_slurm_conf_and_tells_unknown_nodes_from_errors():
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import Scontrol
    calls = []
    answers = {"n1": (0, "NodeName=n1 State=IDLE Gres=gpu:a100:2\n", ""),
               "nx": (1, "", "Node nx not found\n"),
               "down": (1, "", "Unable to contact slurm controller (connect failure)\n")}

    def run(argv, environ_update=None):
        calls.append((argv, environ_update))
        return answers[argv[-1]]

    sc = Scontrol(run, "/usr/bin/scontrol", "/etc/slurm-test/slurm.conf")
    node, error = sc.node("n1")
    assert error is None and node["state_base"] == "IDLE"
    assert calls[0] == (["/usr/bin/scontrol", "show", "node", "n1"],
                        {"LC_ALL": "C", "SLURM_CONF": "/etc/slurm-test/slurm.conf"})
    assert sc.node("nx") == (None, None)
    node, error = sc.node("down")
    assert node is None and "Unable to contact slurm controller" in error


def test_several_nodes_are_read_in_one_call_unknown_ones_none():
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import Scontrol
    calls = []
    # what scontrol 22.05 prints for `-o show node nx,n1` (checked live): known nodes, a line per unknown, rc 1
    answers = {"n[1-2],nx": (1, "Node nx not found\nNodeName=n1 State=IDLE Gres=gpu:a100:2\n"
                             "NodeName=n2 State=IDLE+DRAIN Gres=gpu:a100:2 Reason=x [root@2026-12-01T09:00:00]\n", ""),
               "n[1-2]": (1, "", "slurm_load_node error: Unable to contact slurm controller (connect failure)\n")}

    def run(argv, environ_update=None):
        calls.append(argv)
        return answers[argv[-1]]

    sc = Scontrol(run, "/usr/bin/scontrol")
    nodes, error = sc.nodes(["n2", "nx", "n1"])
    assert error is None and calls == [["/usr/bin/scontrol", "-o", "show", "node", "n[1-2],nx"]]
    assert list(nodes) == ["n2", "nx", "n1"] and nodes["nx"] is None
    assert nodes["n1"]["state_base"] == "IDLE" and nodes["n2"]["state_flags"] == ["DRAIN"]
    nodes, error = sc.nodes(["n1", "n2"])
    assert nodes is None and "Unable to contact slurm controller" in error
    assert sc.nodes([]) == ({}, None)


def test_several_nodes_are_named_in_a_hostlist_every_release_reads():
    # scontrol before 23.11 does not read a suffix after the brackets (node[01-02]-ib), issue 11 case 1
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import Scontrol
    calls = []

    def run(argv, environ_update=None):
        calls.append(argv[-1])
        return 0, "NodeName=node01-ib State=IDLE\nNodeName=node02-ib State=IDLE\n", ""

    nodes, error = Scontrol(run, "/usr/bin/scontrol").nodes(["node01-ib", "node02-ib"])
    assert error is None and calls == ["node01-ib,node02-ib"] and sorted(nodes) == ["node01-ib", "node02-ib"]


def test_own_drain_is_recognised_after_slurmctld_appends_not_responding():
    # Slurm 24.11, live (molecule deploy-mig): the runbook's drain, then slurmd stopped past SlurmdTimeout
    text = ("NodeName=dmig-gpu01 State=DOWN+DRAIN Gres=gpu:a100:2(S:0-1) "
            "Reason=MIG reconfiguration : Not responding [slurm@2026-12-01T12:17:25]")
    node = scontrol.parse_show_node(text)["dmig-gpu01"]
    assert node["reason"] == "MIG reconfiguration : Not responding"
    assert scontrol.same_drain_reason(node["reason"], "MIG reconfiguration")
    assert scontrol.same_drain_reason("MIG reconfiguration", "MIG reconfiguration")
    assert not scontrol.same_drain_reason("MIG reconfiguration by admin", "MIG reconfiguration")
    assert not scontrol.same_drain_reason("Not responding", "MIG reconfiguration")
    assert not scontrol.same_drain_reason(None, "MIG reconfiguration")


def test_a_drain_keeps_its_owner_through_slurms_reboot_suffix():
    """scontrol reboot appends ' : reboot issued' (and a slow reboot ' : Not responding'); a timed-out reboot or
    another reason is not ours."""
    ours = "GPU maintenance"
    assert scontrol.same_drain_reason("GPU maintenance : reboot issued", ours)
    assert scontrol.same_drain_reason("GPU maintenance : reboot issued : Not responding", ours)
    assert not scontrol.same_drain_reason("GPU maintenance : reboot issued : reboot timed out", ours)
    assert not scontrol.same_drain_reason("other : reboot issued", ours)
    assert not scontrol.same_drain_reason(" : reboot issued", ours)


def nodes_of(name):
    return scontrol.parse_show_node(fixture(name))


@pytest.mark.parametrize("name, node, since, status, says", [
    # power saving: slurmd does not run (CycleCloud 22.05 dynamic nodes); the flags come after the base state
    ("cyclecloud2205-dynamic-norm-powered-down-powering-up.txt", "s301-c7-dynamic-7", None, "waiting",
     "state POWERED_DOWN"),
    ("cyclecloud2205-dynamic-norm-powered-down-powering-up.txt", "d1", None, "waiting", "not responding"),
    # a reboot in progress (ParallelCluster 22.05): waiting, whether or not slurmd started since "since"
    ("pcnode-test-reboot-issued-maintenance-reserved.txt", "queue1-st-compute-resource-1-1", None, "waiting",
     "state REBOOT_ISSUED"),
    ("pcnode-test-reboot-issued-maintenance-reserved.txt", "queue1-st-compute-resource-1-1", "2023-01-26T09:00:00",
     "waiting", "state REBOOT_ISSUED"),
    # a maintenance reservation is no reason to wait (23.02)
    ("pcnode-test-reboot-issued-maintenance-reserved.txt", "queue1-st-crt2micro-1", None, "ok", "registered"),
])
def test_power_saving_and_reboot_flags(name, node, since, status, says):
    verdict = scontrol.registration_verdict(nodes_of(name)[node], None, since=since)
    assert verdict["status"] == status and says in verdict["message"], verdict


def test_a_reboot_only_requested_leaves_the_registration_as_it_is():
    rec = dict(one("live2205-multiline-admin-drain.txt"), state_flags=["DRAIN", "REBOOT_REQUESTED"])
    assert scontrol.registration_verdict(rec, {"gpu:a100": 2, "gpu:h100": 2})["status"] == "ok"


def test_a_countable_gres_with_a_size_suffix_reads_as_slurm_conf_does():
    # Slurm 17.11 "scontrol -d show node" of a Hebrew University node: Gres=gpu:quadro:1(S:0),vmem:2G
    cricket = nodes_of("huji1711-detail-gresused-idx-vmem-drain.txt")["cricket"]
    assert cricket["gres"] == {"gpu:quadro": 1, "vmem": 2 * 1024 ** 3}
    verdict = scontrol.registration_verdict(cricket, parse_gres_spec("gpu:quadro:1,vmem:2G"))
    assert verdict["status"] != "failed", verdict


def test_reason_followed_by_instance_fields():
    # ParallelCluster 24.11: InstanceId= and InstanceType= after Reason=
    rec = one("pcluster2411-rtxpro-idle-cloud-reason-instanceid.txt")
    assert (rec["state_base"], rec["state_flags"], rec["gres"]) == ("IDLE", ["CLOUD"], {"gpu:rtxproserver6000": 1})
    assert rec["reason"] == "Node start up"


def test_a_reservation_name_after_the_reason_is_a_field_of_its_own():
    # Slurm 23.11 prints ReservationName= after Reason= (slonk's recorded H100 nodes in a MAINT reservation)
    nodes = nodes_of("slonk-2311rc1-drain-maint-reserved-reservationname.txt")
    drained = nodes["cluster-h100-9-78"]
    assert (drained["reason"], drained["reason_user"], drained["reason_time"], drained["ReservationName"]) == (
        "Prolog error: 571 xid 13 errors", "root", "2023-12-24T06:51:08", "example")
    assert scontrol.same_drain_reason(drained["reason"], "Prolog error: 571 xid 13 errors")
    assert [nodes[n]["ReservationName"] for n in sorted(nodes)] == ["example"] * 4
    assert {n: nodes[n]["state_flags"] for n in ("cluster-h100-9-69", "cluster-h100-9-79")} == {
        "cluster-h100-9-69": ["MAINTENANCE", "RESERVED"], "cluster-h100-9-79": ["DRAIN", "MAINTENANCE", "RESERVED"]}


def test_node_not_found_between_records_is_no_part_of_either():
    # scontrol show nodes cpu[113-115,120-122] where cpu114 does not exist (UNIGE Yggdrasil, 24.11.1)
    nodes = nodes_of("unige-yggdrasil-2411-multinode-node-not-found.txt")
    assert sorted(nodes) == ["cpu113", "cpu115", "cpu120", "cpu121", "cpu122"]
    assert nodes["cpu113"]["AveWatts"] == "0"
    drained = scontrol.parse_show_node("NodeName=a State=IDLE+DRAIN Reason=gres/gpu count too low [slurm@2026-01-01T00:00:00]\n"
                                       "Node b not found\nNodeName=c State=IDLE\n")
    assert (drained["a"]["reason"], drained["a"]["reason_user"]) == ("gres/gpu count too low", "slurm")


def test_a_node_slurmctld_has_no_registration_of_is_waited_for():
    # BootTime=None SlurmdStartTime=None: the Gres shown is slurm.conf's (Lambda, Ubuntu's slurm-wlm)
    node = one("lambda-ubuntu-idle-a100-slurmdstarttime-none.txt")
    verdict = scontrol.registration_verdict(node, {"gpu:a100": 8})
    assert verdict["status"] == "waiting" and "SlurmdStartTime=None" in verdict["message"], verdict
    # a record without the field at all (not printed) is judged as before
    bare = dict(node)
    del bare["SlurmdStartTime"]
    assert scontrol.registration_verdict(bare, {"gpu:a100": 8})["status"] == "ok"


def test_gres_used_counts_each_gres_name_of_a_real_detail_output():
    # Hebrew University's scontrol -d show node (huji1711 fixture): what the deploy's job refusal reads
    used = {name: scontrol.parse_gres_used(node.get("GresUsed"))
            for name, node in nodes_of("huji1711-detail-gresused-idx-vmem-drain.txt").items()}
    wanted = [{"gpu": 8}, {"gpu": 0, "vmem": 0}, {"gpu": 4}, {"gpu": 0}]
    assert all(w in used.values() for w in wanted), used
    # shards are named on their own, an index list with commas is not a count
    assert scontrol.parse_gres_used("gpu:a100:2(IDX:0,2),gpu:h100:0(IDX:N/A),shard:a100:3(1/8,2/8)") == {
        "gpu": 2, "shard": 3}
    assert scontrol.parse_gres_used(None) is None


@pytest.mark.parametrize("state, in_force", [
    ("IDLE+DRAIN", True), ("MIXED+DRAINING", True), ("DOWN", True), ("IDLE*", True), ("FAIL", True),
    ("ALLOCATED+FAILING", True), ("IDLE", False), ("MIXED", False), (None, False),
])
def test_a_reason_is_in_force_only_on_a_node_out_of_use(state, in_force):
    # slurmctld 24.11 keeps the reason of a drain resumed since: on an IDLE node it says nothing of it
    assert scontrol.reason_in_force(state) is in_force
