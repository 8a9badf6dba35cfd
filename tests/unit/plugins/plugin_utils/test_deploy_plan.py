"""The deploy's cross-host decisions (plugins/plugin_utils/deploy_plan.py), made by the gres_deploy_plan action."""
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import deploy_plan

GROUPS = {"slurmctld": ["ctl"], "slurmd": ["n1.lab", "n2.lab", "n3.lab"]}
NAMES = {"n1.lab": "n1", "n2.lab": "n2", "n3.lab": "n3"}


def gate(play_hosts=("ctl", "n1.lab", "n2.lab"), verified=("n1.lab", "n2.lab")):
    state = {h: {"hpc_gres_slurmd_verified": True} for h in verified}
    return deploy_plan.gate(list(play_hosts), GROUPS, NAMES, state)


def test_gate_targets_are_the_play_hosts_in_slurmd_and_all_must_have_passed():
    plan = gate()
    assert plan["targets"] == ["n1.lab", "n2.lab"]
    assert plan["controllers"] == ["ctl"]
    assert plan["names"] == {"n1.lab": "n1", "n2.lab": "n2"}
    assert plan["refusal"] is None
    refused = gate(verified=("n1.lab",))
    assert refused["unverified"] == ["n2.lab"]
    assert refused["refusal"] == ("nothing installed, nothing restarted: 1 of 2 targeted node(s) did not pass "
                                  "verification: n2.lab (their findings are above)")


def test_order_refuses_a_gres_change_without_slurmctld_and_names_the_node():
    plan = gate(play_hosts=("n1.lab", "n2.lab"))
    state = {"n1.lab": {"hpc_gres_slurmd_plan": {"gres_changed": False}},
             "n2.lab": {"hpc_gres_slurmd_plan": {"gres_changed": True}}}
    out = deploy_plan.order(plan, state)
    assert out["gres_changing"] == ["n2.lab"]
    assert out["refusal"] == ("nothing installed, nothing restarted: the Gres of n2 changes, which needs slurmctld "
                              "restarted, but no slurmctld host is targeted; add the slurmctld group to --limit")
    # without a GRES change a node-only limit is fine
    state["n2.lab"]["hpc_gres_slurmd_plan"]["gres_changed"] = False
    assert deploy_plan.order(plan, state)["refusal"] is None


def test_order_names_the_gres_each_node_must_register_with_by_node_name():
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab"))
    state = {"n1.lab": {"hpc_gres_slurmd_plan": {"gres_changed": False, "expected_gres": {"gpu:a100": 8}}},
             "n2.lab": {"hpc_gres_slurmd_plan": {"gres_changed": True, "expected_gres": {"gpu:1g.10gb": 7}}}}
    assert deploy_plan.order(plan, state)["expected_gres"] == {"n1": {"gpu:a100": 8}, "n2": {"gpu:1g.10gb": 7}}
    # a node without a plan (its tasks were skipped) is left to confirm itself
    assert deploy_plan.order(plan, {"n1.lab": state["n1.lab"]})["expected_gres"] == {"n1": {"gpu:a100": 8}}


def test_slurmd_restarts_check_the_gres_at_once_unless_slurmctld_restarts_after_them():
    plan = gate()
    up = {"ctl": {"hpc_gres_slurmctld_plan": {"restart_before": False, "restart_after": True}}}
    down = {"ctl": {"hpc_gres_slurmctld_plan": {"restart_before": True, "restart_after": False}}}
    assert deploy_plan.order(plan, up)["check_gres_on_restart"] is False
    assert deploy_plan.order(plan, down)["check_gres_on_restart"] is True
    assert deploy_plan.order(plan, {})["check_gres_on_restart"] is True


def test_restarted_names_the_nodes_that_did_not_finish_by_slurm_name():
    plan = deploy_plan.order(gate(), {})
    out = deploy_plan.restarted(plan, {"n1.lab": {"hpc_gres_slurmd_done": True}})
    assert out["failed_nodes"] == ["n2"]
    assert out["refusal"] is None
    assert out["targets"] == plan["targets"]  # the plan so far is kept


def test_confirmed_selects_registered_undrained_nodes_and_prefers_the_restarted_ones():
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), verified=("n1.lab", "n2.lab", "n3.lab"))
    state = {
        "n1.lab": {"hpc_gres_slurmd_confirmed": {"status": "ok", "node": {"state_flags": []}},
                   "hpc_gres_slurmd_restarted": True},
        "n2.lab": {"hpc_gres_slurmd_confirmed": {"status": "resumed", "node": {"state_flags": []}}},
        "n3.lab": {"hpc_gres_slurmd_confirmed": {"status": "ok", "node": {"state_flags": ["DRAIN"]}}},
    }
    out = deploy_plan.confirmed(plan, state)
    assert out["smoke_nodes"] == ["n1", "n2"]
    assert out["smoke_preferred_nodes"] == ["n1"]
    failed = dict(state, **{"n1.lab": {"hpc_gres_slurmd_confirmed": {"status": "failed"}}})
    assert deploy_plan.confirmed(plan, failed)["smoke_nodes"] == ["n2"]
    # registered but left DOWN (an admin's State=DOWN, or ReturnToService=0): srun could not use it
    down = dict(state, **{"n2.lab": {"hpc_gres_slurmd_confirmed": {"status": "ok", "node": {
        "state_base": "DOWN", "state_flags": []}}}})
    assert deploy_plan.confirmed(plan, down)["smoke_nodes"] == ["n1"]


def test_each_stage_names_the_facts_it_reads():
    assert set(deploy_plan.STAGE_FACTS) == {"gate", "order", "restarted", "confirmed"}
    assert all(name.startswith(("hpc_gres_slurmd_", "hpc_gres_slurmctld_"))
               for names in deploy_plan.STAGE_FACTS.values() for name in names)


def test_check_mode_defers_the_gate_refusal_to_the_report_and_later_stages_keep_it():
    state = {"n1.lab": {"hpc_gres_slurmd_verified": True}}
    plan = deploy_plan.gate(["ctl", "n1.lab", "n2.lab"], GROUPS, NAMES, state, check_mode=True)
    assert plan["refusal"] is None
    assert plan["check_refusal"].startswith("nothing installed, nothing restarted: 1 of 2 targeted node(s) did not "
                                            "pass verification: n2.lab")
    ordered = deploy_plan.order(plan, {"n1.lab": {"hpc_gres_slurmd_plan": {"gres_changed": False}}})
    assert ordered["refusal"] is None and ordered["check_refusal"] == plan["check_refusal"]
    # nothing to defer when every node passed
    assert deploy_plan.gate(["ctl", "n1.lab"], GROUPS, NAMES, state, check_mode=True)["check_refusal"] is None
    assert "check_refusal" not in deploy_plan.gate(["ctl", "n1.lab", "n2.lab"], GROUPS, NAMES, state)
