# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy's cross-host decisions, made once each from what every host reported (pure; controller side).

``playbooks/deploy-gres.yml`` runs per host; whatever depends on *other* hosts is decided here, at four points,
by the ``gres_deploy_plan`` action, and the plays only read the result:

``gate``       after verification: the targeted nodes, their Slurm names, the targeted controllers; refused
               unless every targeted node passed (nothing is installed anywhere then).
``order``      after the read-only restart plans: refused when a node's Gres changes and no slurmctld is
               targeted; whether slurmd restarts can check the registered Gres at once (not when slurmctld
               restarts after them, for a count that goes up); the Gres each node must register with.
``restarted``  after the slurmd restarts: the nodes that did not finish (slurmctld then holds back new counts).
``confirmed``  after the confirmation: the nodes the smoke test may use and the ones it should prefer.

Each function takes ``state``: ``{host: {fact name: value}}`` of the facts the roles publish
(``hpc_gres_slurmd_verified``, ``hpc_gres_slurmd_plan``, ``hpc_gres_slurmd_done``, ``hpc_gres_slurmd_restarted``,
``hpc_gres_slurmd_confirmed``, ``hpc_gres_slurmctld_plan``), and returns the plan so far with ``refusal`` set
(a message) when the deploy must stop.
"""

# The facts each stage reads from every host.
STAGE_FACTS = {
    "gate": ("hpc_gres_slurmd_verified",),
    "order": ("hpc_gres_slurmd_plan", "hpc_gres_slurmctld_plan"),
    "restarted": ("hpc_gres_slurmd_done",),
    "confirmed": ("hpc_gres_slurmd_confirmed", "hpc_gres_slurmd_restarted"),
}


def gate(play_hosts, groups, names, state, check_mode=False):
    """Targets (play hosts in ``slurmd``), their node names, targeted controllers; refusal unless all verified.

    In check mode the refusal is kept as ``check_refusal`` instead: the check run goes on planning the nodes that
    passed, reports what the deploy would do and ends with this refusal (``check_report``).
    """
    slurmd = set(groups.get("slurmd") or [])
    slurmctld = set(groups.get("slurmctld") or [])
    targets = [h for h in play_hosts if h in slurmd]
    plan = {
        "targets": targets,
        "names": {h: names.get(h, h) for h in targets},
        "controllers": [h for h in play_hosts if h in slurmctld],
        "unverified": [h for h in targets if not state.get(h, {}).get("hpc_gres_slurmd_verified")],
        "refusal": None,
    }
    if plan["unverified"]:
        plan["refusal"] = ("nothing installed, nothing restarted: %d of %d targeted node(s) did not pass "
                           "verification: %s (their findings are above)"
                           % (len(plan["unverified"]), len(targets), ", ".join(plan["unverified"])))
    if check_mode:
        plan["check_refusal"], plan["refusal"] = plan["refusal"], None
    return plan


def order(plan, state):
    """Refuse a GRES change without slurmctld; decide whether slurmd restarts may check the Gres at once."""
    plan = dict(plan, refusal=None)
    node_plans = {h: state.get(h, {}).get("hpc_gres_slurmd_plan") or {} for h in plan["targets"]}
    plan["gres_changing"] = [h for h in plan["targets"] if node_plans[h].get("gres_changed")]
    # what each node must register with, by node name: the confirmation reads every node in one scontrol call
    plan["expected_gres"] = {plan["names"][h]: node_plans[h]["expected_gres"] for h in plan["targets"]
                             if node_plans[h].get("expected_gres") is not None}
    controller_plans = [state.get(h, {}).get("hpc_gres_slurmctld_plan") or {} for h in plan["controllers"]]
    plan["slurmctld_restart_after"] = any(p.get("restart_after") for p in controller_plans)
    plan["check_gres_on_restart"] = not plan["slurmctld_restart_after"]
    if plan["gres_changing"] and not plan["controllers"]:
        plan["refusal"] = ("nothing installed, nothing restarted: the Gres of %s changes, which needs slurmctld "
                           "restarted, but no slurmctld host is targeted; add the slurmctld group to --limit"
                           % ", ".join(plan["names"][h] for h in plan["gres_changing"]))
    return plan


def restarted(plan, state):
    """The targeted nodes whose slurmd restart step did not finish in this run (by Slurm node name)."""
    plan = dict(plan, refusal=None)
    plan["failed_nodes"] = [plan["names"][h] for h in plan["targets"]
                            if not state.get(h, {}).get("hpc_gres_slurmd_done")]
    return plan


def confirmed(plan, state):
    """Nodes slurmctld shows registered (ok or resumed), not drained, not DOWN; those this run restarted go first."""
    plan = dict(plan, refusal=None)
    usable, preferred = [], []
    for host in plan["targets"]:
        facts = state.get(host, {})
        confirm = facts.get("hpc_gres_slurmd_confirmed") or {}
        if confirm.get("status") not in ("ok", "resumed"):
            continue
        node = confirm.get("node") or {}
        if "DRAIN" in (node.get("state_flags") or []) or node.get("state_base") == "DOWN":
            continue
        usable.append(plan["names"][host])
        if facts.get("hpc_gres_slurmd_restarted"):
            preferred.append(plan["names"][host])
    plan["smoke_nodes"] = usable
    plan["smoke_preferred_nodes"] = preferred
    return plan
