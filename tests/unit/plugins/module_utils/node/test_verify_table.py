"""format_findings_table: a fixed-width table an admin can read in an Ansible failure message."""
from ansible_collections.hpc.slurm_gres.plugins.module_utils.node.verify import finding, format_findings_table

F = [
    finding("warning", "order", None, "Slurm GPU order = PCI bus order: /dev/nvidia0,/dev/nvidia1",
            "Slurm order: /dev/nvidia1,/dev/nvidia0", "list the GPUs in PCI bus order"),
    finding("error", "present", None, "8 GPUs of type a100 visible to nvidia-smi",
            "declares 8 a100, nvidia-smi sees 7", "a GPU fell off the bus"),
    finding("error", "cores", 3, "gres.conf line 2: Cores within socket 0 (cores 0-31), local to GPU 3 "
            "(NVIDIA A100-SXM4-80GB, 00000000:4E:00.0)", "Cores=32-63 names socket 1 (cores 32-63)", None),
]


def test_header_rule_and_summary():
    lines = format_findings_table(F).splitlines()
    assert lines[0].split() == ["SEVERITY", "CHECK", "GPU", "EXPECTED", "FOUND"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert lines[-1] == "2 error(s), 1 warning(s)"


def test_errors_come_first_and_columns_line_up():
    lines = format_findings_table(F).splitlines()
    rows = [line for line in lines[2:-1] if line[:1].strip()]
    assert [r.split()[0] for r in rows] == ["error", "error", "warning"]
    assert [r.split()[1] for r in rows] == ["present", "cores", "order"]
    header = lines[0]
    for row in rows:
        # every row starts its CHECK, GPU and EXPECTED cells under the header's columns
        for title in ("CHECK", "GPU", "EXPECTED"):
            col = header.index(title)
            assert row[col - 1] == " " and row[col] != " ", (title, row)


def test_long_cells_wrap_within_their_column_and_hints_follow_their_row():
    text = format_findings_table(F)
    lines = text.splitlines()
    width = len(lines[1])
    assert all(len(line) <= width + 2 for line in lines[:-1] if "hint:" not in line)
    assert "declares 8 a100, nvidia-smi sees 7" in text
    present = next(i for i, line in enumerate(lines) if line.startswith("error") and "present" in line)
    assert lines[present + 1].strip() == "hint: a GPU fell off the bus"
    # the wrapped EXPECTED cell of the cores row continues in the same column on the next line
    cores = next(i for i, line in enumerate(lines) if line.startswith("error") and " cores " in line)
    col = lines[0].index("EXPECTED")
    assert lines[cores + 1][:col].strip() == "" and lines[cores + 1][col:].strip()
    assert "".join(lines[cores + i][col:col + 46].strip() + " " for i in range(3)).startswith(
        "gres.conf line 2: Cores within socket 0")


def test_gpu_column_shows_dash_for_none_and_the_index_otherwise():
    lines = format_findings_table(F).splitlines()
    col = lines[0].index("GPU")
    cells = [line[col:col + 3].strip() for line in lines[2:-1] if line[:1].strip()]
    assert cells == ["-", "3", "-"]


def test_empty_and_title():
    assert format_findings_table([]) == "no findings"
    assert format_findings_table(F, title="node gpu-a01").splitlines()[0] == "node gpu-a01"


def test_a_pci_bus_id_in_the_gpu_column_stays_on_one_line():
    # readiness findings name the GPU by bus id: it was cut into four lines ("00000", "000:9", ...)
    table = format_findings_table([finding("error", "xid", "00000000:9B:00.0", "no fatal Xid since the driver was loaded",
                                           "Xid 119 at Sun Feb 23 16:30:13 2025: Timeout after 45s")])
    [row] = [line for line in table.splitlines() if line.startswith("error")]
    assert row.split()[:3] == ["error", "xid", "00000000:9B:00.0"]
