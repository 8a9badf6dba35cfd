"""Write a set of files under one directory, all or nothing, touching only files whose bytes or mode differ.

Files are first written to a staging directory next to the destination (same filesystem), then renamed into
place. If the destination does not exist yet, the whole staged tree is renamed in one step. A failure while
staging leaves the destination untouched. Top-level files are moved last, so a partly applied update (only
possible if a rename itself fails) never shows a new top-level file (slurm.conf) beside old node files.
"""
import grp
import os
import pwd
import shutil
import stat
import tempfile
import time


class TreeError(Exception):
    """Bad input or a filesystem error; nothing under the destination was changed when raised from plan/stage."""


def check_relpath(path):
    """Return ``path`` normalized, or raise TreeError if it is absolute, empty or leaves the tree."""
    if not isinstance(path, str) or not path or "\x00" in path:
        raise TreeError("file name %r: expected a non-empty relative path" % (path,))
    if os.path.isabs(path):
        raise TreeError("file name %r: expected a relative path, found an absolute one" % path)
    parts = path.split("/")
    if any(p in ("", ".", "..") for p in parts):
        raise TreeError("file name %r: expected a relative path without empty, '.' or '..' parts" % path)
    return path


def owner_ids(owner=None, group=None):
    """``(uid or None, gid or None)`` for user and group names (or numbers); TreeError for unknown ones."""
    ids = []
    for name, lookup, what in ((owner, pwd.getpwnam, "an owner"), (group, grp.getgrnam, "a group")):
        if name is None or name == "":
            ids.append(None)
        elif isinstance(name, int) or str(name).isdigit():
            ids.append(int(name))
        else:
            try:
                ids.append(lookup(str(name))[2])
            except KeyError:
                raise TreeError("%s: expected %s known on this host, found %r" % (what.split()[1], what, name))
    return tuple(ids)


def plan(dest, files, mode, uid=None, gid=None):
    """Which files need writing: {"changed": [relpath], "unchanged": int, "before": {relpath: old text or None}}.

    A file needs writing when it is missing, or its bytes, mode, or (when given) owner uid or group gid differ.
    """
    if os.path.exists(dest) and not os.path.isdir(dest):
        raise TreeError("dest %s: expected a directory, found a file" % dest)
    changed = []
    before = {}
    unchanged = 0
    for rel in sorted(files):
        check_relpath(rel)
        content = files[rel]
        if not isinstance(content, str):
            raise TreeError("file %s: expected text content, found %s" % (rel, type(content).__name__))
        target = os.path.join(dest, rel)
        try:
            st = os.lstat(target)
        except FileNotFoundError:
            changed.append(rel)
            before[rel] = None
            continue
        except NotADirectoryError:
            raise TreeError("file %s: a parent of %s is not a directory" % (rel, target))
        if not stat.S_ISREG(st.st_mode):
            raise TreeError("file %s: %s exists and is not a regular file" % (rel, target))
        with open(target, "rb") as handle:
            old = handle.read()
        if (old != content.encode("utf-8") or stat.S_IMODE(st.st_mode) != mode
                or (uid is not None and st.st_uid != uid) or (gid is not None and st.st_gid != gid)):
            changed.append(rel)
            before[rel] = old.decode("utf-8", "replace")
        else:
            unchanged += 1
    return {"changed": changed, "unchanged": unchanged, "before": before}


def file_attributes(st):
    """What an installed file's ownership and permissions are, as config_tree (state read) reports them."""
    attrs = {"mode": "%04o" % stat.S_IMODE(st.st_mode), "uid": st.st_uid, "gid": st.st_gid, "owner": None,
             "group": None}
    try:
        attrs["owner"] = pwd.getpwuid(st.st_uid)[0]
    except KeyError:
        pass
    try:
        attrs["group"] = grp.getgrgid(st.st_gid)[0]
    except KeyError:
        pass
    return attrs


def attributes_match(attrs, mode, owner=None, group=None):
    """Whether ``file_attributes`` of a file show ``mode`` and (when given) ``owner``/``group`` (names or ids).

    False when they differ or cannot be compared here (no attributes, a mode that is not octal): the file is then
    written by config_tree, which decides on the node.
    """
    if not attrs:
        return False
    try:
        if int(attrs["mode"], 8) != parse_mode(mode, "mode"):
            return False
    except (TreeError, ValueError, TypeError, KeyError):
        return False
    for wanted, name_key, id_key in ((owner, "owner", "uid"), (group, "group", "gid")):
        if wanted is None or wanted == "":
            continue
        if isinstance(wanted, int) or str(wanted).isdigit():
            if attrs.get(id_key) != int(wanted):
                return False
        elif attrs.get(name_key) != str(wanted):
            return False
    return True


def read_tree(dirs, names, max_size=4 * 1024 * 1024):
    """Read each of ``names`` (plain file names) in each directory of ``dirs`` ({label: directory}).

    ``{"contents": {label: {name: text or None}}, "present": {label: count}, "attributes": {label: {name:
    file_attributes or None}}}``, None for a file that does not exist. TreeError for a name with a slash, a file
    larger than ``max_size`` bytes or one that cannot be read as UTF-8 text.
    """
    out = {"contents": {}, "present": {}, "attributes": {}}
    for label, directory in sorted(dirs.items()):
        contents, attributes = out["contents"].setdefault(label, {}), out["attributes"].setdefault(label, {})
        out["present"][label] = 0
        for name in names:
            if not isinstance(name, str) or "/" in name or name in ("", ".", ".."):
                raise TreeError("names: %r is not a plain file name" % (name,))
            path = os.path.join(str(directory), name)
            try:
                st = os.stat(path)
                if st.st_size > max_size:
                    raise TreeError("%s is larger than %d bytes" % (path, max_size))
                with open(path, "rb") as handle:
                    contents[name] = handle.read().decode("utf-8")
                attributes[name] = file_attributes(st)
                out["present"][label] += 1
            except FileNotFoundError:
                contents[name] = attributes[name] = None
            except (OSError, UnicodeError) as exc:
                raise TreeError("cannot read %s: %s" % (path, exc))
    return out


def backup_name(path):
    """``FILE.<pid>.<date>@<time>~``, the name Ansible's ``backup: true`` gives a replaced file."""
    return "%s.%s.%s" % (path, os.getpid(), time.strftime("%Y-%m-%d@%H:%M:%S~"))


def _make_folders(folder, made, mode):
    """Create ``folder`` and its missing parents inside the staging tree with ``mode``."""
    if folder in made:
        return
    _make_folders(os.path.dirname(folder), made, mode)
    if not os.path.isdir(folder):
        os.mkdir(folder, mode)
    made.add(folder)


def write(dest, files, changed, mode, directory_mode, uid=None, gid=None, backup=False):
    """Stage ``changed`` files next to ``dest`` and move them into place; returns ``{relpath: backup path}``.

    With ``backup``, a file that is replaced is first hard-linked (copied where links fail) to ``backup_name``.
    """
    backups = {}
    dest = os.path.abspath(dest)
    parent = os.path.dirname(dest)
    os.makedirs(parent, exist_ok=True)
    stage = tempfile.mkdtemp(prefix=".%s.stage-" % os.path.basename(dest), dir=parent)
    # created with their final modes (umask 0 while staging): no chmod per file or folder
    umask = os.umask(0)
    try:
        os.chmod(stage, directory_mode)
        made = {stage}
        for rel in changed:
            path = os.path.join(stage, rel)
            _make_folders(os.path.dirname(path), made, directory_mode)
            handle = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, mode)
            try:
                os.write(handle, files[rel].encode("utf-8"))
                if uid is not None or gid is not None:
                    os.fchown(handle, -1 if uid is None else uid, -1 if gid is None else gid)
            finally:
                os.close(handle)
    except BaseException:
        os.umask(umask)
        shutil.rmtree(stage, ignore_errors=True)
        raise
    os.umask(umask)
    try:
        if not os.path.exists(dest):
            os.rename(stage, dest)
            stage = None
            return backups
        # Deeper paths first, top-level files (slurm.conf, cgroup.conf) last.
        for rel in sorted(changed, key=lambda r: (-r.count("/"), r)):
            target = os.path.join(dest, rel)
            folder = os.path.dirname(target)
            if not os.path.isdir(folder):
                os.makedirs(folder, mode=directory_mode, exist_ok=True)
            if backup and os.path.lexists(target):
                backups[rel] = backup_name(target)
                try:
                    os.link(target, backups[rel])
                except OSError:
                    shutil.copy2(target, backups[rel])
            os.replace(os.path.join(stage, rel), target)
        return backups
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)


def parse_mode(value, name):
    """An octal permission from ``0644``, ``"0644"`` or 420; TreeError naming ``name`` otherwise."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str) and value.isdigit():
        return int(value, 8)
    raise TreeError("%s: expected an octal mode such as '0644', found %r" % (name, value))


def apply_tree(dest, files, mode, directory_mode, check_mode=False, diff=False, owner=None, group=None,
               backup=False, absent=()):
    """Plan, then (unless ``check_mode``) write, then remove the files of ``absent`` that exist; the result a task
    reports.

    ``{"changed", "dest", "files", "written": [rel], "unchanged": n, "backups": {rel: path}, "removed": [rel]}``
    plus ``diff`` (before/after of each changed file) when asked. Raises TreeError (nothing written) or OSError
    (from the final renames).
    """
    dest = os.path.abspath(dest)
    mode = parse_mode(mode, "mode")
    directory_mode = parse_mode(directory_mode, "directory_mode")
    uid, gid = owner_ids(owner, group)
    try:
        todo = plan(dest, files, mode, uid, gid)
    except OSError as exc:
        raise TreeError(str(exc))
    result = dict(changed=bool(todo["changed"]), dest=dest, files=len(files), written=todo["changed"],
                  unchanged=todo["unchanged"], backups={})
    if diff and todo["changed"]:
        result["diff"] = [dict(before_header=os.path.join(dest, rel), after_header=os.path.join(dest, rel),
                               before=todo["before"][rel] or "", after=files[rel]) for rel in todo["changed"]]
    gone = []
    for rel in absent or ():
        check_relpath(rel)
        if rel in files:
            raise TreeError("file %s: expected in files or in absent, found in both" % rel)
        if os.path.lexists(os.path.join(dest, rel)):
            gone.append(rel)
    result["removed"] = gone
    result["changed"] = result["changed"] or bool(gone)
    if diff and gone:
        result.setdefault("diff", []).extend(
            dict(before_header=os.path.join(dest, rel), after_header="(removed)", before=_read_text(dest, rel),
                 after="") for rel in gone)
    if todo["changed"] and not check_mode:
        result["backups"] = write(dest, files, todo["changed"], mode, directory_mode, uid, gid, backup)
    if gone and not check_mode:
        for rel in gone:
            os.remove(os.path.join(dest, rel))
    return result


def _read_text(dest, rel):
    try:
        with open(os.path.join(dest, rel), "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except OSError:
        return ""


# The render directory's record of what the render wrote there (hpc.slurm_gres.gres_render with dest): one relative
# path a line. Only the files it lists are ever removed; everything else in the directory is the admin's.
MANIFEST = ".hpc_gres_render_files"
MANIFEST_HEADER = ("# The files hpc.slurm_gres's render wrote in this directory, one a line. The next render removes\n"
                   "# those it no longer writes (a node taken out of the inventory) and leaves every other file alone.\n")


def read_manifest(dest, name=MANIFEST):
    """The relative paths a manifest lists (none when there is no manifest); TreeError for a manifest that is not
    one (a line that is no relative path inside the tree, a file that is not text)."""
    path = os.path.join(dest, name)
    try:
        with open(path, "rb") as handle:
            text = handle.read().decode("utf-8")
    except FileNotFoundError:
        return []
    except (OSError, UnicodeError) as exc:
        raise TreeError("%s: expected the render's list of its files, cannot read it: %s" % (path, exc))
    listed = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip() or line.startswith("#"):
            continue
        try:
            listed.append(check_relpath(line))
        except TreeError as exc:
            raise TreeError("%s line %d: %s (remove the line, or the file to keep every old file)"
                            % (path, number, exc))
    return listed


def manifest_text(files):
    return MANIFEST_HEADER + "".join("%s\n" % rel for rel in sorted(files))


def _inside(dest, rel):
    """Whether ``dest/rel`` is a regular file reached through real directories only (no symbolic link on the way
    can lead a removal out of the tree)."""
    folder = dest
    for part in rel.split("/")[:-1]:
        folder = os.path.join(folder, part)
        try:
            if not stat.S_ISDIR(os.lstat(folder).st_mode):
                return False
        except OSError:
            return False
    try:
        return stat.S_ISREG(os.lstat(os.path.join(dest, rel)).st_mode)
    except OSError:
        return False


def apply_owned_tree(dest, files, mode, directory_mode, check_mode=False, diff=False, manifest=MANIFEST):
    """``apply_tree`` for a directory this tree owns only in part: the files the manifest lists that ``files`` no
    longer holds are removed (with the folders they leave empty), every other file is left alone, and the manifest
    then lists ``files``. The result has the keys of ``apply_tree``, counting the rendered files only."""
    dest = os.path.abspath(dest)
    if manifest in files:
        raise TreeError("file %s: the name of the render's own list of files" % manifest)
    owned = read_manifest(dest, manifest) if os.path.isdir(dest) else []
    absent = sorted(rel for rel in set(owned) - set(files) if _inside(dest, rel))
    result = apply_tree(dest, dict(files, **{manifest: manifest_text(files)}), mode, directory_mode,
                        check_mode=check_mode, diff=diff, absent=absent)
    if manifest in result["written"]:
        result["written"] = [rel for rel in result["written"] if rel != manifest]
        result["diff"] = [d for d in result.get("diff") or () if not d["before_header"].endswith("/" + manifest)]
        if not result["diff"]:
            result.pop("diff")
    else:
        result["unchanged"] -= 1
    result["files"] -= 1
    if not check_mode:
        for rel in result["removed"]:
            _remove_empty_folders(dest, rel)
    return result


def _remove_empty_folders(dest, rel):
    folder = os.path.dirname(rel)
    while folder:
        try:
            os.rmdir(os.path.join(dest, folder))
        except OSError:  # not empty (an admin's file), or gone already
            return
        folder = os.path.dirname(folder)
