"""An emulated GPU node on disk for module and playbook tests.

It is built from a real recorded ``nvidia-smi topo -m`` (tests/fixtures) replayed by the emulated nvidia-smi,
a fake sysfs/procfs tree for a CPU layout consistent with that recording (tests/emulator/fake_sysfs.py), and
real character device nodes (major 195) made with mknod in the node's own directory, so ``dev_root`` points
there instead of at /dev.
"""
import json
import os
import stat
import subprocess
import sys

import pytest
import yaml

import testpaths

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
EMULATOR = os.path.join(ROOT, "tests", "emulator")
NVIDIA_SMI = os.path.join(EMULATOR, "nvidia-smi")
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
ANSIBLE = testpaths.ANSIBLE
ANSIBLE_PLAYBOOK = testpaths.ANSIBLE_PLAYBOOK

sys.path.insert(0, EMULATOR)
import fake_sysfs  # noqa: E402  (test helper beside the emulator)

# HGX A100 8-GPU board as recorded in tests/fixtures/nvidia-smi/topo/a100-8gpu-4nic-2s-ht-confluence.txt:
# 2 sockets x 32 cores x 2 threads, GPUs 0-3 local to cpus 0-31,64-95, GPUs 4-7 to 32-63,96-127.
HGX_TOPO = "nvidia-smi/topo/a100-8gpu-4nic-2s-ht-confluence.txt"
HGX_BUS = ("00000000:07:00.0", "00000000:0F:00.0", "00000000:47:00.0", "00000000:4E:00.0",
           "00000000:87:00.0", "00000000:90:00.0", "00000000:B7:00.0", "00000000:BD:00.0")
HGX_NAME = "NVIDIA A100-SXM4-80GB"  # as tests/fixtures/nvidia-smi/query/a100sxm80-4gpu-... prints it
HGX_LAYOUT = (2, 32, 2)


def fail_or_skip(reason):
    """Under CI=true a missing tool is a failure, never a skip."""
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(reason)
    pytest.skip(reason)


def local_slurm_release():
    """The release of this machine's slurmd and slurmctld (``"22.05"``): what a deploy over the local connection
    reads with ``slurmd -V`` / ``slurmctld -V``, so the inventory's ``hpc_gres_slurm_version`` must name it."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import release_of

    found = set()
    for daemon in ("slurmd", "slurmctld"):
        try:
            proc = subprocess.run([daemon, "-V"], capture_output=True, text=True, timeout=60, check=False)
        except OSError as exc:
            fail_or_skip("%s -V: %s (run `make system-deps` as root)" % (daemon, exc))
        if proc.returncode != 0:
            fail_or_skip("%s -V: exit %d: %s" % (daemon, proc.returncode, proc.stderr.strip()))
        found.add(release_of(proc.stdout))
    if len(found) != 1:
        pytest.fail("slurmd and slurmctld of this machine are different releases: %s" % ", ".join(sorted(found)))
    return found.pop()


def can_mknod(directory):
    probe = os.path.join(directory, ".mknod-probe")
    try:
        os.mknod(probe, 0o600 | stat.S_IFCHR, os.makedev(195, 255))
        os.stat(probe)
    except OSError as exc:
        return str(exc)
    finally:
        if os.path.lexists(probe):
            os.unlink(probe)
    return None


class Node(object):
    """Paths of one emulated node; ``lose(i)`` / ``remove_device(i)`` break it the way hardware breaks."""

    def __init__(self, base, name="gpu-a01", topo=HGX_TOPO, bus=HGX_BUS, gpu_name=HGX_NAME, layout=HGX_LAYOUT,
                 minors=None):
        self.base = str(base)
        self.name = name
        self.root = os.path.join(self.base, "root")
        self.dev_root = os.path.join(self.base, "devroot")
        self.profile_path = os.path.join(self.base, "profile.json")
        os.makedirs(self.base, exist_ok=True)
        reason = can_mknod(self.base)
        if reason:
            fail_or_skip("cannot make device nodes in %s (needs root and a filesystem without nodev): %s"
                         % (self.base, reason))
        if not os.access(NVIDIA_SMI, os.X_OK):
            fail_or_skip("emulated nvidia-smi missing at %s" % NVIDIA_SMI)
        minors = minors or {}
        with open(os.path.join(FIXTURES, topo)) as handle:
            topo_text = handle.read()
        affinity = _affinities(topo_text)
        self.gpus = []
        for i, bus_id in enumerate(bus):
            self.gpus.append({
                "uuid": "GPU-%08x-5807-0dbe-62e6-%012x" % (0xa1000000 + i, i), "name": gpu_name,
                "pci_bus_id": bus_id, "minor": minors.get(i, i), "mig_mode": "Disabled",
                "memory_total_mib": 81920, "memory_used_mib": 4,
                "cpu_affinity": affinity[i], "numa_affinity": "0" if i < len(bus) // 2 else "1"})
        self.profile = {"gpus": self.gpus, "processes": [],
                        "topo": {"text_file": os.path.relpath(os.path.join(FIXTURES, topo), self.base)}}
        self.save()
        self.layout = fake_sysfs.layout(*layout)
        fake_sysfs.build(self.root, self.layout, gpus=[
            {"pci_bus_id": g["pci_bus_id"], "minor": g["minor"], "name": g["name"], "uuid": g["uuid"]}
            for g in self.gpus])
        os.makedirs(os.path.join(self.dev_root, "dev"))
        for gpu in self.gpus:
            self.make_device(gpu["minor"])

    def save(self):
        with open(self.profile_path, "w") as handle:
            json.dump(self.profile, handle, indent=1)

    def make_device(self, minor, major=195):
        os.mknod(os.path.join(self.dev_root, "dev", "nvidia%d" % minor), 0o666 | stat.S_IFCHR,
                 os.makedev(major, minor))

    def remove_device(self, minor):
        os.unlink(os.path.join(self.dev_root, "dev", "nvidia%d" % minor))

    def lose(self, index, how="missing"):
        """The GPU falls off the bus (``missing``) or stops answering (``unreachable``)."""
        self.gpus[index]["lost"] = how
        self.save()

    @property
    def env(self):
        env = dict(os.environ)
        env["NVSMI_EMU_PROFILE"] = self.profile_path
        env["ANSIBLE_CONFIG"] = os.path.join(ROOT, "ansible.cfg")
        return env


def _affinities(topo_text):
    """The CPU Affinity column of each GPU row of a recorded topo -m (tab-separated recordings only)."""
    lines = topo_text.split("# ---\n", 1)[-1].splitlines()
    header = lines[0].split("\t")
    col = header.index("CPU Affinity")
    out = []
    for line in lines[1:]:
        if not line.startswith("GPU"):
            break
        out.append(line.split("\t")[col])
    return out


def run_module(node, module, args, check=False, extra_env=None, extra_args=()):
    """Run ``ansible localhost -m MODULE -a JSON [extra_args]`` and return (rc, result dict)."""
    env = node.env
    env.update({"ANSIBLE_LOAD_CALLBACK_PLUGINS": "1", "ANSIBLE_STDOUT_CALLBACK": "json"})
    env.update(extra_env or {})
    argv = [ANSIBLE, "localhost", "-m", module, "-a", json.dumps(args)] + list(extra_args)
    if check:
        argv.append("--check")
    proc = subprocess.run(argv, cwd=ROOT, env=env, check=False, capture_output=True, text=True, timeout=300)
    try:
        data = json.loads(proc.stdout)
        result = data["plays"][0]["tasks"][0]["hosts"]["localhost"]
    except (ValueError, KeyError, IndexError):
        raise AssertionError("no JSON result (rc %d)\nstdout:\n%s\nstderr:\n%s" % (proc.returncode, proc.stdout,
                                                                                   proc.stderr))
    return proc.returncode, result


def run_playbook_json(inventory, playbook, *extra, env=None):
    """Run a playbook with the json callback: (rc, {task name: {host: result}}, raw stdout+stderr); ``env``: more
    environment, a None value removing that variable."""
    run_env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_STDOUT_CALLBACK="json",
                   ANSIBLE_NOCOLOR="1")
    run_env.update(env or {})
    run_env = {key: value for key, value in run_env.items() if value is not None}
    argv = [ANSIBLE_PLAYBOOK, "-i", inventory, os.path.join(ROOT, "playbooks", playbook)] + list(extra)
    proc = subprocess.run(argv, cwd=ROOT, env=run_env, check=False, capture_output=True, text=True, timeout=600)
    try:
        data = json.loads(proc.stdout)
    except ValueError:
        raise AssertionError("no JSON from %s (rc %d)\nstdout:\n%s\nstderr:\n%s"
                             % (playbook, proc.returncode, proc.stdout, proc.stderr))
    tasks = {}
    for play in data["plays"]:
        for task in play["tasks"]:
            name = task["task"]["name"].split(" : ", 1)[-1]  # role tasks: "role : name"
            tasks.setdefault(name, {}).update(task["hosts"])
    return proc.returncode, tasks, proc.stdout + proc.stderr


def flat(text):
    """Whitespace-normalized text (the default callback wraps long strings)."""
    return " ".join(str(text).split())


PYTHON = testpaths.PYTHON


def node_nvidia_smi(node):
    """A per-node nvidia-smi: the emulator with this node's profile (each inventory host needs its own)."""
    path = os.path.join(node.base, "nvidia-smi")
    with open(path, "w") as handle:
        handle.write("#!/bin/sh\nNVSMI_EMU_PROFILE=%s exec %s \"$@\"\n" % (node.profile_path, NVIDIA_SMI))
    os.chmod(path, 0o755)
    return path


def write_inventory(directory, nodes, host_vars=None, cluster_vars=None):
    """A local-connection inventory: ctl01 in slurmctld, the emulated nodes in slurmd."""
    hosts = {node.name: dict((host_vars or {}).get(node.name, {})) for node in nodes}
    all_vars = {"ansible_connection": "local", "ansible_python_interpreter": PYTHON}
    all_vars.update(cluster_vars or {})
    inventory = {"all": {"vars": all_vars,
                         "children": {"slurmctld": {"hosts": {"ctl01": None}}, "slurmd": {"hosts": hosts}}}}
    path = os.path.join(str(directory), "hosts.yml")
    with open(path, "w") as handle:
        handle.write(yaml.safe_dump(inventory))
    return path


def apply_mig_layout(node, layouts):
    """Give the emulated GPUs a MIG layout the way the runbook does (mig_layout's logic, real emulator calls)."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.apply import apply_layouts
    env = dict(node.env, NVSMI_EMU_ROOT=node.root, NVSMI_EMU_DEV_ROOT=node.dev_root, LC_ALL="C")

    def run(argv):
        proc = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=60, check=False)
        return proc.returncode, proc.stdout, proc.stderr
    return apply_layouts(run, node.name, layouts, sysfs_root=node.root, nvidia_smi_path=node_nvidia_smi(node))
