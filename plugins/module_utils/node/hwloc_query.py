"""Ask hwloc itself for the node's topology, loaded the way slurmd loads it, as hwloc XML text.

Two ways, tried in this order by cpu_topology.read_cpu_topology:

- ``libhwloc``: the library slurmd links (``libhwloc.so.15``, hwloc 2.x), called through ctypes in a separate
  Python process (a crash there cannot take the module down) with slurmd's settings from
  ``src/slurmd/common/xcpuinfo.c``: ``HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED`` (the old WHOLE_SYSTEM) and
  L1/L2/L4/L5 caches and Misc filtered out; the topology is exported with
  ``hwloc_topology_export_xmlbuffer``.
- ``lstopo``: ``lstopo-no-graphics`` (Debian/Ubuntu ``hwloc-nox``, RHEL ``hwloc``) with the same filters.

``run(argv) -> (rc, stdout, stderr)`` runs a command (AnsibleModule.run_command in the module).
Both return ``(xml_text, detail)`` or raise HwlocUnavailable with the reason.
"""
import os
import sys

# Slurm's filters on top of hwloc's defaults, spelled for lstopo (hwloc 2.x).
LSTOPO_FILTERS = ["--filter", "cache:none", "--filter", "l3cache:all", "--filter", "icache:none",
                  "--filter", "memcache:none", "--filter", "group:structure", "--filter", "misc:none", "--no-io"]
LSTOPO_NAMES = ("lstopo-no-graphics", "lstopo")

# Runs in its own interpreter: argv[1] is the filesystem root ("/" for this machine).
LIBHWLOC_SCRIPT = r"""
import ctypes, ctypes.util, os, sys
root = sys.argv[1]
if root not in ("", "/"):
    os.environ["HWLOC_FSROOT"] = root
    os.environ["HWLOC_COMPONENTS"] = "linux,stop"
lib = None
tried = []
def candidates():
    yield "libhwloc.so.15"
    # asked only when the soname did not load: find_library runs ldconfig -p (and a C compiler when that finds nothing)
    yield ctypes.util.find_library("hwloc")
for name in candidates():
    if not name or name in tried:
        continue
    tried.append(name)
    try:
        lib = ctypes.CDLL(name)
        break
    except OSError:
        pass
if lib is None:
    sys.stderr.write("no libhwloc (tried %s)\n" % ", ".join(tried))
    sys.exit(3)
lib.hwloc_get_api_version.restype = ctypes.c_uint
api = lib.hwloc_get_api_version()
if api >> 16 != 2:
    sys.stderr.write("%s has hwloc API 0x%x, not 2.x\n" % (name, api))
    sys.exit(3)
vp = ctypes.c_void_p
lib.hwloc_topology_init.argtypes = [ctypes.POINTER(vp)]
lib.hwloc_topology_set_flags.argtypes = [vp, ctypes.c_ulong]
lib.hwloc_topology_set_type_filter.argtypes = [vp, ctypes.c_int, ctypes.c_int]
lib.hwloc_topology_load.argtypes = [vp]
lib.hwloc_topology_export_xmlbuffer.argtypes = [vp, ctypes.POINTER(vp), ctypes.POINTER(ctypes.c_int), ctypes.c_ulong]
lib.hwloc_free_xmlbuffer.argtypes = [vp, vp]
lib.hwloc_topology_destroy.argtypes = [vp]
topo = vp()
if lib.hwloc_topology_init(ctypes.byref(topo)):
    sys.stderr.write("hwloc_topology_init failed\n")
    sys.exit(4)
lib.hwloc_topology_set_flags(topo, 1)  # HWLOC_TOPOLOGY_FLAG_INCLUDE_DISALLOWED
for objtype in (4, 5, 7, 8, 17):  # L1CACHE L2CACHE L4CACHE L5CACHE MISC
    lib.hwloc_topology_set_type_filter(topo, objtype, 1)  # KEEP_NONE
if lib.hwloc_topology_load(topo):
    sys.stderr.write("hwloc_topology_load failed\n")
    sys.exit(5)
buf = vp()
size = ctypes.c_int()
if lib.hwloc_topology_export_xmlbuffer(topo, ctypes.byref(buf), ctypes.byref(size), 0):
    sys.stderr.write("hwloc_topology_export_xmlbuffer failed\n")
    sys.exit(6)
sys.stdout.write(ctypes.string_at(buf).decode("utf-8", "replace"))
lib.hwloc_free_xmlbuffer(topo, buf)
lib.hwloc_topology_destroy(topo)
sys.stderr.write("%s\n" % name)
"""


class HwlocUnavailable(Exception):
    """hwloc could not be asked (not installed, too old, failed): ``str()`` says why."""


def _first_line(text):
    text = (text or "").strip()
    return text.splitlines()[0] if text else ""


def query_libhwloc(run, sysfs_root="/", python=None):
    """``(xml, detail)`` from libhwloc through ctypes; HwlocUnavailable otherwise."""
    argv = [python or sys.executable or "python3", "-c", LIBHWLOC_SCRIPT, sysfs_root or "/"]
    rc, out, err = run(argv)
    if rc != 0 or "<topology" not in (out or ""):
        raise HwlocUnavailable("libhwloc: %s" % (_first_line(err) or "exit code %s" % rc))
    return out, _first_line(err) or "libhwloc"


def find_lstopo(which):
    for name in LSTOPO_NAMES:
        path = which(name)
        if path:
            return path
    return None


def query_lstopo(run, which, sysfs_root="/"):
    """``(xml, detail)`` from lstopo; HwlocUnavailable otherwise (lstopo 1.x has no --filter and fails)."""
    path = find_lstopo(which)
    if path is None:
        raise HwlocUnavailable("lstopo: neither %s is on PATH" % " nor ".join(LSTOPO_NAMES))
    argv = [path]
    if sysfs_root not in (None, "", "/"):
        # another root (tests): the Linux backend alone, as hwloc's own tests read dumps
        argv = ["env", "HWLOC_COMPONENTS=linux,stop", path, "--input", os.path.abspath(sysfs_root),
                "--input-format", "fsroot"]
    argv += ["--disallowed"] + LSTOPO_FILTERS + ["--of", "xml", "-"]
    rc, out, err = run(argv)
    if rc != 0 or "<topology" not in (out or ""):
        raise HwlocUnavailable("%s: %s" % (path, _first_line(err) or _first_line(out) or "exit code %s" % rc))
    return out, path
