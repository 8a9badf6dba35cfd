# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""NVIDIA's decode of the NVLink5 Xids 144-150 (Blackwell): what a line's unit, first register (intrinfo) and second
register (error status) call for.

The driver prints them as ``Xid (PCI:0018:01:00): 149, NETIR_LINK_EVT Fatal XC0 i0 Link 08 (0x004505c6 0x00000000
...)``. The word ``Fatal`` or ``Nonfatal`` is the interrupt's severity, not the action: NVIDIA's catalogue decodes
each (unit, intrinfo, error status) to an immediate action, and some "Link Fatal" events call for none
(``NETIR_LINK_EVT`` sub-code 38: IGNORE). ``RULES`` are the rows of the catalogue's sheet "XID 144-150 Decode"
(``xid_catalog.NVLINK5_RULES``, generated with the rest of the catalogue from leptonai/gpud's copy of NVIDIA's
spreadsheet, ``nvlinkRules``): Xid, unit, the intrinfo bit pattern in its two layouts (bit 31 first; ``-`` any
bit), the error status and the immediate action (``RESET_GPU``, ``IGNORE`` or ``XID_154_EVAL``). Bits 25-20 of
intrinfo are the sub-code.

Plain Python 3 (standard library only): the node's health program imports it.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.xid_catalog import NVLINK5_RULES

RULES = NVLINK5_RULES

# "NETIR_LINK_EVT Fatal XC0 i0 Link 00 (0x026001c6 0x00000000 ...": the unit, then the first two registers
_LINE = re.compile(r"^\s*([A-Za-z0-9_]+(?:/[A-Za-z0-9_]+)?)\s+(?:Non-?fatal|Fatal)\b[^(]*\(\s*(0x[0-9A-Fa-f]+)\s+(0x[0-9A-Fa-f]+)")


def _matches(pattern, value):
    for index, bit in enumerate(pattern):
        if bit != "-" and int(bit) != (value >> (31 - index)) & 1:
            return False
    return True


def _aliases(unit):
    """``TLW_RX/TLW_RX_PIPE0`` is matched by ``TLW_RX``, ``TLW_RX_PIPE0`` or the whole."""
    return {unit.upper()} | {part.upper() for part in unit.split("/")}


def decode(xid, message):
    """``(unit, intrinfo, error status, action)`` of an NVLink5 Xid line's ``message`` (the text after ``N, ``) by
    NVIDIA's decode, or None when the line carries no registers (cut, masked) or no row matches them."""
    m = _LINE.match(message or "")
    if not m:
        return None
    unit, intrinfo, status = m.group(1).upper(), int(m.group(2), 16), int(m.group(3), 16)
    for rule_xid, rule_unit, layout1, layout2, rule_status, action in RULES:
        if (rule_xid == xid and rule_status == status and unit in _aliases(rule_unit)
                and (_matches(layout2, intrinfo) or _matches(layout1, intrinfo))):
            return (rule_unit, intrinfo, status, action)
    return None
