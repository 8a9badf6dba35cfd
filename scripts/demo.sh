#!/usr/bin/env bash
# `make demo`: render the example inventory into DIR (default out/demo). Contacts no host.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-out/demo}
cd "$root"
export ANSIBLE_CONFIG="$root/ansible.cfg"
playbook="$root/.venv/bin/ansible-playbook"
[ -x "$playbook" ] || playbook=ansible-playbook

"$playbook" -i inventories/example/hosts.yml playbooks/render-gres.yml -e "hpc_gres_render_dir=$dir"

echo
echo "== $dir/slurm.conf (node lines)"
grep -E '^(NodeName|PartitionName|GresTypes|AccountingStorageTRES)=' "$dir/slurm.conf"
echo
echo "== $dir/gpu-mix01/gres.conf"
grep -v '^#' "$dir/gpu-mix01/gres.conf"
echo
echo "== $dir/USERS.md (the users' GPU guide): its request lines"
grep -E '^sbatch ' "$dir/USERS.md"
echo
echo "== files"
(cd "$dir" && find . -type f | sort | sed 's|^\./||')
