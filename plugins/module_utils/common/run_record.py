# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The deploy's run record and lock, kept on the controller host (plain Python, no Ansible imports).

Layout under ``root`` (default ``/var/lib/slurm-gres/runs``)::

    lock                       JSON: the run holding the lock (run_id, user, control_host, pid, started)
    <run_id>/record.json       what the run changed: per host, per file the previous and new sha256
    <run_id>/previous/<sha256> the previous copy of each changed file, stored once per distinct content

A record's ``state`` moves ``locked -> recorded -> installed -> restarted -> done``; a late failure adds
``rolling_back -> rolled_back`` (or ``rollback_failed``); a later run that finishes an interrupted one marks it
``superseded``. A record in a state that is not final, whose run no longer holds the lock, is an interrupted run.
A maintenance run (``command: maintenance``, plugin_utils/maintenance.py) moves ``locked -> maintaining -> done``
and stays ``maintaining`` while nodes are left to do, so that the next maintenance run continues it. The MIG
runbook (``command: MIG reconfiguration``) records no files (a rollback cannot undo a layout): it moves
``locked -> reconfiguring -> done``, or ``stopped`` at the node that failed; only a killed one stays unfinished.
"""

import datetime
import errno
import hashlib
import json
import os
import shutil

FINAL_STATES = ("done", "rolled_back", "rollback_failed", "superseded", "stopped")
STATES = ("locked", "recorded", "installed", "restarted", "rolling_back", "maintaining", "reconfiguring") + FINAL_STATES
MIG_COMMAND = "MIG reconfiguration"
MAINTENANCE_COMMAND = "maintenance"
LOCK_NAME = "lock"
RECORD_NAME = "record.json"
PREVIOUS_DIR = "previous"


class RunError(Exception):
    """A refusal a user can act on (its message says what to do)."""


class LockHeld(RunError):
    def __init__(self, message, holder):
        RunError.__init__(self, message)
        self.holder = holder


def sha256(text):
    return None if text is None else hashlib.sha256(text.encode("utf-8")).hexdigest()


def utc_now():
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def new_run_id(now, token):
    """Sortable run id: ``20261201T111500Z-3fa9`` from a UTC datetime and a short random token."""
    return "%s-%s" % (now.strftime("%Y%m%dT%H%M%SZ"), token)


def valid_run_id(run_id):
    return bool(run_id) and all(c.isalnum() or c in "-_." for c in run_id) and not run_id.startswith(".")


def _write_json(path, data):
    tmp = "%s.%d.tmp" % (path, os.getpid())
    with open(tmp, "w") as handle:
        json.dump(data, handle, indent=1, sort_keys=True)
        handle.write("\n")
        handle.flush()
        os.fsync(handle.fileno())
    os.rename(tmp, path)


def _read_json(path):
    try:
        with open(path) as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def command_of(record):
    return (record or {}).get("command") or "deploy"


def is_deploy(record):
    """A deploy or a rollback (``rollback of RUN``): a run whose files another deploy finishes. An unfinished
    maintenance or MIG runbook run is continued by the next run of its own playbook."""
    command = command_of(record)
    return command == "deploy" or command.startswith("rollback")


def holder_kind(record):
    command = command_of(record)
    return ("a maintenance run" if command == MAINTENANCE_COMMAND else "a rollback" if command.startswith("rollback")
            else "a MIG reconfiguration" if command == MIG_COMMAND else "a deploy")


def holder_text(holder):
    return ("run %s by user %s from host %s (pid %s), started %s"
            % (holder.get("run_id"), holder.get("user"), holder.get("control_host"), holder.get("pid"),
               holder.get("started")))


# ---------------------------------------------------------------------------------------------- lock

def read_lock(root):
    return _read_json(os.path.join(root, LOCK_NAME))


def acquire_lock(root, owner, break_lock=None, where="the controller host"):
    """Take the lock for ``owner`` (a dict with run_id, user, control_host, pid, started).

    ``break_lock``: the run id of a holder to replace (a stale lock). Returns ``{"lock", "broken"}``; raises
    LockHeld naming the holder, or RunError when ``break_lock`` does not name the holder.
    """
    os.makedirs(root, mode=0o755, exist_ok=True)
    path = os.path.join(root, LOCK_NAME)
    broken = None
    holder = read_lock(root)
    if holder is not None and break_lock:
        if holder.get("run_id") != break_lock:
            raise RunError("hpc_gres_break_lock=%s does not name the lock holder on %s: the lock (%s) is held by "
                           "%s; nothing was changed" % (break_lock, where, path, holder_text(holder)))
        os.rename(path, os.path.join(root, "%s.broken.%s" % (LOCK_NAME, break_lock)))
        broken = holder
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except OSError as exc:
        if exc.errno != errno.EEXIST:
            raise
        holder = read_lock(root) or {"run_id": "?"}
        raise LockHeld(held_message(root, holder, where, owner), holder)
    with os.fdopen(fd, "w") as handle:
        json.dump(owner, handle, sort_keys=True)
        handle.write("\n")
    return {"lock": owner, "broken": broken}


def held_message(root, holder, where, refused=None):
    """The refusal of the run ``refused`` (its owner dict; a deploy when None) while ``holder`` holds the lock."""
    state = (read_record(root, holder.get("run_id")) or {}).get("state", "unknown (no record of it here)")
    kind = holder_kind(holder)
    return ("%s refused, nothing was changed: %s holds the lock on %s (%s): %s, state %s. Wait for "
            "it to end. If that run is gone (its ansible-playbook killed, its machine lost), break the lock "
            "explicitly: rerun with -e hpc_gres_break_lock=%s (the next run then finishes or undoes what that run "
            "left half done)" % (command_of(refused), "another " + kind[2:] if kind == holder_kind(refused) else kind,
                                 where, os.path.join(root, LOCK_NAME), holder_text(holder), state,
                                 holder.get("run_id")))


def check_lock(root, allowed=(), where="the controller host"):
    """A deploy that changes nothing takes no lock, but is refused while another run holds it (LockHeld);
    ``allowed``: holder run ids that do not count (a holder whose process is gone)."""
    holder = read_lock(root)
    if holder is not None and holder.get("run_id") not in allowed:
        raise LockHeld(held_message(root, holder, where), holder)
    return holder


def release_lock(root, run_id):
    """Remove the lock when ``run_id`` holds it; True when it was removed."""
    holder = read_lock(root)
    if holder is None or holder.get("run_id") != run_id:
        return False
    os.unlink(os.path.join(root, LOCK_NAME))
    return True


# ---------------------------------------------------------------------------------------------- records

def record_path(root, run_id):
    return os.path.join(root, run_id, RECORD_NAME)


def read_record(root, run_id):
    if not run_id or not valid_run_id(run_id):
        return None
    return _read_json(record_path(root, run_id))


def list_runs(root):
    """Run ids with a record, oldest first (run ids sort by their start time)."""
    try:
        names = os.listdir(root)
    except OSError:
        return []
    return sorted(n for n in names if valid_run_id(n) and os.path.isfile(record_path(root, n)))


def create_record(root, owner, now=None):
    run_dir = os.path.join(root, owner["run_id"])
    os.makedirs(os.path.join(run_dir, PREVIOUS_DIR), mode=0o700, exist_ok=True)
    record = dict(owner, state="locked", hosts={}, history=[{"state": "locked", "at": now or utc_now()}])
    _write_json(record_path(root, owner["run_id"]), record)
    return record


def _load(root, run_id):
    record = read_record(root, run_id)
    if record is None:
        raise RunError("no run record %s under %s (known runs: %s)"
                       % (run_id, root, ", ".join(list_runs(root)) or "none"))
    return record


def set_state(root, run_id, state, note=None, now=None, **fields):
    if state not in STATES:
        raise RunError("unknown run state %r (expected one of %s)" % (state, ", ".join(STATES)))
    record = _load(root, run_id)
    record["state"] = state
    entry = {"state": state, "at": now or utc_now()}
    if note:
        entry["note"] = note
    record.setdefault("history", []).append(entry)
    record.update(fields)
    _write_json(record_path(root, run_id), record)
    return record


def add_changes(root, run_id, changes, blobs, now=None):
    """Record what the run is about to change and keep the previous copies.

    ``changes``: ``{host: {"node": name or None, "role": "slurmd"|"slurmctld", "dir": "/etc/slurm",
    "files": {name: {"previous": sha256 or None, "new": sha256 or None}}}}`` (only the files that change);
    ``blobs``: ``{sha256: content}`` of every previous file named there. Each copy is checked against its sha256.
    """
    record = _load(root, run_id)
    prev_dir = os.path.join(root, run_id, PREVIOUS_DIR)
    os.makedirs(prev_dir, mode=0o700, exist_ok=True)
    for host, change in changes.items():
        for name, sums in change.get("files", {}).items():
            digest = sums.get("previous")
            if digest is None:
                continue
            if digest not in blobs or sha256(blobs[digest]) != digest:
                raise RunError("host %s: %s: expected the previous content with sha256 %s, found %s"
                               % (host, name, digest, "none" if digest not in blobs else "other content"))
            target = os.path.join(prev_dir, digest)
            if not os.path.exists(target):
                with open(target + ".tmp", "w") as handle:
                    handle.write(blobs[digest])
                os.rename(target + ".tmp", target)
            sums["copy"] = target
        record["hosts"][host] = change
    record["state"] = "recorded"
    record.setdefault("history", []).append({"state": "recorded", "at": now or utc_now()})
    _write_json(record_path(root, run_id), record)
    return record


def previous_files(root, record):
    """``{host: {name: content or None}}``: what each host of the record had before the run (None: no file)."""
    out = {}
    for host, change in record.get("hosts", {}).items():
        files = {}
        for name, sums in change.get("files", {}).items():
            digest = sums.get("previous")
            if digest is None:
                files[name] = None
                continue
            path = os.path.join(root, record["run_id"], PREVIOUS_DIR, digest)
            try:
                with open(path) as handle:
                    content = handle.read()
            except OSError as exc:
                raise RunError("run %s, host %s, %s: expected the previous copy %s, found it unreadable (%s)"
                               % (record["run_id"], host, name, path, exc.strerror))
            if sha256(content) != digest:
                raise RunError("run %s, host %s, %s: the previous copy %s does not match its sha256 %s"
                               % (record["run_id"], host, name, path, digest))
            files[name] = content
        out[host] = files
    return out


def undo_problem(root, record):
    """Why the named run ``record`` cannot be undone by putting back its previous files, or None.

    It was rolled back already; or a later run changed a file of one of its hosts (the rollback puts back every
    file the record holds for a host, changed or not) to content that is neither what this run installed nor what
    it replaced: putting back the previous files would silently undo that run there too. Later runs are followed
    in order, each file taking the new content of the last run that changed it; a run rolled back (late, or by a
    named rollback whose own record then carries the change) changed nothing."""
    run_id = record.get("run_id")
    command = command_of(record)
    if command == MIG_COMMAND:
        return ("run %s is a MIG reconfiguration: it keeps no copy of the files it replaced, and the files of before "
                "it name the MIG devices of the old layout (slurmd would drain the node with them). To go back, put "
                "the previous mig lists in the inventory and run ansible-playbook hpc.slurm_gres.mig_reconfigure "
                "again" % run_id)
    if command == MAINTENANCE_COMMAND:
        return "run %s is a maintenance run: it changed no Slurm file, there is nothing to put back" % run_id
    if record.get("state") == "rolled_back":
        last = (record.get("history") or [{}])[-1]
        return "run %s was rolled back already%s" % (run_id, " (%s)" % last["note"] if last.get("note") else "")
    mine = {(host, name): (sums.get("new"), sums.get("previous")) for host, change in record.get("hosts", {}).items()
            for name, sums in change.get("files", {}).items()}
    current = {key: (new, run_id) for key, (new, _previous) in mine.items()}
    for later_id in list_runs(root):
        if later_id <= run_id:
            continue
        later = read_record(root, later_id) or {}
        if later.get("state") == "rolled_back":
            continue
        for host, change in later.get("hosts", {}).items():
            for name, sums in change.get("files", {}).items():
                if (host, name) in current and sums.get("changed"):
                    current[(host, name)] = (sums.get("new"), later_id)
    changed = sorted((later_id, host, name) for (host, name), (digest, later_id) in current.items()
                     if digest not in mine[(host, name)])
    if not changed:
        return None
    last = changed[-1][0]
    where = ", ".join("%s %s (run %s)" % (host, name, later_id) for later_id, host, name in changed[:6])
    return ("a later run changed files of its hosts: %s; putting back run %s's previous files would undo that run "
            "there too: roll back run %s first (-e hpc_gres_rollback=%s), then this one"
            % (where, run_id, last, last))


def unfinished_runs(root, exclude=()):
    """Records not in a final state, oldest first, except the runs in ``exclude``."""
    out = []
    for run_id in list_runs(root):
        if run_id in exclude:
            continue
        record = read_record(root, run_id)
        if record and record.get("state") not in FINAL_STATES:
            out.append(record)
    return out


def prune(root, keep, protect=()):
    """Remove the oldest finished runs beyond the ``keep`` newest; never an unfinished or protected one."""
    runs = list_runs(root)
    removed = []
    for run_id in runs[:max(0, len(runs) - keep)]:
        record = read_record(root, run_id) or {}
        if run_id in protect or record.get("state") not in FINAL_STATES:
            continue
        shutil.rmtree(os.path.join(root, run_id))
        removed.append(run_id)
    return removed
