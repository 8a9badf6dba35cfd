"""Machine profiles for the emulated nvidia-smi: builders, and the ready profiles under profiles/.

``python3 tests/emulator/machines.py`` rewrites profiles/*.json from the recorded fixtures. Per-GPU CPU
and NUMA affinity in the ready profiles are written here by hand from the fixture text (not produced by the
project's parser), so the profiles stay an independent description of each machine.

A profile may carry ``cpu_layout`` ({sockets, cores_per_socket, threads_per_core, numbering}); tests build a
matching fake sysfs tree from it with :func:`build_sysfs`.
"""
import hashlib
import json
import os
import re
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import fake_sysfs  # noqa: E402

PROFILES = os.path.join(HERE, "profiles")
FIXTURES = os.path.join(os.path.dirname(HERE), "fixtures")


def gpu_uuid(seed):
    """A stable, well-formed GPU UUID for made-up GPUs (real ones are used where a fixture has them)."""
    d = hashlib.sha1(seed.encode()).hexdigest()
    return "GPU-%s-%s-%s-%s-%s" % (d[:8], d[8:12], d[12:16], d[16:20], d[20:32])


def fixture_rel(*parts):
    """Path of a fixture relative to the profiles directory (profiles store relative paths)."""
    return os.path.relpath(os.path.join(FIXTURES, *parts), PROFILES)


def gpu(name, bus, memory_total_mib, cpu_affinity, numa_affinity, uuid=None, memory_used_mib=0, mig_mode=None,
        gpu_numa_id=None, minor=None, **extra):
    entry = {"uuid": uuid or gpu_uuid("%s/%s" % (name, bus)), "name": name, "pci_bus_id": bus,
             "memory_total_mib": memory_total_mib, "memory_used_mib": memory_used_mib, "mig_mode": mig_mode,
             "cpu_affinity": cpu_affinity, "numa_affinity": numa_affinity, "gpu_numa_id": gpu_numa_id}
    if minor is not None:
        entry["minor"] = minor
    entry.update(extra)
    return entry


def layout_of(profile):
    spec = profile.get("cpu_layout")
    if not spec:
        return None
    return fake_sysfs.layout(spec["sockets"], spec["cores_per_socket"], spec.get("threads_per_core", 1),
                             spec.get("numbering", "linear"), offline=spec.get("offline", ()))


def build_sysfs(root, profile, mig_minors=True):
    """Fake ``<root>/sys`` + ``<root>/proc`` for a profile: its cpu_layout, mig-minors and GPU minors."""
    lay = layout_of(profile)
    if lay is None:
        raise ValueError("profile has no cpu_layout")
    # Same defaults as the emulator for hand-written profiles that leave fields out.
    listed = [dict(g, pci_bus_id=g.get("pci_bus_id") or "00000000:%02X:00.0" % (0x10 + 8 * n))
              for n, g in enumerate(profile.get("gpus", []))]
    gpus = [{"pci_bus_id": g["pci_bus_id"], "minor": g.get("minor", n), "name": g.get("name", "NVIDIA GPU"),
             "uuid": g.get("uuid", "")}
            for n, g in enumerate(sorted(listed, key=lambda g: g["pci_bus_id"].upper()))]
    fake_sysfs.build(root, lay, gpus, mig_minors=mig_minors)
    return lay


def shape_profile(sockets, cores_per_socket, threads_per_core, numbering, gpus_per_socket, name="NVIDIA A100-SXM4-80GB",
                  memory_total_mib=81920, gpu_links="NV12"):
    """A generated machine: ``gpus_per_socket`` GPUs local to each socket, topo matrix generated."""
    lay = fake_sysfs.layout(sockets, cores_per_socket, threads_per_core, numbering)
    gpus = []
    bus = 0x07
    for s in range(sockets):
        cpus = fake_sysfs.socket_cpus(lay, s)
        for _k in range(gpus_per_socket):
            gpus.append(gpu(name, "00000000:%02X:00.0" % bus, memory_total_mib, fake_sysfs._ranges(cpus), str(s)))
            bus += 0x10
    return {
        "source": "generated shape %dx%dx%d %s, %d GPU(s) per socket" % (sockets, cores_per_socket,
                                                                         threads_per_core, numbering,
                                                                         gpus_per_socket),
        "driver_version": "550.127.05",
        "cpu_layout": {"sockets": sockets, "cores_per_socket": cores_per_socket,
                       "threads_per_core": threads_per_core, "numbering": numbering},
        "gpu_links": gpu_links,
        "gpus": gpus,
        "processes": [],
    }


def hwloc_profile(info, source):
    """A profile for the NVIDIA GPUs of a real machine's hwloc XML (``hwloc_sysfs.write(...)`` result): bus ids
    and CPU/NUMA locality from the XML, names and UUIDs made up; topo matrix generated."""
    gpus = []
    for n, g in enumerate(sorted(info["gpus"], key=lambda g: g["bus_id"])):
        domain, rest = g["bus_id"].split(":", 1)
        bus = "%08X:%s" % (int(domain, 16), rest.upper())
        gpus.append(gpu("NVIDIA Tesla GPU", bus, 16384, fake_sysfs._ranges(_bits(g["cpuset"])),
                        str(g["numa"]) if g["numa"] is not None else None, minor=n))
    return {"source": source, "driver_version": "550.127.05", "gpu_links": "NV2", "gpus": gpus, "processes": []}


def _bits(mask):
    return [i for i in range(mask.bit_length()) if mask >> i & 1]


def _a100_p4d():
    buses = ["10:1C", "10:1D", "20:1C", "20:1D", "90:1C", "90:1D", "A0:1C", "A0:1D"]
    gpus = []
    for n, b in enumerate(buses):
        cpus, numa = ("0-23,48-71", "0") if n < 4 else ("24-47,72-95", "1")
        gpus.append(gpu("NVIDIA A100-SXM4-40GB", "00000000:%s.0" % b, 40960, cpus, numa))
    return {
        "source": "topo -m: tests/fixtures/nvidia-smi/topo/a100-8gpu-nonic-aws-p4d-style.txt (real, replayed "
                  "verbatim); GPU names, bus ids (AWS p4d layout), UUIDs and memory made up to match it",
        "driver_version": "535.183.01",
        "cpu_layout": {"sockets": 2, "cores_per_socket": 24, "threads_per_core": 2, "numbering": "linear"},
        "topo": {"text_file": fixture_rel("nvidia-smi", "topo", "a100-8gpu-nonic-aws-p4d-style.txt")},
        "gpu_links": "NV12",
        "gpus": gpus,
        "processes": [],
    }


def _h100_4gpu():
    rows = [("6,14,22,30", "3"), ("4,12,20,28", "1"), ("7,15,23,31", "7"), ("5,13,21,29", "5")]
    gpus = [gpu("NVIDIA H100 80GB HBM3", "00000000:%02X:00.0" % (0x18 + 0x20 * n), 81559, cpus, numa)
            for n, (cpus, numa) in enumerate(rows)]
    return {
        "source": "topo -m: tests/fixtures/nvidia-smi/topo/h100-4gpu-nv6-4nic-strided-cpu-lists-nccl1617.txt "
                  "(real, replayed verbatim; 4 H100 of an 8-NUMA host, each GPU local to 4 cpus strided by 8); "
                  "cpu_layout 8 x 4 interleaved reproduces those lists; names, bus ids, UUIDs made up",
        "driver_version": "550.54.15",
        "cpu_layout": {"sockets": 8, "cores_per_socket": 4, "threads_per_core": 1, "numbering": "interleaved"},
        "topo": {"text_file": fixture_rel("nvidia-smi", "topo", "h100-4gpu-nv6-4nic-strided-cpu-lists-nccl1617.txt")},
        "gpu_links": "NV6",
        "gpus": gpus,
        "nics": [{"device": "mlx5_%d" % n, "links": {}} for n in range(4)],
        "processes": [],
    }


def _v100_2gpu():
    gpus = [gpu("Tesla V100-SXM2-16GB", "00000000:3B:00.0", 16384, "0-13,28-41", "0"),
            gpu("Tesla V100-SXM2-16GB", "00000000:AF:00.0", 16384, "14-27,42-55", "1")]
    return {
        "source": "topo -m: tests/fixtures/nvidia-smi/topo/v100sxm2-2gpu-4nic-tabs-as-4spaces-s116.txt (real, "
                  "replayed verbatim: every tab already replaced by 4 spaces by the logger); bus ids, UUIDs made up",
        "driver_version": "550.144.03",
        "cpu_layout": {"sockets": 2, "cores_per_socket": 14, "threads_per_core": 2, "numbering": "linear"},
        "topo": {"text_file": fixture_rel("nvidia-smi", "topo", "v100sxm2-2gpu-4nic-tabs-as-4spaces-s116.txt")},
        "gpu_links": "SYS",
        "gpus": gpus,
        "nics": [{"device": "mlx5_%d" % n, "links": {}} for n in range(4)],
        "processes": [],
    }


def _a100_mig():
    g = gpu("NVIDIA A100-SXM4-40GB", "00000000:10:1C.0", 40960, "0-23,48-71", "0",
            uuid="GPU-9e4aeb94-01c0-5173-4811-4ca60f77b3a9", memory_used_mib=249, mig_mode="Enabled")
    g["mig"] = {"gpu_instances": [
        {"id": 9, "profile": "1g.5gb", "profile_id": 19, "placement": [6, 1], "compute_instances": [
            {"id": 0, "profile": "1g.5gb", "profile_id": 0, "placement": [0, 1],
             "uuid": "MIG-20301a31-77fa-59ec-b0b8-7ef543821f29"}]},
        {"id": 3, "profile": "2g.10gb", "profile_id": 14, "placement": [4, 2], "compute_instances": [
            {"id": 0, "profile": "1c.2g.10gb", "profile_id": 0, "placement": [0, 1],
             "uuid": "MIG-8970491e-16e0-5140-9f8f-d561baa3c186"},
            {"id": 1, "profile": "1c.2g.10gb", "profile_id": 0, "placement": [1, 1],
             "uuid": "MIG-239565ce-30e3-52d7-8197-5630d3ce21fa"}]},
        {"id": 2, "profile": "4g.20gb", "profile_id": 5, "placement": [0, 4], "compute_instances": [
            {"id": 0, "profile": "4g.20gb", "profile_id": 3, "placement": [0, 4],
             "uuid": "MIG-c42101f0-a1fa-5b68-8908-7c5c887f28bd"}]},
    ]}
    return {
        "source": "MIG state, GPU and MIG UUIDs, bus id, driver: tests/fixtures/nvidia-smi/{mig,list,caps}/*ssup2* "
                  "(one real A100-SXM4-40GB session: mig -lgi, mig -lci, -L, MIG devices table, cap minors); the "
                  "GPU's CPU affinity and the 2 x 24 x 2 cpu_layout are made up (AWS p4d-like); topo generated",
        "driver_version": "580.126.09",
        "cpu_layout": {"sockets": 2, "cores_per_socket": 24, "threads_per_core": 2, "numbering": "linear"},
        "gpus": [g],
        "processes": [],
    }


def _h200_busy():
    """GPUs and processes from the real h200class query fixtures (same host, same moment)."""
    uuids_used = [
        ("GPU-a44622e3-2296-6285-0a86-84d0f6c67900", 130013), ("GPU-4f31bb83-f8dc-d0af-029e-bc4356e6afeb", 130053),
        ("GPU-4e9e74b7-4977-f04d-3af3-ccfe5f570e90", 105851), ("GPU-02dbe542-8a6f-11a4-7c2a-486b7d4e9092", 129993),
        ("GPU-cb449822-5571-be90-8303-e7558da3ea66", 106091), ("GPU-8e137fa6-c3d9-6980-7733-0d8df296756e", 105851),
        ("GPU-d9337494-6060-1440-039f-4654245b5764", 106139), ("GPU-28780eb0-24d5-1f13-59b8-ae5c23617a72", 58071)]
    buses = ["18", "2A", "3A", "5D", "9A", "AB", "BA", "DB"]
    gpus = []
    for n, ((uuid, used), b) in enumerate(zip(uuids_used, buses)):
        cpus, numa = ("0-47,96-143", "0") if n < 4 else ("48-95,144-191", "1")
        gpus.append(gpu("NVIDIA H200", "00000000:%s:00.0" % b, 143771, cpus, numa, uuid=uuid, memory_used_mib=used))
    processes = [
        ("GPU-a44622e3-2296-6285-0a86-84d0f6c67900", 1328667, "/usr/local/bin/python3.10", 130004),
        ("GPU-4f31bb83-f8dc-d0af-029e-bc4356e6afeb", 1328668, "/usr/local/bin/python3.10", 130044),
        ("GPU-4e9e74b7-4977-f04d-3af3-ccfe5f570e90", 1425258, "python3", 105842),
        ("GPU-02dbe542-8a6f-11a4-7c2a-486b7d4e9092", 1328669, "/usr/local/bin/python3.10", 129984),
        ("GPU-cb449822-5571-be90-8303-e7558da3ea66", 1425259, "python3", 105842),
        ("GPU-8e137fa6-c3d9-6980-7733-0d8df296756e", 1425260, "python3", 105842),
        ("GPU-d9337494-6060-1440-039f-4654245b5764", 1425261, "python3", 105842),
        ("GPU-28780eb0-24d5-1f13-59b8-ae5c23617a72", 1758887, None, 58060)]
    return {
        "source": "GPU UUIDs, memory and processes: tests/fixtures/nvidia-smi/query/"
                  "h200class-8gpu-index-uuid-mem-util.txt and h200class-8gpu-compute-apps-notfound.txt (real, "
                  "same host and moment; pid 1758887's name "
                  "was [Not Found]); model name, bus ids, CPU affinity and 2 x 48 x 2 cpu_layout made up; topo "
                  "generated",
        "driver_version": "550.163.01",
        "cpu_layout": {"sockets": 2, "cores_per_socket": 48, "threads_per_core": 2, "numbering": "linear"},
        "gpu_links": "NV18",
        "gpus": gpus,
        "processes": [{"gpu_uuid": u, "pid": pid, "process_name": name, "used_memory_mib": mib}
                      for u, pid, name, mib in processes],
    }


READY = {
    "a100-8gpu-p4d": _a100_p4d,
    "h100-4gpu-nv6-8numa": _h100_4gpu,
    "v100-2gpu-s116": _v100_2gpu,
    "a100-40gb-mig-ssup2": _a100_mig,
    "h200-8gpu-busy": _h200_busy,
}


def profile_path(name):
    return os.path.join(PROFILES, name + ".json")


def load(name):
    with open(profile_path(name)) as handle:
        return json.load(handle)


# Profile keys that name a recorded output (``text`` or ``text_file``): ``topo -m``, ``-q``, a failure.
RECORDED_KEYS = ("topo", "smi_q", "failure")


def write(path, profile):
    """Write a profile; a relative ``text_file`` (of ``topo``, ``smi_q``, ``failure``) is rebased from PROFILES to
    the new file's directory."""
    profile = json.loads(json.dumps(profile))
    for key in RECORDED_KEYS:
        spec = profile.get(key) or {}
        if "text_file" in spec and not os.path.isabs(spec["text_file"]):
            absolute = os.path.normpath(os.path.join(PROFILES, spec["text_file"]))
            spec["text_file"] = os.path.relpath(absolute, os.path.dirname(os.path.abspath(path)))
    with open(path, "w") as handle:
        json.dump(profile, handle, indent=2)
        handle.write("\n")
    return path


def self_contained(profile):
    """The profile with its recorded texts (``topo -m``, ``-q``, a failure) inlined, so it works copied anywhere
    (molecule nodes)."""
    profile = json.loads(json.dumps(profile))
    for key in RECORDED_KEYS:
        spec = profile.get(key) or {}
        if "text_file" in spec:
            path = spec.pop("text_file")
            if not os.path.isabs(path):
                path = os.path.join(PROFILES, path)
            with open(path) as handle:
                text = handle.read()
            head, sep, body = text.partition("\n# ---\n")
            spec["text"] = body if sep and head.startswith("# source:") else text
    return profile


# ----------------------------------------------------------------------------------------------------
# readiness: recorded nvidia-smi -q texts and failures (tests/fixtures/readiness)

def recording(*parts, **extra):
    """A profile entry naming a recorded fixture (``{"text_file": ..., **extra}``, relative to profiles/ like
    every stored path; :func:`write` rebases it)."""
    entry = {"text_file": fixture_rel(*parts)}
    entry.update(extra)
    return entry


def _fixture_body(*parts):
    with open(os.path.join(FIXTURES, *parts)) as handle:
        return handle.read().partition("\n# ---\n")[2]


def smi_q_profile(name, cpu_layout=None):
    """The machine of a recorded ``nvidia-smi -q`` (``tests/fixtures/readiness/nvidia-smi-q/<name>``): ``-q``
    replays the text verbatim, and the GPUs (bus id, product name, UUID, minor number, MIG mode) are read off
    the same text here with plain patterns (not the project's parser), so queries, ``-L`` and ``-q`` agree."""
    body = _fixture_body("readiness", "nvidia-smi-q", name)
    gpus = []
    for block in re.split(r"^(?=GPU [0-9A-Fa-f]{8}:)", body, flags=re.M)[1:]:
        def field(label, block=block):
            m = re.search(r"^\s*%s\s*:\s*(.*?)\s*$" % re.escape(label), block, re.M)
            return m.group(1) if m else None
        minor = field("Minor Number")
        mig = re.search(r"^\s*MIG Mode\s*\n\s*Current\s*:\s*(\S+)", block, re.M)
        gpus.append(gpu(field("Product Name"), block.split()[1], None, None, None, uuid=field("GPU UUID"),
                        mig_mode=mig.group(1) if mig and mig.group(1) != "N/A" else None,
                        minor=int(minor) if minor and minor.isdigit() else None))
    driver = re.search(r"^Driver Version\s*:\s*(\S+)", body, re.M)
    profile = {
        "source": "GPUs and -q text: tests/fixtures/readiness/nvidia-smi-q/%s (real, replayed verbatim); memory, "
                  "CPU affinity and topology not recorded (topo generated)" % name,
        "driver_version": driver.group(1) if driver else None,
        "smi_q": recording("readiness", "nvidia-smi-q", name),
        "gpus": gpus,
        "processes": [],
    }
    if cpu_layout:
        profile["cpu_layout"] = cpu_layout
    return profile


# Failures a whole node shows, from recorded nvidia-smi output: (fixture, lines of its body that nvidia-smi
# printed, exit status). Exit statuses: 9 "NVIDIA driver not loaded" and 6 "query unsuccessful" as the emulator
# already uses them (nvidia-smi man page); 18 for the version mismatch (NVML_ERROR_LIB_RM_VERSION_MISMATCH, as
# a user recorded: https://github.com/anderskm/gputil/issues/55). The fixtures carry no exit status.
FAILURES = {
    "driver-library-mismatch": (("nvidia-smi-errors", "ci-550-driver-library-mismatch-nvml-version.txt"), [2, 3], 18),
    "driver-library-mismatch-no-version": (
        ("nvidia-smi-errors", "460-driver-library-mismatch-no-version-line.txt"), [2, 2], 18),
    "driver-library-mismatch-580": (
        ("nvidia-smi-errors", "truenas-580-driver-library-mismatch-nvml-version-and-proc-version.txt"), [2, 3], 18),
    "no-devices": (("nvidia-smi-errors", "rtx5090-575-no-devices-were-found.txt"), [2, 2], 6),
    "no-driver": (("nvidia-smi-errors", "gcp-debian11-couldnt-communicate-with-driver.txt"), [1, 1], 9),
}


def with_failure(profile, failure):
    """A copy of ``profile`` whose every nvidia-smi call fails like the recorded ``FAILURES[failure]``."""
    parts, lines, rc = FAILURES[failure]
    profile = json.loads(json.dumps(profile))
    profile["failure"] = recording("readiness", *parts, lines=lines, rc=rc)
    return profile


DEFAULT = "a100-8gpu-p4d"


def main():
    os.makedirs(PROFILES, exist_ok=True)
    for name, build in READY.items():
        with open(profile_path(name), "w") as handle:
            json.dump(build(), handle, indent=2)
            handle.write("\n")
        print(profile_path(name))
    # The profile nvidia-smi reads when NVSMI_EMU_PROFILE is unset: self-contained copy of the default.
    default = os.path.join(HERE, "profile.json")
    with open(default, "w") as handle:
        json.dump(self_contained(READY[DEFAULT]()), handle, indent=2)
        handle.write("\n")
    print(default)


if __name__ == "__main__":
    main()


EMULATOR = os.path.join(HERE, "nvidia_smi.py")


def run_emulator(profile_file, argv, log=None):
    """Run the emulated nvidia-smi on a profile file: ``(rc, stdout, stderr)``."""
    import subprocess

    env = dict(os.environ, NVSMI_EMU_PROFILE=str(profile_file))
    if log:
        env["NVSMI_EMU_LOG"] = str(log)
    proc = subprocess.run([sys.executable, EMULATOR] + list(argv), env=env, check=False, capture_output=True, text=True)
    return proc.returncode, proc.stdout, proc.stderr
