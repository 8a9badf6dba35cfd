# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action: the deploy's cross-host decisions, once (documentation: plugins/modules/gres_deploy_plan.py)."""
from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import deploy_plan
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import host_values

ARGUMENT_SPEC = dict(
    stage=dict(type="str", required=True, choices=list(deploy_plan.STAGE_FACTS)),
    plan=dict(type="dict"),
    hosts=dict(type="list", elements="str"),
    names=dict(type="dict", default={}),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC,
                                                       required_if=[("stage", "order", ("plan",)),
                                                                    ("stage", "restarted", ("plan",)),
                                                                    ("stage", "confirmed", ("plan",))])
        stage = args["stage"]
        hosts = args["hosts"] if args["hosts"] is not None else task_vars.get("ansible_play_hosts_all") or []
        plan = args["plan"] or {}
        wanted = deploy_plan.STAGE_FACTS[stage]
        involved = hosts if stage == "gate" else list(plan.get("targets", [])) + list(plan.get("controllers", []))
        state = host_values(task_vars["hostvars"], involved, wanted)
        if stage == "gate":
            plan = deploy_plan.gate(hosts, task_vars["groups"], args["names"], state,
                                    check_mode=bool(self._task.check_mode))
        else:
            plan = getattr(deploy_plan, stage)(plan, state)
        result.update(changed=False, plan=plan)
        if plan["refusal"]:
            result.update(failed=True, msg=plan["refusal"])
        return result
