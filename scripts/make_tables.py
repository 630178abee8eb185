"""Collect results/**/metrics.json into Markdown and CSV tables (mean ± std over seeds).

    python scripts/make_tables.py                       # results/ -> results/tables/
    python scripts/make_tables.py --results-dir /scratch/results --out tables \
        --metrics success_rate progress_rate avg_at_k pass_at_k

Writes runs.csv (one row per run), summary.csv (numeric mean/std per group) and summary.md.
"""

from __future__ import annotations

import argparse
import logging
import sys

from memarena.results.collect import DEFAULT_BY, DEFAULT_METRICS, collect, write_tables

log = logging.getLogger("make_tables")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", default="results", help="root of the results layout")
    parser.add_argument("--out", default="results/tables", help="folder for the tables")
    parser.add_argument("--metrics", nargs="+", default=None,
                        help=f"metrics to tabulate (default: {' '.join(DEFAULT_METRICS)}, plus "
                             "avg_at_k pass_at_k when present)")
    parser.add_argument("--by", nargs="+", default=list(DEFAULT_BY),
                        help="columns that identify a row (seeds are averaged)")
    parser.add_argument("--digits", type=int, default=3, help="decimals in summary.md")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        df = collect(args.results_dir)
        paths = write_tables(df, args.out, args.metrics, args.by, args.digits)
    except (FileNotFoundError, ValueError) as e:
        parser.exit(2, f"{e}\n")
    print(paths["summary_md"].read_text())
    log.info("%d runs collected from %s", len(df), args.results_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())
