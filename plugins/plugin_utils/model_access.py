# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""What the rest of the collection reads from a built cluster model (pure functions of the model)."""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import options


def target_version(model):
    """The Slurm release ("MAJOR.MINOR") the files are for: the model's slurm_version, else the default."""
    return model.get("slurm_version") or options.DEFAULT_SLURM_VERSION


def gpu_key(gtype):
    """slurm.conf GRES key of a GPU type: ``gpu:a100``, or ``gpu`` for untyped GPUs."""
    return "gpu:" + gtype if gtype else "gpu"


def node_gres_elements(node):
    """Ordered [(gres_key, count, slurm.conf element)] of one model node: ``("gpu:a100", 8, "gpu:a100:8")``.

    GPU types appear in order of their lowest GPU index, so Slurm's GPU numbering (slurm.conf type order, then
    gres.conf order) follows nvidia-smi's index order on mixed nodes; MIG instances count per profile type;
    count-only GPUs (AutoDetect finds them) follow; then shard, mps and the other GRES as the inventory lists them.
    """
    counts = {}
    for gpu in node["gpus"]:
        if gpu["mig"]:
            for profile in gpu["mig"]:
                key = gpu_key(mig_gres_type(gpu["type"], profile))
                counts[key] = counts.get(key, 0) + 1
        else:
            key = gpu_key(gpu["type"])
            counts[key] = counts.get(key, 0) + 1
    for group in node.get("gpu_counts") or ():
        key = gpu_key(group["type"])
        counts[key] = counts.get(key, 0) + group["count"]
    out = [(key, count, "%s:%d" % (key, count)) for key, count in counts.items()]
    shards = (node.get("shards") or 0) + sum(g["shards"] or 0 for g in node["gpus"])
    if shards:
        out.append(("shard", shards, "shard:%d" % shards))
    mps = (node.get("mps") or 0) + sum(g.get("mps") or 0 for g in node["gpus"])
    if mps:
        out.append(("mps", mps, "mps:%d" % mps))
    for rec in node.get("generic_gres") or ():
        key = rec["name"] + (":" + rec["type"] if rec["type"] else "")
        element = key + (":no_consume" if rec["no_consume"] else "") + ":" + rec["count_text"]
        out.append((key, rec["count"], element))
    return out


def node_gres(node):
    """Ordered {gres_key: count} for one model node: ``{"gpu:a100": 8, "gpu:3g.40gb": 2, "shard": 32}``
    (see node_gres_elements for the order)."""
    counts = {}
    for key, count, _unused in node_gres_elements(node):
        counts[key] = counts.get(key, 0) + count
    return counts


def node_autodetect(model, node):
    """The AutoDetect mode in force on a node: its own hpc_gres_node_autodetect, else the cluster's."""
    return node.get("autodetect") or model["autodetect"]


def gres_types(model, elements=None):
    """GresTypes: gpu, the shared GRES in use, the other GRES in use, then hpc_gres_types, each once.

    ``elements``: {node name: node_gres_elements(node)} when the caller has them already."""
    names = []
    for node in model["nodes"]:
        for key, _unused1, _unused2 in (elements[node["name"]] if elements else node_gres_elements(node)):
            name = key.split(":", 1)[0]
            if name not in names:
                names.append(name)
    first = [n for n in ("gpu",) if n in names]
    shared = [n for n in ("shard", "mps") if n in names]
    ordered = first + shared + [n for n in names if n not in first + shared]
    ordered.extend(n for n in model.get("gres_types") or () if n not in ordered)
    return ordered


def uses_slurmdbd(model):
    """True when slurm.conf sends accounting to slurmdbd (GRES TRES are only allowed then)."""
    return names_slurmdbd(model["settings"]["slurm_conf"])


def names_slurmdbd(options):
    """True when slurm.conf options ({name: value}, any case of name) set AccountingStorageType to slurmdbd."""
    for key, value in options.items():
        if str(key).lower() == "accountingstoragetype":
            return str(value).strip().lower() == "accounting_storage/slurmdbd"
    return False
