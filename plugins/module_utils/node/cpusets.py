"""CPU sets as Python integers (bit N = OS cpu N), read from and written in the formats Linux and hwloc use.

- kernel masks (``core_cpus``, ``node0/cpumap``, ``shared_cpu_map``): 32-bit hex words, most significant
  first, separated by commas: ``00000000,0000ffff``;
- kernel lists (``online``, ``*_list`` files): ``0-3,8``;
- hwloc XML bitmaps: ``0x0000ffff,0xffffffff``, possibly starting with ``0xf...f`` for an infinite set.
"""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import format_int_ranges


def parse_kernel_mask(text):
    """``"00000003,ffffffff"`` -> int; ValueError on anything that is not hex words."""
    text = (text or "").strip()
    if not text:
        raise ValueError("empty cpu mask")
    value = 0
    for word in text.split(","):
        word = word.strip()
        if not word:
            continue
        value = (value << 32) | int(word, 16)
    return value


def parse_cpulist(text):
    """``"0-3,8"`` -> int (an empty string is the empty set)."""
    value = 0
    for part in (text or "").strip().split(","):
        part = part.strip()
        if not part:
            continue
        lo, sep, hi = part.partition("-")
        lo_i = int(lo)
        hi_i = int(hi) if sep else lo_i
        if hi_i < lo_i:
            raise ValueError("descending cpu range %r" % part)
        value |= ((1 << (hi_i - lo_i + 1)) - 1) << lo_i
    return value


def parse_hwloc_bitmap(text):
    """An hwloc XML bitmap string -> int. The infinite form (``0xf...f,...``) keeps only its finite words."""
    text = (text or "").strip()
    if not text or text == "0x0":
        return 0
    words = [w.strip() for w in text.split(",")]
    if words and words[0] == "0xf...f":
        words = words[1:]
    value = 0
    for word in words:  # hwloc writes a zero word as nothing between two commas: 0x0000000f,,0x0
        value = (value << 32) | (int(word, 16) if word else 0)
    return value


def mask_of(cpus):
    value = 0
    for cpu in cpus:
        value |= 1 << int(cpu)
    return value


def bits(mask):
    """Sorted list of the set bits of ``mask``."""
    out = []
    index = 0
    while mask:
        low = mask & 0xFFFFFFFF
        if low:
            for bit in range(32):
                if low >> bit & 1:
                    out.append(index + bit)
        mask >>= 32
        index += 32
    return out


def first(mask):
    """Lowest set bit (-1 for the empty set)."""
    return (mask & -mask).bit_length() - 1


def weight(mask):
    return bin(mask).count("1")


def to_kernel_mask(mask, nr_cpus):
    """int -> ``"00000000,0000ffff"`` sized for ``nr_cpus`` cpus (as sysfs writes it)."""
    words = max(1, (int(nr_cpus) + 31) // 32)
    return ",".join("%08x" % ((mask >> (32 * w)) & 0xFFFFFFFF) for w in reversed(range(words)))


def to_cpulist(mask):
    """int -> ``"0-3,8"`` (``""`` for the empty set)."""
    return format_int_ranges(bits(mask))


def to_hwloc_bitmap(mask):
    """int -> hwloc's ``0x0000ffff,0xffffffff`` form (what ``hwloc-calc`` accepts as a location)."""
    if not mask:
        return "0x0"
    words = []
    while mask:
        words.append(mask & 0xFFFFFFFF)
        mask >>= 32
    return ",".join("0x%08x" % w for w in reversed(words))
