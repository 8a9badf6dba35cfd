"""Imported inventory variables -> a compact, reviewable inventory directory (hosts.yml, group_vars, host_vars).

Nodes with identical variables form one group (500 identical nodes are one group and one group_vars file);
host_vars hold only what a node has of its own (NodeAddr, NodeHostname, a Slurm name that is not the host name).
"""
import json
import re

import yaml

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import PER_NODE_OPTIONS
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key

CLUSTER_ORDER = ("hpc_gres_cluster_name", "hpc_gres_slurm_version", "hpc_gres_autodetect", "hpc_gres_types",
                 "hpc_gres_accounting_gpu_tres", "hpc_gres_slurm_conf_options", "hpc_gres_cgroup_conf_options",
                 "hpc_gres_partitions")
NODE_ORDER = ("hpc_gres_node_name", "hpc_gres_node_sockets", "hpc_gres_node_cores_per_socket", "hpc_gres_node_threads_per_core",
              "hpc_gres_node_real_memory", "hpc_gres_node_features", "hpc_gres_node_weight", "hpc_gres_node_autodetect",
              "hpc_gres_node_options", "hpc_gres_gpus", "hpc_gres_node_shards", "hpc_gres_node_mps", "hpc_gres_node_gres",
              "hpc_gres_controller_addr")
FLOW_LISTS = ("hpc_gres_gpus", "hpc_gres_node_gres")


class _Dumper(yaml.SafeDumper):
    pass


def _none(dumper, _value):
    return dumper.represent_scalar("tag:yaml.org,2002:null", "null")


_Dumper.add_representer(type(None), _none)


def scalar(value):
    """One YAML scalar or flow value, quoted where YAML would read it differently (off, 0-31, 01, ...)."""
    text = yaml.dump(value, Dumper=_Dumper, default_flow_style=True, width=1 << 30).strip()
    if text.endswith("\n..."):
        text = text[:-4].strip()
    if text.endswith("..."):
        text = text[:-3].strip()
    return text


def _flow_mapping(entry):
    """One flow mapping, quoted for flow context (where a comma ends a plain value: links: '-1,18')."""
    return yaml.dump(entry, Dumper=_Dumper, default_flow_style=True, sort_keys=False, width=1 << 30).strip()


def vars_yaml(values, order, header):
    """YAML text of one vars file; GPU and GRES lists one flow mapping per entry."""
    lines = ["---"] + ["# " + h for h in header]
    keys = [k for k in order if k in values] + sorted(k for k in values if k not in order)
    for key in keys:
        value = values[key]
        if key in FLOW_LISTS and isinstance(value, list):
            lines.append("%s:" % key)
            lines.extend("  - %s" % _flow_mapping(entry) for entry in value)
        elif isinstance(value, (dict, list)) and value:
            block = yaml.dump({key: value}, Dumper=_Dumper, default_flow_style=False, sort_keys=False,
                              width=1 << 30)
            lines.extend(block.rstrip("\n").split("\n"))
        else:
            lines.append("%s: %s" % (key, scalar(value)))
    return "\n".join(lines) + "\n"


def ansible_patterns(names):
    """Node names -> Ansible inventory host patterns (``gpu-a[01:04]``), as few as hostlist can make."""
    out = []
    for piece in _split_top(hostlist.collect_hostlist(sorted(names, key=natural_key))):
        brackets = re.findall(r"\[([^\]]*)\]", piece)
        if not brackets:
            out.append(piece)
        elif len(brackets) > 1:
            out.extend(hostlist.expand_hostlist(piece))
        else:
            head, _unused, rest = piece.partition("[")
            body, _unused, tail = rest.partition("]")
            for part in body.split(","):
                low, sep, high = part.partition("-")
                out.append("%s%s%s" % (head, "[%s:%s]" % (low, high) if sep else low, tail))
    return out


def _split_top(expr):
    parts, depth, cur = [], 0, ""
    for ch in expr:
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
            continue
        depth += ch == "["
        depth -= ch == "]"
        cur += ch
    if cur:
        parts.append(cur)
    return parts


def _own(values):
    """(shape vars, the node's own vars) of one node."""
    shape = dict(values)
    own = {}
    if "hpc_gres_node_name" in shape:
        own["hpc_gres_node_name"] = shape.pop("hpc_gres_node_name")
    options = shape.get("hpc_gres_node_options") or {}
    if any(k in PER_NODE_OPTIONS for k in options):
        shape["hpc_gres_node_options"] = {k: v for k, v in options.items() if k not in PER_NODE_OPTIONS}
        if not shape["hpc_gres_node_options"]:
            del shape["hpc_gres_node_options"]
        own["hpc_gres_node_options"] = dict(options)
    return shape, own


def _group_name(shape, taken):
    gpus = shape.get("hpc_gres_gpus") or []
    if gpus:
        types = []
        total = 0
        for gpu in gpus:
            total += gpu.get("count", 1)
            gtype = gpu.get("type") or ("mig" if gpu.get("mig") else "gpu")
            if gtype not in types:
                types.append(gtype)
        base = "gpu_%s_x%d" % ("_".join(types) if types != ["gpu"] else "untyped", total)
    elif shape.get("hpc_gres_node_gres"):
        base = "gres_" + "_".join(sorted({r["name"] for r in shape["hpc_gres_node_gres"]}))
    else:
        base = "cpu"
    base = re.sub(r"[^A-Za-z0-9_]", "_", base).lower()
    if base[0].isdigit():
        base = "g_" + base
    name, n = base, 2
    while name in taken or name in ("all", "ungrouped", "slurmd", "slurmctld"):
        name = "%s_%d" % (base, n)
        n += 1
    taken.add(name)
    return name


def layout_inventory(imported, header):
    """{relative path: text} of the inventory directory, and {group: [hosts]}.

    ``imported``: import_cluster's result; ``header``: comment lines for the top of every file.
    """
    hostvars = imported["hostvars"]
    node_hosts = imported["node_hosts"]
    shapes = []
    by_shape = {}
    own_vars = {}
    for node in sorted(node_hosts, key=natural_key):
        host = node_hosts[node]
        values = {k: v for k, v in hostvars[host].items() if k != "hpc_gres_controller_addr"}
        shape, own = _own(values)
        key = json.dumps(shape, sort_keys=True)
        if key not in by_shape:
            by_shape[key] = {"shape": shape, "hosts": []}
            shapes.append(key)
        by_shape[key]["hosts"].append(host)
        if own:
            own_vars[host] = own
    for host in imported["controllers"]:
        extra = {k: v for k, v in hostvars.get(host, {}).items() if k in ("hpc_gres_controller_addr", "hpc_gres_node_name")}
        if extra:
            own_vars.setdefault(host, {}).update(extra)
    taken = set()
    groups = {}
    files = {}
    for key in shapes:
        entry = by_shape[key]
        name = _group_name(entry["shape"], taken)
        groups[name] = entry["hosts"]
        if entry["shape"]:
            files["group_vars/%s.yml" % name] = vars_yaml(entry["shape"], NODE_ORDER, header + [
                "Node shape %s: %d node(s)" % (name, len(entry["hosts"]))])
    files["group_vars/all.yml"] = vars_yaml(imported["cluster"], CLUSTER_ORDER, header + [
        "Cluster-wide variables. A null option leaves the setting to Slurm's default, as the site's file did."])
    for host in sorted(own_vars, key=natural_key):
        files["host_vars/%s.yml" % host] = vars_yaml(own_vars[host], NODE_ORDER, header + [
            "What %s has of its own" % host])
    files["hosts.yml"] = _hosts_yaml(imported["controllers"], groups, header)
    return files, groups


def _hosts_yaml(controllers, groups, header):
    lines = ["---"] + ["# " + h for h in header] + ["all:", "  children:", "    slurmctld:", "      hosts:"]
    # scalar(): a host YAML would read as a number (5090) or a boolean is quoted, as Ansible needs a string. The
    # controllers one by one, in slurm.conf's SlurmctldHost order: the group's first host is the primary.
    # (str(): a name read from the live inventory is ansible-core's tagged string, which YAML cannot represent)
    lines.extend("        %s:" % scalar(str(name)) for name in controllers)
    lines.extend(["    slurmd:", "      children:"])
    for name in groups:
        lines.extend(["        %s:" % name, "          hosts:"])
        lines.extend("            %s:" % scalar(pattern) for pattern in ansible_patterns(groups[name]))
    return "\n".join(lines) + "\n"


def load_inventory_files(files):
    """(hostvars, groups, cluster) the way Ansible reads the written files: group_vars/all, then the node's
    group, then host_vars (the generated layout has one group per node, so this order is the whole precedence)."""
    hosts_doc = yaml.safe_load(files["hosts.yml"])
    children = hosts_doc["all"]["children"]
    groups = {"slurmctld": [], "slurmd": []}
    member = {}
    for pattern in (children["slurmctld"].get("hosts") or {}):
        groups["slurmctld"].extend(_expand_pattern(pattern))
    for gname, body in (children["slurmd"].get("children") or {}).items():
        hosts = [h for p in (body.get("hosts") or {}) for h in _expand_pattern(p)]
        groups[gname] = hosts
        groups["slurmd"].extend(hosts)
        for host in hosts:
            member[host] = gname
    cluster = yaml.safe_load(files["group_vars/all.yml"]) or {}
    hostvars = {}
    parsed = {}
    for host in set(groups["slurmd"]) | set(groups["slurmctld"]):
        values = dict(cluster)
        gname = member.get(host)
        if gname and "group_vars/%s.yml" % gname in files:
            if gname not in parsed:
                parsed[gname] = yaml.safe_load(files["group_vars/%s.yml" % gname]) or {}
            values.update(parsed[gname])  # the group's objects, shared by its hosts as in Ansible
        if "host_vars/%s.yml" % host in files:
            values.update(yaml.safe_load(files["host_vars/%s.yml" % host]) or {})
        hostvars[host] = values
    return hostvars, groups, cluster


def _expand_pattern(pattern):
    match = re.match(r"^(.*)\[([^:\]]+):([^\]]+)\](.*)$", pattern)
    if not match:
        return [pattern]
    head, low, high, tail = match.groups()
    width = len(low) if low.startswith("0") else 0
    return ["%s%s%s" % (head, str(i).zfill(width), tail) for i in range(int(low), int(high) + 1)]
