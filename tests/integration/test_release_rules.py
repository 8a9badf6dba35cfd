"""The Slurm release table (plugins/module_utils/slurm/versions.py) against the real Slurm of every tested release.

Each rule the renderer and gres_verify apply is checked here with the release's own binaries (slurm_release:
the tree of its molecule node image): the hostlist forms its parser reads, the AutoDetect modes its slurmd knows
and the gpu plugin each needs, and the socket-boundary rule its slurmctld enforces at registration.
"""
import random

import pytest

import slurm_release
import slurmd_oracle
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import versions
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

RELEASES = slurm_release.releases()


@pytest.fixture(scope="module", params=RELEASES)
def release(request):
    return request.param, slurm_release.require_release(request.param)


def test_the_tree_runs_its_release(release):
    name, root = release
    assert versions.release_of(slurm_release.slurm_version(root)) == name


def _name_sets():
    rng = random.Random(11)
    sets = [["node01-ib", "node02-ib"], ["node01-ib0", "node02-ib0", "node03-ib0"], ["r1n01", "r1n02", "r2n01"],
            ["gpu-a01", "gpu-a02", "gpu-b07-ib", "x"], ["dgx%02d-ib" % i for i in range(1, 33)],
            ["rack1-node1-ib", "rack1-node2-ib", "rack2-node1-ib", "rack2-node2-ib"], ["h1.lab", "h2.lab"]]
    shapes = ["gpu%02d", "node%03d-ib", "r%dn1-ib0", "a%db", "dgx-%d-ib", "n%d"]
    for count in range(2, 12):
        sets.append(sorted({rng.choice(shapes) % rng.randint(0, 40) for _draw in range(count)}))
    return sets


def test_rendered_hostlists_expand_to_the_names(release):
    name, root = release
    sets = _name_sets()
    exprs = [versions.format_hostlist(names, name) for names in sets]
    answers = slurm_release.show_hostnames(root, exprs)
    for names, expr, answer in zip(sets, exprs, answers):
        assert answer is not None, "Slurm %s refuses %r (for %s)" % (name, expr, names)
        assert sorted(answer) == sorted(names), (name, expr)


@pytest.mark.parametrize("expr", ["node[01-02]-ib", "r[1-2]n[1-2]-ib", "node[01-02]-ib[0]", "r[1-2]n[1-2]",
                                  "gpu-a[01-03],x-ib", "a[1,3-4]b"])
def test_suffix_rule_matches_the_parser(release, expr):
    name, root = release
    accepted = slurm_release.show_hostnames(root, [expr])[0] is not None
    assert accepted == (versions.hostlist_form_problem(expr, name) is None), (name, expr)


SLURM = """ClusterName=rules
SlurmctldHost=ctl
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
ReturnToService=1
GresTypes=gpu
NodeName=half Sockets=2 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=100 Gres=gpu:a100:1
NodeName=whole Sockets=2 CoresPerSocket=4 ThreadsPerCore=1 RealMemory=100 Gres=gpu:a100:1
NodeName=twoof4 Sockets=4 CoresPerSocket=2 ThreadsPerCore=1 RealMemory=100 Gres=gpu:a100:1
PartitionName=main Nodes=ALL Default=YES
"""
CASES = {  # node: (sockets, cores per socket, Cores=)
    "half": (2, 4, "0-1"),
    "whole": (2, 4, "4-7"),
    "twoof4": (4, 2, "0-3"),
}


@pytest.mark.parametrize("mode", ["nvidia", "full"])
def test_autodetect_modes_and_plugins(release, mode):
    name, root = release
    gres = "AutoDetect=%s\nNodeName=whole Name=gpu Type=a100 File=/dev/nvidia0 Cores=4-7\n" % mode
    result = slurmd_oracle.run_slurmd_g("whole", SLURM, gres, 2, 4, 1, root=root)
    unknown = any("unknown autodetect flag '%s'" % mode in e for e in result.errors)
    assert unknown == (mode not in versions.autodetect_modes(name)), result.describe()
    plugins = slurm_release.gpu_plugins(root)
    for known in versions.autodetect_modes(name):
        wanted = versions.autodetect_plugins(known, name)
        if known == "nvidia":
            assert wanted == ("gpu_nvidia.so",) and wanted[0] in plugins, (name, plugins)  # no library needed
        if known == "nvml":
            # Debian builds have no gpu_nvml.so in main (contrib's slurm-wlm-nvml-plugin): gres_verify's plugin
            # check is what catches AutoDetect=nvml on such a node
            assert wanted == ("gpu_nvml.so",) and wanted[0] not in plugins, (name, plugins)
        if known == "full":
            assert set(wanted) & set(plugins), (name, plugins)  # Debian's: gpu_nvidia.so


def test_cgroup_v1_deprecation_matches_slurmd(release):
    name, root = release
    if slurm_release.cgroup_hierarchy() != "v1":
        pytest.skip("this host mounts the unified cgroup hierarchy: the cgroup/v1 plugin cannot load here")
    gres = "NodeName=whole Name=gpu Type=a100 File=/dev/nvidia0 Cores=4-7\n"
    result = slurmd_oracle.run_slurmd_g("whole", SLURM, gres, 2, 4, 1, root=root,
                                        extra_files={"cgroup.conf": "CgroupPlugin=cgroup/v1\n"})
    warned = any("cgroup/v1 plugin is deprecated" in w for w in result.warnings)
    assert warned == (versions.rule("cgroup_v1", name) == "deprecated"), result.describe()
    assert result.records and not result.fatals, result.describe()  # a warning, not a refusal


def test_socket_boundary_rule_matches_slurmctld(release):
    name, root = release
    nodes = [dict(name=node, sockets=s, cores_per_socket=c, threads_per_core=1,
                  gres_conf="NodeName=%s Name=gpu Type=a100 File=/dev/nvidia0 Cores=%s\n" % (node, cores))
             for node, (s, c, cores) in CASES.items()]
    seen = slurm_release.register_nodes(root, SLURM, nodes)
    for node, (sockets, per_socket, cores) in CASES.items():
        line = seen[node]["line"]
        low, high = cores.split("-")
        cores_list = list(range(int(low), int(high) + 1))
        found = versions.socket_boundary_findings(cores_list, sockets, per_socket, name)
        drains = bool(found) and found[0][0] == "error"
        if drains:
            message = versions.socket_boundary_message(cores_list, node, found[0][3], per_socket)
            assert "DRAIN" in line and "Reason=" + message in line, (name, node, line)
        else:
            assert " State=IDLE " in line, (name, node, line, seen[node]["slurmd_log"])


def test_identical_suffixed_nodes_render_and_register_idle(release):
    """node01-ib, node02-ib (and nodes whose names end in digits after the suffix) rendered for the release: its
    slurmctld reads the slurm.conf, and each node registers IDLE with its GPUs."""
    name, root = release
    shape = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 2, "hpc_gres_node_threads_per_core": 1,
             "hpc_gres_node_real_memory": 100,
             "hpc_gres_gpus": [{"index": 0, "type": "a100", "cores": "0-1"},
                               {"index": 1, "type": "a100", "cores": "2-3"}]}
    hosts = ["node01-ib", "node02-ib", "gpu01-ib0", "gpu02-ib0"]
    hostvars = dict((h, dict(shape)) for h in hosts)
    hostvars["ctl"] = {}
    model = build_cluster_model(hostvars, {"all": hosts + ["ctl"], "slurmctld": ["ctl"], "slurmd": hosts},
                                {"hpc_gres_slurm_version": name})
    files = render_all(model)
    node_lines = [line for line in files["slurm.conf"].splitlines() if line.startswith("NodeName=")]
    assert len(node_lines) == 1  # one group of identical nodes, in a form of the release
    nodes = [dict(name=n["name"], sockets=2, cores_per_socket=2, threads_per_core=1,
                  gres_conf=files[n["name"] + "/gres.conf"]) for n in model["nodes"]]
    seen = slurm_release.register_nodes(root, files["slurm.conf"], nodes)
    for node in nodes:
        line = seen[node["name"]]["line"]
        assert " State=IDLE " in line and "Gres=gpu:a100:2" in line, (name, node_lines, line,
                                                                      seen[node["name"]]["slurmctld_log"])


VARIED = {
    # identical suffixed nodes with shards on every GPU
    "dgx01-ib": {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 2,
                 "hpc_gres_gpus": [{"index": i, "type": "h100", "cores": "0-3" if i < 4 else "4-7", "shards": 4}
                                   for i in range(8)]},
    # one GPU per socket on a four-socket node
    "quad01": {"hpc_gres_node_sockets": 4, "hpc_gres_node_cores_per_socket": 2, "hpc_gres_node_threads_per_core": 1,
               "hpc_gres_gpus": [{"index": i, "type": "a40", "cores": "%d-%d" % (2 * i, 2 * i + 1)}
                                 for i in range(4)]},
    # no Cores at all, one socket
    "single01": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 2,
                 "hpc_gres_gpus": [{"index": 0, "type": "l4"}, {"index": 1, "type": "l4"}]},
    # two types, minors not in index order
    "mix01": {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1,
              "hpc_gres_gpus": [{"index": 0, "type": "l40s", "cores": "0-3"},
                                {"index": 1, "type": "a100", "minor": 2, "cores": "4-7"},
                                {"index": 2, "type": "a100", "minor": 1, "cores": "4-7"}]},
}


def test_a_varied_cluster_passes_slurmd_and_registers_idle(release):
    name, root = release
    hostvars = dict(VARIED, **{"dgx02-ib": VARIED["dgx01-ib"], "ctl": {}})
    hosts = sorted(h for h in hostvars if h != "ctl")
    model = build_cluster_model(hostvars, {"all": hosts + ["ctl"], "slurmctld": ["ctl"], "slurmd": hosts},
                                {"hpc_gres_slurm_version": name})
    files = render_all(model)
    nodes = []
    for node in model["nodes"]:
        gres = files[node["name"] + "/gres.conf"]
        result = slurmd_oracle.run_for_node(node, files["slurm.conf"], gres, root=root,
                                            extra_files={"cgroup.conf": files["cgroup.conf"]})
        declared = parse_slurm_conf(files["slurm.conf"])["nodes"][node["name"]]["gres"]
        assert result.ok and result.counts() == declared, (name, node["name"], declared, result.describe())
        nodes.append(dict(name=node["name"], sockets=node["sockets"], cores_per_socket=node["cores_per_socket"],
                          threads_per_core=node["threads_per_core"], gres_conf=gres))
    seen = slurm_release.register_nodes(root, files["slurm.conf"], nodes,
                                        extra_files={"cgroup.conf": files["cgroup.conf"]})
    for node in nodes:
        line = seen[node["name"]]["line"]
        assert " State=IDLE " in line, (name, node["name"], line, seen[node["name"]]["slurmd_log"])
