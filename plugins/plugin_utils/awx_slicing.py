# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""AWX / Ansible Automation Platform job slicing, which every run that sees the cluster as a whole refuses.

A job template with Job Slicing N > 1 becomes a workflow job of N jobs that run in parallel, each on every N-th host
of the inventory by name (AWX's ``Inventory.get_sliced_hosts``). A render in one of them would write a slurm.conf
without the other slices' nodes (a deploy would remove them from the cluster), each slice would take the lock of its
own, and a rollback would undo only its slice's hosts.

AWX hands the playbook no slice number or count (``job_slice_number`` and ``job_slice_count`` only shape the inventory
it writes for the job). What it does hand every job, as extra variables (``awx_meta_vars``; each also as
``tower_*``), tells a slice: a job launched by a workflow (``awx_job_launch_type`` ``workflow``) whose workflow job
carries the name of the job's own template, which is the name AWX gives the workflow job a sliced template becomes.
These three variables of AWX's are the one exception to the rule that the collection reads nothing outside the
``hpc_gres_`` namespace.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem

JOB_VARS = ("awx_job_launch_type", "awx_workflow_job_name", "awx_job_template_name")


def slice_problem(job_vars, host="localhost"):
    """The refusal of a sliced AWX job (a Problem for ``host``, the control machine), or None.

    ``job_vars`` is the task's variables; only ``JOB_VARS`` are read from it.
    """
    launch, workflow, template = (job_vars.get(name) for name in JOB_VARS)
    if launch != "workflow" or not template or workflow != template:
        return None
    return Problem(
        host, "awx_workflow_job_name",
        "an unsliced AWX job (one run that sees the whole inventory: slurm.conf lists every node, and one run at a "
        "time holds the lock on the first slurmctld host)",
        'job template "%s" run as one slice of its sliced workflow job "%s" (awx_job_launch_type workflow); nothing '
        "was rendered, written or changed" % (template, workflow),
        'set Job Slicing to 1 on the job template, and narrow a run with its Limit or size the restart batches with '
        'hpc_gres_deploy_serial instead; a workflow template of your own named exactly like this job template reads '
        'as a slice too: rename one of them')
