"""A real, private Slurm on loopback for integration tests: munged, slurmctld and one slurmd with GPU GRES.

Everything lives in a temporary directory (its own munge socket, ports, state, logs, device nodes), so it does
not disturb a Slurm already on the machine. Needs root (mknod, the munge user), the Debian slurmd/slurmctld/
slurm-client/munge packages and a /etc/munge/munge.key. Under CI=true a missing piece fails the test.
"""

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import pytest

NODE = "itest01"
SHAPE = (2, 4, 2)  # sockets, cores per socket, threads per core (HWLOC_SYNTHETIC)

# A private instance's own daemon settings: ports, paths, munge socket (rendered_slurm.py uses them too).
DAEMON_CONF = """\
SlurmctldHost={host}(127.0.0.1)
AuthInfo={auth}
SlurmUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmdPidFile={dir}/slurmd.pid
SlurmctldLogFile={dir}/slurmctld.log
SlurmdLogFile={dir}/slurmd.log
ProctrackType=proctrack/linuxproc
"""

SLURM_CONF = """\
ClusterName=itest
AuthType=auth/munge
CredType=cred/munge
""" + DAEMON_CONF + """\
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=1
SlurmdTimeout={slurmd_timeout}
GresTypes=gpu
NodeName={node} NodeAddr=127.0.0.1 Sockets=2 CoresPerSocket=4 ThreadsPerCore=2 RealMemory=1000 Gres={gres}
PartitionName=main Nodes=ALL Default=YES MaxTime=INFINITE State=UP
"""


def require(reason_if_missing):
    """Skip, or fail under CI=true, when the loopback Slurm cannot run here."""
    missing = [tool for tool in ("slurmctld", "slurmd", "scontrol", "munged") if not shutil.which(tool)
               and not os.path.exists("/usr/sbin/" + tool)]
    problems = []
    if missing:
        problems.append("missing " + ", ".join(missing))
    if os.geteuid() != 0:
        problems.append("not root (mknod, munge user)")
    if not os.path.exists("/etc/munge/munge.key"):
        problems.append("no /etc/munge/munge.key")
    if not problems:
        return
    reason = "%s: %s" % (reason_if_missing, "; ".join(problems))
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("CI=true and " + reason)
    pytest.skip(reason)


def _processes_with_argument(argument):
    """Pids of this machine's processes whose command line has ``argument`` as one of its words."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open("/proc/%s/cmdline" % entry, "rb") as handle:
                words = handle.read().split(b"\0")
        except OSError:
            continue
        if argument.encode() in words:
            pids.append(int(entry))
    return pids


def _free_port():
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _sbin(tool):
    return shutil.which(tool) or "/usr/sbin/" + tool


class LoopbackSlurm(object):
    """slurmctld + one slurmd named NODE; ``set_gres`` rewrites the node's GPUs in slurm.conf and gres.conf."""

    def __init__(self, directory):
        self.dir = directory
        self.conf = os.path.join(directory, "slurm.conf")
        self.ports = (_free_port(), _free_port())
        self.env = dict(os.environ, SLURM_CONF=self.conf, LC_ALL="C")
        self.gres_declared = None
        self.slurmd_timeout = 300
        for sub in ("state", "spool", "dev"):
            os.makedirs(os.path.join(directory, sub), exist_ok=True)
        for minor in range(8):
            subprocess.run(["mknod", os.path.join(directory, "dev", "nvidia%d" % minor), "c", "195", str(minor)],
                           check=True)

    # --- configuration ------------------------------------------------------------------------------
    def write_slurm_conf(self, gres, slurmd_timeout=300):
        self.gres_declared = gres
        self.slurmd_timeout = slurmd_timeout
        with open(self.conf, "w") as handle:
            handle.write(SLURM_CONF.format(host=socket.gethostname(), dir=self.dir, ctld_port=self.ports[0],
                                           slurmd_port=self.ports[1], node=NODE, gres=gres,
                                           slurmd_timeout=slurmd_timeout, auth="socket=%s/munge/sock" % self.dir))

    def write_gres_conf(self, a100):
        """``a100`` GPUs of type a100 on /dev/nvidia0.. (two GPUs of type h100 follow them)."""
        with open(os.path.join(self.dir, "gres.conf"), "w") as handle:
            handle.write("NodeName=%s Name=gpu Type=a100 File=%s/dev/nvidia[0-%d] Cores=0-3\n"
                         % (NODE, self.dir, a100 - 1))
            handle.write("NodeName=%s Name=gpu Type=h100 File=%s/dev/nvidia[%d-%d] Cores=4-7\n"
                         % (NODE, self.dir, a100, a100 + 1))

    # --- daemons ------------------------------------------------------------------------------------
    def start_munge(self):
        munge_dir = os.path.join(self.dir, "munge")
        os.makedirs(munge_dir, exist_ok=True)
        shutil.chown(munge_dir, "munge", "munge")
        os.chmod(self.dir, 0o755)
        os.chmod(munge_dir, 0o711)
        subprocess.run(["runuser", "-u", "munge", "--", _sbin("munged"), "--socket=%s/sock" % munge_dir,
                        "--pid-file=%s/pid" % munge_dir, "--log-file=%s/log" % munge_dir,
                        "--seed-file=%s/seed" % munge_dir], check=True)

    def start_slurmctld(self):
        subprocess.run([_sbin("slurmctld"), "-f", self.conf], check=True, env=self.env)
        self.wait(lambda: self.scontrol("ping").returncode == 0 and " is UP" in self.scontrol("ping").stdout,
                  "slurmctld to answer ping")

    def start_slurmd(self):
        env = dict(self.env, HWLOC_SYNTHETIC="package:%d core:%d pu:%d" % SHAPE)
        subprocess.run([_sbin("slurmd"), "-f", self.conf, "-N", NODE], check=True, env=env)

    def restart_slurmctld(self):
        self._stop("slurmctld.pid")
        self.start_slurmctld()

    def restart_slurmd(self):
        self._stop("slurmd.pid")
        self.start_slurmd()

    def stop_slurmd(self):
        self._stop("slurmd.pid")

    def _stop(self, pidfile):
        path = os.path.join(self.dir, pidfile)
        if not os.path.exists(path):
            return
        with open(path) as handle:
            pid = int(handle.read().strip() or 0)
        if pid <= 0:
            return
        try:
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            time.sleep(0.1)
        # a daemon that outlives SIGTERM must not outlive the test (seen: a slurmd of test_health_program.py per run,
        # still running long after it)
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def stop(self):
        self._stop("slurmd.pid")
        self._stop("slurmctld.pid")
        self._stop(os.path.join("munge", "pid"))
        # a daemon that no pid file names any more (seen: one slurmd of test_health_program.py per run, alive after
        # the test with its directory deleted): every process started with this instance's slurm.conf
        for pid in _processes_with_argument(self.conf):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    # --- queries ------------------------------------------------------------------------------------
    def scontrol(self, *args):
        return subprocess.run(["scontrol"] + list(args), env=self.env, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, check=False)

    def node_line(self):
        return self.scontrol("-o", "show", "node", NODE).stdout.strip()

    def wait(self, predicate, what, timeout=40):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if predicate():
                return
            time.sleep(0.3)
        raise AssertionError("timed out waiting for %s; node: %s; slurmctld log tail:\n%s"
                             % (what, self.node_line(), self.log_tail()))

    def wait_state(self, *needles, timeout=40):
        self.wait(lambda: all(n in self.node_line() for n in needles), "node line with %s" % (needles,), timeout)

    def log_tail(self, name="slurmctld.log", lines=15):
        path = os.path.join(self.dir, name)
        if not os.path.exists(path):
            return "(no %s)" % name
        with open(path) as handle:
            return "".join(handle.readlines()[-lines:])


@contextlib.contextmanager
def running(gres="gpu:a100:2,gpu:h100:2", a100=2, extra_conf="", *needles):
    """A started instance (slurm.conf with ``gres`` and ``extra_conf`` lines, gres.conf with ``a100`` GPUs), its
    node registered with ``needles`` in its line; everything stopped and removed at the end."""
    require("a loopback Slurm cannot run")
    with tempfile.TemporaryDirectory(prefix="slurm-loopback-") as directory:
        slurm = LoopbackSlurm(directory)
        try:
            slurm.write_slurm_conf(gres)
            slurm.write_gres_conf(a100=a100)
            if extra_conf:
                with open(slurm.conf, "a") as handle:
                    handle.write(extra_conf)
            slurm.start_munge()
            slurm.start_slurmctld()
            slurm.start_slurmd()
            slurm.wait_state("State=IDLE ", *needles)
            yield slurm
        finally:
            slurm.stop()
