"""mismatch, check mode: `deploy-gres.yml --check --diff` on the live cluster after a good deploy (converge).

Three inventory changes, one at a time, each first run with --check --diff and then for real:
(1) gres-gpu02's GPU type renamed (h100 -> h100_80gb): would pass; (2) a fifth GPU declared that gres-gpu02 lacks:
would be refused at verify; (3) a count going down (four GPUs -> three): slurmctld would restart first. Each check
run must leave every file, daemon, node state and staging path alone and print the diffs, the verdicts and the
restart order; the real run must then change exactly those files, restart exactly those daemons in that order, or
be refused with the same finding. The last step restores the converge inventory for test_mismatch.py.
"""

import difflib
import os
import re
import sys
import tempfile

import pytest

sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "shared", "tests"))
sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "..", "plugins", "module_utils", "common"))
import deploy_checks  # noqa: E402
import hostlist  # noqa: E402  (the vendored python-hostlist)
import slurm_checks  # noqa: E402

CTL = slurm_checks.container(deploy_checks.CTL)
HOSTS = (deploy_checks.CTL,) + deploy_checks.NODES
CORES = ("24-27", "16-19", "28-31", "20-23")
RENAMED = {"gres-gpu02": {"hpc_gres_gpus": [{"index": i, "type": "h100_80gb", "cores": c}
                                            for i, c in enumerate(CORES)]}}
LACKING = {"gres-gpu02": {"hpc_gres_gpus": RENAMED["gres-gpu02"]["hpc_gres_gpus"]
                          + [{"index": 4, "type": "h100_80gb", "cores": "20-23"}]}}
FEWER = {"gres-gpu02": {"hpc_gres_gpus": RENAMED["gres-gpu02"]["hpc_gres_gpus"][:3]}}
# Where the deploy stages files (config_tree), verifies (gres_verify) and runs its modules (AnsiballZ).
STAGING = ("/etc/.slurm.stage-*", "/var/lib/slurm-gres/.*.stage-*", "/tmp/gres_verify.*",
           "/root/.ansible/tmp/ansible-tmp-*")
REFUSAL = "nothing installed, nothing restarted: 1 of 2 targeted node(s) did not pass verification: gres-gpu02"


def flat(text):
    """Whitespace-normalized output (the callback wraps and YAML-quotes long strings)."""
    return " ".join(str(text).replace("''", "'").split())


def in_order(text, *parts):
    """Every part is in ``text``, one after the other."""
    positions = [text.find(part) for part in parts]
    assert -1 not in positions, [p for p, at in zip(parts, positions) if at == -1]
    return positions == sorted(positions)


def all_files():
    """sha256 of every file under /etc/slurm and /var/lib/slurm-gres on every container."""
    out = {}
    for name in HOSTS:
        listing = slurm_checks.container(name).check_output(
            "find /etc/slurm /var/lib/slurm-gres -type f -print0 2>/dev/null | sort -z | xargs -0 -r sha256sum")
        out[name] = listing
    return out


def staging_left():
    found = {}
    for name in HOSTS:
        result = slurm_checks.container(name).run("ls -d %s 2>/dev/null" % " ".join(STAGING))
        if result.stdout.strip():
            found[name] = result.stdout.split()
    return found


# what a change of the node's state in slurmctld would show (CPULoad, FreeMem and the like move on their own)
NODE_KEYS = ("State", "Reason", "Gres", "GresDrain", "SlurmdStartTime", "BootTime", "CfgTRES", "Partitions")


def node_records():
    """scontrol's record of each node: state, reason, Gres, slurmd start time."""
    return {node: {key: value for key, value in slurm_checks.show_node(CTL, node).items() if key in NODE_KEYS}
            for node in deploy_checks.NODES}


def contents():
    return {(name, "/etc/slurm/" + f): slurm_checks.container(name).run("cat /etc/slurm/%s", f).stdout
            for name in HOSTS for f in deploy_checks.CONFIG_FILES}


def state():
    for node in deploy_checks.NODES:
        slurm_checks.wait_for_node(CTL, node)
    return {"snapshot": deploy_checks.snapshot(), "files": all_files(), "nodes": node_records(),
            "contents": contents()}


def diffs(out):
    """{(path, host): diff text} of the check report's diffs, a diff shared by a hostlist given to each host."""
    lines = out.splitlines()
    found = {}
    i = 0
    while i < len(lines) - 1:
        match = re.match(r"^--- (\S+) on (\S+) \(installed\)$", lines[i])
        if match and lines[i + 1].startswith("+++ "):
            block = [lines[i], lines[i + 1]]
            i += 2
            while i < len(lines) and lines[i][:1] in (" ", "+", "-", "@", "\\") and not lines[i].startswith("--- "):
                block.append(lines[i])
                i += 1
            for host in hostlist.expand_hostlist(match.group(2)):
                assert (match.group(1), host) not in found, "one diff per host and file"
                found[(match.group(1), host)] = "\n".join(block) + "\n"
            continue
        i += 1
    return found


def check_and_deploy(inventory_vars, deploy=True):
    with tempfile.TemporaryDirectory() as tmp:
        extra = [deploy_checks.write_inventory(tmp, inventory_vars)] if inventory_vars else []
        before = state()
        check = deploy_checks.deploy("--check", "--diff", extra_inventories=extra)
        after_check = state()
        staging = staging_left()
        real = deploy_checks.deploy(extra_inventories=extra) if deploy else None
        after_real = state() if deploy else None
    return {"before": before, "check": check, "after_check": after_check, "staging": staging, "real": real,
            "after_real": after_real}


@pytest.fixture(scope="module")
def runs():
    return {"renamed": check_and_deploy(RENAMED), "lacking": check_and_deploy(LACKING),
            "fewer": check_and_deploy(FEWER)}


def assert_check_changed_nothing(run):
    before, after = run["before"], run["after_check"]
    assert after["files"] == before["files"]
    assert after["snapshot"]["slurmctld"] == before["snapshot"]["slurmctld"]
    for node in deploy_checks.NODES:
        assert after["snapshot"]["nodes"][node]["slurmd"] == before["snapshot"]["nodes"][node]["slurmd"], node
        assert after["nodes"][node] == before["nodes"][node], node
    assert run["staging"] == {}


def assert_real_run_matches_check(run):
    """The real run changed exactly the files whose diffs the check printed, from and to exactly those texts."""
    predicted = diffs(run["check"][1])
    before, after = run["before"]["contents"], run["after_real"]["contents"]
    changed = {(path, host) for (host, path) in before if before[(host, path)] != after[(host, path)]}
    assert set(predicted) == changed
    for (path, host), text in predicted.items():
        header = text.splitlines()[:2]
        real = "".join(difflib.unified_diff(before[(host, path)].splitlines(True),
                                            after[(host, path)].splitlines(True), header[0][4:], header[1][4:]))
        assert real == text, (host, path)


def restarted(run):
    before, after = run["before"]["snapshot"], run["after_real"]["snapshot"]
    daemons = {"slurmctld"} if after["slurmctld"] != before["slurmctld"] else set()
    return daemons | {node for node in deploy_checks.NODES
                      if after["nodes"][node]["slurmd"] != before["nodes"][node]["slurmd"]}


def checked(run, passes):
    """The check run's output (flat, and as printed) after asserting its outcome and that it changed nothing."""
    rc, out = run["check"]
    assert (rc == 0) == passes, out[-3000:]
    assert_check_changed_nothing(run)
    return flat(out), out


def test_renamed_type_check_changes_nothing_and_says_it_would_pass(runs):
    text, out = checked(runs["renamed"], passes=True)
    assert "gres-gpu02 would install slurm.conf, gres.conf; slurmd would restart (gres.conf changed; slurm.conf: " \
           "this node's gres changed)" in text
    assert "gres-gpu01 would install slurm.conf; slurmd would not restart" in text
    assert "gres-ctl slurmctld host: would install slurm.conf" in text
    assert in_order(text, "1. slurmctld on gres-ctl: restart before the slurmd restarts (GRES count goes down on "
                          "gres-gpu02)", "2. slurmd on gres-gpu02: restart in batches of 25%, each registration confirmed",
                    "3. slurmctld on gres-ctl: restart after the slurmd restarts (GRES count goes up on gres-gpu02)")
    # identical slurm.conf changes on the three hosts: one diff, headed by their hostlist
    assert out.count("--- /etc/slurm/slurm.conf on gres-ctl,gres-gpu[01-02] (installed)") == 1
    gres = diffs(out)[("/etc/slurm/gres.conf", "gres-gpu02")]
    assert "-NodeName=gres-gpu02 Name=gpu Type=h100 " in gres and "+NodeName=gres-gpu02 Name=gpu Type=h100_80gb " in gres


def test_renamed_type_real_run_does_what_the_check_said(runs):
    run = runs["renamed"]
    rc, out = run["real"]
    assert rc == 0, out[-3000:]
    assert_real_run_matches_check(run)
    assert restarted(run) == {"slurmctld", "gres-gpu02"}
    first = out.index("slurmctld on gres-ctl: restarting")
    assert first < out.index("node gres-gpu02: restarting slurmd") < out.rindex("slurmctld on gres-ctl: restarting")
    # the node as slurmctld saw it right after this run (IDLE, not drained): the fixture ran all three changes
    info = run["after_real"]["nodes"]["gres-gpu02"]
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:h100_80gb": 4}
    assert "Reason" not in info


def test_lacking_gpu_check_changes_nothing_and_says_it_would_be_refused(runs):
    text, out = checked(runs["lacking"], passes=False)
    verdict = text[text.index("gres-gpu02 would be refused at verify: "):][:300]
    assert "nvidia-smi sees 4" in verdict or "/dev/nvidia4" in verdict, verdict
    assert "gres-gpu01 passes verification; would install nothing: the deploy is refused" in text
    assert "restarts: none, nothing would be installed or restarted: " + REFUSAL in text
    gres = diffs(out)[("/etc/slurm/gres.conf", "gres-gpu02")]
    # GPUs 3 and 4 share type and cores: one line
    assert "+NodeName=gres-gpu02 Name=gpu Type=h100_80gb File=/dev/nvidia[3-4] Cores=20-23" in gres
    assert "Check mode, the deploy would be refused" in out


def test_lacking_gpu_real_run_is_refused_as_predicted(runs):
    run = runs["lacking"]
    rc, out = run["real"]
    assert rc != 0
    text = flat(out)
    assert REFUSAL in text and "declares 5 h100_80gb, nvidia-smi sees 4" in text
    assert run["after_real"]["files"] == run["before"]["files"]
    assert restarted(run) == set()


def test_count_down_check_changes_nothing_and_says_slurmctld_restarts_first(runs):
    text, out = checked(runs["fewer"], passes=True)
    assert in_order(text, "1. slurmctld on gres-ctl: restart before the slurmd restarts (GRES count goes down on "
                          "gres-gpu02)", "2. slurmd on gres-gpu02: restart")
    assert "restart after the slurmd restarts" not in text
    gres = diffs(out)[("/etc/slurm/gres.conf", "gres-gpu02")]
    assert "-NodeName=gres-gpu02 Name=gpu Type=h100_80gb File=/dev/nvidia3 Cores=20-23" in gres


def test_count_down_real_run_does_what_the_check_said(runs):
    run = runs["fewer"]
    rc, out = run["real"]
    assert rc == 0, out[-3000:]
    assert_real_run_matches_check(run)
    assert restarted(run) == {"slurmctld", "gres-gpu02"}
    assert out.index("slurmctld on gres-ctl: restarting") < out.index("node gres-gpu02: restarting slurmd")
    info = run["after_real"]["nodes"]["gres-gpu02"]
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:h100_80gb": 3}
    assert "Reason" not in info


def test_converge_inventory_restored(runs):
    """test_mismatch.py starts from the converge state: deploy the scenario's own inventory again."""
    rc, out = deploy_checks.deploy()
    assert rc == 0, out[-3000:]
    info = slurm_checks.wait_for_node(CTL, "gres-gpu02", timeout=30)
    assert slurm_checks.gres_counts(info["Gres"]) == {"gpu:h100": 4}
