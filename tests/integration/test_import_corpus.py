"""The import on real cluster configs, judged by the real slurmd (see import_corpus.py for how a case is judged).

Every case either round-trips exactly or is refused with refusals that name a file (and line where there is one);
a silent change fails. ``dev`` is the part the importer was developed against, ``heldout`` the part held back and measured once at the
end of the first round of work, ``heldout2`` a second part collected and measured once at the end of the second
(docs/import.md has the numbers); all stay here as regression tests.
"""
import os
import re

import pytest

import import_corpus
import slurmd_oracle

WHERE = re.compile(r"^(slurm\.conf|gres\.conf|cgroup\.conf|[\w.-]+\.conf|[\w.-]+/gres\.conf|imported inventory|proof)"
                   r"( line \d+)?(, node \S+)?: ")


@pytest.fixture(scope="module", autouse=True)
def oracle():
    slurmd_oracle.require_oracle()


def check(result):
    assert result["status"] != "silent-change", result["detail"]
    if result["drained"]:  # slurmctld drains a node on these files today: nothing exact to carry over
        assert result["status"] == "refused", result
    if result["status"] == "refused":
        for refusal in result["refusals"]:
            assert WHERE.match(str(refusal)), "a refusal must name where: %s" % refusal
            assert not str(refusal).startswith("proof"), "the importer let a difference reach the proof: %s" % refusal


@pytest.mark.parametrize("case", import_corpus.cases("dev"))
def test_dev_case(case):
    check(import_corpus.evaluate("dev", case))


@pytest.mark.parametrize("case", import_corpus.cases("heldout"))
def test_heldout_case(case):
    check(import_corpus.evaluate("heldout", case))


@pytest.mark.parametrize("case", import_corpus.cases("heldout2"))
def test_second_heldout_case(case):
    check(import_corpus.evaluate("heldout2", case))


@pytest.mark.parametrize("example", sorted(os.listdir(import_corpus.DOCS)))
def test_every_gres_conf_example_of_slurms_docs_is_expressible_or_refused_by_name(example):
    result = import_corpus.evaluate_dir(os.path.join(import_corpus.DOCS, example))
    check(result)
    if example == "man-example-5":  # NodeName=tux[8-11] AutoDetect=rsmi: AMD GPUs
        assert result["status"] == "refused" and "AutoDetect=rsmi" in result["detail"]
    else:
        assert result["status"] == "round-trip", result["detail"]
