"""Every ansible-core that scripts/compat.sh built renders the same files, byte for byte, as the newest one.

Run by scripts/compat.sh (``make compat``, ``make compat-min``), which passes the ansible-core installations to
compare in ``SLURM_GRES_COMPAT_BINS`` ("2.16=/path/to/venv/bin 2.21=... venv=.venv/bin"). Each renders each
inventory below with ``ansible-playbook hpc.slurm_gres.render_gres -e hpc_gres_render_dir=DIR``: the example,
one that sets no cluster-wide variable at all (what ``default(none)`` broke before ansible-core 2.19), one with
every cluster-wide option, Jinja in group_vars and shards, and one that must be refused with the same message.
"""
import os
import subprocess

import pytest

import testpaths
from render_helpers import ROOT, write_inventory

CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
NODE = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 16, "hpc_gres_node_threads_per_core": 2}
HOSTS = {"all": {"children": {
    "slurmctld": {"hosts": {"ctl1.lab": None}},
    "slurmd": {"children": {"gpu": {"hosts": {"g[01:04].lab": None}}, "cpu": {"hosts": {"c1.lab": None}}}},
}}}


def installations():
    """{label: (version tuple, bin dir)} from SLURM_GRES_COMPAT_BINS."""
    spec = os.environ.get("SLURM_GRES_COMPAT_BINS", "").split()
    if not spec:
        reason = "SLURM_GRES_COMPAT_BINS is not set: run scripts/compat.sh"
        if CI:
            pytest.fail("CI=true and " + reason)
        pytest.skip(reason)
    found = {}
    for item in spec:
        label, _sep, bin_dir = item.partition("=")
        out = subprocess.run([os.path.join(bin_dir, "python"), "-c",
                              "from ansible.release import __version__; print(__version__)"],
                             check=True, stdout=subprocess.PIPE, text=True).stdout.strip()
        found[label] = (tuple(int(p) for p in out.split(".")[:3] if p.isdigit()), bin_dir, out)
    return found


def defaults_only(path):
    return write_inventory(path, HOSTS, group_vars={
        "gpu": dict(NODE, hpc_gres_gpus=[{"index": i, "type": "l40s", "cores": "0-15" if i < 2 else "16-31"}
                                         for i in range(4)])})


def every_option(path):
    gpu = dict(NODE, hpc_gres_node_real_memory="{{ 250 * 1024 }}", hpc_gres_node_features=["l40s", "ib"],
               hpc_gres_node_weight=10,
               hpc_gres_gpus=[{"index": i, "type": "l40s", "cores": "{{ '0-15' if %d < 2 else '16-31' }}" % i,
                               "shards": 4} for i in range(4)])
    return write_inventory(path, HOSTS, group_vars={
        "all": {"hpc_gres_cluster_name": "same", "hpc_gres_autodetect": "nvml",
                "hpc_gres_slurm_conf_options": {"SchedulerType": "sched/backfill", "MaxJobCount": 20000, "ReturnToService": None,
                                                "PrologFlags": ["Alloc", "Contain"]},
                "hpc_gres_cgroup_conf_options": {"ConstrainRAMSpace": True, "AllowedRAMSpace": "98.5"},
                "hpc_gres_partitions": [{"name": "gpu", "group": "gpu", "default": True,
                                         "options": {"MaxTime": "1-00:00:00"}},
                                        {"name": "debug", "nodes": ["g01", "c1"], "options": {"MaxTime": 30}}]},
        "gpu": gpu}, host_vars={"g04.lab": dict(gpu, hpc_gres_gpus=gpu["hpc_gres_gpus"][:2])})


def refused(path):
    bad = [{"index": 0, "type": "l40s"}, {"index": 0, "type": "l40s"}]
    return write_inventory(path, HOSTS, group_vars={"gpu": NODE},
                           host_vars={"g02.lab": dict(NODE, hpc_gres_gpus=bad)})


INVENTORIES = {
    "example": lambda path: os.path.join(ROOT, "inventories", "example", "hosts.yml"),
    "defaults-only": defaults_only,
    "every-option": every_option,
}


def render(bin_dir, inventory, dest):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(bin_dir, "ansible-playbook"), "hpc.slurm_gres.render_gres", "-i", inventory,
                           "-e", "hpc_gres_render_dir=%s" % dest], cwd=ROOT, env=env, check=False,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return proc.returncode, " ".join(proc.stdout.split())


@pytest.mark.parametrize("name", sorted(INVENTORIES))
def test_every_version_renders_the_bytes_the_newest_renders(tmp_path, name):
    found = installations()
    inventory = INVENTORIES[name](tmp_path / "inventory")
    trees = {}
    for label, (_version, bin_dir, full) in sorted(found.items()):
        rc, out = render(bin_dir, inventory, tmp_path / label)
        assert rc == 0, "ansible-core %s (%s) failed to render %s: %s" % (full, label, name, out[-3000:])
        trees[label] = testpaths.read_tree(tmp_path / label)
    newest = max(found, key=lambda label: found[label][0])
    assert "slurm.conf" in trees[newest] and any(path.endswith("/gres.conf") for path in trees[newest])
    for label, files in trees.items():
        assert sorted(files) == sorted(trees[newest]), (label, newest)
        for path, data in files.items():
            assert data == trees[newest][path], "%s: ansible-core %s and %s (newest) differ:\n%s\n---\n%s" % (
                path, found[label][2], found[newest][2], data.decode(), trees[newest][path].decode())


def test_every_version_refuses_a_bad_inventory_with_the_same_message(tmp_path):
    found = installations()
    inventory = refused(tmp_path / "inventory")
    for label, (_version, bin_dir, full) in sorted(found.items()):
        rc, out = render(bin_dir, inventory, tmp_path / label)
        assert rc != 0, "ansible-core %s accepted a duplicate GPU index" % full
        # printed once, with the file that holds the value, whatever the version prints around a failure
        problem = "host g02.lab: hpc_gres_gpus[1].index: expected unique GPU index, found 0 (also used by " \
                  "hpc_gres_gpus[0]); defined in %s:" % (tmp_path / "inventory" / "host_vars" / "g02.lab.yml")
        assert out.count(problem) == 1, (full, out[-2000:])
        assert not (tmp_path / label).exists()
