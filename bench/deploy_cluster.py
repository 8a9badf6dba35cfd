"""The emulated cluster of the deploy benchmark (bench/deploy_bench.py): nodes, inventories, seeded state.

Nodes ``gpu0001`` ... are built once for the largest size and reused (each an HGX A100 8-GPU board: the emulated
nvidia-smi replaying a real recorded ``topo -m``, a fake sysfs/procfs tree, real device nodes made with mknod, so
it needs root). A size N is measured on an inventory of the first N nodes. Each size has two inventories whose
every gres.conf differs in meaning (``plain``: no Flags=, slurmd sets every GPU environment variable; ``env``:
``Flags=nvidia_gpu_env`` on every GPU, CUDA_VISIBLE_DEVICES only; gres.conf(5), Slurm 22.05) and whose slurm.conf
is the same: switching between them restarts every slurmd and no slurmctld.

Every path the deploy writes is private to the bench (``PATH_VARS``); ``check_private_paths`` refuses to run when a
role of the collection gains a path default the bench does not redirect.
"""
import json
import os
import shutil

import yaml

from deploy_fakes import write_controller, write_nvidia_smi

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COLLECTIONS = os.path.join(ROOT, ".cache", "collections")
PYTHON = os.path.join(ROOT, ".venv", "bin", "python")
VARIANTS = ("plain", "env")

# Role defaults that name a system path the deploy only reads (never written by it).
READ_ONLY_PATHS = {"hpc_gres_slurmd_configless_dir", "hpc_gres_slurmd_health_python", "hpc_gres_verify_sysfs_root",
                   "hpc_gres_verify_dev_root", "hpc_gres_users_guide_dir"}


def gpus(variant):
    out = []
    for i in range(8):
        gpu = {"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"}
        if variant == "env":
            gpu["flags"] = ["nvidia_gpu_env"]
        out.append(gpu)
    return out


def role_defaults():
    """{variable: default} of every role of the collection."""
    out = {}
    roles = os.path.join(ROOT, "roles")
    for role in sorted(os.listdir(roles)):
        path = os.path.join(roles, role, "defaults", "main.yml")
        if os.path.exists(path):
            with open(path) as handle:
                out.update(yaml.safe_load(handle) or {})
    return out


def node_paths(base):
    """Where each node's files go (only the variables the roles of this checkout know are used)."""
    return {
        "hpc_gres_slurmd_config_dir": os.path.join(base, "etc"),
        "hpc_gres_slurmd_state_dir": os.path.join(base, "state"),
        "hpc_gres_slurmd_health_program": os.path.join(base, "sbin", "hpc-gres-health"),
        "hpc_gres_slurmd_health_library_dir": os.path.join(base, "lib"),
        "hpc_gres_slurmd_boot_program": os.path.join(base, "sbin", "hpc-gres-boot"),
        "hpc_gres_slurmd_boot_config": os.path.join(base, "etc-hpc-gres", "boot.json"),
        "hpc_gres_slurmd_boot_unit_dir": os.path.join(base, "systemd"),
        "hpc_gres_slurmd_boot_mig_manager_dir": os.path.join(base, "nvidia-mig-manager"),
    }


def controller_paths(ctl):
    return {
        "hpc_gres_slurmctld_config_dir": os.path.join(ctl, "etc"),
        "hpc_gres_slurmctld_state_dir": os.path.join(ctl, "state"),
        "hpc_gres_run_root": os.path.join(ctl, "runs"),
    }


def check_private_paths(inventory_vars, defaults):
    """Refuse a role path default (an absolute path the deploy may write) that the inventory does not redirect."""
    missing = sorted(k for k, v in defaults.items()
                     if isinstance(v, str) and v.startswith("/") and k not in READ_ONLY_PATHS
                     and k not in inventory_vars)
    if missing:
        raise SystemExit("deploy bench: role defaults %s name system paths the bench does not redirect; add them to "
                         "bench/deploy_cluster.py (node_paths/controller_paths) or READ_ONLY_PATHS" % ", ".join(missing))


class Node(object):
    """A built emulated node (tests/integration/emulated_node.Node), reopened without rebuilding it."""

    def __init__(self, base, name):
        self.base, self.name = base, name
        self.root, self.dev_root = os.path.join(base, "root"), os.path.join(base, "devroot")
        self.profile_path = os.path.join(base, "profile.json")


def build_nodes(out, count):
    """The first ``count`` emulated nodes, built where missing; their nvidia-smi wrappers written."""
    from emulated_node import Node as EmulatedNode

    nodes_dir = os.path.join(out, "nodes")
    os.makedirs(nodes_dir, exist_ok=True)
    nodes = []
    for i in range(1, count + 1):
        name = "gpu%04d" % i
        base = os.path.join(nodes_dir, name)
        if not os.path.exists(os.path.join(base, "profile.json")):
            shutil.rmtree(base, ignore_errors=True)
            EmulatedNode(base, name=name)
        node = Node(base, name)
        node.nvidia_smi = write_nvidia_smi(node)
        nodes.append(node)
    return nodes


def write_inventory(out, nodes, variant, slurm_release):
    """hosts-<N>-<variant>.yml: the nodes (local connection, counted) and the controller ctl01; returns its path."""
    defaults = role_defaults()
    ctl = os.path.join(out, "ctl01")
    hosts = {}
    for node in nodes:
        host = {
            "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
            "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus(variant),
            "hpc_gres_verify_nvidia_smi": node.nvidia_smi, "hpc_gres_verify_sysfs_root": node.root,
            "hpc_gres_verify_dev_root": node.dev_root, "hpc_gres_verify_slurmd_version": "22.05.8",
            "hpc_gres_verify_show_table": False,
            # one unit per node, so that the fake systemctl knows whose slurmd it restarts
            "hpc_gres_slurmd_service": "slurmd@%s" % node.name,
        }
        host.update((k, v) for k, v in node_paths(node.base).items() if k in defaults)
        hosts[node.name] = host
    all_vars = {"ansible_connection": "counting_local", "ansible_python_interpreter": PYTHON,
                "hpc_gres_cluster_name": "bench",
                # the deploy reads this machine's slurmd -V / slurmctld -V (local connection): name that release
                "hpc_gres_slurm_version": slurm_release}
    scontrols = {"hpc_gres_%s_scontrol" % role: os.path.join(ctl, "scontrol") for role in ("slurmd", "slurmctld", "run")}
    all_vars.update((k, v) for k, v in scontrols.items() if k in defaults)
    all_vars.update((k, v) for k, v in controller_paths(ctl).items() if k in defaults)
    check_private_paths(set(all_vars) | set(hosts[nodes[0].name]), defaults)
    inventory = {"all": {"vars": all_vars, "children": {"slurmctld": {"hosts": {"ctl01": None}},
                                                        "slurmd": {"hosts": hosts}}}}
    path = os.path.join(out, "hosts-%d-%s.yml" % (len(nodes), variant))
    with open(path, "w") as handle:
        yaml.safe_dump(inventory, handle)
    return path


def seed_files(out, nodes, rendered):
    """Install the rendered files on the nodes and the controller and record them as running, the way a previous
    deploy leaves them; the controller's scontrol then answers every node with its declared Gres."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf

    ctl = os.path.join(out, "ctl01")
    with open(os.path.join(rendered, "slurm.conf")) as handle:
        slurm_text = handle.read()
    for node in nodes:
        paths = node_paths(node.base)
        for folder in (paths["hpc_gres_slurmd_config_dir"], paths["hpc_gres_slurmd_state_dir"]):
            os.makedirs(folder, exist_ok=True)
            for name, src in (("slurm.conf", "slurm.conf"), ("cgroup.conf", "cgroup.conf"),
                              ("gres.conf", "%s/gres.conf" % node.name)):
                shutil.copyfile(os.path.join(rendered, src), os.path.join(folder, name))
                os.chmod(os.path.join(folder, name), 0o644)
    paths = controller_paths(ctl)
    for folder in (paths["hpc_gres_slurmctld_config_dir"], paths["hpc_gres_slurmctld_state_dir"]):
        os.makedirs(folder, exist_ok=True)
        for name in ("slurm.conf", "cgroup.conf"):
            shutil.copyfile(os.path.join(rendered, name), os.path.join(folder, name))
            os.chmod(os.path.join(folder, name), 0o644)
    gres = {}
    for name, node in parse_slurm_conf(slurm_text)["nodes"].items():
        gres[name] = ",".join("%s:%d(S:0-1)" % kv for kv in node["gres"].items())
    return write_controller(ctl, COLLECTIONS, gres)


def gres_conf_differs(rendered_a, rendered_b, nodes):
    """Every node's gres.conf differs between the two renders, and slurm.conf does not."""
    def read(folder, name):
        with open(os.path.join(folder, name)) as handle:
            return handle.read()
    same = [n.name for n in nodes if read(rendered_a, "%s/gres.conf" % n.name) == read(rendered_b, "%s/gres.conf"
                                                                                       % n.name)]
    return not same and read(rendered_a, "slurm.conf") == read(rendered_b, "slurm.conf")


def dump(path, data):
    with open(path, "w") as handle:
        json.dump(data, handle, indent=2)
