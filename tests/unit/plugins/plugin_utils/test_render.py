"""Rendering rules: gres.conf line collapsing, slurm.conf node grouping, derived settings, the count proof."""
import random

import pytest

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import render
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import gres_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    gres_counts_from_records,
    parse_gres_conf,
    parse_slurm_conf,
)


def layout(sockets=2, cores=32, threads=2, **extra):
    hv = {"hpc_gres_node_sockets": sockets, "hpc_gres_node_cores_per_socket": cores, "hpc_gres_node_threads_per_core": threads}
    hv.update(extra)
    return hv


def make(nodes, ctl=("ctl01",), **cluster):
    hostvars = dict(nodes)
    for host in ctl:
        hostvars.setdefault(host, {})
    groups = {"all": list(hostvars), "slurmctld": list(ctl), "slurmd": list(nodes)}
    return build_cluster_model(hostvars, groups, cluster)


def gres_lines(text):
    return [line for line in text.splitlines() if line and not line.startswith("#")]


def one_node(gpus, **cluster):
    model = make({"n1": layout(hpc_gres_gpus=gpus)}, **cluster)
    return render.render_gres_conf(model, "n1"), model


def test_consecutive_gpus_of_one_type_and_cores_collapse_into_one_line():
    text, _model = one_node([{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)])
    assert gres_lines(text) == [
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=32-63",
    ]


def test_type_change_cores_change_and_gaps_split_lines():
    text, _model = one_node([
        {"index": 0, "type": "l40s"}, {"index": 1, "type": "l40s"},
        {"index": 2, "type": "a100", "cores": "0-31"}, {"index": 3, "type": "a100", "cores": "32-63"},
        {"index": 5, "type": "a100", "cores": "32-63"},
    ])
    assert gres_lines(text) == [
        "NodeName=n1 Name=gpu Type=l40s File=/dev/nvidia[0-1]",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia2 Cores=0-31",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia3 Cores=32-63",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia5 Cores=32-63",
    ]


def test_minors_that_are_not_consecutive_get_their_own_lines_in_index_order():
    text, _model = one_node([{"index": 0, "type": "a100", "minor": 1}, {"index": 1, "type": "a100", "minor": 0},
                             {"index": 2, "type": "a100", "minor": 2}, {"index": 3, "type": "a100", "minor": 3}])
    assert gres_lines(text) == [
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia1",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0",
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[2-3]",
    ]


def test_shard_lines_follow_runs_of_equal_shards_with_the_total_count():
    text, model = one_node([{"index": 0, "type": "l40s", "shards": 4}, {"index": 1, "type": "l40s", "shards": 4},
                            {"index": 2, "type": "l40s", "shards": 2}, {"index": 3, "type": "l40s"}])
    assert gres_lines(text)[1:] == [
        "NodeName=n1 Name=shard Count=8 File=/dev/nvidia[0-1]",
        "NodeName=n1 Name=shard Count=2 File=/dev/nvidia2",
    ]
    assert "GresTypes=gpu,shard\n" in render.render_slurm_conf(model)
    assert "Gres=gpu:l40s:4,shard:10" in render.render_slurm_conf(model)


def test_autodetect_adds_a_node_line_and_keeps_explicit_lines():
    text, _model = one_node([{"index": 0, "type": "a100"}], hpc_gres_autodetect="nvml")
    assert gres_lines(text) == ["NodeName=n1 AutoDetect=nvml", "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0"]
    text, _model = one_node([{"index": 0, "type": "a100"}])
    assert "AutoDetect" not in text


def test_an_out_of_order_file_line_says_that_it_is_meant_and_an_ordered_one_says_nothing():
    text, _model = one_node([{"index": 0, "type": "a100", "minor": 1}, {"index": 1, "type": "a100", "minor": 0},
                             {"index": 2, "type": "a100"}])
    assert "# File= is out of /dev/nvidiaN order on purpose: the lines follow the nvidia-smi index (index 0 is " \
           "/dev/nvidia1, index 1 is /dev/nvidia0).\nNodeName=n1 Name=gpu Type=a100 File=/dev/nvidia1\n" in text
    text, _model = one_node([{"index": i, "type": "a100", "minor": i + 4} for i in range(4)])
    assert "out of /dev/nvidiaN order" not in text and gres_lines(text) == [
        "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia[4-7]"]


def test_with_autodetect_nvml_slurm_conf_says_that_slurmd_finds_the_mig_instances():
    _text, model = one_node([{"index": 0, "type": "a100", "model": "A100-80GB", "mig": ["7g.80gb"]}],
                            hpc_gres_autodetect="nvml")
    assert "layouts; on n1 slurmd finds them (AutoDetect=nvml),\n# and gres.conf has no lines for them.\n" in \
        render.render_slurm_conf(model)
    assert "Not complete here" not in _text


def test_mig_gpus_count_per_profile_in_slurm_conf_and_are_left_to_the_node_in_gres_conf():
    text, model = one_node([{"index": 0, "type": "a100"},
                            {"index": 1, "type": "a100", "model": "A100-80GB",
                             "mig": ["3g.40gb", "2g.20gb", "1g.10gb"]}])
    assert gres_lines(text) == ["NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0"]
    assert "# MIG: GPU 1 (a100, /dev/nvidia1) 3g.40gb,2g.20gb,1g.10gb: its MultipleFiles lines are written on the " \
           "node by the deploy" in text
    # the copy says that it is not the file to install, and slurm.conf does not claim more than was proven
    assert "# Not complete here: the 3 MIG instances of GPU 1 in slurm.conf's Gres= have no lines yet." in text
    assert ("# Generic resources: every node's Gres= below is proven equal to its gres.conf, but for MIG instances.\n"
            "# They are counted from the inventory's layouts; their gres.conf lines are written on n1 by the deploy,\n"
            "# from the node's live MIG devices, and proven against this file there.\n") in render.render_slurm_conf(model)
    slurm = render.render_slurm_conf(model)
    assert "Gres=gpu:a100:1,gpu:3g.40gb:1,gpu:2g.20gb:1,gpu:1g.10gb:1" in slurm
    assert render.deferred_gres(model) == {"n1": {"gpu:3g.40gb": 1, "gpu:2g.20gb": 1, "gpu:1g.10gb": 1}}
    files = render.render_all(model)  # the proof accepts the deferred MIG lines
    assert files["n1/gres.conf"] == text


def test_identical_nodes_share_one_line_with_zero_padded_hostlist():
    a100 = layout(hpc_gres_node_real_memory=1000, hpc_gres_gpus=[{"index": i, "type": "a100"} for i in range(8)])
    nodes = {"gpu-a%02d.x" % i: a100 for i in range(1, 13)}
    nodes["gpu-a07.x"] = layout(hpc_gres_node_real_memory=2000, hpc_gres_gpus=a100["hpc_gres_gpus"])
    nodes.update({"cpu%03d" % i: layout(sockets=1, cores=8, threads=1) for i in (8, 9, 10, 11)})
    nodes["login1"] = {}
    slurm = render.render_slurm_conf(make(nodes))
    assert [line for line in slurm.splitlines() if line.startswith("NodeName=")] == [
        "NodeName=cpu[008-011] Sockets=1 CoresPerSocket=8 ThreadsPerCore=1",
        "NodeName=gpu-a[01-06,08-12] Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1000 Gres=gpu:a100:8",
        "NodeName=gpu-a07 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=2000 Gres=gpu:a100:8",
        "NodeName=login1",
    ]


def test_gres_types_in_order_of_lowest_index():
    model = make({"n1": layout(hpc_gres_gpus=[{"index": 2, "type": "a100"}, {"index": 0, "type": "l40s"},
                                              {"index": 1, "type": "a100"}])})
    assert "Gres=gpu:l40s:1,gpu:a100:2\n" in render.render_slurm_conf(model)


def test_slurm_conf_header_options_controllers_and_partitions():
    model = make({"gpu1": layout(hpc_gres_gpus=[{"index": 0, "type": "a100"}], hpc_gres_node_features=["nvlink"],
                                 hpc_gres_node_weight=10)},
                 ctl=("ctl1", "ctl2"), hpc_gres_cluster_name="alpha",
                 hpc_gres_slurm_conf_options={"SlurmctldDebug": "info"},
                 hpc_gres_partitions=[{"name": "gpu", "nodes": ["gpu1"], "default": True}])
    model["controllers"][1]["addr"] = "10.0.0.2"
    slurm = render.render_slurm_conf(model)
    lines = slurm.splitlines()
    assert lines[0] == "# slurm.conf for cluster alpha, Slurm 24.11"
    assert lines[2:5] == ["ClusterName=alpha", "SlurmctldHost=ctl1", "SlurmctldHost=ctl2(10.0.0.2)"]
    assert "SlurmctldDebug=info" in lines
    assert "NodeName=gpu1 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 Features=nvlink Weight=10 Gres=gpu:a100:1" \
        in lines
    assert lines[-1] == "PartitionName=gpu Nodes=gpu1 Default=YES MaxTime=INFINITE State=UP"
    assert "AccountingStorageTRES" not in "\n".join(l for l in lines if not l.startswith("#"))


def test_gpu_tres_only_with_slurmdbd_and_user_tres_kept():
    gpus = [{"index": 0, "type": "l40s", "shards": 2}, {"index": 1, "type": "A40"}]
    model = make({"n1": layout(hpc_gres_gpus=gpus)}, hpc_gres_slurm_conf_options={
        "AccountingStorageType": "accounting_storage/slurmdbd", "AccountingStorageTRES": "license/x,gres/gpu"})
    slurm = render.render_slurm_conf(model)
    assert "AccountingStorageTRES=license/x,gres/gpu,gres/gpu:A40,gres/gpu:l40s,gres/shard\n" in slurm
    assert slurm.count("AccountingStorageTRES=") == 1
    no_dbd = render.render_slurm_conf(make({"n1": layout(hpc_gres_gpus=gpus)}))
    assert "\nAccountingStorageTRES" not in no_dbd
    assert "# AccountingStorageType=accounting_storage/slurmdbd is set in hpc_gres_slurm_conf_options." in no_dbd


def test_gpu_tres_false_writes_the_users_accounting_as_it_is():
    gpus = [{"index": 0, "type": "a100"}]
    dbd = {"AccountingStorageType": "accounting_storage/slurmdbd"}
    kept = render.render_slurm_conf(make({"n1": layout(hpc_gres_gpus=gpus)}, hpc_gres_accounting_gpu_tres=False,
                                         hpc_gres_slurm_conf_options=dict(dbd, AccountingStorageTRES="gres/gpu")))
    assert "\nAccountingStorageTRES=gres/gpu\n" in kept
    none = render.render_slurm_conf(make({"n1": layout(hpc_gres_gpus=gpus)}, hpc_gres_accounting_gpu_tres=False,
                                         hpc_gres_slurm_conf_options=dbd))
    assert "AccountingStorageTRES" not in none
    with pytest.raises(GresError) as err:
        make({"n1": layout(hpc_gres_gpus=gpus)}, hpc_gres_accounting_gpu_tres="no")
    assert "hpc_gres_accounting_gpu_tres: expected true or false, found 'no'" in str(err.value)


def test_cpu_only_cluster_has_no_gres_types():
    files = render.render_all(make({"cpu1": layout()}))
    assert "GresTypes" not in files["slurm.conf"]
    assert sorted(files) == ["cgroup.conf", "slurm.conf"]


def test_cgroup_conf_constrains_devices_by_default_and_takes_overrides():
    text = render.render_cgroup_conf(make({"cpu1": {}}))
    assert "ConstrainDevices=yes\n" in text
    text = render.render_cgroup_conf(make({"cpu1": {}}, hpc_gres_cgroup_conf_options={"CgroupPlugin": "cgroup/v2"}))
    assert "CgroupPlugin=cgroup/v2\n" in text


def test_render_all_files_and_counts_agree_per_node_and_type():
    nodes = {"gpu%d" % i: layout(hpc_gres_gpus=[{"index": j, "type": "a100" if j % 3 else "l40s", "shards": 2}
                                                for j in range(i)]) for i in range(1, 6)}
    model = make(nodes)
    files = render.render_all(model)
    assert sorted(files) == ["cgroup.conf", "gpu1/gres.conf", "gpu2/gres.conf", "gpu3/gres.conf",
                             "gpu4/gres.conf", "gpu5/gres.conf", "slurm.conf"]
    declared = parse_slurm_conf(files["slurm.conf"])["nodes"]
    for name in nodes:
        found = gres_counts_from_records(parse_gres_conf(files[name + "/gres.conf"], name))
        assert found == declared[name]["gres"]


def test_render_all_refuses_files_that_disagree(monkeypatch):
    model = make({"n1": layout(hpc_gres_gpus=[{"index": i, "type": "a100"} for i in range(4)])})
    real = gres_conf.gpu_files_expr
    monkeypatch.setattr(gres_conf, "gpu_files_expr", lambda run: real(run[:-1] if len(run) > 2 else run))
    with pytest.raises(GresError) as err:
        render.render_all(model)
    assert str(err.value) == "host n1: gres.conf count of gpu:a100: expected 4 (slurm.conf Gres=), found 3"


def test_output_is_deterministic_whatever_the_input_order():
    nodes = {"n%d" % i: layout(hpc_gres_gpus=[{"index": j, "type": ("a100", "h100")[i % 2]} for j in range(4)])
             for i in range(1, 30)}
    first = render.render_all(make(nodes))
    names = list(nodes)
    random.Random(7).shuffle(names)
    shuffled = {n: nodes[n] for n in names}
    for node in shuffled.values():
        node["hpc_gres_gpus"] = list(reversed(node["hpc_gres_gpus"]))
    second = render.render_all(make(shuffled))
    assert first == second
    assert list(first) == list(second)


def test_render_gres_conf_unknown_node():
    with pytest.raises(KeyError):
        render.render_gres_conf(make({"cpu1": {}}), "nope")


def test_summary_counts():
    model = make({"gpu1": layout(hpc_gres_gpus=[{"index": 0, "type": "a100"},
                                                {"index": 1, "type": "a100", "model": "A100-80GB",
                                                 "mig": ["3g.40gb", "3g.40gb"]}]),
                  "cpu1": {}})
    files = render.render_all(model)
    summary = render.summarize(model, files)
    assert summary["nodes"] == 2 and summary["gpu_nodes"] == 1 and summary["cpu_only_nodes"] == 1
    assert summary["gpus_by_type"] == {"a100": 2}
    assert summary["mig_instances_by_type"] == {"3g.40gb": 2}
    # the split GPU is one of the two a100, and the MIG line says Slurm schedules its instances instead
    assert summary["mig_split_by_type"] == {"a100": 1}
    assert "MIG instances: 3g.40gb 2 (on 1 a100 split with MIG, which Slurm schedules as these instances)" in \
        summary["lines"]
    assert summary["shards"] == 0 and summary["nodename_lines"] == 2
    assert summary["files"] == 3 and summary["gres_conf_files"] == 1
    assert summary["lines"][0] == "cluster cluster: 2 nodes (1 with GPUs, 1 CPU-only), controller ctl01"
