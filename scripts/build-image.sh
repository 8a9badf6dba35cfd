#!/usr/bin/env bash
# Build the root file system of a test node for one Debian suite, keep it as a chroot, and import it as the
# podman image the molecule scenarios boot: systemd, munge and that suite's real Slurm daemons baked in.
#   scripts/build-image.sh [SUITE]      SUITE: bookworm (Slurm 22.05), trixie (24.11) or sid (26.05); default trixie
# Prints the image name and the chroot directory on its last two lines:
#   image=localhost/slurm-gres-node:SUITE-RECIPE
#   root=/var/tmp/slurm-gres-rootfs/SUITE-RECIPE
# The same tree serves both: molecule boots the image, tests/integration runs the suite's slurmd/slurmctld in the
# chroot (tests/integration/slurm_release.py). molecule/releases lists which Slurm release comes from which suite.
#
# There is no registry on the test machines, so the tree comes from debootstrap. Cached: image tag and chroot name
# carry a hash of this script and the suite, so a rebuild happens only when either is missing or this file changed,
# and worktrees with different versions of this script never rebuild each other's image. FORCE=1 rebuilds anyway.
#   DEBIAN_MIRROR      debootstrap mirror (default http://deb.debian.org/debian)
#   SLURM_GRES_ROOTFS  parent directory of the chroots (default /var/tmp/slurm-gres-rootfs)
set -euo pipefail

SUITE=${1:-trixie}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
ROOTFS_PARENT=${SLURM_GRES_ROOTFS:-/var/tmp/slurm-gres-rootfs}
LABEL=org.hpc.slurm_gres.recipe
# Everything a scenario node runs: systemd as PID 1, real munge/slurmctld/slurmd/clients, python3 for Ansible,
# procps/iproute2 for testinfra checks. (No python3-hostlist in Debian 12.)
PACKAGES=(
  systemd systemd-sysv dbus
  python3
  munge slurmd slurmctld slurm-client
  procps iproute2 sudo
)

case $SUITE in
  bookworm | trixie | sid) ;;
  *) echo "build-image: unknown suite '$SUITE' (expected bookworm, trixie or sid)" >&2; exit 2 ;;
esac

root=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/molecule/containers.conf}
recipe=$( (cat "$0"; echo "$SUITE") | sha256sum | cut -c1-12)
IMAGE=localhost/slurm-gres-node:$SUITE-$recipe
ROOTFS=$ROOTFS_PARENT/$SUITE-$recipe

if [[ $(id -u) -ne 0 ]]; then
  echo "build-image: debootstrap needs root" >&2
  exit 1
fi

mkdir -p "$ROOTFS_PARENT"
exec 9>"$ROOTFS_PARENT/.lock-$SUITE"
flock 9

have_image() { [[ $(podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null) == "$recipe" ]]; }
have_rootfs() { [[ -f $ROOTFS/.slurm-gres-recipe && $(cat "$ROOTFS/.slurm-gres-recipe") == "$recipe" ]]; }

if [[ ${FORCE:-0} != 1 ]] && have_image && have_rootfs; then
  echo "build-image: $IMAGE and $ROOTFS are up to date"
  echo "image=$IMAGE"
  echo "root=$ROOTFS"
  exit 0
fi

start=$SECONDS
if [[ ${FORCE:-0} == 1 ]] || ! have_rootfs; then
  tmp=$(mktemp -d "$ROOTFS_PARENT/.build-$SUITE.XXXXXX")
  trap 'rm -rf --one-file-system "$tmp" "$tmp.log"' EXIT
  chmod 0755 "$tmp"  # it becomes the image's /: mktemp's 0700 would lock out munge, slurm and every user
  echo "build-image: debootstrap $SUITE from $MIRROR into $tmp"
  includes=$(IFS=,; echo "${PACKAGES[*]}")
  if ! debootstrap --variant=minbase --include="$includes" "$SUITE" "$tmp" "$MIRROR" >"$tmp.log" 2>&1; then
    tail -n 40 "$tmp/debootstrap/debootstrap.log" "$tmp.log" >&2 || true
    echo "build-image: debootstrap of $SUITE failed" >&2
    exit 1
  fi
  # Leaner tree: package caches and docs are never needed in a test node.
  rm -rf "$tmp"/var/cache/apt/archives/*.deb "$tmp"/var/lib/apt/lists/* \
    "$tmp"/usr/share/doc/* "$tmp"/usr/share/man/* "$tmp"/usr/share/info/*
  # Nothing in a container should wait for a console or hardware.
  for unit in getty@tty1.service console-getty.service systemd-udevd.service systemd-udev-trigger.service \
    systemd-modules-load.service systemd-remount-fs.service; do
    ln -sf /dev/null "$tmp/etc/systemd/system/$unit"
  done
  # The daemons start when a scenario installs their config, not at boot with none.
  for unit in slurmctld.service slurmd.service; do
    rm -f "$tmp/etc/systemd/system/multi-user.target.wants/$unit"
  done
  : >"$tmp/etc/machine-id"
  # podman mounts its own /etc/hosts in a container; the chroot tests bind theirs over this one
  printf '127.0.0.1\tlocalhost\n' >"$tmp/etc/hosts"
  echo "$recipe" >"$tmp/.slurm-gres-recipe"
  rm -rf --one-file-system "$ROOTFS"
  mv "$tmp" "$ROOTFS"
  trap - EXIT
  rm -f "$tmp.log"
fi

echo "build-image: importing $IMAGE"
tar -C "$ROOTFS" --exclude=./.slurm-gres-recipe -c . | podman import --quiet \
  --change 'CMD ["/sbin/init"]' \
  --change "LABEL $LABEL=$recipe" \
  --message "hpc.slurm_gres molecule node ($SUITE, recipe $recipe)" \
  - "$IMAGE" >/dev/null
version=$(chroot "$ROOTFS" slurmd -V 2>/dev/null || echo "slurmd ?")
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "build-image: built $IMAGE ($version, $((size / 1048576)) MiB) in $((SECONDS - start)) s"
echo "image=$IMAGE"
echo "root=$ROOTFS"
