#!/usr/bin/env bash
# Build the local podman image the molecule scenarios boot: Debian 12 with systemd, munge and the
# real Slurm 22.05 daemons baked in. There is no registry on the test machines, so the root file
# system comes from debootstrap and is imported with `podman import`.
#
# Cached: the image carries this script's content hash as a label; a rebuild happens only when the
# image is missing or this file changed. FORCE=1 rebuilds anyway.
#   SLURM_GRES_IMAGE   image name (default localhost/slurm-gres-node:bookworm)
#   DEBIAN_MIRROR      debootstrap mirror (default http://deb.debian.org/debian)
set -euo pipefail

IMAGE=${SLURM_GRES_IMAGE:-localhost/slurm-gres-node:bookworm}
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
LABEL=org.hpc.slurm_gres.recipe
# Everything a scenario node runs: systemd as PID 1, real munge/slurmctld/slurmd/clients, python3 for
# Ansible, procps/iproute2 for testinfra checks. (Debian 12 has no python3-hostlist package.)
PACKAGES=(
  systemd systemd-sysv dbus
  python3
  munge slurmd slurmctld slurm-client
  procps iproute2 sudo
)

root=$(cd "$(dirname "$0")/.." && pwd)
export CONTAINERS_CONF=${CONTAINERS_CONF:-$root/molecule/containers.conf}
recipe=$(sha256sum "$0" | cut -c1-16)

current_recipe() {
  podman image inspect --format "{{ index .Labels \"$LABEL\" }}" "$IMAGE" 2>/dev/null || true
}

if [[ $(id -u) -ne 0 ]]; then
  echo "build-image: debootstrap needs root" >&2
  exit 1
fi

exec 9>/var/tmp/slurm-gres-build-image.lock
flock 9
if [[ ${FORCE:-0} != 1 && $(current_recipe) == "$recipe" ]]; then
  echo "build-image: $IMAGE is up to date (recipe $recipe)"
  exit 0
fi

start=$SECONDS
rootfs=$(mktemp -d /var/tmp/slurm-gres-rootfs.XXXXXX)
trap 'rm -rf --one-file-system "$rootfs"' EXIT
chmod 0755 "$rootfs"  # it becomes the image's /: mktemp's 0700 would lock out munge, slurm and every user

echo "build-image: debootstrap $SUITE from $MIRROR into $rootfs"
includes=$(IFS=,; echo "${PACKAGES[*]}")
if ! debootstrap --variant=minbase --include="$includes" "$SUITE" "$rootfs" "$MIRROR" >"$rootfs.log" 2>&1; then
  cp "$rootfs/debootstrap/debootstrap.log" "$rootfs.debootstrap.log" 2>/dev/null || true
  tail -n 40 "$rootfs.debootstrap.log" "$rootfs.log" >&2 || true
  echo "build-image: debootstrap failed (logs: $rootfs.log, $rootfs.debootstrap.log)" >&2
  exit 1
fi
rm -f "$rootfs.log"

# Leaner image: package caches and docs are never needed in a test node.
rm -rf "$rootfs"/var/cache/apt/archives/*.deb "$rootfs"/var/lib/apt/lists/* \
  "$rootfs"/usr/share/doc/* "$rootfs"/usr/share/man/* "$rootfs"/usr/share/info/*
# Nothing in a container should wait for a console or hardware.
for unit in getty@tty1.service console-getty.service systemd-udevd.service systemd-udev-trigger.service \
  systemd-modules-load.service systemd-remount-fs.service; do
  ln -sf /dev/null "$rootfs/etc/systemd/system/$unit"
done
# The daemons start when a scenario installs their config, not at boot with none.
for unit in slurmctld.service slurmd.service; do
  rm -f "$rootfs/etc/systemd/system/multi-user.target.wants/$unit"
done
: >"$rootfs/etc/machine-id"

echo "build-image: importing $IMAGE"
tar -C "$rootfs" -c . | podman import --quiet \
  --change 'CMD ["/sbin/init"]' \
  --change "LABEL $LABEL=$recipe" \
  --message "hpc.slurm_gres molecule node ($SUITE, recipe $recipe)" \
  - "$IMAGE" >/dev/null
# A superseded build leaves a dangling image behind; drop those of ours only.
for old in $(podman images --filter dangling=true --filter "label=$LABEL" --format '{{.ID}}'); do
  podman rmi "$old" >/dev/null 2>&1 || true
done
size=$(podman image inspect --format '{{.Size}}' "$IMAGE")
echo "build-image: built $IMAGE (recipe $recipe, $((size / 1048576)) MiB) in $((SECONDS - start)) s"
