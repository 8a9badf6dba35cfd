#!/usr/bin/env bash
# `make sanity`: ansible-test sanity on this collection, offline-capable, with the ansible-core of a venv.
#
# ansible-test wants the collection at .../ansible_collections/hpc/slurm_gres in a git work tree; this copies
# the files git knows (tracked, plus untracked ones not ignored) to .cache/sanity/<core>/ansible_collections/
# hpc/slurm_gres and runs there; the whole output also goes to .cache/sanity/<core>/sanity.log, and what failed
# is summed up at the end (test, file:line:column, message). ansible-test's own tool venvs (pylint,
# validate-modules, ...) and its pip bootstrap live under a private HOME, .cache/ansible-test-home, so a rerun
# reuses them; the pip bootstrap script it would download from ci-files.testing.ansible.com (unreachable here)
# is replaced by scripts/sanity-get-pip.py.
#
#   scripts/sanity.sh                      every sanity test (those that need docker or the network are skipped)
#   scripts/sanity.sh --test pep8          ansible-test's own options pass through (make sanity TEST=pep8)
#   VENV=.cache/compat/2.16 scripts/sanity.sh   with another ansible-core (the venv's python and ansible-test)
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=${VENV:-$root/.venv}
[[ $venv = /* ]] || venv=$root/$venv
python=$venv/bin/python
[[ -x $venv/bin/ansible-test ]] || { echo "sanity: no ansible-test in $venv (make setup)" >&2; exit 1; }
pyver=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
core=$("$python" -c 'from ansible.release import __version__; print(".".join(__version__.split(".")[:2]))')

work=$root/.cache/sanity/$core
dest=$work/ansible_collections/hpc/slurm_gres
home=$root/.cache/ansible-test-home

# The pip version ansible-test bootstraps its venvs with, and the stand-in for its download.
pip_version=$("$python" - <<'PY'
import os, re, ansible_test
path = os.path.join(os.path.dirname(ansible_test.__file__), "_internal", "python_requirements.py")
found = re.search(r"pip='([0-9.]+)'", open(path).read())
print(found.group(1) if found else "")
PY
)
[[ -n $pip_version ]] || { echo "sanity: cannot tell which pip this ansible-test bootstraps" >&2; exit 1; }
mkdir -p "$home/.ansible/test/cache"
cp "$root/scripts/sanity-get-pip.py" "$home/.ansible/test/cache/get_pip_${pip_version//./_}.py"

rm -rf "$dest"
mkdir -p "$dest"
# shellcheck disable=SC2016  # the inner sh expands its own arguments
(cd "$root" && git ls-files -z --cached --others --exclude-standard | xargs -0 -r sh -c '
  for f; do [ -e "$f" ] || [ -L "$f" ] && printf "%s\0" "$f"; done' sh) \
  | tar -C "$root" --null -T - -cf - | tar -C "$dest" -xf -
git -C "$dest" init -q
git -C "$dest" add -A

# run_sanity LABEL ARGS...: ansible-test sanity with ARGS; its output goes to the terminal and to a log, and the
# labels of failed runs, with their ERROR lines, are kept for the summary at the end.
log=$work/sanity.log
: >"$log"
failed=()
run_sanity() {
  local label=$1 t0=$SECONDS status=0
  shift
  PATH=$pythons:$PATH HOME=$home ANSIBLE_COLLECTIONS_PATH=$work "$venv/bin/ansible-test" sanity --color no "$@" \
    2>&1 | tee -a "$log" || status=$?
  echo "sanity: $label: exit $status in $((SECONDS - t0)) s"
  [[ $status -eq 0 ]] || failed+=("$label")
  return 0
}

start=$SECONDS
cd "$dest"
pythons=$home/pythons
mkdir -p "$pythons"
run_sanity "ansible-core $core, Python $pyver" --python "$pyver" --python-interpreter "$python" "$@"

# The code that runs on the nodes (modules, module_utils) on the other Pythons a node may have, 3.9 (RHEL 9)
# and up (tests/config.yml): compile and import, with every interpreter of those found here.
if [[ $# -eq 0 ]]; then
  # shellcheck source=scripts/find-python.sh
  source "$root/scripts/find-python.sh"
  supported=$("$python" -c 'from ansible_test._internal.constants import SUPPORTED_PYTHON_VERSIONS as s; print(*s)')
  for v in ${SANITY_NODE_PYTHONS:-3.9 3.10 3.11 3.12 3.13}; do
    [[ $v != "$pyver" && " $supported " == *" $v "* ]] || continue
    interpreter=$(find_python "$v")
    if [[ -z $interpreter ]]; then
      echo "sanity: no python$v here: compile and import on it not run"
      continue
    fi
    ln -sfn "$interpreter" "$pythons/python$v"
    run_sanity "compile and import on Python $v" --test compile --test import --python "$v"
  done
fi

# What failed, in one place: ansible-test's own lines naming file:line:column, test and message.
rc=0
if [[ ${#failed[@]} -gt 0 ]]; then
  rc=1
  echo
  echo "sanity: FAILED (ansible-core $core; full output: ${log#"$root"/})"
  printf '  failed run: %s\n' "${failed[@]}"
  # the names ansible-test lists under "FATAL: The N sanity test(s) listed below ... failed"
  tests=$(awk '/^FATAL: The [0-9]+ sanity test/ {listing = 1; next} listing && /^[a-z0-9-]+$/ {print; next}
               {listing = 0}' "$log" | sort -u | tr '\n' ' ')
  [[ -z $tests ]] || echo "  failed tests: $tests"
  # ansible-test's findings, and the last line of any traceback (ansible-test itself failing)
  grep -E '^(ERROR: |[A-Za-z_.]*(Error|Exception): )' "$log" | grep -v '^ERROR: See documentation' |
    awk '!seen[$0]++' | sed 's/^/  /' || true
  echo "  rerun one test: make sanity TEST=<name> (or scripts/sanity.sh --test <name>)"
  echo "  the vendored hostlist is the only file tests/sanity/ignore-*.txt may name: fix the code, not the ignore file"
fi
echo "sanity: exit $rc after $((SECONDS - start)) s"
exit "$rc"
