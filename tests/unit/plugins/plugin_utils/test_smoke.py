"""Post-deploy smoke test plan: one srun per GPU type, and the exact CUDA_VISIBLE_DEVICES it must print."""
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import smoke

SLURM = """ClusterName=demo
SlurmctldHost=ctl
GresTypes=gpu
TaskPlugin=%s
NodeName=gpu01 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 Gres=gpu:a100:4
NodeName=gpu02 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 Gres=gpu:a100:2
NodeName=mix01 Sockets=2 CoresPerSocket=4 ThreadsPerCore=1 Gres=gpu:a100:3,gpu:h100:2
PartitionName=main Nodes=ALL Default=YES
"""
GRES = {
    "gpu01/gres.conf": "Name=gpu Type=a100 File=/dev/nvidia[0-3]\n",
    "gpu02/gres.conf": "Name=gpu Type=a100 File=/dev/nvidia[0-1]\n",
    # line order and minors do not decide slurmd's numbering; slurm.conf's Gres= order does (seen live)
    "mix01/gres.conf": "Name=gpu Type=h100 File=/dev/nvidia[0-1]\nName=gpu Type=a100 File=/dev/nvidia[2-4]\n",
}


def files(task="task/cgroup,task/affinity", constrain="yes"):
    out = {"slurm.conf": SLURM % task, "cgroup.conf": "CgroupPlugin=autodetect\nConstrainDevices=%s\n" % constrain}
    out.update(GRES)
    return out


def test_confined_devices_are_numbered_from_zero():
    plan = smoke.smoke_plan(files())
    assert plan == [
        {"type": "a100", "node": "gpu01", "count": 4, "gres": "gpu:a100:4", "expected": "0,1,2,3", "busy": False},
        {"type": "h100", "node": "mix01", "count": 2, "gres": "gpu:h100:2", "expected": "0,1", "busy": False},
    ]


def test_unconfined_devices_keep_the_node_positions():
    assert not smoke.devices_confined(files()["slurm.conf"], "ConstrainDevices=no\n")
    plan = smoke.smoke_plan(files(task="task/none"))
    assert [p["expected"] for p in plan] == ["0,1,2,3", "3,4"]
    plan = smoke.smoke_plan(files(constrain="no"))
    assert plan[1] == {"type": "h100", "node": "mix01", "count": 2, "gres": "gpu:h100:2", "expected": "3,4",
                       "busy": False}


def test_usable_nodes_limit_the_choice():
    plan = smoke.smoke_plan(files(task="task/none"), usable_nodes=["gpu02", "mix01"])
    assert [(p["node"], p["count"], p["expected"]) for p in plan] == [("mix01", 3, "0,1,2"), ("mix01", 2, "3,4")]
    assert smoke.smoke_plan(files(), usable_nodes=[]) == []


def test_preferred_nodes_win_over_bigger_ones():
    plan = smoke.smoke_plan(files(), preferred_nodes=["gpu02"])
    assert [(p["node"], p["gres"]) for p in plan] == [("gpu02", "gpu:a100:2"), ("mix01", "gpu:h100:2")]


def test_a_node_running_no_job_wins_over_preferred_and_bigger_ones():
    # a job on gpu01 holds some of its GPUs: asking for all of them would wait --immediate seconds and fail
    plan = smoke.smoke_plan(files(), preferred_nodes=["gpu01"], busy_nodes=["gpu01"])
    assert [(p["node"], p["gres"], p["busy"]) for p in plan] == [("mix01", "gpu:a100:3", False),
                                                                 ("mix01", "gpu:h100:2", False)]
    # no idle node of a type: the busy one, marked so (srun's "Requested nodes are busy" then skips it)
    plan = smoke.smoke_plan(files(), busy_nodes=["mix01"])
    assert [(p["node"], p["busy"]) for p in plan] == [("gpu01", False), ("mix01", True)]


def test_mig_types_take_positions_but_get_no_test():
    out = files(task="task/none")
    out["slurm.conf"] = out["slurm.conf"].replace("Gres=gpu:a100:3,gpu:h100:2", "Gres=gpu:1g.10gb:2,gpu:h100:2")
    out["mix01/gres.conf"] = ("Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap21\n"
                              "Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap30\n"
                              "Name=gpu Type=h100 File=/dev/nvidia[1-2]\n")
    plan = smoke.smoke_plan(out, usable_nodes=["mix01"])
    assert plan == [{"type": "h100", "node": "mix01", "count": 2, "gres": "gpu:h100:2", "expected": "2,3",
                     "busy": False}]


def test_check_visible_devices():
    assert smoke.check_visible_devices("0,1\n", "0,1") is None
    assert smoke.check_visible_devices("2,3", "0,1") == "CUDA_VISIBLE_DEVICES=2,3, expected 0,1"
    assert smoke.check_visible_devices("", "0") == "CUDA_VISIBLE_DEVICES=(unset), expected 0"


def test_untyped_gpus_get_a_smoke_test_too():
    files = {"slurm.conf": "TaskPlugin=task/none\nGresTypes=gpu\nNodeName=n1 Gres=gpu:2\n",
             "n1/gres.conf": "NodeName=n1 Name=gpu File=/dev/nvidia[0-1]\n"}
    assert smoke.smoke_plan(files) == [{"type": "", "node": "n1", "count": 2, "gres": "gpu:2", "expected": "0,1",
                                        "busy": False}]


def test_confinement_from_the_sites_files_in_include_mode():
    files = {"slurm.conf": "TaskPlugin=task/none\nGresTypes=gpu\nNodeName=n1 Gres=gpu:a:2\n",
             "n1/gres.conf": "NodeName=n1 Name=gpu Type=a File=/dev/nvidia[0-1]\n"}
    site = {"slurm.conf": "TaskPlugin=task/cgroup\n", "cgroup.conf": "ConstrainDevices=yes\n"}
    assert smoke.smoke_plan(files, confinement=site)[0]["expected"] == "0,1"


def test_node_sruns_test_one_node_with_the_mig_types_the_render_leaves_to_it():
    # the render leaves a MIG node's MultipleFiles lines to the node: its gres.conf names the whole GPU only, so every
    # type of its Gres= is tested at its position (the MIG runbook, after the node's new layout)
    out = files(task="task/none")
    out["slurm.conf"] = out["slurm.conf"].replace("Gres=gpu:a100:3,gpu:h100:2", "Gres=gpu:3g.40gb:1,gpu:1g.10gb:2,gpu:a100:1")
    out["mix01/gres.conf"] = "Name=gpu Type=a100 File=/dev/nvidia1\n"
    plan = smoke.node_sruns(out, ["mix01"])
    assert [(p["node"], p["gres"], p["expected"]) for p in plan] == [
        ("mix01", "gpu:1g.10gb:2", "1,2"), ("mix01", "gpu:3g.40gb:1", "0"), ("mix01", "gpu:a100:1", "3")]
    # confined: numbered from 0 per srun
    out["slurm.conf"] = out["slurm.conf"].replace("TaskPlugin=task/none", "TaskPlugin=task/cgroup")
    assert [p["expected"] for p in smoke.node_sruns(out, ["mix01"])] == ["0,1", "0", "0"]


def test_node_sruns_take_confinement_from_the_sites_files_in_include_mode_only():
    out = files(task="task/none")
    site = {"slurm.conf": "TaskPlugin=task/cgroup\n", "cgroup.conf": "ConstrainDevices=yes\n"}
    assert [p["expected"] for p in smoke.node_sruns(out, ["mix01"], "include", site)] == ["0,1,2", "0,1"]
    assert [p["expected"] for p in smoke.node_sruns(out, ["mix01"], "files", site)] == ["0,1,2", "3,4"]
    assert smoke.node_sruns(out, []) == []
