# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper: the local connection, counting every command it runs per target host (bench/deploy_bench.py)."""
from __future__ import annotations

import os

from ansible.plugins.connection.local import DOCUMENTATION as _LOCAL_DOCUMENTATION
from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = _LOCAL_DOCUMENTATION.replace("name: local", "name: counting_local", 1).replace(
    "short_description: execute on controller",
    "short_description: execute on controller, logging one line per command (a round trip) to $BENCH_ROUNDTRIP_LOG", 1)


class Connection(LocalConnection):
    """Every exec_command is what one SSH round trip would be; the log gets the target host per command."""

    transport = "counting_local"

    def exec_command(self, cmd, in_data=None, sudoable=True):
        log = os.environ.get("BENCH_ROUNDTRIP_LOG")
        if log:
            with open(log, "a") as handle:
                handle.write("%s\n" % self._play_context.remote_addr)
        return super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
