"""The collection run the way AWX and Ansible Automation Platform run it: ansible-runner on a private data directory
laid out as AWX lays out a job's (awx/main/tasks/jobs.py): project/ is the site's repository with
collections/requirements.yml and small playbooks that import the collection's; requirements_collections/ holds the
collection as the project update installs it from that file; inventory/hosts is the script AWX writes from its
inventory (every host's variables, groups filtered to the job's slice); env/extravars carries AWX's job variables.

The render-only job writes what ansible-playbook writes, verify runs on emulated nodes to the end, and one slice of
a sliced job template is refused before anything is rendered or written. meta/execution-environment.yml gives
ansible-builder a build context, and leaves an EE of the site's own that includes the collection buildable.
"""
import json
import os
import shutil
import subprocess

import pytest
import yaml

import testpaths
from emulated_node import Node, fail_or_skip, node_nvidia_smi, write_inventory
from test_package import GALAXY, golden_example

ROOT = testpaths.ROOT
TARBALL = "%s-%s-%s.tar.gz" % (GALAXY["namespace"], GALAXY["name"], GALAXY["version"])
# The site's playbooks: AWX offers a job template only files of the project (awx/main/utils/ansible.py
# could_be_playbook), so each imports the collection's playbook by name.
PROJECT_PLAYBOOKS = {
    "render-gres.yml": "hpc.slurm_gres.render_gres",
    "verify-gres.yml": "hpc.slurm_gres.verify_gres",
    "deploy-gres.yml": "hpc.slurm_gres.deploy_gres",
}
RENDER_TASK = "Validate the inventory, render every file and prove per node and GPU type that the counts agree"
VERIFY_TASK = "Verify the rendered files against this node; with a plan, also read what it has and plan the install"
REFUSAL = ('host localhost: awx_workflow_job_name: expected an unsliced AWX job (one run that sees the whole '
           'inventory: slurm.conf lists every node, and one run at a time holds the lock on the first slurmctld '
           'host), found job template "GPU deploy" run as one slice of its sliced workflow job "GPU deploy" '
           '(awx_job_launch_type workflow); nothing was rendered, written or changed (set Job Slicing to 1')


def awx_job_vars(template, launch_type="manual", workflow=None):
    """The extra variables AWX gives every job (awx_meta_vars, under both prefixes). A sliced job template becomes a
    workflow job of its own name whose jobs are launched by that workflow."""
    out = {}
    for prefix in ("awx", "tower"):
        values = {"job_id": 4711, "job_launch_type": launch_type, "job_template_id": 12, "job_template_name": template,
                  "inventory_id": 3, "inventory_name": "hpc", "project_revision": "0" * 40,
                  "project_scm_branch": "main", "execution_node": "awx-ee-1", "user_id": 1, "user_name": "admin",
                  "user_email": "", "user_first_name": "", "user_last_name": ""}
        if workflow:
            values.update(workflow_job_id=4710, workflow_job_name=workflow, workflow_job_launch_type="manual")
        out.update(("%s_%s" % (prefix, key), value) for key, value in values.items())
    return out


def awx_inventory_script(inventory_source, slice_number=1, slice_count=1):
    """The inventory script AWX writes for a job (Inventory.get_script_data with hostvars and towervars) from an
    inventory imported the way an inventory source imports it (ansible-inventory --list --export); a slice keeps
    every slice_count-th host by name from slice_number on (Inventory.get_sliced_hosts) and only those in groups."""
    proc = subprocess.run([os.path.join(testpaths.BIN, "ansible-inventory"), "-i", inventory_source, "--list",
                           "--export"], capture_output=True, text=True, check=True, env=clean_env())
    export = json.loads(proc.stdout)
    groups = {name: group for name, group in export.items() if name not in ("_meta", "all", "ungrouped")}
    hosts = sorted(set(h for g in groups.values() for h in g.get("hosts", [])) |
                   set(export.get("ungrouped", {}).get("hosts", [])) | set(export["all"].get("hosts", [])))
    hosts = hosts[slice_number - 1::slice_count]
    data = {"all": {"vars": export["all"].get("vars", {}), "children": sorted(groups),
                    "hosts": [h for h in hosts if not any(h in g.get("hosts", []) for g in groups.values())]}}
    for name, group in groups.items():
        entry = {key: group[key] for key in ("children", "vars") if key in group}
        members = [h for h in group.get("hosts", []) if h in hosts]
        if members:
            entry["hosts"] = members
        if entry:
            data[name] = entry
    data["_meta"] = {"hostvars": {}}
    for number, host in enumerate(hosts):
        hostvars = dict(export["_meta"]["hostvars"].get(host, {}))
        for prefix in ("host", "tower"):
            hostvars.update({"remote_%s_enabled" % prefix: "true", "remote_%s_id" % prefix: 100 + number})
        data["_meta"]["hostvars"][host] = hostvars
    return "#! /usr/bin/env python3\n# -*- coding: utf-8 -*-\nprint(%r)\n" % json.dumps(data)


def clean_env():
    """This checkout's ANSIBLE_* settings (the Makefile exports ANSIBLE_CONFIG) are not the job's."""
    return {k: v for k, v in os.environ.items() if not k.startswith("ANSIBLE_")}


@pytest.fixture(scope="module")
def project_cache(tmp_path_factory):
    """The site's project and what AWX's project update installs from its collections/requirements.yml: the release
    tarball sits in the project (an air-gapped site's way; from Galaxy or Automation Hub only the entry differs)."""
    base = tmp_path_factory.mktemp("awx-project")
    project = base / "project"
    (project / "collections").mkdir(parents=True)
    subprocess.run([os.path.join(testpaths.BIN, "ansible-galaxy"), "collection", "build", "--output-path",
                    str(project / "collections"), ROOT], cwd=ROOT, check=True, capture_output=True, env=clean_env())
    (project / "collections" / "requirements.yml").write_text(yaml.safe_dump(
        {"collections": [{"name": "collections/%s" % TARBALL, "type": "file"}]}))
    for name, fqcn in PROJECT_PLAYBOOKS.items():
        (project / name).write_text("---\n- name: %s\n  ansible.builtin.import_playbook: %s\n" % (fqcn, fqcn))
    # the project update: ansible-galaxy in the project directory, the cache as the collections path
    env = dict(clean_env(), ANSIBLE_COLLECTIONS_PATH=str(base / "requirements_collections"),
               ANSIBLE_HOME=str(base / "ansible-home"))
    subprocess.run([os.path.join(testpaths.BIN, "ansible-galaxy"), "collection", "install", "-r",
                    "collections/requirements.yml"], cwd=str(project), env=env, check=True, capture_output=True)
    installed = base / "requirements_collections" / "ansible_collections" / "hpc" / "slurm_gres"
    assert (installed / "MANIFEST.json").is_file()
    return base


class Job(object):
    """One AWX job: its private data directory, run with ansible-runner; ``events`` are what AWX stores."""

    def __init__(self, base, cache, inventory_script, extravars, cmdline=None):
        self.dir = base
        shutil.copytree(str(cache / "project"), str(base / "project"), symlinks=True)
        shutil.copytree(str(cache / "requirements_collections"), str(base / "requirements_collections"),
                        symlinks=True)
        (base / "inventory").mkdir()
        (base / "inventory" / "hosts").write_text(inventory_script)
        os.chmod(str(base / "inventory" / "hosts"), 0o700)
        (base / "env").mkdir()
        (base / "env" / "extravars").write_text(yaml.safe_dump(extravars))
        if cmdline:
            (base / "env" / "cmdline").write_text(cmdline)
        collections = ":".join([str(base / "requirements_collections"), "~/.ansible/collections",
                                "/usr/share/ansible/collections"])
        (base / "env" / "envvars").write_text(yaml.safe_dump({
            "ANSIBLE_COLLECTIONS_PATHS": collections, "ANSIBLE_COLLECTIONS_PATH": collections,
            "ANSIBLE_HOME": str(base / "ansible-home"), "TMPDIR": str(base / "tmp"),
            "PATH": os.pathsep.join([testpaths.BIN, os.environ.get("PATH", "")])}))
        (base / "tmp").mkdir()
        self.status = self.rc = None
        self.events = []

    def run(self, playbook, monkeypatch):
        runner = runner_module()
        for key in list(os.environ):
            if key.startswith("ANSIBLE_"):
                monkeypatch.delenv(key)
        result = runner.run(private_data_dir=str(self.dir), playbook=playbook,
                            inventory=str(self.dir / "inventory" / "hosts"), quiet=True, ident="job")
        self.status, self.rc = result.status, result.rc
        self.events = list(result.events)
        self.stdout = result.stdout.read()
        return self

    def results(self, event, task):
        """{host: res} of the events of one kind for one task."""
        return {e["event_data"]["host"]: e["event_data"]["res"] for e in self.events
                if e["event"] == event and e["event_data"].get("task") == task}

    def hosts_seen(self):
        return {e["event_data"]["host"] for e in self.events if e["event"].startswith("runner_on_")}

    def failures(self):
        return [flat(e["event_data"]["res"].get("msg")) for e in self.events if e["event"] == "runner_on_failed"]


def runner_module():
    try:
        import ansible_runner
    except ImportError as exc:
        fail_or_skip("ansible-runner is not installed (requirements.txt; make setup): %s" % exc)
    return ansible_runner


def flat(text):
    return " ".join(str(text).split())


def stats(job):
    return next(e["event_data"] for e in job.events if e["event"] == "playbook_on_stats")


def example_script(**slices):
    return awx_inventory_script(os.path.join(testpaths.EXAMPLE, "hosts.yml"), **slices)


def test_render_only_job_writes_what_ansible_playbook_writes(tmp_path, project_cache, monkeypatch):
    dest = tmp_path / "rendered"
    # Privilege Escalation on, as the deploy's job template has it: this machine has no sudo, and neither has an EE,
    # so a task on localhost that ran a module through become would fail
    job = Job(tmp_path / "job", project_cache, example_script(),
              dict(awx_job_vars("GPU render"), hpc_gres_render_dir=str(dest)), cmdline="--become")
    job.run("render-gres.yml", monkeypatch)
    assert (job.status, job.rc) == ("successful", 0), job.stdout
    assert testpaths.read_tree(dest) == golden_example()
    # the events AWX stores and shows: the render's result with its summary, one play on localhost, no failure
    render = job.results("runner_on_ok", RENDER_TASK)
    assert list(render) == ["localhost"]
    assert render["localhost"]["summary"]["lines"][0].startswith("cluster demo: ")
    assert render["localhost"]["changed"] is True
    assert job.hosts_seen() == {"localhost"}
    assert stats(job)["failures"] == {} and stats(job)["skipped"] == {}
    # the render directory's own list of the files it owns (.hpc_gres_render_files) is not one of the rendered files
    rendered = [name for name in golden_example() if not name.startswith(".")]
    assert "written: %d changed, 0 unchanged" % len(rendered) in job.stdout


@pytest.fixture
def two_nodes(tmp_path):
    return [Node(tmp_path / "a01", name="gpu-a01"), Node(tmp_path / "a02", name="gpu-a02")]


def test_verify_job_on_emulated_nodes_runs_to_its_summary(tmp_path, project_cache, two_nodes, monkeypatch):
    host_vars = {node.name: {
        "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
        "hpc_gres_node_real_memory": 1000,
        "hpc_gres_gpus": [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)],
        "hpc_gres_verify_nvidia_smi": node_nvidia_smi(node), "hpc_gres_verify_sysfs_root": node.root,
        "hpc_gres_verify_dev_root": node.dev_root, "hpc_gres_verify_slurmd_version": "24.11.1"}
        for node in two_nodes}
    inventory = write_inventory(tmp_path, two_nodes, host_vars, {"hpc_gres_cluster_name": "awx"})
    job = Job(tmp_path / "job", project_cache, awx_inventory_script(inventory), awx_job_vars("GPU verify"))
    job.run("verify-gres.yml", monkeypatch)
    assert (job.status, job.rc) == ("successful", 0), job.stdout
    verified = job.results("runner_on_ok", VERIFY_TASK)
    assert sorted(verified) == ["gpu-a01", "gpu-a02"]
    assert verified["gpu-a01"]["counts"] == {"gpu:a100": {"slurm_conf": 8, "gres_conf": 8, "nvidia_smi": 8}}
    summary = job.results("runner_on_ok", "One line per node (counts per GPU type as slurm.conf/gres.conf/nvidia-smi)")
    # run_once in the node play: the first node's result
    assert summary["gpu-a01"]["msg"] == ["gpu-a01: ok, 0 warning(s); gpu:a100 8/8/8",
                                         "gpu-a02: ok, 0 warning(s); gpu:a100 8/8/8"]
    assert stats(job)["changed"] == {} and stats(job)["failures"] == {}
    assert os.listdir(str(tmp_path / "job" / "tmp")) == []  # nothing staged, nothing left behind


def test_one_slice_of_a_sliced_render_is_refused_and_writes_nothing(tmp_path, project_cache, monkeypatch):
    # slice 1 of 2 holds the controller and 12 of the example's 24 nodes: unrefused, it renders a slurm.conf of 12
    dest = tmp_path / "rendered"
    job = Job(tmp_path / "job", project_cache, example_script(slice_number=1, slice_count=2),
              dict(awx_job_vars("GPU deploy", launch_type="workflow", workflow="GPU deploy"),
                   hpc_gres_render_dir=str(dest)))
    job.run("render-gres.yml", monkeypatch)
    assert (job.status, job.rc) == ("failed", 2)
    assert len(job.failures()) == 1 and job.failures()[0].startswith(REFUSAL), job.failures()
    assert not dest.exists()


def test_one_slice_of_a_sliced_deploy_is_refused_before_any_host_is_contacted(tmp_path, project_cache, monkeypatch):
    # slice 1 of 3 holds the controller; the example's hosts do not exist, so any connection shows as unreachable
    job = Job(tmp_path / "job", project_cache, example_script(slice_number=1, slice_count=3),
              awx_job_vars("GPU deploy", launch_type="workflow", workflow="GPU deploy"))
    job.run("deploy-gres.yml", monkeypatch)
    assert job.status == "failed" and job.rc != 0
    assert job.failures()[0].startswith(REFUSAL), job.failures()
    assert job.hosts_seen() == {"localhost"}
    assert not [e for e in job.events if e["event"] == "runner_on_unreachable"]


def test_a_workflow_template_of_its_own_name_runs_its_nodes_unsliced(tmp_path, project_cache, monkeypatch):
    """A job that a workflow template launches carries that workflow's name, not its own template's: it renders."""
    dest = tmp_path / "rendered"
    job = Job(tmp_path / "job", project_cache, example_script(),
              dict(awx_job_vars("GPU render", launch_type="workflow", workflow="Nightly GPU checks"),
                   hpc_gres_render_dir=str(dest)))
    job.run("render-gres.yml", monkeypatch)
    assert (job.status, job.rc) == ("successful", 0), job.stdout
    assert testpaths.read_tree(dest) == golden_example()


def test_the_lock_and_plan_refuse_a_slice_too(tmp_path):
    """The rollback renders nothing: its plan (gres_plan, every stage) refuses the slice before the lock is taken."""
    extra = tmp_path / "slice.json"
    extra.write_text(json.dumps(awx_job_vars("GPU rollback", launch_type="workflow", workflow="GPU rollback")))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_LOAD_CALLBACK_PLUGINS="1",
               ANSIBLE_STDOUT_CALLBACK="json")
    proc = subprocess.run([testpaths.ANSIBLE, "localhost", "-m", "hpc.slurm_gres.gres_plan", "-a", "stage=owner",
                           "-e", "@%s" % extra], cwd=ROOT, env=env, capture_output=True, text=True, check=False)
    result = json.loads(proc.stdout)["plays"][0]["tasks"][0]["hosts"]["localhost"]
    assert proc.returncode != 0 and result["failed"] is True
    assert result["msg"].startswith(REFUSAL.replace("GPU deploy", "GPU rollback"))
    assert "plan" not in result


# --- the execution environment ---------------------------------------------------------------------------------

def ansible_builder():
    found = shutil.which("ansible-builder", path=testpaths.BIN) or shutil.which("ansible-builder")
    if not found:
        fail_or_skip("ansible-builder is not installed (requirements.txt; make setup)")
    return found


def test_execution_environment_definition_gives_a_build_context(tmp_path):
    with open(os.path.join(ROOT, "meta", "execution-environment.yml")) as handle:
        definition = yaml.safe_load(handle)
    assert definition["version"] == 3
    # the EE installs the release this checkout is
    assert definition["dependencies"]["galaxy"]["collections"] == [
        {"name": "%s.%s" % (GALAXY["namespace"], GALAXY["name"]), "version": GALAXY["version"]}]
    context = tmp_path / "context"
    proc = subprocess.run([ansible_builder(), "create", "-f", os.path.join(ROOT, "meta", "execution-environment.yml"),
                           "--context", str(context)], capture_output=True, text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    containerfile = (context / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="%s"' % definition["images"]["base_image"]["name"] in containerfile
    assert 'ARG ANSIBLE_INSTALL_REFS="%s %s"' % (definition["dependencies"]["ansible_core"]["package_pip"],
                                                 definition["dependencies"]["ansible_runner"]["package_pip"]) \
        in containerfile
    assert "openssh-clients" in containerfile
    requirements = yaml.safe_load((context / "_build" / "requirements.yml").read_text())
    assert requirements["collections"] == definition["dependencies"]["galaxy"]["collections"]


def test_an_ee_of_the_sites_own_that_includes_the_collection_still_builds(project_cache):
    """ansible-builder reads meta/execution-environment.yml of every collection in an EE it builds, as the names of
    its python and system requirement files (relative to the collection root): the installed collection must read
    as one with nothing to add. (Inline lists there stop every such build: TypeError in its introspect.)"""
    collections = str(project_cache / "requirements_collections")
    proc = subprocess.run([ansible_builder(), "introspect", "--sanitize", collections], capture_output=True,
                          text=True, check=False)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "hpc.slurm_gres" not in proc.stdout, proc.stdout
