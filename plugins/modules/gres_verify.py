#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: prove staged slurm.conf + gres.conf fit this node before they are installed."""

DOCUMENTATION = r"""
module: gres_verify
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.1.0"
short_description: Check staged slurm.conf and gres.conf against a node's GPUs before slurmd restarts
description:
  - Reads a staged C(slurm.conf) and C(gres.conf), gathers the node's GPUs and CPU layout the way
    M(hpc.slurm_gres.gpu_facts) does, stats every device file gres.conf names, and reports every mismatch Slurm would
    only notice after a restart, by draining the node.
  - "Checks: C(slurm.conf) C(Gres=) for the node equals gres.conf's count per type; the GPUs (and MIG devices)
    nvidia-smi sees cover what is declared (C(declares 8 a100, nvidia-smi sees 7)); each GPU's nvidia-smi name
    matches the Type its line claims (O(type_patterns)); every C(File) exists, is a character device with the
    NVIDIA major 195, and its minor is a GPU nvidia-smi sees; a whole-GPU line does not name a GPU in MIG mode;
    C(Cores) lie within the socket(s) the GPU is local to (error) and are set where the topology is known
    (warning); C(Cores) line up with sockets the way the node's Slurm release demands (whole sockets from 24.11,
    one socket or all cores from 25.11, where slurmctld drains the node with C(doesn't match socket boundaries);
    a warning for releases before the rule); the Slurm GPU order follows PCI bus order, the order
    C(CUDA_DEVICE_ORDER=PCI_BUS_ID) numbers GPUs in; C(Sockets)/C(CoresPerSocket)/C(ThreadsPerCore) match the
    CPUs; slurm.conf hostlists are in a form the release parses (C(node[01-02]-ib) only from 23.11) and the
    AutoDetect mode is one it knows, with its plugin (C(gpu_nvml.so), C(gpu_nvidia.so)) installed; and, with
    O(slurmd), what the real C(slurmd -N NODE -G) makes of the staged files."
  - "The release rules come from the collection's one table (C(module_utils/slurm/versions.py)), the same the
    renderer applies for the inventory's C(hpc_gres_slurm_version)."
  - "A node with MIG GPUs: with O(gres_spec), the module first writes the node's C(MultipleFiles) lines from its
    live GPU and compute instance ids and C(/proc/driver/nvidia-caps/mig-minors), with the same renderer the
    controller used for the rest of the file, and verifies the completed file (returned as RV(gres_conf_text), the
    file to install). A GPU whose live MIG layout differs from the inventory is an error naming the GPU, what is
    declared and what is live, and the way out (C(ansible-playbook hpc.slurm_gres.mig_reconfigure --limit HOST -i INVENTORY))."
  - Errors fail the task with a table of findings; warnings are returned and shown. Changes nothing on the node.
  - The files are given as paths of staged files or as their content (one module run, nothing written on the node;
    the C(slurmd) cross-check copies them into a private temporary directory).
  - "With O(plan), the same run also reads what the node has: the installed files, the files slurmd last started
    with (kept by the deploy in O(plan.state_dir)), their ownership and permissions, and with O(read_version) the
    version of slurmd; and it decides whether anything is to be installed and whether slurmd needs a restart for the
    verified files (RV(plan)). The deploy reads and verifies a node in this one module run."
options:
  files:
    description:
      - The render's files by their name (C(slurm.conf), C(<node>/gres.conf), ...), as the
        C(hpc.slurm_gres.hpc_gres_render) role publishes them (the roles pass only these two, not every node's);
        the module verifies C(slurm.conf) and this node's C(<node_name>/gres.conf). Instead of
        O(slurm_conf)/O(slurm_conf_content) and O(gres_conf)/O(gres_conf_content).
      - "A node without a gres.conf in them (no GPUs in the inventory) has nothing to verify: the hardware and the
        readiness checks are skipped, as with O(verify=false)."
      - Anything else (no C(slurm.conf), not a mapping, an empty O(node_name)) fails the task with a message that
        names the host and the variables of O(origin), before the module reads anything on the node.
    type: raw
  origin:
    description:
      - Where O(files) and O(node_name) come from, for the error message on bad input; a role passes its inventory host
        and its variables' names.
    type: dict
    suboptions:
      host:
        description: The inventory host.
        type: str
      files:
        description: The name of the variable O(files) came from.
        type: str
      node_name:
        description: The name of the variable O(node_name) came from.
        type: str
  gres_conf:
    description:
      - Path of the staged gres.conf on the node. One of O(gres_conf), O(gres_conf_content) and O(files) is required.
    type: path
  gres_conf_content:
    description: The gres.conf to verify, as rendered on the controller.
    type: str
  slurm_conf:
    description:
      - Path of the staged slurm.conf on the node. One of O(slurm_conf), O(slurm_conf_content) and O(files) is
        required.
    type: path
  slurm_conf_content:
    description: The slurm.conf to verify.
    type: str
  gres_spec:
    description:
      - What the node's gres.conf was rendered from (C(cluster_name), C(autodetect) and the cluster model's C(node)),
        as the render step publishes it for nodes with MIG GPUs (C(mig_nodes[host].spec) of
        M(hpc.slurm_gres.gres_render)).
      - The gres.conf is rendered again from it with the node's live MIG facts, after checking that without them it
        renders exactly the given gres.conf.
    type: dict
  node_name:
    description: The Slurm node name of this host (its C(NodeName) in slurm.conf).
    type: str
    required: true
  dev_root:
    description:
      - Root under which the device files gres.conf names are checked, C(<dev_root>/dev/nvidia0) for
        C(File=/dev/nvidia0). Tests point it at a directory of made device nodes.
      - The O(slurmd) cross-check always sees the real paths.
    type: path
    default: /
  slurmd:
    description:
      - Path of the node's slurmd. When set, the module copies the two staged files into a private temporary
        directory (slurmd reads gres.conf from the directory of its slurm.conf), runs
        C(slurmd -f <dir>/slurm.conf -N <node_name> -G), and turns its errors and its GRES counts into findings.
      - Skipped when a device file is missing (slurmd would only wait 20 s and exit with the same error).
    type: path
  slurmd_version:
    description:
      - The Slurm version of the node (C(24.11.1), or the output of C(slurmd -V)). The release rules are judged for
        it (socket boundaries, hostlist forms, AutoDetect modes).
      - When unset and O(slurmd) is set, taken from C(slurmd -V); otherwise unknown, socket findings are warnings
        and the hostlist and AutoDetect release checks are skipped.
    type: str
  slurm_plugin_dir:
    description:
      - Where the node's Slurm plugins are, to check that C(AutoDetect=nvml) has slurmd's C(gpu_nvml.so)
        (Debian's Slurm has none) and C(AutoDetect=nvidia) its C(gpu_nvidia.so).
      - Default, slurm.conf's C(PluginDir), else the usual install locations
        (C(/usr/lib/x86_64-linux-gnu/slurm-wlm), C(/usr/lib64/slurm), ...).
    type: path
  slurmd_timeout:
    description: Seconds the slurmd cross-check may take.
    type: int
    default: 60
  read_version:
    description:
      - The node's slurmd command (a name on PATH or a path). Its C(slurmd -V) is returned as RV(daemon_version)
        and, unless O(slurmd_version) is set, the release rules are judged for it. A slurmd that does not run is
        reported in RV(daemon_version), not failed here (the deploy refuses it with every other daemon's version).
    type: str
  verify:
    description:
      - V(false) skips the hardware checks (no nvidia-smi, no device files) and only reads and plans (O(plan)); the
        rollback of a run plans the previous files this way.
    type: bool
    default: true
  readiness:
    description:
      - Also run the GPU readiness checks of the node health check (docs/health.md; C(nvml), C(driver_version),
        C(persistence), C(gpu_count), C(fabric), C(memory), C(clocks), C(license), C(xid), C(errors)) over one
        C(nvidia-smi -q), the PCI functions in sysfs, the kernel log and the fabric manager's state. Their errors
        refuse the node like any other finding; with O(verify=false) they are only returned (RV(readiness)).
      - A check that does not apply to the node (no NVSwitch, an older driver without the field) passes and says why.
    type: dict
    suboptions:
      kernel_log:
        description: Where the Xid lines are read, V(auto) (the journal, else C(dmesg)), V(journal), V(dmesg),
          V(none) or a file.
        type: str
        default: auto
      ack_file:
        description: The node's file of acknowledged Xid events.
        type: path
        default: /etc/hpc-gres/xid-acknowledgements
      fabric_manager:
        description: How the fabric manager's state is read, V(systemd), V(none) or a file holding its status text.
        type: str
        default: systemd
      lspci:
        description: A file with C(lspci) output to read the PCI functions from instead of sysfs.
        type: path
      timeout:
        description: Seconds each command may take before it is killed and reported.
        type: int
        default: 10
  plan:
    description: Read the node's installed and recorded files and plan the install and the slurmd restart.
    type: dict
    suboptions:
      health:
        description:
          - The GPU health check the deploy installs (C(library_dir), C(library_sha256), C(program), C(args),
            C(python), C(nhc)), and in C(boot) the GPU boot order of slurmd that runs from the same library
            (C(enabled), C(program), C(config), C(unit_dir), C(mig_manager_dir), C(slurmd_service),
            C(retry_interval), C(args), C(settings); docs/boot.md); C(health_install) in RV(plan) says what differs on
            the node. A C(program) of null installs the library for the boot order alone. Null (or the empty string
            ansible-core before 2.19 templates null to) means no health check and no boot order.
        type: raw
      files:
        description:
          - The rendered files of this node by their name in the render (C(slurm.conf), C(cgroup.conf),
            C(<node>/gres.conf) or in configless mode C(gres.conf), the include file in include mode). The
            gres.conf to install is the verified one (RV(gres_conf_text)).
        type: dict
        required: true
      config_mode:
        description: How the node gets its files, V(files), V(configless) or V(include).
        type: str
        choices: [files, configless, include]
        default: files
      include_file:
        description: Include mode, the file the site's slurm.conf includes.
        type: str
      config_dir:
        description: Where slurmd reads its files.
        type: path
        default: /etc/slurm
      configless_dir:
        description: Configless mode, where slurmd keeps the files it fetched from slurmctld.
        type: path
        default: /run/slurm/conf
      state_dir:
        description: Where the deploy keeps a copy of the files slurmd last started with.
        type: path
        default: /var/lib/slurm-gres/slurmd
      owner:
        description: Owner the install gives the files.
        type: str
        default: root
      group:
        description: Group the install gives the files.
        type: str
        default: root
      mode:
        description: Permissions the install gives the files.
        type: str
        default: "0644"
  type_patterns:
    description:
      - GRES type to a regular expression searched case-insensitively in the nvidia-smi name, merged over the
        built-in patterns (a100, a800, h100, h800, h200, h20, gh200, gb200, b200, l40s, l40, l4, a40, a30, a10,
        v100, t4, rtx/quadro models and more).
      - A type with no pattern is matched the way Slurm's AutoDetect does, as a substring of the lower-cased name
        with spaces as underscores (C(nvidia_a100-sxm4-80gb)); failing that, a warning asks for a pattern.
    type: dict
    default: {}
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.nvidia_smi
attributes:
  check_mode:
    support: full
    description: Read-only; runs the same in check mode.
  platform:
    platforms: posix
    support: full
    description: Linux nodes with the NVIDIA driver.
notes:
  - Runs the same nvidia-smi calls as M(hpc.slurm_gres.gpu_facts), each with an argument list, never through a shell.
  - The role C(hpc.slurm_gres.hpc_gres_verify) stages rendered files in a temporary directory, runs this module
    and removes the directory again.
seealso:
  - module: hpc.slurm_gres.gpu_facts
"""

EXAMPLES = r"""
- name: Verify the rendered files on the node (nothing is written there; a node without a gres.conf is only read)
  hpc.slurm_gres.gres_verify:
    files: "{{ rendered.files }}"
    origin: {host: "{{ inventory_hostname }}", files: rendered.files, node_name: node}
    gres_spec: "{{ (rendered.mig_nodes[inventory_hostname] | default({})).spec | default(omit) }}"
    node_name: "{{ node }}"
  vars:
    rendered: "{{ hostvars['localhost'].hpc_gres_render_result }}"
    node: "{{ rendered.nodes[inventory_hostname] }}"
  register: verified

- name: Verify staged files before installing them
  hpc.slurm_gres.gres_verify:
    slurm_conf: "{{ stage.path }}/slurm.conf"
    gres_conf: "{{ stage.path }}/gres.conf"
    node_name: "{{ inventory_hostname_short }}"
    slurmd: /usr/sbin/slurmd

- name: A site that names its A100 80 GB parts a100_80g
  hpc.slurm_gres.gres_verify:
    slurm_conf: /tmp/stage/slurm.conf
    gres_conf: /tmp/stage/gres.conf
    node_name: gpu-a01
    type_patterns:
      a100_80g: 'A100.*80GB'

# A failure reads like:
# gres_verify: the staged files do not fit node gpu-a01 (1 error(s), 0 warning(s))
# SEVERITY  CHECK    GPU  EXPECTED                                   FOUND
# --------  -------  ---  -----------------------------------------  ----------------------------------
# error     present  -    8 GPUs of type a100 visible to nvidia-smi  declares 8 a100, nvidia-smi sees 7
#                         hint: a GPU fell off the bus, ...
"""

RETURN = r"""
findings:
  description: Every finding, errors and warnings.
  returned: always
  type: list
  elements: dict
  contains:
    severity: {description: C(error) or C(warning)., type: str}
    check:
      description: >-
        C(privileges) (with O(plan), when the module does not run as root: an error, a warning in check mode),
        C(parse), C(release), C(count), C(present), C(type), C(mig), C(device), C(cores), C(socket_boundary),
        C(order), C(cpu_layout), C(autodetect) or C(slurmd_g); with O(readiness) also the readiness checks.
      type: str
    gpu: {description: "nvidia-smi index, a range string for several GPUs, or null.", type: raw}
    expected: {description: What the check wanted., type: str}
    found: {description: What it found., type: str}
    hint: {description: "Consequence and remedy, or null.", type: str}
  sample: [{"severity": "error", "check": "present", "gpu": null,
            "expected": "8 GPUs of type a100 visible to nvidia-smi",
            "found": "declares 8 a100, nvidia-smi sees 7", "hint": "a GPU fell off the bus, ..."}]
errors:
  description: Number of error findings.
  returned: always
  type: int
warnings_count:
  description: Number of warning findings.
  returned: always
  type: int
counts:
  description: Per gpu GRES type, the count in slurm.conf, in gres.conf, and the devices nvidia-smi shows (null
    when the type cannot be matched to a name).
  returned: always
  type: dict
  sample: {"gpu:a100": {"slurm_conf": 8, "gres_conf": 8, "nvidia_smi": 7}}
table:
  description:
    - The findings as a fixed-width table (on failure it is the message, C(msg)).
    - Without the hardware checks (O(verify=false), or a node without a gres.conf), one line saying why there is
      no table.
  returned: success
  type: str
slurmd_g:
  description: The output of C(slurmd -G), or why it did not run.
  returned: always
  type: dict
  sample: {"ran": true, "rc": 0, "output": "slurmd-gpu-a01: Gres Name=gpu Type=a100 Count=4 ..."}
slurmd_version:
  description: The Slurm version the release rules were judged for, or null when unknown.
  returned: always
  type: str
gres_conf_text:
  description:
    - The gres.conf that was verified, the one to install. With O(gres_spec) on a node with MIG GPUs, the given
      file with its C(MultipleFiles) lines written from the live MIG devices; otherwise the given file.
  returned: always
  type: str
gres_conf_completed:
  description: Whether MIG lines were written from the node's live facts.
  returned: always
  type: bool
hw:
  description: The gathered hardware facts (the same shape as C(ansible_facts.hpc_gres_hw) of gpu_facts).
  returned: success
  type: dict
commands:
  description: The command lines that were run.
  returned: success
  type: list
  elements: list
daemon_version:
  description: With O(read_version), what C(slurmd -V) printed (C(version)) or why it could not be read (C(error)).
  returned: with O(read_version)
  type: dict
  sample: {"host": "gpu-a01", "daemon": "slurmd", "version": "slurm-wlm 24.11.5", "error": null}
readiness:
  description: With O(readiness), C(ready) (no error), C(findings) (also in RV(findings) unless O(verify=false)),
    C(not_applied) (check to the reason it did not apply), C(inputs) (where each input came from), C(seconds).
  returned: with O(readiness)
  type: dict
plan:
  description:
    - With O(plan). C(restart) (bool) and C(reasons); C(install) (false when the installed files are the new ones
      with the wanted attributes, and in configless mode); C(not_installed) (new files whose installed text
      differs); C(expected_gres) and C(applied_gres) (the node's Gres in the new and in the running slurm.conf) and
      C(gres_changed); C(new_files) (file name to the text slurmd is to run with), C(running_files) (what it runs
      with, the recorded files, else the installed ones), C(recorded) (the deploy recorded them before),
      C(installed) (the installed files), C(install_names) and C(record_names) (the files this config mode
      installs and records, in order); C(health_install) with O(plan.health), that is C(library) (bool), C(launcher) and
      C(nhc) (the text to write, or null when the installed file is right), C(boot) (C(dirs), each C(dest), C(files)
      to write, C(absent) to remove and C(mode); C(reload), when unit files change and systemd runs; C(needed)),
      C(needed) (any of them).
    - On a node that fails verification, C(installed) and C(new_files) hold only the files that would change, and
      C(running_files) is left out (nothing is installed or restarted there; the failure output stays short).
  returned: with O(plan)
  type: dict
  sample: {"restart": true, "reasons": ["gres.conf changed"], "install": true, "not_installed": ["gres.conf"],
           "expected_gres": {"gpu:a100": 8}, "applied_gres": {"gpu:a100": 8}, "gres_changed": false}
"""

import os
import re
import shutil
import tempfile

from ansible.module_utils.basic import AnsibleModule

# first: the payload's other files are then compiled once, not twice (common/payload_import.py)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import payload_import  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import TreeError, read_tree
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.check import check_readiness
from ansible_collections.hpc.slurm_gres.plugins.module_utils.health.program import health_plan
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.collect import COLLECT_ARGS, CollectError, collect
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.readiness import failed_run_findings
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.rendered_files import node_files
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import (
    count_summary,
    device_paths,
    find_gpu_plugins,
    finding,
    format_findings_table,
    parse_slurm_version,
    parse_staged,
    privileges_finding,
    stat_device_files,
    summarize,
    verify_node,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import ConfSyntaxError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.config_modes import (
    changed_files,
    deploy_files,
    node_plan,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.gres_conf import deferred_gres, node_gres_conf


def _text(module, path_param, content_param):
    if module.params[content_param] is not None:
        return module.params[content_param]
    path = module.params[path_param]
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        module.fail_json(msg="%s: expected a readable staged file, found %s (%s)" % (path_param, path, exc.strerror))


def _slurmd_version(module, slurmd, commands):
    argv = [slurmd, "-V"]
    commands.append(argv)
    rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg="%s -V failed with exit code %d: %s" % (slurmd, rc, (err or out).strip()[:300]),
                         commands=commands)
    return (out or err).strip()


def _daemon_version(module, command, commands):
    """What ``<slurmd> -V`` prints, or why it could not be read; never fails the task."""
    entry = {"host": module.params["node_name"], "daemon": "slurmd", "version": None, "error": None}
    path = command if os.path.isabs(command) else module.get_bin_path(command)
    if not path:
        entry["error"] = "%s -V: no %s on PATH" % (command, command)
        return entry
    if not (os.path.isfile(path) and os.access(path, os.X_OK)):
        entry["error"] = "%s -V: no such executable" % command
        return entry
    argv = [path, "-V"]
    commands.append(argv)
    rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    if rc == 0 and (out or err).strip():
        entry["version"] = (out or err).strip()
    else:
        entry["error"] = "%s -V: %s" % (command, ((err or out).strip() or "exit code %d" % rc)[:300])
    return entry


def _readiness(module, node, spec):
    """The readiness checks of the node health check (module_utils/health/check.py), or None without ``spec``."""
    if not spec:
        return None
    options = {"nvidia_smi": module.params["nvidia_smi"], "root": module.params["sysfs_root"], "node": node,
               "kernel_log": spec["kernel_log"], "ack_file": spec["ack_file"], "lspci": spec["lspci"],
               "fabric_manager": spec["fabric_manager"], "timeout": float(spec["timeout"])}
    return check_readiness(options)


def _plan(module, node, gres_text):
    """The node's installed and recorded files read once, and its install and restart plan for the new files."""
    spec = module.params["plan"]
    mode, include = spec["config_mode"], spec["include_file"]
    if mode == "include" and not include:
        module.fail_json(msg="plan.include_file: expected the include file's name in include mode, found none")
    deploy = deploy_files(spec["files"], "node", node, mode, include)
    new = dict(deploy["files"])
    if mode == "files" and new.get("gres.conf") is not None:
        new["gres.conf"] = gres_text  # a MIG node's, completed from its live devices
    installed_dir = spec["configless_dir"] if mode == "configless" else spec["config_dir"]
    try:
        read = read_tree({"installed": installed_dir, "applied": spec["state_dir"]}, deploy["record"])
    except TreeError as exc:
        module.fail_json(msg="node %s: %s" % (node, exc))
    recorded = read["present"]["applied"] > 0
    running = read["contents"]["applied"] if recorded else read["contents"]["installed"]
    wanted = {"mode": spec["mode"], "owner": spec["owner"], "group": spec["group"]}
    try:
        plan = node_plan(new, running, node, read["contents"]["installed"], read["attributes"]["installed"],
                         wanted, mode, include)
    except (ConfSyntaxError, ValueError) as exc:
        module.fail_json(msg="node %s: the files slurmd runs with cannot be compared with the new ones: %s"
                             % (node, exc))
    plan.update(new_files=new, running_files=running, recorded=recorded, installed=read["contents"]["installed"],
                install_names=deploy["install"], record_names=deploy["record"])
    health = spec["health"]
    if health and not isinstance(health, dict):
        module.fail_json(msg="node %s: plan.health: expected a dict or null, found %r" % (node, health))
    plan["health_install"] = health_plan(health) if health else {"needed": False}
    return plan


def _refused_plan(plan):
    """A refused node's plan as its failure shows it: the installed and new texts of the files that would change
    (the deploy's report diffs them), not three copies of every file; nothing is installed or restarted there."""
    installed, new = plan["installed"] or {}, plan["new_files"]
    changing = changed_files(installed, new, plan["install_names"])
    slim = {k: v for k, v in plan.items() if k != "running_files"}
    slim.update(installed={n: installed.get(n) for n in changing}, new_files={n: new[n] for n in changing})
    return slim


_SPOOL_LINE = re.compile(r"(?im)^[ \t]*SlurmdSpoolDir[ \t]*=.*$")


def _run_slurmd_g(module, slurmd, node, slurm_text, gres_text, commands):
    """slurmd -G on copies of the staged files in a private directory, so it reads exactly these two."""
    workdir = tempfile.mkdtemp(prefix="gres_verify.")
    try:
        # slurmd's spool dir is private too: slurmd -G needs one (its socket dir, hwloc's cache) and must not write the
        # node's; the include-mode check file names none, and Slurm's built-in /var/spool/slurmd may not exist
        spool = os.path.join(workdir, "spool")
        os.mkdir(spool)
        slurm_text = "%s\nSlurmdSpoolDir=%s\n" % (_SPOOL_LINE.sub("", slurm_text), spool)
        for name, text in (("slurm.conf", slurm_text), ("gres.conf", gres_text)):
            with open(os.path.join(workdir, name), "w") as handle:
                handle.write(text)
        argv = ["timeout", str(module.params["slurmd_timeout"]), slurmd, "-f",
                os.path.join(workdir, "slurm.conf"), "-N", node, "-G"]
        if not module.get_bin_path("timeout"):
            argv = argv[2:]
        commands.append(argv)
        rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    output = (err or "") + (out or "")
    if rc == 124:
        output += "\nfatal: slurmd -G did not finish within %d s" % module.params["slurmd_timeout"]
    return {"ran": True, "rc": rc, "output": output}


def _gpu_plugins(plugin_dir, staged):
    """The node's gpu_*.so plugins: from slurm_plugin_dir, else slurm.conf's PluginDir, else the usual places."""
    if not plugin_dir and staged["slurm"] is not None:
        plugin_dir = staged["slurm"]["options"].get("plugindir")
    return find_gpu_plugins(plugin_dir.split(":")[0] if plugin_dir else None)


def _with_live_mig(module, spec, gres_text, hw):
    """(gres.conf from the spec and the live MIG facts, deferred counts, findings); findings refuse the node."""
    try:
        if node_gres_conf(spec) != gres_text:
            module.fail_json(msg="gres_spec: expected the spec node %s's gres.conf was rendered from, found one that "
                                 "renders another file (pass mig_nodes[host].spec of the same render)"
                                 % module.params["node_name"])
        return node_gres_conf(spec, hw), deferred_gres(spec, hw), []
    except GresError as exc:
        return gres_text, {}, [finding("error", "mig", None, "%s: %s" % (p.field, p.expected), p.found, p.hint)
                               for p in exc.problems]
    except (KeyError, TypeError, ValueError) as exc:
        module.fail_json(msg="gres_spec: expected {cluster_name, autodetect, node: {host, name, gpus}} as the render "
                             "step publishes it, found %r (%s)" % (spec, exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="raw"),
            origin=dict(type="dict", options=dict(host=dict(type="str"), files=dict(type="str"),
                                                  node_name=dict(type="str"))),
            gres_conf=dict(type="path"),
            gres_conf_content=dict(type="str"),
            slurm_conf=dict(type="path"),
            slurm_conf_content=dict(type="str"),
            gres_spec=dict(type="dict"),
            node_name=dict(type="str", required=True),
            dev_root=dict(type="path", default="/"),
            slurmd=dict(type="path"),
            slurmd_version=dict(type="str"),
            slurmd_timeout=dict(type="int", default=60),
            type_patterns=dict(type="dict", default={}),
            slurm_plugin_dir=dict(type="path"),
            read_version=dict(type="str"),
            verify=dict(type="bool", default=True),
            readiness=dict(type="dict", options=dict(
                kernel_log=dict(type="str", default="auto"),
                ack_file=dict(type="path", default="/etc/hpc-gres/xid-acknowledgements"),
                fabric_manager=dict(type="str", default="systemd"),
                lspci=dict(type="path"),
                timeout=dict(type="int", default=10),
            )),
            plan=dict(type="dict", options=dict(
                files=dict(type="dict", required=True),
                health=dict(type="raw"),
                config_mode=dict(type="str", choices=["files", "configless", "include"], default="files"),
                include_file=dict(type="str"),
                config_dir=dict(type="path", default="/etc/slurm"),
                configless_dir=dict(type="path", default="/run/slurm/conf"),
                state_dir=dict(type="path", default="/var/lib/slurm-gres/slurmd"),
                owner=dict(type="str", default="root"),
                group=dict(type="str", default="root"),
                mode=dict(type="str", default="0644"),
            )),
            **COLLECT_ARGS
        ),
        mutually_exclusive=[("gres_conf", "gres_conf_content", "files"),
                            ("slurm_conf", "slurm_conf_content", "files")],
        required_one_of=[("gres_conf", "gres_conf_content", "files"),
                         ("slurm_conf", "slurm_conf_content", "files")],
        supports_check_mode=True,
    )
    params = module.params
    node = params["node_name"]
    gpu_node = True
    if params["files"] is not None:
        try:
            slurm_text, gres_text = node_files(params["files"], node, params["origin"])
        except ValueError as exc:
            module.fail_json(msg=str(exc))
        gpu_node, gres_text = gres_text is not None, gres_text or ""
    else:
        slurm_text = _text(module, "slurm_conf", "slurm_conf_content")
        gres_text = _text(module, "gres_conf", "gres_conf_content")
    # a node without a gres.conf (no GPUs in the inventory) has nothing to verify and no GPUs to be ready
    verify = params["verify"] and gpu_node
    readiness = params["readiness"] if gpu_node else None
    commands = []
    daemon = _daemon_version(module, params["read_version"], commands) if params["read_version"] else None
    version = params["slurmd_version"] or (daemon or {}).get("version")

    needs_root = privileges_finding(os.geteuid(), module.check_mode) if params["plan"] else None
    if not verify:
        if needs_root and needs_root["severity"] == "error":
            module.fail_json(msg="node %s: privileges: expected %s, found %s; %s" % (
                node, needs_root["expected"], needs_root["found"], needs_root["hint"]), findings=[needs_root])
        if params["gres_spec"]:
            module.fail_json(msg="gres_spec: the MIG lines are written from the live devices, which verify=false does "
                                 "not read; give the completed gres.conf instead")
        # the table says why there is none, for the callers that print it
        table = ("node %s: no gres.conf rendered for it (no GPUs in the inventory); nothing to verify" % node
                 if params["verify"] else "node %s: read and planned, the hardware not checked" % node)
        result = dict(changed=False, findings=[], errors=0, warnings_count=0, gres_conf_text=gres_text,
                      gres_conf_completed=False, slurmd_version=None, commands=commands, table=table)
        ready = _readiness(module, node, readiness)
        if ready is not None:
            result["readiness"] = ready
        if daemon:
            result["daemon_version"] = daemon
        if params["plan"]:
            result["plan"] = _plan(module, node, gres_text)
        module.exit_json(**result)

    def run(argv):
        return module.run_command(argv, check_rc=False, environ_update={"LC_ALL": "C"})

    try:
        # the checks do not look at the GPUs' processes: one nvidia-smi run fewer per node
        hw, warnings, collected = collect(run, params["sysfs_root"], params["nvidia_smi"],
                                          which=module.get_bin_path, processes=False)
    except CollectError as exc:
        if daemon:
            exc.details["daemon_version"] = daemon
        findings = failed_run_findings(exc.details.get("rc"), exc.details.get("stdout"), exc.details.get("stderr")) \
            if "rc" in exc.details else []
        if findings:
            # a known fault (NVML mismatch, no driver, a lost GPU): the readiness finding, with its hint, is the message
            module.fail_json(msg=format_findings_table(findings, title="gres_verify: node %s is not ready: nvidia-smi "
                                                       "cannot list the GPUs" % node),
                             findings=findings, errors=len(findings), warnings_count=0, **exc.details)
        module.fail_json(msg="gres_verify on node %s: %s" % (node, exc), **exc.details)
    commands.extend(collected)
    for warning in warnings:
        module.warn(warning)

    deferred, refused, rendered = None, [], gres_text
    if params["gres_spec"]:
        gres_text, deferred, refused = _with_live_mig(module, params["gres_spec"], gres_text, hw)
    completed = gres_text != rendered

    staged = parse_staged(node, slurm_text, gres_text)
    dev_stat = stat_device_files(device_paths(staged["records"] or []), params["dev_root"])

    slurmd_g = {"ran": False, "reason": "no slurmd given"}
    if params["slurmd"]:
        slurmd = params["slurmd"]
        if not (os.path.isfile(slurmd) and os.access(slurmd, os.X_OK)):
            switch = " (a path, not a switch: hpc_gres_verify_slurmd: /usr/sbin/slurmd)" \
                if slurmd.lower() in ("true", "yes", "on", "1") else ""
            module.fail_json(msg="slurmd: expected the node's slurmd executable, found nothing runnable at %s%s"
                                 % (slurmd, switch), commands=commands)
        if not version:
            version = _slurmd_version(module, slurmd, commands)
        missing = [p for p, st in dev_stat.items() if st is None]
        if refused:
            slurmd_g = {"ran": False, "reason": "the live MIG layout differs from the inventory"}
        elif missing:
            slurmd_g = {"ran": False, "reason": "device files missing (%s); slurmd would only wait 20 s and exit"
                        % ", ".join(missing)}
        else:
            slurmd_g = _run_slurmd_g(module, slurmd, node, slurm_text, gres_text, commands)

    if refused:
        findings = refused
    else:
        findings = verify_node(node, slurm_text, gres_text, hw, dev_stat,
                               slurmd_g_output=slurmd_g.get("output") if slurmd_g.get("ran") else None,
                               slurmd_version=version, type_patterns=params["type_patterns"],
                               gpu_plugins=_gpu_plugins(params["slurm_plugin_dir"], staged), staged=staged,
                               deferred=deferred)
    if needs_root:
        findings = [needs_root] + list(findings)
    ready = _readiness(module, node, readiness)
    if ready is not None:
        findings = list(findings) + ready["findings"]
    try:
        parsed_version = parse_slurm_version(version)
    except ValueError:
        parsed_version = None
    counts = summarize(findings)
    title = "gres_verify: the staged files %s node %s (%d error(s), %d warning(s))" % (
        "do not fit" if counts["errors"] else "fit", node, counts["errors"], counts["warnings"])
    table = format_findings_table(findings, title=title)
    result = dict(
        changed=False,
        findings=findings,
        errors=counts["errors"],
        warnings_count=counts["warnings"],
        counts=count_summary(node, slurm_text, gres_text, hw, params["type_patterns"], staged=staged),
        table=table,
        slurmd_g=slurmd_g,
        slurmd_version="%d.%02d.%d" % parsed_version if parsed_version else None,
        gres_conf_text=gres_text,
        gres_conf_completed=completed,
        hw=hw,
        commands=commands,
    )
    if daemon:
        result["daemon_version"] = daemon
    if ready is not None:
        result["readiness"] = ready
    for f in findings:
        if f["severity"] == "warning":
            module.warn("node %s: %s%s: expected %s, found %s%s" % (
                node, f["check"], "" if f["gpu"] is None else " (GPU %s)" % f["gpu"], f["expected"], f["found"],
                "; %s" % f["hint"] if f["hint"] else ""))
    if params["plan"]:
        # read on a refused node too: a check run shows what its files would become
        result["plan"] = _plan(module, node, gres_text)
    if counts["errors"]:
        # the table is the message; the bulky facts would bury it in the failure output
        for key in ("table", "hw", "commands", "gres_conf_text"):
            result.pop(key)
        if "plan" in result:
            result["plan"] = _refused_plan(result["plan"])
        module.fail_json(msg=table, **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
