"""Cluster model -> the users' GPU guide (``USERS.md``) and a short login banner (``USERS.motd``).

Everything on the page comes from the model the configuration files are rendered from (whether jobs are confined to
their GPUs from the slurm.conf and cgroup.conf options the model renders), so a GPU type renamed in the inventory
changes the page in the same deploy.

What a node offers is read from ``node_gres`` (its slurm.conf ``Gres=``), so any GRES the model renders gets a
request line: typed and untyped GPUs, MIG instances, sharing GRES (``shard``, ``mps``) and any other name.
Every request the page prints is a line ``sbatch -p PART OPTIONS job.sh``; ``page_requests`` returns their
options, which the tests submit to a real slurmctld (``sbatch --test-only``).
"""
import functools
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError, Problem
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.inventory_vars import schema_hostvars
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.names import natural_key
from ansible_collections.hpc.slurm_gres.plugins.module_utils.mig.gres_type import mig_gres_type
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_access import node_gres, target_version
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import hostlist_expr

GUIDE = "USERS.md"
MOTD = "USERS.motd"
# Hosts of this inventory group get the guide and the job templates (role hpc.slurm_gres.hpc_gres_users_guide).
INSTALL_GROUP = "hpc_gres_users_guide"
DIR_VAR = "hpc_gres_users_guide_dir"
DEFAULT_DIR = "/usr/local/share/doc/slurm-gpus"
TEMPLATES_SOURCE = "roles/hpc_gres_users_guide/files/job-templates"
TEMPLATES = (
    ("gpu-single.sbatch", "one GPU", "--gres=gpu:1"),
    ("gpu-multi.sbatch", "several GPUs on one node, one task that uses them all", "--nodes=1 --gres=gpu:2"),
    ("gpu-array.sbatch", "an array of 100 one-GPU tasks, at most 4 running at once", "--array=0-99%4"),
    ("gpu-preemptible.sbatch", "a long job that checkpoints every CKPT_INTERVAL seconds, and on the warning "
     "Slurm sends 120 s before the time limit checkpoints and requeues itself",
     "--requeue --signal=B:USR1@120"),
)
# model GPU field holding the per-GPU count of a sharing GRES
SHARING_FIELDS = {"shard": "shards", "mps": "mps"}
REQUEST_RE = re.compile(r"^sbatch (.+) job\.sh$")


def install_dir(dirs_by_host):
    """The directory the guide is installed in, from ``{host of INSTALL_GROUP: {DIR_VAR: value}}``.

    None when the group has no hosts (the guide is not installed). The page names one directory, so every host
    must use the same one; GresError names the hosts that differ.
    """
    if not dirs_by_host:
        return None
    found = {}
    for host in sorted(dirs_by_host, key=natural_key):
        value = (dirs_by_host[host] or {}).get(DIR_VAR)
        if value is None:
            value = DEFAULT_DIR
        if not isinstance(value, str) or not value.startswith("/") or value.rstrip("/") == "":
            raise GresError([Problem(host, DIR_VAR, "an absolute directory path", repr(value))])
        found.setdefault(value.rstrip("/"), []).append(host)
    if len(found) > 1:
        first, second = sorted(found, key=lambda d: natural_key(found[d][0]))[:2]
        raise GresError([Problem(found[second][0], DIR_VAR,
                                 "the same directory on every host of group %s (the guide names it): %s, as on %s"
                                 % (INSTALL_GROUP, first, found[first][0]), second,
                                 "set %s once, in group_vars/%s.yml or group_vars/all.yml" % (DIR_VAR, INSTALL_GROUP))])
    return next(iter(found))


def page_requests(text):
    """The options of every request line the page prints (``sbatch OPTIONS job.sh`` in its code blocks)."""
    found = []
    in_code = False
    for line in text.splitlines():
        if line.startswith("```"):
            in_code = not in_code
            continue
        match = REQUEST_RE.match(line) if in_code else None
        if match:
            found.append(match.group(1))
    return found


def _mig_types(node):
    return {mig_gres_type(g["type"], p) for g in node["gpus"] for p in (g["mig"] or ())}


def _kind(key, node):
    name, _sep, gtype = key.partition(":")
    if name == "gpu":
        if not gtype:
            return "untyped"
        return "mig" if gtype in _mig_types(node) else "gpu"
    if name in SHARING_FIELDS:
        return "sharing"
    return "other"


def _per_gpu(node, name):
    """Per-GPU counts of a sharing GRES on a node ([] when the model does not split it per GPU)."""
    field = SHARING_FIELDS.get(name)
    return [g.get(field) for g in node["gpus"] if g.get(field)]


def _option(model, conf, name):
    """The value of an option the model renders into ``conf`` (slurm_conf, cgroup_conf); None when not set, and in
    include mode, where the site's own slurm.conf and cgroup.conf hold the options."""
    if model.get("config_mode") == "include":
        return None
    for key, value in model["settings"][conf].items():
        if key.lower() == name.lower():
            return str(value)
    return None


def _requeue_delay(model):
    """Seconds a requeued job waits before it may start again: the job credential's lifetime plus one
    (``AuthInfo=cred_expire=N``, 120 s by default; measured on 22.05: EligibleTime = requeue time + N + 1)."""
    for item in (_option(model, "slurm_conf", "AuthInfo") or "").split(","):
        key, _sep, value = item.partition("=")
        if key.strip().lower() == "cred_expire" and value.strip().isdigit():
            return int(value) + 1
    return 121


def _multiple_sharing_per_job(model):
    """SelectTypeParameters=MULTIPLE_SHARING_GRES_PJ (23.11+) lets one job take shards of several GPUs."""
    return "multiple_sharing_gres_pj" in (_option(model, "slurm_conf", "SelectTypeParameters") or "").lower()


def _devices_confined(model):
    """Jobs see only their GPUs: TaskPlugin task/cgroup with ConstrainDevices=yes (in include mode the site's files
    decide, which the model does not hold: not claimed)."""
    plugins = [p.strip().lower() for p in (_option(model, "slurm_conf", "TaskPlugin") or "").split(",")]
    constrain = (_option(model, "cgroup_conf", "ConstrainDevices") or "no").lower()
    return "task/cgroup" in plugins and constrain in ("yes", "true", "1")


def _with_gres(model):
    """The model with each node's ``Gres=`` ({key: count}, ``node_gres``) and GPU signature computed once."""
    if all("gres" in n for n in model["nodes"]):
        return model
    nodes = []
    for node in model["nodes"]:
        node = dict(node, gres=node_gres(node))
        node["signature"] = _gpu_signature(node)
        nodes.append(node)
    return dict(model, nodes=nodes)


@functools.lru_cache(maxsize=512)
def _hostlist(names, version):
    """Slurm hostlist of a tuple of node names, in a form the cluster's release reads (users paste it into srun -w);
    the same sets come back for every type and partition."""
    return hostlist_expr(names, version)


def _partition_nodes(model, part):
    if part["nodes"] == "ALL":
        return list(model["nodes"])
    wanted = set(part["nodes"])
    return [n for n in model["nodes"] if n["name"] in wanted]


def _gpu_signature(node):
    return (tuple(node["gres"].items()),
            tuple((g["type"], g["model"], tuple(g["mig"] or ()), g.get("shards"), g.get("mps"))
                  for g in node["gpus"]))


def _groups(nodes, version):
    """Nodes with the same GPUs, as [(hostlist, [nodes])], in natural order of their first node."""
    groups = {}
    for node in nodes:
        groups.setdefault(node["signature"], []).append(node)
    ordered = sorted(groups.values(), key=lambda members: natural_key(members[0]["name"]))
    return [(_hostlist(tuple(n["name"] for n in members), version), members) for members in ordered]


def _count(items):
    """[a, a, b] -> 'a x 2, b'-style text, in first-seen order."""
    counts = {}
    for item in items:
        counts[item] = counts.get(item, 0) + 1
    return ", ".join(("%d × %s" % (n, item)) if n > 1 else str(item) for item, n in counts.items())


def _whole_gpus_text(node):
    per_type = {}
    for gpu in node["gpus"]:
        if not gpu["mig"]:
            label = gpu["type"] or "gpu (untyped)"
            entry = per_type.setdefault(label, {"count": 0, "models": []})
            entry["count"] += 1
            if gpu["model"] and gpu["model"] not in entry["models"]:
                entry["models"].append(gpu["model"])
    for group in node.get("gpu_counts") or ():
        # GPUs the node's AutoDetect finds (gres.conf Count= without File=)
        label = group["type"] or "gpu (untyped)"
        entry = per_type.setdefault(label, {"count": 0, "models": []})
        entry["count"] += group["count"]
    parts = []
    for label, entry in per_type.items():
        text = "%d × %s" % (entry["count"], label)
        if entry["models"]:
            text += " (%s)" % ", ".join(entry["models"])
        parts.append(text)
    return ", ".join(parts) or "none"


def _mig_text(node):
    parts = []
    for gpu in node["gpus"]:
        if gpu["mig"]:
            parts.append("GPU %d (%s): %s" % (gpu["index"], gpu["type"] or "untyped",
                                              _count(mig_gres_type(gpu["type"], p) for p in gpu["mig"])))
    return "; ".join(parts) or "none"


def _sharing_text(node):
    parts = []
    for name, field in SHARING_FIELDS.items():
        by_count = {}
        for gpu in node["gpus"]:
            if gpu.get(field):
                by_count.setdefault(gpu[field], []).append(gpu["index"])
        if by_count:
            parts.append("%s: %s" % (name, ", ".join(
                "%d on GPU%s %s" % (n, "s" if len(idx) > 1 else "", format_int_ranges(idx))
                for n, idx in by_count.items())))
    for key, count in node["gres"].items():
        name = key.partition(":")[0]
        if name in SHARING_FIELDS and not _per_gpu(node, name):
            parts.append("%s: %d on the node" % (key, count))
    return "; ".join(parts) or "none"


def _amount(count):
    """A GRES count as Slurm prints it: ``4G`` for 4 x 1024^3, else the number."""
    for power, suffix in ((5, "P"), (4, "T"), (3, "G"), (2, "M"), (1, "K")):
        if count >= 1024 ** power and count % 1024 ** power == 0:
            return "%d%s" % (count // 1024 ** power, suffix)
    return str(count)


def _other_text(node):
    return ", ".join("%s × %s" % (_amount(n), k) for k, n in node["gres"].items() if _kind(k, node) == "other")


def _has_gpus(node):
    return any(k == "gpu" or k.startswith("gpu:") for k in node["gres"])


def _typed(model):
    """Whether any GPU of the cluster has a type (then requests name one: ``--gres=gpu:TYPE:N``)."""
    return any(k.startswith("gpu:") for n in model["nodes"] for k in n["gres"])


class _Offer(object):
    """One GRES key across a partition's nodes: which nodes have how many."""

    def __init__(self, key, kind, version=None):
        self.key = key
        self.kind = kind
        self.version = version
        self.counts = {}
        self.per_gpu_max = 0

    @property
    def name(self):
        return self.key.partition(":")[0]

    @property
    def gtype(self):
        return self.key.partition(":")[2]

    def nodes(self, count=None):
        return _hostlist(tuple(n for n, c in self.counts.items() if count is None or c == count), self.version)

    @property
    def most(self):
        return max(self.counts.values())


def _offers(nodes, version):
    offers = {}
    for node in nodes:
        for key, count in node["gres"].items():
            offer = offers.get(key)
            if offer is None:
                offer = offers[key] = _Offer(key, _kind(key, node), version)
            offer.counts[node["name"]] = count
            if offer.kind == "sharing":
                per_gpu = _per_gpu(node, offer.name)
                offer.per_gpu_max = max([offer.per_gpu_max] + (per_gpu or [count]))
    order = {"gpu": 0, "mig": 1, "untyped": 2, "sharing": 3, "other": 4}
    return sorted(offers.values(), key=lambda o: order[o.kind])


def _request(part, options, comment):
    return ["# " + comment, "sbatch -p %s %s job.sh" % (part, options)]


def _gpu_requests(part, offer, label, spec, one=True):
    """Lines for whole GPUs: one, all of one node, several whole nodes, a total spread over nodes.

    ``label`` names the GPUs (``a100 GPUs``); ``one`` False leaves out the one-GPU line (said already)."""
    lines = _request(part, "--gres=%s:1" % offer.key, "one %s (%s)" % (label[:-1], offer.nodes())) if one else []
    most = offer.most
    full = [n for n, c in offer.counts.items() if c == most]
    if most > 1:
        lines += _request(part, "--gres=%s:%d" % (offer.key, most),
                          "the %d %s of one node (%s)" % (most, label, offer.nodes(most)))
    if len(full) > 1:
        lines += _request(part, "-N %d --gpus-per-node=%s%d" % (len(full), spec, most),
                          "%d nodes with %d %s each" % (len(full), most, label))
    total = sum(offer.counts.values())
    if len(offer.counts) > 1 and total > most:
        lines += _request(part, "--gpus=%s%d" % (spec, total),
                          "%d %s in all, on as many nodes as Slurm needs (MPI, NCCL)" % (total, label))
    return lines


def _any_type_offer(gpu_kinds):
    """An untyped request (``--gres=gpu:N``) in a partition with several GPU kinds takes GPUs of every type
    (MIG instances included): the offer of all of them together, per node."""
    offer = _Offer("gpu", "untyped")
    for kind in gpu_kinds:
        for node, count in kind.counts.items():
            offer.counts[node] = offer.counts.get(node, 0) + count
    return offer


def _requests(part, offers, multiple_sharing):
    lines = []
    gpu_kinds = [o for o in offers if o.kind in ("gpu", "mig", "untyped")]
    if len(gpu_kinds) > 1:
        labels = [o.gtype or "untyped" for o in gpu_kinds]
        lines += _request(part, "--gres=gpu:1", "any one GPU, whatever its type: %s" % ", ".join(labels))
    for offer in offers:
        if offer.kind == "gpu":
            lines += _gpu_requests(part, offer, offer.gtype + " GPUs", offer.gtype + ":")
        elif offer.kind == "untyped" and len(gpu_kinds) > 1:
            lines += _gpu_requests(part, _any_type_offer(gpu_kinds), "GPUs of any type", "", one=False)
        elif offer.kind == "untyped":
            lines += _gpu_requests(part, offer, "untyped GPUs", "")
        elif offer.kind == "mig":
            what = "one %s MIG instance (%s; up to %d per node)" % (offer.gtype, offer.nodes(), offer.most)
            lines += _request(part, "--gres=%s:1" % offer.key, what)
        elif offer.kind == "sharing":
            most = offer.most if multiple_sharing else offer.per_gpu_max
            lines += _request(part, "--gres=%s:1" % offer.key, "%s:1, a share of one GPU that other jobs use too (%s)"
                              % (offer.key, offer.nodes()))
            if most > 1:
                lines += _request(part, "--gres=%s:%d" % (offer.key, most), "%s:%d, the most one job can get%s" % (
                    offer.key, most, "" if multiple_sharing else " (every %s of one GPU)" % offer.key))
        else:
            lines += _request(part, "--gres=%s:1" % offer.key, "one %s (%s)" % (offer.key, offer.nodes()))
            if offer.most > 1:
                most = _amount(offer.most)
                lines += _request(part, "--gres=%s:%s" % (offer.key, most),
                                  "the %s %s of one node (%s)" % (most, offer.key, offer.nodes(offer.most)))
    return lines


def _glance(model):
    """The at-a-glance table; the MIG and sharing columns only where the cluster has them."""
    gpus = [g for n in model["nodes"] for g in n["gpus"]]
    mig = any(g["mig"] for g in gpus)
    sharing = any(g.get(f) for g in gpus for f in SHARING_FIELDS.values()) or any(
        k.partition(":")[0] in SHARING_FIELDS for n in model["nodes"] for k in n["gres"])
    head = ["partition", "nodes", "GPUs per node"] + (["MIG instances per node"] if mig else []) + (
        ["shared GPUs"] if sharing else [])
    rows = ["| %s |" % " | ".join(head), "|%s" % ("---|" * len(head))]
    for part in model["partitions"]:
        nodes = _partition_nodes(model, part)
        gpu_nodes = [n for n in nodes if n["gres"]]
        name = "`%s`%s" % (part["name"], " (default)" if part["default"] else "")
        for expr, members in _groups(gpu_nodes, target_version(model)):
            node = members[0]
            whole = _whole_gpus_text(node)
            other = _other_text(node)
            if other:
                whole += "; other: " + other
            cells = [name, expr, whole] + ([_mig_text(node)] if mig else []) + (
                [_sharing_text(node)] if sharing else [])
            rows.append("| %s |" % " | ".join(cells))
        cpu_only = len(nodes) - len(gpu_nodes)
        if cpu_only:
            rows.append("| %s |" % " | ".join([name, "%d node(s) without GPUs" % cpu_only] + ["-"] * (len(head) - 2)))
    return rows


def _confinement(model):
    confined = _devices_confined(model)
    out = ["## Inside a job: `CUDA_VISIBLE_DEVICES`", ""]
    if confined:
        out += [
            "Jobs on this cluster are confined to their GPUs (`TaskPlugin=task/cgroup` with "
            "`ConstrainDevices=yes`). Slurm sets `CUDA_VISIBLE_DEVICES` to the GPUs it gave the job, **numbered "
            "from 0 inside the job**: a job given the node's GPUs 4 and 5 sees `CUDA_VISIBLE_DEVICES=0,1`, and "
            "`nvidia-smi` in the job lists only those two. Use `cuda:0`, `cuda:1`, ... (or whatever "
            "`CUDA_VISIBLE_DEVICES` lists); never the node's own GPU numbers.",
        ]
    else:
        out += [
            "Jobs on this cluster are **not** confined to their GPUs (no `task/cgroup` with "
            "`ConstrainDevices=yes`). Slurm sets `CUDA_VISIBLE_DEVICES` to the node-wide numbers of the GPUs it "
            "gave the job (a job given the node's GPUs 2 and 3 sees `CUDA_VISIBLE_DEVICES=2,3`; alone on an "
            "idle node a one-GPU job sees `0`). CUDA numbers the listed GPUs from 0 in your process, so "
            "`cuda:0` is the first GPU you were given. Nothing stops a job from using other GPUs of the node: "
            "do not change `CUDA_VISIBLE_DEVICES`, or you run on someone else's GPU.",
        ]
    out += [
        "",
        "`SLURM_JOB_GPUS` holds the node-wide numbers of the job's GPUs (for logs); a program should only "
        "ever look at `CUDA_VISIBLE_DEVICES`.",
    ]
    if any(g["mig"] for n in model["nodes"] for g in n["gpus"]):
        if model["autodetect"] == "nvml":
            out += ["", "A MIG instance appears as a `MIG-...` UUID in `CUDA_VISIBLE_DEVICES`."]
        out += ["", "One CUDA process can use one MIG instance only: a job that asks for several MIG instances "
                    "should start one task per instance (`srun --ntasks=N --gres=gpu:PROFILE:1 ...`)."]
    mixed = [n["name"] for n in model["nodes"] if len({g["type"] for g in n["gpus"] if not g["mig"]}) > 1]
    out += [
        "",
        "Slurm numbers a node's GPUs in nvidia-smi order (PCI bus order) on this cluster. CUDA by default "
        "numbers them fastest first, which differs from nvidia-smi as soon as a node has GPUs of different "
        "models%s. Put `export CUDA_DEVICE_ORDER=PCI_BUS_ID` in every job script (the templates below do) so "
        "that CUDA's device 0 is the first GPU in `CUDA_VISIBLE_DEVICES`." % (
            " (here: %s)" % hostlist_expr(mixed, target_version(model)) if mixed else ""),
        "",
        "## Outside Slurm: `CUDA_DEVICE_ORDER=PCI_BUS_ID`",
        "",
        "On a machine where you pick GPUs yourself (a shared server without Slurm, a workstation), "
        "`nvidia-smi` numbers GPUs by PCI bus ID but CUDA, unless told otherwise, fastest first. "
        "`CUDA_VISIBLE_DEVICES=1 python train.py` may then run on a different GPU than nvidia-smi's GPU 1, "
        "one that someone else is using. Always set both:",
        "",
        "```sh",
        "CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=1 python train.py",
        "```",
    ]
    return out


def _free_gpus(model):
    parts = [p["name"] for p in model["partitions"] if any(_has_gpus(n) for n in _partition_nodes(model, p))]
    example = model["nodes"][0]["name"]
    for node in model["nodes"]:
        if _has_gpus(node):
            example = node["name"]
            break
    part = parts[0] if parts else model["partitions"][0]["name"] if model["partitions"] else "main"
    return [
        "## Which GPUs are free",
        "",
        "```sh",
        "# per node: state, the GPUs it has, the GPUs in use (IDX: the node-wide numbers)",
        'sinfo -p %s -N -O "NodeList:16,StateCompact:8,Gres:60,GresUsed:60"' % part,
        "# one node in detail: Gres= (what it has), GresUsed= (what is in use, IDX: which), State=",
        "scontrol -d show node %s" % example,
        "# the jobs there and the GPUs they asked for (per node, or in all with --gpus)",
        'squeue -p %s -O "JobID:10,UserName:10,StateCompact:4,TimeLeft:12,NodeList:16,tres-per-node:24,'
        'tres-per-job:18"' % part,
        "```",
        "",
        "A node whose `GresUsed` equals its `Gres` has no GPU free; `sbatch` still takes the job and queues it. "
        "`squeue --start -j JOBID` shows when Slurm expects to start it.",
        "",
        "On shared GPU servers without Slurm, `nvidia-smi` shows memory in use and processes per GPU "
        "(`nvidia-smi --query-gpu=index,pci.bus_id,name,memory.used,memory.total --format=csv`). Your admins "
        "can also run the gpu-status report of the hpc.slurm_gres collection (`ansible-playbook hpc.slurm_gres.gpu_status`): per "
        "GPU the memory in use and every process with its user and run time, which GPUs are free, and per "
        "server the `CUDA_DEVICE_ORDER=PCI_BUS_ID CUDA_VISIBLE_DEVICES=...` line to run with.",
    ]


def _templates(model, installed_dir, typed=True):
    if installed_dir:
        where = ("Working job scripts are installed next to this guide, in `%s/job-templates/`. Copy one, "
                 "then submit it with the request options above (options on the command line override the "
                 "script's `#SBATCH` lines) and your command after the script's name:" % installed_dir)
        path = installed_dir + "/job-templates/"
    else:
        where = ("Working job scripts ship with the hpc.slurm_gres collection in `%s/` (your admins can install "
                 "them with this guide on the login nodes). Copy one, then submit it with the request options "
                 "above (options on the command line override the script's `#SBATCH` lines) and your command "
                 "after the script's name:" % TEMPLATES_SOURCE)
        path = ""
    out = ["## Job templates", "", where, "",
           "| template | for | key lines |", "|---|---|---|"]
    for name, purpose, key in TEMPLATES:
        out.append("| `%s%s` | %s | `%s` |" % (path, name, purpose, key))
    out += [
        "",
        "```sh",
        "cp %sgpu-single.sbatch . && sbatch -p PARTITION --gres=gpu:%s1 gpu-single.sbatch python train.py"
        % (path, "TYPE:" if typed else ""),
        "```",
        "",
        "- Without a command each template only reports what the job got (host, `CUDA_VISIBLE_DEVICES`).",
        "- `gpu-array.sbatch` replaces `{}` in the command by the task's `SLURM_ARRAY_TASK_ID`. Keep the `%4`: "
        "without it an array takes every free GPU of the partition. Change it on a running array with "
        "`scontrol update JobId=JOBID ArrayTaskThrottle=2`.",
        "- `gpu-preemptible.sbatch` runs a command that resumes from `$CKPT_DIR`, writes a checkpoint there on "
        "`SIGUSR1` (sent every `CKPT_INTERVAL` seconds; `CKPT_INTERVAL=0` turns that off) and writes one and "
        "exits on `SIGTERM` (sent 120 s before the time limit, and by Slurm on preemption, `scontrol requeue` "
        "or `scancel`). A checkpoint must take less than the cluster's `KillWait` "
        "(`scontrol show config | grep -E 'KillWait|GraceTime'`). A requeued job may start again %d s after "
        "the requeue at the earliest (`squeue` shows it pending with reason `BeginTime`)." % _requeue_delay(model),
    ]
    return out


def render_users_guide(model, installed_dir=None):
    """USERS.md text for the cluster. ``installed_dir``: where the guide and
    its job templates are installed on the login nodes (None: not installed)."""
    model = _with_gres(model)
    multiple_sharing = _multiple_sharing_per_job(model)
    typed = _typed(model)
    out = [
        "# GPUs on cluster %s" % model["cluster_name"],
        "",
        "Generated by hpc.slurm_gres from the same inventory as this cluster's slurm.conf and gres.conf, at "
        "every deploy: what is here is what Slurm has. Do not edit; changes are overwritten.",
        "",
        "## At a glance",
        "",
    ]
    out += _glance(model)
    out += [
        "",
        "## How to ask for GPUs",
        "",
        ("Ask for a GPU type by name (`--gres=gpu:TYPE:N`, N per node)%s. " % (
            "; untyped GPUs by count alone (`--gres=gpu:N`), which any GPU of the partition fits" if any(
                "gpu" in n["gres"] for n in model["nodes"]) else "")
         if typed else "Ask for GPUs by count (`--gres=gpu:N`, N per node): this cluster's GPUs have no type. ")
        + "A request no node can ever satisfy is refused at once (`Requested node configuration is not "
        "available`); one that must wait is queued. Every line below fits this cluster's nodes; replace `job.sh` "
        "with your script.",
    ]
    has_untyped_any = False
    for part in model["partitions"]:
        nodes = [n for n in _partition_nodes(model, part) if n["gres"]]
        if not nodes:
            continue
        offers = _offers(nodes, target_version(model))
        out += ["", "### Partition `%s`%s" % (part["name"], " (default)" if part["default"] else "")]
        limit = {k.lower(): v for k, v in part["options"].items()}.get("maxtime")
        if limit:
            out += ["", "Time limit: `%s`." % limit]
        out += ["", "```sh"] + _requests(part["name"], offers, multiple_sharing) + ["```"]
        has_untyped_any = has_untyped_any or len([o for o in offers if o.kind in ("gpu", "mig", "untyped")]) > 1
    notes = []
    has_mig = any(g["mig"] for n in model["nodes"] for g in n["gpus"])
    if has_untyped_any:
        notes.append("- `--gres=gpu:1` takes whatever GPU is free first, of any type listed%s: ask for the type "
                     "you need." % (", MIG instances included" if has_mig else ""))
    if has_mig:
        notes.append("- A MIG instance is a fixed slice of one GPU, isolated from the other slices; its name "
                     "says its size (`1g.10gb`: one compute slice and 10 GB of memory).")
    sharing = {k.partition(":")[0] for n in model["nodes"] for k in n["gres"]} & set(SHARING_FIELDS)
    if "shard" in sharing:
        notes.append("- Shards share one GPU between jobs without isolation: memory and compute go to whoever "
                     "takes them first. %s" % (
                         "A job may take shards of several GPUs of a node."
                         if multiple_sharing else "A job's shards all come from one GPU."))
    if "mps" in sharing:
        notes.append("- `mps` is a share of one GPU's compute through CUDA MPS: `--gres=mps:N` on a GPU that has M "
                     "is N/M of it (the lines above show M); its memory is shared with the other jobs on it. %s" % (
                         "A job may take mps of several GPUs of a node."
                         if multiple_sharing else "A job's mps all come from one GPU."))
    spec = "TYPE:N" if typed else "N"
    notes.append("- `--gpus-per-node=%s` and `--gpus=%s` are the same GPUs as `--gres=gpu:%s`; use one form per job. "
                 "Add `--cpus-per-gpu=` and `--mem-per-gpu=` for CPUs and memory." % (spec, spec, spec))
    out += [""] + notes + [""]
    out += _confinement(model) + [""]
    out += _free_gpus(model) + [""]
    out += _templates(model, installed_dir, typed)
    return "\n".join(out) + "\n"


def render_motd(model, installed_dir=None):
    """A few lines for the login banner: the GPUs per partition and where the guide is."""
    model = _with_gres(model)
    out = ["GPUs on cluster %s (--gres=gpu:%s):" % (model["cluster_name"], "TYPE:N" if _typed(model) else "N")]
    for part in model["partitions"]:
        nodes = [n for n in _partition_nodes(model, part) if n["gres"]]
        if not nodes:
            continue
        items = []
        for expr, members in _groups(nodes, target_version(model)):
            items.append("%s %s" % (expr, ", ".join("%s:%s" % (k, _amount(n)) for k, n in members[0]["gres"].items())))
        out.append("  -p %s: %s" % (part["name"], "; ".join(items)))
    if installed_dir:
        out.append("Guide and job templates: %s/%s, %s/job-templates/" % (installed_dir, GUIDE, installed_dir))
    return "\n".join(out) + "\n"


def users_guide_files(model, installed_dir=None):
    """{"USERS.md": text, "USERS.motd": text}: the entries the render step adds next to slurm.conf."""
    model = _with_gres(model)
    return {GUIDE: render_users_guide(model, installed_dir), MOTD: render_motd(model, installed_dir)}


def inventory_guide_files(model, hostvars, groups):
    """What the render step adds to ``render_all(model)``'s files, reading the install directory from the
    inventory: ``hpc_gres_users_guide_dir`` of the hosts in group ``hpc_gres_users_guide`` (GresError when
    they differ). ``hostvars`` may be Ansible's hostvars or a plain dict."""
    hosts = list((groups or {}).get(INSTALL_GROUP) or [])
    directory = install_dir(schema_hostvars(hostvars, hosts, lambda name: name == DIR_VAR))
    return users_guide_files(model, directory)
