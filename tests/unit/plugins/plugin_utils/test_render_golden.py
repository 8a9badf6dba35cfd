"""The example inventory, loaded by Ansible itself, renders byte for byte to the golden files.

Regenerate after an intended change: UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/plugins/plugin_utils/test_render_golden.py
"""
import os

import pytest
from render_helpers import EXAMPLE, load_inventory

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import model_from_inventory
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

pytestmark = pytest.mark.ansible_core

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "example")


def golden_files():
    found = {}
    for folder, _subdirs, names in os.walk(GOLDEN):
        for name in names:
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as handle:
                found[os.path.relpath(path, GOLDEN)] = handle.read()
    return found


@pytest.fixture(scope="module")
def rendered():
    hostvars, groups, cluster = load_inventory(EXAMPLE)
    return render_all(model_from_inventory(hostvars, groups, cluster))


def test_example_inventory_matches_golden_files(rendered):
    if os.environ.get("UPDATE_GOLDEN"):
        for rel, text in rendered.items():
            path = os.path.join(GOLDEN, rel)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w", encoding="utf-8") as handle:
                handle.write(text)
    golden = golden_files()
    assert sorted(rendered) == sorted(golden)
    for rel in sorted(golden):
        assert rendered[rel] == golden[rel], rel


def test_rendering_twice_gives_the_same_bytes(rendered):
    hostvars, groups, cluster = load_inventory(EXAMPLE)
    again = render_all(model_from_inventory(hostvars, groups, cluster))
    assert {k: v.encode() for k, v in again.items()} == {k: v.encode() for k, v in rendered.items()}


def test_example_covers_the_shapes_the_issue_asks_for(rendered):
    slurm = rendered["slurm.conf"]
    lines = [line for line in slurm.splitlines() if line.startswith("NodeName=")]
    assert "NodeName=gpu-a[01-04] " in slurm and "Gres=gpu:a100:8" in lines[1]
    assert any("Gres=gpu:h100_pcie:4" in line for line in lines)
    assert any("gpu-mix01" in line and "gpu:l40s:2,gpu:a100:2" in line for line in lines)
    assert any(line.startswith("NodeName=cpu-[001-016]") and "Gres=" not in line for line in lines)
