"""The import proves itself: the written inventory is rendered and compared with the site's files, per node and
GRES (type, device files, count, Cores, Links, Flags, AutoDetect, as slurmd reads both), per NodeName definition,
per slurm.conf option, partition and cgroup.conf option. Any difference refuses the import.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common import hostlist
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import GresError
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    cgroup_options,
    gres_conf_lines,
    node_definition,
    parse_slurm_conf,
    partition_definition,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.option_values import IGNORED_BESIDE
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.options import defunct
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import node_view, view_units
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.versions import (
    SUPPORTED,
    hostlist_form_problem,
    parse_version,
    release_of,
    short_month,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import import_layout, import_release
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_diff import first_deploy_changes
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import (
    IGNORED_OPTIONS,
    ImportRefused,
    Refusal,
    import_cluster,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model import build_cluster_model
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.problem_report import host_expression, merged_entries
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import CLUSTER, deferred_gres, render_all

# slurm.conf options the renderer derives; compared through the model instead of as text
DERIVED = ("clustername", "slurmctldhost", "controlmachine", "controladdr", "backupcontroller", "backupaddr",
           "grestypes", "accountingstoragetres")


def _declared(view):
    out = {}
    for context, counts in view["declared"].items():
        if counts["count"]:
            out[context] = (counts["count"], tuple((t.lower(), c) for t, c in counts["types"]), counts["no_consume"])
    return out


def _without_mig(view):
    """(the view without its MultipleFiles records, {"gpu:type": count} of those records)."""
    counts = {}
    for rec in view["records"]:
        if rec["multiple"]:
            key = "gpu:%s" % (rec["type"] or "").lower()
            counts[key] = counts.get(key, 0) + rec["count"]
    return dict(view, records=[r for r in view["records"] if not r["multiple"]]), counts


def compare(imported, files, source, deferred=None):
    """[str] differences between the site's files (as imported) and the rendered ones; empty = proven.

    ``deferred``: {node: {gres key: count}} of the MIG instances the rendered gres.conf leaves to the node
    (render.deferred_gres): on a node whose MIG lines were imported as layouts (hpc_gres_import_mig_model) the
    site's MultipleFiles records must be exactly those counts."""
    diffs = []
    deferred = deferred or {}
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
        if name in (imported.get("mig") or {}):
            before, mig = _without_mig(before)
            if mig != {k.lower(): v for k, v in deferred.get(name, {}).items()}:
                diffs.append("node %s: MIG instances %s != left to the node %s" % (name, mig, deferred.get(name)))
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
    dropped = imported.get("dropped") or {}
    old_opts = {k: v for k, v in old["options"].items() if k not in DERIVED
                and not (k in IGNORED_OPTIONS and str(v).strip() == IGNORED_OPTIONS[k][0])
                and k not in dropped.get("slurm.conf", ())}
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
    for name, keys in (dropped.get("partitions") or {}).items():
        for key in keys:
            old_parts.get(name, {}).pop(key, None)
    defaults = [n for n, p in old_parts.items() if p["default"] == "YES"]  # partition_definition: YES/NO
    for name in defaults[:-1]:  # slurmctld: the last Default=YES partition is the default
        old_parts[name]["default"] = "NO"
    new_parts = {n: partition_definition(p) for n, p in new["partitions"].items()}
    if old_parts and old_parts != new_parts:
        diffs.append("partitions %s != rendered %s" % (old_parts, new_parts))
    if _controllers(old) != _controllers(new):
        diffs.append("controllers %s != rendered %s" % (_controllers(old), _controllers(new)))
    if source.get("cgroup.conf") is not None:
        old_cg = {k: v for k, v in cgroup_options(source["cgroup.conf"]).items()
                  if k not in dropped.get("cgroup.conf", ())}
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


def _tres(conf):
    return (conf["options"].get("accountingstoragetres") or "").strip()


def where_of(imported, node, field):
    """"FILE line N" a value of the imported inventory came from (import_cluster's provenance): the field, else the
    nearest field it is part of, else the node's NodeName line, else slurm.conf. A field that names several entries
    (``hpc_gres_gpus[0-3].type``, problem_report) is where each of them came from."""
    entries = merged_entries(field)
    if entries:
        head, indexes, tail = entries
        places = []
        for index in indexes:
            place = where_of(imported, node, "%s[%d]%s" % (head, index, tail))
            if place not in places:
                places.append(place)
        return " and ".join(places)
    provenance = imported.get("provenance") or {}
    field = (field or "").lower()
    while True:
        if (node, field) in provenance:
            return provenance[(node, field)]
        if not field:
            return "slurm.conf"
        cut = max(field.rfind("."), field.rfind("["))
        field = field[:cut] if cut > 0 else ""


def _refusal(imported, problem, nodes):
    node = nodes.get(problem.host)
    hint = problem.hint
    if hint:  # the model speaks of the inventory variable; the import's admin names the release on the command line
        hint = hint.replace("set hpc_gres_slurm_version to ", "re-run with -e %s=" % import_release.VARIABLE)
    return Refusal(where_of(imported, node, problem.field), node, "%s: expected %s, found %s" % (
        problem.field, problem.expected, problem.found), hint)


def _warning(imported, nodes, text):
    """A model warning ("host H: field: ...") at the file and line the value came from."""
    if re.match(r"^host \S+: hpc_gres_gpus: expected GPU entries on the GPU nodes, found none", text):
        # the render's hint is about an inventory Ansible did not read; here the site's files have no GPU
        return ("WARNING: slurm.conf: no node declares a GPU (Gres=gpu:...), so Slurm schedules no GPU on this cluster "
                "today and the imported inventory has none; to have Slurm schedule them, add GresTypes=gpu and the "
                "nodes' Gres= (with their gres.conf lines) to the site's files and import again, or add "
                "hpc_gres_gpus to the imported inventory")
    match = re.match(r"^host (\S+): ([^:\s]+): (.*)$", text, re.S)
    if not match:
        group = re.match(r"^hosts (\S+): ([^:\s]+): (.*)$", text, re.S)
        try:
            names = [nodes.get(h, h) for h in hostlist.expand_hostlist(group.group(1))] if group else []
        except hostlist.BadHostlist:
            names = []
        if not names:
            return "WARNING: imported inventory: %s" % text
        # one warning for the hosts of one group: at their line when they share it (one NodeName line)
        wheres = set(where_of(imported, name, group.group(2)) for name in names)
        return "WARNING: %snodes %s: %s: %s" % ("%s, " % wheres.pop() if len(wheres) == 1 else "",
                                                host_expression(names), group.group(2), group.group(3))
    node = nodes.get(match.group(1))
    return "WARNING: %s%s: %s: %s" % (where_of(imported, node, match.group(2)), ", node %s" % node if node else "",
                                      match.group(2), match.group(3))


def _proof_refusal(imported, diff):
    """A proof difference as a refusal at the line it concerns ("node n1: ..." -> its NodeName line)."""
    head, _unused, _rest = diff.partition(":")
    words = head.split()
    node = words[1] if len(words) == 2 and words[0] == "node" else None
    field = ""
    if words and words[0] == "slurm.conf" and len(words) > 1:
        field = "hpc_gres_slurm_conf_options.%s" % words[1]
    elif words and words[0] == "cgroup.conf":
        field = "hpc_gres_cgroup_conf_options"
    elif words and words[0] == "partitions":
        field = "hpc_gres_partitions[0]"
    return Refusal(where_of(imported, node, field), node, "the rendered files would differ from what runs today: "
                   + diff, "an importer fault: please report it; nothing written")


def _hostlists(imported, source):
    """[(where, key, expr, whether slurmctld reads it)] of every hostlist the site's files give (NodeName, NodeAddr,
    NodeHostname, a partition's Nodes; gres.conf NodeName, which slurmd reads)."""
    out = []
    origin = imported.get("origin")
    for entry in imported["conf"]["entries"]:
        where = origin.where(entry["line"]) if origin else "slurm.conf line %d" % entry["line"]
        pairs = [(entry["key"], entry["value"])] if entry["key"].lower() == "nodename" else []
        pairs += [(k, v) for k, v in entry["options"] if k.lower() in ("nodeaddr", "nodehostname", "nodes")]
        out.extend((where, k, v, True) for k, v in pairs if v.upper() not in ("DEFAULT", "ALL"))
    texts = [("gres.conf", source.get("gres.conf"))] + [("%s/gres.conf" % n, t) for n, t in
                                                        sorted((source.get("node_gres") or {}).items())]
    for fname, text in texts:
        try:
            recs = gres_conf_lines(text or "")
        except ConfSyntaxError:
            continue
        out.extend(("%s line %d" % (fname, r["line"]), "NodeName", r["nodes"], False) for r in recs if r["nodes"])
    return out


def _site_refusals(imported, source, release):
    """[((key), Refusal)] of the site's own lines the release cannot read: hostlists with a shared suffix
    (``node[01-02]-ib``) before 23.11 (versions.hostlist_form_problem; a NodeName stops slurmctld 22.05)."""
    out = []
    for where, key, expr, slurmctld in _hostlists(imported, source):
        token = hostlist_form_problem(expr, release)
        if not token:
            continue
        why = "Slurm %s cannot read the hostlist %s; a suffix after ']' is read from Slurm 23.11" % (release, token)
        if slurmctld and key.lower() == "nodename":
            why += "; slurmctld stops: 'Unable to create NodeAddr list from %s'" % token
        out.append((("hostlist", where, key), Refusal(where, None, "%s=%s" % (key, expr), why)))
    return out


class _Attempt(object):
    """The imported inventory laid out, read back as Ansible reads it, modelled and rendered for one release."""

    def __init__(self, imported, header, release, gpu_tres=True, source=None):
        self.site = _site_refusals(imported, source or {}, release)
        self.cluster = dict(imported["cluster"], hpc_gres_slurm_version=release)
        if not gpu_tres:
            self.cluster["hpc_gres_accounting_gpu_tres"] = False
        self.files, self.groups = import_layout.layout_inventory(dict(imported, cluster=self.cluster), header)
        hostvars, inv_groups, cluster = import_layout.load_inventory_files(self.files)
        self.nodes = nodes = dict(imported.get("controller_names") or {})
        nodes.update((host, node) for node, host in imported["node_hosts"].items())
        self.model = self.rendered = None
        self.problems, self.refusals = [], []
        try:
            self.model = build_cluster_model(hostvars, inv_groups, cluster, cluster_host=CLUSTER)
            self.rendered = render_all(self.model)
        except GresError as exc:
            self.problems = exc.problems
            self.refusals = [_refusal(imported, p, nodes) for p in exc.problems]
        self.refusals = [r for _unused, r in self.site] + self.refusals


def _named_release_line(slurm_version, version_note):
    return "Slurm release %s (%s): the files are judged by its rules" % (
        release_of(slurm_version), version_note or "named with -e %s" % import_release.VARIABLE)


def _release(imported, source, header, slurm_version, version_note, attempts):
    """(the release, the report line saying how it was known or why it was assumed); ``attempts`` collects the
    _Attempt of each release tried."""
    if slurm_version is not None:
        return release_of(slurm_version), _named_release_line(slurm_version, version_note)

    def judge(release):
        attempt = attempts[release] = _Attempt(imported, header, release, source=source)
        found = [(key, "%s: %s (%s)" % (r.where, r.what, r.why.split(" (", 1)[0]), True) for key, r in attempt.site]
        for p, r in zip(attempt.problems, attempt.refusals[len(attempt.site):]):
            what = p.found if "Slurm" in p.found else "expected %s, found %s" % (p.expected, p.found)
            found.append(((p.host, p.field), "%s: %s" % (r.where, what), "Slurm" in p.expected + p.found))
        # the problems that name a release first: they are why a release does not fit
        return [(key, text) for key, text, _unused in sorted(found, key=lambda f: not f[2])]
    fits, found = import_release.releases_accepting(judge)
    chosen = import_release.choose(fits)
    return chosen, import_release.assumed_line(chosen, fits, found, version_note)


# The imported options a release reads only to log "The option ... is defunct" and ignore (read_config.c
# _defunct_option): per file, the inventory variable that holds them.
_DEFUNCT_FILES = (("slurm.conf", "hpc_gres_slurm_conf_options"), ("cgroup.conf", "hpc_gres_cgroup_conf_options"))


def _drop_defunct(imported, release):
    """Leave out of ``imported`` the options ``release`` ignores as defunct (a Debian 12 cgroup.conf's
    ``CgroupAutomount=yes`` on a cluster that runs 23.11 or later), and a slurm.conf or partition option Slurm ignores
    beside another (``DefMemPerCPU`` beside ``DefMemPerNode``), each with a note; the proof then leaves them out
    of its comparison (``imported["dropped"]``). The render refuses them in an inventory: Slurm would log an error at
    every start. Returns the notes (a refusal for another reason shows them too)."""
    dropped = imported.setdefault("dropped", {})
    notes = []
    for conf_name, variable in _DEFUNCT_FILES:
        options = imported["cluster"].get(variable) or {}
        for key in [k for k, v in options.items() if v is not None]:
            found = defunct(conf_name, key, release)
            if found is None:
                continue
            spelled, since, note = found
            where = imported["provenance"].get((None, "%s.%s" % (variable, key.lower())), conf_name)
            notes.append(
                "%s: %s=%s not imported: defunct since Slurm %s%s; Slurm %s ignores it and logs 'The option \"%s\" is "
                "defunct, please remove it from %s.', so the rendered %s leaves it out" % (
                    where, key, options[key], since, " (%s)" % note if note else "", release, spelled, conf_name,
                    conf_name))
            del options[key]
            dropped.setdefault(conf_name, set()).add(key.lower())
    options = imported["cluster"].get("hpc_gres_slurm_conf_options") or {}
    present = {k.lower(): k for k, v in options.items() if v is not None}
    for ignored, kept in IGNORED_BESIDE:
        if ignored.lower() in present and kept.lower() in present:
            key = present[ignored.lower()]
            where = imported["provenance"].get((None, "hpc_gres_slurm_conf_options.%s" % key.lower()), "slurm.conf")
            notes.append("%s: %s=%s not imported: Slurm ignores it beside %s and logs '%s ignored, since it's mutually "
                         "exclusive with %s' (read_config.c), so the rendered slurm.conf leaves it out" % (
                             where, key, options[key], kept, ignored, kept))
            del options[key]
            dropped.setdefault("slurm.conf", set()).add(key.lower())
    # a partition's pair likewise (read_config.c: its own or PartitionName=DEFAULT's PerNode wins over either PerCPU)
    for pos, part in enumerate(imported["cluster"].get("hpc_gres_partitions") or []):
        options = part.get("options") or {}
        present = {k.lower(): k for k, v in options.items() if v is not None}
        for ignored, kept in IGNORED_BESIDE:
            if ignored.lower() in present and kept.lower() in present:
                key = present[ignored.lower()]
                where = imported["provenance"].get((None, "hpc_gres_partitions[%d]" % pos), "slurm.conf")
                notes.append("%s: PartitionName=%s %s=%s not imported: Slurm ignores it beside %s and logs '%s ignored, "
                             "since it's mutually exclusive with %s' (read_config.c), so the rendered slurm.conf "
                             "leaves it out" % (where, part["name"], key, options[key], kept, ignored, kept))
                del options[key]
                dropped.setdefault("partitions", {}).setdefault(part["name"], set()).add(key.lower())
    imported["report"].extend(notes)
    return notes


def run_import(source, header, hosts=None, slurm_version=None, repairs=None, version_note=None):
    """Import, lay out, read the layout back the way Ansible does, render, compare.

    ``slurm_version``: the release the cluster runs (named by the admin, or what ``slurmctld -V`` reported; the
    note says which, ``version_note``); None: the release the files fit (import_release), said in one report line.
    ``repairs``: the admin's opt-ins (importer.REPAIRS), each listed in the report as a change.
    Returns ``{"files": {relative path: text}, "groups": {group: [hosts]}, "report": [str], "changes": [str],
    "rendered": {...}, "slurm_version": release, "release_line": str}``; raises ImportRefused with every refusal
    (or difference) found, each naming the file and line it concerns.
    """
    named = release = None
    if slurm_version is not None:
        # judged first and alone: files judged by a release the admin did not name would refuse for its reasons
        named = version_note or "-e %s=%s" % (import_release.VARIABLE, slurm_version)
        short = short_month(str(slurm_version))
        try:
            release = None if short else release_of(slurm_version)
        except ValueError:
            release = None
        if release not in SUPPORTED:
            hint = "name the release slurmctld -V prints (slurm 24.11.5 is 24.11)"
            if short:
                hint = "Slurm writes the month with two digits: %s if that is the release slurmctld -V prints" % short
            if release is not None and parse_version(release) < parse_version(SUPPORTED[0]):
                hint = "the collection renders for Slurm %s and later: import after the upgrade" % SUPPORTED[0]
            elif release is not None and parse_version(release) > parse_version(SUPPORTED[-1]):
                hint = "a release newer than this collection knows: a newer collection renders for it"
            raise ImportRefused([Refusal(named, None, "expected a Slurm release this collection knows (%s), found %r"
                                         % (", ".join(SUPPORTED), str(slurm_version)), hint)])
    try:
        imported = import_cluster(source, hosts, None, repairs, judged_release=release)
    except ImportRefused as exc:
        if named is None:
            raise
        raise ImportRefused(exc.refusals, notes=list(exc.notes) + [_named_release_line(slurm_version, version_note)])
    if named is not None:
        imported["provenance"][(None, "hpc_gres_slurm_version")] = named
    attempts = {}
    release, release_line = _release(imported, source, header, slurm_version, version_note, attempts)
    dropped = _drop_defunct(imported, release)
    if dropped:
        attempts.pop(release, None)
    attempt = attempts.get(release) or _Attempt(imported, header, release, source=source)
    if attempt.refusals:
        raise ImportRefused(attempt.refusals, notes=[release_line] + dropped)
    report = []
    old_tres, new_tres = _tres(imported["conf"]), _tres(parse_slurm_conf(attempt.rendered["slurm.conf"]))
    if old_tres != new_tres:
        # keep the site's accounting: the collection's GPU TRES only when the admin asks for them
        attempt = _Attempt(imported, header, release, gpu_tres=False, source=source)
        if attempt.refusals:
            raise ImportRefused(attempt.refusals, notes=[release_line] + dropped)
        line = imported["provenance"].get((None, "hpc_gres_slurm_conf_options.accountingstoragetres"), "slurm.conf")
        added = [e for e in new_tres.split(",") if e.lower() not in old_tres.lower().split(",")]
        report.append("%s: AccountingStorageTRES%s kept as the site has it (hpc_gres_accounting_gpu_tres: false in "
                      "group_vars/all.yml); set it to true to have the collection account %s (the deploy then "
                      "writes AccountingStorageTRES=%s)"
                      % (line, "=" + old_tres if old_tres else " (not set)", ",".join(added), new_tres))
    deferred = deferred_gres(attempt.model)
    diffs = compare(imported, attempt.rendered, source, deferred)
    if diffs:
        raise ImportRefused([_proof_refusal(imported, d) for d in diffs], notes=[release_line] + dropped)
    report = [release_line] + list(imported["report"]) + report + [
        _warning(imported, attempt.nodes, w) for w in attempt.model.get("warnings") or ()]
    report.extend(first_deploy_changes(imported, attempt.rendered, source))
    return {"files": attempt.files, "groups": attempt.groups, "report": report, "changes": imported["changes"],
            "rendered": attempt.rendered, "slurm_version": release, "release_line": release_line}
