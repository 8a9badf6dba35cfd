"""Which daemons restart, and in which order, for a change of files."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import restart_plan
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import node_definition, parse_slurm_conf

HEAD = """ClusterName=demo
SlurmctldHost=ctl
GresTypes=gpu
TaskPlugin=task/cgroup,task/affinity
"""
PART = "PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP\n"


def conf(nodes, head=HEAD, part=PART):
    return head + "".join(nodes) + part


A4 = "NodeName=gpu-a[01-02] Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=1000 Gres=gpu:a100:4\n"
H2 = "NodeName=gpu-h01 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000 Gres=gpu:h100:2\n"
CPU = "NodeName=cpu01 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000\n"
BASE = conf([A4, H2, CPU])
GRES_A = "Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
CGROUP = "ConstrainDevices=yes\n"


def files(slurm=BASE, gres=GRES_A, cgroup=CGROUP):
    return {"slurm.conf": slurm, "cgroup.conf": cgroup, "gres.conf": gres}


def test_identical_files_restart_nothing():
    plan = restart_plan.node_restart_plan("gpu-a01", files(), files())
    assert plan == {"restart": False, "reasons": [], "files_changed": [],
                    "slurm_conf": restart_plan.slurm_conf_changes(BASE, BASE)}
    ctl = restart_plan.controller_plan(BASE, BASE)
    assert not (ctl["restart_before"] or ctl["restart_after"] or ctl["reconfigure"])


def test_comments_and_line_order_are_not_changes():
    shuffled = "# regenerated\n" + conf([CPU, H2, A4])
    assert not restart_plan.slurm_conf_changes(BASE, shuffled)["changed"]
    assert not restart_plan.node_restart_plan("gpu-a01", files(), files(slurm=shuffled))["restart"]


def test_own_gres_conf_change_restarts_only_that_node():
    new = files(gres="Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-3\n")
    plan = restart_plan.node_restart_plan("gpu-a01", files(), new)
    assert plan["restart"] and plan["reasons"] == ["gres.conf changed"]
    assert plan["files_changed"] == ["gres.conf"]
    assert not restart_plan.controller_plan(BASE, BASE)["restart_before"]


def test_count_up_on_one_node_restarts_it_and_slurmctld_after():
    up = conf([A4.replace("gpu-a[01-02]", "gpu-a01"),
               A4.replace("gpu-a[01-02]", "gpu-a02").replace("a100:4", "a100:8"), H2, CPU])
    own = restart_plan.node_restart_plan("gpu-a02", files(),
                                         files(slurm=up, gres="Name=gpu Type=a100 File=/dev/nvidia[0-7]\n"))
    assert own["restart"]
    assert "slurm.conf: this node's gres changed" in own["reasons"]
    other = restart_plan.node_restart_plan("gpu-a01", files(), files(slurm=up))
    assert not other["restart"], other["reasons"]
    ctl = restart_plan.controller_plan(BASE, up, targeted_nodes=["gpu-a01", "gpu-a02"])
    assert ctl["restart_after"] and not ctl["restart_before"]
    assert ctl["slurm_conf"]["gres_up"] == {"gpu-a02": {"gpu:a100": [4, 8]}}
    assert ctl["untargeted"] == []


def test_count_down_restarts_slurmctld_before():
    down = conf([A4, H2.replace("h100:2", "h100:1"), CPU])
    ctl = restart_plan.controller_plan(BASE, down)
    assert ctl["restart_before"] and not ctl["restart_after"]
    assert ctl["reasons"] == ["GRES count goes down on gpu-h01"]


def test_type_swap_restarts_slurmctld_before_and_after():
    swap = conf([A4, H2.replace("Gres=gpu:h100:2", "Gres=gpu:a100:1,gpu:h100:1"), CPU])
    ctl = restart_plan.controller_plan(BASE, swap)
    assert ctl["restart_before"] and ctl["restart_after"]


def test_untargeted_node_with_more_gpus_is_refused():
    up = conf([A4, H2.replace("h100:2", "h100:4"), CPU])
    ctl = restart_plan.controller_plan(BASE, up, targeted_nodes=["gpu-a01", "gpu-a02"])
    assert ctl["untargeted"] == ["gpu-h01"]
    assert restart_plan.controller_plan(BASE, up, targeted_nodes=["gpu-h01"])["untargeted"] == []


def test_global_option_restarts_every_slurmd_and_slurmctld_before():
    changed = conf([A4, H2, CPU], head=HEAD.replace("task/cgroup,task/affinity", "task/cgroup"))
    plan = restart_plan.node_restart_plan("cpu01", files(gres=None), files(slurm=changed, gres=None))
    assert plan["restart"] and plan["reasons"] == ["slurm.conf: taskplugin changed"]
    assert restart_plan.controller_plan(BASE, changed)["restart_before"]


def test_partition_or_weight_change_is_a_reconfigure():
    parts = conf([A4, H2, CPU], part=PART.replace("MaxTime=INFINITE", "MaxTime=2-00:00:00"))
    weight = conf([A4, H2.replace("RealMemory=1000", "RealMemory=1000 Weight=5"), CPU])
    for new in (parts, weight):
        ctl = restart_plan.controller_plan(BASE, new)
        assert ctl["reconfigure"] and not ctl["restart_before"] and not ctl["restart_after"]
        assert not restart_plan.node_restart_plan("gpu-h01", files(), files(slurm=new))["restart"]


def test_added_node_restarts_everyone():
    added = conf([A4, H2, CPU, "NodeName=cpu02 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1\n"])
    plan = restart_plan.node_restart_plan("gpu-a01", files(), files(slurm=added))
    assert plan["reasons"] == ["slurm.conf: nodes added (cpu02)"]
    assert restart_plan.node_restart_plan("cpu02", files(slurm=None, gres=None, cgroup=None),
                                          files(slurm=added, gres=None))["restart"]
    assert restart_plan.controller_plan(BASE, added)["restart_before"]


def test_first_deploy_restarts_slurmctld():
    ctl = restart_plan.controller_plan(None, BASE)
    assert ctl["restart_before"] and ctl["reasons"] == ["no slurm.conf applied before"]


def test_cpu_layout_change_restarts_node_and_slurmctld_before():
    cores = conf([A4.replace("CoresPerSocket=4", "CoresPerSocket=8"), H2, CPU])
    plan = restart_plan.node_restart_plan("gpu-a02", files(), files(slurm=cores))
    assert plan["reasons"] == ["slurm.conf: this node's corespersocket changed"]
    ctl = restart_plan.controller_plan(BASE, cores)
    assert ctl["restart_before"] and "node gpu-a01: corespersocket changed" in ctl["reasons"]


@pytest.mark.parametrize("node, expected", [
    ("gpu-a02", {"gpu:a100": 4}), ("gpu-h01", {"gpu:h100": 2}), ("cpu01", {}), ("nope", {})])
def test_expected_gres(node, expected):
    assert restart_plan.expected_gres(BASE, node) == expected


def test_equivalent_hand_written_files_need_no_restart():
    # an imported cluster: the site's hand-written gres.conf and cgroup.conf, then their rendered equivalents
    slurm = "ClusterName=x\nSlurmctldHost=c\nGresTypes=gpu\nNodeName=n1 Sockets=2 CoresPerSocket=4 Gres=gpu:a100:4\n"
    hand = {"slurm.conf": slurm, "cgroup.conf": "ConstrainDevices=yes # site\nConstrainCores=yes\n",
            "gres.conf": "# site file\nName=gpu Type=a100 File=/dev/nvidia0 Cores=0,1,2,3\n"
                         "Name=gpu Type=a100 File=/dev/nvidia1 Cores=0-3\nName=gpu Type=a100 File=/dev/nvidia[2-3] "
                         "CPUs=4-7\n"}
    rendered = {"slurm.conf": "# generated\n" + slurm, "cgroup.conf": "ConstrainCores=yes\nConstrainDevices=yes\n",
                "gres.conf": "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-3\n"
                             "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=4-7\n"}
    plan = restart_plan.node_restart_plan("n1", hand, rendered)
    assert plan["restart"] is False and plan["reasons"] == []
    assert plan["files_changed"] == ["slurm.conf", "cgroup.conf", "gres.conf"]  # bytes differ, meaning does not
    moved = dict(rendered, **{"gres.conf": rendered["gres.conf"].replace("Cores=4-7", "Cores=0-3")})
    assert restart_plan.node_restart_plan("n1", hand, moved)["reasons"] == ["gres.conf changed"]
    swapped = dict(rendered, **{"cgroup.conf": "ConstrainCores=yes\nConstrainDevices=no\n"})
    assert restart_plan.node_restart_plan("n1", hand, swapped)["reasons"] == ["cgroup.conf changed"]


def test_a_gres_count_slurm_ignores_is_no_node_change():
    """Gres=qpu:2 with qpu not in GresTypes: slurmctld and slurmd drop it (gres_name_filter); an imported slurm.conf
    that leaves it out changes no node definition."""
    old = conf([CPU.rstrip("\n") + " Gres=qpu:2\n"])
    changes = restart_plan.slurm_conf_changes(old, conf([CPU]))
    assert changes["nodes_changed"] == {} and changes["gres_down"] == {}


def test_a_first_deploys_reasons_read_the_same_on_every_node():
    # so that the dry run's verdicts group: each node listed the other nodes (500 lines naming 499 nodes each)
    three = conf([A4, H2, CPU, "NodeName=cpu02 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1\n",
                  "NodeName=cpu03 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1\n"])
    before, after = files(slurm=None, gres=None, cgroup=None), files(slurm=three, gres=None)
    reasons = [restart_plan.node_restart_plan(n, before, after)["reasons"] for n in ("cpu02", "cpu03")]
    assert reasons[0] == reasons[1]
    assert reasons[0] == ["cgroup.conf changed", "slurm.conf: this node is new",
                          "slurm.conf: clustername, grestypes, slurmctldhost, taskplugin changed",
                          "slurm.conf: nodes added (cpu[01-03],gpu-a[01-02],gpu-h01)"]
    assert restart_plan._some(["o%d" % i for i in range(30)]) == "o0, o1, o2, o3, o4, o5, o6, o7 and 22 more"


@pytest.mark.parametrize("line, cores", [
    ("Sockets=2 CoresPerSocket=16 ThreadsPerCore=2", 32),
    ("Boards=2 SocketsPerBoard=2 CoresPerSocket=8", 32),        # SocketsPerBoard wins, times Boards
    ("Sockets=4 SocketsPerBoard=1 CoresPerSocket=8", 8),        # both given: SocketsPerBoard is used
    ("CPUs=128 CoresPerSocket=32 ThreadsPerCore=2", 64),        # Sockets = CPUs / (cores x threads) = 2
    ("CPUs=128 CoresPerSocket=32 ThreadsPerCore=1", 128),
    ("CPUs=100 CoresPerSocket=32 ThreadsPerCore=2", 32),        # does not divide: Sockets = Boards = 1
    ("CPUs=64", 64),                                            # one core per socket by default
    ("Sockets=0 CoresPerSocket=0", 1),                          # 0 read as 1
    ("Sockets=2 CoresPerSocket=x", None),
])
def test_node_cores_are_worked_out_as_read_config_does(line, cores):
    node = parse_slurm_conf(HEAD + "NodeName=n1 %s\n" % line)["nodes"]["n1"]
    assert restart_plan.node_cores(node_definition(node)) == cores
