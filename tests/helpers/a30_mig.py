"""A real A30's MIG session as ``hpc_gres_hw`` facts, for the tests of the live gres.conf (test helper).

Built by the project's own ``gpu_facts.build_facts`` from the real A30 recordings (``nvidia-smi -L`` and
``mig -lgi`` of one session; its ``-lci`` is not recorded, so the default CIs are written in the real ``-lci``
table format) and the driver's full mig-minors table (tests/emulator/fake_sysfs.py).
"""
import os

import testpaths

import fake_sysfs  # noqa: E402  (tests/emulator is on sys.path)

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import facts as gpu_facts

A30_UUID = "GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bcd"
A30_BUS = "00000000:0B:00.0"
# The A30's second-GPU twin for the mixed node: whole GPU, MIG off.
A30_WHOLE = "1, GPU-1e44b340-5807-0dbe-62e6-343a6b8b8bce, NVIDIA A30, 00000000:0C:00.0, Disabled, 24576, 0\n"

LCI_DEFAULTS = """\
+--------------------------------------------------------------------+
| Compute instances:                                                 |
| GPU     GPU       Name             Profile   Instance   Placement  |
|       Instance                       ID        ID       Start:Size |
|         ID                                                         |
|====================================================================|
|   0      2       MIG 2g.12gb          1         0          0:2     |
+--------------------------------------------------------------------+
|   0      3       MIG 1g.6gb           0         0          0:1     |
+--------------------------------------------------------------------+
|   0      4       MIG 1g.6gb           0         0          0:1     |
+--------------------------------------------------------------------+
"""


def T(profile, gpu_type="a30"):
    """The GRES type the renderer gives a MIG instance, whatever its naming rule."""
    return mig_gres_type(gpu_type, profile)


def fixture(*parts):
    with open(os.path.join(testpaths.FIXTURES, *parts), encoding="utf-8") as fh:
        text = fh.read()
    assert text.startswith("# source:")
    return text.split("# ---\n", 1)[1]


def a30_facts(minor0=0, minors_text=None, lci=LCI_DEFAULTS, list_text=None):
    query = "0, %s, NVIDIA A30, %s, Enabled, 24576, 0\n" % (A30_UUID, A30_BUS) + A30_WHOLE
    facts, warnings = gpu_facts.build_facts(
        query, gpu_minors={A30_BUS: minor0, "00000000:0C:00.0": 1},
        list_text=list_text or fixture("nvidia-smi", "list", "a30-mig-2g12gb-2x1g6gb-L.txt"),
        lgi_text=fixture("nvidia-smi", "mig", "a30-lgi-mixed-3instances.txt"), lci_text=lci,
        mig_minors_text=fake_sysfs.mig_minors_text() if minors_text is None else minors_text)
    return facts
