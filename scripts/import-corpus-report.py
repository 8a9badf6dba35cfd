"""Run the import over a part of the real-config corpus and print each case's verdict and the totals.

    .venv/bin/python scripts/import-corpus-report.py dev|heldout|heldout2|heldout3|heldout4|heldout5|heldout6|heldout7|heldout8 [CASE...]

Needs root and Debian's slurmd (the judge is the real slurmd -G, see tests/integration/import_corpus.py).
"""
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
for sub in ("tests/helpers", "tests/integration", "tests/emulator", ".cache/collections"):
    sys.path.insert(0, os.path.join(ROOT, sub))

import import_corpus  # noqa: E402


def main(argv):
    part = argv[1] if len(argv) > 1 else "dev"
    names = argv[2:] or import_corpus.cases(part)
    results = []
    for case in names:
        result = import_corpus.evaluate(part, case)
        results.append(result)
        status = result["status"] + ("*" if result["drained"] else "")
        print("%-15s %-60s %s" % (status, case, result["detail"][:400]))
        sys.stdout.flush()
    total = import_corpus.summary(results)
    print("\n%(cases)d cases, %(accepted)d accepted by slurmd: %(round_trip)d round-trip exactly (%(rate).0f%%), "
          "%(refused)d refused by name, %(silent_change)d silent changes" % total)
    print("* %(drained)d of the accepted drain a node today (slurm.conf declares more GRES than slurmd registers); "
          "of the other %(working)d: %(working_round_trip)d round-trip exactly (%(working_rate).0f%%)" % total)
    return 1 if total["silent_change"] else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
