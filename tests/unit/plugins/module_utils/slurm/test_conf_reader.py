"""conf.py reads a file the way Slurm's parse_config.c does: comments, escapes, continuations, quotes, leftovers."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    logical_lines,
    parse_gres_conf,
    read_records,
    split_pairs,
)


@pytest.mark.parametrize("text, lines", [
    ("A=1\nB=2\n", [(1, "A=1"), (2, "B=2")]),
    ("A=1 # comment\n", [(1, "A=1 ")]),
    ("A=a\\#b\n", [(1, "A=a#b")]),                        # an escaped '#' is a character
    ("A=a\\\\#b\n", [(1, "A=a\\")]),                      # an escaped backslash, then a comment
    ("NodeName=n1 \\\n  Gres=gpu:1\n", [(1, "NodeName=n1   Gres=gpu:1")]),
    ("NodeName=n1\\\nGres=gpu:1\n", [(1, "NodeName=n1Gres=gpu:1")]),  # joined with nothing in between
    ("A=1\\\\\nB=2\n", [(1, "A=1\\"), (2, "B=2")]),        # an even number of backslashes continues nothing
    ("# only a comment \\\nA=1\n", [(2, "A=1")]),          # a comment is cut before continuation is looked at
    ("A=1\x0bB=2\n", [(1, "A=1\x0bB=2")]),                 # \v is whitespace, not a line break (fgets splits at \n)
    ("A=1\u2028B=2\n", [(1, "A=1\u2028B=2")]),
    ("\n   \n\t\n", []),
])
def test_logical_lines_follow_slurms_reader(text, lines):
    assert [(n, line.rstrip("\n")) for n, line in logical_lines(text)] == lines


@pytest.mark.parametrize("line, pairs, leftover", [
    ("A=1 B=2", [("A", "1"), ("B", "2")], ""),
    ('Features="a b" X=1', [("Features", "a b"), ("X", "1")], ""),
    ("MaxJobCount=1000 MinJobAge=5", [("MaxJobCount", "1000"), ("MinJobAge", "5")], ""),
    ("A= B=2", [("A", "B=2")], ""),                          # an empty value takes the next word
    ("A=1 junk", [("A", "1")], " junk"),
    ("Key+=5", [("Key+", "5")], ""),
    ('A="unterminated B=2', [("A", '"unterminated'), ("B", "2")], ""),
])
def test_key_value_pairs_follow_slurms_regex(line, pairs, leftover):
    assert split_pairs(line) == (pairs, leftover)


def test_include_lines_are_records_of_their_own():
    assert read_records("include /etc/slurm/x.conf\nIncludeX=1\n") == [
        (1, [("Include", "/etc/slurm/x.conf")], ""), (2, [("IncludeX", "1")], "")]


def test_gres_conf_with_words_slurm_cannot_read_is_a_syntax_error():
    with pytest.raises(ConfSyntaxError):
        parse_gres_conf("NodeName=n1 Name=gpu File=/dev/nvidia0 stray\n", "n1")
