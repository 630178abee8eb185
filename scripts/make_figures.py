"""Execute every notebook against a results folder (papermill): all tables and figures at once.

    python scripts/make_figures.py --results-dir results             # -> results/figures/
    python scripts/make_figures.py --results-dir /scratch/results --out figs --notebooks memco reme
    make figures RESULTS=/scratch/results

Each notebook's tagged ``parameters`` cell gets ``RESULTS_DIR`` and ``OUT_DIR`` (``<out>/<name>``,
where it writes its CSV tables and PNG figures); the executed copy is kept as
``<out>/<name>/<name>.ipynb`` to read. A notebook that fails is reported and the others still run;
the exit status is 1 when any failed.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
NOTEBOOKS = ROOT / "notebooks"


def notebook_names() -> list[str]:
    """The notebooks under notebooks/ (``00_overview``, ``memco``, ...), by name."""
    return sorted(p.stem for p in NOTEBOOKS.glob("*.ipynb"))


def run(name: str, results_dir: Path, out: Path, kernel: str = "python3") -> Path:
    """Execute ``notebooks/<name>.ipynb`` with papermill; return the executed copy's path."""
    import papermill

    target = out / name
    target.mkdir(parents=True, exist_ok=True)
    executed = target / f"{name}.ipynb"
    papermill.execute_notebook(
        str(NOTEBOOKS / f"{name}.ipynb"),
        str(executed),
        parameters={"RESULTS_DIR": str(results_dir), "OUT_DIR": str(target)},
        kernel_name=kernel,
        cwd=str(NOTEBOOKS),
        progress_bar=False,
    )
    return executed


def main(argv: list[str] | None = None) -> int:
    names = notebook_names()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--results-dir", default="results", help="root of the results layout")
    parser.add_argument("--out", default=None, help="folder for the outputs (default "
                        "<results-dir>/figures)")
    parser.add_argument("--notebooks", nargs="+", default=names, choices=names, metavar="NAME",
                        help=f"which notebooks (default all: {' '.join(names)})")
    parser.add_argument("--kernel", default="python3", help="Jupyter kernel to run them in")
    args = parser.parse_args(argv)
    results_dir = Path(args.results_dir).resolve()
    if not results_dir.is_dir():
        parser.exit(2, f"make_figures: no results folder at {results_dir}; run experiments "
                       "first (python run.py ...) or pass --results-dir\n")
    out = Path(args.out).resolve() if args.out else results_dir / "figures"
    failed = []
    for name in args.notebooks:
        try:
            executed = run(name, results_dir, out, args.kernel)
        except Exception as err:  # papermill's PapermillExecutionError names the cell
            failed.append(name)
            print(f"{name}: FAILED ({type(err).__name__}: {str(err).strip()[:2000]})")
            continue
        written = sorted(p.name for p in executed.parent.iterdir() if p.suffix in (".png", ".csv"))
        print(f"{name}: {len(written)} tables and figures in {executed.parent}")
    if failed:
        print(f"failed: {' '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
