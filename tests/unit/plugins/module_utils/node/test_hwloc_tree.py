"""cpusets (Linux and hwloc cpu set formats) and hwloc_tree (hwloc's insertion and level rules)."""
import pytest

from ansible_collections.hpc.slurm_gres.plugins.module_utils.node import cpusets
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.hwloc_tree import (
    GROUP_KIND_DISTANCE,
    GROUP_KIND_MEMORY,
    Obj,
    Tree,
    from_xml,
)


def test_kernel_masks_lists_and_hwloc_bitmaps():
    assert cpusets.parse_kernel_mask("00000000,00000003\n") == 0b11
    assert cpusets.parse_kernel_mask("ffffffff,ffffffff") == (1 << 64) - 1
    assert cpusets.parse_cpulist("0-3,8") == 0b100001111
    assert cpusets.parse_cpulist("") == 0
    # hwloc writes zero words as nothing between commas, and infinite sets with 0xf...f
    assert cpusets.bits(cpusets.parse_hwloc_bitmap("0x0000000f,,0x0")) == [64, 65, 66, 67]
    assert cpusets.bits(cpusets.parse_hwloc_bitmap("0xf...f,0x00000001")) == [0]
    assert cpusets.to_kernel_mask(0b11 << 32, 40) == "00000003,00000000"
    assert cpusets.to_hwloc_bitmap(0xF << 64) == "0x0000000f,0x00000000,0x00000000"
    assert cpusets.to_cpulist(0b1011110001) == "0,4-7,9"
    with pytest.raises(ValueError):
        cpusets.parse_kernel_mask("not hex")


def tree_of(*objs, **kwargs):
    tree = Tree()
    results = [tree.insert(o) for o in objs]
    for cpu in kwargs.get("pus", ()):
        tree.insert(Obj("PU", 1 << cpu, cpu))
    return tree, results


def test_children_are_ordered_by_their_lowest_cpu_not_by_insertion():
    tree, _objs = tree_of(Obj("Core", 0b1100, 7), Obj("Core", 0b0011, 9), Obj("PU", 1 << 2, 2), Obj("PU", 1, 0))
    tree.finish()
    assert [c.os_index for c in tree.objects("Core")] == [9, 7]
    assert [p.os_index for p in tree.objects("PU")] == [0, 2]


def test_an_object_intersecting_another_without_inclusion_is_refused():
    tree, results = tree_of(Obj("Package", 0b0011, 0), Obj("Group", 0b0110, None, kind=GROUP_KIND_MEMORY))
    assert results[1] is None
    assert tree.rejected[0][1] == "intersection without inclusion"


def test_equal_cpusets_nest_by_type_and_groups_vanish_into_real_objects():
    tree, results = tree_of(Obj("L3Cache", 0b1111, 0), Obj("Package", 0b1111, 0),
                            Obj("Group", 0b1111, None, kind=GROUP_KIND_DISTANCE), pus=range(4))
    assert results[2] is results[1] or results[2] is results[0]  # the Group merged into an equal object
    tree.finish()
    assert [level[0].type for level in tree.levels] == ["Machine", "Package", "L3Cache", "PU"]


def test_a_group_around_interleaved_cores_reorders_them():
    # SNC: a memory Group with cores 0 and 2 of a package whose cores are 0..3.
    tree = Tree()
    tree.insert(Obj("Package", 0b1111, 0))
    for cpu in range(4):
        tree.insert(Obj("Core", 1 << cpu, cpu))
    tree.insert(Obj("Group", 0b0101, None, kind=GROUP_KIND_MEMORY))
    tree.insert(Obj("Group", 0b1010, None, kind=GROUP_KIND_MEMORY))
    for cpu in range(4):
        tree.insert(Obj("PU", 1 << cpu, cpu))
    tree.finish()
    assert [c.os_index for c in tree.objects("Core")] == [0, 2, 1, 3]


def test_cpuless_groups_come_last():
    tree = Tree()
    empty = Obj("Group", 0, None, kind=GROUP_KIND_MEMORY)
    empty.memory = True
    tree.root.children.append(empty)
    tree.insert(Obj("Package", 0b11, 0))
    tree.insert(Obj("PU", 0b01, 0))
    tree.insert(Obj("PU", 0b10, 1))
    tree.finish()
    assert [o.type for o in tree.root.children] == ["Package", "Group"]


XML_V2 = """<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE topology SYSTEM "hwloc2.dtd">
<topology version="2.0">
  <object type="Machine" os_index="0" cpuset="0x0000000f" complete_cpuset="0x0000001f" allowed_cpuset="0x00000007">
    <object type="Package" os_index="0" cpuset="0x0000000f">
      <object type="NUMANode" os_index="0" cpuset="0x0000000f"/>
      <object type="L2Cache" cpuset="0x00000005" cache_size="1048576" depth="2">
        <object type="Core" os_index="5" cpuset="0x00000001"><object type="PU" os_index="0" cpuset="0x00000001"/></object>
        <object type="Core" os_index="4" cpuset="0x00000004"><object type="PU" os_index="2" cpuset="0x00000004"/></object>
      </object>
      <object type="Core" os_index="6" cpuset="0x0000000a">
        <object type="PU" os_index="1" cpuset="0x00000002"/><object type="PU" os_index="3" cpuset="0x00000008"/>
      </object>
    </object>
  </object>
  <cpukind cpuset="0x00000005"><info name="CoreType" value="IntelAtom"/></cpukind>
</topology>
"""


def test_xml_import_keeps_hwlocs_order_and_drops_what_slurm_filters():
    tree = from_xml(XML_V2)
    assert [lvl[0].type for lvl in tree.levels] == ["Machine", "Package", "Core", "PU"]
    assert [c.os_index for c in tree.objects("Core")] == [5, 4, 6]
    assert tree.allowed == 0b0111 and tree.complete == 0b11111
    assert tree.numa_nodes == {0: 0b1111}
    assert tree.cpukinds == [(0b0101, {"CoreType": "IntelAtom"})]
    with pytest.raises(ValueError, match="not hwloc XML"):
        from_xml("<html/>")
