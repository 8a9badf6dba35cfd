#!/usr/bin/env bash
# `make demo`: render the example inventory into DIR (default out/demo). Contacts no host.
# Needs only ansible-core: the ansible-playbook on PATH when it is 2.14 or later, else one installed into .venv-demo
# from requirements-demo.txt (the development venv .venv is used when it already exists).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
dir=${1:-out/demo}
cd "$root"
export ANSIBLE_CONFIG="$root/ansible.cfg"

core_ok() {  # ansible-playbook at $1 is ansible-core 2.14 or later
    # sed reads the whole output: head would close the pipe early and ansible-playbook die of EPIPE (pipefail)
    "$1" --version 2>/dev/null | sed -n 1p | grep -Eq 'core 2\.(1[4-9]|[2-9][0-9])\.'
}
playbook=
for candidate in "$root/.venv/bin/ansible-playbook" "$root/.venv-demo/bin/ansible-playbook" \
                 "$(command -v ansible-playbook || true)"; do
    if [ -n "$candidate" ] && [ -x "$candidate" ] && core_ok "$candidate"; then playbook=$candidate; break; fi
done
if [ -z "$playbook" ]; then
    echo "== no ansible-core 2.14+ found: installing ansible-core alone into .venv-demo"
    python3 -m venv .venv-demo
    .venv-demo/bin/python -m pip install -q --disable-pip-version-check -r requirements-demo.txt
    playbook="$root/.venv-demo/bin/ansible-playbook"
fi
echo "== $("$playbook" --version | sed -n 1p) ($playbook)"

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
