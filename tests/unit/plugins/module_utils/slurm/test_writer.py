"""writer.py: what the renderer writes is read back by Slurm's rules and must say exactly what was meant."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.writer import ConfText, read_back_problems


def written(*lines):
    conf = ConfText("slurm.conf")
    conf.comment("header")
    for pairs in lines:
        conf.line(pairs)
    return conf


def test_a_clean_file_reads_back_as_meant():
    conf = written([("ClusterName", "c", ("ctl", "hpc_gres_cluster_name"))],
                   [("InteractiveStepOptions", "--pty $SHELL", ("ctl", "hpc_gres_slurm_conf_options.InteractiveStepOptions"))])
    assert conf.text() == '# header\nClusterName=c\nInteractiveStepOptions="--pty $SHELL"\n'
    assert read_back_problems("slurm.conf", conf.text(), conf.meant, "ctl") == []


def test_a_comment_cannot_start_a_line():
    conf = ConfText("gres.conf")
    conf.comment("node from host evil\nNodeName=x Name=gpu File=/dev/nvidia0")
    assert conf.text().splitlines() == ["# node from host evil", "# NodeName=x Name=gpu File=/dev/nvidia0"]
    conf = ConfText("gres.conf")
    conf.comment("host a\x0bb\r")
    assert conf.text() == "# host a?b?\n"


@pytest.mark.parametrize("text, found", [
    ("ClusterName=c\nMaxJobCount=1000 MinJobAge=5\n", "Slurm reads MaxJobCount='1000' MinJobAge='5'"),
    ("ClusterName=c\nMaxJobCount=10#00\n", "Slurm reads MaxJobCount='10'"),
    ("ClusterName=c\nMaxJobCount=1000\nFoo=bar\n", "an extra line Foo='bar'"),
    ("ClusterName=c\nMaxJobCount=1000\\\nFoo=bar\n", "Slurm reads MaxJobCount='1000Foo=bar'"),
    ("ClusterName=c\n", "the file ends before it"),
    ("ClusterName=c\nMaxJobCount=1000 stray\n", "and unreadable 'stray'"),
])
def test_a_text_that_reads_differently_is_a_problem_naming_the_origin(text, found):
    meant = written([("ClusterName", "c")], [("MaxJobCount", "1000", ("ctl", "hpc_gres_slurm_conf_options.MaxJobCount"))]).meant
    problems = read_back_problems("slurm.conf", text, meant, "ctl")
    assert len(problems) == 1
    assert found in problems[0].found
    if "extra line" not in found:
        assert (problems[0].host, problems[0].field) == ("ctl", "hpc_gres_slurm_conf_options.MaxJobCount")


def test_a_value_that_cannot_be_written_is_never_written():
    with pytest.raises(ValueError):
        ConfText("slurm.conf").line([("ClusterName", "c\nFoo=bar")])
