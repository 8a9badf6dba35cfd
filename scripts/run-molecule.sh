#!/usr/bin/env bash
# Run the molecule scenarios with `molecule test`, per Slurm release, one after another, and fail if any fails.
# Called by `make test` and `make molecule`.
#   scripts/run-molecule.sh                      the matrix of molecule/releases: every scenario on the default
#                                                release (first line), the listed ones on the others
#   scripts/run-molecule.sh default gpu-lost     only these, on the default release
#   scripts/run-molecule.sh 22.05:default 26.05:deploy-mig   RELEASE:SCENARIO pairs (RELEASE:all for every scenario)
# Each release's node image comes from scripts/build-image.sh SUITE (cached); the scenarios see it as
# $SLURM_GRES_IMAGE and the release as $SLURM_GRES_SLURM_VERSION (the inventories' slurm_version).
# Full logs: out/molecule/<scenario>-<release>.log (also streamed to the terminal).
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

all_scenarios=()
[[ -f molecule/infra-smoke/molecule.yml ]] && all_scenarios+=(infra-smoke)
for file in molecule/*/molecule.yml; do
  name=$(basename "$(dirname "$file")")
  [[ $name == infra-smoke ]] || all_scenarios+=("$name")
done

# molecule/releases: "RELEASE SUITE SCENARIO..." lines, the first is the default release.
declare -A suite_of=() matrix=()
releases=()
while read -r release suite rest; do
  [[ -z $release || $release == \#* ]] && continue
  suite_of[$release]=$suite
  matrix[$release]=$rest
  releases+=("$release")
done <molecule/releases
default_release=${releases[0]}

expand() {  # scenario list of one matrix entry ("all" = every scenario)
  local item
  for item in "$@"; do
    [[ $item == - ]] && continue  # no scenario on this release (molecule/releases says why)
    if [[ $item == all ]]; then printf '%s\n' "${all_scenarios[@]}"; else printf '%s\n' "$item"; fi
  done
}

runs=()  # "RELEASE SCENARIO"
if [[ $# -eq 0 ]]; then
  for release in "${releases[@]}"; do
    # shellcheck disable=SC2086  # the matrix entry is a word list
    while read -r scenario; do runs+=("$release $scenario"); done < <(expand ${matrix[$release]})
  done
else
  for arg in "$@"; do
    if [[ $arg == *:* ]]; then release=${arg%%:*}; scenario=${arg#*:}; else release=$default_release; scenario=$arg; fi
    if [[ -z ${suite_of[$release]:-} ]]; then
      echo "run-molecule: no Slurm release $release in molecule/releases (${releases[*]})" >&2
      exit 2
    fi
    while read -r one; do runs+=("$release $one"); done < <(expand "$scenario")
  done
fi

mkdir -p out/molecule
results=()
failed=0
passed_n=0
failed_n=0
total_start=$SECONDS
declare -A image_of=()
for run in "${runs[@]}"; do
  read -r release scenario <<<"$run"
  if [[ -z ${image_of[$release]:-} ]]; then
    start=$SECONDS
    if ! built=$(bash scripts/build-image.sh "${suite_of[$release]}" | tee /dev/stderr); then
      echo "run-molecule: image build for Slurm $release (${suite_of[$release]}) failed" >&2
      exit 1
    fi
    image_of[$release]=$(sed -n 's/^image=//p' <<<"$built")
    results+=("$(printf '%-7s %-16s %-6s %5s s' "$release" "(image)" BUILT $((SECONDS - start)))")
  fi
  if [[ ! -f molecule/$scenario/molecule.yml ]]; then
    echo "run-molecule: no scenario molecule/$scenario" >&2
    results+=("$(printf '%-7s %-16s %-6s %5s s' "$release" "$scenario" MISSING 0)")
    failed=1
    failed_n=$((failed_n + 1))
    continue
  fi
  echo "=== molecule test -s $scenario (Slurm $release, ${image_of[$release]})"
  start=$SECONDS
  SLURM_GRES_IMAGE=${image_of[$release]} SLURM_GRES_SLURM_VERSION=$release \
    molecule test -s "$scenario" 2>&1 | tee "out/molecule/$scenario-$release.log"
  rc=${PIPESTATUS[0]}
  status=PASS
  if [[ $rc -ne 0 ]]; then
    status=FAIL
    failed=1
    failed_n=$((failed_n + 1))
  else
    passed_n=$((passed_n + 1))
  fi
  results+=("$(printf '%-7s %-16s %-6s %5s s' "$release" "$scenario" "$status" $((SECONDS - start)))")
done

echo
echo "=== molecule summary ($((SECONDS - total_start)) s)"
printf '%s\n' "${results[@]}"
echo "molecule: ${passed_n} passed, ${failed_n} failed"
exit $failed
