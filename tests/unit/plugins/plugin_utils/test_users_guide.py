"""The users' GPU guide: golden pages, derived from the model and the rendered files, and its job templates.

Regenerate the golden pages after an intended change:
UPDATE_GOLDEN=1 .venv/bin/pytest tests/unit/plugins/plugin_utils/test_users_guide.py
"""
import os
import re
import shutil
import subprocess

import pytest
import yaml

import guide_clusters
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import users_guide
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import (
    DEFAULT_DIR,
    TEMPLATES,
    install_dir,
    page_requests,
    users_guide_files,
)

GOLDEN = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden", "users_guide")
ROLE = os.path.join(testpaths.ROOT, "roles", "hpc_gres_users_guide")
TEMPLATE_DIR = os.path.join(ROLE, "files", "job-templates")


def guide(model, installed_dir=None):
    return users_guide_files(model, installed_dir)


def check_golden(name, text):
    path = os.path.join(GOLDEN, name)
    if os.environ.get("UPDATE_GOLDEN"):
        os.makedirs(GOLDEN, exist_ok=True)
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(text)
    with open(path, encoding="utf-8") as handle:
        assert text == handle.read(), name


@pytest.mark.parametrize("name, build, installed", [
    ("example", guide_clusters.example_model, None),
    ("shards", guide_clusters.shards_model, "/opt/docs/gpus"),
    ("untyped", guide_clusters.untyped_model, None),
])
def test_golden_pages(name, build, installed):
    files = guide(build(), installed)
    check_golden(name + ".md", files["USERS.md"])
    check_golden(name + ".motd", files["USERS.motd"])


def test_example_page_names_every_type_mig_profile_and_partition():
    page = guide(guide_clusters.example_model())["USERS.md"]
    requests = page_requests(page)
    for options in ("-p gpu --gres=gpu:a100:8", "-p gpu --gres=gpu:h100_pcie:1", "-p gpu --gres=gpu:l40s:2",
                    "-p gpu --gres=gpu:1g.10gb:1", "-p gpu --gres=gpu:3g.40gb:1", "-p gpu -N 4 --gpus-per-node=a100:8",
                    "-p gpu --gpus=h100_pcie:8"):
        assert options in requests
    assert "| `gpu` | gpu-mig01 | 2 × a100 (A100-80GB) | GPU 0 (a100): 3g.40gb, 2g.20gb, 2 × 1g.10gb; " \
           "GPU 1 (a100): 7 × 1g.10gb |" in page
    assert "| `cpu` (default) | 16 node(s) without GPUs |" in page
    assert "(here: gpu-mix01)" in page, "the node with two GPU models is named for CUDA_DEVICE_ORDER"
    assert not any("-p cpu" in r for r in requests), "no GPU request for a partition without GPUs"


def test_untyped_page_counts_untyped_and_autodetected_gpus_and_never_promises_untyped_alone():
    page = guide(guide_clusters.untyped_model())["USERS.md"]
    requests = page_requests(page)
    assert "| `gpu` | ug[01-02] | 4 × gpu (untyped) | mps: 100 on GPUs 0-3 |" in page
    assert "| `gpu` | ug03 | 2 × gpu (untyped) | none |" in page, "count-only GPUs AutoDetect finds are GPUs"
    assert "| `viz` | viz01 | 2 × t4; other: 4G × bandwidth:lustre | none |" in page
    for options in ("-p gpu --gres=gpu:1", "-p gpu --gres=gpu:4", "-p gpu -N 2 --gpus-per-node=4", "-p gpu --gpus=10",
                    "-p gpu --gres=mps:100", "-p viz --gres=gpu:t4:2", "-p viz --gres=bandwidth:lustre:4G",
                    "-p cpu --gres=tmpdisk:500"):
        assert options in requests
    # in a partition with typed GPUs too, --gres=gpu:N takes any GPU: no line claims untyped ones alone
    assert "one untyped GPU (ug02)" not in page
    assert "# the 4 GPUs of any type of one node (ug02)\nsbatch -p viz --gres=gpu:4 job.sh" in page
    assert requests.count("-p viz --gres=gpu:1") == 1
    assert "scontrol -d show node ug01" in page, "the example node has GPUs"
    assert "`mps` is a share of one GPU's compute" in page and "Shards share" not in page


def test_a_cluster_without_gpu_types_is_asked_by_count():
    files = guide(guide_clusters.untyped_model(viz_type=None))
    page, motd = files["USERS.md"], files["USERS.motd"]
    assert "TYPE" not in page and "TYPE" not in motd
    assert "Ask for GPUs by count (`--gres=gpu:N`, N per node)" in page
    assert motd.startswith("GPUs on cluster legacy (--gres=gpu:N):\n")
    assert "-p viz --gres=gpu:4" in page_requests(page) and "-p viz --gpus=6" in page_requests(page)


def test_a_type_renamed_in_the_inventory_changes_the_page():
    model = guide_clusters.example_model()
    for node in model["nodes"]:
        for gpu in node["gpus"]:
            if gpu["type"] == "h100_pcie":
                gpu["type"] = "h100pcie"
    page = guide(model)["USERS.md"]
    assert "-p gpu --gres=gpu:h100pcie:4" in page_requests(page)
    assert "h100_pcie" not in page


def test_shard_limit_is_per_gpu_unless_multiple_sharing_per_job():
    page = guide(guide_clusters.shards_model())["USERS.md"]
    assert "-p shared --gres=shard:8" in page_requests(page)
    assert "shard: 4 on GPUs 0-1, 2 on GPU 2" in page
    many = guide(guide_clusters.shards_model(hpc_gres_slurm_version="23.11", hpc_gres_slurm_conf_options={  # the keyword is 23.11+
        "SelectTypeParameters": "CR_Core_Memory,MULTIPLE_SHARING_GRES_PJ"}))["USERS.md"]
    assert "-p shared --gres=shard:32" in page_requests(many)
    assert "-p shared --gres=shard:8" not in page_requests(many)
    assert "A job may take shards of several GPUs of a node." in many


def test_confinement_is_read_from_the_rendered_files():
    confined = guide(guide_clusters.shards_model())["USERS.md"]
    assert "**numbered from 0 inside the job**" in confined
    loose = guide(guide_clusters.shards_model(hpc_gres_slurm_conf_options={"TaskPlugin": "task/none"}))["USERS.md"]
    assert "are **not** confined" in loose and "numbered from 0 inside" not in loose
    no_devices = guide(guide_clusters.shards_model(hpc_gres_cgroup_conf_options={"ConstrainDevices": "no"}))["USERS.md"]
    assert "are **not** confined" in no_devices


def test_mig_notes_only_with_mig_and_uuid_note_only_with_nvml():
    example = guide(guide_clusters.example_model())["USERS.md"]
    assert "One CUDA process can use one MIG instance only" in example
    assert "MIG-..." not in example
    shards = guide(guide_clusters.shards_model())["USERS.md"]
    assert "MIG" not in shards
    model = guide_clusters.example_model()
    model["autodetect"] = "nvml"
    assert "A MIG instance appears as a `MIG-...` UUID" in guide(model)["USERS.md"]


def test_templates_are_named_where_they_are():
    model = guide_clusters.shards_model()
    shipped = guide(model)["USERS.md"]
    assert "`roles/hpc_gres_users_guide/files/job-templates/`" in shipped
    installed = guide(model, "/srv/doc")
    assert "`/srv/doc/job-templates/gpu-preemptible.sbatch`" in installed["USERS.md"]
    assert installed["USERS.motd"].endswith("Guide and job templates: /srv/doc/USERS.md, /srv/doc/job-templates/\n")


def test_install_dir_is_one_absolute_directory_for_the_whole_group():
    assert install_dir({}) is None
    assert install_dir({"login1": {}, "login2": {"hpc_gres_users_guide_dir": None}}) == DEFAULT_DIR
    assert install_dir({"login1": {"hpc_gres_users_guide_dir": "/srv/doc/"},
                        "login2": {"hpc_gres_users_guide_dir": "/srv/doc"}}) == "/srv/doc"
    with pytest.raises(GresError) as err:
        install_dir({"login1": {"hpc_gres_users_guide_dir": "/srv/doc"},
                     "login2": {"hpc_gres_users_guide_dir": "/opt/doc"}})
    assert str(err.value).startswith("host login2: hpc_gres_users_guide_dir: expected the same directory on every "
                                     "host of group hpc_gres_users_guide (the guide names it): /srv/doc, as on "
                                     "login1, found /opt/doc")
    with pytest.raises(GresError) as err:
        install_dir({"login1": {"hpc_gres_users_guide_dir": "doc"}})
    assert "host login1: hpc_gres_users_guide_dir: expected an absolute directory path, found 'doc'" in str(err.value)


def test_page_requests_reads_only_sbatch_lines_in_code_blocks():
    text = "sbatch -p x --gres=gpu:1 job.sh\n```sh\n# c\nsbatch -p a --gres=gpu:t:2 job.sh\nsinfo\n```\n"
    assert page_requests(text) == ["-p a --gres=gpu:t:2"]


def test_any_gres_the_model_renders_gets_request_lines():
    """GRES kinds the example has no node for (untyped GPUs, mps, other names) are handled generically."""
    untyped = users_guide._Offer("gpu", "untyped")
    untyped.counts = {"n1": 4, "n2": 4}
    mps = users_guide._Offer("mps", "sharing")
    mps.counts, mps.per_gpu_max = {"n1": 400, "n2": 400}, 100
    nic = users_guide._Offer("nic:ib", "other")
    nic.counts = {"n1": 2}
    lines = [line for line in users_guide._requests("p", [untyped, mps, nic], False) if not line.startswith("#")]
    assert lines == [
        "sbatch -p p --gres=gpu:1 job.sh",
        "sbatch -p p --gres=gpu:4 job.sh",
        "sbatch -p p -N 2 --gpus-per-node=4 job.sh",
        "sbatch -p p --gpus=8 job.sh",
        "sbatch -p p --gres=mps:1 job.sh",
        "sbatch -p p --gres=mps:100 job.sh",
        "sbatch -p p --gres=nic:ib:1 job.sh",
        "sbatch -p p --gres=nic:ib:2 job.sh",
    ]


# --- the job templates ------------------------------------------------------------------------------------------

def test_the_role_ships_exactly_the_templates_the_page_names():
    with open(os.path.join(ROLE, "vars", "main.yml")) as handle:
        installed = yaml.safe_load(handle)["__hpc_gres_users_guide_templates"]
    names = [name for name, _purpose, _key in TEMPLATES]
    assert installed == names
    assert sorted(os.listdir(TEMPLATE_DIR)) == sorted(names)


@pytest.mark.parametrize("name, purpose, key", TEMPLATES)
def test_each_template_has_the_key_lines_the_page_shows(name, purpose, key):
    with open(os.path.join(TEMPLATE_DIR, name)) as handle:
        text = handle.read()
    directives = re.findall(r"^#SBATCH (\S+)", text, re.M)
    for option in key.split():
        assert option in directives, (name, option)
    assert text.startswith("#!/usr/bin/env bash\n")
    assert "export CUDA_DEVICE_ORDER=PCI_BUS_ID" in text
    assert "--gres=gpu:" in " ".join(directives)


def test_templates_are_shellcheck_clean():
    shellcheck = shutil.which("shellcheck")
    if shellcheck is None:
        if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
            pytest.fail("CI=true and shellcheck is missing (scripts/setup-system.sh installs it)")
        pytest.skip("shellcheck is not installed")
    paths = [os.path.join(TEMPLATE_DIR, name) for name, _purpose, _key in TEMPLATES]
    proc = subprocess.run([shellcheck, "--shell=bash", "--severity=style"] + paths, stdout=subprocess.PIPE,
                          stderr=subprocess.STDOUT, text=True, check=False)
    assert proc.returncode == 0, proc.stdout


def test_requeue_delay_follows_the_credential_lifetime():
    default = guide(guide_clusters.shards_model())["USERS.md"]
    assert "may start again 121 s after the requeue" in default
    short = guide(guide_clusters.shards_model(hpc_gres_slurm_conf_options={"AuthInfo": "socket=/run/m.sock,cred_expire=30"}))
    assert "may start again 31 s after the requeue" in short["USERS.md"]


def test_the_inventory_group_decides_where_the_guide_says_it_is():
    model = guide_clusters.shards_model()
    none = users_guide.inventory_guide_files(model, {"login1": {}}, {"all": ["login1"]})
    assert "`roles/hpc_gres_users_guide/files/job-templates/`" in none["USERS.md"]
    groups = {"all": ["login1", "login2"], "hpc_gres_users_guide": ["login1", "login2"]}
    default = users_guide.inventory_guide_files(model, {"login1": {}, "login2": {}}, groups)
    assert "`%s/job-templates/gpu-single.sbatch`" % DEFAULT_DIR in default["USERS.md"]
    with pytest.raises(GresError) as err:
        users_guide.inventory_guide_files(model, {"login1": {"hpc_gres_users_guide_dir": "/srv/a"},
                                                  "login2": {"hpc_gres_users_guide_dir": "/srv/b"}}, groups)
    assert "host login2: hpc_gres_users_guide_dir:" in str(err.value)
