#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: bring each GPU of a node to its declared MIG layout, idempotently, and prove it took."""

DOCUMENTATION = r"""
module: mig_layout
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Apply MIG layouts (GPU instances per GPU) with nvidia-smi, idempotently, and check the result
description:
  - Brings every GPU named in O(layouts) to its layout of MIG GPU instances, each with its default compute
    instance, or to MIG mode off.
  - Reads the node the way M(hpc.slurm_gres.gpu_facts) does (C(nvidia-smi --query-gpu), C(topo -m),
    C(--query-compute-apps), and with MIG on C(-L), C(mig -lgi), C(mig -lci)), plus
    C(nvidia-smi --query-gpu=index,mig.mode.pending).
  - A GPU whose GPU instances already are the declared profiles (in any order and placement), each with exactly
    its default compute instance, is left alone, so a second run reports C(changed=false) and keeps the GI ids,
    and with them the C(/dev/nvidia-caps) paths that gres.conf names.
  - "Any other GPU is rebuilt, in this order: C(nvidia-smi -i N -mig 1) when MIG mode is off;
    C(nvidia-smi mig -i N -gi G -ci C -dci) for every compute instance; C(nvidia-smi mig -i N -gi G -dgi) for every
    GPU instance; C(nvidia-smi mig -i N -cgi PROFILE:START -C) per instance, largest first, at a placement found
    by searching the model's allowed start slots (C(nvidia-smi mig -lgipp)). A layout of C(null) (or C([])) destroys
    the instances and runs C(nvidia-smi -i N -mig 0)."
  - Every command is run with an argument list, never through a shell.
  - "Refuses, changing nothing, when: compute processes run on a GPU that must change (each named by pid, process
    and user; processes are joined to GPUs by GPU or MIG device UUID); a MIG mode change is pending; the GPU
    cannot do MIG; O(models) names another model than the GPU reports; the layout is invalid for the model
    (unknown profile, too many instances, more than one C(+me), or no placement fits)."
  - After the commands, reads the GPUs again and fails unless every GPU is at its layout. A MIG mode change
    that stays pending (A100 and A30 need a GPU reset, a VM needs a reboot) stops the run with that advice.
  - A failed run can leave a GPU part-way; the plan is always made from the live state, so a rerun continues.
options:
  layouts:
    description:
      - GPU index (as nvidia-smi numbers GPUs) to the list of MIG GPU-instance profiles it should have, one entry
        per instance, for example C([3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]). C(null) or C([]) means MIG mode off.
      - GPUs not named here are not touched.
    type: dict
    required: true
  models:
    description:
      - GPU index to the model key of the MIG table (C(A100-80GB), C(H100-94GB), C(A30-24GB), ...) or an nvidia-smi
        product name. The GPU must be that model.
      - A GPU not named here is looked up by the name nvidia-smi reports.
    type: dict
    default: {}
  processes:
    description:
      - What compute processes on a GPU that must change do to the run.
      - V(refuse) fails the task naming each process (pid, process, user), changing nothing.
      - V(report), in check mode only, lists them in RV(busy) and does not refuse, so a caller can read the plan
        before it drains the node and waits for the jobs. A run that changes the GPUs always refuses them.
    type: str
    choices: [refuse, report]
    default: refuse
  host:
    description: The name used in messages. Defaults to the node's host name.
    type: str
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes
  - hpc.slurm_gres.nvidia_smi
attributes:
  check_mode:
    support: full
    description: Reports the plan (RV(plan)) and whether it would change anything; runs only the read commands.
notes:
  - Needs root, as nvidia-smi does to change MIG mode and instances.
  - Drain the node and stop slurmd first; the runbook playbook C(hpc.slurm_gres.mig_reconfigure) does all of it,
    including gres.conf, slurm.conf and the daemon restarts that GRES count changes need.
seealso:
  - module: hpc.slurm_gres.gpu_facts
  - name: MIG layouts, placements and the reconfiguration runbook
    description: docs/mig.md and docs/runbooks/mig-reconfiguration.md in the collection.
    link: https://github.com/hpc-slurm-gres/hpc.slurm_gres/blob/main/docs/mig.md
"""

EXAMPLES = r"""
- name: GPU 0 split in four, GPU 1 whole
  hpc.slurm_gres.mig_layout:
    layouts:
      0: [3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb]
      1: null
    models:
      0: A100-80GB
  register: mig

- name: What would change (nothing runs)
  hpc.slurm_gres.mig_layout:
    layouts:
      0: [1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb, 1g.10gb]
  check_mode: true
  register: mig_plan

- name: Show the commands it would run
  ansible.builtin.debug:
    msg: "{{ mig_plan.plan | map(attribute='commands') | flatten(levels=1) | map('join', ' ') }}"
"""

RETURN = r"""
changed:
  description: Whether a command that changes the GPUs ran (in check mode, whether one would run).
  type: bool
  returned: always
live:
  description:
    - GPU index to the GPU-instance profiles it had before the run (one entry per instance, sorted by name), or
      null for a GPU with MIG off; in check mode, what the GPUs have now.
  type: dict
  returned: always
  sample: {"0": [1g.10gb, 1g.10gb, 2g.20gb, 3g.40gb], "1": null}
plan:
  description: Per GPU named in O(layouts), what was (or would be) done.
  type: list
  elements: dict
  returned: always
  contains:
    index:
      description: nvidia-smi GPU index.
      type: int
    uuid:
      description: GPU UUID.
      type: str
    model:
      description: The MIG model used for the placement search.
      type: str
    mig_mode:
      description: MIG mode before the run.
      type: str
    desired:
      description: The declared profiles, or null for MIG off.
      type: list
      elements: str
    current:
      description: Profile counts before the run, for example C(3g.40gb=1, 1g.10gb=2).
      type: dict
    action:
      description: C(none), C(rebuild), C(enable_and_create) or C(disable).
      type: str
    placement:
      description: The GPU instances to create, largest first, each with C(profile), C(profile_id), C(start), C(size).
      type: list
      elements: dict
    commands:
      description: The argument lists run (or to run) for this GPU, in order.
      type: list
      elements: list
  sample:
    - index: 0
      action: rebuild
      current: {"7g.80gb": 1}
      desired: [3g.40gb, 2g.20gb, 1g.10gb]
      commands:
        - [/usr/bin/nvidia-smi, mig, -i, "0", -gi, "0", -ci, "0", -dci]
        - [/usr/bin/nvidia-smi, mig, -i, "0", -gi, "0", -dgi]
        - [/usr/bin/nvidia-smi, mig, -i, "0", -cgi, "3g.40gb:4", -C]
busy:
  description: Compute processes on GPUs whose layout must change (with O(processes=report) they do not refuse).
  type: list
  elements: dict
  returned: always
  sample: [{"gpu": 0, "pid": 4711, "process_name": "python3", "user": "alice", "used_memory": 1024}]
gpus:
  description: Per GPU named in O(layouts), MIG mode and MIG devices after the run (before it in check mode).
  type: list
  elements: dict
  returned: always
  sample:
    - index: 0
      mig_mode: Enabled
      mig_devices:
        - {profile: 3g.40gb, gi_id: 2, ci_id: 0, uuid: MIG-..., placement_start: 4, placement_size: 4}
results:
  description: Each changing command with its exit code and output.
  type: list
  elements: dict
  returned: always
commands:
  description: Every nvidia-smi argument list run, reads included.
  type: list
  elements: list
  returned: always
problems:
  description: Why the plan was refused or the result is wrong; each names host, field, expected and found.
  type: list
  elements: str
  returned: always
hw:
  description: The node's facts after the run, as M(hpc.slurm_gres.gpu_facts) returns C(hpc_gres_hw).
  type: dict
  returned: success
"""

import socket

from ansible.module_utils.basic import AnsibleModule

# first: the payload's other files are then compiled once, not twice (common/payload_import.py)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import payload_import  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.apply import ApplyError, apply_layouts
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.plan import live_layouts
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.collect import COLLECT_ARGS


def main():
    module = AnsibleModule(
        argument_spec=dict(
            layouts=dict(type="dict", required=True),
            models=dict(type="dict", default={}),
            processes=dict(type="str", choices=["refuse", "report"], default="refuse"),
            host=dict(type="str"),
            **COLLECT_ARGS
        ),
        supports_check_mode=True,
    )
    params = module.params
    host = params["host"] or socket.gethostname().split(".", 1)[0]

    def run(argv):
        return module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C"})

    try:
        result = apply_layouts(run, host, params["layouts"], params["models"], check_mode=module.check_mode,
                               sysfs_root=params["sysfs_root"], nvidia_smi_path=params["nvidia_smi"],
                               which=module.get_bin_path, report_busy=params["processes"] == "report")
    except ApplyError as exc:
        details = dict(exc.result)
        for warning in details.pop("warnings", None) or ():
            module.warn(warning)
        module.fail_json(msg=str(exc), **details)
    for warning in result.pop("warnings"):
        module.warn(warning)
    result["live"] = live_layouts(result["plan"])
    module.exit_json(**result)


if __name__ == "__main__":
    main()
