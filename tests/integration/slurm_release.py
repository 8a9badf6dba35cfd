"""Real Slurm of each tested release, run from the root file system of its molecule node image.

``molecule/releases`` says which Debian suite gives which release (bookworm 22.05, trixie 24.11, sid 26.05);
``scripts/build-image.sh SUITE`` builds (or finds, cached) that tree and keeps it as a chroot. The commands here
run the release's own binaries inside it, in a private mount namespace (and pid, uts, network namespaces for the
daemons), so nothing of the host or of the shared tree is written:

* ``/dev`` is a tmpfs with the GPU device nodes made with ``mknod``;
* ``/run``, ``/tmp``, ``/var/log`` and munge's and Slurm's state directories are fresh tmpfs mounts;
* ``/sys`` is the host's, read-only (26.05's slurmd would otherwise write the caller's memory cgroup);
* a munged of the release runs inside (24.11+ slurmd needs it even for ``slurmd -G``); the pid namespace ends it.

Needs root, util-linux ``unshare``, and the trees (debootstrap, network on first use). Under CI=true a missing
piece fails the test; elsewhere it skips with the reason.
"""
import json
import os
import re
import shlex
import shutil
import subprocess
import tempfile

import testpaths

ROOT = testpaths.ROOT
RELEASES_FILE = os.path.join(ROOT, "molecule", "releases")
NVIDIA_MAJOR = 195
NVIDIA_CAPS_MAJOR = 235
CONF_DIR = "/run/slurm-gres-test"  # where the configuration is seen inside the chroot
# The one address of the network namespace, on lo: getaddrinfo(AI_ADDRCONFIG) ignores loopback addresses, so
# slurmctld finds no address for its own host with 127.x only.
TEST_ADDR = "10.217.0.1"
_MARK = "slurm-release: namespace ready"
_roots = {}


def matrix():
    """[(release, suite)] of molecule/releases, the default release first."""
    rows = []
    with open(RELEASES_FILE) as handle:
        for line in handle:
            parts = line.split()
            if parts and not parts[0].startswith("#"):
                rows.append((parts[0], parts[1]))
    return rows


def releases():
    return [row[0] for row in matrix()]


def _ci():
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def unavailable_reason():
    if os.geteuid() != 0:
        return "needs root (mount namespaces, mknod, chroot)"
    for tool in ("unshare", "chroot", "debootstrap", "podman"):
        if shutil.which(tool) is None:
            return "%s not installed (run `make system-deps` as root)" % tool
    return None


def release_root(release):
    """The chroot of ``release``, built by scripts/build-image.sh when missing. Raises RuntimeError."""
    if release in _roots:
        return _roots[release]
    suite = dict(matrix()).get(release)
    if suite is None:
        raise RuntimeError("no Slurm release %s in molecule/releases" % release)
    proc = subprocess.run(["bash", os.path.join(ROOT, "scripts", "build-image.sh"), suite], stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    found = re.findall(r"^root=(.+)$", proc.stdout, re.MULTILINE)
    if proc.returncode != 0 or not found:
        raise RuntimeError("scripts/build-image.sh %s failed (exit %d):\n%s"
                           % (suite, proc.returncode, proc.stdout[-3000:]))
    _roots[release] = found[-1]
    return found[-1]


def require_release(release):
    """In a pytest test: the release's chroot, or skip (fail under CI=true) with the reason."""
    import pytest

    reason = unavailable_reason()
    if reason is None:
        try:
            return release_root(release)
        except RuntimeError as exc:
            reason = str(exc)
    if _ci():
        pytest.fail("CI=true and Slurm %s cannot run here: %s" % (release, reason))
    pytest.skip(reason)


def device_number(path):
    """(major, minor) for /dev/nvidiaN and /dev/nvidia-caps/nvidia-capN, else None."""
    match = re.match(r"^/dev/nvidia(\d+)$", path)
    if match:
        return NVIDIA_MAJOR, int(match.group(1))
    match = re.match(r"^/dev/nvidia-caps/nvidia-cap(\d+)$", path)
    if match:
        return NVIDIA_CAPS_MAJOR, int(match.group(1))
    return None


def namespace_script(root, workdir, devices, network=False, hosts=None):
    """sh script (run under unshare) that prepares the chroot's private mounts, starts munged, then execs "$@"
    inside the chroot. ``devices``: [(path, major, minor)]. ``hosts``: /etc/hosts text (with ``network``)."""
    r = shlex.quote(root)
    cmds = [
        "set -e",
        "R=%s" % r,
        "mount -t tmpfs -o mode=0755,size=4m slurm-release-dev $R/dev",
    ]
    for name, major, minor in (("null", 1, 3), ("zero", 1, 5), ("random", 1, 8), ("urandom", 1, 9)):
        cmds.append("mknod -m 0666 $R/dev/%s c %d %d" % (name, major, minor))
    for path, major, minor in devices:
        parent = os.path.dirname(path)
        if parent != "/dev":
            cmds.append("mkdir -p $R%s" % shlex.quote(parent))
        cmds.append("mknod -m 0666 $R%s c %d %d" % (shlex.quote(path), major, minor))
    cmds += [
        "mount -t proc proc $R/proc",
        "mount --rbind /sys $R/sys",
        "mount -o remount,bind,ro $R/sys",
    ]
    for path, mode in (("/run", "0755"), ("/tmp", "1777"), ("/var/log", "0755"), ("/var/lib/munge", "0711"),
                       ("/var/lib/slurm", "0755"), ("/var/spool", "0755")):
        cmds.append("mkdir -p $R%s && mount -t tmpfs -o mode=%s slurm-release $R%s" % (path, mode, path))
    cmds += [
        "mkdir -p $R%s" % CONF_DIR,
        "mount --bind %s $R%s" % (shlex.quote(workdir), CONF_DIR),
        "mkdir -p $R/run/munge $R/var/log/munge",
        "chroot $R chown munge:munge /run/munge /var/log/munge /var/lib/munge",
        "chmod 0755 $R/run/munge",
    ]
    if network:
        cmds += [
            "ip link set lo up 2>/dev/null || chroot $R ip link set lo up",
            "chroot $R ip addr add %s/32 dev lo" % TEST_ADDR,
            "hostname slurm-release-ctl",
        ]
        with open(os.path.join(workdir, "hosts"), "w") as handle:
            handle.write(hosts or "")
        cmds.append("mount --bind %s/hosts $R/etc/hosts" % shlex.quote(workdir))
    cmds += [
        "chroot $R runuser -u munge -- /usr/sbin/munged",
        "echo %s >&2" % shlex.quote(_MARK),
        'exec chroot $R "$@"',
    ]
    return "\n".join(cmds)


def run_in_release(root, workdir, argv, devices=(), env=None, network=False, hosts=None, timeout=120):
    """Run ``argv`` inside the chroot ``root`` (namespaces as described above); returns (exit status, output).

    ``workdir`` (a host directory) is seen inside as CONF_DIR. Raises RuntimeError when the namespace could not
    be set up."""
    os.chmod(workdir, 0o755)  # slurmctld reads the configuration as SlurmUser
    flags = ["-m", "--propagation", "private", "-p", "-f", "-u"] + (["-n"] if network else [])
    full_env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C", "LC_ALL": "C"}
    full_env.update(env or {})
    command = ["unshare"] + flags + ["--", "/bin/sh", "-c", namespace_script(root, workdir, list(devices), network,
                                                                             hosts), "slurm-release",
                                     "/usr/bin/env"] + ["%s=%s" % kv for kv in sorted(full_env.items())] + list(argv)
    try:
        proc = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=timeout,
                              env=full_env, check=False)
    except subprocess.TimeoutExpired as exc:
        raise RuntimeError("%s did not finish in %s s: %s" % (argv, timeout, (exc.output or b"").decode(
            errors="replace")[-3000:]))
    output = proc.stdout.decode(errors="replace")
    if _MARK not in output:
        raise RuntimeError("could not prepare the chroot %s (exit %s):\n%s" % (root, proc.returncode, output))
    return proc.returncode, output.split(_MARK + "\n", 1)[1]


def show_hostnames(root, exprs):
    """``scontrol show hostnames EXPR`` of the release for each expression, in one namespace: per expression the
    names it stands for, or None when the release refuses it (``Invalid hostlist``)."""
    workdir = tempfile.mkdtemp(prefix="slurm-release-")
    try:
        with open(os.path.join(workdir, "slurm.conf"), "w") as handle:
            handle.write("ClusterName=x\nSlurmctldHost=localhost\n")
        with open(os.path.join(workdir, "exprs"), "w") as handle:
            handle.write("".join(e + "\n" for e in exprs))
        script = ('i=0; while IFS= read -r e; do echo "=== $i"; scontrol show hostnames "$e" 2>&1; '
                  'echo "rc=$?"; i=$((i+1)); done < %s/exprs' % CONF_DIR)
        out = run_in_release(root, workdir, ["sh", "-c", script], env={"SLURM_CONF": CONF_DIR + "/slurm.conf"})[1]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
    results = []
    for block in out.split("=== ")[1:]:
        lines = [line for line in block.splitlines()[1:] if line.strip()]
        ok = lines and lines[-1] == "rc=0" and not any("Invalid hostlist" in line for line in lines)
        results.append(lines[:-1] if ok else None)
    if len(results) != len(exprs):
        raise RuntimeError("scontrol show hostnames: %d answers for %d expressions:\n%s"
                           % (len(results), len(exprs), out[-3000:]))
    return results


def slurm_version(root):
    rc, out = run_in_release(root, tempfile.gettempdir(), ["slurmd", "-V"])
    return out.strip()


def gpu_plugins(root):
    """The gpu_*.so plugins the release's slurmd has."""
    names = []
    for lib in ("usr/lib/x86_64-linux-gnu/slurm-wlm", "usr/lib/aarch64-linux-gnu/slurm-wlm"):
        path = os.path.join(root, lib)
        if os.path.isdir(path):
            names += sorted(n for n in os.listdir(path) if n.startswith("gpu_") and n.endswith(".so"))
    return names


def cgroup_hierarchy(sysfs="/sys/fs/cgroup"):
    """"v2" where this host mounts the unified hierarchy only, else "v1" (legacy or hybrid)."""
    return "v2" if os.path.exists(os.path.join(sysfs, "cgroup.controllers")) else "v1"


# ---------------------------------------------------------------------------------------------- registration

# slurm.conf keys the test cluster replaces: private paths, and no cgroup, no slurmdbd (neither exists in the
# namespace; neither has anything to do with GRES registration).
_TEST_KEYS = {
    "SlurmUser": "slurm",
    "SlurmctldPort": "6817",
    "SlurmdPort": "6818",
    "StateSaveLocation": "/var/lib/slurm/slurmctld",
    "SlurmdSpoolDir": "/var/lib/slurm/slurmd",
    "SlurmctldPidFile": "/run/slurmctld.pid",
    "SlurmdPidFile": "/run/slurmd.pid",
    "SlurmctldLogFile": "/var/log/slurm/slurmctld.log",
    "SlurmdLogFile": "/var/log/slurm/slurmd.log",
    "ProctrackType": "proctrack/linuxproc",
    "TaskPlugin": "task/none",
    "JobAcctGatherType": "jobacct_gather/none",
    "AccountingStorageType": "accounting_storage/none",
    "AccountingStorageTRES": None,
    "AccountingStorageHost": None,
    "SlurmctldHost": "slurm-release-ctl(%s)" % TEST_ADDR,
}

_DRIVER = r'''
import json, os, subprocess, sys, time
conf_dir, plan = sys.argv[1], json.load(open(sys.argv[2]))
env = dict(os.environ, SLURM_CONF=conf_dir + "/slurm.conf")
def sh(*argv):
    return subprocess.run(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True).stdout
def show(node):
    return sh("scontrol", "-o", "show", "node", node).strip()
def tail(path, n=25):
    try:
        return "".join(open(path).readlines()[-n:])
    except OSError:
        return "(no %s)" % path
os.makedirs("/var/lib/slurm/slurmctld", exist_ok=True)
os.makedirs("/var/lib/slurm/slurmd", exist_ok=True)
os.makedirs("/var/log/slurm", exist_ok=True)
subprocess.run(["chown", "-R", "slurm:slurm", "/var/lib/slurm/slurmctld", "/var/log/slurm"])
result = {"slurmctld": None, "nodes": {}}
ctld = subprocess.Popen(["slurmctld", "-D", "-i"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
deadline = time.time() + 60
while time.time() < deadline and "is UP" not in sh("scontrol", "ping"):
    time.sleep(0.3)
if "is UP" not in sh("scontrol", "ping"):
    result["slurmctld"] = "slurmctld did not come up:\n" + tail("/var/log/slurm/slurmctld.log")
    print("SLURM-RELEASE-RESULT " + json.dumps(result)); sys.exit(0)
for node in plan["nodes"]:
    name = node["name"]
    with open(conf_dir + "/gres.conf", "w") as handle:
        handle.write(node["gres_conf"])
    slurmd = subprocess.Popen(["slurmd", "-D", "-N", name], env=dict(env, HWLOC_SYNTHETIC=node["shape"]),
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    line, deadline = "", time.time() + plan["timeout"]
    while time.time() < deadline:
        line = show(name)
        if slurmd.poll() is not None or "Reason=" in line or ("State=IDLE" in line and "INVAL" not in line
                                                              and "DRAIN" not in line):
            break
        time.sleep(0.3)
    time.sleep(plan["settle"])  # a drain right after registration shows up here
    line = show(name)
    exited = slurmd.poll()
    slurmd.terminate()
    try:
        slurmd.wait(20)
    except subprocess.TimeoutExpired:
        slurmd.kill()
    result["nodes"][name] = {"line": line, "slurmd_exit": exited, "slurmd_log": tail("/var/log/slurm/slurmd.log"),
                             "slurmctld_log": tail("/var/log/slurm/slurmctld.log", 8)}
    try:
        os.remove("/var/log/slurm/slurmd.log")
    except OSError:
        pass
ctld.terminate()
print("SLURM-RELEASE-RESULT " + json.dumps(result))
'''


def _test_slurm_conf(slurm_text):
    """slurm.conf with _TEST_KEYS replaced (every other line untouched, the NodeName and partition lines above all).

    SlurmdParameters gains config_overrides: this machine has less memory than the nodes declare, and slurmctld
    would drain them for Low RealMemory (the GRES checks, socket boundaries included, are unaffected)."""
    key_re = re.compile(r"^\s*(%s)\s*=" % "|".join(_TEST_KEYS), re.IGNORECASE)
    params_re = re.compile(r"^\s*SlurmdParameters\s*=\s*(\S*)", re.IGNORECASE)
    lines, params = [], ["config_overrides"]
    for line in slurm_text.splitlines():
        match = params_re.match(line)
        if match:
            params.insert(0, match.group(1))
        elif not key_re.match(line):
            lines.append(line)
    lines.append("# slurm_release: test cluster settings")
    lines.extend("%s=%s" % kv for kv in _TEST_KEYS.items() if kv[1] is not None)
    lines.append("SlurmdParameters=%s" % ",".join(p for p in params if p))
    return "\n".join(lines) + "\n"


def register_nodes(root, slurm_text, nodes, extra_files=None, timeout=30, settle=2.0):
    """Start the release's slurmctld on ``slurm_text``, then each node's slurmd in turn, and report how slurmctld
    sees it after registration: ``{name: {"line": scontrol -o show node, "slurmd_exit", "slurmd_log", ...}}``.

    ``nodes``: ``[{"name", "gres_conf", "sockets", "cores_per_socket", "threads_per_core"}]``; every node name of
    slurm.conf resolves to the one address of the namespace, and only one slurmd runs at a time.
    """
    from slurmd_oracle import gres_conf_device_paths, hwloc_synthetic

    workdir = tempfile.mkdtemp(prefix="slurm-release-")
    try:
        devices = {}
        plan = {"nodes": [], "timeout": timeout, "settle": settle}
        for node in nodes:
            for path in gres_conf_device_paths(node["gres_conf"], node["name"]):
                number = device_number(path)
                if number:
                    devices[path] = number
            plan["nodes"].append({"name": node["name"], "gres_conf": node["gres_conf"],
                                  "shape": hwloc_synthetic(node["sockets"], node["cores_per_socket"],
                                                           node["threads_per_core"])})
        with open(os.path.join(workdir, "slurm.conf"), "w") as handle:
            handle.write(_test_slurm_conf(slurm_text))
        for name, text in (extra_files or {}).items():
            with open(os.path.join(workdir, name), "w") as handle:
                handle.write(text)
        with open(os.path.join(workdir, "plan.json"), "w") as handle:
            json.dump(plan, handle)
        with open(os.path.join(workdir, "driver.py"), "w") as handle:
            handle.write(_DRIVER)
        from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
        names = sorted(parse_slurm_conf(slurm_text)["nodes"])
        hosts = "127.0.0.1 localhost\n%s slurm-release-ctl %s\n" % (TEST_ADDR, " ".join(names))
        rc, out = run_in_release(root, workdir, ["python3", CONF_DIR + "/driver.py", CONF_DIR,
                                                 CONF_DIR + "/plan.json"],
                                 devices=[(p, n[0], n[1]) for p, n in sorted(devices.items())], network=True,
                                 hosts=hosts, timeout=120 + len(nodes) * (timeout + settle + 5))
        found = re.findall(r"^SLURM-RELEASE-RESULT (.*)$", out, re.MULTILINE)
        if not found:
            raise RuntimeError("the registration driver reported nothing (exit %s):\n%s" % (rc, out[-4000:]))
        result = json.loads(found[-1])
        if result["slurmctld"]:
            raise RuntimeError(result["slurmctld"])
        return result["nodes"]
    finally:
        shutil.rmtree(workdir, ignore_errors=True)
