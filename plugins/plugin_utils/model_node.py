# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Validation of one node's variables (host_vars/group_vars) into its model entry: CPU layout, GPUs, MIG, cores."""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import MAX_VALUES, format_int_ranges, parse_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import short_name
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.profiles import validate_layout
from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia import gpu_types
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import options, values, versions
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import model_gres
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_problems import describe, did_you_mean
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import (
    AUTODETECT_CHOICES,
    GPU_KEYS,
    MAX_FEATURES,
    MAX_GPUS,
    MAX_MIG_INSTANCES,
    MIG_PROFILE_RE,
    SOCKET_REDEFINING,
)


def count_of(value):
    try:
        return len(value)
    except TypeError:
        return 1


def node_name(col, host, hv):
    name = hv.get("hpc_gres_node_name")
    if name is None and values.is_ip_address(str(host).strip("[]")):  # [fd00::1] as an inventory writes one
        # "up to the first dot" of 10.0.2.1 is "10": slurmd would never find its NodeName line
        col.add(host, "hpc_gres_node_name", "the node's Slurm name, set for a host the inventory names by address",
                "not set (the inventory name %s is an IP address)" % host,
                "set hpc_gres_node_name to the name slurmd runs as (hostname -s on the node)")
        return str(host)
    if name is None:
        name = short_name(str(host))
        problem = values.check_node_name(name)
        if problem:
            col.add(host, "hpc_gres_node_name", problem[0], "%s derived from the inventory name" % problem[1],
                    "set hpc_gres_node_name" + ("; " + problem[2] if problem[2] else ""))
        return name
    if not col.check(host, "hpc_gres_node_name", values.check_node_name(name)):
        return short_name(str(host))
    return str(name)


def _width(version, key):
    """The Slurm integer width (uint16, ...) of a NodeName= line key in that release."""
    return options.lookup("node", key, version)[1]


_SIZE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*([KMGT])(?:i?B)?\s*$", re.I)


def _memory_in_mib(value):
    """MiB for a size written with a unit ("500G", "1.5TiB", "512000M"), None for anything else."""
    m = _SIZE.match(value) if isinstance(value, str) else None
    if not m:
        return None
    return int(float(m.group(1)) * {"K": 1.0 / 1024, "M": 1, "G": 1024, "T": 1024 * 1024}[m.group(2).upper()])


def _node_int(col, host, var, value, key, minimum, version):
    width = _width(version, key)
    return col.int_value(host, var, value, minimum, values.COUNT_MAX[width], note="%s=, %s in Slurm" % (key, width))


def build_node(col, host, hv, version, boundary=None):
    before = col.count
    name = node_name(col, host, hv)
    gpus_raw = hv.get("hpc_gres_gpus")
    if gpus_raw is None:
        gpus_raw = []
    if not isinstance(gpus_raw, (list, tuple)):
        col.add(host, "hpc_gres_gpus", "a list of GPU entries ({index, type, ...})", describe(gpus_raw))
        gpus_raw = []
    elif len(gpus_raw) > MAX_GPUS:
        col.add(host, "hpc_gres_gpus", "at most %d GPU entries (one per /dev/nvidiaN minor)" % MAX_GPUS,
                "%d entries" % len(gpus_raw))
        gpus_raw = []
    generic_raw = hv.get("hpc_gres_node_gres")
    generic_list = generic_raw if isinstance(generic_raw, list) else ()
    needs_layout = any(isinstance(g, dict) and g.get("cores") is not None for g in list(gpus_raw) + list(generic_list))

    layout = {}
    for key, var, slurm_key in (("sockets", "hpc_gres_node_sockets", "Sockets"),
                                ("cores_per_socket", "hpc_gres_node_cores_per_socket", "CoresPerSocket"),
                                ("threads_per_core", "hpc_gres_node_threads_per_core", "ThreadsPerCore")):
        value = hv.get(var)
        if value is None:
            # Cores= is checked against sockets x cores_per_socket (threads_per_core defaults to 1 in Slurm). Without
            # them Cores= are written as given: slurmd judges them against the hardware it runs on (as it does the
            # same line today on an imported cluster), and so does the node verification, with the node's facts.
            bare = hv.get("hpc_gres_node_sockets") is None and hv.get("hpc_gres_node_cores_per_socket") is None
            if needs_layout and bare and key == "sockets":
                col.warn(host, "hpc_gres_node_sockets", "the node's CPU layout (sockets, cores_per_socket) on a node "
                         "whose GRES have cores", "not set", "Cores= are not checked here, only by the node "
                         "verification against the node's hardware; see `slurmd -C` on the node")
            elif needs_layout and not bare and key != "threads_per_core":  # half a layout: a slip, not a site's CPUs=
                col.add(host, var, "the node's CPU layout (sockets, cores_per_socket) on a node whose GRES have "
                        "cores", "not set", "Cores= is checked against it; see `slurmd -C` on the node")
            layout[key] = None
        else:
            layout[key] = _node_int(col, host, var, value, slurm_key, 1, version)
    if None not in layout.values():
        # Slurm derives CPUs= from the three and keeps it in a uint16 (read_config.c, slurm_conf_node_t.cpus).
        cpus_max = values.COUNT_MAX[_width(version, "CPUs")]
        cpus = layout["sockets"] * layout["cores_per_socket"] * layout["threads_per_core"]
        if cpus > cpus_max:
            col.add(host, "hpc_gres_node_threads_per_core", "sockets x cores_per_socket x threads_per_core at most "
                    "%d (CPUs=, %s in Slurm)" % (cpus_max, _width(version, "CPUs")),
                    "%d x %d x %d = %d" % (layout["sockets"], layout["cores_per_socket"], layout["threads_per_core"],
                                           cpus))
            layout = {k: None for k in layout}
    real_memory = hv.get("hpc_gres_node_real_memory")
    if real_memory is not None:
        in_mib = _memory_in_mib(real_memory)
        if in_mib is not None:
            col.add(host, "hpc_gres_node_real_memory", "an integer number of MiB (RealMemory=)", describe(real_memory),
                    "RealMemory is in MiB: %s is %d" % (str(real_memory).strip(), in_mib))
            real_memory = None
        else:
            real_memory = _node_int(col, host, "hpc_gres_node_real_memory", real_memory, "RealMemory", 1, version)
    weight = hv.get("hpc_gres_node_weight")
    if weight is not None:
        weight = _node_int(col, host, "hpc_gres_node_weight", weight, "Weight", 0, version)
    features = _features(col, host, hv.get("hpc_gres_node_features"))
    autodetect = hv.get("hpc_gres_node_autodetect")
    if autodetect is not None:
        autodetect = autodetect_mode(col, host, autodetect, version, "hpc_gres_node_autodetect")

    core_count = None
    if layout["sockets"] and layout["cores_per_socket"]:
        core_count = layout["sockets"] * layout["cores_per_socket"]
    cache_key = (id(gpus_raw), layout["sockets"], layout["cores_per_socket"], layout["threads_per_core"])
    cached = col.gpu_cache.get(cache_key)
    if cached is not None and cached[0] is gpus_raw:
        gpus = [dict(g, mig=list(g["mig"]) if g["mig"] else g["mig"]) for g in cached[1]]
        gpu_counts = [dict(g) for g in cached[2]]
        for warning in cached[3]:  # the same list warns on every host that has it
            col.warn(host, warning.field, warning.expected, warning.found, warning.hint)
    else:
        mark = col.count
        warned = len(col.warnings)
        whole = [(i, e) for i, e in enumerate(gpus_raw) if not (isinstance(e, dict) and "count" in e)]
        counted = [(i, e) for i, e in enumerate(gpus_raw) if isinstance(e, dict) and "count" in e]
        gpus = [_build_gpu(col, host, i, entry, layout, core_count) for i, entry in whole]
        _check_unique(col, host, gpus, [e for _unused1, e in whole], [i for i, _unused2 in whole])
        gpu_counts = [_build_gpu_count(col, host, i, entry, layout, core_count) for i, entry in counted]
        _unknown_types(col, host, sorted([(i, g["index"], g["type"]) for (i, _unused), g in zip(whole, gpus)]
                                         + [(i, None, g["type"]) for (i, _unused), g in zip(counted, gpu_counts)],
                                         key=lambda t: t[0]))
        order = sorted(range(len(gpus)), key=lambda k: gpus[k]["index"] if gpus[k]["index"] is not None else -1)
        model_gres.check_env_flags(col, host, lambda pos: "hpc_gres_gpus[%d]" % pos,
                                   [(whole[k][0], gpus[k]) for k in order if not gpus[k]["mig"]]
                                   + [(counted[k][0], g) for k, g in enumerate(gpu_counts)])
        # a GPU whose type key is misspelt (tpye) is already refused for it: not also as the one untyped GPU
        slips = {id(gpus[k]) for k, (_unused, e) in enumerate(whole) if isinstance(e, dict) and "type" not in e
                 and any(did_you_mean(key, GPU_KEYS) == "did you mean type?" for key in e if key not in GPU_KEYS)}
        gpus = [gpus[k] for k in order]
        _check_gpu_kinds(col, host, [g for g in gpus if id(g) not in slips], gpu_counts,
                         [i for i, _unused in counted])
        if col.count == mark and (gpus or gpu_counts):
            col.gpu_cache[cache_key] = (gpus_raw, [dict(g) for g in gpus], [dict(g) for g in gpu_counts],
                                        list(col.warnings[warned:]))
    shards = model_gres.shared_count(col, host, "hpc_gres_node_shards", hv.get("hpc_gres_node_shards"))
    mps = model_gres.shared_count(col, host, "hpc_gres_node_mps", hv.get("hpc_gres_node_mps"))
    for var, count, key in (("hpc_gres_node_shards", shards, "shards"), ("hpc_gres_node_mps", mps, "mps")):
        if count is None:
            continue
        if not gpus and not gpu_counts:
            col.add(host, var, "GPUs on the node to spread %s over" % key, "no hpc_gres_gpus",
                    "slurmd stops: SHARED specified without any SHARING found")
        elif any(g[key] for g in gpus):
            col.add(host, var, "a node-wide %s count or %s per GPU, not both" % (key, key),
                    "both", "slurmd stops on %s lines with and without File" % ("shard" if key == "shards" else key))
    gpu_shards = sum(g["shards"] or 0 for g in gpus) + (shards or 0)
    if gpu_shards > values.GRES_COUNT_MAX:
        col.add(host, "hpc_gres_gpus", "at most %d shards on one node (Slurm reads GRES counts as a signed 64-bit "
                "number)" % values.GRES_COUNT_MAX, "%d in all" % gpu_shards)
    generic = model_gres.generic_gres(col, host, generic_raw,
                                      lambda field, value: _cores(col, host, field, value, layout, core_count))
    node_options = model_gres.node_options(col, host, hv.get("hpc_gres_node_options"))
    if "SocketsPerBoard" in node_options and layout["sockets"] is not None:
        # read_config.c: "Sockets=# and SocketsPerBoard=# is invalid , using SocketsPerBoard"
        col.add(host, "hpc_gres_node_options.SocketsPerBoard", "no SocketsPerBoard beside hpc_gres_node_sockets",
                "SocketsPerBoard=%s with hpc_gres_node_sockets %s" % (
                    node_options["SocketsPerBoard"], layout["sockets"]),
                "Slurm then ignores Sockets and uses SocketsPerBoard, so the cores are checked against another "
                "layout than slurmd's: give the node's total sockets (Boards x SocketsPerBoard) as "
                "hpc_gres_node_sockets only")
    if col.count == before and boundary:
        _check_socket_boundaries(col, host, name, gpus, gpus_raw, layout, boundary)
    if col.count != before:
        return None
    return {
        "host": str(host), "name": name,
        "sockets": layout["sockets"], "cores_per_socket": layout["cores_per_socket"],
        "threads_per_core": layout["threads_per_core"], "real_memory": real_memory,
        "features": [str(f) for f in features], "weight": weight,
        "autodetect": autodetect, "shards": shards, "mps": mps, "generic_gres": generic, "options": node_options,
        "gpus": gpus, "gpu_counts": gpu_counts,
    }


def _check_gpu_kinds(col, host, gpus, gpu_counts, counted_pos):
    """One node: GPUs typed or untyped, not both (slurmctld refuses a mix in Gres=); count-only entries only
    without whole-GPU entries (slurmd: File on all records or none) and once per type."""
    whole = [g for g in gpus if not g["mig"]]
    typed = [g["type"] is not None for g in whole] + [g["type"] is not None for g in gpu_counts]
    if any(g["mig"] for g in gpus):
        typed.append(True)
    if any(typed) and not all(typed):
        col.add(host, "hpc_gres_gpus", "every GPU of a node typed, or none (MIG instances are typed)",
                "typed and untyped GPUs", "slurmctld: Some gpu GRES in slurm.conf have a type while others do not")
    if gpu_counts and gpus:
        col.add(host, "hpc_gres_gpus[%d].count" % counted_pos[0], "count-only entries only on a node without "
                "indexed GPU entries", "both", "slurmd stops: some records have \"File\" specification while "
                "others do not")
    seen = {}
    for pos, group in zip(counted_pos, gpu_counts):
        key = (group["type"] or "").lower()
        if key in seen:
            col.add(host, "hpc_gres_gpus[%d].type" % pos, "one count-only entry per GPU type",
                    "%s again (first hpc_gres_gpus[%d])" % (group["type"] or "untyped", seen[key]))
        seen.setdefault(key, pos)


def _build_gpu_count(col, host, i, entry, layout, core_count):
    """{type, count, cores, flags}: GPUs declared by count, found by AutoDetect (gres.conf Count= without File)."""
    field = "hpc_gres_gpus[%d]" % i
    group = {"type": None, "count": None, "cores": None, "flags": None}
    allowed = ("type", "count", "cores", "flags")
    for key in sorted(set(entry) - set(allowed), key=str):
        col.add(host, "%s.%s" % (field, key), "with count: only %s (AutoDetect finds the devices)" % ", ".join(allowed),
                "%s together with count" % key)
    group["count"] = col.int_value(host, field + ".count", entry.get("count"), 1, values.GPU_MINOR_MAX + 1,
                                   note="GPUs AutoDetect finds")
    group["type"] = _gpu_type(col, host, field, entry.get("type"))
    if entry.get("cores") is not None:
        group["cores"] = _cores(col, host, field + ".cores", entry["cores"], layout, core_count)
    if entry.get("flags") is not None:
        group["flags"] = model_gres.flags_value(col, host, field + ".flags", entry["flags"])
    return group


def _gpu_type(col, host, field, gtype):
    """The GPU's GRES type, or None for an untyped GPU (no type given)."""
    if gtype is None:
        return None
    if col.check(host, field + ".type", values.check_gres_type(gtype)):
        hint = values.gres_type_reads_as_count(gtype)
        if hint:
            col.warn(host, field + ".type", "a GPU type that does not read as a count", repr(gtype), hint)
        return str(gtype)
    return None


def _unknown_types(col, host, typed):
    """Warn once per type the collection does not know, naming its GPUs. A site may name its types as it likes; a
    slip (h1OO) would still render and schedule as a type of its own, so say so, without refusing.
    ``typed``: (position in hpc_gres_gpus, GPU index or None for a count-only entry, type) in list order."""
    unknown = {}
    for pos, index, gtype in typed:
        if gtype is not None and not gpu_types.known_type(gtype):
            unknown.setdefault(gtype, []).append((pos, index))
    for gtype, entries in unknown.items():
        indices = [index for _unused, index in entries if index is not None]
        found = repr(gtype)
        if indices:
            found += " on GPU%s %s" % ("s" if len(indices) > 1 else "", format_int_ranges(indices))
        near = gpu_types.nearest_types(gtype)
        hint = "ignore this for a name of your own"
        col.warn(host, "hpc_gres_gpus[%d].type" % entries[0][0], "a type that names a GPU model the collection knows "
                 "(module_utils/nvidia/gpu_types.py)", found,
                 "nearest known: %s; %s" % (", ".join(near), hint) if near else hint)


def _features(col, host, features):
    """A list of feature names (each a Slurm name; feature expressions are built from them), or one comma-separated
    string of them as slurm.conf writes Features= (an INI inventory's ``hpc_gres_node_features=ib,nvme``)."""
    if features is None:
        return []
    if isinstance(features, str):
        features = [f.strip() for f in features.split(",") if f.strip()]
    if not isinstance(features, (list, tuple)):
        col.add(host, "hpc_gres_node_features", "a list of feature names (or a comma-separated string)",
                describe(features))
        return []
    if len(features) > MAX_FEATURES:
        col.add(host, "hpc_gres_node_features", "at most %d features (this collection's bound)" % MAX_FEATURES,
                "%d features" % len(features))
        return []
    good = [f for pos, f in enumerate(features)
            if col.check(host, "hpc_gres_node_features[%d]" % pos, values.check_feature_name(f))]
    return good if len(good) == len(features) else []


def _build_gpu(col, host, i, entry, layout, core_count):
    field = "hpc_gres_gpus[%d]" % i
    gpu = {"index": None, "type": None, "minor": None, "file": None, "cores": None, "model": None, "mig": None,
           "shards": None, "mps": None, "links": None, "flags": None}
    if not isinstance(entry, dict):
        col.add(host, field, "a mapping like {index: 0, type: a100}", describe(entry))
        return gpu
    for key in sorted(set(entry) - set(GPU_KEYS), key=str):
        col.add(host, "%s.%s" % (field, key), "a GPU key (%s)" % ", ".join(GPU_KEYS), "unknown key %r" % key,
                did_you_mean(key, GPU_KEYS))
    if "index" not in entry:
        col.add(host, field + ".index", "the nvidia-smi index of the GPU (integer 0-%d)" % values.GPU_MINOR_MAX,
                "no index", "or count: N for GPUs AutoDetect finds")
    else:
        gpu["index"] = col.int_value(host, field + ".index", entry["index"], 0, values.GPU_MINOR_MAX,
                                     note="the nvidia-smi index of the GPU")
    gpu["type"] = _gpu_type(col, host, field, entry.get("type"))
    if entry.get("file") is not None:
        gpu["file"] = model_gres.gpu_device_file(col, host, field + ".file", entry["file"])
        if entry.get("minor") is not None:
            col.add(host, field + ".minor", "minor or file, not both", "both",
                    "file names the GPU's device file when it is not /dev/nvidiaN (minor)")
    elif entry.get("minor") is not None:
        gpu["minor"] = col.int_value(host, field + ".minor", entry["minor"], 0, values.GPU_MINOR_MAX,
                                     note="the minor N of /dev/nvidiaN")
    elif gpu["index"] is not None:
        gpu["minor"] = gpu["index"]
    if entry.get("cores") is not None:
        gpu["cores"] = _cores(col, host, field + ".cores", entry["cores"], layout, core_count)
    if entry.get("model") is not None:
        model = entry["model"]
        if isinstance(model, str) and model.strip() and values.check_option_value(model, quoted_ok=True) is None:
            gpu["model"] = str(model)
        else:
            col.add(host, field + ".model", "a GPU model name such as A100-80GB (printable ASCII without '\"', '#' "
                    "or '\\')", model_gres.describe_chars(model, r'[ !$-\[\]-~]'))
    if entry.get("shards") is not None:
        gpu["shards"] = col.int_value(host, field + ".shards", entry["shards"], 1, values.GRES_COUNT_MAX,
                                      note="shards on this GPU")
    if entry.get("mps") is not None:
        gpu["mps"] = col.int_value(host, field + ".mps", entry["mps"], 1, values.GRES_COUNT_MAX,
                                   note="mps on this GPU")
    if entry.get("links") is not None:
        gpu["links"] = model_gres.links_text(col, host, field + ".links", entry["links"])
    if entry.get("flags") is not None:
        gpu["flags"] = model_gres.flags_value(col, host, field + ".flags", entry["flags"])
    if "mig" in entry and entry["mig"] is not None:
        mig = entry["mig"]
        if not isinstance(mig, (list, tuple)) or not mig:
            col.add(host, field + ".mig", "a non-empty list of MIG profile names such as [3g.40gb, 3g.40gb]",
                    describe(mig), "write a list: mig: [%s]" % ", ".join(p.strip() for p in mig.split(",") if p.strip())
                    if isinstance(mig, str) and mig.strip() else "leave mig unset to use the whole GPU")
        elif len(mig) > MAX_MIG_INSTANCES:
            col.add(host, field + ".mig", "at most %d MIG instances on one GPU" % MAX_MIG_INSTANCES,
                    "%d profiles" % len(mig))
        else:
            bad = [p for p in mig if not isinstance(p, str) or not MIG_PROFILE_RE.match(p)]
            if bad:
                col.add(host, field + ".mig", "MIG profile names like 1g.10gb or 1c.3g.40gb",
                        ", ".join(describe(p) for p in bad[:4]))
            elif entry.get("model") is not None and gpu["model"] is None:
                pass  # the model's own problem is reported; a layout needs a valid model
            else:
                mig_problems = validate_layout(host, gpu["index"], gpu["model"], list(mig),
                                               field=field + ".mig", model_field=field + ".model")
                if mig_problems:
                    col.extend(mig_problems)
                else:
                    gpu["mig"] = [str(p) for p in mig]
        for key in ("shards", "mps", "links", "flags", "file"):
            if gpu[key] is not None:
                col.add(host, "%s.%s" % (field, key), "%s only on a GPU without MIG instances" % key,
                        "%s %s together with mig" % (key, gpu[key] if key != "flags" else ",".join(gpu[key])))
    return gpu


def check_mig_with_shards(col, nodes, extra_types=()):
    """MIG instances and shards (or MPS) cannot share a cluster: GresTypes is cluster-wide, and with ``shard`` or
    ``mps`` in it the real slurmd 22.05 splits every MultipleFiles record into one Count=1 GPU per file
    (``slurmd -G`` lists /dev/nvidia0 and both nvidia-cap files as three GPUs for one MIG instance; seen with this
    collection's own integration test). The node would then report three GPUs per instance."""
    sharded = [(n["host"], g["index"]) for n in nodes for g in n["gpus"] if g["shards"] or g["mps"]]
    sharded += [(n["host"], "(node-wide count)") for n in nodes if n["shards"] or n["mps"]]
    sharded += [("(hpc_gres_types)", name) for name in extra_types if name in ("shard", "mps")]
    if not sharded:
        return
    why = ("slurmd splits a MIG MultipleFiles record into one GPU per file when shard or mps is in GresTypes (seen "
           "with Slurm 22.05; refused on every release); use MIG or shards in one cluster, not both")
    migs = [(node["host"], pos, gpu) for node in nodes for pos, gpu in enumerate(node["gpus"]) if gpu["mig"]]
    for host, pos, gpu in migs:
        col.add(host, "hpc_gres_gpus[%d].mig" % pos,
                "MIG instances only in a cluster without shards (GresTypes would include shard)",
                "shards on host %s GPU %s" % sharded[0], why)
    if not migs:
        return
    # and where the shards were written, which may be the line just added
    for node in nodes:
        for pos, gpu in enumerate(node["gpus"]):
            for key in ("shards", "mps"):
                if gpu[key]:
                    col.add(node["host"], "hpc_gres_gpus[%d].%s" % (pos, key),
                            "%s only in a cluster without MIG instances" % key,
                            "MIG instances on host %s GPU %s" % (migs[0][0], migs[0][2]["index"]), why)


def _cores(col, host, field, value, layout, core_count):
    key = (value, core_count) if isinstance(value, str) else None
    if key is not None and key in col.cores_cache:
        return col.cores_cache[key]
    try:
        # Bounded before anything is expanded: no core index above Slurm's uint16 CPU count.
        if not isinstance(value, (str, int)) or isinstance(value, bool):
            raise ValueError("not a range string")
        cores = parse_int_ranges(value, maximum=MAX_VALUES - 1)
    except ValueError as exc:
        expected = "Slurm logical core indices such as \"0-31\" or \"0-15,32-47\" (ASCII digits)"
        if core_count is not None:
            expected = "Slurm logical core indices within 0-%d, such as \"0-15,32-47\"" % (core_count - 1)
        col.add(host, field, expected, describe(value), str(exc).split(" in ", 1)[0])
        return None
    if not cores:
        col.add(host, field, "at least one core index", describe(value))
        return None
    if core_count is not None:
        outside = [c for c in cores if c >= core_count]
        if outside:
            hint = None
            threads = layout.get("threads_per_core") or 1
            if threads > 1 and max(cores) < core_count * threads:
                hint = ("these look like OS CPU ids with hyperthreads; Cores= takes Slurm logical core indices "
                        "(one per physical core)")
            col.add(host, field, "Slurm logical core indices within 0-%d (hpc_gres_node_sockets %d x "
                    "hpc_gres_node_cores_per_socket %d)" % (core_count - 1, layout["sockets"], layout["cores_per_socket"]),
                    "%s (%s outside)" % (values.describe(value).rsplit(" (", 1)[0], format_int_ranges(outside)), hint)
            return None
    text = format_int_ranges(cores)
    if key is not None:
        col.cores_cache[key] = text
    return text


def _check_unique(col, host, gpus, entries, positions):
    dup_index = set()
    for key in ("index", "minor", "file"):
        seen = {}
        for k, gpu in enumerate(gpus):
            i = positions[k]
            value = gpu[key]
            if value is None:
                continue
            explicit = isinstance(entries[k], dict) and entries[k].get(key) is not None
            if value in seen and key == "minor" and not explicit and i in dup_index:
                continue  # minor defaulted from an index already reported as duplicate
            if value in seen:
                if key == "index":
                    dup_index.add(i)
                hint = None
                if key == "minor":
                    hint = "minor defaults to index; set minor where /dev/nvidiaN differs from the index"
                col.add(host, "hpc_gres_gpus[%d].%s" % (i, key), "unique GPU %s" % key,
                        "%s (also used by hpc_gres_gpus[%d])" % (value, seen[value]), hint)
            else:
                seen[value] = i


def check_type_spelling(col, nodes):
    """Each GPU entry that spells a type otherwise than most entries do (the first seen wins a tie) is refused:
    the odd one is the line to fix."""
    uses = {}
    for node in nodes:
        for i, gpu in enumerate(node["gpus"]):
            if gpu["type"] is not None:
                uses.setdefault(gpu["type"].lower(), []).append((gpu["type"], node["host"], i))
    for entries in uses.values():
        counts = {}
        for spelling, host, _i in entries:
            counts.setdefault(spelling, [0, host])[0] += 1
        if len(counts) == 1:
            continue
        usual = max(counts, key=lambda spelling: counts[spelling][0])  # max keeps the first of equal counts
        for spelling, host, i in entries:
            if spelling != usual:
                col.add(host, "hpc_gres_gpus[%d].type" % i,
                        "one spelling per GRES type (Slurm compares types case-insensitively)",
                        "%r (host %s and %d more entries spell it %r)" % (
                            spelling, counts[usual][1], counts[usual][0] - 1, usual))


def autodetect_mode(col, host, value, release, var="hpc_gres_autodetect"):
    """off, nvml, nvidia or full, and one the release's slurmd knows (versions.autodetect_modes)."""
    if value is False:  # YAML 1.1 reads an unquoted `off` as false
        return "off"
    if not (isinstance(value, str) and value.lower() in AUTODETECT_CHOICES):
        col.add(host, var, "one of %s" % ", ".join(AUTODETECT_CHOICES), describe(value))
        return "off"
    mode = value.lower()
    if release is not None and mode not in versions.autodetect_modes(release):
        since = versions.autodetect_since(mode)
        col.add(host, var,
                "one of %s (the AutoDetect modes of Slurm %s, hpc_gres_slurm_version; %s needs Slurm %s or later)"
                % (", ".join(m for m in versions.autodetect_modes(release) if m in AUTODETECT_CHOICES), release,
                   mode, since), describe(value),
                "slurmd %s logs 'error: unknown autodetect flag '%s'' and detects nothing" % (release, mode))
        return "off"
    return mode


def check_autodetect_with_mig(col, host, mode, nodes):
    """AutoDetect=full loads gpu_nvml.so where slurmd has it (MIG instances detected) and gpu_nvidia.so otherwise
    (MIG not detected): which MIG lines gres.conf needs would depend on each node's Slurm build."""
    for node in nodes:  # a node's own hpc_gres_node_autodetect overrides the cluster's for that node
        if node.get("autodetect") == "full":
            mig = next((g["index"] for g in node["gpus"] if g["mig"]), None)
            if mig is not None:
                col.add(node["host"], "hpc_gres_node_autodetect", "nvml or nvidia on a node with MIG GPUs (or off)",
                        "'full' (GPU %s has mig)" % mig,
                        "AutoDetect=full picks gpu_nvml.so where slurmd has it (which detects MIG) and gpu_nvidia.so "
                        "otherwise (which does not), so the gres.conf MIG lines cannot be known; name the plugin")
    if mode != "full":
        return
    mig = next(((n["host"], g["index"]) for n in nodes if not n.get("autodetect")
                for g in n["gpus"] if g["mig"]), None)
    if mig:
        col.add(host, "hpc_gres_autodetect", "nvml or nvidia on a cluster with MIG GPUs (or off)",
                "'full' (host %s GPU %s has mig)" % mig,
                "AutoDetect=full picks gpu_nvml.so where slurmd has it (which detects MIG) and gpu_nvidia.so "
                "otherwise (which does not), so the gres.conf MIG lines cannot be known; name the plugin")


def socket_boundary_setting(col, host, options, release):
    """The release the socket-boundary rule is judged for, or None when it cannot be judged."""
    if release is None:
        return None
    if isinstance(options, dict):
        for key, value in options.items():
            if str(key).lower() == "slurmdparameters" and any(t in str(value).lower() for t in SOCKET_REDEFINING):
                col.warn(host, "hpc_gres_slurm_conf_options.%s" % key, "GPU Cores= checked against socket boundaries",
                         "%s: Slurm's sockets are then NUMA nodes or L3 caches, which the inventory does not "
                         "describe; not checked" % value)
                return None
    return release


def _check_socket_boundaries(col, host, name, gpus, entries, layout, release):
    """GPU Cores must line up with sockets the way slurmctld of the release (and later ones) demand."""
    sockets, per_socket = layout["sockets"], layout["cores_per_socket"]
    if not (sockets and per_socket):
        return
    position = {}
    for i, entry in enumerate(entries):
        if isinstance(entry, dict):
            position.setdefault(entry.get("index"), i)
    for gpu in gpus:
        if not gpu["cores"]:
            continue
        key = (gpu["cores"], sockets, per_socket, release)
        found = col.boundary_cache.get(key)
        if found is None:
            found = versions.socket_boundary_findings(parse_int_ranges(gpu["cores"]), sockets, per_socket, release)
            col.boundary_cache[key] = found
        for severity, since, expected, sock in found:
            cores = parse_int_ranges(gpu["cores"])
            if severity == "error":
                expected = "%s (Slurm %s, hpc_gres_slurm_version, drains the node otherwise)" % (expected, release)
                record = col.add
            else:
                expected = "%s (Slurm %s and later drain the node; this cluster runs %s)" % (expected, since, release)
                record = col.warn
            if versions.rule("socket_boundary", since) == "one_socket_or_all":
                remedy = "the one socket it is local to, or all cores (0-%d)" % (sockets * per_socket - 1)
            else:
                remedy = "the whole socket(s) it is local to (%s)" % _covering_sockets(cores, per_socket)
            record(host, "hpc_gres_gpus[%d].cores" % position.get(gpu["index"], 0), expected,
                   "%s for GPU %d: %s" % (gpu["cores"], gpu["index"],
                                          versions.socket_boundary_message(cores, name, sock, per_socket)),
                   "Slurm schedules GPUs per socket: give the GPU %s, or set SlurmdParameters=l3cache_as_socket or "
                   "numa_node_as_socket with Sockets/CoresPerSocket to match" % remedy)


def _covering_sockets(cores, per_socket):
    touched = sorted(set(c // per_socket for c in cores))
    return format_int_ranges(c for s in touched for c in range(s * per_socket, (s + 1) * per_socket))


def check_count_only_autodetect(col, nodes, cluster_mode):
    """GPUs given by count have no File: slurmd keeps them only when AutoDetect fills them in."""
    for node in nodes:
        if node["gpu_counts"] and (node["autodetect"] or cluster_mode) == "off":
            col.add(node["host"], "hpc_gres_gpus", "count-only GPU entries only where AutoDetect is on "
                    "(hpc_gres_node_autodetect or hpc_gres_autodetect)", "AutoDetect off",
                    "slurmd drops GPUs without File= from the final list when nothing detects them")
