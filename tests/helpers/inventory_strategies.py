"""Hypothesis strategies for whole inventories, valid and hostile, and the judge every generated one must pass.

``inventories()`` draws a valid cluster (hosts, groups, CPU shapes, GPUs with types, cores, minors, shards and MIG
layouts, features, partitions, slurm.conf and cgroup.conf options, controller addresses) and then, half of the
time, replaces one to three values anywhere in it with hostile ones: non-ASCII digits, newlines, ``#``, spaces,
backslashes, quotes, reserved words, integers at and past every Slurm field width, nested lists and mappings,
typos of option names, huge ranges. ``judge()`` says what the collection did with it: rendered (then the files
are read back independently of the renderer) or refused (then every problem must name a host and an inventory
field). Anything else, a traceback above all, propagates.

The same strategies drive tests/unit (no slurmd), tests/integration (the real ``slurmd -G`` judges every rendered
node) and scripts/fuzz-render.py (through ansible-playbook).
"""
import re

from hypothesis import strategies as st

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_tables import RELEASES
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import parse_version
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    parse_gres_conf,
    parse_slurm_conf,
    read_records,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import NAMESPACE
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_access import node_gres
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import CLUSTER_VARS, HOST_VARS
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import users_guide_files

CLUSTER_HOST = "localhost"

GPU_TYPES = ("a100", "h100_pcie", "l40s", "v100-sxm2", "rtx6000.ada", "gh200", "a30")
MIG_LAYOUTS = (("A100-80GB", ("7g.80gb",)), ("A100-80GB", ("3g.40gb", "3g.40gb")),
               ("A100-80GB", ("4g.40gb", "2g.20gb", "1g.10gb")), ("A100-40GB", ("3g.20gb", "2g.10gb", "1g.5gb")))
FEATURES = ("ib", "nvme", "avx512", "genoa", "a100", "hbm3", "gpu.big", "rack_7")
# (option, valid values) that Slurm 22.05+ accepts on its own, for hpc_gres_slurm_conf_options
SLURM_OPTIONS = (
    ("SlurmctldDebug", ("info", "debug", "error")),
    ("SlurmdDebug", ("info", "verbose")),
    ("MaxJobCount", (10000, "250000", 1)),
    ("MinJobAge", (300, 2)),
    ("KillWait", (30, 65535)),
    ("MessageTimeout", (10, 100)),
    ("SchedulerParameters", (["bf_window=4320", "defer"], "bf_continue")),
    ("InteractiveStepOptions", ("--interactive --preserve-env --pty $SHELL",)),
    ("DefMemPerGPU", (4096,)),
    ("ReturnToService", (0, 2)),
    ("JobAcctGatherType", ("jobacct_gather/linux", None)),
    ("ProctrackType", ("proctrack/linuxproc",)),
    ("TaskPlugin", ("task/none", "task/affinity")),
    ("UsePAM", (True, "no")),
)
CGROUP_OPTIONS = (
    ("ConstrainSwapSpace", ("yes", False)),
    ("AllowedRAMSpace", (100, "98.5")),
    ("MaxRAMPercent", (98.5, 100)),
    ("ConstrainCores", ("no", None)),
    ("MinRAMSpace", (30, "64")),
)
PARTITION_OPTIONS = (
    ("MaxTime", ("INFINITE", "1-00:00:00", "60", "UNLIMITED", "2:00:00")),
    ("State", ("UP", "DOWN", "INACTIVE")),
    ("PriorityTier", (1, 65533)),
    ("MaxNodes", ("INFINITE", 4)),
    ("OverSubscribe", ("NO", "EXCLUSIVE")),
)

# Values that have broken (or could break) a renderer: each must be refused with host and field, or be harmless.
HOSTILE_STRINGS = (
    "", " ", "\n", "a100\n", "a b", "1000 MinJobAge=5", "1 Nodes=nosuch", "a#b", "#", "abc\\", "a\\\nFoo=1",
    'a"b', '"quoted"', "\u00b2", "\u0663", "a\tb", "\u00e4100", "DEFAULT", "default", "Default", "ALL", "all",
    "no_consume", "NO_CONSUME", "a,b", "a:b", "node[1-2]", "a(b)", "x" * 300, "a=b", "\x00", "\r", "\u2028",
    "\x0b", "INFINITE", "0x10", "010", " 1", "1 ", "1\n", "-1", "8", "2k", "0-100000000", "3-1", "0-3\n",
    "10.0.0.1\nFoo=bar", "10.0.0.1(x", "{'a': 1}", "SchedulerTyp", "3g.40gb\n", "+", "-a", ".",
)
HOSTILE_INTS = (-1, 0, 1, 247, 248, 255, 65533, 65534, 65535, 65536, 2 ** 31, 2 ** 32 - 3, 2 ** 32 - 1, 2 ** 32,
                2 ** 63 - 2, 2 ** 63, 2 ** 64 - 3, 2 ** 64, 10 ** 30)
HOSTILE_OTHER = (None, True, False, 1.5, float("nan"), [], [1], {"a": 1}, [{"name": "gpu01"}], ["a", ["b"]],
                 {"index": 0}, [None], ("tuple",))
HOSTILE_TEXT = st.text(alphabet=st.sampled_from("aZ09_.-+:,#=[]() \t\n\\\"'\u00b2\u0663\u00e4"), max_size=12)


def hostile_values():
    return st.one_of(st.sampled_from(HOSTILE_STRINGS), st.sampled_from(HOSTILE_INTS), st.sampled_from(HOSTILE_OTHER),
                     HOSTILE_TEXT, st.integers(-2 ** 70, 2 ** 70))


@st.composite
def node_names(draw, count):
    """`count` distinct inventory host names with their Slurm node names (short names), realistic shapes."""
    prefix = draw(st.sampled_from(("gpu", "node", "n", "cpu-", "dgx", "gpu-a", "hpc")))
    width = draw(st.integers(1, 3))
    # -ib: Slurm before 23.11 cannot read a hostlist suffix (node[01-02]-ib), so the render writes them out
    suffix = draw(st.sampled_from(("", ".example.org", ".lab", "-ib", "-ib.lab")))
    numbers = draw(st.lists(st.integers(0, 10 ** width - 1), min_size=count, max_size=count, unique=True))
    return ["%s%0*d%s" % (prefix, width, n, suffix) for n in numbers]


@st.composite
def gpu_lists(draw, core_count, types, sharing):
    count = draw(st.integers(0, 4))
    indexes = sorted(draw(st.lists(st.integers(0, 7), min_size=count, max_size=count, unique=True)))
    gpus = []
    minors = None
    if count and draw(st.integers(0, 4)) == 0:
        minors = draw(st.lists(st.integers(0, 15), min_size=count, max_size=count, unique=True))
    use_mig = sharing == "mig" and draw(st.integers(0, 2)) == 0
    for pos, index in enumerate(indexes):
        gpu = {"index": index, "type": draw(st.sampled_from(types))}
        if draw(st.booleans()):
            lo = draw(st.integers(0, core_count - 1))
            hi = draw(st.integers(lo, core_count - 1))
            gpu["cores"] = "%d-%d" % (lo, hi) if hi > lo else "%d" % lo
        if minors is not None:
            gpu["minor"] = minors[pos]
        if use_mig and pos == 0:
            model, layout = draw(st.sampled_from(MIG_LAYOUTS))
            gpu["model"] = model
            gpu["mig"] = list(layout)
        elif sharing == "shard" and draw(st.booleans()):
            gpu["shards"] = draw(st.integers(1, 16))
        gpus.append(gpu)
    return gpus


@st.composite
def valid_inventories(draw, slurm_version=None):
    """(hostvars, groups, cluster) of a cluster the collection should render and Slurm accept.

    `slurm_version`: the release to render for (the one of the slurmd that judges the files); None draws one of the
    releases the option tables know, or leaves the variable unset (the default release)."""
    count = draw(st.integers(1, 5))
    hosts = draw(node_names(count + 1))
    ctl, nodes = hosts[0], hosts[1:]
    types = draw(st.lists(st.sampled_from(GPU_TYPES), min_size=1, max_size=3, unique=True))
    hostvars = {ctl: {}}
    if draw(st.booleans()):
        addresses = ("10.0.0.1", "ctl.example.org", "fd00::1", "192.168.100.254")
        hostvars[ctl]["hpc_gres_controller_addr"] = draw(st.sampled_from(addresses))
    # MIG and shards cannot share a cluster (GresTypes is cluster-wide; the model refuses the mix).
    sharing = draw(st.sampled_from(("none", "mig", "shard")))
    shapes = draw(st.lists(st.tuples(st.integers(1, 2), st.integers(1, 8), st.integers(1, 2)), min_size=1,
                           max_size=2))
    for host in nodes:
        sockets, cores, threads = draw(st.sampled_from(shapes))
        hv = {"hpc_gres_node_sockets": sockets, "hpc_gres_node_cores_per_socket": cores,
              "hpc_gres_node_threads_per_core": threads}
        if draw(st.booleans()):
            hv["hpc_gres_node_real_memory"] = draw(st.sampled_from((1000, 515000, 2 ** 40)))
        if draw(st.integers(0, 3)) == 0:
            hv["hpc_gres_node_features"] = draw(st.lists(st.sampled_from(FEATURES), max_size=3, unique=True))
        if draw(st.integers(0, 4)) == 0:
            hv["hpc_gres_node_weight"] = draw(st.sampled_from((0, 1, 100, 2 ** 32 - 3)))
        gpus = draw(gpu_lists(sockets * cores, types, sharing))
        if gpus:
            hv["hpc_gres_gpus"] = gpus
        hostvars[host] = hv
    groups = {"all": [ctl] + nodes, "slurmctld": [ctl], "slurmd": list(nodes),
              "gpu": [h for h in nodes if hostvars[h].get("hpc_gres_gpus")]}
    cluster = {"hpc_gres_cluster_name": draw(st.sampled_from(("demo", "lab-1", "c", "HPC_2")))}
    version = slurm_version or draw(st.sampled_from((None,) + RELEASES))
    if version:
        cluster["hpc_gres_slurm_version"] = version
    # AutoDetect=nvidia is new in 24.11 (the model refuses it for older releases)
    new_enough = version and parse_version(version) >= (24, 11)
    autodetect = ("off", "nvml", False) + (("nvidia",) if new_enough else ())
    if draw(st.booleans()):
        cluster["hpc_gres_autodetect"] = draw(st.sampled_from(autodetect))
    if draw(st.booleans()):
        cluster["hpc_gres_slurm_conf_options"] = draw(_options(SLURM_OPTIONS))
    if draw(st.booleans()):
        cluster["hpc_gres_cgroup_conf_options"] = draw(_options(CGROUP_OPTIONS))
    if draw(st.booleans()):
        cluster["hpc_gres_partitions"] = draw(_partitions(nodes, groups))
    return hostvars, groups, cluster


@st.composite
def _options(draw, pool):
    chosen = draw(st.lists(st.sampled_from(pool), max_size=4, unique_by=lambda item: item[0]))
    return {key: draw(st.sampled_from(values)) for key, values in chosen}


@st.composite
def _partitions(draw, nodes, groups):
    names = draw(st.lists(st.sampled_from(("main", "gpu", "debug", "long", "p1", "batch.q")), min_size=1,
                          max_size=3, unique=True))
    default = draw(st.sampled_from([None] + names))
    parts = []
    for name in names:
        part = {"name": name}
        how = draw(st.sampled_from(("all", "list", "hostlist", "group") if groups["gpu"] else ("all", "list")))
        short = [h.split(".", 1)[0] for h in nodes]
        if how == "all":
            part["nodes"] = "ALL"
        elif how == "group":
            part["group"] = "gpu"
        else:
            chosen = draw(st.lists(st.sampled_from(short), min_size=1, unique=True))
            part["nodes"] = chosen if how == "list" else ",".join(chosen)
        if name == default:
            part["default"] = True
        if draw(st.booleans()):
            part["options"] = draw(_options(PARTITION_OPTIONS))
        parts.append(part)
    return parts


def _targets(hostvars, cluster):
    """Every place a hostile value can go (earlier changes may have replaced containers): [setter]."""
    targets = []
    for host, hv in hostvars.items():
        targets.extend(_setter(hv, var) for var in HOST_VARS)
        for gpu in _items(hv.get("hpc_gres_gpus"), list):
            if isinstance(gpu, dict):
                targets.extend(_setter(gpu, key) for key in ("index", "type", "cores", "minor", "shards", "mig",
                                                             "model"))
        features = hv.get("hpc_gres_node_features")
        targets.extend(_setter(features, pos) for pos in range(len(_items(features, list))))
    targets.extend(_setter(cluster, var) for var in CLUSTER_VARS)
    for var in ("hpc_gres_slurm_conf_options", "hpc_gres_cgroup_conf_options"):
        table = cluster.get(var)
        targets.extend(_setter(table, key) for key in _items(table, dict))
    for part in _items(cluster.get("hpc_gres_partitions"), list):
        if not isinstance(part, dict):
            continue
        targets.extend(_setter(part, key) for key in ("name", "nodes", "group", "default", "options"))
        if _items(part.get("nodes"), list):
            targets.append(_setter(part["nodes"], 0))
        targets.extend(_setter(part["options"], key) for key in _items(part.get("options"), dict))
    return targets


def _items(value, kind):
    return list(value) if isinstance(value, kind) else []


def _setter(container, key):
    def put(value):
        container[key] = value
    return put


def _new_key(draw, hostvars, cluster):
    """Add a key the schema or Slurm does not know (a typo, an owned key, an option of another release)."""
    where = draw(st.sampled_from(("host", "hpc_gres_slurm_conf_options", "hpc_gres_cgroup_conf_options", "gpu")))
    if where == "host":
        host = draw(st.sampled_from(sorted(hostvars)))
        hostvars[host][draw(st.sampled_from(("hpc_gres_node_socket", "hpc_gres_gpu", "hpc_gres_controller_address",
                                             "hpc_gres_gpus_extra")))] = 1
    elif where == "gpu":
        gpus = [g for hv in hostvars.values() for g in _items(hv.get("hpc_gres_gpus"), list) if isinstance(g, dict)]
        if gpus:
            draw(st.sampled_from(gpus))[draw(st.sampled_from(("coers", "Index", "links", 7)))] = "0-3"
    else:
        table = cluster.setdefault(where, {})
        if table is None:
            table = cluster[where] = {}
        if isinstance(table, dict):
            key = draw(st.sampled_from(("SchedulerTyp", "GresTypes", "NodeName", "ConstrainDevice", "CgroupAutomount",
                                        "SystemdTimeout", "MaxJobCount+", "Max Job", "DownNodes", "Include",
                                        "SlurmctldPlugstack", "ConstrainKmemSpace", "ñame", "")))
            table[key] = draw(st.one_of(st.sampled_from(("yes", 5, "sched/backfill")), hostile_values()))


@st.composite
def inventories(draw, slurm_version=None):
    """A valid inventory, or (half the time) one with 1-3 hostile changes anywhere in it."""
    hostvars, groups, cluster = draw(valid_inventories(slurm_version))
    if draw(st.booleans()):
        for _extra in range(draw(st.integers(1, 3))):
            if draw(st.integers(0, 4)) == 0:
                _new_key(draw, hostvars, cluster)
                continue
            put = draw(st.sampled_from(_targets(hostvars, cluster)))
            put(draw(hostile_values()))
    return hostvars, groups, cluster


# An inventory field as a refusal must name it: a schema variable, optionally indexed or dotted into.
_FIELD_RE = re.compile(r"\A(groups\.[a-z]+|hpc_gres_[a-z_]+)(\[[0-9]+\]|\[[^\]]*\]|\.[^\s]+)*\Z")
KNOWN_ROOTS = set(HOST_VARS) | set(CLUSTER_VARS) | {"hpc_gres_slurm_version"}
UNKNOWN_VAR_PREFIXES = (NAMESPACE,)  # a misspelt variable of the namespace is named as written


class Rendered(object):
    def __init__(self, model, files):
        self.model = model
        self.files = files


def judge(inventory):
    """Rendered(model, files) or the list of problems; raises AssertionError on a refusal without host and field,
    or on files that do not say what the model holds. Any exception but GresError propagates (a bug)."""
    hostvars, groups, cluster = inventory
    try:
        model = build_cluster_model(hostvars, groups, cluster, cluster_host=CLUSTER_HOST)
        files = render_all(model)
    except GresError as exc:
        check_refusal(exc.problems, set(hostvars) | {CLUSTER_HOST})
        return exc.problems
    check_files(model, files)
    # the render step also writes the users' guide from the same model (no install group in these inventories)
    files.update(users_guide_files(model))
    return Rendered(model, files)


def check_refusal(problems, hosts):
    assert problems, "GresError without problems"
    for problem in problems:
        text = str(problem)
        assert problem.host in hosts, "refusal names no inventory host: %s" % text
        assert _FIELD_RE.match(problem.field or ""), "refusal names no inventory field: %s" % text
        root = re.match(r"groups\.[a-z]+|[a-z_]+", problem.field).group(0)
        assert root.startswith("groups.") or root in KNOWN_ROOTS or root.startswith(UNKNOWN_VAR_PREFIXES), \
            "refusal names no inventory field: %s" % text
        assert problem.expected and problem.found is not None, "refusal without expected/found: %s" % text


def check_files(model, files):
    """Read the files back without the renderer's help: exactly the model's nodes, partitions and options."""
    conf = parse_slurm_conf(files["slurm.conf"])
    assert not conf["errors"], conf["errors"]
    assert sorted(conf["nodes"]) == sorted(n["name"] for n in model["nodes"]), "NodeName lines differ from model"
    for node in model["nodes"]:
        want = {k.lower(): v for k, v in node_gres(node).items()}
        assert conf["nodes"][node["name"]]["gres"] == want, (node["name"], conf["nodes"][node["name"]]["gres"], want)
    assert list(conf["partitions"]) == [p["name"] for p in model["partitions"]], "PartitionName lines differ"
    expected = {k.lower() for k in model["settings"]["slurm_conf"]} | {"clustername", "slurmctldhost"}
    if any(n["gpus"] for n in model["nodes"]):
        expected |= {"grestypes", "accountingstoragetres"}
    extra = set(conf["options"]) - expected
    assert not extra, "slurm.conf keys nobody asked for: %s" % sorted(extra)
    cgroup = [pairs for _key, pairs, _line in read_records(files["cgroup.conf"])]
    assert cgroup == [[item] for item in model["settings"]["cgroup_conf"].items()], "cgroup.conf differs"
    for node in model["nodes"]:
        if node["gpus"]:
            parse_gres_conf(files[node["name"] + "/gres.conf"], node["name"])


# Examples per run, by suite: bounded and fixed for CI (tests/conftest.py loads the derandomized "ci" profile);
# HOSTILE_EXAMPLES overrides both for a long local run.
EXAMPLES = {"unit": 300, "slurmd": 100}


def examples(suite):
    import os

    return int(os.environ.get("HOSTILE_EXAMPLES") or EXAMPLES[suite])
