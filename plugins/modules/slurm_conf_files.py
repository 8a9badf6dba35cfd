#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: read Slurm configuration files from several directories in one call."""

DOCUMENTATION = r"""
module: slurm_conf_files
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Read Slurm configuration files (installed ones, the ones a daemon last started with) at once
description:
  - Reads each of O(names) from each directory of O(dirs) and returns their text and their ownership and
    permissions, C(null) for a file that does not exist. One call instead of one M(ansible.builtin.slurp) and
    M(ansible.builtin.stat) per file and directory.
  - The deploy roles use it to compare the installed files, the files a daemon last started with and the
    rendered ones, and to leave out the install when the installed files are the rendered ones already.
options:
  dirs:
    description: Label to directory, for example C({installed = /etc/slurm, applied = /var/lib/slurm-gres/slurmd}).
    type: dict
    required: true
  names:
    description: File names to read in every directory.
    type: list
    elements: str
    required: true
  max_size:
    description: Refuse files larger than this many bytes (Slurm configuration files are small).
    type: int
    default: 4194304
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes
attributes:
  check_mode:
    support: full
    description: Read-only.
"""

EXAMPLES = r"""
- name: Read what slurmd runs with and what is installed
  hpc.slurm_gres.slurm_conf_files:
    dirs:
      installed: /etc/slurm
      applied: /var/lib/slurm-gres/slurmd
    names: [slurm.conf, cgroup.conf, gres.conf]
  register: conf
# conf.contents.installed['gres.conf'] -> "Name=gpu Type=a100 File=/dev/nvidia[0-3]\n" or null
"""

RETURN = r"""
contents:
  description: Label to (file name to text, or C(null) when the file does not exist).
  returned: always
  type: dict
  sample: {"installed": {"slurm.conf": "ClusterName=demo\n", "gres.conf": null}}
present:
  description: Label to the number of files found there.
  returned: always
  type: dict
  sample: {"installed": 1, "applied": 0}
attributes:
  description:
    - Label to (file name to its C(mode) (octal text), C(uid), C(gid), C(owner) and C(group) (names, C(null) when
      unknown here), or C(null) when the file does not exist).
  returned: always
  type: dict
  sample: {"installed": {"slurm.conf": {"mode": "0644", "uid": 0, "gid": 0, "owner": "root", "group": "root"}}}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_text

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import file_attributes


def main():
    module = AnsibleModule(
        argument_spec=dict(
            dirs=dict(type="dict", required=True),
            names=dict(type="list", elements="str", required=True),
            max_size=dict(type="int", default=4 * 1024 * 1024),
        ),
        supports_check_mode=True,
    )
    contents = {}
    present = {}
    attributes = {}
    for label, directory in sorted(module.params["dirs"].items()):
        contents[label] = {}
        present[label] = 0
        attributes[label] = {}
        for name in module.params["names"]:
            if "/" in name or name in (".", ".."):
                module.fail_json(msg="names: %r is not a plain file name" % name)
            path = os.path.join(str(directory), name)
            try:
                st = os.stat(path)
                if st.st_size > module.params["max_size"]:
                    module.fail_json(msg="%s is larger than %d bytes" % (path, module.params["max_size"]))
                with open(path, "rb") as handle:
                    contents[label][name] = to_text(handle.read(), errors="surrogate_or_strict")
                attributes[label][name] = file_attributes(st)
                present[label] += 1
            except FileNotFoundError:
                contents[label][name] = None
                attributes[label][name] = None
            except (OSError, UnicodeError) as exc:
                module.fail_json(msg="cannot read %s: %s" % (path, exc))
    module.exit_json(changed=False, contents=contents, present=present, attributes=attributes)


if __name__ == "__main__":
    main()
