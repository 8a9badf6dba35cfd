# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Host and node names: the one natural sort order and the one inventory-host-to-node-name rule."""
import re

_DIGITS = re.compile(r"(\d+)")


def natural_key(text):
    """Sort key that orders ``node2`` before ``node10`` (the order Slurm's hostlists print)."""
    return [int(p) if p.isdigit() else p for p in _DIGITS.split(text)]


def short_name(host):
    """inventory_hostname_short: the host name up to the first dot (the Slurm node name unless one is set)."""
    return host.split(".", 1)[0]
