"""What the deploy puts on a node: PROGRAM_FILES is exactly what the program imports, the launcher, and the LBNL
NHC check file (run in bash with NHC's die and log stood in for)."""
import ast
import os
import subprocess

import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.health import program

import testpaths

ROOT = testpaths.ROOT
PREFIX = "ansible_collections.hpc.slurm_gres."


def _module_file(module):
    rel = module[len(PREFIX):].replace(".", "/")
    for candidate in (rel + ".py", rel + "/__init__.py"):
        if os.path.exists(os.path.join(ROOT, candidate)):
            return candidate
    return None


def import_closure(start):
    """Every collection file ``start`` imports, directly or not, with the __init__.py of their packages."""
    seen, todo, outside = set(), [start], set()
    while todo:
        rel = todo.pop()
        if rel in seen:
            continue
        seen.add(rel)
        directory = os.path.dirname(rel)
        while directory.startswith("plugins/module_utils"):
            init = os.path.join(directory, "__init__.py")
            if os.path.exists(os.path.join(ROOT, init)):
                todo.append(init)
            directory = os.path.dirname(directory)
        with open(os.path.join(ROOT, rel)) as handle:
            tree = ast.parse(handle.read())
        for node in ast.walk(tree):
            names = []
            if isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module:
                names = [node.module] + ["%s.%s" % (node.module, a.name) for a in node.names]
            for name in names:
                if name.startswith(PREFIX):
                    found = _module_file(name)
                    if found:
                        todo.append(found)
                else:
                    outside.add(name.split(".")[0])
    return seen, outside


def test_program_files_are_the_import_closure_of_the_programs():
    files, outside = set(), set()
    for name in sorted(program.PROGRAMS):
        more, also = import_closure("plugins/module_utils/%s.py" % program.PROGRAMS[name][0].replace(".", "/"))
        files |= more
        outside |= also
    assert sorted(program.PROGRAM_FILES) == sorted(files)
    assert list(program.PROGRAM_FILES) == sorted(program.PROGRAM_FILES)
    assert "ansible" not in outside and "ansible_collections" not in outside


def test_launcher_text():
    text = program.launcher_text("/usr/local/lib/hpc-gres", args=["--slurm", "--timeout", "5"])
    lines = text.splitlines()
    assert lines[0] == "#!/usr/bin/python3 -IS"
    assert 'sys.path.insert(0, "/usr/local/lib/hpc-gres")' in lines
    assert 'sys.exit(main(["--slurm", "--timeout", "5"] + sys.argv[1:]))' in lines
    compile(text, "hpc-gres-health", "exec")
    assert program.installed_path("/usr/local/lib/hpc-gres/", "plugins/module_utils/health/cli.py") == \
        "/usr/local/lib/hpc-gres/ansible_collections/hpc/slurm_gres/plugins/module_utils/health/cli.py"


NHC_STUBS = """
die() { echo "DIE $1: ${*:2}"; exit "$1"; }
log() { echo "LOG: $*"; }
"""


@pytest.mark.parametrize("rc, output, expected, status", [
    (0, "", "", 0),
    (1, "hpc-gres-health: xid GPU 4: Xid 119", "DIE 1: check_hpc_gres:  hpc-gres-health: xid GPU 4: Xid 119", 1),
    (1, "", "DIE 1: check_hpc_gres:  %s found the node not healthy", 1),
    (2, "hpc-gres-health: internal error: KeyError",
     "LOG: check_hpc_gres:  %s did not complete (exit status 2), node left as it is:  "
     "hpc-gres-health: internal error: KeyError", 0),
])
def test_nhc_check_dies_on_failure_and_logs_an_internal_error(tmp_path, rc, output, expected, status):
    fake = tmp_path / "hpc-gres-health"
    fake.write_text("#!/bin/sh\n[ \"$1\" = --nhc ] || exit 9\n[ -n '%s' ] && echo '%s'\nexit %d\n"
                    % (output, output, rc))
    fake.chmod(0o755)
    text, line = program.nhc_check_text(str(fake))
    assert line == "* || check_hpc_gres"
    check = tmp_path / "hpc_gres.nhc"
    check.write_text(text)
    assert subprocess.run(["bash", "-n", str(check)], check=False).returncode == 0
    proc = subprocess.run(["bash", "-c", NHC_STUBS + ". %s; check_hpc_gres; echo \"RC $?\"" % check],
                          capture_output=True, text=True, check=False)
    out = proc.stdout.strip().splitlines()
    if expected:
        assert out[0] == (expected % fake if "%s" in expected else expected)
    assert proc.returncode == status if status else out[-1] == "RC 0"
