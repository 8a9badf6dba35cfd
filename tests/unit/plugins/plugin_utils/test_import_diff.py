"""Every difference the first deploy of an imported inventory makes in what Slurm reads is in the report
("first deploy:" lines), each naming the site's file and line and the nodes; a site the collection renders as it
is written gets none. What the import keeps as written (AccountingStorageTRES, AutoDetect without Count= lines)
gets none either."""
import yaml

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_proof import run_import

HEAD = """ClusterName=lab
SlurmctldHost=ctl01
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
"""
CGROUP = "ConstrainCores=yes\nConstrainDevices=yes\n"


def report(slurm, gres=None, cgroup=CGROUP, includes=None, node_gres=None, **kwargs):
    src = {"slurm.conf": HEAD + slurm, "includes": includes or {}, "cgroup.conf": cgroup, "gres.conf": gres,
           "node_gres": node_gres or {}}
    done = run_import(src, [], slurm_version="22.05", **kwargs)
    return [line for line in done["report"] if line.startswith("first deploy: ")], done


def test_a_site_rendered_as_written_gets_no_line():
    found, _unused = report("GresTypes=gpu\nNodeName=n[1-4] Sockets=2 CoresPerSocket=4 Gres=gpu:a100:2\n"
                            "PartitionName=p Nodes=n[1-4] Default=YES MaxTime=INFINITE State=UP\n",
                            "NodeName=n[1-4] Name=gpu Type=a100 File=/dev/nvidia[0-1] Cores=0-3\n")
    assert found == []


def test_the_sites_gpu_accounting_is_kept_and_said_how_to_add_the_collections():
    slurm = ("AccountingStorageType=accounting_storage/slurmdbd\nAccountingStorageTRES=gres/gpu\nGresTypes=gpu\n"
             "NodeName=n1 Gres=gpu:a100:1\nPartitionName=p Nodes=n1 Default=YES\n")
    found, done = report(slurm, "Name=gpu Type=a100 File=/dev/nvidia0\n")
    assert found == []
    assert "\nAccountingStorageTRES=gres/gpu\n" in done["rendered"]["slurm.conf"]
    assert yaml.safe_load(done["files"]["group_vars/all.yml"])["hpc_gres_accounting_gpu_tres"] is False
    assert "slurm.conf line 7: AccountingStorageTRES=gres/gpu kept as the site has it (hpc_gres_accounting_gpu_tres: " \
           "false in group_vars/all.yml); set it to true to have the collection account gres/gpu:a100 (the deploy " \
           "then writes AccountingStorageTRES=gres/gpu,gres/gpu:a100)" in done["report"]
    # a site that already accounts every GPU type keeps the collection's default
    found, done = report(slurm.replace("=gres/gpu\n", "=gres/gpu,gres/gpu:a100\n"),
                         "Name=gpu Type=a100 File=/dev/nvidia0\n")
    assert found == [] and "hpc_gres_accounting_gpu_tres" not in done["files"]["group_vars/all.yml"]


def test_an_autodetect_site_gains_no_count_line():
    found, done = report("GresTypes=gpu\nNodeName=n1 Gres=gpu:a100:4\nPartitionName=p Nodes=n1 Default=YES\n",
                         "AutoDetect=nvml\n")
    assert found == []
    assert done["rendered"]["n1/gres.conf"].endswith("\nNodeName=n1 AutoDetect=nvml\n")


def test_every_rewrite_is_listed_with_file_line_and_nodes():
    slurm = ("ControlMachine=ctl01\nFastSchedule=1\nGresTypes=gpu\nInclude nodes.conf\n"
             "PartitionName=a Nodes=n[1-3] Default=YES\nPartitionName=b Nodes=n[1-3] Default=YES\n")
    nodes = ("NodeName=n[1-2] Procs=8 Boards=1 SocketsPerBoard=2 CoresPerSocket=4 Feature=x Gres=gpu:1\n"
             "NodeName=n3 Gres=gpu:2\n")
    gres = ("NodeName=n[1-2] Name=gpu Type=t4 File=/dev/nvidia0\n"
            "NodeName=n3 Name=gpu File=/dev/nvidia0\nNodeName=n3 Name=gpu File=/dev/nvidia1\n")
    src = HEAD.replace("SlurmctldHost=ctl01\n", "") + slurm
    done = run_import({"slurm.conf": src, "includes": {"nodes.conf": nodes}, "cgroup.conf": None, "gres.conf": gres,
                       "node_gres": {}}, [], slurm_version="22.05")
    found = [line for line in done["report"] if line.startswith("first deploy: ")]
    assert found == [
        "first deploy: slurm.conf line 6: FastSchedule=1 is left out",
        "first deploy: slurm.conf line 5: ControlMachine=ctl01 becomes SlurmctldHost=ctl01",
        "first deploy: slurm.conf line 8: Include nodes.conf: its lines are written into slurm.conf itself (the "
        "deploy leaves nodes.conf as it is, no longer read)",
        "first deploy: nodes.conf line 1, nodes n[1-2]: NodeName Procs=8 becomes CPUs=8, Boards=1 is left out, "
        "SocketsPerBoard=2 becomes Sockets=2, Feature=x becomes Features=x",
        "first deploy: slurm.conf line 9: PartitionName=a: Default=YES becomes NO",
        "first deploy: cgroup.conf: not in the source; the deploy installs one with CgroupPlugin=autodetect "
        "ConstrainCores=yes ConstrainDevices=yes ConstrainRAMSpace=yes",
        # slurmd drops the type of an untyped Gres=gpu:1, and so does the import
        "first deploy: gres.conf line 1, nodes n[1-2]: line 1 Name=gpu File=/dev/nvidia0: Type=t4 is left out",
        "first deploy: gres.conf, node n3: gres.conf records unchanged, written in 1 line(s) instead of 2"]


def test_a_site_option_left_out_and_an_autodetect_line_on_a_node_without_gpus():
    found, _unused = report("GresTypes=gpu\nNodeName=n1 Gres=gpu:a100:1\nNodeName=c1\nPartitionName=p Nodes=ALL\n",
                            "AutoDetect=nvml\nNodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0\n",
                            cgroup=CGROUP + "ConstrainSwapSpace=no\n")
    assert found == ["first deploy: slurm.conf line 7: the nodes are defined in another order, from node 1 on: the "
                     "site's file has n1, c1; the rendered one has c1, n1 (Slurm places a job step's tasks on its "
                     "nodes in the order slurm.conf defines them)",
                     "first deploy: gres.conf line 1, node c1: AutoDetect=nvml becomes AutoDetect=off (no effect: "
                     "the node declares no GPU)"]


def test_a_site_without_gpus_in_slurm_conf_is_told_so_not_where_to_put_group_vars():
    # a real site's template (koichi2426/HPC-portal) wrote gres.conf lines but no GresTypes or Gres= in slurm.conf
    _unused, done = report("NodeName=hpcnode CPUs=8 State=UNKNOWN\nPartitionName=p Nodes=hpcnode Default=YES\n",
                           "NodeName=hpcnode Name=gpu File=/dev/nvidia[0-1]\n")
    warnings = [line for line in done["report"] if "hpc_gres_gpus" in line or "declares a GPU" in line]
    assert warnings and warnings[-1].startswith("WARNING: slurm.conf: no node declares a GPU (Gres=gpu:...), so Slurm "
                                                "schedules no GPU on this cluster today")
    assert not any("group_vars or host_vars beside the inventory" in line for line in done["report"])


def test_nodes_rendered_in_another_order_are_listed_from_the_first_that_moved():
    # n1 and n3 are alike, n2 differs: the render groups n[1,3] on one line, so n3 comes before n2
    found, done = report("GresTypes=gpu\nNodeName=n1 Gres=gpu:a100:1\nNodeName=n2 Gres=gpu:a100:2\n"
                         "NodeName=n3 Gres=gpu:a100:1\nPartitionName=p Nodes=n[1-3] Default=YES\n",
                         "Name=gpu Type=a100 File=/dev/nvidia0\nNodeName=n2 Name=gpu Type=a100 File=/dev/nvidia1\n")
    rendered = [line.split()[0] for line in done["rendered"]["slurm.conf"].splitlines()
                if line.startswith("NodeName=")]
    assert rendered == ["NodeName=n[1,3]", "NodeName=n2"]
    assert [line for line in found if "another order" in line] == [
        "first deploy: slurm.conf line 8: the nodes are defined in another order, from node 2 on: the "
        "site's file has n2, n3; the rendered one has n3, n2 (Slurm places a job step's tasks on its nodes in the "
        "order slurm.conf defines them)"]


def test_the_same_nodes_in_the_same_order_get_no_order_line():
    found, _unused = report("GresTypes=gpu\nNodeName=n1 Gres=gpu:a100:1\nNodeName=n3 Gres=gpu:a100:1\n"
                            "NodeName=n2 Gres=gpu:a100:2\nPartitionName=p Nodes=n[1-3] Default=YES\n",
                            "Name=gpu Type=a100 File=/dev/nvidia0\nNodeName=n2 Name=gpu Type=a100 "
                            "File=/dev/nvidia1\n")
    assert not [line for line in found if "another order" in line]


def test_a_partition_default_written_as_any_boolean_slurm_reads_is_imported_and_no_change():
    # parse_value.c s_p_handle_boolean: yes/up/true/1 and no/down/false/0, any case (a real site writes TRUE)
    found, done = report("GresTypes=gpu\nNodeName=n[1-2] Gres=gpu:a100:1\n"
                         "PartitionName=p Nodes=n1 Default=TRUE\nPartitionName=q Nodes=n2 Default=false\n",
                         "Name=gpu Type=a100 File=/dev/nvidia0\n")
    assert found == []
    rendered = done["rendered"]["slurm.conf"]
    assert "PartitionName=p Nodes=n1 Default=YES" in rendered and "PartitionName=q Nodes=n2 Default=NO" in rendered
