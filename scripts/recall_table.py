"""The recall table (issue 52) of a results folder, pooled over seeds:

    python scripts/recall_table.py results/recall    # after: python run.py -m experiment=recall

One row per method: success [95% Wilson interval over tasks], gain over none on the same tasks
[95% paired bootstrap interval], chance, and the summed wall time of its runs
(memarena.reports.recall).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from memarena.reports.recall import markdown, rows

ORDER = ("none", "icl", "memco", "gmemory", "evograph", "reme", "memorybank_parity",
         "voyager_parity", "generative_agents_parity", "amem_full", "memrl", "memskill",
         "langmem")  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path, help="a results folder, e.g. results/recall")
    args = parser.parse_args()
    print(markdown(rows(args.root, ORDER)))


if __name__ == "__main__":
    main()
