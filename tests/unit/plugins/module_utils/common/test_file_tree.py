"""config_tree: write {relative path: content} under a directory, all or nothing, only what differs."""
import json
import os
import stat
import subprocess

import pytest
import testpaths
from render_helpers import ROOT

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import TreeError, check_relpath, plan, write

pytestmark = pytest.mark.ansible_core

FILES = {"slurm.conf": "ClusterName=x\n", "cgroup.conf": "ConstrainDevices=yes\n",
         "gpu-a01/gres.conf": "Name=gpu Type=a100 File=/dev/nvidia0\n", "gpu-a02/gres.conf": "Name=gpu\n"}


def apply(dest, files, mode=0o644):
    todo = plan(str(dest), files, mode)
    if todo["changed"]:
        write(str(dest), files, todo["changed"], mode, 0o755)
    return todo


def read_tree(dest):
    out = {}
    for folder, _subdirs, names in os.walk(dest):
        for name in names:
            path = os.path.join(folder, name)
            with open(path) as handle:
                out[os.path.relpath(path, dest)] = handle.read()
    return out


def test_fresh_tree_is_written_with_modes_and_no_staging_left(tmp_path):
    dest = tmp_path / "out"
    todo = apply(dest, FILES)
    assert todo["changed"] == sorted(FILES) and todo["unchanged"] == 0
    assert read_tree(dest) == FILES
    assert stat.S_IMODE(os.stat(dest / "gpu-a01" / "gres.conf").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(dest / "gpu-a01").st_mode) == 0o755
    assert os.listdir(tmp_path) == ["out"]


def test_second_run_changes_nothing_and_keeps_files_untouched(tmp_path):
    dest = tmp_path / "out"
    apply(dest, FILES)
    before = {rel: os.stat(dest / rel).st_ino for rel in FILES}
    todo = apply(dest, FILES)
    assert todo["changed"] == [] and todo["unchanged"] == len(FILES)
    assert {rel: os.stat(dest / rel).st_ino for rel in FILES} == before


def test_only_files_whose_bytes_or_mode_differ_are_replaced(tmp_path):
    dest = tmp_path / "out"
    apply(dest, FILES)
    (dest / "unrelated.txt").write_text("keep me")
    inode = os.stat(dest / "cgroup.conf").st_ino
    os.chmod(dest / "gpu-a02" / "gres.conf", 0o600)
    changed = dict(FILES, **{"slurm.conf": "ClusterName=y\n", "gpu-a03/gres.conf": "Name=gpu\n"})
    todo = apply(dest, changed)
    assert todo["changed"] == ["gpu-a02/gres.conf", "gpu-a03/gres.conf", "slurm.conf"]
    assert todo["before"]["slurm.conf"] == "ClusterName=x\n" and todo["before"]["gpu-a03/gres.conf"] is None
    assert read_tree(dest) == dict(changed, **{"unrelated.txt": "keep me"})
    assert os.stat(dest / "cgroup.conf").st_ino == inode
    assert stat.S_IMODE(os.stat(dest / "gpu-a02" / "gres.conf").st_mode) == 0o644


def test_a_failure_while_staging_writes_nothing(tmp_path):
    dest = tmp_path / "out"
    with pytest.raises(OSError):
        apply(dest, {"slurm.conf": "x\n", "node": "a file", "node/gres.conf": "needs node to be a folder"})
    assert os.listdir(tmp_path) == []
    apply(dest, FILES)
    with pytest.raises(OSError):
        apply(dest, dict(FILES, **{"slurm.conf": "new\n", "z": "f", "z/gres.conf": "g"}))
    assert read_tree(dest) == FILES
    assert os.listdir(tmp_path) == ["out"]


@pytest.mark.parametrize("path", ["", "/etc/passwd", "../x", "a/../../b", "a//b", "./a", "a/"])
def test_paths_must_stay_inside_the_tree(path):
    with pytest.raises(TreeError):
        check_relpath(path)


def test_bad_content_and_bad_destination(tmp_path):
    with pytest.raises(TreeError, match="expected text content"):
        plan(str(tmp_path), {"a": b"bytes"}, 0o644)
    (tmp_path / "file").write_text("x")
    with pytest.raises(TreeError, match="expected a directory"):
        plan(str(tmp_path / "file"), {"a": "x"}, 0o644)
    (tmp_path / "d" / "slurm.conf").mkdir(parents=True)
    with pytest.raises(TreeError, match="not a regular file"):
        plan(str(tmp_path / "d"), {"slurm.conf": "x"}, 0o644)


def run_module(args, *flags):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"))
    cmd = [testpaths.ANSIBLE, "localhost", "-m", "hpc.slurm_gres.config_tree",
           "-a", json.dumps(args), "-o"] + list(flags)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          text=True)
    return proc.returncode, proc.stdout


def test_module_check_mode_diff_and_idempotence(tmp_path):
    dest = str(tmp_path / "tree")
    rc, out = run_module({"dest": dest, "files": FILES}, "--check", "--diff")
    assert rc == 0, out
    assert "CHANGED" in out and not os.path.exists(dest)
    rc, out = run_module({"dest": dest, "files": FILES})
    assert rc == 0 and '"changed": true' in out, out
    assert read_tree(dest) == FILES
    rc, out = run_module({"dest": dest, "files": FILES})
    assert rc == 0 and '"changed": false' in out and '"unchanged": 4' in out, out
    rc, out = run_module({"dest": dest, "files": {"../escape": "x"}})
    assert rc != 0 and "nothing was written" in out, out


def test_replaced_files_are_kept_as_backups_and_ownership_counts(tmp_path):
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import apply_tree
    dest = tmp_path / "etc"
    first = apply_tree(str(dest), {"slurm.conf": "a\n", "gres.conf": "g\n"}, "0644", "0755", backup=True)
    assert first["changed"] and first["backups"] == {}
    result = apply_tree(str(dest), {"slurm.conf": "b\n", "gres.conf": "g\n"}, "0644", "0755", backup=True,
                        owner="root", group="root")
    assert result["written"] == ["slurm.conf"] or os.geteuid() != 0
    if os.geteuid() == 0:
        backup = result["backups"]["slurm.conf"]
        assert backup.startswith(str(dest / "slurm.conf") + ".") and backup.endswith("~")
        assert open(backup).read() == "a\n" and (dest / "slurm.conf").read_text() == "b\n"
        os.chown(dest / "gres.conf", 1, 1)
        again = apply_tree(str(dest), {"slurm.conf": "b\n", "gres.conf": "g\n"}, "0644", "0755", owner="root",
                           group="0")
        assert again["written"] == ["gres.conf"] and os.stat(dest / "gres.conf").st_uid == 0
    with pytest.raises(TreeError, match="owner: expected an owner known on this host, found 'no-such-user-x'"):
        apply_tree(str(dest), {"slurm.conf": "b\n"}, "0644", "0755", owner="no-such-user-x")


def test_attributes_of_an_installed_file_and_whether_they_are_the_wanted_ones(tmp_path):
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import (
        attributes_match, file_attributes)
    path = tmp_path / "slurm.conf"
    path.write_text("ClusterName=x\n")
    os.chmod(path, 0o640)
    attrs = file_attributes(os.stat(path))
    assert attrs["mode"] == "0640" and attrs["uid"] == os.getuid() and attrs["gid"] == os.getgid()
    assert attrs["owner"] and attrs["group"]
    assert attributes_match(attrs, "0640", attrs["owner"], attrs["group"])
    assert attributes_match(attrs, 0o640, str(os.getuid()), os.getgid())
    assert attributes_match(attrs, "0640")
    assert not attributes_match(attrs, "0644", attrs["owner"], attrs["group"])
    assert not attributes_match(attrs, "0640", "nosuchowner")
    assert not attributes_match(attrs, "0640", None, os.getgid() + 1)
    # what cannot be compared here is left to config_tree on the node
    assert not attributes_match(attrs, "u=rw,g=r")
    assert not attributes_match(None, "0640")


def test_the_render_directory_loses_the_files_the_render_no_longer_writes_and_keeps_every_other(tmp_path):
    """apply_owned_tree: the manifest says which files are the render's; a dropped node's gres.conf goes (with its
    folder when that is left empty), an admin's file stays, check mode and diff mode show the removal only."""
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import MANIFEST, apply_owned_tree

    dest = tmp_path / "out"
    first = apply_owned_tree(str(dest), FILES, "0644", "0755")
    assert first["written"] == sorted(FILES) and first["removed"] == [] and first["files"] == len(FILES)
    listed = [line for line in (dest / MANIFEST).read_text().splitlines() if not line.startswith("#")]
    assert listed == sorted(FILES)
    (dest / "site-notes.txt").write_text("the admin's\n")
    (dest / "gpu-a02" / "rack.txt").write_text("the admin's too\n")
    fewer = {k: v for k, v in FILES.items() if not k.startswith("gpu-a0")}
    preview = apply_owned_tree(str(dest), fewer, "0644", "0755", check_mode=True, diff=True)
    assert preview["removed"] == ["gpu-a01/gres.conf", "gpu-a02/gres.conf"] and preview["changed"]
    assert preview["written"] == [] and preview["unchanged"] == 2
    assert [(d["before_header"].rsplit("/", 2)[-2:], d["after_header"], d["after"]) for d in preview["diff"]] == [
        (["gpu-a01", "gres.conf"], "(removed)", ""), (["gpu-a02", "gres.conf"], "(removed)", "")]
    assert read_tree(dest)["gpu-a01/gres.conf"] == FILES["gpu-a01/gres.conf"]  # check mode removed nothing
    done = apply_owned_tree(str(dest), fewer, "0644", "0755")
    assert done["removed"] == ["gpu-a01/gres.conf", "gpu-a02/gres.conf"]
    tree = read_tree(dest)
    assert sorted(tree) == sorted([MANIFEST, "cgroup.conf", "gpu-a02/rack.txt", "site-notes.txt", "slurm.conf"])
    assert not (dest / "gpu-a01").exists()
    again = apply_owned_tree(str(dest), fewer, "0644", "0755")
    assert (again["changed"], again["written"], again["unchanged"], again["removed"]) == (False, [], 2, [])


def test_a_removal_never_leaves_the_tree_and_a_bad_manifest_writes_nothing(tmp_path):
    from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.file_tree import MANIFEST, apply_owned_tree

    dest = tmp_path / "out"
    apply_owned_tree(str(dest), FILES, "0644", "0755")
    # an admin replaced a node folder by a link to elsewhere: what lies behind it is not the render's
    elsewhere = tmp_path / "etc-slurm"
    elsewhere.mkdir()
    (elsewhere / "gres.conf").write_text("live\n")
    for rel in ("gpu-a01/gres.conf",):
        os.remove(dest / rel)
    os.rmdir(dest / "gpu-a01")
    os.symlink(elsewhere, dest / "gpu-a01")
    result = apply_owned_tree(str(dest), {"slurm.conf": "x\n"}, "0644", "0755")
    assert "gpu-a01/gres.conf" not in result["removed"] and (elsewhere / "gres.conf").read_text() == "live\n"
    (dest / MANIFEST).write_text("slurm.conf\n../../etc/passwd\n")
    with pytest.raises(TreeError, match=r"\.hpc_gres_render_files line 2: file name '\.\./\.\./etc/passwd'"):
        apply_owned_tree(str(dest), {"slurm.conf": "y\n"}, "0644", "0755")
    assert (dest / "slurm.conf").read_text() == "x\n"
    with pytest.raises(TreeError, match="the name of the render's own list"):
        apply_owned_tree(str(dest), {MANIFEST: "x\n"}, "0644", "0755")
