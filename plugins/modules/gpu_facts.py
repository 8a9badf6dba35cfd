#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: gather a node's NVIDIA GPUs, CPU layout and GPU-to-core locality as ansible_facts.hpc_gres_hw."""

DOCUMENTATION = r"""
module: gpu_facts
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Gather NVIDIA GPUs, CPU layout and GPU core locality as Slurm sees them
description:
  - Reads the node's GPUs from C(nvidia-smi) and its CPU topology from hwloc (or sysfs), and returns them as
    C(ansible_facts.hpc_gres_hw).
  - For every GPU it gives the OS cpus local to it (from C(nvidia-smi topo -m)) and the same set as Slurm core
    indices (hwloc's logical core numbers in the topology slurmd loads), ready for C(Cores=) in C(gres.conf).
  - "The CPU topology comes from the first of these that works (O(topology_source=auto)): the hwloc library
    slurmd links (C(libhwloc.so.15), called through ctypes in a child Python process with slurmd's settings:
    whole system, L1/L2/L4/L5 caches and Misc filtered out), C(lstopo-no-graphics --of xml) with the same
    settings, or sysfs read the way hwloc's Linux backend reads it (sibling masks, NUMA nodes, distances,
    cgroup cpuset). C(hpc_gres_hw.cpu.source) says which one was used."
  - "Runs only these commands, each with an argument list and never through a shell:
    C(nvidia-smi --query-gpu=index,uuid,name,pci.bus_id,mig.mode.current,memory.total,memory.used
    --format=csv,noheader,nounits), C(nvidia-smi topo -m),
    C(nvidia-smi --query-compute-apps=gpu_uuid,pid,used_memory,process_name --format=csv,noheader,nounits), and,
    only when a GPU has MIG enabled, C(nvidia-smi -L), C(nvidia-smi mig -lgi) and C(nvidia-smi mig -lci);
    for the CPU topology the module's own Python with a short ctypes script and, when that fails,
    C(lstopo-no-graphics --disallowed --filter ... --of xml -)."
  - A GPU that nvidia-smi cannot reach ("Unable to determine the device handle", exit code 15) does not fail the
    task; it is listed in RV(ansible_facts.hpc_gres_hw.lost_gpus) and the GPUs that answered are returned.
    C(No devices were found) returns an empty GPU list.
  - Changes nothing on the node.
options:
  topology_source:
    description:
      - Where the CPU topology comes from. V(auto) tries V(libhwloc), then V(lstopo), then V(sysfs) and records
        why a source was skipped in C(hpc_gres_hw.cpu.source_notes); any other value uses only
        that source.
    type: str
    choices: [auto, libhwloc, lstopo, sysfs]
    default: auto
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.nvidia_smi
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  facts:
    support: full
    description: Sets facts.
  platform:
    platforms: posix
    support: full
    description: Linux nodes with the NVIDIA driver.
notes:
  - "Slurm core indices are hwloc's logical core indices (C(Core L#) in C(lstopo)) of the topology slurmd loads,
    a depth-first walk where every object (package, die, L3 cache, NUMA group, cluster) orders its children by
    their lowest OS cpu, one index per core whatever its thread count. A GPU whose CPU affinity is C(0-31,64-95)
    on a 2 x 32 core node with hyperthreads numbered at +64 is local to Slurm cores C(0-31); on a Xeon in SNC2
    with cpus interleaved across the two NUMA nodes of a package, NUMA node 0 is cores C(0-9), not every other
    core. See docs/cpu-topology.md."
  - When Sockets x CoresPerSocket x ThreadsPerCore cannot describe the node (packages with different core
    counts, hybrid or partly-SMT cores, offline or cgroup-disallowed cpus, no packages, cpu ids slurmd cannot
    map, Intel E-cores that Slurm 23.02+ drops), C(hpc_gres_hw.cpu.shape_fits) is false,
    C(hpc_gres_hw.cpu.shape_problems) says why, and the task warns with the line C(slurmd -C) would print.
  - MIG devices are matched to their GPU and compute instance ids by NVML's enumeration order (GPU instance id,
    then compute instance id), checked against the profile names of C(mig -lci).
seealso:
  - name: nvidia-smi documentation
    description: The NVIDIA System Management Interface manual page.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
"""

EXAMPLES = r"""
- name: Gather GPU facts
  hpc.slurm_gres.gpu_facts:

- name: Show which Slurm cores each GPU is local to
  ansible.builtin.debug:
    msg: "GPU {{ item.index }} ({{ item.name }}): Cores={{ item.slurm_cores }}"
  loop: "{{ ansible_facts.hpc_gres_hw.gpus }}"

- name: Use an nvidia-smi outside PATH
  hpc.slurm_gres.gpu_facts:
    nvidia_smi: /usr/local/nvidia/bin/nvidia-smi

- name: Stop when Sockets/CoresPerSocket/ThreadsPerCore cannot describe the node
  ansible.builtin.assert:
    that: ansible_facts.hpc_gres_hw.cpu.shape_fits
    fail_msg: "{{ ansible_facts.hpc_gres_hw.cpu.shape_problems | join('; ') }}"
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to the host.
  returned: always
  type: dict
  contains:
    hpc_gres_hw:
      description: The node's GPUs and CPU layout.
      returned: always
      type: dict
      contains:
        cpu:
          description:
            - The CPU topology as slurmd computes it (C(xcpuinfo_hwloc_topo_get)); null when no topology could be
              read. C(sockets), C(cores_per_socket) and C(threads_per_core) are what C(slurmd -C) reports
              (packages holding cores; cores and cpus divided with integer division).
            - C(boards), C(cpus), C(cores) as slurmd counts them; C(cores_per_package) and C(threads_per_core_seen)
              show uneven packages and hybrid cores; C(offline_cpus) and C(disallowed_cpus) (outside this
              process's cgroup cpuset) as range strings; C(numa_nodes) maps each NUMA node to its cpus.
            - C(slurmd_c) is the hardware part of the C(slurmd -C) line; C(shape_fits) is false and
              C(shape_problems) lists why when that line does not describe the node.
            - C(slurmd_c_without_ecores) is the line Slurm 23.02 and later print on an Intel hybrid CPU without
              C(SlurmdParameters=allow_ecores) (P-cores only); null on every other CPU.
            - C(source) is C(libhwloc), C(lstopo) or C(sysfs); C(source_detail) names the library, the binary or
              the directory; C(source_notes) says why earlier sources were skipped.
          type: dict
          sample: {"sockets": 2, "cores_per_socket": 32, "threads_per_core": 2, "boards": 1, "cpus": 128,
                   "cores": 64, "cores_per_package": [32, 32], "threads_per_core_seen": [2], "offline_cpus": "",
                   "disallowed_cpus": "", "numa_nodes": {"0": "0-31,64-95", "1": "32-63,96-127"},
                   "slurmd_c": "CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2",
                   "slurmd_c_without_ecores": null, "shape_fits": true, "shape_problems": [], "source": "libhwloc",
                   "source_detail": "libhwloc (libhwloc.so.15)", "source_notes": []}
        gpus:
          description: One entry per GPU in nvidia-smi index (PCI bus) order.
          type: list
          elements: dict
          contains:
            index: {description: nvidia-smi index., type: int}
            uuid: {description: GPU UUID., type: str, sample: GPU-a44622e3-2296-6285-0a86-84d0f6c67900}
            name: {description: Product name as nvidia-smi prints it., type: str, sample: NVIDIA A100-SXM4-80GB}
            pci_bus_id: {description: PCI bus id (8-digit domain)., type: str, sample: "00000000:07:00.0"}
            minor:
              description: Device minor (C(/dev/nvidia<minor>)) from C(/proc/driver/nvidia/gpus/<bus>/information),
                else the index (see RV(ansible_facts.hpc_gres_hw.gpus.minor_source)).
              type: int
            minor_source: {description: "C(proc) when read from the driver, C(index) when assumed.", type: str}
            mig_mode: {description: "C(Enabled), C(Disabled), or null where the GPU has no MIG.", type: str}
            memory_total_mib: {description: Memory size in MiB., type: int}
            memory_used_mib: {description: Memory in use in MiB., type: int}
            cpu_affinity:
              description: OS cpu ids local to the GPU (C(topo -m) CPU Affinity); null when not reported.
              type: list
              elements: int
            numa_affinity: {description: NUMA nodes of the GPU (C(topo -m)); null when not reported., type: list,
                            elements: int}
            numa_node: {description: "The GPU's NUMA node (where C(topo -m) says N/A, the one NUMA node holding all
                                       its cpus), or null when unknown or ambiguous.", type: int}
            slurm_cores:
              description: Slurm core indices local to the GPU as a range string (C(Cores=) syntax); null when the
                affinity or the CPU topology is unknown.
              type: str
              sample: 0-31
            processes:
              description: Compute processes on the GPU (joined by uuid); null when the query failed.
              type: list
              elements: dict
              sample: [{"pid": 44378, "used_mib": 1836, "process_name": "tritonserver", "user": "svc",
                        "elapsed_s": 3725, "elapsed": "01:02:05", "mig_uuid": null}]
            mig_devices:
              description: MIG devices when MIG is enabled (empty otherwise), with their GPU and compute instance ids
                and the C(/dev/nvidia-caps/nvidia-cap<minor>) minors of their GI and CI access capabilities.
              type: list
              elements: dict
              sample: [{"uuid": "MIG-c42101f0-a1fa-5b68-8908-7c5c887f28bd", "profile": "4g.20gb", "device": 0,
                        "gi_id": 2, "ci_id": 0, "gi_profile": "4g.20gb", "gi_profile_id": 5, "placement_start": 0,
                        "placement_size": 4, "gi_cap_minor": 21, "ci_cap_minor": 22}]
        lost_gpus:
          description:
            - GPUs nvidia-smi reported but could not reach (fallen off the bus, driver errors), each with the bus id
              and NVML's index where nvidia-smi's message names them (C(null) where it does not) and the message.
            - "Drivers older than R550 print the bus id only (C(for GPU0000:08:00.0)), some messages the index only
              (C(for GPU0: Unknown Error))."
          type: list
          elements: dict
          sample: [{"pci_bus_id": "00000000:34:00.0", "index": 1,
                    "message": "Unable to determine the device handle for GPU1: 0000:34:00.0: Unknown Error"}]
commands:
  description: The nvidia-smi command lines that were run.
  returned: always
  type: list
  elements: list
"""

from ansible.module_utils.basic import AnsibleModule

# first: the payload's other files are then compiled once, not twice (common/payload_import.py)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import payload_import  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpu_topology
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.collect import COLLECT_ARGS, CollectError, collect


def main():
    module = AnsibleModule(
        argument_spec=dict(
            topology_source=dict(type="str", default="auto", choices=list(cpu_topology.SOURCES)),
            **COLLECT_ARGS
        ),
        supports_check_mode=True,
    )

    def run(argv):
        return module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C"})

    try:
        facts, warnings, commands = collect(run, sysfs_root=module.params["sysfs_root"],
                                            nvidia_smi_path=module.params["nvidia_smi"], which=module.get_bin_path,
                                            topology_source=module.params["topology_source"])
    except CollectError as exc:
        module.fail_json(msg=str(exc), **exc.details)
    for warning in warnings:
        module.warn(warning)
    module.exit_json(changed=False, ansible_facts={"hpc_gres_hw": facts}, commands=commands)


if __name__ == "__main__":
    main()
