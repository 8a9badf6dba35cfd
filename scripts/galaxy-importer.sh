#!/usr/bin/env bash
# `make galaxy-importer`: Galaxy's own import check (galaxy-importer, from PyPI) on the tarball that
# `ansible-galaxy collection build` makes from this checkout.
#
# galaxy-importer goes into its own venv, .cache/galaxy-importer (it pins its own ansible-core and ansible-lint;
# it is not a project requirement). It runs here without containers, with this configuration:
#   RUN_ANSIBLE_DOC=True       every plugin's documentation through ansible-doc, as Galaxy renders it
#   RUN_ANSIBLE_LINT=True      ansible-lint on the unpacked collection, offline (as Galaxy does)
#   CHECK_CHANGELOG=True       changelogs/changelog.yaml or CHANGELOG.rst present
#   RUN_ANSIBLE_TEST=False     galaxy-importer would run ansible-test sanity inside a container image pulled from
#                              a registry, which these machines cannot reach; `make sanity` runs it directly
#   CHECK_REQUIRED_TAGS=False  Automation Hub's fixed tag list; Galaxy does not require it
# The import fails on any ERROR; every WARNING is listed. STRICT=1 also fails on warnings.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
venv=$root/.cache/galaxy-importer
work=$(mktemp -d "${TMPDIR:-/tmp}/galaxy-importer.XXXXXX")
trap 'rm -rf "$work"' EXIT

if [[ ! -x $venv/bin/python || ${FRESH:-0} == 1 ]]; then
  rm -rf "$venv"
  python3 -m venv "$venv"
  if ! "$venv/bin/python" -m pip install -q --disable-pip-version-check galaxy-importer >"$work/pip.log" 2>&1; then
    cat "$work/pip.log" >&2
    exit 1
  fi
fi
version=$("$venv/bin/python" -c 'import importlib.metadata as m; print(m.version("galaxy-importer"))')

"$root/.venv/bin/ansible-galaxy" collection build --output-path "$work" "$root" >/dev/null
tarball=$(ls "$work"/*.tar.gz)
echo "galaxy-importer $version on $(basename "$tarball") ($(tar -tzf "$tarball" | grep -vc '/$') files)"

cat >"$work/galaxy-importer.cfg" <<'EOF'
[galaxy-importer]
LOG_LEVEL_MAIN = INFO
RUN_ANSIBLE_DOC = True
RUN_ANSIBLE_LINT = True
OFFLINE_ANSIBLE_LINT = True
CHECK_CHANGELOG = True
RUN_ANSIBLE_TEST = False
ANSIBLE_TEST_LOCAL_IMAGE = False
LOCAL_IMAGE_DOCKER = False
CHECK_REQUIRED_TAGS = False
REQUIRE_V1_OR_GREATER = False
EOF

start=$SECONDS
rc=0
(cd "$work" && GALAXY_IMPORTER_CONFIG="$work/galaxy-importer.cfg" PATH="$venv/bin:$PATH" \
  "$venv/bin/python" -m galaxy_importer.main "$tarball") >"$work/import.log" 2>&1 || rc=$?
mkdir -p "$root/out"
cp "$work/import.log" "$root/out/galaxy-importer.log"
[[ -f $work/importer_result.json ]] && cp "$work/importer_result.json" "$root/out/galaxy-importer-result.json"

grep -E '^(Running|Getting|Linting|Importer|Collection|.*complete)' "$work/import.log" || true
warnings=$(grep -c '^WARNING' "$work/import.log" || true)
errors=$(grep -cE '^(ERROR|CRITICAL)|Traceback' "$work/import.log" || true)
grep -E '^(WARNING|ERROR|CRITICAL)' "$work/import.log" || true
if [[ $rc -ne 0 || $errors -gt 0 ]] || ! grep -q 'Importer processing completed successfully' "$work/import.log"; then
  echo "galaxy-importer: REJECTED (exit $rc, $errors error(s)) in $((SECONDS - start)) s; log: out/galaxy-importer.log" >&2
  exit 1
fi
if [[ ${STRICT:-0} == 1 && $warnings -gt 0 ]]; then
  echo "galaxy-importer: accepted, but STRICT=1 and $warnings warning(s); log: out/galaxy-importer.log" >&2
  exit 1
fi
echo "galaxy-importer: accepted, $warnings warning(s), in $((SECONDS - start)) s (log: out/galaxy-importer.log," \
  "contents: out/galaxy-importer-result.json)"
