# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action: import a site's Slurm files into an inventory directory (documentation: plugins/modules/gres_import.py;
logic in plugin_utils/import_*.py)."""
from __future__ import annotations

import os
import posixpath

from ansible.errors import AnsibleActionFail
from ansible.plugins.action import ActionBase

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import short_name
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import release_of
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.awx_slicing import slice_problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_proof import run_import
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_source import (
    SourceError,
    combine_slurm_conf,
    include_targets,
    read_source_dir,
    source_from_texts,
    write_new_files,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import REPAIRS, ImportRefused
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import host_values

ARGS = {
    "src": {"type": "path"},
    "sources": {"type": "dict"},
    "live": {"type": "bool", "default": False},
    "read_config": {"type": "path"},
    "slurmctld": {"type": "str", "default": "slurmctld"},
    "hosts": {"type": "dict", "default": {}},
    "dest": {"type": "path"},
    "header": {"type": "list", "elements": "str", "default": []},
    "slurm_version": {"type": "str"},
    "scontrol": {"type": "str", "default": "scontrol"},
    "drop_invalid_cores": {"type": "bool", "default": False},
    "mig_model": {"type": "str"},
}
# What the live import's plays register: the controller's files (this action with read_config), each node's gres.conf
# (hpc.slurm_gres.config_tree, state read, label "config").
CONTROLLER_READ = "hpc_gres_import_controller"
NODE_READ = "hpc_gres_import_gres"
INCLUDE_DEPTH = 8


class ActionModule(ActionBase):
    TRANSFERS_FILES = False

    def _read(self, directory, names, task_vars):
        """{name: text or None} of ``names`` in ``directory`` on the task's host (one config_tree run)."""
        out = self._execute_module(module_name="hpc.slurm_gres.config_tree", task_vars=task_vars,
                                   module_args={"state": "read", "dirs": {"config": directory}, "names": names})
        if out.get("failed"):
            raise AnsibleActionFail("reading %s on the controller failed: %s" % (directory, out.get("msg")))
        return out["contents"]["config"]

    def _read_controller(self, directory, slurmctld, scontrol, task_vars):
        """slurm.conf, every file it includes (at any depth), cgroup.conf and a cluster-wide gres.conf, and the
        release ``slurmctld -V`` reports, read on the controller this task runs on."""
        found = self._read(directory, ["slurm.conf", "cgroup.conf", "gres.conf"], task_vars)
        if found["slurm.conf"] is None:
            raise AnsibleActionFail("no slurm.conf in %s on the controller (hpc_gres_import_config_dir)" % directory)
        includes, todo = {}, [(found["slurm.conf"], 0)]
        while todo:
            text, depth = todo.pop()
            for target in include_targets(text):
                if target in includes or depth >= INCLUDE_DEPTH:
                    continue
                path = target if posixpath.isabs(target) else posixpath.join(directory, target)
                body = self._read(posixpath.dirname(path), [posixpath.basename(path)], task_vars)[
                    posixpath.basename(path)]
                if body is None:
                    raise AnsibleActionFail("slurm.conf includes %s, which does not exist on the controller" % path)
                includes[target] = body
                todo.append((body, depth + 1))
        release, answers = None, []
        for argv in ([slurmctld, "-V"], [scontrol, "--version"]):  # scontrol where slurmctld is not on the PATH
            version = self._execute_module(module_name="ansible.builtin.command", task_vars=task_vars,
                                           module_args={"argv": argv})
            text = (version.get("stdout") or version.get("stderr") or version.get("msg") or "").strip()
            answers.append("%s: %s" % (" ".join(argv), text or "rc %s" % version.get("rc")))
            if version.get("rc") == 0:
                try:
                    release = release_of(version.get("stdout") or "")
                    break
                except ValueError:
                    release = None
        return {"slurm_conf": found["slurm.conf"], "includes": includes, "cgroup_conf": found["cgroup.conf"],
                "gres_conf": found["gres.conf"], "slurm_version": release,
                "slurmctld_version": answers[-1] if release else "; ".join(answers)}

    @staticmethod
    def _live_sources(task_vars):
        """The import's sources and host map from what the live plays registered on the controller and the nodes."""
        groups, hostvars = task_vars["groups"], task_vars["hostvars"]
        controllers, nodes = list(groups.get("slurmctld") or []), list(groups.get("slurmd") or [])
        if not controllers:
            raise AnsibleActionFail("live import: expected a host in group slurmctld, found none")
        read = host_values(hostvars, controllers[:1], (CONTROLLER_READ,))[controllers[0]].get(CONTROLLER_READ) or {}
        texts = dict(read.get("sources") or {})
        if "slurm_conf" not in texts:
            raise AnsibleActionFail("live import: expected the files read on %s, found none (did it fail?)"
                                    % controllers[0])
        combined, _unused = combine_slurm_conf(texts["slurm_conf"], texts.get("includes") or {})
        words = parse_slurm_conf(combined)["options"].get("slurmctldparameters", "")
        configless = "enable_configless" in [w.strip().lower() for w in words.split(",")]
        values = host_values(hostvars, controllers + nodes, ("hpc_gres_node_name", NODE_READ))
        names = {host: str(values[host].get("hpc_gres_node_name") or short_name(host)) for host in controllers + nodes}
        if configless:
            texts["node_gres"] = {}
        else:
            texts["gres_conf"] = None
            texts["node_gres"] = {names[h]: ((values[h].get(NODE_READ) or {}).get("contents") or {}).get(
                "config", {}).get("gres.conf") for h in nodes}
        sources = read.get("sources") or {}
        if sources.get("slurm_version"):
            note = "reported by %s on %s" % (sources.get("slurmctld_version") or "slurmctld -V", controllers[0])
        else:
            note = "%s on %s gave no release" % (sources.get("slurmctld_version") or "slurmctld -V", controllers[0])
        return texts, {names[h]: h for h in nodes + controllers}, sources.get("slurm_version"), note

    def run(self, tmp=None, task_vars=None):
        task_vars = task_vars or {}
        result = super(ActionModule, self).run(tmp, task_vars)
        _unused, args = self.validate_argument_spec(argument_spec=ARGS,
                                                    mutually_exclusive=[("src", "sources", "read_config")])
        given = [k for k in ("src", "sources", "read_config") if args[k] is not None] + (["live"] if args["live"] else [])
        if len(given) != 1:
            raise AnsibleActionFail("expected one of src, sources, live and read_config, found %s"
                                    % (", ".join(given) or "none"))
        sliced = slice_problem(task_vars) if args["live"] else None
        if sliced:  # a live import reads every node of the inventory
            result.update(failed=True, msg=str(sliced))
            return result
        if args["read_config"]:
            result.update(changed=False, sources=self._read_controller(args["read_config"], args["slurmctld"],
                                                                       args["scontrol"], task_vars))
            return result
        if not args["dest"]:
            raise AnsibleActionFail("dest: expected the inventory directory to write, found none")
        release, hosts, note = args["slurm_version"], args["hosts"], None
        repairs = {key: args[key] for key in REPAIRS if args[key]}
        try:
            if args["live"]:
                texts, hosts, found_release, found_note = self._live_sources(task_vars)
                if release is None:
                    release, note = found_release, found_note
                source = source_from_texts(texts)
            elif args["src"]:
                source = read_source_dir(args["src"])
            else:
                source = source_from_texts(args["sources"])
            done = run_import(source, args["header"], hosts=hosts, slurm_version=release, repairs=repairs,
                              version_note=note)
        except SourceError as exc:
            result.update(failed=True, msg="import refused, nothing written: %s" % exc, refusals=[str(exc)])
            return result
        except ImportRefused as exc:
            result.update(failed=True, msg=str(exc), refusals=exc.lines(), notes=exc.notes)
            return result
        try:
            written = write_new_files(os.path.abspath(args["dest"]), done["files"], check=self._task.check_mode)
        except SourceError as exc:
            result.update(failed=True, msg=str(exc), refusals=[str(exc)])
            return result
        result.update(changed=bool(written), written=written, groups=done["groups"], report=done["report"],
                      changes=done["changes"], files=done["files"], slurm_version=done["slurm_version"])
        return result
