"""The README's sample of the render summary is what rendering the example inventory into a new directory prints:
the summary lines of the render and the line on what was written (cluster_render.render_cluster, tree_lines),
through the same code the action runs."""
import os
import re

import pytest
from render_helpers import EXAMPLE, ROOT, load_inventory

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import apply_owned_tree
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.cluster_render import render_cluster, tree_lines

pytestmark = pytest.mark.ansible_core


def readme_sample():
    with open(os.path.join(ROOT, "README.md"), encoding="utf-8") as handle:
        text = handle.read()
    block = re.search(r"<!-- render-summary:begin -->\n```\n(.*?)```\n<!-- render-summary:end -->", text, re.S)
    assert block, "README.md lost its render-summary block"
    return block.group(1).splitlines()


def test_the_readme_shows_the_summary_the_example_renders(tmp_path):
    hostvars, groups, cluster = load_inventory(EXAMPLE)
    out = render_cluster(hostvars, groups, cluster)
    dest = tmp_path / "slurm-demo"
    written = apply_owned_tree(str(dest), out["files"], "0644", "0755")
    lines = out["summary"]["lines"] + [line.replace(str(dest), "/tmp/slurm-demo") for line in tree_lines(written)]
    assert readme_sample() == lines, "update README.md's render-summary block to:\n" + "\n".join(lines)
