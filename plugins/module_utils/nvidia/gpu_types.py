"""GRES type names to patterns on the name nvidia-smi reports (``NVIDIA A100-SXM4-80GB``).

Patterns are Python regular expressions searched case-insensitively. Boundaries matter: ``a10`` must not
match an A100, ``l40`` not an L40S, ``h200`` not a GH200, ``h20`` not an H200.
"""
import re

DEFAULT_TYPE_PATTERNS = {
    # data centre, Hopper / Blackwell
    "gb200": r"\bGB200\b",
    "b200": r"\bB200\b",
    "b100": r"\bB100\b",
    "gh200": r"\bGH200\b",
    "h200": r"\bH200(?![0-9])",
    "h100": r"\bH100(?![0-9])",
    "h800": r"\bH800(?![0-9])",
    "h20": r"\bH20(?![0-9])",
    # Ampere / Ada data centre
    "a100": r"\bA100(?![0-9])",
    "a800": r"\bA800(?![0-9])",
    "a40": r"\bA40(?![0-9])",
    "a30": r"\bA30(?![0-9])",
    "a16": r"\bA16(?![0-9])",
    "a10": r"\bA10(?![0-9])",
    "a2": r"\bA2(?![0-9])",
    "l40s": r"\bL40S\b",
    "l40": r"\bL40(?![0-9s])",
    "l4": r"\bL4(?![0-9])",
    # older Tesla
    "v100": r"\bV100",
    "p100": r"\bP100\b",
    "p40": r"\bP40\b",
    "t4": r"\bT4\b",
    "k80": r"\bK80\b",
    # workstation / Quadro
    "rtx_pro_6000": r"\bRTX[ _-]?PRO[ _-]?6000\b",
    "rtx6000ada": r"\bRTX[ _-]?6000[ _-]?Ada\b",
    "rtx6000": r"\bRTX[ _-]?6000\b(?![ _-]?Ada)",
    "rtx8000": r"\bRTX[ _-]?8000\b",
    "a6000": r"\bRTX[ _-]?A6000\b",
    "a5000": r"\bRTX[ _-]?A5000\b",
    "a4500": r"\bRTX[ _-]?A4500\b",
    "a4000": r"\bRTX[ _-]?A4000\b",
    # GeForce
    "rtx5090": r"\bRTX[ _-]?5090\b",
    "rtx4090": r"\bRTX[ _-]?4090\b",
    "rtx3090": r"\bRTX[ _-]?3090(?![ _-]?Ti)",
    "rtx3090ti": r"\bRTX[ _-]?3090[ _-]?Ti\b",
    "rtx3080": r"\bRTX[ _-]?3080(?![ _-]?Ti)",
    "rtx2080ti": r"\bRTX[ _-]?2080[ _-]?Ti\b",
    "rtx2080": r"\bRTX[ _-]?2080(?![ _-]?Ti)",
    "rtx3080ti": r"\bRTX[ _-]?3080[ _-]?Ti\b",
    "rtx4080": r"\bRTX[ _-]?4080\b",
    "rtx5080": r"\bRTX[ _-]?5080\b",
    "gtx1080ti": r"\bGTX[ _-]?1080[ _-]?Ti\b",
    "gtx1080": r"\bGTX[ _-]?1080(?![ _-]?Ti)",
    "titanrtx": r"\bTITAN[ _-]?RTX\b",
    "titanv": r"\bTITAN[ _-]?V\b",
    "titanxp": r"\bTITAN[ _-]?Xp\b",
}


def merged_patterns(overrides=None):
    """Defaults with ``overrides`` on top; keys are lower-cased (Slurm compares types case-insensitively)."""
    patterns = dict(DEFAULT_TYPE_PATTERNS)
    for key, value in (overrides or {}).items():
        patterns[str(key).lower()] = value
    return patterns


def compile_patterns(patterns):
    """Compile every pattern; a bad one raises ValueError naming the type."""
    compiled = {}
    for key, value in patterns.items():
        try:
            compiled[key] = re.compile(value, re.IGNORECASE)
        except (re.error, TypeError) as exc:
            raise ValueError("type_patterns.%s: expected a regular expression, found %r (%s)" % (key, value, exc))
    return compiled


def slurm_name(gpu_name):
    """The name as Slurm's AutoDetect compares it: lower case, spaces as underscores."""
    return (gpu_name or "").strip().lower().replace(" ", "_")


def type_matches(gres_type, gpu_name, compiled):
    """True/False when the type can be judged, None when there is no pattern and no substring match.

    Types without a pattern fall back to Slurm's own AutoDetect rule: the type is a substring of the
    underscored, lower-cased device name (``nvidia_a100-sxm4-80gb``).
    """
    key = gres_type.lower()
    if key in compiled:
        return bool(compiled[key].search(gpu_name or ""))
    if key in slurm_name(gpu_name):
        return True
    return None


def classify(gpu_name, compiled):
    """Every type key whose pattern matches ``gpu_name`` (most specific first: longest key)."""
    hits = [key for key, rx in compiled.items() if rx.search(gpu_name or "")]
    return sorted(hits, key=lambda k: (-len(k), k))


# Letters typed for the digits they look like: h1OO is meant as h100.
_LOOKALIKE = str.maketrans({"o": "0"})


def known_type(gres_type, patterns=None):
    """Whether a GRES type names a GPU the tables know: it is a key of the tables (``a6000``), or a pattern finds
    its model in it, read as a device name (``h100_pcie``, ``rtx_a6000``, ``tesla_v100``: '_' and '-' as spaces)."""
    key = str(gres_type).lower()
    table = patterns or DEFAULT_TYPE_PATTERNS
    if key in table:
        return True
    as_name = re.sub(r"[_-]+", " ", key)
    return any(re.search(pattern, as_name, re.IGNORECASE) for pattern in table.values())


def nearest_types(gres_type, patterns=None, count=3):
    """The known type names closest to ``gres_type`` (a letter O read as the digit 0 too), closest first."""
    import difflib

    names = sorted(patterns or DEFAULT_TYPE_PATTERNS)
    key = str(gres_type).lower()
    scores = {}
    for candidate in (key, key.translate(_LOOKALIKE)):
        for name in names:
            ratio = difflib.SequenceMatcher(None, candidate, name).ratio()
            if ratio >= 0.5:
                scores[name] = max(scores.get(name, 0), ratio)
    return sorted(scores, key=lambda name: (-scores[name], name))[:count]
