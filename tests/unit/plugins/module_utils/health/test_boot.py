"""The boot order's logic (health/boot.py): the settings file, waiting with one deadline (a fake clock), the hold
reason, and what a hold or a release does to the node in Slurm; and the program's exits that need no GPU."""
import io
import json

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import boot, boot_cli


class Clock(object):
    """A monotonic clock that only moves when someone sleeps (or a probe takes time)."""

    def __init__(self):
        self.now = 100.0
        self.slept = []

    def __call__(self):
        return self.now

    def sleep(self, seconds):
        self.slept.append(seconds)
        self.now += seconds


def probe_of(answers, clock=None, takes=0.0):
    """A probe answering ``answers`` in turn (the last one for ever), each try taking ``takes`` seconds."""
    answers = list(answers)
    calls = []

    def probe():
        calls.append(clock() if clock else None)
        if clock:
            clock.now += takes
        return answers.pop(0) if len(answers) > 1 else answers[0]
    probe.calls = calls
    return probe


def test_a_stage_that_passes_at_once_is_tried_once_without_sleeping():
    clock = Clock()
    result = boot.wait_for(probe_of([(True, "2 GPU(s)")]), clock, clock.sleep, clock() + 30, 5)
    assert result == {"ok": True, "detail": "2 GPU(s)", "tries": 1} and clock.slept == []


def test_a_stage_is_retried_every_interval_and_each_new_detail_logged_once():
    clock = Clock()
    logged = []
    probe = probe_of([(False, "no /dev/nvidiactl"), (False, "no /dev/nvidiactl"), (False, "NVML: no driver"),
                      (True, "8 GPU(s)")], clock)
    result = boot.wait_for(probe, clock, clock.sleep, clock() + 60, 5, log=logged.append)
    assert result == {"ok": True, "detail": "8 GPU(s)", "tries": 4}
    assert clock.slept == [5, 5, 5] and logged == ["no /dev/nvidiactl", "NVML: no driver"]


def test_the_deadline_stops_the_wait_and_the_last_sleep_is_cut_to_it():
    clock = Clock()
    probe = probe_of([(False, "fabric In Progress")], clock, takes=2.0)
    result = boot.wait_for(probe, clock, clock.sleep, clock() + 12, 5)
    # tries at 100 and 107 (each takes 2 s); the sleep after the second is cut to the deadline, 112, where the
    # last try starts
    assert result == {"ok": False, "detail": "fabric In Progress", "tries": 3}
    assert probe.calls == [100.0, 107.0, 112.0] and clock.slept == [5, 3]


def test_a_zero_wait_tries_once():
    clock = Clock()
    result = boot.wait_for(probe_of([(False, "x")]), clock, clock.sleep, clock(), 5)
    assert result == {"ok": False, "detail": "x", "tries": 1} and clock.slept == []


def test_stages_share_one_deadline_and_the_first_failure_stops_the_run():
    clock = Clock()
    driver = probe_of([(False, "no driver")] * 3 + [(True, "8 GPU(s)")], clock)
    mig = probe_of([(True, "GPU 0 rebuild")], clock)
    ready = probe_of([(False, "fabric GPU 0: In Progress")], clock, takes=1.0)
    result = boot.run_stages([("driver", driver), ("mig", mig), ("ready", ready)], clock, clock.sleep, 30, 5)
    assert not result["ok"] and result["stage"] == "ready" and result["detail"] == "fabric GPU 0: In Progress"
    assert [(s["stage"], s["ok"], s["tries"]) for s in result["stages"]] == [
        ("driver", True, 4), ("mig", True, 1), ("ready", False, 4)]
    # driver ready at 115; the ready stage tries at 115, 121, 127 and, its last sleep cut to the deadline, 130
    assert result["seconds"] == pytest.approx(31.0) and ready.calls == [115.0, 121.0, 127.0, 130.0]
    untouched = probe_of([(True, "never")], clock)
    result = boot.run_stages([("driver", probe_of([(False, "no")])), ("ready", untouched)], clock, clock.sleep, 0, 5)
    assert result["stage"] == "driver" and untouched.calls == []


def test_hold_reason_is_one_clean_line_within_slurms_limit():
    reason = boot.hold_reason("driver", "nvidia-smi exited with status 9: NVIDIA-SMI has failed because it "
                                        "couldn't communicate with the NVIDIA driver.\n" + "x" * 300, 300.4)
    assert reason.startswith("hpc-gres-boot: driver: nvidia-smi exited with status 9: NVIDIA-SMI has failed because "
                             "it couldnt communicate")
    assert reason.endswith("... (after 300 s)") and len(reason) == 200 and "\n" not in reason
    assert boot.hold_reason("ready", "", 5) == "hpc-gres-boot: ready: not ready (after 5 s)"


def node(base, flags=(), reason=None):
    return {"base": base, "flags": list(flags), "reason": reason}


REASON = "hpc-gres-boot: driver: /dev/nvidiactl does not exist (after 300 s)"


@pytest.mark.parametrize("state, action", [
    (node("IDLE"), "drain"),                                    # slurmctld has not noticed slurmd is gone yet
    (node("DOWN", reason="Not responding"), "drain"),           # it has
    (node("DOWN", reason="Node unexpectedly rebooted"), "drain"),
    (node("DOWN"), "drain"),
    (node("IDLE", ["DRAIN"], REASON), "none"),                   # held for this already
    (node("DOWN", ["DRAIN"], REASON + " : Not responding"), "none"),
    (node("IDLE", ["DRAIN"], "hpc-gres-boot: ready: fabric GPU 0: In Progress (after 300 s)"), "update_reason"),
    (node("IDLE", ["DRAIN"], "admin: bad fan"), "none"),         # someone else's drain
    (node("IDLE", ["DRAIN"], "hpc-gres-health: xid GPU 4: Xid 119"), "none"),
    (node("DOWN", reason="admin: rack power"), "none"),          # someone else's DOWN
    (node("IDLE", ["REBOOT_REQUESTED"]), "none"),
    (None, "none"),
])
def test_hold_decision(state, action):
    decision = boot.hold_decision(state, REASON)
    assert decision["action"] == action, decision
    assert decision["reason"] == REASON


@pytest.mark.parametrize("state, action", [
    (node("IDLE", ["DRAIN"], REASON), "resume"),
    (node("DOWN", ["DRAIN"], REASON + " : Not responding"), "resume"),   # DOWN while held: RESUME brings it back
    (node("IDLE", ["DRAIN", "REBOOT_REQUESTED"], REASON), "undrain"),
    (node("IDLE", ["DRAIN"], "admin: bad fan"), "none"),
    (node("IDLE"), "none"),
    (node("DOWN", reason="Not responding"), "none"),
    (None, "none"),
])
def test_release_decision(state, action):
    assert boot.release_decision(state)["action"] == action


def test_settings_are_checked_by_key():
    assert boot.read_settings({}) == {"node": None, "wait": 300, "interval": 5, "mig": "none", "layouts": {},
                                      "models": {}}
    for doc, words in (({"wait": -1}, "wait: expected seconds"), ({"interval": 0}, "interval: expected seconds"),
                       ({"mig": "nvidia"}, "mig: expected one of collection, mig-manager, none"),
                       ({"layouts": []}, "layouts: expected an object"), ({"node": ""}, "node: expected"),
                       ({"wait": True}, "wait: expected seconds"), ({"colour": 1}, "unknown key(s) colour")):
        with pytest.raises(ValueError) as err:
            boot.read_settings(doc, "/etc/hpc-gres/boot.json")
        assert err.value.args[0].startswith("/etc/hpc-gres/boot.json: ") and words in err.value.args[0]


def test_only_split_gpus_are_applied_and_only_by_the_collection():
    settings = boot.read_settings({"mig": "collection", "layouts": {"0": ["1g.10gb"], "1": None, "2": []}})
    assert boot.mig_layouts(settings) == {"0": ["1g.10gb"]}
    assert boot.mig_layouts(dict(settings, mig="mig-manager")) == {}
    assert boot.mig_layouts(dict(settings, mig="none")) == {}


def program(argv, tmp_path, settings=None):
    config = tmp_path / "boot.json"
    if settings is not None:
        config.write_text(settings if isinstance(settings, str) else json.dumps(settings))
    out = io.StringIO()
    clock = Clock()
    code = boot_cli.main(["--config", str(config)] + argv, env={}, out=out, clock=clock, sleep=clock.sleep)
    return code, out.getvalue()


def test_usage_and_internal_errors_exit_2_which_never_holds_slurmd(tmp_path):
    assert program(["--wait", "soon"], tmp_path)[0] == 2
    code, out = program([], tmp_path, settings="{not json")
    assert code == 2 and out.startswith("hpc-gres-boot: internal error: ValueError: ")
    assert out.rstrip().endswith("slurmd is not held back by this program")
    code, out = program([], tmp_path, settings={"mig": "sometimes"})
    assert code == 2 and "mig: expected one of collection, mig-manager, none" in out


def test_a_node_without_the_driver_tools_is_held_at_the_driver_stage(tmp_path):
    """No /dev/nvidiactl under the root: the driver stage fails by the deadline, nothing else is tried."""
    code, out = program(["--root", str(tmp_path), "--scontrol", "none", "--json", "--wait", "10", "--interval", "4"],
                        tmp_path, settings={"node": "gpu01", "mig": "collection", "layouts": {"0": ["1g.10gb"]}})
    doc = json.loads(out)
    assert code == 1 and doc["node"] == "gpu01" and [s["stage"] for s in doc["stages"]] == ["driver"]
    assert doc["stages"][0]["tries"] == 4 and doc["reason"] == (
        "hpc-gres-boot: driver: %s/dev/nvidiactl does not exist (the NVIDIA kernel module is not loaded) (after 10 s)"
        % tmp_path)
    assert doc["slurm"]["error"] == "not asked (--scontrol none)"
