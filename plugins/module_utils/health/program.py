"""What a GPU node needs to run the health check and the boot order: the module_utils files they import, their
launchers, the NHC check (the boot order's units: ``boot_units``).

The deploy copies :data:`PROGRAM_FILES` (paths relative to the collection root) to
``<lib_dir>/ansible_collections/hpc/slurm_gres/<path>`` and writes :func:`launcher_text` as each program
(``hpc-gres-health``, ``hpc-gres-boot``). Only the Python standard library is needed on the node: the launcher runs Python with
``-I -S`` (no environment, no user or site packages).
"""
import hashlib
import json
import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import boot_units

# health/cli.py and health/boot_cli.py and everything they import, with the __init__.py of each package on the way
# (a unit test keeps this equal to the import graph).
PROGRAM_FILES = (
    "plugins/module_utils/__init__.py",
    "plugins/module_utils/common/__init__.py",
    "plugins/module_utils/common/errors.py",
    "plugins/module_utils/common/hostlist.py",
    "plugins/module_utils/common/names.py",
    "plugins/module_utils/common/ranges.py",
    "plugins/module_utils/health/__init__.py",
    "plugins/module_utils/health/boot.py",
    "plugins/module_utils/health/boot_cli.py",
    "plugins/module_utils/health/check.py",
    "plugins/module_utils/health/cli.py",
    "plugins/module_utils/health/gres_match.py",
    "plugins/module_utils/health/inputs.py",
    "plugins/module_utils/health/results.py",
    "plugins/module_utils/health/slurm_state.py",
    "plugins/module_utils/mig/__init__.py",
    "plugins/module_utils/mig/apply.py",
    "plugins/module_utils/mig/gres_type.py",
    "plugins/module_utils/mig/plan.py",
    "plugins/module_utils/mig/profiles.py",
    "plugins/module_utils/mig/render.py",
    "plugins/module_utils/node/__init__.py",
    "plugins/module_utils/node/cpu_topology.py",
    "plugins/module_utils/node/cpusets.py",
    "plugins/module_utils/node/hwloc_query.py",
    "plugins/module_utils/node/hwloc_tree.py",
    "plugins/module_utils/node/sysfs_topology.py",
    "plugins/module_utils/node/verify.py",
    "plugins/module_utils/nvidia/__init__.py",
    "plugins/module_utils/nvidia/collect.py",
    "plugins/module_utils/nvidia/facts.py",
    "plugins/module_utils/nvidia/gpu_types.py",
    "plugins/module_utils/nvidia/nvlink5_decode.py",
    "plugins/module_utils/nvidia/readiness.py",
    "plugins/module_utils/nvidia/smi.py",
    "plugins/module_utils/nvidia/smi_q.py",
    "plugins/module_utils/nvidia/xid_catalog.py",
    "plugins/module_utils/slurm/__init__.py",
    "plugins/module_utils/slurm/conf.py",
    "plugins/module_utils/slurm/hostlists.py",
    "plugins/module_utils/slurm/scontrol.py",
    "plugins/module_utils/slurm/slurmd_gres.py",
    "plugins/module_utils/slurm/versions.py",
)
COLLECTION_DIR = "ansible_collections/hpc/slurm_gres"
PROGRAM_NAME = "hpc-gres-health"
# The programs the library holds: name -> (module with main(), what it is, for the launcher's comment).
PROGRAMS = {
    PROGRAM_NAME: ("health.cli", "GPU health check"),
    "hpc-gres-boot": ("health.boot_cli", "GPU boot order of slurmd"),
}
NHC_CHECK_PATH = "/etc/nhc/scripts/hpc_gres.nhc"
NHC_CHECK = "check_hpc_gres"
NHC_CONF_LINE = "* || %s" % NHC_CHECK


def installed_path(lib_dir, relpath):
    """Where one of :data:`PROGRAM_FILES` goes on the node."""
    return "%s/%s/%s" % (lib_dir.rstrip("/"), COLLECTION_DIR, relpath)


def launcher_text(lib_dir, python="/usr/bin/python3", args=(), program=PROGRAM_NAME):
    """The program file: runs ``main`` of the ``program``'s module (:data:`PROGRAMS`) from ``lib_dir`` with ``args``
    before the command line's own (a HealthCheckProgram takes no arguments, so its launcher carries ``--slurm`` and
    the node's options; a mode given on the command line wins over a built-in one)."""
    module, what = PROGRAMS[program]
    return "\n".join([
        "#!%s -IS" % python,
        "# %s: %s of the hpc.slurm_gres collection (written by the deploy; do not edit)." % (program, what),
        "# Library: %s/%s/plugins/module_utils (Python standard library only)." % (
            lib_dir.rstrip("/"), COLLECTION_DIR),
        "import sys",
        "",
        "sys.path.insert(0, %s)" % json.dumps(lib_dir),
        "from ansible_collections.hpc.slurm_gres.plugins.module_utils.%s import main  # noqa: E402" % module,
        "",
        "sys.exit(main(%s + sys.argv[1:]))" % json.dumps(list(args)),
        "",
    ])


def nhc_check_text(program_path):
    """``(check file text, nhc.conf line)`` for LBNL NHC (file :data:`NHC_CHECK_PATH`).

    NHC sources every ``/etc/nhc/scripts/*.nhc`` and runs the checks nhc.conf names per host mask
    (``* || check_hpc_gres``). On failure the check calls NHC's ``die 1 "<message>"``, and NHC drains the node
    with ``NHC: <message>`` (helpers/node-mark-offline) and resumes it itself once its checks pass (only
    ``NHC:`` reasons, node-mark-online). The program's own internal error (exit status 2) is logged, not a
    failure: a bug in the check does not take nodes out.
    """
    text = "\n".join([
        "# %s: GPU health check of the hpc.slurm_gres collection for LBNL NHC (written by the deploy; do not edit)."
        % NHC_CHECK_PATH.rsplit("/", 1)[-1],
        "# nhc.conf:  %s   (arguments after the name go to %s, e.g. --timeout 5)" % (NHC_CONF_LINE, PROGRAM_NAME),
        "",
        'HPC_GRES_HEALTH="${HPC_GRES_HEALTH:-%s}"' % program_path,
        "",
        "function %s() {" % NHC_CHECK,
        "    local OUTPUT RC",
        '    OUTPUT=$("$HPC_GRES_HEALTH" --nhc "$@" 2>&1)',
        "    RC=$?",
        "    if [[ $RC -eq 0 ]]; then",
        "        return 0",
        "    elif [[ $RC -eq 1 ]]; then",
        '        die 1 "$FUNCNAME:  ${OUTPUT:-$HPC_GRES_HEALTH found the node not healthy}"',
        "        return 1",
        "    fi",
        '    log "$FUNCNAME:  $HPC_GRES_HEALTH did not complete (exit status $RC), node left as it is:  $OUTPUT"',
        "    return 0",
        "}",
        "",
    ])
    return text, NHC_CONF_LINE


LIBRARY_DIR = "/usr/local/lib/hpc-gres"


def library_digest(files):
    """sha256 over ``{relative path: text}`` (sorted paths, each path and text NUL-terminated): what the deploy
    compares between the collection's library and the one installed on a node."""
    digest = hashlib.sha256()
    for path in sorted(files):
        digest.update(path.encode("utf-8") + b"\0")
        text = files[path]
        digest.update((text if isinstance(text, bytes) else text.encode("utf-8")) + b"\0")
    return digest.hexdigest()


def installed_library(lib_dir):
    """``{relative path: bytes}`` of :data:`PROGRAM_FILES` installed under ``lib_dir``; a missing file is left out."""
    out = {}
    for rel in PROGRAM_FILES:
        try:
            with open(installed_path(lib_dir, rel), "rb") as handle:
                out[rel] = handle.read()
        except (IOError, OSError):
            continue
    return out


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def health_plan(spec):
    """What a node needs installed for the health check and the boot order, from the deploy's ``spec``
    (``library_dir``, ``library_sha256``, ``program`` (None: the health check is off, the library serves the boot
    order alone), ``args``, ``python``, ``nhc``, ``boot``): ``{"library": bool, "launcher": text or None,
    "nhc": text or None, "boot": boot_units.boot_plan, "needed": bool}`` (a text only where the installed file
    differs)."""
    lib_dir = spec.get("library_dir") or LIBRARY_DIR
    python = spec.get("python") or "/usr/bin/python3"
    installed = installed_library(lib_dir)
    library = len(installed) != len(PROGRAM_FILES) or library_digest(installed) != spec["library_sha256"]
    launcher = nhc = None
    if spec.get("program"):
        launcher = launcher_text(lib_dir, python, spec.get("args") or ())
        if _read(spec["program"]) == launcher and os.access(spec["program"], os.X_OK):
            launcher = None
        if spec.get("nhc"):
            nhc = nhc_check_text(spec["program"])[0]
            if _read(NHC_CHECK_PATH) == nhc:
                nhc = None
    boot = {"dirs": [], "reload": False, "needed": False}
    if spec.get("boot"):
        boot = boot_units.boot_plan(spec["boot"], lambda args: launcher_text(lib_dir, python, args, "hpc-gres-boot"))
    return {"library": library, "launcher": launcher, "nhc": nhc, "boot": boot,
            "needed": bool(library or launcher is not None or nhc is not None or boot["needed"])}
