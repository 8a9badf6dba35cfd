# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""The inventory schema: the variables the collection reads, their defaults and the model's limits.

Every variable lives in the collection's namespace (``NAMESPACE``); nothing outside it is read or refused.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm import values, versions


# Every variable the collection reads or sets starts with this; nothing outside it is read (namespace.py).
NAMESPACE = "hpc_gres_"

CTLD_GROUP = "slurmctld"


SLURMD_GROUP = "slurmd"


# Per-host inventory variables (host_vars or group_vars) this model reads.
NODE_VARS = (
    "hpc_gres_node_name",
    "hpc_gres_node_sockets",
    "hpc_gres_node_cores_per_socket",
    "hpc_gres_node_threads_per_core",
    "hpc_gres_node_real_memory",
    "hpc_gres_node_features",
    "hpc_gres_node_weight",
    "hpc_gres_node_autodetect",
    "hpc_gres_node_shards",
    "hpc_gres_node_mps",
    "hpc_gres_node_gres",
    "hpc_gres_node_options",
    "hpc_gres_gpus",
)


CONTROLLER_VARS = ("hpc_gres_controller_addr",)


HOST_VARS = NODE_VARS + CONTROLLER_VARS


GPU_KEYS = ("index", "type", "cores", "minor", "file", "mig", "shards", "mps", "model", "links", "flags", "count")


# Cluster-wide variables (group_vars/all) and their defaults.
CLUSTER_VARS = {
    "hpc_gres_cluster_name": "cluster",
    "hpc_gres_slurm_version": versions.DEFAULT_SLURM_VERSION,
    "hpc_gres_autodetect": "off",
    "hpc_gres_partitions": None,
    "hpc_gres_slurm_conf_options": {},
    "hpc_gres_cgroup_conf_options": {},
    "hpc_gres_types": [],
    "hpc_gres_config_mode": "files",
    "hpc_gres_include_file": "slurm_gres.conf",
    "hpc_gres_accounting_gpu_tres": True,
    # the GPU health check (docs/health.md): installed on every slurmd host, wired as slurm.conf's HealthCheckProgram
    "hpc_gres_health": True,
    "hpc_gres_health_nhc": False,
    "hpc_gres_health_interval": 300,
    "hpc_gres_health_node_state": "ANY",
    "hpc_gres_health_program": "/usr/local/sbin/hpc-gres-health",
    "hpc_gres_health_kernel_log": "auto",
    "hpc_gres_health_ack_file": "/etc/hpc-gres/xid-acknowledgements",
    "hpc_gres_health_timeout": 10,
    # the GPU boot order of slurmd (docs/boot.md): installed on every GPU node
    "hpc_gres_boot": True,
    "hpc_gres_boot_mig": "collection",
    "hpc_gres_boot_timeout": 300,
    "hpc_gres_boot_retry_interval": 300,
}


# files: slurm.conf, cgroup.conf and each node's gres.conf on every node; configless: slurm.conf, cgroup.conf and
# one cluster-wide gres.conf on the controllers, nothing on the nodes (SlurmctldParameters=enable_configless);
# include: only a node/partition file the site's slurm.conf includes, and each node's gres.conf.
CONFIG_MODES = ("files", "configless", "include")


AUTODETECT_CHOICES = ("off", "nvml", "nvidia", "full")


PARTITION_KEYS = ("name", "group", "nodes", "default", "options")


# slurm.conf settings the renderer owns: derived from the inventory, never taken from hpc_gres_slurm_conf_options.
OWNED_SLURM_KEYS = ("ClusterName", "SlurmctldHost", "ControlMachine", "ControlAddr", "BackupController",
                    "BackupAddr", "GresTypes", "NodeName", "PartitionName", "Include")


DEFAULT_SLURM_CONF = (
    ("AuthType", "auth/munge"),
    ("CredType", "cred/munge"),
    ("SlurmUser", "slurm"),
    ("SlurmctldPort", 6817),
    ("SlurmdPort", 6818),
    ("StateSaveLocation", "/var/lib/slurm/slurmctld"),
    ("SlurmdSpoolDir", "/var/lib/slurm/slurmd"),
    ("SlurmctldPidFile", "/run/slurmctld.pid"),
    ("SlurmdPidFile", "/run/slurmd.pid"),
    ("SlurmctldLogFile", "/var/log/slurm/slurmctld.log"),
    ("SlurmdLogFile", "/var/log/slurm/slurmd.log"),
    ("ProctrackType", "proctrack/cgroup"),
    ("TaskPlugin", "task/cgroup,task/affinity"),
    ("MpiDefault", "none"),
    ("ReturnToService", 1),
    ("SchedulerType", "sched/backfill"),
    ("SelectType", "select/cons_tres"),
    ("SelectTypeParameters", "CR_Core_Memory"),
)


def default_slurm_conf(release):
    """DEFAULT_SLURM_CONF for a release: SlurmctldPidFile where that release's slurmctld unit can write it."""
    pidfile = versions.rule("slurmctld_pidfile", release or versions.DEFAULT_SLURM_VERSION)
    return tuple((key, pidfile if key == "SlurmctldPidFile" else value) for key, value in DEFAULT_SLURM_CONF)


DEFAULT_CGROUP_CONF = (
    ("CgroupPlugin", "autodetect"),
    ("ConstrainCores", "yes"),
    ("ConstrainDevices", "yes"),
    ("ConstrainRAMSpace", "yes"),
)


DEFAULT_PARTITION = {"name": "main", "nodes": "ALL", "default": True,
                     "options": {"MaxTime": "INFINITE", "State": "UP"}}


# MIG profile names as nvidia-smi / mig-parted write them: [<C>c.]<G>g.<GB>gb[+me|+me.all|+gfx|-me]
MIG_PROFILE_RE = re.compile(r"\A([0-9]+c\.)?[0-9]+g\.[0-9]+gb(\+me|\+me\.all|\+gfx|-me)?\Z")


# slurm.conf keys that start a line of their own keys (DownNodes=x State=DOWN ...): not expressible as one option.
LINE_RECORD_KEYS = ("DownNodes", "FrontendName", "NodeSet", "PowerAction")


# String options whose documented values are command lines: written in double quotes, spaces allowed.
# Options whose value is a command line with arguments (written in quotes): slurmd runs RebootProgram verbatim
# (req.c _rpc_reboot, 22.05; a PowerAction's argv since 25.05), salloc InteractiveStepOptions as srun options.
COMMAND_LINE_OPTIONS = ("InteractiveStepOptions", "RebootProgram")


# The most problems one refusal lists: a pathological inventory is refused in bounded time and message size.
MAX_PROBLEMS = 200


# The most partitions one cluster may declare (a bound of this collection, not of Slurm: it keeps the render,
# which writes each partition's node list as a hostlist, bounded).
MAX_PARTITIONS = 256


MAX_FEATURES = 256


# No NVIDIA GPU holds more than 7 GPU instances (MIG user guide); profiles.py checks each model's own limit.
MAX_MIG_INSTANCES = 7


# The most nodes a cluster can hold: MAX_SLURM_NODES (slurm.h, 24.11+); hostlist.c MAX_RANGE refuses a longer range.
MAX_NODES = 65536


# The most GPU entries a node can hold: one per /dev/nvidiaN minor (values.GPU_MINOR_MAX).
MAX_GPUS = values.GPU_MINOR_MAX + 1


# SlurmdParameters that make Slurm's "socket" a NUMA node or an L3 cache, which the inventory does not describe.
SOCKET_REDEFINING = ("numa_node_as_socket", "l3cache_as_socket")


# The tables of docs/inventory.md, generated from here (scripts/inventory-doc.py; a unit test keeps the page and
# these rows equal, and the rows equal to the schema above): column titles, then one row per variable or GPU key.
DOC_TABLES = {
    'node': (
        (
            'variable',
            'type',
            'required',
            'meaning',
        ),
        (
            '`hpc_gres_node_name`',
            'string',
            'no',
            'Slurm `NodeName`; default: the inventory name up to the first dot (`gpu-a01.example.org` -> `gpu-a01`). '
            'Two hosts may not map to one name.',
        ),
        (
            '`hpc_gres_node_sockets`',
            'int 1-65533',
            'to check `cores`',
            'sockets (`slurmd -C` prints it as `SocketsPerBoard`, times `Boards`); `gpu_facts` reports what `slurmd '
            "-C` would print and says when the node's shape does not fit (docs/cpu-topology.md)",
        ),
        (
            '`hpc_gres_node_cores_per_socket`',
            'int 1-65533',
            'to check `cores`',
            'physical cores per socket',
        ),
        (
            '`hpc_gres_node_threads_per_core`',
            'int 1-65533',
            'to check `cores`',
            'hardware threads per core; sockets x cores x threads at most 65533',
        ),
        (
            '`hpc_gres_node_real_memory`',
            'int 1-2^64-3',
            'no',
            '`RealMemory` in MiB',
        ),
        (
            '`hpc_gres_node_features`',
            'list of names, or a comma string',
            'no',
            '`Features=`, at most 256',
        ),
        (
            '`hpc_gres_node_weight`',
            'int 0-4294967293',
            'no',
            '`Weight=`',
        ),
        (
            '`hpc_gres_node_options`',
            'mapping',
            'no',
            "other `NodeName=` settings, written on the node's line in the given order: `TmpDisk`, `State`, "
            '`Reason`, `CPUs`, `Boards`, `SocketsPerBoard`, `CoreSpecCount`, `CPUSpecList`, `MemSpecLimit`, '
            '`CpuBind`, `NodeAddr`, `NodeHostname`, `Port`, `BcastAddr`, `TRESWeights` (and the newer `Comment`, '
            '`Extra`, `Parameters`, `RestrictedCoresPerGPU`, `Topology`). Keys the schema holds (`Sockets`, '
            '`RealMemory`, `Features`, `Weight`, `Gres`, ...) are refused here.',
        ),
        (
            '`hpc_gres_gpus`',
            'list',
            'no',
            'one entry per physical GPU (or per group of GPUs AutoDetect finds), below',
        ),
        (
            '`hpc_gres_node_autodetect`',
            'string',
            'no',
            "this node's AutoDetect, overriding `hpc_gres_autodetect` (`off` on one node of an `nvml` cluster); "
            'written as `NodeName=X AutoDetect=...`',
        ),
        (
            '`hpc_gres_node_shards`',
            'int >= 1',
            'no',
            "`shard` count in slurm.conf only; slurmd spreads it over the node's GPUs (`count / GPUs left` each, the "
            'remainder on the later GPUs). Not together with per-GPU `shards`.',
        ),
        (
            '`hpc_gres_node_mps`',
            'int >= 1',
            'no',
            'the same for `mps` (Count in percent of a GPU, usually 100 per GPU). Not together with per-GPU `mps`.',
        ),
        (
            '`hpc_gres_node_gres`',
            'list',
            'no',
            'other GRES on the node (`bandwidth`, `tmpdisk`, `mic`, site-specific names), below',
        ),
        (
            '`hpc_gres_controller_addr`',
            'string',
            'no',
            'on a controller: address for `SlurmctldHost=name(addr)`',
        ),
    ),
    'gpu': (
        (
            'key',
            'type',
            'required',
            'meaning',
        ),
        (
            '`index`',
            'int 0-247',
            'yes (or `count`)',
            'the nvidia-smi index; unique per node (at most 248 entries: the NVIDIA driver keeps '
            '`/dev/nvidia248`-`255` for itself)',
        ),
        (
            '`type`',
            'string',
            'no',
            'the GRES type (`gpu:TYPE`): letters, digits, `_ . - +` (not first), at most 64; not `no_consume` (a '
            'flag to Slurm). A type of digits (`5090`, `2k`) is accepted with a warning: Slurm reads it as a type '
            "wherever a count follows (`Gres=gpu:5090:2`, which the collection always writes), but a job's "
            '`--gres=gpu:5090` asks for 5090 GPUs of any type, so users must write `--gres=gpu:5090:1`; one spelling '
            'per type across the cluster. With AutoDetect it must be a substring of the NVML name '
            '(`nvidia_h100_pcie` -> `h100_pcie`): the render cannot know that name, so the verification on each node '
            "checks it against nvidia-smi's and refuses the node otherwise (slurmd would register the GPUs under the "
            'long name and the node would drain). Leave it out for untyped GPUs (`Gres=gpu:4`, gres.conf without '
            '`Type=`): then every GPU of that node is untyped, because slurmctld refuses typed and untyped GPUs on '
            'one node.',
        ),
        (
            '`cores`',
            'string or int',
            'no',
            '**Slurm logical core indices** (hwloc\'s `Core L#`, one per physical core, socket 0 first), as `"0-31"` '
            'or `"0-15,32-47"`; must lie within `sockets * cores_per_socket` (without `hpc_gres_node_sockets` and '
            '`hpc_gres_node_cores_per_socket` they are written as given, with a warning, and only the node '
            "verification checks them against the node's hardware). Not the OS CPU ids `nvidia-smi topo -m` prints: "
            "those include hyperthreads and get a hint, and the order is hwloc's, not the OS's (on sub-NUMA "
            "clustering or interleaved numbering they differ): take them from `gpu_facts`' `slurm_cores` or "
            '`discover-gpus.yml`, see [cpu-topology.md](cpu-topology.md). Slurm 24.11+ drains nodes whose GPU Cores '
            'do not cover whole sockets, so prefer per-socket sets.',
        ),
        (
            '`minor`',
            'int 0-247',
            'no',
            'the `/dev/nvidiaN` number when it differs from the index (default: index); unique per node',
        ),
        (
            '`file`',
            'string',
            'no',
            "the GPU's own device file when it is not `/dev/nvidiaN` (instead of `minor`): one absolute path "
            '(letters, digits, `/ . _ + : -`), e.g. a MIG instance written as a plain `File=` line '
            "(`/dev/nvidia-caps/nvidia-cap30`) or WSL's `/dev/dxg`; written to gres.conf as it is, numbered files in "
            'a row as one range (`/dev/tty[0-3]`); unique per node; not with `mig`. The node verification checks '
            'that it is a device and does not match it against nvidia-smi. `import-config.yml` writes it where a '
            "site's gres.conf names such files",
        ),
        (
            '`shards`',
            'int >= 1',
            'no',
            "`gres/shard` count on this GPU (not with `mig`); a node's total below 2^63-1 (Slurm reads GRES counts "
            'with `strtoll`)',
        ),
        (
            '`mps`',
            'int >= 1',
            'no',
            '`gres/mps` count on this GPU (`Name=mps Count=N File=/dev/nvidiaM`; not with `mig`)',
        ),
        (
            '`links`',
            'string or list',
            'no',
            '`Links=`: connections to GPU 0, 1, ... in PCI order (`"-1,18,18,18"`: `-1` is this GPU, `0` none, `N` '
            'NVLinks); integers -2..1023 with exactly one `-1`. A GPU with links gets a gres.conf line of its own. '
            '`discover-gpus.yml` proposes it from `nvidia-smi topo -m`. Note: with AutoDetect=nvml slurmd compares '
            'it with what NVML finds, which ignores NVLinks through NVSwitches.',
        ),
        (
            '`flags`',
            'list or comma string',
            'no',
            '`Flags=`: `nvidia_gpu_env`, `amd_gpu_env`, `intel_gpu_env`, `opencl_env`, `no_gpu_env`, `CountOnly`, '
            "`one_sharing`, `all_sharing`, `explicit` (exact words). The env flags must agree across a node's GPUs, "
            'and once a GPU has them every later GPU must too (slurmd gives a line without Flags= the env flags of '
            'the line before).',
        ),
        (
            '`mig`',
            'list of GPU-instance profile names',
            'no',
            'MIG instances on this GPU, one entry per instance (`[3g.40gb, 2g.20gb, 1g.10gb]`, `1g.10gb+me`); needs '
            '`model`. Each instance is one GRES typed by its profile (`Gres=gpu:3g.40gb:1,...`). The layout is '
            "checked at render time against the model's real placement rules (see docs/mig.md); the gres.conf "
            'MultipleFiles lines are written on the node, when it is verified, from its live GI/CI ids (the GPU must '
            'already have this layout: `hpc.slurm_gres.mig_reconfigure` applies it)',
        ),
        (
            '`model`',
            'string',
            'with `mig`',
            'the GPU model for MIG checks: `A100-80GB`, `H100-80GB`, `H200-141GB`, `A30-24GB`, ... or the name '
            'nvidia-smi prints (`NVIDIA A100-SXM4-80GB`)',
        ),
        (
            '`count`',
            'int 1-248',
            'instead of `index`',
            'GPUs AutoDetect finds, without device files: `{type: a100, count: 4}` (keys `type`, `count`, `cores`, '
            '`flags`) is counted in slurm.conf (`Gres=gpu:a100:4`); with `cores` or `flags` it also renders '
            '`Name=gpu Type=a100 Count=4 Cores=...` in gres.conf (without them slurmd makes the same record from '
            "slurm.conf's count, so no line is written); only where AutoDetect is on for the node (slurmd drops GPUs "
            'without File otherwise) and not next to indexed entries on the same node (slurmd: File on all records '
            'or none)',
        ),
    ),
    'cluster': (
        (
            'variable',
            'default',
            'meaning',
        ),
        (
            '`hpc_gres_cluster_name`',
            '`cluster`',
            '`ClusterName`',
        ),
        (
            '`hpc_gres_slurm_version`',
            '`"24.11"`',
            'the Slurm release the cluster runs, `"22.05"` to `"26.05"` (`"24.11.5"` and `slurmd -V` text are read '
            "as their release), written with Slurm's two-digit month: `\"23.2\"` is refused rather than guessed. "
            'Quote it: an unquoted `24.10` would be the number 24.1. Rendering and every check '
            "follow that release's rules, see [Slurm releases](#slurm-releases). Unset, `24.11` is assumed and the "
            'render summary says so.',
        ),
        (
            '`hpc_gres_autodetect`',
            '`off`',
            '`off`, `nvml`, `nvidia` (Slurm 24.11+) or `full` (Slurm 26.05+: slurmd tries `gpu_nvml.so`, then '
            '`gpu_nvidia.so`; refused with MIG GPUs, where the gres.conf lines depend on which one it finds); a mode '
            'the `hpc_gres_slurm_version` does not have is refused. Anything but off adds `NodeName=X '
            'AutoDetect=...` to each gres.conf and keeps the explicit Type/File/Cores lines so slurmd checks them '
            'against the hardware. Quote it: a bare YAML `off` is `false` (also accepted).',
        ),
        (
            '`hpc_gres_partitions`',
            'one partition `main`, all nodes, default',
            'list of `{name, group | nodes, default, options}`; `group` is an inventory group (its slurmd hosts), '
            '`nodes` is `ALL`, a hostlist or a list of node names; `options` are extra `PartitionName=` settings '
            '(`MaxTime: INFINITE` and `State: UP` unless set)',
        ),
        (
            '`hpc_gres_slurm_conf_options`',
            'see below',
            'merged over the slurm.conf defaults, keys case-insensitive (written as Slurm spells them) and checked '
            'against the options the target Slurm release reads; `null` drops a default; lists are comma-joined, '
            'booleans become yes/no',
        ),
        (
            '`hpc_gres_cgroup_conf_options`',
            'see below',
            'the same for cgroup.conf',
        ),
        (
            '`hpc_gres_types`',
            '`[]`',
            'GRES names always listed in `GresTypes`, used by a node or not (the names in use are added anyway: gpu, '
            'shard, mps, then the others)',
        ),
        (
            '`hpc_gres_config_mode`',
            '`files`',
            'how the cluster gets its files, below: `files`, `configless` or `include`',
        ),
        (
            '`hpc_gres_include_file`',
            '`slurm_gres.conf`',
            "include mode: the file (relative to the Slurm config directory) the site's slurm.conf pulls in with "
            '`Include`',
        ),
        (
            '`hpc_gres_accounting_gpu_tres`',
            '`true`',
            'with slurmdbd, add `gres/gpu`, `gres/gpu:TYPE` per type in use, `gres/shard` and `gres/mps` to '
            '`AccountingStorageTRES` (after the entries `hpc_gres_slurm_conf_options` gives); `false` writes '
            '`AccountingStorageTRES` exactly as the options give it (or not at all). `import-config.yml` writes '
            "`false` where the site's slurm.conf lacks them, so the first deploy keeps the site's accounting",
        ),
        (
            '`hpc_gres_health`',
            '`true`',
            "install the GPU health check on every slurmd host and run it as slurm.conf's `HealthCheckProgram` "
            '(docs/health.md); the deploy also runs its readiness checks before it restarts or resumes a node',
        ),
        (
            '`hpc_gres_health_nhc`',
            '`false`',
            '`true` where LBNL NHC is the HealthCheckProgram (set `HealthCheckProgram` in '
            '`hpc_gres_slurm_conf_options`): the deploy writes an NHC check file instead',
        ),
        (
            '`hpc_gres_health_interval`',
            '`300`',
            '`HealthCheckInterval` in seconds (0 to 65535; 0: only when slurmd starts)',
        ),
        (
            '`hpc_gres_health_node_state`',
            '`ANY`',
            '`HealthCheckNodeState`: `ANY`, `ALLOC`, `IDLE`, `MIXED`, `NONDRAINED_IDLE`, with `CYCLE`, '
            'comma-separated (`START_ONLY` from Slurm 25.11)',
        ),
        (
            '`hpc_gres_health_program`',
            '`/usr/local/sbin/hpc-gres-health`',
            'where the program is installed (its library goes to `/usr/local/lib/hpc-gres`)',
        ),
        (
            '`hpc_gres_health_kernel_log`',
            '`auto`',
            'where the Xid lines are read: `auto` (the journal, else `dmesg`), `journal`, `dmesg`, `none` or a file',
        ),
        (
            '`hpc_gres_health_ack_file`',
            '`/etc/hpc-gres/xid-acknowledgements`',
            "the node's file of acknowledged Xid events (docs/health.md)",
        ),
        (
            '`hpc_gres_health_timeout`',
            '`10`',
            'seconds each command of the check may take before it is killed and reported (1 to 60)',
        ),
        (
            '`hpc_gres_boot`',
            '`true`',
            'install the GPU boot order on every node with GPUs (docs/boot.md): slurmd starts only once the driver '
            "answers, the node's MIG layout is applied and the health check passes; a node not ready is held back "
            'and drained with the reason `hpc-gres-boot: ...`, never registered with a wrong count',
        ),
        (
            '`hpc_gres_boot_mig`',
            '`collection`',
            "who applies a node's MIG layout at boot: `collection` (the boot order itself, with the MIG runbook's "
            "code), `mig-manager` (NVIDIA's `nvidia-mig-manager.service`: the deploy writes its config from the "
            'inventory and orders slurmd after it) or `none`',
        ),
        (
            '`hpc_gres_boot_timeout`',
            '`300`',
            'seconds the boot order waits for the GPUs before it holds slurmd back (0 to 86400; 0: one try)',
        ),
        (
            '`hpc_gres_boot_retry_interval`',
            '`300`',
            'seconds after a held-back boot until slurmd, and the boot order with it, is tried again (0 to 86400; 0: '
            'no retry, start slurmd by hand)',
        ),
    ),
}


def doc_table(kind):
    """The markdown table of docs/inventory.md for ``kind`` (node, gpu, cluster)."""
    head, rows = DOC_TABLES[kind][0], DOC_TABLES[kind][1:]
    lines = ["| %s |" % " | ".join(head), "|" + "---|" * len(head)]
    lines += ["| %s |" % " | ".join(row) for row in rows]
    return "\n".join(lines) + "\n"
