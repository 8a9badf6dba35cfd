"""The MIG apply planner (plugins/module_utils/mig/plan.py): idempotence, order, refusals.

Current states come from real outputs parsed by the project's parsers where a real output exists
(A30 ``-lgi``, H200-class ``--query-gpu`` / ``--query-compute-apps``).
"""

import copy
import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import plan as mig_plan
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import (
    parse_mig_lci,
    parse_mig_lgi,
    parse_query_apps,
    parse_query_gpu,
)
import testpaths

FIXTURES = testpaths.FIXTURES


def fixture(*parts):
    with open(os.path.join(FIXTURES, *parts), encoding="utf-8") as fh:
        text = fh.read()
    assert text.startswith("# source:")
    return text.split("# ---\n", 1)[1]


def a30_gpu():
    """The real A30 after `-cgi 14 -C` twice and `-cgi 5 -C`: GIs 3, 4 (1g.6gb) and 2 (2g.12gb), CI 0 each."""
    gis = parse_mig_lgi(fixture("nvidia-smi", "mig", "a30-lgi-mixed-3instances.txt"))
    return {
        "index": 0, "uuid": "GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bcd", "name": "NVIDIA A30",
        "mig_mode": "Enabled", "gpu_instances": gis,
        "compute_instances": [{"gpu": 0, "gi_id": g["gi_id"], "ci_id": 0, "profile": g["profile"]} for g in gis],
        "mig_devices": [{"uuid": "MIG-1b8509c0-e60d-502d-8263-d434867998aa", "profile": "2g.12gb"}],
    }


def argvs(plan):
    return [" ".join(s["argv"]) for s in plan["steps"]]


def test_applied_layout_is_left_alone_whatever_the_order():
    plan = mig_plan.plan_gpu("gpu-a30", ["1g.6gb", "2g.12gb", "1g.6gb"], a30_gpu(), model="A30-24GB")
    assert plan["action"] == "none" and plan["steps"] == [] and plan["problems"] == []
    assert plan["current"] == {"1g.6gb": 2, "2g.12gb": 1}
    assert mig_plan.check_applied("gpu-a30", ["2g.12gb", "1g.6gb", "1g.6gb"], a30_gpu()) == []


def test_changed_layout_destroys_cis_then_gis_then_creates_largest_first():
    plan = mig_plan.plan_gpu("gpu-a30", ["1g.6gb", "2g.12gb+me", "1g.6gb"], a30_gpu(), model="A30-24GB")
    assert plan["action"] == "rebuild"
    assert argvs(plan) == [
        "nvidia-smi mig -i 0 -gi 2 -ci 0 -dci",
        "nvidia-smi mig -i 0 -gi 3 -ci 0 -dci",
        "nvidia-smi mig -i 0 -gi 4 -ci 0 -dci",
        "nvidia-smi mig -i 0 -gi 2 -dgi",
        "nvidia-smi mig -i 0 -gi 3 -dgi",
        "nvidia-smi mig -i 0 -gi 4 -dgi",
        "nvidia-smi mig -i 0 -cgi 2g.12gb+me:0 -C",
        "nvidia-smi mig -i 0 -cgi 1g.6gb:2 -C",
        "nvidia-smi mig -i 0 -cgi 1g.6gb:3 -C",
    ]
    assert mig_plan.check_applied("gpu-a30", ["1g.6gb", "2g.12gb+me", "1g.6gb"], a30_gpu())


def test_gi_without_its_default_ci_is_rebuilt():
    gpu = a30_gpu()
    gpu["compute_instances"] = [c for c in gpu["compute_instances"] if c["gi_id"] != 4]
    plan = mig_plan.plan_gpu("gpu-a30", ["2g.12gb", "1g.6gb", "1g.6gb"], gpu, model="A30-24GB")
    assert plan["action"] == "rebuild"
    gpu = a30_gpu()
    gpu["compute_instances"][0] = dict(gpu["compute_instances"][0], profile="1c.2g.12gb")
    assert mig_plan.plan_gpu("gpu-a30", ["2g.12gb", "1g.6gb", "1g.6gb"], gpu)["action"] == "rebuild"


def test_enable_mig_then_create_and_disable_when_layout_removed():
    gpu = {"index": 3, "uuid": "GPU-x", "name": "NVIDIA A100-SXM4-80GB", "mig_mode": "Disabled",
           "gpu_instances": [], "compute_instances": []}
    plan = mig_plan.plan_gpu("gpu-a01", ["3g.40gb", "3g.40gb"], gpu, model="A100-80GB")
    assert plan["action"] == "enable_and_create"
    assert argvs(plan) == ["nvidia-smi -i 3 -mig 1", "nvidia-smi mig -i 3 -cgi 3g.40gb:0 -C",
                           "nvidia-smi mig -i 3 -cgi 3g.40gb:4 -C"]
    off = mig_plan.plan_gpu("gpu-a30", None, a30_gpu())
    assert off["action"] == "disable"
    assert argvs(off)[-1] == "nvidia-smi -i 0 -mig 0"
    assert [s["action"] for s in off["steps"]][:3] == ["destroy_ci"] * 3
    assert mig_plan.plan_gpu("gpu-a01", None, gpu)["steps"] == []


def test_busy_gpu_refuses_naming_pid_process_and_user():
    gpus = parse_query_gpu(fixture("nvidia-smi", "query", "h200class-8gpu-index-uuid-mem-util.txt"),
                           ("index", "uuid", "memory.used", "memory.total", "utilization.gpu"))
    procs = parse_query_apps(fixture("nvidia-smi", "query", "h200class-8gpu-compute-apps-notfound.txt"))
    procs[2]["user"] = "alice"
    for g in gpus:
        g.update({"mig_mode": "Disabled", "gpu_instances": [], "compute_instances": []})
    plan = mig_plan.plan_node("gpu-h01", {2: ["3g.71gb", "3g.71gb"]}, gpus, procs, models={2: "H200-141GB"})
    assert not plan["ok"] and plan["commands"] == []
    assert len(plan["problems"]) == 1
    p = plan["problems"][0]
    assert p.host == "gpu-h01"
    assert p.field == "GPU 2 (GPU-4e9e74b7-4977-f04d-3af3-ccfe5f570e90)"
    assert p.found == "pid 1425258 (python3, user alice, 105842 MiB)"
    # a GPU that is already right is not refused because of its processes
    gpus[7].update({"mig_mode": "Enabled",
                    "gpu_instances": [{"gi_id": 0, "profile": "7g.141gb"}],
                    "compute_instances": [{"gi_id": 0, "ci_id": 0, "profile": "7g.141gb"}]})
    ok = mig_plan.plan_node("gpu-h01", {7: ["7g.141gb"]}, gpus, procs, models={7: "H200-141GB"})
    assert ok["ok"] and not ok["changed"] and ok["commands"] == []


def test_processes_on_a_mig_device_count_too():
    procs = [{"gpu_uuid": "MIG-1b8509c0-e60d-502d-8263-d434867998aa", "pid": 77, "process_name": "a.out"}]
    plan = mig_plan.plan_node("gpu-a30", {0: ["4g.24gb"]}, [a30_gpu()], procs)
    assert not plan["ok"]
    assert plan["problems"][0].found == "pid 77 (a.out, user unknown)"


def test_invalid_layout_model_mismatch_and_missing_gpu_refuse_everything():
    plan = mig_plan.plan_node("gpu-a30", {0: ["4g.24gb", "1g.6gb"], 5: ["4g.24gb"]}, [a30_gpu()],
                              models={0: "A30-24GB"})
    fields = sorted(p.field for p in plan["problems"])
    assert fields == ["hpc_gres_gpus[0].mig", "hpc_gres_gpus[5].mig"]
    assert plan["commands"] == []
    mismatch = mig_plan.plan_gpu("gpu-a30", ["1g.10gb"], a30_gpu(), model="A100-80GB")
    assert [p.field for p in mismatch["problems"]] == ["hpc_gres_gpus[0].model"]
    assert "A30-24GB" in mismatch["problems"][0].expected


def test_pending_mode_and_non_mig_gpu():
    gpu = {"index": 0, "uuid": "GPU-y", "name": "NVIDIA A100-SXM4-40GB", "mig.mode.current": "Disabled",
           "mig.mode.pending": "Enabled", "gpu_instances": [], "compute_instances": []}
    p = mig_plan.plan_gpu("n", ["7g.40gb"], gpu)["problems"][0]
    assert p.found == "Disabled with Enabled pending" and "nvidia-smi -r -i 0" in p.hint
    no_mig = {"index": 0, "uuid": "GPU-z", "name": "NVIDIA A30", "mig_mode": "[N/A]"}
    assert mig_plan.plan_gpu("n", ["4g.24gb"], no_mig)["problems"][0].found == "[N/A]"


def test_plan_node_commands_are_in_gpu_then_step_order():
    a = a30_gpu()
    b = copy.deepcopy(a)
    b.update({"index": 1, "uuid": "GPU-other", "mig_devices": []})
    for row in b["gpu_instances"] + b["compute_instances"]:
        row["gpu"] = 1
    plan = mig_plan.plan_node("gpu-a30", {1: ["4g.24gb"], 0: ["4g.24gb"]}, [a, b])
    assert plan["ok"] and plan["changed"]
    gpu_of = [cmd[cmd.index("-i") + 1] for cmd in plan["commands"]]
    assert gpu_of == sorted(gpu_of)
    assert plan["commands"][-1] == ["nvidia-smi", "mig", "-i", "1", "-cgi", "4g.24gb:0", "-C"]


def a100_split_gpu():
    """A real A100-SXM4-40GB (driver 580): GI 2 4g.20gb@0, GI 3 2g.10gb@4 split into two 1c CIs, GI 9 1g.5gb@6."""
    return {
        "index": 0, "uuid": "GPU-a100", "name": "NVIDIA A100-SXM4-40GB", "mig_mode": "Enabled",
        "gpu_instances": parse_mig_lgi(fixture("nvidia-smi", "mig", "a100sxm4-40gb-lgi-3gis-driver580-ssup2.txt")),
        "compute_instances": parse_mig_lci(
            fixture("nvidia-smi", "mig", "a100sxm4-40gb-lci-4cis-placement-driver580-ssup2.txt")),
    }


def test_real_compute_instance_split_is_rebuilt_into_default_cis():
    gpu = a100_split_gpu()
    by_gi, clean = mig_plan.current_layout(gpu)
    assert by_gi == {9: "1g.5gb", 3: "2g.10gb", 2: "4g.20gb"} and not clean
    plan = mig_plan.plan_gpu("gpu-a40", ["1g.5gb", "2g.10gb", "4g.20gb"], gpu, model="A100-40GB")
    assert plan["action"] == "rebuild"
    assert argvs(plan) == [
        "nvidia-smi mig -i 0 -gi 2 -ci 0 -dci",
        "nvidia-smi mig -i 0 -gi 3 -ci 0 -dci",
        "nvidia-smi mig -i 0 -gi 3 -ci 1 -dci",
        "nvidia-smi mig -i 0 -gi 9 -ci 0 -dci",
        "nvidia-smi mig -i 0 -gi 2 -dgi",
        "nvidia-smi mig -i 0 -gi 3 -dgi",
        "nvidia-smi mig -i 0 -gi 9 -dgi",
        "nvidia-smi mig -i 0 -cgi 4g.20gb:0 -C",
        "nvidia-smi mig -i 0 -cgi 2g.10gb:4 -C",
        "nvidia-smi mig -i 0 -cgi 1g.5gb:6 -C",
    ]
    # the placements we choose are the ones this real GPU was using
    real = sorted((g["profile"], g["placement_start"], g["placement_size"]) for g in gpu["gpu_instances"])
    assert sorted((o["profile"], o["start"], o["size"]) for o in plan["placement"]) == real


def test_after_rebuild_the_same_gpu_is_clean():
    gpu = a100_split_gpu()
    gpu["compute_instances"] = [c for c in gpu["compute_instances"] if not (c["gi_id"] == 3 and c["ci_id"] == 1)]
    gpu["compute_instances"] = [dict(c, profile="2g.10gb") if c["gi_id"] == 3 else c
                                for c in gpu["compute_instances"]]
    assert mig_plan.check_applied("gpu-a40", ["1g.5gb", "2g.10gb", "4g.20gb"], gpu, model="A100-40GB") == []
    wrong = mig_plan.check_applied("gpu-a40", ["3g.20gb", "3g.20gb"], gpu, model="A100-40GB")
    assert len(wrong) == 1 and wrong[0].found.startswith("MIG mode Enabled, GPU instances 1 x 1g.5gb")
