"""include (after test_1_import): the site hands slurm.conf and cgroup.conf to its own role, which pulls in the
collection's node/partition part with `Include /etc/slurm/slurm_gres.conf`; the imported inventory is deployed
with hpc_gres_config_mode: include (its hpc_gres_slurm_conf_options and cgroup options emptied: the site's files hold
them). The site's files stay untouched, the include file and the node's gres.conf are the collection's, the node
registers as before; a second deploy changes nothing."""

import json
import re

import pytest

import adopt_checks

CTL, NODE = adopt_checks.CTL, adopt_checks.NODE
INCLUDE = ("-e", "hpc_gres_config_mode=include", "-e", "hpc_gres_include_file=slurm_gres.conf",
           "-e", json.dumps({"hpc_gres_slurm_conf_options": {}, "hpc_gres_cgroup_conf_options": {}}))


def site_slurm_conf():
    """The site's slurm.conf from now on: the settings the cluster runs with (the deployed file's options), its
    nodes and partitions pulled in from the collection's include file."""
    current = CTL.file("/etc/slurm/slurm.conf").content_string
    kept = [line for line in current.splitlines()
            if line.strip() and not line.lstrip().startswith("#")
            and not re.match(r"(?i)\s*(NodeName|PartitionName|GresTypes)\s*=", line)]
    return "# managed by the site's own role\n%s\nInclude /etc/slurm/slurm_gres.conf\n" % "\n".join(kept)


@pytest.fixture(scope="module")
def runs():
    site = site_slurm_conf()
    print(site)
    for host in (CTL, NODE):
        adopt_checks.write(host, "/etc/slurm/slurm.conf", site)
        host.check_output("sha256sum /etc/slurm/slurm.conf /etc/slurm/cgroup.conf > /root/site-files.sha256")
    return adopt_checks.deploy_twice(*INCLUDE)


def test_deploys_and_a_second_run_changes_nothing(runs):
    adopt_checks.assert_deployed_then_unchanged(runs)


@pytest.mark.parametrize("host", [CTL, NODE], ids=["gres-ctl", "gres-gpu01"])
def test_the_sites_files_are_untouched(runs, host):
    assert host.run("sha256sum --check /root/site-files.sha256").rc == 0


@pytest.mark.parametrize("host", [CTL, NODE], ids=["gres-ctl", "gres-gpu01"])
def test_the_include_file_is_the_collections(runs, host):
    text = host.file("/etc/slurm/slurm_gres.conf").content_string
    print(text)
    assert "GresTypes=gpu\n" in text and adopt_checks.NODE_LINE + "\n" in text
    assert "AuthType" not in text and "ClusterName" not in text


def test_the_node_has_its_gres_conf_and_the_controller_none(runs):
    assert "NodeName=gres-gpu01 Name=gpu File=/dev/nvidia0 Cores=0-13\n" in NODE.file(
        "/etc/slurm/gres.conf").content_string
    assert not CTL.file("/etc/slurm/gres.conf").exists


def test_node_idle_with_its_gpus(runs):
    adopt_checks.assert_node_idle_with_its_gpus()
