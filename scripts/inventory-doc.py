"""Write the variable tables of docs/inventory.md from the schema (plugins/plugin_utils/model_schema.py DOC_TABLES).

    .venv/bin/python scripts/inventory-doc.py          rewrite the tables between their markers
    .venv/bin/python scripts/inventory-doc.py --check  exit 1 when the page differs (what the unit test checks)
"""
import os
import sys

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
sys.path.insert(0, os.path.join(ROOT, ".cache", "collections"))

from ansible_collections.hpc.slurm_gres.plugins.plugin_utils.model_schema import DOC_TABLES, doc_table  # noqa: E402

PAGE = os.path.join(ROOT, "docs", "inventory.md")
BEGIN = "<!-- generated from model_schema.DOC_TABLES[%r] by scripts/inventory-doc.py; edit it there -->\n"
END = "<!-- end of generated table -->\n"


def generated(text):
    """The page with every marked table written from the schema; ValueError when a marker is missing."""
    for kind in DOC_TABLES:
        begin = BEGIN % kind
        start = text.find(begin)
        end = text.find(END, start)
        if start < 0 or end < 0:
            raise ValueError("docs/inventory.md: no %s...%s pair for %r" % (begin.strip(), END.strip(), kind))
        text = text[:start + len(begin)] + doc_table(kind) + text[end:]
    return text


def main():
    with open(PAGE, encoding="utf-8") as handle:
        text = handle.read()
    new = generated(text)
    if "--check" in sys.argv[1:]:
        if new != text:
            print("docs/inventory.md differs from the schema: run scripts/inventory-doc.py", file=sys.stderr)
            return 1
        return 0
    if new != text:
        with open(PAGE, "w", encoding="utf-8") as handle:
            handle.write(new)
    return 0


if __name__ == "__main__":
    sys.exit(main())
