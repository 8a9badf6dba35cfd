"""What the collection says about itself agrees with what it is: versions, sanity ignores, roles, playbook names."""
import os
import re

import yaml

import testpaths

ROOT = testpaths.ROOT
SANITY = os.path.join(ROOT, "tests", "sanity")
VENDORED = "plugins/module_utils/common/hostlist.py"


def read(*parts):
    with open(os.path.join(ROOT, *parts)) as handle:
        return handle.read()


def compat_versions():
    """The ansible-core minors scripts/compat.sh tests."""
    found = re.search(r"^VERSIONS=\(([\d. ]+)\)$", read("scripts", "compat.sh"), re.M)
    return found.group(1).split()


def lowest_admitted():
    runtime = yaml.safe_load(read("meta", "runtime.yml"))
    found = re.fullmatch(r">=\s*(\d+)\.(\d+)\.\d+", runtime["requires_ansible"])
    assert found, "requires_ansible: expected '>=X.Y.Z', found %r" % runtime["requires_ansible"]
    return "%s.%s" % found.groups()


def test_requires_ansible_admits_exactly_from_the_lowest_tested_minor():
    versions = compat_versions()
    assert versions == sorted(versions, key=lambda v: tuple(map(int, v.split("."))))
    assert lowest_admitted() == versions[0]
    for role in os.listdir(os.path.join(ROOT, "roles")):
        meta = yaml.safe_load(read("roles", role, "meta", "main.yml"))
        assert str(meta["galaxy_info"]["min_ansible_version"]) == versions[0], role


def test_every_tested_minor_has_a_sanity_ignore_file_and_no_other_file_is_there():
    names = sorted(os.listdir(SANITY))
    assert names == sorted("ignore-%s.txt" % v for v in compat_versions())


def test_sanity_ignores_only_the_vendored_hostlist():
    for name in os.listdir(SANITY):
        for number, line in enumerate(read("tests", "sanity", name).splitlines(), 1):
            entry = line.split("#", 1)[0].strip()
            if entry:
                assert entry.split()[0] == VENDORED, "%s:%d: only %s may be ignored, found %r" % (
                    name, number, VENDORED, line)


def test_ansible_lint_ignores_only_the_sanity_ignore_files_and_the_lowest_version():
    entries = [line.split() for line in read(".ansible-lint-ignore").splitlines() if line and line[0] != "#"]
    sanity = [e for e in entries if e[0].startswith("tests/sanity/")]
    assert sorted(e[0] for e in sanity) == sorted("tests/sanity/%s" % n for n in os.listdir(SANITY))
    assert {tuple(e[1:]) for e in sanity} == {("sanity[cannot-ignore]", "skip")}
    # requires_ansible may be older than ansible-lint's list of supported ansible-core: nothing else is ignored
    others = [e for e in entries if e not in sanity]
    assert others in ([], [["meta/runtime.yml", "meta-runtime[unsupported-version]", "skip"]]), others


def test_every_role_has_a_readme_naming_only_variables_it_has_or_sets():
    for role in sorted(os.listdir(os.path.join(ROOT, "roles"))):
        text = read("roles", role, "README.md")
        assert text.startswith("# hpc.slurm_gres.%s\n" % role)
        specs = yaml.safe_load(read("roles", role, "meta", "argument_specs.yml"))["argument_specs"]
        known = {name for entry in specs.values() for name in (entry.get("options") or {})}
        tasks = os.path.join(ROOT, "roles", role, "tasks")
        for name in os.listdir(tasks):  # and what the role registers or sets for the caller
            known |= set(re.findall(r"(?:register: |^\s+)(%s\w+)\b" % (role + "_"), read(tasks, name), re.M))
        prefix = role + "_"
        named = set(re.findall(r"`(%s\w+)`" % prefix, text))
        assert named, role
        assert named <= known, "%s/README.md names variables the role does not have: %s" % (role, named - known)


def test_each_playbook_has_its_fqcn_name_and_a_checkout_name_that_only_imports_it():
    playbooks = os.path.join(ROOT, "playbooks")
    names = [n[:-4] for n in os.listdir(playbooks) if n.endswith(".yml")]
    canonical = sorted(n for n in names if "-" not in n)
    assert canonical and all(re.fullmatch(r"[a-z0-9_]+", n) for n in canonical)  # valid FQCN resource names
    assert sorted(n for n in names if "-" in n) == sorted(n.replace("_", "-") for n in canonical)
    for name in canonical:
        plays = yaml.safe_load(read("playbooks", name.replace("_", "-") + ".yml"))
        assert len(plays) == 1 and plays[0]["ansible.builtin.import_playbook"] == name + ".yml", name


def test_galaxy_metadata_is_complete():
    galaxy = yaml.safe_load(read("galaxy.yml"))
    for key in ("repository", "documentation", "homepage", "issues"):
        assert re.fullmatch(r"https://github\.com/[\w.-]+/[\w.-]+(/.*)?", galaxy[key]), key
    assert galaxy["license"] == ["GPL-3.0-or-later"]
    assert "GNU GENERAL PUBLIC LICENSE\n                       Version 3, 29 June 2007" in read("LICENSE")
    assert galaxy["dependencies"] == {}
