# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Action: import a site's Slurm files into an inventory directory (logic in plugin_utils/import_*.py)."""
from __future__ import annotations

from ansible.plugins.action import ActionBase

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_proof import run_import
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_source import (
    SourceError,
    read_source_dir,
    source_from_texts,
    write_new_files,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import ImportRefused

ARGS = {
    "src": {"type": "path"},
    "sources": {"type": "dict"},
    "hosts": {"type": "dict", "default": {}},
    "dest": {"type": "path", "required": True},
    "header": {"type": "list", "elements": "str", "default": []},
    "slurm_version": {"type": "str"},
}


class ActionModule(ActionBase):
    TRANSFERS_FILES = False
    _requires_connection = False

    def run(self, tmp=None, task_vars=None):
        result = super(ActionModule, self).run(tmp, task_vars)
        _unused, args = self.validate_argument_spec(argument_spec=ARGS, mutually_exclusive=[("src", "sources")],
                                                    required_one_of=[("src", "sources")])
        try:
            source = read_source_dir(args["src"]) if args["src"] else source_from_texts(args["sources"])
            done = run_import(source, args["header"], hosts=args["hosts"], slurm_version=args["slurm_version"])
        except SourceError as exc:
            result.update(failed=True, msg="import refused, nothing written: %s" % exc, refusals=[str(exc)])
            return result
        except ImportRefused as exc:
            result.update(failed=True, msg=str(exc), refusals=[str(r) for r in exc.refusals])
            return result
        try:
            written = write_new_files(args["dest"], done["files"], check=self._task.check_mode)
        except SourceError as exc:
            result.update(failed=True, msg=str(exc), refusals=[str(exc)])
            return result
        result.update(changed=bool(written), written=written, groups=done["groups"], report=done["report"],
                      files=done["files"])
        return result
