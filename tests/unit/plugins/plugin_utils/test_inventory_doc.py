"""docs/inventory.md's variable tables are generated from the schema (model_schema.DOC_TABLES, scripts/inventory-doc.py)
and name exactly the variables and GPU keys the model reads."""
import os
import subprocess
import sys

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import (
    CLUSTER_VARS,
    DOC_TABLES,
    GPU_KEYS,
    HOST_VARS,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def names(kind):
    return [row[0].strip("`") for row in DOC_TABLES[kind][1:]]


def test_the_tables_name_exactly_what_the_model_reads():
    assert sorted(names("node")) == sorted(HOST_VARS)
    assert sorted(names("cluster")) == sorted(CLUSTER_VARS)
    assert sorted(names("gpu")) == sorted(GPU_KEYS)


def test_the_page_holds_the_tables_as_generated():
    proc = subprocess.run([sys.executable, os.path.join(ROOT, "scripts", "inventory-doc.py"), "--check"],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stderr
