#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: write {relative path: content} under a directory in one task, all or nothing."""

DOCUMENTATION = r"""
module: config_tree
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Write a tree of text files under one directory, all or nothing
description:
  - Writes every entry of O(files) (relative path to content) under O(dest) in one task, so thousands of files
    (a whole cluster's C(slurm.conf), C(cgroup.conf) and per-node C(gres.conf)) cost one module run.
  - Files whose bytes and mode already match are left alone; the task reports a change only when a file is
    created or its content or mode differs, so a second run is idempotent.
  - Changed files are first written to a staging directory next to O(dest), then renamed into place. When O(dest)
    does not exist, the whole tree appears in one rename. If anything fails while staging, nothing under O(dest)
    is changed. Top-level files are moved last.
  - Files under O(dest) that are not in O(files) are left untouched.
options:
  dest:
    description: Directory to write into; created (with its parents) if missing.
    type: path
    required: true
  files:
    description: Relative path to text content. Paths must not be absolute or contain C(..).
    type: dict
    required: true
  mode:
    description: Permissions of the written files.
    type: raw
    default: "0644"
  directory_mode:
    description: Permissions of directories this module creates.
    type: raw
    default: "0755"
attributes:
  check_mode:
    support: full
    description: Reports which files would change without writing anything.
  diff_mode:
    support: full
    description: Returns before and after text of every changed file.
  platform:
    platforms: posix
    support: full
    description: Any POSIX filesystem that supports rename.
"""

EXAMPLES = r"""
- name: Write the rendered Slurm configuration tree
  hpc.slurm_gres.config_tree:
    dest: /srv/slurm-config
    files:
      slurm.conf: "{{ slurm_gres_files['slurm.conf'] }}"
      gpu-a01/gres.conf: "{{ slurm_gres_files['gpu-a01/gres.conf'] }}"

- name: Write every rendered file
  hpc.slurm_gres.config_tree:
    dest: "{{ playbook_dir }}/out"
    files: "{{ slurm_gres_files }}"
"""

RETURN = r"""
dest:
  description: Absolute path of the destination directory.
  returned: always
  type: str
  sample: /srv/slurm-config
files:
  description: Number of files in O(files).
  returned: always
  type: int
  sample: 9
written:
  description: Relative paths that were (or in check mode would be) created or replaced, sorted.
  returned: always
  type: list
  elements: str
  sample: ["gpu-a01/gres.conf", "slurm.conf"]
unchanged:
  description: Number of files that already had the wanted content and mode.
  returned: always
  type: int
  sample: 7
"""

import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import TreeError, plan, write


def _octal(module, value, name):
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value, 8)
    module.fail_json(msg="%s: expected an octal mode such as '0644', found %r" % (name, value))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dest=dict(type="path", required=True),
            files=dict(type="dict", required=True),
            mode=dict(type="raw", default="0644"),
            directory_mode=dict(type="raw", default="0755"),
        ),
        supports_check_mode=True,
    )
    dest = os.path.abspath(module.params["dest"])
    files = module.params["files"]
    mode = _octal(module, module.params["mode"], "mode")
    directory_mode = _octal(module, module.params["directory_mode"], "directory_mode")
    try:
        todo = plan(dest, files, mode)
    except (TreeError, OSError) as exc:
        module.fail_json(msg="nothing was written: %s" % exc, dest=dest)
    result = dict(changed=bool(todo["changed"]), dest=dest, files=len(files), written=todo["changed"],
                  unchanged=todo["unchanged"])
    if module._diff and todo["changed"]:
        result["diff"] = [dict(before_header=os.path.join(dest, rel), after_header=os.path.join(dest, rel),
                               before=todo["before"][rel] or "", after=files[rel]) for rel in todo["changed"]]
    if todo["changed"] and not module.check_mode:
        try:
            write(dest, files, todo["changed"], mode, directory_mode)
        except OSError as exc:
            module.fail_json(msg="writing %s failed: %s" % (dest, exc), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
