"""What the three test modules of the import scenario share: the imported inventory, the containers, and the
deploy run the way an admin runs it after the import (the scenario's inventory plus the imported one)."""

import os
import re
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


def changed_nothing(output):
    """Every host of the PLAY RECAP has changed=0 and failed=0."""
    recap = re.findall(r"^(\S+)\s+:\s+ok=\d+\s+changed=(\d+)\s+unreachable=\d+\s+failed=(\d+)", output, re.M)
    return bool(recap) and all(changed == "0" and failed == "0" for _host, changed, failed in recap)


def write(host, path, text):
    host.check_output("printf '%%s' %s > %s", text, path)
