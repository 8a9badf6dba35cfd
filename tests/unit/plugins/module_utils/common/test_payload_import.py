"""payload_import: a module's payload zip is imported with each source file compiled once, and nothing else changes.

Each interpreter (this one and pyenv's 3.8 to 3.13 where installed: ansible-core runs modules on 3.8 and later)
builds a zip laid out like an AnsiballZ payload and imports from it twice in a fresh process: once as zipimport
does it, once after payload_import. Both must give the same modules, files, specs and errors; the second must
compile each source file imported after the install once (builtins.compile is counted).
"""
import glob
import json
import os
import subprocess
import sys
import zipimport

import pytest

import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import payload_import

SOURCE = os.path.join(testpaths.ROOT, "plugins", "module_utils", "common", "payload_import.py")
BASE = "ansible_collections/hpc/slurm_gres/plugins/module_utils/"

CHILD = r'''
import builtins, collections, importlib, json, os, py_compile, sys, tempfile, zipfile

source, mode = sys.argv[1], sys.argv[2]
base = "ansible_collections/hpc/slurm_gres/plugins/module_utils/"
work = tempfile.mkdtemp()
pyc = os.path.join(work, "bytecode.pyc")
with open(os.path.join(work, "bytecode.py"), "w") as handle:
    handle.write("VALUE = 'from bytecode'\n")
py_compile.compile(os.path.join(work, "bytecode.py"), cfile=pyc, doraise=True)
archive = os.path.join(work, "payload.zip")
with zipfile.ZipFile(archive, "w") as payload:
    for package in ("ansible_collections", "ansible_collections/hpc", "ansible_collections/hpc/slurm_gres",
                    "ansible_collections/hpc/slurm_gres/plugins", base.rstrip("/"), base + "common", base + "mods"):
        payload.writestr(package + "/__init__.py", "")
    payload.write(source, base + "common/payload_import.py")
    payload.writestr(base + "common/early.py", "VALUE = 'early'\n")
    payload.writestr(base + "mods/helper.py", "VALUE = 'helper'\n")
    payload.writestr(base + "mods/late.py",
                     "from ansible_collections.hpc.slurm_gres.plugins.module_utils.mods import helper\n"
                     "from ansible_collections.hpc.slurm_gres.plugins.module_utils.mods import bytecode\n"
                     "VALUE = helper.VALUE + ' ' + bytecode.VALUE\n")
    payload.write(pyc, base + "mods/bytecode.pyc")
    payload.writestr(base + "mods/broken.py", "def broken(:\n")

counts = collections.Counter()
real_compile = builtins.compile
def counting_compile(text, filename, *args, **kwargs):
    counts[os.path.relpath(str(filename), archive)] += 1
    return real_compile(text, filename, *args, **kwargs)
builtins.compile = counting_compile

sys.path.insert(0, archive)
prefix = "ansible_collections.hpc.slurm_gres.plugins.module_utils."
importlib.import_module(prefix + "common.early")
installed = None
if mode == "install":
    installed = importlib.import_module(prefix + "common.payload_import").install()
late = importlib.import_module(prefix + "mods.late")
errors = {}
for name in ("mods.missing", "mods.broken"):
    try:
        importlib.import_module(prefix + name)
    except BaseException as exc:
        errors[name] = type(exc).__name__
modules = {}
for name, module in sorted(sys.modules.items()):
    if name.startswith("ansible_collections") and not name.endswith("payload_import"):
        spec = module.__spec__
        modules[name] = {"file": os.path.relpath(module.__file__, archive), "origin": os.path.relpath(spec.origin, archive),
                         "path": [os.path.relpath(p, archive) for p in getattr(module, "__path__", [])],
                         "value": getattr(module, "VALUE", None)}
builtins.compile = real_compile
print(json.dumps({"counts": counts, "modules": modules, "errors": errors, "value": late.VALUE,
                  "installed": installed == archive if installed else installed}))
'''


def interpreters():
    found = {sys.executable}
    for python in glob.glob(os.path.expanduser("~/.pyenv/versions/3.*/bin/python3")):
        version = tuple(int(part) for part in os.path.basename(os.path.dirname(os.path.dirname(python))).split(".")[:2])
        if version >= (3, 8):
            found.add(python)
    return sorted(found)


def child(python, mode):
    done = subprocess.run([python, "-c", CHILD, SOURCE, mode], capture_output=True, text=True, timeout=120,
                          check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_other_interpreters_are_there_in_ci():
    if os.environ.get("CI") == "true":
        assert len(interpreters()) >= 4, "CI=true: expected pyenv's Pythons 3.8 to 3.13, found %s" % interpreters()


@pytest.mark.parametrize("python", interpreters())
def test_each_source_file_after_the_install_is_compiled_once(python):
    plain = child(python, "plain")
    fast = child(python, "install")
    assert fast["installed"] is True and plain["installed"] is None
    # the same modules, files, specs, package paths, values and errors
    assert fast["modules"] == plain["modules"]
    assert fast["errors"] == plain["errors"] == {"mods.missing": "ModuleNotFoundError", "mods.broken": "SyntaxError"}
    assert fast["value"] == plain["value"] == "helper from bytecode"
    assert fast["modules"]["ansible_collections.hpc.slurm_gres.plugins.module_utils.mods.bytecode"]["file"] == \
        BASE + "mods/bytecode.pyc"
    # before the install, and without it, zipimport compiles as it does
    early = BASE + "common/early.py"
    assert fast["counts"][early] == plain["counts"][early] >= 1
    for name in ("mods/__init__.py", "mods/helper.py", "mods/late.py"):
        assert fast["counts"][BASE + name] == 1, (name, fast["counts"])
        assert plain["counts"][BASE + name] >= 1
    # on the CPython releases this works around (gh-141276), the plain import compiled each file twice
    if sys.version_info[:2] <= (3, 14) and python == sys.executable:
        assert plain["counts"][BASE + "mods/late.py"] == 2


def test_outside_a_zip_nothing_changes():
    hooks, cache = list(sys.path_hooks), dict(sys.path_importer_cache)
    assert payload_import.install() is None
    assert payload_import.install(payload_import.__spec__.loader) is None
    assert sys.path_hooks == hooks and sys.path_importer_cache == cache


def test_installing_twice_adds_one_hook(tmp_path):
    import zipfile
    archive = str(tmp_path / "payload.zip")
    with zipfile.ZipFile(archive, "w") as payload:
        payload.writestr("one/__init__.py", "")
    hooks = list(sys.path_hooks)
    try:
        loader = zipimport.zipimporter(archive)
        assert payload_import.install(loader) == archive
        assert payload_import.install(loader) == archive
        added = [hook for hook in sys.path_hooks if hook not in hooks]
        assert len(added) == 1
        # the hook takes this payload's paths and leaves every other path to the hooks after it
        assert isinstance(added[0](os.path.join(archive, "one")), payload_import.SourceZipImporter)
        other = str(tmp_path / "other.zip")
        with zipfile.ZipFile(other, "w") as payload:
            payload.writestr("two/__init__.py", "")
        with pytest.raises(zipimport.ZipImportError):
            added[0](other)
    finally:
        sys.path_hooks[:] = hooks


def test_a_table_of_contents_zipfile_cannot_read_is_left_to_zipimport(tmp_path, monkeypatch):
    import zipfile
    archive = str(tmp_path / "payload.zip")
    with zipfile.ZipFile(archive, "w") as payload:
        payload.writestr("one/__init__.py", "")
        payload.writestr("one/two.py", "VALUE = 2\n")
    stock = zipimport.zipimporter(os.path.join(archive, "one"))
    ours = payload_import.SourceZipImporter(os.path.join(archive, "one"), archive)
    assert ours.get_filename("one.two") == stock.get_filename("one.two") == os.path.join(archive, "one", "two.py")

    reads = []

    def unreadable(path):
        reads.append(path)
        raise zipfile.BadZipFile("File is not a zip file")
    monkeypatch.setattr(payload_import, "_NAMES", {})
    monkeypatch.setattr(payload_import.zipfile, "ZipFile", unreadable)
    assert ours.get_filename("one.two") == stock.get_filename("one.two")
    with pytest.raises(zipimport.ZipImportError):
        ours.get_filename("one.missing")
    # the failed read is not repeated on every import
    assert reads == [archive]
