# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a maintenance run or the MIG runbook may take the run lock (pure; controller side; ``gres_plan``).

A deploy or rollback takes the lock in ``roles/hpc_gres_run/tasks/begin.yml`` and finishes the runs of its own kind
that did not finish. The other commands that take the same lock follow one rule: refused while a run holds it
(unless its ansible-playbook on this control machine is gone, or the admin breaks it), refused while a deploy or
rollback did not finish (its files may be half installed), and an interrupted run of the same command is continued
and marked superseded at the end. An interrupted run of another non-deploy command is not this run's to judge.
"""
from __future__ import annotations

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.run_record import (
    MAINTENANCE_COMMAND as MAINTENANCE, MIG_COMMAND as MIG, command_of, holder_kind, holder_text, is_deploy)


def lock_plan(command, holder, holder_gone, unfinished, break_lock=""):
    """``{"refusal", "break_lock", "continues"}`` for a run of ``command`` (MAINTENANCE or MIG).

    ``holder``: the lock's holder (None when free); ``holder_gone``: it ran from this control machine and its
    ansible-playbook is gone; ``unfinished``: records of runs that did not finish, the holder's excluded;
    ``break_lock``: the run id an admin asked to break (-e hpc_gres_break_lock=RUN_ID). ``continues``: the run ids
    of interrupted runs of the same command (the holder's included when it is one), oldest first.
    """
    if command not in (MAINTENANCE, MIG):
        raise ValueError("lock_plan: unknown command %r" % command)
    same = [r.get("run_id") for r in unfinished or [] if command_of(r) == command]
    if holder and command_of(holder) == command:
        same.append(holder.get("run_id"))
    if holder and break_lock and holder.get("run_id") == break_lock:
        return {"refusal": None, "break_lock": break_lock, "continues": same}
    if holder and not holder_gone:
        return {"refusal": "%s refused, nothing was changed: %s holds the lock: %s. Wait for it to end; if that run "
                "is gone (killed, its machine lost), break the lock explicitly: -e hpc_gres_break_lock=%s"
                % (command, holder_kind(holder), holder_text(holder), holder.get("run_id")),
                "break_lock": None, "continues": []}
    deploys = [r for r in unfinished or [] if is_deploy(r)]
    if holder and is_deploy(holder):
        deploys.insert(0, holder)
    if deploys:
        first = deploys[0]
        return {"refusal": "%s refused, nothing was changed: %s did not finish: %s, state %s. Its files may be half "
                "installed and %s. Finish it first: ansible-playbook hpc.slurm_gres.deploy_gres -i INVENTORY (it "
                "takes the lock over and finishes the run)"
                % (command, holder_kind(first), holder_text(first), first.get("state", "unknown"),
                   "a reboot would restart slurmd with them" if command == MAINTENANCE
                   else "the runbook would verify and install beside them"),
                "break_lock": None, "continues": []}
    return {"refusal": None, "break_lock": holder.get("run_id") if holder else None, "continues": same}
