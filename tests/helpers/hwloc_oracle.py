"""hwloc itself (Debian's ``hwloc-nox``) and the real slurmd as oracles for Slurm's core numbering.

- ``slurm_view_xml(source, kind)``: the topology with Slurm's settings (``--disallowed`` = whole system,
  L1/L2/L4/L5 caches, i-caches, memory-side caches and Misc dropped, Groups kept where they bring structure),
  written by ``lstopo`` from an hwloc XML, an fsroot directory (sysfs dump) or a cpuid dump.
- ``intersect_cores(xml_path, masks)``: ``hwloc-calc --input XML --disallowed --li --intersect core MASK`` for
  each mask, in one hwloc-calc process (it reads locations from stdin).
- ``counts(xml_path)``: the package, core, PU and NUMA node counts ``hwloc-info`` prints.
- ``slurmd_view(xml_path)``: the real ``slurmd -C`` line and slurmd's CPU map (``slurmd -D -G`` at debug5
  prints ``CPU map[abstract]=>machine``) with ``HWLOC_XMLFILE`` pointing at the topology.
- ``intelcore_cpus(xml_path)`` / ``restrict_xml(xml_path, mask, out)``: the P-cores hwloc reports
  (``hwloc-calc --cpukind CoreType=IntelCore``) and the topology restricted to them (``lstopo --restrict``),
  which is what Slurm 23.02+ numbers without ``SlurmdParameters=allow_ecores``; Debian's slurmd 22.05 does
  not drop E-cores itself, so on the restricted file it prints what a newer one prints on the whole node.

Nothing here uses the collection's code: it is the independent judge of what cpu_topology computes.
"""
import os
import re
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

FILTERS = ["--filter", "cache:none", "--filter", "l3cache:all", "--filter", "icache:none",
           "--filter", "memcache:none", "--filter", "group:structure", "--filter", "misc:none", "--no-io"]
_ENV = {"LANG": "C", "LC_ALL": "C", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
_CPU_MAP = re.compile(r"CPU map\[(\d+)\]=>(\d+) S:C:T (\d+):(\d+):(\d+)")
_SLURMD_C = re.compile(r"(CPUs=\d+ Boards=\d+ SocketsPerBoard=\d+ CoresPerSocket=\d+ ThreadsPerCore=\d+)")


class OracleError(RuntimeError):
    """hwloc or slurmd could not be run on this input."""


def lstopo():
    return shutil.which("lstopo-no-graphics") or shutil.which("lstopo")


def hwloc_calc():
    return shutil.which("hwloc-calc")


def unavailable_reason():
    if lstopo() is None or hwloc_calc() is None:
        return "hwloc tools not installed (apt-get install hwloc-nox)"
    return None


def require():
    """In a pytest test: fail under CI=true when hwloc is missing, skip otherwise."""
    import pytest

    reason = unavailable_reason()
    if reason is None:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail("CI=true and the hwloc oracle cannot run: " + reason)
    pytest.skip(reason)


def _run(argv, env=None, stdin=None, timeout=120):
    full_env = dict(_ENV)
    full_env.update(env or {})
    proc = subprocess.run(argv, input=stdin, env=full_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True, timeout=timeout, check=False)
    if proc.returncode != 0:
        detail = (proc.stderr or proc.stdout).strip()[:400]
        raise OracleError("%s failed (exit %d): %s" % (" ".join(argv[:3]), proc.returncode, detail))
    return proc.stdout


def input_args(source, kind):
    """lstopo/hwloc-calc arguments selecting an input: ``xml``, ``fsroot`` (sysfs dump) or ``cpuid``."""
    if kind not in ("xml", "fsroot", "cpuid"):
        raise ValueError("kind must be xml, fsroot or cpuid, not %r" % kind)
    return ["--input", source, "--input-format", kind]


def input_env(kind):
    """hwloc's tests read dumps with the Linux backend alone (Debian's hwloc has no pci component to add)."""
    return {"HWLOC_COMPONENTS": "linux,stop"} if kind == "fsroot" else {}


def slurm_view_xml(source, kind, out_path, extra_filters=()):
    """Write the topology of ``source`` as slurmd's hwloc sees it to ``out_path`` (hwloc v2 XML)."""
    _run([lstopo()] + input_args(source, kind) + ["--disallowed"] + FILTERS + list(extra_filters)
         + ["--of", "xml", "-f", out_path], env=input_env(kind))
    return out_path


def full_xml(source, kind, out_path):
    """Everything hwloc knows about ``source`` (all caches, important I/O) as hwloc v2 XML."""
    args = ["--disallowed", "--filter", "all:all", "--filter", "io:important", "--of", "xml", "-f", out_path]
    _run([lstopo()] + input_args(source, kind) + args, env=input_env(kind))
    return out_path


def intersect_cores(xml_path, masks):
    """For each hwloc bitmap string in ``masks``: the list of logical core indexes it intersects."""
    if not masks:
        return []
    out = _run([hwloc_calc(), "--input", xml_path, "--input-format", "xml", "--disallowed", "--li",
                "--intersect", "core"], stdin="".join(m + "\n" for m in masks))
    lines = stdin_answers(out)
    if not lines and counts(xml_path)["core"] == 0:
        lines = [""] * len(masks)  # no Core at all: hwloc-calc answers nothing
    if len(lines) != len(masks):
        raise OracleError("hwloc-calc answered %d lines for %d locations:\n%s" % (len(lines), len(masks), out))
    return [[int(v) for v in line.split(",") if v.strip()] for line in lines]


def stdin_answers(out):
    """hwloc-calc's answers to locations read from stdin (it first prints a prompt line)."""
    return [line for line in out.splitlines() if not line.startswith("Waiting for locations")]


def counts(xml_path):
    """``{"package": n, "core": n, "pu": n, "numa": n}`` as ``hwloc-info`` counts them (one process)."""
    out = _run([shutil.which("hwloc-info") or "hwloc-info", "--input", xml_path, "--input-format", "xml",
                "--disallowed"])
    names = {"Package": "package", "Core": "core", "PU": "pu", "NUMANode": "numa"}
    result = dict.fromkeys(names.values(), 0)
    for match in re.finditer(r"depth [-\d]+:\s+(\d+) (\w+) \(type", out):
        if match.group(2) in names:
            result[names[match.group(2)]] += int(match.group(1))
    return result


def intelcore_cpus(xml_path):
    """The P-cores Slurm 24.11+ keeps, as an hwloc bitmap string ("0x0" when hwloc has no IntelCore kind):
    hwloc's CPU kind CoreType=IntelCore and the kinds with the same FrequencyMaxMHz (xcpuinfo.c)."""
    def cpus_of(selector):
        out = _run([hwloc_calc(), "--input", xml_path, "--input-format", "xml", "--disallowed", "--cpukind",
                    selector, "all"])
        words = out.strip().replace("0x", "").split(",")  # hwloc writes an all-zero word as nothing
        return int("".join((w or "0").rjust(8, "0") for w in words) or "0", 16)

    pcores = cpus_of("CoreType=IntelCore")
    if pcores:
        for kind in ET.parse(xml_path).getroot().findall("cpukind"):
            infos = {i.get("name"): i.get("value") for i in kind.findall("info")}
            if (infos.get("CoreType") or "").lower() == "intelcore" and infos.get("FrequencyMaxMHz"):
                pcores |= cpus_of("FrequencyMaxMHz=%s" % infos["FrequencyMaxMHz"])
    return "0x%x" % pcores


def restrict_xml(xml_path, mask, out_path):
    """``xml_path`` restricted to the cpus of the hwloc bitmap ``mask`` by hwloc itself (hwloc v2 XML)."""
    _run([lstopo(), "--input", xml_path, "--input-format", "xml", "--disallowed", "--restrict", mask]
         + FILTERS + ["--of", "xml", "-f", out_path])
    return out_path


def slurmd_path():
    found = shutil.which("slurmd")
    if found:
        return found
    return "/usr/sbin/slurmd" if os.access("/usr/sbin/slurmd", os.X_OK) else None


def slurmd_view(xml_path, timeout=60):
    """``{"slurmd_c": "CPUs=... ThreadsPerCore=N", "cpu_map": {abstract: machine}}`` from the real slurmd.

    ``slurmd -C`` prints the shape; ``slurmd -D -N node -G`` with SlurmdDebug=debug5 logs slurmd's block map
    (``xcpuinfo_hwloc_topo_get``) before printing the GRES (none configured here), then exits.
    """
    slurmd = slurmd_path()
    if slurmd is None:
        raise OracleError("slurmd not installed")
    env = {"HWLOC_XMLFILE": os.path.abspath(xml_path)}
    line = _SLURMD_C.search(_run([slurmd, "-C"], env=env, timeout=timeout))
    if not line:
        raise OracleError("slurmd -C printed no CPUs= line")
    work = tempfile.mkdtemp(prefix="slurmd-cpumap-")
    try:
        os.mkdir(os.path.join(work, "spool"))
        conf = os.path.join(work, "slurm.conf")
        with open(conf, "w") as handle:
            handle.write("ClusterName=oracle\nSlurmctldHost=localhost\nProctrackType=proctrack/linuxproc\n"
                         "TaskPlugin=task/none\nSelectType=select/cons_tres\nSlurmdSpoolDir=%s/spool\n"
                         "SlurmdPidFile=%s/slurmd.pid\nSlurmdDebug=debug5\nNodeName=oracle %s\n"
                         "PartitionName=p Nodes=ALL\n" % (work, work, line.group(1)))
        open(os.path.join(work, "gres.conf"), "w").close()
        env["SLURM_CONF"] = conf
        proc = subprocess.run([slurmd, "-D", "-N", "oracle", "-G"], env=dict(_ENV, **env), stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, timeout=timeout, cwd=work, check=False)
        cpu_map = {int(m.group(1)): int(m.group(2)) for m in _CPU_MAP.finditer(proc.stdout)}
        if not cpu_map and "CPUs:" not in proc.stdout:
            raise OracleError("slurmd -G logged no CPU map (exit %d):\n%s" % (proc.returncode, proc.stdout[-800:]))
        return {"slurmd_c": line.group(1), "cpu_map": cpu_map}
    finally:
        shutil.rmtree(work, ignore_errors=True)
