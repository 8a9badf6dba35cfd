"""Create /dev/nvidia-caps/nvidia-cap<minor> for every live MIG GPU and compute instance of an emulator profile.

Real nodes get these from nvidia-modprobe, which nvidia-smi runs; the emulated nvidia-smi does the same when
NVSMI_EMU_DEV_ROOT is set. This script is for whoever sets up a node (a container, a test tree) and wants the
nodes of an existing profile without running nvidia-smi.

    mknod-caps [--profile P] [--root ROOT] [--dev-root DIR] [--major N]

--profile   emulator profile (default $NVSMI_EMU_PROFILE)
--root      tree holding proc/driver/nvidia-caps/mig-minors and proc/devices (default $NVSMI_EMU_ROOT, else the
            driver's full mig-minors table and major 508)
--dev-root  nodes go to DIR/dev/nvidia-caps (default /, that is /dev/nvidia-caps)
--major     major number; default: the `nvidia-caps` line of ROOT/proc/devices, else 508

Minors are looked up as the driver does: `gpu<GPU minor>/gi<GI id>/access` and `.../ci<CI id>/access`. Prints
each node it made; existing nodes are kept. Needs CAP_MKNOD.
"""
import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.realpath(__file__)))
import emu_mig  # noqa: E402


def main(argv):
    parser = argparse.ArgumentParser(prog="mknod-caps", description=__doc__.splitlines()[0])
    parser.add_argument("--profile", default=os.environ.get("NVSMI_EMU_PROFILE"))
    parser.add_argument("--root", default=os.environ.get("NVSMI_EMU_ROOT"))
    parser.add_argument("--dev-root", default="/")
    parser.add_argument("--major", type=int)
    args = parser.parse_args(argv)
    if not args.profile:
        parser.error("no profile: pass --profile or set NVSMI_EMU_PROFILE")
    with open(args.profile) as handle:
        profile = json.load(handle)
    try:
        made = emu_mig.make_cap_nodes(profile, base=os.path.dirname(os.path.abspath(args.profile)),
                                      dev_root=args.dev_root, root=args.root, major=args.major, strict=True)
    except OSError as exc:
        sys.stderr.write("mknod-caps: %s\n" % exc)
        return 1
    for path in made:
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
