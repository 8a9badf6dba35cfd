"""What a value may hold before it is written into a Slurm file: the one rule for slurm.conf, gres.conf, cgroup.conf.

Every Slurm configuration file is read by the same parser (``src/common/parse_config.c``), so one rule covers them:

* a line is ``Key=Value`` pairs; a key is ``[[:alnum:]_.]+``; a value is ``"..."`` (anything but ``"``) or a run of
  non-space characters (``isspace``: space, tab, newline, vertical tab, form feed, carriage return);
* an unescaped ``#`` starts a comment (the rest of the line is dropped), ``\\`` escapes the next character and is
  itself removed, and an odd number of ``\\`` at the end of a line joins the next line to it.

So a value written unquoted is safe when it is printable ASCII without space, ``"``, ``#`` or ``\\``; a value that
must hold spaces (a command line) is written ``"..."`` and holds none of ``"``, ``#``, ``\\`` or a control
character. Non-ASCII text is refused everywhere: Slurm's parser calls ``isspace()`` on plain ``char`` bytes, and its
names (nodes, partitions, features, GRES types) are compared and hashed as bytes.

Names are narrower than values because other Slurm syntax is built from them: a node name must survive Slurm's
hostlist syntax (``[``, ``]``, ``,``), a feature name its feature expressions (``&|*[]()``, job_scheduler.c
``build_feature_list``, and ``!`` of federation features; ``:`` is no operator and sites use it, as in
``CPU_GEN:HSW``), a GRES type the
``name:type:count`` form of ``Gres=`` and ``--gres`` (``:``, ``,``, ``(``). ``DEFAULT`` (any case) is reserved for
``NodeName=`` and ``PartitionName=`` (it sets defaults for later lines) and ``ALL`` for ``NodeName=`` (fatal:
"is a reserved word disallowed for use with NodeName"), read_config.c. ``no_consume`` as a GRES type is read as a
flag by ``gres_add_type`` (gres.c), so it never is a type.

Integers are checked against the width the source declares for the field (``S_P_UINT16``/``UINT32``/``UINT64``);
the two largest values of each width are Slurm's ``NO_VAL`` and ``INFINITE`` markers, not counts.

Each check returns ``None`` when the value is fine, else ``(expected, found, hint)`` for a ``Problem``; callers add
host and field. Only the standard library is used: the module runs on nodes too.
"""
import re

from ansible_collections.hpc.slurm_gres.plugins.module_utils.slurm.conf import slurm_boolean

UINT_MAX = {"uint16": 0xFFFF, "uint32": 0xFFFFFFFF, "uint64": 0xFFFFFFFFFFFFFFFF}
# The largest count a field of each width holds: its two largest values are NO_VAL and INFINITE (slurm.h).
COUNT_MAX = {width: top - 2 for width, top in UINT_MAX.items()}
# GRES counts are read with strtoll (signed 64 bit), and LONG_MAX itself is refused ("invalid count"): gres.c.
GRES_COUNT_MAX = 0x7FFFFFFFFFFFFFFF - 1
# /dev/nvidiaN: the NVIDIA driver keeps minors 248-255 for its control devices (nv-frontend.h,
# NV_FRONTEND_CONTROL_DEVICE_MINOR_MIN = 255 - NV_MAX_MODULE_INSTANCES), so a GPU's minor, and so its index, is
# at most 247.
GPU_MINOR_MAX = 247
NAME_MAX = 64          # HOST_NAME_MAX on Linux: a node name is a host name
VALUE_MAX = 4096       # no Slurm limit; keeps every line (and the render) bounded
RESERVED_NODE_NAMES = ("default", "all")
RESERVED_PARTITION_NAMES = ("default",)
RESERVED_GRES_TYPES = ("no_consume",)

_ASCII_INT_RE = re.compile(r"\A[0-9]+\Z")
_NAME_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.-]*\Z")
_FEATURE_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.:-]*\Z")
_GRES_TYPE_RE = re.compile(r"\A[A-Za-z0-9][A-Za-z0-9_.+-]*\Z")
_COUNT_LIKE_RE = re.compile(r"\A[0-9]+[KMGTP]?\Z", re.IGNORECASE)
_OPTION_KEY_RE = re.compile(r"\A[A-Za-z][A-Za-z0-9]*\Z")
_UNQUOTED_RE = re.compile(r'\A[!$-\[\]-~]+\Z')           # printable ASCII except space " # \
_QUOTED_RE = re.compile(r'\A[ !$-\[\]-~]+\Z')            # the same plus the space
_HOST_LABEL_RE = re.compile(r"\A[A-Za-z0-9]([A-Za-z0-9-]{0,61}[A-Za-z0-9])?\Z")

NAME_CHARS = "letters, digits, '_', '.', '-' (not first)"
FEATURE_CHARS = "letters, digits, '_', '.', ':', '-' (not first)"
# (whole-name pattern, its characters as a message says them, one allowed character)
_NAME_SHAPE = (_NAME_RE, NAME_CHARS, re.compile(r"[A-Za-z0-9_.-]"))
_FEATURE_SHAPE = (_FEATURE_RE, FEATURE_CHARS, re.compile(r"[A-Za-z0-9_.:-]"))
GRES_TYPE_CHARS = "letters, digits, '_', '.', '+', '-' (not first)"


def describe(value):
    """A value as an error message shows it: repr (so newlines and non-ASCII show), cut when long, with its type."""
    if value is None:
        return "null"
    return "%s (%s)" % (_short(value), type_name(value))


# Plain names for the types YAML and JSON give; ansible-core 2.19 hands values over as subclasses of these (a tagged
# float is an _AnsibleTaggedFloat), whose names mean nothing to an admin.
_TYPE_NAMES = ((bool, "bool"), (str, "string"), (int, "int"), (float, "float"), (dict, "dict"), (list, "list"),
               (tuple, "tuple"))


def type_name(value):
    return next((name for kind, name in _TYPE_NAMES if isinstance(value, kind)), type(value).__name__)


def _short(value, limit=80):
    if isinstance(value, int) and value.bit_length() > 10000:  # past Python's int-to-str limit
        return "an integer of %d bits" % value.bit_length()
    try:
        shown = repr(value)
    except (RecursionError, ValueError):
        return "a value nested too deeply to show"
    if len(shown) > limit:
        size = len(value) if isinstance(value, (str, list, tuple, dict)) else None
        unit = "chars" if isinstance(value, str) else "items"
        return shown[:limit - 20] + "..." + (" (%d %s)" % (size, unit) if size is not None else "")
    return shown


def bad_characters(text, allowed):
    """Describe the characters of text outside `allowed` (a compiled one-character pattern), or None."""
    bad = []
    for ch in text:
        if not allowed.match(ch) and ch not in bad:
            bad.append(ch)
    if not bad:
        return None
    return ", ".join(_char_name(ch) for ch in bad[:4])


def _char_name(ch):
    names = {"\n": "a newline", "\r": "a carriage return", "\t": "a tab", " ": "a space", "#": "'#' (starts a "
             "comment in Slurm files)", "\\": "'\\' (Slurm's escape and line continuation)", '"': "'\"'",
             "=": "'='", ",": "','", ":": "':'", "[": "'['", "]": "']'", "(": "'('", ")": "')'"}
    if ch in names:
        return names[ch]
    if ord(ch) < 32 or ord(ch) == 127:
        return "control character %r" % ch
    if ord(ch) > 127:
        return "non-ASCII %r (U+%04X)" % (ch, ord(ch))
    return repr(ch)


def as_int(value):
    """The int a YAML integer or an ASCII decimal string stands for, else None (bools, '²', ' 1', '0x10' are not)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return int(value)
    if isinstance(value, str) and _ASCII_INT_RE.match(value):
        return int(value)
    return None


def check_int(value, minimum, maximum, what="an integer", note=None):
    """None if value is an integer (or ASCII decimal string) in [minimum, maximum], else (expected, found, hint).

    The message reads "<what> <minimum>-<maximum> (<note>)", e.g. "an integer 1-65533 (Sockets=, uint16 in Slurm)".
    """
    expected = "%s %d-%d%s" % (what, minimum, maximum, " (%s)" % note if note else "")
    number = as_int(value)
    if number is None:
        hint = None
        if isinstance(value, str) and value.strip() != value and as_int(value.strip()) is not None:
            hint = "remove the surrounding whitespace"
        elif isinstance(value, str) and value and all(ch.isdigit() for ch in value):
            hint = "only the ASCII digits 0-9 are digits to Slurm"
        return expected, describe(value), hint
    if number < minimum or number > maximum:
        return expected, str(number) if number.bit_length() <= 10000 else _short(number), None
    return None


def check_name(value, kind="name", reserved=(), max_len=NAME_MAX, shape=_NAME_SHAPE):
    """A node or partition name: ASCII letters, digits, '_', '.', '-' (not first), not reserved."""
    pattern, chars, char_re = shape
    expected = "a %s (%s; at most %d characters)" % (kind, chars, max_len)
    if not isinstance(value, str) or not value:
        return expected, describe(value), None
    if len(value) > max_len:
        return expected, "%s (%d characters)" % (_short(value), len(value)), None
    if not pattern.match(value):
        bad = bad_characters(value, char_re)
        if bad is None:
            return expected, "%s (starts with %r)" % (_short(value), value[0]), None
        return expected, "%s (contains %s)" % (_short(value), bad), None
    if value.lower() in reserved:
        words = " and ".join(r.upper() for r in reserved)
        return ("a %s other than Slurm's reserved word%s %s" % (kind, "s" if len(reserved) > 1 else "", words),
                _short(value), "Slurm reads %s=%s as a default or wildcard line, not a name"
                % ("NodeName" if "all" in reserved else "PartitionName", value.upper()))
    return None


# Slurm's hostlist code reads the digits that end a node name as one unsigned long (hostlist.c, strtoul): a larger
# number is cut to ULONG_MAX, so two names become one ("Duplicated NodeName n18446744073709551615"), and ULONG_MAX
# itself, as a range end, crashes slurmd 22.05 (seen live: signal 11 on NodeName=n[...614,...615]).
NODE_NUMBER_MAX = 0xFFFFFFFFFFFFFFFF - 1
_TRAILING_DIGITS_RE = re.compile(r"([0-9]+)\Z")


def check_node_name(value):
    """A Slurm node name: check_name with the reserved words of NodeName=, and a final number Slurm's hostlist
    code can hold."""
    problem = check_name(value, "Slurm node name", RESERVED_NODE_NAMES)
    if problem:
        return problem
    digits = _TRAILING_DIGITS_RE.search(value)
    if digits and int(digits.group(1)) > NODE_NUMBER_MAX:
        return ("a Slurm node name whose final number is at most %d" % NODE_NUMBER_MAX, _short(value),
                "Slurm's hostlists read that number as an unsigned 64-bit integer")
    return None


def check_gres_type(value):
    """A GRES type in Gres=name:type:count and gres.conf Type=."""
    expected = "a GRES type such as a100 (%s)" % GRES_TYPE_CHARS
    if not isinstance(value, str) or not value:
        return expected, describe(value), None
    if len(value) > NAME_MAX:
        return expected + ", at most %d characters" % NAME_MAX, "%s (%d characters)" % (_short(value), len(value)), None
    if not _GRES_TYPE_RE.match(value):
        bad = bad_characters(value, re.compile(r"[A-Za-z0-9_.+-]"))
        found = "%s (contains %s)" % (_short(value), bad) if bad else "%s (starts with %r)" % (_short(value), value[0])
        return expected, found, None
    if value.lower() in RESERVED_GRES_TYPES:
        return ("a GRES type other than %s" % ", ".join(RESERVED_GRES_TYPES), _short(value),
                "Slurm reads gpu:%s:N as the no_consume flag, not a type" % value)
    return None


def gres_type_reads_as_count(value):
    """The hint for a GRES type of digits (``5090``, ``2k``), or None. Slurm takes such a type as a type wherever a
    count follows it (gres.c ``_get_gres_cnt`` for slurm.conf ``Gres=gpu:5090:1``, ``_get_next_gres`` for
    ``--gres=gpu:5090:1``), and gres.conf ``Type=`` is a plain string; the collection always writes the count. But
    a job's ``--gres=gpu:5090`` is 5090 GPUs of any type (one field after the name: a count when it reads as one)."""
    if isinstance(value, str) and _COUNT_LIKE_RE.match(value):
        return ("jobs ask for it with a count, --gres=gpu:%s:1 (--gres=gpu:%s asks for %s GPUs of any type); a "
                "model name (such as rtx%s) avoids that" % (value, value, value, value))
    return None


def check_feature_name(value):
    """A node feature name: a name that may also hold ':' (no operator of Slurm's feature expressions)."""
    return check_name(value, "feature name", shape=_FEATURE_SHAPE)


def is_ip_address(value):
    """True for an IPv4 or IPv6 address."""
    import ipaddress

    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


def check_host_address(value):
    """A host name (RFC 1123 labels) or an IPv4/IPv6 address, as in SlurmctldHost=name(address)."""
    expected = "a host name or IP address (letters, digits, '-', '.'; or an IPv4/IPv6 address)"
    if not isinstance(value, str) or not value:
        return expected, describe(value), None
    if is_ip_address(value):
        return None
    labels = value[:-1].split(".") if value.endswith(".") else value.split(".")
    if len(value) > 253 or not all(_HOST_LABEL_RE.match(label) for label in labels):
        bad = bad_characters(value, re.compile(r"[A-Za-z0-9.-]"))
        return expected, "%s%s" % (_short(value), " (contains %s)" % bad if bad else ""), None
    return None


def check_option_key(key):
    """An option name as written by the user: ASCII letters and digits (every Slurm option name is)."""
    if not isinstance(key, str) or not _OPTION_KEY_RE.match(key):
        return "an option name (ASCII letters and digits)", describe(key), None
    return None


def check_option_value(value, quoted_ok=False):
    """A string value for `Key=value`: printable ASCII; spaces only where the option takes a command line.

    Returns None or (expected, found, hint). `quoted_ok` allows spaces; the value is then written "...".
    """
    allowed = _QUOTED_RE if quoted_ok else _UNQUOTED_RE
    expected = ("printable ASCII without '\"', '#' or '\\'" if quoted_ok else
                "one word of printable ASCII: no whitespace, '\"', '#' or '\\'")
    if not isinstance(value, str) or not value:
        return expected, describe(value), None
    if len(value) > VALUE_MAX:
        return expected + ", at most %d characters" % VALUE_MAX, "%d characters" % len(value), None
    if not allowed.match(value):
        bad = bad_characters(value, re.compile(r'[ !$-\[\]-~]' if quoted_ok else r'[!$-\[\]-~]'))
        hint = None
        if "\n" in value or "\r" in value:
            hint = "a newline would start a new line of the file"
        elif "#" in value:
            hint = "Slurm drops everything from '#' to the end of the line"
        elif not quoted_ok and any(ch.isspace() for ch in value):
            hint = "a space ends the value and the rest is read as the next Key=Value"
        elif "\\" in value:
            hint = "Slurm removes '\\' as an escape, and one at the end of a line joins the next line"
        return expected, "%s (contains %s)" % (_short(value), bad), hint
    if quoted_ok and value != value.strip():
        return expected + " and no leading or trailing space", _short(value), None
    return None


def format_value(value):
    """How a checked value is written: bare, or in double quotes when it holds a space."""
    if _UNQUOTED_RE.match(value):
        return value
    if _QUOTED_RE.match(value):
        return '"%s"' % value
    raise ValueError("value cannot be written into a Slurm file: %r" % (value,))


_LEADING_ZERO_RE = re.compile(r"\A-?0[0-9]+\Z")


def _octal_problem(value, kind):
    """Slurm reads integers with strtoul/strtol base 0 (parse_value.c): a leading 0 makes the number octal, so
    "03600" is 1920 there; an 8 or a 9 after it is no number at all."""
    digits = value.lstrip("-")
    if any(ch in "89" for ch in digits):
        meaning = "not a number there (8 and 9 are not octal digits)"
    else:
        meaning = "%s%d there" % ("-" if value.startswith("-") else "", int(digits, 8))
    return ("an integer without a leading 0 (%s in Slurm)" % kind, describe(value),
            "Slurm reads a number with a leading 0 as octal (strtoul base 0, parse_value.c): %s is %s; write the "
            "decimal number Slurm should run with" % (value, meaning))


def check_typed_value(value, kind):
    """A value for an option of parser type `kind` (options.py): uint16/32/64, long, boolean, float, double.

    Returns (text to write, None) or (None, (expected, found, hint)). String kinds are checked by the caller.
    """
    if isinstance(value, str) and kind in tuple(UINT_MAX) + ("long",) and _LEADING_ZERO_RE.match(value):
        return None, _octal_problem(value, kind)
    if kind in UINT_MAX:
        if isinstance(value, str) and value.upper() in ("INFINITE", "UNLIMITED"):
            return value.upper(), None
        problem = check_int(value, 0, UINT_MAX[kind], "INFINITE or an integer", "%s in Slurm" % kind)
        return (None, problem) if problem else (str(as_int(value)), None)
    if kind == "long":
        number = as_int(value) if not (isinstance(value, str) and value.startswith("-")) else None
        if isinstance(value, str) and value.startswith("-") and as_int(value[1:]) is not None:
            number = -as_int(value[1:])
        if isinstance(value, int) and not isinstance(value, bool):
            number = value
        if number is None or not -(2 ** 63) <= number < 2 ** 63:
            return None, ("an integer (long in Slurm)", describe(value), None)
        return str(number), None
    if kind == "boolean":
        if isinstance(value, bool):
            return ("yes" if value else "no"), None
        if isinstance(value, str) and slurm_boolean(value) is not None:
            return value, None
        if isinstance(value, int) and value in (0, 1):
            return str(value), None
        return None, ("yes or no (a boolean in Slurm)", describe(value), None)
    if kind in ("float", "double"):
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            text = repr(value)
        elif isinstance(value, str) and re.match(r"\A[0-9]+(\.[0-9]+)?\Z", value):
            text = value
        else:
            return None, ("a decimal number (%s in Slurm)" % kind, describe(value), None)
        if text in ("inf", "nan", "-inf") or text.startswith("-"):
            return None, ("a decimal number >= 0 (%s in Slurm)" % kind, describe(value), None)
        return text, None
    raise ValueError("not a typed option kind: %r" % (kind,))
