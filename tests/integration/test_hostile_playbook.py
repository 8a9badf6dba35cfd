"""Issue 11's hostile values through the render-only playbook: one run, every value refused naming its host and
field, no traceback, nothing written. (The unit tests check each case alone; this checks that Ansible's own loading
of the inventory, big integers, non-ASCII text and nested values included, reaches the same validation.) Case 1,
valid input, renders files the real slurmd reads."""
import os

import slurmd_oracle
from render_helpers import write_inventory
from test_render_playbook import render

SHAPE = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1}
GPU = {"index": 0, "type": "a100", "cores": "0-3"}
# host: (its variables, the field its refusal must name)
NODES = {
    "gpu01.lab": (dict(SHAPE, hpc_gres_node_sockets="\u00b2"), "hpc_gres_node_sockets"),
    "gpu02.lab": (dict(SHAPE, hpc_gres_gpus=[dict(GPU, cores="0-100000000")]), "hpc_gres_gpus[0].cores"),
    "gpu03.lab": (dict(SHAPE, hpc_gres_node_cores_per_socket=65536), "hpc_gres_node_cores_per_socket"),
    "gpu04.lab": (dict(SHAPE, hpc_gres_node_weight=2 ** 32), "hpc_gres_node_weight"),
    "gpu05.lab": (dict(SHAPE, hpc_gres_node_real_memory=2 ** 64), "hpc_gres_node_real_memory"),
    "gpu06.lab": (dict(SHAPE, hpc_gres_gpus=[dict(GPU, shards=2 ** 64)]), "hpc_gres_gpus[0].shards"),
    "gpu07.lab": (dict(SHAPE, hpc_gres_gpus=[dict(GPU, index=2 ** 64)]), "hpc_gres_gpus[0].index"),
    "gpu08.lab": (dict(SHAPE, hpc_gres_gpus=[dict(GPU, type="no_consume")]), "hpc_gres_gpus[0].type"),
    "gpu09.lab": (dict(SHAPE, hpc_gres_node_features=["ib\n"]), "hpc_gres_node_features[0]"),
    "default.lab": (dict(SHAPE), "hpc_gres_node_name"),
    "gpu10.lab": (dict(SHAPE, hpc_gres_gpus=[dict(GPU, cores=-1)]), "hpc_gres_gpus[0].cores"),
    "gpu11.lab": (dict(SHAPE, hpc_gres_gpus=[dict(GPU, type="a100\n")]), "hpc_gres_gpus[0].type"),
    # what Ansible itself cannot load: a vars file that is not a mapping, a template that fails
    "gpu12.lab": ("just a string", "vars"),
    "gpu13.lab": (dict(SHAPE, hpc_gres_node_sockets="{{ nosuch_variable }}"), "hpc_gres_node_sockets"),
}
CLUSTER = {
    "hpc_gres_slurm_conf_options": {"MaxJobCount": "1000 MinJobAge=5", "SchedulerParameters": ["defer", "x\nFoo=bar"],
                                    "SchedulerTyp": "sched/backfill", "SlurmctldParameters": "a#b", "Epilog": "/x\\"},
    "hpc_gres_cgroup_conf_options": {"ConstrainDevice": "yes"},
    "hpc_gres_partitions": [{"name": "main\n", "nodes": "ALL"}, {"name": "DEFAULT", "nodes": "ALL"},
                            {"name": "p", "nodes": [{"name": "gpu01"}]},
                            {"name": "q", "nodes": "ALL", "options": {"MaxTime": "1 Nodes=nosuch"}}],
}
CLUSTER_FIELDS = ("hpc_gres_slurm_conf_options.MaxJobCount", "hpc_gres_slurm_conf_options.SchedulerParameters[1]",
                  "hpc_gres_slurm_conf_options.SchedulerTyp", "hpc_gres_slurm_conf_options.SlurmctldParameters",
                  "hpc_gres_slurm_conf_options.Epilog", "hpc_gres_cgroup_conf_options.ConstrainDevice",
                  "hpc_gres_partitions[0].name", "hpc_gres_partitions[1].name", "hpc_gres_partitions[2].nodes[0]",
                  "hpc_gres_partitions[3].options.MaxTime")


def test_every_hostile_value_is_refused_naming_host_and_field_and_nothing_is_written(tmp_path):
    hosts = {"all": {"children": {"slurmctld": {"hosts": {"head.lab": None}},
                                  "slurmd": {"hosts": {h: None for h in NODES}}}}}
    host_vars = {h: v for h, (v, _field) in NODES.items()}
    host_vars["head.lab"] = {"hpc_gres_controller_addr": "10.0.0.1\nFoo=bar"}
    inventory = write_inventory(tmp_path / "inv", hosts, host_vars=host_vars, group_vars={"all": CLUSTER})
    dest = tmp_path / "out"
    rc, out = render(inventory, dest)
    assert rc != 0, out
    assert "Traceback" not in out and "Exception" not in out, out
    expected = ["host %s: %s: expected" % (h, f) for h, (_value, f) in NODES.items()]
    expected.append("host head.lab: hpc_gres_controller_addr: expected")
    expected.extend("host localhost: %s: expected" % f for f in CLUSTER_FIELDS)
    missing = [e for e in expected if e not in out]
    assert not missing, "refusals not reported: %s\n%s" % (missing, out)
    assert not os.path.exists(dest)
    # each value is in a file of the inventory: the refusal names it (the line of the GPU entry's cores)
    assert "found '0-100000000' (string) (value 100000000 above 65535); defined in %s:7" % (
        tmp_path / "inv" / "host_vars" / "gpu02.lab.yml") in out, out


def test_1_identical_suffixed_nodes_render_files_slurmd_reads(tmp_path):
    slurmd_oracle.require_oracle()
    hosts = {"all": {"children": {"slurmctld": {"hosts": {"head.lab": None}},
                                  "slurmd": {"hosts": {"node01-ib": None, "node02-ib": None}}}}}
    node = dict(SHAPE, hpc_gres_gpus=[GPU])
    release = slurmd_oracle.slurmd_release()  # the files are for the slurmd that judges them
    inventory = write_inventory(tmp_path / "inv", hosts, group_vars={"all": {"hpc_gres_slurm_version": release},
                                                                     "slurmd": node}, host_vars={"head.lab": {}})
    dest = tmp_path / "out"
    rc, out = render(inventory, dest)
    assert rc == 0, out
    slurm_conf = (dest / "slurm.conf").read_text()
    # Slurm reads a hostlist suffix (node[01-02]-ib) from 23.11 on
    written = "node[01-02]-ib" if tuple(map(int, release.split("."))) >= (23, 11) else "node01-ib,node02-ib"
    assert "NodeName=%s " % written in slurm_conf
    for name in ("node01-ib", "node02-ib"):
        result = slurmd_oracle.run_slurmd_g(name, slurm_conf, (dest / name / "gres.conf").read_text(), 2, 4, 1,
                                            extra_files={"cgroup.conf": (dest / "cgroup.conf").read_text()})
        assert result.ok, result.describe()
        assert result.counts() == {"gpu:a100": 1}, result.describe()
