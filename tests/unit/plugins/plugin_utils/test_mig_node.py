"""Node-side completion of gres.conf with MIG lines (plugins/plugin_utils/mig_node.py, filter mig_gres_conf).

The live facts are built by the project's own ``gpu_facts.build_facts`` from the real A30 recordings
(``nvidia-smi -L`` and ``mig -lgi`` of one session; its ``-lci`` is not recorded, so the default CIs are
written in the real ``-lci`` table format) and the driver's full mig-minors table. The base gres.conf and
slurm.conf come from the real renderer, so the comment the filter replaces is the one render.py writes.
"""

import os
import re

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import facts as gpu_facts

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import render
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import complete_gres_conf, type_prefix
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    check_consistency,
    gres_counts_from_records,
    parse_gres_conf,
)

import fake_sysfs  # noqa: E402

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
    """The GRES type the renderer gives a MIG instance (model.mig_gres_type), whatever its naming rule."""
    return model.mig_gres_type(gpu_type, profile)


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


def rendered(mig=("2g.12gb", "1g.6gb", "1g.6gb"), autodetect=None, minor=None):
    gpu0 = {"index": 0, "type": "a30", "model": "A30-24GB", "mig": list(mig), "cores": "0-7"}
    if minor is not None:
        gpu0["minor"] = minor
    hv = {"ctl": {}, "gpu-a30": {"slurm_node_sockets": 1, "slurm_node_cores_per_socket": 8,
                                 "slurm_node_threads_per_core": 1, "slurm_node_real_memory": 1000,
                                 "slurm_gres_gpus": [gpu0, {"index": 1, "type": "a30", "cores": "0-7"}]}}
    cluster = {"slurm_gres_autodetect": autodetect} if autodetect else {}
    m = model.build_cluster_model(hv, {"slurmctld": ["ctl"], "slurmd": ["gpu-a30"]}, cluster)
    files = render.render_all(m)
    return files["gpu-a30/gres.conf"], files["slurm.conf"], m["nodes"][0]


def expected_caps(minor, gi, ci):
    """cap minors from the formula the MIG user guide's table implies: 3 + 135*gpu + 9*gi (+1+ci for a CI)."""
    return 3 + 135 * minor + 9 * gi, 3 + 135 * minor + 9 * gi + 1 + ci


def test_completed_file_has_one_line_per_device_with_gpu_gi_and_ci_caps():
    base, slurm, node = rendered()
    text = complete_gres_conf(base, a30_facts(), node, slurm_conf=slurm)
    lines = [l for l in text.splitlines() if l.startswith("NodeName=") and "MultipleFiles" in l]
    assert len(lines) == 3
    found = []
    for line in lines:
        m = re.match(r"^NodeName=gpu-a30 Name=gpu Type=(\S+) MultipleFiles=(\S+) Cores=0-7$", line)
        assert m, line
        found.append((m.group(1), m.group(2).split(",")))
    # ordered by GI id: GI 2 (2g.12gb), 3 and 4 (1g.6gb), as -lgi of the real A30 reports them
    assert [t for t, _files in found] == [T("2g.12gb"), T("1g.6gb"), T("1g.6gb")]
    for (_type, files), gi in zip(found, (2, 3, 4)):
        gi_cap, ci_cap = expected_caps(0, gi, 0)
        assert files == ["/dev/nvidia0", "/dev/nvidia-caps/nvidia-cap%d" % gi_cap,
                         "/dev/nvidia-caps/nvidia-cap%d" % ci_cap]
    # the whole GPU line and the render header are kept, the comment names the real MIG UUID of device 0
    assert "NodeName=gpu-a30 Name=gpu Type=a30 File=/dev/nvidia1 Cores=0-7" in text
    assert "MIG 2g.12gb GI 2 CI 0 MIG-1b8509c0-e60d-502d-8263-d434867998aa" in text
    counts = gres_counts_from_records(parse_gres_conf(text, "gpu-a30"))
    assert counts == {"gpu:a30": 1, "gpu:" + T("2g.12gb"): 1, "gpu:" + T("1g.6gb"): 2}
    assert check_consistency(slurm, {"gpu-a30": text}) == []


def test_same_facts_give_the_same_bytes():
    base, slurm, node = rendered()
    assert complete_gres_conf(base, a30_facts(), node) == complete_gres_conf(base, a30_facts(), node)


def test_gpu_minor_picks_the_caps_not_the_index():
    base, slurm, node = rendered(minor=5)
    text = complete_gres_conf(base, a30_facts(minor0=5), node, slurm_conf=slurm)
    gi_cap, ci_cap = expected_caps(5, 2, 0)
    assert "MultipleFiles=/dev/nvidia5,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d" % (
        gi_cap, ci_cap) in text


def test_live_layout_differing_from_inventory_is_refused_naming_host_and_counts():
    base, slurm, node = rendered(mig=("2g.12gb", "2g.12gb"))
    with pytest.raises(GresError) as err:
        complete_gres_conf(base, a30_facts(), node, slurm_conf=slurm)
    msg = str(err.value)
    assert "host gpu-a30" in msg and "(index 0).mig" in msg
    assert "2 x 2g.12gb" in msg and "missing 1 x 2g.12gb" in msg and "not declared 2 x 1g.6gb" in msg


def test_mig_off_on_the_node_is_refused():
    base, slurm, node = rendered()
    facts = a30_facts()
    facts["gpus"][0]["mig_mode"] = "Disabled"
    with pytest.raises(GresError, match=r"expected GPU 0 in MIG mode, found MIG mode Disabled"):
        complete_gres_conf(base, facts, node)


def test_missing_mig_minors_entry_is_refused_naming_the_key():
    minors = "\n".join(l for l in fake_sysfs.mig_minors_text().splitlines() if not l.startswith("gpu0/gi3/"))
    base, slurm, node = rendered()
    with pytest.raises(GresError, match=r"mig-minors: expected entries gpu0/gi3/access and gpu0/gi3/ci0/access"):
        complete_gres_conf(base, a30_facts(minors_text=minors), node)


def test_inventory_minor_differing_from_the_driver_is_refused():
    base, slurm, node = rendered(minor=0)
    with pytest.raises(GresError, match=r"\(index 0\)\.minor: expected the device minor the driver reports, 3"):
        complete_gres_conf(base, a30_facts(minor0=3), node)


def test_compute_instance_splits_are_refused():
    lci = LCI_DEFAULTS.replace("MIG 2g.12gb          1         0          0:2",
                               "MIG 1c.2g.12gb       0         0          0:1")
    listed = fixture("nvidia-smi", "list", "a30-mig-2g12gb-2x1g6gb-L.txt").replace("MIG 2g.12gb   ", "MIG 1c.2g.12gb")
    base, slurm, node = rendered()
    with pytest.raises(GresError, match="compute-instance splits are not supported"):
        complete_gres_conf(base, a30_facts(lci=lci, list_text=listed), node)


def test_counts_not_matching_slurm_conf_are_refused():
    base, slurm, node = rendered()
    assert "gpu:%s:2" % T("1g.6gb") in slurm
    slurm = slurm.replace("gpu:%s:2" % T("1g.6gb"), "gpu:%s:3" % T("1g.6gb"))
    with pytest.raises(GresError, match=r"gres.conf count of gpu:%s: expected 3 \(slurm.conf Gres=\), found 2"
                       % re.escape(T("1g.6gb"))):
        complete_gres_conf(base, a30_facts(), node, slurm_conf=slurm)


def test_base_without_the_render_comment_is_refused():
    base, slurm, node = rendered()
    base = "\n".join(l for l in base.splitlines() if not l.startswith("# MIG:")) + "\n"
    with pytest.raises(GresError, match="completed on the node`, found no such line"):
        complete_gres_conf(base, a30_facts(), node)


def test_autodetect_nvml_leaves_the_lines_to_slurmd_but_still_checks_the_layout():
    base, slurm, node = rendered(autodetect="nvml")
    assert "AutoDetect=nvml" in base
    assert complete_gres_conf(base, a30_facts(), node, slurm_conf=slurm) == base
    base2, slurm2, node2 = rendered(mig=("1g.6gb",) * 4, autodetect="nvml")
    with pytest.raises(GresError, match="missing 2 x 1g.6gb"):
        complete_gres_conf(base2, a30_facts(), node2, slurm_conf=slurm2)


def test_type_prefix_follows_the_renderers_type_rule():
    full = model.mig_gres_type("a100", "1g.10gb+me")
    prefix = type_prefix("a100", "1g.10gb+me")
    assert (prefix + "_1g.10gb+me" if prefix else "1g.10gb+me") == full


# --- the runbook's step model -------------------------------------------------------------------------------

def two_node_model():
    def gpus(mig):
        return [{"index": 0, "type": "a100", "model": "A100-80GB", "cores": "0-7", "mig": mig},
                {"index": 1, "type": "a100", "cores": "0-7"}]
    hv = {"ctl": {}}
    for host in ("gpu-a01", "gpu-a02"):
        hv[host] = {"slurm_node_sockets": 1, "slurm_node_cores_per_socket": 8, "slurm_node_threads_per_core": 1,
                    "slurm_node_real_memory": 1000, "slurm_gres_gpus": gpus(["3g.40gb", "3g.40gb"])}
    return model.build_cluster_model(hv, {"slurmctld": ["ctl"], "slurmd": ["gpu-a01", "gpu-a02"]}, {})


def node_gres_line(slurm_conf, node):
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
    return parse_slurm_conf(slurm_conf)["nodes"][node]["gres"]


def test_step_model_changes_only_the_node_whose_turn_it_is():
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import step_model
    m = two_node_model()
    live = {"gpu-a01": {0: None, 1: None}, "gpu-a02": {"0": None, "1": None}}  # both still whole GPUs
    files = render.render_all(step_model(m, "gpu-a01", live))
    mig = "gpu:" + T("3g.40gb", "a100")
    assert node_gres_line(files["slurm.conf"], "gpu-a01") == {mig: 2, "gpu:a100": 1}
    assert node_gres_line(files["slurm.conf"], "gpu-a02") == {"gpu:a100": 2}
    assert "MultipleFiles" not in files["gpu-a02/gres.conf"] and "# MIG" not in files["gpu-a02/gres.conf"]
    # after gpu-a01 is done its live layout is the new one; the next step changes gpu-a02 only
    live["gpu-a01"] = {0: ["3g.40gb", "3g.40gb"], 1: None}
    files = render.render_all(step_model(m, "gpu-a02", live))
    assert node_gres_line(files["slurm.conf"], "gpu-a01") == {mig: 2, "gpu:a100": 1}
    assert node_gres_line(files["slurm.conf"], "gpu-a02") == {mig: 2, "gpu:a100": 1}
    assert m["nodes"][1]["gpus"][0]["mig"] == ["3g.40gb", "3g.40gb"]  # input untouched


def test_live_layouts_from_a_mig_layout_plan():
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.mig_node import live_layouts
    plan = [{"index": 0, "mig_mode": "Enabled", "current": {"3g.40gb": 1, "1g.10gb": 2}},
            {"index": 1, "mig_mode": "Disabled", "current": {}},
            {"index": 2, "mig_mode": "[N/A]", "current": {}}]
    assert live_layouts(plan) == {0: ["1g.10gb", "1g.10gb", "3g.40gb"], 1: None, 2: None}
