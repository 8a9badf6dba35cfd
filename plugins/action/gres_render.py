# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action: render the whole cluster once on the controller (documentation: plugins/modules/gres_render.py)."""
from __future__ import annotations

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import TreeError, apply_owned_tree
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.awx_slicing import slice_problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import host_values
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.cluster_render import (
    MIG_LIVE_FACT,
    cluster_vars,
    render_cluster,
    tree_lines,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import report_lines
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.var_origin import VarOrigins, group_ancestors, plain

ARGUMENT_SPEC = dict(
    dest=dict(type="path"),
    mode=dict(type="raw", default="0644"),
    directory_mode=dict(type="raw", default="0755"),
    return_files=dict(type="bool"),
    mig_step=dict(type="str"),
    cluster_host=dict(type="str"),
)


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        validation, args = self.validate_argument_spec(argument_spec=ARGUMENT_SPEC)
        sliced = slice_problem(task_vars)
        if sliced:
            result.update(failed=True, msg=str(sliced))
            return result
        hostvars = task_vars["hostvars"]
        groups = task_vars["groups"]
        cluster_host = args["cluster_host"] or task_vars.get("inventory_hostname", "localhost")
        # the cluster-wide variables are those of cluster_host (localhost in the playbooks, also when a play on
        # the nodes renders because a --limit skipped the render play)
        source = task_vars
        if cluster_host != task_vars.get("inventory_hostname"):
            source = hostvars[cluster_host]
        live = None
        if args["mig_step"]:
            # the layouts the GPUs of the other slurmd hosts have now, as the runbook read them
            found = host_values(hostvars, groups.get("slurmd") or [], (MIG_LIVE_FACT,))
            live = {host: values[MIG_LIVE_FACT] for host, values in found.items() if values}
        values, cluster = {}, {}

        def value_of(host, name):
            if host == cluster_host and name in cluster:
                return plain(cluster[name])
            return (values.get(host) or {}).get(name, VarOrigins.MISSING)
        origins = VarOrigins(value_of, groups, task_vars.get("ansible_inventory_sources"),
                             task_vars.get("playbook_dir"), ancestors=group_ancestors(hostvars))
        try:
            cluster.update(cluster_vars(source, self._templar.template, cluster_host))
            out = render_cluster(hostvars, groups, cluster, cluster_host, mig_step=args["mig_step"], live=live,
                                 into=values, where=origins.where, conflicts=origins.sibling_conflicts)
        except GresError as exc:
            # Each problem once, with its hosts and file. msg stays one short line: ansible-core 2.19+ prints it
            # twice (the error line and the result); the list is printed once, in the result. The newline that
            # ends each problem makes the YAML callback print it as a block, unwrapped and unquoted.
            problems = report_lines(exc.problems, origins.where)
            result.update(failed=True, problems=[p + "\n" for p in problems], _ansible_verbose_always=True,
                          msg="inventory refused (%d problem%s, listed below), nothing was written"
                              % (len(problems), "" if len(problems) == 1 else "s"))
            return result
        except TypeError as exc:
            raise AnsibleActionFail(str(exc))

        result["summary"] = out["summary"]
        result["config_mode"], result["include_file"] = out["config_mode"], out["include_file"]
        result["changed"] = False
        if args["dest"]:
            try:
                written = apply_owned_tree(args["dest"], out["files"], args["mode"], args["directory_mode"],
                                           check_mode=self._task.check_mode, diff=self._task.diff)
            except TreeError as exc:
                raise AnsibleActionFail("nothing was written: %s" % exc)
            except OSError as exc:
                raise AnsibleActionFail("writing %s failed: %s" % (args["dest"], exc))
            result["changed"] = written.pop("changed")
            result.update(written)
            result["summary"]["lines"].extend(tree_lines(written, self._task.check_mode))
        return_files = args["return_files"]
        if return_files is None:
            return_files = not args["dest"]
        if return_files:
            result.update(files=out["files"], nodes=out["nodes"], mig_nodes=out["mig_nodes"], health=out["health"],
                          boot=out["boot"])
        return result
