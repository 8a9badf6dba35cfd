# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper (bench/controller_bench.py): the local connection, except that a module is run for real once
per module and its answer replayed to every later host, so that a run over thousands of hosts measures the control
machine's own work (templating, forks, results) and nothing of the hosts'."""
from __future__ import annotations

import os
import re

from ansible.plugins.connection.local import DOCUMENTATION as _LOCAL_DOCUMENTATION
from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = _LOCAL_DOCUMENTATION.replace("name: local", "name: replay_local", 1).replace(
    "short_description: execute on controller",
    "short_description: execute on controller the first run of each module, replaying its answer from "
    "$BENCH_REPLAY_DIR for every later host", 1)

MODULE = re.compile(rb"module_fqn='([\w.]+)'")


class Connection(LocalConnection):
    transport = "replay_local"

    def exec_command(self, cmd, in_data=None, sudoable=True):
        found = MODULE.search(in_data or b"")
        store = os.environ.get("BENCH_REPLAY_DIR")
        if not (found and store):
            return super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        path = os.path.join(store, found.group(1).decode() + ".json")
        if os.path.exists(path):
            with open(path, "rb") as handle:
                return 0, handle.read(), b""
        rc, stdout, stderr = super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        if rc == 0:
            with open(path + ".%d" % os.getpid(), "wb") as handle:
                handle.write(stdout)
            os.replace(path + ".%d" % os.getpid(), path)
        return rc, stdout, stderr
