"""Show a saved MemCo memory snapshot: local graph sizes, record counts by type, and the
promoted global records with their evidence and Wilson score.

    python scripts/inspect_memory.py results/demo/alfworld_suite/memco/smollm2-135m/seed0
    python scripts/inspect_memory.py RUN_DIR/memory_final/run0       # a learning run's end
    python scripts/inspect_memory.py RUN_DIR --threshold 0.5 --top 50   # another lambda
"""

from __future__ import annotations

import argparse
import sys

from memarena.core import ConfigError
from memarena.memory.memco.inspect import describe, load_snapshot


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "run_dir",
        help="a MemCo run directory, its memory/ folder, or a memory_final/run<k> folder",
    )
    parser.add_argument("--threshold", type=float, default=0.35, help="lambda (default 0.35)")
    parser.add_argument("--alpha", type=float, default=0.05)
    parser.add_argument("--rule", choices=["wilson", "empirical"], default="wilson")
    parser.add_argument("--top", type=int, default=20, help="global records to list")
    args = parser.parse_args()
    try:
        state = load_snapshot(args.run_dir)
        print(describe(state, threshold=args.threshold, alpha=args.alpha, rule=args.rule,
                       top=args.top))
    except ConfigError as exc:
        print(exc, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
