"""The job templates on a real Slurm that confines jobs to their GPUs, as the collection configures it by default
(``TaskPlugin=task/cgroup``, ``ConstrainDevices=yes``): the numbering the users' guide promises is what jobs see.

One node (2 x a100, 2 x h100) rendered from a model, run by a real slurmctld and slurmd on loopback with the
rendered slurm.conf, gres.conf and cgroup.conf. Cores and memory are not confined here (the host's CPUs are not
the node's synthetic ones); devices are, and a job that opens a GPU it was not given gets ``Operation not
permitted`` where an allowed one gives ``No such device or address`` (a device node with no driver behind it).
"""
import os
import re
import tempfile

import pytest

import slurm_loopback
import testpaths
from rendered_slurm import RenderedSlurm
from slurm_loopback import NODE

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import page_requests, users_guide_files

TEMPLATES = os.path.join(testpaths.ROOT, "roles", "hpc_gres_users_guide", "files", "job-templates")
PROBE = ('echo "CVD=$CUDA_VISIBLE_DEVICES JOB_GPUS=$SLURM_JOB_GPUS ORDER=$CUDA_DEVICE_ORDER"; '
         'for m in 0 1 2 3; do echo "nvidia$m: $(head -c1 {dev}$m 2>&1 >/dev/null)"; done')


def model():
    gpus = [{"index": 0, "type": "a100", "cores": "0-3"}, {"index": 1, "type": "a100", "cores": "0-3"},
            {"index": 2, "type": "h100", "cores": "4-7"}, {"index": 3, "type": "h100", "cores": "4-7"}]
    hostvars = {"ctl": {}, NODE: {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4,
                                  "hpc_gres_node_threads_per_core": 2, "hpc_gres_node_real_memory": 1000,
                                  "hpc_gres_gpus": gpus}}
    groups = {"all": ["ctl", NODE], "slurmctld": ["ctl"], "slurmd": [NODE]}
    return build_cluster_model(hostvars, groups, {
        "hpc_gres_cluster_name": "itest",
        "hpc_gres_slurm_conf_options": {"TaskPlugin": "task/cgroup", "SelectTypeParameters": "CR_Core"},
        "hpc_gres_cgroup_conf_options": {"ConstrainCores": "no", "ConstrainRAMSpace": "no"}})


@pytest.fixture(scope="module")
def cluster():
    slurm_loopback.require("a loopback Slurm cannot run")
    the_model = model()
    files = render_all(the_model)
    files.update(users_guide_files(the_model))
    with tempfile.TemporaryDirectory(prefix="slurm-confined-") as directory:
        slurm = RenderedSlurm(directory)
        try:
            slurm.write_rendered(files, cloud=False)
            slurm.start_munge()
            slurm.start_slurmctld()
            slurm.start_slurmd()
            slurm.wait_state("State=IDLE ", "gpu:a100:2")
            os.makedirs(os.path.join(directory, "jobs"))
            yield slurm, files
        finally:
            slurm.run("scancel -u root")
            slurm.stop()


def submit(slurm, options, template, command):
    """sbatch --wait: (job id, the job's output file)."""
    jobs = os.path.join(slurm.dir, "jobs")
    rc, out = slurm.run("sbatch --parsable --wait --chdir=%s %s %s/%s sh -c '%s'"
                        % (jobs, options, TEMPLATES, template, command.replace("'", "'\\''")))
    assert rc == 0, "%s failed (rc %d): %s\n%s" % (template, rc, out, slurm.log_tail("slurmd.log"))
    job = out.split()[0].split(";")[0]
    name = template.split(".")[0]
    with open(os.path.join(jobs, "%s-%s.out" % (name, job))) as handle:
        return job, handle.read()


def probe(output):
    seen = dict(re.findall(r"^(nvidia\d): (.*)$", output, re.M))
    return re.search(r"CVD=(\S*) JOB_GPUS=(\S*) ORDER=(\S*)", output).groups(), seen


def test_the_guide_says_this_cluster_confines_jobs(cluster):
    slurm, files = cluster
    assert "**numbered from 0 inside the job**" in files["USERS.md"]
    for options in page_requests(files["USERS.md"]):
        accepted, answer = slurm.test_only(options)
        assert accepted, (options, answer)


def test_multi_gpu_job_sees_its_gpus_from_0_and_only_them(cluster):
    slurm, _files = cluster
    _job, output = submit(slurm, "--gres=gpu:h100:2", "gpu-multi.sbatch", PROBE.format(dev=slurm.device("")))
    print(output)
    (visible, job_gpus, order), devices = probe(output)
    assert (visible, job_gpus, order) == ("0,1", "2,3", "PCI_BUS_ID")
    assert "2 GPUs" in output
    for minor in (0, 1):
        assert "Operation not permitted" in devices["nvidia%d" % minor], devices
    for minor in (2, 3):
        assert "No such device or address" in devices["nvidia%d" % minor], devices


def free_gpu_commands(page):
    """The commands of the guide's "Which GPUs are free" block."""
    block = page.split("## Which GPUs are free", 1)[1].split("```sh\n", 1)[1].split("```", 1)[0]
    return [line for line in block.splitlines() if line and not line.startswith("#")]


def test_single_gpu_job_next_to_another_sees_0(cluster):
    """While one job holds an a100: the guide's free-GPU commands show it in use, and a one-GPU job given the other
    a100 (node-wide 1) sees CUDA_VISIBLE_DEVICES=0 and may open only that device."""
    slurm, files = cluster
    rc, out = slurm.run("sbatch --parsable --gres=gpu:a100:1 --chdir=%s --wrap='sleep 120'"
                        % os.path.join(slurm.dir, "jobs"))
    assert rc == 0, out
    blocker = out.split()[0]
    slurm.wait(lambda: "JobState=RUNNING" in slurm.run("scontrol -o show job %s" % blocker)[1], "the blocker")
    try:
        shown = []
        for command in free_gpu_commands(files["USERS.md"]):
            rc, out = slurm.run(command)
            print("$ %s\n%s" % (command, out))
            assert rc == 0, (command, out)
            shown.append(out)
        assert "GRES_USED" in shown[0] and "gpu:a100:1(IDX:0)" in shown[0], shown[0]
        assert "GresUsed=gpu:a100:1(IDX:0),gpu:h100:0(IDX:N/A)" in shown[1], shown[1]
        assert "gres:gpu:a100:1" in shown[2], shown[2]
        _job, output = submit(slurm, "--gres=gpu:a100:1", "gpu-single.sbatch", PROBE.format(dev=slurm.device("")))
    finally:
        slurm.run("scancel %s" % blocker)
    print(output)
    (visible, job_gpus, _rest), devices = probe(output)
    assert (visible, job_gpus) == ("0", "1"), output
    assert "No such device or address" in devices["nvidia1"] and "Operation not permitted" in devices["nvidia0"]
