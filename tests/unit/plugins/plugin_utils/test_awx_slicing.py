"""AWX job slicing (plugin_utils/awx_slicing.py): a slice of a sliced job template is refused from AWX's own job
variables, a job of a workflow template or an unsliced job is not, and nothing else is read."""
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.awx_slicing import JOB_VARS, slice_problem


def job_vars(launch_type, template, workflow=None):
    """What AWX's awx_meta_vars give a job (the part that matters here, under both prefixes)."""
    out = {}
    for prefix in ("awx", "tower"):
        out.update({prefix + "_job_id": 7, prefix + "_job_launch_type": launch_type,
                    prefix + "_job_template_name": template, prefix + "_inventory_name": "hpc"})
        if workflow is not None:
            out.update({prefix + "_workflow_job_id": 6, prefix + "_workflow_job_name": workflow})
    return out


class Recording(dict):
    def __init__(self, *args):
        super(Recording, self).__init__(*args)
        self.read = []

    def get(self, key, default=None):
        self.read.append(key)
        return super(Recording, self).get(key, default)

    def __getitem__(self, key):
        self.read.append(key)
        return super(Recording, self).__getitem__(key)


def test_a_slice_of_a_sliced_job_template_is_refused_naming_the_template_and_the_way_out():
    problem = slice_problem(job_vars("workflow", "GPU deploy", workflow="GPU deploy"))
    assert str(problem) == (
        'host localhost: awx_workflow_job_name: expected an unsliced AWX job (one run that sees the whole inventory: '
        'slurm.conf lists every node, and one run at a time holds the lock on the first slurmctld host), found job '
        'template "GPU deploy" run as one slice of its sliced workflow job "GPU deploy" (awx_job_launch_type '
        'workflow); nothing was rendered, written or changed (set Job Slicing to 1 on the job template, and narrow a '
        'run with its Limit or size the restart batches with hpc_gres_deploy_serial instead; a workflow template of '
        'your own named exactly like this job template reads as a slice too: rename one of them)')


def test_unsliced_jobs_are_not_refused():
    assert slice_problem({}) is None  # ansible-playbook, ansible-navigator: no AWX variables at all
    assert slice_problem(job_vars("manual", "GPU deploy")) is None
    assert slice_problem(job_vars("scheduled", "GPU deploy")) is None
    assert slice_problem(job_vars("relaunch", "GPU deploy")) is None
    # a node of a workflow template: the workflow job carries the workflow template's name
    assert slice_problem(job_vars("workflow", "GPU deploy", workflow="Nightly GPU maintenance")) is None


def test_only_awx_own_job_variables_are_read():
    values = Recording(job_vars("workflow", "GPU deploy", workflow="GPU deploy"))
    values.update(hpc_gres_render_dir="/tmp/x", slurm_version="24.11")
    assert slice_problem(values) is not None
    assert sorted(values.read) == sorted(JOB_VARS)
    assert JOB_VARS == ("awx_job_launch_type", "awx_workflow_job_name", "awx_job_template_name")
