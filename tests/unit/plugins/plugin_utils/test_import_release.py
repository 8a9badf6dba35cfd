"""The release an import is judged and written for when none is named: the collection's default where the files
fit its rules, else the oldest release they fit; one report line says which, why, and the -e that names another."""
import pytest
import yaml

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import import_release
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_proof import run_import
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import ImportRefused

HEAD = """ClusterName=lab
SlurmctldHost=ctl01
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=gpu
NodeName=n1 Sockets=2 CoresPerSocket=4 Gres=gpu:a100:2
"""
GRES = "Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-3\nName=gpu Type=a100 File=/dev/nvidia1 Cores=4-7\n"


def source(extra="", gres=GRES, cgroup=None):
    return {"slurm.conf": HEAD + extra, "includes": {}, "cgroup.conf": cgroup, "gres.conf": gres, "node_gres": {}}


def written(done):
    return yaml.safe_load(done["files"]["group_vars/all.yml"])["hpc_gres_slurm_version"]


def test_the_default_release_where_the_files_fit_every_release():
    done = run_import(source(), [])
    assert written(done) == "24.11" == done["slurm_version"]
    assert done["report"][0] == (
        "Slurm release not named: the import takes Slurm 24.11, the collection's default (they "
        "fit 22.05-26.05). If the cluster runs another release (slurmctld -V), name it, e.g. -e "
        "hpc_gres_import_slurm_version=22.05")


@pytest.mark.parametrize("extra, cgroup, gres, release, evidence", [
    # Debian 12's stock cgroup.conf: Slurm 23.11 dropped the option
    ("", "ConstrainDevices=yes\nCgroupAutomount=yes\n", GRES, "22.05",
     "they fit 22.05-23.02; not from Slurm 23.11, cgroup.conf line 2: CgroupAutomount (defunct since Slurm 23.11)"),
    # an option only newer releases read
    ("MetricsType=metrics/none\n", None, GRES, "25.11",
     "they fit 25.11-26.05; not up to Slurm 25.05, slurm.conf line 8: MetricsType (added in Slurm 25.11)"),
    # GPU Cores inside a socket: 24.11 drains such a node
    ("", None, "Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-1\nName=gpu Type=a100 File=/dev/nvidia1 Cores=2-3\n",
     "22.05", "they fit 22.05-24.05; not from Slurm 24.11, gres.conf line 1: expected Cores covering whole sockets"),
])
def test_the_oldest_release_the_files_fit_otherwise_and_why(extra, cgroup, gres, release, evidence):
    done = run_import(source(extra, gres, cgroup), [])
    assert written(done) == release
    line = done["report"][0]
    assert line.startswith("Slurm release not named: the import takes Slurm %s, the oldest "
                           "release whose rules accept these files (%s" % (release, evidence)), line
    assert "name it, e.g. -e hpc_gres_import_slurm_version=" in line


def test_autodetect_nvidia_fits_24_11_on():
    done = run_import(source(gres="AutoDetect=nvidia\n"), [])
    assert written(done) == "24.11"
    assert "(they fit 24.11-26.05; not up to Slurm 24.05, gres.conf line 1: expected one of off, nvml" in \
        done["report"][0]


def test_a_named_release_is_used_as_named_and_said_with_how_it_was_known():
    done = run_import(source(), [], slurm_version="slurm 23.11.4", version_note="reported by slurmctld -V on ctl01")
    assert written(done) == "23.11"
    assert done["report"][0] == "Slurm release 23.11 (reported by slurmctld -V on ctl01): the files are judged by " \
                                "its rules"


def test_a_refusal_ends_with_the_release_line_and_its_hint_names_the_import_variable():
    with pytest.raises(ImportRefused) as err:
        run_import(source("MetricsType=metrics/none\n"), [], slurm_version="24.11")
    assert str(err.value.refusals[0]) == (
        "slurm.conf line 8: hpc_gres_slurm_conf_options.MetricsType: expected a slurm.conf option that Slurm 24.11 "
        "reads, found MetricsType (added in Slurm 25.11) (re-run with -e hpc_gres_import_slurm_version=25.11 or "
        "later if the cluster runs it)")
    assert str(err.value).endswith("\nSlurm release 24.11 (named with -e hpc_gres_import_slurm_version): the files "
                                   "are judged by its rules")


def test_files_no_release_fits_are_refused_for_the_release_with_fewest_problems_and_the_line_says_so():
    with pytest.raises(ImportRefused) as err:
        run_import(source("MetricsType=metrics/none\n", cgroup="CgroupAutomount=yes\n"), [])
    assert [r.where for r in err.value.refusals] == ["slurm.conf line 8"]
    assert err.value.notes[0].startswith(
        "Slurm release not named: the import takes Slurm 22.05, no release accepts them as they "
        "are; of those with the fewest problems, the oldest (fewest problems in 22.05-23.02, 25.11-26.05; not from "
        "Slurm 23.11, cgroup.conf line 1: CgroupAutomount (defunct since Slurm 23.11))")


def test_the_line_itself():
    found = {r: [] for r in ("22.05", "23.02")}
    found.update({r: [(("c", "f"), "cgroup.conf line 3: CgroupAutomount")] for r in
                  ("23.11", "24.05", "24.11", "25.05", "25.11", "26.05")})
    fits, _unused = import_release.releases_accepting(lambda r: found[r])
    assert fits == ["22.05", "23.02"] and import_release.choose(fits) == "22.05"
    assert import_release.assumed_line("22.05", fits, found, "slurmctld -V on c1 gave no release") == (
        "Slurm release not named (slurmctld -V on c1 gave no release): the import takes Slurm "
        "22.05, the oldest release whose rules accept these files (they fit 22.05-23.02; not from Slurm 23.11, "
        "cgroup.conf line 3: CgroupAutomount). If the cluster runs another release (slurmctld -V), name it, e.g. -e "
        "hpc_gres_import_slurm_version=23.02")
    assert import_release.choose(["23.11", "24.11", "25.05"]) == "24.11"


def test_a_hostlist_with_a_suffix_fits_23_11_on_and_is_refused_for_22_05_at_its_line():
    slurm = ("ClusterName=lab\nSlurmctldHost=ctl01\nGresTypes=gpu\nNodeName=node[01-02]-ib Gres=gpu:1\n"
             "PartitionName=p Nodes=node[01-02]-ib Default=YES\n")
    src = {"slurm.conf": slurm, "includes": {}, "cgroup.conf": None, "gres.conf": "Name=gpu File=/dev/nvidia0\n",
           "node_gres": {}}
    done = run_import(src, [])
    assert "(they fit 23.11-26.05; not up to Slurm 23.02, slurm.conf line 4: NodeName=node[01-02]-ib (Slurm 23.02 " \
           "cannot read the hostlist node[01-02]-ib" in done["report"][0]
    with pytest.raises(ImportRefused) as err:
        run_import(src, [], slurm_version="22.05")
    assert [str(r) for r in err.value.refusals] == [
        "slurm.conf line 4: NodeName=node[01-02]-ib (Slurm 22.05 cannot read the hostlist node[01-02]-ib; a suffix "
        "after ']' is read from Slurm 23.11; slurmctld stops: 'Unable to create NodeAddr list from node[01-02]-ib')",
        "slurm.conf line 5: Nodes=node[01-02]-ib (Slurm 22.05 cannot read the hostlist node[01-02]-ib; a suffix "
        "after ']' is read from Slurm 23.11)"]


def test_a_topology_plugin_the_named_release_does_not_ship_is_refused():
    # a real site's template (arkady-emelyanov/ai-lab) sets TopologyPlugin=topology/block, which came with 23.11
    src = {"slurm.conf": "ClusterName=lab\nSlurmctldHost=ctl01\nSelectType=select/cons_tres\n"
                         "TopologyPlugin=topology/block\nNodeName=n1 CPUs=4\nPartitionName=p Nodes=n1 Default=YES\n",
           "includes": {}, "cgroup.conf": None, "gres.conf": None, "node_gres": {}}
    with pytest.raises(ImportRefused) as err:
        run_import(src, [], slurm_version="22.05")
    assert any("TopologyPlugin" in str(r) and "a topology plugin Slurm 22.05 ships" in str(r)
               for r in err.value.refusals), [str(r) for r in err.value.refusals]
    assert run_import(src, [], slurm_version="24.11")["slurm_version"] == "24.11"
