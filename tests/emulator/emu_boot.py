"""A reboot of an emulated GPU node: what the GPUs and the NVIDIA driver do at power-on, for the boot order tests.

- ``power_on(profile_path)``: every MIG GPU instance and compute instance is gone and MIG mode stays (a pending
  mode change takes effect). NVIDIA's MIG User Guide (Deployment Considerations): "MIG mode setting is persistent
  across reboots until the user toggles the setting explicitly"; the instances are not, which is why mig-parted's
  nvidia-mig-manager.service exists ("Persist MIG device configurations across node reboots", its README).
- ``load_driver(profile_path, dev_root, root)``: the kernel module loads: ``<dev_root>/dev/nvidia<minor>`` per GPU
  and ``nvidiactl`` (character devices, major 195, minor 255 for the control device, as nvidia-modprobe makes
  them), ``<root>/proc/driver/nvidia/version`` of the profile's driver, and nvidia-smi answers again.
- ``unload_driver(...)``: no kernel module: no device nodes, no version file, and every nvidia-smi call answers
  "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver" (exit 9, the profile's
  ``driver: not_loaded``): a node whose driver is not ready at boot (a DKMS build still running, a module that
  failed to load).

Command line, for a test node's boot (a oneshot unit ordered before the boot order) and for the test itself::

    python3 emu_boot.py boot PROFILE --dev-root / --root ROOT [--late-driver FILE]
    python3 emu_boot.py load-driver PROFILE --dev-root / --root ROOT

``boot``: power on, then load the driver unless FILE exists (the fault: the driver is not ready at boot; the test
loads it later with ``load-driver``). Standard library only: it is copied onto test nodes as it is.
"""
import argparse
import glob
import json
import os
import stat
import sys

NVIDIA_MAJOR = 195
CONTROL_MINOR = 255
# /proc/driver/nvidia/version as the open kernel module prints it, recorded in
# tests/fixtures/readiness/fabricmanager/proc-driver-nvidia-version-565-open.txt; only the version is the profile's.
PROC_VERSION = ("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  {version}  Release Build  "
                "(dvs-builder@U16-A24-9-2)  Thu Oct 10 12:15:00 UTC 2024\n"
                "GCC version:  gcc version 13.3.0 (Ubuntu 13.3.0-6ubuntu2~24.04)\n")
DEFAULT_DRIVER = "550.127.05"


def _load(path):
    with open(path) as handle:
        return json.load(handle)


def _save(path, profile):
    tmp = path + ".tmp"
    with open(tmp, "w") as handle:
        json.dump(profile, handle, indent=2)
        handle.write("\n")
    os.replace(tmp, path)


def power_on(profile_path):
    """MIG instances gone, MIG mode kept (a pending change now current); returns how many GPU instances were lost."""
    profile = _load(profile_path)
    lost = 0
    for gpu in profile.get("gpus", []):
        if gpu.get("mig_mode_pending") in ("Enabled", "Disabled"):
            gpu["mig_mode"] = gpu["mig_mode_pending"]
        mig = gpu.get("mig")
        if mig and mig.get("gpu_instances"):
            lost += len(mig["gpu_instances"])
            mig["gpu_instances"] = []
    _save(profile_path, profile)
    return lost


def _minors(profile):
    ordered = sorted(profile.get("gpus", []), key=lambda g: str(g.get("pci_bus_id", "")).upper())
    return [g.get("minor", n) for n, g in enumerate(ordered)]


def _mknod(path, minor):
    if os.path.exists(path):
        return
    os.mknod(path, 0o666 | stat.S_IFCHR, os.makedev(NVIDIA_MAJOR, minor))


def load_driver(profile_path, dev_root="/", root=None):
    """The module loads: device nodes, the version file, nvidia-smi answering."""
    profile = _load(profile_path)
    dev = os.path.join(dev_root, "dev")
    for minor in _minors(profile):
        _mknod(os.path.join(dev, "nvidia%d" % minor), minor)
    _mknod(os.path.join(dev, "nvidiactl"), CONTROL_MINOR)
    if root:
        proc = os.path.join(root, "proc", "driver", "nvidia")
        os.makedirs(proc, exist_ok=True)
        with open(os.path.join(proc, "version"), "w") as handle:
            handle.write(PROC_VERSION.format(version=profile.get("driver_version") or DEFAULT_DRIVER))
    if profile.pop("driver", None) is not None:
        _save(profile_path, profile)


def unload_driver(profile_path, dev_root="/", root=None):
    """No module: no device nodes, no version file, nvidia-smi failing as without the driver."""
    profile = _load(profile_path)
    dev = os.path.join(dev_root, "dev")
    for path in glob.glob(os.path.join(dev, "nvidia[0-9]*")) + [os.path.join(dev, "nvidiactl")]:
        if os.path.lexists(path):
            os.unlink(path)
    if root:
        version = os.path.join(root, "proc", "driver", "nvidia", "version")
        if os.path.lexists(version):
            os.unlink(version)
    profile["driver"] = "not_loaded"
    _save(profile_path, profile)


def main(argv=None):
    p = argparse.ArgumentParser(prog="emu_boot.py", description=__doc__.split("\n\n", 1)[0])
    p.add_argument("action", choices=["boot", "load-driver", "unload-driver"])
    p.add_argument("profile")
    p.add_argument("--dev-root", default="/")
    p.add_argument("--root", help="the emulated sysfs/procfs tree (for proc/driver/nvidia/version)")
    p.add_argument("--late-driver", metavar="FILE", help="boot: while FILE exists the driver is not loaded at boot")
    args = p.parse_args(argv)
    if args.action == "boot":
        lost = power_on(args.profile)
        late = bool(args.late_driver and os.path.exists(args.late_driver))
        if late:
            unload_driver(args.profile, args.dev_root, args.root)
        else:
            load_driver(args.profile, args.dev_root, args.root)
        print("emulated power-on: %d MIG GPU instance(s) gone; driver %s" % (
            lost, "NOT loaded (%s exists)" % args.late_driver if late else "loaded"))
    elif args.action == "load-driver":
        load_driver(args.profile, args.dev_root, args.root)
        print("emulated driver loaded")
    else:
        unload_driver(args.profile, args.dev_root, args.root)
        print("emulated driver unloaded")
    return 0


if __name__ == "__main__":
    sys.exit(main())
