"""MIG-capable GPU models, their GPU-instance profiles and placements, and the placement search.

A GPU instance (GI) occupies a contiguous run of *memory slices* that starts at one of a fixed set of
slots. ``nvidia-smi mig -lgipp`` prints exactly that, per profile id::

    GPU  0 Profile ID 19 Placements: {0,1,2,3,4,5,6}:1
    GPU  0 Profile ID 15 Placements: {0,2,4,6}:2
    GPU  0 Profile ID 14 Placements: {0,2,4}:2
    GPU  0 Profile ID  9 Placements: {0,4}:4
    GPU  0 Profile ID  5 Placement : {0}:4
    GPU  0 Profile ID  0 Placement : {0}:8

and NVML's contract is that creating a GI "fails if there is overlap with the already occupied memory
slices" (nvmlDeviceGetGpuInstancePossiblePlacements_v2). So a layout is feasible exactly when every
instance can be given one of its allowed start slots without two instances sharing a memory slice;
``find_placement`` searches for such an assignment. A sum of slices is not enough: on an A100-80GB
``[4g.40gb, 4g.40gb]`` is 8 of 8 slices but 4g may only start at slot 0.

Sources (see docs/mig.md for the full list):

- Profile names and per-profile instance counts: NVIDIA MIG User Guide v580, "Supported MIG Profiles"
  (https://docs.nvidia.com/datacenter/tesla/mig-user-guide/supported-mig-profiles.html) and NVIDIA
  mig-parted ``deployments/systemd/config-default.yaml`` (commit 1400787), which also covers H100 NVL,
  H100 96GB / GH200, GH200 144G HBM3e.
- Placements: the ``-lgipp`` output quoted in the MIG User Guide "Getting Started" (A100) and in
  NVIDIA's H100 NVL MIG blog (same table); A30 ``-lgipp`` from a real A30 session (driver 535.183.01,
  also used for tests/fixtures/nvidia-smi/mig/a30-*); the GH200 96GB ``-lgip`` fixture confirms that
  profile set. Note: the placement tables in NVIDIA/go-nvml's mock GPUs are NOT real (3g size 3,
  1g.20gb size 1) and were not used.
- nvidia-smi product names for ``normalize_model``: the "Compatible GPUs" table of NVIDIA's
  open-gpu-kernel-modules README (driver 610.43.03), plus real ``nvidia-smi -L``/query fixtures.

Pure Python: no Ansible imports.
"""

import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem

# ---------------------------------------------------------------------------------------------------------
# The table
# ---------------------------------------------------------------------------------------------------------


def _profile(name, profile_id, compute_slices, memory_slices, max_instances, starts, engines=None):
    return {
        "name": name,
        "id": profile_id,
        "compute_slices": compute_slices,
        "memory_slices": memory_slices,
        "max_instances": max_instances,
        "placements": tuple(starts),
        "engines": engines,
    }


# the media engines -lgip lists per profile (DEC, ENC, JPEG, OFA), as the MIG User Guide names them
ENGINES = ("NVDEC", "NVENC", "NVJPG", "OFA")


def _eight_slice_profiles(one, one_double, two, three, four, seven, ids=True):
    """The GA100/GH100/GB100 layout: 7 compute slices on 8 memory slices (A100, H100, H200, GH200, B200).

    ``one`` is the base 1g profile (e.g. ``1g.10gb``); ``one + "+me"`` is its media-extension twin;
    ``one_double`` the 1g profile with two memory slices (``1g.20gb``). Profile ids are the ones
    ``-lgip``/``-lgipp`` print on A100/H100/H200/GH200 (19, 20, 15, 14, 9, 5, 0); ``ids=False`` leaves
    them unknown (the module resolves names through ``-lgip`` on the node anyway).
    """

    def pid(value):
        return value if ids else None

    return (
        _profile(one, pid(19), 1, 1, 7, range(0, 7)),
        _profile(one + "+me", pid(20), 1, 1, 1, range(0, 7)),
        _profile(one_double, pid(15), 1, 2, 4, (0, 2, 4, 6)),
        _profile(two, pid(14), 2, 2, 3, (0, 2, 4)),
        _profile(three, pid(9), 3, 4, 2, (0, 4)),
        _profile(four, pid(5), 4, 4, 1, (0,)),
        _profile(seven, pid(0), 7, 8, 1, (0,)),
    )


def _model(profiles, names, compute_slices=7, memory_slices=8, note=None, engines=None):
    """``engines``: the GPU's media engines (``ENGINES`` order) where the table knows each profile's; a layout must
    then fit them (``+me.all`` takes them all, ``-me`` none)."""
    return {
        "compute_slices": compute_slices,
        "memory_slices": memory_slices,
        "nvidia_smi_names": tuple(names),
        "profiles": tuple(profiles),
        "note": note,
        "engines": engines,
    }


# RTX PRO 6000 Blackwell (GB202): 4 compute slices on the 12-unit grid -lgipp prints. ``+gfx`` adds graphics APIs,
# ``+me`` the OFA, ``+me.all`` every media engine, ``-me`` none. Ids, counts, placements and engines (DEC, ENC, JPEG,
# OFA) from a real -lgip/-lgipp, driver 610.43.02, in -lgip's order.
_RTX_PRO_6000_PROFILES = (
    _profile("1g.24gb", 14, 1, 3, 4, (0, 3, 6, 9), (1, 1, 1, 0)),
    _profile("1g.24gb+me", 21, 1, 3, 1, (0, 3, 6, 9), (1, 1, 1, 1)),
    _profile("1g.24gb+gfx", 47, 1, 3, 4, (0, 3, 6, 9), (1, 1, 1, 0)),
    _profile("1g.24gb+me.all", 65, 1, 3, 1, (0, 3, 6, 9), (4, 4, 4, 1)),
    _profile("1g.24gb-me", 67, 1, 3, 4, (0, 3, 6, 9), (0, 0, 0, 0)),
    _profile("2g.48gb", 5, 2, 6, 2, (0, 6), (2, 2, 2, 0)),
    _profile("2g.48gb+gfx", 35, 2, 6, 2, (0, 6), (2, 2, 2, 0)),
    _profile("2g.48gb+me.all", 64, 2, 6, 1, (0, 6), (4, 4, 4, 1)),
    _profile("2g.48gb-me", 66, 2, 6, 2, (0, 6), (0, 0, 0, 0)),
    _profile("4g.96gb", 0, 4, 12, 1, (0,), (4, 4, 4, 1)),
    _profile("4g.96gb+gfx", 32, 4, 12, 1, (0,), (4, 4, 4, 1)),
)


# Canonical model name -> geometry. To add a model: copy its ``nvidia-smi mig -lgip`` names and counts and
# its ``nvidia-smi mig -lgipp`` placements into a new entry (see docs/mig.md "Adding a model").
MIG_MODELS = {
    "A100-40GB": _model(
        _eight_slice_profiles("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
        ("A100-SXM4-40GB", "A100-PCIE-40GB"),
    ),
    "A100-80GB": _model(
        _eight_slice_profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        ("A100-SXM4-80GB", "A100 80GB PCIe"),
    ),
    "A800-40GB": _model(
        _eight_slice_profiles("1g.5gb", "1g.10gb", "2g.10gb", "3g.20gb", "4g.20gb", "7g.40gb"),
        ("A800-SXM4-40GB", "A800 40GB Active"),
        note="same MIG geometry as A100-40GB (mig-parted groups them)",
    ),
    "A800-80GB": _model(
        _eight_slice_profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        ("A800-SXM4-80GB", "A800 80GB PCIe", "A800 80GB PCIe LC"),
        note="same MIG geometry as A100-80GB (mig-parted groups them)",
    ),
    "A30-24GB": _model(
        (
            _profile("1g.6gb", 14, 1, 1, 4, (0, 1, 2, 3)),
            _profile("1g.6gb+me", 21, 1, 1, 1, (0, 1, 2, 3)),
            _profile("2g.12gb", 5, 2, 2, 2, (0, 2)),
            _profile("2g.12gb+me", 6, 2, 2, 1, (0, 2)),
            _profile("4g.24gb", 0, 4, 4, 1, (0,)),
        ),
        ("A30",),
        compute_slices=4,
        memory_slices=4,
    ),
    "H100-80GB": _model(
        _eight_slice_profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        ("H100 80GB HBM3", "H100 PCIe"),
    ),
    "H800-80GB": _model(
        _eight_slice_profiles("1g.10gb", "1g.20gb", "2g.20gb", "3g.40gb", "4g.40gb", "7g.80gb"),
        ("H800", "H800 PCIe"),
        note="same MIG geometry as H100-80GB (mig-parted groups them)",
    ),
    "H100-94GB": _model(
        _eight_slice_profiles("1g.12gb", "1g.24gb", "2g.24gb", "3g.47gb", "4g.47gb", "7g.94gb"),
        ("H100 NVL", "H800 NVL"),
        note="H100 NVL and the 94GB H100 SXM5/PCIe",
    ),
    "GH200-96GB": _model(
        _eight_slice_profiles("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
        ("GH200 480GB", "GH200 120GB"),
        note="the H100 96GB on GH200 (profile list checked against a real GH200 96GB -lgip)",
    ),
    "H100-96GB": _model(
        _eight_slice_profiles("1g.12gb", "1g.24gb", "2g.24gb", "3g.48gb", "4g.48gb", "7g.96gb"),
        ("H20",),
        note="same MIG geometry as GH200-96GB; mig-parted also puts H20 in this group",
    ),
    "H200-141GB": _model(
        _eight_slice_profiles("1g.18gb", "1g.35gb", "2g.35gb", "3g.71gb", "4g.71gb", "7g.141gb"),
        ("H200", "H200 NVL"),
    ),
    "GH200-144GB": _model(
        _eight_slice_profiles("1g.18gb", "1g.36gb", "2g.36gb", "3g.72gb", "4g.72gb", "7g.144gb"),
        ("GH200 144G HBM3e",),
        note="H200-class memory on GH200; names from mig-parted config-default.yaml",
    ),
    "B200-180GB": _model(
        _eight_slice_profiles("1g.23gb", "1g.45gb", "2g.45gb", "3g.90gb", "4g.90gb", "7g.180gb", ids=False),
        ("B200",),
        note="profiles and counts from the MIG User Guide B200 table (memory fractions 1/8, 2/8, 4/8, full); "
        "profile ids not verified on hardware, so left unknown",
    ),
    "GB200-186GB": _model(
        _eight_slice_profiles("1g.23gb", "1g.47gb", "2g.47gb", "3g.93gb", "4g.93gb", "7g.186gb", ids=False),
        ("GB200",),
        note="names from mig-parted (ebab1f77, 'the setting from the production boards'); a real -lgip of a "
        "production GB200 agrees for 1g.23gb, 1g.23gb+me, 1g.47gb and 2g.47gb (ids 19, 20, 15, 14) and was cut "
        "before the rest; pre-production boards printed 1g.24gb, 3g.95gb and 7g.189gb",
    ),
    "RTX-PRO-6000-96GB": _model(
        _RTX_PRO_6000_PROFILES,
        ("RTX PRO 6000 Blackwell Server Edition", "RTX PRO 6000 Blackwell Workstation Edition",
         "RTX PRO 6000 Blackwell Max-Q Workstation Edition"),
        compute_slices=4,
        memory_slices=12,
        engines=(4, 4, 4, 1),
        note="-lgip/-lgipp of a Server Edition (driver 610.43.02); the MIG User Guide's RTX PRO 6000 table (the "
        "Workstation editions need display mode compute first) has the same profiles and counts",
    ),
}


# ---------------------------------------------------------------------------------------------------------
# Lookup and normalisation
# ---------------------------------------------------------------------------------------------------------

_SEP = re.compile(r"[\s_\-]+")


def _canon(text):
    text = str(text).strip().upper()
    if text.startswith("NVIDIA "):
        text = text[len("NVIDIA "):]
    return _SEP.sub("-", text).strip("-")


def known_models():
    """Canonical model names, sorted."""
    return sorted(MIG_MODELS)


def model_spec(model):
    """The table entry for a model given in any form ``normalize_model`` accepts; KeyError if unknown."""
    name = normalize_model(model)
    if name is None:
        raise KeyError("unknown MIG model %r (known: %s)" % (model, ", ".join(known_models())))
    return MIG_MODELS[name]


def profile_names(model):
    """The GPU-instance profile names of a model, in table order (smallest first)."""
    return [p["name"] for p in model_spec(model)["profiles"]]


def profile_spec(model, profile):
    """The profile dict for ``profile`` on ``model``; KeyError if the model does not have it."""
    wanted = normalize_profile(profile)
    for p in model_spec(model)["profiles"]:
        if p["name"] == wanted:
            return p
    raise KeyError("%r is not a MIG profile of %s" % (profile, normalize_model(model)))


# Product names with no size in them; the memory total (MiB, as nvidia-smi reports it) decides.
_AMBIGUOUS_BY_MEMORY = {
    "H100": ((85000, "H100-80GB"), (96500, "H100-94GB"), (100000, "H100-96GB")),
}


def normalize_model(name, memory_mib=None):
    """Canonical model name for a table key or an ``nvidia-smi`` product name, or None if unknown.

    Accepts ``A100-80GB``, ``a100_80gb``, ``NVIDIA A100-SXM4-80GB``, ``NVIDIA A100 80GB PCIe``,
    ``A100-SXM4-40GB`` (old drivers print no ``NVIDIA `` prefix), ``NVIDIA H100 NVL``, ``NVIDIA GH200 480GB``...
    ``memory_mib`` (``memory.total``) settles names that carry no size, such as ``NVIDIA H100``.
    """
    if name is None:
        return None
    canon = _canon(name)
    if not canon:
        return None
    for key in MIG_MODELS:
        if _canon(key) == canon:
            return key
    for key, spec in MIG_MODELS.items():
        for product in spec["nvidia_smi_names"]:
            if _canon(product) == canon:
                return key
    if canon in _AMBIGUOUS_BY_MEMORY and memory_mib is not None:
        try:
            mem = float(memory_mib)
        except (TypeError, ValueError):
            return None
        for limit, key in _AMBIGUOUS_BY_MEMORY[canon]:
            if mem <= limit:
                return key
    return None


_PROFILE_RE = re.compile(r"^(?:MIG\s+)?((?:\d+c\.)?\d+g\.\d+gb(?:[+\-][a-z.]+)?)$", re.IGNORECASE)


def normalize_profile(profile):
    """``"MIG 1g.10gb"`` / ``"1G.10GB"`` -> ``"1g.10gb"``; anything that is not text is returned unchanged."""
    if not isinstance(profile, str):
        return profile
    text = profile.strip()
    match = _PROFILE_RE.match(text)
    if match:
        return match.group(1).lower()
    return text


def is_media_profile(profile):
    """True for profiles that take the GPU's media engines (``+me``, ``+me.all``)."""
    return isinstance(profile, str) and "+me" in profile.lower()


def _profile_sort_key(spec):
    # largest first: memory slices, then compute slices (4g before 3g: both 4 slices, 4g has one slot)
    return (-spec["memory_slices"], -spec["compute_slices"], spec["name"])


def _natural_profile_key(name):
    parts = re.findall(r"\d+|\D+", name)
    return [(0, int(p)) if p.isdigit() else (1, p) for p in parts]


# ---------------------------------------------------------------------------------------------------------
# Placement search
# ---------------------------------------------------------------------------------------------------------


def find_placement(model, profiles):
    """Assign every instance an allowed start slot without overlapping memory slices.

    Returns ``[(profile, start), ...]`` largest instance first (creation order), or None when the layout
    cannot be placed. Identical profiles get increasing starts. Raises KeyError for an unknown model or a
    profile the model does not have (``validate_layout`` reports those as problems first).
    """
    spec = model_spec(model)
    items = sorted((profile_spec(model, p) for p in profiles), key=_profile_sort_key)
    if sum(p["compute_slices"] for p in items) > spec["compute_slices"]:
        return None
    if sum(p["memory_slices"] for p in items) > spec["memory_slices"]:
        return None
    total = spec["memory_slices"]
    chosen = []

    def place(i, occupied):
        if i == len(items):
            return True
        prof = items[i]
        floor = -1
        if i and items[i - 1]["name"] == prof["name"]:
            floor = chosen[-1][1]
        size = prof["memory_slices"]
        for start in prof["placements"]:
            if start <= floor or start + size > total:
                continue
            mask = ((1 << size) - 1) << start
            if occupied & mask:
                continue
            chosen.append((prof["name"], start))
            if place(i + 1, occupied | mask):
                return True
            chosen.pop()
        return False

    return list(chosen) if place(0, 0) else None


def creation_order(model, profiles):
    """The GPU instances to create, largest first, each with its explicit placement.

    Returns ``[{"profile", "profile_id", "start", "size", "compute_slices"}, ...]`` or None when the
    layout cannot be placed. Creating with explicit placements (``nvidia-smi mig -cgi 9:4,14:0``) makes the
    order irrelevant to the driver; largest first is kept so that a driver picking slots itself still fits.
    """
    placed = find_placement(model, profiles)
    if placed is None:
        return None
    out = []
    for name, start in placed:
        prof = profile_spec(model, name)
        out.append({
            "profile": name,
            "profile_id": prof["id"],
            "start": start,
            "size": prof["memory_slices"],
            "compute_slices": prof["compute_slices"],
        })
    return out


def profile_counts(profiles):
    """``{profile: count}`` for a GPU's layout, keys normalized and in natural order (``1g.10gb`` < ``2g.20gb``).

    Counting only; the GRES Type a profile becomes is ``gres_type.mig_gres_type``'s business.
    """
    counts = {}
    for p in profiles:
        name = normalize_profile(p)
        counts[name] = counts.get(name, 0) + 1
    return {k: counts[k] for k in sorted(counts, key=_natural_profile_key)}


# ---------------------------------------------------------------------------------------------------------
# Validation with user-facing problems
# ---------------------------------------------------------------------------------------------------------


def _fmt_engines(engines):
    return ", ".join("%d %s" % (n, name) for n, name in zip(engines, ENGINES))


def _engine_shortfall(model, profiles):
    """What a layout needs beyond the model's media engines (``"needs 5 of 4 NVDEC, ..."``), or None (fits, or the
    table has no engine counts for the model)."""
    total = MIG_MODELS[model].get("engines")
    if not total:
        return None
    need = [sum(profile_spec(model, p)["engines"][i] for p in profiles) for i in range(len(ENGINES))]
    over = ["%d of %d %s" % (n, have, name) for n, have, name in zip(need, total, ENGINES) if n > have]
    return "needs %s" % ", ".join(over) if over else None


def _fmt_list(profiles):
    return "[%s]" % ", ".join(str(p) for p in profiles)


def _fmt_counts(counts):
    return ", ".join("%d x %s" % (n, name) for name, n in counts.items())


def _fmt_placements(prof):
    return "%s {%s}:%d" % (prof["name"], ",".join(str(s) for s in prof["placements"]), prof["memory_slices"])


def _models_with_profile(profile):
    return [m for m in known_models() if any(p["name"] == profile for p in MIG_MODELS[m]["profiles"])]


def _article(name):
    """"an" before a model name read letter by letter with a vowel sound (an A100, an H100), else "a" (a GH200)."""
    return "an" if name[:1].upper() in "AEFHILMNORSX" else "a"


def validate_layout(host, gpu_index, model, profiles, field=None, model_field=None):
    """Every problem with one GPU's MIG layout, as ``Problem`` objects (empty list = valid).

    ``field`` defaults to ``hpc_gres_gpus[<gpu_index>].mig`` and ``model_field`` to
    ``hpc_gres_gpus[<gpu_index>].model``. Checks, in order: known model, a non-empty list of profile names,
    each profile known for that model, at most one ``+me`` instance, per-profile instance limits, and finally
    that the instances can actually be placed on the memory slices (``find_placement``).
    """
    field = field or "hpc_gres_gpus[%s].mig" % gpu_index
    model_field = model_field or "hpc_gres_gpus[%s].model" % gpu_index
    problems = []
    canonical = normalize_model(model)
    if canonical is None:
        problems.append(Problem(
            host, model_field,
            "a MIG-capable model (%s)" % ", ".join(known_models()),
            repr(model) if model is not None else "no model",
            hint=("a GPU with `mig` needs `model`; names as nvidia-smi prints them also work" if model is None else
                  "no MIG profiles are known for this model: only the models listed have MIG (NVIDIA's MIG user "
                  "guide); leave `mig` out on a GPU without MIG (L40S, GeForce RTX, V100, ...); names as nvidia-smi "
                  "prints them also work"),
        ))
        return problems
    if not isinstance(profiles, (list, tuple)):
        problems.append(Problem(host, field, "a list of MIG profile names, one per instance",
                                "%s %r" % (type(profiles).__name__, profiles)))
        return problems
    if not profiles:
        problems.append(Problem(
            host, field, "at least one MIG instance", "an empty list",
            hint="leave `mig` out to keep MIG mode off on this GPU",
        ))
        return problems

    valid = profile_names(canonical)
    names = []
    for pos, raw in enumerate(profiles):
        name = normalize_profile(raw)
        if not isinstance(name, str) or name not in valid:
            elsewhere = _models_with_profile(name) if isinstance(name, str) else []
            hint = None
            if isinstance(name, str) and re.match(r"^\d+c\.\d+g\.", name):
                hint = ("%s is a compute-instance profile; list GPU-instance profiles, each gets one default "
                        "compute instance" % name)
            elif elsewhere:
                hint = "%s is a profile of %s, not of %s" % (name, ", ".join(elsewhere), canonical)
            problems.append(Problem(
                host, "%s[%d]" % (field, pos),
                "%s %s MIG profile (%s)" % (_article(canonical), canonical, ", ".join(valid)),
                repr(raw), hint=hint,
            ))
        else:
            names.append(name)
    if problems:
        return problems

    media = [n for n in names if is_media_profile(n)]
    if len(media) > 1:
        problems.append(Problem(
            host, field, "at most one +me instance per GPU (a GPU has one set of media engines)",
            "%d: %s" % (len(media), ", ".join(media)),
        ))

    counts = profile_counts(names)
    for name, n in counts.items():
        prof = profile_spec(canonical, name)
        if n > prof["max_instances"] and not (is_media_profile(name) and len(media) > 1):
            problems.append(Problem(
                host, field,
                "at most %d x %s per %s" % (prof["max_instances"], name, canonical),
                "%d x %s" % (n, name),
            ))
    if problems:
        return problems

    short = _engine_shortfall(canonical, names)
    if short:
        used = sorted(set(names), key=lambda n: _profile_sort_key(profile_spec(canonical, n)))
        problems.append(Problem(
            host, field,
            "a layout within the %s's media engines (%s)" % (
                canonical, _fmt_engines(MIG_MODELS[canonical]["engines"])),
            "%s (%s: %s)" % (_fmt_list(names), _fmt_counts(counts), short),
            hint=("a +me.all instance takes every media engine: give the other instances -me profiles (no media "
                  "engines); " if any("+me.all" in n for n in names) else "")
            + "engines per instance as `nvidia-smi mig -lgip` lists them: %s" % "; ".join(
                "%s %s" % (n, _fmt_engines(profile_spec(canonical, n)["engines"])) for n in used),
        ))
        return problems

    if find_placement(canonical, names) is None:
        spec = MIG_MODELS[canonical]
        used = sorted(set(names), key=lambda n: _profile_sort_key(profile_spec(canonical, n)))
        mem = sum(profile_spec(canonical, n)["memory_slices"] for n in names)
        comp = sum(profile_spec(canonical, n)["compute_slices"] for n in names)
        if mem > spec["memory_slices"] or comp > spec["compute_slices"]:
            why = "needs %d of %d memory slices and %d of %d compute slices" % (
                mem, spec["memory_slices"], comp, spec["compute_slices"])
        else:
            why = ("the sizes fit (%d of %d memory slices) but the allowed start slots do not line up"
                   % (mem, spec["memory_slices"]))
        problems.append(Problem(
            host, field,
            "a layout whose instances can all be placed on the %s's %d memory slices"
            % (canonical, spec["memory_slices"]),
            "%s (%s)" % (_fmt_list(names), _fmt_counts(counts)),
            hint="%s; placements as `nvidia-smi mig -lgipp` reports them ({start slots}:size in memory slices): %s" % (
                why, "; ".join(_fmt_placements(profile_spec(canonical, n)) for n in used)),
        ))
    return problems
