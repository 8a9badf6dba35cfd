"""The emulated Slurm and systemd parts of the deploy benchmark (bench/deploy_bench.py).

* ``scontrol`` on the controller: answers ``show node`` with each node IDLE, the Gres the bench's slurm.conf
  declares and, as ``SlurmdStartTime``, the time the fake ``systemctl`` last restarted that node's slurmd;
  ``ping`` and ``reconfigure`` succeed. Every call is logged (one line, the arguments) to ``scontrol.log``.
* ``systemctl`` on the nodes (first on PATH of the playbook run, so ``ansible.builtin.systemd_service`` and the
  readiness checks find it): each node's slurmd is its own unit ``slurmd@<node>`` (the bench sets
  ``hpc_gres_slurmd_service`` per host), answered as loaded and active; ``restart`` records the restart time for
  that node (``started/<node>``, one second later than the last one at least, so a restart always shows as a new
  registration) and logs it to ``restarts.log``. Any other unit (``nvidia-fabricmanager`` for the readiness check,
  say) is answered the way systemd answers for a unit that is not installed. ``daemon-reload`` succeeds.
* ``nvidia-smi`` per node: the emulator with the node's profile, each call logged to ``$BENCH_NVSMI_LOG`` when set.

Shell scripts where they run once per node and module run (a shell starts in about 1 ms; Python in 20-50 ms).
"""
import json
import os
import stat
import sys

NVIDIA_SMI_EMULATOR = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests",
                                   "emulator", "nvidia_smi.py")
SEED_START_TIME = "2026-01-01T00:00:10"

FAKE_SCONTROL = """#!%(python)s
# Benchmark stand-in for scontrol on the controller (bench/deploy_fakes.py).
import json, os, sys
sys.path.insert(0, %(collections)r)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.hostlist import expand_hostlist
HERE = %(here)r
with open(os.path.join(HERE, "scontrol.log"), "a") as log:
    log.write(" ".join(sys.argv[1:]) + "\\n")
GRES = json.load(open(os.path.join(HERE, "gres.json")))
args = sys.argv[1:]
if args[:1] == ["-o"]:
    args = args[1:]


def started(name):
    try:
        with open(os.path.join(HERE, "started", name)) as handle:
            return handle.read().strip() or %(seed)r
    except OSError:
        return %(seed)r


if args[:2] == ["show", "node"] and len(args) == 3:
    rc = 0
    for name in expand_hostlist(args[2]):
        if name not in GRES:
            print("Node %%s not found" %% name)
            rc = 1
            continue
        print("NodeName=%%s Arch=x86_64 CoresPerSocket=32\\n   CPUAlloc=0 CPUEfctv=128 CPUTot=128 CPULoad=0.00\\n"
              "   Gres=%%s\\n   NodeAddr=%%s NodeHostName=%%s Version=22.05.8\\n   RealMemory=1000 Sockets=2 Boards=1\\n"
              "   State=IDLE ThreadsPerCore=2 TmpDisk=0 Weight=1 Owner=N/A MCS_label=N/A\\n   Partitions=main\\n"
              "   BootTime=2026-01-01T00:00:00 SlurmdStartTime=%%s"
              %% (name, GRES[name], name, name, started(name)))
    sys.exit(rc)
elif args[:1] == ["ping"]:
    print("Slurmctld(primary) at ctl01 is UP")
elif args[:1] == ["reconfigure"]:
    pass
else:
    sys.stderr.write("bench scontrol: unsupported %%s\\n" %% " ".join(args))
    sys.exit(2)
"""

# systemctl [--options] VERB [UNIT] [more options]: what ansible.builtin.systemd_service runs (show UNIT, then
# restart UNIT; daemon-reload) and what the readiness checks run (show nvidia-fabricmanager -p ..., status ...).
FAKE_SYSTEMCTL = """#!/bin/sh
# Benchmark stand-in for systemctl on the emulated nodes (bench/deploy_fakes.py).
here=%(here)s
while [ $# -gt 0 ]; do case "$1" in --*) shift ;; *) break ;; esac; done
verb=$1
unit=${2%%.service}
case "$unit" in
  slurmd@*) node=${unit#slurmd@} ;;
  *) node= ;;
esac
case "$verb" in
  daemon-reload|daemon-reexec) exit 0 ;;
  show)
    if [ -n "$node" ]; then
      printf 'Id=%%s.service\\nLoadState=loaded\\nActiveState=active\\nSubState=running\\nUnitFileState=enabled\\n' "$unit"
      printf 'ExecMainStartTimestamp=%%s\\n' "$(cat "$here/started/$node" 2>/dev/null || echo %(seed)s)"
    else
      printf 'Id=%%s.service\\nLoadState=not-found\\nActiveState=inactive\\nSubState=dead\\nUnitFileState=\\n' "$unit"
    fi
    exit 0 ;;
  is-active)
    if [ -n "$node" ]; then echo active; exit 0; fi
    echo inactive; exit 3 ;;
  is-enabled)
    if [ -n "$node" ]; then echo enabled; exit 0; fi
    echo "Failed to get unit file state for $unit.service: No such file or directory" >&2; exit 1 ;;
  status)
    if [ -n "$node" ]; then printf '* %%s.service - Slurm node daemon\\n     Active: active (running)\\n' "$unit"; exit 0; fi
    echo "Unit $unit.service could not be found." >&2; exit 4 ;;
  restart|start|try-restart|reload-or-restart)
    if [ -z "$node" ]; then echo "Failed to $verb $unit.service: Unit $unit.service not found." >&2; exit 5; fi
    now=$(date +%%Y-%%m-%%dT%%H:%%M:%%S)
    if [ "$(cat "$here/started/$node" 2>/dev/null)" = "$now" ]; then sleep 1; now=$(date +%%Y-%%m-%%dT%%H:%%M:%%S); fi
    echo "$now" > "$here/started/$node.tmp" && mv "$here/started/$node.tmp" "$here/started/$node"
    echo "$node $verb $now" >> "$here/restarts.log"
    exit 0 ;;
  stop|reload) exit 0 ;;
  *) echo "bench systemctl: unsupported $*" >&2; exit 1 ;;
esac
"""

NVIDIA_SMI_WRAPPER = """#!/bin/sh
# The emulated nvidia-smi with this node's profile (bench/deploy_fakes.py); each call logged when asked. It runs
# the bench's own Python: tests/emulator/nvidia-smi takes python3 from PATH, which can be a version manager's shim
# (pyenv's costs some 25 processes and 0.06 s of CPU per call), a cost no node pays.
[ -z "$BENCH_NVSMI_LOG" ] || echo "%(node)s $*" >> "$BENCH_NVSMI_LOG"
NVSMI_EMU_PROFILE=%(profile)s exec %(python)s %(emulator)s "$@"
"""


def _write(path, text, executable):
    with open(path, "w") as handle:
        handle.write(text)
    if executable:
        os.chmod(path, os.stat(path).st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)


def write_nvidia_smi(node):
    """The node's own nvidia-smi (each inventory host needs its own profile); returns its path."""
    path = os.path.join(node.base, "nvidia-smi")
    _write(path, NVIDIA_SMI_WRAPPER % {"node": node.name, "profile": node.profile_path,
                                       "python": sys.executable, "emulator": NVIDIA_SMI_EMULATOR}, True)
    return path


def write_controller(ctl, collections, gres):
    """The controller's scontrol (returns its path) and the Gres it answers ({node: "gpu:a100:8(S:0-1)"})."""
    os.makedirs(os.path.join(ctl, "started"), exist_ok=True)
    with open(os.path.join(ctl, "gres.json"), "w") as handle:
        json.dump(gres, handle)
    path = os.path.join(ctl, "scontrol")
    _write(path, FAKE_SCONTROL % {"python": sys.executable, "collections": collections, "here": ctl,
                                  "seed": SEED_START_TIME}, True)
    return path


def write_systemctl(fakebin, ctl):
    """systemctl in ``fakebin`` (put it first on PATH), keeping its restart times under ``ctl``."""
    os.makedirs(fakebin, exist_ok=True)
    os.makedirs(os.path.join(ctl, "started"), exist_ok=True)
    _write(os.path.join(fakebin, "systemctl"), FAKE_SYSTEMCTL % {"here": ctl, "seed": SEED_START_TIME}, True)
