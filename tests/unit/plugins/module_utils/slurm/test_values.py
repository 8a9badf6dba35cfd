"""The one rule for values written into Slurm files: characters, names, reserved words, integer widths."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import values


@pytest.mark.parametrize("value, ok", [
    (0, True), (65533, True), ("12", True), (65534, False), (-1, False), ("\u00b2", False), ("\u0663", False),
    (" 1", False), ("1\n", False), ("0x10", False), (True, False), (1.0, False), ([1], False), (None, False),
])
def test_integers_are_ascii_decimal_within_the_width(value, ok):
    assert (values.check_int(value, 0, values.COUNT_MAX["uint16"]) is None) == ok


def test_widths_leave_out_slurms_no_val_and_infinite():
    assert values.COUNT_MAX == {"uint16": 65533, "uint32": 4294967293, "uint64": 2 ** 64 - 3}


def test_a_non_ascii_digit_says_why():
    expected, found, hint = values.check_int("\u00b2", 1, 10)
    assert (expected, found) == ("an integer 1-10", "'\u00b2' (string)")
    assert hint == "only the ASCII digits 0-9 are digits to Slurm"


@pytest.mark.parametrize("name, ok", [
    ("gpu01", True), ("gpu-a01.lab", True), ("n_1", True), ("gpu01\n", False), ("gpu 01", False), ("-gpu", False),
    ("gpu[1]", False), ("a,b", False), ("g\u00e4", False), ("x" * 65, False), ("", False), (7, False),
    ("default", False), ("DEFAULT", False), ("All", False),
])
def test_node_names(name, ok):
    assert (values.check_name(name, "Slurm node name", values.RESERVED_NODE_NAMES) is None) == ok


@pytest.mark.parametrize("name, ok", [
    ("n18446744073709551614", True), ("n18446744073709551615", False), ("n99999999999999999999", False),
    ("n000000000000000000000001", True), ("rack99999999999999999999-n1", True), ("default", False),
])
def test_a_node_names_final_number_fits_slurms_hostlist_number(name, ok):
    # hostlist.c reads the number with strtoul: larger ones are cut to ULONG_MAX (two names become one), and
    # ULONG_MAX itself crashed slurmd 22.05 (seen live)
    assert (values.check_node_name(name) is None) == ok


def test_partition_names_reserve_default_only():
    assert values.check_name("all", "partition name", values.RESERVED_PARTITION_NAMES) is None
    assert values.check_name("Default", "partition name", values.RESERVED_PARTITION_NAMES)[0].endswith(
        "other than Slurm's reserved word DEFAULT")


@pytest.mark.parametrize("gres_type, ok", [
    ("a100", True), ("3g.40gb", True), ("1g.10gb+me", True), ("h100_pcie", True), ("no_consume", False),
    ("No_Consume", False), ("5090", True), ("2k", True), ("a100\n", False), ("a:b", False), ("a,b", False),
    ("a(b)", False), ("", False), ("-a", False),
])
def test_gres_types(gres_type, ok):
    assert (values.check_gres_type(gres_type) is None) == ok


@pytest.mark.parametrize("gres_type, reads_as_count", [
    ("5090", True), ("2k", True), ("10G", True), ("rtx5090", False), ("a100", False), ("5090ti", False), (None, False),
])
def test_a_type_of_digits_is_valid_but_gets_the_hint_that_jobs_need_a_count(gres_type, reads_as_count):
    hint = values.gres_type_reads_as_count(gres_type)
    assert bool(hint) == reads_as_count
    if hint:
        assert "--gres=gpu:%s:1" % gres_type in hint


@pytest.mark.parametrize("address, ok", [
    ("10.0.0.1", True), ("fd00::1", True), ("ctl.example.org", True), ("ctl", True), ("10.0.0.1\nFoo=bar", False),
    ("ctl(x", False), ("ctl#1", False), ("-ctl", False), ("", False), (["10.0.0.1"], False),
])
def test_controller_addresses(address, ok):
    assert (values.check_host_address(address) is None) == ok


@pytest.mark.parametrize("value, quoted_ok, ok, hint", [
    ("sched/backfill", False, True, None),
    ("bf_window=4320,defer", False, True, None),
    ("a b", False, False, "a space ends the value and the rest is read as the next Key=Value"),
    ("1000 MinJobAge=5", False, False, "a space ends the value"),
    ("--interactive --pty $SHELL", True, True, None),
    ("a\nFoo=bar", True, False, "a newline would start a new line of the file"),
    ("a#b", True, False, "Slurm drops everything from '#' to the end of the line"),
    ("abc\\", False, False, "one at the end of a line joins the next line"),
    ('a"b', True, False, None),
    (" padded", True, False, None),
    ("caf\u00e9", False, False, None),
    ("", False, False, None),
])
def test_option_values(value, quoted_ok, ok, hint):
    problem = values.check_option_value(value, quoted_ok)
    assert (problem is None) == ok
    if hint:
        assert hint in problem[2]


def test_values_with_spaces_are_written_quoted_and_the_rest_bare():
    assert values.format_value("a,b") == "a,b"
    assert values.format_value("--pty $SHELL") == '"--pty $SHELL"'
    with pytest.raises(ValueError):
        values.format_value("a\nb")


@pytest.mark.parametrize("value, kind, text", [
    (5, "uint16", "5"), ("INFINITE", "uint32", "INFINITE"), ("unlimited", "uint64", "UNLIMITED"),
    (True, "boolean", "yes"), ("No", "boolean", "No"), (98.5, "float", "98.5"), ("100", "float", "100"),
    ("-3", "long", "-3"),
])
def test_typed_values_are_written_as_slurm_reads_them(value, kind, text):
    assert values.check_typed_value(value, kind) == (text, None)


@pytest.mark.parametrize("value, kind", [
    ("1000 MinJobAge=5", "uint32"), (65536, "uint16"), (2 ** 32, "uint32"), ("maybe", "boolean"), (2, "boolean"),
    ("1e3", "float"), (float("nan"), "float"), (-1.0, "double"), ("0x10", "uint16"), ([1], "uint64"),
])
def test_typed_values_slurm_would_refuse_are_refused(value, kind):
    text, problem = values.check_typed_value(value, kind)
    assert text is None and problem


def test_a_value_is_described_by_its_plain_type_not_ansibles_subclass():
    # ansible-core 2.19 hands an unquoted 25.10 over as an _AnsibleTaggedFloat: the admin reads "float"
    class _AnsibleTaggedFloat(float):
        pass

    class _AnsibleTaggedStr(str):
        pass

    assert values.describe(_AnsibleTaggedFloat(25.1)) == "25.1 (float)"
    assert values.describe(_AnsibleTaggedStr("a100")) == "'a100' (string)"
    assert values.describe(True) == "True (bool)" and values.describe(3) == "3 (int)"
    assert values.describe(("a",)) == "('a',) (tuple)"


def test_a_number_with_a_leading_zero_is_refused_with_what_slurm_reads_it_as():
    # parse_value.c reads integers with strtoul/strtol base 0: HealthCheckInterval=03600 ran as 1920 s (a real
    # site's slurm.conf, sites round 6; scontrol show config on slurmctld 22.05.8: "HealthCheckInterval = 1920 sec")
    text, problem = values.check_typed_value("03600", "uint16")
    assert text is None and problem[0] == "an integer without a leading 0 (uint16 in Slurm)"
    assert "03600 is 1920 there" in problem[2]
    assert "not a number there" in values.check_typed_value("0089", "uint32")[1][2]
    assert "-010 is -8 there" in values.check_typed_value("-010", "long")[1][2]
    assert values.check_typed_value("0", "uint16") == ("0", None)
    assert values.check_typed_value(3600, "uint16") == ("3600", None)
