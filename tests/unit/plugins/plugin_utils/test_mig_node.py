"""The MIG runbook's controller-side helpers (plugins/plugin_utils/mig_node.py): live layouts, step models."""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import render


def T(profile, gpu_type="a100"):
    return mig_gres_type(gpu_type, profile)


def two_node_model():
    def gpus(mig):
        return [{"index": 0, "type": "a100", "model": "A100-80GB", "cores": "0-7", "mig": mig},
                {"index": 1, "type": "a100", "cores": "0-7"}]
    hv = {"ctl": {}}
    for host in ("gpu-a01", "gpu-a02"):
        hv[host] = {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 8, "hpc_gres_node_threads_per_core": 1,
                    "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus(["3g.40gb", "3g.40gb"])}
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
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.plan import live_layouts
    plan = [{"index": 0, "mig_mode": "Enabled", "current": {"3g.40gb": 1, "1g.10gb": 2}},
            {"index": 1, "mig_mode": "Disabled", "current": {}},
            {"index": 2, "mig_mode": "[N/A]", "current": {}}]
    assert live_layouts(plan) == {0: ["1g.10gb", "1g.10gb", "3g.40gb"], 1: None, 2: None}


# --- the runbook's idempotence decision -----------------------------------------------------------------------

def a30_step(mig=("2g.12gb", "1g.6gb", "1g.6gb")):
    from a30_mig import a30_facts  # noqa: F401  (real A30 MIG facts)
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.cluster_render import mig_node
    hv = {"ctl": {}, "gpu-a30": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 8,
                                 "hpc_gres_node_threads_per_core": 1, "hpc_gres_node_real_memory": 1000,
                                 "hpc_gres_gpus": [{"index": 0, "type": "a30", "model": "A30-24GB", "cores": "0-7",
                                                    "mig": list(mig)},
                                                   {"index": 1, "type": "a30", "cores": "0-7"}]}}
    m = model.build_cluster_model(hv, {"slurmctld": ["ctl"], "slurmd": ["gpu-a30"]}, {})
    return {"files": render.render_all(m), "mig_nodes": {"gpu-a30": mig_node(m, m["nodes"][0])}}


def settled(step, facts):
    """The files a node has after a finished run: gres.conf from its live devices, installed and applied."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.gres_conf import node_gres_conf
    gres = node_gres_conf(step["mig_nodes"]["gpu-a30"]["spec"], facts)
    files = {"gres.conf": gres, "slurm.conf": step["files"]["slurm.conf"]}
    return {"contents": {"installed": dict(files), "applied": dict(files)}}


def test_runbook_leaves_a_finished_node_alone_and_says_why_otherwise():
    from a30_mig import a30_facts
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import runbook_status
    step, facts = a30_step(), a30_facts()
    check = {"changed": False, "hw": facts}
    idle = {"state_flags": [], "reason": None}
    read = settled(step, facts)
    assert runbook_status("gpu-a30", check, idle, read, step, "MIG reconfiguration") == {
        "done": True, "why": [], "ours": False}

    # the GPUs still need the layout
    out = runbook_status("gpu-a30", dict(check, changed=True), idle, read, step, "MIG reconfiguration")
    assert out["done"] is False and out["why"][0] == "the GPUs do not have the declared MIG layout"
    # a run stopped after the install, before slurmd restarted
    stopped = settled(step, facts)
    stopped["contents"]["applied"]["gres.conf"] = "# the old one\n"
    assert runbook_status("gpu-a30", check, idle, stopped, step, "MIG reconfiguration")["why"] == [
        "slurmd does not run with the installed gres.conf yet"]
    # a run stopped before the resume: the runbook's own drain is not done, an admin's is not ours
    ours = {"state_flags": ["DRAIN"], "reason": "MIG reconfiguration"}
    out = runbook_status("gpu-a30", check, ours, read, step, "MIG reconfiguration")
    assert out == {"done": False, "why": ["the node is still drained by this runbook (MIG reconfiguration)"],
                   "ours": True}
    admin = {"state_flags": ["DRAIN"], "reason": "bad fan"}
    assert runbook_status("gpu-a30", check, admin, read, step, "MIG reconfiguration")["done"] is True
    # another layout declared than the GPUs have: the live check names it
    other = a30_step(mig=("2g.12gb", "2g.12gb"))
    out = runbook_status("gpu-a30", check, idle, read, other, "MIG reconfiguration")
    assert out["done"] is False and "missing 1 x 2g.12gb" in out["why"][0]
    assert "slurm.conf is not this step's" in out["why"]
