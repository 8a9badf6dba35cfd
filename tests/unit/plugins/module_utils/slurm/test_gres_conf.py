"""The one gres.conf renderer with a node's live MIG facts (plugins/module_utils/slurm/gres_conf.py).

The live facts are built by the project's own ``gpu_facts.build_facts`` from the real A30 recordings
(``nvidia-smi -L`` and ``mig -lgi`` of one session; its ``-lci`` is not recorded, so the default CIs are
written in the real ``-lci`` table format) and the driver's full mig-minors table. The spec and slurm.conf come
from the real model and renderer, the way the deploy hands them to the node.
"""

import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import render
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.gres_conf import deferred_gres, node_gres_conf
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    check_consistency,
    gres_counts_from_records,
    parse_gres_conf,
)

import fake_sysfs  # noqa: E402
from a30_mig import LCI_DEFAULTS, T, a30_facts, fixture


def rendered(mig=("2g.12gb", "1g.6gb", "1g.6gb"), autodetect=None, minor=None, gtype="a30", node_autodetect=None):
    gpu0 = {"index": 0, "type": gtype, "model": "A30-24GB", "mig": list(mig), "cores": "0-7"}
    if minor is not None:
        gpu0["minor"] = minor
    gpus = [gpu0, {"index": 1, "type": gtype, "cores": "0-7"}]
    if gtype is None:
        gpus = [{k: v for k, v in g.items() if k != "type"} for g in gpus]
    hv = {"ctl": {}, "gpu-a30": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 8,
                                 "hpc_gres_node_threads_per_core": 1, "hpc_gres_node_real_memory": 1000,
                                 "hpc_gres_gpus": gpus}}
    if node_autodetect:
        hv["gpu-a30"]["hpc_gres_node_autodetect"] = node_autodetect
    cluster = {"hpc_gres_autodetect": autodetect} if autodetect else {}
    m = model.build_cluster_model(hv, {"slurmctld": ["ctl"], "slurmd": ["gpu-a30"]}, cluster)
    files = render.render_all(m)
    return render.gres_spec(m, m["nodes"][0]), files["gpu-a30/gres.conf"], files["slurm.conf"]


def complete(spec, facts, slurm=None):
    """The node's gres.conf from its live facts; with slurm.conf, proven to give the counts it declares."""
    text = node_gres_conf(spec, facts)
    if slurm is not None:
        problems = check_consistency(slurm, {"gpu-a30": text})
        if problems:
            raise AssertionError(problems)
    return text


def expected_caps(minor, gi, ci):
    """cap minors from the formula the MIG user guide's table implies: 3 + 135*gpu + 9*gi (+1+ci for a CI)."""
    return 3 + 135 * minor + 9 * gi, 3 + 135 * minor + 9 * gi + 1 + ci


def test_completed_file_has_one_line_per_device_with_gpu_gi_and_ci_caps():
    spec, base, slurm = rendered()
    text = complete(spec, a30_facts(), slurm)
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
    spec, base, slurm = rendered()
    assert complete(spec, a30_facts()) == complete(spec, a30_facts())


def test_gpu_minor_picks_the_caps_not_the_index():
    spec, base, slurm = rendered(minor=5)
    text = complete(spec, a30_facts(minor0=5), slurm)
    gi_cap, ci_cap = expected_caps(5, 2, 0)
    assert "MultipleFiles=/dev/nvidia5,/dev/nvidia-caps/nvidia-cap%d,/dev/nvidia-caps/nvidia-cap%d" % (
        gi_cap, ci_cap) in text


def test_live_layout_differing_from_inventory_is_refused_naming_host_and_counts():
    spec, base, slurm = rendered(mig=("2g.12gb", "2g.12gb"))
    with pytest.raises(GresError) as err:
        complete(spec, a30_facts(), slurm)
    msg = str(err.value)
    assert "host gpu-a30" in msg and "(index 0).mig" in msg
    assert "2 x 2g.12gb" in msg and "missing 1 x 2g.12gb" in msg and "not declared 2 x 1g.6gb" in msg
    assert "mig-reconfigure.yml --limit gpu-a30" in msg


def test_mig_off_on_the_node_is_refused():
    spec, base, slurm = rendered()
    facts = a30_facts()
    facts["gpus"][0]["mig_mode"] = "Disabled"
    with pytest.raises(GresError) as err:
        complete(spec, facts)
    assert str(err.value).startswith(
        "host gpu-a30: hpc_gres_gpus (index 0).mig: expected GPU 0 in MIG mode with 2 x 1g.6gb, 1 x 2g.12gb, "
        "found MIG mode Disabled")
    assert "`ansible-playbook playbooks/mig-reconfigure.yml --limit gpu-a30 -i INVENTORY`" in str(err.value)


def test_missing_mig_minors_entry_is_refused_naming_the_key():
    minors = "\n".join(l for l in fake_sysfs.mig_minors_text().splitlines() if not l.startswith("gpu0/gi3/"))
    spec, base, slurm = rendered()
    with pytest.raises(GresError, match=r"mig-minors: expected entries gpu0/gi3/access and gpu0/gi3/ci0/access"):
        complete(spec, a30_facts(minors_text=minors))


def test_inventory_minor_differing_from_the_driver_is_refused():
    spec, base, slurm = rendered(minor=0)
    with pytest.raises(GresError, match=r"\(index 0\)\.minor: expected the device minor the driver reports, 3"):
        complete(spec, a30_facts(minor0=3))


def test_compute_instance_splits_are_refused():
    lci = LCI_DEFAULTS.replace("MIG 2g.12gb          1         0          0:2",
                               "MIG 1c.2g.12gb       0         0          0:1")
    listed = fixture("nvidia-smi", "list", "a30-mig-2g12gb-2x1g6gb-L.txt").replace("MIG 2g.12gb   ", "MIG 1c.2g.12gb")
    spec, base, slurm = rendered()
    with pytest.raises(GresError, match="compute-instance splits are not supported"):
        complete(spec, a30_facts(lci=lci, list_text=listed))


def test_counts_not_matching_slurm_conf_are_caught_by_the_shared_proof():
    spec, base, slurm = rendered()
    assert "gpu:%s:2" % T("1g.6gb") in slurm
    slurm = slurm.replace("gpu:%s:2" % T("1g.6gb"), "gpu:%s:3" % T("1g.6gb"))
    assert check_consistency(slurm, {"gpu-a30": node_gres_conf(spec, a30_facts())}) == [
        "host gpu-a30: gres.conf count of gpu:%s: expected 3 (slurm.conf Gres=), found 2" % T("1g.6gb")]


def test_without_live_facts_it_is_the_controllers_file_and_live_only_adds_mig_lines():
    spec, base, slurm = rendered()
    assert node_gres_conf(spec) == base
    live = node_gres_conf(spec, a30_facts())
    plain = [l for l in live.splitlines() if not (l.startswith("#") or "MultipleFiles=" in l)]
    assert plain == [l for l in base.splitlines() if not l.startswith("#")]
    assert check_consistency(slurm, {"gpu-a30": base}, {"gpu-a30": deferred_gres(spec)}) == []
    assert deferred_gres(spec, a30_facts()) == {}


def test_untyped_whole_gpus_next_to_mig_are_refused_and_an_untyped_mig_gpu_is_named_untyped():
    # MIG instances are typed by their profile: slurmctld refuses untyped GPUs next to them on one node
    with pytest.raises(GresError, match="typed and untyped GPUs"):
        rendered(gtype=None)
    hv = {"ctl": {}, "n1": {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 8, "hpc_gres_node_threads_per_core": 1,
                            "hpc_gres_gpus": [{"index": 0, "model": "A30-24GB", "mig": ["2g.12gb", "2g.12gb"]}]}}
    m = model.build_cluster_model(hv, {"slurmctld": ["ctl"], "slurmd": ["n1"]}, {})
    text = render.render_all(m)["n1/gres.conf"]
    assert "# MIG: GPU 0 (untyped, /dev/nvidia0) 2g.12gb,2g.12gb: its MultipleFiles lines are written on the node by " \
           "the deploy" in text


def test_the_nodes_own_autodetect_is_the_spec_and_decides_whether_mig_lines_are_deferred():
    spec, base, slurm = rendered(node_autodetect="nvml")
    assert spec["autodetect"] == "nvml" and "NodeName=gpu-a30 AutoDetect=nvml\n" in base
    assert "MultipleFiles" not in node_gres_conf(spec, a30_facts())
    spec, base, _unused = rendered(autodetect="nvml", node_autodetect="off")
    assert spec["autodetect"] == "off" and "NodeName=gpu-a30 AutoDetect=off\n" in base
    assert node_gres_conf(spec, a30_facts()).count("MultipleFiles=") == 3


def test_autodetect_nvml_leaves_the_lines_to_slurmd_but_still_checks_the_layout():
    spec, base, slurm = rendered(autodetect="nvml")
    assert "AutoDetect=nvml" in base
    text = node_gres_conf(spec, a30_facts())
    assert "MultipleFiles" not in text
    without_comments = [l for l in base.splitlines() if not l.startswith("#")]
    assert [l for l in text.splitlines() if not l.startswith("#")] == without_comments
    spec2, base2, slurm2 = rendered(mig=("1g.6gb",) * 4, autodetect="nvml")
    with pytest.raises(GresError, match="missing 2 x 1g.6gb"):
        complete(spec2, a30_facts(), slurm2)
