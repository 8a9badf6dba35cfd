#!/usr/bin/env bash
# `make release`: the checks a release of the version in galaxy.yml must pass, and its tarball.
#   1. changelogs/changelog.yaml has a release of that version, with a summary, and no fragment is left over;
#   2. the tarball's file list and an install of it outside the checkout, rendering by FQCN (make package);
#   3. Galaxy's own import check on the tarball (scripts/galaxy-importer.sh);
#   4. the tarball, out/release/hpc-slurm_gres-VERSION.tar.gz, to publish with `ansible-galaxy collection publish`.
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
py=.venv/bin/python
version=$("$py" -c 'import yaml; print(yaml.safe_load(open("galaxy.yml"))["version"])')
echo "release $version"

"$py" - "$version" <<'PY'
import os, sys, yaml
version = sys.argv[1]
changes = yaml.safe_load(open("changelogs/changelog.yaml"))
release = (changes.get("releases") or {}).get(version)
if not release or not (release.get("changes") or {}).get("release_summary"):
    sys.exit("changelogs/changelog.yaml: expected release %s with a release_summary, found %s"
             % (version, sorted(changes.get("releases") or {})))
left = [f for f in os.listdir("changelogs/fragments") if f.endswith((".yml", ".yaml"))]
if left:
    sys.exit("changelogs/fragments: expected none left after the release of %s, found %s" % (version, left))
if not os.path.isfile("CHANGELOG.rst") or version not in open("CHANGELOG.rst").read():
    sys.exit("CHANGELOG.rst: expected the release %s" % version)
print("changelog: release %s, %d section(s)" % (version, len(release["changes"])))
PY

.venv/bin/pytest -q tests/integration/test_package.py
bash scripts/galaxy-importer.sh
mkdir -p out/release
rm -f "out/release/hpc-slurm_gres-$version.tar.gz"
.venv/bin/ansible-galaxy collection build --output-path out/release . >/dev/null
echo "out/release/hpc-slurm_gres-$version.tar.gz: $(tar -tzf "out/release/hpc-slurm_gres-$version.tar.gz" | grep -vc '/$') files"
