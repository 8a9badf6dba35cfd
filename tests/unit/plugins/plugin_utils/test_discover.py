"""Proposed host_vars from gathered hardware: values, notes, YAML that the model accepts."""
import yaml

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.discover import (
    gres_type_for,
    propose_host_vars,
    propose_real_memory,
    render_host_vars,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model


def hw(names, cores, minors=None, cpu=(2, 32, 2), mig=None):
    return {"cpu": {"sockets": cpu[0], "cores_per_socket": cpu[1], "threads_per_core": cpu[2]},
            "gpus": [{"index": i, "name": name, "uuid": "GPU-%d" % i, "pci_bus_id": "00000000:%02X:00.0" % (i + 1),
                      "mig_mode": (mig or {}).get(i, "Disabled"), "slurm_cores": cores[i],
                      "minor": (minors or {}).get(i, i)} for i, name in enumerate(names)]}


MIXED = hw(["NVIDIA T1000 8GB", "NVIDIA RTX PRO 6000 Blackwell Workstation Edition",
            "NVIDIA RTX PRO 6000 Blackwell Workstation Edition"], ["0-31", "0-31", "32-63"], minors={1: 2, 2: 1})


def test_types_from_default_patterns_and_fallback_to_slurm_name():
    assert gres_type_for("NVIDIA A100-SXM4-80GB") == ("a100", "pattern")
    assert gres_type_for("NVIDIA L40S") == ("l40s", "pattern")
    assert gres_type_for("NVIDIA T1000 8GB") == ("nvidia_t1000_8gb", "name")


def test_user_name_map_wins_over_defaults():
    assert gres_type_for("NVIDIA A100-SXM4-80GB", {"a100_80g": r"A100.*80GB"}) == ("a100_80g", "pattern")
    assert gres_type_for("NVIDIA A100-SXM4-40GB", {"a100_80g": r"A100.*80GB"}) == ("a100", "pattern")


def test_proposal_values():
    result = propose_host_vars(MIXED, memtotal_mb=257612)
    assert result["vars"] == {
        "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
        "hpc_gres_node_real_memory": 257024,
        "hpc_gres_gpus": [
            {"index": 0, "type": "nvidia_t1000_8gb", "cores": "0-31"},
            {"index": 1, "type": "rtx_pro_6000", "cores": "0-31", "minor": 2},
            {"index": 2, "type": "rtx_pro_6000", "cores": "32-63", "minor": 1}]}
    notes = "\n".join(result["notes"])
    assert "GPU 0: no type pattern matches 'NVIDIA T1000 8GB'" in notes
    assert "rounded down" in notes


def test_missing_memory_affinity_and_mig_are_named_in_notes():
    facts = hw(["NVIDIA H100 80GB HBM3", "NVIDIA H100 80GB HBM3"], [None, ""], mig={1: "Enabled"})
    result = propose_host_vars(facts)
    assert "hpc_gres_node_real_memory" not in result["vars"]
    assert all("cores" not in g for g in result["vars"]["hpc_gres_gpus"])
    notes = "\n".join(result["notes"])
    assert "hpc_gres_node_real_memory: not derived" in notes
    assert "GPU 0: no CPU affinity" in notes and "GPU 1: no CPU affinity" in notes
    assert "GPU 1: MIG mode is enabled" in notes


def test_small_memory_is_not_rounded():
    assert propose_real_memory(3900) == 3900
    assert propose_real_memory(1031000) == 1030144
    assert propose_real_memory(None) is None


def test_yaml_round_trips_and_the_model_accepts_it():
    proposal = propose_host_vars(MIXED, memtotal_mb=257612)
    text = render_host_vars("gpu-w01.example", proposal, source="nvidia-smi on gpu-w01")
    assert text.startswith("---\n# Proposed by hpc.slurm_gres")
    assert "# NOTE: GPU 0: no type pattern" in text
    loaded = yaml.safe_load(text)
    assert loaded == proposal["vars"]
    model = build_cluster_model({"gpu-w01.example": loaded, "ctl": {}},
                                {"slurmd": ["gpu-w01.example"], "slurmctld": ["ctl"]}, {})
    node = model["nodes"][0]
    assert [(g["index"], g["type"], g["cores"], g["minor"]) for g in node["gpus"]] == [
        (0, "nvidia_t1000_8gb", "0-31", 0), (1, "rtx_pro_6000", "0-31", 2), (2, "rtx_pro_6000", "32-63", 1)]


def test_yaml_quotes_what_yaml_would_misread():
    proposal = {"vars": {"hpc_gres_gpus": [{"index": 0, "type": "on", "cores": "0-31"},
                                           {"index": 1, "type": "a100", "cores": "8"}]}, "notes": []}
    loaded = yaml.safe_load(render_host_vars("h", proposal))
    assert loaded["hpc_gres_gpus"][0] == {"index": 0, "type": "on", "cores": "0-31"}
    assert loaded["hpc_gres_gpus"][1]["cores"] == "8"


def test_no_gpus():
    result = propose_host_vars({"cpu": {"sockets": 1, "cores_per_socket": 8, "threads_per_core": 1}, "gpus": []})
    assert result["vars"]["hpc_gres_gpus"] == []
    assert yaml.safe_load(render_host_vars("h", result))["hpc_gres_gpus"] == []


def test_nvlink_links_are_proposed_and_the_model_takes_them():
    machine = hw(["NVIDIA H100 80GB HBM3"] * 2, ["0-31", "32-63"])
    machine["gpus"][0]["gpu_links"] = [-1, 18]
    machine["gpus"][1]["gpu_links"] = [18, -1]
    result = propose_host_vars(machine, memtotal_mb=1000)
    assert [g["links"] for g in result["vars"]["hpc_gres_gpus"]] == ["-1,18", "18,-1"]
    assert any("NVSwitch" in note for note in result["notes"])
    values = yaml.safe_load(render_host_vars("n1", result))
    assert values["hpc_gres_gpus"][1]["links"] == "18,-1"
    model = build_cluster_model({"n1": values, "ctl": {}}, {"slurmctld": ["ctl"], "slurmd": ["n1"]}, {})
    assert [g["links"] for g in model["nodes"][0]["gpus"]] == ["-1,18", "18,-1"]


def test_pcie_only_gpus_get_no_links():
    machine = hw(["NVIDIA L40S"] * 2, ["0-31", "32-63"])
    machine["gpus"][0]["gpu_links"] = [-1, 0]
    machine["gpus"][1]["gpu_links"] = [0, -1]
    assert all("links" not in g for g in propose_host_vars(machine)["vars"]["hpc_gres_gpus"])


def test_a_shape_slurm_cannot_describe_is_said_with_the_slurmd_c_line():
    facts = hw(["NVIDIA A100-SXM4-80GB"], ["0-7"], cpu=(2, 7, 1))
    facts["cpu"].update(shape_fits=False,
                        slurmd_c="CPUs=14 Boards=1 SocketsPerBoard=2 CoresPerSocket=7 ThreadsPerCore=1",
                        shape_problems=["packages have different core counts (8, 6)"], source="sysfs",
                        source_detail="/sys/devices/system/cpu")
    result = propose_host_vars(facts)
    assert (result["vars"]["hpc_gres_node_sockets"], result["vars"]["hpc_gres_node_cores_per_socket"]) == (2, 7)
    notes = "\n".join(result["notes"])
    assert "CPU topology from sysfs (/sys/devices/system/cpu)" in notes
    assert ("CPU shape: Sockets x CoresPerSocket x ThreadsPerCore does not describe this node: packages have "
            "different core counts (8, 6). `slurmd -C` would print CPUs=14 Boards=1 SocketsPerBoard=2 "
            "CoresPerSocket=7 ThreadsPerCore=1") in notes
    text = render_host_vars("gpu-odd", result)
    assert "# NOTE: CPU shape: Sockets x CoresPerSocket x ThreadsPerCore does not describe this node" in text
    assert yaml.safe_load(text)["hpc_gres_node_cores_per_socket"] == 7


def test_a_fitting_shape_adds_only_the_source():
    facts = hw(["NVIDIA A100-SXM4-80GB"], ["0-31"])
    facts["cpu"].update(shape_fits=True, shape_problems=[], source="libhwloc", source_detail="libhwloc.so.15")
    notes = propose_host_vars(facts)["notes"]
    assert [n for n in notes if n.startswith("CPU")] == [
        "CPU topology from libhwloc (libhwloc.so.15); Cores= are hwloc logical core indexes, as slurmd numbers them"]
