"""The MIG runbook's controller-side helpers (plugins/plugin_utils/mig_node.py): live layouts, step models."""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import render


def T(profile, gpu_type="a100"):
    return mig_gres_type(gpu_type, profile)


def two_node_model():
    gpus = lambda mig: [{"index": 0, "type": "a100", "model": "A100-80GB", "cores": "0-7", "mig": mig},
                        {"index": 1, "type": "a100", "cores": "0-7"}]
    hv = {"ctl": {}}
    for host in ("gpu-a01", "gpu-a02"):
        hv[host] = {"slurm_node_sockets": 1, "slurm_node_cores_per_socket": 8, "slurm_node_threads_per_core": 1,
                    "slurm_node_real_memory": 1000, "slurm_gres_gpus": gpus(["3g.40gb", "3g.40gb"])}
    return model.build_cluster_model(hv, {"slurmctld": ["ctl"], "slurmd": ["gpu-a01", "gpu-a02"]}, {})


def node_gres_line(slurm_conf, node):
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
    return parse_slurm_conf(slurm_conf)["nodes"][node]["gres"]


def test_step_model_changes_only_the_node_whose_turn_it_is():
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import step_model
    m = two_node_model()
    live = {"gpu-a01": {0: None, 1: None}, "gpu-a02": {"0": None, "1": None}}  # both still whole GPUs
    files = render.render_all(step_model(m, "gpu-a01", live))
    mig = "gpu:" + T("3g.40gb", "a100")
    assert node_gres_line(files["slurm.conf"], "gpu-a01") == {mig: 2, "gpu:a100": 1}
    assert node_gres_line(files["slurm.conf"], "gpu-a02") == {"gpu:a100": 2}
    assert "MultipleFiles" not in files["gpu-a02/gres.conf"] and "# MIG" not in files["gpu-a02/gres.conf"]
    # after gpu-a01 is done its live layout is the new one; the next step changes gpu-a02 only
    live["gpu-a01"] = {0: ["3g.40gb", "3g.40gb"], 1: None}
    files = render.render_all(step_model(m, "gpu-a02", live))
    assert node_gres_line(files["slurm.conf"], "gpu-a01") == {mig: 2, "gpu:a100": 1}
    assert node_gres_line(files["slurm.conf"], "gpu-a02") == {mig: 2, "gpu:a100": 1}
    assert m["nodes"][1]["gpus"][0]["mig"] == ["3g.40gb", "3g.40gb"]  # input untouched


def test_live_layouts_from_a_mig_layout_plan():
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import live_layouts
    plan = [{"index": 0, "mig_mode": "Enabled", "current": {"3g.40gb": 1, "1g.10gb": 2}},
            {"index": 1, "mig_mode": "Disabled", "current": {}},
            {"index": 2, "mig_mode": "[N/A]", "current": {}}]
    assert live_layouts(plan) == {0: ["1g.10gb", "1g.10gb", "3g.40gb"], 1: None, 2: None}
