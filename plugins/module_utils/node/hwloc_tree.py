"""hwloc's CPU-side object tree, rebuilt in Python: insertion by cpuset, levels, and XML import.

Slurm asks hwloc (with its own filters) for Packages, Cores and PUs, and numbers cores in hwloc's *logical*
order. That order is a depth-first walk of the whole tree, where every object's children are sorted by
their lowest cpu. So every object between Package and Core matters (Dies, L3 caches, NUMA Groups, cluster
Groups, distance Groups): a NUMA Group inside a package (Intel sub-NUMA clustering) numbers the cores of
that NUMA node first. The insertion rules follow hwloc 2's ``hwloc___insert_object_by_cpuset``
(``hwloc/topology.c``): an object that intersects another without inclusion is dropped, equal cpusets nest
by type order, a Group equal to another object disappears; the levels follow ``hwloc_connect_levels``.

Cpusets are Python ints (see cpusets.py).
"""
import copy
import xml.etree.ElementTree as ET

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpusets

# hwloc 2's obj_type_order (topology.c): lower contains higher when cpusets are equal.
TYPE_ORDER = {
    "Machine": 0, "Group": 1, "MemCache": 2, "NUMANode": 3, "Package": 4, "Die": 5, "L5Cache": 6,
    "L4Cache": 7, "L3Cache": 8, "L3iCache": 9, "L2Cache": 10, "L2iCache": 11, "L1Cache": 12, "L1iCache": 13,
    "Core": 14, "PU": 18,
}
# Slurm's filters (xcpuinfo.c) on top of hwloc's defaults: of all caches only L3 stays; i-caches, memory-side
# caches, Misc and I/O are gone by default; Groups stay where they bring structure.
SLURM_KEPT = frozenset(("Machine", "Group", "NUMANode", "Package", "Die", "L3Cache", "Core", "PU"))

# Group kinds (hwloc private.h): merging keeps the lower kind.
GROUP_KIND_LINUX_CLUSTER = 222
GROUP_KIND_S390_BOOK = 110
GROUP_KIND_DISTANCE = 900
GROUP_KIND_MEMORY = 1001

EQUAL, INCLUDED, CONTAINS, INTERSECTS, DIFFERENT = "equal", "included", "contains", "intersects", "different"


class Obj(object):
    """One hwloc object: ``type`` as hwloc's XML spells it, ``cpuset`` an int, ``os_index`` a label only."""

    __slots__ = ("type", "cpuset", "os_index", "children", "parent", "kind", "subkind", "subtype", "dont_merge",
                 "depth", "logical_index", "infos", "memory")

    def __init__(self, type_, cpuset, os_index=None, kind=0, subkind=0, subtype=None, dont_merge=False):
        self.type = type_
        self.cpuset = cpuset
        self.os_index = os_index
        self.children = []
        self.parent = None
        self.kind = kind
        self.subkind = subkind
        self.subtype = subtype
        self.dont_merge = dont_merge
        self.depth = None
        self.logical_index = None
        self.infos = {}
        self.memory = False  # has NUMA nodes attached (kept even without cpus, like hwloc)

    @property
    def first(self):
        """Sort key among siblings: the lowest cpu; an empty cpuset sorts last (hwloc_bitmap_compare_first)."""
        return cpusets.first(self.cpuset) if self.cpuset else float("inf")

    def same_type(self, other):
        if self.type != other.type:
            return False
        return self.type != "Group" or (self.kind, self.subkind) == (other.kind, other.subkind)

    def walk(self):
        yield self
        for child in self.children:
            yield from child.walk()

    def __repr__(self):
        return "%s(P#%s %s)" % (self.type, self.os_index, cpusets.to_cpulist(self.cpuset))


def _compare_sets(a, b):
    if not a or not b:
        return DIFFERENT
    if a == b:
        return EQUAL
    common = a & b
    if not common:
        return DIFFERENT
    if common == a:
        return INCLUDED
    if common == b:
        return CONTAINS
    return INTERSECTS


def _compare_types(new, old):
    order = TYPE_ORDER[new.type] - TYPE_ORDER[old.type]
    if order > 0:
        return INCLUDED
    if order < 0:
        return CONTAINS
    if new.type == "Group" and (new.kind, new.subkind) != (old.kind, old.subkind):
        return DIFFERENT
    return EQUAL


class Tree(object):
    """An hwloc topology under construction (``insert``) or imported (``from_xml``), then ``finish()``ed."""

    def __init__(self, complete=0):
        self.root = Obj("Machine", complete, 0)
        self.rejected = []     # (obj, reason): objects hwloc would refuse ("intersection without inclusion")
        self.levels = []
        self.allowed = None    # allowed cpus (cgroup cpuset), None when unknown (= all)
        self.numa_nodes = {}   # os index -> cpuset
        self.cpukinds = []     # [(cpuset, {info name: value})]
        self.infos = {}
        self.complete = complete

    # --- construction -----------------------------------------------------------------------------------
    def insert(self, obj, under=None):
        """Insert like hwloc; returns the object now in the tree (``obj`` or the one it merged into) or None."""
        result = self._insert(under or self.root, obj)
        if result is None:
            self.rejected.append((obj, "intersection without inclusion"))
        return result

    def _insert(self, cur, obj):
        putp = None
        kept = []
        moved = []
        for child in cur.children:
            res = _compare_sets(obj.cpuset, child.cpuset)
            if res == EQUAL:
                merged = self._try_merge_group(child, obj)
                if merged is not None:
                    return merged
                res = _compare_types(obj, child)
            if res == EQUAL:
                return child
            if res == INCLUDED:
                return self._insert(child, obj)
            if res == INTERSECTS:
                return None
            if res == CONTAINS:
                moved.append(child)
                continue
            if putp is None and obj.first < child.first:
                putp = len(kept)
            kept.append(child)
        for child in moved:
            child.parent = obj
        obj.children = moved + obj.children if obj.children else moved
        obj.children.sort(key=lambda o: o.first)
        kept.insert(len(kept) if putp is None else putp, obj)
        obj.parent = cur
        cur.children = kept
        return obj

    @staticmethod
    def _try_merge_group(old, new):
        """hwloc__insert_try_merge_group: a Group never survives next to an object with the same cpuset."""
        if new.type == "Group" and old.type == "Group":
            if new.dont_merge and old.dont_merge:
                return None
            if new.dont_merge or (not old.dont_merge and new.kind < old.kind):
                old.kind, old.subkind, old.subtype, old.dont_merge = new.kind, new.subkind, new.subtype, new.dont_merge
            return old
        if new.type == "Group" and not new.dont_merge:
            if old.type == "PU" and new.kind == GROUP_KIND_MEMORY:
                return None
            return old
        if old.type == "Group" and not old.dont_merge:
            if new.type == "PU" and old.kind == GROUP_KIND_MEMORY:
                return None
            # the new object takes the Group's place (hwloc_replace_linked_object)
            old.type, old.os_index, old.kind, old.subkind = new.type, new.os_index, new.kind, new.subkind
            old.subtype, old.dont_merge, old.infos = new.subtype, new.dont_merge, new.infos
            return old
        return None

    def find_covering(self, cpuset):
        """hwloc__find_obj_covering_memory_cpuset: the deepest object whose cpuset includes ``cpuset``,
        stopping at the first exact match."""
        parent = self.root
        while True:
            child = next((c for c in parent.children if c.cpuset and (cpuset & c.cpuset) == cpuset), None)
            if child is None:
                return parent
            if child.cpuset == cpuset:
                return child
            parent = child

    # --- finishing --------------------------------------------------------------------------------------
    def finish(self, pus=None, sort=True):
        """Restrict every cpuset to the PUs, drop empty objects, order children (``sort``; an imported
        XML is already in hwloc's order), build levels, merge structure-less Group levels
        (hwloc_filter_levels_keep_structure)."""
        if pus is None:
            pus = 0
            for obj in self.root.walk():
                if obj.type == "PU":
                    pus |= obj.cpuset
        self._restrict(self.root, pus, sort)
        self.root.cpuset = pus
        self._connect_levels()
        self._merge_structureless_group_levels()
        return self

    def restricted(self, pus):
        """A copy restricted to the cpus ``pus`` like ``hwloc_topology_restrict`` (flags 0): the other PUs and
        every object left without cpus are removed (objects holding NUMA nodes stay), levels are rebuilt."""
        tree = copy.deepcopy(self)
        tree.complete = (tree.complete or 0) & pus
        if tree.allowed is not None:
            tree.allowed &= pus
        tree.cpukinds = [(cpuset & pus, info) for cpuset, info in tree.cpukinds if cpuset & pus]
        return tree.finish(pus=pus, sort=False)

    def _restrict(self, obj, pus, sort):
        children = []
        for child in obj.children:
            child.cpuset &= pus
            self._restrict(child, pus, sort)
            if child.cpuset or child.children or child.memory:
                children.append(child)
        if sort:
            children.sort(key=lambda o: o.first)
        obj.children = children

    def _connect_levels(self):
        self.levels = [[self.root]]
        self.root.depth = 0
        objs = list(self.root.children)
        while objs:
            top = next((o for o in objs if o.type != "PU"), objs[0])
            for o in objs:
                if not o.same_type(top) and _find_same_type(o, top):
                    top = o
            taken, new = [], []
            for o in objs:
                if o.same_type(top):
                    taken.append(o)
                    new.extend(o.children)
                else:
                    new.append(o)
            depth = len(self.levels)
            for i, o in enumerate(taken):
                o.depth, o.logical_index = depth, i
            self.levels.append(taken)
            objs = new

    def _merge_structureless_group_levels(self):
        changed = False
        i = len(self.levels) - 1
        while i > 0:
            upper, lower = self.levels[i - 1], self.levels[i]
            if upper[0].type == "Group" or lower[0].type == "Group":
                if (len(upper) == len(lower) and all(l.parent is u and len(u.children) == 1
                                                     for u, l in zip(upper, lower))
                        and not any(o.dont_merge for o in upper + lower)):
                    for parent, child in zip(upper, lower):
                        if parent.type == "Group":
                            self._replace(parent, child)
                        else:
                            parent.children = child.children
                            for grandchild in parent.children:
                                grandchild.parent = parent
                    changed = True
            i -= 1
        if changed:
            self._connect_levels()

    def _replace(self, parent, child):
        grand = parent.parent
        if grand is None:
            self.root = child
            child.parent = None
            return
        grand.children[grand.children.index(parent)] = child
        child.parent = grand

    # --- queries ----------------------------------------------------------------------------------------
    def objects(self, type_):
        """Objects of a type in logical order (their level, or depth-first order)."""
        for level in self.levels:
            if level and level[0].type == type_:
                return list(level)
        return [o for o in self.root.walk() if o.type == type_]

    def pus(self):
        return self.root.cpuset

    def inside(self, cpuset, type_):
        """hwloc_get_obj_inside_cpuset_by_type: objects of ``type_`` (logical order) within ``cpuset``."""
        return [o for o in self.objects(type_) if o.cpuset and (o.cpuset & cpuset) == o.cpuset]


def _find_same_type(root, obj):
    for child in root.children:
        if child.same_type(obj) or _find_same_type(child, obj):
            return True
    return False


# --- hwloc XML (v2, as lstopo or hwloc_topology_export_xmlbuffer write it) -----------------------------------

_XML_TYPES = {"Socket": "Package", "Cache": None}


def _xml_type(elem):
    type_ = elem.get("type")
    type_ = _XML_TYPES.get(type_, type_)
    if type_ is None:  # v1 "Cache" with depth/cache_type attributes
        depth = elem.get("depth", "1")
        ctype = elem.get("cache_type", "0")
        type_ = "L%s%sCache" % (depth, "i" if ctype == "2" else "")
    return type_


def from_xml(text, keep=SLURM_KEPT):
    """Build a finished Tree from hwloc XML text (the topology hwloc itself built: no re-insertion).

    Objects whose type is not in ``keep`` are removed and their children attached to their parent, like
    hwloc's type filters do on XML import. The root's ``allowed_cpuset`` becomes ``tree.allowed``.
    Raises ValueError on text that is not an hwloc topology.
    """
    try:
        doc = ET.fromstring(text)
    except ET.ParseError as exc:
        raise ValueError("not hwloc XML: %s" % exc)
    if doc.tag != "topology":
        raise ValueError("not hwloc XML: root element <%s>" % doc.tag)
    root_elem = doc.find("object")
    if root_elem is None:
        raise ValueError("hwloc XML without a root object")
    tree = Tree()
    tree.root = _import(root_elem, tree, keep, top=True)[0]
    for kind in doc.findall("cpukind"):
        tree.cpukinds.append((cpusets.parse_hwloc_bitmap(kind.get("cpuset")),
                              {i.get("name"): i.get("value") for i in kind.findall("info")}))
    complete = root_elem.get("complete_cpuset")
    tree.complete = cpusets.parse_hwloc_bitmap(complete) if complete else None
    allowed = root_elem.get("allowed_cpuset")
    tree.allowed = cpusets.parse_hwloc_bitmap(allowed) if allowed else None
    for info in root_elem.findall("info"):
        tree.infos[info.get("name")] = info.get("value")
    tree.finish(pus=cpusets.parse_hwloc_bitmap(root_elem.get("cpuset")) or None, sort=False)
    return tree


def _import(elem, tree, keep, top=False):
    """Objects for ``elem``: itself, or its children when its type is filtered out."""
    if elem.tag != "object":
        return []
    type_ = _xml_type(elem)
    children = []
    for child_elem in elem.findall("object"):
        children.extend(_import(child_elem, tree, keep))
    kind = int(elem.get("kind", "0") or 0)
    if type_ == "NUMANode":
        tree.numa_nodes[int(elem.get("os_index", "-1"))] = cpusets.parse_hwloc_bitmap(elem.get("cpuset"))
        if not children:
            return []
        type_, kind = "Group", GROUP_KIND_MEMORY  # hwloc 1.x XML: NUMA nodes were CPU-side parents
    if type_ not in TYPE_ORDER:
        return []  # I/O, Misc, MemCache: no CPU-side role
    if not top and type_ not in keep:
        return children
    os_index = elem.get("os_index")
    obj = Obj(type_, cpusets.parse_hwloc_bitmap(elem.get("cpuset")),
              int(os_index) if os_index not in (None, "") and type_ != "Group" else None,
              kind=kind, subkind=int(elem.get("subkind", "0") or 0), subtype=elem.get("subtype"))
    for info in elem.findall("info"):
        obj.infos[info.get("name")] = info.get("value")
    obj.memory = elem.get("type") == "NUMANode" or any(c.get("type") == "NUMANode" for c in elem.findall("object"))
    obj.children = children
    for child in children:
        child.parent = obj
    return [obj]
