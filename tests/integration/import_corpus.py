"""Judge the import on real cluster configs with the real slurmd (used by test_import_corpus.py and
scripts/import-corpus-report.py).

A case is a directory of tests/fixtures/slurm/import/{dev,heldout}/ holding a site's slurm.conf and gres.conf
(each file starts with its ``# source:`` line). Per case:

* accepted: the real ``slurmd -N NODE -G`` starts on the original files for every GRES node (no fatal);
  cases it refuses are not counted;
* the import runs (``import_proof.run_import``): it either refuses, naming file and line, or writes an inventory;
* round trip: the rendered files, judged by the real slurmd on the same node shapes, give every node the same
  GRES records (types, device files, counts, Cores, Links) and the rendered slurm.conf declares the same counts.
  Anything else is a silent change: the import's one forbidden outcome.
"""
import os

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


def evaluate(part, case):
    """{"case", "status": not-accepted | round-trip | refused | silent-change, "detail", "nodes", "refusals"}."""
    return evaluate_dir(os.path.join(CORPUS, part, case))


def evaluate_dir(path):
    """evaluate() for any directory holding slurm.conf and gres.conf."""
    case = os.path.basename(path.rstrip("/"))
    out = {"case": case, "status": None, "detail": "", "nodes": [], "refusals": []}
    source = read_source_dir(path)
    try:
        slurm_text, _ = combine_slurm_conf(source["slurm.conf"], source["includes"])
        conf = parse_slurm_conf(slurm_text)
    except (SourceError, ConfSyntaxError) as exc:
        conf = None
        parse_error = str(exc)
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
    try:
        done = run_import(source, ["corpus case %s" % case])
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
        elif {k.lower(): v for k, v in conf["nodes"][name]["gres"].items()} != {
                k.lower(): v for k, v in new_conf["nodes"][name]["gres"].items()}:
            diffs.append("%s: slurm.conf Gres %s, after the import %s" % (name, conf["nodes"][name]["gres"],
                                                                         new_conf["nodes"][name]["gres"]))
    if diffs:
        out.update(status="silent-change", detail=" | ".join(diffs))
    else:
        out.update(status="round-trip", detail="%d node(s) judged" % len(out["nodes"]))
    return out


def summary(results):
    accepted = [r for r in results if r["status"] != "not-accepted"]
    exact = [r for r in accepted if r["status"] == "round-trip"]
    return {"cases": len(results), "accepted": len(accepted), "round_trip": len(exact),
            "refused": sum(r["status"] == "refused" for r in accepted),
            "silent_change": sum(r["status"] == "silent-change" for r in accepted),
            "rate": (100.0 * len(exact) / len(accepted)) if accepted else 0.0}
