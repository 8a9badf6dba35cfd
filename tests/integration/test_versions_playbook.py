"""The deploy's version check through ansible-playbook: every host's real `slurmd -V` (read in the node's one
gres_verify run) and `slurmctld -V` (the binaries of each tested release, run in its chroot) judged by the gate
(hpc.slurm_gres.gres_plan) against hpc_gres_slurm_version and Slurm's upgrade rules, before anything is installed.

A check run of deploy-gres.yml: the gate defers its refusal to the end of the run, after its report. Local
connection: each inventory host is this machine (CPU-only nodes, so nothing but the versions can refuse them), its
slurmd/slurmctld a wrapper that runs the binary of the release the test gives it (tests/integration/slurm_release.py
builds or finds the trees)."""
import os

import pytest
import yaml

import slurm_release
from emulated_node import PYTHON, flat, run_playbook_json

SHAPE = {
    "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1,
    "hpc_gres_node_real_memory": 1000,
}
GATE = "Every node verified, every daemon on the release; plan each controller and the restart order"
REFUSED = "Check mode, the deploy would be refused"


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
    """A check run of the deploy for ctl01 (slurmctld of ``controller``) and ``nodes`` ({node: release of its slurmd,
    or a path}); returns (rc, the problems the gate found, the refusal)."""
    hosts = dict((node, dict(SHAPE, hpc_gres_slurmd_slurmd=daemon(tmp_path, roots, release, "slurmd")
                             if release in roots else release)) for node, release in nodes.items())
    all_vars = {"ansible_connection": "local", "ansible_python_interpreter": PYTHON, "hpc_gres_cluster_name": "v",
                "hpc_gres_slurmctld_slurmctld": daemon(tmp_path, roots, controller, "slurmctld"),
                "hpc_gres_verify_show_table": False, "hpc_gres_slurmctld_restart": False, "hpc_gres_slurmd_restart": False,
                # read-only in check mode; private directories all the same (this machine is every host)
                "hpc_gres_slurmd_config_dir": str(tmp_path / "etc"), "hpc_gres_slurmd_state_dir": str(tmp_path / "sd"),
                "hpc_gres_slurmd_health_program": str(tmp_path / "sbin" / "hpc-gres-health"),
                "hpc_gres_slurmd_health_library_dir": str(tmp_path / "lib"),
                "hpc_gres_slurmctld_config_dir": str(tmp_path / "etc"),
                "hpc_gres_slurmctld_state_dir": str(tmp_path / "sc"), "hpc_gres_run_root": str(tmp_path / "runs")}
    if slurm_version is not None:
        all_vars["hpc_gres_slurm_version"] = slurm_version
    inventory = os.path.join(str(tmp_path), "hosts.yml")
    with open(inventory, "w") as handle:
        yaml.safe_dump({"all": {"vars": all_vars, "children": {
            "slurmctld": {"hosts": {"ctl01": None}}, "slurmd": {"hosts": hosts}}}}, handle)
    return judged(*run_playbook_json(inventory, "deploy-gres.yml", "--check"))


def judged(rc, tasks, out):
    """(rc, the version problems of the gate, the refusal the check run ends with, or '' when it passes)."""
    gate = list(tasks.get(GATE, {}).values())
    assert len(gate) >= 1 and "plan" in gate[0], flat(out)
    refused = [r.get("msg") for r in tasks.get(REFUSED, {}).values() if not r.get("skipped")]
    return rc, gate[0]["plan"]["version_problems"], flat(refused[0]) if refused else ""


def test_a_cluster_on_the_inventory_release_passes(tmp_path, roots):
    rc, problems, verdict = run(tmp_path, roots, "26.05", "26.05", {"gpu01": "26.05", "gpu02": "26.05"})
    assert (rc, problems, verdict) == (0, [], "")


def test_the_default_release_is_what_the_daemons_must_run_when_the_inventory_is_silent(tmp_path, roots):
    rc, problems, verdict = run(tmp_path, roots, None, "22.05", {"gpu01": "22.05"})
    assert rc != 0
    assert [p.split(" (")[0] for p in problems] == [
        "host ctl01: slurmctld -V: expected Slurm 24.11", "host gpu01: slurmd -V: expected Slurm 24.11"]
    assert all(", found 22.05.8 " in p for p in problems), problems
    assert verdict.startswith("nothing installed, nothing restarted: 2 Slurm daemon(s) do not run Slurm 24.11"), verdict


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
