"""Integer ranges: ASCII only, bounded before anything is expanded."""
import time

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import (
    MAX_VALUES,
    format_int_ranges,
    parse_int_ranges,
)


def test_ranges_round_trip():
    assert parse_int_ranges("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert format_int_ranges([8, 0, 1, 2, 3, 3]) == "0-3,8"


@pytest.mark.parametrize("text", ["\u00b2", "\u0663-\u0665", "0-3\n", "3-1", "", "1,,2", "-1", "0x10", "1.5", None,
                                  True, [1, 2]])
def test_junk_is_refused(text):
    with pytest.raises(ValueError):
        parse_int_ranges(text)


def test_a_huge_range_is_refused_before_it_is_expanded():
    start = time.process_time()
    with pytest.raises(ValueError, match="above 7"):
        parse_int_ranges("0-100000000", maximum=7)
    with pytest.raises(ValueError, match="more than %d values" % MAX_VALUES):
        parse_int_ranges("0-100000000")
    with pytest.raises(ValueError, match="more than"):
        parse_int_ranges(",".join(["0-60000"] * 3))
    assert time.process_time() - start < 0.5  # a guard against expansion, not a benchmark: bench/ measures


def test_negative_and_out_of_bound_integers_are_refused():
    with pytest.raises(ValueError):
        parse_int_ranges(-1)
    with pytest.raises(ValueError):
        parse_int_ranges(9, maximum=7)
    assert parse_int_ranges(7, maximum=7) == [7]
