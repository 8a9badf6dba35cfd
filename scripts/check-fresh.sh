#!/usr/bin/env bash
# Prove that a fresh Debian 12 machine passes the test suite with nothing but what the project installs itself.
#
# A clone of this repository's HEAD (committed work only) goes into a pristine debootstrap bookworm chroot that
# holds only what a CI machine needs to fetch and start the project (git, make, ca-certificates), plus the
# machine image's pyenv CPythons (read-only, as a CI machine of this kind has them); there it runs
#   make system-deps setup      (scripts/setup-system.sh with apt-get, the .venv from requirements.txt)
#   make lint sanity pytest compat-min
# i.e. what `make test` runs (lint, ansible-test sanity, unit and integration tests with the package test, the
# lowest admitted ansible-core) except the molecule scenarios (FRESH_MOLECULE=1 adds them; they need podman
# inside the chroot), under CI=true so that a missing tool fails a test instead of skipping it.
#
# The debootstrap base is cached in /var/tmp/slurm-gres-fresh/base-<recipe hash> (about 45 s to build, reused
# until this recipe changes); every run starts from a read-only copy of it (overlayfs), so reruns are pristine
# too. Needs root (debootstrap, chroot, mounts). Everything runs in private mount and pid namespaces: no mount
# and no daemon outlives the run.
#
#   scripts/check-fresh.sh              run, then delete the run's files
#   KEEP=1 scripts/check-fresh.sh       keep the run's root file system (its path is printed) for a look
#   FRESH_TARGETS="lint pytest" ...     other make targets than the default
#   DEBIAN_MIRROR=URL ...               debootstrap/apt mirror (default http://deb.debian.org/debian)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
SUITE=bookworm
CACHE=/var/tmp/slurm-gres-fresh
TARGETS=${FRESH_TARGETS:-lint sanity pytest compat-min}
if [[ ${FRESH_MOLECULE:-0} == 1 ]]; then
  TARGETS="$TARGETS molecule"
fi
# What a CI machine has before the project's own setup: a way to fetch the repository and run make.
BASE_PACKAGES=git,make,ca-certificates

if [[ $(id -u) -ne 0 ]]; then
  echo "check-fresh: needs root (debootstrap, chroot, mounts)" >&2
  exit 1
fi
for tool in debootstrap unshare chroot git; do
  command -v "$tool" >/dev/null || { echo "check-fresh: $tool is missing (make system-deps installs it)" >&2; exit 1; }
done
if [[ -n $(git -C "$root" status --porcelain --untracked-files=no) ]]; then
  echo "check-fresh: note: uncommitted changes are not tested; the chroot gets a clone of HEAD" >&2
fi

mkdir -p "$CACHE"
recipe=$(printf '%s %s %s\n' "$SUITE" "$MIRROR" "$BASE_PACKAGES" | sha256sum | cut -c1-12)
base="$CACHE/base-$recipe"
start=$SECONDS

exec 9>"$CACHE/base.lock"
flock 9
if [[ ! -f $base/.complete ]]; then
  rm -rf --one-file-system "$base"
  echo "check-fresh: debootstrap --variant=minbase --include=$BASE_PACKAGES $SUITE -> $base"
  if ! debootstrap --variant=minbase --include="$BASE_PACKAGES" "$SUITE" "$base" "$MIRROR" >"$base.log" 2>&1; then
    tail -n 30 "$base.log" "$base/debootstrap/debootstrap.log" 2>/dev/null >&2 || true
    echo "check-fresh: debootstrap failed (log: $base.log)" >&2
    exit 1
  fi
  # Pristine means no package lists either: setup-system.sh must run apt-get update itself.
  rm -rf "$base"/var/lib/apt/lists/* "$base"/var/cache/apt/archives/*.deb
  # A chroot has no init: package scripts must not start daemons (a real machine's systemd would; the tests
  # start their own munged, slurmctld and slurmd).
  printf '#!/bin/sh\nexit 101\n' >"$base/usr/sbin/policy-rc.d"
  chmod 0755 "$base/usr/sbin/policy-rc.d"
  touch "$base/.complete"
  echo "check-fresh: base built in $((SECONDS - start)) s"
else
  echo "check-fresh: reusing $base"
fi
flock -u 9

run=$(mktemp -d "$CACHE/run.XXXXXX")
# shellcheck disable=SC2317  # called by the EXIT trap
cleanup() {
  if [[ ${KEEP:-0} == 1 ]]; then
    echo "check-fresh: kept $run/upper (the run's changes over $base)"
  else
    rm -rf --one-file-system "$run"
  fi
}
trap cleanup EXIT
mkdir -p "$run/upper" "$run/work" "$run/merged"

# The network this machine is on, nothing else of it: its proxy settings and the CA bundle paths its TLS clients
# are pointed at (the certificates themselves are copied in below). Not its pip configuration: the chroot
# installs from PyPI itself, as CI does.
passenv=()
for name in http_proxy https_proxy no_proxy HTTP_PROXY HTTPS_PROXY NO_PROXY PIP_CERT REQUESTS_CA_BUNDLE \
  SSL_CERT_FILE SSL_CERT_DIR CURL_CA_BUNDLE GIT_SSL_CAINFO; do
  if [[ -n ${!name:-} ]]; then
    passenv+=("$(printf 'export %s=%q' "$name" "${!name}")")
  fi
done

# Runs inside the chroot. CI=true: a missing slurmd, podman or fixture fails a test instead of skipping it.
cat >"$run/inside.sh" <<EOF
set -euo pipefail
export CI=true HOME=/root LANG=C.UTF-8 PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
# The chroot's root is an overlayfs, which podman's overlay storage cannot sit on (make images imports the node
# images); vfs can. A real machine keeps podman's default. (podman 4.3 ignores STORAGE_DRIVER.)
cat >/root/storage-vfs.conf <<'CONF'
[storage]
driver = "vfs"
runroot = "/run/containers/storage"
graphroot = "/var/lib/containers/storage"
CONF
export CONTAINERS_STORAGE_CONF=/root/storage-vfs.conf
$(printf '%s\n' "${passenv[@]}")
cd /root/slurm_gres
step() {
  local t=\$SECONDS
  echo "check-fresh: >>> make \$*"
  make "\$@"
  echo "check-fresh: <<< make \$* passed in \$((SECONDS - t)) s"
}
step system-deps
step setup
for target in $TARGETS; do
  step "\$target"
done
EOF

echo "check-fresh: cloning $(git -C "$root" rev-parse --short HEAD) and running: make system-deps setup $TARGETS"
rc=0
# shellcheck disable=SC2016  # expanded by the inner shell, from its arguments
unshare --mount --pid --fork --propagation private bash -euo pipefail -c '
  base=$1 run=$2 src=$3
  merged=$run/merged
  mount -t overlay overlay -o "lowerdir=$base,upperdir=$run/upper,workdir=$run/work" "$merged"
  mount -t proc proc "$merged/proc"
  mount --rbind /dev "$merged/dev"
  mount --rbind /sys "$merged/sys"
  mount -t tmpfs tmpfs "$merged/tmp"
  mount -t tmpfs tmpfs "$merged/run"
  cp /etc/resolv.conf "$merged/etc/resolv.conf"
  # pyenv'"'"'s CPythons (3.8-3.13) are part of the CI machine image, not installed by this project: the health and
  # boot programs are tested on the oldest Python they support (3.9), and make compat takes its Pythons there.
  # The chroot gets the same, read-only.
  if [[ -d /root/.pyenv/versions ]]; then
    mkdir -p "$merged/root/.pyenv"
    mount --bind /root/.pyenv "$merged/root/.pyenv"
    mount -o remount,bind,ro "$merged/root/.pyenv"
  fi
  # Local trust anchors (e.g. a TLS-inspecting egress proxy) are part of the network, not of the machine.
  if compgen -G "/usr/local/share/ca-certificates/*.crt" >/dev/null; then
    cp /usr/local/share/ca-certificates/*.crt "$merged/usr/local/share/ca-certificates/"
    chroot "$merged" update-ca-certificates >/dev/null 2>&1
  fi
  git clone --quiet --no-hardlinks "$src" "$merged/root/slurm_gres"
  cp "$run/inside.sh" "$merged/root/inside.sh"
  exec env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin chroot "$merged" /bin/bash /root/inside.sh
' check-fresh "$base" "$run" "$root" 2>&1 | tee "$run.log" || rc=$?
mv "$run.log" "$CACHE/last.log"

if [[ $rc -eq 0 ]]; then
  echo "check-fresh: PASSED: make system-deps setup $TARGETS in a pristine $SUITE chroot, $((SECONDS - start)) s" \
    "in all (log: $CACHE/last.log)"
else
  echo "check-fresh: FAILED (exit $rc) after $((SECONDS - start)) s (log: $CACHE/last.log)" >&2
fi
exit "$rc"
