"""Judge the import on real cluster configs with the real slurmd (used by test_import_corpus.py and
scripts/import-corpus-report.py).

A case is a directory of tests/fixtures/slurm/import/{dev,heldout,heldout2,...,heldout8}/ holding a site's
slurm.conf and gres.conf (each file starts with its ``# source:`` line). Per case:

* accepted: the real ``slurmd -N NODE -G`` starts on the original files for every GRES node (no fatal; a
  slurm.conf that Includes a file the repository does not publish is judged as published: slurmd stops);
  cases it refuses are not counted;
* drained today: slurmd starts, but registers fewer GRES than slurm.conf declares for a node, so slurmctld drains
  that node (counted apart: the import must refuse them);
* the import runs (``import_proof.run_import``): it either refuses, naming file and line, or writes an inventory;
* round trip: the rendered files, judged by the real slurmd on the same node shapes, give every node the same
  GRES records (types, device files, counts, Cores, Links) and the rendered slurm.conf declares the same counts.
  Anything else is a silent change: the import's one forbidden outcome.
"""
import os
import re

import slurmd_oracle

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import (
    ConfSyntaxError,
    parse_slurm_conf,
)
from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.slurmd_gres import gres_conf_lines, line_applies
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_proof import run_import
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.import_source import (
    SourceError,
    combine_slurm_conf,
    read_source_dir,
)
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.importer import ImportRefused

import testpaths

CORPUS = os.path.join(testpaths.FIXTURES, "slurm", "import")
DOCS = os.path.join(testpaths.FIXTURES, "slurm", "docs")
DEFAULT_SHAPE = (2, 32, 2)


def judge_release():
    """"22.05": the Slurm release of the judging slurmd. The import is told it, as an admin tells it the release
    the cluster runs (-e hpc_gres_import_slurm_version), so the files are rendered for the release that judges
    them."""
    release = slurmd_oracle.slurmd_release()
    assert release, "no slurmd to judge with"
    return release


def parts():
    """The corpus parts (dev, heldout, heldout2, ...): every directory of CORPUS."""
    return sorted(d for d in os.listdir(CORPUS) if os.path.isdir(os.path.join(CORPUS, d)))


def cases(part):
    base = os.path.join(CORPUS, part)
    return sorted(d for d in os.listdir(base) if os.path.isdir(os.path.join(base, d)))


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def node_shape(node):
    """HWLOC shape of a slurm.conf node: its layout, else CPUs cores on one socket, else a 2x32x2 node."""
    sockets = _int(node.get("sockets")) or _int(node.get("socketsperboard"))
    cores = _int(node.get("corespersocket"))
    threads = _int(node.get("threadspercore")) or 1
    if sockets and cores:
        return (sockets * (_int(node.get("boards")) or 1), cores, threads)
    cpus = _int(node.get("cpus")) or _int(node.get("procs"))
    if cpus:
        return (1, cpus, 1)
    return DEFAULT_SHAPE


def gres_nodes(source, conf):
    """One representative node per distinct (Gres=, applying gres.conf lines, shape): the nodes worth judging."""
    picked = {}
    for name, node in sorted(conf["nodes"].items()):
        text = source["node_gres"].get(name) if source["node_gres"] else source["gres.conf"]
        try:
            lines = tuple(rec["text"] for rec in gres_conf_lines(text or "") if line_applies(rec, name))
        except ConfSyntaxError:
            lines = ("unparseable",)
        if not node.get("gres_spec") and not lines:
            continue
        key = (node.get("gres_spec"), lines, node_shape(node), text if source["node_gres"] else None)
        picked.setdefault(key, name)
    return sorted(picked.values())


def _gres_text(source, name):
    return source["node_gres"].get(name, "") if source["node_gres"] else (source["gres.conf"] or "")


def _judge(name, slurm_text, gres_text, shape):
    return slurmd_oracle.run_slurmd_g(name, slurm_text, gres_text, *shape, other_devices=True, timeout=120)


_AUTODETECT_ON = re.compile(r"(?im)^[^#]*\bAutoDetect\s*=\s*(?!off\b)\w")


def autodetect_on(name, gres_text):
    """Whether a gres.conf line that slurmd reads for this node turns AutoDetect on (a ``NodeName=other
    AutoDetect=nvml`` line does not: slurmd reads only the lines without NodeName and those naming it)."""
    try:
        lines = [rec for rec in gres_conf_lines(gres_text or "") if line_applies(rec, name)]
    except ConfSyntaxError:
        return bool(_AUTODETECT_ON.search(gres_text or ""))
    return any((rec["autodetect"] or "off").strip().lower() != "off" for rec in lines)


def drained_today(name, declared, result, gres_text, grestypes):
    """["node: gpu:4 declared, 2 registered"] for each slurm.conf Gres= count above what the real slurmd
    registers: slurmctld drains such a node (gres count reported lower than configured), so the site's files do
    not run it today. Skipped where gres.conf turns AutoDetect on for the node (this machine has no GPU to
    detect) and for names GresTypes does not list (no daemon tracks those)."""
    if autodetect_on(name, gres_text):
        return []
    tracked = {t.strip().lower() for t in (grestypes or "").split(",")}
    out = []
    for key, count in sorted(declared.items()):
        gname, _unused, gtype = key.lower().partition(":")
        if gname not in tracked:
            continue
        found = sum(r.count for r in result.records if r.name.lower() == gname
                    and (not gtype or (r.type or "").lower() == gtype))
        if found < count:
            out.append("%s: %s:%d declared, %d registered" % (name, key, count, found))
    return out


def _slurmd_refuses_as_published(source):
    """The real slurmd's fatal on slurm.conf exactly as published (e.g. an Include of a file the repository
    lacks), or None when it starts. Judged on the first node slurm.conf names (any name when it names none:
    slurmd reads the whole file before it looks for its node)."""
    try:
        nodes = sorted(parse_slurm_conf(source["slurm.conf"])["nodes"])
    except ConfSyntaxError:
        nodes = []
    name = nodes[0] if nodes else "probe"
    try:
        result = slurmd_oracle.run_slurmd_g(name, source["slurm.conf"], _gres_text(source, name), *DEFAULT_SHAPE,
                                            other_devices=True, timeout=5)
    except slurmd_oracle.OracleSetupError as exc:
        # a missing file: slurmd retries it for 60 s, then stops (fatal: Unable to process configuration file)
        missing = re.search(r"error: (s_p_parse_file: cannot stat file [^\n]*)", str(exc))
        if missing:
            return "%s: %s" % (name, missing.group(1))
        raise
    if result.returncode != 0 or result.fatals:
        return "%s: %s" % (name, "; ".join(result.problems)[:300])
    return None


def evaluate(part, case):
    """{"case", "status": not-accepted | round-trip | refused | silent-change, "detail", "nodes", "refusals"}."""
    return evaluate_dir(os.path.join(CORPUS, part, case))


def evaluate_dir(path):
    """evaluate() for any directory holding slurm.conf and gres.conf."""
    case = os.path.basename(path.rstrip("/"))
    out = {"case": case, "status": None, "detail": "", "nodes": [], "refusals": [], "drained": []}
    source = read_source_dir(path)
    parse_error = None
    try:
        slurm_text, _unused = combine_slurm_conf(source["slurm.conf"], source["includes"])
        conf = parse_slurm_conf(slurm_text)
    except (SourceError, ConfSyntaxError) as exc:
        conf = None
        parse_error = str(exc)
        refused_by_slurmd = _slurmd_refuses_as_published(source)
        if refused_by_slurmd:
            out.update(status="not-accepted", detail=refused_by_slurmd)
            return out
    if conf is not None:
        nodes = gres_nodes(source, conf) or sorted(conf["nodes"])[:1]
        if not nodes:
            out.update(status="not-accepted", detail="slurm.conf defines no node for slurmd -N NODE to run as")
            return out
        shapes = {n: node_shape(conf["nodes"][n]) for n in nodes}
        out["nodes"] = nodes
        for name in nodes:
            before = _judge(name, slurm_text, _gres_text(source, name), shapes[name])
            if before.returncode != 0 or before.fatals:
                out.update(status="not-accepted", detail="%s: %s" % (name, "; ".join(before.problems)[:300]))
                return out
            out["drained"].extend(drained_today(name, conf["nodes"][name]["gres"], before,
                                                _gres_text(source, name), conf["options"].get("grestypes")))
    try:
        done = run_import(source, ["corpus case %s" % case], slurm_version=judge_release())
    except ImportRefused as exc:
        out.update(status="refused", detail=" | ".join(str(r) for r in exc.refusals), refusals=exc.refusals)
        return out
    if conf is None:
        out.update(status="silent-change", detail="imported although the collection's parser fails: %s" % parse_error)
        return out
    rendered = done["rendered"]
    new_conf = parse_slurm_conf(rendered["slurm.conf"])
    diffs = []
    for name in out["nodes"]:
        before = _judge(name, slurm_text, _gres_text(source, name), shapes[name])
        after = _judge(name, rendered["slurm.conf"], rendered.get("%s/gres.conf" % name, ""), shapes[name])
        if after.returncode != 0 or after.fatals:
            diffs.append("%s: slurmd stops on the rendered files: %s" % (name, after.problems))
        elif before.units() != after.units():
            diffs.append("%s: slurmd reports %s, after the import %s" % (name, before.units(), after.units()))
        elif _tracked_gres(conf, name) != _tracked_gres(new_conf, name):
            diffs.append("%s: slurm.conf Gres %s, after the import %s"
                         % (name, _tracked_gres(conf, name), _tracked_gres(new_conf, name)))
    if diffs:
        out.update(status="silent-change", detail=" | ".join(diffs))
    else:
        out.update(status="round-trip", detail="%d node(s) judged" % len(out["nodes"]))
    return out


def _tracked_gres(conf, name):
    """slurm.conf Gres= counts of a node as slurmctld keeps them: only names GresTypes lists (Slurm's
    node_conf.c gres_name_filter drops the others, logging "Invalid GRES configured on node")."""
    listed = {t.strip() for t in (conf["options"].get("grestypes") or "").split(",") if t.strip()}
    return {k.lower(): v for k, v in conf["nodes"][name]["gres"].items() if k.split(":", 1)[0] in listed}


def summary(results):
    """Totals; ``rate`` over every case slurmd starts on, ``working_rate`` over those whose nodes slurmctld
    also keeps (no node drained today for a GRES count its gres.conf does not give it)."""
    accepted = [r for r in results if r["status"] != "not-accepted"]
    exact = [r for r in accepted if r["status"] == "round-trip"]
    working = [r for r in accepted if not r.get("drained")]
    working_exact = [r for r in working if r["status"] == "round-trip"]
    return {"cases": len(results), "accepted": len(accepted), "round_trip": len(exact),
            "refused": sum(r["status"] == "refused" for r in accepted),
            "silent_change": sum(r["status"] == "silent-change" for r in accepted),
            "rate": (100.0 * len(exact) / len(accepted)) if accepted else 0.0,
            "drained": len(accepted) - len(working), "working": len(working),
            "working_round_trip": len(working_exact),
            "working_rate": (100.0 * len(working_exact) / len(working)) if working else 0.0}
