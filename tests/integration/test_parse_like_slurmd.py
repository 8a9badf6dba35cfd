"""The collection's parser reads a file the way slurmd does: each case runs both on the same files.

``slurmd_gres.node_view`` (the collection) and the real ``slurmd -N n1 -G`` (the oracle) must agree on every
GRES record the node would register (type, device files, count, Cores binding, Links) and on whether slurmd
stops. The first six cases are the differences measured against slurmd 22.05 before the parser followed it.
"""
import pytest

import slurmd_oracle

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    check_consistency,
    parse_gres_conf,
    parse_slurm_conf,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_units

SHAPE = (2, 4, 2)  # 8 cores: Cores=0-7 exist, 8-15 do not
SLURM = """ClusterName=parse
SlurmctldHost=ctl
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=%s
NodeName=n[1-2] Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=1000 Gres=%s
"""


def gpus(*files, gtype=None, cores=None, links=None):
    return [(gtype, (f,), 1, cores, links, None) for f in files]


def shards(*pairs, name="shard"):
    return [(None, (f,), count, None, None, None) for f, count in pairs]


CASES = [
    # --- the measured differences ---
    ("spaces-around-equals", "gpu", "gpu:2", "Name = gpu File = /dev/nvidia[0-1]\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1")}),
    # slurmd glues the lines with nothing in between: the Name becomes "gpuFile=/dev/nvidia[0-1]", an unknown GRES
    ("continuation-without-space", "gpu", "gpu:2", "Name=gpu\\\nFile=/dev/nvidia[0-1]\n", {}),
    ("file-less-gpu-record", "gpu", "gpu:2", "Name=gpu Count=2\n", {}),
    ("bad-hostlist-on-another-nodes-line", "gpu", "gpu:2",
     "NodeName=x[1-2 Name=gpu File=/dev/nvidia[2-3]\nNodeName=n1 Name=gpu File=/dev/nvidia[0-1]\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1")}),
    ("cores-beyond-the-node", "gpu", "gpu:2", "Name=gpu File=/dev/nvidia[0-1] Cores=0-15\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1")}),
    ("surplus-gpus-trimmed", "gpu", "gpu:2", "Name=gpu File=/dev/nvidia[0-3] Cores=0-3\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1", cores="0-3")}),
    # --- more of slurmd's rules ---
    ("continuation-with-space", "gpu", "gpu:2", "Name=gpu \\\n File=/dev/nvidia[0-1]\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1")}),
    ("quoted-and-escaped-values", "gpu", "gpu:a100:2", 'Name=gpu Type="a100" File=/dev/nvidia\\0,/dev/nvidia1\n',
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1", gtype="a100")}),
    ("line-without-name-skipped", "gpu", "gpu:1",
     "NodeName=n1 File=/dev/nvidia0\nNodeName=n1 Name=gpu File=/dev/nvidia1\n",
     {"gpu": gpus("/dev/nvidia1")}),
    ("bad-hostlist-on-own-line", "gpu", "gpu:2", "NodeName=n[1-2 Name=gpu File=/dev/nvidia[0-1]\n", {}),
    ("name-lines-before-nodename-lines", "gpu", "gpu:a:1,gpu:b:2",
     "NodeName=n1 Name=gpu Type=b File=/dev/nvidia[1-2]\nName=gpu Type=a File=/dev/nvidia0\n",
     {"gpu": gpus("/dev/nvidia0", gtype="a") + gpus("/dev/nvidia1", "/dev/nvidia2", gtype="b")}),
    ("untyped-slurm-conf-drops-gres-conf-types", "gpu", "gpu:2",
     "Name=gpu Type=a File=/dev/nvidia0\nName=gpu Type=b File=/dev/nvidia1\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1")}),
    ("typed-slurm-conf-matches-no-untyped-record", "gpu", "gpu:a:2", "Name=gpu File=/dev/nvidia[0-1]\n", {}),
    ("shards-from-slurm-conf-only", "gpu,shard", "gpu:a:3,shard:10", "Name=gpu Type=a File=/dev/nvidia[0-2]\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", gtype="a"),
      "shard": shards(("/dev/nvidia0", 3), ("/dev/nvidia1", 3), ("/dev/nvidia2", 4))}),
    ("shard-count-divided-over-its-files", "gpu,shard", "gpu:a:3,shard:10",
     "Name=gpu Type=a File=/dev/nvidia[0-2]\nName=shard Count=10 File=/dev/nvidia[0-2]\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", gtype="a"),
      "shard": shards(("/dev/nvidia0", 3), ("/dev/nvidia1", 3), ("/dev/nvidia2", 3))}),
    ("mps-per-gpu", "gpu,mps", "gpu:a:2,mps:200",
     "Name=gpu Type=a File=/dev/nvidia[0-1]\nName=mps Count=100 File=/dev/nvidia0\n"
     "Name=mps Count=100 File=/dev/nvidia1\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1", gtype="a"),
      "mps": shards(("/dev/nvidia0", 100), ("/dev/nvidia1", 100))}),
    ("count-only-generic-gres", "gpu,bandwidth,tmpdisk", "gpu:2,bandwidth:lustre:no_consume:4G,tmpdisk:100G",
     "Name=gpu File=/dev/nvidia[0-1] Cores=0-3 Links=-1,2\nName=bandwidth Type=lustre Count=4G\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1", cores="0-3", links="-1,2"),
      "bandwidth": [("lustre", (), 4 * 1024 ** 3, None, None, None)],
      "tmpdisk": [(None, (), 100 * 1024 ** 3, None, None, None)]}),
    # slurmd registers Count=2 and a second record with the other 8: slurmctld adds them up (one unit)
    ("count-below-slurm-conf-gets-the-rest", "gpu,qpu", "gpu:1,qpu:10", "Name=gpu File=/dev/nvidia0\nName=qpu Count=2\n",
     {"gpu": gpus("/dev/nvidia0"), "qpu": [(None, (), 10, None, None, None)]}),
    ("mig-record-split-when-shard-in-grestypes", "gpu,shard", "gpu:1g.5gb:1",
     "Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21,/dev/nvidia-caps/nvidia-cap22\n",
     {"gpu": gpus("/dev/nvidia1", "/dev/nvidia-caps/nvidia-cap21", "/dev/nvidia-caps/nvidia-cap22", gtype="1g.5gb")}),
    ("invalid-links-dropped", "gpu", "gpu:1", "Name=gpu File=/dev/nvidia0 Links=0,0\n", {"gpu": gpus("/dev/nvidia0")}),
    # a type of digits is a type where a count follows it (gres.c _get_gres_cnt), as the collection writes it ...
    ("digit-type-with-a-count", "gpu", "gpu:5090:2", "Name=gpu Type=5090 File=/dev/nvidia[0-1]\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1", gtype="5090")}),
    # ... and a count where it is the last field: 5090 untyped GPUs declared, the records' types dropped
    ("digit-type-without-a-count-is-a-count", "gpu", "gpu:5090", "Name=gpu Type=5090 File=/dev/nvidia[0-1]\n",
     {"gpu": gpus("/dev/nvidia0", "/dev/nvidia1")}),
    # --- what stops slurmd ---
    ("fatal-nodename-not-first", "gpu", "gpu:1", "Name=gpu NodeName=n1 File=/dev/nvidia0\n", None),
    ("fatal-duplicate-device", "gpu", "gpu:2", "Name=gpu File=/dev/nvidia0,/dev/nvidia0\n", None),
    ("fatal-type-on-some-records", "gpu", "gpu:a:2", "Name=gpu Type=a File=/dev/nvidia0\nName=gpu File=/dev/nvidia1\n",
     None),
    ("fatal-env-flags-disagree", "gpu", "gpu:2",
     "Name=gpu File=/dev/nvidia0 Flags=nvidia_gpu_env\nName=gpu File=/dev/nvidia1 Flags=amd_gpu_env\n", None),
    ("fatal-two-file-less-shard-lines", "gpu,shard", "gpu:a:2,shard:10",
     "Name=gpu Type=a File=/dev/nvidia[0-1]\nName=shard Count=7\n", None),
]


@pytest.fixture(scope="module")
def oracle():
    slurmd_oracle.require_oracle()
    return slurmd_oracle.run_slurmd_g


@pytest.mark.parametrize("grestypes, spec, gres, expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_parser_and_slurmd_agree(oracle, grestypes, spec, gres, expected):
    slurm = SLURM % (grestypes, spec)
    view = node_view(parse_slurm_conf(slurm), gres, "n1")
    result = oracle("n1", slurm, gres, *SHAPE, other_devices=True)
    if expected is None:
        assert result.returncode != 0 and result.fatals, result.describe()
        assert view["fatal"], view
        return
    assert result.returncode == 0 and not result.fatals, result.describe()
    assert view["fatal"] is None, view["fatal"]
    assert result.units() == expected, result.describe()
    assert view_units(view, with_flags=False) == expected


def test_cores_beyond_the_node_are_reported_by_both(oracle):
    slurm = SLURM % ("gpu", "gpu:2")
    gres = "Name=gpu File=/dev/nvidia[0-1] Cores=0-15\n"
    result = oracle("n1", slurm, gres, *SHAPE)
    assert "Invalid GRES data for gpu, Cores=0-15" in result.errors
    problems = check_consistency(slurm, {"n1": gres, "n2": gres})
    assert problems[0] == ("host n1: gres.conf line 1: expected a line slurmd uses as written, found slurmd: error: "
                           "Invalid GRES data for gpu, Cores=0-15")


@pytest.mark.parametrize("hardware", [(2, 8, 2), (4, 8, 1)], ids=["more-cores-per-socket", "more-sockets"])
def test_cores_beyond_slurm_conf_are_dropped_on_hardware_with_more_cores(oracle, hardware):
    """slurmd judges Cores= against slurm.conf's Sockets x CoresPerSocket, not the hardware's, on a node with at
    least the CPUs slurm.conf declares (slurmd.c _read_config, xcpuinfo_abs_to_mac): the reason the import gives
    when it refuses such a binding."""
    slurm = SLURM % ("gpu", "gpu:2")
    gres = "Name=gpu File=/dev/nvidia0 Cores=0-3\nName=gpu File=/dev/nvidia1 Cores=8-15\n"
    result = oracle("n1", slurm, gres, *hardware)
    assert result.returncode == 0 and not result.fatals, result.describe()
    assert "Invalid GRES data for gpu, Cores=8-15" in result.errors, result.describe()
    assert not any("Cores=0-3" in e for e in result.errors), result.describe()
    view = node_view(parse_slurm_conf(slurm), gres, "n1")
    assert result.units() == view_units(view, with_flags=False), result.describe()


def test_file_less_gpus_are_a_count_problem_with_the_reason(oracle):
    slurm = SLURM % ("gpu", "gpu:2")
    result = oracle("n1", slurm, "Name=gpu Count=2\n", *SHAPE)
    assert result.counts() == {}
    assert check_consistency(slurm, {"n1": "Name=gpu Count=2\n", "n2": "Name=gpu File=/dev/nvidia[0-1]\n"}) == [
        "host n1: gres.conf count of gpu: expected 2 (slurm.conf Gres=), found 0 (slurmd drops GPU records "
        "without File= unless AutoDetect is on)"]


def test_a_bad_hostlist_on_another_line_does_not_fail_every_node():
    text = "NodeName=x[1-2 Name=gpu File=/dev/nvidia[2-3]\nNodeName=n1 Name=gpu File=/dev/nvidia[0-1]\n"
    assert [r["line"] for r in parse_gres_conf(text, "n1")] == [2]
    assert parse_gres_conf(text, "n2") == []


def test_slurm_conf_only_shards_are_consistent():
    slurm = SLURM % ("gpu,shard", "gpu:a:3,shard:10")
    gres = "Name=gpu Type=a File=/dev/nvidia[0-2]\n"
    assert check_consistency(slurm, {"n1": gres, "n2": gres}) == []
