"""The deploy's cross-host decisions (plugins/plugin_utils/deploy_plan.py), made by the gres_plan action."""
import itertools

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import deploy_plan

GROUPS = {"slurmctld": ["ctl"], "slurmd": ["n1.lab", "n2.lab", "n3.lab"]}
NAMES = {"n1.lab": "n1", "n2.lab": "n2", "n3.lab": "n3"}
SLURM = ("ClusterName=c\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=n1 Gres=gpu:a100:8\nNodeName=n2 Gres=gpu:a100:%d\n"
         "NodeName=n3\nPartitionName=main Nodes=ALL Default=YES\n")
RENDER = {"files": {"slurm.conf": SLURM % 8, "cgroup.conf": "ConstrainDevices=yes\n"}, "nodes": NAMES,
          "config_mode": "files", "summary": {"slurm_version": "24.11"}}


def verified(plan=None, version="slurm-wlm 24.11.5", host="n1.lab"):
    return {"plan": dict({"gres_changed": False, "expected_gres": {"gpu:a100": 8}}, **(plan or {})),
            "daemon_version": {"host": host, "daemon": "slurmd", "version": version, "error": None}}


def controller(applied=None, version="slurm-wlm 24.11.5"):
    files = {"slurm.conf": applied if applied is not None else SLURM % 8, "cgroup.conf": "ConstrainDevices=yes\n"}
    return {deploy_plan.CTLD_READ: {"contents": {"installed": dict(files), "applied": dict(files)},
                                    "attributes": {"installed": {}}},
            deploy_plan.CTLD_VERSIONS: {"results": [{"item": ["ctl", "slurmctld"], "rc": 0, "stdout": version}]}}


def state(nodes=("n1.lab", "n2.lab"), **ctl):
    out = {h: {deploy_plan.VERIFY: verified(host=h)} for h in nodes}
    out["ctl"] = controller(**ctl)
    return out


def gate(play_hosts=("ctl", "n1.lab", "n2.lab"), st=None, render=None, **kwargs):
    return deploy_plan.gate(list(play_hosts), GROUPS, render or RENDER, st if st is not None else state(), **kwargs)


def test_gate_targets_are_the_play_hosts_in_slurmd_and_all_must_have_passed():
    plan = gate()
    assert plan["targets"] == ["n1.lab", "n2.lab"]
    assert plan["controllers"] == ["ctl"]
    assert plan["names"] == {"n1.lab": "n1", "n2.lab": "n2"}
    assert plan["refusal"] is None
    st = state()
    st["n2.lab"][deploy_plan.VERIFY] = dict(st["n2.lab"][deploy_plan.VERIFY], failed=True)
    refused = gate(st=st)
    assert refused["unverified"] == ["n2.lab"]
    assert refused["refusal"] == ("nothing installed, nothing restarted: 1 of 2 targeted node(s) did not pass "
                                  "verification: n2.lab (their findings are above)")


def _table(name, seen):
    return ("gres_verify: the staged files do not fit node %s (1 error(s), 0 warning(s))\n"
            "error     present  -    8 GPUs of type a100 visible to nvidia-smi  declares 8 a100, nvidia-smi sees %d\n"
            "1 error(s), 0 warning(s)" % (name, seen))


def test_a_failure_the_deploy_kept_in_the_result_is_unverified_and_its_findings_are_printed_once_per_kind():
    # the deploy's verify task keeps a node's failure in its result (failed_when off): failed is false there, and
    # the module's error count and message say what happened
    st = state(nodes=("n1.lab", "n2.lab", "n3.lab"))
    for host, seen in (("n1.lab", 7), ("n2.lab", 7), ("n3.lab", 6)):
        st[host][deploy_plan.VERIFY] = dict(st[host][deploy_plan.VERIFY], failed=False, failed_when_result=False,
                                            errors=1, msg=_table(NAMES[host], seen))
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), st=st)
    assert plan["unverified"] == ["n1.lab", "n2.lab", "n3.lab"]
    assert plan["refusal"].startswith("nothing installed, nothing restarted: 3 of 3 targeted node(s) did not pass")
    lines = plan["verify_failures"]
    # n1 and n2 differ only in their names: one table under their hostlist; n3's own
    assert lines[0] == "n[1-2]: 2 nodes, each with the findings below (shown for n1)"
    assert lines[1:4] == _table("n1", 7).splitlines()
    assert lines[4:] == _table("n3", 6).splitlines()
    # every node passed: nothing to print
    assert gate()["verify_failures"] == []


def test_a_node_without_a_findings_table_is_named_with_what_stopped_it():
    st = state()
    st["n1.lab"][deploy_plan.VERIFY] = {"failed": False, "failed_when_result": False, "msg": "MODULE FAILURE",
                                        "module_stderr": "Traceback (most recent call last):\n  ...\nMemoryError"}
    st["n2.lab"][deploy_plan.VERIFY] = {}
    lines = gate(st=st)["verify_failures"]
    assert lines == ["host n1.lab: MODULE FAILURE", "    Traceback (most recent call last):", "      ...",
                     "    MemoryError",
                     "host n2.lab: no verification result (unreachable, or the verify step did not run there)"]
    st["n2.lab"][deploy_plan.VERIFY] = {"skipped": True, "skip_reason": "Conditional result was False"}
    assert gate(st=st)["verify_failures"][-1] == "host n2.lab: verification skipped (Conditional result was False)"


def test_gate_refuses_a_daemon_on_another_release_naming_host_and_command():
    st = state()
    st["n2.lab"][deploy_plan.VERIFY] = verified(version="slurm-wlm 22.05.8", host="n2.lab")
    plan = gate(st=st)
    assert plan["version_problems"][0].startswith("host n2.lab: slurmd -V: expected a release slurmctld accepts")
    assert "1 Slurm daemon(s) do not run Slurm 24.11" in plan["refusal"]
    # slurmctld -V that does not run is a refusal too, and says why
    st = state()
    st["ctl"][deploy_plan.CTLD_VERSIONS]["results"][0].update(rc=2, stdout="", stderr="No such file or directory")
    assert "slurmctld -V: No such file or directory" in gate(st=st)["refusal"]


def test_gate_refuses_a_gres_change_without_slurmctld_and_names_the_node():
    st = state()
    st["n2.lab"][deploy_plan.VERIFY] = verified({"gres_changed": True}, host="n2.lab")
    plan = gate(play_hosts=("n1.lab", "n2.lab"), st=st)
    assert plan["gres_changing"] == ["n2.lab"]
    assert plan["refusal"] == ("nothing installed, nothing restarted: the Gres of n2 changes, which needs slurmctld "
                               "restarted, but no slurmctld host is targeted; add the slurmctld group to --limit")
    # without a GRES change a node-only limit is fine
    assert gate(play_hosts=("n1.lab", "n2.lab"))["refusal"] is None


def test_gate_refuses_a_gres_change_of_a_node_the_run_does_not_restart():
    # slurmctld runs gpu:a100:4 on n2; the render says 8; n2 is not targeted
    plan = gate(play_hosts=("ctl", "n1.lab"), st=state(nodes=("n1.lab",), applied=SLURM % 4))
    assert plan["refusal"].startswith("nothing installed, nothing restarted: slurm.conf changes the Gres of n2, which "
                                      "this run does not restart")


def test_gate_refuses_a_slurm_conf_that_moves_the_state_or_renames_the_cluster():
    # a first deploy on a running cluster whose paths are not the collection's defaults (a Rocky-style controller)
    running = "StateSaveLocation=/var/spool/slurmctld\nSlurmdSpoolDir=/var/spool/slurmd/\n" + SLURM % 8
    moved = ("StateSaveLocation=/var/lib/slurm/slurmctld\nSlurmdSpoolDir=/var/spool/slurmd\n"
             + SLURM.replace("ClusterName=c", "ClusterName=C") % 8)
    new = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": moved}))
    plan = gate(st=state(applied=running), render=new)
    assert plan["refusal"] == (
        "nothing installed, nothing restarted: host ctl: slurm.conf StateSaveLocation: expected the value the daemons "
        "run with, /var/spool/slurmctld, found /var/lib/slurm/slurmctld in the render: slurmctld starts without its "
        "saved state: every running and queued job and every node state is lost; set it in "
        "hpc_gres_slurm_conf_options (the collection's default is a Debian path; an -e value replaces the inventory's "
        "whole dict), or import the cluster's files (docs/import.md); having moved the directory yourself, rerun with "
        "-e hpc_gres_deploy_allow_state_change=true")
    # Slurm lower-cases ClusterName, and a trailing / names the same directory: neither is a change
    assert "ClusterName" not in plan["refusal"] and "SlurmdSpoolDir" not in plan["refusal"]
    assert gate(st=state(applied=running), render=new, allow_state_change=True)["refusal"] is None
    # unset is Slurm's built-in default; another cluster name is refused too
    renamed = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": SLURM.replace("ClusterName=c", "ClusterName=d")
                                                          % 8}))
    refusal = gate(st=state(applied="StateSaveLocation=/var/spool\n" + SLURM % 8), render=renamed)["refusal"]
    assert "slurm.conf ClusterName: expected the value the daemons run with, c, found d" in refusal
    assert "CLUSTER NAME MISMATCH" in refusal and "set hpc_gres_cluster_name" in refusal
    assert "slurm.conf StateSaveLocation" not in refusal
    # without a controller in the run, the nodes' running slurm.conf is judged
    st = state()
    st["n1.lab"][deploy_plan.VERIFY]["plan"].update(running_files={"slurm.conf": SLURM % 8},
                                                    new_files={"slurm.conf": renamed["files"]["slurm.conf"]})
    assert "host n1.lab: slurm.conf ClusterName" in gate(play_hosts=("n1.lab", "n2.lab"), st=st,
                                                         render=renamed)["refusal"]


def test_gate_refuses_a_render_that_drops_every_gpu_of_the_cluster():
    # the GPU group_vars sat beside the site's own playbook: every node renders without GPUs
    text = "ClusterName=c\nSlurmctldHost=ctl\nNodeName=n[1-3]\nPartitionName=main Nodes=ALL\n"
    cpu_only = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": text}))
    refusal = gate(render=cpu_only)["refusal"]
    assert refusal.startswith("nothing installed, nothing restarted: host ctl: slurm.conf Gres: expected GPUs on the "
                              "nodes that have them now (n[1-2]), found none on any of them in the render")
    # one node losing its GPUs while another keeps them is a change the admin may mean
    one_left = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": SLURM.replace(" Gres=gpu:a100:8", "") % 4}))
    assert "slurm.conf Gres" not in (gate(render=one_left)["refusal"] or "")


def test_the_gpu_check_names_its_override_works_in_include_mode_and_names_renamed_nodes():
    text = "ClusterName=c\nSlurmctldHost=ctl\nNodeName=n[1-3]\nPartitionName=main Nodes=ALL\n"
    cpu_only = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": text}))
    assert "to take the GPUs out, or rename the nodes, on purpose: rerun with -e hpc_gres_deploy_allow_state_change" \
        in gate(render=cpu_only)["refusal"]
    assert gate(render=cpu_only, allow_state_change=True)["refusal"] is None
    renamed = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": text.replace("n[1-3]", "x[1-3]")}))
    assert "none of them is in the render (renamed, or another inventory)" in gate(render=renamed)["refusal"]
    # include mode: the node lines live in the include file, which the controller runs with and gets anew
    include = {"files": {"slurm-gres.conf": "GresTypes=gpu\nNodeName=n[1-3]\n"}, "nodes": NAMES,
               "config_mode": "include", "include_file": "slurm-gres.conf", "summary": {"slurm_version": "24.11"}}
    running = {"slurm-gres.conf": "GresTypes=gpu\nNodeName=n[1-2] Gres=gpu:a100:8\nNodeName=n3\n"}
    st = state()
    st["ctl"][deploy_plan.CTLD_READ] = {"contents": {"installed": dict(running), "applied": dict(running)},
                                        "attributes": {"installed": {}}}
    assert "host ctl: slurm-gres.conf Gres: expected GPUs on the nodes that have them now (n[1-2])" in gate(
        st=st, render=include)["refusal"]


def test_the_state_is_judged_where_it_lives_and_not_guessed_through_an_include():
    # a running slurm.conf that Includes the site's settings: an option it leaves unset is not Slurm's default
    running = "Include /etc/slurm/site.conf\n" + SLURM.replace("ClusterName=c\n", "") % 8
    text = "StateSaveLocation=/var/spool/slurmctld\n" + SLURM % 8
    new = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": text}))
    assert gate(st=state(applied=running), render=new)["refusal"] is None
    # SlurmdSpoolDir is slurmd's: judged on every targeted node, whatever the controller runs
    st = state()
    for host in ("n1.lab", "n2.lab"):
        st[host][deploy_plan.VERIFY]["plan"].update(
            running_files={"slurm.conf": "SlurmdSpoolDir=/var/spool/slurmd\n" + SLURM % 8},
            new_files={"slurm.conf": "SlurmdSpoolDir=/var/lib/slurm/slurmd\n" + SLURM % 8})
    refusal = gate(st=st)["refusal"]
    assert ("hosts n[1-2].lab: slurm.conf SlurmdSpoolDir: expected the value the daemons run with, /var/spool/slurmd, "
            "found /var/lib/slurm/slurmd in the render") in refusal
    assert "slurm.conf ClusterName" not in refusal and "StateSaveLocation" not in refusal


def test_a_controller_planned_outside_the_gate_is_refused_the_same_state_change():
    # the MIG runbook and a rollback plan slurmctld with the stage controller: the same rule, GPUs left alone
    moved = "StateSaveLocation=/var/lib/slurm/slurmctld\n" + SLURM % 8
    read = controller(applied="StateSaveLocation=/var/spool/slurmctld\n" + SLURM % 8)[deploy_plan.CTLD_READ]
    plan = deploy_plan.controller_plan({"slurm.conf": moved, "cgroup.conf": "ConstrainDevices=yes\n"}, read)
    [reason] = deploy_plan.state_refusals_for_controller("ctl", plan, "files", None, False)
    assert reason.startswith("host ctl: slurm.conf StateSaveLocation: expected the value the daemons run with, "
                             "/var/spool/slurmctld, found /var/lib/slurm/slurmctld in the files to install")
    # a rollback taking away the partition its run added is what a rollback is for
    added = "PartitionName=extra Nodes=ALL\n" + SLURM % 8
    back = deploy_plan.controller_plan({"slurm.conf": SLURM % 8, "cgroup.conf": "ConstrainDevices=yes\n"},
                                       controller(applied=added)[deploy_plan.CTLD_READ])
    assert deploy_plan.state_refusals_for_controller("ctl", back, "files", None, False, partitions=False) == []
    # so is taking away the node its run added
    grown = deploy_plan.controller_plan({"slurm.conf": SLURM % 8, "cgroup.conf": "ConstrainDevices=yes\n"},
                                        controller(applied=SLURM % 8 + "NodeName=n4\n")[deploy_plan.CTLD_READ])
    assert deploy_plan.state_refusals_for_controller("ctl", grown, "files", None, False, partitions=False) == []
    assert "NodeName: expected every node" in deploy_plan.state_refusals_for_controller(
        "ctl", grown, "files", None, False)[0]
    # the MIG runbook's step is rendered from the inventory: one that drops the site's partition is refused
    [dropped] = deploy_plan.state_refusals_for_controller("ctl", back, "files", None, False)
    assert dropped.startswith("host ctl: slurm.conf PartitionName: expected every partition slurmctld has now, found "
                              "extra missing from the files to install")
    assert deploy_plan.state_refusals_for_controller("ctl", plan, "files", None, True) == []
    no_gpus = deploy_plan.controller_plan({"slurm.conf": "ClusterName=c\nSlurmctldHost=ctl\nNodeName=n[1-3]\n"
                                                         "PartitionName=main Nodes=ALL Default=YES\n"},
                                          controller()[deploy_plan.CTLD_READ])
    assert deploy_plan.state_refusals_for_controller("ctl", no_gpus, "files", None, False) == []


def test_a_partition_slurmctld_has_now_missing_from_the_render_is_refused():
    # slurmctld fails the jobs of a partition it no longer has (read_config.c _sync_jobs_to_conf: NODE_FAIL)
    running = SLURM % 8 + "PartitionName=debug Nodes=n1 MaxTime=30\nPartitionName=long Nodes=ALL\n"
    refusal = gate(st=state(applied=running))["refusal"]
    assert ("host ctl: slurm.conf PartitionName: expected every partition slurmctld has now, found debug, long missing "
            "from the render: slurmctld fails the jobs queued or running in a partition it no longer has (NODE_FAIL, "
            "not requeued); add them to hpc_gres_partitions") in refusal
    assert ("drain them first (scontrol update PartitionName=debug State=DRAIN; scontrol update PartitionName=long "
            "State=DRAIN; then wait until squeue -p debug,long is empty)") in refusal
    assert gate(st=state(applied=running), allow_state_change=True)["refusal"] is None
    # a partition changed, none removed: no refusal
    assert gate(st=state(applied=SLURM.replace("Default=YES", "Default=NO") % 8))["refusal"] is None


def test_a_node_slurmctld_has_now_missing_from_the_render_is_refused():
    # slurmctld fails the jobs running on a node it no longer has (read_config.c _sync_jobs_to_conf: "Invalid nodes")
    running = (SLURM % 8).replace("NodeName=n3\n", "NodeName=n3\nNodeName=cpu[01-02] CPUs=64\n")
    refusal = gate(st=state(applied=running))["refusal"]
    assert ("host ctl: slurm.conf NodeName: expected every node of the slurm.conf slurmctld runs with, found "
            "cpu[01-02] missing from the render: slurmctld ends the jobs running on a node it no longer has (batch "
            "jobs requeued, the others NODE_FAIL) and the node leaves the cluster; add the host to the inventory's "
            "slurmd group") in refusal
    assert ("drain it first (scontrol update NodeName=cpu[01-02] State=DRAIN Reason=removed; then wait until squeue "
            "-w cpu[01-02] is empty), stop its slurmd and rerun with -e hpc_gres_deploy_allow_state_change=true"
            ) in refusal
    assert gate(st=state(applied=running), allow_state_change=True)["refusal"] is None
    # a node added: no refusal
    assert gate(st=state(applied=(SLURM % 8).replace("NodeName=n3\n", "")))["refusal"] is None


def test_a_node_whose_cpu_layout_changes_is_named_in_the_report():
    # slurmctld aborts the jobs running on it when it restarts with the new definition (read_config.c)
    running = SLURM.replace("NodeName=n1 ", "NodeName=n1 Sockets=2 CoresPerSocket=16 ") % 8
    new = dict(RENDER, files=dict(RENDER["files"], **{
        "slurm.conf": SLURM.replace("NodeName=n1 ", "NodeName=n1 Sockets=2 CoresPerSocket=32 ") % 8}))
    lines = gate(st=state(applied=running), render=new)["report"]["lines"]
    assert ("note: the cores (Sockets x CoresPerSocket) of n1 change: slurmctld aborts the jobs running there when it "
            "restarts (\"change in socket/core configuration of allocated nodes\"); drain them and let their jobs end "
            "first") in lines
    assert not any("CoresPerSocket" in line for line in gate()["report"]["lines"])
    # valid_job_resources compares Sockets x CoresPerSocket: the same cores split otherwise abort nothing, a
    # ThreadsPerCore change does when Sockets is worked out from CPUs (read_config.c)
    for old_line, new_line, aborts in (
            ("Sockets=2 CoresPerSocket=16 ", "Sockets=4 CoresPerSocket=8 ", False),
            ("Boards=2 SocketsPerBoard=1 CoresPerSocket=8 ", "Sockets=2 CoresPerSocket=8 ", False),
            ("CPUs=64 ", "CPUs=128 ", True),
            ("CPUs=128 CoresPerSocket=32 ThreadsPerCore=2 ", "CPUs=128 CoresPerSocket=32 ThreadsPerCore=1 ", True),
            ("Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 ", "Sockets=2 CoresPerSocket=32 ThreadsPerCore=1 ", False)):
        running = SLURM.replace("NodeName=n1 ", "NodeName=n1 " + old_line) % 8
        new = dict(RENDER, files=dict(RENDER["files"], **{
            "slurm.conf": SLURM.replace("NodeName=n1 ", "NodeName=n1 " + new_line) % 8}))
        lines = gate(st=state(applied=running), render=new)["report"]["lines"]
        assert any("CoresPerSocket) of n1 change" in line for line in lines) is aborts, (old_line, new_line)


def test_gate_names_the_gres_each_node_must_register_with_by_node_name():
    st = state()
    st["n2.lab"][deploy_plan.VERIFY] = verified({"expected_gres": {"gpu:1g.10gb": 7}}, host="n2.lab")
    assert gate(st=st)["expected_gres"] == {"n1": {"gpu:a100": 8}, "n2": {"gpu:1g.10gb": 7}}


def test_slurmd_restarts_check_the_gres_at_once_unless_slurmctld_restarts_after_them():
    up = gate(st=state(applied=SLURM % 4))
    assert up["controller_plans"]["ctl"]["restart_after"] and up["check_gres_on_restart"] is False
    down = gate(st=state(applied=SLURM % 9))
    assert down["controller_plans"]["ctl"]["restart_before"] and down["check_gres_on_restart"] is True
    assert gate()["check_gres_on_restart"] is True


def test_a_controller_plan_installs_only_what_differs():
    plan = gate()["controller_plans"]["ctl"]
    assert plan["install"] is True  # attributes not read: the install decides on the host
    st = state()
    attrs = {"mode": "0644", "uid": 0, "gid": 0, "owner": "root", "group": "root"}
    st["ctl"][deploy_plan.CTLD_READ]["attributes"]["installed"] = {"slurm.conf": attrs, "cgroup.conf": attrs}
    plan = gate(st=st)["controller_plans"]["ctl"]
    assert plan["install"] is False and plan["not_installed"] == [] and plan["recorded"] is True


def test_restarted_names_the_nodes_that_did_not_finish_by_slurm_name():
    st = state(nodes=("n1.lab", "n2.lab", "n3.lab"))
    for host in ("n1.lab", "n2.lab"):
        st[host][deploy_plan.VERIFY] = verified({"restart": True}, host=host)
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), st=st)
    assert plan["restart_hosts"] == ["n1.lab", "n2.lab"]
    out = deploy_plan.restarted(plan, {"n1.lab": {"hpc_gres_slurmd_done": True}})
    # n3 had nothing to restart: its restart step did not run, and it did not fail
    assert out["failed_nodes"] == ["n2"]
    assert out["refusal"] is None
    assert out["targets"] == plan["targets"]  # the plan so far is kept


def test_the_install_and_restart_steps_run_only_where_they_have_something_to_do():
    files = {"slurm.conf": "a", "cgroup.conf": "c", "gres.conf": "g"}
    same = {"new_files": dict(files), "running_files": dict(files), "recorded": True, "install": False,
            "restart": False, "not_installed": [], "health_install": {"needed": False}}
    plans = {
        "n1.lab": same,
        "n2.lab": dict(same, install=True, restart=True, new_files=dict(files, **{"gres.conf": "G"})),
        # installed already, not restarted yet (an earlier run's restart pending, or hpc_gres_slurmd_restart false)
        "n3.lab": dict(same, restart=True),
        "n4.lab": dict(same, health_install={"needed": True}),
        # first deploy by the role: the installed files are recorded as those slurmd runs with
        "n5.lab": dict(same, recorded=False),
        # new files that change nothing for this slurmd are recorded as those it runs with
        "n6.lab": dict(same, new_files=dict(files, **{"slurm.conf": "b"})),
        # installed files differ (a run with --tags restart is refused on it)
        "n7.lab": dict(same, not_installed=["gres.conf"]),
        # a missing file on both sides is no difference
        "n8.lab": dict(same, new_files=dict(files, **{"extra": None})),
        "n9.lab": same,
    }
    groups = {"slurmctld": ["ctl", "n9.lab"], "slurmd": sorted(plans)}
    st = {h: {deploy_plan.VERIFY: verified(p, host=h)} for h, p in plans.items()}
    st["n9.lab"].update(controller())
    st["ctl"] = controller()
    st["n8.lab"]["hpc_gres_slurmd_force_restart"] = "yes"
    plan = deploy_plan.gate(["ctl"] + sorted(plans), groups, RENDER, st)
    assert plan["restart_hosts"] == ["n2.lab", "n3.lab", "n6.lab", "n7.lab", "n8.lab"]
    # the controllers are always in the install play (their own plan decides there); a node only with something to do
    assert plan["install_hosts"] == ["n2.lab", "n5.lab", "ctl", "n9.lab"]
    # the health check has a play of its own, on the nodes that need it
    assert plan["health_hosts"] == ["n4.lab"]
    # all of it is allowed unless the tags select the restart without the install: n7's installed gres.conf is not
    # the verified one, so such a run is refused before anything is restarted, naming node and file
    assert plan["refusal"] is None
    assert deploy_plan.gate(["ctl"] + sorted(plans), groups, RENDER, st, steps={"install": True, "restart": False})[
        "refusal"] is None
    refused = deploy_plan.gate(["ctl"] + sorted(plans), groups, RENDER, st, steps={"install": False, "restart": True})
    assert refused["refusal"] == (
        "nothing installed, nothing restarted: the tags of this run select the slurmd restart but not the install, "
        "and 1 node(s) have files other than the verified render installed: n7.lab (/etc/slurm/gres.conf); expected "
        "the rendered files installed before slurmd restarts (run without --tags, or with --tags install,restart)")
    st["n7.lab"]["hpc_gres_slurmd_config_dir"] = "/opt/slurm/etc"
    refused = deploy_plan.gate(["ctl"] + sorted(plans), groups, RENDER, st, steps={"install": False, "restart": True})
    assert "n7.lab (/opt/slurm/etc/gres.conf)" in refused["refusal"]
    # without n7 in the run, the same tags are fine
    others = [h for h in sorted(plans) if h != "n7.lab"]
    assert deploy_plan.gate(["ctl"] + others, groups, RENDER, st, steps={"install": False, "restart": True})[
        "refusal"] is None


def _ansible_core_task(task_tags):
    """A task with those tags in a one-task play, as ansible-core loads it (its evaluate_tags is the rule)."""
    from ansible.parsing.dataloader import DataLoader
    from ansible.playbook.play import Play
    from ansible.vars.manager import VariableManager
    loader = DataLoader()
    play = Play.load({"hosts": "localhost", "gather_facts": False,
                      "tasks": [{"name": "step", "meta": "noop", "tags": list(task_tags)}]},
                     variable_manager=VariableManager(loader=loader), loader=loader)
    return next(t for block in play.compile() for t in block.block if t.name == "step")


def test_selected_agrees_with_ansible_cores_own_rule_for_every_combination_of_two_tags():
    words = ["all", "tagged", "untagged", "always", "never", "install", "restart", "verify"]
    choices = [()] + [(w,) for w in words] + list(itertools.combinations(words, 2))
    for task_tags in ([], ["install"], ["restart"], ["install", "always"], ["never", "restart"], ["always", "never"]):
        task = _ansible_core_task(task_tags)
        for only in choices:
            for skip in choices:
                run_tags = list(only) or ["all"]  # ansible_run_tags without --tags
                assert deploy_plan.selected(task_tags, run_tags, list(skip)) == task.evaluate_tags(
                    set(run_tags), set(skip), {}), (task_tags, run_tags, skip)


def test_selected_decides_tags_as_ansible_core_does():
    assert deploy_plan.selected(["install"]) and deploy_plan.selected(["install"], ["all"], [])
    assert deploy_plan.selected(["install"], ["install", "restart"]) and deploy_plan.selected(["install"], ["tagged"])
    assert not deploy_plan.selected(["install"], ["restart"]) and not deploy_plan.selected(["install"], ["untagged"])
    assert not deploy_plan.selected(["install"], ["all"], ["install"])
    assert not deploy_plan.selected(["install"], ["all"], ["tagged"])
    assert not deploy_plan.selected(["restart"], ["install", "restart"], ["all"])
    assert deploy_plan.selected(["always"], ["restart"]) and not deploy_plan.selected(["always"], None, ["always"])
    assert not deploy_plan.selected(["never", "install"]) and deploy_plan.selected(["never", "install"], ["install"])


def test_a_real_run_the_gate_lets_through_reports_what_it_does_once_for_the_cluster():
    st = state(nodes=("n1.lab", "n2.lab", "n3.lab"))
    new = {"slurm.conf": SLURM % 8, "cgroup.conf": "ConstrainDevices=yes\n", "gres.conf": "G"}
    for host in ("n1.lab", "n2.lab"):
        st[host][deploy_plan.VERIFY] = verified({"restart": True, "reasons": ["gres.conf changed"], "install": True,
                                                 "new_files": new, "install_names": list(new),
                                                 "installed": dict(new, **{"gres.conf": "g"})}, host=host)
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), st=st, serial=2)
    lines = plan["report"]["lines"]
    assert lines[0] == "Every targeted node passed verification. What this deploy does:"
    assert "  n[1-2]  installs gres.conf; slurmd restarts (gres.conf changed)" in lines
    assert "  n3      unchanged" in lines
    assert "  1. slurmd on n[1-2]: restart in batches of 2, each registration confirmed with scontrol" in lines
    assert lines[-1] == "files change on 2 host(s); --diff shows each host's changes as they are installed"
    assert plan["report"]["diffs"] == [] and not any("would" in line for line in lines)
    # tags that leave out a step say so first; without the install the verdicts say what a deploy would do
    hosts = ("ctl", "n1.lab", "n2.lab", "n3.lab")
    held = gate(play_hosts=hosts, st=st, steps={"install": True, "restart": False})["report"]["lines"]
    assert held[0].endswith("the tags of this run leave out the restart step, so the restarts below are left for a "
                            "later run:")
    assert "  n[1-2]  installs gres.conf; slurmd restarts (gres.conf changed)" in held
    verify_only = gate(play_hosts=hosts, st=st, steps={"install": False, "restart": False})["report"]["lines"]
    assert verify_only[0] == ("Every targeted node passed verification. The tags of this run leave out the install "
                              "and the restart steps: nothing is installed or restarted. What a deploy would do:")
    assert "  n[1-2]  would install gres.conf; slurmd would restart (gres.conf changed)" in verify_only
    # a real run computes no diffs, and one that installs nothing does not promise them
    assert gate(play_hosts=hosts, st=st, steps={"install": False, "restart": False})["report"]["diffs"] == []
    assert verify_only[-1] == "files change on 2 host(s)"
    # a --limit without the slurmctld hosts: a slurm.conf change reaches the nodes only, and the report says so
    for host in ("n1.lab", "n2.lab"):
        st[host][deploy_plan.VERIFY]["plan"]["installed"]["slurm.conf"] = SLURM % 4
    limited = gate(play_hosts=("n1.lab", "n2.lab"), st=st)["report"]["lines"]
    assert limited[-1].startswith("note: slurm.conf changes on n[1-2], but no slurmctld host is in this run")
    assert not any(line.startswith("note: ") for line in gate(play_hosts=hosts, st=st)["report"]["lines"])
    # a refused real run has no report: it fails with the refusal
    st["n3.lab"][deploy_plan.VERIFY] = dict(st["n3.lab"][deploy_plan.VERIFY], failed=True)
    assert "report" not in gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), st=st)


def test_registered_confirms_one_by_one_only_the_nodes_the_read_does_not_show_registered_as_declared():
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), st=state(nodes=("n1.lab", "n2.lab", "n3.lab")))
    record = {"n1": {"name": "n1", "state_flags": []}, "n2": {"name": "n2", "state_flags": ["DRAIN"]},
              "n3": {"name": "n3", "state_base": "DOWN", "state_flags": []}}
    read = {"nodes": record, "verdicts": {"n1": {"status": "ok", "message": "registered with gpu:a100:8"},
                                          "n2": {"status": "resume", "message": "gres/gpu count too low"},
                                          "n3": {"status": "waiting", "message": "state DOWN"}}}
    out = deploy_plan.registered(plan, read)
    assert out["confirm_hosts"] == ["n2.lab", "n3.lab"]
    assert out["registered"] == {"n1": {"status": "ok", "changed": False, "resumed": False, "waited": 0,
                                        "node": record["n1"], "message": "registered with gpu:a100:8"}}
    assert out["registered_lines"] == [
        "1 node(s) registered as declared (one scontrol read): n1",
        "2 node(s) to confirm one by one (not registered as declared yet): n[2-3]"]
    # a skipped or failed read confirms every node one by one; check mode confirms none
    assert deploy_plan.registered(plan, {"skipped": True})["confirm_hosts"] == ["n1.lab", "n2.lab", "n3.lab"]
    assert deploy_plan.registered(plan, None)["registered"] == {}
    assert deploy_plan.registered(plan, read, check_mode=True)["confirm_hosts"] == []
    # the smoke test uses a node confirmed by the read as one confirmed by its own step
    files = {"slurm.conf": SLURM % 8, "cgroup.conf": "ConstrainDevices=yes\n",
             "n1/gres.conf": "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-7]\n"}
    assert deploy_plan.confirmed(out, {}, files)["smoke_nodes"] == ["n1"]


def test_confirmed_selects_registered_undrained_nodes_prefers_the_restarted_ones_and_plans_the_sruns():
    files = {"slurm.conf": SLURM % 8, "cgroup.conf": "ConstrainDevices=yes\n",
             "n1/gres.conf": "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-7]\n",
             "n2/gres.conf": "NodeName=n2 Name=gpu Type=a100 File=/dev/nvidia[0-7]\n"}
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), st=state(nodes=("n1.lab", "n2.lab", "n3.lab")))
    st = {
        "n1.lab": {"hpc_gres_slurmd_confirmed": {"status": "ok", "node": {"state_flags": []}},
                   "hpc_gres_slurmd_restarted": True},
        "n2.lab": {"hpc_gres_slurmd_confirmed": {"status": "resumed", "node": {"state_flags": []}}},
        "n3.lab": {"hpc_gres_slurmd_confirmed": {"status": "ok", "node": {"state_flags": ["DRAIN"]}}},
    }
    out = deploy_plan.confirmed(plan, st, files)
    assert out["smoke_nodes"] == ["n1", "n2"]
    assert out["smoke_preferred_nodes"] == ["n1"]
    assert out["smoke"] == [{"type": "a100", "node": "n1", "count": 8, "gres": "gpu:a100:8",
                             "expected": "0,1,2,3,4,5,6,7", "busy": False}]
    # a job on n1 (MIXED): the idle n2 takes the test, though n1 restarted
    mixed = dict(st, **{"n1.lab": dict(st["n1.lab"], hpc_gres_slurmd_confirmed={
        "status": "ok", "node": {"state_base": "MIXED", "state_flags": []}})})
    assert [(s["node"], s["busy"]) for s in deploy_plan.confirmed(plan, mixed, files)["smoke"]] == [("n2", False)]
    failed = dict(st, **{"n1.lab": {"hpc_gres_slurmd_confirmed": {"status": "failed"}}})
    assert deploy_plan.confirmed(plan, failed, files)["smoke_nodes"] == ["n2"]
    # registered but left DOWN (an admin's State=DOWN, or ReturnToService=0): srun could not use it
    down = dict(st, **{"n2.lab": {"hpc_gres_slurmd_confirmed": {"status": "ok", "node": {
        "state_base": "DOWN", "state_flags": []}}}})
    assert deploy_plan.confirmed(plan, down, files)["smoke_nodes"] == ["n1"]


def test_each_stage_names_what_it_reads_from_the_hosts():
    assert set(deploy_plan.STAGE_FACTS) == {"gate", "restarted", "confirmed"}
    assert all(name.startswith("hpc_gres_") for names in deploy_plan.STAGE_FACTS.values() for name in names)


def test_check_mode_defers_the_gate_refusal_and_reports_every_node():
    st = state(nodes=("n1.lab",))
    plan = gate(play_hosts=("ctl", "n1.lab", "n2.lab"), st=st, check_mode=True)
    assert plan["refusal"] is None
    assert plan["check_refusal"].startswith("nothing installed, nothing restarted: 1 of 2 targeted node(s) did not "
                                            "pass verification: n2.lab")
    assert plan["report"]["verdicts"]["slurmd"]["n2"].startswith("would be refused at verify")
    # nothing to defer when every node passed
    assert gate(play_hosts=("ctl", "n1.lab"), st=st, check_mode=True)["check_refusal"] is None
    assert "check_refusal" not in gate(play_hosts=("ctl", "n1.lab", "n2.lab"), st=st)


def test_the_state_is_judged_once_per_distinct_pair_of_files(monkeypatch):
    # the nodes of a cluster run and get the same slurm.conf: one parse for all of them, not one per node
    calls = []
    real = deploy_plan.state_changes

    def counting(running, new):
        calls.append((running, new))
        return real(running, new)

    monkeypatch.setattr(deploy_plan, "state_changes", counting)
    st = state(nodes=("n1.lab", "n2.lab", "n3.lab"))
    for host in ("n1.lab", "n2.lab", "n3.lab"):
        st[host][deploy_plan.VERIFY]["plan"].update(
            running_files={"slurm.conf": "SlurmdSpoolDir=/var/spool/slurmd\n" + SLURM % 8},
            new_files={"slurm.conf": "SlurmdSpoolDir=/var/lib/slurm/slurmd\n" + SLURM % 8})
    refusal = gate(play_hosts=("ctl", "n1.lab", "n2.lab", "n3.lab"), st=st)["refusal"]
    assert "hosts n[1-3].lab: slurm.conf SlurmdSpoolDir" in refusal
    assert len(calls) == 2  # the controller's pair and the nodes' one


def test_a_slurmd_restart_held_by_the_inventory_is_refused_where_slurmctld_would_drain_its_node():
    st = state(applied=SLURM % 4)  # slurmctld runs n2 with gpu:a100:4, the render says 8: it restarts after
    st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
    assert gate(st=st)["refusal"] is None
    st["n2.lab"]["hpc_gres_slurmd_restart"] = "false"
    plan = gate(st=st)
    assert plan["held_nodes"] == ["n2.lab"]
    assert plan["refusal"] == (
        "nothing installed, nothing restarted: host n2.lab: hpc_gres_slurmd_restart is false, but the GRES "
        "goes up (gpu:a100 4 -> 8) and slurmctld restarts on ctl: expected slurmd restarted in this run, found it "
        "left for later; slurmctld would expect the new count from a slurmd that still reports the old one and "
        "drain the node (\"gres/gpu count reported lower than configured\"); let this run restart slurmd there, or "
        "install only (--tags install, or hpc_gres_slurmctld_restart=false as well) and restart both in a later run")
    # install only: slurmctld keeps its file too, nothing drains
    st["ctl"]["hpc_gres_slurmctld_restart"] = False
    plan = gate(st=st)
    assert plan["refusal"] is None and plan["held_controllers"] == ["ctl"]
    # a count that goes down is clamped by slurmctld until slurmd restarts: it may wait
    st = state(applied=SLURM % 9)
    st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
    st["n2.lab"]["hpc_gres_slurmd_restart"] = False
    plan = gate(st=st)
    assert plan["refusal"] is None and plan["held_nodes"] == ["n2.lab"]


def test_a_held_restart_with_nothing_to_install_is_no_change_of_the_run():
    plan = {"held_nodes": ["n1.lab", "n2.lab"], "held_controllers": ["ctl", "ctl2"]}
    nodes = {"n1.lab": {"install": False, "recorded": True}, "n2.lab": {"install": True, "recorded": True}}
    ctls = {"ctl": {"install": False}, "ctl2": {"install": True}}
    # n2 and ctl2 get new files in this run: their previous ones are the run's to record
    assert deploy_plan.held_unchanged(plan, nodes, ctls) == {"n1.lab", "ctl"}
    assert deploy_plan.held_unchanged({}, nodes, ctls) == set()


def test_a_slurmctld_restart_held_by_the_inventory_is_refused_where_a_node_restarts_with_a_new_gres_count():
    for applied, change in ((SLURM % 4, "gpu:a100 4 -> 8"), (SLURM % 9, "gpu:a100 9 -> 8")):
        st = state(applied=applied)
        st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
        st["ctl"]["hpc_gres_slurmctld_restart"] = "no"
        plan = gate(st=st)
        assert plan["held_controllers"] == ["ctl"] and plan["held_nodes"] == []
        assert plan["refusal"].startswith(
            "nothing installed, nothing restarted: host ctl: hpc_gres_slurmctld_restart is false, but n2.lab (%s) "
            "restarts slurmd in this run: expected slurmctld restarted in this run" % change)
        assert "hpc_gres_slurmd_restart=false on n2.lab as well" in plan["refusal"]
        # both held: install only, nothing disagrees
        st["n2.lab"]["hpc_gres_slurmd_restart"] = False
        assert gate(st=st)["refusal"] is None


def test_a_node_whose_gpu_count_changes_is_named_in_the_report_a_renamed_type_is_not():
    # slurmctld kills the GPU jobs of a node whose gres/gpu count changes when it restarts (gres.c
    # _validate_node_gres_cnt; recorded on 22.05.8 both ways: docs/dev/real-slurm-job-loss.md)
    st = state(applied=SLURM % 4)
    st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
    lines = gate(st=st)["report"]["lines"]
    assert ("note: the gres/gpu count of n2 changes: slurmctld kills the jobs using it there when it restarts (shard "
            "and MPS jobs on the GPUs too; \"count mismatch on node\"; batch jobs are requeued and start over, --no-requeue, srun and salloc jobs end "
            "NODE_FAIL); drain them and let their jobs end first") in lines
    # a type the node no longer has at the same count: from 23.11 the jobs that asked for it are killed (Slurm commit
    # 63b13d6e, "gres/gpu type %s not found on node"); 22.05 compares the count only
    renamed = state(applied=(SLURM % 8).replace("NodeName=n2 Gres=gpu:a100:8", "NodeName=n2 Gres=gpu:h100:8"))
    notes = [line for line in gate(st=renamed)["report"]["lines"] if line.startswith("note: ")]
    assert notes == ["note: n2 no longer has gpu:h100: slurmctld kills the jobs that asked for it when it restarts "
                     "(\"type not found on node\"; batch jobs are requeued and start over, --no-requeue, srun and "
                     "salloc jobs end NODE_FAIL); drain them and let their jobs end first"]
    old = dict(RENDER, summary={"slurm_version": "22.05"})
    for host in ("n1.lab", "n2.lab"):
        renamed[host][deploy_plan.VERIFY]["daemon_version"]["version"] = "slurm-wlm 22.05.8"
    renamed["ctl"][deploy_plan.CTLD_VERSIONS]["results"][0]["stdout"] = "slurm-wlm 22.05.8"
    assert not [line for line in gate(st=renamed, render=old)["report"]["lines"] if line.startswith("note: ")]
    assert not [line for line in gate()["report"]["lines"] if line.startswith("note: ")]
    # shards follow the GPUs they share: a shard count alone kills nothing
    shards = state(applied=(SLURM % 8).replace("Gres=gpu:a100:8\nNodeName=n2", "Gres=gpu:a100:8,shard:16\nNodeName=n2"))
    rendered = dict(RENDER, files=dict(RENDER["files"], **{"slurm.conf": (SLURM % 8).replace(
        "Gres=gpu:a100:8\nNodeName=n2", "Gres=gpu:a100:8,shard:32\nNodeName=n2")}))
    assert not [line for line in gate(st=shards, render=rendered)["report"]["lines"] if line.startswith("note: ")]


def test_an_install_only_run_is_not_refused_a_held_restart():
    st = state(applied=SLURM % 4)
    st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
    st["n2.lab"]["hpc_gres_slurmd_restart"] = False
    assert "hpc_gres_slurmd_restart is false" in gate(st=st)["refusal"]
    plan = gate(st=st, steps={"install": True, "restart": False})
    assert plan["refusal"] is None and plan["held_nodes"] == ["n2.lab"]


def test_a_restart_turned_off_with_an_extra_var_string_is_reported_as_held():
    # -e hpc_gres_slurmctld_restart=false arrives as the string "false": the report reads it as the roles do
    st = state(applied=SLURM % 4)
    st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
    st["n2.lab"]["hpc_gres_slurmd_restart"] = "false"
    st["ctl"]["hpc_gres_slurmctld_restart"] = "no"
    plan = gate(st=st, check_mode=True)
    assert plan["check_refusal"] is None
    assert plan["report"]["restarts"] == []
    assert any("left for a later run: hpc_gres_slurmd_restart is false" in line for line in plan["report"]["lines"])


def busy_node(name, state="MIXED", cpus="16", tres="cpu=16,mem=64G,gres/gpu=2", used=None):
    base, flags = (state.split("+", 1) + [""])[:2]
    node = {"name": name, "State": state, "state_base": base, "state_flags": flags.split("+") if flags else [],
            "CPUAlloc": cpus, "AllocTRES": tres}
    if used is not None:
        node["GresUsed"] = used
    return node


def test_jobs_on_a_node_whose_gpu_count_or_cores_change_refuse_the_run_until_drained_or_allowed():
    # slurmctld ends them when it restarts (gres.c count mismatch, recorded on 22.05.8; job_resources.c for the
    # cores): the gate names those nodes, one scontrol -d read says whether such jobs run there
    st = state(applied=SLURM % 4)
    st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
    plan = gate(st=st)
    assert plan["refusal"] is None
    assert plan["job_loss"] == {"n2": {"why": ["its GRES count changes (gpu:a100 4 -> 8)"], "gres": ["gpu"],
                                       "cores": False}}
    refusal = deploy_plan.jobs_refusal(plan, {"nodes": {"n2": busy_node("n2", used="gpu:a100:2(IDX:0-1)")}})
    assert refusal == (
        "nothing installed, nothing restarted: node n2: running jobs: expected none where its GRES count changes "
        "(gpu:a100 4 -> 8), found n2 (host n2.lab) State=MIXED CPUAlloc=16 AllocTRES=cpu=16,mem=64G,gres/gpu=2 "
        "GresUsed=gpu:a100:2(IDX:0-1). slurmctld ends those jobs when it restarts with the new slurm.conf (batch jobs "
        "are requeued and start over, --no-requeue, srun and salloc jobs end NODE_FAIL): drain the nodes (scontrol "
        "update nodename=n2 state=drain reason=\"GRES change\"), wait until squeue -w n2 shows no job and deploy "
        "again, then resume them (scontrol update nodename=n2 state=resume); or deploy with -e "
        "hpc_gres_deploy_allow_state_change=true to let slurmctld end those jobs")

    def refused(node):
        return deploy_plan.jobs_refusal(plan, {"nodes": {"n2": node}}) is not None

    # idle, drained and empty, powered down, unknown to slurmctld, only completing: nothing to end
    for node in (busy_node("n2", "IDLE", "0", ""), busy_node("n2", "IDLE+DRAIN", "0", None),
                 busy_node("n2", "IDLE+CLOUD+POWERED_DOWN", "0", None), busy_node("n2", "IDLE+COMPLETING", "0", None)):
        assert not refused(node), node
    assert deploy_plan.jobs_refusal(plan, {"nodes": {"n2": None}}) is None
    # a GRES change ends the jobs holding that GRES (or shards of it) only: a CPU-only job keeps running
    assert not refused(busy_node("n2", used="gpu:a100:0(IDX:N/A)"))
    assert refused(busy_node("n2", used="gpu:a100:0(IDX:N/A),shard:a100:2(2/8,0/8)"))
    assert not refused(busy_node("n2", tres="cpu=4,mem=8G,gres/gpu=0"))
    assert refused(busy_node("n2", "MIXED+DRAIN", tres="cpu=4,mem=8G,gres/gpu:a100=1"))
    # neither GresUsed nor a gres/ TRES: any job counts
    assert refused(busy_node("n2", "ALLOCATED", "128", "cpu=128"))
    # a suspended job: 22.05 shows the node IDLE with no CPU allocated, its memory and GPUs still held
    assert refused(busy_node("n2", "IDLE", "0", "mem=64G,gres/gpu=4"))
    # allowed, an install-only run, a slurmctld restart the inventory holds: nothing to read
    assert gate(st=st, allow_state_change=True)["job_loss"] == {}
    assert gate(st=st, steps={"install": True, "restart": False})["job_loss"] == {}
    st["ctl"]["hpc_gres_slurmctld_restart"] = False
    st["n2.lab"]["hpc_gres_slurmd_restart"] = False
    assert gate(st=st)["job_loss"] == {}
    # cores and a count on two nodes: every job on the first counts (GresUsed or not), one refusal per change
    layout = (SLURM % 8).replace("NodeName=n1 Gres", "NodeName=n1 Sockets=2 CoresPerSocket=8 Gres")
    st = state(applied=layout.replace("NodeName=n2 Gres=gpu:a100:8", "NodeName=n2 Gres=gpu:a100:4"))
    st["n2.lab"][deploy_plan.VERIFY] = verified({"restart": True, "gres_changed": True}, host="n2.lab")
    plan = gate(st=st)
    assert plan["job_loss"]["n1"] == {"why": ["its cores change (Sockets x CoresPerSocket 16 -> 1)"], "gres": [],
                                      "cores": True}
    refusal = deploy_plan.jobs_refusal(plan, {"nodes": {
        "n1": busy_node("n1", "ALLOCATED", "16", "cpu=16", used="gpu:a100:0(IDX:N/A)"), "n2": busy_node("n2")}})
    assert refusal.startswith("nothing installed, nothing restarted: node n1: running jobs: expected none where its "
                              "cores change (Sockets x CoresPerSocket 16 -> 1), found n1 (host n1.lab) State=ALLOCATED")
    assert "; node n2: running jobs: expected none where its GRES count changes" in refusal
    assert "scontrol update nodename=n[1-2] state=drain" in refusal and "squeue -w n[1-2]" in refusal
    # many nodes of one change: one group, five shown
    plan = {"names": {}, "job_loss": {"g%02d" % i: {"why": ["x"], "gres": ["gpu"], "cores": False}
                                      for i in range(1, 13)}}
    refusal = deploy_plan.jobs_refusal(plan, {"nodes": {"g%02d" % i: busy_node("g%02d" % i) for i in range(1, 13)}})
    assert refusal.count("running jobs") == 1 and "nodes g[01-12]: running jobs" in refusal
    assert "g05 (host g05)" in refusal and "g06 (host" not in refusal and " and 7 more." in refusal
    # slurmctld does not answer: refused, naming the nodes it could not read
    failed = {"failed": True, "msg": "slurm_load_node error: Unable to contact slurm controller (connect failure)"}
    assert deploy_plan.jobs_refusal(plan, failed) == (
        "nothing installed, nothing restarted: slurmctld: running jobs: expected to read g[01-12] from slurmctld "
        "(their GRES count or cores change, and slurmctld ends their jobs when it restarts), found scontrol failing: "
        "slurm_load_node error: Unable to contact slurm controller (connect failure); start slurmctld and deploy "
        "again, or, when no job can run there, deploy with -e hpc_gres_deploy_allow_state_change=true")
