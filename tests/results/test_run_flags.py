"""What a reader of a run must know, said by the run itself: a run whose agent replies mostly
could not be acted on, or that was resumed on other code, is flagged; a killed invocation is
recorded as killed by the next start; a resume that adds records removes the metrics.json that
no longer describes them (a killed resume never leaves a table reporting fewer tasks than
ran)."""

from __future__ import annotations

import json
from types import SimpleNamespace

from memarena.pipeline.summarize import flags_of
from memarena.results.store import METRICS, RUN_INFO, RunStore

CODE = {"git_commit": "a" * 40, "git_dirty": False}


def _parts(store: RunStore) -> SimpleNamespace:
    return SimpleNamespace(
        protocol=SimpleNamespace(max_eval_tasks=None, max_train_tasks=None, eval_split="test",
                                 train_split="train", step_budget_by_method=None),
        env=SimpleNamespace(tasks=lambda split: []),
        policy=SimpleNamespace(is_llm=True),
        memory=SimpleNamespace(learns=False, name="none"),
        store=store,
    )  # fmt: skip


def test_mostly_invalid_replies_are_flagged(tmp_path):
    parts = _parts(RunStore(tmp_path))
    assert flags_of(parts, {"memory_fallback_rate": 0.0, "invalid_reply_rate": 0.5}) == []
    flagged = flags_of(parts, {"memory_fallback_rate": 0.0, "invalid_reply_rate": 0.51})
    assert flagged == ["invalid_replies"]


def test_a_resume_on_other_code_is_flagged(tmp_path):
    store = RunStore(tmp_path)
    store.begin_invocation(CODE)
    store.end_invocation(1.0, "finished")
    store.append("episodes.jsonl", {"task_id": "t"})
    again = RunStore(tmp_path)
    again.begin_invocation({**CODE, "git_commit": "b" * 40}, allow_code_change=True)
    assert flags_of(_parts(again), {"memory_fallback_rate": 0.0}) == ["code_changed"]
    assert flags_of(_parts(store), {"memory_fallback_rate": 0.0}) == ["code_changed"]


def test_an_invocation_that_never_closed_is_recorded_as_killed(tmp_path):
    first = RunStore(tmp_path)
    first.begin_invocation(CODE)  # then SIGKILL: nothing closes the entry
    RunStore(tmp_path).begin_invocation(CODE)
    killed, current = json.loads((tmp_path / RUN_INFO).read_text())["invocations"]
    assert killed["status"] == "killed" and killed["finished"] is None
    assert "found_killed" in killed and current["finished"] is None and "status" not in current


def test_metrics_go_when_a_resume_adds_a_record_and_come_back_with_the_run(tmp_path):
    store = RunStore(tmp_path)
    store.append("episodes.jsonl", {"task_id": "t1"})
    store.write_json(METRICS, {"n_tasks": 1})
    resumed = RunStore(tmp_path)
    assert (tmp_path / METRICS).exists()  # nothing added yet: still the run's
    resumed.append("episodes.jsonl", {"task_id": "t2"})
    assert not (tmp_path / METRICS).exists()  # killed here: no table reports 1 of 2 tasks
    resumed.write_json(METRICS, {"n_tasks": 2})
    resumed.append("episodes.jsonl", {"task_id": "t3"})  # added after it was written again
    assert not (tmp_path / METRICS).exists()
    resumed.write_json(METRICS, {"n_tasks": 3})
    resumed.write_json("usage.json", {})  # other files leave it alone
    assert json.loads((tmp_path / METRICS).read_text()) == {"n_tasks": 3}
