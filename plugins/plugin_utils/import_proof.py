"""The import proves itself: the written inventory is rendered and compared with the site's files, per node and
GRES (type, device files, count, Cores, Links, Flags, AutoDetect, as slurmd reads both), per NodeName definition,
per slurm.conf option, partition and cgroup.conf option. Any difference refuses the import.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    cgroup_options,
    node_definition,
    parse_slurm_conf,
    partition_definition,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_units
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import import_layout
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import (
    IGNORED_OPTIONS,
    ImportRefused,
    Refusal,
    import_cluster,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all

# slurm.conf options the renderer derives; compared through the model instead of as text
DERIVED = ("clustername", "slurmctldhost", "controlmachine", "controladdr", "backupcontroller", "backupaddr",
           "grestypes", "accountingstoragetres")


def _declared(view):
    out = {}
    for context, counts in view["declared"].items():
        if counts["count"]:
            out[context] = (counts["count"], tuple((t.lower(), c) for t, c in counts["types"]), counts["no_consume"])
    return out


def compare(imported, files, source):
    """[str] differences between the site's files (as imported) and the rendered ones; empty = proven."""
    diffs = []
    old = imported["conf"]
    new = parse_slurm_conf(files["slurm.conf"])
    for name in sorted(old["nodes"]):
        if name not in new["nodes"]:
            diffs.append("node %s: missing from the rendered slurm.conf" % name)
            continue
        old_def = node_definition(old["nodes"][name], old["options"].get("grestypes"))
        new_def = node_definition(new["nodes"][name], new["options"].get("grestypes"))
        if old_def != new_def:
            diffs.append("node %s: NodeName %s != rendered %s" % (name, old_def, new_def))
        before = imported["views"][name]
        after = node_view(new, files.get("%s/gres.conf" % name), name)
        if after["fatal"]:
            diffs.append("node %s: slurmd would stop on the rendered files: %s" % (name, after["fatal"]))
            continue
        if view_units(before) != view_units(after):
            diffs.append("node %s: GRES %s != rendered %s" % (name, view_units(before), view_units(after)))
        if _declared(before) != _declared(after):
            diffs.append("node %s: slurm.conf Gres %s != rendered %s" % (name, _declared(before), _declared(after)))
        if before["autodetect"] != after["autodetect"] and before["declared"].get("gpu", {}).get("count"):
            diffs.append("node %s: AutoDetect %s != rendered %s" % (name, before["autodetect"], after["autodetect"]))
        warnings = [m["text"] for m in after["messages"] if m["level"] in ("error", "warning", "fatal")]
        if warnings:
            diffs.append("node %s: slurmd would log on the rendered files: %s" % (name, "; ".join(warnings)))
    extra = sorted(set(new["nodes"]) - set(old["nodes"]))
    if extra:
        diffs.append("rendered slurm.conf has nodes the site's has not: %s" % ", ".join(extra))
    old_opts = {k: v for k, v in old["options"].items() if k not in DERIVED
                and not (k in IGNORED_OPTIONS and str(v).strip() == IGNORED_OPTIONS[k][0])}
    new_opts = {k: v for k, v in new["options"].items() if k not in DERIVED}
    for key in sorted(set(old_opts) | set(new_opts)):
        if old_opts.get(key) != new_opts.get(key):
            diffs.append("slurm.conf %s: %r != rendered %r" % (key, old_opts.get(key), new_opts.get(key)))
    for key in ("clustername",):
        if old["options"].get(key) != new["options"].get(key):
            diffs.append("slurm.conf ClusterName %r != rendered %r" % (old["options"].get(key),
                                                                       new["options"].get(key)))
    old_types = set(filter(None, (old["options"].get("grestypes") or "").split(",")))
    new_types = set(filter(None, (new["options"].get("grestypes") or "").split(",")))
    if old_types != new_types:
        diffs.append("GresTypes %s != rendered %s" % (",".join(sorted(old_types)), ",".join(sorted(new_types))))
    old_parts = {n: partition_definition(p) for n, p in old["partitions"].items()}
    defaults = [n for n, p in old_parts.items() if p["default"] == "YES"]  # partition_definition: YES/NO
    for name in defaults[:-1]:  # slurmctld: the last Default=YES partition is the default
        old_parts[name]["default"] = "NO"
    new_parts = {n: partition_definition(p) for n, p in new["partitions"].items()}
    if old_parts and old_parts != new_parts:
        diffs.append("partitions %s != rendered %s" % (old_parts, new_parts))
    if _controllers(old) != _controllers(new):
        diffs.append("controllers %s != rendered %s" % (_controllers(old), _controllers(new)))
    if source.get("cgroup.conf") is not None:
        old_cg = cgroup_options(source["cgroup.conf"])
        new_cg = cgroup_options(files["cgroup.conf"])
        if old_cg != new_cg:
            diffs.append("cgroup.conf %s != rendered %s" % (old_cg, new_cg))
    return diffs


def _controllers(conf):
    """[(name, address)] as slurmctld reads SlurmctldHost=name(addr) or ControlMachine/ControlAddr (and Backup*)."""
    out = []
    for value in conf["controllers"]:
        name, _unused, addr = value.partition("(")
        out.append((name, addr.rstrip(")") or name))
    options = conf["options"]
    if "slurmctldhost" not in options:
        out = []
        for host_key, addr_key in (("controlmachine", "controladdr"), ("backupcontroller", "backupaddr")):
            if options.get(host_key):
                out.append((options[host_key], options.get(addr_key) or options[host_key]))
    return out


def tres_note(imported, files):
    """Report line when the rendered AccountingStorageTRES gains the GPU entries the collection adds."""
    old = (imported["conf"]["options"].get("accountingstoragetres") or "")
    new = (parse_slurm_conf(files["slurm.conf"])["options"].get("accountingstoragetres") or "")
    added = [e for e in new.split(",") if e and e.lower() not in {x.lower() for x in old.split(",")}]
    if added:
        return ("AccountingStorageTRES gains %s: with slurmdbd the collection accounts every GPU type it deploys"
                % ",".join(added))
    return None


def run_import(source, header, hosts=None, slurm_version=None):
    """Import, lay out, read the layout back the way Ansible does, render, compare.

    Returns ``{"files": {relative path: text}, "groups": {group: [hosts]}, "report": [str], "rendered": {...}}``;
    raises ImportRefused with every refusal (or difference) found.
    """
    imported = import_cluster(source, hosts, slurm_version)
    files, groups = import_layout.layout_inventory(imported, header)
    hostvars, inv_groups, cluster = import_layout.load_inventory_files(files)
    try:
        model = build_cluster_model(hostvars, inv_groups, cluster)
        rendered = render_all(model)
    except GresError as exc:
        raise ImportRefused([Refusal("imported inventory", p.host, "%s: expected %s, found %s" % (
            p.field, p.expected, p.found), p.hint) for p in exc.problems])
    diffs = compare(imported, rendered, source)
    if diffs:
        raise ImportRefused([Refusal("proof", None, d, "the rendered files would differ from what runs today; "
                                     "nothing written") for d in diffs])
    report = list(imported["report"]) + ["imported inventory: %s" % w for w in model.get("warnings") or ()]
    note = tres_note(imported, rendered)
    if note:
        report.append(note)
    return {"files": files, "groups": groups, "report": report, "rendered": rendered}
