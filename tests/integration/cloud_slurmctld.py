"""A real slurmctld that runs a rendered slurm.conf with every node powered down (``State=CLOUD``).

Such nodes never have to register, so no slurmd is needed, yet slurmctld schedules onto them: ``sbatch
--test-only`` then answers from the configuration alone, ``Job N to start at ... on nodes X`` for a request some
node can satisfy and ``Requested node configuration is not available`` for one none can (seen on 22.05 with a
rendered slurm.conf of 24 nodes; without State=CLOUD every request is refused while nodes are unregistered).

For cloud nodes slurmctld reads gres.conf itself. Shards need their File lines there (without them it stops
with ``SHARING configuration lacks "File" specification``), so with ``shard`` in GresTypes the rendered
gres.conf files are given to it, their device paths moved to private device nodes. Without shards it gets no
gres.conf and takes the counts from slurm.conf, which keeps MIG types (whose lines are completed on the node)
at their declared counts.
"""
import os
import re
import socket
import subprocess

from slurm_loopback import LoopbackSlurm

# slurm.conf keys replaced by this private instance's own (ports, paths, no slurmdbd, no cgroup setup)
_REPLACED = {"slurmctldhost", "controlmachine", "slurmctldport", "slurmdport", "statesavelocation",
             "slurmdspooldir", "slurmctldpidfile", "slurmdpidfile", "slurmctldlogfile", "slurmdlogfile",
             "slurmuser", "accountingstoragetype", "accountingstoragehost", "accountingstorageport",
             "accountingstoragetres", "jobacctgathertype", "proctracktype", "taskplugin", "authinfo",
             "resumeprogram", "suspendprogram", "suspendtime"}
_OWN = """\
SlurmctldHost={host}(127.0.0.1)
AuthInfo=socket={dir}/munge/sock
SlurmUser=root
SlurmctldPort={ctld_port}
SlurmdPort={slurmd_port}
StateSaveLocation={dir}/state
SlurmdSpoolDir={dir}/spool
SlurmctldPidFile={dir}/slurmctld.pid
SlurmctldLogFile={dir}/slurmctld.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ResumeProgram=/bin/true
SuspendProgram=/bin/true
SuspendTime=INFINITE
"""


class CloudSlurmctld(LoopbackSlurm):
    """slurmctld alone, judging requests against the rendered files ``{relative path: text}``."""

    def write_rendered(self, files):
        lines = []
        shards = False
        for line in files["slurm.conf"].splitlines():
            key = line.split("=", 1)[0].strip().lower()
            if key in _REPLACED:
                continue
            if key == "grestypes" and "shard" in line.lower():
                shards = True
            if key == "nodename" and not line.lower().startswith("nodename=default"):
                line += " State=CLOUD"
            lines.append(line)
        lines.append(_OWN.format(host=socket.gethostname(), dir=self.dir, ctld_port=self.ports[0],
                                 slurmd_port=self.ports[1]))
        with open(self.conf, "w") as handle:
            handle.write("\n".join(lines))
        gres = "".join(text for path, text in sorted(files.items()) if path.endswith("/gres.conf")) if shards else ""
        minors = {int(m) for m in re.findall(r"/dev/nvidia(\d+)", gres)}
        for minor in sorted(minors):
            path = os.path.join(self.dir, "dev", "nvidia%d" % minor)
            if not os.path.exists(path):
                subprocess.run(["mknod", path, "c", "195", str(minor)], check=True)
        with open(os.path.join(self.dir, "gres.conf"), "w") as handle:
            handle.write(re.sub(r"/dev/nvidia(?=\d|\[)", self.dir + "/dev/nvidia", gres))

    def test_only(self, options):
        """``sbatch --test-only OPTIONS --wrap=true``: (accepted, slurm's answer)."""
        proc = subprocess.run("sbatch --test-only %s --wrap=true" % options, shell=True, env=self.env,
                              stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, check=False)
        answer = proc.stdout.strip()
        return proc.returncode == 0 and " to start at " in answer, answer
