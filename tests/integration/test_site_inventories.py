"""Real sites' inventories share one with the collection's example (tests/fixtures/site-inventories/sites.tar.xz,
each file naming its source; kept as an archive so that the files stay byte for byte as the sites wrote them, which
ansible-test's yamllint would not accept): no variable name in common, and the render-only run writes byte-identical files and prints exactly what
it prints without them.

A site keeps its variables in one inventory, its Slurm role's beside this collection's. Every variable of a site
inventory (its group_vars, host_vars, the vars of its hosts file) is added to a copy of inventories/example as
group_vars/all/, so every host has them all: the strongest form of sharing. The collection reads only its own
namespace (hpc_gres_*), so none of them may change a byte or a line of output.
"""
import atexit
import glob
import os
import re
import shutil
import subprocess
import tarfile
import tempfile

import pytest
import yaml

import testpaths
from render_helpers import ROOT

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import namespace

ARCHIVE = os.path.join(ROOT, "tests", "fixtures", "site-inventories", "sites.tar.xz")
CORPUS = tempfile.mkdtemp(prefix="site-inventories-")
atexit.register(shutil.rmtree, CORPUS, True)
with tarfile.open(ARCHIVE) as _archive:
    _archive.extractall(CORPUS)
SITES = sorted(os.path.relpath(path, CORPUS) for path in glob.glob(os.path.join(CORPUS, "*", "*"))
               if os.path.isdir(path))
# what differs between two runs of the same render: timings and the temporary paths
_VOLATILE = re.compile(r"(/tmp/\S+|\d+\.\d+s|\d{4}-\d\d-\d\d[ T][\d:.,]+)")


def variables_of(path):
    """Every top-level variable a site file sets: a vars file is a mapping; a hosts file holds vars per group/host."""
    with open(path, encoding="utf-8") as handle:
        data = yaml.safe_load(handle) or {}
    if "group_vars" in path.split(os.sep) or "host_vars" in path.split(os.sep) or "defaults" in path.split(os.sep):
        return dict(data) if isinstance(data, dict) else {}
    found = {}

    def walk(group):
        if not isinstance(group, dict):
            return
        found.update(group.get("vars") or {})
        for host_vars in (group.get("hosts") or {}).values():
            found.update(host_vars or {})
        for child in (group.get("children") or {}).values():
            walk(child)

    if isinstance(data, dict) and any(isinstance(v, dict) and {"hosts", "children", "vars"} & set(v)
                                      for v in data.values()):
        for group in data.values():
            walk(group)
        return found
    return dict(data) if isinstance(data, dict) else {}


def site_files(site):
    return sorted(p for p in glob.glob(os.path.join(CORPUS, site, "**", "*"), recursive=True) if os.path.isfile(p))


def render(inventory, dest):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1",
               ANSIBLE_FORCE_COLOR="0")
    proc = subprocess.run([testpaths.ANSIBLE_PLAYBOOK, "playbooks/render-gres.yml", "-i", inventory,
                           "-e", "hpc_gres_render_dir=%s" % dest], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=300, check=False)
    return proc.returncode, _VOLATILE.sub("*", proc.stdout + proc.stderr)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    work = tmp_path_factory.mktemp("example")
    inventory = str(work / "inv")
    shutil.copytree(os.path.join(ROOT, "inventories", "example"), inventory)
    rc, out = render(os.path.join(inventory, "hosts.yml"), str(work / "out"))
    assert rc == 0, out
    return testpaths.read_tree(str(work / "out")), out


def test_the_corpus_holds_real_inventories_of_each_role():
    roles = {site.split(os.sep)[0] for site in SITES if not os.path.basename(site).startswith("_role-defaults")}
    assert {"galaxyproject.slurm", "stackhpc.openhpc", "deepops"} <= roles
    assert len([s for s in SITES if not os.path.basename(s).startswith("_role-defaults")]) >= 17
    for site in SITES:
        for path in site_files(site):
            with open(path, encoding="utf-8") as handle:
                assert handle.readline().startswith("# source: https://"), path


@pytest.mark.parametrize("site", SITES)
def test_a_site_inventory_shares_one_with_the_example(site, baseline, tmp_path):
    names = set()
    inventory = str(tmp_path / "inv")
    shutil.copytree(os.path.join(ROOT, "inventories", "example"), inventory)
    # group_vars/all as a directory: the example's all.yml first, then every file of the site
    extra = os.path.join(inventory, "group_vars", "all")
    os.makedirs(extra)
    os.rename(extra + ".yml", os.path.join(extra, "000-example.yml"))
    for number, path in enumerate(site_files(site)):
        found = variables_of(path)
        names.update(found)
        with open(os.path.join(extra, "site-%03d.yml" % number), "w", encoding="utf-8") as handle:
            yaml.safe_dump(found, handle)
    assert names, site
    ours = {n for n in names if namespace.ours(n)}
    with open(os.path.join(ROOT, "inventories", "example", "group_vars", "all.yml"), encoding="utf-8") as handle:
        example = set(yaml.safe_load(handle))
    assert not ours and not names & example, "names in common with the collection: %s" % sorted(ours | names & example)
    rc, out = render(os.path.join(inventory, "hosts.yml"), str(tmp_path / "out"))
    assert rc == 0, out
    files, expected_out = baseline
    assert testpaths.read_tree(str(tmp_path / "out")) == files
    assert out.splitlines() == expected_out.splitlines()
