#!/usr/bin/env bash
# Run the molecule scenarios with `molecule test`, per Slurm release, and fail if any fails.
# Called by `make test` and `make molecule`.
#   scripts/run-molecule.sh                      the matrix of molecule/releases: every scenario on the default
#                                                release (first line), the listed ones on the others
#   scripts/run-molecule.sh default gpu-lost     only these, on the default release
#   scripts/run-molecule.sh 22.05:default 26.05:deploy-mig   RELEASE:SCENARIO pairs (RELEASE:all for every scenario)
# Each release's node image comes from scripts/build-image.sh SUITE (cached); the scenarios see it as
# $SLURM_GRES_IMAGE and the release as $SLURM_GRES_SLURM_VERSION (the inventories' hpc_gres_slurm_version).
# Two lanes run side by side (the test machines have 2 cores; measured in molecule/README.md): lane 1 the default
# release's scenarios, streamed to the terminal; lane 2 the other releases, infra-smoke and import (short runs that
# balance the lanes: lane 1 was 270 s longer with import), to their logs only
# (a line as each ends; the end of a failed one's log at the end). Lane 2 has a podman world of its own (container
# store and runtime directory; the node images are shared, read-only), so the same scenario with the same
# container names can run in both lanes; its podman networks carry the suffix -lane2 ($SLURM_GRES_NETWORK_SUFFIX
# in the molecule.yml files). MOLECULE_LANES=1: every run in one lane, in order.
# Full logs: out/molecule/<scenario>-<release>.log.
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
total_start=$SECONDS
resdir=$(mktemp -d)
trap 'rm -rf "$resdir"' EXIT

# The node images first, once per release (in the main podman store, which lane 2 reads).
declare -A image_of=()
for run in "${runs[@]}"; do
  read -r release scenario <<<"$run"
  [[ -n ${image_of[$release]:-} ]] && continue
  start=$SECONDS
  # (not `tee /dev/stderr`: that reopens stderr and truncates it when it is a log file)
  built=$(bash scripts/build-image.sh "${suite_of[$release]}")
  rc=$?
  printf '%s\n' "$built" >&2
  if [[ $rc -ne 0 ]]; then
    echo "run-molecule: image build for Slurm $release (${suite_of[$release]}) failed" >&2
    exit 1
  fi
  image_of[$release]=$(sed -n 's/^image=//p' <<<"$built")
  printf '%-7s %-16s %-6s %5s s\n' "$release" "(image)" BUILT $((SECONDS - start)) >>"$resdir/images"
done

lane1=() lane2=()
for run in "${runs[@]}"; do
  read -r release scenario <<<"$run"
  if [[ ${MOLECULE_LANES:-2} == 1 || ($release == "$default_release" && $scenario != infra-smoke &&
    $scenario != import) ]]; then
    lane1+=("$run")
  else
    lane2+=("$run")
  fi
done
if [[ ${#lane1[@]} -eq 0 ]]; then
  lane1=("${lane2[@]}")
  lane2=()
fi

lane2_world() { # exports lane 2's podman settings: its own store and runtime directories, the images shared
  local dir=$root/.cache/podman-lane2 graphroot driver backend
  graphroot=$(podman info --format '{{.Store.GraphRoot}}') || return 1
  driver=$(podman info --format '{{.Store.GraphDriverName}}') || return 1
  backend=$(podman info --format '{{.Host.NetworkBackend}}') || return 1
  mkdir -p "$dir"
  cat >"$dir/storage.conf" <<EOF
# written by scripts/run-molecule.sh: lane 2's container store; the images come from the main store, read-only
[storage]
driver = "$driver"
graphroot = "$graphroot-slurm-gres-lane2"
runroot = "/run/containers/storage-slurm-gres-lane2"
[storage.options]
additionalimagestores = ["$graphroot"]
EOF
  {
    sed '/^\[engine\]/a tmp_dir = "/run/libpod-slurm-gres-lane2"' "$CONTAINERS_CONF"
    printf '\n[network]\nnetwork_backend = "%s"\n' "$backend"
  } >"$dir/containers.conf"
  export CONTAINERS_STORAGE_CONF=$dir/storage.conf CONTAINERS_CONF=$dir/containers.conf
  export SLURM_GRES_NETWORK_SUFFIX=-lane2
}

run_lane() { # LANE RUN...: each "RELEASE SCENARIO" in turn; one result line each in $resdir/lane-LANE
  local lane=$1 run release scenario start rc status log
  shift
  for run in "$@"; do
    read -r release scenario <<<"$run"
    log=out/molecule/$scenario-$release.log
    if [[ ! -f molecule/$scenario/molecule.yml ]]; then
      echo "run-molecule: no scenario molecule/$scenario" >&2
      printf '%-7s %-16s %-6s %5s s\n' "$release" "$scenario" MISSING 0 >>"$resdir/lane-$lane"
      continue
    fi
    echo "=== [lane $lane] molecule test -s $scenario (Slurm $release, ${image_of[$release]})"
    start=$SECONDS
    # one ephemeral directory per release and scenario: both lanes may run the same scenario at once
    export MOLECULE_EPHEMERAL_DIRECTORY=$root/.cache/molecule/$release/$scenario
    if [[ $lane == 1 ]]; then
      SLURM_GRES_IMAGE=${image_of[$release]} SLURM_GRES_SLURM_VERSION=$release \
        molecule test -s "$scenario" 2>&1 | tee "$log"
      rc=${PIPESTATUS[0]}
    else
      SLURM_GRES_IMAGE=${image_of[$release]} SLURM_GRES_SLURM_VERSION=$release \
        molecule test -s "$scenario" >"$log" 2>&1
      rc=$?
    fi
    status=PASS
    [[ $rc -ne 0 ]] && status=FAIL
    echo "=== [lane $lane] $scenario (Slurm $release): $status in $((SECONDS - start)) s ($log)"
    printf '%-7s %-16s %-6s %5s s\n' "$release" "$scenario" "$status" $((SECONDS - start)) >>"$resdir/lane-$lane"
  done
}

lane2_pid=
if [[ ${#lane2[@]} -gt 0 ]]; then
  echo "run-molecule: lane 2, beside lane 1: ${lane2[*]}"
  (
    lane2_world || {
      echo "run-molecule: cannot set up lane 2's podman store" >&2
      exit 1
    }
    run_lane 2 "${lane2[@]}"
  ) &
  lane2_pid=$!
fi
run_lane 1 "${lane1[@]}"
[[ -n $lane2_pid ]] && wait "$lane2_pid"

echo
echo "=== molecule summary ($((SECONDS - total_start)) s)"
cat "$resdir/images" "$resdir/lane-1" "$resdir/lane-2" 2>/dev/null
while read -r release scenario status _; do
  [[ $status == PASS ]] && continue
  echo "--- lane 2: $scenario (Slurm $release) $status; the end of out/molecule/$scenario-$release.log:"
  tail -n 80 "out/molecule/$scenario-$release.log" 2>/dev/null
done < <(cat "$resdir/lane-2" 2>/dev/null)
passed_n=$(cat "$resdir"/lane-* 2>/dev/null | awk '$3 == "PASS"' | wc -l)
failed_n=$(cat "$resdir"/lane-* 2>/dev/null | awk '$3 != "PASS"' | wc -l)
missing_n=$((${#runs[@]} - passed_n - failed_n))
if ((missing_n > 0)); then
  echo "run-molecule: $missing_n of ${#runs[@]} runs have no result (a lane stopped early)"
  failed_n=$((failed_n + missing_n))
fi
echo "molecule: ${passed_n} passed, ${failed_n} failed"
[[ $failed_n -eq 0 ]]
