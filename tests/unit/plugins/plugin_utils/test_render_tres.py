"""TRES weights in the rendered slurm.conf name only TRES slurmctld tracks (plugins/plugin_utils/render_tres.py).

Recorded with Debian 12's slurmctld 22.05.8 without slurmdbd on the rendered slurm.conf (2026-12-06):
TRESBillingWeights=CPU=1.0,GRES/gpu=2.0 stopped it with "error: TRES weight 'GRES:gpu' is not a configured TRES type."
and "fatal: failed to parse tres weights str 'CPU=1.0,GRES/gpu=2.0'", and CPU=1,License/matlab=1 the same way;
the eight default TRES, and License/matlab=1 with AccountingStorageTRES=license/matlab, started."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.writer import ConfText
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import render_tres
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_access import uses_slurmdbd
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

NODE = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1,
        "hpc_gres_gpus": [{"index": i, "type": "a100"} for i in range(2)]}
DBD = {"AccountingStorageType": "accounting_storage/slurmdbd"}


def render(weights, options=None, node_weights=None, gpu_tres=True):
    node = dict(NODE, hpc_gres_node_options={"TRESWeights": node_weights}) if node_weights else NODE
    cluster = {"hpc_gres_partitions": [{"name": "gpu", "nodes": "ALL",
                                        "options": {"TRESBillingWeights": weights} if weights else {}}],
               "hpc_gres_slurm_conf_options": dict(options or {}), "hpc_gres_accounting_gpu_tres": gpu_tres}
    return render_all(build_cluster_model({"gpu01": node, "ctl": {}}, {"slurmctld": ["ctl"], "slurmd": ["gpu01"]},
                                          cluster))


def problems(*args, **kwargs):
    with pytest.raises(GresError) as err:
        render(*args, **kwargs)
    return [(p.host, p.field, p.found, p.hint) for p in err.value.problems]


def test_the_default_tres_and_the_accounted_ones_may_be_weighted():
    files = render("CPU=1.0,Mem=0.25G,Node=1,FS/disk=0.1,VMem=0,Pages=0,Energy=0,Billing=1")
    assert " TRESBillingWeights=CPU=1.0,Mem=0.25G,Node=1,FS/disk=0.1,VMem=0,Pages=0,Energy=0,Billing=1\n" in \
        files["slurm.conf"]
    # with slurmdbd the render accounts gres/gpu and gres/gpu:a100
    render("CPU=1.0,GRES/gpu=2.0,gres/GPU:A100=4", options=DBD)
    render("CPU=1,License/matlab=1", options={"AccountingStorageTRES": "license/matlab"})


def test_a_gres_weight_without_slurmdbd_is_refused_naming_the_partition_option():
    (found,) = problems("CPU=1.0,GRES/gpu=2.0")
    host, field, what, hint = found
    assert (host, field) == ("localhost", "hpc_gres_partitions[0].options.TRESBillingWeights")
    assert what == ("TRESBillingWeights=CPU=1.0,GRES/gpu=2.0 naming GRES/gpu (slurmctld stops: TRES weight 'GRES:gpu' "
                    "is not a configured TRES type, then failed to parse tres weights str)")
    assert hint.startswith("GRES TRES need slurmdbd")


def test_a_tres_neither_default_nor_accounted_is_refused_on_a_node_line_too():
    (found,) = problems(None, node_weights="CPU=1,License/matlab=2")
    assert found[:2] == ("gpu01", "hpc_gres_node_options.TRESWeights")
    assert "naming License/matlab" in found[2]
    assert found[3] == ("add License/matlab to AccountingStorageTRES in hpc_gres_slurm_conf_options, or leave the "
                        "weight out")


def test_with_slurmdbd_the_database_decides():
    # another cluster of the same slurmdbd may have registered the TRES: not judged
    render("CPU=1,License/matlab=2", options=DBD, gpu_tres=False)


def test_tracked_tres_reads_the_rendered_options_as_slurm_does():
    conf = ConfText("slurm.conf")
    conf.line([("PartitionName", "p"), ("TRESBillingWeights", "GRES/gpu=2")])
    assert render_tres.weight_problems(conf, "localhost", slurmdbd=True) == []
    assert render_tres.weight_problems(conf, "localhost", slurmdbd=False)
    assert uses_slurmdbd({"settings": {"slurm_conf": {"AccountingStorageType": "accounting_storage/SLURMDBD "}}})
    tracked = render_tres.tracked_tres("License/Foo, bb/datawarp")
    assert ("license", "foo") in tracked and ("bb", "datawarp") in tracked and ("fs", "disk") in tracked
    assert ("cpu", "") in tracked and ("gres", "gpu") not in tracked
