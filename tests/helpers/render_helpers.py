"""Helpers for the renderer's tests: load a real Ansible inventory in-process, write small inventories."""
import os

import yaml
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.cluster_render import cluster_vars

ROOT = testpaths.ROOT
EXAMPLE = os.path.join(ROOT, "inventories", "example", "hosts.yml")


def load_inventory(source):
    """(hostvars, groups, cluster vars) exactly as a play on localhost sees them."""
    from ansible.inventory.manager import InventoryManager
    from ansible.parsing.dataloader import DataLoader
    from ansible.vars.hostvars import HostVars
    from ansible.vars.manager import VariableManager

    loader = DataLoader()
    inventory = InventoryManager(loader=loader, sources=[source])
    variables = VariableManager(loader=loader, inventory=inventory)
    hostvars = HostVars(inventory, variables, loader)
    groups = {name: [h.name for h in group.get_hosts()] for name, group in inventory.groups.items()}
    local = variables.get_vars(host=inventory.localhost or inventory.get_host("localhost"))
    return hostvars, groups, cluster_vars(local)


def write_inventory(path, hosts_yaml, host_vars=None, group_vars=None):
    """Write hosts.yml plus host_vars/<host>.yml and group_vars/<group>.yml; return the hosts.yml path."""
    os.makedirs(path, exist_ok=True)
    with open(os.path.join(path, "hosts.yml"), "w") as handle:
        yaml.safe_dump(hosts_yaml, handle, sort_keys=False)
    for kind, entries in (("host_vars", host_vars or {}), ("group_vars", group_vars or {})):
        if entries:
            os.makedirs(os.path.join(path, kind), exist_ok=True)
        for name, values in entries.items():
            with open(os.path.join(path, kind, "%s.yml" % name), "w") as handle:
                yaml.safe_dump(values, handle, sort_keys=False)
    return os.path.join(path, "hosts.yml")


def gpus(gtype, count, cores_per_gpu=None, start=0, **extra):
    """A hpc_gres_gpus list: ``count`` GPUs of ``gtype`` from index ``start``."""
    out = []
    for i in range(start, start + count):
        gpu = {"index": i, "type": gtype}
        if cores_per_gpu:
            gpu["cores"] = cores_per_gpu(i)
        gpu.update(extra)
        out.append(gpu)
    return out
