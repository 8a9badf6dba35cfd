# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Benchmark helper: the local connection, counting every command it runs per target host (bench/deploy_bench.py),
with the CPU time the command took (what a remote host would spend, not the control machine)."""
from __future__ import annotations

import os
import resource

from ansible.plugins.connection.local import DOCUMENTATION as _LOCAL_DOCUMENTATION
from ansible.plugins.connection.local import Connection as LocalConnection

DOCUMENTATION = _LOCAL_DOCUMENTATION.replace("name: local", "name: counting_local", 1).replace(
    "short_description: execute on controller",
    "short_description: execute on controller, logging one line per command (a round trip) to $BENCH_ROUNDTRIP_LOG "
    "(the target host and the command's CPU seconds)", 1)


class Connection(LocalConnection):
    """Every exec_command is what one SSH round trip would be; the log gets the target host per command."""

    transport = "counting_local"

    def exec_command(self, cmd, in_data=None, sudoable=True):
        log = os.environ.get("BENCH_ROUNDTRIP_LOG")
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        result = super(Connection, self).exec_command(cmd, in_data=in_data, sudoable=sudoable)
        if log:
            # the command and everything it waited for (the module, its nvidia-smi runs) ran as this worker's child
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
            with open(log, "a") as handle:
                handle.write("%s %.4f\n" % (self._play_context.remote_addr, cpu))
        return result
