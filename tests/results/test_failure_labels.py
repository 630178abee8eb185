"""ReMe Figure 5(b) in the paper's categories: the LLM labeller
(memarena.reports.reme.failure_labels), its file in the results tree, and the notebook's table
and figure from it.

Hand-built run folders in the pipeline's layout; the labeller is a scripted LLM double, except
one test that asks the real embedded SmolLM2 (one batched call of two requests)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pandas as pd
import pytest
from doubles import FakeLLM

from memarena.reports.reme import failure_labels as fl
from memarena.reports.reme import figures as rf
from memarena.reports.reme import tables as rr

PNG = b"\x89PNG\r\n\x1a\n"


def episode(task: str, run: int, success: bool, error: str | None = None, status: str = "") -> dict:
    return {
        "task_id": task,
        "split": "test",
        "domain": "bfcl",
        "run": run,
        "repetition": run // 4,
        "success": success,
        "progress": 1.0 if success else 0.25,
        "steps": 3,
        "status": status or ("success" if success else "failure"),
        "details": {"checker_error_type": error, "turns_done": 2, "turns": 2},
        "trajectory": {
            "task": {"id": task, "goal": f"book a flight for {task}", "split": "test",
                     "domain": "bfcl"},
            "initial_observation": "user: book it",
            "steps": [{"action": "search_flights(to='NYC')", "observation": "[]", "reward": 0.0,
                       "progress": 0.0, "feedback": {"valid_action": True,
                                                     "state_changed": False}}],
        },
    }  # fmt: skip


def write_run(path: Path, episodes: list[dict]) -> Path:
    path.mkdir(parents=True)
    (path / "episodes.jsonl").write_text("".join(json.dumps(e) + "\n" for e in episodes))
    return path


def runs_frame(base: Path, variant: Path) -> pd.DataFrame:
    """What rr.load_runs gives for a No Memory and a ReMe run of one env/backbone/seed."""
    rows = [
        {"env": "bfcl", "backbone": "qwen3-8b", "seed": 0, "variant_key": key, "run_dir": str(d),
         "runs": 4}
        for key, d in (("none", base), ("reme", variant))
    ]  # fmt: skip
    return pd.DataFrame(rows)


MISMATCH = "multi_turn:instance_state_mismatch"
EMPTY = "multi_turn:empty_turn_model_response"


def test_label_run_writes_one_row_per_failed_episode_with_the_checker_beside(tmp_path):
    run = write_run(
        tmp_path / "none",
        [
            episode("t1", 0, False, MISMATCH),
            episode("t1", 1, True),
            episode("t2", 0, False, EMPTY),
            episode("t2", 1, False, None, status="budget"),
        ],
    )
    llm = FakeLLM(["Reasoning Error", "Action Omission", "a long story"])
    rows = fl.label_run(run, llm, rr.failure_category)
    assert len(llm.requests) == 3 and llm.batches == 1  # the failed episodes, one batched call
    request = llm.requests[0]
    assert request.choices == list(fl.CATEGORIES) and request.temperature == 0.0
    assert request.messages[0]["content"] == fl.SYSTEM
    assert "book a flight for t1" in request.messages[1]["content"]
    assert "search_flights(to='NYC')" in request.messages[1]["content"]
    assert MISMATCH not in request.messages[1]["content"]  # the checker's verdict stays hidden
    assert [(r["task_id"], r["run"], r["category"]) for r in rows] == [
        ("t1", 0, "Reasoning Error"),
        ("t2", 0, "Action Omission"),
        ("t2", 1, fl.UNLABELLED),  # an answer outside the list
    ]
    assert [r["checker_error_type"] for r in rows] == [MISMATCH, EMPTY, None]
    assert [r["checker_category"] for r in rows] == [
        "state mismatch (wrong or missing action)",
        "action omission (empty turn)",
        rr.STEP_LIMIT,
    ]
    assert {(r["labeller"], r["prompt_version"]) for r in rows} == {("fake-llm", "fig5b-v1")}
    assert fl.read_labels(run) == rows  # written beside episodes.jsonl
    assert (run / fl.LABELS_FILE).exists() and fl.read_labels(tmp_path) is None


def test_failure_categories_llm_counts_failed_tasks_per_label_and_the_figure(tmp_path):
    # No Memory: t1 and t2 fail in all runs of repetition 0, t3 succeeds once; ReMe: only t2
    base = write_run(tmp_path / "none", [
        episode("t1", 0, False, MISMATCH), episode("t1", 1, False, MISMATCH),
        episode("t2", 0, False, EMPTY), episode("t3", 0, False, MISMATCH), episode("t3", 1, True),
    ])  # fmt: skip
    variant = write_run(tmp_path / "reme", [
        episode("t1", 0, True), episode("t2", 0, False, EMPTY), episode("t2", 1, False, EMPTY),
    ])  # fmt: skip
    runs = runs_frame(base, variant)
    assert rr.unlabelled_runs(runs, ["none", "reme"]) == [str(base), str(variant)]
    empty = rr.failure_categories_llm(runs, "reme")
    assert empty.empty and list(empty.columns) == rr.FIG5B_COLUMNS
    path, _ = rf.figure5b(empty, tmp_path / "out", missing="python scripts/label_failures.py")
    assert path.read_bytes()[:8] == PNG  # a figure that says what to run

    # labels: t1 runs 0/1 Reasoning / Reasoning, t2 Action Omission, t3 (not a failed task) Other
    fl.label_run(base, FakeLLM(["Reasoning Error", "Reasoning Error", "Action Omission",
                                "Other"]), rr.failure_category)  # fmt: skip
    fl.label_run(variant, FakeLLM(["Action Omission", "Reasoning Error"]), rr.failure_category)
    table = rr.failure_categories_llm(runs, "reme").set_index(["method", "category"])
    counts = table["count"].to_dict()
    assert counts[("none", "Reasoning Error")] == 1 and counts[("none", "Action Omission")] == 1
    assert counts[("none", "Other")] == 0  # t3 succeeded once: not a failed task
    # ReMe's t2: a tie of one Action Omission and one Reasoning Error goes to the earliest run
    assert counts[("reme", "Action Omission")] == 1 and counts[("reme", "Reasoning Error")] == 0
    assert table.loc[("none", "Reasoning Error"), "checker_categories"] == (
        "state mismatch (wrong or missing action): 1"
    )
    assert set(table["labeller"]) == {"fake-llm"} and set(table["prompt_version"]) == {"fig5b-v1"}
    assert set(table.index.get_level_values("category")) == set(fl.CATEGORIES)
    path, fig = rf.figure5b(table.reset_index(), tmp_path / "out")
    assert path.name == "fig5b_failure_categories.png" and path.read_bytes()[:8] == PNG
    bars = {round(p.get_y() + p.get_height() / 2, 3): p.get_width() for p in fig.axes[0].patches}
    assert sum(bars.values()) == 3  # 2 No Memory + 1 ReMe failed tasks


def test_the_embedded_smollm2_labels_real_requests_within_the_category_list(tmp_path):
    from memarena.llm.hf import HFBackbone

    run = write_run(
        tmp_path / "none", [episode("t1", 0, False, MISMATCH), episode("t2", 0, False, EMPTY)]
    )
    llm = HFBackbone(
        converted_dir=Path(tempfile.gettempdir()) / "memarena-test-models",
        cache_path=None, device="cpu", dtype="float32", max_new_tokens=16,
    )  # fmt: skip
    try:
        rows = fl.label_run(run, llm, rr.failure_category)
    finally:
        llm.close()
    assert len(rows) == 2 and all(r["category"] in fl.CATEGORIES for r in rows)
    assert {r["labeller"] for r in rows} == {"smollm2-135m"}
    assert llm.usage.calls == 1 and llm.usage.requests == 2  # one batched call


@pytest.mark.parametrize("argv", [["--backbone", "scripted"]])
def test_the_script_refuses_the_scripted_expert_and_a_tree_without_fig5_runs(tmp_path, argv):
    import importlib.util

    spec = importlib.util.spec_from_file_location(
        "label_failures", Path(__file__).resolve().parents[2] / "scripts" / "label_failures.py"
    )
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    assert script.main(["--results-dir", str(tmp_path)]) == 2  # nothing to label
    with pytest.raises(SystemExit, match="not an LLM"):
        script.build_backbone("scripted", [], tmp_path)
