"""What `scontrol reboot` does to a drained node on a real slurmctld and slurmd (loopback), which the maintenance
playbook's reboot through slurmctld relies on (roles/hpc_gres_maintenance/tasks/reboot.yml):

- without ASAP and nextstate the drain and its reason survive the reboot, with " : reboot issued" appended, so the
  readiness check comes before the node is back in service, and slurm_node resumes that drain as its own;
- ASAP nextstate=RESUME would put the node back in service by itself as soon as slurmd registers.

The RebootProgram here restarts slurmd in a new time namespace whose boot clock starts near zero: slurmctld judges a
reboot by the uptime slurmd reports (sysinfo(), which follows the time namespace), so this is a reboot to it.
"""
import os
import re
import subprocess
import tempfile
import time

import pytest

import slurm_loopback
from slurm_loopback import NODE
from test_slurm_node_module import run_module

REASON = "GPU maintenance"
REBOOT = """#!/bin/sh
# RebootProgram of the test: slurmd again (restart.sh, in the background: slurmd waits for this program)
echo "$(date +%s) $*" >> {dir}/reboots
setsid {dir}/restart.sh > {dir}/reboot.log 2>&1 < /dev/null &
"""
RESTART = """#!/bin/sh
# slurmctld counts the reboot done only when the boot time slurmd reports is after the request (whole seconds); the
# new namespace's boot clock may start up to a second before its creation, and sysinfo() truncates the uptime, so the
# boot time slurmd reports may be 2 s before this program runs: wait 3 s before the "reboot".
sleep 3
kill $(cat {dir}/slurmd.pid)
while kill -0 $(cat {dir}/slurmd.pid) 2>/dev/null; do sleep 0.1; done
# the machine's uptime: this slurmd may run in such a namespace already (its boottime offset is negative)
up=$(( $(cut -d. -f1 /proc/uptime) - $(awk '$1 == "boottime" {{print $2}}' /proc/self/timens_offsets) ))
HWLOC_SYNTHETIC="{shape}" SLURM_CONF={conf} exec unshare --time --fork --boottime -$up {slurmd} -f {conf} -N {node}
"""


@pytest.fixture(scope="module")
def cluster():
    slurm_loopback.require("a loopback Slurm cannot run")
    probe = subprocess.run(["unshare", "--time", "--fork", "--boottime", "-1", "true"], capture_output=True, check=False)
    if probe.returncode != 0:
        why = "no time namespaces here (unshare --time: %s)" % probe.stderr.decode().strip()
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true and " + why)
        pytest.skip(why)
    with tempfile.TemporaryDirectory(prefix="slurm-reboot-") as directory:
        slurm = slurm_loopback.LoopbackSlurm(directory)
        try:
            slurm.write_slurm_conf("gpu:a100:2,gpu:h100:2")
            values = dict(dir=directory, conf=slurm.conf, node=NODE, slurmd=slurm_loopback._sbin("slurmd"),
                          shape="package:%d core:%d pu:%d" % slurm_loopback.SHAPE)
            for name, text in (("reboot.sh", REBOOT), ("restart.sh", RESTART)):
                with open(os.path.join(directory, name), "w") as handle:
                    handle.write(text.format(**values))
                os.chmod(os.path.join(directory, name), 0o755)
            script = os.path.join(directory, "reboot.sh")
            with open(slurm.conf, "a") as handle:
                handle.write("RebootProgram=%s\nResumeTimeout=60\n" % script)
            slurm.write_gres_conf(a100=2)
            slurm.start_munge()
            slurm.start_slurmctld()
            slurm.start_slurmd()
            slurm.wait_state("State=IDLE ", "gpu:a100:2")
            yield slurm
        finally:
            slurm.stop()


def start_time(line):
    return re.search(r"SlurmdStartTime=(\S+)", line).group(1)


def reboot(cluster, *options):
    """Drain the node with the maintenance's reason, `scontrol reboot OPTIONS`, wait until slurmd registered again;
    returns every node line seen meanwhile."""
    before = cluster.node_line()
    assert "State=IDLE " in before, before
    time.sleep(1)  # the next SlurmdStartTime must differ (seconds)
    assert cluster.scontrol("update", "NodeName=" + NODE, "State=DRAIN", "Reason=" + REASON).returncode == 0
    proc = cluster.scontrol("reboot", *(list(options) + ["reason=" + REASON, NODE]))
    assert proc.returncode == 0, proc.stderr
    seen = []
    deadline = time.monotonic() + 60
    while True:
        line = cluster.node_line()
        seen.append(line)
        if start_time(line) != start_time(before) and "REBOOT" not in line and "State=DOWN" not in line:
            return seen
        assert time.monotonic() < deadline, "no reboot seen: %s\n%s" % (line, cluster.log_tail())
        time.sleep(0.3)


def test_a_reboot_without_asap_keeps_the_drain_and_slurm_node_resumes_it_as_its_own(cluster):
    seen = reboot(cluster)
    assert any("REBOOT_ISSUED" in line for line in seen), seen
    after = seen[-1]
    assert "State=IDLE+DRAIN " in after, after
    assert "Reason=%s : reboot issued [" % REASON in after, after
    assert len(open(os.path.join(cluster.dir, "reboots")).read().splitlines()) == 1
    result = run_module("slurm_node", {"state": "resumed", "node": NODE, "reason": REASON}, cluster)
    assert result["changed"] and result["ours"], result
    cluster.wait_state("State=IDLE ")
    assert "Reason=" not in cluster.node_line()


def test_asap_with_nextstate_resume_would_return_the_node_before_any_readiness_check(cluster):
    seen = reboot(cluster, "ASAP", "nextstate=RESUME")
    after = seen[-1]
    assert "State=IDLE " in after and "DRAIN" not in after, after
