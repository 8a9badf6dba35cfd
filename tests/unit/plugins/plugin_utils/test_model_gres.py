"""What real sites run beyond whole typed GPUs: untyped and count-only GPUs, Links, Flags, MPS, slurm.conf-only
shard/MPS counts, other GRES, per-node AutoDetect and extra NodeName options: model rules and rendered lines."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import parse_slurm_conf
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_access import node_gres
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

LAYOUT = {"hpc_gres_node_sockets": 2, "hpc_gres_node_cores_per_socket": 4, "hpc_gres_node_threads_per_core": 1}


def model(nodes, **cluster):
    hostvars = dict(nodes, ctl={})
    return build_cluster_model(hostvars, {"slurmctld": ["ctl"], "slurmd": list(nodes)}, cluster)


def problems(nodes, **cluster):
    with pytest.raises(GresError) as err:
        model(nodes, **cluster)
    return [str(p) for p in err.value.problems]


def node_line(files, name):
    return [line for line in files["slurm.conf"].splitlines() if line.startswith("NodeName=%s " % name)][0]


def test_untyped_gpus_render_without_type():
    m = model({"n1": dict(LAYOUT, hpc_gres_gpus=[{"index": 0, "cores": "0-3"}, {"index": 1, "cores": "0-3"}])})
    files = render_all(m)
    assert node_gres(m["nodes"][0]) == {"gpu": 2}
    assert node_line(files, "n1").endswith("Gres=gpu:2")
    assert "NodeName=n1 Name=gpu File=/dev/nvidia[0-1] Cores=0-3\n" in files["n1/gres.conf"]
    assert "GresTypes=gpu\n" in files["slurm.conf"]


def test_typed_and_untyped_on_one_node_is_refused():
    found = problems({"n1": {"hpc_gres_gpus": [{"index": 0, "type": "a100"}, {"index": 1}]}})
    assert found == ["host n1: hpc_gres_gpus: expected every GPU of a node typed, or none (MIG instances are "
                     "typed), found typed and untyped GPUs (slurmctld: Some gpu GRES in slurm.conf have a type "
                     "while others do not)"]


def test_typed_and_untyped_nodes_in_one_cluster():
    m = model({"n1": {"hpc_gres_gpus": [{"index": 0, "type": "a100"}]}, "n2": {"hpc_gres_gpus": [{"index": 0}]}})
    files = render_all(m)
    assert node_line(files, "n1").endswith("Gres=gpu:a100:1")
    assert node_line(files, "n2").endswith("Gres=gpu:1")


def test_links_get_a_line_per_gpu_and_bad_links_are_refused():
    gpus = [{"index": i, "type": "h100", "links": ",".join("-1" if j == i else "18" for j in range(2))}
            for i in range(2)]
    files = render_all(model({"n1": {"hpc_gres_gpus": gpus}}))
    assert "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia0 Links=-1,18\n" in files["n1/gres.conf"]
    assert "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia1 Links=18,-1\n" in files["n1/gres.conf"]
    found = problems({"n1": {"hpc_gres_gpus": [{"index": 0, "links": "0,0"}]}})
    assert found[0].startswith("host n1: hpc_gres_gpus[0].links: expected a Links list of integers -2..1023 "
                               "with exactly one -1")
    # an empty entry is skipped (gres_links_validate reads the list with strtok_r), and the text is kept as written:
    # a real DeepOps gres.conf (NVIDIA/deepops#1102) has Links=0,0,-1,,0,0,0,0,0 and slurmd 22.05.8 takes it
    files = render_all(model({"n1": {"hpc_gres_gpus": [{"index": 0, "type": "h100", "links": "0,0,-1,,0,0,0,0,0"}]}}))
    assert "NodeName=n1 Name=gpu Type=h100 File=/dev/nvidia0 Links=0,0,-1,,0,0,0,0,0\n" in files["n1/gres.conf"]
    assert problems({"n1": {"hpc_gres_gpus": [{"index": 0, "links": ",,"}]}})[0].startswith(
        "host n1: hpc_gres_gpus[0].links: expected a Links list")


def test_flags_are_exact_words_and_env_flags_agree():
    gpus = [{"index": 0, "type": "a", "flags": "nvidia_gpu_env"},
            {"index": 1, "type": "a", "flags": ["NVIDIA_GPU_ENV"]}]
    files = render_all(model({"n1": {"hpc_gres_gpus": gpus}}))
    assert "NodeName=n1 Name=gpu Type=a File=/dev/nvidia[0-1] Flags=nvidia_gpu_env\n" in files["n1/gres.conf"]
    assert problems({"n1": {"hpc_gres_gpus": [{"index": 0, "flags": ["nvidia_gpu"]}]}}) == [
        "host n1: hpc_gres_gpus[0].flags: expected gres.conf flags (nvidia_gpu_env, amd_gpu_env, intel_gpu_env, "
        "opencl_env, no_gpu_env, CountOnly, one_sharing, all_sharing, explicit), found unknown flag 'nvidia_gpu' "
        "(did you mean nvidia_gpu_env?)"]
    found = problems({"n1": {"hpc_gres_gpus": [
        {"index": 0, "flags": ["nvidia_gpu_env"]}, {"index": 1, "flags": ["amd_gpu_env"]}]}})
    assert "Flags does not match env flags for previous GRES" in found[0]
    found = problems({"n1": {"hpc_gres_gpus": [{"index": 0, "flags": ["nvidia_gpu_env"]}, {"index": 1}]}})
    assert "hpc_gres_gpus[1].flags: expected the env flags of hpc_gres_gpus[0] (nvidia_gpu_env)" in found[0]
    # slurmd 22.05 stops on this one too (checked live): the first line's default env flags are compared
    found = problems({"n1": {"hpc_gres_gpus": [{"index": 0}, {"index": 1, "flags": ["nvidia_gpu_env"]}]}})
    assert found[0].startswith("host n1: hpc_gres_gpus[1].flags: expected the env flags of hpc_gres_gpus[0] "
                               "(none): every GPU of a node the same, found nvidia_gpu_env")


def test_mps_per_gpu_and_slurm_conf_only_counts():
    m = model({"n1": {"hpc_gres_gpus": [{"index": 0, "type": "a", "mps": 100},
                                        {"index": 1, "type": "a", "mps": 100}]},
               "n2": {"hpc_gres_gpus": [{"index": 0, "type": "a"}, {"index": 1, "type": "a"}],
                      "hpc_gres_node_shards": 10, "hpc_gres_node_mps": 200}})
    files = render_all(m)
    assert node_line(files, "n1").endswith("Gres=gpu:a:2,mps:200")
    assert "NodeName=n1 Name=mps Count=200 File=/dev/nvidia[0-1]\n" in files["n1/gres.conf"]
    assert node_line(files, "n2").endswith("Gres=gpu:a:2,shard:10,mps:200")
    assert "Name=shard" not in files["n2/gres.conf"] and "Name=mps" not in files["n2/gres.conf"]
    assert "GresTypes=gpu,shard,mps\n" in files["slurm.conf"]


def test_node_wide_and_per_gpu_shares_are_exclusive_and_need_gpus():
    found = problems({"n1": {"hpc_gres_gpus": [{"index": 0, "shards": 4}], "hpc_gres_node_shards": 8},
                      "n2": {"hpc_gres_node_mps": 100}})
    assert found == [
        "host n1: hpc_gres_node_shards: expected a node-wide shards count or shards per GPU, not both, found both "
        "(slurmd stops on shard lines with and without File)",
        "host n2: hpc_gres_node_mps: expected GPUs on the node to spread mps over, found no hpc_gres_gpus "
        "(slurmd stops: SHARED specified without any SHARING found)"]


def test_count_only_gpus_need_autodetect():
    nodes = {"n1": {"hpc_gres_gpus": [{"type": "a100", "count": 4}]}}
    assert problems(nodes) == [
        "host n1: hpc_gres_gpus: expected count-only GPU entries only where AutoDetect is on "
        "(hpc_gres_node_autodetect or hpc_gres_autodetect), found AutoDetect off (slurmd drops GPUs without File= "
        "from the final list when nothing detects them)"]
    files = render_all(model(nodes, hpc_gres_autodetect="nvml"))
    assert node_line(files, "n1").endswith("Gres=gpu:a100:4")
    # slurmd makes the same record from slurm.conf's count (gres.c _merge_gres): no gres.conf line repeats it
    assert files["n1/gres.conf"].endswith("NodeName=n1 AutoDetect=nvml\n")
    files = render_all(model({"n1": {"hpc_gres_gpus": [{"type": "a100", "count": 4, "cores": "0-1"}],
                                     "hpc_gres_node_sockets": 1, "hpc_gres_node_cores_per_socket": 2}},
                             hpc_gres_autodetect="nvml"))
    assert files["n1/gres.conf"].endswith("NodeName=n1 AutoDetect=nvml\nNodeName=n1 Name=gpu Type=a100 Count=4 "
                                          "Cores=0-1\n")


def test_count_only_and_indexed_gpus_do_not_mix():
    found = problems({"n1": {"hpc_gres_node_autodetect": "nvml",
                             "hpc_gres_gpus": [{"index": 0, "type": "a"}, {"type": "a", "count": 1}]}})
    assert found == ["host n1: hpc_gres_gpus[1].count: expected count-only entries only on a node without indexed "
                     "GPU entries, found both (slurmd stops: some records have \"File\" specification while others "
                     "do not)"]


def test_per_node_autodetect_override():
    m = model({"n1": {"hpc_gres_gpus": [{"index": 0, "type": "a100"}]},
               "n2": {"hpc_gres_node_autodetect": "off", "hpc_gres_gpus": [{"index": 0, "type": "a100"}]}},
              hpc_gres_autodetect="nvml")
    files = render_all(m)
    assert "NodeName=n1 AutoDetect=nvml\n" in files["n1/gres.conf"]
    assert "NodeName=n2 AutoDetect=off\n" in files["n2/gres.conf"]
    assert problems({"n1": {"hpc_gres_node_autodetect": "sometimes"}}) == [
        "host n1: hpc_gres_node_autodetect: expected one of off, nvml, nvidia, full, found 'sometimes' (string)"]


def test_generic_gres_in_gres_and_grestypes():
    m = model({"n1": dict(LAYOUT, hpc_gres_gpus=[{"index": 0}],
                          hpc_gres_node_gres=[{"name": "bandwidth", "type": "lustre", "count": "4G", "no_consume": True},
                                              {"name": "tmpdisk", "count": 100},
                                              {"name": "mic", "file": "/dev/mic[0-1]", "cores": "0-3"}])},
              hpc_gres_types=["nic"])
    files = render_all(m)
    assert node_line(files, "n1").endswith("Gres=gpu:1,bandwidth:lustre:no_consume:4G,tmpdisk:100,mic:2")
    assert "GresTypes=gpu,bandwidth,tmpdisk,mic,nic\n" in files["slurm.conf"]
    assert "NodeName=n1 Name=mic File=/dev/mic[0-1] Cores=0-3\n" in files["n1/gres.conf"]
    assert "Name=bandwidth" not in files["n1/gres.conf"]
    conf = parse_slurm_conf(files["slurm.conf"])
    assert conf["nodes"]["n1"]["gres"] == {"gpu": 1, "bandwidth:lustre": 4 * 1024 ** 3, "tmpdisk": 100, "mic": 2}


@pytest.mark.parametrize("entry, fragment", [
    ({"name": "gpu", "count": 1}, "hpc_gres_node_gres[0].name: expected a GRES other than gpu, shard and mps"),
    ({"name": "bw", "count": "lots"}, "hpc_gres_node_gres[0].count: expected a count >= 1"),
    ({"name": "mic", "file": "/dev/mic[0-1]", "count": 3}, "hpc_gres_node_gres[0].count: expected the number of files"),
    ({"name": "bw", "count": 1, "colour": "red"}, "hpc_gres_node_gres[0].colour: expected a GRES key"),
])
def test_generic_gres_refusals(entry, fragment):
    found = problems({"n1": {"hpc_gres_node_gres": [entry]}})
    assert any(fragment in p for p in found), found


def test_generic_gres_file_on_some_records_only():
    found = problems({"n1": {"hpc_gres_node_gres": [
        {"name": "mic", "type": "a", "file": "/dev/mic0"}, {"name": "mic", "type": "b", "count": 1}]}})
    assert found == ["host n1: hpc_gres_node_gres[1].file: expected File on every mic record when any has one, found "
                     "none (slurmd stops: some records have \"File\" specification while others do not)"]


def test_node_options_render_on_the_node_line_and_owned_keys_are_refused():
    m = model({"n1": {"hpc_gres_node_options": {"TmpDisk": 100000, "State": "UNKNOWN", "Reason": "new disk"}}})
    assert "NodeName=n1 TmpDisk=100000 State=UNKNOWN Reason=\"new disk\"" in render_all(m)["slurm.conf"]
    assert problems({"n1": {"hpc_gres_node_options": {"Gres": "gpu:1", "Colour": "red"}}}) == [
        "host n1: hpc_gres_node_options.Gres: expected an option the schema does not hold, found Gres (use hpc_gres_gpus "
        "for GPUs, hpc_gres_node_gres for other GRES)",
        "host n1: hpc_gres_node_options.Colour: expected a NodeName option (BcastAddr, Boards, CPUSpecList, CPUs, "
        "Comment, CoreSpecCount, CpuBind, Extra, MemSpecLimit, NodeAddr, NodeHostname, Parameters, Port, Reason, "
        "RestrictedCoresPerGPU, SocketsPerBoard, State, TRESWeights, TmpDisk, Topology), found unknown option "
        "'Colour'"]


def test_cores_without_a_layout_are_written_as_given_with_a_warning():
    """A site's slurm.conf often gives only CPUs=: Cores= cannot be checked against a layout then; slurmd (and the
    node verification) judge them against the node's hardware."""
    assert model({"n1": {"hpc_gres_gpus": [{"index": 0, "type": "a100"}]}})["warnings"] == []
    m = model({"n1": {"hpc_gres_node_options": {"CPUs": 8},
                      "hpc_gres_gpus": [{"index": 0, "type": "a100", "cores": "0-3"}]}})
    assert [str(w) for w in m["warnings"]] == [
        "host n1: hpc_gres_node_sockets: expected the node's CPU layout (sockets, cores_per_socket) on a node whose "
        "GRES have cores, found not set (Cores= are not checked here, only by the node verification against the "
        "node's hardware; see `slurmd -C` on the node)"]
    assert "NodeName=n1 Name=gpu Type=a100 File=/dev/nvidia0 Cores=0-3\n" in render_all(m)["n1/gres.conf"]


def test_shared_gres_with_mig_is_refused_for_mps_too():
    mig_node = {"hpc_gres_gpus": [{"index": 0, "type": "a100", "model": "A100-80GB", "mig": ["7g.80gb"]}]}
    found = problems({"n1": mig_node, "n2": {"hpc_gres_gpus": [{"index": 0, "type": "a100", "mps": 100}]}})
    assert "MIG instances only in a cluster without shards" in found[0]
    found = problems({"n1": mig_node}, hpc_gres_types=["gpu", "shard"])
    assert "MIG instances only in a cluster without shards" in found[0]


def test_gpus_with_their_own_device_file_render_it_as_written():
    """file: a GPU's device file that is not /dev/nvidiaN (MIG caps as plain File lines, WSL's /dev/dxg, stand-ins):
    numbered files in a row collapse like /dev/nvidia[0-3]; shards follow the files."""
    gpus = [{"index": i, "file": "/dev/tty%d" % i, "shards": 2} for i in range(4)] + [{"index": 4, "file": "/dev/dxg"}]
    files = render_all(model({"n1": {"hpc_gres_gpus": gpus}}))
    assert "NodeName=n1 Name=gpu File=/dev/tty[0-3]\n" in files["n1/gres.conf"]
    assert "NodeName=n1 Name=gpu File=/dev/dxg\n" in files["n1/gres.conf"]
    assert "NodeName=n1 Name=shard Count=8 File=/dev/tty[0-3]\n" in files["n1/gres.conf"]
    assert node_line(files, "n1").endswith("Gres=gpu:5,shard:8")
    caps = [{"index": 0, "type": "1g.10gb", "file": "/dev/nvidia-caps/nvidia-cap30"},
            {"index": 1, "type": "1g.10gb", "file": "/dev/nvidia-caps/nvidia-cap39"}]
    files = render_all(model({"n1": {"hpc_gres_gpus": caps}}))
    assert ("NodeName=n1 Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap30\n"
            "NodeName=n1 Name=gpu Type=1g.10gb File=/dev/nvidia-caps/nvidia-cap39\n") in files["n1/gres.conf"]


@pytest.mark.parametrize("entry, fragment", [
    ({"index": 0, "file": "/dev/tty[0-3]"}, "hpc_gres_gpus[0].file: expected one device file as an absolute path"),
    ({"index": 0, "file": "dev/dxg"}, "hpc_gres_gpus[0].file: expected one device file as an absolute path"),
    ({"index": 0, "file": "/dev/../etc/passwd"}, "hpc_gres_gpus[0].file: expected one device file"),
    ({"index": 0, "file": "/dev/nvidia3"}, "hpc_gres_gpus[0].file: expected a device file other than /dev/nvidiaN, "
                                           "found '/dev/nvidia3' (string) (write minor: 3 for /dev/nvidiaN)"),
    ({"index": 0, "file": "/dev/dxg", "minor": 0}, "hpc_gres_gpus[0].minor: expected minor or file, not both"),
    ({"index": 0, "type": "a100", "model": "A100-SXM4-40GB", "mig": ["3g.20gb"], "file": "/dev/dxg"},
     "hpc_gres_gpus[0].file: expected file only on a GPU without MIG instances"),
])
def test_gpu_device_file_refusals(entry, fragment):
    found = problems({"n1": {"hpc_gres_gpus": [entry]}})
    assert any(fragment in p for p in found), found


def test_one_device_file_per_gpu():
    found = problems({"n1": {"hpc_gres_gpus": [{"index": 0, "file": "/dev/dxg"}, {"index": 1, "file": "/dev/dxg"}]}})
    assert any("hpc_gres_gpus[1].file: expected unique GPU file, found /dev/dxg (also used by hpc_gres_gpus[0])"
               in p for p in found), found


@pytest.mark.parametrize("name, ok", [("cloud1.pri.example", True), ("Tux_2-b", True), ("x" * 40, True),
                                      ("x" * 41, False), ("my cluster", False), ("a#b", False), ("a=b", False),
                                      (".hidden", False)])
def test_cluster_names_slurm_takes(name, ok):
    if ok:
        assert model({"n1": {}}, hpc_gres_cluster_name=name)["cluster_name"] == name
    else:
        assert any("hpc_gres_cluster_name: expected a cluster name" in p
                   for p in problems({"n1": {}}, hpc_gres_cluster_name=name))


@pytest.mark.parametrize("value, named", [
    ("rack 12\nState=DRAIN", "'rack 12\\nState=DRAIN' (contains a newline) (a newline would start a new line"),
    ('say "hi"', "'say \"hi\"' (contains '\"')"),
    ("bad#disk", "(contains '#' (starts a comment in Slurm files)) (Slurm drops everything from '#'"),
    ("C:\\temp", "(contains '\\' (Slurm's escape and line continuation))"),
])
def test_a_node_option_value_is_refused_naming_the_character_that_makes_it_unsafe(value, named):
    """Issue 25: "expected a string or integer, found '...' (string)" contradicted itself; the refusal names the
    character, and a value with '"' or '\\' no longer fails while the file is written."""
    (found,) = problems({"n1": {"hpc_gres_node_options": {"Reason": value}}})
    assert found.startswith("host n1: hpc_gres_node_options.Reason: expected printable ASCII without '\"', '#' or "
                            "'\\', found ") and named in found, found
