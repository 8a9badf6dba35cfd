"""playbooks/plays/versions.yml through ansible-playbook: every host's real `slurmd -V` / `slurmctld -V` (the
binaries of each tested release, run in its chroot) judged against hpc_gres_slurm_version and Slurm's upgrade rules.

Local connection: each inventory host is this machine, its slurmd/slurmctld a wrapper that runs the binary of the
release the test gives it (tests/integration/slurm_release.py builds or finds the trees)."""
import os

import pytest
import yaml

import slurm_release
from emulated_node import PYTHON, flat, run_playbook_json
from render_helpers import ROOT

SHAPE = {
    "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1,
    "hpc_gres_node_real_memory": 1000,
    "hpc_gres_gpus": [{"index": 0, "type": "a100", "cores": "0-3"}, {"index": 1, "type": "a100", "cores": "4-7"}],
}
ASSERT = "Every daemon runs the release of hpc_gres_slurm_version, in a mix Slurm supports"
SHOW = "Show the daemons that do not run the release of hpc_gres_slurm_version, or in a mix Slurm does not support"


@pytest.fixture(scope="module")
def roots():
    return dict((release, slurm_release.require_release(release)) for release in ("22.05", "24.11", "26.05"))


def daemon(directory, roots, release, name):
    """An executable that is the ``name`` of Slurm ``release`` (its binary, run in the release's tree)."""
    path = os.path.join(str(directory), "%s-%s" % (name, release))
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\nexec chroot %s /usr/sbin/%s \"$@\"\n" % (roots[release], name))
    os.chmod(path, 0o755)
    return path


def run(tmp_path, roots, slurm_version, controller, nodes):
    """versions.yml after the render play for ctl01 (slurmctld of ``controller``) and ``nodes``
    ({node: release of its slurmd, or a path}); returns (rc, the problems shown, the verdict)."""
    hosts = dict((node, dict(SHAPE, hpc_gres_slurmd_slurmd=daemon(tmp_path, roots, release, "slurmd")
                             if release in roots else release)) for node, release in nodes.items())
    all_vars = {"ansible_connection": "local", "ansible_python_interpreter": PYTHON, "hpc_gres_cluster_name": "v",
                "hpc_gres_slurmctld_slurmctld": daemon(tmp_path, roots, controller, "slurmctld")}
    if slurm_version is not None:
        all_vars["hpc_gres_slurm_version"] = slurm_version
    inventory = os.path.join(str(tmp_path), "hosts.yml")
    with open(inventory, "w") as handle:
        yaml.safe_dump({"all": {"vars": all_vars, "children": {
            "slurmctld": {"hosts": {"ctl01": None}}, "slurmd": {"hosts": hosts}}}}, handle)
    playbook = os.path.join(str(tmp_path), "versions.yml")
    with open(playbook, "w") as handle:
        yaml.safe_dump([{"import_playbook": os.path.join(ROOT, "playbooks", "plays", name)}
                        for name in ("render.yml", "versions.yml")], handle)
    return judged(*run_playbook_json(inventory, playbook))


def judged(rc, tasks, out):
    """(rc, the problems the play showed, its assert message)."""
    shown = [r.get("msg") for r in tasks.get(SHOW, {}).values() if not r.get("skipped")]
    verdict = [r.get("msg") for r in tasks.get(ASSERT, {}).values()]
    assert len(verdict) == 1, flat(out)
    return rc, (shown[0] if shown else []), flat(verdict[0])


def test_a_cluster_on_the_inventory_release_passes(tmp_path, roots):
    rc, problems, verdict = run(tmp_path, roots, "26.05", "26.05", {"gpu01": "26.05", "gpu02": "26.05"})
    assert (rc, problems, verdict) == (0, [], "every Slurm daemon read runs Slurm 26.05")


def test_the_default_release_is_what_the_daemons_must_run_when_the_inventory_is_silent(tmp_path, roots):
    rc, problems, verdict = run(tmp_path, roots, None, "22.05", {"gpu01": "22.05"})
    assert rc != 0
    assert [p.split(" (")[0] for p in problems] == [
        "host ctl01: slurmctld -V: expected Slurm 24.11", "host gpu01: slurmd -V: expected Slurm 24.11"]
    assert all(", found 22.05.8 " in p for p in problems), problems
    assert verdict.startswith("nothing installed, nothing restarted: 2 Slurm daemon(s) do not run Slurm 24.11")


def test_a_slurmd_newer_than_slurmctld_is_refused_naming_the_node(tmp_path, roots):
    rc, problems, verdict = run(tmp_path, roots, "24.11", "24.11", {"gpu01": "24.11", "gpu02": "26.05"})
    assert rc != 0
    assert problems == [
        "host gpu02: slurmd -V: expected a release slurmctld accepts: 24.11, 24.05, 23.11, 23.02 (slurmctld 24.11.5 "
        "on ctl01), found 26.05.5 (Slurm does not support this mix; slurmctld is upgraded first: slurmd may be "
        "older, never newer (upgrades.html#compatibility_window))"]
    assert "1 Slurm daemon(s) do not run Slurm 24.11 (hpc_gres_slurm_version)" in verdict


def test_a_slurmd_outside_the_compatibility_window_is_refused(tmp_path, roots):
    rc, problems, verdict = run(tmp_path, roots, "26.05", "26.05", {"gpu01": "22.05", "gpu02": "26.05"})
    assert rc != 0
    assert [p.split(", found ")[0] for p in problems] == [
        "host gpu01: slurmd -V: expected a release slurmctld accepts: 26.05, 25.11, 25.05, 24.11 (slurmctld 26.05.5 "
        "on ctl01)"]
    assert "found 22.05.8 (Slurm does not support this mix" in problems[0]


def test_a_slurmd_that_cannot_run_is_named(tmp_path, roots):
    missing = str(tmp_path / "no-slurmd")
    rc, problems, verdict = run(tmp_path, roots, "24.11", "24.11", {"gpu01": "24.11", "gpu02": missing})
    assert rc != 0
    assert len(problems) == 1 and problems[0].startswith(
        "host gpu02: slurmd -V: expected a Slurm version such as 24.11.5, found '%s -V: " % missing), problems
    assert "is slurmd installed and on root's PATH?" in problems[0]
