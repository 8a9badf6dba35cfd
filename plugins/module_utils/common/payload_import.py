"""Compile each source file of a module's payload once, not twice.

An Ansible module runs from a zip of Python source (AnsiballZ) that Python imports with zipimport, which compiles
a module found as source twice: once when the import system asks the importer for the file's name
(``zipimporter.get_filename`` compiles it to find out which file it is) and again when it loads the code
(CPython issue gh-141276, open; CPython 3.8 to 3.14). A zip holds no .pyc, so every import from it pays that, and a
module that imports this collection's parsers (about 670 KB of source for gres_verify) pays it on every run, on every node.

``install()``, imported by each module before the rest of this collection, gives the importer of the module's own
payload a ``get_filename`` that names a source file from the zip's table of contents without compiling it. It
changes nothing else: a module found as bytecode, or anything outside the payload, is left to zipimport, and outside
a zip (a controller-side import, the unit tests, an unpacked payload) install() does nothing.
"""

import os
import sys
import zipfile
import zipimport

_NAMES = {}


def _names(archive):
    """The payload's file names, read once; none where zipfile cannot read them (zipimport then names each file)."""
    if archive not in _NAMES:
        try:
            with zipfile.ZipFile(archive) as payload:
                _NAMES[archive] = frozenset(payload.namelist())
        except (OSError, zipfile.BadZipFile):
            _NAMES[archive] = frozenset()
    return _NAMES[archive]


class SourceZipImporter(zipimport.zipimporter):
    """zipimport's importer for one payload zip, whose get_filename does not compile the file it names."""

    def __init__(self, path, archive=None):
        super(SourceZipImporter, self).__init__(path)
        if archive is not None and self.archive != archive:
            raise zipimport.ZipImportError("not the module's payload: %s" % path)

    def get_filename(self, fullname):
        # zipimport's own search order; a name found as bytecode first, or not found, is zipimport's to resolve
        stem = (self.prefix + fullname.rpartition(".")[2]).replace(os.sep, "/")
        names = _names(self.archive)
        for suffix, bytecode in (("/__init__.pyc", True), ("/__init__.py", False), (".pyc", True), (".py", False)):
            if stem + suffix in names:
                if bytecode:
                    break
                return os.path.join(self.archive, (stem + suffix).replace("/", os.sep))
        return super(SourceZipImporter, self).get_filename(fullname)


def install(loader=None):
    """Make the payload that ``loader`` (this file's importer by default) reads from compile each file once.

    Returns the payload's path, or None where there is no zip payload (then nothing was changed)."""
    loader = __loader__ if loader is None else loader
    if not isinstance(loader, zipimport.zipimporter) or isinstance(loader, SourceZipImporter):
        return None
    archive = loader.archive

    def hook(path):
        return SourceZipImporter(path, archive)

    if not any(getattr(h, "payload_archive", None) == archive for h in sys.path_hooks):
        hook.payload_archive = archive
        sys.path_hooks.insert(0, hook)
    for path, importer in list(sys.path_importer_cache.items()):
        if isinstance(importer, zipimport.zipimporter) and not isinstance(importer, SourceZipImporter) \
                and importer.archive == archive:
            sys.path_importer_cache[path] = SourceZipImporter(path, archive)
    return archive


install()
