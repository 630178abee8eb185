"""`python run.py` end to end: the issue's check command, multirun, W&B offline files and the
overview notebook on results made by a real run (the embedded model end to end, from a fresh
cache folder: tests/test_memory_end_to_end.py::test_methods_without_memory_show_none)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import NOTEBOOK, run_notebook, run_py

REQUIRED = {"success_rate", "progress_rate", "avg_steps", "n_episodes", "tokens_per_task"}


def _metrics(root: Path) -> list[dict]:
    return [json.loads(p.read_text()) for p in sorted(root.rglob("metrics.json"))]


def test_scripted_pddl_check_command(tmp_path):
    proc = run_py(
        [
            "env=pddl",
            "method=none",
            "backbone=scripted",
            "protocol.max_train_tasks=4",
            "protocol.max_eval_tasks=8",
            f"paths.results_dir={tmp_path}",
            "logger=none",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (metrics,) = _metrics(tmp_path)
    assert REQUIRED <= metrics.keys()
    assert metrics["n_episodes"] == 8 and metrics["backbone_is_llm"] is False
    assert metrics["backbone"].startswith("scripted")
    (run_dir,) = {p.parent for p in tmp_path.rglob("metrics.json")}
    # generated PDDL problems are a stand-in, named so (AgentBoard's problems are `pddl`)
    # an ad-hoc run's folder names the overrides its path does not show (pipeline/adhoc.py)
    assert run_dir.relative_to(tmp_path).parts[:3] == (
        "demo+protocol.max_train_tasks-4", "pddl_generated", "none"
    )
    for name in ("config.yaml", "episodes.jsonl", "usage.json"):
        assert (run_dir / name).exists(), name
    episodes = [json.loads(line) for line in (run_dir / "episodes.jsonl").read_text().splitlines()]
    assert len(episodes) == 8 and {e["split"] for e in episodes} == {"test"}
    assert metrics["success_rate"] == pytest.approx(sum(e["success"] for e in episodes) / 8)


@pytest.fixture(scope="module")
def sweep(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("sweep")
    proc = run_py(
        [
            "-m",
            "env=pddl",
            "method=none,memco",
            "seed=0,1",
            "backbone=scripted",
            "protocol.max_train_tasks=4",
            "protocol.max_eval_tasks=4",
            "protocol.step_budget=30",
            f"paths.results_dir={out}",
            f"paths.log_dir={out}/logs",
        ]
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    return out


def test_multirun_writes_every_cell_and_wandb_offline_files(sweep):
    metrics = _metrics(sweep)
    assert sorted((m["method"], m["seed"]) for m in metrics) == [
        ("memco", 0),
        ("memco", 1),
        ("none", 0),
        ("none", 1),
    ]
    from memarena.results.loggers import read_offline_run

    name = "demo+protocol.max_train_tasks-4+protocol.step_budget-30"
    for m in metrics:
        run_dir = sweep / name / "pddl_generated" / m["method"] / m["backbone"] / f"seed{m['seed']}"
        logged = read_offline_run(run_dir)
        assert logged["summary"]["success_rate"] == pytest.approx(m["success_rate"])
        assert logged["run"]["group"] == f"{name}/pddl_generated/{m['method']}/{m['backbone']}"
    memco_memory = next(sweep.rglob("memco/*/seed0/memory/memory.json"))
    state = json.loads(memco_memory.read_text())["state"]
    assert any(agent["records"] for agent in state["agents"].values()), "MemCo learnt nothing"


def test_overview_notebook_on_real_results(sweep):
    run_notebook(
        NOTEBOOK,
        f"RESULTS_DIR = {str(sweep)!r}\nOUT_DIR = None\nMETRICS = None\n"
        "FIGURE_METRICS = ['success_rate', 'progress_rate']\n",
    )
    md = (sweep / "tables" / "summary.md").read_text()
    assert "memco" in md and "none" in md and "scripted" in md
    assert (sweep / "tables" / "overview.png").stat().st_size > 5000


@pytest.mark.parametrize("launcher", ["slurm", "ray"])
def test_cluster_launchers_compose(launcher):
    proc = run_py(["--cfg", "hydra", f"launcher={launcher}"], timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert {"slurm": "submitit_slurm", "ray": "ray"}[launcher] in proc.stdout
