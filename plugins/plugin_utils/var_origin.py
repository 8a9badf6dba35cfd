# Copyright: hpc.slurm_gres contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
"""Where a host's inventory variable is defined: the file and line a refusal names (controller side only).

Ansible does not tell which file a host's variable came from (ansible-core 2.19 tags loaded values with their
origin, the earlier releases this collection supports do not), so this reads the files Ansible itself reads for a
host: ``host_vars/<host>`` and ``group_vars/<group>`` for each of its groups (a file, with or without .yml, .yaml or
.json, or a directory of them) beside every inventory source and the playbook, and the ``vars`` of groups and hosts
in YAML inventory files. A file is named when its value of the variable is the value the host has, as it is
written there (a file that sets another value was overridden, and is not named). A value no file holds as it is
(set with ``-e``, made by a template, vaulted, from an INI inventory or a vars plugin) gets no location: the message
then names none rather than a wrong one. Several files holding the same value are all named.
"""
import ast
import os
import re
from collections.abc import Mapping

import yaml

from ansible_collections.hpc.slurm_gres.plugins.module_utils.common.errors import Problem
from ansible_collections.hpc.slurm_gres.plugins.plugin_utils import namespace

VARS_EXTENSIONS = (".yml", ".yaml", ".json")  # Ansible's YAML_FILENAME_EXTENSIONS
INVENTORY_EXTENSIONS = (".yml", ".yaml", ".json")
_NAME_RE = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")
_TOKEN_RE = re.compile(r"\.([^.\[]+)|\[(-?[0-9]+)\]|\[('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")\]")
_MAX_RANGE = 100000  # a host pattern in a YAML inventory is expanded only up to this many names


class _Opaque(object):
    """A value this reader does not construct (a vaulted one): equal to nothing."""

    def __eq__(self, other):
        return False

    def __ne__(self, other):
        return True

    __hash__ = object.__hash__


class _Loader(yaml.SafeLoader):
    pass


def _construct_unsafe(loader, node):
    if isinstance(node, yaml.ScalarNode):
        return loader.construct_scalar(node)
    return _Opaque()


_Loader.add_constructor("!unsafe", _construct_unsafe)
_Loader.add_multi_constructor("!", lambda loader, suffix, node: _Opaque())


def field_path(field):
    """``("hpc_gres_gpus", [0, "type"])`` for ``hpc_gres_gpus[0].type``; (None, []) for a field that is no
    variable."""
    match = _NAME_RE.match(str(field))
    if not match:
        return None, []
    tokens = []
    pos = match.end()
    text = str(field)
    while pos < len(text):
        token = _TOKEN_RE.match(text, pos)
        if not token:
            break
        if token.group(1) is not None:
            tokens.append(token.group(1))
        elif token.group(2) is not None:
            tokens.append(int(token.group(2)))
        else:
            tokens.append(ast.literal_eval(token.group(3)))
        pos = token.end()
    return match.group(0), tokens


def _last_pair(node, key):
    """The (key node, value node) of ``key`` in a mapping node; Ansible keeps the last of duplicate keys."""
    if not isinstance(node, yaml.MappingNode):
        return None
    for key_node, value_node in reversed(node.value):
        if isinstance(key_node, yaml.ScalarNode) and key_node.value == str(key):
            return key_node, value_node
    return None


def _line_of(key_node, value_node, tokens):
    """1-based line of the deepest part of ``tokens`` found below a variable's key."""
    line = key_node.start_mark.line
    node = value_node
    for token in tokens:
        if isinstance(node, yaml.SequenceNode) and isinstance(token, int) and 0 <= token < len(node.value):
            node = node.value[token]
            line = node.start_mark.line
            continue
        pair = _last_pair(node, token)
        if pair is None:
            break
        line = pair[0].start_mark.line
        node = pair[1]
    return line + 1


def _load(path):
    """(root node, constructed data, loader-built data of sub-nodes) of a YAML/JSON file, or (None, None)."""
    try:
        with open(path, "rb") as handle:
            text = handle.read()
        loader = _Loader(text)
        try:
            node = loader.get_single_node()
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except (OSError, yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None, None
    return node, data


def _construct(node):
    loader = _Loader("")
    try:
        return loader.construct_document(node)
    except (yaml.YAMLError, ValueError, TypeError, RecursionError):
        return None
    finally:
        loader.dispose()


def vars_files(directory, name):
    """The files Ansible reads for ``name`` in a group_vars/host_vars ``directory``: ``name`` itself (a file, or a
    directory whose files are read in sorted order, recursively) or the first of ``name`` + .yml/.yaml/.json."""
    base = os.path.join(directory, name)
    for ext in ("",) + VARS_EXTENSIONS:
        path = base + ext
        if os.path.isdir(path):
            return _dir_files(path)
        if os.path.isfile(path):
            return [path]
    return []


def _dir_files(path):
    found = []
    try:
        entries = sorted(os.listdir(path))
    except OSError:
        return found
    for entry in entries:
        if entry.startswith(".") or entry.endswith("~"):
            continue
        full = os.path.join(path, entry)
        ext = os.path.splitext(entry)[1]
        if os.path.isdir(full) and not ext:
            found.extend(_dir_files(full))
        elif os.path.isfile(full) and (not ext or ext in VARS_EXTENSIONS):
            found.append(full)
    return found


def _host_pattern_matches(pattern, host):
    if "[" not in pattern:
        return pattern == host
    try:
        from ansible.plugins.inventory import expand_hostname_range
    except ImportError:
        return False
    bounds = re.findall(r"\[([^:\]]*):([^:\]]*)(?::([0-9]+))?\]", pattern)
    size = 1
    for begin, end, _step in bounds:
        if begin.isdigit() and end.isdigit():
            size *= max(1, int(end) - int(begin) + 1)
    if size > _MAX_RANGE:
        return False
    try:
        return host in expand_hostname_range(pattern)
    except Exception:  # Ansible's own range errors: such an inventory did not load this host from here
        return False


class VarOrigins(object):
    """``where(host, field)``: ``"group_vars/gpu.yml:7"`` (several joined by " and ") or None.

    ``values(host, name)`` returns the value the host has (plain data) or ``MISSING``; ``groups`` is Ansible's
    ``{group: [hosts]}``; ``ancestors`` ``{group: {its ancestor groups}}`` (:func:`group_ancestors`), or None;
    ``sources`` the inventory sources (``ansible_inventory_sources``); ``playbook_dir`` the
    playbook's directory (its group_vars and host_vars count too); paths are shown relative to ``cwd`` when they lie
    below it.
    """

    MISSING = object()

    def __init__(self, values, groups, sources, playbook_dir=None, cwd=None, ancestors=None):
        self._values = values
        self._groups = groups or {}
        self._ancestors = ancestors
        self._member_of = None
        self._cwd = os.path.abspath(cwd or os.getcwd())
        self._files = {}
        self._inventory = []
        self._cache = {}
        bases = []
        for source in list(sources or ()) + ([playbook_dir] if playbook_dir else []):
            source = str(source)
            if not os.path.exists(source):
                continue  # a host list ("a,b,"), a plugin's source name
            base = source if os.path.isdir(source) else os.path.dirname(source)
            if os.path.abspath(base) not in bases:
                bases.append(os.path.abspath(base))
            if source != playbook_dir:
                self._inventory.extend(self._inventory_files(source))
        self._bases = bases

    @staticmethod
    def _inventory_files(source):
        if os.path.isfile(source):
            candidates = [source]
        else:
            try:
                candidates = [os.path.join(source, f) for f in sorted(os.listdir(source))]
            except OSError:
                candidates = []
        return [os.path.abspath(p) for p in candidates if os.path.isfile(p) and (
            os.path.splitext(p)[1] in INVENTORY_EXTENSIONS or not os.path.splitext(p)[1])]

    def _groups_of(self, host):
        if self._member_of is None:
            self._member_of = {}
            for group, members in self._groups.items():
                for member in members or ():
                    self._member_of.setdefault(str(member), set()).add(str(group))
        return self._member_of.get(str(host), set()) | {"all"}

    def _file(self, path):
        if path not in self._files:
            self._files[path] = _load(path)
        return self._files[path]

    def _sources(self, host):
        """[(path, mapping node, constructed mapping)] of every place that may set the host's variables."""
        out = []
        groups = sorted(self._groups_of(host))
        for base in self._bases:
            paths = vars_files(os.path.join(base, "host_vars"), str(host))
            for group in groups:
                paths.extend(vars_files(os.path.join(base, "group_vars"), group))
            for path in paths:
                node, data = self._file(path)
                if isinstance(node, yaml.MappingNode) and isinstance(data, dict):
                    out.append((path, node, data))
        for path in self._inventory:
            for node, data in self._inventory_vars(path, host, groups):
                out.append((path, node, data))
        return out

    def _inventory_vars(self, path, host, groups):
        """The vars mappings of a YAML inventory file that apply to ``host`` (its groups' vars, its own entry)."""
        node, data = self._file(path)
        if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
            return []
        found = []
        pending = [(key.value, value) for key, value in node.value if isinstance(key, yaml.ScalarNode)]
        seen = 0
        while pending and seen < 100000:
            seen += 1
            name, group = pending.pop(0)
            if not isinstance(group, yaml.MappingNode):
                continue
            for key, value in group.value:
                if not isinstance(key, yaml.ScalarNode) or not isinstance(value, yaml.MappingNode):
                    continue
                if key.value == "vars" and name in groups:
                    found.append(value)
                elif key.value == "hosts":
                    found.extend(hv for hk, hv in value.value if isinstance(hk, yaml.ScalarNode)
                                 and isinstance(hv, yaml.MappingNode) and _host_pattern_matches(hk.value, str(host)))
                elif key.value == "children":
                    pending.extend((ck.value, cv) for ck, cv in value.value if isinstance(ck, yaml.ScalarNode))
        return [(n, d) for n, d in ((n, _construct(n)) for n in found) if isinstance(d, dict)]

    def sibling_conflicts(self, hosts):
        """Warnings (``Problem``) for each variable of this collection that the group_vars files of two of a host's
        groups set to different values, where neither group is an ancestor of the other, and the host has one of
        the two values. Ansible then keeps the value of the deeper group, or of the group whose name sorts last (or
        of the higher ``ansible_group_priority``), by accident: a host put in two shape groups silently takes the
        other shape's GPUs. A value set in host_vars, or with ``-e``, is neither group's and gives no warning.
        Group ``vars:`` inside an inventory file are not read for this. Without ``ancestors``, a group whose hosts
        all belong to the other is taken for its child."""
        out = []
        cache = {}
        for host in hosts:
            groups = frozenset(self._groups_of(host))
            if groups not in cache:
                cache[groups] = self._group_conflicts(groups)
            for name, first, second in cache[groups]:
                value = self._values(host, name)
                winner = next((side for side in (second, first) if side[3] == value), None)
                if winner is None:
                    continue
                loser = first if winner is second else second
                out.append(Problem(
                    host, name, "one value among the host's groups (or one in its host_vars)",
                    "groups %s (%s) and %s (%s), neither a child of the other, set different values; the host has "
                    "the value of %s" % (first[0], first[1], second[0], second[1], winner[0]),
                    "Ansible keeps the deeper group's, then the one whose name sorts last, unless "
                    "ansible_group_priority says otherwise: take the host out of %s, or set %s in its host_vars"
                    % (loser[0], name)))
        return out

    def _group_conflicts(self, groups):
        """[(variable, side, side)] with side = (group, "file:line", hosts, value), for groups of one host."""
        members = {g: frozenset(str(h) for h in self._groups.get(g) or ()) for g in groups}
        seen = {}
        for base in self._bases:
            for group in sorted(groups):
                for path in vars_files(os.path.join(base, "group_vars"), group):
                    node, data = self._file(path)
                    if not isinstance(node, yaml.MappingNode) or not isinstance(data, dict):
                        continue
                    for name, value in data.items():
                        if not isinstance(name, str) or not namespace.ours(name):
                            continue
                        pair = _last_pair(node, name)
                        where = "%s:%d" % (self._show(path), pair[0].start_mark.line + 1) if pair else self._show(path)
                        seen.setdefault(name, {})[group] = (group, where, members[group], value)
        conflicts = []
        for name, by_group in sorted(seen.items()):
            sides = [by_group[g] for g in sorted(by_group)]
            for i, first in enumerate(sides):
                for second in sides[i + 1:]:
                    if self._ancestors is not None:
                        nested = first[0] in self._ancestors.get(second[0], ()) or \
                            second[0] in self._ancestors.get(first[0], ())
                    else:
                        nested = first[2] <= second[2] or second[2] <= first[2]
                    if not nested and first[3] != second[3]:
                        conflicts.append((name, first, second))
        return conflicts

    def _show(self, path):
        path = os.path.abspath(path)
        if path.startswith(self._cwd + os.sep):
            return os.path.relpath(path, self._cwd)
        return path

    def where(self, host, field):
        name, tokens = field_path(field)
        if name is None or not namespace.ours(name):
            return None
        key = (str(host), name, tuple(tokens))
        if key not in self._cache:
            self._cache[key] = self._where(host, name, tokens)
        return self._cache[key]

    def _where(self, host, name, tokens):
        value = self._values(host, name)
        if value is self.MISSING:
            return None
        hits = []
        for path, node, data in self._sources(host):
            if name not in data or data[name] != value:
                continue
            pair = _last_pair(node, name)
            if pair is None:
                continue
            hit = "%s:%d" % (self._show(path), _line_of(pair[0], pair[1], tokens))
            if hit not in hits:
                hits.append(hit)
        return " and ".join(hits) or None


def group_ancestors(hostvars):
    """``{group: {names of its ancestor groups}}`` from the inventory a play's ``hostvars`` holds, or None.

    ``HostVars`` keeps its ``InventoryManager`` as ``_inventory`` (ansible-core 2.14 to 2.19), whose groups know their
    parents (``Group.get_ancestors``): the real parent/child relation, which a group's hosts cannot tell (a flat
    INI group whose hosts all belong to a wider group is no child of it)."""
    groups = getattr(getattr(hostvars, "_inventory", None), "groups", None)
    if not isinstance(groups, Mapping):
        return None
    try:
        return {str(name): {str(g.name) for g in group.get_ancestors()} for name, group in groups.items()}
    except (AttributeError, TypeError):
        return None


def plain(value):
    """A raw inventory value as plain data to compare with a file's (vaulted values compare equal to nothing)."""
    if type(value).__name__ in ("AnsibleVaultEncryptedUnicode", "EncryptedString"):
        return _Opaque()
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        return float(value)
    if isinstance(value, str):
        return str.__str__(value)
    if isinstance(value, Mapping):
        return {plain(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    return value
