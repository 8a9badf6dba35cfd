# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Test-only connection: the molecule containers reached through nsenter instead of `podman exec`.

Why: containers.podman.podman starts `podman exec` (podman, conmon, runc) three times per task and cannot
pipeline (no stdin). On the 2-core test machines that made Ansible's transport most of `make test`'s molecule
time. This plugin enters the running container's namespaces directly (`nsenter -t PID -a`, util-linux, root
only: rootful podman, as molecule runs here) with pipelining, so a task is one short-lived process. Files are
still copied through the container's `podman mount` point by the bundled plugin. Measured on the same 25-task
playbook: bundled 42 s, this 12 s (docs in molecule/README.md).

Like `podman exec`, the command joins the container's cgroup in every hierarchy before it enters the namespaces
(Slurm 26.05's `slurmd -G` fails with "Cannot find slurmd memory cgroup" outside it). What differs: it keeps the
host's capability set and no seccomp profile, as root on a real node has. Used by the scenarios through
.config/molecule/config.yml (provisioner.connection_options); testinfra keeps its own podman backend.
"""
from __future__ import annotations

DOCUMENTATION = r"""
name: podman_nsenter
short_description: Run tasks in a rootful podman container through nsenter, pipelined (molecule tests only)
description:
  - Run tasks in a rootful podman container through nsenter, pipelined (molecule tests only).
options:
  remote_addr:
    description: The container name or id.
    default: inventory_hostname
    vars:
      - name: inventory_hostname
      - name: ansible_host
      - name: ansible_podman_host
  remote_user:
    description: Not supported (tasks run as root); kept for the bundled plugin's code paths.
    vars:
      - name: ansible_user
  podman_executable:
    description: The podman binary, for mount and inspect.
    default: podman
    vars:
      - name: ansible_podman_executable
  podman_extra_args:
    description: Extra arguments for podman.
    default: ''
    vars:
      - name: ansible_podman_extra_args
  pipelining:
    description: Send modules on stdin instead of copying them (one process per task).
    default: true
    type: boolean
    vars:
      - name: ansible_pipelining
"""

import os
import shlex
import subprocess

from ansible.errors import AnsibleConnectionFailure, AnsibleError
from ansible.module_utils.common.text.converters import to_native, to_text
from ansible_collections.containers.podman.plugins.connection.podman import Connection as PodmanConnection

# podman exec's environment for root in these images (Debian); nsenter would otherwise pass the controller's.
CONTAINER_ENV = ("PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "LANG=C.UTF-8")


def cgroup_mounts(mountinfo="/proc/self/mountinfo"):
    """[(set of controllers or {"name=systemd"}, or None for cgroup2, mount point)] of this host."""
    mounts = []
    with open(mountinfo) as handle:
        for line in handle:
            left, sep, right = line.partition(" - ")
            if not sep:
                continue
            fstype, dummy_source, options = (right.split() + ["", "", ""])[:3]
            if fstype == "cgroup2":
                mounts.append((None, left.split()[4]))
            elif fstype == "cgroup":
                mounts.append((set(options.split(",")), left.split()[4]))
    return mounts


def container_cgroup_procs(pid, cgroup_path):
    """The cgroup.procs files of the container's cgroup (podman's CgroupPath) in every hierarchy its PID 1 is in."""
    mounts = cgroup_mounts()
    files = []
    with open("/proc/%s/cgroup" % pid) as handle:
        for line in handle:
            _hid, controllers, path = line.rstrip("\n").split(":", 2)
            if not path.startswith(cgroup_path):
                continue  # a hierarchy the container does not have its own cgroup in
            wanted = set(controllers.split(",")) if controllers else None
            for have, point in mounts:
                if (have is None and wanted is None) or (have is not None and wanted and wanted <= have):
                    files.append(os.path.join(point, cgroup_path.lstrip("/"), "cgroup.procs"))
                    break
    return files


class Connection(PodmanConnection):
    transport = "podman_nsenter"
    has_pipelining = True

    def _connect(self):
        super()._connect()
        rc, out, err = self._podman(["inspect", "--format", "{{.State.Pid}} {{.State.CgroupPath}}"])
        fields = to_text(out).split()
        if rc != 0 or len(fields) != 2 or not fields[0].isdigit() or fields[0] == "0":
            raise AnsibleConnectionFailure("container %s is not running (podman inspect: rc %s, %s)"
                                           % (self._container_id, rc, to_text(err).strip()))
        self._pid, cgroup = fields
        self._cgroup_procs = container_cgroup_procs(self._pid, cgroup)

    def _join_container_cgroup(self):
        """preexec_fn: what `podman exec` does, the new process in the container's cgroup of each hierarchy."""
        for procs in self._cgroup_procs:
            with open(procs, "w") as handle:
                handle.write(str(os.getpid()))

    def exec_command(self, cmd, in_data=None, sudoable=False):
        if not self._connected:
            self._connect()
        if self.user and self.user != "root":
            raise AnsibleError("podman_nsenter runs tasks as root only, not as %s" % self.user)
        argv = ["nsenter", "--target", self._pid, "--all", "--", "env", "-i"] + list(CONTAINER_ENV)
        argv += shlex.split(to_native(cmd, errors="surrogate_or_strict"))
        proc = subprocess.run(argv, input=in_data, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False,
                              preexec_fn=self._join_container_cgroup)
        return proc.returncode, proc.stdout, proc.stderr
