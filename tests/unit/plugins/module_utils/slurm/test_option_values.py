"""Values Slurm's parser reads again (log levels, times, partition states, ...): refused as read_config.c does."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_values import check


@pytest.mark.parametrize("table, option, value, version, ok", [
    ("slurm.conf", "SlurmctldDebug", "debug2", "22.05", True),
    ("slurm.conf", "SlurmctldDebug", "7", "22.05", True),
    ("slurm.conf", "SlurmctldDebug", "INFINITE", "22.05", False),     # seen live: "Invalid SlurmctldDebug"
    ("slurm.conf", "SlurmctldPort", "6817-6818", "22.05", True),
    ("slurm.conf", "SlurmctldPort", "6818-6817", "22.05", False),
    ("slurm.conf", "SlurmctldPort", "x", "22.05", False),
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
])
def test_values_slurms_parser_reads_again(table, option, value, version, ok):
    problem = check(table, option, value, version)
    assert (problem is None) == ok, problem
    if problem:
        assert problem[1] == "%r (string)" % value
        assert option in problem[2]
