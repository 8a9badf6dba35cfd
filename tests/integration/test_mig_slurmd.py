"""Rendered MIG gres.conf lines judged by the real ``slurmd -N NODE -G`` of every tested Slurm release.

The lines come from ``mig_render`` with cap minors from the driver's full mig-minors table, and the
slurm.conf ``Gres=`` counts from ``gres_type.mig_gres_types``: slurmd must accept every line, keep ``+me`` in the
type, and report one device per MIG instance with its three device files.
"""

import pytest

import slurm_release
from slurmd_oracle import run_slurmd_g

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import profiles as mig
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_types

from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig import render as mig_render
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import parse_mig_minors

import fake_sysfs  # noqa: E402

SLURM_CONF = """\
ClusterName=migtest
SlurmctldHost=ctl01
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
GresTypes=gpu
NodeName=gpu-m01 Sockets=1 CoresPerSocket=8 ThreadsPerCore=1 RealMemory=1000 Gres=%s
PartitionName=gpu Nodes=ALL Default=YES
"""


def gres_field(types, whole=None):
    parts = ["gpu:%s:%d" % (t, n) for t, n in types.items()]
    if whole:
        parts.append("gpu:%s:%d" % whole)
    return ",".join(parts)


@pytest.fixture(scope="module", params=slurm_release.releases())
def root(request):
    return slurm_release.require_release(request.param)


def test_mixed_mig_and_whole_gpu_node_is_accepted_by_slurmd(root):
    layout = ["3g.40gb", "2g.20gb", "1g.10gb+me", "1g.10gb"]
    placed = mig.creation_order("A100-80GB", layout)
    assert placed is not None
    # GI ids as an A100 would hand them out for these placements do not matter here; any live ids will do
    devices = [{"profile": p["profile"], "gi_id": gi, "ci_id": 0} for p, gi in zip(placed, (1, 5, 13, 14))]
    minors = parse_mig_minors(fake_sysfs.mig_minors_text())
    lines = mig_render.render_mig_gres_lines("gpu-m01", 0, devices, minors, cores="0-3")
    gres = "\n".join(lines + ["NodeName=gpu-m01 Name=gpu Type=a100 File=/dev/nvidia1 Cores=4-7"]) + "\n"
    slurm = SLURM_CONF % gres_field(mig_gres_types(layout), whole=("a100", 1))

    result = run_slurmd_g("gpu-m01", slurm, gres, 1, 8, 1, root=root)
    assert result.ok, result.describe()
    assert result.counts("gpu") == {"gpu:1g.10gb": 1, "gpu:1g.10gb+me": 1, "gpu:2g.20gb": 1,
                                    "gpu:3g.40gb": 1, "gpu:a100": 1}, result.describe()
    by_type = {}
    for rec in result.records:
        by_type.setdefault(rec.type, []).append(rec.files)
    for line in lines:
        gtype = line.split(" Type=")[1].split()[0]
        files = line.split("MultipleFiles=")[1].split()[0].split(",")
        assert files in by_type[gtype], (gtype, files, result.describe())


def test_real_gh200_layout_is_accepted_by_slurmd(root):
    devices = [{"profile": "1g.24gb", "gi_id": gi, "ci_id": 0} for gi in (3, 4, 5)]
    devices.append({"profile": "1g.12gb", "gi_id": 13, "ci_id": 0})
    minors = parse_mig_minors(fake_sysfs.mig_minors_text())
    lines = mig_render.render_mig_gres_lines("gpu-m01", 0, devices, minors)
    slurm = SLURM_CONF % gres_field(mig_gres_types(d["profile"] for d in devices))
    result = run_slurmd_g("gpu-m01", slurm, "\n".join(lines) + "\n", 1, 8, 1, root=root)
    assert result.ok, result.describe()
    assert result.counts("gpu") == {"gpu:1g.12gb": 1, "gpu:1g.24gb": 3}, result.describe()
    assert sorted(f for rec in result.records for f in rec.files if "nvidia-cap" in f) == sorted(
        "/dev/nvidia-caps/nvidia-cap%d" % n for n in (30, 31, 39, 40, 48, 49, 120, 121))


def test_rtx_pro_6000_profile_suffixes_are_kept_in_the_type_by_slurmd(root):
    # +me.all, -me and +gfx (RTX PRO 6000 Blackwell) become types as written, like +me; GI ids as the real -lgi of
    # that GPU hands them out (1g at 0/3/6/9: 3-6, 2g at 0/6: 1-2)
    layouts = {0: [("1g.24gb+me.all", 3), ("1g.24gb-me", 4), ("2g.48gb-me", 2)],
               1: [("2g.48gb+gfx", 1), ("1g.24gb+gfx", 5), ("1g.24gb-me", 6)]}
    minors = parse_mig_minors(fake_sysfs.mig_minors_text())
    lines, profiles = [], []
    for index, layout in layouts.items():
        assert mig.validate_layout("gpu-m01", index, "RTX-PRO-6000-96GB", [p for p, _gi in layout]) == []
        devices = [{"profile": p, "gi_id": gi, "ci_id": 0} for p, gi in layout]
        lines += mig_render.render_mig_gres_lines("gpu-m01", index, devices, minors)
        profiles += [p for p, _gi in layout]
    slurm = SLURM_CONF % gres_field(mig_gres_types(profiles))
    result = run_slurmd_g("gpu-m01", slurm, "\n".join(lines) + "\n", 1, 8, 1, root=root)
    assert result.ok, result.describe()
    assert result.counts("gpu") == {"gpu:1g.24gb+me.all": 1, "gpu:1g.24gb-me": 2, "gpu:2g.48gb-me": 1,
                                    "gpu:2g.48gb+gfx": 1, "gpu:1g.24gb+gfx": 1}, result.describe()
