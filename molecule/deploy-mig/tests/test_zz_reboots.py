"""Reboots with the boot order the deploy installed (docs/boot.md). Named to run last: it restarts containers.

A container killed (SIGKILL, no clean shutdown: molecule/shared/destroy.yml says why) and started again is a node
that lost power: systemd boots, the emulated GPUs lose their MIG GPU and compute instances and keep MIG mode
(prepare's slurm-gres-emu-power-on.service, tests/emulator/emu_boot.py), the emulated driver loads, and
hpc-gres-boot.service runs before slurmd.

- The MIG node, three times: the inventory's layout recreated with the same GPU instances (ids, placements, so
  the same MultipleFiles caps), slurmd started after the boot order, the node registered again IDLE with the same
  Gres, no drain, no reason, and slurmctld never logged a count reported lower.
- The plain node booted with its driver not loaded: slurmd held back (never started), the node drained with
  ``hpc-gres-boot: driver: ...``, no wrong count registered; the driver loaded later: the retry timer starts slurmd
  (and the boot order with it) and the node is back IDLE with its Gres, the hold released.
"""
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
import slurm_checks  # noqa: E402

MIG_NODE = "dmig-gpu01"
PLAIN_NODE = "dmig-gpu02"
PODMAN = os.environ.get("MOLECULE_PODMAN_EXECUTABLE") or "podman"
EMU = "/usr/local/lib/slurm-gres-emu/emu_boot.py"
PROFILE = "/etc/slurm-gres-emu/nvidia-smi-profile.json"
ROOT = "/var/lib/slurm-gres-emu/root"
LATE = "/etc/slurm-gres-emu/driver-late"
LOWER = "count reported lower"


def podman(*argv):
    proc = subprocess.run([PODMAN] + list(argv), capture_output=True, text=True, timeout=120, check=False)
    assert proc.returncode == 0, "podman %s: %s%s" % (" ".join(argv), proc.stdout, proc.stderr)
    return proc.stdout.strip()


def power_cycle(name):
    """Kill the container and start it again with its address (a real node keeps its IP over a reboot; slurmctld
    keeps the address it resolved at its start); returns when the container's systemd has finished booting."""
    network, address = podman("inspect", "-f", "{{range $k, $v := .NetworkSettings.Networks}}{{$k}} "
                                               "{{$v.IPAddress}}{{end}}", name).split()
    podman("kill", "--signal", "KILL", name)
    # The killed container's network teardown (conmon's `podman container cleanup`) is asynchronous: until it has
    # run, the address is still allocated to the container and `start` fails with an IPAM error. Wait for the
    # exit and run the cleanup here (a no-op once done); under load, try the start again after it.
    podman("wait", name)
    subprocess.run([PODMAN, "container", "cleanup", name], capture_output=True, timeout=120, check=False)
    podman("network", "disconnect", network, name)
    podman("network", "connect", "--ip", address, network, name)
    for attempt in range(5):
        proc = subprocess.run([PODMAN, "start", name], capture_output=True, text=True, timeout=120, check=False)
        if proc.returncode == 0 or "IPAM error" not in proc.stderr or attempt == 4:
            break
        subprocess.run([PODMAN, "container", "cleanup", name], capture_output=True, timeout=120, check=False)
        time.sleep(2)
    assert proc.returncode == 0, "podman start %s: %s%s" % (name, proc.stdout, proc.stderr)
    host = slurm_checks.container(name)
    deadline = time.monotonic() + 120
    while True:
        state = host.run("systemctl is-system-running").stdout.strip()
        if state in ("running", "degraded"):
            return host
        assert time.monotonic() < deadline, "%s did not finish booting: %s" % (name, state)
        time.sleep(1)


def registered_again(ctl, node, since, timeout=120):
    """The node's record once slurmd registered after ``since`` (its SlurmdStartTime before the reboot) and it is
    IDLE without DRAIN/DOWN flags; slurmctld's view before that is the node from before the reboot."""
    deadline = time.monotonic() + timeout
    while True:
        info = slurm_checks.show_node(ctl, node)
        if info.get("SlurmdStartTime") != since:
            return slurm_checks.wait_for_node(ctl, node, timeout=max(deadline - time.monotonic(), 1))
        assert time.monotonic() < deadline, "%s never registered again: State=%s Reason=%s" % (
            node, info.get("State"), info.get("Reason"))
        time.sleep(1)


def lower_count_lines(ctl):
    return int(ctl.run("grep -c '%s' /var/log/slurm/slurmctld.log || true" % LOWER).stdout.strip() or 0)


def monotonic_us(host, unit, prop):
    return int(host.check_output("systemctl show -p %s --value %s", prop, unit) or 0)


def test_the_mig_node_comes_back_with_its_layout_every_time():
    ctl = slurm_checks.container("dmig-ctl")
    gpu = slurm_checks.container(MIG_NODE)
    before = slurm_checks.wait_for_node(ctl, MIG_NODE, timeout=60)
    gis = gpu.check_output("nvidia-smi mig -lgi")
    gres_conf = gpu.file("/etc/slurm/gres.conf").content_string
    lower = lower_count_lines(ctl)
    since = before["SlurmdStartTime"]
    for cycle in range(1, 4):
        start = time.monotonic()
        gpu = power_cycle(MIG_NODE)
        after = registered_again(ctl, MIG_NODE, since)
        took = time.monotonic() - start
        since = after["SlurmdStartTime"]
        journal = gpu.check_output("journalctl -b -o cat -u slurm-gres-emu-power-on -u hpc-gres-boot")
        print("reboot %d: %s State=%s Gres=%s, %.0f s from the kill\n%s" % (
            cycle, MIG_NODE, after["State"], after["Gres"], took, journal))
        assert "4 MIG GPU instance(s) gone" in journal, journal
        assert "mig: GPU 0 rebuild: 3g.40gb, 2g.20gb, 1g.10gb, 1g.10gb" in journal, journal
        assert slurm_checks.gres_counts(after["Gres"]) == slurm_checks.gres_counts(before["Gres"])
        assert after.get("Reason") in (None, "", "(null)"), after
        assert gpu.check_output("nvidia-smi mig -lgi") == gis
        assert gpu.file("/etc/slurm/gres.conf").content_string == gres_conf
        # slurmd started only once the boot order had finished
        assert gpu.check_output("systemctl is-active hpc-gres-boot") == "active"
        assert monotonic_us(gpu, "slurmd", "ExecMainStartTimestampMonotonic") >= \
            monotonic_us(gpu, "hpc-gres-boot", "ActiveEnterTimestampMonotonic") > 0
    assert lower_count_lines(ctl) == lower
    assert slurm_checks.srun_env(ctl, MIG_NODE, "gpu:1g.10gb:1") is not None


def test_a_node_whose_driver_is_not_ready_is_held_back_then_comes_back():
    ctl = slurm_checks.container("dmig-ctl")
    before = slurm_checks.wait_for_node(ctl, PLAIN_NODE, timeout=60)
    lower = lower_count_lines(ctl)
    slurm_checks.container(PLAIN_NODE).check_output("touch %s", LATE)
    gpu = power_cycle(PLAIN_NODE)
    start = time.monotonic()
    while gpu.run("systemctl is-failed hpc-gres-boot").stdout.strip() != "failed":
        assert time.monotonic() - start < 90, gpu.run("systemctl status hpc-gres-boot").stdout
        time.sleep(2)
    held = slurm_checks.show_node(ctl, PLAIN_NODE)
    status = gpu.run("systemctl status --no-pager -n 20 hpc-gres-boot").stdout
    print("held: State=%s Reason=%s\n%s" % (held.get("State"), held.get("Reason"), status))
    assert gpu.run("systemctl is-active slurmd").stdout.strip() != "active"
    assert "DRAIN" in held["State"] and "INVALID_REG" not in held["State"], held
    assert held["Reason"].startswith("hpc-gres-boot: driver: /var/lib/slurm-gres-emu/root/dev/nvidiactl does not "
                                     "exist"), held
    assert lower_count_lines(ctl) == lower
    # the driver loads late (a DKMS build, a module loaded by hand): the retry timer brings slurmd up
    gpu.check_output("rm -f %s && python3 %s load-driver %s --dev-root / --root %s", LATE, EMU, PROFILE, ROOT)
    loaded = time.monotonic()
    after = registered_again(ctl, PLAIN_NODE, before["SlurmdStartTime"], timeout=120)
    print("back %.0f s after the driver loaded: State=%s Gres=%s Reason=%s" % (
        time.monotonic() - loaded, after["State"], after["Gres"], after.get("Reason")))
    journal = gpu.run("journalctl -b -o short-monotonic --no-pager -u hpc-gres-boot -u hpc-gres-boot-retry "
                      "-u slurmd | tail -40").stdout
    log = ctl.run("grep -a %s /var/log/slurm/slurmctld.log | tail -20" % PLAIN_NODE).stdout
    print(journal + "\n" + log)
    assert slurm_checks.gres_counts(after["Gres"]) == slurm_checks.gres_counts(before["Gres"])
    # resumed, not drained (wait_for_node); Slurm 24.11 and later keep the text of a resumed drain in the record
    # (sinfo -R no longer lists the node), 22.05 clears it
    assert after.get("Reason") in (None, "", "(null)") or after["Reason"].startswith(held["Reason"].split(" [")[0])
    assert lower_count_lines(ctl) == lower
    assert slurm_checks.srun_env(ctl, PLAIN_NODE, "gpu:h100:2") == "0,1"
