"""The role argument checks the shipped playbooks trigger stay cheap on a large cluster.

ansible-core runs a role's argument check (meta/argument_specs.yml) on every host of the play when a role is
imported by an entry point the spec names (``tasks_from: begin``, or no tasks_from for ``main``; ``begin.yml``
names none), and it templates every option that has a value, the role defaults included. An option whose default
is the whole render, or all of its files, makes each host template every node's gres.conf: time per host in
proportion to the cluster, measured at about 15 ms a host at 512 nodes for the verify playbook.
"""
import functools
import glob
import os
import re

import yaml

import testpaths

ROOT = testpaths.ROOT
ROLE_ACTIONS = {"import_role", "include_role", "ansible.builtin.import_role", "ansible.builtin.include_role"}
# a default that is the render itself or its whole files mapping (an element of them is cheap)
WHOLE_RENDER = re.compile(r"(hpc_gres_render_result|\.files)\s*(\|\s*default\(\{\}\)\s*)?\}\}\s*$")


def load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


@functools.lru_cache(maxsize=None)
def role_specs(role):
    return load(os.path.join(ROOT, "roles", role, "meta", "argument_specs.yml"))["argument_specs"]


def role_imports(node):
    """Every (role, tasks_from, rolespec_validate) of an import_role/include_role under node."""
    if isinstance(node, list):
        for item in node:
            yield from role_imports(item)
    elif isinstance(node, dict):
        for key, value in node.items():
            if key in ROLE_ACTIONS and isinstance(value, dict):
                yield value["name"].split(".")[-1], value.get("tasks_from", "main"), value.get("rolespec_validate", True)
            else:
                yield from role_imports(value)


def checked_entry_points():
    """{(role, entry point): [where]} for the argument checks the shipped playbooks and roles trigger."""
    files = glob.glob(os.path.join(ROOT, "playbooks", "**", "*.yml"), recursive=True)
    files += glob.glob(os.path.join(ROOT, "roles", "*", "tasks", "*.yml"))
    found = {}
    for path in files:
        for role, entry, validate in role_imports(load(path)):
            if not os.path.isdir(os.path.join(ROOT, "roles", role)):  # a site's role (hpc_gres_maintenance_role)
                continue
            if validate and entry in role_specs(role):
                found.setdefault((role, entry), []).append(os.path.relpath(path, ROOT))
    return found


def test_the_argument_checks_are_found():
    found = checked_entry_points()
    assert ("hpc_gres_mig", "main") in found  # mig_reconfigure.yml
    # verify_gres.yml imports run.yml, which has none: the render checks the role options of every host once
    # (namespace.bad_role_value), which saved about 60 ms of the control machine's CPU per host at 512 hosts
    assert not [where for where in found.values() if "playbooks/verify_gres.yml" in where]


def test_no_checked_option_defaults_to_the_whole_render():
    problems = []
    for (role, entry), where in sorted(checked_entry_points().items()):
        spec = role_specs(role)[entry]
        defaults = load(os.path.join(ROOT, "roles", role, "defaults", "main.yml")) or {}
        for option in spec.get("options") or {}:
            value = defaults.get(option)
            if isinstance(value, str) and WHOLE_RENDER.search(value):
                problems.append("%s (entry point %s, checked from %s): %s defaults to %r"
                                % (role, entry, ", ".join(where), option, value))
    assert not problems, "give these defaults in vars/main.yml under a __ name:\n" + "\n".join(problems)


def test_the_pattern_finds_the_whole_render_and_not_an_element():
    assert WHOLE_RENDER.search("{{ hostvars['localhost'].hpc_gres_render_result | default({}) }}")
    assert WHOLE_RENDER.search("{{ hpc_gres_verify_render.files | default({}) }}")
    assert WHOLE_RENDER.search("{{ (hostvars['localhost'].hpc_gres_render_result | default({})).files | default({}) }}")
    assert not WHOLE_RENDER.search("{{ (__hpc_gres_verify_render.nodes | default({}))[inventory_hostname] }}")
    assert not WHOLE_RENDER.search("{{ (__hpc_gres_verify_render.health | default({})).timeout | default(10) }}")
