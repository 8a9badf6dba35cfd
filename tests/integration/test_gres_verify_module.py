"""hpc.slurm_gres.gres_verify run through ansible against an emulated 8x A100 node (real topo -m recording,
fake sysfs for its 2x32x2 CPUs, real device nodes), and with the real slurmd -G cross-check."""
import os
import shutil
import sys

import pytest
import testpaths

from emulated_node import Node, fail_or_skip, run_module

SLURM_CONF = """\
ClusterName=verify
SlurmctldHost=ctl01
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=gpu
NodeName=gpu-a01 Sockets=2 CoresPerSocket=32 ThreadsPerCore=2 RealMemory=1000 Gres=gpu:a100:8
PartitionName=main Nodes=ALL Default=YES
"""
GRES_CONF = """\
NodeName=gpu-a01 AutoDetect=off Name=gpu Type=a100 File=/dev/nvidia[0-3] Cores=0-31
NodeName=gpu-a01 Name=gpu Type=a100 File=/dev/nvidia[4-7] Cores=32-63
"""


@pytest.fixture
def node(tmp_path):
    return Node(tmp_path / "node")


def stage(node, slurm=SLURM_CONF, gres=GRES_CONF):
    stage_dir = os.path.join(node.base, "stage")
    os.makedirs(stage_dir, exist_ok=True)
    for name, text in (("slurm.conf", slurm), ("gres.conf", gres)):
        with open(os.path.join(stage_dir, name), "w") as handle:
            handle.write(text)
    return stage_dir


def verify(node, stage_dir, check=False, extra_env=None, **more):
    args = {"slurm_conf": stage_dir + "/slurm.conf", "gres_conf": stage_dir + "/gres.conf", "node_name": node.name,
            "nvidia_smi": os.path.join(testpaths.EMULATOR, "nvidia-smi"),
            "sysfs_root": node.root, "dev_root": node.dev_root}
    args.update(more)
    return run_module(node, "hpc.slurm_gres.gres_verify", args, check=check, extra_env=extra_env)


def errors(result):
    return [f for f in result["findings"] if f["severity"] == "error"]


@pytest.mark.ansible_core
def test_correct_node_passes(node):
    rc, result = verify(node, stage(node), slurmd_version="24.11.1")
    assert rc == 0, result.get("msg")
    assert result["findings"] == []
    assert result["changed"] is False
    assert result["counts"] == {"gpu:a100": {"slurm_conf": 8, "gres_conf": 8, "nvidia_smi": 8}}
    # the facts came from the emulated node: Slurm cores computed from the recorded affinity + fake sysfs
    assert [g["slurm_cores"] for g in result["hw"]["gpus"]] == ["0-31"] * 4 + ["32-63"] * 4


@pytest.mark.ansible_core
def test_check_mode_gives_the_same_verdict(node):
    rc, result = verify(node, stage(node, gres=GRES_CONF.replace("Cores=32-63", "Cores=0-31")), check=True)
    assert rc != 0
    assert {f["check"] for f in errors(result)} == {"cores"}


def test_node_declaring_more_gpus_than_it_has_fails_naming_the_count(node):
    node.lose(7)  # GPU 7 fell off the bus: nvidia-smi enumerates 7; /dev/nvidia7 is still there
    rc, result = verify(node, stage(node))
    assert rc != 0
    assert "declares 8 a100, nvidia-smi sees 7" in result["msg"]
    present = [f for f in errors(result) if f["check"] == "present"]
    assert [f["found"] for f in present] == ["declares 8 a100, nvidia-smi sees 7"]
    assert result["counts"]["gpu:a100"]["nvidia_smi"] == 7


def test_unreachable_gpu_is_counted_missing_and_its_message_shown(node):
    node.lose(3, "unreachable")  # nvidia-smi prints "Unable to determine the device handle" and exits 15
    rc, result = verify(node, stage(node))
    assert rc != 0
    present = [f for f in errors(result) if f["check"] == "present"]
    assert present[0]["found"] == "declares 8 a100, nvidia-smi sees 7"
    assert "Unable to determine the device handle for GPU3" in present[0]["hint"]


def test_an_nvml_driver_mismatch_is_refused_with_the_readiness_finding(node):
    # the recorded "Failed to initialize NVML: Driver/library version mismatch" (exit 18) on every call: the refusal
    # was the raw command line and its first output line; it is the nvml finding, with NVML's version and the hint
    import machines
    node.profile = machines.with_failure(node.profile, "driver-library-mismatch")
    failure = node.profile["failure"]
    failure["text_file"] = os.path.normpath(os.path.join(machines.PROFILES, failure["text_file"]))  # as node.save keeps it
    node.save()
    rc, result = verify(node, stage(node))
    assert rc != 0, result
    assert "findings" in result, result
    [finding] = result["findings"]
    assert (finding["check"], finding["severity"]) == ("nvml", "error")
    assert "Driver/library version mismatch" in finding["found"] and "550.144" in finding["found"]
    assert "reboot the node" in finding["hint"]
    assert result["msg"].startswith("gres_verify: node gpu-a01 is not ready: nvidia-smi cannot list the GPUs")


def test_a_corrupted_infoROM_passes_with_a_warning_naming_the_gpu(node):
    # nvidia-smi prints its whole output, then "WARNING: infoROM is corrupted at gpu ...", and exits 14 on every call
    node.gpus[5]["inforom"] = "corrupted"
    node.save()
    bus = node.gpus[5]["pci_bus_id"]
    rc, result = verify(node, stage(node))
    assert rc == 0, result.get("msg")
    assert result["findings"] == []
    assert result["counts"]["gpu:a100"]["nvidia_smi"] == 8
    assert [g["slurm_cores"] for g in result["hw"]["gpus"]] == ["0-31"] * 4 + ["32-63"] * 4  # topo -m read too
    warned = [w for w in result.get("warnings", []) if "infoROM" in w]
    assert len(warned) == 1 and "infoROM is corrupted at gpu %s (exit code 14)" % bus in warned[0], warned


def test_cores_of_the_other_socket_fail(node):
    gres = GRES_CONF.replace("Cores=0-31", "Cores=32-63")
    rc, result = verify(node, stage(node, gres=gres))
    assert rc != 0
    bad = errors(result)
    assert [(f["check"], f["gpu"]) for f in bad] == [("cores", 0), ("cores", 1), ("cores", 2), ("cores", 3)]
    assert "names socket 1 (cores 32-63)" in bad[0]["found"]
    assert "Cores=32-63 names socket 1" in result["msg"]


def test_missing_device_file_fails(node):
    node.remove_device(5)
    rc, result = verify(node, stage(node))
    assert rc != 0
    assert [(f["check"], f["found"]) for f in errors(result)] == [("device", "/dev/nvidia5 does not exist")]


def test_half_socket_cores_warn_on_22_05_and_fail_on_24_11(node):
    gres = GRES_CONF.replace("Cores=0-31", "Cores=0-15")
    stage_dir = stage(node, gres=gres)
    rc, result = verify(node, stage_dir, slurmd_version="22.05.8")
    assert rc == 0
    assert [(f["severity"], f["check"]) for f in result["findings"]] == [("warning", "socket_boundary")]
    assert any("socket_boundary" in w for w in result.get("warnings", []))
    rc, result = verify(node, stage_dir, slurmd_version="24.11.0")
    assert rc != 0 and "doesn't match socket boundaries" in result["msg"]


@pytest.mark.ansible_core
def test_type_patterns_parameter(node):
    slurm = SLURM_CONF.replace("gpu:a100:8", "gpu:hgx:8")
    gres = GRES_CONF.replace("Type=a100", "Type=hgx")
    stage_dir = stage(node, slurm=slurm, gres=gres)
    rc, result = verify(node, stage_dir)
    assert rc == 0 and [f["check"] for f in result["findings"]] == ["type"]
    rc, result = verify(node, stage_dir, type_patterns={"hgx": "A100-SXM4"})
    assert rc == 0 and result["findings"] == []
    rc, result = verify(node, stage_dir, type_patterns={"hgx": "H100"})
    assert rc != 0 and {f["check"] for f in errors(result)} == {"type", "present"}


def test_missing_nvidia_smi_is_a_clear_failure(node):
    rc, result = verify(node, stage(node), nvidia_smi=os.path.join(node.base, "no-such-nvidia-smi"))
    assert rc != 0
    assert "nvidia_smi: expected an executable file" in result["msg"]
    assert "Traceback" not in result.get("module_stderr", "")


def test_missing_staged_file_is_a_clear_failure(node):
    stage_dir = stage(node)
    os.unlink(os.path.join(stage_dir, "gres.conf"))
    rc, result = verify(node, stage_dir)
    assert rc != 0 and result["msg"].startswith("gres_conf: expected a readable staged file")


# --- the real slurmd -G on the staged files --------------------------------------------------------------


def _slurmd():
    path = shutil.which("slurmd") or ("/usr/sbin/slurmd" if os.access("/usr/sbin/slurmd", os.X_OK) else None)
    if not path:
        fail_or_skip("slurmd not installed (make system-deps)")
    return path


def _real_paths(node, gres):
    """gres.conf naming the node's made device nodes by their real path, so slurmd can stat them too."""
    return gres.replace("File=/dev/", "File=%s/dev/" % node.dev_root)


HWLOC = {"HWLOC_SYNTHETIC": "package:2 core:32 pu:2"}


@pytest.mark.ansible_core
def test_slurmd_cross_check_passes_on_a_correct_node(node):
    slurmd = _slurmd()
    rc, result = verify(node, stage(node, gres=_real_paths(node, GRES_CONF)), extra_env=HWLOC, slurmd=slurmd,
                        dev_root="/")
    assert rc == 0, result.get("msg")
    assert result["slurmd_g"]["ran"] is True and result["slurmd_g"]["rc"] == 0
    assert result["slurmd_g"]["output"].count("Gres Name=gpu Type=a100 Count=4") == 2
    assert result["slurmd_version"].startswith("22.05") or result["slurmd_version"] >= "23"
    assert result["findings"] == []


def test_slurmd_cross_check_reports_what_slurmd_refuses(node):
    slurmd = _slurmd()
    # OS cpu ids with the hyperthreads copied from topo -m: beyond the node's 64 cores
    gres = _real_paths(node, GRES_CONF.replace("Cores=32-63", "Cores=32-63,96-127"))
    rc, result = verify(node, stage(node, gres=gres), extra_env=HWLOC, slurmd=slurmd, dev_root="/")
    assert rc != 0
    slurmd_findings = [f["found"] for f in errors(result) if f["check"] == "slurmd_g"]
    assert "error: Invalid GRES data for gpu, Cores=32-63,96-127" in slurmd_findings
    assert any(f["check"] == "cores" for f in errors(result))


def test_slurmd_is_skipped_when_a_device_file_is_missing(node):
    slurmd = _slurmd()
    node.remove_device(2)
    rc, result = verify(node, stage(node, gres=_real_paths(node, GRES_CONF)), extra_env=HWLOC, slurmd=slurmd,
                        dev_root="/")
    assert rc != 0
    assert result["slurmd_g"]["ran"] is False and "device files missing" in result["slurmd_g"]["reason"]
    assert [f["check"] for f in errors(result)] == ["device"]


def test_content_mode_and_a_spec_that_does_not_belong_to_the_file(node):
    """Files as arguments (nothing staged); a gres_spec must render exactly the given gres.conf."""
    args = {"slurm_conf_content": SLURM_CONF, "gres_conf_content": GRES_CONF, "node_name": node.name,
            "nvidia_smi": os.path.join(testpaths.EMULATOR, "nvidia-smi"), "sysfs_root": node.root,
            "dev_root": node.dev_root, "slurmd_version": "24.11.1"}
    rc, result = run_module(node, "hpc.slurm_gres.gres_verify", args)
    assert rc == 0, result.get("msg")
    assert result["gres_conf_text"] == GRES_CONF and result["gres_conf_completed"] is False
    spec = {"cluster_name": "verify", "autodetect": "off",
            "node": {"host": node.name, "name": node.name,
                     "gpus": [{"index": i, "type": "a100", "minor": i, "cores": "0-31", "mig": None, "shards": None}
                              for i in range(8)]}}
    rc, result = run_module(node, "hpc.slurm_gres.gres_verify", dict(args, gres_spec=spec))
    assert rc != 0
    assert result["msg"].startswith("gres_spec: expected the spec node %s's gres.conf was rendered from" % node.name)
    rc, result = run_module(node, "hpc.slurm_gres.gres_verify", dict(args, gres_conf="/x"))
    assert rc != 0 and "mutually exclusive" in result["msg"]


def test_one_mig_verification_parses_each_file_and_each_nvidia_smi_output_once(tmp_path, monkeypatch, capsys):
    """gres_verify's main() in process on an emulated MIG node (real emulator calls, real device nodes), the
    parsers counted: the completed gres.conf and slurm.conf once each, every nvidia-smi listing once."""
    import json

    try:
        from ansible.module_utils.testing import patch_module_args
    except ImportError:  # ansible-core < 2.19 (make compat): the arguments as AnsibleModule read them then
        import contextlib

        from ansible.module_utils import basic
        from ansible.module_utils.common.text.converters import to_bytes

        @contextlib.contextmanager
        def patch_module_args(module_args):
            monkeypatch.setattr(basic, "_ANSIBLE_ARGS", to_bytes(json.dumps({"ANSIBLE_MODULE_ARGS": module_args})))
            yield

    collection = sys.modules.get("ansible_collections.hpc.slurm_gres")
    if collection is not None and getattr(collection, "_collection_meta", None) is None:
        # ansible-core 2.14 installs its collection finder when ansible.plugins.loader is imported (an earlier test
        # of this process); the finder then refuses the subpackages of a collection imported before it, unless
        # the package carries the metadata the finder would have loaded (meta/runtime.yml: nothing it needs here)
        monkeypatch.setattr(collection, "_collection_meta", {}, raising=False)
    from emulated_node import apply_mig_layout, node_nvidia_smi
    from ansible_collections.hpc.slurm_gres.plugins.modules import gres_verify
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import verify as node_verify
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import smi
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
    from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import gres_spec, render_all

    node = Node(tmp_path / "m01", name="gpu-m01")
    apply_mig_layout(node, {0: ["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"]})
    gpus = [{"index": i, "type": "a100", "cores": "0-31" if i < 4 else "32-63"} for i in range(8)]
    gpus[0].update(model="A100-80GB", mig=["3g.40gb", "2g.20gb", "1g.10gb", "1g.10gb"])
    model = build_cluster_model({"ctl01": {}, node.name: {
        "hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 32, "hpc_gres_node_threads_per_core": 2,
        "hpc_gres_node_real_memory": 1000, "hpc_gres_gpus": gpus}},
        {"all": ["ctl01", node.name], "slurmctld": ["ctl01"], "slurmd": [node.name]}, {})
    files = render_all(model)

    counted = {}

    def count(owner, name):
        real = getattr(owner, name)

        def wrapper(*args, **kwargs):
            counted[name] = counted.get(name, 0) + 1
            return real(*args, **kwargs)
        monkeypatch.setattr(owner, name, wrapper)
    for name in ("parse_slurm_conf", "parse_gres_conf"):
        count(node_verify, name)
    for name in ("parse_query_gpu", "parse_query_apps", "parse_topo_matrix", "parse_list_gpus", "parse_mig_lgi",
                 "parse_mig_lci", "parse_mig_minors"):
        count(smi, name)
    for key, value in dict(node.env, NVSMI_EMU_ROOT=node.root, NVSMI_EMU_DEV_ROOT=node.dev_root).items():
        monkeypatch.setenv(key, value)
    args = {"slurm_conf_content": files["slurm.conf"], "gres_conf_content": files[node.name + "/gres.conf"],
            "gres_spec": gres_spec(model, model["nodes"][0]), "node_name": node.name,
            "nvidia_smi": node_nvidia_smi(node), "sysfs_root": node.root, "dev_root": node.dev_root,
            "slurmd_version": "22.05.8"}
    with patch_module_args(args), pytest.raises(SystemExit) as exited:
        gres_verify.main()
    result = json.loads(capsys.readouterr().out)
    assert exited.value.code == 0, result.get("msg")
    assert result["gres_conf_completed"] and result["errors"] == 0
    assert result["gres_conf_text"].count("MultipleFiles=/dev/nvidia0,/dev/nvidia-caps/nvidia-cap") == 4
    # the GPUs' processes are not read: the checks do not use them (one nvidia-smi run fewer)
    assert counted == {"parse_slurm_conf": 1, "parse_gres_conf": 1, "parse_query_gpu": 1,
                       "parse_topo_matrix": 1, "parse_list_gpus": 1, "parse_mig_lgi": 1, "parse_mig_lci": 1,
                       "parse_mig_minors": 1}, counted
    assert not [c for c in result["commands"] if any("compute-apps" in part for part in c)], result["commands"]


def test_a_deploy_plan_as_another_user_than_root_is_refused_and_a_dry_run_is_not(tmp_path):
    """The module itself runs as nobody (pipelined, through setpriv): what a deploy without -b meets on a node."""
    if os.geteuid() != 0 or not shutil.which("setpriv") or not os.path.exists("/usr/bin/python3"):
        fail_or_skip("needs root, setpriv and /usr/bin/python3 to run the module as another user")
    import tempfile
    base = tempfile.mkdtemp(prefix="gres-verify-nobody-")
    try:
        os.chmod(base, 0o755)
        interpreter = os.path.join(base, "python-as-nobody")
        with open(interpreter, "w") as handle:
            handle.write('#!/bin/sh\nexec setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 "$@"\n')
        os.chmod(interpreter, 0o755)
        for sub in ("etc", "state"):
            os.mkdir(os.path.join(base, sub))
        files = {"slurm.conf": SLURM_CONF, "gres.conf": GRES_CONF}
        args = {"node_name": "gpu-a01", "slurm_conf_content": SLURM_CONF, "gres_conf_content": GRES_CONF,
                "verify": False, "plan": {"files": files, "config_dir": base + "/etc", "state_dir": base + "/state"}}
        env = {"ANSIBLE_PIPELINING": "1"}
        nobody = ("-e", "ansible_python_interpreter=" + interpreter)
        rc, result = run_module(Node(tmp_path / "node"), "hpc.slurm_gres.gres_verify", args, extra_env=env,
                                extra_args=nobody)
        assert rc != 0 and result["msg"].startswith("node gpu-a01: privileges: expected root"), result
        assert "found uid 65534" in result["msg"] and "-b (become)" in result["msg"]
        rc, result = run_module(Node(tmp_path / "node2"), "hpc.slurm_gres.gres_verify", args, check=True,
                                extra_env=env, extra_args=nobody)
        assert rc == 0 and result["plan"]["install"], result
        assert result["table"] == "node gpu-a01: read and planned, the hardware not checked"
    finally:
        shutil.rmtree(base)


@pytest.mark.ansible_core
def test_the_renders_files_are_verified_by_node_name(node):
    files = {"slurm.conf": SLURM_CONF, "gpu-a01/gres.conf": GRES_CONF, "gpu-a02/gres.conf": "NodeName=gpu-a02 x\n"}
    rc, result = run_module(node, "hpc.slurm_gres.gres_verify", {
        "files": files, "node_name": node.name, "nvidia_smi": os.path.join(testpaths.EMULATOR, "nvidia-smi"),
        "sysfs_root": node.root, "dev_root": node.dev_root, "slurmd_version": "24.11.1"})
    assert rc == 0, result.get("msg")
    assert result["findings"] == [] and result["counts"]["gpu:a100"]["gres_conf"] == 8


@pytest.mark.ansible_core
def test_a_node_without_a_gres_conf_in_the_render_is_only_read(node):
    rc, result = run_module(node, "hpc.slurm_gres.gres_verify", {
        "files": {"slurm.conf": SLURM_CONF}, "node_name": node.name, "nvidia_smi": "/nonexistent/nvidia-smi",
        "readiness": {}})
    assert rc == 0, result.get("msg")
    assert result["findings"] == [] and result["commands"] == [] and "readiness" not in result
    assert result["table"] == ("node %s: no gres.conf rendered for it (no GPUs in the inventory); nothing to verify"
                               % node.name)


@pytest.mark.ansible_core
@pytest.mark.parametrize("files", [{"cgroup.conf": ""}, "slurm.conf"])
def test_bad_rendered_files_are_refused_naming_the_host_and_the_variables(node, files):
    rc, result = run_module(node, "hpc.slurm_gres.gres_verify", {
        "files": files, "node_name": node.name, "nvidia_smi": "/nonexistent/nvidia-smi",
        "origin": {"host": "gpu-a01.example.org", "files": "hpc_gres_slurmd_files",
                   "node_name": "hpc_gres_slurmd_name"}})
    assert rc != 0
    assert result["msg"].startswith("host gpu-a01.example.org: hpc_gres_slurmd_files, hpc_gres_slurmd_name: "
                                    "expected the rendered files of the hpc.slurm_gres.hpc_gres_render role")
    assert "found files %s" % ("cgroup.conf" if isinstance(files, dict) else "str 'slurm.conf'") in result["msg"]


def test_a_refused_nodes_plan_holds_only_the_files_that_would_change(node, tmp_path):
    # three copies of every file (installed, running, new) buried the findings table in the failure output
    node.lose(7)
    etc, state = tmp_path / "etc", tmp_path / "state"
    etc.mkdir()
    state.mkdir()
    (etc / "slurm.conf").write_text(SLURM_CONF)
    (etc / "gres.conf").write_text("# an older gres.conf\n" + GRES_CONF)
    stage_dir = stage(node)
    files = {"slurm.conf": SLURM_CONF, node.name + "/gres.conf": GRES_CONF}
    plan = {"files": files, "config_dir": str(etc), "state_dir": str(state)}
    rc, result = verify(node, stage_dir, check=True, plan=plan)
    assert rc != 0 and "declares 8 a100, nvidia-smi sees 7" in result["msg"]
    refused = result["plan"]
    assert "running_files" not in refused
    assert refused["new_files"] == {"gres.conf": GRES_CONF}
    assert refused["installed"] == {"gres.conf": "# an older gres.conf\n" + GRES_CONF}
    assert refused["install"] and refused["not_installed"] == ["gres.conf"]
    # a node that passes keeps every file
    rc, result = verify(Node(tmp_path / "healthy"), stage_dir, check=True, plan=plan)
    assert rc == 0, result.get("msg")
    assert sorted(result["plan"]["new_files"]) == sorted(result["plan"]["running_files"]) == [
        "cgroup.conf", "gres.conf", "slurm.conf"]
