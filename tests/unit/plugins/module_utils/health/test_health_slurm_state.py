"""The health check's drain/resume decision and its drain reason: every node state it can meet, and what it must
never do (touch a drain that is not its own, resume a node that is DOWN for another reason)."""
import itertools

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import slurm_state as ss
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.scontrol import parse_show_node

import nvsmi_fixtures

OURS = "hpc-gres-health: xid GPU 4: Xid 119 at Sun Feb 23 16:30:13 2025: Timeout after 6s"
OTHER_OURS = "hpc-gres-health: memory GPU 2: remapped rows pending (correctable 0, uncorrectable 4)"
FOREIGN = {
    "admin": "admin: bad fan, ticket=123 see x",
    "slurm gres": "gres/gpu count reported lower than configured (7 < 8)",
    "kill task": "Kill task failed",
    "not responding": "Not responding",
    "nhc": "NHC: check_hw_mem_free: 1mb free",
    "prefix inside": "see hpc-gres-health: later",
}
REASONS = [None, OURS, OURS + " : Not responding", OTHER_OURS] + list(FOREIGN.values())
BASES = ["IDLE", "MIXED", "ALLOCATED", "COMPLETING", "DOWN", "UNKNOWN", "DRAINED"]
FLAG_SETS = [[], ["DRAIN"], ["DRAIN", "INVALID_REG"], ["FAIL"], ["DRAIN", "FAIL"], ["DRAIN", "REBOOT_REQUESTED"],
             ["REBOOT_ISSUED"], ["POWERING_DOWN"], ["COMPLETING", "DRAIN"]]


def node(base, flags=(), reason=None):
    return {"base": base, "flags": list(flags), "reason": reason}


@pytest.mark.parametrize("state, unhealthy, action", [
    # unhealthy
    (node("IDLE"), True, "drain"),
    (node("MIXED"), True, "drain"),
    (node("ALLOCATED"), True, "drain"),
    (node("IDLE", ["DRAIN"], OURS), True, "none"),
    (node("IDLE", ["DRAIN"], OURS + " : Not responding"), True, "none"),
    (node("IDLE", ["DRAIN"], OTHER_OURS), True, "update_reason"),
    (node("MIXED", ["DRAIN"], OTHER_OURS), True, "update_reason"),
    (node("IDLE", ["DRAIN"], FOREIGN["admin"]), True, "none"),
    (node("IDLE", ["DRAIN", "INVALID_REG"], FOREIGN["slurm gres"]), True, "none"),
    (node("IDLE", ["DRAIN"], FOREIGN["kill task"]), True, "none"),
    (node("IDLE", ["DRAIN"], FOREIGN["nhc"]), True, "none"),
    (node("IDLE", ["DRAIN"], None), True, "none"),
    (node("DOWN", [], FOREIGN["not responding"]), True, "none"),
    (node("DOWN", [], None), True, "none"),
    (node("IDLE", ["FAIL"], FOREIGN["admin"]), True, "none"),
    # healthy
    (node("IDLE"), False, "none"),
    (node("IDLE", ["DRAIN"], OURS), False, "resume"),
    (node("MIXED", ["DRAIN"], OURS), False, "resume"),
    (node("IDLE", ["DRAIN"], OURS + " : Not responding"), False, "resume"),
    (node("DOWN", ["DRAIN"], OURS), False, "undrain"),
    (node("DOWN", ["DRAIN"], OURS + " : Not responding"), False, "undrain"),
    (node("IDLE", ["DRAIN", "REBOOT_REQUESTED"], OURS), False, "undrain"),
    (node("IDLE", ["DRAIN", "FAIL"], OURS), False, "undrain"),
    (node("IDLE", ["DRAIN"], FOREIGN["admin"]), False, "none"),
    (node("IDLE", ["DRAIN", "INVALID_REG"], FOREIGN["slurm gres"]), False, "none"),
    (node("IDLE", ["DRAIN"], FOREIGN["nhc"]), False, "none"),
    (node("IDLE", ["DRAIN"], FOREIGN["prefix inside"]), False, "none"),
    (node("DOWN", [], FOREIGN["not responding"]), False, "none"),
    (None, True, "none"),
    (None, False, "none"),
])
def test_decision_table(state, unhealthy, action):
    decision = ss.decide(state, unhealthy, OURS if unhealthy else None)
    assert decision["action"] == action, decision
    assert decision["why"]


@pytest.mark.parametrize("base, flags, reason, unhealthy", list(itertools.product(
    BASES, FLAG_SETS, REASONS, [True, False])))
def test_decision_rules_hold_for_every_state(base, flags, reason, unhealthy):
    state = node(base, flags, reason)
    decision = ss.decide(state, unhealthy, OURS if unhealthy else None)
    action = decision["action"]
    ours = bool(reason) and reason.startswith(ss.PREFIX)
    drained = "DRAIN" in flags or base == "DRAINED"
    blocked = base == "DOWN" or bool(set(flags) & ss.NOT_OURS_TO_CLEAR)
    assert action in ss.ACTIONS
    if not ours:
        # never rewrite, resume or undrain what someone else set; drain only a node nobody took out
        assert action in ("none", "drain")
    if action == "drain":
        assert unhealthy and not drained and not blocked
    if action == "update_reason":
        assert unhealthy and drained and ours and reason != OURS and reason != OURS + " : Not responding"
    if action == "resume":
        assert not unhealthy and drained and ours and not blocked
    if action == "undrain":
        assert not unhealthy and drained and ours and blocked
    if not unhealthy and not (drained and ours):
        assert action == "none"
    if unhealthy and drained and ours:
        assert action in ("none", "update_reason")
    if decision["reason"] is not None:
        assert decision["reason"].startswith(ss.PREFIX)


def test_state_from_a_live_scontrol_line():
    record = parse_show_node(nvsmi_fixtures.load("slurm", "live2205-oneliner-admin-drain.txt"))["vm"]
    state = ss.node_view(record)
    assert state == {"base": "IDLE", "flags": ["DRAIN"], "reason": "admin: bad fan, ticket=123 see x"}
    assert ss.decide(state, True, OURS)["action"] == "none"
    assert ss.decide(state, False, None)["action"] == "none"


def test_state_of_our_drain_after_not_responding():
    text = ("NodeName=n1 State=DOWN+DRAIN+NOT_RESPONDING Gres=gpu:h100:8 Reason=%s : Not responding "
            "[slurm@2026-12-01T12:17:25]\n" % OURS)
    state = ss.node_view(parse_show_node(text)["n1"])
    assert state["base"] == "DOWN" and state["reason"] == OURS + " : Not responding"
    assert ss.decide(state, False, None)["action"] == "undrain"


def finding(check, gpu, found, severity="error"):
    return {"severity": severity, "check": check, "gpu": gpu, "expected": "x", "found": found, "hint": None}


def test_reason_names_check_gpu_and_how_many_more():
    errors = [finding("xid", 4, "Xid 119 at Sun Feb 23 16:30:13 2025: Timeout"), finding("memory", 2, "pending"),
              finding("gres_present", None, "declares 8")]
    assert ss.drain_reason(errors) == \
        "hpc-gres-health: xid GPU 4: Xid 119 at Sun Feb 23 16:30:13 2025: Timeout (+2 more)"
    assert ss.drain_reason(errors[2:]) == "hpc-gres-health: gres_present: declares 8"
    assert ss.drain_reason([finding("gpu_count", "00000000:86:00.0", "gone")]) == \
        "hpc-gres-health: gpu_count GPU 00000000:86:00.0: gone"
    assert ss.drain_reason([]) is None


def test_reason_is_one_safe_line_within_the_limit():
    nasty = 'line one\nline "two"\t$HOME `id` \\ it\'s \u00e9t\u00e9 ' + "x" * 400
    reason = ss.drain_reason([finding("errors", 0, nasty), finding("memory", 1, "y")])
    assert reason.startswith("hpc-gres-health: errors GPU 0: line one line two HOME id its ?t? ")
    assert reason.endswith("... (+1 more)")
    assert len(reason) <= ss.MAX_REASON
    assert reason.isascii() and not any(c in reason for c in "\n\r\t\"'`$\\")
    # room for slurmctld's " : Not responding" and NHC's "NHC: check_hpc_gres:  " within slurmdbd's 255 bytes
    assert len("NHC: check_hpc_gres:  " + reason + " : Not responding") <= 255


def test_reason_is_stable_for_the_same_findings():
    errors = [finding("fabric", 0, "fabric State In Progress, Status N/A")] * 9
    assert ss.drain_reason(errors) == ss.drain_reason(list(errors)) == \
        "hpc-gres-health: fabric GPU 0: fabric State In Progress, Status N/A (+8 more)"


@pytest.mark.parametrize("action, argv", [
    ("drain", ["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=%s" % OURS]),
    ("update_reason", ["scontrol", "update", "NodeName=n1", "State=DRAIN", "Reason=%s" % OURS]),
    ("resume", ["scontrol", "update", "NodeName=n1", "State=RESUME"]),
    ("undrain", ["scontrol", "update", "NodeName=n1", "State=UNDRAIN"]),
    ("none", None),
])
def test_update_argv_passes_the_reason_as_one_element(action, argv):
    assert ss.update_argv("scontrol", "n1", {"action": action, "reason": OURS, "why": "-"}) == argv


class _Runner(object):
    def __init__(self, rc, stdout="", stderr=""):
        self.result = {"rc": rc, "stdout": stdout, "stderr": stderr}

    def run(self, argv):
        return self.result


def test_a_multi_line_scontrol_error_is_one_line_cut_at_a_word():
    # slurm_update error, then the reason: both kept, joined, not cut inside a word
    err = ("slurm_update error: Invalid node state specified\n"
           "scontrol: error: " + "word " * 100 + "\n")
    done, message = ss.apply(_Runner(1, stderr=err), "scontrol", "gpu01", {"action": "drain", "reason": "x"})
    assert not done
    assert message.startswith("scontrol update failed (status 1): slurm_update error: Invalid node state specified | "
                              "scontrol: error: word word")
    assert message.endswith(" word ...") and len(message) < 340, message
    view, why = ss.read_node(_Runner(1, stderr="slurm_load_node error: Unable to contact slurm controller\n"
                                               "(connect failure)\n"), "scontrol", "gpu01")
    assert view is None
    assert why == ("scontrol show node gpu01: slurm_load_node error: Unable to contact slurm controller | "
                   "(connect failure)")
