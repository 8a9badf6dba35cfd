"""A private real Slurm that runs the collection's rendered files (slurm.conf, cgroup.conf, gres.conf).

Two ways, both with the daemon settings (ports, paths, munge socket) replaced by this instance's own:

- ``cloud=True``: slurmctld alone, every node powered down (``State=CLOUD``). Such nodes never have to register,
  yet slurmctld schedules onto them, so ``sbatch --test-only`` answers from the configuration alone: ``Job N to
  start at ... on nodes X`` for a request some node can satisfy, ``Requested node configuration is not
  available`` for one none can (seen on 22.05; with nodes that are merely unregistered every request is refused).
  For cloud nodes slurmctld reads gres.conf itself; shards need their File lines there (without them it stops
  with ``SHARING configuration lacks "File" specification``; mps the same), so with ``shard`` or ``mps`` in GresTypes
  it gets the rendered gres.conf files of the nodes that have them (slurmctld refuses AutoDetect on a cloud
  node, ``Cannot use AutoDetect on cloud node``). Without shards it gets none and takes the counts from
  slurm.conf, which keeps MIG types (their lines are completed on the node) at their declared counts.
- ``cloud=False``: slurmctld plus one real slurmd for the node ``NODE`` (the model must have just that node), on
  the node's CPU shape (HWLOC_SYNTHETIC), with its rendered gres.conf on private device nodes. The rendered
  TaskPlugin and cgroup.conf are kept, so jobs run confined exactly as the cluster would run them.
"""
import os
import re
import socket
import subprocess

from slurm_loopback import DAEMON_CONF, NODE, LoopbackSlurm, _sbin

# slurm.conf keys replaced by this private instance's own (ports, paths, no slurmdbd)
_REPLACED = {"slurmctldhost", "controlmachine", "slurmctldport", "slurmdport", "statesavelocation",
             "slurmdspooldir", "slurmctldpidfile", "slurmdpidfile", "slurmctldlogfile", "slurmdlogfile",
             "slurmuser", "accountingstoragetype", "accountingstoragehost", "accountingstorageport",
             "accountingstoragetres", "jobacctgathertype", "proctracktype",
             "resumeprogram", "suspendprogram", "suspendtime"}
_CLOUD = """\
TaskPlugin=task/none
ResumeProgram=/bin/true
SuspendProgram=/bin/true
SuspendTime=INFINITE
"""


class RenderedSlurm(LoopbackSlurm):
    """Private Slurm on the rendered files ``{relative path: text}``; see the module docstring."""

    shape = None

    def write_rendered(self, files, cloud=True):
        self.cloud = cloud
        lines = []
        auth = []
        shards = False
        for line in files["slurm.conf"].splitlines():
            key = line.split("=", 1)[0].strip().lower()
            if key == "authinfo":  # keep cred_expire and the like, use this instance's munge socket
                auth = [i for i in line.split("=", 1)[1].split(",") if not i.strip().lower().startswith("socket=")]
                continue
            if key in _REPLACED or (cloud and key == "taskplugin"):
                continue
            if key == "grestypes" and re.search(r"\b(shard|mps)\b", line.lower()):
                shards = True
            if key == "nodename" and not line.lower().startswith("nodename=default"):
                line += " State=CLOUD" if cloud else " NodeAddr=127.0.0.1"
                if not cloud:
                    found = re.search(r"Sockets=(\d+) CoresPerSocket=(\d+) ThreadsPerCore=(\d+)", line)
                    self.shape = tuple(int(v) for v in found.groups())
            lines.append(line)
        lines.append(DAEMON_CONF.format(host=socket.gethostname(), dir=self.dir, ctld_port=self.ports[0],
                                        slurmd_port=self.ports[1],
                                        auth=",".join(auth + ["socket=%s/munge/sock" % self.dir])))
        if cloud:
            lines.append(_CLOUD)
        with open(self.conf, "w") as handle:
            handle.write("\n".join(lines))
        gres = "".join(text for path, text in sorted(files.items()) if path.endswith("/gres.conf") and (
            not cloud or re.search(r"Name=(shard|mps) ", text)))
        if cloud and not shards:
            gres = ""
        minors = {int(m) for m in re.findall(r"/dev/nvidia(\d+)", gres)}
        for minor in sorted(minors):
            path = self.device(minor)
            if not os.path.exists(path):
                subprocess.run(["mknod", path, "c", "195", str(minor)], check=True)
        with open(os.path.join(self.dir, "gres.conf"), "w") as handle:
            handle.write(re.sub(r"/dev/nvidia(?=\d|\[)", self.dir + "/dev/nvidia", gres))
        with open(os.path.join(self.dir, "cgroup.conf"), "w") as handle:
            handle.write(files.get("cgroup.conf", ""))

    def device(self, minor):
        return os.path.join(self.dir, "dev", "nvidia%s" % minor)

    def start_slurmd(self):
        env = dict(self.env, HWLOC_SYNTHETIC="package:%d core:%d pu:%d" % self.shape)
        subprocess.run([_sbin("slurmd"), "-f", self.conf, "-N", NODE], check=True, env=env)

    def run(self, command, timeout=120):
        """A shell command with this instance's SLURM_CONF: (rc, stdout and stderr)."""
        proc = subprocess.run(command, shell=True, env=self.env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, check=False, timeout=timeout)
        return proc.returncode, proc.stdout

    def test_only(self, options):
        """``sbatch --test-only OPTIONS --wrap=true``: (accepted, slurm's answer)."""
        rc, out = self.run("sbatch --test-only %s --wrap=true" % options)
        answer = out.strip()
        return rc == 0 and " to start at " in answer, answer
