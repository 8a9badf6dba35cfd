#!/usr/bin/env bash
# `make compat` / `make compat-min`: the collection on every ansible-core minor it admits.
#
# For each ansible-core minor: a venv in .cache/compat/<minor> (ansible-core==<minor>.*, pytest, python-hostlist,
# on a Python that release supports as a controller), then with it
#   - the unit tests, the module tests and the render-only playbook tests (pytest, run by that venv's Python:
#     tests/helpers/testpaths.py takes ansible and ansible-playbook from beside it);
#   - `ansible-test sanity` of that version (scripts/sanity.sh, tests/sanity/ignore-X.Y.txt);
# and once at the end, tests/compat/test_same_render.py: every version renders the same inventories (the
# example, one without any cluster-wide variable, one with every option, one to refuse) through
# `ansible-playbook hpc.slurm_gres.deploy_gres`, and every tree must be byte-identical to the newest version's.
# The checkout's .venv takes part in that comparison too.
#
#   scripts/compat.sh                  every minor in VERSIONS below
#   scripts/compat.sh 2.14 2.21        those minors
#   scripts/compat.sh --min            the lowest minor meta/runtime.yml admits: tests marked ansible_core,
#                                      and the same render as .venv
#   COMPAT_SANITY=0 scripts/compat.sh  without `ansible-test sanity` of each version (on by default, but not with
#                                      --min: `make test` runs `make sanity` with .venv's version)
#   COMPAT_PYTHON_2_17=/usr/bin/python3.10 ...   the interpreter for one minor (default: PYTHON_FOR below,
#                                                found on PATH or under pyenv's versions)
# Exit status 0 only when every version passed; the closing table has each version's result and times.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
cache=$root/.cache/compat

# ansible-core minor -> the Python it runs on here. Controller Pythons: 2.14/2.15 3.9-3.11, 2.16/2.17 3.10-3.12,
# 2.18/2.19 3.11-3.13, 2.20/2.21 3.12-3.14. 2.14 runs on Debian 12's own 3.11 (so a fresh machine can run
# `--min`; RHEL 9's ansible-core 2.14 package runs on 3.11 too), 2.15 on 3.9 (RHEL 9's python3: what
# `pip install ansible-core` gives there), 2.17 on the oldest controller Python it supports, the rest spread
# over 3.12 and 3.13.
VERSIONS=(2.14 2.15 2.16 2.17 2.18 2.19 2.20 2.21)
declare -A PYTHON_FOR=([2.14]=3.11 [2.15]=3.9 [2.16]=3.11 [2.17]=3.10 [2.18]=3.12 [2.19]=3.13 [2.20]=3.12 [2.21]=3.13)
# What each version runs: unit tests, the modules through ansible, the render-only playbook, the verify and
# deploy playbooks (--check, and a real run with its lock and record) on emulated nodes, the MIG runbook's lock.
PYTEST_TARGETS=(
  tests/unit
  tests/integration/test_render_playbook.py
  tests/integration/test_gpu_facts_module.py
  tests/integration/test_gres_verify_module.py
  tests/integration/test_mig_layout_module.py
  tests/integration/test_slurm_node_module.py
  tests/integration/test_verify_playbook.py
  tests/integration/test_gc_freeze_callback.py
  tests/integration/test_deploy_playbook.py
  tests/integration/test_deploy_run_playbook.py
  tests/integration/test_run_runbook_lock.py
)
# `--min` (part of `make test`) runs, of those, the tests marked `ansible_core` (tests/conftest.py): where
# ansible-core itself takes part, i.e. inventories and templating, the render playbook, and per module its
# argument spec, check mode, changed/failed results through AnsiballZ. The rest is the collection's own logic in
# pure Python, on the same interpreter as .venv's; `make pytest` proves it once, `make compat` on every version.
MIN_MARK=ansible_core
PACKAGES=(pytest "python-hostlist>=2.0" "hypothesis>=6.100")

lowest_admitted() {
  sed -nE 's/^requires_ansible: *"?>= *([0-9]+\.[0-9]+).*/\1/p' "$root/meta/runtime.yml"
}

# shellcheck source=scripts/find-python.sh
source "$root/scripts/find-python.sh"

versions=()
minimal=0
for arg in "$@"; do
  case $arg in
    --min) minimal=1; versions+=("$(lowest_admitted)") ;;
    [0-9]*.[0-9]*) versions+=("$arg") ;;
    *) echo "compat: unknown argument $arg (versions like 2.16, or --min)" >&2; exit 2 ;;
  esac
done
[[ ${#versions[@]} -gt 0 ]] || versions=("${VERSIONS[@]}")

# The tests read ansible's output through the json callback of ansible.posix, which only the full `ansible`
# package in .venv bundles: the version venvs (ansible-core alone) find it there, after the checkout's link.
site=$("$root/.venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [[ ! -d $site/ansible_collections/ansible/posix ]]; then
  echo "compat: no ansible.posix in $site (make setup installs it with the ansible package)" >&2
  exit 1
fi
export ANSIBLE_COLLECTIONS_PATH="$root/.cache/collections:$site"

declare -A result detail
bins=()
failed=0
mkdir -p "$cache"
for v in "${versions[@]}"; do
  override=COMPAT_PYTHON_${v//./_}
  pyver=${PYTHON_FOR[$v]:-}
  python=${!override:-}
  if [[ -z $python ]]; then
    if [[ -z $pyver ]]; then
      result[$v]=FAILED; detail[$v]="no Python known for ansible-core $v: add it to PYTHON_FOR in $0"
      failed=1; continue
    fi
    python=$(find_python "$pyver")
  fi
  if [[ -z $python ]]; then
    result[$v]=FAILED
    detail[$v]="no python$pyver here (pyenv install $pyver, or COMPAT_PYTHON_${v//./_}=/path/to/python)"
    failed=1; continue
  fi

  venv=$cache/$v
  t0=$SECONDS
  stamp="$("$python" -VV 2>&1 | head -1) | ansible-core==$v.* ${PACKAGES[*]}"
  if [[ ! -x $venv/bin/ansible-playbook || $(cat "$venv/.stamp" 2>/dev/null) != "$stamp" ]]; then
    echo "compat: building $venv with $python"
    rm -rf "$venv"
    "$python" -m venv "$venv"
    if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check "ansible-core==$v.*" "${PACKAGES[@]}" \
      >"$cache/$v.pip.log" 2>&1; then
      cat "$cache/$v.pip.log" >&2
      result[$v]=FAILED; detail[$v]="pip could not install ansible-core==$v.* (log: .cache/compat/$v.pip.log)"
      failed=1; continue
    fi
    echo "$stamp" >"$venv/.stamp"
  fi
  build=$((SECONDS - t0))
  core=$("$venv/bin/python" -c 'from ansible.release import __version__; print(__version__)')
  pyfull=$("$venv/bin/python" -c 'import platform; print(platform.python_version())')

  targets=("${PYTEST_TARGETS[@]}")
  [[ $minimal == 0 ]] || targets=(-m "$MIN_MARK" "${PYTEST_TARGETS[@]}")
  echo "compat: ansible-core $core on Python $pyfull: pytest ${targets[*]}"
  t0=$SECONDS
  log=$cache/$v.pytest.log
  if "$venv/bin/python" -m pytest -q -p no:cacheprovider "${targets[@]}" >"$log" 2>&1; then
    result[$v]=passed
  else
    result[$v]=FAILED
    failed=1
    tail -n 30 "$log"
  fi
  detail[$v]="ansible-core $core, Python $pyfull: $(tail -n 1 "$log" | tr -d '=' | sed 's/^ *//'); venv ${build} s, tests $((SECONDS - t0)) s (log: ${log#"$root"/})"

  if [[ ${COMPAT_SANITY:-$((1 - minimal))} == 1 ]]; then
    t0=$SECONDS
    if VENV=$venv "$root/scripts/sanity.sh" >"$cache/$v.sanity.log" 2>&1; then
      detail[$v]+="; sanity passed in $((SECONDS - t0)) s"
    else
      result[$v]=FAILED; failed=1
      detail[$v]+="; sanity FAILED in $((SECONDS - t0)) s (log: .cache/compat/$v.sanity.log)"
      grep -E '^(ERROR|FATAL)' "$cache/$v.sanity.log" | head -n 20 || true
    fi
  fi
  bins+=("$v=$venv/bin")
done

# Same files from every version, the checkout's .venv included.
if [[ ${#bins[@]} -gt 0 ]]; then
  [[ -x $root/.venv/bin/ansible-playbook ]] && bins+=("venv=$root/.venv/bin")
  echo "compat: same render from ${bins[*]%%=*}"
  t0=$SECONDS
  log=$cache/same-render.log
  if SLURM_GRES_COMPAT_BINS="${bins[*]}" "$root/.venv/bin/python" -m pytest -q -p no:cacheprovider \
    tests/compat/test_same_render.py >"$log" 2>&1; then
    same="passed"
  else
    same="FAILED"; failed=1
    tail -n 40 "$log"
  fi
  same+=" in $((SECONDS - t0)) s: $(tail -n 1 "$log" | tr -d '=' | sed 's/^ *//') (log: ${log#"$root"/})"
fi

echo
echo "compat summary"
for v in "${versions[@]}"; do
  printf '  %-5s %-7s %s\n' "$v" "${result[$v]}" "${detail[$v]}"
done
[[ -z ${same:-} ]] || printf '  same render: %s\n' "$same"
if [[ $minimal == 1 ]]; then
  echo "  (--min: the lowest admitted version, the tests marked $MIN_MARK; scripts/compat.sh runs every test"
  echo "   on every minor)"
fi
exit "$failed"
