"""The vendored hostlist module is python-hostlist itself, not a rewrite."""
import importlib.util

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist as vendored


def test_vendored_copy_is_byte_identical_to_the_installed_package():
    spec = importlib.util.find_spec("hostlist")
    assert spec is not None, "python-hostlist must be installed in the venv (requirements.txt)"
    with open(spec.origin, encoding="utf-8") as f:
        upstream = f.read()
    with open(vendored.__file__, encoding="utf-8") as f:
        ours = f.read()
    assert ours.split("# ---\n", 1)[1] == upstream


def test_vendored_copy_expands_and_collects_slurm_hostlists():
    assert vendored.expand_hostlist("gpu-a[01-03]") == ["gpu-a01", "gpu-a02", "gpu-a03"]
    assert vendored.collect_hostlist(["gpu-a01", "gpu-a02", "gpu-a04"]) == "gpu-a[01-02,04]"
    assert vendored.expand_hostlist("/dev/nvidia[0-1]") == ["/dev/nvidia0", "/dev/nvidia1"]
