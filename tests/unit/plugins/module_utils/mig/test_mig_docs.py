"""docs/mig.md shows the model table that plugins/module_utils/mig/profiles.py actually holds."""

import os
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import profiles as mig
import testpaths

DOC = os.path.join(testpaths.ROOT, "docs", "mig.md")


def model_row(model):
    spec = mig.MIG_MODELS[model]
    return "| %s | %s | %d / %d | %s |" % (
        model,
        ", ".join("`%s`" % n for n in spec["nvidia_smi_names"]),
        spec["compute_slices"], spec["memory_slices"],
        ", ".join("`%s` %d" % (p["name"], p["max_instances"]) for p in spec["profiles"]),
    )


def test_every_model_has_its_exact_row_in_docs():
    with open(DOC, encoding="utf-8") as fh:
        text = fh.read()
    rows = [line for line in text.splitlines()
            if line.startswith("| ") and re.match(r"^\s*\d+ / \d+\s*$", line.split("|")[3])]
    missing = [model_row(m) for m in mig.known_models() if model_row(m) not in text]
    assert not missing, "docs/mig.md is out of date; expected rows:\n" + "\n".join(missing)
    documented = {line.split("|")[1].strip() for line in rows}
    assert documented == set(mig.known_models()), "models in docs but not in the table: %s" % (
        documented - set(mig.known_models()))
