"""The import on real cluster configs, judged by the real slurmd (see import_corpus.py for how a case is judged).

Every case either round-trips exactly or is refused with refusals that name a file (and line where there is one);
a silent change fails. ``dev`` is the part the importer was developed against, ``heldout`` the part held back and
measured once at the end of the first round of work, ``heldout2`` a second part collected and measured once at the
end of the second, ``heldout3`` a third collected and measured once before the fourth round changed anything,
``heldout4`` a fourth collected and measured once before anything changed after that round, ``heldout5``,
``heldout6``, ``heldout7`` (configs pasted in issue threads) and ``heldout8`` likewise (docs/dev/import-corpus.md has the
numbers); all stay here as regression tests.
"""
import os
import re
import tempfile

import pytest

import import_corpus
import slurm_loopback
import slurmd_oracle

WHERE = re.compile(r"^(slurm\.conf|gres\.conf|cgroup\.conf|[\w.-]+\.conf|[\w.-]+/gres\.conf)( line \d+)?(, node \S+)?: ")


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
            assert "the rendered files would differ" not in str(refusal), \
                "the importer let a difference reach the proof: %s" % refusal


@pytest.mark.parametrize("part, case", [(part, case) for part in import_corpus.parts()
                                        for case in import_corpus.cases(part)])
def test_corpus_case(part, case):
    check(import_corpus.evaluate(part, case))


def test_every_part_is_judged():
    """A part added to the corpus is judged without a new test: the parts the test runs are those on disk."""
    assert {"dev", "heldout", "heldout2", "heldout3", "heldout4", "heldout5", "heldout6", "heldout7", "heldout8"} <= set(
        import_corpus.parts())


def test_a_node_that_no_autodetect_line_applies_to_is_judged_on_its_count():
    """A gres.conf whose AutoDetect=nvml lines name other nodes: slurmd reads none of them for cn-a2h12cpu1gpu-1,
    registers no GPU for its slurm.conf gpu:1 (the real slurmd, no File), so slurmctld drains it today."""
    assert not import_corpus.autodetect_on("cn-a2h12cpu1gpu-1", "NodeName=cn-n1s4cpu1gpu-[1-7] AutoDetect=nvml\n")
    assert import_corpus.autodetect_on("cn-n1s4cpu1gpu-3", "NodeName=cn-n1s4cpu1gpu-[1-7] AutoDetect=nvml\n")
    assert import_corpus.autodetect_on("any", "AutoDetect=nvml\nNodeName=x AutoDetect=off\n")
    result = import_corpus.evaluate("heldout3", "deepsquare-io-slurm-docker")
    assert result["status"] == "refused" and any(d.startswith("cn-a2h12cpu1gpu-1: gpu:1 declared, 0 registered")
                                                 for d in result["drained"]), result


@pytest.mark.parametrize("example", sorted(os.listdir(import_corpus.DOCS)))
def test_every_gres_conf_example_of_slurms_docs_is_expressible_or_refused_by_name(example):
    result = import_corpus.evaluate_dir(os.path.join(import_corpus.DOCS, example))
    check(result)
    if example == "man-example-5":  # NodeName=tux[8-11] AutoDetect=rsmi: AMD GPUs
        assert result["status"] == "refused" and "AutoDetect=rsmi" in result["detail"]
    else:
        assert result["status"] == "round-trip", result["detail"]


def _slurmctld_gres_used(gres_line):
    """GresUsed= of the loopback node as slurmctld keeps it, for one gres.conf line of two untyped GPUs."""
    slurm_loopback.require("a loopback Slurm cannot run")
    with tempfile.TemporaryDirectory(prefix="slurm-loopback-") as directory:
        slurm = slurm_loopback.LoopbackSlurm(directory)
        try:
            slurm.write_slurm_conf("gpu:2")
            with open(os.path.join(directory, "gres.conf"), "w") as handle:
                handle.write(gres_line % {"node": slurm_loopback.NODE, "dir": directory})
            slurm.start_munge()
            slurm.start_slurmctld()
            slurm.start_slurmd()
            slurm.wait_state("State=IDLE ")
            shown = slurm.scontrol("show", "node", "-d", slurm_loopback.NODE).stdout
            return re.search(r"GresUsed=(\S+)", shown).group(1)
        finally:
            slurm.stop()


def test_cores_beyond_the_layout_leave_slurmctld_a_record_an_import_without_them_would_change():
    """Why the import refuses Cores= beyond slurm.conf's layout instead of leaving the binding out: slurmd drops the
    binding but sends the Cores= text, and slurmctld keeps a topology record for it (gres_node_config_validate)."""
    line = "NodeName=%(node)s Name=gpu File=%(dir)s/dev/nvidia[0-1]"
    with_text = _slurmctld_gres_used(line + " Cores=8-15\n")  # the node has 2 x 4 cores
    without = _slurmctld_gres_used(line + "\n")
    assert with_text != without, (with_text, without)
