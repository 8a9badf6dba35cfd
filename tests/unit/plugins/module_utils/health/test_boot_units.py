"""What the deploy installs for the boot order (health/boot_units.py): the systemd units (checked by
``systemd-analyze verify`` where it is installed), mig-parted's config (checked by a port of mig-parted's own
parser, api/spec/v1/spec.go, which accepts mig-parted's shipped configs and refuses what its tests refuse), and the
plan of what differs on a node."""
import os
import re
import shutil
import subprocess

import pytest
import yaml

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import boot_units, program

import testpaths

# byte for byte as mig-parted ships them; .txt: not the collection's YAML (ansible-test's yamllint would restyle them)
FIXTURES = os.path.join(testpaths.ROOT, "tests", "fixtures", "mig-parted")

# ----------------------------------------------------------------------------------------------------
# mig-parted's v1 spec, as api/spec/v1/spec.go (NVIDIA/mig-parted bd7160f) unmarshals it: YAML is read as JSON
# (sigs.k8s.io/yaml), unknown fields are errors, and the profile keys follow pkg/types (nvlib's MIG profile format,
# [<C>c.]<G>g.<GB>gb[+me|+me.all|+gfx|-me], the one docs/inventory.md and model_schema.MIG_PROFILE_RE use).

PROFILE = re.compile(r"\A([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+me|\+me\.all|\+gfx|-me)?\Z")


class SpecError(ValueError):
    pass


def parse_mig_config_spec(entry):
    """MigConfigSpec.UnmarshalJSON."""
    if not isinstance(entry, dict):
        raise SpecError("cannot unmarshal %r into MigConfigSpec" % (entry,))
    for required in ("devices", "mig-enabled"):
        if required not in entry:
            raise SpecError("missing required field: %s" % required)
    out = {"mig-devices": None}
    for key, value in entry.items():
        if key == "device-filter":
            if not (isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))):
                raise SpecError("device-filter: %r" % (value,))
        elif key == "devices":
            if isinstance(value, str):
                if value != "all":
                    raise SpecError("invalid string input for 'devices': %s" % value)
            elif not (isinstance(value, list) and all(isinstance(v, int) and not isinstance(v, bool) for v in value)):
                raise SpecError("devices: %r" % (value,))
        elif key == "mig-enabled":
            if not isinstance(value, bool):
                raise SpecError("mig-enabled: %r" % (value,))
        elif key == "mig-devices":
            if value is not None and not isinstance(value, dict):
                raise SpecError("mig-devices: %r" % (value,))
            devices = value or {}
            for profile, count in devices.items():
                if not PROFILE.match(str(profile)):
                    raise SpecError("error validating values in 'mig-devices' field: invalid format for '%s'" % profile)
                if isinstance(count, bool) or not isinstance(count, int) or count < 0:
                    raise SpecError("error validating values in 'mig-devices' field: invalid count for '%s'" % count)
            if devices and not any(devices.values()):
                raise SpecError("error validating values in 'mig-devices' field: all counts for all MigProfiles are 0")
            out["mig-devices"] = devices
        else:
            raise SpecError("unexpected field: %s" % key)
        out[key] = value if key != "mig-devices" else out["mig-devices"]
    if entry["mig-enabled"] and out["mig-devices"] is None:
        raise SpecError("missing required field 'mig-devices' when 'mig-enabled' is true")
    if not entry["mig-enabled"] and out["mig-devices"]:
        raise SpecError("MIG devices included when 'mig-enabled' is false")
    return out


def parse_spec(doc):
    """Spec.UnmarshalJSON (an empty document is an empty spec)."""
    if doc in (None, {}):
        return {}
    if not isinstance(doc, dict):
        raise SpecError("cannot unmarshal %r into Spec" % (doc,))
    if "version" not in doc:
        raise SpecError("unable to parse with missing 'version' field")
    if doc["version"] != "v1":
        raise SpecError("unknown version: %s" % doc["version"])
    for key, value in doc.items():
        if key == "version":
            continue
        if key != "mig-configs":
            raise SpecError("unexpected field: %s" % key)
        if not isinstance(value, dict) or not value:
            raise SpecError("at least one entry in 'mig-configs' is required")
        for name, entries in value.items():
            if not isinstance(entries, list) or not entries:
                raise SpecError("at least one entry in '%s' is required" % name)
            for entry in entries:
                parse_mig_config_spec(entry)
    return doc


@pytest.mark.parametrize("name", sorted(os.listdir(FIXTURES)))
def test_the_port_accepts_mig_parteds_own_configs(name):
    with open(os.path.join(FIXTURES, name)) as handle:
        spec = parse_spec(yaml.safe_load(handle))
    assert spec["mig-configs"]


# the cases of api/spec/v1/spec_test.go (TestSpec, TestMigConfigSpec), as documents
SPEC_CASES = [
    ({"version": "v1", "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}]}}, True),
    ({"version": "v1"}, True),
    ({"version": "v2", "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}]}}, False),
    ({"mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}]}}, False),
    ({"bogus": "field", "version": "v1",
      "mig-configs": {"all-disabled": [{"devices": "all", "mig-enabled": False}]}}, False),
    ({"version": "v1", "mig-configs": {}}, False),
]
ENTRY_CASES = [
    ({"devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 2}}, True),
    ({"device-filter": "MODEL", "devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 2}}, True),
    ({"device-filter": ["M1", "M2"], "devices": "all", "mig-enabled": True, "mig-devices": {"1g.5gb": 2}}, True),
    ({"mig-enabled": True, "mig-devices": {"1g.5gb": 2}}, False),
    ({"devices": "all", "mig-devices": {"1g.5gb": 2}}, False),
    ({"devices": "all", "mig-enabled": False}, True),
    ({"devices": "all", "mig-enabled": True}, False),
    ({"devices": "all", "mig-enabled": True, "mig-devices": {"bogus": 2}}, False),
    ({"bogus": "field", "devices": "all", "mig-enabled": False}, False),
    ({"devices": "bogus", "mig-enabled": False}, False),
    ({"devices": [0, 1, 2, 3], "mig-enabled": False}, True),
    ({"devices": {}, "mig-enabled": False}, False),
]


@pytest.mark.parametrize("doc, valid", SPEC_CASES + [({"version": "v1", "mig-configs": {"c": [e]}}, v)
                                                     for e, v in ENTRY_CASES])
def test_the_port_agrees_with_mig_parteds_tests(doc, valid):
    if valid:
        parse_spec(doc)
    else:
        with pytest.raises(SpecError):
            parse_spec(doc)


LAYOUTS = {"0": ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"], "1": None, "2": ["1g.10gb", "1g.10gb", "2g.20gb",
                                                                               "3g.40gb"], "3": ["7g.80gb"]}


def test_mig_parted_config_is_one_named_config_that_mig_parted_reads():
    text = boot_units.mig_parted_text("gpu-m01", LAYOUTS)
    spec = parse_spec(yaml.safe_load(text))
    assert spec["mig-configs"] == {"hpc-gres": [
        {"devices": [0, 2], "mig-enabled": True, "mig-devices": {"1g.10gb": 2, "2g.20gb": 1, "3g.40gb": 1}},
        {"devices": [1], "mig-enabled": False},
        {"devices": [3], "mig-enabled": True, "mig-devices": {"7g.80gb": 1}},
    ]}
    assert text.splitlines()[1] == "# Node gpu-m01's MIG layout from the inventory; nvidia-mig-manager.service " \
                                   "applies config hpc-gres at boot."
    assert boot_units.mig_parted_text("gpu-w01", {"0": None, "1": None}) is None


def test_the_mig_manager_dropin_sorts_after_mig_parteds_own_override():
    assert sorted(["override.conf", boot_units.MIG_MANAGER_DROPIN])[-1] == boot_units.MIG_MANAGER_DROPIN
    text = boot_units.mig_manager_dropin_text("/etc/nvidia-mig-manager/hpc-gres.yaml")
    assert 'Environment="MIG_PARTED_CONFIG_FILE=/etc/nvidia-mig-manager/hpc-gres.yaml"' in text.splitlines()
    assert 'Environment="MIG_PARTED_SELECTED_CONFIG=hpc-gres"' in text.splitlines()


# ----------------------------------------------------------------------------------------------------
# the units and the plan


def spec(tmp_path, mig="collection", retry=300, enabled=True, layouts=None):
    return {"enabled": enabled, "program": str(tmp_path / "sbin" / "hpc-gres-boot"),
            "config": str(tmp_path / "etc" / "boot.json"), "unit_dir": str(tmp_path / "units"),
            "mig_manager_dir": str(tmp_path / "mig"), "slurmd_service": "slurmd", "retry_interval": retry,
            "args": ["--timeout", "10"],
            "settings": {"node": "gpu-m01", "wait": 300, "interval": 5, "mig": mig,
                         "layouts": LAYOUTS if layouts is None else layouts, "models": {"0": "A100-80GB"}}}


def launcher(args):
    return program.launcher_text("/usr/local/lib/hpc-gres", args=args, program="hpc-gres-boot")


def install(plan):
    for entry in plan["dirs"]:
        for name, text in entry["files"].items():
            path = os.path.join(entry["dest"], name)
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "w") as handle:
                handle.write(text)
            os.chmod(path, int(entry["mode"], 8))
        for name in entry["absent"]:
            os.unlink(os.path.join(entry["dest"], name))


def files(plan):
    return sorted(os.path.join(d["dest"], n)[len(os.path.dirname(d["dest"])) + 1:] for d in plan["dirs"]
                  for n in d["files"])


def test_a_bare_node_gets_everything_an_installed_one_nothing(tmp_path):
    s = spec(tmp_path)
    plan = boot_units.boot_plan(s, launcher, systemd=True)
    assert plan["needed"] and plan["reload"]
    assert files(plan) == ["etc/boot.json", "sbin/hpc-gres-boot", "units/hpc-gres-boot-retry.service",
                           "units/hpc-gres-boot-retry.timer", "units/hpc-gres-boot.service",
                           "units/slurmd.service.d/hpc-gres-boot.conf"]
    assert [d["mode"] for d in plan["dirs"] if d["dest"].endswith("sbin")] == ["0755"]
    install(plan)
    assert boot_units.boot_plan(s, launcher, systemd=True) == {"dirs": [], "reload": False, "needed": False}
    # the launcher carries the settings file and the node's options; the settings what the program reads
    with open(s["program"]) as handle:
        assert 'sys.exit(main(["--config", "%s", "--timeout", "10"] + sys.argv[1:]))' % s["config"] in handle.read()
    os.chmod(s["program"], 0o644)
    assert files(boot_units.boot_plan(s, launcher, systemd=True)) == ["sbin/hpc-gres-boot"]


def test_switching_modes_writes_and_removes_only_what_differs(tmp_path):
    install(boot_units.boot_plan(spec(tmp_path), launcher, systemd=True))
    plan = boot_units.boot_plan(spec(tmp_path, mig="mig-manager", retry=0), launcher, systemd=True)
    assert files(plan) == ["etc/boot.json", "mig/hpc-gres.yaml", "units/hpc-gres-boot.service",
                           "units/nvidia-mig-manager.service.d/zz-hpc-gres.conf"]
    assert [d["absent"] for d in plan["dirs"] if d["dest"].endswith("units")] == [
        ["hpc-gres-boot-retry.timer", "hpc-gres-boot-retry.service"]]
    install(plan)
    back = boot_units.boot_plan(spec(tmp_path), launcher, systemd=False)
    assert not back["reload"]  # no systemd running: the files, no daemon-reload
    assert sorted(n for d in back["dirs"] for n in d["absent"]) == ["hpc-gres.yaml",
                                                                    "nvidia-mig-manager.service.d/zz-hpc-gres.conf"]
    install(back)
    off = boot_units.boot_plan(spec(tmp_path, enabled=False), launcher, systemd=True)
    assert files(off) == [] and off["reload"]
    assert sorted(n for d in off["dirs"] for n in d["absent"]) == [
        "boot.json", "hpc-gres-boot", "hpc-gres-boot-retry.service", "hpc-gres-boot-retry.timer",
        "hpc-gres-boot.service", "slurmd.service.d/hpc-gres-boot.conf"]
    install(off)
    assert not boot_units.boot_plan(spec(tmp_path, enabled=False), launcher, systemd=True)["needed"]


def test_a_node_without_a_layout_gets_no_mig_parted_config_in_mig_manager_mode(tmp_path):
    plan = boot_units.boot_plan(spec(tmp_path, mig="mig-manager", layouts={"0": None}), launcher, systemd=True)
    assert "mig/hpc-gres.yaml" not in files(plan)
    unit = [d for d in plan["dirs"] if d["dest"].endswith("units")][0]["files"]["hpc-gres-boot.service"]
    assert "Wants=network-online.target\n" in unit and "nvidia-mig-manager.service network-online" in unit


def test_unit_texts(tmp_path):
    unit = boot_units.unit_text("/usr/local/sbin/hpc-gres-boot", 300, "slurmd.service", True, 300).splitlines()
    assert "Before=slurmd.service" in unit and "OnFailure=hpc-gres-boot-retry.timer" in unit
    assert "Wants=network-online.target nvidia-mig-manager.service" in unit
    assert "TimeoutStartSec=480" in unit and "SuccessExitStatus=2" in unit and "RemainAfterExit=yes" in unit
    assert "OnFailure=hpc-gres-boot-retry.timer" not in boot_units.unit_text("/p", 300, "slurmd.service", False, 0)
    dropin = boot_units.dropin_text("/usr/local/sbin/hpc-gres-boot").splitlines()
    assert dropin[1:4] == ["[Unit]", "Requires=hpc-gres-boot.service", "After=hpc-gres-boot.service"]
    assert "ExecStartPost=-/usr/local/sbin/hpc-gres-boot --resume" in dropin
    retry = boot_units.retry_service_text("slurmd-gpu.service")
    assert "systemctl -q is-failed hpc-gres-boot.service; then exec systemctl start --no-block slurmd-gpu.service" \
        in retry
    timer = boot_units.retry_timer_text(120).splitlines()
    assert "OnActiveSec=120" in timer and "RemainAfterElapse=no" in timer


def test_systemd_reads_the_units_without_a_complaint(tmp_path):
    if not shutil.which("systemd-analyze"):
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true and systemd-analyze is missing (scripts/setup-system.sh installs systemd)")
        pytest.skip("systemd-analyze is not installed")
    s = spec(tmp_path, mig="mig-manager")
    plan = boot_units.boot_plan(s, launcher, systemd=True)
    install(plan)
    units = s["unit_dir"]
    for name, text in (("slurmd.service", "[Unit]\nDescription=slurmd stand-in\n[Service]\nExecStart=/bin/true\n"),
                       ("nvidia-mig-manager.service",
                        "[Unit]\nDescription=stand-in\n[Service]\nType=oneshot\nExecStart=/bin/true\n")):
        with open(os.path.join(units, name), "w") as handle:
            handle.write(text)
    proc = subprocess.run(["systemd-analyze", "verify", "hpc-gres-boot.service", "hpc-gres-boot-retry.timer",
                           "hpc-gres-boot-retry.service", "slurmd.service", "nvidia-mig-manager.service"],
                          cwd=units, env=dict(os.environ, SYSTEMD_UNIT_PATH=units + ":", SYSTEMD_LOG_LEVEL="notice"),
                          capture_output=True, text=True, timeout=60, check=False)
    complaints = [line for line in (proc.stdout + proc.stderr).splitlines() if "hpc-gres" in line]
    assert proc.returncode == 0 and complaints == [], proc.stdout + proc.stderr
