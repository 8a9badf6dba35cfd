"""Derive plugins/module_utils/slurm/plugin_tables.py (the plugins each Slurm release ships, per plugin type) from
Slurm's source: the directories under ``src/plugins/<type>/`` at the last tag of every release series.

A slurm.conf that names a plugin its release does not ship (``SwitchType=switch/nvidia_imex`` before 24.05,
``ProctrackType=proctrack/cray_aries`` from 24.05, ``NodeFeaturesPlugins=node_features/knl_generic`` from 25.11)
makes the daemon that loads it log "Couldn't find the specified plugin name for ... looking at all files"
(src/common/plugin.c). The render refuses such a value (option_values.py); a name no release ships (a site's own
plugin) is not judged.

Two steps, as scripts/derive-slurm-options.py:

  # 1. from a SchedMD/slurm git checkout: list the plugin directories into fixtures
  .venv/bin/python scripts/derive-slurm-plugins.py extract --repo /path/to/slurm --fixtures tests/fixtures/slurm-source
  # 2. from the fixtures: write (or --check) the module
  .venv/bin/python scripts/derive-slurm-plugins.py generate --fixtures tests/fixtures/slurm-source \
      --output plugins/module_utils/slurm/plugin_tables.py

tests/unit/plugins/module_utils/slurm/test_option_values.py runs step 2 with --check semantics.
"""
import argparse
import os
import re
import subprocess
import sys
import textwrap

SERIES = ("22.05", "23.02", "23.11", "24.05", "24.11", "25.05", "25.11", "26.05")
# Older series, read only for the names they shipped: a site's slurm.conf from before 22.05 can name a plugin removed
# since (AccountingStorageType=accounting_storage/filetxt, gone in 20.11), which stops slurmctld all the same.
EARLIER_SERIES = ("17.02", "17.11", "18.08", "19.05", "20.02", "20.11", "21.08")
# The plugin types a slurm.conf option names (option_values.PLUGIN_OPTIONS); "common" and the like are not plugins.
TYPES = ("accounting_storage", "acct_gather_energy", "acct_gather_filesystem", "acct_gather_interconnect",
         "acct_gather_profile", "auth", "burst_buffer", "certmgr", "cli_filter", "cred", "hash", "job_container",
         "job_submit", "jobacct_gather", "jobcomp", "mcs", "namespace", "node_features", "preempt", "prep",
         "priority", "proctrack", "sched", "switch", "task", "tls")
NOT_PLUGINS = ("common", "common_xkcp")
FIXTURE = "plugins.txt"


def _git(repo, *args):
    return subprocess.run(["git", "-C", repo] + list(args), check=True, stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL).stdout.decode()


def latest_tag(repo, series):
    major, minor = series.split(".")
    prefix = "slurm-%s-%s-" % (major, minor)
    pattern = re.compile(re.escape(prefix) + r"\d+-\d+$")
    tags = [t for t in _git(repo, "tag", "--list", prefix + "*").split() if pattern.match(t)]
    if not tags:
        return None
    return max(tags, key=lambda t: [int(x) for x in t[len(prefix):].split("-")])


def extract(repo, fixtures):
    for series in EARLIER_SERIES + SERIES:
        tag = latest_tag(repo, series)
        if tag is None:
            print("no tag for %s, skipped" % series, file=sys.stderr)
            continue
        names = []
        for ptype in TYPES:
            listed = _git(repo, "ls-tree", "-d", "--name-only", tag, "src/plugins/%s/" % ptype).split()
            names += ["%s/%s" % (ptype, path.rsplit("/", 1)[1]) for path in listed
                      if path.rsplit("/", 1)[1] not in NOT_PLUGINS]
        outdir = os.path.join(fixtures, series)
        os.makedirs(outdir, exist_ok=True)
        with open(os.path.join(outdir, FIXTURE), "w") as handle:
            handle.write("# source: https://github.com/SchedMD/slurm/tree/%s/src/plugins\n" % tag)
            handle.write("# machine: n/a (Slurm %s source, tag %s: git ls-tree -d src/plugins/TYPE/)\n# ---\n"
                         % (series, tag))
            handle.write("".join(name + "\n" for name in sorted(names)))


def read_fixtures(fixtures, series_list=SERIES):
    """{series: (tag, {type: [names]})} of every series with a fixture."""
    out = {}
    for series in series_list:
        path = os.path.join(fixtures, series, FIXTURE)
        if not os.path.exists(path):
            continue
        with open(path) as handle:
            lines = handle.read().splitlines()
        tag = re.search(r"/tree/(\S+)/src/plugins", lines[0]).group(1)
        shipped = {}
        for line in lines:
            if line and not line.startswith("#"):
                ptype, name = line.split("/", 1)
                shipped.setdefault(ptype, []).append(name)
        out[series] = (tag, shipped)
    return out


def removed_before(found, earlier):
    """{type: {name: the last earlier series that shipped it}} of the names no series of ``found`` ships."""
    current = {(ptype, n) for _tag, shipped in found.values() for ptype, names in shipped.items() for n in names}
    out = {}
    for series, (_tag, shipped) in earlier.items():
        for ptype, names in shipped.items():
            for name in names:
                if (ptype, name) not in current and name != "none":
                    out.setdefault(ptype, {})[name] = series
    return out


def render(found, earlier):
    lines = ['"""GENERATED by scripts/derive-slurm-plugins.py from the plugin directories of SchedMD/slurm',
             "(src/plugins/TYPE/ at one tag per release series); do not edit. Regenerate after adding a series.",
             "",
             "``SHIPPED[release][type]`` is the sorted names of the plugins of that type the release ships (a",
             "``none`` directory included where it still exists; read_config.c reads a value containing \"none\" as no",
             'plugin from 23.11 on). ``SOURCES[release]`` is the tag read. ``REMOVED_BEFORE[type][name]``: the last',
             'series from 17.02 on that shipped a plugin none of them ships."""', "",
             "SOURCES = {"]
    lines += ['    "%s": "%s",' % (series, tag) for series, (tag, _shipped) in found.items()]
    lines += ["}", "", "SHIPPED = {"]
    for series, (_tag, shipped) in found.items():
        lines.append('    "%s": {' % series)
        for ptype in sorted(shipped):
            names = ", ".join('"%s"' % n for n in sorted(shipped[ptype]))
            entry = '        "%s": (%s%s),' % (ptype, names, "," if len(shipped[ptype]) == 1 else "")
            if len(entry) > 120:
                entry = '        "%s": (\n            %s%s),' % (ptype, names, "," if len(shipped[ptype]) == 1 else "")
            lines.append(entry)
        lines.append("    },")
    comment = ("Plugins of the series before the first above that none of them ships: the last series that shipped "
               "each (tags read: %s)." % ", ".join(tag for tag, _s in earlier.values()))
    lines += ["}", ""] + ["# " + line for line in textwrap.wrap(comment, 114)] + ["REMOVED_BEFORE = {"]
    for ptype, names in sorted(removed_before(found, earlier).items()):
        items = ", ".join('"%s": "%s"' % (n, names[n]) for n in sorted(names))
        entry = '    "%s": {%s},' % (ptype, items)
        if len(entry) > 120:
            entry = '    "%s": {\n        %s},' % (ptype, items.replace(', "', ',\n        "'))
        lines.append(entry)
    lines += ["}", ""]
    return "\n".join(lines)


def generate(fixtures, output, check=False):
    text = render(read_fixtures(fixtures), read_fixtures(fixtures, EARLIER_SERIES))
    if check:
        with open(output) as handle:
            if handle.read() != text:
                raise SystemExit("%s differs from what %s generates" % (output, fixtures))
        return
    with open(output, "w") as handle:
        handle.write(text)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    sub = parser.add_subparsers(dest="command", required=True)
    one = sub.add_parser("extract")
    one.add_argument("--repo", required=True)
    one.add_argument("--fixtures", required=True)
    two = sub.add_parser("generate")
    two.add_argument("--fixtures", required=True)
    two.add_argument("--output", required=True)
    two.add_argument("--check", action="store_true")
    opts = parser.parse_args(argv)
    if opts.command == "extract":
        extract(opts.repo, opts.fixtures)
    else:
        generate(opts.fixtures, opts.output, opts.check)


if __name__ == "__main__":
    main()
