# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Read the schema variables of many hosts from Ansible's hostvars quickly (controller side only).

``hostvars[host][key]`` templates every value on access, which for 4,096 hosts with 8 GPU entries each costs
seconds. Hosts of one group share their group_vars objects, and almost every value is plain data without a
Jinja expression. So each distinct value object is checked once: without template syntax it is converted to
plain Python data and reused for every host that shares it; anything else (a template, a vaulted value) goes
through Ansible's own per-host templating as usual.
"""
from __future__ import annotations

from collections.abc import Mapping

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import namespace
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.values import describe
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_problems import plain
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import (
    CLUSTER_VARS, CTLD_GROUP, MAX_PROBLEMS, SLURMD_GROUP)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import message_key

_TEMPLATE_MARKERS = ("{{", "{%", "{#")


def _static_plain(value):
    """(plain copy, True) when ``value`` holds no template syntax, else (None, False)."""
    if value is None:
        return None, True
    if isinstance(value, str):
        if type(value).__name__ == "EncryptedString" or any(m in value for m in _TEMPLATE_MARKERS):
            return None, False
        return str(value), True
    if isinstance(value, bool):
        return bool(value), True
    if isinstance(value, int):
        return int(value), True
    if isinstance(value, float):
        return float(value), True
    if isinstance(value, Mapping):
        out = {}
        for key, item in value.items():
            plain, ok = _static_plain(item)
            if not ok:
                return None, False
            out[str(key) if isinstance(key, str) else key] = plain
        return out, True
    if isinstance(value, (list, tuple)):
        out = []
        for item in value:
            plain, ok = _static_plain(item)
            if not ok:
                return None, False
            out.append(plain)
        return out, True
    return None, False


def _plain(value):
    """Plain copy of an already templated value (lazy containers become dict/list)."""
    if isinstance(value, Mapping):
        return {(str(k) if isinstance(k, str) else k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    plain, ok = _static_plain(value)
    return plain if ok else value


def schema_hostvars(hostvars, hosts, wanted):
    """{host: {var: plain value}} for the variables ``wanted(name)`` accepts, templated where needed.

    Raises GresError naming each host whose variables Ansible cannot load (a vars file that is not a mapping) and
    each variable whose template fails, with Ansible's own message as what was found.
    """
    result, problems = _read_schema_hostvars(hostvars, hosts, wanted)
    if problems:
        raise GresError(problems)
    return result


def _read_schema_hostvars(hostvars, hosts, wanted):
    """(``schema_hostvars``'s result, [Problem]): a host Ansible cannot load gets no variables."""
    cache = {}
    result = {}
    problems = []
    # one template failing in group_vars fails on every host of the group: read on while the distinct problems
    # are few, so the refusal names every host (problem_report groups them)
    distinct = set()
    for host in hosts:
        before = len(problems)
        try:
            result[host] = _host_schema_vars(hostvars, host, wanted, cache, problems)
        except Exception as exc:  # Ansible's loading raises many types; each message names its cause
            result[host] = {}
            problems.append(Problem(host, "vars", "variables Ansible can load (every vars file a mapping)",
                                    _one_line(exc)))
        distinct.update(message_key(p) for p in problems[before:])
        if len(distinct) >= MAX_PROBLEMS:
            break
    return result, problems


def _one_line(exc):
    return " ".join(str(exc).split())


def _host_schema_vars(hostvars, host, wanted, cache, problems):
    """One host's schema variables; ``cache`` maps id(value) -> (value, plain copy) across hosts. A value whose
    template fails becomes a Problem naming the variable."""
    raw_get = getattr(hostvars, "raw_get", None)
    if raw_get is None:
        hv = hostvars[host]
        return {k: _plain(hv[k]) for k in hv if wanted(k)}
    raw = raw_get(host)
    if not isinstance(raw, Mapping):
        return {}
    templated = None
    values = {}
    for key in raw:
        if not wanted(key):
            continue
        value = raw[key]
        hit = cache.get(id(value))
        if hit is not None and hit[0] is value:
            values[key] = hit[1]
            continue
        plain, ok = _static_plain(value)
        if ok:
            cache[id(value)] = (value, plain)
            values[key] = plain
        else:
            if templated is None:
                templated = hostvars[host]
            try:
                values[key] = _plain(templated[key])
            except Exception as exc:  # Ansible's templating raises many types; each message names its cause
                problems.append(Problem(host, key, "a value whose template renders", _one_line(exc)))
    return values


def _schema_var(name):
    # A YAML vars file may hold non-string keys (1.5: x); Ansible keeps them, and none is a schema variable.
    return namespace.ours(name)


def model_from_inventory(hostvars, groups, cluster=None, cluster_host="localhost", into=None, where=None):
    """Read only the schema variables of every inventory host and build the model.

    ``hostvars``/``groups`` as a play sees them; ``cluster``: the cluster-wide variables (``model.CLUSTER_VARS``).
    ``into``: a dict that receives ``{host: {variable: plain value}}`` as read (what a refusal locates in the
    inventory files, var_origin.py); ``where(host, field)`` locates the warnings (problem_report.report_lines).
    Raises GresError on inventory problems, TypeError when ``groups`` or ``cluster`` is not a mapping.
    """
    if not isinstance(groups, Mapping):
        raise TypeError("groups must be the play's groups mapping")
    if cluster is not None and not isinstance(cluster, Mapping):
        raise TypeError("cluster must be a mapping of cluster-wide variables")
    hosts = list(groups.get("all") or [])
    known = set(hosts)
    for name in (CTLD_GROUP, SLURMD_GROUP):
        for host in groups.get(name) or []:
            if host not in known:
                hosts.append(host)
                known.add(host)
    extracted, load_problems = _read_schema_hostvars(hostvars, hosts, _schema_var)
    if into is not None:
        into.update(extracted)
    plain_groups = {str(k): [str(h) for h in v] for k, v in groups.items() if isinstance(v, (list, tuple))}
    load_problems = load_problems + cluster_vars_elsewhere(extracted, cluster or {}, str(cluster_host))
    try:
        model = build_cluster_model(extracted, plain_groups, dict(cluster or {}), cluster_host=str(cluster_host),
                                    where=where)
    except GresError as exc:
        if not load_problems:
            raise
        # a value Ansible could not load is missing from the model: leave out what its absence caused
        raise GresError(load_problems + [p for p in exc.problems if not _follows_from(p, load_problems)])
    if load_problems:
        raise GresError(load_problems)
    return model


def cluster_vars_elsewhere(extracted, cluster, cluster_host):
    """Problems for each cluster-wide variable an inventory host has with another value than ``cluster_host``'s.

    The render reads them from ``cluster_host`` (localhost: group_vars/all, or its host_vars) only; one set in the
    group_vars of another group (a site's ``slurm-cluster`` group, say) would be ignored, and the files rendered with
    the default release, name or mode instead."""
    problems = []
    for host, found in extracted.items():
        if str(host) == cluster_host:
            continue
        for name in CLUSTER_VARS:
            if name not in found:
                continue
            value = plain(found[name])
            want = plain(cluster[name]) if name in cluster else CLUSTER_VARS[name]
            if value == want:
                continue
            # one problem per host: the report groups equal ones into one line naming every host
            problems.append(Problem(
                host, name, "no value of its own: a cluster-wide variable is read from %s only" % cluster_host,
                "%s, while %s has %s" % (describe(value), cluster_host,
                                         describe(want) if name in cluster else "none (the default %s)" % (
                                             describe(want),)),
                "set it in group_vars/all, which %s reads too; a group's variables do not reach it" % cluster_host))
    return problems


def _follows_from(problem, load_problems):
    for cause in load_problems:
        if str(problem.host) != str(cause.host):
            continue
        if cause.field == "vars" or problem.field == cause.field or problem.field.startswith(
                (cause.field + "[", cause.field + ".")):
            return True
    return False


def host_values(hostvars, hosts, names):
    """``{host: {name: value}}`` of the variables ``names`` that each host has (facts the roles set, as stored)."""
    raw_get = getattr(hostvars, "raw_get", None)
    out = {}
    for host in hosts:
        values = raw_get(host) if raw_get is not None else hostvars.get(host, {})
        if not isinstance(values, Mapping):
            values = {}
        out[host] = {name: values[name] for name in names if name in values}
    return out
