# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action: the cross-host decisions of the deploy, the rollback, the MIG runbook and the maintenance run
(documentation: plugins/modules/gres_plan.py)."""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError, parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import (
    deploy_plan,
    deploy_run,
    health_program,
    maintenance,
    mig_node,
    restart_batch,
    run_lock,
    smoke,
    waves,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.awx_slicing import slice_problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import host_values

STAGES = ("gate", "jobs", "restarted", "registered", "confirmed", "controller", "owner", "changes", "summary", "mig_status", "waves",
          "maintenance", "health_library", "restart_batch", "lock", "smoke")
MAINTENANCE_PHASES = ("lock", "resume", "reboot", "failure", "summary")
ARGUMENT_SPEC = dict(
    stage=dict(type="str", required=True, choices=list(STAGES)),
    plan=dict(type="dict"),
    serial=dict(type="raw"),
    # stage controller
    files=dict(type="dict"),
    read=dict(type="dict"),
    targeted_nodes=dict(type="list", elements="str"),
    wanted=dict(type="dict"),
    config_mode=dict(type="str", choices=["files", "configless", "include"]),
    include_file=dict(type="str"),
    # stage smoke
    site=dict(type="dict"),
    # stage owner
    command=dict(type="str", default="deploy"),
    # raw: a free lock is null, which ansible-core before 2.19 templates to "" (not a dict)
    lock=dict(type="raw"),
    # stage changes
    nodes=dict(type="list", elements="str"),
    names=dict(type="dict"),
    controllers=dict(type="list", elements="str"),
    # stage summary
    record=dict(type="dict"),
    late=dict(type="bool", default=False),
    node_records=dict(type="dict"),
    inventory_hint=dict(type="str", default="-i INVENTORY"),
    # stage mig_status
    host=dict(type="str"),
    check=dict(type="dict"),
    node=dict(type="raw"),
    step=dict(type="dict"),
    reason=dict(type="str"),
    # stages waves and maintenance
    target_hosts=dict(type="list", elements="str"),
    slurm_nodes=dict(type="dict"),
    cap=dict(type="raw", default=1),
    partition_caps=dict(type="dict", default={}),
    max_failures=dict(type="raw", default=0),
    done=dict(type="list", elements="str", default=[]),
    phase=dict(type="str", choices=list(MAINTENANCE_PHASES)),
    unfinished=dict(type="list", elements="dict", default=[]),
    break_lock=dict(type="str", default=""),
    allow_state_change=dict(type="bool", default=False),
    defer_refusal=dict(type="bool", default=False),
    judge_partitions=dict(type="bool", default=True),
    change=dict(type="dict", default={}),
    resume=dict(type="bool", default=True),
    reboot=dict(type="str", default="auto"),
    config=dict(type="str", default=""),
    reboot_timeout=dict(type="int", default=1800),
    reboot_tasks=dict(type="str", default=""),
    run_id=dict(type="str"),
    continues=dict(type="str"),
    task=dict(type="str"),
    result=dict(type="raw"),
)
REQUIRED_IF = [("stage", "jobs", ("plan", "read")), ("stage", "restarted", ("plan",)), ("stage", "registered", ("plan",)), ("stage", "confirmed", ("plan",)),
               ("stage", "controller", ("files", "read")), ("stage", "summary", ("record",)),
               ("stage", "mig_status", ("host", "check", "step", "reason", "read")),
               ("stage", "waves", ("slurm_nodes", "target_hosts", "reason")), ("stage", "maintenance", ("phase",)),
               ("stage", "restart_batch", ("target_hosts",)), ("stage", "smoke", ("files", "nodes"))]
RENDER = "hpc_gres_render_result"
# What a maintenance node cycle leaves on its host: {status: done|failed|skipped, reason}.
OUTCOME = "hpc_gres_maintenance_outcome"
# What the summary reads from each host of the record.
SUMMARY_FACTS = ("hpc_gres_slurmd_done", "hpc_gres_slurmd_restarted", "hpc_gres_slurmd_install_result",
                 "hpc_gres_slurmctld_install_result", "hpc_gres_run_rolled_back", "hpc_gres_run_failure",
                 "hpc_gres_run_undo_skipped")


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def _render(self, task_vars):
        render = host_values(task_vars["hostvars"], ["localhost"], [RENDER])["localhost"].get(RENDER)
        if not isinstance(render, dict) or "files" not in render:
            raise AnsibleActionFail("gres_plan: expected the render's result on localhost (%s), found none: run the "
                                    "hpc.slurm_gres.hpc_gres_render role first" % RENDER)
        return render

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC, required_if=REQUIRED_IF)
        sliced = slice_problem(task_vars)
        if sliced:
            result.update(failed=True, msg=str(sliced))
            return result
        for name in ("lock", "node", "result"):
            args[name] = self._dict_or_none(name, args[name])
        stage = args["stage"]
        hostvars = task_vars["hostvars"]
        plan = args["plan"] or {}
        try:
            if stage == "gate":
                hosts = task_vars.get("ansible_play_hosts_all") or []
                state = host_values(hostvars, hosts, deploy_plan.STAGE_FACTS["gate"])
                run_tags, skip_tags = task_vars.get("ansible_run_tags"), task_vars.get("ansible_skip_tags")
                steps = {step: deploy_plan.selected([step], run_tags, skip_tags) for step in ("install", "restart")}
                check_mode = bool(self._task.check_mode)
                plan = deploy_plan.gate(hosts, task_vars["groups"], self._render(task_vars), state,
                                        check_mode=check_mode, serial=args["serial"], steps=steps,
                                        allow_state_change=args["allow_state_change"])
                report = plan.pop("report", None)
                if report is not None and check_mode:
                    # the diffs go to Ansible's diff display (--diff) only; a callback shows a diff only for a
                    # changed result, and in check mode changed means "would change"
                    diffs = report.pop("diffs")
                    result.update(changed=bool(diffs), report=report, report_lines=report.pop("lines"),
                                  diff=[{"prepared": text} for text in diffs])
                elif report is not None:
                    report.pop("diffs")
                    result.update(report=report, report_lines=report.pop("lines"))
            elif stage == "jobs":
                plan = {"refusal": deploy_plan.jobs_refusal(plan, args["read"])}
            elif stage == "restarted":
                state = host_values(hostvars, plan.get("targets", []), deploy_plan.STAGE_FACTS["restarted"])
                plan = deploy_plan.restarted(plan, state)
            elif stage == "registered":
                plan = deploy_plan.registered(plan, args["read"], check_mode=bool(self._task.check_mode))
            elif stage == "confirmed":
                render = self._render(task_vars)
                state = host_values(hostvars, plan.get("targets", []), deploy_plan.STAGE_FACTS["confirmed"])
                plan = deploy_plan.confirmed(plan, state, render["files"], render.get("config_mode") or "files")
            elif stage == "controller":
                # a rollback of a named run has no render: the role passes the mode it was deployed with
                render = self._render(task_vars) if not args["config_mode"] else {}
                mode = args["config_mode"] or render.get("config_mode") or "files"
                include = args["include_file"] if args["config_mode"] else render.get("include_file")
                plan = deploy_plan.controller_plan(args["files"], args["read"], args["targeted_nodes"], mode, include,
                                                   args["wanted"])
                # the MIG runbook and a rollback install a slurm.conf too: the same refusal as the deploy's gate
                host = next(iter(task_vars.get("ansible_delegated_vars") or {}), task_vars.get("inventory_hostname"))
                reasons = deploy_plan.state_refusals_for_controller(host, plan, mode, include,
                                                                    args["allow_state_change"],
                                                                    args["judge_partitions"])
                plan["refusal"] = ("nothing installed, nothing restarted: " + "; ".join(reasons)) if reasons else None
            elif stage == "owner":
                plan = deploy_run.lock_owner(args["command"], args["lock"])
                plan["refusal"] = None
            elif stage == "lock":
                owner = deploy_run.lock_owner(args["command"], args["lock"])
                plan = run_lock.lock_plan(args["command"], args["lock"], owner["holder_gone"], args["unfinished"],
                                          args["break_lock"])
                plan["owner"] = owner["owner"]
            elif stage == "changes":
                plan = self._changes(args, hostvars)
            elif stage == "waves":
                plan = self._waves(args, task_vars)
            elif stage == "maintenance":
                plan = self._maintenance(args, task_vars)
            elif stage == "summary":
                facts = host_values(hostvars, list((args["record"].get("hosts") or {})), SUMMARY_FACTS)
                plan = deploy_run.run_outcome(args["record"], facts, task_vars.get("ansible_play_hosts") or [],
                                              args["late"], args["node_records"] or {}, args["inventory_hint"])
                plan["refusal"] = None
            elif stage == "restart_batch":
                hosts = args["target_hosts"]
                state = host_values(hostvars, hosts, restart_batch.FACTS)
                plan = restart_batch.batch(hosts, state)
                if args["read"] is not None:
                    plan["registrations"] = restart_batch.registrations(hosts, state, args["read"])
                plan["refusal"] = None
            elif stage == "smoke":
                plan = {"smoke": smoke.node_sruns(args["files"], args["nodes"], args["config_mode"] or "files",
                                                  args["site"]), "refusal": None}
            elif stage == "health_library":
                files, digest = health_program.library()
                result.update(files=files, sha256=digest)
                plan = {"refusal": None}
            else:
                plan = mig_node.runbook_status(args["host"], args["check"], args["node"], args["read"],
                                               args["step"], args["reason"])
                plan["refusal"] = None
        except (ConfSyntaxError, ValueError) as exc:
            raise AnsibleActionFail("gres_plan %s: %s" % (stage, exc))
        result.setdefault("changed", False)
        result["plan"] = plan
        if plan.get("refusal") and not (stage == "gate" and args["defer_refusal"]):
            result.update(failed=True, msg=plan["refusal"])
        return result

    @staticmethod
    def _dict_or_none(name, value):
        """A dict, or None for null (or the "" older ansible-core makes of it)."""
        if value is None or value == "":
            return None
        if not isinstance(value, dict):
            raise AnsibleActionFail("gres_plan: %s: expected a dict or null, found %r" % (name, value))
        return value

    def _names(self, task_vars, hosts):
        names = self._render(task_vars).get("nodes") or {}
        return {h: names.get(h, h) for h in hosts}

    @staticmethod
    def _outcomes(task_vars, hosts, names):
        """Node name to the outcome its host's node cycle left (a cycle starts with a provisional failure, so a
        host that dropped out of the play half-way is a failure)."""
        facts = host_values(task_vars["hostvars"], hosts, (OUTCOME,))
        return {names[h]: (facts.get(h) or {})[OUTCOME] for h in hosts if (facts.get(h) or {}).get(OUTCOME)}

    def _waves(self, args, task_vars):
        """The next wave and the rest (plugin_utils/waves.py) from slurmctld's nodes and the hosts' outcomes."""
        hosts = args["target_hosts"]
        names = self._names(task_vars, hosts)
        outcomes = self._outcomes(task_vars, hosts, names)
        done = set(args["done"]) | {n for n, o in outcomes.items() if o.get("status") == "done"}
        failed = {n: o.get("reason") for n, o in outcomes.items() if o.get("status") == "failed"}
        plan = waves.plan_waves(args["slurm_nodes"], list(names.values()), args["cap"], args["partition_caps"],
                                args["max_failures"], done, failed, args["reason"])
        by_name = {name: host for host, name in names.items()}
        plan["names"] = names
        plan["wave_hosts"] = [by_name[n] for n in plan["wave"]]
        plan["expected_gres"] = self._expected_gres(task_vars, plan["wave_hosts"], names)
        plan["refusal"] = None
        return plan

    def _expected_gres(self, task_vars, hosts, names):
        """Host to the Gres its node must register with, from the rendered slurm.conf (the include file in
        include mode)."""
        render = self._render(task_vars)
        files = render.get("files") or {}
        text = files.get("slurm.conf") or files.get(render.get("include_file") or "") or ""
        nodes = parse_slurm_conf(text)["nodes"] if hosts else {}
        return {h: (nodes.get(names[h]) or {}).get("gres") or {} for h in hosts}

    def _maintenance(self, args, task_vars):
        phase = args["phase"]
        if phase == "lock":
            owner = deploy_run.lock_owner(maintenance.COMMAND, args["lock"])
            plan = maintenance.lock_plan(args["lock"], owner["holder_gone"], args["unfinished"], args["break_lock"])
            plan["owner"] = owner["owner"]
        elif phase == "resume":
            plan = maintenance.resume_plan(args["unfinished"], args["change"], args["resume"])
            plan["refusal"] = None
        elif phase == "reboot":
            plan = maintenance.reboot_plan(args["reboot"], args["config"], args["reboot_timeout"],
                                           args["reboot_tasks"])
            verify = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, "modules", "gres_verify.py")
            plan["verify_options"] = maintenance.module_options(verify)
        elif phase == "failure":
            plan = maintenance.failure_plan(args["reason"], args["task"], args["result"], args["node"])
            plan["refusal"] = None
        else:
            hosts = args["target_hosts"] or []
            names = self._names(task_vars, hosts)
            plan = maintenance.summary(list(names.values()), self._outcomes(task_vars, hosts, names),
                                       args["plan"] or {}, args["slurm_nodes"] or {}, args["run_id"],
                                       args["continues"])
            plan["refusal"] = None
        return plan

    @staticmethod
    def _changes(args, hostvars):
        """What the run changes per host: the files each daemon runs with against the new ones (the gate's plans)."""
        nodes, controllers = args["nodes"] or [], args["controllers"] or []
        plans = host_values(hostvars, nodes, (deploy_plan.VERIFY,))
        node_plans = {h: ((plans.get(h) or {}).get(deploy_plan.VERIFY) or {}).get("plan") or {} for h in nodes}
        # a controller's own plan (a rollback planned it again) before the gate's
        ctl_plans = dict((args["plan"] or {}).get("controller_plans") or {})
        for host, values in host_values(hostvars, controllers, ("hpc_gres_slurmctld_plan",)).items():
            if values.get("hpc_gres_slurmctld_plan"):
                ctl_plans[host] = values["hpc_gres_slurmctld_plan"]
        held = deploy_plan.held_unchanged(args["plan"] or {}, node_plans, ctl_plans)
        nodes, controllers = [h for h in nodes if h not in held], [h for h in controllers if h not in held]
        out = deploy_run.run_changes(
            {h: node_plans[h].get("running_files") or {} for h in nodes},
            {h: node_plans[h].get("new_files") or {} for h in nodes}, args["names"] or {},
            {h: (ctl_plans.get(h) or {}).get("running_files") or {} for h in controllers},
            {h: (ctl_plans.get(h) or {}).get("new_files") or {} for h in controllers})
        out["install_lines"] = deploy_run.install_lines(
            {h: node_plans[h] for h in args["nodes"] or []},
            {h: ctl_plans.get(h) or {} for h in args["controllers"] or []}, args["names"] or {})
        out["refusal"] = None
        return out
