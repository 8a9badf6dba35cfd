# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action: what a check run of the deploy would do (documentation: plugins/modules/gres_check_report.py)."""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import check_report
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import host_values

ARGUMENT_SPEC = dict(
    plan=dict(type="dict", required=True),
    files=dict(type="dict"),
    serial=dict(type="raw"),
)
NODE_FACTS = ("hpc_gres_slurmd_check_installed", "hpc_gres_slurmd_verified", "hpc_gres_verify_rendered",
              "hpc_gres_slurmd_new_files", "hpc_gres_slurmd_plan")
CONTROLLER_FACTS = ("hpc_gres_slurmctld_check_installed", "hpc_gres_slurmctld_plan")


def _entries(plan, files, state):
    entries = []
    for host in plan.get("targets", []):
        facts = state.get(host, {})
        read = facts.get("hpc_gres_slurmd_check_installed")
        name = plan.get("names", {}).get(host, host)
        verify = facts.get("hpc_gres_verify_rendered") or {}
        new = facts.get("hpc_gres_slurmd_new_files") or check_report.node_new_files(
            files, name, verify.get("gres_conf_text"))
        entries.append({
            "host": host, "name": name, "role": "slurmd", "verified": bool(facts.get("hpc_gres_slurmd_verified")),
            "findings": verify.get("findings"), "plan": facts.get("hpc_gres_slurmd_plan"),
            # a node whose installed files were not read (unreachable) shows no diff
            "config_dir": (read or {}).get("dir"), "installed": (read or {}).get("files"), "new": new if read else {},
            "restart_enabled": (read or {}).get("restart", True)})
    for host in plan.get("controllers", []):
        facts = state.get(host, {})
        read = facts.get("hpc_gres_slurmctld_check_installed")
        entries.append({
            "host": host, "name": host, "role": "slurmctld", "plan": facts.get("hpc_gres_slurmctld_plan"),
            "config_dir": (read or {}).get("dir"), "installed": (read or {}).get("files"),
            "new": {name: files.get(name) for name in check_report.CONTROLLER_FILES} if read else {},
            "restart_enabled": (read or {}).get("restart", True)})
    return entries


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        plan = args["plan"]
        files = args["files"]
        if files is None:
            render = host_values(task_vars["hostvars"], ["localhost"], ["hpc_gres_render_result"])
            files = (render["localhost"].get("hpc_gres_render_result") or {}).get("files")
        if not isinstance(files, dict):
            raise AnsibleActionFail("gres_check_report: files: expected the rendered files (the render's result on "
                                    "localhost, or this option), found none")
        state = host_values(task_vars["hostvars"], plan.get("targets", []), NODE_FACTS)
        state.update({h: dict(state.get(h, {}), **v) for h, v in host_values(
            task_vars["hostvars"], plan.get("controllers", []), CONTROLLER_FACTS).items()})
        serial = args["serial"]
        report = check_report.check_report(_entries(plan, files, state), plan.get("check_refusal"),
                                           None if serial is None else str(serial))
        # the diffs go to Ansible's diff display (--diff) only, not into the result a callback would print again;
        # callbacks show a diff only for a changed result: changed means "would change", as for any task in check mode
        diffs = report.pop("diffs")
        result.update(changed=bool(diffs), msg=report.pop("lines"), report=report,
                      diff=[{"prepared": text} for text in diffs])
        return result
