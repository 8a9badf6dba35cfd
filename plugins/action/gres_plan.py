# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action: the cross-host decisions of the deploy, the rollback and the MIG runbook (documentation:
plugins/modules/gres_plan.py)."""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import deploy_plan, deploy_run, health_program, mig_node
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.awx_slicing import slice_problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import host_values

STAGES = ("gate", "restarted", "confirmed", "controller", "owner", "changes", "summary", "mig_status",
          "health_library")
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
    # stage owner
    command=dict(type="str", default="deploy"),
    lock=dict(type="dict"),
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
    node=dict(type="dict"),
    step=dict(type="dict"),
    reason=dict(type="str"),
)
REQUIRED_IF = [("stage", "restarted", ("plan",)), ("stage", "confirmed", ("plan",)),
               ("stage", "controller", ("files", "read")), ("stage", "summary", ("record",)),
               ("stage", "mig_status", ("host", "check", "step", "reason", "read"))]
RENDER = "hpc_gres_render_result"
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
        stage = args["stage"]
        hostvars = task_vars["hostvars"]
        plan = args["plan"] or {}
        try:
            if stage == "gate":
                hosts = task_vars.get("ansible_play_hosts_all") or []
                state = host_values(hostvars, hosts, deploy_plan.STAGE_FACTS["gate"])
                plan = deploy_plan.gate(hosts, task_vars["groups"], self._render(task_vars), state,
                                        check_mode=bool(self._task.check_mode), serial=args["serial"])
                report = plan.pop("report", None)
                if report is not None:
                    # the diffs go to Ansible's diff display (--diff) only; a callback shows a diff only for a
                    # changed result, and in check mode changed means "would change"
                    diffs = report.pop("diffs")
                    result.update(changed=bool(diffs), report=report, report_lines=report.pop("lines"),
                                  diff=[{"prepared": text} for text in diffs])
            elif stage == "restarted":
                state = host_values(hostvars, plan.get("targets", []), deploy_plan.STAGE_FACTS["restarted"])
                plan = deploy_plan.restarted(plan, state)
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
                plan["refusal"] = None
            elif stage == "owner":
                plan = deploy_run.lock_owner(args["command"], args["lock"])
                plan["refusal"] = None
            elif stage == "changes":
                plan = self._changes(args, hostvars)
            elif stage == "summary":
                facts = host_values(hostvars, list((args["record"].get("hosts") or {})), SUMMARY_FACTS)
                plan = deploy_run.run_outcome(args["record"], facts, task_vars.get("ansible_play_hosts") or [],
                                              args["late"], args["node_records"] or {}, args["inventory_hint"])
                plan["refusal"] = None
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
        if plan.get("refusal"):
            result.update(failed=True, msg=plan["refusal"])
        return result

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
        out = deploy_run.run_changes(
            {h: node_plans[h].get("running_files") or {} for h in nodes},
            {h: node_plans[h].get("new_files") or {} for h in nodes}, args["names"] or {},
            {h: (ctl_plans.get(h) or {}).get("running_files") or {} for h in controllers},
            {h: (ctl_plans.get(h) or {}).get("new_files") or {} for h in controllers})
        out["refusal"] = None
        return out
