#!/usr/bin/env bash
# Install the system packages the test suite needs, with apt-get, only when something is missing.
# Called by `make system-deps` (and so by `make test`). A no-op in a few milliseconds when all is present.
#   - real Slurm 22.05 and munge: the slurmd -G oracle and the loopback tests
#   - podman + runc + netavark/aardvark-dns (+ iptables for its bridge rules): molecule containers that
#     resolve each other by name
#   - debootstrap: the local node image (no registry on the test machines)
#   - util-linux (unshare) and coreutils (mknod): device nodes in a private mount namespace
#   - openssh-client: Ansible's default connection (a test points the controller host at a closed ssh port)
#   - systemd: systemd-analyze verifies the boot units the deploy installs
set -euo pipefail

PACKAGES=(
  slurmd slurmctld slurm-client munge
  podman runc conmon netavark aardvark-dns iptables uidmap
  debootstrap hwloc-nox shellcheck
  util-linux coreutils openssh-client systemd
  python3 python3-venv make ca-certificates
)

installed=$(dpkg-query -W -f='${Package} ${db:Status-Abbrev}\n' "${PACKAGES[@]}" 2>/dev/null || true)
missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! grep -qE "^${pkg} ii" <<<"$installed"; then
    missing+=("$pkg")
  fi
done

if [[ ${#missing[@]} -eq 0 ]]; then
  exit 0
fi

if [[ $(id -u) -ne 0 ]]; then
  cat >&2 <<EOF
setup-system: missing system packages: ${missing[*]}
setup-system: the tests run real Slurm daemons, munge and podman containers; install them as root:
    sudo apt-get update && sudo apt-get install -y ${missing[*]}
  or run \`sudo make system-deps\`.
EOF
  exit 1
fi

if ! command -v apt-get >/dev/null 2>&1; then
  echo "setup-system: missing ${missing[*]} and no apt-get here (Debian 12 is the supported test platform)" >&2
  exit 1
fi

echo "setup-system: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
echo "setup-system: done"
