"""Parsers for nvidia-smi text output: pure text in, plain dicts out.

nvidia-smi's man page says its text output "is not guaranteed to be backwards compatible", and what
reaches us has often been through a terminal, a log collector or a paste. So the parsers locate things
by their labels (header tokens, ``GPU0`` row names, ``MIG`` table columns) rather than by exact
whitespace, and every function raises ``ValueError`` with the offending line when a value is not what
the format allows, instead of guessing silently.

Covered: ``--query-gpu`` / ``--query-compute-apps`` CSV (with or without header and units),
``topo -m`` / ``--matrix`` / ``-mp``, ``-L``, ``mig -lgi / -lci / -lgip / -lgipp / -lcip``, the
``mig -cgi/-cci`` result lines and ``/proc/driver/nvidia-caps/mig-minors``.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.ranges import parse_int_ranges

QUERY_GPU_FIELDS = ("index", "uuid", "name", "pci.bus_id", "mig.mode.current", "memory.total", "memory.used")
QUERY_APPS_FIELDS = ("gpu_uuid", "pid", "used_memory", "process_name")
# The key of a query row's fields nvidia-smi failed to read; no field is named so.
READ_ERRORS = "read_errors"

# What nvidia-smi prints in a field that it could not read (observed in -q, tables and --query-gpu CSV). Its
# --help-query-gpu: "'N/A' indicates that the field is not supported ... An error message indicates that
# retrieving the field failed."
ERROR_VALUES = ("ERR!", "Unknown Error", "[Unknown Error]", "GPU requires reset", "[GPU requires reset]",
                # NVML_ERROR_NOT_READY's text, printed for the fields NVML cannot read yet
                "System is not in ready state", "[System is not in ready state]")
_ERROR_VALUES = {v.lower() for v in ERROR_VALUES}
# nvidia-smi prints these instead of a value ("[N/A]", "[Not Supported]", "[Not Found]", ...).
_NO_VALUE = re.compile(r"^\[[^\]]*\]$|^N/A$")
# Header names nvidia-smi prints that differ from the name that was queried.
_FIELD_ALIASES = {"used_gpu_memory": "used_memory", "gpu_name": "gpu_name"}
_INT_FIELDS = {"index", "pid", "minor_number", "count", "pcie.link.gen.current", "pcie.link.gen.max",
               "pcie.link.width.current", "pcie.link.width.max", "temperature.gpu"}
# nvidia-smi prints watts with two decimals ("210.00" or "210.00 W")
_WATT_FIELDS = {"power.limit", "power.draw", "power.default_limit", "power.min_limit", "power.max_limit",
                "enforced.power.limit"}
_MIB_FIELDS = {"memory.total", "memory.used", "memory.free", "memory.reserved", "used_memory"}
_PERCENT_FIELDS = {"utilization.gpu", "utilization.memory"}
# Fields whose value is free text that might hold a comma.
_TEXT_FIELDS = ("process_name", "name", "gpu_name")
_KNOWN_FIELDS = (set(QUERY_GPU_FIELDS) | set(QUERY_APPS_FIELDS) | _INT_FIELDS | _MIB_FIELDS | _PERCENT_FIELDS
                 | _WATT_FIELDS
                 | {"used_gpu_memory", "gpu_name", "gpu_bus_id", "gpu_serial", "driver_version", "compute_cap",
                    "mig.mode.pending", "serial", "vbios_version", "persistence_mode", "pstate", "count"})
# R580 on, some names are mixed case: pci.baseClass, fabric.cliqueId, encoder.stats.sessionCount
_HEADER_ITEM = re.compile(r"^([a-z][A-Za-z0-9_.]*)(?:\s*\[[^\]]*\])?$")
# A shell prompt (and the command after it) a poster left before an output: "user@host:~$", "root@host:/#",
# "[root@host dir]#", ESXi's "[root@localhost:~]", "(base) user@host:~$", "bash-4.2#", Windows' "C:\...\NVSMI>",
# PowerShell's "PS C:\...>", or the echoed command itself.
_PROMPT_FORMS = (r"[\w.-]+@[^\s#$]*\s*[#$]|\[[^\]]*\]\s*[#$]|\[[^\]\s]*@[^\]]*\]|\([^)]*\)\s*(?:\S+\s+)*?\S*[#$]"
                 r"|bash-[\d.]+[#$]")
_PROMPT_TAIL = r"(?:\s|$)|^\s*(?:PS\s+)?[A-Za-z]:\\[^>]*>|^\s*(?:sudo\s+)?nvidia-smi(?:\.exe)?(?:\s|$)"
PROMPT_LINE = re.compile(r"^\s*(?:[$#]|" + _PROMPT_FORMS + ")" + _PROMPT_TAIL)
# in a CSV or -L listing a line may also start with ">" (a prompt, or a quote)
_PROMPT = re.compile(r"^\s*(?:[$#>]|" + _PROMPT_FORMS + ")" + _PROMPT_TAIL)
# Elisions a poster or grep leaves in an excerpt: "[...]", "...", grep's "--" group separator.
ELISION = re.compile(r"^\s*(?:\[\.\.\.\]|\.\.\.|\u2026|--)\s*$")
# The second half of nvidia-smi's lost-GPU message where a terminal or a post broke it onto a line of its own
# ("... for GPU0: 0000:01:00.0: GPU is lost." / "Reboot the system to recover this GPU")
_LOST_GPU_HINT = re.compile(r"^\s*(?:Reboot\s+)?the system to recover this GPU\.?\s*$", re.I)

# "determine" on Linux; "detect" in the Windows build's wording (Easy-GPU-PV#276)
LOST_GPU_RE = re.compile(r"Unable to (?:determine|detect) the device handle for[^\n]*")
# nvidia-smi's warning before or after any output, with exit code 14: "WARNING: infoROM is corrupted at gpu
# 0008:00:00.0"
INFOROM_CORRUPTED_RE = re.compile(r"infoROM is corrupted at gpu "
                                  r"([0-9A-Fa-f]{1,8}:[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-7])", re.I)
RC_INFOROM_CORRUPTED = 14
_BUS_IN_TEXT = re.compile(r"([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])")


def normalize_bus_id(bus_id):
    """``0000:3b:00.0`` / ``00000000:3B:00.0`` -> ``00000000:3B:00.0`` (nvidia-smi's current form)."""
    if bus_id is None:
        return None
    m = re.match(r"^\s*([0-9A-Fa-f]{1,8}):([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])\s*$", bus_id)
    if not m:
        raise ValueError("not a PCI bus id: %r" % (bus_id,))
    return "%08X:%02X:%02X.%s" % (int(m.group(1), 16), int(m.group(2), 16), int(m.group(3), 16), m.group(4))


def proc_bus_id(bus_id):
    """The directory name under ``/proc/driver/nvidia/gpus``: ``0000:3b:00.0``."""
    norm = normalize_bus_id(bus_id)
    domain, rest = norm.split(":", 1)
    return ("%04x:%s" % (int(domain, 16), rest)).lower()


def _lines(text):
    return (text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")


# ----------------------------------------------------------------------------------------------------
# --query-gpu / --query-compute-apps (csv)

def _canonical_field(name):
    name = name.strip()
    m = _HEADER_ITEM.match(name)
    if m:
        name = m.group(1)
    return _FIELD_ALIASES.get(name, name)


def _is_header(items):
    if not all(_HEADER_ITEM.match(i.strip()) for i in items):
        return False
    return any(_canonical_field(i) in _KNOWN_FIELDS or i.strip() in _KNOWN_FIELDS for i in items)


def is_error_value(value):
    """True for the markers nvidia-smi prints in a field it failed to read (``ERR!``, ``Unknown Error``...)."""
    if not isinstance(value, str):
        return False
    value = value.strip()
    return value.lower() in _ERROR_VALUES or value.startswith("ERR!")


def _convert(field, raw):
    value = raw.strip()
    if _NO_VALUE.match(value) or is_error_value(value):
        return None
    if field in _MIB_FIELDS:
        value = re.sub(r"\s*MiB$", "", value)
        if not value.isdigit():
            raise ValueError("%s: expected MiB as an integer, found %r" % (field, raw))
        return int(value)
    if field in _PERCENT_FIELDS:
        value = re.sub(r"\s*%$", "", value)
        return int(value) if value.isdigit() else None
    if field in _INT_FIELDS:
        if not re.match(r"^-?\d+$", value):
            raise ValueError("%s: expected an integer, found %r" % (field, raw))
        return int(value)
    if field in _WATT_FIELDS:
        value = re.sub(r"\s*W$", "", value)
        if not re.match(r"^\d+(?:\.\d+)?$", value):
            raise ValueError("%s: expected watts, found %r" % (field, raw))
        return float(value)
    if field in ("pci.bus_id", "gpu_bus_id"):
        return normalize_bus_id(value)
    return value


def _split_row(line, nfields, fields):
    parts = line.split(",")
    if len(parts) > nfields:
        text_at = next((i for i, f in enumerate(fields) if f in _TEXT_FIELDS), None)
        if text_at is None:
            return None
        extra = len(parts) - nfields
        parts = parts[:text_at] + [",".join(parts[text_at:text_at + extra + 1])] + parts[text_at + extra + 1:]
    if len(parts) != nfields:
        return None
    return parts


def parse_query_csv(text, fields):
    """Rows of a ``--query-*=... --format=csv[,noheader][,nounits]`` output as dicts keyed by field.

    A header line, when present, names the columns (and wins over ``fields``). Values: integers for
    index/pid, MiB integers for memory fields (with or without the ``MiB`` unit), ``None`` for
    nvidia-smi's bracketed non-values (``[N/A]``, ``[Not Found]``...) and for the fields it failed to read
    (``[GPU requires reset]``, ``[Unknown Error]``, ``ERR!``), which a row also lists under ``READ_ERRORS``
    (``{field: marker}``, only in a row that has one). Lines nvidia-smi prints about a
    GPU it cannot reach ("Unable to determine the device handle ...") are skipped here; see
    :func:`find_lost_gpus`; so is its "infoROM is corrupted" warning.
    """
    columns = [_canonical_field(f) for f in fields]
    rows = []
    seen_data = False
    for lineno, line in enumerate(_lines(text), 1):
        if (not line.strip() or _PROMPT.match(line) or ELISION.match(line) or LOST_GPU_RE.search(line)
                or _LOST_GPU_HINT.match(line) or INFOROM_CORRUPTED_RE.search(line)):
            continue
        if line.strip().startswith("No devices were found"):
            continue
        items = line.split(",")
        if not seen_data and _is_header(items):
            columns = [_canonical_field(i) for i in items]
            continue
        parts = _split_row(line, len(columns), columns)
        if parts is None:
            raise ValueError("nvidia-smi query output line %d: expected %d comma-separated values (%s), found %r"
                             % (lineno, len(columns), ", ".join(columns), line))
        try:
            row = {col: _convert(col, raw) for col, raw in zip(columns, parts)}
        except ValueError as exc:
            raise ValueError("nvidia-smi query output line %d: %s (line %r)" % (lineno, exc, line))
        failed = {col: raw.strip() for col, raw in zip(columns, parts) if is_error_value(raw)}
        if failed:
            row[READ_ERRORS] = failed
        rows.append(row)
        seen_data = True
    return rows


def parse_query_gpu(text, fields=QUERY_GPU_FIELDS):
    """``nvidia-smi --query-gpu=<fields> --format=csv,noheader,nounits`` -> list of dicts by field name."""
    return parse_query_csv(text, fields)


def parse_query_apps(text, fields=QUERY_APPS_FIELDS):
    """``nvidia-smi --query-compute-apps=<fields> --format=csv,noheader,nounits`` -> list of dicts.
    ``used_gpu_memory`` (the header's name) is reported as ``used_memory``."""
    return parse_query_csv(text, fields)


def inforom_corrupted_gpus(text):
    """Bus ids (``00000008:00:00.0``) that nvidia-smi's "infoROM is corrupted at gpu ..." warning names, sorted."""
    return sorted(set(normalize_bus_id(m.group(1)) for m in INFOROM_CORRUPTED_RE.finditer(text or "")))


# "...for GPU1: 0000:34:00.0: ..." and "...for GPU0: Unknown Error" carry NVML's index; the older
# "...for GPU0000:08:00.0: ..." carries the bus id only
_LOST_GPU_INDEX = re.compile(r"device handle for GPU(\d+):\s", re.I)


def find_lost_gpus(text):
    """GPUs nvidia-smi could not reach.

    ``[{"pci_bus_id": "00000000:3B:00.0" or None, "index": NVML's index or None, "message": str}]``.
    """
    lost = []
    for line in _lines(text):
        m = LOST_GPU_RE.search(line)
        if m:
            found = _BUS_IN_TEXT.findall(m.group())
            bus = found[-1] if found else None
            index = _LOST_GPU_INDEX.search(line)
            lost.append({"pci_bus_id": normalize_bus_id(bus) if bus else None,
                         "index": int(index.group(1)) if index else None, "message": line.strip()})
    return lost


# ----------------------------------------------------------------------------------------------------
# topo -m

_ATTRIBUTE_KEYS = {"cpu affinity": "cpu_affinity", "numa affinity": "numa_affinity", "gpu numa id": "gpu_numa_id"}
# the words of a name may be spaced out in a copy ("CPU    Affinity", NVIDIA's MLPerf tuning guide)
_KNOWN_ATTRIBUTES = re.compile(r"CPU\s+Affinity|NUMA\s+Affinity|GPU\s+NUMA\s+ID", re.I)
# two device names in one header cell ("NIC7NIC8"): a tab lost in the copy, so a column's cells cannot be told apart
_RUN_TOGETHER = re.compile(r"^(?:GPU|NIC|mlx\w*?)\d+(?:GPU|NIC)\d+", re.I)
_LINK_WORDS = ("X", "SYS", "NODE", "PHB", "PXB", "PIX", "SOC", "PXN", "C2C")
# two link cells in one ("PXBNODE", "SYSSYS"): the tab between them lost in the copy
_GLUED_LINKS = re.compile(r"^(?:%s|NV\d+){2,}$" % "|".join(_LINK_WORDS))
_RANGE_LIST = re.compile(r"^\d+(?:-\d+)?(?:,\d+(?:-\d+)?)*$")


def _classify_link(token):
    """Return (link, spill) for a matrix cell: spill is text glued to the cell (``PH0-115``)."""
    if token in _LINK_WORDS or re.match(r"^NV\d+$", token):
        return token, None
    m = re.match(r"^([A-Z]+)(\d[\d,\-]*)$", token)
    if m and m.group(1) in _LINK_WORDS and m.group(1) != "X":
        # A whole link word with the CPU list glued on ("SYS0-23,48-71"): only the tab was lost.
        return m.group(1), m.group(2)
    if m and m.group(1) not in _LINK_WORDS and m.group(1) != "NV":
        prefix = m.group(1)
        candidates = [w for w in _LINK_WORDS if w.startswith(prefix)]
        # The terminal lost the cell's tail and the tab: "PHB<TAB>0-115" printed as "PH0-115".
        return (candidates[0] if len(candidates) == 1 else prefix + "?"), m.group(2)
    if re.match(r"^[A-Z][A-Z0-9#]*$", token):
        return token, None
    return None, None


def _attribute_names(header_rest):
    """Split the attribute part of the header (``CPU Affinity  NUMA Affinity  GPU NUMA ID``)."""
    names = []
    pos = 0
    while pos < len(header_rest):
        m = re.compile(r"\S").search(header_rest, pos)
        if not m:
            break
        start = m.start()
        known = _KNOWN_ATTRIBUTES.match(header_rest, start)
        if known:
            end = known.end()
        else:
            sep = re.compile(r"\t| {2,}|$").search(header_rest, start)
            end = sep.start()
        names.append((header_rest[start:end].strip(), start))
        pos = end
    return names


def _is_range_or_na(value):
    return value is None or value.upper() == "N/A" or bool(_RANGE_LIST.match(value))


def _fits(attr_key, value):
    if value is None:
        return True
    if attr_key == "gpu_numa_id":
        return value.upper() == "N/A" or value.isdigit()
    if attr_key in ("cpu_affinity", "numa_affinity"):
        return _is_range_or_na(value)
    return True


def _next_tab_stop(col):
    return (col // 8 + 1) * 8


def _assign_by_position(rest, attr_cols, row_attr_start, header_attr_start):
    """Map leftover tokens to attribute columns by their column, relative to the attribute block."""
    shift = row_attr_start - header_attr_start
    wanted = {col + shift: i for i, (_key, col) in enumerate(attr_cols)}
    values = [None] * len(attr_cols)
    last = -1
    for start, token in rest:
        i = wanted.get(start)
        if i is None or i <= last:
            return None
        values[i] = token
        last = i
    return values


def _assign_by_order(rest, attr_keys, first_col=None):
    """Leftover tokens to attribute columns in order. ``first_col``: where the row's first attribute cell begins
    (the tab stop after its link cells)."""
    tokens = [t for _s, t in rest]
    values = [None] * len(attr_keys)
    if len(tokens) >= len(attr_keys):
        return tokens[:len(attr_keys)] if len(tokens) == len(attr_keys) else None
    # Fewer values than columns: empty cells. GPU NUMA ID is always printed on a GPU row ("N/A" at
    # least); the affinity cells are the ones that come out empty (containers, some VMs).
    if attr_keys and attr_keys[-1] == "gpu_numa_id" and tokens and _fits("gpu_numa_id", tokens[-1]):
        values[-1] = tokens.pop()
    # An empty CPU Affinity cell is a lone tab (a Slurm job whose cpuset holds none of the GPU's CPUs): the NUMA
    # value then starts a tab stop after the first attribute column, not in it.
    skip = int(bool(tokens and first_col is not None and rest[0][0] > first_col and attr_keys[0] == "cpu_affinity"
                    and len(tokens) < len([k for k in attr_keys if k != "gpu_numa_id"])))
    for i, token in enumerate(tokens):
        values[i + skip] = token
    return values


def _merge_split_lists(tokens):
    """Rejoin a CPU list that a paste split at its commas (``0-23, 48-71``)."""
    merged = []
    for start, token in tokens:
        if merged and (merged[-1][1].endswith(",") or token.startswith(",")) and re.match(r"^,?[\d,\-]+$", token):
            merged[-1] = (merged[-1][0], merged[-1][1] + token)
        else:
            merged.append((start, token))
    return merged


def _parse_cells(text_value, what, row_name):
    if text_value is None or text_value == "" or text_value.upper() == "N/A":
        return None
    try:
        return parse_int_ranges(text_value)
    except ValueError:
        raise ValueError("nvidia-smi topo -m: %s %s: expected a list like 0-31,64-95 or N/A, found %r"
                         % (row_name, what, text_value))


# Terminal styling: nvidia-smi underlines the header on a TTY ("\x1b[4m...\x1b[0m"); pastes often lose the
# ESC byte and keep "[4m". Neither form can be part of a matrix cell.
_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]|\[[0-9;]*m")


def _find_header(lines):
    for i, line in enumerate(lines):
        tokens = line.split()
        if tokens and tokens[0] == "GPU0" and (len(tokens) == 1 or tokens[1] != "X"):
            return i
    return None


def _split_row_cells(line, columns):
    """Split one matrix row into its name, link cells and what follows them.

    Returns (name, links, rest, tail, glitch, last_link_end): ``rest`` are the leftover tokens as
    (column after 8-wide tab expansion, text); ``tail`` the raw text after the last link cell (for
    tab-separated rows), with any text split off a glued cell (``PH0-115``) put back in front.
    """
    expanded = line.expandtabs(8)
    exp_tokens = [(m.start(), m.group()) for m in re.finditer(r"\S+", expanded)]
    raw_tokens = [(m.start(), m.end()) for m in re.finditer(r"\S+", line)]
    name = exp_tokens[0][1]
    links = {}
    rest = []
    glitch = False
    last_link_end = exp_tokens[0][0] + len(name)
    tail_from = raw_tokens[0][1]
    spill_text = None
    taken = 0
    for idx in range(1, len(exp_tokens)):
        start, token = exp_tokens[idx]
        if taken == len(columns):
            rest = exp_tokens[idx:]
            break
        link, spill = _classify_link(token)
        if link is None:
            rest = exp_tokens[idx:]
            break
        links[columns[taken]] = link
        taken += 1
        last_link_end = start + len(token)
        tail_from = raw_tokens[idx][1]
        if spill is not None:
            glitch = True
            spill_text = spill
            rest = [(start + len(token) - len(spill), spill)] + exp_tokens[idx + 1:]
            break
    tail = line[tail_from:]
    if spill_text is not None:
        tail = spill_text + tail
    elif tail.startswith("\t"):
        tail = tail[1:]
    return name, links, rest, tail, glitch, last_link_end


def _row_attributes(name, rest, tail, glitch, last_link_end, attr_keys, attr_cols, header_attr_start, attr_names):
    """The attribute values of one GPU row (list aligned with ``attr_keys``; None for an empty cell)."""
    if not attr_keys:
        return []
    candidates = []
    if "\t" in tail:
        # nvidia-smi writes "<cpu>\t<numa>\t\t<gpu numa id>": cells in order, padding cells empty.
        cells = [c.strip() for c in tail.split("\t")]
        while len(cells) > len(attr_keys) and cells and cells[-1] == "":
            cells.pop()
        if len(cells) > len(attr_keys):
            head = cells[:len(attr_keys) - 1]
            extra = [c for c in cells[len(attr_keys) - 1:] if c]
            if len(extra) <= 1 and all(" " not in c for c in head):
                candidates.append(head + (extra or [""]))
        elif all(" " not in c for c in cells):
            candidates.append(cells + [""] * (len(attr_keys) - len(cells)))
    rest = _merge_split_lists(rest)
    if not glitch and rest:
        by_position = _assign_by_position(rest, attr_cols, _next_tab_stop(last_link_end), header_attr_start)
        if by_position is not None:
            candidates.append(by_position)
    by_order = _assign_by_order(rest, attr_keys, None if glitch else _next_tab_stop(last_link_end))
    if by_order is not None:
        candidates.append(by_order)
    for values in candidates:
        values = [v if v else None for v in values]
        if all(_fits(k, v) for k, v in zip(attr_keys, values)):
            return values
    raise ValueError("nvidia-smi topo -m: row %s: cannot match the values after the link cells (%s) to the "
                     "attribute columns (%s)" % (name, " ".join(t for _s, t in rest) or "none", ", ".join(attr_names)))


def parse_topo_matrix(text):
    """``nvidia-smi topo -m`` (also ``--matrix`` and ``-mp``) -> GPUs, NICs and their attributes.

    Returns ``{"gpus": [{"name": "GPU0", "index": 0, "cpu_affinity": [os cpu ids] or None,
    "numa_affinity": [ids] or None, "gpu_numa_id": int or None, "links": {"GPU1": "NV12", "NIC0": "PXB"}}],
    "nics": [{"name": "NIC0", "device": "mlx5_0" or None, "links": {...}}], "columns": [...],
    "attributes": [...]}``.

    How it reads the matrix, whatever the whitespace: the header is the line whose first token is
    ``GPU0`` (not followed by the ``X`` self cell); its tokens up to the first word without a digit are
    the device columns, the rest are attribute columns (``CPU Affinity``, ``NUMA Affinity``, ``GPU NUMA
    ID`` or older subsets). Each row starts with a device name and has one link cell per device column.
    Values after the link cells are attributes: matched by column (tabs expanded to 8, measured from
    the start of the attribute block, so empty cells are seen) when the columns line up, else by order.
    A link cell glued to the CPU list (``PH0-115``) is split back into ``PHB`` and ``0-115``.
    """
    lines = _lines(_ANSI.sub("", text or ""))
    h = _find_header(lines)
    if h is None:
        if re.search(r"No devices were found", text or ""):
            return {"gpus": [], "nics": [], "columns": [], "attributes": []}
        glued = next((line.split()[0] for line in lines if line.split() and _RUN_TOGETHER.match(line.split()[0])), None)
        raise ValueError("nvidia-smi topo -m: no matrix header (a line starting with GPU0) in the output%s" % (
            "; the line starting %r has its device names run together (the copy lost its tabs)" % glued[:24]
            if glued else ""))
    header_line = lines[h]

    header_tokens = list(re.finditer(r"\S+", header_line))
    columns = []
    attr_from = None
    for m in header_tokens:
        if _RUN_TOGETHER.match(m.group()):
            raise ValueError("nvidia-smi topo -m: the header cell %r is two device names run together (a tab lost "
                             "in the copy): the cells of those columns cannot be told apart" % m.group())
        if re.search(r"\d", m.group()):
            columns.append(m.group())
        else:
            attr_from = m.start()
            break
    attributes = _attribute_names(header_line[attr_from:]) if attr_from is not None else []
    attr_keys = [_ATTRIBUTE_KEYS.get(" ".join(name.lower().split()), re.sub(r"\W+", "_", name.lower()).strip("_"))
                 for name, _off in attributes]

    # Row block: device-named lines after the header; common indentation is taken off every line.
    rows = []
    for line in lines[h + 1:]:
        tokens = line.split()
        if not tokens:
            if rows:
                break
            continue
        if tokens[0] not in columns:
            break
        rows.append(line)
    if not rows:
        after = next((line.strip() for line in lines[h + 1:] if line.strip()), None)
        raise ValueError("nvidia-smi topo -m: header found but no GPU rows under it%s" % (
            " (the next line starts %r: a header wrapped, or a paste that lost its rows?)" % after[:30]
            if after else ""))
    indent = re.match(r"^[ \t]*", rows[0]).group()
    header = header_line[len(indent):] if header_line.startswith(indent) else header_line.lstrip()
    expanded_header = header.expandtabs(8)
    attr_cols = []
    if attributes:
        first_attr = attributes[0][0]
        base = expanded_header.find(first_attr)
        search_from = base
        for (name, _off), key in zip(attributes, attr_keys):
            col = expanded_header.find(name, search_from)
            attr_cols.append((key, col))
            search_from = col + len(name)
    header_attr_start = attr_cols[0][1] if attr_cols else 0

    ncol = len(columns)
    gpus = []
    nics = []
    for raw in rows:
        line = raw[len(indent):] if raw.startswith(indent) else raw.lstrip()
        name, links, rest, tail, glitch, last_link_end = _split_row_cells(line, columns)
        links.pop(name, None)
        if not re.match(r"^GPU\d+$", name):
            nics.append({"name": name, "device": None if re.match(r"^NIC\d+$", name) else name, "links": links})
            continue
        if len(links) + 1 < ncol:
            glued = next(((col, link) for col, link in links.items() if _GLUED_LINKS.match(link)), None)
            raise ValueError("nvidia-smi topo -m: row %s has %d link cells, expected %d (one per column: %s)%s"
                             % (name, len(links) + 1, ncol, " ".join(columns),
                                "; its cell %r under %s is two link words run together (a tab lost in the copy)"
                                % (glued[1], glued[0]) if glued else ""))
        values = _row_attributes(name, rest, tail, glitch, last_link_end, attr_keys, attr_cols, header_attr_start,
                                 [a for a, _o in attributes])
        attrs = dict(zip(attr_keys, values))
        gpu_numa = attrs.get("gpu_numa_id")
        if gpu_numa is not None and gpu_numa.upper() != "N/A" and not gpu_numa.isdigit():
            raise ValueError("nvidia-smi topo -m: %s GPU NUMA ID: expected a number or N/A, found %r"
                             % (name, gpu_numa))
        gpu = {
            "name": name,
            "index": int(name[3:]),
            "cpu_affinity": _parse_cells(attrs.get("cpu_affinity"), "CPU Affinity", name),
            "numa_affinity": _parse_cells(attrs.get("numa_affinity"), "NUMA Affinity", name),
            "gpu_numa_id": int(gpu_numa) if gpu_numa and gpu_numa.isdigit() else None,
            "links": links,
        }
        for key, value in attrs.items():
            if key not in gpu:
                gpu[key] = value
        gpus.append(gpu)
    missing = [c for c in columns if re.match(r"^GPU\d+$", c) and c not in {g["name"] for g in gpus}]
    if missing:
        raise ValueError("nvidia-smi topo -m: the header names %s, which no row follows (an output cut after %s?)"
                         % (", ".join(missing), gpus[-1]["name"] if gpus else "the header"))

    legend = _nic_legend(lines[h:])
    for nic in nics:
        if nic["name"] in legend:
            nic["device"] = legend[nic["name"]]
    return {"gpus": gpus, "nics": nics, "columns": columns, "attributes": [a for a, _o in attributes]}


def _nic_legend(lines):
    legend = {}
    inside = False
    for line in lines:
        if line.strip().startswith("NIC Legend"):
            inside = True
            continue
        if inside:
            m = re.match(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$", line)
            if m:
                legend[m.group(1)] = m.group(2)
            elif line.strip():
                break
    return legend


# ----------------------------------------------------------------------------------------------------
# -L

# the name never holds "(UUID:" (a paste that lost its line breaks puts several GPUs on one line: refused)
_L_GPU = re.compile(r"^\s*GPU\s+(\d+):\s+((?:(?!\(UUID:).)*?)\s*(?:\(UUID:\s*(GPU-[^)\s]+)\s*\))?\s*$")
_L_MIG = re.compile(r"^\s*MIG\s+(\S+)\s+Device\s+(\d+):\s+\(UUID:\s*(MIG-[^)\s]+)\s*\)\s*$")
_OLD_MIG_UUID = re.compile(r"^MIG-(GPU-[0-9a-fA-F-]+)/(\d+)/(\d+)$")


def parse_list_gpus(text):
    """``nvidia-smi -L``: ``[{"index", "name", "uuid", "mig_devices": [{"device", "profile", "uuid",
    "gi_id", "ci_id"}]}]``. gi_id/ci_id come from old-style ``MIG-GPU-<uuid>/<gi>/<ci>`` UUIDs only
    (R470+ prints opaque ``MIG-<uuid>``; join those with ``mig -lci`` output)."""
    gpus = []
    first_line = {}
    for lineno, line in enumerate(_lines(text), 1):
        if not line.strip() or _PROMPT.match(line) or ELISION.match(line) or _LOST_GPU_HINT.match(line):
            continue
        m = _L_GPU.match(line)
        if m:
            index = int(m.group(1))
            if index in first_line:
                # one run lists each GPU once: two outputs run together (two containers' logs, say)
                raise ValueError("nvidia-smi -L line %d: expected each GPU once, found GPU %d again (first at line %d): "
                                 "%r" % (lineno, index, first_line[index], line))
            first_line[index] = lineno
            gpus.append({"index": index, "name": m.group(2), "uuid": m.group(3), "mig_devices": []})
            continue
        m = _L_MIG.match(line)
        if m:
            if not gpus:
                raise ValueError("nvidia-smi -L line %d: MIG device before any GPU line: %r" % (lineno, line))
            gi = ci = None
            old = _OLD_MIG_UUID.match(m.group(3))
            if old:
                gi, ci = int(old.group(2)), int(old.group(3))
            gpus[-1]["mig_devices"].append({"device": int(m.group(2)), "profile": m.group(1), "uuid": m.group(3),
                                            "gi_id": gi, "ci_id": ci})
            continue
        if LOST_GPU_RE.search(line) or line.strip().startswith("No devices were found"):
            continue
        raise ValueError("nvidia-smi -L line %d: expected 'GPU N: name (UUID: GPU-...)' or a MIG device line, "
                         "found %r" % (lineno, line))
    return gpus


# ----------------------------------------------------------------------------------------------------
# mig tables

def _table_rows(text):
    """Data rows of an nvidia-smi box table: the cell text between ``|`` borders, after the ``===`` rule. A blank line
    (a paste with a blank line after each line) does not end the table; a line that is not the table's does."""
    rows = []
    in_body = False
    for line in _lines(text):
        stripped = line.strip()
        if re.match(r"^\|=+\|$", stripped):
            in_body = True
            continue
        if stripped.startswith("+") or not stripped:
            continue
        if in_body and stripped.startswith("|") and stripped.endswith("|"):
            rows.append(stripped[1:-1])
        elif in_body and not stripped.startswith("|"):
            in_body = False
    return rows


_LGI_ROW = re.compile(r"^\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+):(\d+)\s*$")
_LCI_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)(?:\s+(\d+):(\d+))?\s*$")
_LGIP_ROW = re.compile(r"^\s*(\d+)\s+MIG\s+(\S+)\s+(\d+)\s+(\d+)/(\d+)\s+([\d.]+)\s+(\S+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
_LCIP_ROW = re.compile(r"^\s*(\d+)\s+(\d+)\s+MIG\s+(\S+)\s+(\d+)(\*?)\s+(\d+)/(\d+)"
                       r"\s+(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")
_SECOND_ROW = re.compile(r"^\s*(\d+)\s+(\d+)(?:\s+(\d+))?\s*$")
_NONE_FOUND = re.compile(r"No (?:GPU|compute) instances found|No MIG-(?:enabled|supported) devices found", re.I)


def _check_no_junk(text, rows, what):
    if not rows and text and text.strip() and not _NONE_FOUND.search(text) and "|" in text:
        raise ValueError("nvidia-smi %s: table without data rows: %r" % (what, text.strip()[:200]))


def parse_mig_lgi(text):
    """``nvidia-smi mig -lgi`` -> ``[{"gpu", "profile", "profile_id", "gi_id", "placement_start",
    "placement_size"}]``; ``[]`` for "No GPU instances found"."""
    result = []
    rows = _table_rows(text)
    for row in rows:
        m = _LGI_ROW.match(row)
        if not m:
            raise ValueError("nvidia-smi mig -lgi: unexpected row %r" % row)
        result.append({"gpu": int(m.group(1)), "profile": m.group(2), "profile_id": int(m.group(3)),
                       "gi_id": int(m.group(4)), "placement_start": int(m.group(5)),
                       "placement_size": int(m.group(6))})
    _check_no_junk(text, rows, "mig -lgi")
    return result


def parse_mig_lci(text):
    """``nvidia-smi mig -lci`` -> ``[{"gpu", "gi_id", "profile", "profile_id", "ci_id", "placement_start",
    "placement_size"}]`` (placement None on drivers that print no Placement column)."""
    result = []
    rows = _table_rows(text)
    for row in rows:
        m = _LCI_ROW.match(row)
        if not m:
            raise ValueError("nvidia-smi mig -lci: unexpected row %r" % row)
        result.append({"gpu": int(m.group(1)), "gi_id": int(m.group(2)), "profile": m.group(3),
                       "profile_id": int(m.group(4)), "ci_id": int(m.group(5)),
                       "placement_start": int(m.group(6)) if m.group(6) else None,
                       "placement_size": int(m.group(7)) if m.group(7) else None})
    _check_no_junk(text, rows, "mig -lci")
    return result


def parse_mig_lgip(text):
    """``nvidia-smi mig -lgip`` -> one dict per profile: gpu, profile (``1g.10gb``), profile_id,
    free, total, memory_gib, p2p, sm, dec, enc, ce, jpeg, ofa."""
    result = []
    rows = _table_rows(text)
    for row in rows:
        m = _LGIP_ROW.match(row)
        if m:
            result.append({"gpu": int(m.group(1)), "profile": m.group(2), "profile_id": int(m.group(3)),
                           "free": int(m.group(4)), "total": int(m.group(5)), "memory_gib": float(m.group(6)),
                           "p2p": m.group(7), "sm": int(m.group(8)), "dec": int(m.group(9)),
                           "enc": int(m.group(10)), "ce": None, "jpeg": None, "ofa": None})
            continue
        m = _SECOND_ROW.match(row)
        if m and result and result[-1]["ce"] is None:
            result[-1].update(ce=int(m.group(1)), jpeg=int(m.group(2)),
                              ofa=int(m.group(3)) if m.group(3) is not None else None)
            continue
        raise ValueError("nvidia-smi mig -lgip: unexpected row %r" % row)
    _check_no_junk(text, rows, "mig -lgip")
    return result


def parse_mig_lcip(text):
    """``nvidia-smi mig -lcip`` -> gpu, gi_id, profile, profile_id, default (the ``*`` mark), free, total,
    sm, dec, enc, ofa, ce, jpeg. Several tables (one per ``-gi``) may follow each other."""
    result = []
    for row in _table_rows(text):
        m = _LCIP_ROW.match(row)
        if m:
            result.append({"gpu": int(m.group(1)), "gi_id": int(m.group(2)), "profile": m.group(3),
                           "profile_id": int(m.group(4)), "default": m.group(5) == "*",
                           "free": int(m.group(6)), "total": int(m.group(7)), "sm": int(m.group(8)),
                           "dec": int(m.group(9)), "enc": int(m.group(10)), "ofa": int(m.group(11)),
                           "ce": None, "jpeg": None})
            continue
        m = _SECOND_ROW.match(row)
        if m and result and result[-1]["ce"] is None:
            result[-1].update(ce=int(m.group(1)), jpeg=int(m.group(2)))
            continue
        raise ValueError("nvidia-smi mig -lcip: unexpected row %r" % row)
    return result


# Anything after ":<size>" is ignored (a pasted session may carry a note there).
_LGIPP = re.compile(r"^\s*GPU\s+(\d+)\s+Profile\s+ID\s+(\d+)\s+Placements?\s*:\s*\{([\d,\s]*)\}\s*:\s*(\d+)(?:\s.*)?$")


def parse_mig_lgipp(text):
    """``nvidia-smi mig -lgipp`` -> ``[{"gpu", "profile_id", "starts": [..], "size"}]``."""
    result = []
    for lineno, line in enumerate(_lines(text), 1):
        if not line.strip() or _PROMPT.match(line):
            continue
        m = _LGIPP.match(line)
        if not m:
            if _NONE_FOUND.search(line):
                continue
            raise ValueError("nvidia-smi mig -lgipp line %d: expected 'GPU N Profile ID P Placements: {..}:S', "
                             "found %r" % (lineno, line))
        starts = [int(s) for s in m.group(3).replace(" ", "").split(",") if s]
        result.append({"gpu": int(m.group(1)), "profile_id": int(m.group(2)), "starts": starts,
                       "size": int(m.group(4))})
    return result


_CGI_OK = re.compile(r"Successfully created GPU instance ID\s+(\d+) on GPU\s+(\d+) "
                     r"using profile MIG (\S+) \(ID\s+(\d+)\)")
_CCI_OK = re.compile(r"Successfully created compute instance(?: ID\s+(\d+))? on GPU\s+(\d+) GPU instance ID\s+(\d+) "
                     r"using profile MIG (\S+) \(ID\s+(\d+)\)")
_MIG_FAIL = re.compile(r"^(Unable to .*|Failed to .*)$")


def parse_mig_create(text):
    """Result lines of ``mig -cgi [-C]`` / ``-cci``: ``{"gpu_instances": [{"gpu", "gi_id", "profile",
    "profile_id"}], "compute_instances": [{"gpu", "gi_id", "ci_id", "profile", "profile_id"}],
    "errors": [line, ...]}``."""
    out = {"gpu_instances": [], "compute_instances": [], "errors": []}
    for line in _lines(text):
        m = _CGI_OK.search(line)
        if m:
            out["gpu_instances"].append({"gpu": int(m.group(2)), "gi_id": int(m.group(1)), "profile": m.group(3),
                                         "profile_id": int(m.group(4))})
            continue
        m = _CCI_OK.search(line)
        if m:
            out["compute_instances"].append({"gpu": int(m.group(2)), "gi_id": int(m.group(3)),
                                             "ci_id": int(m.group(1)) if m.group(1) else None,
                                             "profile": m.group(4), "profile_id": int(m.group(5))})
            continue
        m = _MIG_FAIL.match(line.strip())
        if m:
            out["errors"].append(m.group(1))
    return out


# ----------------------------------------------------------------------------------------------------
# /proc/driver/nvidia-caps/mig-minors

_MINOR_LINE = re.compile(r"(?:^|\s)(config|monitor|gpu(\d+)(?:/gi(\d+)(?:/ci(\d+))?)?/access|gpu(\d+))\s+(\d+)\s*$")


def parse_mig_minors(text):
    """``/proc/driver/nvidia-caps/mig-minors`` -> ``{(kind, gpu_minor, gi, ci): cap_minor}`` with kind
    ``config`` / ``monitor`` / ``gpu`` / ``gi`` / ``ci``. Prefixes such as a ``// `` comment marker and
    ``...`` elision lines are tolerated; any other line raises ValueError."""
    minors = {}
    for lineno, line in enumerate(_lines(text), 1):
        stripped = line.strip()
        if not stripped or stripped.lstrip("/ ").startswith(("...", "$", "#")) or stripped.lstrip("/ ") == "":
            continue
        m = _MINOR_LINE.search(stripped)
        if not m:
            raise ValueError("mig-minors line %d: expected '<key> <minor>' such as 'gpu0/gi1/access 12', "
                             "found %r" % (lineno, line))
        minor = int(m.group(6))
        if m.group(1) in ("config", "monitor"):
            key = (m.group(1), None, None, None)
        elif m.group(5) is not None:
            key = ("gpu", int(m.group(5)), None, None)
        elif m.group(4) is not None:
            key = ("ci", int(m.group(2)), int(m.group(3)), int(m.group(4)))
        elif m.group(3) is not None:
            key = ("gi", int(m.group(2)), int(m.group(3)), None)
        else:
            key = ("gpu", int(m.group(2)), None, None)
        minors[key] = minor
    return minors
