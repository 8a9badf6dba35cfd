"""nvidia_smi.parse_topo_matrix on every recorded ``topo -m`` output, and on re-whitespaced variants of them.

The expected values below were read off each fixture by eye (they are the oracle; the parser is not used
to produce them).
"""
import re

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import parse_topo_matrix
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import parse_int_ranges

import nvsmi_fixtures

CPU_NUMA = ["CPU Affinity", "NUMA Affinity"]
CURRENT = ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]


def rep(n, cpu, numa):
    return [(cpu, numa)] * n


def nics(prefix_names, devices=None):
    devices = devices if devices is not None else [None] * len(prefix_names)
    return list(zip(prefix_names, devices))


def mlx(n, start=0):
    return ["mlx5_%d" % i for i in range(start, start + n)]


def nic_names(n):
    return ["NIC%d" % i for i in range(n)]


# fixture: (attributes, [(cpu affinity, numa affinity) per GPU], [(nic row name, device)], [(gpu, column, link)])
EXPECTED = {
    # the header's "CPU    Affinity" with its words spaced out (NVIDIA's MLPerf tuning guide)
    "4gpu-4numa-reversed-cpu-affinity-header-spaced-mlperf-nvidia.txt": (
        ["CPU    Affinity", "NUMA Affinity"],
        [("48-63,112-127", "3"), ("32-47,96-111", "2"), ("16-31,80-95", "1"), ("0-15,64-79", "0")], [],
        [("GPU0", "GPU1", "SYS"), ("GPU3", "GPU2", "SYS")]),
    "6gpu-3-nvlink-pairs-mlx5-embedded-python.txt": (
        CPU_NUMA, rep(3, "0-27,56-83", "0") + rep(3, "28-55,84-111", "1"), nics(["mlx5_0"], ["mlx5_0"]),
        [("GPU0", "GPU3", "NV12"), ("GPU1", "GPU2", "NV12"), ("GPU4", "GPU5", "NV12"), ("GPU0", "mlx5_0", "NODE"),
         ("GPU3", "mlx5_0", "SYS")]),
    "a100-4gpu-adroit-strided-cpus-slurm-cgroup.txt": (
        CPU_NUMA, rep(2, "0,2,4,6,8,10", "0") + rep(2, "1,3,5,7,9,11", "1"), nics(["mlx5_0"], ["mlx5_0"]),
        [("GPU0", "GPU2", "SYS"), ("GPU2", "GPU3", "NODE")]),
    "a100-4gpu-nv4-della-i16g1.txt": (
        CPU_NUMA, rep(2, "0-23", "0") + rep(2, "24-47", "1"), nics(["mlx5_0"], ["mlx5_0"]),
        [("GPU0", "GPU3", "NV4"), ("GPU2", "mlx5_0", "SYS")]),
    "a100-8gpu-4nic-2s-ht-confluence.txt": (
        CURRENT, rep(4, "0-31,64-95", "0") + rep(4, "32-63,96-127", "1"), nics(nic_names(4), mlx(4)),
        [("GPU0", "NIC0", "PXB"), ("GPU2", "NIC2", "PXB"), ("GPU0", "NIC2", "SYS"), ("GPU7", "GPU6", "NV12")]),
    "a100-8gpu-nonic-aws-p4d-style.txt": (
        CURRENT, rep(4, "0-23,48-71", "0") + rep(4, "24-47,72-95", "1"), [], [("GPU0", "GPU7", "NV12")]),
    "a100pcie-4gpu-nv12-4numa-blog.txt": (
        CURRENT, [("0-23", "0"), ("24-47", "1"), ("48-71", "2"), ("72-95", "3")], [],
        [("GPU0", "GPU1", "NV12"), ("GPU0", "GPU2", "SYS"), ("GPU2", "GPU3", "NV12")]),
    "a100sxm40-8gpu-8nic-cloudvm-ph-glitch.txt": (
        CURRENT, rep(8, "0-115", "0-3"), nics(nic_names(8), mlx(8)),
        [("GPU0", "NIC7", "PHB"), ("GPU5", "NIC6", "PHB"), ("GPU3", "GPU4", "NV12")]),
    "b300-8gpu-9nic-ansi-header-sglang26039.txt": (
        CURRENT, rep(4, "0-63,128-191", "0") + rep(4, "64-127,192-255", "1"),
        nics(nic_names(9), ["mlx5_1%d" % i for i in range(8)] + ["mlx5_bond_0"]),
        [("GPU0", "NIC0", "PXB"), ("GPU3", "NIC3", "PXB"), ("GPU7", "NIC8", "NODE"), ("GPU0", "NIC8", "SYS")]),
    "dgxa100-8gpu-12nic-mlx5-headers-oldfmt.txt": (
        CPU_NUMA, rep(2, "48-63,176-191", "3") + rep(2, "16-31,144-159", "1") + rep(2, "112-127,240-255", "7")
        + rep(2, "80-95,208-223", "5"), nics(mlx(12), mlx(12)),
        [("GPU0", "mlx5_0", "PXB"), ("GPU6", "mlx5_8", "PXB"), ("GPU7", "mlx5_11", "SYS")]),
    # GB200 tray (Grace, 34 NUMA nodes): NUMA Affinity lists several ranges, GPU NUMA ID a number (GPU_NUMA_IDS)
    "gb200-4gpu-8nic-gpu-numa-id-2-10-18-26-spaces.txt": (
        CURRENT, rep(2, "0-71", "0,3-9,11-17") + rep(2, "72-143", "1,19-25,27-33"), nics(nic_names(8), mlx(8)),
        [("GPU0", "GPU3", "NV18"), ("GPU0", "NIC0", "SYS"), ("GPU2", "NIC6", "SYS"), ("GPU3", "NIC7", "SYS")]),
    "gb200-4gpu-8nic-openshift-numa-ranges-gpunumaid-na-580.txt": (
        CURRENT, rep(2, "0-71", "0,2-17") + rep(2, "72-143", "1,18-33"), nics(nic_names(8), mlx(8)),
        [("GPU1", "GPU2", "NV18"), ("GPU1", "NIC2", "SYS"), ("GPU3", "NIC7", "SYS")]),
    # hand-realigned pastes of the same GB200 box (NIC columns dropped by the authors)
    "gb200-4gpu-nonic-realigned-by-author-narrow-columns.txt": (
        CURRENT, rep(2, "0-71", "0,3-9,11-17") + rep(2, "72-143", "1,19-25,27-33"), [],
        [("GPU0", "GPU1", "NV18"), ("GPU3", "GPU0", "NV18"), ("GPU2", "GPU3", "NV18")]),
    "gb200-4gpu-nonic-realigned-by-author-right-aligned-gpu-numa-id.txt": (
        CURRENT, rep(2, "0-71", "0,3-9,11-17") + rep(2, "72-143", "1,19-25,27-33"), [],
        [("GPU0", "GPU3", "NV18"), ("GPU3", "GPU2", "NV18")]),
    "gb10-1gpu-4nic-roce-mixedcase.txt": (
        CURRENT, [("0-19", "0")], nics(nic_names(4), ["rocep1s0f0", "rocep1s0f1", "roceP2p1s0f0", "roceP2p1s0f1"]),
        [("GPU0", "NIC0", "NODE"), ("GPU0", "NIC3", "NODE")]),
    "gh200-1gpu-4nic-bluefield3-gpu-numa-id-1-aerial.txt": (
        CURRENT, [("0-71", "0")], nics(nic_names(4), mlx(4)),
        [("GPU0", "NIC0", "NODE"), ("GPU0", "NIC1", "NODE"), ("GPU0", "NIC3", "NODE")]),
    "h100-2gpu-nv18-kvm-90vcpu-spaces-sglang25073.txt": (
        CURRENT, rep(2, "0-89", "0"), [], [("GPU0", "GPU1", "NV18")]),
    "h100-4gpu-nv6-4nic-strided-cpu-lists-nccl1617.txt": (
        CURRENT, [("6,14,22,30", "3"), ("4,12,20,28", "1"), ("7,15,23,31", "7"), ("5,13,21,29", "5")],
        nics(nic_names(4)), [("GPU0", "NIC0", "PIX"), ("GPU1", "NIC1", "PIX"), ("GPU3", "NIC2", "SYS")]),
    "h100-8gpu-12nic-topo-mp-deepep397.txt": (
        CURRENT, rep(4, "0,2,4,6,8,10", "0") + rep(4, "1,3,5,7,9,11", "1"), nics(nic_names(12), mlx(12)),
        [("GPU0", "NIC0", "PIX"), ("GPU1", "NIC3", "PIX"), ("GPU7", "NIC11", "PIX"), ("GPU0", "GPU4", "SYS")]),
    # inside a Slurm job holding CPU 1 only (NUMA node 1 = the odd CPUs): GPUs 0-3 print an empty CPU Affinity cell
    # ("\t\t0\t\tN/A"), GPUs 4-7 the one CPU "1" before their NUMA node "1"
    "h100-8gpu-6nic-slurm-1cpu-empty-and-single-cpu-affinity-della-k17g3.txt": (
        CURRENT, rep(4, None, "0") + rep(4, "1", "1"), nics(nic_names(6), mlx(6)),
        [("GPU0", "NIC0", "PIX"), ("GPU0", "NIC1", "PIX"), ("GPU1", "NIC0", "NODE"), ("GPU3", "NIC2", "PIX"),
         ("GPU4", "NIC3", "PIX"), ("GPU4", "NIC4", "PIX"), ("GPU6", "NIC5", "PIX"), ("GPU7", "NIC5", "NODE"),
         ("GPU0", "GPU7", "NV18")]),
    "h100-8gpu-nonic-spaces-thunderkittens167.txt": (
        CURRENT, rep(4, "0-47,96-143", "0") + rep(4, "48-95,144-191", "1"), [], [("GPU0", "GPU7", "NV18")]),
    "h100-8gpu-vm-single-numa-nonic-rhelai.txt": (
        CURRENT, rep(8, "0-63", "0"), [], [("GPU3", "GPU5", "NV18")]),
    # Recorded by this project (2026-12-04): real ESC[4m ... ESC[0m bytes around the header, no NICs, no links.
    "h200-1gpu-vm-esc-header-580.txt": (CURRENT, [("0-15", "0")], [], []),
    "h20-3e-8gpu-8nic-pairs-spaces-sglang31046.txt": (
        CURRENT, rep(4, "0-47,96-143", "0") + rep(4, "48-95,144-191", "1"), nics(nic_names(8), mlx(8)),
        [("GPU0", "NIC0", "PIX"), ("GPU1", "NIC0", "NODE"), ("GPU6", "NIC7", "PIX"), ("GPU0", "NIC4", "SYS")]),
    "h800-4gpu-17nic-empty-cpu-numa-affinity.txt": (
        CURRENT, rep(4, None, None), nics(nic_names(17), mlx(17)),
        [("GPU0", "NIC4", "PIX"), ("GPU0", "NIC13", "PIX"), ("GPU3", "NIC16", "PIX"), ("GPU0", "GPU1", "NV8")]),
    "k80-4gpu-mlx4-legacy-soc-legend-microway.txt": (
        ["CPU Affinity"], rep(4, "0-11", None), nics(["mlx4_0"], ["mlx4_0"]),
        [("GPU0", "GPU1", "PIX"), ("GPU0", "GPU2", "PHB"), ("GPU3", "mlx4_0", "PHB")]),
    "l40s-1gpu-kvm-sglang23272.txt": (CURRENT, [("0-7", "0")], [], []),
    "mixed-5gpu-2s-spaces-club3090-46.txt": (
        CURRENT, [("8-15,24-31", "1")] + rep(4, "0-7,16-23", "0"), [],
        [("GPU1", "GPU2", "PHB"), ("GPU1", "GPU3", "NODE"), ("GPU0", "GPU4", "SYS")]),
    "power9-v100-1gpu-traverse-numa-0-8-252-255.txt": (
        CPU_NUMA, [("0-3", "0,8,252-255")], nics(mlx(4), mlx(4)), [("GPU0", "mlx5_0", "SYS")]),
    "rtx4090-8gpu-2nic-allsys-gpuallocator17.txt": (
        CURRENT, rep(4, "0-55,112-167", "0") + rep(4, "56-111,168-223", "1"), nics(nic_names(2)),
        [("GPU6", "NIC0", "PHB"), ("GPU6", "NIC1", "PHB"), ("GPU7", "NIC1", "SYS")]),
    # run inside a Slurm job whose cpuset holds none of GPUs 4-7's CPUs: their CPU Affinity cell is empty (a lone
    # tab, expanded in the paste), so their NUMA node sits a tab stop left of its header
    "a100pcie-8gpu-in-slurm-job-empty-cpu-affinity-dask-cuda1381.txt": (
        CURRENT, rep(4, "0-15,56-71", "0") + rep(4, None, "1"), [],
        [("GPU0", "GPU1", "NV12"), ("GPU4", "GPU5", "NV12"), ("GPU6", "NIC0", "PHB"), ("GPU7", "GPU6", "NV12")]),
    "rtx5090-2gpu-phb-threadripper-club3090-1229.txt": (CURRENT, rep(2, "0-63", "0"), [], [("GPU0", "GPU1", "PHB")]),
    "rtxpro6000bw-1gpu-sglang24697.txt": (CURRENT, [("0-27", "0")], [], []),
    "v100sxm2-2gpu-4nic-tabs-as-4spaces-s116.txt": (
        CURRENT, [("0-13,28-41", "0"), ("14-27,42-55", "1")], nics(nic_names(4), mlx(4)),
        [("GPU0", "GPU1", "SYS"), ("GPU0", "NIC0", "PHB"), ("GPU1", "NIC3", "PHB")]),
    "v100sxm2-8gpu-1nic-vastai-driver580.txt": (
        CURRENT, rep(4, "0-19,40-59", "0") + rep(4, "20-39,60-79", "1"), nics(["NIC0"], ["mlx5_2"]),
        [("GPU0", "GPU1", "NV1"), ("GPU0", "GPU3", "NV2"), ("GPU0", "NIC0", "NODE"), ("GPU4", "GPU0", "NV2")]),
}


# NIC columns whose row the stored copy lost (it ends inside that row)
NIC_COLUMNS_ONLY = {"a100pcie-8gpu-in-slurm-job-empty-cpu-affinity-dask-cuda1381.txt": ["NIC0"]}

# GPU NUMA ID per GPU where the recording prints a number (Grace systems: the GPU's memory is its own NUMA node);
# every other fixture prints N/A (or has no such column): None for each GPU.
GPU_NUMA_IDS = {
    "gb200-4gpu-8nic-gpu-numa-id-2-10-18-26-spaces.txt": [2, 10, 18, 26],
    "gb200-4gpu-nonic-realigned-by-author-narrow-columns.txt": [2, 10, 18, 26],
    "gb200-4gpu-nonic-realigned-by-author-right-aligned-gpu-numa-id.txt": [2, 10, 18, 26],
    "gh200-1gpu-4nic-bluefield3-gpu-numa-id-1-aerial.txt": [1],
}


def _ids(text):
    return parse_int_ranges(text) if text is not None else None


def test_every_topo_fixture_has_expectations():
    assert sorted(EXPECTED) == nvsmi_fixtures.names("nvidia-smi/topo")


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_topo_fixture_parsed_values(name):
    attributes, gpus, nic_rows, links = EXPECTED[name]
    result = parse_topo_matrix(nvsmi_fixtures.load("nvidia-smi", "topo", name))
    assert result["attributes"] == attributes
    assert [g["name"] for g in result["gpus"]] == ["GPU%d" % i for i in range(len(gpus))]
    assert [g["index"] for g in result["gpus"]] == list(range(len(gpus)))
    gpu_numa_ids = GPU_NUMA_IDS.get(name, [None] * len(gpus))
    assert len(gpu_numa_ids) == len(gpus)
    for gpu, (cpu, numa), gpu_numa_id in zip(result["gpus"], gpus, gpu_numa_ids):
        assert gpu["cpu_affinity"] == _ids(cpu), gpu["name"]
        assert gpu["numa_affinity"] == _ids(numa), gpu["name"]
        assert gpu["gpu_numa_id"] == gpu_numa_id, gpu["name"]
        assert gpu["name"] not in gpu["links"]
        assert len(gpu["links"]) == len(result["columns"]) - 1
        assert set(gpu["links"].values()) <= {"SYS", "NODE", "PHB", "PXB", "PIX"} | {"NV%d" % n for n in range(1, 19)}
    assert [(n["name"], n["device"]) for n in result["nics"]] == nic_rows
    by_name = {g["name"]: g for g in result["gpus"]}
    for gpu_name, column, link in links:
        assert by_name[gpu_name]["links"][column] == link, (gpu_name, column)
    assert result["columns"] == [g["name"] for g in result["gpus"]] + [n for n, _d in nic_rows] + NIC_COLUMNS_ONLY.get(
        name, [])


# --- the same outputs after the things that happen to them on the way to us -------------------------

def _indent(prefix):
    return lambda t: "\n".join(prefix + line for line in t.split("\n"))


def _underline_header(text):
    """What nvidia-smi prints on a terminal: the header line wrapped in ESC[4m ... ESC[0m."""
    lines = text.split("\n")
    for i, line in enumerate(lines):
        if line.split()[:1] == ["GPU0"] and " X" not in line:
            lines[i] = line.replace("GPU0", "\x1b[4mGPU0", 1) + "\x1b[0m"
            break
    return "\n".join(lines)


VARIANTS = {
    "tabs-expanded-8": lambda t: t.expandtabs(8),
    "tab-as-4-spaces": lambda t: t.replace("\t", "    "),
    "tab-as-2-spaces": lambda t: t.replace("\t", "  "),
    "indented-4": _indent("    "),
    "indented-tab": _indent("\t"),
    "crlf": lambda t: t.replace("\n", "\r\n"),
    "trailing-blanks": lambda t: "\n".join(line + "   " for line in t.split("\n")),
    "expanded-and-indented": lambda t: _indent("  ")(t.expandtabs(8)),
    "prompt-and-banner-before": lambda t: "user@node:~$ nvidia-smi topo -m\nNVIDIA Topology:\n\n" + t,
    "tty-underlined-header": _underline_header,
}


def _essentials(result):
    return [(g["name"], g["cpu_affinity"], g["numa_affinity"], g["gpu_numa_id"], g["links"]) for g in result["gpus"]]


@pytest.mark.parametrize("variant", sorted(VARIANTS))
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_topo_whitespace_variants_parse_the_same(name, variant):
    text = nvsmi_fixtures.load("nvidia-smi", "topo", name)
    assert _essentials(parse_topo_matrix(VARIANTS[variant](text))) == _essentials(parse_topo_matrix(text))


# --- specific shapes ------------------------------------------------------------------------------------

def test_glitched_cell_is_split_back_into_link_and_cpu_list():
    text = nvsmi_fixtures.load("nvidia-smi", "topo", "a100sxm40-8gpu-8nic-cloudvm-ph-glitch.txt")
    assert "PH0-115" in text
    gpu0 = parse_topo_matrix(text)["gpus"][0]
    assert gpu0["links"]["NIC7"] == "PHB"
    assert gpu0["cpu_affinity"] == list(range(116))
    assert gpu0["numa_affinity"] == [0, 1, 2, 3]


def test_lost_tab_after_a_whole_link_word():
    text = ("\tGPU0\tGPU1\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\n"
            "GPU0\t X \tSYS\tSYS0-23,48-71\t0\t\tN/A\n"
            "GPU1\tSYS\t X \tPIX\t24-47,72-95\t1\t\tN/A\n")
    gpus = parse_topo_matrix(text)["gpus"]
    assert gpus[0]["links"] == {"GPU1": "SYS", "NIC0": "SYS"}
    assert gpus[0]["cpu_affinity"] == list(range(24)) + list(range(48, 72))
    assert gpus[0]["numa_affinity"] == [0]
    assert gpus[1]["cpu_affinity"] == list(range(24, 48)) + list(range(72, 96))


def test_trailing_output_after_the_matrix_is_ignored():
    text = nvsmi_fixtures.load("nvidia-smi", "topo", "dgxa100-8gpu-12nic-mlx5-headers-oldfmt.txt")
    assert "topo -c" in text
    assert len(parse_topo_matrix(text)["gpus"]) == 8


def test_slurm_job_with_one_cpu_empty_and_single_cpu_affinity_cells():
    """della-k17g3 in a job holding CPU 1 only: an empty CPU Affinity cell is None (parse_topo_matrix's "or None"),
    never the NUMA value moved left; a one-CPU list "1" next to NUMA node "1" stays in its own column."""
    text = nvsmi_fixtures.load("nvidia-smi", "topo",
                               "h100-8gpu-6nic-slurm-1cpu-empty-and-single-cpu-affinity-della-k17g3.txt")
    assert "\tNODE\t\t0\t\tN/A\n" in text and "\tNODE\t1\t1\t\tN/A\n" in text
    for variant in [text] + [fn(text) for fn in VARIANTS.values()]:
        gpus = parse_topo_matrix(variant)["gpus"]
        assert [(g["cpu_affinity"], g["numa_affinity"], g["gpu_numa_id"]) for g in gpus] == (
            [(None, [0], None)] * 4 + [([1], [1], None)] * 4)


def test_two_link_cells_run_together_are_named():
    text = ("\tGPU0\tGPU1\tNIC0\tNIC1\tCPU Affinity\tNUMA Affinity\n"
            "GPU0\t X \tNV4\tSYSSYS\t0-23\t0\n"
            "GPU1\tNV4\t X \tPIX\tSYS\t24-47\t1\n")
    with pytest.raises(ValueError, match=r"row GPU0 has 3 link cells, expected 4 .*; its cell 'SYSSYS' under NIC0 is "
                                         r"two link words run together"):
        parse_topo_matrix(text)


def test_numeric_gpu_numa_id_on_a_coherent_system():
    # Grace Hopper style row: GPU memory is its own NUMA node, hand-built in the tab layout nvidia-smi uses,
    # "<cpu>\t<numa>\t\t<gpu numa id>" (the GB200/GH200 recordings of the set are tab-expanded or realigned).
    text = "\tGPU0\tNIC0\tCPU Affinity\tNUMA Affinity\tGPU NUMA ID\nGPU0\t X \tSYS\t0-71\t0\t\t4\nNIC0\tSYS\t X \n"
    gpu = parse_topo_matrix(text)["gpus"][0]
    assert (gpu["cpu_affinity"], gpu["numa_affinity"], gpu["gpu_numa_id"]) == (list(range(72)), [0], 4)


def test_many_gpus_and_long_old_style_nic_names():
    # 16 GPUs (two-digit names) and an old-format NIC column longer than a tab stop.
    names = ["GPU%d" % i for i in range(16)] + ["roceP2p1s0f0"]
    lines = ["\t" + "\t".join(names + CPU_NUMA)]
    for i in range(16):
        cells = [" X " if j == i else "NV6" for j in range(16)] + ["SYS"]
        cpus = "0-47,96-143" if i < 8 else "48-95,144-191"
        lines.append("\t".join(["GPU%d" % i] + cells + [cpus, "0" if i < 8 else "1"]))
    lines.append("\t".join(["roceP2p1s0f0"] + ["SYS"] * 16 + [" X "]))
    text = "\n".join(lines) + "\n"
    for variant in (text, text.expandtabs(8), text.replace("\t", "    ")):
        result = parse_topo_matrix(variant)
        assert len(result["gpus"]) == 16
        assert result["gpus"][15]["cpu_affinity"] == list(range(48, 96)) + list(range(144, 192))
        assert result["gpus"][15]["numa_affinity"] == [1]
        assert result["nics"] == [{"name": "roceP2p1s0f0", "device": "roceP2p1s0f0",
                                   "links": {n: "SYS" for n in names[:16]}}]


def test_cpu_list_split_at_commas_by_a_paste_is_rejoined():
    text = "        GPU0    CPU Affinity    NUMA Affinity\nGPU0     X      0-23, 48-71     0\n"
    assert parse_topo_matrix(text)["gpus"][0]["cpu_affinity"] == list(range(24)) + list(range(48, 72))


# copies that cannot be read: refused with what is wrong, never read with a column missing
REFUSED = {
    "a100sxm4-8gpu-10nic-nps4-header-cells-run-together-nccltests311.txt":
        "the header cell 'NIC7NIC8' is two device names run together",
    # a tab lost between the NIC8 and NIC9 cells of most rows (header intact): GPU2 is the first row it hits
    "b200-8gpu-16nic-tab-lost-glued-cells-pxbnode-syssys-nccltests333.txt":
        r"row GPU2 has 23 link cells, expected 24 .*; its cell 'PXBNODE' under NIC8 is two link words run together",
    "v100sxm2-2gpu-4nic-header-tabs-deleted-s114.txt":
        "no matrix header .* the line starting 'GPU0GPU1NIC0NIC1NIC2NIC3' has its device names run together",
}


def test_every_refused_topo_fixture_is_refused_saying_why():
    assert sorted(REFUSED) == nvsmi_fixtures.names("nvidia-smi/topo-refused")
    for name, message in REFUSED.items():
        with pytest.raises(ValueError, match=message):
            parse_topo_matrix(nvsmi_fixtures.load("nvidia-smi", "topo-refused", name))


def test_no_header_is_an_error():
    with pytest.raises(ValueError, match="no matrix header"):
        parse_topo_matrix("Failed to initialize NVML: Driver/library version mismatch\n")


def test_no_devices_gives_an_empty_matrix():
    assert parse_topo_matrix("No devices were found\n")["gpus"] == []


def test_junk_affinity_names_the_row_and_the_value():
    text = "\tGPU0\tGPU1\tCPU Affinity\tNUMA Affinity\nGPU0\t X \tNV4\t0-23\t0\nGPU1\tNV4\t X \tzero-23\t0\n"
    with pytest.raises(ValueError, match=r"GPU1.*zero-23"):
        parse_topo_matrix(text)


def test_gpu_row_missing_link_cells_is_an_error():
    text = "\tGPU0\tGPU1\tGPU2\tCPU Affinity\nGPU0\t X \tNV4\t0-23\n"
    with pytest.raises(ValueError, match=r"GPU0 has 2 link cells, expected 3"):
        parse_topo_matrix(text)


def test_gpu_rows_missing_after_the_last_one_read_are_an_error():
    """A paste cut after a whole row (kubernetes/kubernetes#53497 stops after GPU4 of 8): the header names the GPUs
    that no row follows; a row cut part-way is the link-cell error above. NIC rows may be left out."""
    text = nvsmi_fixtures.load("nvidia-smi", "topo", "a100-8gpu-4nic-2s-ht-confluence.txt")
    lines = text.splitlines(True)
    gpu5 = next(i for i, line in enumerate(lines) if line.split()[:1] == ["GPU5"])
    with pytest.raises(ValueError, match=r"the header names GPU5, GPU6, GPU7, which no row follows \(an output cut "
                                         r"after GPU4\?\)"):
        parse_topo_matrix("".join(lines[:gpu5]))
    no_nic_rows = [line for line in lines if not re.match(r"^\s*NIC\d", line)]
    assert len(parse_topo_matrix("".join(no_nic_rows))["gpus"]) == 8


def test_descending_cpu_range_is_rejected():
    text = "\tGPU0\tCPU Affinity\tNUMA Affinity\nGPU0\t X \t23-0\t0\n"
    with pytest.raises(ValueError, match="CPU Affinity"):
        parse_topo_matrix(text)


def test_every_fixture_row_count_matches_its_text():
    """Cross-check with a crude count: GPU rows are the lines starting with GPU<n> and an X cell."""
    for name in EXPECTED:
        text = nvsmi_fixtures.load("nvidia-smi", "topo", name)
        crude = sum(1 for line in text.split("\n") if re.match(r"^\s*GPU\d+\s", line) and " X" in line
                    and "Affinity" not in line)
        assert len(parse_topo_matrix(text)["gpus"]) == crude, name
