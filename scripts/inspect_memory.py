"""Show a run's saved memory, for every method that stores one: MemCo's local graphs and
promoted global records, G-Memory's and EvoGraph-Mem's insights (EvoGraph's version chains),
ReMe's experiences with their utility counts, and the baselines' entries (MemoryBank, Voyager,
Generative Agents, A-Mem, MemRL, MemSkill, LangMem).

    python scripts/inspect_memory.py results/demo/alfworld_suite/memco/smollm2-135m/seed0
    python scripts/inspect_memory.py RUN_DIR --all          # also the memory_final/ snapshots
    python scripts/inspect_memory.py RUN_DIR/memory_final/run0       # a learning run's end
    python scripts/inspect_memory.py RUN_DIR --threshold 0.5 --top 50   # MemCo: another lambda
"""

from __future__ import annotations

import argparse
import sys

from memarena.core import ConfigError
from memarena.memory.snapshots import describe_snapshot, find_snapshots, load_snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run_dir", help="a run directory, its memory/ folder, or a memory_final/run<k> folder"
    )
    parser.add_argument("--all", action="store_true", help="every snapshot of the run")
    parser.add_argument("--top", type=int, default=20, help="entries to list per section")
    parser.add_argument("--threshold", type=float, default=0.35, help="MemCo: lambda")
    parser.add_argument("--alpha", type=float, default=0.05, help="MemCo: alpha")
    parser.add_argument("--rule", choices=["wilson", "empirical"], default="wilson")
    args = parser.parse_args()
    options = {"top": args.top, "threshold": args.threshold, "alpha": args.alpha,
               "rule": args.rule}  # fmt: skip
    try:
        paths = find_snapshots(args.run_dir)
        shown = paths if args.all else paths[:1]
        for n, path in enumerate(shown):
            blob = load_snapshot(path)
            print(("\n" if n else "") + f"== {path} (method={blob.get('method')})")
            print(describe_snapshot(blob, **options))
        if len(paths) > len(shown):
            print(f"\n{len(paths) - len(shown)} more snapshots (--all): "
                  + ", ".join(str(p.parent) for p in paths[len(shown):]))  # fmt: skip
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
