"""The collection as an admin gets it: build the Galaxy tarball, check what is in it, install it, run it from there.

The build runs on the working tree as it is (with .venv, .cache, out/, .pytest_cache and whatever else a
development checkout holds), so the file list check proves that galaxy.yml's build_ignore keeps development
material out. Everything after the install runs from a directory outside the checkout, with only the installed
copy on the collections path.
"""
import json
import os
import re
import subprocess
import tarfile

import pytest
import yaml

import testpaths
from render_helpers import write_inventory

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import MANIFEST, manifest_text

ROOT = testpaths.ROOT
GALAXY = yaml.safe_load(open(os.path.join(ROOT, "galaxy.yml")))
ROLES = sorted(os.listdir(os.path.join(ROOT, "roles")))
PLAYBOOKS = sorted(name[:-4] for name in os.listdir(os.path.join(ROOT, "playbooks"))
                   if name.endswith(".yml") and "_" in name)
MODULES = sorted(name[:-3] for name in os.listdir(os.path.join(ROOT, "plugins", "modules")) if name.endswith(".py"))
GOLDEN = os.path.join(ROOT, "tests", "unit", "plugins", "plugin_utils", "golden")

# What the tarball may hold: what an admin runs and reads, the sanity ignores ansible-test reads where the collection
# is installed, and the ansible-lint exception for those (Galaxy's import runs ansible-lint on the tarball).
# Anything else is development material and belongs in galaxy.yml's build_ignore.
SHIPPED = re.compile(r"""^(
    MANIFEST\.json | FILES\.json | README\.md | LICENSE | CHANGELOG\.rst
  | meta/(runtime|execution-environment)\.yml
  | changelogs/(changelog|config)\.yaml
  | docs/[\w./-]+\.md
  | inventories/example/[\w./-]+\.yml
  | playbooks/[\w./-]+\.(yml|j2)
  | plugins/\w+/[\w/]+\.py
  | roles/\w+/(README\.md|(defaults|handlers|meta|tasks|vars)/\w+\.yml|templates/[\w./-]+\.j2|files/[\w./-]+)
  | tests/config\.yml | tests/sanity/ignore-[\d.]+\.txt | \.ansible-lint-ignore
)$""", re.X)


def run(argv, cwd, env=None, check=True):
    proc = subprocess.run(argv, cwd=cwd, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    if check:
        assert proc.returncode == 0, "%s failed (rc %d):\n%s" % (" ".join(argv), proc.returncode, proc.stdout)
    return proc


def run_json(argv, cwd, env=None):
    """A command's JSON answer, from its stdout alone: what libraries warn on stderr (cryptography 51 warns of DSA
    whenever ansible-core 2.19 imports its ssh agent code) is no part of it."""
    proc = subprocess.run(argv, cwd=cwd, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True)
    assert proc.returncode == 0, "%s failed (rc %d):\n%s%s" % (
        " ".join(argv), proc.returncode, proc.stdout, proc.stderr)
    return json.loads(proc.stdout)


@pytest.fixture(scope="module")
def package(tmp_path_factory):
    """Build and install once: {"tarball", "members", "collections", "installed", "env", "work"}."""
    work = tmp_path_factory.mktemp("package")
    dist = work / "dist"
    run([os.path.join(testpaths.BIN, "ansible-galaxy"), "collection", "build", "--output-path", str(dist), ROOT],
        cwd=ROOT)
    tarballs = sorted(os.listdir(dist))
    assert tarballs == ["%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])]
    tarball = dist / tarballs[0]
    with tarfile.open(tarball) as archive:
        members = {m.name.rstrip("/"): m for m in archive.getmembers()}

    # Outside the checkout: no ansible.cfg of ours, only the installed copy on the collections path.
    (work / "ansible.cfg").write_text("[defaults]\nretry_files_enabled = False\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}
    env.update(ANSIBLE_CONFIG=str(work / "ansible.cfg"), ANSIBLE_COLLECTIONS_PATH=str(work / "collections"),
               ANSIBLE_HOME=str(work / "ansible-home"), ANSIBLE_NOCOLOR="1")
    run([os.path.join(testpaths.BIN, "ansible-galaxy"), "collection", "install", str(tarball), "-p",
         str(work / "collections")], cwd=str(work), env=env)
    installed = work / "collections" / "ansible_collections" / GALAXY["namespace"] / GALAXY["name"]
    return {"tarball": tarball, "members": members, "env": env, "work": work, "installed": installed}


def playbook(package, *args, check=True):
    proc = run([testpaths.ANSIBLE_PLAYBOOK] + list(args), cwd=str(package["work"]), env=package["env"], check=check)
    return proc.returncode, " ".join(proc.stdout.split())


def golden_example():
    """What rendering inventories/example writes: the golden configuration and the golden users' guide."""
    files = testpaths.read_tree(os.path.join(GOLDEN, "example"))
    for name, golden in (("USERS.md", "example.md"), ("USERS.motd", "example.motd")):
        with open(os.path.join(GOLDEN, "users_guide", golden), "rb") as handle:
            files[name] = handle.read()
    files[MANIFEST] = manifest_text(files).encode()  # the render's list of the files it wrote
    return files


def test_tarball_holds_what_admins_need_and_no_development_material(package):
    files = sorted(name for name, m in package["members"].items() if m.isfile())
    stray = [name for name in files if not SHIPPED.match(name)]
    assert not stray, "development material in the tarball (add it to build_ignore in galaxy.yml): %s" % stray
    links = [name for name, m in package["members"].items() if m.issym() or m.islnk()]
    assert not links, "links in the tarball: %s" % links
    required = ["README.md", "LICENSE", "meta/runtime.yml", "meta/execution-environment.yml",
                "changelogs/changelog.yaml"]
    required += ["roles/%s/README.md" % role for role in ROLES]  # galaxy-importer: "No role readme found"
    required += ["roles/%s/meta/argument_specs.yml" % role for role in ROLES]
    required += ["playbooks/%s.yml" % name for name in PLAYBOOKS]
    required += ["playbooks/%s.yml" % name.replace("_", "-") for name in PLAYBOOKS]
    required += ["plugins/modules/%s.py" % name for name in MODULES]
    assert [name for name in required if name not in files] == []
    # every file the manifest lists is in the tarball, with its checksum (what ansible-galaxy verify checks)
    with tarfile.open(package["tarball"]) as archive:
        manifest = json.load(archive.extractfile("FILES.json"))
    listed = sorted(entry["name"] for entry in manifest["files"] if entry["ftype"] == "file")
    assert listed == sorted(name for name in files if name not in ("MANIFEST.json", "FILES.json"))


def test_the_shipped_docs_link_only_to_files_the_tarball_holds(package):
    """An admin reads README.md and docs/ in the installed copy: a relative link to a file left out of the build
    (scripts/, molecule/, tests/) is dead there; such links are written as the repository's URL."""
    files = {name for name, m in package["members"].items() if m.isfile()}
    dead = []
    with tarfile.open(package["tarball"]) as archive:
        for name in sorted(n for n in files if n.endswith(".md")):
            text = archive.extractfile(name).read().decode()
            for target in re.findall(r"\]\(([^)#\s]+)", text):
                if re.match(r"^[a-z]+:", target):
                    continue
                path = os.path.normpath(os.path.join(os.path.dirname(name), target))
                if path not in files and not any(f.startswith(path + "/") for f in files):
                    dead.append("%s -> %s" % (name, target))
    assert dead == []


def test_license_is_the_declared_gpl3(package):
    assert GALAXY["license"] == ["GPL-3.0-or-later"]
    text = (package["installed"] / "LICENSE").read_text()
    assert "GNU GENERAL PUBLIC LICENSE" in text and "Version 3, 29 June 2007" in text
    assert "<https://www.gnu.org/licenses/>" in text


def test_installed_collection_renders_the_example_by_fqcn_byte_for_byte(package, tmp_path):
    inventory = package["installed"] / "inventories" / "example" / "hosts.yml"
    rc, out = playbook(package, "hpc.slurm_gres.render_gres", "-i", str(inventory),
                       "-e", "hpc_gres_render_dir=%s" % (tmp_path / "out"))
    assert "cluster demo:" in out and "failed=0" in out
    assert testpaths.read_tree(tmp_path / "out") == golden_example()


def test_installed_collection_renders_a_new_inventory_and_refuses_a_bad_one(package, tmp_path):
    hosts = {"all": {"children": {"slurmctld": {"hosts": {"head": None}},
                                  "slurmd": {"hosts": {"n[1:3]": None}}}}}
    node = {"hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 8, "hpc_gres_node_threads_per_core": 1,
            "hpc_gres_gpus": [{"index": 0, "type": "l4", "cores": "0-7"}, {"index": 1, "type": "l4"}]}
    inventory = write_inventory(tmp_path / "inv", hosts, group_vars={"slurmd": node})
    rc, out = playbook(package, "hpc.slurm_gres.render_gres", "-i", inventory,
                       "-e", "hpc_gres_render_dir=%s" % (tmp_path / "out"))
    files = testpaths.read_tree(tmp_path / "out")
    assert sorted(files) == [MANIFEST, "USERS.md", "USERS.motd", "cgroup.conf", "n1/gres.conf", "n2/gres.conf",
                             "n3/gres.conf", "slurm.conf"]
    assert b"NodeName=n[1-3] Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 Gres=gpu:l4:2\n" in files["slurm.conf"]

    bad = dict(node, hpc_gres_gpus=[{"index": 0, "type": "l4", "cores": "0-15"}])
    inventory = write_inventory(tmp_path / "bad", hosts, group_vars={"slurmd": node}, host_vars={"n2": bad})
    rc, out = playbook(package, "hpc.slurm_gres.render_gres", "-i", inventory,
                       "-e", "hpc_gres_render_dir=%s" % (tmp_path / "bad-out"), check=False)
    assert rc != 0
    assert "host n2: hpc_gres_gpus[0].cores: expected Slurm logical core indices within 0-7" in out
    assert "defined in %s:" % os.path.join(tmp_path, "bad", "host_vars", "n2.yml") in out
    assert not (tmp_path / "bad-out").exists()


def test_hyphenated_playbook_names_still_run_from_the_installed_copy(package, tmp_path):
    inventory = package["installed"] / "inventories" / "example" / "hosts.yml"
    playbook(package, str(package["installed"] / "playbooks" / "render-gres.yml"), "-i", str(inventory),
             "-e", "hpc_gres_render_dir=%s" % (tmp_path / "out"))
    assert testpaths.read_tree(tmp_path / "out") == golden_example()


@pytest.mark.parametrize("name", PLAYBOOKS)
def test_every_playbook_resolves_by_fqcn_from_the_installed_copy(package, name):
    inventory = package["installed"] / "inventories" / "example" / "hosts.yml"
    rc, out = playbook(package, "hpc.slurm_gres.%s" % name, "-i", str(inventory), "--syntax-check")
    assert rc == 0 and "ERROR" not in out, out


def test_modules_and_roles_document_themselves_from_the_installed_copy(package):
    env, work = package["env"], str(package["work"])
    doc = os.path.join(testpaths.BIN, "ansible-doc")
    listed = run_json([doc, "--json", "--list", "hpc.slurm_gres"], cwd=work, env=env)
    assert sorted(listed) == ["hpc.slurm_gres.%s" % name for name in MODULES]
    modules = run_json([doc, "--json"] + sorted(listed), cwd=work, env=env)
    assert all(modules[name]["doc"].get("options") for name in listed), "a module without options"
    # options that come from the doc fragments
    assert {"nvidia_smi", "sysfs_root"} <= set(modules["hpc.slurm_gres.gpu_facts"]["doc"]["options"])
    assert {"scontrol", "slurm_conf"} <= set(modules["hpc.slurm_gres.slurm_node"]["doc"]["options"])
    # the public surface frozen for 0.1.0: at most 12 plugins, modules and filters together
    filters = run_json([doc, "--json", "-t", "filter", "--list", "hpc.slurm_gres"], cwd=work, env=env)
    callbacks = run_json([doc, "--json", "-t", "callback", "--list", "hpc.slurm_gres"], cwd=work, env=env)
    assert sorted(callbacks) == ["hpc.slurm_gres.gc_freeze"]
    callback = run_json([doc, "--json", "-t", "callback", "hpc.slurm_gres.gc_freeze"], cwd=work, env=env)
    assert callback["hpc.slurm_gres.gc_freeze"]["doc"]["type"] == "aggregate"
    assert len(listed) + len(filters) + len(callbacks) <= 12, sorted(listed) + sorted(filters) + sorted(callbacks)
    roles = run_json([doc, "--json", "-t", "role"] + ["hpc.slurm_gres.%s" % r for r in ROLES], cwd=work, env=env)
    assert sorted(roles) == ["hpc.slurm_gres.%s" % r for r in ROLES]
