"""The slurmd -G harness judges hand-written configs the way the real slurmd does.

These tests pin the judge itself, before any rendered file is fed to it: a correct node passes with
the right counts, OS-CPU-style Cores and a missing device are refused, and the node's shape (not this
machine's) is what Cores are checked against.
"""

import os

import pytest

import slurmd_oracle
from slurmd_oracle import gres_conf_device_paths, hwloc_synthetic, parse_gres_line, run_slurmd_g

SLURM_CONF = """\
ClusterName=oracle
SlurmctldHost=ctl01
SlurmdSpoolDir=/var/spool/slurmd
SlurmdLogFile=/var/log/slurm/slurmd.log
SlurmdPidFile=/run/slurmd.pid
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=gpu
NodeName=gpu-a01 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1000 Gres=gpu:a100:4
NodeName=gpu-m01 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000 Gres=gpu:a100:1,gpu:1g.10gb:2
PartitionName=gpu Nodes=ALL Default=YES
"""

GOOD_GRES = """\
# two GPUs per socket
NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-31
NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=32-63
"""

# nvidia-smi topo -m CPU affinity copied as-is: OS CPU ids with the SMT siblings, not core indices.
OS_CPU_GRES = """\
NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-31,64-95
NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=32-63,96-127
"""

MIG_GRES = """\
NodeName=gpu-m01 Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-7
NodeName=gpu-m01 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22
NodeName=gpu-m01 Name=gpu Type=1g.10gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap30,/dev/nvidia-caps/nvidia-cap31
"""


@pytest.fixture
def oracle():
    slurmd_oracle.require_oracle()
    return run_slurmd_g


def test_good_node_passes_with_its_counts(oracle):
    result = oracle("gpu-a01", SLURM_CONF, GOOD_GRES, 2, 32, 2)
    assert result.ok, result.describe()
    assert result.counts() == {"gpu:a100": 4}
    assert [(r.file, r.cores, r.count) for r in result.records] == [
        ("/dev/nvidia[0-1]", "0-31", 2), ("/dev/nvidia[2-3]", "32-63", 2)]
    assert [d[0] for d in result.devices] == ["/dev/nvidia%d" % i for i in range(4)]
    assert result.absent == []


def test_os_cpu_ids_as_cores_are_rejected(oracle):
    result = oracle("gpu-a01", SLURM_CONF, OS_CPU_GRES, 2, 32, 2)
    assert not result.ok
    assert any("Invalid GRES data for gpu, Cores=32-63,96-127" in e for e in result.errors), result.describe()


def test_cores_are_judged_on_the_node_shape_not_this_machine(oracle):
    # Same file, but a node with 16 cores per socket has no core 32-63.
    result = oracle("gpu-a01", SLURM_CONF, GOOD_GRES, 2, 16, 2)
    assert any("Cores=32-63" in e for e in result.errors), result.describe()
    assert not any("Cores=0-31" in e for e in result.errors), result.describe()


def test_missing_device_file_is_fatal(oracle):
    result = oracle("gpu-a01", SLURM_CONF, GOOD_GRES, 2, 32, 2, omit=["/dev/nvidia3"])
    assert result.absent == ["/dev/nvidia3"]
    assert result.returncode != 0
    assert any("can't stat gres.conf file /dev/nvidia3" in f for f in result.fatals), result.describe()
    assert not result.ok


def test_fewer_files_than_slurm_conf_is_reported_not_hidden(oracle):
    # slurmd itself does not compare with slurm.conf's Gres= count: the count it reports is what
    # slurmctld would receive (and then drain the node for). The caller compares.
    gres = "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-31\n"
    result = oracle("gpu-a01", SLURM_CONF, gres, 2, 32, 2)
    assert result.counts() == {"gpu:a100": 2}


def test_mig_multiple_files_with_caps_devices(oracle):
    result = oracle("gpu-m01", SLURM_CONF, MIG_GRES, 1, 8, 1)
    assert result.ok, result.describe()
    assert result.counts() == {"gpu:a100": 1, "gpu:1g.10gb": 2}
    mig = [r for r in result.records if r.type == "1g.10gb"]
    assert [r.files for r in mig] == [
        ["/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22"],
        ["/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap30", "/dev/nvidia-caps/nvidia-cap31"]]
    assert ("/dev/nvidia-caps/nvidia-cap21", slurmd_oracle.NVIDIA_CAPS_MAJOR, 21) in result.devices


def test_host_dev_and_slurm_paths_are_untouched(oracle):
    before = {p: os.path.exists(p) for p in ("/dev/nvidia0", "/dev/nvidia-caps")}
    oracle("gpu-a01", SLURM_CONF, GOOD_GRES, 2, 32, 2)
    assert {p: os.path.exists(p) for p in before} == before


def test_private_conf_moves_slurmd_paths_only():
    text = slurmd_oracle._private_slurm_conf(SLURM_CONF, "/tmp/x")
    assert "/var/spool/slurmd" not in text and "/var/log/slurm" not in text and "/run/slurmd.pid" not in text
    assert "SlurmdSpoolDir=/tmp/x/spool" in text
    assert "NodeName=gpu-a01 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1000 Gres=gpu:a100:4" in text


def test_shared_gres_fold_under_bare_name():
    out = ("slurmd: Gres Name=shard Type=l40s Count=8 Index=0 ID=1918986455 File=/dev/nvidia0 (null)\n"
           "slurmd: Gres Name=gpu Type=l40s Count=1 Index=0 ID=7696487 File=/dev/nvidia0 (null)\n"
           "slurmd: Gres Name=shard Type=a100 Count=0 Index=1 ID=1918986455 File=/dev/nvidia1 (null)\n"
           "slurmd: Gres Name=gpu Type=a100 Count=1 Index=1 ID=7696487 File=/dev/nvidia1 (null)\n"
           "slurmd: Gres Name=shard Type=l40s Count=8 Index=2 ID=1918986455 File=/dev/nvidia2 (null)\n"
           "slurmd: Gres Name=gpu Type=l40s Count=1 Index=2 ID=7696487 File=/dev/nvidia2 (null)\n")
    result = slurmd_oracle.OracleResult("n", "package:1 core:1 pu:1", [], 0, out, [], [])
    assert result.counts() == {"gpu:l40s": 2, "gpu:a100": 1, "shard": 16}
    assert result.counts(fold=()) == {"gpu:l40s": 2, "gpu:a100": 1, "shard:l40s": 16}
    assert result.counts(name="gpu") == {"gpu:l40s": 2, "gpu:a100": 1}


@pytest.mark.parametrize("line, expected", [
    ("slurmd: Gres Name=gpu Type=a100 Count=2 Index=0 ID=7696487 File=/dev/nvidia[0-1] Cores=0-31 CoreCnt=128 (null)",
     {"name": "gpu", "type": "a100", "count": 2, "index": 0, "file": "/dev/nvidia[0-1]", "cores": "0-31",
      "core_cnt": 128, "links": None, "flags": None}),
    ("slurmd-gpu01: Gres Name=gpu Type=(null) Count=1 Index=2 ID=7696487 File=/dev/nvidia2 (null)",
     {"name": "gpu", "type": None, "count": 1, "index": 2, "file": "/dev/nvidia2", "cores": None,
      "core_cnt": None, "links": None, "flags": None}),
    # 23.02+ format
    ("slurmd: Gres Name=gpu Type=h100 Count=1 Index=3 ID=7696487 File=/dev/nvidia3 Cores=16-31 CoreCnt=32 "
     "Links=0,0,0,-1 Flags=HAS_FILE,HAS_TYPE,ENV_NVML",
     {"name": "gpu", "type": "h100", "count": 1, "index": 3, "file": "/dev/nvidia3", "cores": "16-31",
      "core_cnt": 32, "links": "0,0,0,-1", "flags": "HAS_FILE,HAS_TYPE,ENV_NVML"}),
])
def test_parse_gres_line(line, expected):
    record = parse_gres_line(line).as_dict()
    record.pop("raw")
    assert record == expected


def test_output_classification():
    out = ("slurmd: error: xcpuinfo_abs_to_mac: failed\n"
           "slurmd: error: Invalid GRES data for gpu, Cores=32-63,96-127\n"
           "slurmd: WARNING: A line in gres.conf for GRES gpu:a100 has 2 more configured than expected\n"
           "slurmd: Gres Name=gpu Type=a100 Count=2 Index=0 ID=7696487 File=/dev/nvidia[0-1] (null)\n"
           "slurmd: fatal: can't stat gres.conf file /dev/nvidia3: No such file or directory\n")
    result = slurmd_oracle.OracleResult("n", "package:1 core:1 pu:1", [], 1, out, [], [])
    assert result.errors == ["xcpuinfo_abs_to_mac: failed", "Invalid GRES data for gpu, Cores=32-63,96-127"]
    assert result.warnings == ["A line in gres.conf for GRES gpu:a100 has 2 more configured than expected"]
    assert result.fatals == ["can't stat gres.conf file /dev/nvidia3: No such file or directory"]
    assert result.counts() == {"gpu:a100": 2}
    assert not result.ok


def test_device_paths_follow_nodename_and_multiple_files():
    text = ("NodeName=gpu-a[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-1]  # comment File=/dev/nvidia9\n"
            "NodeName=gpu-b01 Name=gpu Type=h100 File=/dev/nvidia[4-5]\n"
            "Name=gpu Type=1g MultipleFiles=/dev/nvidia2,/dev/nvidia-caps/nvidia-cap[21-22]\n")
    assert gres_conf_device_paths(text, "gpu-a02") == [
        "/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap21",
        "/dev/nvidia-caps/nvidia-cap22"]
    assert gres_conf_device_paths(text, "gpu-b01") == [
        "/dev/nvidia4", "/dev/nvidia5", "/dev/nvidia2", "/dev/nvidia-caps/nvidia-cap21",
        "/dev/nvidia-caps/nvidia-cap22"]


@pytest.mark.parametrize("shape", [(0, 4, 1), (2, "4", 1), (2, 4, True)])
def test_bad_shape_refused(shape):
    with pytest.raises(ValueError):
        hwloc_synthetic(*shape)


def test_missing_slurmd_fails_under_ci_and_skips_elsewhere(monkeypatch):
    monkeypatch.setattr(slurmd_oracle, "find_slurmd", lambda: None)
    monkeypatch.setenv("CI", "true")
    with pytest.raises(pytest.fail.Exception, match="CI=true .*slurmd not installed"):
        slurmd_oracle.require_oracle()
    monkeypatch.delenv("CI")
    with pytest.raises(pytest.skip.Exception, match="slurmd not installed"):
        slurmd_oracle.require_oracle()
