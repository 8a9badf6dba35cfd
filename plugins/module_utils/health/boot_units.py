"""What the deploy installs on a GPU node for the boot order of slurmd (docs/boot.md), and what differs on the node.

Files (paths are the role's defaults):

- ``/usr/local/sbin/hpc-gres-boot``: the program (``health/boot_cli.py``, from the library the health check uses);
- ``/etc/hpc-gres/boot.json``: the node's settings: Slurm node name, how long to wait, the MIG mode and the node's
  MIG layout from the inventory;
- ``/etc/systemd/system/hpc-gres-boot.service``: oneshot, ordered after the driver's services, before slurmd;
- ``/etc/systemd/system/<slurmd>.service.d/hpc-gres-boot.conf``: slurmd ``Requires=`` and ``After=`` it, and
  releases a hold once it runs (``ExecStartPost=-hpc-gres-boot --resume``);
- ``hpc-gres-boot-retry.timer`` and ``.service`` (unless the retry interval is 0): a failed boot order starts the
  timer (``OnFailure=``), which starts slurmd again after the interval, and with it the boot order, while the
  boot order is still failed;
- with ``mig: mig-manager``, on a node with a MIG layout: ``/etc/nvidia-mig-manager/hpc-gres.yaml`` (mig-parted's
  config, one config ``hpc-gres`` with the node's layout) and the drop-in
  ``nvidia-mig-manager.service.d/zz-hpc-gres.conf`` that selects it; the boot order is then ordered after
  ``nvidia-mig-manager.service`` and applies no layout itself.

Plain Python 3 standard library.
"""
import json
import os

UNIT = "hpc-gres-boot.service"
RETRY_TIMER = "hpc-gres-boot-retry.timer"
RETRY_SERVICE = "hpc-gres-boot-retry.service"
DROPIN = "hpc-gres-boot.conf"
MIG_MANAGER_UNIT = "nvidia-mig-manager.service"
# systemd applies a unit's drop-ins in file name order and a later Environment= of the same variable wins:
# mig-parted's own override.conf (rewritten by its apply-start hook) must come first, so this name sorts after it.
MIG_MANAGER_DROPIN = "zz-hpc-gres.conf"
MIG_PARTED_FILE = "hpc-gres.yaml"
MIG_PARTED_CONFIG = "hpc-gres"
DOCS = "https://github.com/hpc-slurm-gres/hpc.slurm_gres/blob/main/docs/boot.md"
# Units the NVIDIA stack runs at boot; ordering after a unit that does not exist is a no-op.
DRIVER_UNITS = ("systemd-modules-load.service", "nvidia-persistenced.service", "nvidia-fabricmanager.service")
# The program's own time beyond the wait: one more health check after the deadline and the scontrol calls.
START_SLACK_S = 180
HEADER = "# %s: written by the deploy of the hpc.slurm_gres collection; do not edit (%s)."


def unit_text(program, wait, slurmd_unit, mig_manager, retry_interval):
    """``hpc-gres-boot.service``. Always ordered after nvidia-mig-manager.service (where a site runs it, the layout
    it applies is the one judged); ``mig_manager``: the deploy wrote its config, so the unit also wants it."""
    after = list(DRIVER_UNITS) + [MIG_MANAGER_UNIT, "network-online.target", "munge.service"]
    lines = [
        HEADER % (UNIT, "docs/boot.md"),
        "# slurmd starts only once this has succeeded: the NVIDIA driver answers, the node's MIG layout is applied",
        "# and the GPU health check passes. Not ready after the wait: it fails, slurmd is held back and the node",
        "# drained in Slurm with the reason 'hpc-gres-boot: ...'.",
        "[Unit]",
        "Description=GPUs ready for slurmd (hpc.slurm_gres boot order)",
        "Documentation=%s" % DOCS,
        "Wants=network-online.target" + (" %s" % MIG_MANAGER_UNIT if mig_manager else ""),
        "After=%s" % " ".join(after),
        "Before=%s" % slurmd_unit,
    ]
    if retry_interval:
        lines.append("OnFailure=%s" % RETRY_TIMER)
    lines += [
        "",
        "[Service]",
        "Type=oneshot",
        "RemainAfterExit=yes",
        "ExecStart=%s" % program,
        "TimeoutStartSec=%d" % (int(wait) + START_SLACK_S),
        "# 2: the program's own internal error, which never holds slurmd back",
        "SuccessExitStatus=2",
        "",
    ]
    return "\n".join(lines)


def dropin_text(program):
    """``<slurmd>.service.d/hpc-gres-boot.conf``."""
    return "\n".join([
        HEADER % (DROPIN, "docs/boot.md"),
        "[Unit]",
        "Requires=%s" % UNIT,
        "After=%s" % UNIT,
        "",
        "[Service]",
        "# once slurmd runs, release a hold of the boot order (Slurm reason 'hpc-gres-boot: ...'); never fails slurmd",
        "ExecStartPost=-%s --resume" % program,
        "",
    ])


def retry_timer_text(interval):
    return "\n".join([
        HEADER % (RETRY_TIMER, "docs/boot.md"),
        "# Started by a failed %s (OnFailure=): after the interval, slurmd is started again, and the boot" % UNIT,
        "# order with it. Stop it to stop retrying: systemctl stop %s" % RETRY_TIMER,
        "[Unit]",
        "Description=Retry the GPU boot order of slurmd (hpc.slurm_gres)",
        "Documentation=%s" % DOCS,
        "",
        "[Timer]",
        "OnActiveSec=%d" % int(interval),
        "AccuracySec=1s",
        "RemainAfterElapse=no",
        "",
    ])


def retry_service_text(slurmd_unit):
    return "\n".join([
        HEADER % (RETRY_SERVICE, "docs/boot.md"),
        "# Starts slurmd (and %s with it) only while the boot order is still failed: a slurmd stopped by" % UNIT,
        "# hand after a successful boot order is left stopped.",
        "[Unit]",
        "Description=Retry the GPU boot order of slurmd (hpc.slurm_gres)",
        "Documentation=%s" % DOCS,
        "",
        "[Service]",
        "Type=oneshot",
        "ExecStart=/bin/sh -c 'if systemctl -q is-failed %s; then exec systemctl start --no-block %s; fi'"
        % (UNIT, slurmd_unit),
        "",
    ])


def mig_manager_dropin_text(config_path):
    return "\n".join([
        HEADER % (MIG_MANAGER_DROPIN, "docs/boot.md"),
        "# nvidia-mig-manager.service applies the node's MIG layout from the hpc.slurm_gres inventory at boot. Named",
        "# to sort after mig-parted's own override.conf, whose selected config this replaces.",
        "[Service]",
        'Environment="MIG_PARTED_CONFIG_FILE=%s"' % config_path,
        'Environment="MIG_PARTED_SELECTED_CONFIG=%s"' % MIG_PARTED_CONFIG,
        "",
    ])


def _index(key):
    return int(key)


def mig_parted_text(node, layouts):
    """mig-parted's config (``version: v1``, api/spec/v1/spec.go) with one config, :data:`MIG_PARTED_CONFIG`: per
    GPU index of ``layouts`` (``{index: [profiles] or None}``) ``mig-enabled`` and the profile counts; GPUs with the
    same layout share an entry. None when no GPU is split."""
    if not any(layouts.values()):
        return None
    groups = []
    for key in sorted(layouts, key=_index):
        value = layouts[key]
        counts = None
        if value:
            counts = {}
            for profile in value:
                counts[profile] = counts.get(profile, 0) + 1
        for group in groups:
            if group["counts"] == counts:
                group["devices"].append(_index(key))
                break
        else:
            groups.append({"devices": [_index(key)], "counts": counts})
    lines = [
        HEADER % (MIG_PARTED_FILE, "docs/boot.md"),
        "# Node %s's MIG layout from the inventory; nvidia-mig-manager.service applies config %s at boot."
        % (node, MIG_PARTED_CONFIG),
        "version: v1",
        "mig-configs:",
        "  %s:" % MIG_PARTED_CONFIG,
    ]
    for group in groups:
        lines.append("    - devices: [%s]" % ", ".join(str(d) for d in group["devices"]))
        lines.append("      mig-enabled: %s" % ("true" if group["counts"] else "false"))
        if group["counts"]:
            lines.append("      mig-devices:")
            for profile in sorted(group["counts"]):
                lines.append('        "%s": %d' % (profile, group["counts"][profile]))
    return "\n".join(lines) + "\n"


def settings_text(settings):
    """``boot.json``: the settings, as the program reads them (``boot.read_settings``)."""
    return json.dumps(settings, indent=2, sort_keys=True) + "\n"


def wanted_files(spec, launcher):
    """``[(directory, relative path, text or None, mode)]`` for a node's boot ``spec`` (the role's ``boot``): every
    file of ours, None for one not wanted there. ``launcher(args)``: the program's launcher for its built-in
    arguments."""
    program, config = spec["program"], spec["config"]
    unit_dir, mig_dir = spec["unit_dir"], spec["mig_manager_dir"]
    slurmd_unit = "%s.service" % spec["slurmd_service"]
    units = dict.fromkeys([UNIT, RETRY_TIMER, RETRY_SERVICE, "%s.d/%s" % (slurmd_unit, DROPIN),
                           "%s.d/%s" % (MIG_MANAGER_UNIT, MIG_MANAGER_DROPIN)])
    launcher_text = settings_file = mig_parted = None
    if spec.get("enabled"):
        settings = spec["settings"]
        retry = int(spec.get("retry_interval") or 0)
        if settings.get("mig") == "mig-manager":
            mig_parted = mig_parted_text(settings.get("node"), settings.get("layouts") or {})
        launcher_text = launcher(["--config", config] + list(spec.get("args") or []))
        settings_file = settings_text(settings)
        units[UNIT] = unit_text(program, settings.get("wait", 300), slurmd_unit, mig_parted is not None, retry)
        units["%s.d/%s" % (slurmd_unit, DROPIN)] = dropin_text(program)
        if retry:
            units[RETRY_TIMER] = retry_timer_text(retry)
            units[RETRY_SERVICE] = retry_service_text(slurmd_unit)
        if mig_parted is not None:
            units["%s.d/%s" % (MIG_MANAGER_UNIT, MIG_MANAGER_DROPIN)] = mig_manager_dropin_text(
                os.path.join(mig_dir, MIG_PARTED_FILE))
    out = [os.path.split(program) + (launcher_text, "0755"), os.path.split(config) + (settings_file, "0644"),
           (mig_dir, MIG_PARTED_FILE, mig_parted, "0644")]
    return out + [(unit_dir, name, text, "0644") for name, text in units.items()]


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def systemd_running(run_dir="/run/systemd/system"):
    """sd_booted(3): systemd is this machine's init (a node without it gets the files, no daemon-reload)."""
    return os.path.isdir(run_dir)


def boot_plan(spec, launcher, systemd=None):
    """What differs on the node: ``{"dirs": [{"dest", "files", "absent", "mode"}], "reload", "needed"}``: per
    directory (and mode), the files whose text differs (an executable one also when it is not executable) and the
    files of ours there that are no longer wanted. ``reload``: a unit file changes and systemd runs (``systemd``
    overrides the test)."""
    groups = {}
    for directory, name, text, mode in wanted_files(spec, launcher):
        path = os.path.join(directory, name)
        group = groups.setdefault((directory, mode), {"dest": directory, "files": {}, "absent": [], "mode": mode})
        if text is None:
            if os.path.lexists(path):
                group["absent"].append(name)
        elif _read(path) != text or (mode == "0755" and not os.access(path, os.X_OK)):
            group["files"][name] = text
    dirs = [g for _key, g in sorted(groups.items()) if g["files"] or g["absent"]]
    units = os.path.normpath(spec["unit_dir"])
    running = systemd_running() if systemd is None else systemd
    return {"dirs": dirs, "reload": bool(running and any(os.path.normpath(d["dest"]) == units for d in dirs)),
            "needed": bool(dirs)}
