"""playbooks/deploy-gres.yml in check mode on two emulated nodes (local connection), a MIG node and a plain one.

Check mode runs everything a deploy decides: the render, the verification on each node (the MIG node's
MultipleFiles lines written from its live devices), the gate, the restart plans and their order, and the install
in check mode with its diff; restarts are off here (no systemd, no Slurm), and nothing may be written. The real
deploy of the same shape, on real Slurm, is the molecule scenario deploy-mig.
"""
import json
import os
import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import boot

from emulated_node import (
    Node,
    apply_mig_layout,
    flat,
    local_slurm_release,
    node_nvidia_smi,
    run_playbook_json,
    write_inventory,
)

MIG_LAYOUT = ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]
# one task decides: every node verified, the controllers planned, the order; in check mode it also reports
GATE = "Every node verified, every daemon on the release; plan each controller and the restart order"
VERIFY = "Verify the rendered files against this node; with a plan, also read what it has and plan the install"
INSTALL = "Install the new files on the node (staged and renamed; the old ones kept as backups)"


def added(result, path_end):
    """The lines a check report's diff of the file whose path ends with ``path_end`` adds."""
    texts = [d["prepared"] for d in result["diff"]]
    diffs = [d for d in texts if d.splitlines()[1].split(" ")[1].endswith(path_end)]
    assert len(diffs) == 1, (path_end, [d.splitlines()[:2] for d in texts])
    return [line[1:] for line in diffs[0].splitlines()[2:] if line.startswith("+")]


def node_vars(node, tmp_path, mig=None):
    gpus = [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)]
    if mig:
        gpus[0].update(model="A100-80GB", mig=list(mig))
    return {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
            "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus,
            "hpc_gres_verify_nvidia_smi": node_nvidia_smi(node), "hpc_gres_verify_sysfs_root": node.root,
            "hpc_gres_verify_dev_root": node.dev_root, "hpc_gres_verify_slurmd_version": "22.05.8",
            "hpc_gres_verify_show_table": False,
            "hpc_gres_slurmd_config_dir": str(tmp_path / node.name / "etc"),
            "hpc_gres_slurmd_state_dir": str(tmp_path / node.name / "state"),
            "hpc_gres_slurmd_health_program": str(tmp_path / node.name / "sbin" / "hpc-gres-health"),
            "hpc_gres_slurmd_health_library_dir": str(tmp_path / node.name / "lib"),
            "hpc_gres_slurmd_restart": False}


@pytest.fixture
def cluster(tmp_path):
    mig = Node(tmp_path / "m01", name="gpu-m01")
    plain = Node(tmp_path / "p01", name="gpu-p01")
    apply_mig_layout(mig, {0: MIG_LAYOUT})
    return mig, plain


def deploy(tmp_path, cluster, layout, *extra):
    mig, plain = cluster
    host_vars = {mig.name: node_vars(mig, tmp_path, layout), plain.name: node_vars(plain, tmp_path)}
    # the deploy reads slurmd -V and slurmctld -V of this machine (local connection) and refuses another release
    cluster_vars = {"hpc_gres_cluster_name": "check", "hpc_gres_slurm_version": local_slurm_release(),
                    "hpc_gres_slurmctld_restart": False,
                    "hpc_gres_slurmctld_config_dir": str(tmp_path / "ctl" / "etc"),
                    "hpc_gres_slurmctld_state_dir": str(tmp_path / "ctl" / "state")}
    inventory = write_inventory(tmp_path, [mig, plain], host_vars, cluster_vars)
    env = {"NVSMI_EMU_ROOT": mig.root, "NVSMI_EMU_DEV_ROOT": mig.dev_root}
    return run_playbook_json(inventory, "deploy-gres.yml", "--check", "--diff",
                             "-e", "hpc_gres_deploy_smoke_test=false", *extra, env=env)


def written(tmp_path):
    """The config and state directories the deploy would write (none may exist after a check run)."""
    dirs = [tmp_path / name / sub for name in ("gpu-m01", "gpu-p01", "ctl") for sub in ("etc", "state", "sbin", "lib")]
    return [str(d) for d in dirs if os.path.exists(d)]


@pytest.mark.ansible_core
def test_check_mode_plans_both_nodes_the_mig_one_with_its_live_lines_and_writes_nothing(tmp_path, cluster):
    rc, tasks, out = deploy(tmp_path, cluster, MIG_LAYOUT)
    assert rc == 0, out
    plan = tasks[GATE]["ctl01"]["plan"]
    assert plan["targets"] == ["gpu-m01", "gpu-p01"] and plan["controllers"] == ["ctl01"]
    assert plan["names"] == {"gpu-m01": "gpu-m01", "gpu-p01": "gpu-p01"} and plan["refusal"] is None
    order = plan
    # nothing ran before: every node is new, slurmctld restarts first, the restarts may check the Gres at once
    assert order["gres_changing"] == ["gpu-m01", "gpu-p01"] and order["check_gres_on_restart"] is True
    assert tasks[INSTALL]["gpu-m01"]["changed"] is True
    # the diffs come once, from the check report (per-host install diffs are off in check mode)
    assert "diff" not in tasks[INSTALL]["gpu-m01"]
    result = tasks[GATE]["ctl01"]
    report = result["report"]
    assert report["refusal"] is None and "diffs" not in report
    verdicts = report["verdicts"]["slurmd"]
    # restarts are off in this inventory (hpc_gres_slurmd_restart, hpc_gres_slurmctld_restart false): said so
    assert verdicts["gpu-m01"].startswith("would install slurm.conf, cgroup.conf, gres.conf; slurmd restart needed "
                                          "(gres.conf changed;")
    # a first deploy: the health check and the boot order of slurmd come with the files
    assert verdicts["gpu-m01"].endswith("left for a later run: hpc_gres_slurmd_restart is false; would install the GPU "
                                        "health check and the boot order of slurmd")
    assert report["restarts"] == []
    # each node's boot settings as its boot program reads them: seconds as numbers (through ansible-core 2.18 a
    # template per setting wrote "wait": "300", which the program refuses at every boot)
    for node in ("gpu-m01", "gpu-p01"):
        texts = [d["files"]["boot.json"] for d in tasks[VERIFY][node]["plan"]["health_install"]["boot"]["dirs"]
                 if "boot.json" in d["files"]]
        assert len(texts) == 1, tasks[VERIFY][node]["plan"]["health_install"]
        settings = boot.read_settings(json.loads(texts[0]))
        assert (settings["node"], settings["wait"], settings["interval"]) == (node, 300, 5)
    assert report["verdicts"]["slurmctld"]["ctl01"].startswith("slurmctld host: would install slurm.conf, cgroup.conf;")
    mig = added(result, "/gpu-m01/etc/gres.conf")
    assert len([line for line in mig if "MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/" in line]) == 4, mig
    plain = added(result, "/gpu-p01/etc/gres.conf")
    assert "NodeName=gpu-p01 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31" in plain
    assert not [line for line in plain if "MultipleFiles" in line]
    assert added(result, "/gpu-p01/etc/slurm.conf") == added(result, "/gpu-m01/etc/slurm.conf")
    assert "Gres=gpu:3g.40gb:1,gpu:2g.20gb:1,gpu:1g.10gb:2,gpu:a100:7" in " ".join(
        added(result, "/gpu-m01/etc/slurm.conf"))
    assert written(tmp_path) == [], "check mode wrote files"
    # an inventory without the optional group hpc_gres_users_guide gets no host-pattern warning for it
    assert "Could not match supplied host pattern" not in out, out


def test_a_mig_layout_that_differs_is_refused_by_name_and_nothing_is_installed(tmp_path, cluster):
    rc, tasks, out = deploy(tmp_path, cluster, ["3g.40gb", "3g.40gb"])
    assert rc != 0
    text = flat(out)
    assert "ansible-playbook playbooks/mig-reconfigure.yml --limit gpu-m01" in text
    assert ("nothing installed, nothing restarted: 1 of 2 targeted node(s) did not pass verification: gpu-m01"
            in text)
    assert INSTALL not in tasks
    # the check report gave every node its verdict before the refusal
    report = tasks[GATE]["ctl01"]["report"]
    assert report["verdicts"]["slurmd"]["gpu-m01"].startswith("would be refused at verify: mig: ")
    assert report["verdicts"]["slurmd"]["gpu-p01"] == (
        "passes verification; would install nothing: the deploy is refused")
    assert report["restarts"] == [] and report["refusal"].startswith("nothing installed, nothing restarted")
    # the refused node's failure carries only the texts of the files that would change (three copies of every file
    # buried the table); the report still diffs them
    plan = tasks[VERIFY]["gpu-m01"]["plan"]
    assert "running_files" not in plan and "running_files" in tasks[VERIFY]["gpu-p01"]["plan"]
    assert sorted(plan["new_files"]) == sorted(plan["installed"]) == ["cgroup.conf", "gres.conf", "slurm.conf"]
    assert "Gres=gpu:3g.40gb:2" in " ".join(added(tasks[GATE]["ctl01"], "/gpu-m01/etc/slurm.conf"))


def test_a_gres_change_without_the_controller_in_the_limit_is_refused(tmp_path, cluster):
    rc, tasks, out = deploy(tmp_path, cluster, MIG_LAYOUT, "--limit", "gpu-p01")
    assert rc != 0
    assert ("the Gres of gpu-p01 changes, which needs slurmctld restarted, but no slurmctld host is targeted"
            in flat(out))
    assert INSTALL not in tasks


def test_a_role_option_the_role_would_misread_is_refused_before_any_node_is_read(tmp_path, cluster):
    # the deploy imports the roles' task files by name, which ansible-core gives no argument check: without the
    # render's check, hpc_gres_slurmd_restart=maybe went through `| bool` as false (a deprecation warning only) and
    # the deploy left every slurmd unrestarted
    rc, tasks, out = deploy(tmp_path, cluster, MIG_LAYOUT, "-e", "hpc_gres_slurmd_restart=maybe")
    assert rc != 0
    text = flat(out)
    assert re.search(r"hpc_gres_slurmd_restart: expected a bool, as role hpc_gres_slurmd declares it \(roles/"
                     r"hpc_gres_slurmd/meta/argument_specs.yml\), found 'maybe' \(string\): not a boolean", text), text
    assert VERIFY not in tasks and INSTALL not in tasks
    assert written(tmp_path) == []
