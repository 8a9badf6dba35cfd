"""playbooks/verify-gres.yml end to end: render from an inventory, stage on two emulated nodes (local
connection), verify, report, clean up, change nothing."""
import glob
import os

import pytest

from emulated_node import Node, flat, node_nvidia_smi, run_playbook_json, write_inventory

SUMMARY = "One line per node (counts per GPU type as slurm.conf/gres.conf/nvidia-smi)"
VERIFY = "Verify the staged files against this node"


def run(tmp_path, nodes, *extra):
    """Run verify-gres.yml with a private TMPDIR, so the test sees exactly the staging directories it made."""
    host_vars = {}
    for node in nodes:
        host_vars[node.name] = {
            "slurm_node_sockets": 2, "slurm_node_cores_per_socket": 32, "slurm_node_threads_per_core": 2,
            "slurm_node_real_memory": 1000,
            "slurm_gres_gpus": [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)],
            "slurm_gres_verify_nvidia_smi": node_nvidia_smi(node),
            "slurm_gres_verify_sysfs_root": node.root,
            "slurm_gres_verify_dev_root": node.dev_root,
            "slurm_gres_verify_slurmd_version": "24.11.1",
        }
    inventory = write_inventory(tmp_path, nodes, host_vars, {"slurm_cluster_name": "verify"})
    # -e gives a string: the role must still read it as a boolean
    return run_playbook_json(inventory, "verify-gres.yml", "-e", "slurm_gres_verify_show_table=true", *extra,
                             env={"TMPDIR": private_tmp(tmp_path)})


def private_tmp(tmp_path):
    path = os.path.join(str(tmp_path), "tmp")
    os.makedirs(path, exist_ok=True)
    return path


def summary(tasks):
    return next(iter(tasks[SUMMARY].values()))["msg"]


def stage_dirs(tmp_path):
    return glob.glob(os.path.join(private_tmp(tmp_path), "*slurm_gres_verify*"))


@pytest.fixture
def two_nodes(tmp_path):
    return [Node(tmp_path / "a01", name="gpu-a01"), Node(tmp_path / "a02", name="gpu-a02")]


def test_correct_nodes_pass_and_nothing_is_left_behind(tmp_path, two_nodes):
    rc, tasks, out = run(tmp_path, two_nodes)
    assert rc == 0, out
    assert summary(tasks) == ["gpu-a01: ok, 0 warning(s); gpu:a100 8/8/8", "gpu-a02: ok, 0 warning(s); gpu:a100 8/8/8"]
    assert tasks["Report"]["gpu-a01"]["msg"][0] == "gres_verify: the staged files fit node gpu-a01 (0 error(s), " \
                                                   "0 warning(s))"
    # the node checked exactly what the render role produced for it
    assert tasks[VERIFY]["gpu-a01"]["counts"] == {"gpu:a100": {"slurm_conf": 8, "gres_conf": 8, "nvidia_smi": 8}}
    staged = tasks["Create the temporary staging directory"]["gpu-a01"]["path"]
    assert staged.startswith(private_tmp(tmp_path)) and not os.path.exists(staged)
    assert stage_dirs(tmp_path) == []
    assert all(not r.get("changed") for results in tasks.values() for r in results.values())


def test_a_broken_node_fails_with_its_table_the_other_is_still_verified(tmp_path, two_nodes):
    two_nodes[1].lose(6)
    rc, tasks, out = run(tmp_path, two_nodes)
    assert rc != 0
    failed = tasks[VERIFY]["gpu-a02"]
    assert failed["failed"] is True
    assert "declares 8 a100, nvidia-smi sees 7" in failed["msg"]
    assert summary(tasks) == ["gpu-a01: ok, 0 warning(s); gpu:a100 8/8/8",
                              "gpu-a02: FAILED or unreachable (see its findings table above)"]
    assert stage_dirs(tmp_path) == []


def test_check_mode_verifies_too(tmp_path, two_nodes):
    two_nodes[0].remove_device(1)
    rc, tasks, out = run(tmp_path, two_nodes, "--check")
    assert rc != 0
    assert "/dev/nvidia1 does not exist" in flat(tasks[VERIFY]["gpu-a01"]["msg"])
    assert summary(tasks)[1].startswith("gpu-a02: ok")
