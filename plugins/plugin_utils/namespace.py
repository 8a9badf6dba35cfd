# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The collection's one variable namespace: every variable it reads or sets starts with ``NAMESPACE``.

Other roles' variables (``slurm_*``, ``openhpc_*``, ...) are never read and never refused. Inside the namespace
every name is known: the inventory schema (``model_schema``), the roles' options (their ``meta/argument_specs.yml``,
read here so that the two cannot drift), the playbooks' extra variables and the facts the plays set. A name in the
namespace that is none of these is a typo and is refused, with the closest known name as a hint. A role option set in
the inventory or with ``-e`` must also have a value its role's argument spec accepts (``bad_role_value``). The only
variables read outside the namespace are three of AWX's own job variables, to refuse a sliced AWX job
(``awx_slicing.JOB_VARS``).
"""
import difflib
import functools
import os
import re

import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.values import describe
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import CLUSTER_VARS, HOST_VARS, NAMESPACE

# Extra variables of the playbooks (-e, or the inventory), each documented in the playbook that reads it.
PLAYBOOK_VARS = (
    "hpc_gres_break_lock",
    "hpc_gres_deploy_allow_state_change",
    "hpc_gres_deploy_max_fail_percentage",
    "hpc_gres_deploy_serial",
    "hpc_gres_deploy_smoke_test",
    "hpc_gres_discover_dir",
    "hpc_gres_discover_hosts",
    "hpc_gres_discover_memory",
    "hpc_gres_discover_nvidia_smi",
    "hpc_gres_discover_sysfs_root",
    "hpc_gres_discover_topology_source",
    "hpc_gres_discover_type_patterns",
    "hpc_gres_import_config_dir",
    "hpc_gres_import_dest",
    "hpc_gres_import_drop_invalid_cores",
    "hpc_gres_import_live",
    "hpc_gres_import_mig_model",
    "hpc_gres_import_slurm_version",
    "hpc_gres_import_src",
    "hpc_gres_rollback",
    "hpc_gres_status_hosts",
    "hpc_gres_status_min_free_mib",
    "hpc_gres_status_nvidia_smi",
    "hpc_gres_status_scontrol",
    "hpc_gres_status_slurm",
    "hpc_gres_status_sysfs_root",
)

# Facts and registered results the plays and modules set on hosts (a later render in the same run sees them).
STATE_VARS = (
    "hpc_gres_deploy",
    "hpc_gres_deploy_hosts",
    "hpc_gres_discover_existing",
    "hpc_gres_discover_proposal",
    "hpc_gres_hw",
    "hpc_gres_import_controller",
    "hpc_gres_import_gres",
    "hpc_gres_import_result",
    "hpc_gres_maintenance_outcome",
    "hpc_gres_maintenance_run",
    "hpc_gres_maintenance_summary",
    "hpc_gres_maintenance_wave",
    "hpc_gres_mig_applied",
    "hpc_gres_mig_drain",
    "hpc_gres_mig_live",
    "hpc_gres_mig_planned_only",
    "hpc_gres_mig_status",
    "hpc_gres_render_result",
    "hpc_gres_run_changes",
    "hpc_gres_run_failure",
    "hpc_gres_run_lock",
    "hpc_gres_run_owner",
    "hpc_gres_run_recorded",
    "hpc_gres_run_rolled_back",
    "hpc_gres_run_runbook",
    "hpc_gres_run_undo",
    "hpc_gres_run_undo_controller",
    "hpc_gres_run_undo_id",
    "hpc_gres_run_undo_late",
    "hpc_gres_run_undo_node",
    "hpc_gres_run_undo_skipped",
    "hpc_gres_run_undo_wanted",
    "hpc_gres_slurmctld_install_result",
    "hpc_gres_slurmctld_read",
    "hpc_gres_slurmctld_versions",
    "hpc_gres_slurmd_confirmed",
    "hpc_gres_slurmd_done",
    "hpc_gres_slurmd_install_result",
    "hpc_gres_slurmd_registered",
    "hpc_gres_slurmd_registration",
    "hpc_gres_slurmd_restarted",
    "hpc_gres_status_report",
    "hpc_gres_verify_failed",
    "hpc_gres_verify_result",
)

_ROLES_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir, "roles")


# What ansible-core's argument check of a role reads from an option's spec (the rest documents it).
_CHECKED_KEYS = ("type", "elements", "choices", "options")


@functools.lru_cache(maxsize=1)
def role_option_specs():
    """{option: (role, spec)} for every option of every entry point of the collection's roles (their
    meta/argument_specs.yml; an option has one spec in every entry point that takes it, a unit test checks)."""
    specs = {}
    try:
        roles = sorted(os.listdir(_ROLES_DIR))
    except OSError:
        return specs
    for role in roles:
        path = os.path.join(_ROLES_DIR, role, "meta", "argument_specs.yml")
        if not os.path.isfile(path):
            continue
        with open(path, encoding="utf-8") as handle:
            entries = (yaml.safe_load(handle) or {}).get("argument_specs") or {}
        for entry in entries.values():
            for name, spec in ((entry or {}).get("options") or {}).items():
                specs.setdefault(name, (role, {k: v for k, v in (spec or {}).items() if k in _CHECKED_KEYS}))
    return specs


def role_options():
    """Every option of every entry point of the collection's roles."""
    return frozenset(role_option_specs())


def bad_role_value(name, value):
    """(expected, found, hint) for a role option set to a value its role's argument check refuses, else None.

    The playbooks import the roles' task files by name (``tasks_from: NAME.yml``), for which ansible-core runs no
    argument check: a check per host is a process per host on the control machine. The render reads every host's
    variables once anyway, and checks the role options it finds there with the same validator instead."""
    known = role_option_specs().get(name)
    if known is None:
        return None
    role, spec = known
    errors = ArgumentSpecValidator({name: spec}).validate({name: value}).error_messages
    if not errors:
        return None
    wanted = "a %s" % spec.get("type", "str")
    if spec.get("elements"):
        wanted += " of %s" % spec["elements"]
    if spec.get("choices"):
        wanted = "one of %s" % ", ".join(str(c) for c in spec["choices"])
        why = "not one of them"
    elif wanted == "a bool":
        why = "not a boolean (true/false, yes/no, on/off, 1/0)"  # Ansible lists them in a set's random order
    else:
        # "argument 'NAME' is of type str and we were unable to convert to int: WHY" -> WHY
        why = "; ".join(e.split(": ", 1)[1] if "unable to convert" in e and ": " in e else e for e in errors)
        why = re.sub(r"<class '(\w+)'>", r"a \1", why)
    return ("%s, as role %s declares it (roles/%s/meta/argument_specs.yml)" % (wanted, role, role),
            "%s: %s" % (describe(value), why), None)


@functools.lru_cache(maxsize=1)
def settings():
    """The names an admin sets: the inventory schema, the roles' options and the playbooks' extra variables."""
    return frozenset(HOST_VARS) | frozenset(CLUSTER_VARS) | role_options() | frozenset(PLAYBOOK_VARS)


@functools.lru_cache(maxsize=1)
def known():
    return settings() | frozenset(STATE_VARS)


def ours(name):
    return isinstance(name, str) and name.startswith(NAMESPACE)


def unknown(name):
    """(expected, found, hint) for a name in the namespace that the collection does not know, else None."""
    if not ours(name) or name in known():
        return None
    close = difflib.get_close_matches(name, sorted(settings()), n=1)
    return ("a variable of hpc.slurm_gres (docs/inventory.md, the roles' argument specs and the playbooks list "
            "every %s* name)" % NAMESPACE, "unknown variable %s" % name,
            "did you mean %s?" % close[0] if close else None)
