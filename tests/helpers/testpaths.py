"""Paths every test uses, independent of where the test file sits under tests/."""
import os

TESTS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ROOT = os.path.dirname(TESTS)
FIXTURES = os.path.join(TESTS, "fixtures")
EMULATOR = os.path.join(TESTS, "emulator")
EXAMPLE = os.path.join(ROOT, "inventories", "example")
DOCS = os.path.join(ROOT, "docs")
