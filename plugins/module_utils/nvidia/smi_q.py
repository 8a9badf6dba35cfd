"""Parsers for ``nvidia-smi -q`` and the plain ``nvidia-smi`` table: pure text in, plain dicts out.

``nvidia-smi -q`` prints one indented block per GPU (``GPU 00000000:07:00.0`` then ``Key : Value`` lines and
section headers, four spaces per level). Its fields change from one driver branch to the next (``Fabric`` gains
``CliqueId`` in 550, ``GPU Recovery Action`` appears between 560 and 565, ``Reset Required`` reads "Requested
functionality has been deprecated" from 570, ``Remapped Rows : N/A`` is one line on GPUs without row remapping),
and what reaches us has often been cut (``[...]``, ``grep -A``), quoted (``> ``) or pasted with the shell prompt.
So the parser keeps the whole text as a tree of sections (``sections``; future fields can be read from it
without a new parser) and reads the fields the readiness rules need by their labels, case-insensitively; it never
raises on unknown lines. Values nvidia-smi prints instead of a value (``N/A``, ``Requested functionality has been
deprecated``) read as None; error markers (``ERR!``, ``Unknown Error``, ``[GPU requires reset]``) are listed per
GPU in ``errors`` with the field they were found in.
"""
from __future__ import annotations

import functools
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.nvidia.smi import (
    ELISION as _ELISION, PROMPT_LINE, inforom_corrupted_gpus, is_error_value, normalize_bus_id)

# Printed instead of a value when the GPU or driver does not have the field; read as None.
NO_VALUE = ("", "N/A", "[N/A]", "Not Supported", "[Not Supported]", "Not Available", "[Not Available]",
            "Requested functionality has been deprecated", "Unknown", "[Unknown]")
_NO_VALUE = {v.lower() for v in NO_VALUE}

_BANNER = re.compile(r"^\s*=+\s*NVSMI LOG\s*=+\s*$")
_GPU_HEADER = re.compile(r"^GPU\s+([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-7])\s*$")
_KEY_VALUE = re.compile(r"^(?P<key>[^:]*?\S)\s*:(?:\s+(?P<value>.*?))?\s*$")


def output_lines(text):
    """The lines of a recorded output, ready to parse: ``(number, line)`` with CR/LF normalised, a Markdown
    quote prefix (``> `` or a lone ``>``) taken off, and prompt/command lines, elisions (``[...]``, ``...``)
    and grep's ``--`` separators left out. Numbers count from 1 in the text as given."""
    out = []
    for number, line in enumerate((text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n"), 1):
        if line.startswith("> "):
            line = line[2:]
        elif line.rstrip() == ">":
            line = ""
        if PROMPT_LINE.match(line) or _ELISION.match(line):
            continue
        out.append((number, line.rstrip()))
    return out


# R610 on: "Driver Version : 610.88 [Deprecated; will be removed in CUDA 14.0. Use KMD Version instead]"
_DEPRECATION_NOTE = re.compile(r"\s*\[Deprecated\b[^\]]*\]\s*$", re.I)


def value_or_none(value):
    """A field's text, or None for nvidia-smi's non-values (``N/A``, ``[Not Supported]``, deprecated...); a
    deprecation note after a value is left out."""
    if value is None:
        return None
    if isinstance(value, dict):
        value = value.get("_value")
        if value is None:
            return None
    value = _DEPRECATION_NOTE.sub("", str(value)).strip()
    return None if value.lower() in _NO_VALUE or is_error_value(value) else value


def _int(value):
    value = value_or_none(value)
    if value is None:
        return None
    m = re.match(r"^(-?\d+)(?:\s|$)", value)
    return int(m.group(1)) if m else None


def _yes_no(value):
    value = value_or_none(value)
    if value is None:
        return None
    # the first word: a pasted output can carry the poster's mark after it ("Yes   <===")
    return {"yes": True, "no": False, "true": True, "false": False}.get(value.split()[0].lower())


def mark_inforom(parsed, text):
    """Set ``inforom_corrupted`` on each GPU of ``parsed`` that nvidia-smi's infoROM warning in ``text`` names
    (``WARNING: infoROM is corrupted at gpu 0008:00:00.0``, before or after any output, exit code 14);
    returns the bus ids named (a GPU the listing lacks is named all the same)."""
    named = inforom_corrupted_gpus(text)
    for gpu in parsed.get("gpus") or []:
        if gpu.get("bus_id") in named:
            gpu["inforom_corrupted"] = True
    return named


@functools.lru_cache(maxsize=4096)
def _norm_key(key):
    # called thousands of times per -q output, for a few hundred distinct keys
    return " ".join(key.split()).lower()


def find(tree, *path):
    """The value at ``path`` in a section tree (keys compared case-insensitively, blanks collapsed); the first
    one when a key repeats; None when any step is missing."""
    node = tree
    for key in path:
        if isinstance(node, list):
            node = node[0] if node else None
        if not isinstance(node, dict):
            return None
        want = _norm_key(key)
        found = None
        for k, v in node.items():
            if _norm_key(k) == want:
                found = v
                break
        if found is None:
            return None
        node = found
    if isinstance(node, list):
        node = node[0] if node else None
    return node


def _find_any(tree, paths):
    for path in paths:
        value = find(tree, *path)
        if value is not None:
            return value
    return None


# ----------------------------------------------------------------------------------------------------
# nvidia-smi -q


def _indent(line):
    return len(line.expandtabs(8)) - len(line.expandtabs(8).lstrip())


def _tree(items):
    """``[(indent, key, value)]`` -> nodes ``{"key", "value", "indent", "children"}`` nested by indentation."""
    roots = []
    stack = []
    for indent, key, value in items:
        node = {"key": key, "value": value, "indent": indent, "children": []}
        while stack and stack[-1]["indent"] >= indent:
            stack.pop()
        (stack[-1]["children"] if stack else roots).append(node)
        stack.append(node)
    return roots


def _to_dict(nodes):
    """Nodes -> ``{key: value}``: a section becomes a dict, a repeated key a list (``Processes`` entries); a key
    that has both a value and an indented block under it (``Process ID : 1234`` + ``Type``...) keeps the value
    as ``"_value"`` in its dict."""
    out = {}
    repeated = set()
    for node in nodes:
        if node["children"]:
            value = _to_dict(node["children"])
            if node["value"] is not None:
                value = dict([("_value", node["value"])] + list(value.items()))
        else:
            value = node["value"] if node["value"] is not None else {}
        key = node["key"]
        if key in out:
            if key not in repeated:
                out[key] = [out[key]]
                repeated.add(key)
            out[key].append(value)
        else:
            out[key] = value
    return out


def _walk_values(tree, prefix=()):
    for key, value in tree.items():
        values = value if isinstance(value, list) else [value]
        for item in values:
            if isinstance(item, dict):
                if "_value" in item:
                    yield prefix + (key,), item["_value"]
                yield from _walk_values({k: v for k, v in item.items() if k != "_value"}, prefix + (key,))
            else:
                yield prefix + (key,), item


def _errors(tree):
    return [{"field": "/".join(path), "value": value} for path, value in _walk_values(tree) if is_error_value(value)]


def _ecc_total(block, word):
    """Sum of a ``Volatile``/``Aggregate`` ECC block's counters: ``uncorrectable`` (every ``... Uncorrectable ...``
    counter, R510+ shape; or ``Double Bit / Total`` before that) or ``correctable``. None when none is a number."""
    if not isinstance(block, dict):
        return None
    total, seen = 0, False
    for key, value in block.items():
        name = _norm_key(key)
        if isinstance(value, dict):
            if name == ("double bit" if word == "uncorrectable" else "single bit"):
                n = _int(find(value, "Total"))
                if n is not None:
                    total, seen = total + n, True
            continue
        if word == "uncorrectable":
            match = "uncorrectable" in name
        else:
            match = "correctable" in name and "uncorrectable" not in name
        n = _int(value) if match else None
        if n is not None:
            total, seen = total + n, True
    return total if seen else None


def _fabric(tree):
    section = find(tree, "Fabric")
    if not isinstance(section, dict):
        return None
    state = value_or_none(find(section, "State"))
    if state is None:
        return None
    health = find(section, "Health")
    return {
        "state": state,
        "status": value_or_none(find(section, "Status")),
        "clique_id": value_or_none(find(section, "CliqueId")),
        "cluster_uuid": value_or_none(find(section, "ClusterUUID")),
        "health_summary": value_or_none(find(health, "Summary")) if isinstance(health, dict) else None,
        "health": dict(health) if isinstance(health, dict) else None,
    }


def _remapped_rows(tree):
    section = find(tree, "Remapped Rows")
    if not isinstance(section, dict):
        return None  # absent, or "Remapped Rows : N/A" (no row remapping on this GPU/driver)
    rows = {
        "correctable": _int(find(section, "Correctable Error")),
        "uncorrectable": _int(find(section, "Uncorrectable Error")),
        "pending": _yes_no(find(section, "Pending")),
        "failure": _yes_no(find(section, "Remapping Failure Occurred")),
    }
    return rows if any(v is not None for v in rows.values()) else None


def _retired_pages(tree):
    section = find(tree, "Retired Pages")
    if not isinstance(section, dict):
        return None
    pages = {
        "sbe": _int(find(section, "Single Bit ECC")),
        "dbe": _int(find(section, "Double Bit ECC")),
        # "Pending Page Blacklist" in every real output seen (R470..R575); "Pending Page Retirement" in tools'
        # texts; "Pending" alone on old drivers.
        "pending": _yes_no(_find_any(section, [("Pending Page Blacklist",), ("Pending Page Retirement",),
                                               ("Pending",)])),
    }
    return pages if any(v is not None for v in pages.values()) else None


def _ecc(tree):
    errors = find(tree, "ECC Errors")
    mode = value_or_none(_find_any(tree, [("ECC Mode", "Current"), ("Ecc Mode", "Current")]))
    if not isinstance(errors, dict) and mode is None:
        return None
    volatile = find(errors, "Volatile") if isinstance(errors, dict) else None
    aggregate = find(errors, "Aggregate") if isinstance(errors, dict) else None
    ecc = {
        "mode": mode,
        "volatile_uncorrectable": _ecc_total(volatile, "uncorrectable"),
        "aggregate_uncorrectable": _ecc_total(aggregate, "uncorrectable"),
        "volatile_correctable": _ecc_total(volatile, "correctable"),
        "aggregate_correctable": _ecc_total(aggregate, "correctable"),
    }
    return ecc if any(v is not None for v in ecc.values()) else None


def _sections_named(tree, key):
    """Every section of ``tree`` named ``key`` (a repeated name is a list in the tree)."""
    want = _norm_key(key)
    out = []
    for k, v in (tree.items() if isinstance(tree, dict) else ()):
        if _norm_key(k) == want:
            out.extend(item for item in (v if isinstance(v, list) else [v]) if isinstance(item, dict))
    return out


def _mig_devices(tree):
    """Each MIG device's own ECC count: ``[{"index", "gi_id", "ci_id", "volatile_uncorrectable"}]``, [] without MIG
    devices. R590 prints the "MIG Device" blocks directly under the GPU; older drivers under "MIG Devices"."""
    blocks = _sections_named(tree, "MIG Device")
    for parent in _sections_named(tree, "MIG Devices"):
        blocks += _sections_named(parent, "MIG Device")
    return [{"index": _int(find(block, "Index")), "gi_id": _int(find(block, "GPU Instance ID")),
             "ci_id": _int(find(block, "Compute Instance ID")),
             "volatile_uncorrectable": _ecc_total(find(block, "ECC Errors", "Volatile"), "uncorrectable")}
            for block in blocks]


def _memory_repair(tree):
    """The memory repair and RMA flags under ECC Errors: SRAM Threshold Exceeded (NVIDIA's SRAM RMA policy; printed
    by R535 and later), Channel/TPC Repair Pending and Unrepairable Memory (NVML's repair status and
    unrepairable-memory flag; R580). None where the driver prints none of them."""
    errors = find(tree, "ECC Errors")
    if not isinstance(errors, dict):
        return None
    repair = {
        "channel_repair_pending": _yes_no(find(errors, "Channel Repair Pending")),
        "tpc_repair_pending": _yes_no(find(errors, "TPC Repair Pending")),
        "unrepairable_memory": _yes_no(find(errors, "Unrepairable Memory")),
        "sram_threshold_exceeded": _yes_no(_find_any(errors, [("Aggregate", "SRAM Threshold Exceeded"),
                                                              ("SRAM Threshold Exceeded",)])),
    }
    return repair if any(v is not None for v in repair.values()) else None


def _reason_active(value):
    if isinstance(value, dict):  # "HW Slowdown : Active" with the kinds of slowdown under it
        value = value.get("_value")
    value = value_or_none(value)
    return None if value is None else value.lower() == "active"


def _clock_events(tree):
    """``{"active": [reason names], "idle": bool or None, "pstate": N of PN, "busy": GPU utilization %, "sm_mhz",
    "sm_max_mhz"}`` from "Clocks Event Reasons"
    (R535 and later) or "Clocks Throttle Reasons" (before); None when no reason is readable (N/A on GeForce cards
    of older drivers, vGPUs)."""
    section = _find_any(tree, [("Clocks Event Reasons",), ("Clocks Throttle Reasons",)])
    if not isinstance(section, dict):
        return None
    reasons = {}

    def visit(node):
        for key, value in node.items():
            if key == "_value":
                continue
            active = _reason_active(value)
            if active is not None:
                reasons[key] = active
            if isinstance(value, dict):
                visit(value)

    visit(section)
    if not reasons:
        return None
    pstate = re.match(r"^P(\d+)$", value_or_none(find(tree, "Performance State")) or "")
    return {"active": sorted(k for k, v in reasons.items() if v), "idle": reasons.get("Idle"),
            "pstate": int(pstate.group(1)) if pstate else None, "busy": _int(find(tree, "Utilization", "Gpu")),
            "sm_mhz": _int(find(tree, "Clocks", "SM")), "sm_max_mhz": _int(find(tree, "Max Clocks", "SM"))}


_KNOWN_FIELDS = ("product_name", "uuid", "minor_number", "persistence_mode", "mig_mode", "fabric", "remapped_rows",
                 "retired_pages", "recovery_action", "reset_required", "drain_and_reset_recommended", "ecc",
                 "memory_repair", "clock_events", "vgpu_license", "errors")


def empty_gpu(bus_id=None):
    """A GPU record with every field the parsers fill, all unknown."""
    return {"bus_id": bus_id, "product_name": None, "uuid": None, "minor_number": None, "persistence_mode": None,
            "mig_mode": None, "fabric": None, "remapped_rows": None, "retired_pages": None, "recovery_action": None,
            "reset_required": None, "drain_and_reset_recommended": None, "ecc": None, "mig_devices": [],
            "memory_repair": None,
            "clock_events": None, "vgpu_license": None, "errors": [], "inforom_corrupted": False, "sections": {}}


def _vgpu_license(tree):
    """A vGPU guest's licence (``vGPU Software Licensed Product``; ``GRID Licensed Product`` before vGPU 13):
    ``{"product", "status"}`` as printed, or None (bare metal and vGPU hosts print no such section)."""
    section = _find_any(tree, [("vGPU Software Licensed Product",), ("GRID Licensed Product",)])
    if not isinstance(section, dict):
        return None
    status = value_or_none(find(section, "License Status"))
    return {"product": value_or_none(find(section, "Product Name")), "status": status} if status else None


def _gpu(bus_id, tree):
    gpu = empty_gpu(bus_id)
    if gpu["bus_id"] is None:
        bus = value_or_none(find(tree, "PCI", "Bus Id"))
        if bus:
            try:
                gpu["bus_id"] = normalize_bus_id(bus)
            except ValueError:
                pass
    persistence = value_or_none(find(tree, "Persistence Mode"))
    gpu.update({
        "product_name": value_or_none(find(tree, "Product Name")),
        "uuid": value_or_none(find(tree, "GPU UUID")),
        "minor_number": _int(find(tree, "Minor Number")),
        "persistence_mode": persistence if persistence in ("Enabled", "Disabled") else None,
        "mig_mode": value_or_none(find(tree, "MIG Mode", "Current")),
        "fabric": _fabric(tree),
        "remapped_rows": _remapped_rows(tree),
        "retired_pages": _retired_pages(tree),
        "recovery_action": value_or_none(find(tree, "GPU Recovery Action")),
        "reset_required": _yes_no(find(tree, "GPU Reset Status", "Reset Required")),
        "drain_and_reset_recommended": _yes_no(find(tree, "GPU Reset Status", "Drain and Reset Recommended")),
        "ecc": _ecc(tree),
        "mig_devices": _mig_devices(tree),
        "memory_repair": _memory_repair(tree),
        "clock_events": _clock_events(tree),
        "vgpu_license": _vgpu_license(tree),
        "errors": _errors(tree),
        "sections": tree,
    })
    return gpu


def parse_smi_q(text):
    """``nvidia-smi -q`` (whole, ``-i``, or an excerpt) -> ``{"driver_version", "cuda_version", "attached_gpus",
    "timestamp", "globals", "gpus": [...]}``.

    Per GPU, in the order printed (NVML's, which is nvidia-smi's index order when no ``-i`` was given):
    ``bus_id`` (``00000000:10:1C.0``), ``product_name``, ``uuid``, ``minor_number`` (int), ``persistence_mode``
    (``"Enabled"``/``"Disabled"``/None), ``mig_mode`` (current), ``fabric`` (``{"state", "status", "clique_id",
    "cluster_uuid", "health_summary", "health"}``; None when the section is absent or its State is N/A),
    ``remapped_rows`` (``{"correctable", "uncorrectable", "pending", "failure"}``, booleans/ints or None; None for
    ``Remapped Rows : N/A``), ``retired_pages`` (``{"sbe", "dbe", "pending"}``), ``recovery_action`` (as printed:
    ``"None"``, ``"GPU Reset"``...; None when absent), ``reset_required`` and ``drain_and_reset_recommended``
    (bool or None; "Requested functionality has been deprecated" is None), ``ecc`` (``{"mode",
    "volatile_uncorrectable", "aggregate_uncorrectable", "volatile_correctable", "aggregate_correctable"}``),
    ``mig_devices`` (each MIG device's ``{"index", "gi_id", "ci_id", "volatile_uncorrectable"}``, [] without MIG),
    ``memory_repair`` (``{"channel_repair_pending", "tpc_repair_pending", "unrepairable_memory",
    "sram_threshold_exceeded"}``, booleans or None; None when the driver prints none), ``vgpu_license`` (a vGPU
    guest's ``{"product", "status"}``, ``status`` as printed: ``Licensed (Expiry: ...)``, ``Unlicensed
    (Restricted)``...; None elsewhere), ``errors``
    (``[{"field": "Addressing Mode", "value": "Unknown Error"}]``, field paths joined by ``/``),
    ``inforom_corrupted`` (nvidia-smi warned "infoROM is corrupted at gpu <bus>") and ``sections`` (the GPU's
    whole block as nested dicts). ``unindented`` is True when no line after the first GPU header is indented (a
    paste that lost its leading blanks: the sections cannot be told apart). Lines of an excerpt that come without a
    ``GPU <bus>`` header (``grep -A2 Fabric``) make GPUs with ``bus_id`` None, a new one each time a section
    repeats.
    """
    items = []
    for _number, line in output_lines(text):
        if not line.strip() or _BANNER.match(line):
            continue
        stripped = line.strip()
        indent = _indent(line)
        m = _GPU_HEADER.match(stripped)
        if m:
            items.append((indent, "\0GPU", m.group(1)))
            continue
        kv = _KEY_VALUE.match(stripped)
        if kv:
            items.append((indent, kv.group("key"), kv.group("value") if kv.group("value") is not None else ""))
        else:
            items.append((indent, stripped, None))

    result = {"driver_version": None, "cuda_version": None, "attached_gpus": None, "timestamp": None,
              "globals": {}, "gpus": [], "unindented": False}
    # A GPU's block with none of its lines indented (a paste that stripped leading blanks) cannot be read into
    # sections: say so rather than read fields out of their sections. A header and up to five lines is too short an
    # excerpt to tell (a grep of one section may hold no nested line).
    headers = [pos for pos, item in enumerate(items) if item[1] == "\0GPU"]
    if headers and all(indent == 0 for indent, _key, _value in items[headers[0]:]) and \
            len(items) - headers[0] > 5:
        result["unindented"] = True
    pseudo = None
    seen_gpu = False
    # The top level is where the GPU headers are: column 0 as printed, further right in a paste that indented every
    # line (a Markdown code block), where the driver version and the other global lines are just as far right.
    top = items[headers[0]][0] if headers else 0
    # A GPU header always starts a top-level block, whatever its indentation in a paste.
    blocks = []
    for item in items:
        if item[1] == "\0GPU":
            blocks.append([item])
        elif blocks and item[0] > blocks[-1][0][0]:
            blocks[-1].append(item)
        else:
            blocks.append([item])
    for block in blocks:
        head = block[0]
        if head[1] == "\0GPU":
            seen_gpu = True
            pseudo = None
            try:
                bus = normalize_bus_id(head[2])
            except ValueError:
                bus = None
            result["gpus"].append(_gpu(bus, _to_dict(_tree(block[1:]))))
            continue
        for node in _tree(block):
            if node["value"] is not None and not node["children"] and node["indent"] <= top and (
                    not seen_gpu or pseudo is None):
                result["globals"][node["key"]] = node["value"]
                continue
            # A GPU's field or section without its GPU header (an excerpt).
            part = _to_dict([node])
            if pseudo is None or any(_norm_key(k) == _norm_key(node["key"]) for k in pseudo):
                pseudo = {}
                result["gpus"].append(None)
            pseudo.update(part)
            result["gpus"][-1] = _gpu(None, pseudo)
    # An excerpt's header-less lines that held no GPU field at all (other text in the paste) make no GPU.
    result["gpus"] = [gpu for gpu in result["gpus"] if gpu["bus_id"] is not None or any(
        gpu[k] not in (None, []) for k in _KNOWN_FIELDS)]
    g = result["globals"]
    # R610 on print the same versions as "KMD Version" and "CUDA UMD Version" and deprecate the old names
    result["driver_version"] = value_or_none(find(g, "KMD Version")) or value_or_none(find(g, "Driver Version"))
    result["cuda_version"] = value_or_none(find(g, "CUDA UMD Version")) or value_or_none(find(g, "CUDA Version"))
    # a vGPU guest says "Attached vGPUs"
    result["attached_gpus"] = _int(_find_any(g, [("Attached GPUs",), ("Attached vGPUs",)]))
    result["timestamp"] = value_or_none(find(g, "Timestamp"))
    mark_inforom(result, text)
    return result


# ----------------------------------------------------------------------------------------------------
# plain nvidia-smi table

# R610 on: "| NVIDIA-SMI 610.43.02    KMD Version: 610.43.02     CUDA UMD Version: 13.3 |"
_TABLE_VERSIONS = re.compile(r"(?:Driver|KMD) Version:\s*(\S+)")
_TABLE_CUDA = re.compile(r"CUDA (?:UMD )?Version:\s*(\S+)")
_TABLE_GPU_CELL = re.compile(r"^\s*(\d+)\s+(.*?)\s+(On|Off)\s*$")
_TABLE_BUS = re.compile(r"^\s*([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\b")


def _cells(line):
    return line.strip().strip("|").split("|")


def _column_names(cell):
    return [n for n in re.split(r"\s{2,}", cell.strip()) if n]


def parse_smi_table(text):
    """The default ``nvidia-smi`` table -> the same shape as :func:`parse_smi_q` (``driver_version``,
    ``cuda_version``, ``gpus``) with what a table shows: per GPU ``index``, ``bus_id``, ``product_name`` (as
    printed, possibly cut with ``...``), ``persistence_mode`` (``On``/``Off`` read as Enabled/Disabled),
    ``mig_mode``, ``ecc.volatile_uncorrectable`` and ``errors`` (``{"field": "Fan", "value": "ERR!"}``, the
    field named from the table header). Other fields are None."""
    lines = [line for _n, line in output_lines(text)]
    result = {"driver_version": None, "cuda_version": None, "attached_gpus": None, "timestamp": None,
              "globals": {}, "gpus": [], "unindented": False}
    header_rows = []
    in_header = False
    current = None
    row = 0
    for line in lines:
        stripped = line.strip()
        m = _TABLE_VERSIONS.search(stripped) if result["driver_version"] is None else None
        if m:
            result["driver_version"] = m.group(1)
            m = _TABLE_CUDA.search(stripped)
            result["cuda_version"] = m.group(1) if m else None
            in_header = True
            continue
        if stripped.startswith("|=") and in_header:
            in_header = False
            continue
        if stripped.startswith("+") or stripped.startswith("|-"):
            if stripped.startswith("|-") and result["driver_version"] is not None and not header_rows:
                continue
            current = None
            continue
        if "Processes:" in stripped:
            break
        if not stripped.startswith("|"):
            continue
        cells = _cells(stripped)
        if in_header:
            if len(cells) >= 2:
                header_rows.append(cells)
            continue
        first = _TABLE_GPU_CELL.match(cells[0]) if cells else None
        if first and len(cells) >= 2 and _TABLE_BUS.match(cells[1]):
            current = empty_gpu(normalize_bus_id(_TABLE_BUS.match(cells[1]).group(1)))
            current["index"] = int(first.group(1))
            current["product_name"] = first.group(2)
            current["persistence_mode"] = "Enabled" if first.group(3) == "On" else "Disabled"
            result["gpus"].append(current)
            row = 0
        elif current is None:
            continue
        else:
            row += 1
        names = header_rows[row] if row < len(header_rows) else []
        for c, cell in enumerate(cells):
            tokens = cell.split()
            columns = _column_names(names[c]) if c < len(names) else []
            for t, token in enumerate(tokens):
                if is_error_value(token):
                    field = columns[min(t, len(columns) - 1)] if columns else "row %d cell %d" % (row + 1, c + 1)
                    error = {"field": field, "value": token}
                    # a cell of two values under one name ("ERR! / ERR!" under Pwr:Usage/Cap) is one unreadable field
                    if error not in current["errors"]:
                        current["errors"].append(error)
            if columns and columns[-1].startswith("Volatile Uncorr"):
                current["ecc"] = {"mode": None, "volatile_uncorrectable": _int(cell), "aggregate_uncorrectable": None,
                                  "volatile_correctable": None, "aggregate_correctable": None}
            if columns and columns[-1] == "MIG M.":
                current["mig_mode"] = value_or_none(tokens[-1] if tokens else None)
    mark_inforom(result, text)
    return result
