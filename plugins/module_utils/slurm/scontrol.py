"""What slurmctld says about a node (``scontrol show node``), and whether that is the registration we wanted.

Pure functions (no Ansible, no hostlist): the module that wraps them runs on a slurmctld host, where only the
Python standard library can be assumed.

Facts this encodes, seen live on Slurm 22.05.8 with ``File=`` GRES (see docs/deploy.md):
- ``Gres=`` shows what the node registered (``gpu:a100:4(S:0-1)``), the configured value until it registers.
- A registration with fewer GPUs than slurm.conf declares sets ``INVALID_REG`` and drains the node with
  ``gres/gpu count reported lower than configured (4 < 5)`` or, per type, ``gres/gpu:h100 count too low
  (2 < 3)``. When the node later registers correctly the flag clears but the drain stays: someone must resume it.
- The reason carries ``[user@time]``; the user is SlurmUser for drains slurmctld sets itself, which may be root,
  so the text of the reason, never the user, tells a GRES drain from an admin's.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import fold_untyped, parse_count

# Drains slurmctld sets when a node's GRES registration disagrees with slurm.conf. Only these are ever
# resumed by the deploy, and only once the node's Gres matches again.
GRES_DRAIN_PATTERNS = (
    re.compile(r"gres/\S+ count reported lower than configured", re.IGNORECASE),
    re.compile(r"gres/\S+ count too low", re.IGNORECASE),
    re.compile(r"gres/\S+:? ?count changed", re.IGNORECASE),
    re.compile(r"\bcount changed on node\b", re.IGNORECASE),
)
# Other drains slurmctld sets at registration when the node is not what slurm.conf declares. A fresh one
# after a restart means the deploy's node definition is wrong; it is reported, never resumed.
REGISTRATION_DRAIN_PATTERNS = (
    re.compile(r"^Low RealMemory", re.IGNORECASE),
    re.compile(r"^Low socket\*core\*thread count", re.IGNORECASE),
    re.compile(r"^Low CPUs", re.IGNORECASE),
    re.compile(r"^Low TmpDisk", re.IGNORECASE),
    re.compile(r"^Out of sync with hardware", re.IGNORECASE),
    re.compile(r"doesn't match socket boundaries", re.IGNORECASE),
    re.compile(r"invalid (gres|core|cpu)", re.IGNORECASE),
)
# Options of every module that talks to slurmctld (doc fragment hpc.slurm_gres.scontrol).
SCONTROL_ARGS = dict(
    scontrol=dict(type="str", default="scontrol"),
    slurm_conf=dict(type="path"),
)
DRAIN_FLAGS = frozenset(("DRAIN", "DRAINED", "DRAINING"))
INVALID_FLAGS = frozenset(("INVALID_REG", "INVAL"))
# Base states in which a node has not (yet) registered usefully; waiting may still help.
UNSETTLED_STATES = frozenset(("DOWN", "UNKNOWN", "FUTURE"))
# Flags (scontrol prints them after the base: IDLE+CLOUD+POWERED_DOWN, DOWN+REBOOT_ISSUED) of a node whose slurmd is
# not running or is about to stop: powered down by power saving, powering up or down, rebooting. A reboot only
# requested (REBOOT_REQUESTED, waiting for the node's jobs) leaves the registration as it is.
UNSETTLED_FLAGS = frozenset(("POWERED_DOWN", "POWERING_UP", "POWERING_DOWN", "REBOOT_ISSUED"))
# Fields whose values may contain spaces; scontrol prints them last, in this order (ReservationName since 23.11:
# slurm_sprint_node_table, src/api/node_info.c).
_TAIL_FIELDS = ("Reason", "Comment", "Extra", "InstanceId", "InstanceType", "ReservationName")
_KEY_RE = re.compile(r"(?:^|\s)([A-Za-z][A-Za-z0-9_]*)=")
_TAIL_RE = re.compile(r"(?:^|\s)(%s)=" % "|".join(_TAIL_FIELDS))
_REASON_SUFFIX_RE = re.compile(r"\s*\[([^@\]\s]*)@([^\]\s]*)\]\s*$")
_GRES_ITEM_RE = re.compile(r"\([^)]*\)")
_NOT_FOUND_RE = re.compile(r"^Node \S+ not found$", re.MULTILINE)


def _split_records(text):
    """One string per node: a ``-o`` line, or a multi-line block starting at ``NodeName=``."""
    records = []
    current = []
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or _NOT_FOUND_RE.match(stripped):  # "Node gpu99 not found" between two records
            continue
        if stripped.startswith("NodeName="):
            if current:
                records.append(" ".join(current))
            current = [stripped]
        elif current:
            current.append(stripped)
    if current:
        records.append(" ".join(current))
    return records


def _fields(record):
    """``Key=value ...`` -> dict, values that contain spaces (OS=, Reason=) kept whole."""
    tail = {}
    match = _TAIL_RE.search(record)
    head = record
    if match:
        head = record[:match.start()]
        rest = record[match.start():]
        marks = list(_TAIL_RE.finditer(rest))
        for i, mark in enumerate(marks):
            end = marks[i + 1].start() if i + 1 < len(marks) else len(rest)
            tail[mark.group(1)] = rest[mark.end():end].strip()
    fields = {}
    marks = list(_KEY_RE.finditer(head))
    for i, mark in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(head)
        fields[mark.group(1)] = head[mark.end():end].strip()
    fields.update(tail)
    return fields


def parse_state(text):
    """``IDLE+DRAIN+INVALID_REG`` / ``IDLE*`` -> (base, sorted flags, not_responding)."""
    text = (text or "").strip()
    parts = [p for p in text.split("+") if p]
    if not parts:
        return "", [], False
    not_responding = False
    base = parts[0]
    if base.endswith("*"):
        base = base[:-1]
        not_responding = True
    flags = []
    for part in parts[1:]:
        if part.endswith("*"):
            part = part[:-1]
            not_responding = True
        if part == "NOT_RESPONDING":
            not_responding = True
            continue
        flags.append(part)
    return base.upper(), sorted(set(f.upper() for f in flags)), not_responding


def reason_in_force(state_text):
    """Whether a node in ``State=`` ``state_text`` is out of use, so that its ``Reason=`` says why: slurmctld may keep
    the reason of a drain that was resumed since (24.11), which then says nothing of the node."""
    base, flags, not_responding = parse_state(state_text)
    return base in ("DOWN", "FAIL") or not_responding or bool(set(flags) & (DRAIN_FLAGS | {"FAIL", "FAILING"}))


def parse_gres_field(text):
    """``gpu:a100:4(S:0-1),gpu:h100:2(S:1),shard:8`` -> {"gpu:a100": 4, "gpu:h100": 2, "shard": 8}; a count with
    a size suffix is read as slurm.conf's is (``vmem:2G`` -> {"vmem": 2147483648}).

    Keys are lower-case, as Slurm compares GRES names and types. ``(null)`` or empty -> {}.
    """
    counts = {}
    text = (text or "").strip()
    if not text or text.lower() == "(null)":
        return counts
    for item in _GRES_ITEM_RE.sub("", text).split(","):
        parts = [p for p in item.strip().split(":") if p and p.lower() != "no_consume"]
        if not parts:
            continue
        count = 1
        if len(parts) > 1:
            try:
                count = parse_count(parts[-1])  # "vmem:2G" is 2 GiB, as slurm.conf's Gres= reads it
                parts.pop()
            except ValueError:
                pass
        key = ":".join(parts).lower()
        counts[key] = counts.get(key, 0) + count
    return counts


def parse_reason(text):
    """``gres/gpu count ... (4 < 5) [slurm@2024-12-19T11:03:34]`` -> (reason, user, time); None when absent."""
    if text is None:
        return None, None, None
    match = _REASON_SUFFIX_RE.search(text)
    if not match:
        return text.strip() or None, None, None
    return text[:match.start()].strip() or None, match.group(1) or None, match.group(2) or None


def parse_show_node(text):
    """Parse ``scontrol show node`` (multi-line or ``-o``) -> {node name: record}.

    A record holds every field as printed (``State``, ``Gres``, ``SlurmdStartTime``, ...) plus ``name``,
    ``state_base``, ``state_flags`` (list), ``not_responding`` (bool), ``gres`` (dict), ``reason`` (text
    without the ``[user@time]`` suffix, or None), ``reason_user``, ``reason_time``.
    """
    nodes = {}
    for record in _split_records(text):
        fields = _fields(record)
        name = fields.get("NodeName")
        if not name:
            continue
        base, flags, not_responding = parse_state(fields.get("State"))
        reason, user, when = parse_reason(fields.get("Reason"))
        start = fields.get("SlurmdStartTime")
        node = dict(fields)
        node.update({
            "name": name,
            "state_base": base,
            "state_flags": flags,
            "not_responding": not_responding,
            "gres": parse_gres_field(fields.get("Gres")),
            "reason": reason,
            "reason_user": user,
            "reason_time": when,
            "slurmd_start_time": None if start in (None, "", "None") else start,
        })
        nodes[name] = node
    return nodes


# slurmctld 24.11 and later append this to the reason of a drained node it sets DOWN because slurmd did not
# answer (seen live: "MIG reconfiguration : Not responding"); 22.05 keeps the reason as it was.
NOT_RESPONDING_SUFFIX = " : Not responding"
# `scontrol reboot` appends this to the node's reason when slurmctld issues the reboot, and a drained node keeps it
# after it registers again (every release: set_node_reboot_reason() in src/slurmctld/node_mgr.c and its call in
# controller.c _queue_reboot_msg(); the drain is cleared only with ASAP or nextstate=).
REBOOT_ISSUED_SUFFIX = " : reboot issued"
KEPT_DRAIN_SUFFIXES = (NOT_RESPONDING_SUFFIX, REBOOT_ISSUED_SUFFIX)


def parse_gres_used(text):
    """``{gres name: count in use}`` from ``scontrol -d show node``'s ``GresUsed=`` (``gpu:a100:2(IDX:0,2),
    shard:a100:0(0/8,0/8)``, the shape of ``Gres=``: parse_gres_field), every type of a name together; None when
    there is none (no ``-d``)."""
    if text is None:
        return None
    used = {}
    for key, count in parse_gres_field(text).items():
        name = key.split(":", 1)[0]
        used[name] = used.get(name, 0) + count
    return used


def same_drain_reason(reason, ours):
    """True when ``reason`` is the drain ``ours``, also after slurmctld appended `` : Not responding`` or
    `` : reboot issued`` (or both) to it."""
    if not reason or not ours:
        return False
    while reason != ours:
        for suffix in KEPT_DRAIN_SUFFIXES:
            if reason.endswith(suffix):
                reason = reason[:-len(suffix)]
                break
        else:
            return False
    return True


def is_gres_drain_reason(reason):
    """True for the drain reasons slurmctld sets on a GRES count mismatch (and only those)."""
    return bool(reason) and any(p.search(reason) for p in GRES_DRAIN_PATTERNS)


def is_registration_drain_reason(reason):
    """True for other drains slurmctld sets when a node registers unlike its slurm.conf definition."""
    return bool(reason) and any(p.search(reason) for p in REGISTRATION_DRAIN_PATTERNS)


def gres_differences(expected, reported):
    """[(gres key, expected count, reported count)] where the two disagree, sorted by key."""
    expected = {k.lower(): int(v) for k, v in (expected or {}).items()}
    reported = fold_untyped(expected, {k.lower(): int(v) for k, v in (reported or {}).items()})
    return [(key, expected.get(key, 0), reported.get(key, 0))
            for key in sorted(set(expected) | set(reported))
            if expected.get(key, 0) != reported.get(key, 0)]


def format_gres(counts):
    """{"gpu:a100": 4} -> ``gpu:a100:4`` (sorted); {} -> ``(none)``."""
    if not counts:
        return "(none)"
    return ",".join("%s:%d" % (k, v) for k, v in sorted(counts.items()))


def describe(node):
    """One line for messages: ``State=IDLE+DRAIN Gres=gpu:a100:4 Reason='...' SlurmdStartTime=...``."""
    if node is None:
        return "not known to slurmctld"
    text = "State=%s Gres=%s" % (node.get("State", "?"), node.get("Gres", "?"))
    if node.get("reason"):
        text += " Reason=%r" % node["reason"]
    text += " SlurmdStartTime=%s" % (node.get("slurmd_start_time") or "None")
    return text


def registration_verdict(node, expected_gres=None, since=None, check_gres=True):
    """Judge one node record against the registration the deploy expects.

    ``since``: the node's ``SlurmdStartTime`` before slurmd was restarted; until it changes, the node has not
    registered since the restart. ``check_gres``: compare ``Gres=`` with ``expected_gres`` (off while
    slurmctld still runs the previous definitions). Returns ``{"status", "message", "resume"}`` where status is
    ``ok`` (registered as expected; an admin's drain or DOWN is kept and reported), ``resume`` (registered as
    expected but still drained by an earlier GRES mismatch), ``waiting`` (not registered yet; may change) or
    ``failed`` (registered, and wrong: only a config or hardware change helps).

    A node slurmctld set DOWN while its slurmd was stopped stays DOWN after it registers again unless its reason
    is ``Not responding`` (and ReturnToService is 1 or 2): a drained node keeps the drain's reason. So once
    ``since`` shows a fresh registration, DOWN is settled and judged like a drain, never waited on.
    """
    def verdict(status, message):
        return {"status": status, "message": message, "resume": status == "resume"}

    if node is None:
        return verdict("failed", "not known to slurmctld (is it in slurm.conf on the controller?)")
    flags = set(node.get("state_flags") or [])
    base = node.get("state_base") or ""
    started = node.get("slurmd_start_time")
    reason = node.get("reason")
    if since is not None and (started is None or started == since):
        return verdict("waiting", "slurmd has not registered since the restart (SlurmdStartTime=%s)"
                       % (started or "None"))
    if node.get("not_responding"):
        return verdict("waiting", "not responding (%s)" % describe(node))
    if flags & INVALID_FLAGS:
        return verdict("failed", "registration refused by slurmctld: %s" % describe(node))
    if flags & UNSETTLED_FLAGS:
        return verdict("waiting", "state %s (%s)" % ("+".join(sorted(flags & UNSETTLED_FLAGS)), describe(node)))
    if node.get("SlurmdStartTime") == "None":  # printed, and empty: the Gres shown is slurm.conf's, not a registration
        return verdict("waiting", "slurmd has not registered with this slurmctld (SlurmdStartTime=None; %s)"
                       % describe(node))
    down_registered = base == "DOWN" and since is not None
    if base in UNSETTLED_STATES and not down_registered:
        return verdict("waiting", "state %s (%s)" % (base, describe(node)))
    if check_gres and expected_gres is not None:
        diffs = gres_differences(expected_gres, node.get("gres"))
        if diffs:
            detail = ", ".join("%s: expected %d, slurmctld has %d" % d for d in diffs)
            return verdict("failed", "Gres differs from slurm.conf (%s): %s" % (detail, describe(node)))
    if flags & DRAIN_FLAGS:
        if is_gres_drain_reason(reason):
            if not check_gres:
                return verdict("ok", "still drained by an earlier GRES mismatch; resumed once slurmctld has the "
                               "new definitions (%s)" % describe(node))
            return verdict("resume", "registered with the declared Gres, drained by an earlier GRES mismatch")
        if is_registration_drain_reason(reason):
            return verdict("failed", "drained by slurmctld at registration: %s" % describe(node))
        if down_registered:
            return verdict("ok", "registered; DOWN and drained by someone else, left so until that drain is "
                           "resumed (slurmctld set it DOWN while slurmd did not answer; %s)" % describe(node))
        return verdict("ok", "registered; drained by someone else, left drained (%s)" % describe(node))
    if down_registered:
        return verdict("ok", "registered; slurmctld keeps it DOWN (ReturnToService returns only a node DOWN for "
                       "'Not responding'), left DOWN: scontrol update NodeName=%s State=RESUME returns it (%s)"
                       % (node.get("name"), describe(node)))
    return verdict("ok", "registered: %s" % describe(node))


# squeue selection of the jobs that hold a node (a drained node is idle once none is left)
JOB_STATES = "CONFIGURING,RUNNING,COMPLETING,SUSPENDED,STOPPED"
SQUEUE_FORMAT = "%A|%u|%T|%j"


def parse_squeue(text):
    """``squeue --noheader --format=%A|%u|%T|%j`` -> [{"id", "user", "state", "name"}] (names may hold ``|``)."""
    jobs = []
    for line in (text or "").splitlines():
        if not line.strip():
            continue
        parts = line.strip().split("|", 3) + ["", "", ""]
        jobs.append({"id": parts[0], "user": parts[1], "state": parts[2], "name": parts[3]})
    return jobs


def format_jobs(jobs):
    """``job 4711 (user alice, RUNNING, train); ...`` for messages."""
    return "; ".join("job %s (user %s, %s, %s)" % (j["id"], j["user"], j["state"], j["name"]) for j in jobs)


class Scontrol(object):
    """Runs scontrol for the modules: ``run(argv, environ_update) -> (rc, out, err)`` (AnsibleModule.run_command)."""

    def __init__(self, run, path, slurm_conf=None):
        self._run = run
        self.path = path
        self.environ = {"LC_ALL": "C"}
        if slurm_conf:
            self.environ["SLURM_CONF"] = slurm_conf

    def run(self, *args):
        return self._run([self.path] + list(args), environ_update=self.environ)

    def node(self, name):
        """``(record or None, error or None)``: None and no error when slurmctld does not know the node."""
        rc, out, err = self.run("show", "node", name)
        if rc != 0 and "not found" in (err + out).lower():
            return None, None
        if rc != 0:
            # slurmctld unreachable (restarting): worth waiting for
            return None, "scontrol show node %s failed (rc %d): %s" % (name, rc, (err or out).strip())
        return parse_show_node(out).get(name), None

    def nodes(self, names, details=False):
        """``({name: record or None}, error or None)`` for several nodes in one call (a hostlist expression).

        scontrol prints the nodes it knows and ``Node X not found`` for the others, with rc 1; an error without
        any such line (slurmctld unreachable) is returned as the error. ``details``: ``scontrol -d`` (``GresUsed``).
        """
        from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.hostlists import slurm_hostlist
        names = list(names)
        if not names:
            return {}, None
        # a form every release reads: the scontrol here may be older than 23.11 (no "node[01-02]-ib")
        rc, out, err = self.run(*(["-d"] if details else []) + ["-o", "show", "node", slurm_hostlist(names)])
        records = parse_show_node(out)
        if rc != 0 and not _NOT_FOUND_RE.search((out or "") + (err or "")):
            return None, "scontrol show node failed (rc %d): %s" % (rc, (err or out).strip())
        return {name: records.get(name) for name in names}, None
