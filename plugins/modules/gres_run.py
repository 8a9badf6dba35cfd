#!/usr/bin/python
# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Module: the deploy's lock and run record on the controller host."""

DOCUMENTATION = r"""
module: gres_run
author: hpc.slurm_gres contributors (@hpc-slurm-gres)
version_added: "0.2.0"
short_description: Lock the cluster for one deploy and record what the run changes, on the controller host
description:
  - Keeps the deploy's lock and run records under O(root) on the controller host (the first host of group
    C(slurmctld) in the playbooks), so that one deploy runs at a time and every run can be undone.
  - O(step=lock) takes the lock (refused, naming user, host, start time and run id of the holder, unless
    O(break_lock) names that run) and creates the run's record. O(step=inspect) reads the lock and the runs that
    did not finish. O(step=check) takes nothing but fails like O(step=lock) while another run holds the lock
    (a run that changes nothing), unless O(break_lock) names the holder. O(step=record) stores, per host, the
    previous and new sha256 of each file the run changes and a copy of each previous file. O(step=state) moves
    the record to another state. O(step=finish) sets the final state, releases the lock, marks the runs this one
    finished as superseded and prunes old runs. O(step=read) returns a run's record and the previous files it
    kept.
options:
  step:
    description: What to do.
    type: str
    required: true
    choices: [lock, check, inspect, record, state, finish, read]
  root:
    description: Directory of the lock and the run records.
    type: path
    default: /var/lib/slurm-gres/runs
  run_id:
    description: The run; with O(step=lock), omitted for a new run id (UTC start time and a random suffix).
    type: str
  owner:
    description: With O(step=lock), who runs the deploy; stored in the lock and the record.
    type: dict
    suboptions:
      user:
        description: User running ansible-playbook.
        type: str
      control_host:
        description: Host running ansible-playbook.
        type: str
      pid:
        description: Process id of ansible-playbook on that host.
        type: int
      command:
        description: What the run does (C(deploy), C(rollback of RUN_ID)).
        type: str
  break_lock:
    description: With O(step=lock), the run id of a stale lock to break; refused when it does not name the holder.
    type: str
  break_reason:
    description: With O(break_lock), why the lock is broken (stored in the broken run's record).
    type: str
    default: broken explicitly (hpc_gres_break_lock)
  changes:
    description:
      - With O(step=record), host to C({node, roles, dir, files}), files being name to C({previous, new, changed})
        (sha256 of each).
    type: dict
  blobs:
    description: With O(step=record), sha256 to content of every previous file named in O(changes).
    type: dict
  state:
    description: With O(step=state) or O(step=finish), the record's new state.
    type: str
  note:
    description: A note stored with the state change.
    type: str
  fields:
    description: Extra fields stored in the record (the summary, the run this one rolls back).
    type: dict
    default: {}
  supersede:
    description: With O(step=finish), unfinished runs this run finished or undid; marked C(superseded).
    type: list
    elements: str
    default: []
  keep:
    description: With O(step=finish), how many runs to keep; older finished ones are removed.
    type: int
    default: 10
  named:
    description:
      - With O(step=read), the run is undone by a named rollback (not by itself after a late failure). Refused when
        it was rolled back already, or when a later run changed one of its files to other content than it installed
        (putting back its previous files would undo that run there too).
    type: bool
    default: false
extends_documentation_fragment:
  - hpc.slurm_gres.attributes.no_diff
  - hpc.slurm_gres.attributes
attributes:
  check_mode:
    support: full
    description: Only O(step=inspect) and O(step=read) do anything in check mode; the other steps change nothing.
"""

EXAMPLES = r"""
- name: Take the lock before anything is installed
  hpc.slurm_gres.gres_run:
    step: lock
    owner: {user: alice, control_host: admin01, pid: 4242, command: deploy}
  delegate_to: "{{ groups['slurmctld'][0] }}"
  run_once: true
  register: run

- name: Release it when the run is done
  hpc.slurm_gres.gres_run:
    step: finish
    run_id: "{{ run.run_id }}"
    state: done
  delegate_to: "{{ groups['slurmctld'][0] }}"
  run_once: true
"""

RETURN = r"""
run_id:
  description: The run.
  returned: when O(run_id) is given or O(step=lock)
  type: str
  sample: 20261201T111500Z-3fa9
lock:
  description: The lock holder after this step (null when free).
  returned: always
  type: dict
broken:
  description: With O(step=lock), the holder whose lock was broken (null when none was).
  returned: when O(step=lock)
  type: dict
unfinished:
  description: Records of earlier runs that did not finish (interrupted, or failed before their end), oldest first.
  returned: when O(step=lock) or O(step=inspect)
  type: list
  elements: dict
unfinished_deploys:
  description:
    - The deploys and rollbacks among RV(unfinished); a deploy finishes them and marks them superseded.
    - An unfinished maintenance or MIG reconfiguration run is continued by the next run of its own playbook.
  returned: when O(step=lock) or O(step=inspect)
  type: list
  elements: dict
record:
  description: The run's record after this step.
  returned: when O(run_id) names a run
  type: dict
previous:
  description: With O(step=read), host to file name to the previous content (null where the file did not exist).
  returned: when O(step=read)
  type: dict
pruned:
  description: With O(step=finish), the run ids removed.
  returned: when O(step=finish)
  type: list
  elements: str
"""

import datetime
import os
import socket

from ansible.module_utils.basic import AnsibleModule

# first: the payload's other files are then compiled once, not twice (common/payload_import.py)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import payload_import  # noqa: F401 pylint: disable=unused-import
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import run_record as rr


def _unfinished(root, exclude):
    """RV(unfinished) and RV(unfinished_deploys)."""
    unfinished = rr.unfinished_runs(root, exclude=exclude)
    return {"unfinished": unfinished, "unfinished_deploys": [r for r in unfinished if rr.is_deploy(r)]}


def main():
    module = AnsibleModule(
        argument_spec=dict(
            step=dict(type="str", required=True,
                      choices=["lock", "check", "inspect", "record", "state", "finish", "read"]),
            root=dict(type="path", default="/var/lib/slurm-gres/runs"),
            run_id=dict(type="str"),
            owner=dict(type="dict", options=dict(user=dict(type="str"), control_host=dict(type="str"),
                                                 pid=dict(type="int"), command=dict(type="str"))),
            break_lock=dict(type="str"),
            break_reason=dict(type="str", default="broken explicitly (hpc_gres_break_lock)"),
            changes=dict(type="dict"),
            blobs=dict(type="dict"),
            state=dict(type="str"),
            note=dict(type="str"),
            fields=dict(type="dict", default={}),
            supersede=dict(type="list", elements="str", default=[]),
            keep=dict(type="int", default=10),
            named=dict(type="bool", default=False),
        ),
        required_if=[("step", "record", ("run_id", "changes", "blobs")), ("step", "state", ("run_id", "state")),
                     ("step", "finish", ("run_id", "state")), ("step", "read", ("run_id",))],
        supports_check_mode=True,
    )
    p = module.params
    root, step, run_id = p["root"], p["step"], p["run_id"]
    where = socket.gethostname()
    if run_id is not None and not rr.valid_run_id(run_id):
        module.fail_json(msg="host %s: run_id: expected a run id such as 20261201T111500Z-3fa9, found %r"
                         % (where, run_id))
    result = {"changed": False}
    try:
        if step == "check":
            holder = rr.check_lock(root, allowed=[p["break_lock"]] if p["break_lock"] else [], where=where)
            module.exit_json(changed=False, lock=holder, run_id=run_id)
        if step == "inspect" or (module.check_mode and step != "read"):
            holder = rr.read_lock(root)
            module.exit_json(changed=False, lock=holder, run_id=run_id,
                             **_unfinished(root, [holder["run_id"]] if holder else []))
        if step == "lock":
            now = datetime.datetime.now(datetime.timezone.utc)
            run_id = run_id or rr.new_run_id(now, os.urandom(2).hex())
            owner = dict((k, v) for k, v in (p["owner"] or {}).items() if v is not None)
            owner.update(run_id=run_id, started=rr.utc_now(), controller_host=where)
            taken = rr.acquire_lock(root, owner, p["break_lock"], where="%s" % where)
            if taken["broken"] and rr.read_record(root, p["break_lock"]):
                record = rr.read_record(root, p["break_lock"])
                if record.get("state") not in rr.FINAL_STATES:
                    rr.set_state(root, p["break_lock"], record["state"], note="lock %s by run %s"
                                 % (p["break_reason"], run_id))
            rr.create_record(root, owner)
            result.update(changed=True, broken=taken["broken"], **_unfinished(root, [run_id]))
        elif step == "record":
            rr.add_changes(root, run_id, p["changes"], p["blobs"])
            result["changed"] = True
        elif step == "state":
            rr.set_state(root, run_id, p["state"], p["note"], **p["fields"])
            result["changed"] = True
        elif step == "finish":
            for other in p["supersede"]:
                if other != run_id and rr.read_record(root, other):
                    rr.set_state(root, other, "superseded", note="finished by run %s (%s)" % (run_id, p["state"]))
            rr.set_state(root, run_id, p["state"], p["note"], **p["fields"])
            rr.release_lock(root, run_id)
            result.update(changed=True, pruned=rr.prune(root, p["keep"], protect=[run_id]))
        elif step == "read":
            record = rr.read_record(root, run_id)
            if record is None:
                raise rr.RunError("no run record %s under %s on %s (known runs: %s)"
                                  % (run_id, root, where, ", ".join(rr.list_runs(root)) or "none"))
            problem = rr.undo_problem(root, record) if p.get("named") else None
            if problem:
                raise rr.RunError("rollback of run %s refused, nothing changed: %s" % (run_id, problem))
            result["previous"] = rr.previous_files(root, record)
    except rr.LockHeld as exc:
        module.fail_json(msg=str(exc), lock=exc.holder)
    except rr.RunError as exc:
        module.fail_json(msg=str(exc), lock=rr.read_lock(root))
    except OSError as exc:
        module.fail_json(msg="host %s: %s: %s" % (where, exc.filename or root, exc.strerror), lock=rr.read_lock(root))
    result.update(run_id=run_id, lock=rr.read_lock(root))
    if run_id:
        result["record"] = rr.read_record(root, run_id)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
