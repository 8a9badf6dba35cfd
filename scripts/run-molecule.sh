#!/usr/bin/env bash
# Run every molecule scenario (molecule/<name>/molecule.yml) with `molecule test`, one after another,
# and fail if any fails. Called by `make test` and `make molecule`.
#   scripts/run-molecule.sh                 all scenarios (infra-smoke first: it proves the base)
#   scripts/run-molecule.sh default gpu-lost  only these
# Full logs: out/molecule/<scenario>.log (also streamed to the terminal).
set -uo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root" || exit 1
export PATH="$root/.venv/bin:$PATH"
export CONTAINERS_CONF="$root/molecule/containers.conf"
export ANSIBLE_FORCE_COLOR=${ANSIBLE_FORCE_COLOR:-0}
export PY_COLORS=${PY_COLORS:-0}
# testinfra's podman backend and molecule's podman driver call the podman CLI as this user.
export MOLECULE_PODMAN_EXECUTABLE=podman

ci=false
case "${CI:-}" in 1 | true | TRUE | True | yes) ci=true ;; esac

missing=()
for tool in podman molecule; do
  command -v "$tool" >/dev/null 2>&1 || missing+=("$tool")
done
if [[ ${#missing[@]} -gt 0 ]]; then
  echo "run-molecule: missing ${missing[*]} (run \`make setup system-deps\`)" >&2
  if $ci; then exit 1; fi
  echo "run-molecule: SKIPPED all scenarios (not CI)" >&2
  exit 0
fi

if [[ $# -gt 0 ]]; then
  scenarios=("$@")
else
  scenarios=()
  [[ -f molecule/infra-smoke/molecule.yml ]] && scenarios+=(infra-smoke)
  for file in molecule/*/molecule.yml; do
    name=$(basename "$(dirname "$file")")
    [[ $name == infra-smoke ]] || scenarios+=("$name")
  done
fi

bash scripts/build-image.sh || { echo "run-molecule: image build failed" >&2; exit 1; }

mkdir -p out/molecule
results=()
failed=0
passed_n=0
failed_n=0
total_start=$SECONDS
for scenario in "${scenarios[@]}"; do
  if [[ ! -f molecule/$scenario/molecule.yml ]]; then
    echo "run-molecule: no scenario molecule/$scenario" >&2
    results+=("$(printf '%-16s %-6s %5s s' "$scenario" MISSING 0)")
    failed=1
    failed_n=$((failed_n + 1))
    continue
  fi
  echo "=== molecule test -s $scenario"
  start=$SECONDS
  molecule test -s "$scenario" 2>&1 | tee "out/molecule/$scenario.log"
  rc=${PIPESTATUS[0]}
  status=PASS
  if [[ $rc -ne 0 ]]; then
    status=FAIL
    failed=1
    failed_n=$((failed_n + 1))
  else
    passed_n=$((passed_n + 1))
  fi
  results+=("$(printf '%-16s %-6s %5s s' "$scenario" "$status" $((SECONDS - start)))")
done

echo
echo "=== molecule summary ($((SECONDS - total_start)) s)"
printf '%s\n' "${results[@]}"
echo "molecule: ${passed_n} passed, ${failed_n} failed"
exit $failed
