"""What the node health check reads on a node, each input with an override so recorded outputs replay.

Plain Python 3 standard library (the program runs on GPU nodes from ``slurmd``, without Ansible). Every external
command runs through :class:`Runner`: a timeout per command and one budget for the whole run, each command in its
own process group (session), killed with SIGKILL to the group when it does not answer in time, and reported, so a
hung ``nvidia-smi`` never hangs slurmd's health check. Whatever cannot be read is None with the reason; the
readiness rules then say "does not apply" for the checks that need it.

Inputs (see :func:`gather`):

- ``nvidia-smi -q`` once: parsed (``smi_q.parse_smi_q``) when it answers, its rc/stdout/stderr classified
  (``readiness.classify_smi_failure``) when it fails, a ``timeout`` failure when it was killed;
- ``<root>/proc/driver/nvidia/version``;
- the NVIDIA PCI functions from ``<root>/sys/bus/pci/devices/*/{vendor,class,device,revision,config}``, in the
  shape of ``readiness.parse_lspci`` (or recorded ``lspci`` text instead);
- the kernel log since boot: ``journalctl -k -b --no-pager``, ``dmesg``, or a file;
- the fabric manager: ``systemctl show nvidia-fabricmanager`` (installed and active in one call) and, when it is
  not running, ``systemctl status`` for the journal lines that say why; or recorded text;
- the acknowledgement file, and the installed slurm.conf and gres.conf (paths only; gres_match reads them).
"""
import glob
import os
import re
import signal
import subprocess
import time

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import readiness
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import normalize_bus_id
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi_q import mark_inforom, parse_smi_q

# nvidia-smi -q on an 8-GPU node without persistence mode takes a few seconds (the driver initialises each GPU).
DEFAULT_TIMEOUT = 10.0
# slurmd kills its HealthCheckProgram after 60 s (run_script_health_check: max_wait = 60 * 1000 up to 25.11;
# HealthCheckTimeout on Slurm's master branch). The checks' commands share DEFAULT_BUDGET; reading and changing
# the node's Slurm state gets SLURM_BUDGET more, so a node whose checks used all their time is still drained.
DEFAULT_BUDGET = 30.0
SLURM_BUDGET = 20.0
# slurmd runs HealthCheckProgram with an empty environment (SLURMD_NODENAME only), so PATH is unset there.
SEARCH_PATH = ("/usr/local/sbin", "/usr/local/bin", "/usr/sbin", "/usr/bin", "/sbin", "/bin")
DEFAULT_ACK_FILE = "/etc/hpc-gres/xid-acknowledgements"
# Where slurmd's slurm.conf is: the usual file, Debian's old one, and configless mode's copies (slurmd writes
# /run/slurm/conf for client commands, its cache under the default SlurmdSpoolDir).
SLURM_CONF_CANDIDATES = ("/etc/slurm/slurm.conf", "/etc/slurm-llnl/slurm.conf", "/run/slurm/conf/slurm.conf",
                         "/var/spool/slurmd/conf-cache/slurm.conf")
FM_UNIT = "nvidia-fabricmanager"
FM_UNIT_DIRS = ("etc/systemd/system", "usr/lib/systemd/system", "lib/systemd/system", "run/systemd/system")
KERNEL_LOG_SOURCES = ("auto", "journal", "dmesg", "none")
FABRIC_MANAGER_SOURCES = ("systemd", "none")
# A process SIGKILL cannot end within this (uninterruptible sleep in the driver) is left behind, and said so.
_REAP_S = 2.0


# ----------------------------------------------------------------------------------------------------
# commands


def _kill_group(proc):
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            proc.kill()
        except OSError:
            pass


def run_command(argv, timeout, env=None):
    """Run ``argv`` in its own session with ``timeout`` seconds; never raises for the command's sake.

    Returns ``{"argv", "rc", "stdout", "stderr", "seconds", "timed_out", "stuck", "error"}``: ``rc`` None when it did
    not finish (``timed_out``: killed with SIGKILL to its process group; ``stuck``: still there after the kill,
    as a process in uninterruptible sleep inside a driver is) or did not start (``error``: why).
    """
    start = time.monotonic()
    result = {"argv": list(argv), "rc": None, "stdout": "", "stderr": "", "seconds": 0.0, "timed_out": False,
              "stuck": False, "error": None}
    try:
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=env, start_new_session=True)
    except OSError as exc:
        result["error"] = "%s: %s" % (argv[0], exc.strerror or exc)
        result["seconds"] = time.monotonic() - start
        return result
    try:
        out, err = proc.communicate(timeout=max(timeout, 0.01))
        result["rc"] = proc.returncode
    except subprocess.TimeoutExpired:
        result["timed_out"] = True
        _kill_group(proc)
        try:
            out, err = proc.communicate(timeout=_REAP_S)
        except subprocess.TimeoutExpired:
            # a child outside the group holds the pipes, or the process cannot die: stop reading, leave it
            out, err = b"", b""
            for pipe in (proc.stdout, proc.stderr):
                try:
                    pipe.close()
                except OSError:
                    pass
            result["stuck"] = proc.poll() is None
    result["stdout"] = (out or b"").decode("utf-8", "replace")
    result["stderr"] = (err or b"").decode("utf-8", "replace")
    result["seconds"] = time.monotonic() - start
    return result


def describe_failure(result):
    """One line for a command that did not answer: ``nvidia-smi did not answer within 10 s (killed)``."""
    name = os.path.basename(result["argv"][0]) if result["argv"] else "command"
    if result["error"]:
        return result["error"]
    if result["timed_out"]:
        return "%s did not answer within %s s (killed%s)" % (
            name, seconds_text(result.get("limit")), "; still in the process table after SIGKILL, stuck in the kernel"
            if result["stuck"] else "")
    return "%s exited with status %s" % (name, result["rc"])


def seconds_text(value):
    if value is None:
        return "?"
    return ("%.1f" % value).rstrip("0").rstrip(".")


class Runner(object):
    """Runs the external commands of one health check: per-command ``timeout``, a ``budget`` for them all, a
    PATH that also holds the usual system directories, ``LC_ALL=C``. ``runs`` records every command."""

    def __init__(self, timeout=DEFAULT_TIMEOUT, budget=DEFAULT_BUDGET, env=None, clock=time.monotonic):
        self.timeout = float(timeout)
        self.clock = clock
        self.deadline = clock() + float(budget)
        base = dict(os.environ if env is None else env)
        parts = [p for p in base.get("PATH", "").split(os.pathsep) if p]
        base["PATH"] = os.pathsep.join(parts + [p for p in SEARCH_PATH if p not in parts])
        base["LC_ALL"] = "C"
        base["LANG"] = "C"
        self.env = base
        self.runs = []

    def which(self, command):
        """An absolute path for a command name or path, or None."""
        if os.sep in command:
            return command if os.path.isfile(command) and os.access(command, os.X_OK) else None
        for directory in self.env["PATH"].split(os.pathsep):
            path = os.path.join(directory, command)
            if os.path.isfile(path) and os.access(path, os.X_OK):
                return path
        return None

    def left(self):
        return self.deadline - self.clock()

    def extend(self, seconds):
        """Allow ``seconds`` more from now (the Slurm calls after the checks)."""
        self.deadline = max(self.deadline, self.clock() + float(seconds))

    def run(self, argv, timeout=None):
        limit = min(self.timeout if timeout is None else float(timeout), self.left())
        if limit <= 0:
            result = {"argv": list(argv), "rc": None, "stdout": "", "stderr": "", "seconds": 0.0, "timed_out": False,
                      "stuck": False, "error": "%s not run: the health check's time budget is spent"
                      % os.path.basename(argv[0])}
        else:
            result = run_command(argv, limit, self.env)
        result["limit"] = limit
        self.runs.append(result)
        return result

    def collect_run(self, skip=None):
        """A ``run(argv) -> (rc, stdout, stderr)`` for ``nvidia.collect``. ``skip(argv)`` True: the call is not
        made and answers rc 1 (collect turns that into a warning). A command that did not answer raises
        :class:`CommandFailed`, so no further command waits on a hung tool."""

        def run(argv):
            if skip is not None and skip(argv):
                return 1, "", "not run by the health check"
            result = self.run(argv)
            if result["rc"] is None:
                raise CommandFailed(result)
            return result["rc"], result["stdout"], result["stderr"]

        return run


class CommandFailed(Exception):
    def __init__(self, result):
        super(CommandFailed, self).__init__(describe_failure(result))
        self.result = result


# ----------------------------------------------------------------------------------------------------
# files


def under(root, path):
    """``path`` (absolute, as on the node) inside ``root``."""
    if root in (None, "", "/"):
        return path
    return os.path.join(root, path.lstrip("/"))


def read_text(path):
    try:
        with open(path, encoding="utf-8", errors="replace") as handle:
            return handle.read()
    except (IOError, OSError):
        return None


# ----------------------------------------------------------------------------------------------------
# nvidia-smi -q


def read_smi(runner, nvidia_smi="nvidia-smi"):
    """``nvidia-smi -q`` once -> ``{"path", "run", "smi_q", "failure", "reason"}``.

    ``smi_q``: the parsed listing when there is one (also with exit status 15, when some GPUs could not be
    opened, and 14, when nvidia-smi warns that a GPU's infoROM is corrupted); ``failure``: ``classify_smi_failure``
    of a non-zero exit or a failure text, ``{"kind": "timeout"}`` when it was killed, ``{"kind": "not_run"}`` when
    it could not be started; ``reason``: why nothing was read.
    """
    out = {"path": None, "run": None, "smi_q": None, "failure": None, "reason": None}
    path = runner.which(nvidia_smi)
    if path is None:
        out["reason"] = "nvidia-smi not found (%s)" % nvidia_smi
        return out
    out["path"] = path
    result = out["run"] = runner.run([path, "-q"])
    if result["rc"] is None:
        out["failure"] = {"kind": "timeout" if result["timed_out"] else "not_run", "rc": None, "nvml_version": None,
                          "gpus": [], "message": describe_failure(result)}
        out["reason"] = out["failure"]["message"]
        return out
    failure = readiness.classify_smi_failure(result["rc"], result["stdout"], result["stderr"])
    if failure["kind"] != "ok":
        out["failure"] = failure
    if result["rc"] == 0 or failure["kind"] in ("ok", "gpu_lost", "device_handle"):
        parsed = parse_smi_q(result["stdout"])
        mark_inforom(parsed, result["stderr"])
        if parsed["gpus"] or parsed["attached_gpus"] is not None:
            out["smi_q"] = parsed
    if out["smi_q"] is None:
        out["reason"] = "nvidia-smi -q: %s" % (failure["message"] or "no GPU listing in its output")
    return out


# ----------------------------------------------------------------------------------------------------
# /proc/driver/nvidia/version


def read_proc_version(root="/"):
    """(parsed ``/proc/driver/nvidia/version`` or None, the path read)."""
    path = under(root, "/proc/driver/nvidia/version")
    text = read_text(path)
    if text is None:
        text = read_text(under(root, "/sys/module/nvidia/version"))
    return (readiness.parse_proc_driver_version(text) if text else None), path


# ----------------------------------------------------------------------------------------------------
# PCI functions from sysfs

PCI_CLASS_NAMES = {"0300": "VGA compatible controller", "0302": "3D controller", "0380": "Display controller",
                   "0680": "Bridge", "0403": "Audio device", "0c03": "USB controller",
                   "0c80": "Serial bus controller"}
NVIDIA_VENDOR = "10de"


def _hex_file(path):
    text = read_text(path)
    if text is None:
        return None
    text = text.strip().lower()
    return text[2:] if text.startswith("0x") else text


def _config_gone(path):
    """True when the function's PCI config space reads all ones (what lspci shows as ``(rev ff)``)."""
    try:
        with open(path, "rb") as handle:
            head = handle.read(4)
    except (IOError, OSError):
        return False
    return len(head) == 4 and head == b"\xff\xff\xff\xff"


def pci_device(bus_dir):
    """One ``/sys/bus/pci/devices/<bus>`` directory -> a ``parse_lspci`` device dict plus ``kind`` (``gpus``,
    ``nvswitches``, ``other``), or None when it is not an NVIDIA function."""
    vendor = _hex_file(os.path.join(bus_dir, "vendor"))
    if vendor != NVIDIA_VENDOR:
        return None
    cls = _hex_file(os.path.join(bus_dir, "class")) or ""
    code = cls[:4]
    device = _hex_file(os.path.join(bus_dir, "device"))
    rev = _hex_file(os.path.join(bus_dir, "revision"))
    gone = _config_gone(os.path.join(bus_dir, "config"))
    if gone:
        rev = "ff"
    try:
        bus = normalize_bus_id(os.path.basename(bus_dir))
    except ValueError:
        return None
    name = PCI_CLASS_NAMES.get(code, "Class %s" % (code or "?"))
    description = "NVIDIA Corporation Device %s" % (device or "?")
    vendor_device = "%s:%s" % (NVIDIA_VENDOR, device) if device else None
    try:
        driver = os.path.basename(os.readlink(os.path.join(bus_dir, "driver")))
    except OSError:
        driver = None
    return {"bus_id": bus, "class": name, "class_code": code or None, "vendor_device": vendor_device,
            "description": description, "rev": rev, "gone": gone, "driver": driver,
            "kind": readiness.pci_kind(name, code or None, vendor_device, description)}


def read_pci(root="/"):
    """NVIDIA PCI functions from ``<root>/sys/bus/pci/devices`` in ``readiness.parse_lspci``'s shape
    (``{"gpus", "nvswitches", "other"}``), or None when that directory is not there."""
    base = under(root, "/sys/bus/pci/devices")
    if not os.path.isdir(base):
        return None
    out = {"gpus": [], "nvswitches": [], "other": []}
    for bus_dir in sorted(glob.glob(os.path.join(base, "*"))):
        dev = pci_device(bus_dir)
        if dev is not None:
            out[dev.pop("kind")].append(dev)
    return out


# ----------------------------------------------------------------------------------------------------
# kernel log


def _journal_empty(result):
    text = result["stdout"].strip()
    return not text or text == "-- No entries --"


def read_kernel_log(runner, source="auto", root="/"):
    """(text or None, where it came from or why not) of the kernel log since boot.

    ``source``: ``journal`` (``journalctl -k -b --no-pager``), ``dmesg``, ``auto`` (the journal, else dmesg:
    a journal that does not keep kernel messages answers "-- No entries --"), ``none``, or a file path. With a
    ``root`` other than ``/``, ``auto`` reads nothing: the running kernel's log is not that root's.
    """
    if source == "none":
        return None, "not read (--kernel-log none)"
    if source not in KERNEL_LOG_SOURCES:
        text = read_text(source)
        return (text, source) if text is not None else (None, "%s is not readable" % source)
    if source == "auto" and root not in (None, "", "/"):
        return None, "the kernel log of %s was not given (--kernel-log FILE)" % root
    tried = []
    for kind in (("journal", "dmesg") if source == "auto" else (source,)):
        tool = "journalctl" if kind == "journal" else "dmesg"
        path = runner.which(tool)
        if path is None:
            tried.append("%s not found" % tool)
            continue
        argv = [path, "-k", "-b", "--no-pager"] if kind == "journal" else [path]
        result = runner.run(argv)
        if result["rc"] is None:
            tried.append(describe_failure(result))
            continue
        if result["rc"] != 0:
            said = (result["stderr"] or result["stdout"]).strip().split("\n")[0][:200]
            tried.append("%s exited with status %s: %s" % (tool, result["rc"], said))
            continue
        if kind == "journal" and _journal_empty(result):
            tried.append("the journal holds no kernel messages of this boot")
            continue
        return result["stdout"], " ".join([tool] + argv[1:])
    return None, "; ".join(tried)


# ----------------------------------------------------------------------------------------------------
# fabric manager

_SHOW = re.compile(r"^(LoadState|ActiveState|SubState|UnitFileState)=(.*)$", re.M)


def parse_systemctl_show(text):
    """``systemctl show UNIT -p LoadState,ActiveState,SubState`` -> ``{"LoadState": "loaded", ...}``."""
    return dict(_SHOW.findall(text or ""))


def fm_unit_installed(root="/"):
    return any(os.path.exists(under(root, "/%s/%s.service" % (d, FM_UNIT))) for d in FM_UNIT_DIRS)


def read_fabric_manager(runner, source="systemd", systemctl="systemctl", root="/"):
    """(fabric manager dict for ``readiness.check_fabric`` or None, where it came from or why not).

    ``systemd``: ``systemctl show nvidia-fabricmanager`` gives whether the unit exists (``installed``) and
    runs; only when it does not run, ``systemctl status nvidia-fabricmanager --no-pager --full -n 20`` adds the
    journal lines that say why (version mismatch, ``NV_WARN_NOTHING_TO_DO``). A fabric manager that runs has the
    driver's version: it refuses to start otherwise (FACTS.md section 5), so no version is looked up.
    A file: recorded ``systemctl status`` / ``is-active`` / journal text of an installed fabric manager.
    """
    if source == "none":
        return None, "not read (--fabric-manager none)"
    if source not in FABRIC_MANAGER_SOURCES:
        text = read_text(source)
        if text is None:
            return None, "%s is not readable" % source
        fm = readiness.parse_fabricmanager(text)
        fm["installed"] = "could not be found" not in text
        return fm, source
    path = runner.which(systemctl)
    installed_file = fm_unit_installed(root)
    if path is None:
        if installed_file:
            return {"installed": True, "active": None, "state": None}, "%s not found" % systemctl
        return None, "%s not found" % systemctl
    result = runner.run([path, "show", FM_UNIT, "-p", "LoadState,ActiveState,SubState,UnitFileState"])
    show = parse_systemctl_show(result["stdout"]) if result["rc"] == 0 else {}
    if not show.get("LoadState"):
        why = describe_failure(result) if result["rc"] is None else (
            (result["stderr"] or result["stdout"]).strip().split("\n")[0][:200] or "no answer")
        fm = {"installed": True, "active": None, "state": None} if installed_file else None
        return fm, "systemctl show %s: %s" % (FM_UNIT, why)
    installed = show["LoadState"] not in ("not-found", "masked") or installed_file
    active = show.get("ActiveState") == "active" and show.get("SubState", "running") == "running"
    state = "%s (%s)" % (show.get("ActiveState"), show.get("SubState")) if show.get("SubState") else \
        show.get("ActiveState")
    fm = {"active": active, "state": state, "version_mismatch": None, "nothing_to_do": False, "started": False,
          "failed": False, "nvl5": None, "command": None, "errors": []}
    if installed and not active:
        status = runner.run([path, "status", FM_UNIT, "--no-pager", "--full", "-n", "20"])
        if status["rc"] is not None:
            parsed = readiness.parse_fabricmanager(status["stdout"])
            for key in ("version_mismatch", "nothing_to_do", "nvl5", "command", "errors"):
                fm[key] = parsed[key]
    fm["installed"] = installed
    return fm, "systemctl show %s" % FM_UNIT


# ----------------------------------------------------------------------------------------------------
# acknowledgements


def read_acknowledgements(path, host=None):
    """(acknowledgements, problems): every well-formed line of the file; each malformed one is a problem
    string (it is skipped, the others still count). A missing file acknowledges nothing."""
    text = read_text(path) if path else None
    if text is None:
        return [], []
    acks, problems = [], []
    for number, line in enumerate(text.replace("\r\n", "\n").split("\n"), 1):
        try:
            # the leading newlines keep the line's own number in the parser's messages
            acks.extend(readiness.parse_acknowledgements("\n" * (number - 1) + line, host=host, source=path))
        except GresError as exc:
            problems.append(str(exc))
    return acks, problems


# ----------------------------------------------------------------------------------------------------
# Slurm's files


def find_slurm_conf(explicit=None, env=None):
    """slurm.conf of this node: ``explicit``, else ``$SLURM_CONF``, else the first of SLURM_CONF_CANDIDATES
    that exists (configless nodes: slurmd's copy); None when there is none."""
    if explicit:
        return explicit
    env = os.environ if env is None else env
    if env.get("SLURM_CONF"):
        return env["SLURM_CONF"]
    for path in SLURM_CONF_CANDIDATES:
        if os.path.isfile(path):
            return path
    return None


def find_gres_conf(explicit=None, slurm_conf=None):
    """gres.conf: ``explicit``, else the one beside slurm.conf (Slurm's rule)."""
    if explicit:
        return explicit
    if slurm_conf:
        return os.path.join(os.path.dirname(slurm_conf), "gres.conf")
    return None


_INCLUDE = re.compile(r"^\s*include\s+(\S+)", re.I)


def read_slurm_conf(path):
    """slurm.conf text with its ``Include`` files inlined (relative to slurm.conf's directory, globs
    expanded), or None when it is not readable."""
    return _read_with_includes(path, os.path.dirname(path or ""), 0)


def _read_with_includes(path, base, depth):
    text = read_text(path) if path else None
    if text is None or depth > 8:
        return text
    out = []
    for line in text.split("\n"):
        m = _INCLUDE.match(line.split("#", 1)[0])
        if not m:
            out.append(line)
            continue
        target = m.group(1)
        target = target if os.path.isabs(target) else os.path.join(base, target)
        for name in sorted(glob.glob(target)) or [target]:
            sub = _read_with_includes(name, base, depth + 1)
            if sub is not None:
                out.append(sub)
    return "\n".join(out)
