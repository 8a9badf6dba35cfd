"""Judge a slurm.conf + gres.conf pair with the real ``slurmd -N NODE -G``, for any node shape.

slurmd checks ``Cores=`` against the CPU topology it sees and ``File=`` against real character devices.
This harness makes it see the node under test rather than the machine it runs on:

* ``HWLOC_SYNTHETIC="package:S core:C pu:T"`` gives hwloc (and so slurmd) the node's CPU shape;
* the ``/dev/nvidia*`` (and ``/dev/nvidia-caps/*``) device nodes are made with ``mknod`` on a tmpfs
  mounted over ``/dev`` inside a private mount namespace (``unshare -m --propagation private``),
  so the real ``/dev`` is never touched;
* the configuration is copied to a private directory (``SLURM_CONF`` points there, gres.conf sits
  beside it) with slurmd's spool, pid and log paths moved into that directory, so nothing on the
  host is written either.

The harness reports what slurmd printed (``Gres Name=...`` records, error/fatal/warning lines, exit
status); deciding whether that is right is the caller's job. It deliberately does not use the
collection's own parsers: it is the independent judge of what they produce.

Needs root (mount namespace + mknod), util-linux ``unshare`` and Debian's ``slurmd``.
"""

import os
import re
import shlex
import shutil
import subprocess
import tempfile

import hostlist

NVIDIA_MAJOR = 195
# nvidia-caps gets a dynamic major on real machines (see "nvidia-caps" in /proc/devices); slurmd
# only needs a character device, so any free major will do here.
NVIDIA_CAPS_MAJOR = 235
# Other device paths (AMD /dev/dri/renderD*, /dev/infiniband/*, ...) when run_slurmd_g(other_devices=True).
OTHER_MAJOR = 240
SHARED_GRES = ("shard", "mps")
DEFAULT_TIMEOUT = 90  # a missing device file costs slurmd ~20 s of retries before its fatal

_SLURMD_CANDIDATES = ("/usr/sbin/slurmd", "/usr/local/sbin/slurmd")
# slurmd's own paths, moved into the private directory; PluginDir is where the site installed Slurm's plugins,
# so this machine's default is used instead (a site's /usr/lib/slurm says nothing about its configuration).
_PRIVATE_KEYS = ("SlurmdSpoolDir", "SlurmdLogFile", "SlurmdPidFile", "SlurmdSyslogDebug", "PluginDir")
_SETUP_MARK = "slurmd-oracle: namespace ready"
# slurmd prefixes its stderr lines with "slurmd: " / "slurmd-NODE: " (22.05, 24.11) or "[timestamp] " (26.05)
_PREFIX = r"^(?:[\w.\-]+: |\[[^\]]+\] )?"
_LOG_LINE = re.compile(_PREFIX + r"(error|fatal|warning|WARNING): (.*)$")
_GRES_LINE = re.compile(_PREFIX + r"Gres (Name=.*)$")
_DEVICE_RULES = (
    (re.compile(r"^/dev/nvidia(\d+)$"), NVIDIA_MAJOR),
    (re.compile(r"^/dev/nvidia-caps/nvidia-cap(\d+)$"), NVIDIA_CAPS_MAJOR),
)


class OracleSetupError(RuntimeError):
    """The harness could not build the namespace or start slurmd (not a judgement on the config)."""


class GresRecord(object):
    """One ``Gres Name=...`` line of ``slurmd -G``."""

    __slots__ = ("name", "type", "count", "index", "file", "cores", "core_cnt", "links", "flags", "raw")

    def __init__(self, name, type=None, count=0, index=None, file=None, cores=None, core_cnt=None,
                 links=None, flags=None, raw=""):
        self.name = name
        self.type = type
        self.count = count
        self.index = index
        self.file = file
        self.cores = cores
        self.core_cnt = core_cnt
        self.links = links
        self.flags = flags
        self.raw = raw

    @property
    def files(self):
        """File= expanded to a list of paths (a MultipleFiles record lists several)."""
        return hostlist.expand_hostlist(self.file) if self.file else []

    @property
    def key(self):
        """``gpu:a100`` for a typed record, ``gpu`` for an untyped one (slurmconf.py's gres_key)."""
        return "%s:%s" % (self.name, self.type) if self.type else self.name

    def as_dict(self):
        return {k: getattr(self, k) for k in self.__slots__}

    def __repr__(self):
        return "GresRecord(%s)" % self.raw


class OracleResult(object):
    """What one ``slurmd -N NODE -G`` run reported."""

    def __init__(self, node, shape, command, returncode, output, devices, absent):
        self.node = node
        self.shape = shape
        self.command = command
        self.returncode = returncode
        self.output = output
        self.devices = devices        # device nodes made in the namespace: [(path, major, minor)]
        self.absent = absent          # device paths named in gres.conf that were left out
        self.records = []
        self.errors = []
        self.fatals = []
        self.warnings = []
        for line in output.splitlines():
            gres = _GRES_LINE.match(line)
            if gres:
                self.records.append(parse_gres_line(line))
                continue
            logged = _LOG_LINE.match(line)
            if logged:
                level, text = logged.group(1).lower(), logged.group(2)
                {"error": self.errors, "fatal": self.fatals, "warning": self.warnings}[level].append(text)

    @property
    def ok(self):
        """slurmd exited 0 and logged no error or fatal line."""
        return self.returncode == 0 and not self.errors and not self.fatals

    @property
    def problems(self):
        return ["fatal: " + f for f in self.fatals] + ["error: " + e for e in self.errors]

    def counts(self, name=None, fold=SHARED_GRES):
        """Per gres key (``gpu:a100``, ``gpu``, ``shard``) the summed Count slurmd reported.

        Shared GRES (shard, mps) are untyped in slurm.conf but slurmd prints each with its GPU's Type;
        names in ``fold`` are summed under the bare name, as slurmctld counts them. Zero totals are dropped.
        """
        totals = {}
        for rec in self.records:
            if name is None or rec.name == name:
                key = rec.name if rec.name in fold else rec.key
                totals[key] = totals.get(key, 0) + rec.count
        return {k: v for k, v in totals.items() if v}

    def units(self):
        """Records as comparable units per lower-case GRES name, in slurmd's order (the shape of the
        collection's ``slurmd_gres.view_units(view, with_flags=False)``, computed independently of it).

        A record whose file count equals its Count becomes one unit per file; shard/mps placeholders with
        Count=0 are left out; a Cores value slurmd logged as invalid ("Invalid GRES data") is no binding (None);
        Cores are written canonically. Unit: ``(type, (files...), count, cores, links, None)``.
        Records of one name and type with no File, Cores or Links are one unit holding their total: slurmctld
        keeps no topology for them and adds them up (gres.c ``_foreach_get_tot_from_slurmd_conf``).
        """
        invalid = set()
        for text in self.errors:
            match = re.match(r"Invalid GRES data for (\S+), (?:Cores|CPUs)=(\S+)", text)
            if match:
                invalid.add((match.group(1).lower(), match.group(2)))
        units = {}
        for rec in self.records:
            name = rec.name.lower()
            files = tuple(hostlist.expand_hostlist(rec.file, allow_duplicates=True)) if rec.file else ()
            cores = rec.cores
            if cores is not None:
                cores = None if (name, cores) in invalid else _canonical_ranges(cores)
            if name in SHARED_GRES:
                if rec.count:
                    units.setdefault(name, []).append((None, files, rec.count, None, None, None))
            elif files and len(files) == rec.count:
                for path in files:
                    units.setdefault(name, []).append((rec.type, (path,), 1, cores, rec.links, None))
            else:
                unit = (rec.type, files, rec.count, cores, rec.links, None)
                same = [i for i, u in enumerate(units.get(name, [])) if not files and u[1:2] == ((),)
                        and u[0] == rec.type and u[3] is None and u[4] is None and cores is None and not rec.links]
                if same:
                    old = units[name][same[0]]
                    units[name][same[0]] = old[:2] + (old[2] + rec.count,) + old[3:]
                else:
                    units.setdefault(name, []).append(unit)
        return units

    def describe(self):
        """Multi-line text for assertion messages."""
        return "slurmd -N %s -G (shape %s, exit %s):\n%s" % (
            self.node, self.shape, self.returncode, self.output.rstrip() or "(no output)")

    def __repr__(self):
        return "OracleResult(node=%r, rc=%r, records=%d, errors=%r, fatals=%r)" % (
            self.node, self.returncode, len(self.records), self.errors, self.fatals)


def parse_gres_line(line):
    """Parse ``Gres Name=gpu Type=a100 Count=2 Index=0 ID=7696487 File=/dev/nvidia[0-1] Cores=0-31 ...``.

    22.05 ends the line with the Links value alone (``(null)`` when unset); 23.02+ print ``Links=``
    and ``Flags=``. Both forms are accepted.
    """
    match = _GRES_LINE.match(line.strip())
    if not match:
        raise ValueError("not a slurmd -G Gres line: %r" % line)
    fields = {}
    bare = []
    for token in match.group(1).split():
        key, sep, value = token.partition("=")
        if sep:
            fields[key.lower()] = value
        else:
            bare.append(token)
    links = fields.get("links", bare[-1] if bare else None)

    def _none(value):
        return None if value in (None, "(null)", "") else value

    def _int(value):
        return int(value) if _none(value) is not None else None

    return GresRecord(
        name=fields["name"],
        type=_none(fields.get("type")),
        count=int(fields.get("count", "0")),
        index=_int(fields.get("index")),
        file=_none(fields.get("file")),
        cores=_none(fields.get("cores")),
        core_cnt=_int(fields.get("corecnt")),
        links=_none(links),
        flags=_none(fields.get("flags")),
        raw=match.group(0),
    )


def _canonical_ranges(text):
    """"0,1,2,3,8" -> "0-3,8" (how the collection writes core ranges)."""
    values = set()
    text = re.sub(r"[^0-9,-]", "", text)  # slurmd's bitfmt2int skips any other character ([0-3] is 0-3)
    for part in text.split(","):
        if not part:
            continue
        low, _unused, high = part.partition("-")
        values.update(range(int(low), int(high or low) + 1))
    ordered = sorted(values)
    runs = []
    for value in ordered:
        if runs and value == runs[-1][1] + 1:
            runs[-1][1] = value
        else:
            runs.append([value, value])
    return ",".join("%d" % a if a == b else "%d-%d" % (a, b) for a, b in runs)


def hwloc_synthetic(sockets, cores_per_socket, threads_per_core):
    """The HWLOC_SYNTHETIC description of a node shape."""
    for label, value in (("sockets", sockets), ("cores_per_socket", cores_per_socket),
                         ("threads_per_core", threads_per_core)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:
            raise ValueError("%s must be a positive integer, got %r" % (label, value))
    return "package:%d core:%d pu:%d" % (sockets, cores_per_socket, threads_per_core)


def _joined_lines(text):
    """Physical lines glued the way slurmd reads them: comment stripped per line, then an odd run of
    trailing backslashes continues onto the next line with nothing inserted (parse_config.c)."""
    pending = ""
    for raw in text.splitlines():
        line = re.split(r"(?<!\\)#", raw, 1)[0]
        stripped = line.rstrip()
        run = len(stripped) - len(stripped.rstrip("\\"))
        if run % 2 == 1:
            pending += stripped[:-1]
            continue
        yield re.sub(r"\\(.)", r"\1", pending + line)
        pending = ""
    if pending:
        yield re.sub(r"\\(.)", r"\1", pending)


_PAIR = re.compile(r"([A-Za-z0-9_.]+)\s*=\s*(\"[^\"]*\"|\S+)")


def gres_conf_device_paths(gres_text, node_name):
    """Every File=/Files=/MultipleFiles= path of the gres.conf lines that apply to node_name, in order.

    A line applies when it has no NodeName or its NodeName hostlist contains the node. Lines and values
    that do not expand are skipped (slurmd itself judges them).
    """
    paths = []
    for line in _joined_lines(gres_text):
        pairs = {k.lower(): v.strip('"') for k, v in _PAIR.findall(line)}
        if "nodename" in pairs:
            try:
                if node_name not in hostlist.expand_hostlist(pairs["nodename"]):
                    continue
            except hostlist.BadHostlist:
                continue
        for key in ("file", "files", "multiplefiles"):
            if key in pairs:
                try:
                    expanded = hostlist.expand_hostlist(pairs[key])
                except hostlist.BadHostlist:
                    continue
                for path in expanded:
                    if path not in paths:
                        paths.append(path)
    return paths


def device_number(path):
    """(major, minor) for an NVIDIA device path the harness knows how to make, else None."""
    for pattern, major in _DEVICE_RULES:
        match = pattern.match(path)
        if match:
            return major, int(match.group(1))
    return None


def find_slurmd():
    found = shutil.which("slurmd")
    if found:
        return found
    for candidate in _SLURMD_CANDIDATES:
        if os.access(candidate, os.X_OK):
            return candidate
    return None


def slurmd_release():
    """"MAJOR.MINOR" of the local slurmd (``slurmd -V`` prints ``slurm-wlm 22.05.8``), or None without one."""
    slurmd = find_slurmd()
    if slurmd is None:
        return None
    try:
        out = subprocess.run([slurmd, "-V"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=30,
                             check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    match = re.search(r"(\d+)\.(\d+)\.\d+", out.decode(errors="replace"))
    return "%02d.%02d" % (int(match.group(1)), int(match.group(2))) if match else None


def unavailable_reason():
    """None when the oracle can run here, else why not."""
    if find_slurmd() is None:
        return "slurmd not installed (run `make system-deps` as root)"
    if shutil.which("unshare") is None:
        return "util-linux unshare not installed"
    if os.geteuid() != 0:
        return "needs root for a private mount namespace and mknod"
    return None


def require_oracle():
    """In a pytest test: skip when the oracle cannot run, but fail under CI=true (never a silent skip)."""
    import pytest

    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("CI=true and the slurmd oracle cannot run: " + reason)
    pytest.skip(reason)


def _private_slurm_conf(slurm_text, workdir):
    """slurm.conf with slurmd's own paths moved into workdir and the site's PluginDir left out; every other line
    untouched."""
    key_re = re.compile(r"(^|\s)(%s)=\S+" % "|".join(_PRIVATE_KEYS), re.IGNORECASE)
    lines = [key_re.sub(r"\1", line).rstrip() if not line.lstrip().startswith("#") else line
             for line in slurm_text.splitlines()]
    lines += [
        "# slurmd_oracle: private paths",
        "SlurmdSpoolDir=%s" % os.path.join(workdir, "spool"),
        "SlurmdPidFile=%s" % os.path.join(workdir, "slurmd.pid"),
    ]
    return "\n".join(lines) + "\n"


BASIC_DEVICES = (("/dev/null", 1, 3), ("/dev/zero", 1, 5), ("/dev/random", 1, 8), ("/dev/urandom", 1, 9))


def _namespace_script(devices):
    """sh script run under unshare: tmpfs on /dev, the basic nodes, the GPU nodes, then exec slurmd."""
    cmds = [
        "set -e",
        "mount -t tmpfs -o mode=0755,size=1m slurmd-oracle-dev /dev",
    ] + ["mknod -m 0666 %s c %d %d" % dev for dev in BASIC_DEVICES]
    basic = {path for path, _unused1, _unused2 in BASIC_DEVICES}
    for path, major, minor in devices:
        if path in basic:  # a gres.conf naming /dev/null (fake GPUs in test clusters): it exists already
            continue
        parent = os.path.dirname(path)
        if parent != "/dev":
            cmds.append("mkdir -p %s" % shlex.quote(parent))
        cmds.append("mknod -m 0666 %s c %d %d" % (shlex.quote(path), major, minor))
    cmds.append("echo %s >&2" % shlex.quote(_SETUP_MARK))
    cmds.append('exec "$@"')
    return "\n".join(cmds)


def run_slurmd_g(node_name, slurm_conf, gres_conf, sockets, cores_per_socket, threads_per_core,
                 devices=None, omit=(), extra_files=None, timeout=DEFAULT_TIMEOUT, other_devices=False,
                 root=None):
    """Run the real ``slurmd -N node_name -G`` on these files for a node of this shape.

    root: None runs this machine's slurmd; a chroot of another Slurm release (slurm_release.release_root) runs
        that release's slurmd inside it, with its own munged (24.11+ needs one even for -G).

    slurm_conf, gres_conf: file contents (str).
    devices: None (default) makes every NVIDIA device path that gres.conf names for this node;
        or an iterable of paths, or a mapping path -> (major, minor), to make exactly those.
        Paths the harness cannot number (not /dev/nvidiaN or /dev/nvidia-caps/nvidia-capN) are
        left absent, as they would be on a real node, unless other_devices is true: then every path
        under /dev that gres.conf names is made (major OTHER_MAJOR, minors in order).
    omit: device paths to leave out (to judge a node where a GPU is missing).
    extra_files: {name: text} written beside slurm.conf (e.g. cgroup.conf).
    Returns an OracleResult; raises OracleSetupError when slurmd could not be run at all.
    """
    reason = unavailable_reason() if root is None else None
    if reason:
        raise OracleSetupError(reason)
    shape = hwloc_synthetic(sockets, cores_per_socket, threads_per_core)
    named = gres_conf_device_paths(gres_conf, node_name)
    if devices is None:
        wanted = {p: device_number(p) for p in named}
        if other_devices:
            others = [p for p in named if wanted[p] is None and p.startswith("/dev/")]
            wanted.update({p: (OTHER_MAJOR, i) for i, p in enumerate(others)})
    elif isinstance(devices, dict):
        wanted = dict(devices)
    else:
        wanted = {p: device_number(p) for p in devices}
    omit = set(omit)
    made, absent = [], []
    for path, number in wanted.items():
        if path in omit or number is None:
            continue
        if not path.startswith("/dev/") or ".." in path.split("/"):
            raise ValueError("device path must be under /dev: %r" % path)
        made.append((path, number[0], number[1]))
    made_paths = {p for p, _kind, _minor in made}
    absent = [p for p in named if p not in made_paths]

    workdir = tempfile.mkdtemp(prefix="slurmd-oracle-")
    try:
        os.mkdir(os.path.join(workdir, "spool"))
        conf_path = os.path.join(workdir, "slurm.conf")
        if root is not None:
            import slurm_release
            seen_as = slurm_release.CONF_DIR
        else:
            seen_as = workdir
        with open(conf_path, "w") as handle:
            handle.write(_private_slurm_conf(slurm_conf, seen_as))
        with open(os.path.join(workdir, "gres.conf"), "w") as handle:
            handle.write(gres_conf)
        for name, text in (extra_files or {}).items():
            if os.path.basename(name) != name or name in ("slurm.conf", "gres.conf"):
                raise ValueError("extra_files names a plain file beside slurm.conf, got %r" % name)
            with open(os.path.join(workdir, name), "w") as handle:
                handle.write(text)
        if root is not None:
            command = ["slurmd", "-N", node_name, "-G"]
            try:
                returncode, output = slurm_release.run_in_release(
                    root, workdir, command, devices=made, timeout=timeout,
                    env={"SLURM_CONF": seen_as + "/slurm.conf", "HWLOC_SYNTHETIC": shape})
            except RuntimeError as exc:
                raise OracleSetupError(str(exc))
            return OracleResult(node_name, shape, command, returncode, output, made, absent)
        slurmd = find_slurmd()
        command = [slurmd, "-N", node_name, "-G"]
        argv = ["unshare", "-m", "--propagation", "private", "--", "/bin/sh", "-c",
                _namespace_script(made), "slurmd-oracle"] + command
        env = {
            "PATH": "/usr/sbin:/usr/bin:/sbin:/bin",
            "LANG": "C",
            "SLURM_CONF": conf_path,
            "HWLOC_SYNTHETIC": shape,
        }
        try:
            proc = subprocess.run(argv, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                  timeout=timeout, cwd=workdir)
        except subprocess.TimeoutExpired as exc:
            raise OracleSetupError("slurmd -N %s -G did not finish in %ss: %s"
                                   % (node_name, timeout, (exc.output or b"").decode(errors="replace")))
        output = proc.stdout.decode(errors="replace")
        if _SETUP_MARK not in output:
            raise OracleSetupError("could not prepare the private /dev for slurmd (exit %s):\n%s"
                                   % (proc.returncode, output))
        output = output.replace(_SETUP_MARK + "\n", "", 1)
        return OracleResult(node_name, shape, command, proc.returncode, output, made, absent)
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


def run_for_node(node, slurm_conf, gres_conf, **kwargs):
    """run_slurmd_g for a cluster-model node dict (name, sockets, cores_per_socket, threads_per_core)."""
    return run_slurmd_g(node["name"], slurm_conf, gres_conf, node["sockets"], node["cores_per_socket"],
                        node["threads_per_core"], **kwargs)
