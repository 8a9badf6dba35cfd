"""After the deploy: every request line of the users' guide rendered for this cluster (the MIG instances of
dmig-gpu01's GPU 0, its whole GPU 1, dmig-gpu02's H100s) is accepted by its real Slurm, with the MIG node registered
from the MultipleFiles lines the deploy wrote from its live devices."""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import deploy_checks  # noqa: E402
import slurm_checks  # noqa: E402

sys.path.insert(0, os.path.join(deploy_checks.PROJECT, ".cache", "collections"))
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import page_requests  # noqa: E402


def test_every_request_line_of_the_guide_is_accepted_by_slurm():
    ctl = slurm_checks.container("dmig-ctl")
    for node in ("dmig-gpu01", "dmig-gpu02"):
        slurm_checks.wait_for_node(ctl, node, timeout=60)
    page = deploy_checks.render()["USERS.md"]
    requests = page_requests(page)
    for options in ("-p main --gres=gpu:3g.40gb:1", "-p main --gres=gpu:1g.10gb:1", "-p main --gres=gpu:a100:1",
                    "-p main --gres=gpu:h100:1"):
        assert options in requests, requests
    refused = slurm_checks.refused_requests(ctl, requests)
    assert not refused, refused
    more = ctl.run("sbatch --test-only -p main --gres=gpu:1g.10gb:3 --wrap=true")
    assert more.rc != 0 and "Requested node configuration is not available" in more.stderr
