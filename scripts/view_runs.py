"""Write one static HTML page to browse a results tree: the runs with their metrics and flags,
each run's episodes, and each episode's steps with the prompt's memory highlighted and the
retrieved memory ids (prompts are there when the run set ``protocol.record_prompts=true``).

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
