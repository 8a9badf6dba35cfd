#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: write {relative path: content} under a directory in one task, all or nothing; or read named files."""

DOCUMENTATION = r"""
module: config_tree
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Write a tree of text files under one directory all or nothing, or read files from directories
description:
  - Writes every entry of O(files) (relative path to content) under O(dest) in one task, so thousands of files
    (a whole cluster's C(slurm.conf), C(cgroup.conf) and per-node C(gres.conf)) cost one module run.
  - Files whose bytes, mode and (with O(owner), O(group)) ownership already match are left alone; the task reports
    a change only when a file is created or differs, so a second run is idempotent.
  - Changed files are first written to a staging directory next to O(dest), then renamed into place. When O(dest)
    does not exist, the whole tree appears in one rename. If anything fails while staging, nothing under O(dest)
    is changed. Top-level files are moved last.
  - Files under O(dest) that are not in O(files) are left untouched, except those named in O(absent).
  - With O(state=read) it writes nothing and returns the text, ownership and permissions of each of O(names) in
    each directory of O(dirs), in one module run (the deploy compares the installed files, the files a daemon last
    started with and the rendered ones this way).
options:
  state:
    description: V(present) writes O(files) under O(dest); V(read) reads O(names) from O(dirs).
    type: str
    choices: [present, read]
    default: present
  dest:
    description: Directory to write into; created (with its parents) if missing. Required with O(state=present).
    type: path
  files:
    description: Relative path to text content. Paths must not be absolute or contain C(..).
    type: dict
    default: {}
  absent:
    description:
      - Relative paths to remove under O(dest) when they exist (a file the writer no longer owns). Not also in
        O(files).
    type: list
    elements: str
    default: []
  dirs:
    description: With O(state=read), label to directory, for example C({installed = /etc/slurm, applied = /var/lib/x}).
    type: dict
    default: {}
  names:
    description: With O(state=read), the plain file names to read in every directory of O(dirs).
    type: list
    elements: str
    default: []
  max_size:
    description: With O(state=read), refuse files larger than this many bytes.
    type: int
    default: 4194304
  mode:
    description: Permissions of the written files.
    type: raw
    default: "0644"
  directory_mode:
    description: Permissions of directories this module creates.
    type: raw
    default: "0755"
  owner:
    description: Owner (name or uid) of the written files; a file with another owner counts as changed.
    type: str
  group:
    description: Group (name or gid) of the written files; a file with another group counts as changed.
    type: str
  backup:
    description:
      - Keep each replaced file next to it as C(FILE.<pid>.<date>@<time>~), as C(ansible.builtin.copy) does.
    type: bool
    default: false
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
      slurm.conf: "{{ hpc_gres_render_result.files['slurm.conf'] }}"
      gpu-a01/gres.conf: "{{ hpc_gres_render_result.files['gpu-a01/gres.conf'] }}"

- name: Write every rendered file
  hpc.slurm_gres.config_tree:
    dest: "{{ playbook_dir }}/out"
    files: "{{ hpc_gres_render_result.files }}"

- name: Install a node's files, keeping a backup of each replaced one
  hpc.slurm_gres.config_tree:
    dest: /etc/slurm
    files: {slurm.conf: "{{ slurm_conf }}", gres.conf: "{{ gres_conf }}"}
    owner: root
    group: root
    mode: "0644"
    backup: true

- name: Read what slurmd runs with and what is installed
  hpc.slurm_gres.config_tree:
    state: read
    dirs:
      installed: /etc/slurm
      applied: /var/lib/slurm-gres/slurmd
    names: [slurm.conf, cgroup.conf, gres.conf]
  register: conf
# conf.contents.installed['gres.conf'] -> "Name=gpu Type=a100 File=/dev/nvidia[0-3]\n" or null
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
backups:
  description: Relative path of each replaced file to its backup, with O(backup).
  returned: with O(state=present)
  type: dict
  sample: {"slurm.conf": "/etc/slurm/slurm.conf.4711.2026-12-01@10:00:00~"}
removed:
  description: Relative paths of O(absent) that existed and were (or in check mode would be) removed.
  returned: with O(state=present)
  type: list
  elements: str
  sample: ["gpu-old01/gres.conf"]
contents:
  description: With O(state=read), label to (file name to text, or C(null) when the file does not exist).
  returned: with O(state=read)
  type: dict
  sample: {"installed": {"slurm.conf": "ClusterName=demo\n", "gres.conf": null}}
present:
  description: With O(state=read), label to the number of files found there.
  returned: with O(state=read)
  type: dict
  sample: {"installed": 1, "applied": 0}
attributes:
  description:
    - With O(state=read), label to (file name to its C(mode) (octal text), C(uid), C(gid), C(owner) and C(group)
      (names, C(null) when unknown here), or C(null) when the file does not exist).
  returned: with O(state=read)
  type: dict
  sample: {"installed": {"slurm.conf": {"mode": "0644", "uid": 0, "gid": 0, "owner": "root", "group": "root"}}}
"""

import os

from ansible.module_utils.basic import AnsibleModule

# first: the payload's other files are then compiled once, not twice (common/payload_import.py)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import payload_import  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import TreeError, apply_tree, read_tree


def main():
    module = AnsibleModule(
        argument_spec=dict(
            state=dict(type="str", choices=["present", "read"], default="present"),
            dest=dict(type="path"),
            files=dict(type="dict", default={}),
            absent=dict(type="list", elements="str", default=[]),
            mode=dict(type="raw", default="0644"),
            directory_mode=dict(type="raw", default="0755"),
            owner=dict(type="str"),
            group=dict(type="str"),
            backup=dict(type="bool", default=False),
            dirs=dict(type="dict", default={}),
            names=dict(type="list", elements="str", default=[]),
            max_size=dict(type="int", default=4 * 1024 * 1024),
        ),
        required_if=[("state", "present", ("dest",))],
        supports_check_mode=True,
    )
    p = module.params
    if p["state"] == "read":
        try:
            module.exit_json(changed=False, **read_tree(p["dirs"], p["names"], p["max_size"]))
        except TreeError as exc:
            module.fail_json(msg=str(exc))
    dest = os.path.abspath(p["dest"])
    try:
        result = apply_tree(dest, p["files"], p["mode"], p["directory_mode"], check_mode=module.check_mode,
                            diff=module._diff, owner=p["owner"], group=p["group"], backup=p["backup"],
                            absent=p["absent"])
    except TreeError as exc:
        module.fail_json(msg="nothing was written: %s" % exc, dest=dest)
    except OSError as exc:
        module.fail_json(msg="writing %s failed: %s" % (dest, exc), dest=dest)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
