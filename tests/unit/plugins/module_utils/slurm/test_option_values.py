"""Values Slurm's parser reads again (log levels, times, partition states, ...): refused as read_config.c does."""
import os
import subprocess
import sys

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_values import check, relation_problems


@pytest.mark.parametrize("table, option, value, version, ok", [
    ("slurm.conf", "SlurmctldDebug", "debug2", "22.05", True),
    ("slurm.conf", "SlurmctldDebug", "7", "22.05", True),
    ("slurm.conf", "SlurmctldDebug", "INFINITE", "22.05", False),     # seen live: "Invalid SlurmctldDebug"
    ("slurm.conf", "SlurmctldPort", "6817-6818", "22.05", True),
    ("slurm.conf", "SlurmctldPort", "6818-6817", "22.05", False),
    ("slurm.conf", "SlurmctldPort", "x", "22.05", False),
    # select/cons_res: shipped to 23.02, gone from 23.11 (slurmctld 24.11.5: "fatal: Can't find plugin for ...")
    ("slurm.conf", "SelectType", "select/cons_res", "23.02", True),
    ("slurm.conf", "SelectType", "select/cons_res", "23.11", False),
    ("slurm.conf", "SelectType", "select/cons_res", "26.05", False),
    ("slurm.conf", "SelectType", "select/cons_tres", "26.05", True),
    ("slurm.conf", "SelectType", "select/linear", "26.05", True),
    ("slurm.conf", "SelectType", "select/cray_aries", "23.11", True),
    ("slurm.conf", "SelectType", "select/cray_aries", "24.05", False),
    # src/plugins/topology/ at each release's tag; "none" read as the default by read_config.c
    ("slurm.conf", "TopologyPlugin", "topology/block", "22.05", False),
    ("slurm.conf", "TopologyPlugin", "topology/block", "23.11", True),
    ("slurm.conf", "TopologyPlugin", "topology/tree", "22.05", True),
    ("slurm.conf", "TopologyPlugin", "topology/none", "22.05", True),
    ("slurm.conf", "TopologyPlugin", "topology/none", "24.11", True),
    ("slurm.conf", "TopologyPlugin", "topology/none", "26.05", True),
    ("slurm.conf", "TopologyPlugin", "topology/default", "23.02", False),
    ("slurm.conf", "TopologyPlugin", "topology/default", "25.05", True),
    ("slurm.conf", "TopologyPlugin", "topology/flat", "24.11", False),
    ("slurm.conf", "TopologyPlugin", "topology/flat", "25.05", True),
    ("slurm.conf", "TopologyPlugin", "topology/hypercube", "23.11", False),
    ("slurm.conf", "TopologyPlugin", "topology/3d_torus", "25.05", False),
    ("slurm.conf", "TopologyPlugin", "topology/ring", "26.05", True),
    ("slurm.conf", "TopologyPlugin", "none", "22.05", False),            # 22.05 loads none.so
    ("slurm.conf", "TopologyPlugin", "none", "23.11", True),
    ("slurm.conf", "TopologyPlugin", "topology/Tree", "24.11", False),   # topology_Tree.so does not exist
    # plugins a release ships (src/plugins/TYPE/ at its tag, plugin_tables.py): one of another release is refused,
    # a site's own plugin and "none" are not judged
    ("slurm.conf", "SwitchType", "switch/nvidia_imex", "23.11", False),     # GB200 IMEX channels: 24.05 on
    ("slurm.conf", "SwitchType", "switch/nvidia_imex", "24.05", True),
    ("slurm.conf", "SwitchType", "switch/none", "26.05", True),
    ("slurm.conf", "ProctrackType", "proctrack/cray_aries", "23.11", True),
    ("slurm.conf", "ProctrackType", "proctrack/cray_aries", "24.05", False),
    ("slurm.conf", "TaskPlugin", "task/affinity,task/cgroup", "26.05", True),
    ("slurm.conf", "TaskPlugin", "affinity,cray_aries", "24.11", False),    # task.c strips the task/ prefix
    ("slurm.conf", "AuthType", "auth/slurm", "22.05", False),               # 23.11 on
    ("slurm.conf", "AuthAltTypes", "auth/jwt", "22.05", True),
    ("slurm.conf", "JobSubmitPlugins", "lua,site_own", "22.05", True),
    ("slurm.conf", "NodeFeaturesPlugins", "node_features/knl_generic", "25.11", False),
    ("slurm.conf", "AccountingStorageType", "accounting_storage/ctld_relay", "23.11", False),
    ("slurm.conf", "MCSPlugin", "mcs/label", "24.11", True),
    # 25.11 loads JobContainerType as NamespaceType, job_container/tmpfs as namespace/tmpfs (namespace.c)
    ("slurm.conf", "JobContainerType", "job_container/tmpfs", "26.05", True),
    ("slurm.conf", "JobContainerType", "job_container/cncu", "24.05", False),
    ("slurm.conf", "JobContainerType", "job_container/linux", "24.11", False),
    ("slurm.conf", "NamespaceType", "namespace/linux", "25.11", True),
    # removed before 22.05 (src/plugins/ at 17.02 to 21.08): slurmctld 22.05.8 "fatal: failed to initialize
    # accounting_storage plugin" (a real site's slurm.conf, sites round 6)
    ("slurm.conf", "AccountingStorageType", "accounting_storage/filetxt", "22.05", False),
    ("slurm.conf", "SchedulerType", "sched/hold", "24.11", False),
    ("slurm.conf", "JobCompType", "jobcomp/filetxt", "26.05", True),
    # cred/slurm is built in auth/slurm (23.11 on; cred.c)
    ("slurm.conf", "CredType", "cred/slurm", "22.05", False),
    ("slurm.conf", "CredType", "cred/slurm", "23.11", True),
    ("slurm.conf", "CredType", "auth/slurm", "24.11", True),
    ("slurm.conf", "JobContainerType", "namespace/tmpfs", "24.11", False),  # job_container.c strips job_container/
    # a name without its TYPE/ prefix: loaded as written (plugin.c) unless the interface adds the prefix; recorded
    # on slurmctld 22.05.8: SchedulerType=backfill "fatal: Failed to initialize sched plugin", PriorityType=
    # multifactor, PreemptType=none, AuthType=munge and SelectType=cons_tres stop it; JobSubmitPlugins=
    # require_timelimit starts; JobCompType=filetxt logs "cannot create jobcomp context for filetxt" and runs on
    ("slurm.conf", "SchedulerType", "backfill", "22.05", False),
    ("slurm.conf", "PriorityType", "multifactor", "26.05", False),
    ("slurm.conf", "ProctrackType", "cgroup", "24.11", False),
    ("slurm.conf", "AccountingStorageType", "slurmdbd", "24.11", False),
    ("slurm.conf", "JobCompType", "filetxt", "22.05", False),
    ("slurm.conf", "JobCompType", "jobcomp/None", "22.05", True),       # a real site's: no records either way
    ("slurm.conf", "JobSubmitPlugins", "require_timelimit", "22.05", True),
    ("slurm.conf", "TaskPlugin", "affinity,cgroup", "22.05", True),      # task.c writes task/ before each
    ("slurm.conf", "AuthType", "munge", "22.05", False),                 # auth.c adds auth/ from 23.11
    ("slurm.conf", "AuthType", "munge", "23.11", True),
    ("slurm.conf", "CredType", "munge", "23.02", False),
    ("slurm.conf", "CredType", "munge", "24.11", True),
    ("slurm.conf", "TLSType", "s2n", "24.11", True),                     # tls.c 24.05-24.11; conn.c from 25.05
    ("slurm.conf", "TLSType", "s2n", "25.05", False),
    ("slurm.conf", "SelectType", "cons_tres", "24.11", False),
    ("slurm.conf", "SelectType", "cons_tres", "26.05", False),
    # "none": freed by read_config.c from 23.11 for most types, a plugin name before; PreemptType: preempt/none only
    ("slurm.conf", "SwitchType", "none", "22.05", False),
    ("slurm.conf", "SwitchType", "none", "23.11", True),
    ("slurm.conf", "JobAcctGatherType", "jobacct_gather/none", "22.05", True),
    ("slurm.conf", "PreemptType", "none", "24.11", False),
    ("slurm.conf", "PreemptType", "preempt/none", "26.05", True),
    ("slurm.conf", "TLSType", "none", "25.05", False),
    # names are matched case-sensitively: Proctrack_cgroup.so, task/Task/affinity and select "Select/cons_tres"
    # (slurmctld 22.05.8: "fatal: Can't find plugin for Select/cons_tres") do not exist
    ("slurm.conf", "ProctrackType", "Proctrack/cgroup", "22.05", False),
    ("slurm.conf", "ProctrackType", "proctrack/CGroup", "26.05", False),
    ("slurm.conf", "TaskPlugin", "Task/affinity", "24.11", False),
    ("slurm.conf", "SelectType", "Select/cons_tres", "22.05", False),
    # read_config.c: slurmctld 22.05.8 "Bad TaskPluginParam: Sched" (two real sites' slurm.conf, sites round 6)
    ("slurm.conf", "TaskPluginParam", "Sched", "22.05", False),
    ("slurm.conf", "TaskPluginParam", "cores,verbose", "22.05", True),
    ("slurm.conf", "TaskPluginParam", "Cores,Autobind=Threads,SlurmdOffSpec", "26.05", True),
    ("slurm.conf", "TaskPluginParam", "cores,threads", "24.11", False),
    ("slurm.conf", "TaskPluginParam", "autobind=cores,autobind=none", "24.11", False),
    ("slurm.conf", "TaskPluginParam", "autobind=boards", "24.11", False),
    ("slurm.conf", "TaskPluginParam", "OOMKillStep", "24.05", False),
    ("slurm.conf", "TaskPluginParam", "OOMKillStep", "24.11", True),
    ("slurm.conf", "SelectTypeParameters", "CR_Core_Memory,CR_LLN", "22.05", True),
    ("slurm.conf", "SelectTypeParameters", "CR_Core,CR_Memory", "22.05", False),       # two resource kinds
    ("slurm.conf", "SelectTypeParameters", "CR_CPU,CR_ONE_TASK_PER_CORE", "22.05", False),
    ("slurm.conf", "SelectTypeParameters", "CR_Core_Memory,MULTIPLE_SHARING_GRES_PJ", "22.05", False),  # 23.11+
    ("slurm.conf", "SelectTypeParameters", "CR_Core_Memory,MULTIPLE_SHARING_GRES_PJ", "23.11", True),
    ("slurm.conf", "PreemptMode", "REQUEUE,GANG", "22.05", True),
    ("slurm.conf", "PreemptMode", "GANG,WITHIN", "22.05", False),
    ("slurm.conf", "PreemptMode", "CANCEL,REQUEUE", "22.05", False),
    ("slurm.conf", "EnforcePartLimits", "ANY", "22.05", True),
    ("slurm.conf", "PropagateResourceLimitsExcept", "MEMLOCK,NOFILE", "22.05", True),
    ("slurm.conf", "PropagateResourceLimits", "memlock", "22.05", False),
    ("slurm.conf", "PriorityCalcPeriod", "5", "22.05", True),
    ("slurm.conf", "PriorityCalcPeriod", "INFINITE", "22.05", False),
    ("slurm.conf", "PriorityUsageResetPeriod", "MONTHLY", "22.05", True),
    ("slurm.conf", "AccountingStorageEnforce", "associations,limits,qos,safe", "22.05", True),
    ("slurm.conf", "AccountingStorageEnforce", "Associations,,QOS", "26.05", True),
    # SLAC's production slurm.conf (slaclab/slurm-docker@9d29adc): "Invalid parameter for AccountingStorageEnforce"
    ("slurm.conf", "AccountingStorageEnforce", "associations,limit,qos", "22.05", False),
    ("slurm.conf", "MaxJobCount", "0", "22.05", False),
    ("slurm.conf", "MaxArraySize", "4000002", "22.05", False),
    ("slurm.conf", "SchedulerParameters", "anything_goes", "22.05", True),   # not a checked option
    ("partition", "MaxTime", "2-00:00:00", "22.05", True),
    ("partition", "MaxTime", "UNLIMITED", "22.05", True),
    ("partition", "MaxTime", "1:2:3:4", "22.05", False),
    ("partition", "MaxTime", "1-2-3", "22.05", False),
    ("partition", "DefaultTime", "x", "22.05", False),
    ("partition", "State", "DRAIN", "22.05", True),
    ("partition", "State", "INFINITE", "22.05", False),
    ("partition", "OverSubscribe", "FORCE:4", "22.05", True),
    ("partition", "OverSubscribe", "x", "22.05", False),
    ("partition", "SelectTypeParameters", "CR_Socket_Memory", "22.05", True),
    ("partition", "CpuBind", "cores,verbose", "22.05", True),
    ("partition", "CpuBind", "x", "22.05", False),
    ("cgroup.conf", "CgroupPlugin", "cgroup/v2", "22.05", True),
    ("cgroup.conf", "CgroupPlugin", "disabled", "22.05", False),
    ("cgroup.conf", "CgroupPlugin", "disabled", "25.05", True),
    ("cgroup.conf", "MemorySwappiness", "101", "22.05", False),
    ("slurm.conf", "MessageTimeout", "100", "22.05", True),
    ("slurm.conf", "MessageTimeout", "101", "22.05", False),         # "too high for effective fault-tolerance"
    ("slurm.conf", "MinJobAge", "2", "22.05", True),
    ("slurm.conf", "MinJobAge", "0", "22.05", False),
    ("slurm.conf", "MaxJobId", "67108863", "22.05", True),
    ("slurm.conf", "MaxJobId", "67108864", "22.05", False),
    ("slurm.conf", "MaxNodeCount", "65536", "22.05", True),
    ("slurm.conf", "MaxNodeCount", "4294967294", "22.05", False),   # seen live: slurmd aborts, malloc failed
    ("slurm.conf", "EpilogMsgTime", "4294967295", "25.05", True),
    ("slurm.conf", "EpilogMsgTime", "4294967295", "25.11", False),  # "EpilogMsgTime can not exceed"
    ("gres.conf", "AutoDetect", "nvml", "22.05", True),
    ("gres.conf", "AutoDetect", "nvidia", "22.05", False),          # seen live: "unknown autodetect flag"
    ("gres.conf", "AutoDetect", "nvidia", "24.11", True),
])
def test_values_slurms_parser_reads_again(table, option, value, version, ok):
    problem = check(table, option, value, version)
    assert (problem is None) == ok, problem
    if problem:
        assert problem[1] == "%r (string)" % value
        assert option in problem[2]


def test_a_removed_select_plugin_says_which_release_removed_it_and_what_to_use():
    expected, found, hint = check("slurm.conf", "SelectType", "select/cons_res", "24.11")
    assert expected == "a select plugin Slurm 24.11 ships (select/cons_tres or select/linear)"
    assert found == "'select/cons_res' (string)"
    assert hint.startswith("Slurm 23.11 removed select/cons_res and slurmctld stops") and "select/cons_tres" in hint


@pytest.mark.parametrize("table, settings, version, named", [
    ("slurm.conf", {"DefMemPerCPU": "1", "DefMemPerNode": "2"}, "22.05", "DefMemPerCPU"),
    ("slurm.conf", {"MaxMemPerCPU": "1", "MaxMemPerNode": "2"}, "22.05", "MaxMemPerCPU"),
    ("partition", {"MaxMemPerCPU": "1", "MaxMemPerNode": "2"}, "22.05", "MaxMemPerCPU"),
    ("partition", {"AllowAccounts": "a", "DenyAccounts": "b"}, "22.05", "DenyAccounts"),
    ("partition", {"AllowQos": "normal", "DenyQos": "low"}, "22.05", "DenyQos"),
    ("slurm.conf", {"PreemptMode": "REQUEUE"}, "22.05", "PreemptMode"),          # preempt/none by default
    ("slurm.conf", {"PreemptMode": "WITHIN"}, "22.05", "PreemptMode"),
    ("slurm.conf", {"PreemptType": "preempt/qos"}, "22.05", "PreemptType"),      # PreemptMode OFF by default
    ("slurm.conf", {"PreemptType": "preempt/partition_prio", "PreemptMode": "SUSPEND"}, "22.05", "PreemptMode"),
    ("slurm.conf", {"PriorityWeightAge": "4294967295", "PriorityWeightQOS": "1"}, "22.05", "PriorityWeightAge"),
    ("slurm.conf", {"FirstJobId": "100", "MaxJobId": "99"}, "22.05", "FirstJobId"),
    ("slurm.conf", {"FirstJobId": "67043329"}, "22.05", "FirstJobId"),          # default MaxJobId 0x03ff0000
    ("slurm.conf", {"MaxNodeCount": "10", "SelectType": "select/linear"}, "22.05", "MaxNodeCount"),
    ("slurm.conf", {"MaxNodeCount": "10"}, "22.05", "MaxNodeCount"),             # select/linear by default
    ("slurm.conf", {"SlurmSchedLogLevel": "1"}, "22.05", "SlurmSchedLogLevel"),
    ("slurm.conf", {"MCSParameters": "ondemand"}, "22.05", "MCSParameters"),
    ("slurm.conf", {"MCSPlugin": "mcs/group"}, "22.05", "MCSPlugin"),
    ("slurm.conf", {"PriorityDecayHalfLife": "0-0:00"}, "22.05", "PriorityDecayHalfLife"),
])
def test_combinations_slurm_stops_on_or_ignores_a_value_of(table, settings, version, named):
    (problem,) = relation_problems(table, settings, version)
    involved, expected, found, hint = problem
    assert involved[0] == named
    assert hint.startswith(("Slurm stops", "Slurm ignores", "Slurm warns", "set PreemptType"))


@pytest.mark.parametrize("table, settings, version", [
    ("slurm.conf", {"DefMemPerCPU": "1"}, "22.05"),
    ("slurm.conf", {"PreemptMode": "OFF,GANG"}, "22.05"),
    ("slurm.conf", {"PreemptMode": "CLUSTER"}, "22.05"),
    ("slurm.conf", {"PreemptType": "preempt/partition_prio", "PreemptMode": "SUSPEND,GANG"}, "22.05"),
    ("slurm.conf", {"PreemptType": "preempt/qos", "PreemptMode": "REQUEUE"}, "22.05"),
    ("slurm.conf", {"PriorityWeightAge": "4294967295"}, "22.05"),
    ("slurm.conf", {"MaxNodeCount": "10"}, "23.11"),                             # cons_tres by default
    ("slurm.conf", {"SlurmSchedLogLevel": "1", "SlurmSchedLogFile": "/var/log/slurm/sched.log"}, "22.05"),
    ("slurm.conf", {"MCSPlugin": "mcs/group", "MCSParameters": "enforced"}, "22.05"),
    ("slurm.conf", {"PriorityDecayHalfLife": "0", "PriorityUsageResetPeriod": "MONTHLY"}, "22.05"),
    ("slurm.conf", {"PriorityDecayHalfLife": "7-0"}, "22.05"),
    ("partition", {"AllowAccounts": "ALL", "DenyAccounts": "b"}, "22.05"),
])
def test_combinations_slurm_accepts(table, settings, version):
    assert relation_problems(table, settings, version) == []


def test_the_plugin_table_is_what_the_slurm_source_fixtures_generate():
    root = testpaths.ROOT
    proc = subprocess.run([sys.executable, os.path.join(root, "scripts", "derive-slurm-plugins.py"), "generate",
                           "--fixtures", os.path.join(root, "tests", "fixtures", "slurm-source"), "--output",
                           os.path.join(root, "plugins", "module_utils", "slurm", "plugin_tables.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_a_plugin_of_another_release_names_when_it_ships_and_what_the_target_has():
    expected, found, hint = check("slurm.conf", "SwitchType", "switch/nvidia_imex", "23.11")
    assert expected == "a switch plugin Slurm 23.11 ships (switch/cray_aries, switch/hpe_slingshot)"
    assert found == "'switch/nvidia_imex' (string)"
    assert hint.startswith("switch/nvidia_imex ships from Slurm 24.05 on only (src/plugins/switch/ at each release's "
                           "tag): the daemons that load it log \"Couldn't find the specified plugin name for "
                           "switch/nvidia_imex looking at all files\"")
    assert "ships up to Slurm 23.11 only" in check("slurm.conf", "ProctrackType", "proctrack/cray_aries", "24.11")[2]
    assert "namespace/linux ships from Slurm 25.11 on" in check("slurm.conf", "JobContainerType",
                                                                "job_container/linux", "24.11")[2]
    assert "namespace/tmpfs ships from Slurm 25.11 on" in check("slurm.conf", "JobContainerType",
                                                                "namespace/tmpfs", "24.11")[2]
    assert check("slurm.conf", "AuthType", "auth/slurm", "22.05")[0].startswith("an auth plugin Slurm 22.05 ships")
    assert "ships up to Slurm 20.02 only (src/plugins/accounting_storage/" in check(
        "slurm.conf", "AccountingStorageType", "accounting_storage/filetxt", "22.05")[2]
    assert "cred/slurm ships from Slurm 23.11 on only (src/plugins/auth/" in check(
        "slurm.conf", "CredType", "cred/slurm", "23.02")[2]
    assert check("slurm.conf", "TaskPluginParam", "Sched", "22.05")[2] == (
        "slurmctld stops on it (\"Bad TaskPluginParam: Sched\", read_config.c)")
    assert "autobind already set" in check("slurm.conf", "TaskPluginParam", "autobind=cores,autobind=none", "24.11")[2]


def test_a_plugin_name_slurm_cannot_load_as_written_says_how_to_write_it():
    expected, found, hint = check("slurm.conf", "ProctrackType", "cgroup", "24.11")
    assert expected == "proctrack/cgroup (the plugin with its proctrack/ prefix, in lower case)"
    assert found == "'cgroup' (string)"
    assert hint == ('Slurm 24.11 loads ProctrackType=cgroup as written, not as proctrack/cgroup: "cannot create '
                    'proctrack context for cgroup", and the daemon stops')
    assert check("slurm.conf", "TaskPlugin", "Task/affinity", "24.11")[2] == (
        'Slurm matches plugin names case-sensitively and loads TaskPlugin=Task/affinity as task/Task/affinity: '
        '"cannot create task context for task/Task/affinity", and the daemon stops')
    assert check("slurm.conf", "TaskPlugin", "task/Affinity", "26.05")[0].startswith("task/affinity ")
    assert "runs on without job completion records" in check("slurm.conf", "JobCompType", "filetxt", "22.05")[2]
    assert "Can't find plugin for cons_tres" in check("slurm.conf", "SelectType", "cons_tres", "24.11")[2]
