# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""TRES weights (``TRESBillingWeights=`` of a PartitionName line, ``TRESWeights=`` of a NodeName line) in a rendered
slurm.conf name only TRES that slurmctld tracks.

slurmctld reads each weight as ``TYPE[/NAME]=VALUE`` and looks the TRES up among the ones it tracks
(slurm_protocol_api.c ``_tres_weight_item``, case-insensitive); one it does not track stops it while it reads
slurm.conf: ``TRES weight 'gres:gpu' is not a configured TRES type.`` then ``fatal: failed to parse tres weights
str`` (partition_mgr.c, node_conf.c). Without slurmdbd it tracks the default TRES and the entries of
AccountingStorageTRES only (controller.c ``_init_tres``; read_config.c adds the default ones), and no GRES TRES at
all (slurmctld exits on them). With slurmdbd it tracks every TRES the database holds, which another cluster of the
same slurmdbd may have added: not judged here.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem

# read_config.h DEFAULT_ACCOUNTING_TRES (the same from 22.05 to 26.05)
DEFAULT_TRES = ("cpu", "mem", "energy", "node", "billing", "fs/disk", "vmem", "pages")
# (line's first key, the weights key) as slurm.conf(5) names them
WEIGHT_KEYS = {"partitionname": "tresbillingweights", "nodename": "tresweights"}


def _tres_key(text):
    """The (type, name) Slurm looks a TRES up by: "GRES/gpu:a100" -> ("gres", "gpu:a100"), "CPU" -> ("cpu", "")."""
    kind, _unused, name = text.strip().partition("/")
    return kind.lower(), name.lower()


def tracked_tres(accounting_tres):
    """{(type, name)} slurmctld tracks without slurmdbd: the default TRES and those of AccountingStorageTRES (as
    written in slurm.conf, or None)."""
    entries = list(DEFAULT_TRES) + [e for e in (accounting_tres or "").split(",") if e.strip()]
    return {_tres_key(e) for e in entries}


def weight_problems(conf, fallback_host, slurmdbd):
    """Problems for TRES weights of the slurm.conf ``conf`` (a writer.ConfText) that slurmctld does not track;
    none with slurmdbd (model_access.uses_slurmdbd: the database decides)."""
    if slurmdbd:
        return []
    tracked = tracked_tres(next((value for line in conf.meant for key, value, _origin in line[:1]
                                 if key.lower() == "accountingstoragetres"), None))
    problems = []
    for line in conf.meant:
        weights_key = WEIGHT_KEYS.get(line[0][0].lower())
        for key, value, origin in line[1:] if weights_key else ():
            if key.lower() != weights_key:
                continue
            unknown = [item.partition("=")[0].strip() for item in value.split(",")
                       if item.strip() and _tres_key(item.partition("=")[0]) not in tracked]
            if not unknown:
                continue
            host, field = origin or (fallback_host, "slurm.conf")
            gres = [u for u in unknown if _tres_key(u)[0] == "gres"]
            problems.append(Problem(
                host, field, "weights of TRES slurmctld tracks: without AccountingStorageType="
                "accounting_storage/slurmdbd, those of AccountingStorageTRES and %s" % ",".join(DEFAULT_TRES),
                "%s=%s naming %s (slurmctld stops: TRES weight '%s' is not a configured TRES type, then failed to "
                "parse tres weights str)" % (key, value, ", ".join(unknown), unknown[0].replace("/", ":", 1)),
                "GRES TRES need slurmdbd (AccountingStorageType=accounting_storage/slurmdbd in "
                "hpc_gres_slurm_conf_options, which also has the render account gres/gpu)" if gres else
                "add %s to AccountingStorageTRES in hpc_gres_slurm_conf_options, or leave the weight out"
                % ",".join(unknown)))
    return problems
