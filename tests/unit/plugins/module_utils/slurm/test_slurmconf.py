"""The one slurm.conf / gres.conf parser and the count proof built on it."""
import os

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    check_consistency,
    consistency_problems,
    gres_counts_from_records,
    gres_record_problems,
    parse_count,
    parse_gres_conf,
    parse_gres_spec,
    parse_slurm_conf,
)

FIXTURES = os.path.join(testpaths.TESTS, "fixtures", "slurm")


def fixture(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        return handle.read()


# --- slurm.conf ---------------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    ("gpu:a100:8", {"gpu:a100": 8}),
    ("gpu:a100:4,gpu:l40s:2,shard:32", {"gpu:a100": 4, "gpu:l40s": 2, "shard": 32}),
    ("gpu:2", {"gpu": 2}),
    ("gpu", {"gpu": 1}),
    ("gpu:A100:1,gpu:a100:1", {"gpu:a100": 2}),
    ("bandwidth:lustre:no_consume:4G", {"bandwidth:lustre": 4 * 1024 ** 3}),
    ("gpu:a100_1g.10gb+me:7", {"gpu:a100_1g.10gb+me": 7}),
    ("(null)", {}),
    ("", {}),
    # empty elements are skipped, as gres.c's strtok_r skips them (a real site's Gres=gpu:nv1080:1,...,gpu:nv1080:1,
    # ocf/puppet#352: slurmctld 22.05.8 shows Gres=gpu:nv1080:4)
    ("gpu:nv1080:1,gpu:nv1080:1,", {"gpu:nv1080": 2}),
    (",gpu:1,,shard:4", {"gpu": 1, "shard": 4}),
])
def test_parse_gres_spec(spec, expected):
    assert parse_gres_spec(spec) == expected


@pytest.mark.parametrize("spec", ["gpu:a:b:3", ":1"])
def test_parse_gres_spec_refuses_junk(spec):
    with pytest.raises(ValueError):
        parse_gres_spec(spec)


def test_parse_count_suffixes():
    assert parse_count("10") == 10
    assert parse_count("2k") == 2048
    assert parse_count("1M") == 1024 ** 2
    with pytest.raises(ValueError):
        parse_count("ten")


def test_slurm_conf_nodes_are_expanded_with_defaults_comments_and_continuations():
    text = (
        "ClusterName=demo # trailing comment\n"
        "SlurmctldHost=ctl01\n"
        "SlurmctldHost=ctl02(10.0.0.2)\n"
        "NodeName=DEFAULT RealMemory=1000\n"
        "nodename=gpu-a[01-03] Sockets=2 \\\n"
        "   Gres=gpu:a100:8\n"
        "NodeName=cpu01 Features=\"a,b\"\n"
        "PartitionName=main Nodes=ALL Default=YES\n"
        "Include /etc/slurm/extra.conf\n"
    )
    conf = parse_slurm_conf(text)
    assert conf["options"]["clustername"] == "demo"
    assert conf["controllers"] == ["ctl01", "ctl02(10.0.0.2)"]
    assert sorted(conf["nodes"]) == ["cpu01", "gpu-a01", "gpu-a02", "gpu-a03"]
    assert conf["nodes"]["gpu-a02"]["gres"] == {"gpu:a100": 8}
    assert conf["nodes"]["gpu-a02"]["sockets"] == "2"
    assert conf["nodes"]["gpu-a02"]["realmemory"] == "1000"
    assert conf["nodes"]["gpu-a02"]["line"] == 5
    assert conf["nodes"]["cpu01"]["features"] == "a,b"
    assert conf["nodes"]["cpu01"]["gres"] == {}
    assert conf["partitions"]["main"]["nodes"] == "ALL"
    assert conf["includes"] == ["/etc/slurm/extra.conf"]
    assert conf["errors"] == []


def test_slurm_conf_reports_a_node_defined_twice():
    conf = parse_slurm_conf("NodeName=n[1-2] Gres=gpu:1\nNodeName=n2 Gres=gpu:2\n")
    assert conf["nodes"]["n2"]["gres"] == {"gpu": 1}
    assert conf["errors"] == ["slurm.conf line 2: node n2 already defined on line 1"]


def test_slurm_conf_escaped_hash_is_not_a_comment():
    conf = parse_slurm_conf("MailProg=/bin/mail\\#x # comment\n")
    assert conf["options"]["mailprog"] == "/bin/mail#x"


def test_real_slurm_conf_fixture_parses():
    conf = parse_slurm_conf(fixture("gh200-mig-slurm-conf-nodename-gres.txt"))
    assert conf["options"]["grestypes"] == "gpu"
    assert conf["nodes"]["localhost"]["gres"] == {"gpu:1g.23gb": 3}
    assert conf["partitions"]["gpu"]["nodes"] == "ALL"


# --- gres.conf ----------------------------------------------------------------------------------------------

def test_gres_conf_records_for_one_node():
    text = (
        "# comment\n"
        "AutoDetect=off\n"
        "NodeName=gpu-a[01-04] Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-63\n"
        "NodeName=gpu-b01 Name=gpu Type=h100 File=/dev/nvidia0\n"
        "Name=gpu Type=a100 Files=/dev/nvidia[4,6-7] CPUs=64-127\n"
        "nodename=gpu-a02 name=shard count=32 file=/dev/nvidia[0-3]\n"
        "NodeName=gpu-a02 Name=gpu Type=a100_3g.40gb MultipleFiles=/dev/nvidia5,/dev/nvidia-caps/nvidia-cap[21-22]\n"
    )
    records = parse_gres_conf(text, "gpu-a02")
    assert [r["line"] for r in records] == [2, 3, 5, 6, 7]
    assert records[0]["name"] is None and records[0]["autodetect"] == "off"
    assert records[1]["files"] == ["/dev/nvidia0", "/dev/nvidia1", "/dev/nvidia2", "/dev/nvidia3"]
    assert records[1]["cores"] == "0-63"
    assert records[2]["files"] == ["/dev/nvidia4", "/dev/nvidia6", "/dev/nvidia7"]
    assert records[2]["cores"] == "64-127"
    assert records[3]["count"] == 32
    assert records[4]["multiple_files"] == ["/dev/nvidia5", "/dev/nvidia-caps/nvidia-cap21",
                                            "/dev/nvidia-caps/nvidia-cap22"]
    assert gres_counts_from_records(records) == {"gpu:a100": 7, "shard": 32, "gpu:a100_3g.40gb": 1}
    assert [r["line"] for r in parse_gres_conf(text, "gpu-b01")] == [2, 4, 5]


@pytest.mark.parametrize("line, message", [
    ("NodeName=n1 Name=gpu Typ=a100 File=/dev/nvidia0", "unrecognized key 'Typ'"),
    ("Name=gpu NodeName=n1 File=/dev/nvidia0", "NodeName must be the first key"),
    ("Name=gpu Count=lots", "invalid Count 'lots'"),
    ("Name=gpu File=/dev/nvidia[0-", "bad File"),
    ("Name=gpu garbage", "expected Key=Value"),
])
def test_gres_conf_syntax_errors_name_the_line(line, message):
    with pytest.raises(ConfSyntaxError) as err:
        parse_gres_conf("# header\n" + line + "\n", "n1")
    assert "gres.conf line 2" in str(err.value)
    assert message in str(err.value)


def test_counts_untyped_count_only_and_shard_defaults():
    records = parse_gres_conf("Name=gpu Count=2\nName=mps Count=200\nName=shard File=/dev/nvidia[0-1]\n", "n")
    assert gres_counts_from_records(records) == {"gpu": 2, "mps": 200, "shard": 2}


def test_real_gres_conf_fixture_with_cpus_alias():
    records = parse_gres_conf(fixture("deepops1195-gres-conf-cpus-ht.txt"), "node01")
    assert len(records) == 8
    assert records[0]["cores"] == "48-63,176-191"
    assert gres_counts_from_records(records) == {"gpu": 8}
    assert gres_record_problems(records, "node01") == []


def test_real_duplicate_name_records_are_reported():
    records = parse_gres_conf(fixture("magiccastle27-gres-conf-duplicate-name.txt"), "node2")
    problems = [str(p) for p in gres_record_problems(records, "node2")]
    assert len(problems) == 1
    assert "host node2: gres.conf line" in problems[0]
    assert "duplicate records for gpu" in problems[0]


@pytest.mark.parametrize("text, fragment", [
    ("Name=gpu Type=a100 File=/dev/nvidia0 MultipleFiles=/dev/nvidia1,/dev/nvidia2", "mutually exclusive"),
    ("Name=gpu Type=a100 MultipleFiles=/dev/nvidia1", "at least 2 files"),
    ("Name=gpu Type=a100 File=/dev/nvidia[0-1] Count=4", "Count=4"),
    ("Name=gpu Type=a100 File=/dev/nvidia[0-1]\nName=gpu Type=l40s File=/dev/nvidia1", "/dev/nvidia1 again"),
    ("Name=gpu Type=a100 File=/dev/nvidia0\nName=gpu Type=a100", "some records have \"File\""),
    ("Name=gpu Type=a100 File=/dev/nvidia0\nName=gpu File=/dev/nvidia1", "some records have \"Type=\""),
    ("Name=gpu Type=a100 File=/dev/nvidia0\nName=shard Count=4 File=/dev/nvidia1", "discards this shard line"),
])
def test_record_problems_slurmd_would_report(text, fragment):
    problems = [str(p) for p in gres_record_problems(parse_gres_conf(text, "n1"), "n1")]
    assert len(problems) == 1, problems
    assert problems[0].startswith("host n1: gres.conf line ")
    assert fragment in problems[0]


# --- the count proof ----------------------------------------------------------------------------------------

SLURM = "GresTypes=gpu,shard\nNodeName=gpu-a[01-02] Gres=gpu:a100:4,shard:8\nNodeName=cpu01\n"
GOOD = "NodeName=%s Name=gpu Type=a100 File=/dev/nvidia[0-3]\nNodeName=%s Name=shard Count=8 File=/dev/nvidia[0-3]\n"


def test_consistent_files_give_no_problems():
    assert check_consistency(SLURM, {"gpu-a01": GOOD % ("gpu-a01", "gpu-a01"),
                                     "gpu-a02": GOOD % ("gpu-a02", "gpu-a02")}) == []


def test_count_mismatch_names_node_type_and_both_counts():
    short = "NodeName=gpu-a02 Name=gpu Type=a100 File=/dev/nvidia[0-2]\nName=shard Count=8 File=/dev/nvidia[0-2]\n"
    problems = check_consistency(SLURM, {"gpu-a01": GOOD % ("gpu-a01", "gpu-a01"), "gpu-a02": short})
    # slurmd divides the shard line's Count over its 3 files: 2 each, 6 in all
    assert problems == ["host gpu-a02: gres.conf count of gpu:a100: expected 4 (slurm.conf Gres=), found 3",
                        "host gpu-a02: gres.conf count of shard: expected 8 (slurm.conf Gres=), found 6"]


def test_type_in_gres_conf_but_not_in_slurm_conf():
    extra = GOOD % ("gpu-a01", "gpu-a01") + "Name=gpu Type=l40s File=/dev/nvidia4\n"
    problems = check_consistency(SLURM, {"gpu-a01": extra, "gpu-a02": GOOD % ("gpu-a02", "gpu-a02")})
    assert problems == ["host gpu-a01: gres.conf count of gpu:l40s: expected 0 (slurm.conf Gres=), found 1"]


def test_missing_gres_conf_and_unknown_node():
    problems = check_consistency(SLURM, {"gpu-a01": GOOD % ("gpu-a01", "gpu-a01"), "gpu-z9": "Name=gpu Count=1\n"})
    assert "host gpu-a02: gres.conf: expected a gres.conf providing gpu:a100:4,shard:8, found no file" in problems
    assert "host gpu-z9: gres.conf: expected a NodeName line for this node in slurm.conf, found none" in problems


def test_gres_conf_lines_for_other_nodes_do_not_count():
    text = "NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[0-3]\nName=shard Count=8 File=/dev/nvidia[0-3]\n"
    problems = check_consistency(SLURM, {"gpu-a01": text, "gpu-a02": text})
    assert problems == [
        "host gpu-a02: gres.conf line 2: expected File entries that a gpu record also lists, found "
        "/dev/nvidia0,/dev/nvidia1,/dev/nvidia2,/dev/nvidia3 (slurmd discards this shard line)"]


def test_nodes_of_one_shape_are_proven_once_without_hiding_any_difference(monkeypatch):
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import conf
    parsed = []
    real = conf.parse_gres_conf

    def counting(text, node):
        parsed.append(node)
        return real(text, node)
    monkeypatch.setattr(conf, "parse_gres_conf", counting)
    slurm = ("GresTypes=gpu\nNodeName=n[1-4] Gres=gpu:a100:4\nNodeName=a100 Gres=gpu:a100:4\n"
             "NodeName=n5 Gres=gpu:a100:3\n")
    one = "# gres.conf for node %s\nNodeName=%s Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
    texts = {n: one % (n, n) for n in ("n1", "n2", "n3", "n5", "a100")}
    # n4: one GPU short; n5: the same file as n1 but slurm.conf declares 3; a100: named like its GPU type (only the
    # NodeName= prefix is taken out of the key, so its Type=a100 stays)
    texts["n4"] = "NodeName=n4 Name=gpu Type=a100 File=/dev/nvidia[0-2]\n"
    problems = check_consistency(slurm, texts)
    assert problems == ["host n4: gres.conf count of gpu:a100: expected 4 (slurm.conf Gres=), found 3",
                        "host n5: gres.conf count of gpu:a100: expected 3 (slurm.conf Gres=), found 4"]
    assert parsed == ["a100", "n4", "n5"]  # n1, n2 and n3 share a100's proof (natural order: a100 first)
    # the same files with a wrong type on one node: that node is parsed and refused
    parsed.clear()
    texts["n2"] = texts["n2"].replace("Type=a100", "Type=h100")
    assert "host n2: gres.conf count of gpu:h100: expected 0 (slurm.conf Gres=), found 4" in check_consistency(
        slurm, texts)
    assert parsed == ["a100", "n2", "n4", "n5"]
    # a line naming a hostlist applies by name: never shared
    parsed.clear()
    shared = "NodeName=n[1-2] Name=gpu Type=a100 File=/dev/nvidia[0-3]\n"
    assert check_consistency("GresTypes=gpu\nNodeName=n[1-3] Gres=gpu:a100:4\n",
                             {"n1": shared, "n2": shared, "n3": shared}) == [
        "host n3: gres.conf count of gpu:a100: expected 4 (slurm.conf Gres=), found 0"]
    assert sorted(parsed) == ["n1", "n2", "n3"]


def test_untyped_slurm_conf_counts_typed_gres_conf_like_slurm_does():
    assert check_consistency("GresTypes=gpu\nNodeName=n1 Gres=gpu:2\n",
                             {"n1": "Name=gpu Type=a100 File=/dev/nvidia[0-1]\n"}) == []


def test_typed_and_untyped_in_slurm_conf_is_refused():
    problems = check_consistency("GresTypes=gpu\nNodeName=n1 Gres=gpu:1,gpu:a100:1\n",
                                 {"n1": "Name=gpu Type=a100 File=/dev/nvidia0\nName=gpu File=/dev/nvidia1\n"})
    assert any("gpu either typed or untyped" in p for p in problems)


def test_deferred_mig_gres_may_be_absent_but_not_partial():
    slurm = "GresTypes=gpu\nNodeName=n1 Gres=gpu:a100:1,gpu:a100_3g.40gb:2\n"
    base = "Name=gpu Type=a100 File=/dev/nvidia0\n"
    deferred = {"n1": {"gpu:a100_3g.40gb": 2}}
    assert check_consistency(slurm, {"n1": base}, deferred) == []
    partial = base + "Name=gpu Type=a100_3g.40gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap21\n"
    assert check_consistency(slurm, {"n1": partial}, deferred) == [
        "host n1: gres.conf count of gpu:a100_3g.40gb: expected 2 (slurm.conf Gres=), found 1"]
    assert check_consistency(slurm, {"n1": base}) != []


def test_unparseable_gres_conf_is_a_problem_not_a_crash():
    problems = consistency_problems("NodeName=n1 Gres=gpu:a100:1\n", {"n1": "Name=gpu Core=0\n"})
    assert [str(p) for p in problems] == [
        "host n1: gres.conf: expected a file slurmd can parse, found gres.conf line 1: unrecognized key 'Core'"]


def test_real_fixture_pair_is_inconsistent_as_slurm_would_find():
    problems = check_consistency(fixture("gh200-mig-slurm-conf-nodename-gres.txt"),
                                 {"localhost": fixture("gh200-mig-gres-conf-nvidia-caps.txt")})
    assert problems == ["host localhost: gres.conf count of gpu:1g.11gb: expected 0 (slurm.conf Gres=), found 1"]
