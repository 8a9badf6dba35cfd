"""The per-release option tables: re-derived from the committed Slurm source extracts, and the lookups on them."""
import importlib.util
import os

import pytest
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import options
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_tables import EARLIER, HISTORY, RELEASES
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model_schema as model

ROOT = testpaths.ROOT
SCRIPT = os.path.join(ROOT, "scripts", "derive-slurm-options.py")
FIXTURES = os.path.join(ROOT, "tests", "fixtures", "slurm-source")
MODULE = os.path.join(ROOT, "plugins", "module_utils", "slurm", "option_tables.py")


def derive_script():
    spec = importlib.util.spec_from_file_location("derive_slurm_options", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_option_tables_equal_what_the_slurm_source_extracts_say():
    script = derive_script()
    with open(MODULE) as handle:
        committed = handle.read()
    assert script.render_module(*script.derive(FIXTURES)) == committed, (
        "option_tables.py is out of date: .venv/bin/python scripts/derive-slurm-options.py generate --fixtures %s "
        "--output %s" % (FIXTURES, MODULE))


def test_every_release_that_matters_is_in_the_table():
    assert RELEASES == ("22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05")
    for release in RELEASES:
        assert os.path.exists(os.path.join(FIXTURES, release, "slurm.conf.c"))


def test_the_table_parser_reads_a_real_slurm_block():
    block = '''s_p_options_t hpc_gres_slurm_conf_options[] = {
\t{"AccountingStorageTRES", S_P_STRING},
\t{"ExtSensorsFreq", S_P_UINT16, _defunct_option},
\t{"DefCPUPerGPU" , S_P_UINT64},\t/* a comment */
\t{"SlurmctldHost", S_P_ARRAY, _parse_slurmctld_host,
\t _destroy_slurmctld_host},
\t{NULL}
};'''
    assert derive_script().parse_table(block) == {"AccountingStorageTRES": "string", "ExtSensorsFreq": "defunct",
                                                  "DefCPUPerGPU": "uint64", "SlurmctldHost": "record"}


@pytest.mark.parametrize("table, key, version, found, hint", [
    ("slurm.conf", "SchedulerTyp", "22.05", "unknown option SchedulerTyp", "did you mean SchedulerType?"),
    ("cgroup.conf", "ConstrainDevice", "24.11", "unknown option ConstrainDevice", "did you mean ConstrainDevices?"),
    ("cgroup.conf", "CgroupAutomount", "24.11", "CgroupAutomount (defunct since Slurm 23.11)",
     "Remove CgroupAutomount= option from cgroup.conf."),
    ("cgroup.conf", "ConstrainKmemSpace", "23.11", "ConstrainKmemSpace (removed in Slurm 23.11)",
     "Removed deprecated parameters AllowedKmemSpace, ConstrainKmemSpace"),
    ("slurm.conf", "SlurmctldPlugstack", "24.05", "SlurmctldPlugstack (removed in Slurm 23.02)",
     "Removed SlurmctldPlugstack option"),
    ("cgroup.conf", "SystemdTimeout", "22.05", "SystemdTimeout (added in Slurm 24.05)", "set hpc_gres_slurm_version to 24.05"),
    ("partition", "MaxTme", "22.05", "unknown option MaxTme", "did you mean MaxTime?"),
    ("slurm.conf", "Frobnicate", "26.05", "unknown option Frobnicate", None),
    # read, then logged as renamed, moved or obsolete (read_config.c, cgroup.c)
    ("slurm.conf", "SbcastParameters", "22.05", "SbcastParameters (renamed)", "write BcastParameters instead"),
    ("slurm.conf", "KeepAliveTime", "24.11", "KeepAliveTime (renamed)", "write CommunicationParameters instead"),
    ("slurm.conf", "JobContainerType", "25.11", "JobContainerType (renamed)", "write NamespaceType instead"),
    ("cgroup.conf", "AllowedDevicesFile", "23.11", "AllowedDevicesFile (obsolete)", "remove it; Slurm 23.11 logs"),
    # dropped before 22.05 (the 17.02 to 21.08 tables): which release, not a "did you mean" to a different option
    ("slurm.conf", "SchedulerPort", "22.05", "SchedulerPort (removed in Slurm 21.08)",
     "Slurm 20.11 was the last release whose parser accepted SchedulerPort; Slurm 22.05 stops on a key it does not "
     "know (\"Parsing error at unrecognized key: SchedulerPort\""),
    ("slurm.conf", "cachegroups", "24.11", "cachegroups (removed in Slurm 21.08)", "accepted CacheGroups;"),
    ("slurm.conf", "ChosLoc", "26.05", "ChosLoc (removed in Slurm 20.11)", "Slurm 20.02 was the last"),
    ("cgroup.conf", "TaskAffinity", "22.05", "TaskAffinity (removed in Slurm 22.05)", "Slurm 21.08 was the last"),
])
def test_a_key_the_release_does_not_read_is_refused_with_why(table, key, version, found, hint):
    with pytest.raises(options.OptionError) as err:
        options.lookup(table, key, version)
    assert err.value.found == found
    assert "Slurm %s reads" % options.release_for(version) in err.value.expected
    if hint is None:
        assert err.value.hint is None
    else:
        assert hint in err.value.hint


def test_keys_are_case_insensitive_and_come_back_in_slurm_spelling():
    assert options.lookup("slurm.conf", "schedulertype", "23.11") == ("SchedulerType", "string")
    assert options.lookup("node", "sockets", "22.05") == ("Sockets", "uint16")
    assert options.lookup("node", "RealMemory", "26.05") == ("RealMemory", "uint64")
    assert options.lookup("slurm.conf", "Prolog", "24.05") == ("Prolog", "record")  # many Prolog= lines since 24.05


@pytest.mark.parametrize("version, release", [
    ("22.05", "22.05"), ("21.08", "22.05"), ("24.08", "24.05"), ("24.11.5", "24.11"), ("27.05", "26.05"),
    (None, options.release_for(options.DEFAULT_SLURM_VERSION))])
def test_a_version_reads_as_the_newest_known_release_not_after_it(version, release):
    assert options.release_for(version) == release


@pytest.mark.parametrize("release", RELEASES)
def test_the_collection_defaults_are_options_every_release_reads(release):
    for table, defaults in (("slurm.conf", model.DEFAULT_SLURM_CONF), ("cgroup.conf", model.DEFAULT_CGROUP_CONF),
                            ("partition", tuple(model.DEFAULT_PARTITION["options"].items()))):
        for key, _value in defaults:
            assert options.lookup(table, key, release)[0] == key
    for key in ("Sockets", "CoresPerSocket", "ThreadsPerCore", "RealMemory", "Weight", "Features", "Gres"):
        options.lookup("node", key, release)


def test_options_dropped_before_the_first_known_release_are_the_earlier_tables_keys_it_lacks():
    assert EARLIER["slurm.conf"]["CacheGroups"] == ("20.11", "21.08")
    assert EARLIER["cgroup.conf"]["CgroupSubsystems"] == ("17.02", "17.11")
    for table, dropped in EARLIER.items():
        assert not {k.lower() for k in dropped} & {k.lower() for k in HISTORY[table]}
    assert "ControlMachine" not in EARLIER["slurm.conf"] and "FastSchedule" not in EARLIER["slurm.conf"]


def test_history_records_removals_and_defunct_options_with_their_release():
    assert HISTORY["cgroup.conf"]["CgroupAutomount"][-1][:2] == ("23.11", "defunct")
    assert HISTORY["slurm.conf"]["SlurmctldPlugstack"][-1][:2] == ("23.02", None)
    assert HISTORY["node"]["Sockets"] == (("22.05", "uint16", None),)


def test_an_option_renamed_in_a_later_release_is_read_before_it():
    assert options.lookup("slurm.conf", "JobContainerType", "25.05") == ("JobContainerType", "string")
    assert HISTORY["slurm.conf"]["JobContainerType"][-1][:2] == ("25.11", "renamed")


def test_defunct_names_the_options_a_release_parses_only_to_ignore():
    spelled, since, note = options.defunct("cgroup.conf", "cgroupautomount", "24.11")
    assert (spelled, since) == ("CgroupAutomount", "23.11") and note.startswith("Remove CgroupAutomount= option")
    assert options.defunct("cgroup.conf", "CgroupAutomount", "23.02") is None  # still read then
    assert options.defunct("cgroup.conf", "ConstrainKmemSpace", "24.11") is None  # removed: Slurm stops on it
    assert options.defunct("slurm.conf", "CoreSpecPlugin", "24.11")[:2] == ("CoreSpecPlugin", "24.05")
    # read only to stop (fatal in read_config.c): removed, not defunct
    assert options.defunct("slurm.conf", "AccountingStorageLoc", "22.05") is None
    assert HISTORY["slurm.conf"]["AccountingStorageLoc"][0][:2] == ("22.05", "removed")
    with pytest.raises(options.OptionError) as err:
        options.lookup("slurm.conf", "AccountingStoreJobComment", "24.11")
    assert "AccountingStoreJobComment (removed)" in str(err.value) and "fatal: The AccountingStoreJobComment " \
        "option has been removed" in str(err.value)
    assert options.defunct("slurm.conf", "NoSuchOption", "24.11") is None
    assert options.defunct("slurm.conf", "SchedulerAuth", "24.05") is None  # defunct in 22.05, gone from 24.05
