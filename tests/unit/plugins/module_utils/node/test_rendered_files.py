"""rendered_files.node_files: this node's slurm.conf and gres.conf out of the render's files, or an error that names
the host, the caller's variables, what was expected and what was found."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.rendered_files import node_files

FILES = {"slurm.conf": "ClusterName=c\n", "cgroup.conf": "", "gpu-a01/gres.conf": "Name=gpu File=/dev/nvidia0\n",
         "gpu-a02/gres.conf": "Name=gpu File=/dev/nvidia1\n"}
ORIGIN = {"host": "gpu-a01.example.org", "files": "hpc_gres_slurmd_files", "node_name": "hpc_gres_slurmd_name"}


def test_a_gpu_node_gets_slurm_conf_and_its_own_gres_conf():
    assert node_files(FILES, "gpu-a02", ORIGIN) == ("ClusterName=c\n", "Name=gpu File=/dev/nvidia1\n")


def test_a_node_without_a_gres_conf_gets_none():
    assert node_files(FILES, "cpu-001", ORIGIN) == ("ClusterName=c\n", None)


def test_an_empty_gres_conf_is_still_the_nodes():
    assert node_files(dict(FILES, **{"gpu-a03/gres.conf": ""}), "gpu-a03") == ("ClusterName=c\n", "")


@pytest.mark.parametrize("files, node, found", [
    ({}, "gpu-a01", "found files none and node name gpu-a01"),
    ({"cgroup.conf": ""}, "gpu-a01", "found files cgroup.conf and node name gpu-a01"),
    (None, "gpu-a01", "found files nothing and node name gpu-a01"),
    ("", "gpu-a01", "found files nothing and node name gpu-a01"),
    ("slurm.conf", "gpu-a01", "found files str 'slurm.conf' and node name gpu-a01"),
    ({"slurm.conf": None}, "gpu-a01", "found files slurm.conf and node name gpu-a01"),
    (FILES, "", "node name none (is the host in group slurmd?)"),
    (FILES, "  ", "node name none (is the host in group slurmd?)"),
])
def test_bad_input_names_host_variables_expected_and_found(files, node, found):
    with pytest.raises(ValueError) as err:
        node_files(files, node, ORIGIN)
    text = str(err.value)
    assert text.startswith("host gpu-a01.example.org: hpc_gres_slurmd_files, hpc_gres_slurmd_name: expected the "
                           "rendered files of the hpc.slurm_gres.hpc_gres_render role (slurm.conf")
    assert found in text


def test_without_origin_the_error_names_the_module_options():
    with pytest.raises(ValueError, match=r"^host gpu-a01: files, node_name: expected .* found files none"):
        node_files({}, "gpu-a01")


def test_a_gres_conf_that_is_not_text_is_refused():
    with pytest.raises(ValueError, match=r"^host gpu-a01.example.org: hpc_gres_slurmd_files: expected "
                                         r"gpu-a01/gres.conf as text, found list"):
        node_files(dict(FILES, **{"gpu-a01/gres.conf": ["x"]}), "gpu-a01", ORIGIN)
