"""Default GRES type patterns against real nvidia-smi names (names as in tests/fixtures and vendor docs)."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.gpu_types import (
    DEFAULT_TYPE_PATTERNS,
    classify,
    compile_patterns,
    merged_patterns,
    slurm_name,
    type_matches,
)

COMPILED = compile_patterns(DEFAULT_TYPE_PATTERNS)

# (nvidia-smi name, the one default type it must be classified as)
NAMES = [
    ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA A100-SXM4-40GB", "a100"),
    ("NVIDIA A100 80GB PCIe", "a100"),
    ("A100-SXM4-40GB", "a100"),  # older drivers: no NVIDIA prefix
    ("NVIDIA A800-SXM4-80GB", "a800"),
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA H100 PCIe", "h100"),
    ("NVIDIA H100 NVL", "h100"),
    ("NVIDIA H800", "h800"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA H200 NVL", "h200"),
    ("NVIDIA H20", "h20"),
    ("NVIDIA H20-3e", "h20"),
    ("NVIDIA GH200 480GB", "gh200"),
    ("NVIDIA GH200 120GB", "gh200"),
    ("NVIDIA L40S", "l40s"),
    ("NVIDIA L40", "l40"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA A40", "a40"),
    ("NVIDIA A30", "a30"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA A10G", "a10"),
    ("Tesla V100-SXM2-16GB", "v100"),
    ("Tesla V100-SXM2-32GB", "v100"),
    ("Tesla V100S-PCIE-32GB", "v100"),
    ("Tesla T4", "t4"),
    ("Tesla K80", "k80"),
    ("Tesla P100-PCIE-16GB", "p100"),
    ("Quadro RTX 6000", "rtx6000"),
    ("Quadro RTX 8000", "rtx8000"),
    ("NVIDIA RTX 6000 Ada Generation", "rtx6000ada"),
    ("NVIDIA RTX A6000", "a6000"),
    ("NVIDIA RTX A5000", "a5000"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx_pro_6000"),
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx_pro_6000"),
    ("NVIDIA GeForce RTX 4090", "rtx4090"),
    ("NVIDIA GeForce RTX 3090", "rtx3090"),
    ("NVIDIA GeForce RTX 3090 Ti", "rtx3090ti"),
    ("NVIDIA GeForce RTX 5090", "rtx5090"),
    ("NVIDIA GeForce RTX 2080 Ti", "rtx2080ti"),
    ("NVIDIA GeForce RTX 2080", "rtx2080"),
    ("NVIDIA GeForce RTX 3080 Ti", "rtx3080ti"),
    ("NVIDIA GeForce RTX 4080 SUPER", "rtx4080"),
    ("NVIDIA GeForce RTX 5080", "rtx5080"),
    ("NVIDIA GeForce GTX 1080", "gtx1080"),
    ("GeForce GTX 1080 Ti", "gtx1080ti"),
    ("NVIDIA TITAN V", "titanv"),
    ("NVIDIA TITAN Xp", "titanxp"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA GB200", "gb200"),
]


@pytest.mark.parametrize("name,gtype", NAMES)
def test_each_real_name_gets_exactly_its_type(name, gtype):
    assert classify(name, COMPILED) == [gtype]


@pytest.mark.parametrize("gtype,not_name", [
    ("a10", "NVIDIA A100-SXM4-80GB"), ("a100", "NVIDIA A10"), ("l40", "NVIDIA L40S"), ("l4", "NVIDIA L40"),
    ("h200", "NVIDIA GH200 480GB"), ("h20", "NVIDIA H200"), ("h100", "NVIDIA H800"), ("b200", "NVIDIA GB200"),
    ("rtx6000", "NVIDIA RTX 6000 Ada Generation"), ("rtx6000", "NVIDIA RTX PRO 6000 Blackwell Server Edition"),
    ("rtx3090", "NVIDIA GeForce RTX 3090 Ti"), ("a2", "NVIDIA RTX A2000"), ("t4", "NVIDIA T1000 8GB"),
    ("rtx2080", "NVIDIA GeForce RTX 2080 Ti"), ("gtx1080", "GeForce GTX 1080 Ti"), ("rtx3080", "NVIDIA GeForce RTX 3080 Ti"),
])
def test_near_misses_do_not_match(gtype, not_name):
    assert type_matches(gtype, not_name, COMPILED) is False


def test_types_are_case_insensitive_like_slurm():
    assert type_matches("A100", "NVIDIA A100-SXM4-80GB", COMPILED) is True


def test_unknown_type_falls_back_to_slurms_substring_rule():
    assert slurm_name("NVIDIA A100-SXM4-80GB") == "nvidia_a100-sxm4-80gb"
    assert type_matches("a100-sxm4", "NVIDIA A100-SXM4-80GB", COMPILED) is True
    assert type_matches("nvidia_h100_80gb_hbm3", "NVIDIA H100 80GB HBM3", COMPILED) is True
    assert type_matches("ampere", "NVIDIA A100-SXM4-80GB", COMPILED) is None


def test_overrides_merge_over_defaults_with_lowercased_keys():
    merged = merged_patterns({"Ampere": r"\bA100\b", "a100": r"A100-SXM4"})
    assert merged["ampere"] == r"\bA100\b" and merged["a100"] == r"A100-SXM4" and "h100" in merged
    compiled = compile_patterns(merged)
    assert type_matches("ampere", "NVIDIA A100 80GB PCIe", compiled) is True
    assert type_matches("a100", "NVIDIA A100 80GB PCIe", compiled) is False


def test_bad_regex_names_the_type():
    with pytest.raises(ValueError, match=r"type_patterns\.bad"):
        compile_patterns({"bad": "(("})
