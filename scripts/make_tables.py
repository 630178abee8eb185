"""Collect results/**/metrics.json into Markdown and CSV tables (mean ± std over seeds).

    python scripts/make_tables.py                       # results/ -> results/tables/
    python scripts/make_tables.py --results-dir /scratch/results --out tables \
        --metrics success_rate progress_rate avg_at_k pass_at_k

Writes runs.csv (one row per run), summary.csv (numeric mean/std per group) and summary.md.
Every row carries its runs' flags (``errors``: episodes that ended with an error, counted as
failures; ``capped``; ``stand_in_data``; ``not_paper_backbone``; ...), each cell its seeds
(``n=3``; ``n=2 of 3`` when the sweep lost one; seeds that were one run repeated are printed
once), and the runs with errors or timeouts are named in a warning. When any run is flagged
(a flag other than ``train_test_overlap``, which MemCo's PDDL protocol has) nothing is written
unless ``--allow-flagged`` says the tables are meant as checks: flagged numbers never leave
looking like results.
"""

from __future__ import annotations

import argparse
import logging
import sys

from memarena.results.collect import (
    DEFAULT_BY,
    DEFAULT_METRICS,
    collect,
    disqualifying_flags,
    write_tables,
)

log = logging.getLogger("make_tables")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", default="results", help="root of the results layout")
    parser.add_argument("--out", default="results/tables", help="folder for the tables")
    parser.add_argument(
        "--metrics",
        nargs="+",
        default=None,
        help=f"metrics to tabulate (default: {' '.join(DEFAULT_METRICS)}, plus "
        "avg_at_k pass_at_k when present)",
    )
    parser.add_argument(
        "--by",
        nargs="+",
        default=list(DEFAULT_BY),
        help="columns that identify a row (seeds are averaged)",
    )
    parser.add_argument("--digits", type=int, default=3, help="decimals in summary.md")
    parser.add_argument(
        "--allow-flagged",
        action="store_true",
        help="write the tables even when some runs are flagged (capped, stand-in data, errors, "
        "not a paper backbone, ...); the flags column says which",
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    try:
        df = collect(args.results_dir)
        flagged = flagged_rows(df)
        if flagged and not args.allow_flagged:
            parser.exit(2, refusal(flagged, len(df)))
        paths = write_tables(df, args.out, args.metrics, args.by, args.digits)
    except (FileNotFoundError, ValueError) as e:
        parser.exit(2, f"{e}\n")
    print(paths["summary_md"].read_text())
    for line in flagged_runs(df):
        log.warning(line)
    log.info("%d runs collected from %s", len(df), args.results_dir)
    return 0


def flagged_rows(df) -> list[str]:
    """``<run dir>: <flags>`` for each run with a flag that makes it other than a paper cell."""
    if "flags" not in df.columns:
        return []
    rows = []
    for _, run in df.iterrows():
        flags = disqualifying_flags(run["flags"])
        if flags:
            rows.append(f"  {run.get('run_dir')}: {', '.join(flags)}")
    return rows


def refusal(flagged: list[str], n_runs: int) -> str:
    """The message that ends make_tables when runs are flagged and --allow-flagged is not set."""
    shown = flagged[:20] + ([f"  ... and {len(flagged) - 20} more"] if len(flagged) > 20 else [])
    return (
        f"memarena: {len(flagged)} of {n_runs} runs are flagged (not full paper cells), so no "
        "table was written:\n" + "\n".join(shown) + "\nRerun them as paper cells, point "
        "--results-dir at the runs that are, or add --allow-flagged to write the tables anyway "
        "(each row then carries its flags).\n"
    )


def flagged_runs(df) -> list[str]:
    """A warning naming each run whose episodes ended with an error or ran out of time (its
    ``errors`` / ``timeouts`` flag), with the counts: such a row is not a clean result."""
    if "flags" not in df.columns:
        return []
    lines = []
    for _, run in df.iterrows():
        flags = str(run["flags"] or "").split(",")
        if "errors" not in flags and "timeouts" not in flags:
            continue
        n = run.get("n_episodes")
        counts = [
            f"{run.get(key):g} {what}"
            for key, what in (
                ("n_errors", f"of {n} evaluation episodes ended with an error"),
                ("acquisition_errors", "acquisition episodes ended with an error"),
                ("n_timeouts", f"of {n} evaluation episodes timed out"),
            )
            if run.get(key) == run.get(key) and run.get(key)  # not NaN, not 0
        ]
        lines.append(f"  {run.get('run_dir')}: {'; '.join(counts)}")
    if lines:
        head = f"WARNING: {len(lines)} run(s) are not clean results (errors count as failures):"
        lines.insert(0, head)
    return lines


if __name__ == "__main__":
    sys.exit(main())
