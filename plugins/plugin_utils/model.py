"""Inventory -> one normalized, validated cluster model (plain JSON-able dicts).

Everything the collection renders or checks is derived from this model. ``build_cluster_model`` collects every
problem it finds before raising, so one run shows the admin all mistakes at once, each naming host, field,
expected and found.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import values, versions
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model_gres, namespace
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_boot import boot_settings
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_cluster import (
    check_accounting,
    check_cgroup_plugin,
    check_max_node_count,
    cluster_name,
    config_mode,
    merged_options,
    partitions,
    slurm_release,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_health import (
    check_health_program,
    health_settings,
    health_slurm_conf,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_node import (
    autodetect_mode,
    build_node,
    check_autodetect_with_mig,
    check_count_only_autodetect,
    check_mig_with_shards,
    check_type_spelling,
    count_of,
    node_name,
    socket_boundary_setting,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_problems import Collector, plain, text_hint
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import report_lines
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import (
    CLUSTER_VARS,
    CTLD_GROUP,
    DEFAULT_CGROUP_CONF,
    MAX_NODES,
    OWNED_SLURM_KEYS,
    SLURMD_GROUP,
    default_slurm_conf,
)


def build_cluster_model(hostvars, groups, cluster, cluster_host="localhost", where=None):
    """Validate the inventory and return the cluster model.

    ``hostvars``: {inventory host: {var: value}} holding at least the variables in HOST_VARS that are set
    (other keys are ignored unless they are in the collection's namespace, then they must be known).
    ``groups``: {group: [hosts]} as Ansible's ``groups`` (``slurmd`` and ``slurmctld`` with all descendants).
    ``cluster``: the cluster-wide variables (keys of CLUSTER_VARS; missing ones take their defaults).
    ``cluster_host`` names the host reported for problems in cluster-wide variables. ``where(host, field)``: the
    inventory file a warning's value comes from, or None (problem_report).
    Raises GresError listing every problem found.
    """
    col = Collector()
    # Ansible hands over string host names, str-keyed variable mappings and lists of host names; anything else
    # is not an inventory this model can name in a message, so it is read as empty.
    hostvars = {str(h): hv if isinstance(hv, dict) else {} for h, hv in (hostvars or {}).items()}
    groups = {str(g): [str(h) for h in members] if isinstance(members, (list, tuple)) else []
              for g, members in (groups or {}).items()}
    # A cluster variable set to null (or left out) takes its default.
    cluster = {k: v for k, v in (cluster or {}).items() if v is not None}
    slurmd_hosts = list(groups.get(SLURMD_GROUP) or [])
    ctld_hosts = list(groups.get(CTLD_GROUP) or [])
    slurmd_set = set(slurmd_hosts)
    release = slurm_release(col, cluster_host, cluster.get("hpc_gres_slurm_version"))
    version = release or versions.DEFAULT_SLURM_VERSION

    if not ctld_hosts:
        col.add(cluster_host, "groups.%s" % CTLD_GROUP, "at least one controller host in inventory group %s"
                % CTLD_GROUP, "no hosts")
    if not slurmd_hosts:
        col.add(cluster_host, "groups.%s" % SLURMD_GROUP, "at least one compute host in inventory group %s"
                % SLURMD_GROUP, "no hosts")
    elif len(slurmd_hosts) > MAX_NODES:
        col.add(cluster_host, "groups.%s" % SLURMD_GROUP, "at most %d compute hosts (Slurm's MAX_SLURM_NODES; one "
                "hostlist range holds at most that many names)" % MAX_NODES, "%d hosts" % len(slurmd_hosts))
        slurmd_hosts = []

    checked = {}
    for host in sorted(hostvars, key=natural_key):
        hv = hostvars[host] or {}
        for key in sorted(k for k in hv if isinstance(k, str)):
            problem = namespace.unknown(key)
            if problem is None:
                problem = checked.get((key, id(hv[key])))
                if problem is None:
                    # hosts of a group share their group_vars' value objects (inventory_vars.py)
                    problem = checked[(key, id(hv[key]))] = namespace.bad_role_value(key, hv[key]) or ()
            if problem:
                col.add(host, key, *problem)
        if host not in slurmd_set and hv.get("hpc_gres_gpus"):
            col.add(host, "hpc_gres_gpus", "GPU entries only on hosts in inventory group %s" % SLURMD_GROUP,
                    "%d GPU entries on a host outside %s" % (count_of(hv["hpc_gres_gpus"]), SLURMD_GROUP),
                    "add the host to group %s or remove hpc_gres_gpus" % SLURMD_GROUP)

    boundary = socket_boundary_setting(col, cluster_host, cluster.get("hpc_gres_slurm_conf_options"), release)
    nodes = []
    by_name = {}
    for host in slurmd_hosts:
        node = build_node(col, host, hostvars.get(host) or {}, version, boundary)
        if node is None:
            continue
        if node["name"] in by_name:
            col.add(host, "hpc_gres_node_name", "a Slurm node name used by one inventory host only",
                    "%r (also used by host %s)" % (node["name"], by_name[node["name"]]))
            continue
        by_name[node["name"]] = host
        nodes.append(node)
    nodes.sort(key=lambda n: natural_key(n["name"]))
    if nodes and not any(n["gpus"] or n.get("gpu_counts") for n in nodes):
        col.warn(cluster_host, "hpc_gres_gpus", "GPU entries on the GPU nodes",
                 "none on any of the %d hosts of group %s" % (len(nodes), SLURMD_GROUP),
                 "put the variables in group_vars or host_vars beside the inventory: Ansible also reads the ones beside "
                 "the playbook it runs, which is this collection's, not one of yours that imports it")

    extra_types = model_gres.gres_types(col, cluster_host, cluster.get("hpc_gres_types"))
    check_type_spelling(col, nodes)
    check_mig_with_shards(col, nodes, extra_types)
    check_count_only_autodetect(col, nodes, autodetect_mode(Collector(), cluster_host, cluster.get(
        "hpc_gres_autodetect", CLUSTER_VARS["hpc_gres_autodetect"]), version))

    controllers = []
    for host in ctld_hosts:
        hv = hostvars.get(host) or {}
        name = node_name(col, host, hv)
        addr = hv.get("hpc_gres_controller_addr")
        if addr is not None and not col.check(host, "hpc_gres_controller_addr", values.check_host_address(addr)):
            addr = None
        controllers.append({"host": host, "name": name, "addr": plain(addr) if addr else None})

    check_accounting(col, cluster_host, cluster.get("hpc_gres_slurm_conf_options"))
    gpu_tres = cluster.get("hpc_gres_accounting_gpu_tres", CLUSTER_VARS["hpc_gres_accounting_gpu_tres"])
    if not isinstance(gpu_tres, bool):
        col.add(cluster_host, "hpc_gres_accounting_gpu_tres", "true or false", values.describe(gpu_tres),
                text_hint("hpc_gres_accounting_gpu_tres", gpu_tres))
        gpu_tres = True
    autodetect = autodetect_mode(col, cluster_host, cluster.get("hpc_gres_autodetect",
                                                                CLUSTER_VARS["hpc_gres_autodetect"]), release)
    check_autodetect_with_mig(col, cluster_host, autodetect, nodes)

    cgroup_conf = merged_options(col, cluster_host, "hpc_gres_cgroup_conf_options", DEFAULT_CGROUP_CONF,
                                 cluster.get("hpc_gres_cgroup_conf_options"), (), "cgroup.conf", version)
    check_cgroup_plugin(col, cluster_host, cgroup_conf, release)

    mode, include = config_mode(col, cluster_host, cluster, nodes)
    cloud = [n["host"] for n in nodes if str(n["options"].get("State", "")).upper() == "CLOUD"]
    if cloud and mode == "files":
        # gres.conf(5), 23.02 on: "For cloud nodes, a gres.conf file that includes all the cloud nodes must be on all
        # cloud nodes and the controller"; files mode gives each node its own and the controller none
        named = ", ".join(sorted(cloud)[:3]) + (", ..." if len(cloud) > 3 else "")
        col.warn(cluster_host, "hpc_gres_config_mode", "configless on a cluster with cloud nodes (State=CLOUD)",
                 "files, with %d cloud node(s) (%s)" % (len(cloud), named),
                 "Slurm wants one gres.conf naming every cloud node on the controller and on each cloud node; "
                 "configless mode installs that one file on the controllers, and slurmd fetches it")
    health = health_settings(col, cluster_host, cluster, version)
    slurm_conf = merged_options(col, cluster_host, "hpc_gres_slurm_conf_options",
                                default_slurm_conf(version) + health_slurm_conf(health, version, mode),
                                cluster.get("hpc_gres_slurm_conf_options"), OWNED_SLURM_KEYS, "slurm.conf", version)
    check_health_program(col, cluster_host, health, slurm_conf, cluster.get("hpc_gres_slurm_conf_options"), mode)
    boot = boot_settings(col, cluster_host, cluster, nodes)
    model = {
        "cluster_name": cluster_name(col, cluster_host, cluster.get("hpc_gres_cluster_name",
                                                                    CLUSTER_VARS["hpc_gres_cluster_name"])),
        "slurm_version_default": "hpc_gres_slurm_version" not in cluster,
        "autodetect": autodetect,
        "controllers": controllers,
        "settings": {
            "slurm_conf": slurm_conf,
            "cgroup_conf": cgroup_conf,
        },
        "partitions": partitions(col, cluster_host, cluster.get("hpc_gres_partitions"), groups, hostvars,
                                 slurmd_set, by_name, version),
        "nodes": nodes,
        "gres_types": extra_types,
        "accounting_gpu_tres": bool(gpu_tres),
        "slurm_version": version,
        "cluster_host": str(cluster_host),
        # each warning once, with the hosts it applies to (problem_report)
        "warnings": report_lines(col.warnings, where),
    }
    model["config_mode"], model["include_file"], model["health"] = mode, include, health
    model["boot"] = boot
    check_max_node_count(col, cluster_host, cluster.get("hpc_gres_slurm_conf_options"), model["settings"]["slurm_conf"],
                         len(slurmd_hosts))
    if col.count:
        raise GresError(col.result())
    return model
