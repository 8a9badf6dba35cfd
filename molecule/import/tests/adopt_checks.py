"""What the three test modules of the import scenario share: the imported inventory, the containers, and the
deploy run the way an admin runs it after the import (the scenario's inventory plus the imported one)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

CTL = slurm_checks.container("gres-ctl")
NODE = slurm_checks.container("gres-gpu01")
EPHEMERAL = os.environ.get("MOLECULE_EPHEMERAL_DIRECTORY", "")
IMPORTED = os.path.join(EPHEMERAL, "imported")
# The node line of the imported inventory, as every mode renders it
NODE_LINE = ("NodeName=gres-gpu01 Sockets=2 CoresPerSocket=14 ThreadsPerCore=2 RealMemory=1000 CPUs=56 State=UNKNOWN "
             "Gres=gpu:2")


def deploy(*args):
    """deploy-gres.yml with the imported inventory and ``args`` (extra vars); (rc, output)."""
    return deploy_checks.deploy(*args, extra_inventories=[IMPORTED])


def deploy_twice(*args):
    """The deploy with ``args``, then the same deploy again: {"first": (rc, output), "second": (rc, output)}."""
    first = deploy(*args)
    return {"first": first, "second": deploy(*args)}


def assert_deployed_then_unchanged(runs):
    """Both runs of deploy_twice succeeded and the second changed nothing."""
    assert runs["first"][0] == 0, runs["first"][1][-4000:]
    assert runs["second"][0] == 0, runs["second"][1][-4000:]
    deploy_checks.assert_changed_nothing(runs["second"][1])


def assert_node_idle_with_its_gpus():
    """gres-gpu01 registered with gpu:2, not drained, and a job gets both GPUs."""
    info = slurm_checks.wait_for_node(CTL, "gres-gpu01")
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu": 2}
    assert "DRAIN" not in info["State"]
    out = CTL.check_output("srun -w gres-gpu01 --gres=gpu:2 printenv CUDA_VISIBLE_DEVICES")
    assert out.strip() == "0,1"


def write(host, path, text):
    host.check_output("printf '%%s' %s > %s", text, path)
