"""playbooks/discover-gpus.yml and playbooks/gpu-status.yml on emulated nodes (local connection)."""
import os
import re

import yaml

import emulated_node
from emulated_node import Node, flat, node_nvidia_smi as wrapper, run_playbook_json, write_inventory


def playbook(inventory, name, *extra):
    """(rc, {task name: {host: result}}, raw output)."""
    return run_playbook_json(inventory, name, *extra)


def test_discover_writes_proposals_never_overwrites_and_they_verify(tmp_path):
    # gpu-b01: GPUs 0 and 1 have swapped device minors (the driver's order differs from the PCI order)
    nodes = [Node(tmp_path / "a01", name="gpu-a01"), Node(tmp_path / "b01", name="gpu-b01", minors={0: 1, 1: 0})]
    smi_vars = {n.name: {"hpc_gres_discover_nvidia_smi": wrapper(n), "hpc_gres_discover_sysfs_root": n.root}
                for n in nodes}
    inventory = write_inventory(tmp_path, nodes, smi_vars)
    out_dir = tmp_path / "proposed"
    (out_dir).mkdir()
    (out_dir / "gpu-b01.yml").write_text("# hand-written, keep\n")

    rc, tasks, out = playbook(inventory, "discover-gpus.yml", "-e", "hpc_gres_discover_dir=%s" % out_dir,
                              "-e", "hpc_gres_discover_memory=false")
    assert rc == 0, out
    report = tasks["Report"]
    assert report["gpu-b01"]["msg"][0] == "skipped %s/gpu-b01.yml: the file exists, left as it is" % out_dir
    assert report["gpu-a01"]["msg"][0] == "wrote %s/gpu-a01.yml" % out_dir
    assert "hpc_gres_node_real_memory: not derived" in report["gpu-a01"]["msg"][1]
    assert (out_dir / "gpu-b01.yml").read_text() == "# hand-written, keep\n"
    text = (out_dir / "gpu-a01.yml").read_text()
    assert text.startswith("---\n# Proposed by hpc.slurm_gres")
    proposal = yaml.safe_load(text)
    # the recorded p4d topology: every GPU pair NV12
    links = [",".join("-1" if j == i else "12" for j in range(8)) for i in range(8)]
    assert proposal == {
        "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
        "hpc_gres_gpus": [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63", "links": links[i]}
                          for i in range(8)]}

    # the hand-written file goes; the second run proposes the minors it sees for gpu-b01
    (out_dir / "gpu-b01.yml").unlink()
    rc, tasks, out = playbook(inventory, "discover-gpus.yml", "-e", "hpc_gres_discover_dir=%s" % out_dir,
                              "-e", "hpc_gres_discover_memory=false")
    assert rc == 0, out
    assert tasks["Report"]["gpu-a01"]["msg"][0].startswith("skipped %s/gpu-a01.yml" % out_dir)
    b01 = yaml.safe_load((out_dir / "gpu-b01.yml").read_text())
    assert b01["hpc_gres_gpus"][:2] == [{"index": 0, "type": "a100", "cores": "0-31", "minor": 1, "links": links[0]},
                                        {"index": 1, "type": "a100", "cores": "0-31", "minor": 0, "links": links[1]}]

    # explicit configuration seeded from reality: the proposals, as host_vars, pass verify-gres on these nodes
    verify_vars = {}
    for node in nodes:
        entry = yaml.safe_load((out_dir / ("%s.yml" % node.name)).read_text())
        entry.update({"hpc_gres_verify_nvidia_smi": wrapper(node), "hpc_gres_verify_sysfs_root": node.root,
                      "hpc_gres_verify_dev_root": node.dev_root})
        verify_vars[node.name] = entry
    inventory = write_inventory(tmp_path, nodes, verify_vars)
    rc, tasks, out = playbook(inventory, "verify-gres.yml")
    assert rc == 0, out
    summary = next(iter(tasks["One line per node (counts per GPU type as slurm.conf/gres.conf/nvidia-smi)"].values()))
    assert summary["msg"] == ["gpu-a01: ok, 0 warning(s); gpu:a100 8/8/8", "gpu-b01: ok, 0 warning(s); gpu:a100 8/8/8"]


def test_discover_needs_a_directory(tmp_path):
    node = Node(tmp_path / "a01", name="gpu-a01")
    inventory = write_inventory(tmp_path, [node], {node.name: {"hpc_gres_discover_nvidia_smi": wrapper(node)}})
    rc, tasks, out = playbook(inventory, "discover-gpus.yml")
    assert rc != 0
    assert "hpc_gres_discover_dir: expected a directory on the controller" in flat(out)


def test_gpu_status_reports_processes_and_free_gpus(tmp_path):
    node = Node(tmp_path / "a01", name="gpu-a01")
    with open("/proc/self/comm") as handle:
        comm = handle.read().strip()
    # GPU 0 runs this very test process (so /proc shows its user and elapsed time); GPU 1 has memory taken by a
    # process in another PID namespace (not listed); the rest are idle
    node.profile["processes"] = [{"gpu_uuid": node.gpus[0]["uuid"], "pid": os.getpid(), "process_name": comm,
                                  "used_memory_mib": 30000}]
    node.gpus[0]["memory_used_mib"] = 30004
    node.gpus[1]["memory_used_mib"] = 60000
    node.save()
    # a shared GPU server, no Slurm: the last line is the one a user can run with
    inventory = str(tmp_path / "servers.yml")
    with open(inventory, "w") as handle:
        handle.write(yaml.safe_dump({"all": {"vars": {"ansible_connection": "local",
                                                      "ansible_python_interpreter": emulated_node.PYTHON},
                                             "children": {"gpuservers": {"hosts": {node.name: {
                                                 "hpc_gres_status_nvidia_smi": wrapper(node)}}}}}}))
    rc, tasks, out = playbook(inventory, "gpu-status.yml", "-e", "hpc_gres_status_min_free_mib=30000")
    assert rc == 0, out
    lines = tasks["Per GPU"]["gpu-a01"]["msg"]
    assert lines[-1] == "gpu-a01: CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3,4,5,6,7"
    assert re.search(r" busy +pid %d root (\d+-)?(\d\d:)?\d\d:\d\d 30000 MiB %s$" % (os.getpid(), re.escape(comm)),
                     lines[0]), lines[0]
    assert " busy " in lines[1] and lines[1].endswith("21920 MiB free < 30000 MiB asked (memory in use, no visible "
                                                      "process)")
    assert all(" free " in line for line in lines[2:8])
    fleet = next(iter(tasks["Fleet summary, one line per node"].values()))["msg"]
    assert fleet == ["gpu-a01: CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=2,3,4,5,6,7"]
    # a Slurm inventory, as the README gives the command: the slurmd group only (not the controller, which has no
    # nvidia-smi), nvidia-smi as the inventory names it for the deploy's verification, a node declaring no GPU
    # skipped with a line, and no CUDA_VISIBLE_DEVICES line on a Slurm node
    cpu = Node(tmp_path / "c01", name="cpu-c01")
    inventory = write_inventory(tmp_path, [node, cpu], {node.name: {"hpc_gres_verify_nvidia_smi": wrapper(node)},
                                                        cpu.name: {"hpc_gres_gpus": []}})
    rc, tasks, out = playbook(inventory, "gpu-status.yml")
    assert rc == 0, out
    assert sorted(tasks["Per GPU"]) == ["cpu-c01", "gpu-a01"]
    assert tasks["Per GPU"]["cpu-c01"]["msg"] == ["cpu-c01: no GPUs declared (hpc_gres_gpus: [])"]
    assert tasks["Per GPU"]["gpu-a01"]["msg"][-1].startswith(
        "gpu-a01: 7 GPU(s) free now (1,2,3,4,5,6,7): a Slurm node, ask for GPUs with srun/sbatch --gres")
    # slurmctld's view, read once from the controller (scontrol -d): 2 GPUs allocated while nvidia-smi shows 1 busy
    scontrol = tmp_path / "scontrol"
    scontrol.write_text("#!/bin/sh\necho 'NodeName=gpu-a01 Arch=x86_64 CPUAlloc=8 State=MIXED+DRAIN "
                        "Gres=gpu:a100:8(S:0-1) GresUsed=gpu:a100:2(IDX:0-1) Reason=admin: bad fan [root@2026-12-01]'\n")
    scontrol.chmod(0o755)
    rc, tasks, out = playbook(inventory, "gpu-status.yml", "-e", "hpc_gres_status_scontrol=%s" % scontrol)
    assert rc == 0, out
    assert tasks["Per GPU"]["gpu-a01"]["msg"][-1] == (
        "gpu-a01: 7 GPU(s) free now (1,2,3,4,5,6,7): a Slurm node, ask for GPUs with srun/sbatch --gres; slurmctld: "
        "MIXED+DRAIN, 2 of 8 GPU(s) allocated, reason: admin: bad fan")
    # a controller that cannot be read: said once, the report as without it
    rc, tasks, out = playbook(inventory, "gpu-status.yml", "-e", "hpc_gres_status_scontrol=/nonexistent/scontrol")
    assert rc == 0, out
    assert "slurmctld's view of the nodes is left out: " in out
    assert tasks["Per GPU"]["gpu-a01"]["msg"][-1] == ("gpu-a01: 7 GPU(s) free now (1,2,3,4,5,6,7): a Slurm node, ask "
                                                      "for GPUs with srun/sbatch --gres")


def test_gpu_status_names_a_lost_gpu_and_one_gone_from_the_bus(tmp_path):
    # GPU 5 enumerated but unreachable ("Unable to determine the device handle"), GPU 3 gone from the bus (not listed
    # at all); the inventory declares the node's 8 GPUs
    node = Node(tmp_path / "a01", name="gpu-a01")
    node.gpus[5]["lost"] = "unreachable"
    node.gpus[3]["lost"] = "missing"
    node.save()
    declared = [{"index": i, "type": "a100"} for i in range(8)]
    inventory = write_inventory(tmp_path, [node], {node.name: {"hpc_gres_status_nvidia_smi": wrapper(node),
                                                               "hpc_gres_gpus": declared}})
    rc, tasks, out = playbook(inventory, "gpu-status.yml", "-e", "hpc_gres_status_hosts=slurmd")
    assert rc == 0, out
    lines = tasks["Per GPU"]["gpu-a01"]["msg"]
    assert any(line.startswith("gpu-a01: GPU LOST ") and "Unable to determine the device handle" in line
               for line in lines), lines
    fleet = next(iter(tasks["Fleet summary, one line per node"].values()))["msg"]
    assert fleet[0].endswith("[1 GPU(s) LOST: %s; 1 GPU(s) the inventory declares not seen by nvidia-smi]"
                             % node.gpus[5]["pci_bus_id"].upper()), fleet
