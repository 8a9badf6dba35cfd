#!/usr/bin/env bash
# Make hpc.slurm_gres.* resolvable from a plain checkout (ansible.cfg points collections_path here).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dest="$root/.cache/collections/ansible_collections/hpc"
mkdir -p "$dest"
ln -sfn "$root" "$dest/slurm_gres"
