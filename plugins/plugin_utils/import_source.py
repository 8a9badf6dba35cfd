"""Read a site's Slurm files for the import: slurm.conf with its Include files, gres.conf (one for the cluster or
one per node), cgroup.conf. Line numbers stay those of the file each line came from."""
import os
import re


_INCLUDE_RE = re.compile(r"^\s*include\s+(\S+)\s*$", re.IGNORECASE)


class SourceError(Exception):
    """A source file that cannot be read; the message names it."""


class Origin(object):
    """Maps a line of the combined slurm.conf text back to (file, line)."""

    def __init__(self):
        self.lines = []

    def where(self, lineno):
        if lineno is None or lineno < 1 or lineno > len(self.lines):
            return "slurm.conf"
        path, line = self.lines[lineno - 1]
        return "%s line %d" % (path, line)


def combine_slurm_conf(text, includes, name="slurm.conf", origin=None, depth=0):
    """slurm.conf text with each ``Include FILE`` line replaced by FILE's text (``includes``: {path as written or
    its basename: text}); returns (text, Origin). A missing include raises SourceError naming the line."""
    origin = origin or Origin()
    out = []
    for lineno, line in enumerate(text.split("\n"), 1):
        match = _INCLUDE_RE.match(line.split("#", 1)[0])
        if match and depth < 8:
            target = match.group(1)
            body = includes.get(target)
            if body is None:
                body = includes.get(os.path.basename(target))
            if body is None:
                raise SourceError("%s line %d: Include %s: the file is not in the source (put it next to slurm.conf)"
                                  % (name, lineno, target))
            sub, _unused = combine_slurm_conf(body, includes, os.path.basename(target), origin, depth + 1)
            out.append(sub)
            continue
        out.append(line)
        origin.lines.append((name, lineno))
    return "\n".join(out), origin


def include_targets(text):
    """The files a slurm.conf (or an included file) names in Include lines."""
    return [target for _unused, target in include_lines(text)]


def include_lines(text):
    """[(line number, file)] of a slurm.conf's (or an included file's) Include lines."""
    return [(n, m.group(1)) for n, m in ((n, _INCLUDE_RE.match(line.split("#", 1)[0]))
                                         for n, line in enumerate(text.split("\n"), 1)) if m]


def _read(path):
    try:
        with open(path) as handle:
            return handle.read()
    except (IOError, OSError) as exc:
        raise SourceError("%s: %s" % (path, exc.strerror or exc))


def read_source_dir(src):
    """{"slurm.conf": text, "includes": {name: text}, "cgroup.conf": text or None, "gres.conf": text or None,
    "node_gres": {node: text}} from a directory holding slurm.conf and either gres.conf or <NodeName>/gres.conf."""
    if not os.path.isdir(src):
        raise SourceError("%s: expected a directory with slurm.conf and gres.conf (or <NodeName>/gres.conf)" % src)
    slurm_path = os.path.join(src, "slurm.conf")
    if not os.path.isfile(slurm_path):
        raise SourceError("%s: no slurm.conf in the source directory" % slurm_path)
    slurm_text = _read(slurm_path)
    includes = {}
    pending = include_targets(slurm_text)
    while pending:
        target = pending.pop(0)
        if target in includes:
            continue
        # only inside SRC: an absolute path on this machine could be another cluster's file
        for candidate in (os.path.join(src, target) if not os.path.isabs(target) else None,
                          os.path.join(src, os.path.basename(target))):
            if candidate and os.path.isfile(candidate):
                includes[target] = _read(candidate)
                pending.extend(include_targets(includes[target]))
                break
    gres_path = os.path.join(src, "gres.conf")
    node_gres = {}
    for entry in sorted(os.listdir(src)):
        path = os.path.join(src, entry, "gres.conf")
        if os.path.isdir(os.path.join(src, entry)) and os.path.isfile(path):
            node_gres[entry] = _read(path)
    if os.path.isfile(gres_path) and node_gres:
        raise SourceError("%s: both a cluster-wide gres.conf and per-node <NodeName>/gres.conf files (%s); keep one "
                          "form" % (src, ", ".join(sorted(node_gres))))
    cgroup_path = os.path.join(src, "cgroup.conf")
    return {
        "slurm.conf": slurm_text,
        "includes": includes,
        "cgroup.conf": _read(cgroup_path) if os.path.isfile(cgroup_path) else None,
        "gres.conf": _read(gres_path) if os.path.isfile(gres_path) else None,
        "node_gres": node_gres,
    }


def source_from_texts(texts):
    """The read_source_dir shape from texts gathered live (``slurm_conf``, ``includes``, ``cgroup_conf``,
    ``gres_conf``, ``node_gres``)."""
    if not isinstance(texts, dict) or not isinstance(texts.get("slurm_conf"), str):
        raise SourceError("sources: expected the slurm.conf text in sources.slurm_conf")
    read = texts.get("node_gres") or {}
    source = {
        "slurm.conf": str(texts["slurm_conf"]),
        "includes": {str(k): str(v) for k, v in (texts.get("includes") or {}).items()},
        "cgroup.conf": texts.get("cgroup_conf"),
        "gres.conf": texts.get("gres_conf"),
        "node_gres": {str(k): str(v) for k, v in read.items() if v is not None},
    }
    if texts.get("gres_conf") is None:
        # live, one gres.conf per node: the nodes that were read (a node without the file has none)
        source["read_nodes"] = sorted(str(k) for k in read)
    return source


def write_new_files(dest, files, check=False, mode=0o644):
    """Write {relative path: text} under dest, never over an existing file: when any exists, write nothing and
    raise SourceError naming them. Returns the written paths (in check mode, the ones that would be)."""
    targets = {}
    for rel in sorted(files):
        if os.path.isabs(rel) or ".." in rel.split("/"):
            raise SourceError("refusing to write %r outside %s" % (rel, dest))
        targets[rel] = os.path.join(dest, rel)
    existing = [rel for rel, path in targets.items() if os.path.lexists(path)]
    if existing:
        raise SourceError("nothing written: %s already holds %s (the import never overwrites; choose a new "
                          "directory or move them away)" % (dest, ", ".join(existing)))
    if check:
        return sorted(targets)
    written = []
    for rel, path in targets.items():
        parent = os.path.dirname(path)
        if parent and not os.path.isdir(parent):
            os.makedirs(parent, 0o755)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
        with os.fdopen(fd, "w") as handle:
            handle.write(files[rel])
        written.append(rel)
    return written
