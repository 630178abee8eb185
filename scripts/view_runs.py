"""Write one static HTML page to browse and compare the runs of a results tree: the runs with
their metrics and flags (search, filter by method / env / success / flag, sort by any column),
each run's episodes (filtered and sorted the same way), each episode's steps with the memory
each step showed (its ids with their text, the memory text with ``protocol.record_memory=true``,
the prompt with the memory marked with ``protocol.record_prompts=true``), and a comparison
page: tick two or more runs, pick a task they share, and see their trajectories side by side,
step by step, with the memory each step showed and the first divergence marked.

    python scripts/view_runs.py results                      # writes results/runs.html
    python scripts/view_runs.py results/demo --out /tmp/demo.html

Open the page in a browser; it needs no server and fetches nothing.
"""

from __future__ import annotations

import argparse
import sys

from memarena.results.viewer import write_page


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("results_dir", help="a results folder, or any folder inside one")
    parser.add_argument("--out", help="the HTML file to write (default <results_dir>/runs.html)")
    args = parser.parse_args()
    try:
        path = write_page(args.results_dir, args.out)
    except (FileNotFoundError, ValueError) as exc:
        print(exc, file=sys.stderr)
        return 2
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
