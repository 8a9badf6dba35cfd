"""Paths every test uses, independent of where the test file sits under tests/."""
import os
import sys

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(TESTS, "fixtures")
EMULATOR = os.path.join(TESTS, "emulator")
EXAMPLE = os.path.join(ROOT, "inventories", "example")
DOCS = os.path.join(ROOT, "docs")

# The ansible-core under test: the one installed beside the Python that runs pytest (.venv, or a venv of
# scripts/compat.sh), else the checkout's .venv.
BIN = os.path.dirname(sys.executable)
if not os.path.exists(os.path.join(BIN, "ansible-playbook")):
    BIN = os.path.join(ROOT, ".venv", "bin")
ANSIBLE = os.path.join(BIN, "ansible")
ANSIBLE_PLAYBOOK = os.path.join(BIN, "ansible-playbook")
PYTHON = os.path.join(BIN, "python")


def read_tree(path):
    """Every file below path as {relative path: bytes}: what a render or an install wrote, to compare whole."""
    out = {}
    for folder, _subdirs, names in os.walk(str(path)):
        for name in names:
            full = os.path.join(folder, name)
            with open(full, "rb") as handle:
                out[os.path.relpath(full, str(path))] = handle.read()
    return out
