"""The import of a stock Debian 12 (Slurm 22.05) GPU site, end to end through playbooks/import-config.yml.

The site is Debian's own example files (tests/fixtures/slurm/debian12: slurm.conf.cgroup and cgroup.conf of the
slurmctld 22.05.8-4+deb12u3 package, verbatim) with the edits an admin makes for a GPU cluster: the example's
NodeName line replaced by GPU nodes, GresTypes, a gres.conf. Its cgroup.conf sets CgroupAutomount=yes and
ConstrainKmemSpace=no, which Slurm 23.11 and later do not read. Judged here:

* without a release named, the import works and says in one line which release it took and how to name another;
* each refusal names the file and line it read;
* rendering the imported inventory gives files that mean what the site's mean, option by option, node by node
  and record by record (the deploy's own restart plan finds nothing to restart, the real slurmd registers the same
  GRES), and the report lists every textual difference the first deploy makes (none for the stock files);
* the repairs (Cores= slurmd drops, MIG MultipleFiles= lines) are refused by default and, asked for, listed as
  changes.
"""
import os
import re
import subprocess

import pytest
import yaml

import slurmd_oracle
import testpaths
from render_helpers import ROOT

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import restart_plan
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    cgroup_options,
    parse_slurm_conf,
    partition_definition,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_proof import run_import
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_source import read_source_dir
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import ImportRefused

DEBIAN = os.path.join(testpaths.FIXTURES, "slurm", "debian12")
STOCK_NODE = "NodeName=server CPUs=16 RealMemory=64000\n"
GPU_NODES = ("GresTypes=gpu\n"
             "NodeName=gpu[01-02] CPUs=128 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1000000 "
             "Gres=gpu:a100:4\n")
# what `slurmd -C` prints on such a node, pasted as the admin's NodeName line
SLURMD_C_NODES = ("GresTypes=gpu\n"
                  "NodeName=gpu[01-02] CPUs=128 Boards=1 SocketsPerBoard=2 CoresPerSocket=32 ThreadsPerCore=2 "
                  "RealMemory=1000000 Gres=gpu:a100:4\n")
GRES_FILES = ("NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-31\n"
              "NodeName=gpu[01-02] Name=gpu Type=a100 File=/dev/nvidia[2-3] Cores=32-63\n")
GRES_AUTODETECT = "AutoDetect=nvml\n"
SHAPE = (2, 32, 2)


def stock(name):
    with open(os.path.join(DEBIAN, name)) as handle:
        return handle.read()


def line_of(text, start):
    """The line number of the first line of ``text`` starting with ``start``."""
    return next(n for n, line in enumerate(text.split("\n"), 1) if line.startswith(start))


def site(path, nodes=GPU_NODES, gres=GRES_FILES):
    """Debian's stock slurm.conf.cgroup and cgroup.conf with the admin's GPU edits, as a source directory."""
    slurm = stock("slurm.conf.cgroup")
    assert STOCK_NODE in slurm
    path.mkdir()
    (path / "slurm.conf").write_text(slurm.replace(STOCK_NODE, nodes))
    (path / "cgroup.conf").write_text(stock("cgroup.conf"))
    (path / "gres.conf").write_text(gres)
    return path


def playbook(*args):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([testpaths.ANSIBLE_PLAYBOOK] + list(args), cwd=ROOT, env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    return proc.returncode, " ".join(proc.stdout.split())


def import_config(src, dest, *extra):
    return playbook("playbooks/import-config.yml", "-e", "hpc_gres_import_src=%s" % src,
                    "-e", "hpc_gres_import_dest=%s" % dest, *extra)


def same_in_meaning(src, rendered, node):
    """The deploy's restart plan for ``node`` going from the site's files to the rendered ones."""
    applied = {name: (src / name).read_text() for name in ("slurm.conf", "cgroup.conf", "gres.conf")}
    new = {"slurm.conf": (rendered / "slurm.conf").read_text(), "cgroup.conf": (rendered / "cgroup.conf").read_text(),
           "gres.conf": (rendered / node / "gres.conf").read_text()}
    return restart_plan.node_restart_plan(node, applied, new)


@pytest.fixture(scope="module", params=["gres-files", "autodetect"])
def imported(request, tmp_path_factory):
    base = tmp_path_factory.mktemp("debian12")
    src = site(base / "src", gres=GRES_FILES if request.param == "gres-files" else GRES_AUTODETECT)
    dest, rendered = base / "dest", base / "rendered"
    rc, log = import_config(src, dest)
    assert rc == 0, log
    rc, render_log = playbook("playbooks/render-gres.yml", "-i", str(dest), "-e", "hpc_gres_render_dir=%s" % rendered)
    assert rc == 0, render_log
    return src, dest, rendered, log


def test_a_stock_debian12_site_imports_without_a_release_named_and_says_which_it_took(imported):
    src, dest, _unused, log = imported
    cgroup_line = line_of((src / "cgroup.conf").read_text(), "CgroupAutomount=")
    assert ("Slurm release not named: the import takes Slurm 22.05, the oldest release whose "
            "rules accept these files (they fit 22.05-23.02; not from Slurm 23.11, cgroup.conf line %d: "
            "CgroupAutomount (defunct since Slurm 23.11))." % cgroup_line) in log
    assert "If the cluster runs another release (slurmctld -V), name it, e.g. -e " \
           "hpc_gres_import_slurm_version=23.02" in log
    cluster = yaml.safe_load((dest / "group_vars" / "all.yml").read_text())
    assert cluster["hpc_gres_slurm_version"] == "22.05"
    assert cluster["hpc_gres_cgroup_conf_options"]["CgroupAutomount"] == "yes"
    # the site accounts no GPU TRES: kept so, and the report says how to ask for them
    assert cluster["hpc_gres_accounting_gpu_tres"] is False
    assert "AccountingStorageTRES (not set) kept as the site has it" in log


def test_a_render_of_the_import_changes_nothing_on_the_first_deploy(imported):
    src, _unused, rendered, log = imported
    assert "first deploy:" not in log  # the report lists no difference
    old = parse_slurm_conf((src / "slurm.conf").read_text())
    new = parse_slurm_conf((rendered / "slurm.conf").read_text())
    assert new["options"] == old["options"]  # AccountingStorageTRES included: no GPU TRES added
    assert {n: partition_definition(p) for n, p in new["partitions"].items()} == {
        n: partition_definition(p) for n, p in old["partitions"].items()}
    strip = ("line",)
    assert {n: {k: v for k, v in d.items() if k not in strip} for n, d in new["nodes"].items()} == {
        n: {k: v for k, v in d.items() if k not in strip} for n, d in old["nodes"].items()}
    assert cgroup_options((rendered / "cgroup.conf").read_text()) == cgroup_options((src / "cgroup.conf").read_text())
    for node in ("gpu01", "gpu02"):
        plan = same_in_meaning(src, rendered, node)
        assert not plan["restart"], plan["reasons"]
        assert not plan["slurm_conf"]["changed"], plan["slurm_conf"]
    gres = (rendered / "gpu01" / "gres.conf").read_text()
    assert "Count=" not in gres  # an AutoDetect site gains no Count= line


def test_the_real_slurmd_registers_the_same_gres_from_the_site_and_the_rendered_files(imported):
    slurmd_oracle.require_oracle()
    src, _unused, rendered, _unused2 = imported
    before = slurmd_oracle.run_slurmd_g("gpu02", (src / "slurm.conf").read_text(), (src / "gres.conf").read_text(),
                                        *SHAPE)
    after = slurmd_oracle.run_slurmd_g("gpu02", (rendered / "slurm.conf").read_text(),
                                       (rendered / "gpu02" / "gres.conf").read_text(), *SHAPE)
    assert before.ok and after.ok, before.describe() + after.describe()
    assert after.units() == before.units() and after.counts() == before.counts(), after.describe()


def test_naming_a_release_the_files_do_not_fit_is_refused_at_each_file_and_line(tmp_path):
    src = site(tmp_path / "src")
    rc, log = import_config(src, tmp_path / "dest", "-e", "hpc_gres_import_slurm_version=24.11")
    assert rc != 0
    cgroup = (src / "cgroup.conf").read_text()
    # Slurm 24.11 stops on ConstrainKmemSpace (cgroup.c reads no such key: "Could not open/read/parse cgroup.conf")
    assert "cgroup.conf line %d: hpc_gres_cgroup_conf_options.ConstrainKmemSpace: expected a cgroup.conf option that " \
           "Slurm 24.11 reads, found ConstrainKmemSpace (removed in Slurm 23.11)" % line_of(cgroup, "ConstrainKmemSpace=") \
        in log
    # and only logs CgroupAutomount as defunct: left out (with a note when nothing else is refused)
    assert "hpc_gres_cgroup_conf_options.CgroupAutomount" not in log
    assert "Slurm release 24.11 (named with -e hpc_gres_import_slurm_version): the files are judged by its rules" \
        in log
    assert not (tmp_path / "dest").exists()


def refused(src, **kwargs):
    with pytest.raises(ImportRefused) as err:
        run_import(read_source_dir(str(src)), [], **kwargs)
    return [str(r) for r in err.value.refusals]


def test_cores_slurmd_drops_are_refused_by_default_and_left_out_as_a_listed_change_when_asked(tmp_path):
    """A DGX A100 node with gres.conf CPUs= as OS CPU ids (NVIDIA/deepops#1195, tests/fixtures/slurm): slurmd 22.05
    drops the bindings beyond the 128 cores slurm.conf declares."""
    with open(os.path.join(testpaths.FIXTURES, "slurm", "deepops1195-gres-conf-cpus-ht.txt")) as handle:
        dgx = "".join(line for line in handle if not line.startswith("#")).replace("Name=gpu", "NodeName=gpu01 Name=gpu")
    nodes = ("GresTypes=gpu\nNodeName=gpu01 CPUs=256 Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 "
             "RealMemory=1000000 Gres=gpu:8\n")
    src = site(tmp_path / "src", nodes=nodes, gres=dgx)
    found = refused(src)
    assert found[0].startswith("gres.conf line 1, node gpu01: gpu CPUs=48-63,176-191 (slurmd reads CPUs= as Cores=, "
                               "core indices, not the CPU ids of hyperthreads: slurmd drops this binding")
    assert found[0].endswith("or import without the binding: -e hpc_gres_import_drop_invalid_cores=true (the "
                             "report lists it as a change))")
    assert [r.split(",")[0] for r in found] == ["gres.conf line %d" % n for n in range(1, 9)]
    dest = tmp_path / "dest"
    rc, log = import_config(src, dest, "-e", "hpc_gres_import_drop_invalid_cores=true")
    assert rc == 0, log
    assert "CHANGE: gres.conf line 1, node gpu01: gpu CPUs=48-63,176-191 is left out " \
           "(hpc_gres_import_drop_invalid_cores=true)" in log
    rendered = tmp_path / "rendered"
    rc, render_log = playbook("playbooks/render-gres.yml", "-i", str(dest), "-e", "hpc_gres_render_dir=%s" % rendered)
    assert rc == 0, render_log
    assert (rendered / "gpu01" / "gres.conf").read_text().endswith("\nNodeName=gpu01 Name=gpu File=/dev/nvidia[0-7]\n")
    slurmd_oracle.require_oracle()
    before = slurmd_oracle.run_slurmd_g("gpu01", (src / "slurm.conf").read_text(), dgx, 2, 64, 2)
    after = slurmd_oracle.run_slurmd_g("gpu01", (rendered / "slurm.conf").read_text(),
                                       (rendered / "gpu01" / "gres.conf").read_text(), 2, 64, 2)
    assert any(p.startswith("error: Invalid GRES data for gpu, CPUs=48-63,176-191") for p in before.problems), \
        before.describe()
    assert after.ok and after.units() == before.units(), after.describe()


# One A100's MIG devices as the real slurmd of NVIDIA/deepops#1214 lists them (tests/fixtures/slurm/
# deepops1214-slurmd-gres-mig-nvml-lines.txt: /dev/nvidia1 with GI/CI caps 84/85 ... 111/112), written as the
# explicit MultipleFiles= lines of a site that does not use AutoDetect, typed by their profile.
MIG_GRES = "".join("NodeName=gpu01 Name=gpu Type=1g.5gb MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap%d,"
                   "/dev/nvidia-caps/nvidia-cap%d\n" % (gi, gi + 1) for gi in (84, 93, 102, 111))
MIG_NODES = "GresTypes=gpu\nNodeName=gpu01 CPUs=256 Sockets=2 CoresPerSocket=64 ThreadsPerCore=2 Gres=gpu:1g.5gb:4\n"


def test_mig_lines_are_refused_by_default_and_imported_as_a_layout_when_the_model_is_named(tmp_path):
    src = site(tmp_path / "src", nodes=MIG_NODES, gres=MIG_GRES)
    found = refused(src, slurm_version="22.05")
    assert len(found) == 4 and all(re.match(r"gres.conf line [1-4], node gpu01: MultipleFiles= \(MIG\) line", r)
                                   for r in found), found
    assert "-e hpc_gres_import_mig_model=MODEL (MODEL one of A100-40GB, A800-40GB;" in found[0]
    done = run_import(read_source_dir(str(src)), [], slurm_version="22.05", repairs={"mig_model": "A100-40GB"})
    shape = yaml.safe_load(done["files"]["group_vars/%s.yml" % next(iter(done["groups"]))])
    assert shape["hpc_gres_gpus"] == [{"index": 1, "model": "A100-40GB", "mig": ["1g.5gb"] * 4}]
    assert done["changes"] == [
        "CHANGE: gres.conf line(s) 1,2,3,4, node gpu01: the MultipleFiles= lines of /dev/nvidia1 are imported as "
        "mig: [1g.5gb, 1g.5gb, 1g.5gb, 1g.5gb], model: A100-40GB (hpc_gres_import_mig_model); the rendered gres.conf "
        "leaves them to the node, which writes one line per live MIG device (Type=profile MultipleFiles=/dev/nvidia1,"
        "GI cap,CI cap) when the deploy verifies it, and refuses the node while its live MIG layout differs"]
    assert "Gres=gpu:1g.5gb:4" in done["rendered"]["slurm.conf"]
    assert not [line for line in done["rendered"]["gpu01/gres.conf"].splitlines() if not line.startswith("#")]
    assert any(line.startswith("first deploy: gres.conf lines 1-4, node gpu01: line 1 Name=gpu Type=1g.5gb "
                               "MultipleFiles=/dev/nvidia1,/dev/nvidia-caps/nvidia-cap84,/dev/nvidia-caps/nvidia-cap85 "
                               "is left to the node") for line in done["report"]), done["report"]


def test_a_slurmd_c_node_line_is_carried_in_meaning_and_its_rewrite_listed(tmp_path):
    """`slurmd -C` prints Boards=1 SocketsPerBoard=2: the inventory holds Sockets, the same for Slurm; the report
    lists the rewrite as the one difference of the first deploy, and the restart plan finds nothing to do."""
    src = site(tmp_path / "src", nodes=SLURMD_C_NODES)
    done = run_import(read_source_dir(str(src)), [])
    line = line_of((src / "slurm.conf").read_text(), "NodeName=gpu")
    assert [r for r in done["report"] if r.startswith("first deploy:")] == [
        "first deploy: slurm.conf line %d, nodes gpu[01-02]: NodeName Boards=1 is left out, SocketsPerBoard=2 "
        "becomes Sockets=2" % line]
    applied = {name: (src / name).read_text() for name in ("slurm.conf", "cgroup.conf", "gres.conf")}
    new = {"slurm.conf": done["rendered"]["slurm.conf"], "cgroup.conf": done["rendered"]["cgroup.conf"],
           "gres.conf": done["rendered"]["gpu01/gres.conf"]}
    assert not restart_plan.node_restart_plan("gpu01", applied, new)["restart"]
