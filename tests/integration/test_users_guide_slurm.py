"""Every request line of the users' guide is accepted by a real slurmctld running the rendered slurm.conf, and
the limits the guide gives are exact: one more is refused.

The example inventory (typed GPUs, several types on one node, MIG), a cluster with shards and one with untyped
GPUs (count-only ones too), MPS and other GRES next to typed GPUs; slurmctld 22.05
judges with ``sbatch --test-only`` against powered-down cloud nodes (tests/integration/rendered_slurm.py).
"""
import re
import tempfile

import pytest

import guide_clusters
import slurm_loopback
from rendered_slurm import RenderedSlurm

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_access import node_gres
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import page_requests, users_guide_files

CLUSTERS = {"example": guide_clusters.example_model, "shards": guide_clusters.shards_model,
            "untyped": guide_clusters.untyped_model}


@pytest.fixture(scope="module", params=sorted(CLUSTERS))
def cluster(request):
    slurm_loopback.require("a private slurmctld cannot run")
    model = CLUSTERS[request.param]()
    files = render_all(model)
    files.update(users_guide_files(model))
    with tempfile.TemporaryDirectory(prefix="slurm-cloud-") as directory:
        ctld = RenderedSlurm(directory)
        try:
            ctld.write_rendered(files)
            ctld.start_munge()
            ctld.start_slurmctld()
            yield model, files, ctld
        finally:
            ctld.stop()


def _partition_nodes(model, part):
    return [n for n in model["nodes"] if part["nodes"] == "ALL" or n["name"] in part["nodes"]]


def test_every_request_line_of_the_guide_is_accepted(cluster):
    _model, files, ctld = cluster
    requests = page_requests(files["USERS.md"])
    assert len(requests) >= 9
    refused = []
    for options in requests:
        accepted, answer = ctld.test_only(options)
        print("%-60s %s" % (options, answer))
        if not accepted:
            refused.append("%s: %s" % (options, answer))
    assert not refused, "\n".join(refused) + "\n" + ctld.log_tail()


def test_per_node_maxima_are_exact(cluster):
    """For every partition and GRES: the largest count one node has is accepted, one more is refused. Shards on
    and mps on Slurm 22.05 must come from one GPU: the largest per-GPU count is accepted, one more refused."""
    model, _files, ctld = cluster
    checked = 0
    for part in model["partitions"]:
        most = {}
        for node in _partition_nodes(model, part):
            for key, count in node_gres(node).items():
                if key in ("shard", "mps"):
                    field = {"shard": "shards", "mps": "mps"}[key]
                    count = max([g.get(field) or 0 for g in node["gpus"]]) or count
                most[key] = max(most.get(key, 0), count)
        for key, count in most.items():
            ok, answer = ctld.test_only("-p %s --gres=%s:%d" % (part["name"], key, count))
            assert ok, "%s %s:%d refused: %s" % (part["name"], key, count, answer)
            ok, answer = ctld.test_only("-p %s --gres=%s:%d" % (part["name"], key, count + 1))
            assert not ok and "Requested node configuration is not available" in answer, (part["name"], key, answer)
            checked += 1
    assert checked >= 4


def test_multi_node_forms_are_exact(cluster):
    """The guide's ``-N K --gpus-per-node=T:M`` and ``--gpus=T:G`` lines: K+1 nodes, G+1 GPUs are refused."""
    _model, files, ctld = cluster
    bumped = 0
    for options in page_requests(files["USERS.md"]):
        if "--gpus-per-node=" in options:
            more = _bump(options, r"-N (\d+)")
        elif "--gpus=" in options:
            more = _bump(options, r"--gpus=\S*?(\d+)$")
        else:
            continue
        ok, answer = ctld.test_only(more)
        assert not ok, "%s accepted: %s" % (more, answer)
        bumped += 1
    assert bumped >= 2


def _bump(options, pattern):
    match = re.search(pattern, options)
    assert match, (pattern, options)
    return options[:match.start(1)] + str(int(match.group(1)) + 1) + options[match.end(1):]


def test_a_type_the_cluster_does_not_have_is_refused(cluster):
    model, _files, ctld = cluster
    part = model["partitions"][0]["name"]
    ok, answer = ctld.test_only("-p %s --gres=gpu:no_such_type:1" % part)
    assert not ok, answer
