"""notebooks/00_overview.ipynb runs top to bottom on a results tree and writes its table and figure.

Here on a hand-built tree in the pipeline's exact layout (several methods, exact numbers);
tests/test_end_to_end.py runs it on the output of a real `python run.py -m ...` sweep.
"""

import json
from pathlib import Path

import nbformat
import pandas as pd
import pytest

from conftest import NOTEBOOK, run_notebook
from memarena.results.metrics import compute_metrics


def build_results_tree(
    root: Path,
    *,
    experiment="adhoc",
    env="pddl",
    backbone="scripted",
    methods=("none", "memco"),
    seeds=(0, 1),
    n_tasks=6,
) -> Path:
    """A results tree in the pipeline's layout: methods x seeds run dirs, each with
    config.yaml, metrics.json, episodes.jsonl, acquisition.jsonl, memory/ and usage.json."""
    for m_i, method in enumerate(methods):
        for seed in seeds:
            run_dir = root / experiment / env / method / backbone / f"seed{seed}"
            (run_dir / "memory").mkdir(parents=True)
            records = []
            for t in range(n_tasks):
                success = (t + seed) % (3 + m_i) != 0  # varies across methods and seeds
                records.append(
                    {
                        "task_id": f"{env}-{t}",
                        "split": "test",
                        "domain": f"d{t % 2}",
                        "run": 0,
                        "success": success,
                        "progress": 1.0 if success else 0.25 * (t % 4),
                        "steps": 5 + t,
                        "status": "success" if success else "budget",
                        "error": None,
                        "prompt_tokens": 80,
                        "completion_tokens": 20,
                        "tokens": 100,
                        "memory_ids": [f"m{t}"] if method != "none" else [],
                        "wall_s": 0.01,
                    }
                )
            with (run_dir / "episodes.jsonl").open("w") as f:
                f.writelines(json.dumps(r) + "\n" for r in records)
            (run_dir / "acquisition.jsonl").write_text("")
            (run_dir / "usage.json").write_text(json.dumps({"agent": {"calls": 0}}))
            (run_dir / "config.yaml").write_text(
                f"seed: {seed}\nmethod:\n  name: {method}\nenv:\n  name: {env}\n"
            )
            metrics = {
                **compute_metrics(records),
                "experiment": experiment,
                "env": env,
                "method": method,
                "ablation": None,
                "backbone": backbone,
                "backbone_is_llm": False,
                "seed": seed,
                "update_every": 1,
                "report": {"paper": None, "tables": []},
            }  # an adhoc run declares none
            (run_dir / "metrics.json").write_text(json.dumps(metrics, indent=2))
    return root


@pytest.fixture
def results_tree(tmp_path) -> Path:
    return build_results_tree(tmp_path / "results")


def test_overview_notebook_writes_table_and_figure(results_tree):
    nb = run_notebook(
        NOTEBOOK,
        f"RESULTS_DIR = {str(results_tree)!r}\nOUT_DIR = None\n"
        "METRICS = None\nFIGURE_METRICS = ['success_rate', "
        "'progress_rate']\n",
    )
    tables = results_tree / "tables"
    md = (tables / "summary.md").read_text()
    assert "| adhoc" in md and "memco" in md and "none" in md and " ± " in md
    assert (tables / "summary.csv").exists() and (tables / "runs.csv").exists()
    runs = pd.read_csv(tables / "runs.csv")
    assert "report_paper" in runs and not [c for c in runs if c.startswith("report/")]
    png = (tables / "overview.png").read_bytes()
    assert png[:8] == b"\x89PNG\r\n\x1a\n" and len(png) > 5000
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert any("image/png" in o.get("data", {}) for o in outputs)  # the figure is shown


def test_notebook_is_committed_without_outputs():
    nb = nbformat.read(NOTEBOOK, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.outputs == [] and cell.execution_count is None
