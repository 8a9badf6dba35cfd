import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.hostlists import slurm_hostlist

CASES = [
    (["node01-ib", "node02-ib"], "node[01-02]-ib", "node01-ib,node02-ib"),
    (["gpu01", "gpu02", "gpu03"], "gpu[01-03]", "gpu[01-03]"),
    (["r1n01", "r1n02", "r2n01", "r2n02"], None, None),
    (["a1-x", "a2-x", "b7", "c01.ib", "c02.ib", "d"], None, None),
]


@pytest.mark.parametrize("names,with_suffix,without", CASES)
def test_without_suffix_no_token_continues_after_its_bracket_and_every_name_is_kept(names, with_suffix, without):
    full = slurm_hostlist(names, suffix=True)
    safe = slurm_hostlist(names)
    if with_suffix is not None:
        assert (full, safe) == (with_suffix, without)
    for expr in (full, safe):
        assert sorted(hostlist.expand_hostlist(expr)) == sorted(names)
    for token in re.split(r",(?![^\[]*\])", safe):
        assert "]" not in token or token.endswith("]"), safe


def test_a_nodename_hostlist_expands_in_natural_order_as_slurm_defines_the_nodes():
    # a real site's c03n01..c06n04 (one node missing): python-hostlist writes c05n[01-02,04],c[03,06]n[01-04],
    # which Slurm would define c05 first
    names = (["c03n%02d" % i for i in range(1, 5)] + ["c05n01", "c05n02", "c05n04"]
             + ["c06n%02d" % i for i in range(1, 5)])
    for suffix in (True, False):
        expr = slurm_hostlist(names, suffix)
        assert hostlist.expand_hostlist(expr) == names, expr
    assert slurm_hostlist(names, True) == "c03n[01-04],c05n[01-02,04],c06n[01-04]"
    assert slurm_hostlist(["gpu01", "gpu02", "gpu03"], True) == "gpu[01-03]"
