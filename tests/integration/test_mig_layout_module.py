"""hpc.slurm_gres.mig_layout against an emulated 8x A100-80GB node whose nvidia-smi learns MIG (emu_mig.py).

The first group drives ``mig_apply.apply_layouts`` (the module's logic) with a runner that executes the
emulated nvidia-smi as a subprocess; the second runs the module itself through ``ansible``. The emulator
enforces the driver's rules independently of ``mig.py`` (its own placement tables, from the real -lgipp
recordings), so a plan that places instances wrongly fails here.
"""
import json
import os
import subprocess

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import apply as mig_apply

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import plan as mig_plan
from emulated_node import NVIDIA_SMI, Node, run_module

A100_LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path / "node")


def runner(node, log):
    env = dict(node.env, NVSMI_EMU_ROOT=node.root, NVSMI_EMU_DEV_ROOT=node.dev_root, LC_ALL="C")

    def run(argv):
        log.append(list(argv))
        proc = subprocess.run(argv, env=env, check=False, capture_output=True, text=True, timeout=60)
        return proc.returncode, proc.stdout, proc.stderr
    return run


def apply(node, layouts, log=None, **kw):
    log = [] if log is None else log
    return mig_apply.apply_layouts(runner(node, log), node.name, layouts, sysfs_root=node.root,
                                   nvidia_smi_path=NVIDIA_SMI, **kw)


def profile(node):
    with open(node.profile_path) as fh:
        return json.load(fh)


def mutating(log):
    return [a[1:] for a in log if "-mig" in a or any(x in a for x in ("-cgi", "-dci", "-dgi", "-cci"))]


def fake_process(root, pid, comm, uid):
    proc = os.path.join(root, "proc", str(pid))
    os.makedirs(proc)
    with open(os.path.join(proc, "status"), "w") as fh:
        fh.write("Name:\t%s\nUid:\t%d\t%d\t%d\t%d\n" % (comm, uid, uid, uid, uid))
    with open(os.path.join(proc, "stat"), "w") as fh:
        fh.write("%d (%s) S 1 %d %d 0 -1 4194304 " % (pid, comm, pid, pid) + " ".join(["0"] * 12) + " 100 0 0\n")
    with open(os.path.join(proc, "comm"), "w") as fh:
        fh.write(comm + "\n")
    with open(os.path.join(proc, "cmdline"), "w") as fh:
        fh.write(comm + "\0train.py\0")


def test_whole_gpu_to_layout_then_idempotent_then_back(node):
    log = []
    result = apply(node, {0: A100_LAYOUT, "1": None}, log)
    assert result["changed"] is True
    assert mutating(log) == [
        ["-i", "0", "-mig", "1"],
        ["mig", "-i", "0", "-cgi", "3g.40gb:4", "-C"],
        ["mig", "-i", "0", "-cgi", "2g.20gb:0", "-C"],
        ["mig", "-i", "0", "-cgi", "1g.10gb:2", "-C"],
        ["mig", "-i", "0", "-cgi", "1g.10gb:3", "-C"],
    ]
    gpu0 = result["gpus"][0]
    assert gpu0["mig_mode"] == "Enabled"
    assert sorted(d["profile"] for d in gpu0["mig_devices"]) == sorted(A100_LAYOUT)
    # the emulated driver gave the swizzle ids: 3g at 4 -> GI 2, 2g at 0 -> GI 3, 1g at 2/3 -> GI 9/10
    assert sorted(d["gi_id"] for d in gpu0["mig_devices"]) == [2, 3, 9, 10]
    hw0 = result["hw"]["gpus"][0]
    assert all(d["gi_cap_minor"] is not None and d["ci_cap_minor"] is not None for d in hw0["mig_devices"])
    assert result["gpus"][1]["mig_mode"] == "Disabled"
    # the cap device nodes exist, as nvidia-modprobe makes them on a real node
    for d in hw0["mig_devices"]:
        assert os.path.exists(os.path.join(node.dev_root, "dev", "nvidia-caps", "nvidia-cap%d" % d["gi_cap_minor"]))

    log2 = []
    again = apply(node, {0: list(reversed(A100_LAYOUT)), 1: []}, log2)
    assert again["changed"] is False and mutating(log2) == []
    assert again["plan"][0]["action"] == "none"

    log3 = []
    back = apply(node, {0: None}, log3)
    assert back["changed"] is True
    assert mutating(log3)[-1] == ["-i", "0", "-mig", "0"]
    assert [a for a in mutating(log3) if "-dci" in a][0] == ["mig", "-i", "0", "-gi", "2", "-ci", "0", "-dci"]
    assert profile(node)["gpus"][0]["mig_mode"] == "Disabled"


def test_changed_layout_is_rebuilt_and_checked(node):
    apply(node, {0: A100_LAYOUT})
    log = []
    result = apply(node, {0: ["4g.40gb", "2g.20gb", "1g.10gb"]}, log)
    steps = mutating(log)
    assert [s[-1] for s in steps] == ["-dci"] * 4 + ["-dgi"] * 4 + ["-C"] * 3
    assert steps[-3:] == [["mig", "-i", "0", "-cgi", "4g.40gb:0", "-C"], ["mig", "-i", "0", "-cgi", "2g.20gb:4", "-C"],
                          ["mig", "-i", "0", "-cgi", "1g.10gb:6", "-C"]]
    assert sorted(d["profile"] for d in result["gpus"][0]["mig_devices"]) == ["1g.10gb", "2g.20gb", "4g.40gb"]


@pytest.mark.ansible_core
def test_check_mode_reports_the_plan_and_changes_nothing(node):
    before = profile(node)
    log = []
    result = apply(node, {0: A100_LAYOUT}, log, check_mode=True)
    assert result["changed"] is True and mutating(log) == []
    assert profile(node) == before
    assert [c[1:] for c in result["plan"][0]["commands"]][0] == ["-i", "0", "-mig", "1"]
    assert result["plan"][0]["commands"][0][0] == NVIDIA_SMI


def test_compute_process_refuses_naming_pid_and_user_and_changes_nothing(node):
    apply(node, {0: ["7g.80gb"]})
    prof = profile(node)
    gpu = prof["gpus"][0]
    ci = gpu["mig"]["gpu_instances"][0]["compute_instances"][0]
    prof["processes"] = [{"gpu_uuid": ci["uuid"], "pid": 31337, "process_name": "python3", "used_memory_mib": 70000}]
    with open(node.profile_path, "w") as fh:
        json.dump(prof, fh)
    fake_process(node.root, 31337, "python3", 0)
    log = []
    with pytest.raises(mig_apply.ApplyError) as err:
        apply(node, {0: A100_LAYOUT}, log)
    msg = str(err.value)
    assert "host gpu-a01" in msg and "nothing was changed" in msg
    assert "pid 31337 (python3, user root, 70000 MiB)" in msg
    assert mutating(log) == []
    assert profile(node)["gpus"][0]["mig"] == gpu["mig"]


def test_invalid_layout_is_refused_before_any_command(node):
    log = []
    with pytest.raises(mig_apply.ApplyError) as err:
        apply(node, {0: ["3g.40gb", "3g.40gb", "1g.10gb"]}, log)
    assert "host gpu-a01: hpc_gres_gpus[0].mig: expected a layout whose instances can all be placed" in str(err.value)
    assert mutating(log) == []


def test_wrong_model_is_refused(node):
    with pytest.raises(mig_apply.ApplyError, match=r"hpc_gres_gpus\[0\]\.model: expected the GPU's model A100-80GB"):
        apply(node, {0: ["1g.5gb"]}, models={0: "A100-40GB"})


def test_pending_mode_change_stops_with_reset_advice_and_rerun_refuses(node):
    prof = profile(node)
    prof["gpus"][0]["mig_mode_change"] = "pending"
    with open(node.profile_path, "w") as fh:
        json.dump(prof, fh)
    log = []
    with pytest.raises(mig_apply.ApplyError) as err:
        apply(node, {0: A100_LAYOUT}, log)
    assert "MIG mode is Disabled with Enabled pending" in str(err.value)
    assert "nvidia-smi -r -i 0" in str(err.value)
    assert mutating(log) == [["-i", "0", "-mig", "1"]]  # nothing after the mode change ran
    with pytest.raises(mig_apply.ApplyError, match="no pending MIG mode change"):
        apply(node, {0: A100_LAYOUT})


def test_part_way_state_converges_on_rerun(node):
    """A run stopped part-way (here: one compute instance destroyed by hand) is finished by the next run."""
    apply(node, {0: A100_LAYOUT})
    gi = profile(node)["gpus"][0]["mig"]["gpu_instances"][-1]["id"]
    subprocess.run([NVIDIA_SMI, "mig", "-i", "0", "-gi", str(gi), "-dci"], env=node.env, check=True,
                   capture_output=True)
    log = []
    result = apply(node, {0: A100_LAYOUT}, log)
    assert result["changed"] is True and result["plan"][0]["action"] == "rebuild"
    assert sorted(d["profile"] for d in result["gpus"][0]["mig_devices"]) == sorted(A100_LAYOUT)
    assert apply(node, {0: A100_LAYOUT})["changed"] is False


def test_result_passes_the_planners_own_check(node):
    result = apply(node, {0: ["1g.10gb"] * 7, 2: ["1g.20gb"] * 4})
    state = mig_apply.read_state(runner(node, []), node.root, NVIDIA_SMI)
    gpus = {g["index"]: g for g in state["gpus"]}
    assert mig_plan.check_applied("gpu-a01", ["1g.10gb"] * 7, gpus[0]) == []
    assert mig_plan.check_applied("gpu-a01", ["1g.20gb"] * 4, gpus[2]) == []
    assert result["changed"] is True


def test_rtx_pro_6000_layouts_with_its_suffixed_profiles(tmp_path):
    """RTX PRO 6000 Blackwell: the 12-unit grid and the +me.all / -me / +gfx profiles. The emulated driver places
    and numbers GIs as the real -lgi recordings show (1g at 0/3/6/9 -> GI 3-6, 2g at 0 -> GI 1) and refuses
    engines beyond the GPU's on its own."""
    node = Node(tmp_path / "node", gpu_name="NVIDIA RTX PRO 6000 Blackwell Server Edition")
    layouts = {0: ["1g.24gb+me.all"] + ["1g.24gb-me"] * 3, 1: ["2g.48gb+gfx", "1g.24gb", "1g.24gb"]}
    log = []
    result = apply(node, layouts, log)
    assert result["changed"] is True
    assert [a for a in mutating(log) if "-cgi" in a] == [
        ["mig", "-i", "0", "-cgi", "1g.24gb+me.all:0", "-C"], ["mig", "-i", "0", "-cgi", "1g.24gb-me:3", "-C"],
        ["mig", "-i", "0", "-cgi", "1g.24gb-me:6", "-C"], ["mig", "-i", "0", "-cgi", "1g.24gb-me:9", "-C"],
        ["mig", "-i", "1", "-cgi", "2g.48gb+gfx:0", "-C"], ["mig", "-i", "1", "-cgi", "1g.24gb:6", "-C"],
        ["mig", "-i", "1", "-cgi", "1g.24gb:9", "-C"]]
    by_gpu = {g["index"]: sorted((d["gi_id"], d["profile"]) for d in g["mig_devices"]) for g in result["gpus"]}
    assert by_gpu[0] == [(3, "1g.24gb+me.all"), (4, "1g.24gb-me"), (5, "1g.24gb-me"), (6, "1g.24gb-me")]
    assert by_gpu[1] == [(1, "2g.48gb+gfx"), (5, "1g.24gb"), (6, "1g.24gb")]
    state = mig_apply.read_state(runner(node, []), node.root, NVIDIA_SMI)
    gpus = {g["index"]: g for g in state["gpus"]}
    assert all(mig_plan.check_applied(node.name, layouts[i], gpus[i]) == [] for i in layouts)
    assert apply(node, layouts)["changed"] is False
    # the driver refuses a plain 1g next to +me.all (its engines are taken); the planner refuses it first
    log = []
    with pytest.raises(mig_apply.ApplyError, match="media engines"):
        apply(node, {2: ["1g.24gb+me.all", "1g.24gb"]}, log)
    assert mutating(log) == []
    env = dict(node.env, NVSMI_EMU_ROOT=node.root, NVSMI_EMU_DEV_ROOT=node.dev_root)
    for argv in (["-i", "2", "-mig", "1"], ["mig", "-i", "2", "-cgi", "65:0", "-C"]):
        assert subprocess.run([NVIDIA_SMI] + argv, env=env, capture_output=True, check=False).returncode == 0
    refused = subprocess.run([NVIDIA_SMI, "mig", "-i", "2", "-cgi", "14:3", "-C"], env=env, capture_output=True,
                             text=True, check=False)
    assert refused.returncode != 0 and "Insufficient Resources" in refused.stdout + refused.stderr


# --- the module through ansible -------------------------------------------------------------------------

def module(node, args, check=False):
    args = dict(args, nvidia_smi=NVIDIA_SMI, sysfs_root=node.root, host=node.name)
    return run_module(node, "hpc.slurm_gres.mig_layout", args, check=check,
                      extra_env={"NVSMI_EMU_ROOT": node.root, "NVSMI_EMU_DEV_ROOT": node.dev_root})


@pytest.mark.ansible_core
def test_module_check_apply_idempotent(node):
    rc, result = module(node, {"layouts": {"0": A100_LAYOUT}, "models": {"0": "A100-80GB"}}, check=True)
    assert rc == 0 and result["changed"] is True, result.get("msg")
    assert profile(node)["gpus"][0]["mig_mode"] == "Disabled"
    rc, result = module(node, {"layouts": {"0": A100_LAYOUT}, "models": {"0": "A100-80GB"}})
    assert rc == 0 and result["changed"] is True, result.get("msg")
    assert sorted(d["profile"] for d in result["gpus"][0]["mig_devices"]) == sorted(A100_LAYOUT)
    rc, result = module(node, {"layouts": {"0": A100_LAYOUT}})
    assert rc == 0 and result["changed"] is False, result.get("msg")


@pytest.mark.ansible_core
def test_module_refusal_is_a_failure_with_the_problems(node):
    rc, result = module(node, {"layouts": {"0": ["4g.40gb", "4g.40gb"]}})
    assert rc != 0 and result.get("failed") is True
    assert "expected at most 1 x 4g.40gb per A100-80GB, found 2 x 4g.40gb" in result["msg"]
    assert result["changed"] is False and result["results"] == []
