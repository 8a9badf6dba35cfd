"""Load recorded outputs from tests/fixtures without their ``# source:`` header (test helper)."""
import os
import testpaths

FIXTURES = testpaths.FIXTURES
EMULATOR = testpaths.EMULATOR


def path(*parts):
    return os.path.join(FIXTURES, *parts)


def load(*parts):
    """The recorded output, after the header block that ends with ``# ---``."""
    with open(path(*parts), encoding="utf-8") as handle:
        text = handle.read()
    head, sep, body = text.partition("\n# ---\n")
    if not sep or not head.startswith("# source:"):
        raise AssertionError("%s: no '# source:' header ending in '# ---'" % path(*parts))
    return body


def names(kind):
    """Fixture file names of one kind (``nvidia-smi/topo``...), sorted."""
    return sorted(os.listdir(path(*kind.split("/"))))


# The emulator's helpers (fake_sysfs, machines) are imported by the tests as plain modules.
if EMULATOR not in __import__("sys").path:
    __import__("sys").path.insert(0, EMULATOR)
