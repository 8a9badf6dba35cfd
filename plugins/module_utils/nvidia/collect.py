"""Run the nvidia-smi calls and read sysfs/procfs for ``hpc_gres_hw``: the I/O half of gpu_facts, shared.

Both ``gpu_facts`` and ``gres_verify`` gather the same facts; this keeps one copy of the command sequence and
its failure handling. ``run`` is ``AnsibleModule.run_command``-like: ``run(argv) -> (rc, stdout, stderr)``.
Everything it learns goes through :func:`gpu_facts.build_facts`.
"""
import os
import shutil

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpu_topology

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import facts as gpu_facts

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi as nvidia_smi

# Options of every module that gathers the node's GPUs (doc fragment hpc.slurm_gres.nvidia_smi).
COLLECT_ARGS = dict(
    nvidia_smi=dict(type="str", default="nvidia-smi"),
    sysfs_root=dict(type="path", default="/"),
)

# nvidia-smi exit codes: 6 "query unsuccessful" (also "No devices were found"), 15 "GPU is lost".
RC_NO_DEVICES = 6
RC_INFOROM = nvidia_smi.RC_INFOROM_CORRUPTED  # it warns "infoROM is corrupted at gpu ..." after a whole output
RC_GPU_LOST = 15
# exit codes after which nvidia-smi's output is still read: some GPUs lost, or the infoROM warning after it
RC_OUTPUT_READ = (RC_GPU_LOST, RC_INFOROM)


class CollectError(Exception):
    """nvidia-smi missing or failing: ``str()`` is the message, ``details`` goes into fail_json."""

    def __init__(self, msg, **details):
        super(CollectError, self).__init__(msg)
        self.details = details


def resolve_nvidia_smi(command, which=None):
    """An absolute path for ``command`` (a name on PATH or a path), or CollectError."""
    if os.path.isabs(command) or os.sep in command:
        if not (os.path.isfile(command) and os.access(command, os.X_OK)):
            raise CollectError("nvidia_smi: expected an executable file, found nothing runnable at %s" % command)
        return command
    path = (which or shutil.which)(command)
    if path is None:
        raise CollectError("nvidia_smi: %r is not on PATH (%s); is the NVIDIA driver installed? Set its full "
                           "path: hpc_gres_verify_nvidia_smi in the inventory, nvidia_smi= in a module's arguments"
                           % (command, os.environ.get("PATH", "")))
    return path


def collect(run, sysfs_root="/", nvidia_smi_path="nvidia-smi", which=None, parsed=None, topology_source="auto",
            processes=True):
    """Gather ``hpc_gres_hw``. Returns ``(facts, warnings, commands)``; raises CollectError.

    Every output is parsed once; ``parsed`` (a dict) receives the parsed tables for callers that need more than
    the facts (``mig.apply`` reads the ``lgi`` and ``lci`` rows). ``topology_source``: where the CPU topology
    comes from (cpu_topology.SOURCES; ``auto`` asks hwloc first). ``processes=False`` leaves out the GPUs'
    processes (one nvidia-smi run fewer; each GPU's ``processes`` is then null, unknown).
    """
    parsed = {} if parsed is None else parsed
    smi = resolve_nvidia_smi(nvidia_smi_path, which)
    commands = []
    warnings = []

    def call(argv):
        commands.append(argv)
        return run(argv)

    def fail(argv, rc, out, err):
        text = (out or "").strip() or (err or "").strip() or "(no output)"
        raise CollectError("%s failed with exit code %d: %s" % (" ".join(argv), rc, text.splitlines()[0]),
                           rc=rc, stdout=out, stderr=err, commands=commands)

    argv = gpu_facts.query_gpu_command(smi)
    rc, query_out, err = call(argv)
    no_devices = "No devices were found" in (query_out or "") + (err or "")
    listed = rc in RC_OUTPUT_READ and query_out.strip()
    if rc != 0 and not listed and not (rc == RC_NO_DEVICES and no_devices):
        fail(argv, rc, query_out, err)
    for bus in nvidia_smi.inforom_corrupted_gpus("%s\n%s" % (query_out, err or "")):
        warnings.append("nvidia-smi: infoROM is corrupted at gpu %s (exit code %d): the GPU runs, but the ECC counts "
                        "and retired pages it keeps there are not to be trusted" % (bus, rc))
    query_text = query_out + ("\n" + err if nvidia_smi.LOST_GPU_RE.search(err or "") else "")
    try:
        rows = parsed["query"] = nvidia_smi.parse_query_gpu(query_text)
        mig_on = gpu_facts.mig_enabled(rows)
    except ValueError as exc:
        raise CollectError("cannot read %s: %s" % (" ".join(argv), exc), stdout=query_out, commands=commands)

    topo_text = apps_text = None
    outputs = {}
    if rows:
        argv = gpu_facts.topo_command(smi)
        rc, out, err = call(argv)
        if rc == 0 or (rc in RC_OUTPUT_READ and "GPU0" in out):
            topo_text = out
        else:
            warnings.append("%s failed (exit code %d): %s; CPU affinity and Slurm cores are unknown"
                            % (" ".join(argv), rc, (out or err or "").strip()[:300]))
        if processes:
            argv = gpu_facts.query_apps_command(smi)
            rc, out, err = call(argv)
            if rc == 0 or rc in RC_OUTPUT_READ:
                apps_text = out
            else:
                warnings.append("%s failed (exit code %d): %s; processes are unknown"
                                % (" ".join(argv), rc, (out or err or "").strip()[:300]))
        if mig_on:
            for key, argv in gpu_facts.mig_commands(smi).items():
                rc, out, err = call(argv)
                none_found = key in ("lgi", "lci") and "No " in out + err and "found" in out + err
                if rc not in (0, RC_INFOROM) and not none_found:
                    fail(argv, rc, out, err)
                outputs[key] = out + err if rc != 0 else out

    try:
        topology = cpu_topology.read_cpu_topology(sysfs_root, source=topology_source, run=run,
                                                  which=which or shutil.which)
    except ValueError as exc:
        warnings.append("CPU topology: %s; Slurm cores are unknown" % exc)
        topology = None

    try:
        gpu_minors = {}
        for row in rows:
            minor = gpu_facts.read_gpu_minor(sysfs_root, row["pci.bus_id"])
            if minor is not None:
                gpu_minors[row["pci.bus_id"]] = minor
        pids = set()
        if apps_text is not None:
            parsed["apps"] = nvidia_smi.parse_query_apps(apps_text)
            pids = {a["pid"] for a in parsed["apps"] if a.get("pid") is not None}
        processes = {pid: gpu_facts.read_process(sysfs_root, pid) for pid in pids}
        mig_minors_text = None
        if mig_on:
            path = os.path.join(sysfs_root, "proc", "driver", "nvidia-caps", "mig-minors")
            mig_minors_text = gpu_facts.read_text(path)
            if mig_minors_text is None:
                warnings.append("MIG is enabled but %s is not readable; MIG cap minors are unknown" % path)
        facts, more = gpu_facts.build_facts(
            query_text, topo_text=topo_text, apps_text=apps_text, topology=topology, gpu_minors=gpu_minors,
            list_text=outputs.get("list"), lgi_text=outputs.get("lgi"), lci_text=outputs.get("lci"),
            mig_minors_text=mig_minors_text, processes=processes, parsed=parsed)
    except ValueError as exc:
        raise CollectError("cannot read nvidia-smi output: %s" % exc, commands=commands)
    warnings.extend(more)
    for lost in facts.get("lost_gpus") or []:
        warnings.append("nvidia-smi cannot reach a GPU: %s" % lost["message"])
    return facts, warnings, commands
