"""playbooks/verify-gres.yml end to end: render from an inventory, verify on two emulated nodes (local
connection) in one module run each, report, write nothing on the nodes, change nothing."""
import glob
import os
import re

import pytest

from emulated_node import Node, apply_mig_layout, flat, node_nvidia_smi, run_playbook_json, write_inventory

SUMMARY = "One line per node (counts per GPU type as slurm.conf/gres.conf/nvidia-smi)"
TABLES = "The findings table of each node with warnings (of each node, with hpc_gres_verify_show_table)"
VERIFY = "Verify the rendered files against this node; with a plan, also read what it has and plan the install"


def run(tmp_path, nodes, *extra, env=None, cluster=None, **overrides):
    """Run verify-gres.yml with a private TMPDIR, so the test sees exactly the staging directories it made;
    ``overrides``: host name to variables that replace the defaults below; ``env``: more environment; ``cluster``:
    more cluster variables."""
    host_vars = {}
    for node in nodes:
        host_vars[node.name] = {
            "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
            "hpc_gres_node_real_memory": 1000,
            "hpc_gres_gpus": [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)],
            "hpc_gres_verify_nvidia_smi": node_nvidia_smi(node),
            "hpc_gres_verify_sysfs_root": node.root,
            "hpc_gres_verify_dev_root": node.dev_root,
            "hpc_gres_verify_slurmd_version": "24.11.1",
        }
        host_vars[node.name].update(overrides.get(node.name.replace("-", "_"), {}))
    inventory = write_inventory(tmp_path, nodes, host_vars, dict({"hpc_gres_cluster_name": "verify"}, **(cluster or {})))
    # -e gives a string: the role must still read it as a boolean
    return run_playbook_json(inventory, "verify-gres.yml", "-e", "hpc_gres_verify_show_table=true", *extra,
                             env=dict(env or {}, TMPDIR=private_tmp(tmp_path)))


def private_tmp(tmp_path):
    path = os.path.join(str(tmp_path), "tmp")
    os.makedirs(path, exist_ok=True)
    return path


def summary(tasks):
    return next(iter(tasks[SUMMARY].values()))["msg"]


def stage_dirs(tmp_path):
    return glob.glob(os.path.join(private_tmp(tmp_path), "*hpc_gres_verify*"))


@pytest.fixture
def two_nodes(tmp_path):
    return [Node(tmp_path / "a01", name="gpu-a01"), Node(tmp_path / "a02", name="gpu-a02")]


def test_correct_nodes_pass_and_nothing_is_left_behind(tmp_path, two_nodes):
    rc, tasks, out = run(tmp_path, two_nodes)
    assert rc == 0, out
    assert summary(tasks) == ["gpu-a01: ok, 0 warning(s); gpu:a100 8/8/8", "gpu-a02: ok, 0 warning(s); gpu:a100 8/8/8"]
    # the tables come once, from the summary, in inventory order
    tables = next(iter(tasks[TABLES].values()))["msg"]
    titles = [line for line in tables if line.startswith("gres_verify:")]
    assert titles == ["gres_verify: the staged files fit node gpu-a01 (0 error(s), 0 warning(s))",
                      "gres_verify: the staged files fit node gpu-a02 (0 error(s), 0 warning(s))"]
    assert list(tasks[TABLES]) == ["gpu-a01"]  # run_once
    # the node checked exactly what the render role produced for it, and nothing was staged on it
    assert tasks[VERIFY]["gpu-a01"]["counts"] == {"gpu:a100": {"slurm_conf": 8, "gres_conf": 8, "nvidia_smi": 8}}
    assert tasks[VERIFY]["gpu-a01"]["gres_conf_completed"] is False
    assert "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31" in \
        tasks[VERIFY]["gpu-a01"]["gres_conf_text"]
    assert stage_dirs(tmp_path) == []
    assert all(not r.get("changed") for results in tasks.values() for r in results.values())
    # one task per node: no argument check per host (the render checked the role's options once); the tables and
    # the summary run once, on the first node
    assert [name for name, results in tasks.items() if not results.get("gpu-a02", {"skipped": True}).get("skipped")
            ] == [VERIFY]
    # only the node's own files travel to it, not every node's gres.conf of the render
    for node in ("gpu-a01", "gpu-a02"):
        assert sorted(tasks[VERIFY][node]["invocation"]["module_args"]["files"]) == ["%s/gres.conf" % node,
                                                                                     "slurm.conf"]


@pytest.mark.parametrize("health, boot, readiness", [(True, True, True), (False, True, True), (True, False, True),
                                                     (False, False, False)])
def test_the_readiness_checks_run_where_the_health_check_or_the_boot_order_will(tmp_path, two_nodes, health, boot,
                                                                                readiness):
    # the boot order runs the health check's readiness checks before every start of slurmd: a deploy that installs
    # it checks them first, also with the periodic health check off (hpc_gres_health: false, as an import writes)
    rc, tasks, out = run(tmp_path, two_nodes[:1], cluster={"hpc_gres_health": health, "hpc_gres_boot": boot})
    assert rc == 0, out
    result = tasks[VERIFY]["gpu-a01"]
    assert ("readiness" in result) is readiness, sorted(result)
    if readiness:
        assert result["readiness"]["ready"] is True and any("nvidia-smi" in " ".join(argv) and "-q" in argv
                                                            for argv in result["readiness"]["commands"])


def test_the_gc_freeze_callback_changes_no_result(tmp_path, two_nodes):
    rc, tasks, out = run(tmp_path, two_nodes, env={"ANSIBLE_CALLBACKS_ENABLED": "hpc.slurm_gres.gc_freeze"})
    assert rc == 0, out
    assert summary(tasks) == ["gpu-a01: ok, 0 warning(s); gpu:a100 8/8/8", "gpu-a02: ok, 0 warning(s); gpu:a100 8/8/8"]
    assert tasks[VERIFY]["gpu-a01"]["counts"] == {"gpu:a100": {"slurm_conf": 8, "gres_conf": 8, "nvidia_smi": 8}}
    assert "[WARNING]" not in out, out


def test_without_show_table_only_the_tables_with_warnings_are_shown(tmp_path, two_nodes):
    # half a socket's cores per GPU: a warning on Slurm 22.05 (tests/integration/test_gres_verify_module.py)
    half = {"hpc_gres_gpus": [{"index": i, "type": "a100", "cores": "0-15" if i < 4 else "32-47"} for i in range(8)]}
    release = ("-e", "hpc_gres_slurm_version=22.05", "-e", "hpc_gres_verify_slurmd_version=22.05.8")
    rc, tasks, out = run(tmp_path, two_nodes, "-e", "hpc_gres_verify_show_table=false", *release, gpu_a02=half)
    assert rc == 0, out
    tables = next(iter(tasks[TABLES].values()))["msg"]
    titles = [line for line in tables if line.startswith("gres_verify:")]
    assert len(titles) == 1 and re.match(r"gres_verify: the staged files fit node gpu-a02 \(0 error\(s\), [1-9]\d* "
                                         r"warning\(s\)\)$", titles[0]), titles
    assert any("socket_boundary" in line for line in tables)
    assert re.match(r"gpu-a02: ok, [1-9]\d* warning\(s\);", summary(tasks)[1])
    # no warnings anywhere: no table at all
    rc, tasks, out = run(tmp_path, two_nodes, "-e", "hpc_gres_verify_show_table=false")
    assert rc == 0, out
    assert next(iter(tasks[TABLES].values())).get("skipped") is True


@pytest.mark.ansible_core
def test_a_broken_node_fails_with_its_table_the_other_is_still_verified(tmp_path, two_nodes):
    two_nodes[1].lose(6)
    rc, tasks, out = run(tmp_path, two_nodes)
    assert rc != 0
    failed = tasks[VERIFY]["gpu-a02"]
    assert "declares 8 a100, nvidia-smi sees 7" in failed["msg"]
    # the table once, in the summary's tables; then the node fails on its own, in one line
    tables = next(iter(tasks[TABLES].values()))["msg"]
    assert [line for line in tables if line.startswith("gres_verify:")] == [
        "gres_verify: the staged files fit node gpu-a01 (0 error(s), 0 warning(s))",
        "gres_verify: the staged files do not fit node gpu-a02 (2 error(s), 0 warning(s))"]
    assert summary(tasks) == ["gpu-a01: ok, 0 warning(s); gpu:a100 8/8/8",
                              "gpu-a02: FAILED (see its findings table above)"]
    refused = tasks["This node did not pass verification"]
    assert list(refused) == ["gpu-a02"] and refused["gpu-a02"]["failed"] is True  # a play of the failed nodes only
    assert refused["gpu-a02"]["msg"] == "node gpu-a02 did not pass verification (its findings are above)"
    assert stage_dirs(tmp_path) == []
    # every node failing: still one table each and the summary
    two_nodes[0].lose(3)
    rc, tasks, out = run(tmp_path, two_nodes)
    assert rc != 0
    assert summary(tasks) == ["gpu-a01: FAILED (see its findings table above)",
                              "gpu-a02: FAILED (see its findings table above)"]
    assert set(tasks["This node did not pass verification"]) == {"gpu-a01", "gpu-a02"}


def test_a_limit_without_localhost_renders_once_with_the_cluster_variables(tmp_path, two_nodes):
    rc, tasks, out = run(tmp_path, two_nodes, "--limit", "gpu-a02")
    assert rc == 0, out
    assert list(tasks[VERIFY]) == ["gpu-a02"]
    render = tasks["Render slurm.conf, cgroup.conf and every gres.conf from the inventory, on the control machine"]
    assert list(render) == ["gpu-a02"]  # run_once: one render for the play
    shown = tasks["Show the summary"]["gpu-a02"]["msg"]
    assert shown[0].startswith("cluster verify: 2 nodes"), shown  # hpc_gres_cluster_name read from localhost
    assert summary(tasks) == ["gpu-a02: ok, 0 warning(s); gpu:a100 8/8/8"]  # the limited nodes only


def test_a_role_option_with_a_bad_value_is_refused_by_the_render_naming_host_and_variable(tmp_path, two_nodes):
    rc, tasks, out = run(tmp_path, two_nodes, "-e", "hpc_gres_verify_readiness=sometimes",
                         gpu_a02={"hpc_gres_verify_type_patterns": ["a100"]})
    assert rc != 0
    assert VERIFY not in tasks  # refused before any node was asked
    text = flat(out)
    assert ("host gpu-a02: hpc_gres_verify_type_patterns: expected a dict, as role hpc_gres_verify declares it "
            "(roles/hpc_gres_verify/meta/argument_specs.yml), found ['a100'] (list): a list cannot be converted to "
            "a dict") in text, text
    # an extra variable is every host's: named once, for all of them
    assert re.search(r"hpc_gres_verify_readiness: expected a bool, as role hpc_gres_verify declares it .*found "
                     r"'sometimes' \(string\): not a boolean", text), text


def test_check_mode_verifies_too(tmp_path, two_nodes):
    two_nodes[0].remove_device(1)
    rc, tasks, out = run(tmp_path, two_nodes, "--check")
    assert rc != 0
    assert "/dev/nvidia1 does not exist" in flat(tasks[VERIFY]["gpu-a01"]["msg"])
    assert summary(tasks)[1].startswith("gpu-a02: ok")


# --- a MIG node: gres.conf written from its live MIG devices, or refused with the way out -----------------------

MIG_LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]


def mig_inventory_vars(node, layout):
    gpus = [{"index": i, "type": "a100", "model": "A100-80GB", "cores": "0-31" if i < 4 else "32-63"}
            for i in range(8)]
    gpus[0]["mig"] = list(layout)
    return {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
            "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus,
            "hpc_gres_verify_nvidia_smi": node_nvidia_smi(node), "hpc_gres_verify_sysfs_root": node.root,
            "hpc_gres_verify_dev_root": node.dev_root, "hpc_gres_verify_slurmd_version": "24.11.1"}


def run_mig(tmp_path, node, layout):
    inventory = write_inventory(tmp_path, [node], {node.name: mig_inventory_vars(node, layout)},
                                {"hpc_gres_cluster_name": "verify"})
    return run_playbook_json(inventory, "verify-gres.yml", env={"TMPDIR": private_tmp(tmp_path),
                                                                "NVSMI_EMU_ROOT": node.root,
                                                                "NVSMI_EMU_DEV_ROOT": node.dev_root})


def test_a_mig_nodes_gres_conf_is_written_from_its_live_devices_and_verified(tmp_path):
    node = Node(tmp_path / "m01", name="gpu-m01")
    assert apply_mig_layout(node, {0: MIG_LAYOUT})["changed"]
    rc, tasks, out = run_mig(tmp_path, node, MIG_LAYOUT)
    assert rc == 0, out
    result = tasks[VERIFY]["gpu-m01"]
    assert result["gres_conf_completed"] is True
    lines = [l for l in result["gres_conf_text"].splitlines() if "MultipleFiles=" in l]
    assert len(lines) == 4
    assert all(l.startswith("NodeName=gpu-m01 Name=gpu Type=") and "/dev/nvidia0,/dev/nvidia-caps/nvidia-cap" in l
               for l in lines)
    # the caps the lines name exist under the node's dev root, and the counts agree three ways
    assert result["counts"]["gpu:1g.10gb"] == {"slurm_conf": 2, "gres_conf": 2, "nvidia_smi": 2}
    assert result["counts"]["gpu:a100"] == {"slurm_conf": 7, "gres_conf": 7, "nvidia_smi": 7}
    # slurm.conf order: types by their lowest GPU index, so the MIG GPU 0's instances come first
    assert summary(tasks) == ["gpu-m01: ok, 0 warning(s); gpu:3g.40gb 1/1/1 gpu:2g.20gb 1/1/1 gpu:1g.10gb 2/2/2 "
                              "gpu:a100 7/7/7"]


def test_a_mig_node_whose_live_layout_differs_is_refused_by_name_with_the_way_out(tmp_path):
    node = Node(tmp_path / "m01", name="gpu-m01")
    apply_mig_layout(node, {0: MIG_LAYOUT})
    rc, tasks, out = run_mig(tmp_path, node, ["3g.40gb", "3g.40gb"])
    assert rc != 0
    msg = flat(tasks[VERIFY]["gpu-m01"]["msg"])
    assert "the staged files do not fit node gpu-m01" in msg
    assert "missing 1 x 3g.40gb" in msg and "not declared 2 x 1g.10gb, 1 x 2g.20gb" in msg
    assert "ansible-playbook playbooks/mig-reconfigure.yml --limit gpu-m01" in msg
