"""`python run.py method=reme ...` end to end: samples per task on disk with the real embedded
summarizer (SmolLM2 as the memory-side LLM under the scripted agent), ReMe's protocol on BFCL
with Avg@4 / Pass@4 over repetitions and the dynamic variant on a saved snapshot (metrics and
protocol, with the schema-filling memory LLM double: what SmolLM2 writes as ReMe's memory LLM
is asserted in tests/test_memory_end_to_end.py)."""

from __future__ import annotations

import json
import statistics
from pathlib import Path

import pytest
from needs import need_module

from conftest import SCHEMA_LLM, run_py

SMALL = [
    "backbone=scripted",
    "logger=none",
    "protocol.step_budget=10",  # the demo's earlier budget, which the numbers below count
    "method.samples=2",
    "method.max_tokens=48",
    "protocol.max_train_tasks=2",
]


def _at_4(episodes: list[dict]) -> dict[str, float]:
    """ReMe's Avg@k and Pass@k of one repetition's episodes."""
    runs = sorted({e["run"] for e in episodes})
    tasks = sorted({e["task_id"] for e in episodes})
    rates = [statistics.fmean(e["success"] for e in episodes if e["run"] == r) for r in runs]
    solved = [any(e["success"] for e in episodes if e["task_id"] == t) for t in tasks]
    return {"avg_at_k": statistics.fmean(rates), "pass_at_k": sum(solved) / len(tasks)}


def _run_dir(root: Path, method: str) -> Path:
    (path,) = [p.parent for p in root.rglob("metrics.json") if p.parent.parts[-3] == method]
    return path


def test_reme_on_pddl_samples_each_train_task_and_reports_its_cost(tmp_path):
    proc = run_py(
        ["method=reme", "env=pddl", "protocol.max_eval_tasks=2", f"paths.results_dir={tmp_path}"]
        + SMALL
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    run = _run_dir(tmp_path, "reme")
    acquisition = [json.loads(x) for x in (run / "acquisition.jsonl").read_text().splitlines()]
    assert sorted((r["task_id"], r["run"]) for r in acquisition) == sorted(
        (t, s) for t in {r["task_id"] for r in acquisition} for s in (0, 1)
    ) and len(acquisition) == 4
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["n_episodes"] == 2 and metrics["acquisition_tasks"] == 2
    # the seeded expert at temperature 0.9 fails all 4 samples in the 10-step budget, both
    # samples of a task at the same progress: both samples kept and both failed, one failure
    # analysis each (no success, no comparison of equal scores), four in one batched call (40
    # agent requests: 4 x 10 steps)
    assert [(r["success"], r["steps"]) for r in acquisition] == [(False, 10)] * 4
    for task in {r["task_id"] for r in acquisition}:
        assert len({r["progress"] for r in acquisition if r["task_id"] == task}) == 1
    usage = metrics["memory_token_usage"]["summarize"]
    assert (usage["calls"], usage["requests"]) == (1, 4) and usage["prompt_tokens"] > 0
    assert metrics["acquisition_agent_requests"] == 40
    llm_calls = metrics["acquisition_agent_requests"] + metrics["acquisition_memory_requests"]
    assert metrics["acquisition_llm_calls_per_task"] == llm_calls / 2  # 2 train tasks
    assert (run / "memory" / "memory.json").exists()


def test_reme_on_bfcl_reports_avg_and_pass_at_4_then_dynamic_on_the_snapshot(tmp_path):
    need_module("bfcl_eval")
    common = ["env=bfcl", "protocol=reme", "protocol.max_eval_tasks=2"]
    common += [f"paths.results_dir={tmp_path}", *SMALL, *SCHEMA_LLM]
    proc = run_py(["method=reme", *common], doubles=True)
    assert proc.returncode == 0, proc.stderr[-3000:]
    fixed = _run_dir(tmp_path, "reme")
    metrics = json.loads((fixed / "metrics.json").read_text())
    assert (metrics["runs"], metrics["repetitions"], metrics["n_episodes"]) == (4, 3, 24)
    # the official readings, resolved for BFCL and written out everywhere the run records
    snapshot = json.loads((fixed / "memory" / "memory.json").read_text())
    (invocation,) = json.loads((fixed / "run_info.json").read_text())["invocations"]
    for settings in (metrics["method_settings"], snapshot["settings"],
                     invocation["method_settings"]):  # fmt: skip
        assert (settings["reward"], settings["delete_every"]) == ("success", 5)
    episodes = [json.loads(x) for x in (fixed / "episodes.jsonl").read_text().splitlines()]
    assert {e["repetition"] for e in episodes} == {0, 1, 2}
    # Avg@4 / Pass@4 recomputed from the episodes: per repetition, the mean of its 4 runs'
    # success rates and the share of tasks solved in any of its runs; then mean and population
    # std over the 3 repetitions
    want = [_at_4([e for e in episodes if e["repetition"] == rep]) for rep in (0, 1, 2)]
    assert len(metrics["at_k_repetitions"]) == 3
    for got, expected in zip(metrics["at_k_repetitions"], want, strict=True):
        assert got == pytest.approx(expected)
    for key in ("avg_at_k", "pass_at_k"):
        values = [w[key] for w in want]
        assert metrics[key] == pytest.approx(statistics.fmean(values))
        assert metrics[f"{key}_std"] == pytest.approx(statistics.pstdev(values))
    assert all("checker_error_type" in e["details"] for e in episodes)

    dynamic = run_py(
        ["method=reme", "ablation=reme/dynamic", f"protocol.snapshot_from={fixed}", *common],
        doubles=True,
    )
    assert dynamic.returncode == 0, dynamic.stderr[-3000:]
    assert "evaluating on the saved snapshot" in dynamic.stdout + dynamic.stderr
    run = _run_dir(tmp_path, "reme+dynamic")
    assert not (run / "acquisition.jsonl").exists()
    metrics = json.loads((run / "metrics.json").read_text())
    assert metrics["n_episodes"] == 24 and "reflection_attempts" in metrics
