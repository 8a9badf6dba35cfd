"""Turn an hwloc v2 XML of a real machine into the sysfs tree its Linux kernel would show (test helper).

Feed it the output of ``lstopo --input FILE --of xml`` (``hwloc_oracle.full_xml``), so hwloc 1.x files and
cpuid dumps arrive in one format. It writes, under ``root``:

- ``sys/devices/system/cpu/{online,possible,present}`` and ``cpuN/`` for every cpu of the complete set;
  for online cpus ``topology/`` with ``physical_package_id``, ``core_id``, ``die_id`` (ids = the objects'
  os_index, ``-1`` when hwloc had none), ``core_cpus``/``thread_siblings``, ``package_cpus``/``core_siblings``,
  ``die_cpus``, ``cluster_cpus`` (Groups of subtype Cluster), ``book_siblings``/``drawer_siblings`` (s390),
  masks and ``_list`` forms; no core/package files where the XML has no Core/Package (as on Cell or
  old kernels), and ``cache/indexK/`` for every cache above the cpu;
- ``sys/devices/system/node/nodeN/{cpumap,cpulist,distance}`` (distances from the NUMALatency matrix);
- ``proc/hwloc-nofile-info`` (Architecture), ``proc/cpuinfo`` (vendor and family of each package);
- a cgroup v2 cpuset holding the allowed cpus when the XML has disallowed ones;
- ``sys/bus/pci/devices/<bdf>/{vendor,device,class,local_cpus,local_cpulist,numa_node}`` for NVIDIA GPUs;
- ``sys/devices/cpu_core/cpus`` and ``cpu_atom/cpus`` (Intel hybrid PMUs) from the XML's CPU kinds.

Only Linux-visible structure survives: Groups that came from the x86 backend (Intel modules, tiles, AMD
compute units) have no sysfs file, so comparing hwloc on the written tree with hwloc on the XML tells
whether the conversion kept everything that matters (the corpus test reports such losses separately).
"""
import os
import xml.etree.ElementTree as ET

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpusets

CACHE_TYPES = {"L1Cache": 1, "L2Cache": 2, "L3Cache": 3, "L4Cache": 4, "L5Cache": 5,
               "L1iCache": 1, "L2iCache": 2, "L3iCache": 3}
NVIDIA = "10de"


def _bitmap(elem, attr):
    return cpusets.parse_hwloc_bitmap(elem.get(attr)) if elem.get(attr) else 0


def _write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as handle:
        handle.write(text)


def parse(xml_text):
    """The parts of the XML the kernel would expose, as plain data."""
    doc = ET.fromstring(xml_text)
    root = doc.find("object")
    info = {
        "complete": _bitmap(root, "complete_cpuset") or _bitmap(root, "cpuset"),
        "online": _bitmap(root, "cpuset"),
        "allowed": _bitmap(root, "allowed_cpuset") if root.get("allowed_cpuset") else None,
        "arch": None,
        "vendor": None,
        "family": None,
        "pus": {},        # os index -> {"package": (id, set), "core": ..., "die": ..., "cluster": ..., ...}
        "caches": {},     # os index -> [(level, type, cpuset, size, id)]
        "numa": {},       # os index -> cpuset
        "distances": None,
        "gpus": [],       # {"bus_id", "device", "class", "cpuset", "numa"}
        "cpukinds": {},   # CoreType (IntelCore, IntelAtom) -> cpuset
    }
    for kind in doc.findall("cpukind"):
        for i in kind.findall("info"):
            if i.get("name") == "CoreType":
                info["cpukinds"][i.get("value")] = _bitmap(kind, "cpuset")
    for elem in root.findall("info"):
        if elem.get("name") == "Architecture":
            info["arch"] = elem.get("value")

    def walk(elem, ancestors):
        type_ = elem.get("type")
        if type_ == "NUMANode":
            info["numa"][int(elem.get("os_index"))] = _bitmap(elem, "cpuset")
            return
        if type_ == "Package":
            for i in elem.findall("info"):
                if i.get("name") == "CPUVendor" and info["vendor"] is None:
                    info["vendor"] = i.get("value")
                if i.get("name") == "CPUFamilyNumber" and info["family"] is None:
                    info["family"] = i.get("value")
        if type_ == "PCIDev":
            pci_type = elem.get("pci_type", "")
            klass, _sp, ids = pci_type.partition(" [")
            vendor, _c, device = ids.rstrip("]").partition(":")
            if vendor.lower() == NVIDIA and klass.startswith("03"):
                cpu_anc = next(a for a in reversed(ancestors) if a.get("type") not in ("Bridge", "PCIDev", "OSDev"))
                numa = [int(n.get("os_index")) for n in cpu_anc.findall("object") if n.get("type") == "NUMANode"]
                info["gpus"].append({"bus_id": elem.get("pci_busid"), "device": device[:4].lower(),
                                     "class": klass, "cpuset": _bitmap(cpu_anc, "cpuset"),
                                     "numa": numa[0] if len(numa) == 1 else None})
        if type_ == "PU":
            pu = int(elem.get("os_index"))
            entry = {}
            caches = []
            for anc in ancestors:
                anc_type = anc.get("type")
                key = {"Package": "package", "Core": "core", "Die": "die"}.get(anc_type)
                os_index = anc.get("os_index")
                label = int(os_index) if os_index not in (None, "") else -1
                if key:
                    entry[key] = (label, _bitmap(anc, "cpuset"))
                elif anc_type == "Group" and anc.get("subtype") in ("Cluster", "Book", "Drawer"):
                    entry[anc.get("subtype").lower()] = (label, _bitmap(anc, "cpuset"))
                elif anc_type in CACHE_TYPES:
                    ctype = {"0": "Unified", "1": "Data", "2": "Instruction"}.get(anc.get("cache_type", "0"),
                                                                                  "Unified")
                    if anc_type.endswith("iCache"):
                        ctype = "Instruction"
                    caches.append((CACHE_TYPES[anc_type], ctype, _bitmap(anc, "cpuset"),
                                   int(anc.get("cache_size", "0") or 0), label))
            info["pus"][pu] = entry
            info["caches"][pu] = sorted(caches, key=lambda c: (c[0], c[1] != "Data"))
        for child in elem.findall("object"):
            walk(child, ancestors + [elem])

    walk(root, [])
    for dist in doc.iter("distances2"):
        if dist.get("name") in ("NUMALatency", None) and dist.get("type") == "NUMANode":
            indexes = [int(v) for v in (dist.findtext("indexes") or "").split()]
            values = [int(v) for v in " ".join(v.text or "" for v in dist.findall("u64values")).split()]
            if indexes and len(values) == len(indexes) ** 2:
                info["distances"] = (indexes, values)
                break
    return info


def write(root, xml_text):
    """Write the sysfs/procfs tree for ``xml_text`` under ``root``; returns ``parse(xml_text)``."""
    info = parse(xml_text)
    nr = max(cpusets.bits(info["complete"]) or [0]) + 1
    base = os.path.join(root, "sys", "devices", "system", "cpu")
    complete = info["complete"]
    online = info["online"]
    _write(os.path.join(base, "possible"), cpusets.to_cpulist(complete) + "\n")
    _write(os.path.join(base, "present"), cpusets.to_cpulist(complete) + "\n")
    _write(os.path.join(base, "online"), cpusets.to_cpulist(online) + "\n")
    _write(os.path.join(base, "offline"), cpusets.to_cpulist(complete & ~online) + "\n")
    for cpu in cpusets.bits(complete):
        cpu_dir = os.path.join(base, "cpu%d" % cpu)
        os.makedirs(cpu_dir, exist_ok=True)
        if cpu:
            _write(os.path.join(cpu_dir, "online"), "1\n" if online >> cpu & 1 else "0\n")
        entry = info["pus"].get(cpu)
        if entry is None or not online >> cpu & 1:
            continue
        topo = os.path.join(cpu_dir, "topology")
        os.makedirs(topo, exist_ok=True)
        files = {}
        package = entry.get("package")
        files["physical_package_id"] = str(package[0] if package else -1)
        if package:
            files["package_cpus"] = files["core_siblings"] = package[1]
        core = entry.get("core")
        if core:
            files["core_id"] = str(core[0])
            files["core_cpus"] = files["thread_siblings"] = core[1]
        die = entry.get("die")
        if die:
            files["die_id"] = str(die[0])
            files["die_cpus"] = die[1]
        cluster = entry.get("cluster")
        if cluster:
            files["cluster_id"] = str(cluster[0])
            files["cluster_cpus"] = cluster[1]
        for key in ("book", "drawer"):
            if entry.get(key):
                files["%s_id" % key] = str(entry[key][0])
                files["%s_siblings" % key] = entry[key][1]
        for name, value in files.items():
            if isinstance(value, int):
                _write(os.path.join(topo, name), cpusets.to_kernel_mask(value, nr) + "\n")
                _write(os.path.join(topo, name + "_list"), cpusets.to_cpulist(value) + "\n")
            else:
                _write(os.path.join(topo, name), value + "\n")
        for index, (level, ctype, cacheset, size, cache_id) in enumerate(info["caches"].get(cpu, [])):
            cache = os.path.join(cpu_dir, "cache", "index%d" % index)
            _write(os.path.join(cache, "level"), "%d\n" % level)
            _write(os.path.join(cache, "type"), ctype + "\n")
            _write(os.path.join(cache, "shared_cpu_map"), cpusets.to_kernel_mask(cacheset, nr) + "\n")
            _write(os.path.join(cache, "shared_cpu_list"), cpusets.to_cpulist(cacheset) + "\n")
            _write(os.path.join(cache, "size"), "%dK\n" % (size // 1024))
            if cache_id >= 0:
                _write(os.path.join(cache, "id"), "%d\n" % cache_id)
    nodes = os.path.join(root, "sys", "devices", "system", "node")
    if info["numa"]:
        _write(os.path.join(nodes, "online"), cpusets.to_cpulist(cpusets.mask_of(info["numa"])) + "\n")
        _write(os.path.join(nodes, "possible"), cpusets.to_cpulist(cpusets.mask_of(info["numa"])) + "\n")
    distances = {}
    if info["distances"]:
        indexes, values = info["distances"]  # pylint: disable=unpacking-non-sequence
        size = len(indexes)
        for i, node in enumerate(indexes):
            distances[node] = {indexes[j]: values[i * size + j] for j in range(size)}
    for node, cpuset in sorted(info["numa"].items()):
        _write(os.path.join(nodes, "node%d" % node, "cpumap"), cpusets.to_kernel_mask(cpuset, nr) + "\n")
        _write(os.path.join(nodes, "node%d" % node, "cpulist"), cpusets.to_cpulist(cpuset) + "\n")
        if set(distances) == set(info["numa"]):
            row = " ".join(str(distances[node][other]) for other in sorted(info["numa"]))
            _write(os.path.join(nodes, "node%d" % node, "distance"), row + "\n")
    proc = os.path.join(root, "proc")
    if info["arch"]:
        _write(os.path.join(proc, "hwloc-nofile-info"), "Architecture: %s\n" % info["arch"])
    lines = []
    for cpu in cpusets.bits(online):
        lines.append("processor\t: %d" % cpu)
        if info["vendor"]:
            lines.append("vendor_id\t: %s" % info["vendor"])
        if info["family"]:
            lines.append("cpu family\t: %s" % info["family"])
        lines.append("")
    _write(os.path.join(proc, "cpuinfo"), "\n".join(lines) + "\n")
    if info["allowed"] is not None and online & ~info["allowed"]:
        _write(os.path.join(proc, "self", "cgroup"), "0::/converted\n")
        _write(os.path.join(proc, "mounts"), "cgroup2 /sys/fs/cgroup cgroup2 rw,nosuid,nodev,noexec 0 0\n")
        cgroup = os.path.join(root, "sys", "fs", "cgroup")
        _write(os.path.join(cgroup, "cgroup.controllers"), "cpuset cpu memory\n")
        _write(os.path.join(cgroup, "converted", "cpuset.cpus.effective"),
               cpusets.to_cpulist(info["allowed"]) + "\n")
        _write(os.path.join(cgroup, "converted", "cpuset.mems.effective"),
               cpusets.to_cpulist(cpusets.mask_of(info["numa"]) or 1) + "\n")
    for core_type, pmu in (("IntelCore", "cpu_core"), ("IntelAtom", "cpu_atom")):
        if core_type in info["cpukinds"]:
            _write(os.path.join(root, "sys", "devices", pmu, "cpus"),
                   cpusets.to_cpulist(info["cpukinds"][core_type]) + "\n")
    for gpu in info["gpus"]:
        dev = os.path.join(root, "sys", "bus", "pci", "devices", gpu["bus_id"])
        _write(os.path.join(dev, "vendor"), "0x%s\n" % NVIDIA)
        _write(os.path.join(dev, "device"), "0x%s\n" % gpu["device"])
        _write(os.path.join(dev, "class"), "0x%s00\n" % gpu["class"])
        _write(os.path.join(dev, "local_cpus"), cpusets.to_kernel_mask(gpu["cpuset"], nr) + "\n")
        _write(os.path.join(dev, "local_cpulist"), cpusets.to_cpulist(gpu["cpuset"]) + "\n")
        _write(os.path.join(dev, "numa_node"), "%d\n" % (gpu["numa"] if gpu["numa"] is not None else -1))
    return info


def read_pci_gpus(root):
    """NVIDIA display/3D controllers of a sysfs tree: ``[{"bus_id", "cpuset"}]`` from local_cpus."""
    devices = os.path.join(root, "sys", "bus", "pci", "devices")
    found = []
    for name in sorted(os.listdir(devices)) if os.path.isdir(devices) else []:
        path = os.path.join(devices, name)

        def read(file_name):
            try:
                with open(os.path.join(path, file_name)) as handle:
                    return handle.read().strip()
            except (IOError, OSError):
                return ""
        if read("vendor").lower() != "0x" + NVIDIA or not read("class").lower().startswith("0x03"):
            continue
        mask = read("local_cpus")
        if not mask:
            continue
        found.append({"bus_id": name, "cpuset": cpusets.parse_kernel_mask(mask)})
    return found
