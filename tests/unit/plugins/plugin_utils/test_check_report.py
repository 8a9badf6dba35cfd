"""The check run's report (plugins/plugin_utils/check_report.py): verdicts, restart order, diffs grouped by hostlist.

The files are real renders of a small cluster (model -> render_all) and the plans come from restart_plan and the
node plan gres_verify returns, as in a check run of deploy-gres.yml.
"""
import copy

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import restart_plan
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.config_modes import node_plan
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import check_report
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

N_NODES = 40
CORES = ("0-15", "0-15", "16-31", "16-31")  # whole sockets: Slurm 24.11+ drains a node otherwise
WANTED = {"mode": "0644", "owner": "root", "group": "root"}
ATTRIBUTES = {name: dict(WANTED) for name in check_report.NODE_FILES}


def inventory(gpus_of):
    """hostvars and groups of a cluster: a controller and N_NODES nodes with four A100 each (``gpus_of`` edits)."""
    hostvars = {"ctl": {}}
    for i in range(1, N_NODES + 1):
        host = "gpu-a%03d" % i
        gpus = [{"index": g, "type": "a100", "cores": c} for g, c in enumerate(CORES)]
        hostvars[host] = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 16, "hpc_gres_node_threads_per_core": 1,
                          "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus_of(host, gpus)}
    groups = {"slurmctld": ["ctl"], "slurmd": sorted(h for h in hostvars if h != "ctl")}
    return hostvars, groups


def render(gpus_of=lambda host, gpus: gpus):
    hostvars, groups = inventory(gpus_of)
    return render_all(build_cluster_model(hostvars, groups, {"hpc_gres_cluster_name": "demo"}))


def entries(installed, new, unverified=None):
    """What the action hands the report: every node planned against ``installed`` (slurmd ran it), the controller."""
    out = []
    for i in range(1, N_NODES + 1):
        name = "gpu-a%03d" % i
        have = check_report.node_new_files(installed, name)
        want = check_report.node_new_files(new, name)
        entry = {"host": name, "name": name, "role": "slurmd", "config_dir": "/etc/slurm", "installed": have,
                 "new": want, "verified": name not in (unverified or {}), "findings": (unverified or {}).get(name)}
        if entry["verified"]:
            entry["plan"] = node_plan(want, have, name, have, ATTRIBUTES, WANTED)
        out.append(entry)
    out.append({"host": "ctl", "name": "ctl", "role": "slurmctld", "config_dir": "/etc/slurm",
                "installed": {"slurm.conf": installed["slurm.conf"], "cgroup.conf": installed["cgroup.conf"]},
                "new": {"slurm.conf": new["slurm.conf"], "cgroup.conf": new["cgroup.conf"]},
                "plan": restart_plan.controller_plan(installed["slurm.conf"], new["slurm.conf"])})
    return out


def three_gpus_on(hosts):
    return lambda host, gpus: gpus[:3] if host in hosts else gpus


def test_no_change_says_unchanged_everywhere_and_restarts_nothing():
    files = render()
    report = check_report.check_report(entries(files, files))
    assert report["lines"][1:] == ["  ctl             slurmctld host: unchanged", "  gpu-a[001-040]  unchanged",
                                   "restarts: none"]
    assert report["diffs"] == [] and report["would_change"] == {} and report["restarts"] == []


def test_a_health_check_or_boot_order_to_install_is_said_not_called_unchanged():
    files = render()
    report_entries = entries(files, files)
    report_entries[0]["plan"]["health_install"] = {"library": False, "launcher": "#!/bin/sh\n", "nhc": None,
                                                   "boot": {"needed": False}, "needed": True}
    report_entries[1]["plan"]["health_install"] = {"library": False, "launcher": None, "nhc": None,
                                                   "boot": {"needed": True}, "needed": True}
    lines = check_report.check_report(report_entries)["lines"]
    assert "  gpu-a001        would install the GPU health check" in lines
    assert "  gpu-a002        would install the boot order of slurmd" in lines
    assert "  gpu-a[003-040]  unchanged" in lines


def test_identical_changes_on_many_nodes_are_shown_once_with_their_hostlist():
    before, after = render(), render(three_gpus_on({"gpu-a%03d" % i for i in range(5, 31)}))
    report = check_report.check_report(entries(before, after), serial="25%")
    changed = hostlist.expand_hostlist("gpu-a[005-030]")
    # one slurm.conf diff for all 41 hosts: same file before, same after
    slurm = [d for d in report["diffs"] if d.startswith("--- /etc/slurm/slurm.conf")]
    assert len(slurm) == 1
    assert slurm[0].splitlines()[0] == "--- /etc/slurm/slurm.conf on ctl,gpu-a[001-040] (installed)"
    assert "+NodeName=gpu-a[005-030] CPUs=32 Boards=1 SocketsPerBoard=2" in slurm[0] or any(
        line.startswith("+NodeName=gpu-a[005-030] ") and "Gres=gpu:a100:3" in line for line in slurm[0].splitlines())
    # a gres.conf names its own node: one diff per changed node, none for the others
    gres = [d for d in report["diffs"] if d.startswith("--- /etc/slurm/gres.conf")]
    assert sorted(d.splitlines()[0].split(" ")[3] for d in gres) == changed
    # one verdict line per group of nodes with the same verdict
    verdict_lines = report["lines"][1:4]
    assert verdict_lines[0].split()[:2] == ["ctl", "slurmctld"]
    assert verdict_lines[1].split(None, 1) == ["gpu-a[001-004,031-040]", "would install slurm.conf; slurmd would "
                                               "not restart"]
    assert verdict_lines[2].split(None, 1) == [
        "gpu-a[005-030]", "would install slurm.conf, gres.conf; slurmd would restart (gres.conf changed; slurm.conf: "
        "this node's gres changed)"]
    assert report["restarts"] == [
        "slurmctld on ctl: restart before the slurmd restarts (GRES count goes down on %s)" % ", ".join(changed),
        "slurmd on gpu-a[005-030]: restart in batches of 25%, each registration confirmed with scontrol"]
    assert report["would_change"]["gpu-a005"] == ["/etc/slurm/slurm.conf", "/etc/slurm/gres.conf"]
    assert report["would_change"]["ctl"] == ["/etc/slurm/slurm.conf"]
    assert len(report["lines"]) == 8


def test_a_count_going_up_restarts_slurmctld_after_the_nodes():
    before, after = render(three_gpus_on({"gpu-a007"})), render()
    report = check_report.check_report(entries(before, after))
    assert report["restarts"] == [
        "slurmd on gpu-a007: restart, each registration confirmed with scontrol",
        "slurmctld on ctl: restart after the slurmd restarts (GRES count goes up on gpu-a007)"]


def test_a_refused_node_gets_its_finding_and_the_rest_install_nothing():
    before = render()
    after = render(lambda host, gpus: gpus + [{"index": 4, "type": "a100", "cores": "16-31"}]
                   if host == "gpu-a002" else gpus)
    finding = {"severity": "error", "check": "present", "gpu": None,
               "expected": "5 GPUs of type a100 visible to nvidia-smi", "found": "declares 5 a100, nvidia-smi sees 4"}
    warning = dict(finding, severity="warning", check="cores")
    refusal = "nothing installed, nothing restarted: 1 of 40 targeted node(s) did not pass verification: gpu-a002"
    report = check_report.check_report(entries(before, after, {"gpu-a002": [warning, finding, finding]}), refusal)
    assert report["verdicts"]["slurmd"]["gpu-a002"] == (
        "would be refused at verify: present: expected 5 GPUs of type a100 visible to nvidia-smi, found declares 5 "
        "a100, nvidia-smi sees 4 (and 1 more error(s) above)")
    assert report["verdicts"]["slurmd"]["gpu-a001"] == "passes verification; would install nothing: the deploy is refused"
    assert report["verdicts"]["slurmctld"]["ctl"] == "slurmctld host: would install nothing: the deploy is refused"
    assert report["restarts"] == [] and report["refusal"] == refusal
    assert "restarts: none, nothing would be installed or restarted: " + refusal in report["lines"]
    # the diff of what was refused is still shown (the fifth GPU's line)
    gres = [d for d in report["diffs"] if d.startswith("--- /etc/slurm/gres.conf on gpu-a002 ")]
    assert "+NodeName=gpu-a002 Name=gpu Type=a100 File=/dev/nvidia[2-4] Cores=16-31" in gres[0].splitlines()


def test_a_pending_restart_and_a_file_not_installed_yet():
    files = render()
    items = entries(files, files)
    node = items[0]
    node["plan"] = dict(node["plan"], restart=True, reasons=["cgroup.conf changed"])
    fresh = items[1]
    fresh["installed"] = dict(fresh["installed"], **{"gres.conf": None})
    fresh["plan"] = node_plan(fresh["new"], fresh["installed"], fresh["name"], fresh["installed"], ATTRIBUTES,
                              WANTED)
    report = check_report.check_report(items)
    assert report["verdicts"]["slurmd"]["gpu-a001"] == "slurmd would restart (cgroup.conf changed)"
    assert report["verdicts"]["slurmd"]["gpu-a002"].startswith("would install gres.conf; slurmd would restart")
    diff = report["diffs"][0].splitlines()
    assert diff[0] == "--- /dev/null (gpu-a002: not installed)" and diff[1] == "+++ /etc/slurm/gres.conf (would be installed)"


def test_a_node_whose_files_were_not_read_shows_no_diff():
    before, after = render(), render(three_gpus_on({"gpu-a001"}))
    items = entries(before, after)
    unread = copy.deepcopy(items[0])
    unread.update(installed=None, new={})
    report = check_report.check_report([unread] + items[1:])
    assert "gpu-a001" not in report["would_change"]


def test_a_renamed_type_restarts_slurmctld_before_and_after_each_step_with_its_own_reason():
    renamed = render(lambda host, gpus: [dict(g, type="a100_80gb") for g in gpus] if host == "gpu-a003" else gpus)
    report = check_report.check_report(entries(render(), renamed))
    assert report["restarts"] == [
        "slurmctld on ctl: restart before the slurmd restarts (GRES count goes down on gpu-a003)",
        "slurmd on gpu-a003: restart, each registration confirmed with scontrol",
        "slurmctld on ctl: restart after the slurmd restarts (GRES count goes up on gpu-a003)"]


def test_restarts_turned_off_are_said_and_left_out_of_the_order():
    before, after = render(), render(three_gpus_on({"gpu-a004"}))
    items = entries(before, after)
    for entry in items:
        entry["restart_enabled"] = False
    report = check_report.check_report(items)
    assert report["restarts"] == [] and "restarts: none" in report["lines"]
    assert report["verdicts"]["slurmd"]["gpu-a004"] == (
        "would install slurm.conf, gres.conf; slurmd restart needed (gres.conf changed; slurm.conf: this node's gres "
        "changed), left for a later run: hpc_gres_slurmd_restart is false")
    assert report["verdicts"]["slurmctld"]["ctl"] == ("slurmctld host: would install slurm.conf; "
                                                      "hpc_gres_slurmctld_restart is false: no restart or reconfigure")
    # a later run: the files are installed, the restart still held: said, not "unchanged"
    ctl = [e for e in items if e["role"] == "slurmctld"][0]
    ctl["installed"] = dict(ctl["new"])
    report = check_report.check_report(items)
    assert report["verdicts"]["slurmctld"]["ctl"] == (
        "slurmctld host: files installed; slurmctld restart needed (GRES count goes down on gpu-a004), left for a later "
        "run: hpc_gres_slurmctld_restart is false")


def test_a_real_run_says_what_it_does_and_a_check_run_what_it_would_do():
    before, after = render(), render(three_gpus_on({"gpu-a005"}))
    items = entries(before, after)
    node = items[0]
    node["plan"] = dict(node["plan"], install=True)
    pending = items[1]
    pending["plan"] = dict(pending["plan"], restart=True, reasons=["cgroup.conf changed"])
    real = check_report.check_report(items, check_mode=False)
    check = check_report.check_report(items)
    assert real["lines"][0] == "Every targeted node passed verification. What this deploy does:"
    assert real["verdicts"]["slurmd"]["gpu-a001"] == "installs slurm.conf; slurmd does not restart"
    assert check["verdicts"]["slurmd"]["gpu-a001"] == "would install slurm.conf; slurmd would not restart"
    assert real["verdicts"]["slurmd"]["gpu-a002"] == "installs slurm.conf; slurmd restarts (cgroup.conf changed)"
    assert real["verdicts"]["slurmd"]["gpu-a005"] == (
        "installs slurm.conf, gres.conf; slurmd restarts (gres.conf changed; slurm.conf: this node's gres changed)")
    assert real["verdicts"]["slurmctld"]["ctl"] == "slurmctld host: installs slurm.conf"
    assert not any("would" in v for v in real["verdicts"]["slurmd"].values())
    # a node whose files are as rendered but whose mode or owner is not
    same = entries(before, before)
    same[0]["plan"] = dict(same[0]["plan"], install=True)
    assert check_report.check_report(same, check_mode=False)["verdicts"]["slurmd"]["gpu-a001"] == (
        "resets the mode or owner of the installed files")
    assert check_report.check_report(same)["verdicts"]["slurmd"]["gpu-a001"] == (
        "would reset the mode or owner of the installed files")
    # a slurm.conf change that restarts nothing
    nochange = entries(before, dict(before, **{"cgroup.conf": before["cgroup.conf"] + "# x\n"}))
    said = check_report.check_report(nochange, check_mode=False)["verdicts"]["slurmd"]["gpu-a003"]
    assert said.startswith("installs cgroup.conf")
