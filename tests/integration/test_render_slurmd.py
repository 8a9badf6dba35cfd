"""The rendered example inventory passes the real slurmd of every tested Slurm release, node by node.

inventories/example is loaded the way Ansible sees it (``ansible-inventory --list``), turned into the
cluster model for each release of molecule/releases (22.05, 24.11, 26.05: ``hpc_gres_slurm_version`` set to it) and
rendered by the collection's pure functions. Every GPU node's gres.conf is then fed to that release's real
``slurmd -N NODE -G`` (run from the release's node image tree, slurm_release) with that node's CPU shape
(HWLOC_SYNTHETIC) and its device nodes made in a private mount namespace (slurmd_oracle). slurmd must log no
error, and per GRES type the count it reports must equal the node's ``Gres=`` count in the rendered slurm.conf,
and the inventory's GPU count. Then the release's slurmctld reads the rendered slurm.conf and every GPU node's
slurmd registers with it: each must be IDLE with the declared Gres, neither drained nor invalid.

MIG GPUs: the renderer leaves a comment where the node completes the MultipleFiles lines from its live GPU and
compute instance ids. Here those lines are completed as a freshly partitioned GPU would have them (instances
created in ``mig.creation_order``, GI ids 1.., one default CI each, the driver's mig-minors table) with the same
``mig_render`` code the node uses, so slurmd judges MIG nodes in full too.
"""

import json
import os
import subprocess
import sys

import pytest
import testpaths

import slurm_release
import slurmd_oracle
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import profiles as mig
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.render import render_mig_gres_block
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import parse_mig_minors
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model as model_mod, model_schema
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf

ROOT = testpaths.ROOT
EXAMPLE = os.path.join(ROOT, "inventories", "example")
import fake_sysfs  # noqa: E402


def ansible_inventory(path):
    """(hostvars, groups) as a play sees them: groups hold every host of their descendants."""
    exe = os.path.join(os.path.dirname(sys.executable), "ansible-inventory")
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    out = subprocess.run([exe, "-i", path, "--list"], check=True, stdout=subprocess.PIPE, cwd=ROOT, env=env).stdout
    data = json.loads(out)
    hostvars = data.get("_meta", {}).get("hostvars", {})

    def members(group, seen=()):
        entry = data.get(group, {})
        hosts = list(entry.get("hosts", []))
        for child in entry.get("children", []):
            if child not in seen:
                hosts += [h for h in members(child, seen + (group,)) if h not in hosts]
        return hosts

    groups = {g: members(g) for g in data if g != "_meta"}
    for host in {h for hs in groups.values() for h in hs}:
        hostvars.setdefault(host, {})
    return hostvars, groups


def cluster_vars(hostvars, groups):
    """The cluster-wide variables (group_vars/all), read from the controller as the render play does."""
    ctl = groups["slurmctld"][0]
    return {k: hostvars[ctl][k] for k in model_schema.CLUSTER_VARS if k in hostvars[ctl]}


def complete_mig_lines(node, gres_text):
    """gres.conf as the node completes it after partitioning its MIG GPUs (see the module docstring)."""
    mig_gpus = []
    for gpu in node["gpus"]:
        if gpu["mig"]:
            order = mig.creation_order(mig.normalize_model(gpu["model"]), gpu["mig"])
            devices = [{"profile": inst["profile"], "gi_id": gi, "ci_id": 0} for gi, inst in enumerate(order, 1)]
            mig_gpus.append({"index": gpu["index"], "minor": gpu["minor"], "cores": gpu["cores"],
                             "mig_devices": devices})
    if not mig_gpus:
        return gres_text
    block = render_mig_gres_block(node["name"], mig_gpus, parse_mig_minors(fake_sysfs.mig_minors_text()))
    kept = [line for line in gres_text.splitlines() if not line.startswith("# MIG:")]
    return "\n".join(kept) + "\n" + block.rstrip("\n") + "\n"


RELEASES = slurm_release.releases()


@pytest.fixture(scope="module")
def inventory():
    hostvars, groups = ansible_inventory(EXAMPLE)
    return hostvars, groups, cluster_vars(hostvars, groups)


@pytest.fixture(scope="module", params=RELEASES)
def rendered(request, inventory):
    hostvars, groups, cluster = inventory
    cluster_model = model_mod.build_cluster_model(hostvars, groups, dict(cluster, hpc_gres_slurm_version=request.param))
    return request.param, cluster_model, render_all(cluster_model)


def test_example_is_a_real_test(rendered):
    # Guards against a vacuous pass: the example must keep several shapes and GPU types.
    _inventory, cluster_model, files = rendered
    gpu_nodes = [n for n in cluster_model["nodes"] if n["gpus"]]
    shapes = {(n["sockets"], n["cores_per_socket"], n["threads_per_core"]) for n in gpu_nodes}
    types = {g["type"] for n in gpu_nodes for g in n["gpus"]}
    assert len(gpu_nodes) >= 4 and len(shapes) >= 2 and len(types) >= 2, (len(gpu_nodes), shapes, types)
    assert sorted(k for k in files if k.endswith("/gres.conf")) == sorted(n["name"] + "/gres.conf" for n in gpu_nodes)


def expected_counts(node, slurm_conf):
    declared = {k.lower(): v for k, v in parse_slurm_conf(slurm_conf)["nodes"][node["name"]]["gres"].items()}
    whole = {}
    for gpu in node["gpus"]:
        for gres_type in gpu["mig"] or [gpu["type"]]:
            key = "gpu:" + gres_type.lower()
            whole[key] = whole.get(key, 0) + 1
    return declared, whole


def test_every_gpu_node_passes_slurmd_with_slurm_conf_counts(rendered):
    release, cluster_model, files = rendered
    root = slurm_release.require_release(release)
    slurm_conf = files["slurm.conf"]
    failures = []
    judged = 0
    for node in cluster_model["nodes"]:
        if not node["gpus"]:
            continue
        gres_conf = complete_mig_lines(node, files[node["name"] + "/gres.conf"])
        result = slurmd_oracle.run_for_node(node, slurm_conf, gres_conf,
                                            extra_files={"cgroup.conf": files["cgroup.conf"]}, root=root)
        judged += 1
        expected, whole = expected_counts(node, slurm_conf)
        found = {k.lower(): v for k, v in result.counts().items()}
        found_gpus = {k: v for k, v in found.items() if k.startswith("gpu")}
        if not result.ok:
            failures.append("%s: slurmd refused the config: %s\n%s"
                            % (node["name"], result.problems, result.describe()))
        elif found != expected:
            failures.append("%s: slurmd counts %s != slurm.conf Gres= %s\n%s" % (
                node["name"], found, expected, result.describe()))
        elif found_gpus != whole:
            failures.append("%s: slurmd GPU counts %s != inventory %s" % (node["name"], found_gpus, whole))
    assert judged > 0
    assert not failures, "Slurm %s:\n%s" % (release, "\n\n".join(failures))


def registered_gres(line):
    """{gres_key: count} of ``Gres=gpu:a100:8(S:0-1),gpu:3g.40gb:1`` in a ``scontrol -o show node`` line."""
    import re

    match = re.search(r"(?:^| )Gres=(\S+)", line)
    counts = {}
    if not match or match.group(1) == "(null)":
        return counts
    for item in re.sub(r"\([^)]*\)", "", match.group(1)).split(","):
        parts = item.split(":")
        counts[":".join(parts[:-1]).lower()] = counts.get(":".join(parts[:-1]).lower(), 0) + int(parts[-1])
    return counts


def test_every_gpu_node_registers_idle_with_its_gres(rendered):
    release, cluster_model, files = rendered
    root = slurm_release.require_release(release)
    gpu_nodes = [n for n in cluster_model["nodes"] if n["gpus"]]
    nodes = [dict(name=n["name"], sockets=n["sockets"], cores_per_socket=n["cores_per_socket"],
                  threads_per_core=n["threads_per_core"],
                  gres_conf=complete_mig_lines(n, files[n["name"] + "/gres.conf"])) for n in gpu_nodes]
    seen = slurm_release.register_nodes(root, files["slurm.conf"], nodes,
                                        extra_files={"cgroup.conf": files["cgroup.conf"]})
    failures = []
    for node in gpu_nodes:
        line = seen[node["name"]]["line"]
        state = line.split(" State=", 1)[1].split()[0] if " State=" in line else "?"
        expected, _found = expected_counts(node, files["slurm.conf"])
        gres = {k: v for k, v in registered_gres(line).items() if k.startswith("gpu")}
        if state != "IDLE" or gres != {k: v for k, v in expected.items() if k.startswith("gpu")}:
            failures.append("%s: State=%s Gres=%s, expected IDLE with %s\n%s\n%s" % (
                node["name"], state, gres, expected, line, seen[node["name"]]["slurmd_log"]))
    assert not failures, "Slurm %s:\n%s" % (release, "\n\n".join(failures))
