"""The hpc_gres_users_guide role through ansible-playbook on localhost: check and diff mode change nothing,
a run installs the guide, the templates and the banner, a second run changes nothing, and a guide rendered for
another directory is refused before anything is installed."""
import json
import os
import subprocess

import guide_clusters
import testpaths

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.render import render_all
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.users_guide import TEMPLATES, users_guide_files

ROOT = testpaths.ROOT
PLAY = """\
- hosts: localhost
  connection: local
  gather_facts: false
  roles:
    - role: hpc.slurm_gres.hpc_gres_users_guide
"""


def play(tmp_path, guide_dir, files, *args):
    (tmp_path / "play.yml").write_text(PLAY)
    extra = {"hpc_gres_users_guide_dir": guide_dir, "hpc_gres_users_guide_files": files,
             "hpc_gres_users_guide_motd": str(tmp_path / "motd.d" / "50-slurm-gpus"),
             "ansible_python_interpreter": os.path.join(ROOT, ".venv", "bin", "python")}
    (tmp_path / "extra.json").write_text(json.dumps(extra))
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(ROOT, "ansible.cfg"), ANSIBLE_NOCOLOR="1")
    cmd = [os.path.join(ROOT, ".venv", "bin", "ansible-playbook"), "-i", "localhost,", str(tmp_path / "play.yml"),
           "-e", "@%s" % (tmp_path / "extra.json")] + list(args)
    proc = subprocess.run(cmd, cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
                          check=False)
    return proc.returncode, proc.stdout


def rendered(guide_dir):
    model = guide_clusters.shards_model()
    files = render_all(model)
    files.update(users_guide_files(model, guide_dir))
    return {k: v for k, v in files.items() if k.startswith("USERS.")}


def test_check_diff_install_and_idempotence(tmp_path):
    guide_dir = str(tmp_path / "doc")
    files = rendered(guide_dir)
    rc, out = play(tmp_path, guide_dir, files, "--check", "--diff")
    assert rc == 0, out
    assert "+# GPUs on cluster inference" in out, "diff mode shows the guide"
    assert not os.path.exists(guide_dir) and not (tmp_path / "motd.d").exists(), "check mode wrote nothing"
    rc, out = play(tmp_path, guide_dir, files)
    assert rc == 0 and "failed=0" in out, out
    with open(os.path.join(guide_dir, "USERS.md")) as handle:
        assert handle.read() == files["USERS.md"]
    assert (tmp_path / "motd.d" / "50-slurm-gpus").read_text() == files["USERS.motd"]
    for name, _purpose, _key in TEMPLATES:
        path = os.path.join(guide_dir, "job-templates", name)
        assert oct(os.stat(path).st_mode & 0o777) == "0o644", name
    rc, out = play(tmp_path, guide_dir, files)
    assert rc == 0 and "changed=0" in out, out


def test_a_guide_rendered_for_another_directory_is_refused(tmp_path):
    files = rendered("/usr/local/share/doc/slurm-gpus")
    guide_dir = str(tmp_path / "elsewhere")
    rc, out = play(tmp_path, guide_dir, files)
    assert rc != 0
    assert "host localhost: hpc_gres_users_guide_dir: expected the directory the guide was rendered for" in " ".join(
        out.split())
    assert not os.path.exists(guide_dir)
