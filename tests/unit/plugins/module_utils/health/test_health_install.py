"""What a node needs installed for the health check (program.health_plan), and the CPU-only node rule."""
import os

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import check, program
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.health_program import library


def spec(tmp_path, **more):
    out = {"library_dir": str(tmp_path / "lib"), "library_sha256": library()[1],
           "program": str(tmp_path / "sbin" / "hpc-gres-health"), "args": ["--slurm", "--timeout", "10"],
           "python": "/usr/bin/python3", "nhc": False}
    out.update(more)
    return out


def install(tmp_path, plan, spec_):
    for rel, text in library()[0].items():
        path = program.installed_path(spec_["library_dir"], rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as handle:
            handle.write(text)
    os.makedirs(os.path.dirname(spec_["program"]), exist_ok=True)
    with open(spec_["program"], "w") as handle:
        handle.write(plan["launcher"])
    os.chmod(spec_["program"], 0o755)


def test_a_bare_node_needs_everything_and_an_installed_one_nothing(tmp_path):
    s = spec(tmp_path)
    plan = program.health_plan(s)
    assert plan["library"] and plan["needed"] and plan["nhc"] is None
    assert "--slurm" in plan["launcher"] and s["library_dir"] in plan["launcher"]
    install(tmp_path, plan, s)
    assert program.health_plan(s) == {"library": False, "launcher": None, "nhc": None, "needed": False,
                                      "boot": {"dirs": [], "reload": False, "needed": False}}


def test_a_changed_library_file_or_other_options_or_mode_reinstall(tmp_path):
    s = spec(tmp_path)
    install(tmp_path, program.health_plan(s), s)
    path = program.installed_path(s["library_dir"], program.PROGRAM_FILES[-1])
    with open(path, "a") as handle:
        handle.write("# edited\n")
    assert program.health_plan(s)["library"] and not program.health_plan(s)["launcher"]
    assert program.health_plan(dict(s, args=["--slurm", "--timeout", "5"]))["launcher"]
    os.chmod(s["program"], 0o644)
    assert program.health_plan(s)["launcher"]


def test_the_digest_covers_paths_and_texts():
    files, digest = library()
    assert program.library_digest(files) == digest
    assert program.library_digest(dict(files, **{"x.py": ""})) != digest
    renamed = {k.replace("health/", "h/"): v for k, v in files.items()}
    assert program.library_digest(renamed) != digest


SLURM = ("ClusterName=c\nSlurmctldHost=ctl\nGresTypes=gpu\nNodeName=gpu01 Gres=gpu:a100:2 CPUs=8\n"
         "NodeName=cpu[01-02] CPUs=8\nPartitionName=p Nodes=ALL\n")


def test_a_node_without_gpus_in_slurm_conf_is_healthy_without_reading_anything(tmp_path):
    assert check.configured_gpus("cpu01", SLURM, None) is False
    assert check.configured_gpus("gpu01", SLURM, "NodeName=gpu01 Name=gpu Type=a100 File=/dev/nvidia[0-1]\n")
    assert check.configured_gpus("other", SLURM, None) is None
    assert check.configured_gpus("cpu01", None, None) is None
    conf = tmp_path / "slurm.conf"
    conf.write_text(SLURM)
    out = check.check_node({"node": "cpu01", "slurm_conf": str(conf), "nvidia_smi": "/nonexistent/nvidia-smi"},
                           env={})
    assert out["verdict"]["healthy"] and out["commands"] == []
    assert all(row["status"] != "failed" for row in out["verdict"]["checks"])


def test_check_readiness_alone_reads_no_slurm_file(tmp_path):
    out = check.check_readiness({"nvidia_smi": "/nonexistent/nvidia-smi", "root": str(tmp_path),
                                 "kernel_log": "none", "fabric_manager": "none"}, env={})
    assert not out["ready"]
    assert [f["check"] for f in out["findings"] if f["severity"] == "error"] == ["nvml"]
    assert "slurm.conf" not in out["inputs"]
