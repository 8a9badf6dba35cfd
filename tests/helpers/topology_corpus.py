"""Check cpu_topology against hwloc (and optionally the real slurmd) on real topology files.

One entry point, ``check(path, workdir)``, takes any of:

- an hwloc XML file (``.xml``, ``.xml.xz``), v1 or v2: converted to a sysfs tree (hwloc_sysfs.py);
- a sysfs dump as hwloc's tests store them (``.tar.bz2``/``.tar.gz`` holding ``sys/devices/system/cpu``):
  loaded as it is;
- an x86 cpuid dump (``.tar.bz2`` holding ``hwloc-cpuid-info``): hwloc turns it into XML, then as above.

Placements are every Package and every NUMA node with cpus (``package:i`` / ``numa:i`` as hwloc-calc names
them) and every NVIDIA GPU (its PCI locality). For each, the expected Slurm cores are
``hwloc-calc --li --intersect core`` on the topology with Slurm's settings (hwloc_oracle.py); the collection's
answer comes from both its paths: ``sysfs`` (cpu_topology.from_sysfs on the tree) and ``hwloc``
(cpu_topology.from_hwloc_xml on what lstopo exports, i.e. what the node-side libhwloc/lstopo path reads).
The shape is compared with hwloc's package/core/PU counts and, with ``slurmd=True``, with the real
``slurmd -C`` line and slurmd's CPU map. On an Intel hybrid CPU the same is done for the P-cores alone
(``result["ecores"]``): hwloc restricts the topology to its IntelCore kind, as Slurm 23.02+ does without
``SlurmdParameters=allow_ecores``, and that is compared with ``CpuTopology.without_ecores()``.
"""
import lzma
import os
import shutil
import subprocess
import tarfile

import hwloc_oracle
import hwloc_sysfs

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpu_topology, cpusets


def _extract(archive, dest):
    os.makedirs(dest, exist_ok=True)
    # GNU tar unpacks the ten thousand small files of a sysfs dump ten times faster than tarfile
    untar = ["tar", "-C", dest, "-xf", archive]
    if shutil.which("tar") is None or subprocess.run(untar, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                                                     check=False).returncode != 0:
        _extract_with_tarfile(archive, dest)
    for dirpath, dirnames, filenames in os.walk(dest):
        if "hwloc-cpuid-info" in filenames:
            return "cpuid", dirpath
        if os.path.isdir(os.path.join(dirpath, "sys", "devices", "system", "cpu")):
            return "fsroot", dirpath
    raise ValueError("%s holds neither sys/devices/system/cpu nor a cpuid dump" % archive)


def _extract_with_tarfile(archive, dest):
    with tarfile.open(archive) as tar:
        members = [m for m in tar.getmembers() if not (m.name.startswith("/") or ".." in m.name.split("/"))
                   and (m.isfile() or m.isdir() or m.issym())]
        for m in members:
            if m.issym() and (m.linkname.startswith("/") or ".." in m.linkname.split("/")):
                m.linkname = os.path.basename(m.linkname)
        tar.extractall(dest, members=members)


def name_of(path):
    base = os.path.basename(path.rstrip("/"))
    for ext in (".xml.xz", ".xml", ".tar.bz2", ".tar.gz", ".tar.xz"):
        if base.endswith(ext):
            return base[:-len(ext)]
    return base


def prepare(path, workdir):
    """``(kind, source)`` for hwloc: kind ``xml``, ``fsroot`` or ``cpuid``."""
    os.makedirs(workdir, exist_ok=True)
    if path.endswith(".xml.xz"):
        target = os.path.join(workdir, "input.xml")
        with lzma.open(path, "rb") as src, open(target, "wb") as dst:
            shutil.copyfileobj(src, dst)
        return "xml", target
    if path.endswith(".xml"):
        return "xml", path
    if os.path.isdir(path):
        if os.path.exists(os.path.join(path, "hwloc-cpuid-info")):
            return "cpuid", path
        return "fsroot", path
    return _extract(path, os.path.join(workdir, "input"))


def _placements(view_xml):
    """[(label, hwloc bitmap)] for every package and every NUMA node with cpus, as hwloc names them."""
    counts = hwloc_oracle.counts(view_xml)
    labels = ["package:%d" % i for i in range(counts["package"])] + ["numa:%d" % i for i in range(counts["numa"])]
    if not labels:
        return []
    out = hwloc_oracle._run([hwloc_oracle.hwloc_calc(), "--input", view_xml, "--input-format", "xml",
                             "--disallowed"], stdin="".join(lab + "\n" for lab in labels))
    out = hwloc_oracle.stdin_answers(out)
    return [(lab, mask) for lab, mask in zip(labels, out) if cpusets.parse_hwloc_bitmap(mask)]


def check(path, workdir, slurmd=False, paths=("sysfs", "hwloc")):
    """Compare the collection with hwloc on one topology file. Returns a dict (see ``summarize``)."""
    kind, source = prepare(path, workdir)
    view = hwloc_oracle.slurm_view_xml(source, kind, os.path.join(workdir, "slurm-view.xml"))
    result = {"name": name_of(path), "kind": kind, "placements": [], "errors": [], "converted": None}
    root = source
    gpus = []
    if kind == "fsroot":
        gpus = hwloc_sysfs.read_pci_gpus(source)
    else:
        full = hwloc_oracle.full_xml(source, kind, os.path.join(workdir, "full.xml"))
        root = os.path.join(workdir, "sysfs")
        with open(full) as handle:
            info = hwloc_sysfs.write(root, handle.read())
        gpus = info["gpus"]
        converted_view = hwloc_oracle.slurm_view_xml(root, "fsroot", os.path.join(workdir, "converted-view.xml"))
        result["converted"] = converted_view
    placements = _placements(view)
    placements += [("gpu:%s" % g["bus_id"], cpusets.to_hwloc_bitmap(g["cpuset"])) for g in gpus if g["cpuset"]]
    masks = [m for _label, m in placements]
    expected = hwloc_oracle.intersect_cores(view, masks)
    on_converted = hwloc_oracle.intersect_cores(result["converted"], masks) if result["converted"] else None
    ours = {}
    for which in paths:
        try:
            if which == "sysfs":
                ours[which] = cpu_topology.from_sysfs(root)
            else:
                with open(view) as handle:
                    ours[which] = cpu_topology.from_hwloc_xml(handle.read(), "lstopo")
        except ValueError as exc:
            ours[which] = None
            result["errors"].append("%s: %s" % (which, exc))
    for i, (label, mask) in enumerate(placements):
        cpus = cpusets.bits(cpusets.parse_hwloc_bitmap(mask))
        entry = {"label": label, "cpus": cpusets.to_cpulist(cpusets.parse_hwloc_bitmap(mask)),
                 "expected": cpusets.to_cpulist(cpusets.mask_of(expected[i])), "got": {}}
        if on_converted is not None:
            entry["converted"] = cpusets.to_cpulist(cpusets.mask_of(on_converted[i]))
        for which, topo in ours.items():
            entry["got"][which] = topo.slurm_cores(cpus, strict=False) if topo else None
        result["placements"].append(entry)
    counts = hwloc_oracle.counts(view)
    result["hwloc_counts"] = counts
    result["shape"] = {}
    for which, topo in ours.items():
        if topo is None:
            continue
        result["shape"][which] = {"packages": len(topo.packages),
                                  "cores": len(topo.cores), "pus": topo.cpus, "slurmd_c": topo.slurmd_c(),
                                  "fits": not topo.shape_problems(), "problems": topo.shape_problems(),
                                  "block_map": topo.block_map}
    if slurmd:
        # slurmd on the topology itself judges the hwloc path; on the converted tree, the sysfs path (a
        # conversion can lose Groups hwloc had, and with them slurmd's Boards count)
        for key, xml in (("slurmd", view), ("slurmd_converted", result["converted"])):
            if xml is None:
                continue
            try:
                result[key] = hwloc_oracle.slurmd_view(xml)
            except hwloc_oracle.OracleError as exc:
                result["errors"].append("slurmd: %s" % exc)
    _check_without_ecores(result, ours, view, workdir, slurmd)
    return result


def _check_without_ecores(result, ours, view, workdir, slurmd):
    """``result["ecores"]``: hwloc's P-cores and counts of the restricted topology, our view of it per path,
    and (with ``slurmd``) the real slurmd's -C line and CPU map on it. Absent when hwloc has no IntelCore kind."""
    mask = hwloc_oracle.intelcore_cpus(view)
    pcores = cpusets.parse_hwloc_bitmap(mask)
    if not pcores:
        return
    restricted = hwloc_oracle.restrict_xml(view, mask, os.path.join(workdir, "pcores-view.xml"))
    entry = {"pcores": cpusets.to_cpulist(pcores), "hwloc_counts": hwloc_oracle.counts(restricted), "ours": {}}
    for which, topo in ours.items():
        mine = topo.without_ecores() if topo else None
        if mine is not None:
            entry["ours"][which] = {"pcores": cpusets.to_cpulist(mine.pu_mask), "packages": len(mine.packages),
                                    "cores": len(mine.cores), "pus": mine.cpus, "slurmd_c": mine.slurmd_c(),
                                    "block_map": mine.block_map}
    if slurmd:
        try:
            entry["slurmd"] = hwloc_oracle.slurmd_view(restricted)
        except hwloc_oracle.OracleError as exc:
            result["errors"].append("slurmd on the P-cores: %s" % exc)
    result["ecores"] = entry


def ecores_ok(result, which):
    """Our P-core view equals hwloc's restriction (and slurmd's on it). None when hwloc sees no IntelCore kind."""
    entry = result.get("ecores")
    if entry is None:
        return None
    mine = entry["ours"].get(which)
    if mine is None:
        return False
    counts = entry["hwloc_counts"]
    ok = mine["pcores"] == entry["pcores"] and (mine["packages"], mine["cores"], mine["pus"]) == (
        counts["package"], counts["core"], counts["pu"])
    if "slurmd" in entry:
        ok = ok and mine["slurmd_c"] == entry["slurmd"]["slurmd_c"] and mine["block_map"] == entry["slurmd"]["cpu_map"]
    return ok


def placement_ok(entry, which):
    return entry["got"].get(which) == entry["expected"]


def shape_ok(result, which):
    shape = result["shape"].get(which)
    if shape is None:
        return False
    counts = result["hwloc_counts"]
    return (shape["packages"], shape["cores"], shape["pus"]) == (counts["package"], counts["core"], counts["pu"])


def slurmd_ok(result, which):
    """The real slurmd agrees: same -C line, same CPU map. None when slurmd was not asked."""
    real = result.get("slurmd_converted" if which == "sysfs" and result.get("converted") else "slurmd")
    shape = result["shape"].get(which)
    if real is None or shape is None:
        return None
    return real["slurmd_c"] == shape["slurmd_c"] and real["cpu_map"] == shape["block_map"]
