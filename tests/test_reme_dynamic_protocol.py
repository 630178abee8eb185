"""ReMe's dynamic setting as its released code runs it, as protocol keys: ``count_retries`` (the
last trial of a task counts: bfcl_agent.py keeps only the last trial's result) and
``memory_across_runs`` (run_bfcl.py loads the memory once and runs its 4 runs against one memory
service), both false in the default protocol (memarena's stricter reading) and true in the
paper's dynamic ablations. On the tiny env of test_pipeline_learning.py: the counted records,
the shared memory, resumes that lose no finished work; then a scripted ``env=bfcl method=reme``
dynamic run in which a task fails and then succeeds on its retry."""

from __future__ import annotations

import json

import pytest
from doubles import use_schema_llm
from omegaconf import OmegaConf
from test_pipeline_learning import Recorder, _kill_after, _parts, saved_snapshot

from conftest import compose_cfg
from memarena.pipeline import acquire, build, evaluate
from memarena.pipeline.build import close_parts
from memarena.pipeline.identity import config_identity
from memarena.results import store as files
from memarena.results.metrics import compute_metrics
from memarena.results.records import latest
from memarena.results.store import RunStore


@pytest.mark.parametrize("counted", [True, False])
def test_a_task_that_succeeds_on_a_retry_counts_as_its_last_trial(tmp_path, counted):
    # lesson_at=2: attempt 1 fails, attempt 2 succeeds, for every task
    memory = Recorder(lesson_at=2)
    parts = _parts(tmp_path, memory, count_retries=counted)
    records = latest(evaluate(parts))
    assert [(r.task_id, r.success, r.attempt) for r in records] == [
        (f"test{i}", counted, 2 if counted else None) for i in range(4)
    ]
    assert compute_metrics(records)["success_rate"] == (1.0 if counted else 0.0)
    retries = parts.store.read_records(files.REFLECTIONS)
    # the first attempt is kept as attempt 0 when the last trial counts (the other reading)
    attempts = sorted((r.task_id, r.attempt, r.success) for r in retries)
    firsts = [(f"test{i}", 0, False) for i in range(4)] if counted else []
    tries = [(f"test{i}", a, a == 2) for i in range(4) for a in (1, 2)]
    assert attempts == sorted(firsts + tries)
    # the memory observed the first attempts, then the retries, either way
    assert memory.observed == [f"test{i}" for i in range(4)]
    assert [(t, a, ok) for t, a, ok in memory.retries] == [
        (f"test{i}", a, a == 2) for a in (1, 2) for i in range(4)
    ]


@pytest.mark.parametrize(
    ("across", "observed"),
    [(True, 1 + 4 + 4), (False, 1 + 4)],
)
def test_runs_share_one_memory_when_memory_across_runs(tmp_path, across, observed):
    memory = Recorder(max_reflections=0)
    source = saved_snapshot(tmp_path)
    parts = _parts(tmp_path / "run", memory, runs=2, snapshot_from=source, update_every=1,
                   memory_across_runs=across)  # fmt: skip
    evaluate(parts)
    assert len(memory.observed) == observed
    # what run 1's first task could see: the snapshot's one task, plus run 0's four when shared
    assert memory.seen_at_start["test0"] == (5 if across else 1)


def test_each_repetition_starts_from_the_snapshot(tmp_path):
    memory = Recorder(max_reflections=0)
    source = saved_snapshot(tmp_path)
    parts = _parts(tmp_path / "run", memory, runs=2, repetitions=2, snapshot_from=source,
                   update_every=1, memory_across_runs=True)  # fmt: skip
    evaluate(parts)
    # runs 2 and 3 (repetition 1) start again from the snapshot and share a memory
    assert memory.observed == ["from-acquisition"] + [f"test{i}" for i in range(4)] * 2


@pytest.mark.parametrize("killed_after", [2, 4, 6])
def test_a_killed_official_dynamic_run_resumes_to_the_same_memory_and_metrics(
    tmp_path, monkeypatch, killed_after
):
    kw = {"concurrency": 8, "update_every": 1, "runs": 2, "count_retries": True,
          "memory_across_runs": True}  # fmt: skip
    source = saved_snapshot(tmp_path)
    whole = Recorder(lesson_at=2)
    whole_records = evaluate(_parts(tmp_path / "whole", whole, snapshot_from=source, **kw))

    original = _kill_after(monkeypatch, killed_after)
    with pytest.raises(KeyboardInterrupt):
        evaluate(_parts(tmp_path / "killed", Recorder(lesson_at=2), snapshot_from=source, **kw))
    monkeypatch.setattr(RunStore, "append", original)
    resumed = Recorder(lesson_at=2)
    records = evaluate(_parts(tmp_path / "killed", resumed, snapshot_from=source, **kw))

    # run 1 starts from run 0's memory, rebuilt by replaying run 0's records (first attempts,
    # then retries) where run 0 had finished: the same observations in the same order
    assert resumed.observed == whole.observed
    assert len(resumed.observed) == 1 + 4 + 4
    assert resumed.retries == whole.retries
    key = [(r.run, r.task_id, r.success, r.attempt) for r in latest(records)]
    assert sorted(key) == sorted((r.run, r.task_id, r.success, r.attempt)
                                 for r in latest(whole_records))  # fmt: skip
    assert compute_metrics(latest(records)) == compute_metrics(latest(whole_records))
    # nothing finished ran twice: one episode record per task and run
    assert len(records) == 8


def test_an_earlier_run_that_runs_again_makes_the_later_runs_run_again(tmp_path):
    kw = {"runs": 2, "update_every": 1, "memory_across_runs": True}
    source = saved_snapshot(tmp_path)
    evaluate(_parts(tmp_path / "run", Recorder(max_reflections=0), snapshot_from=source, **kw))
    path = tmp_path / "run" / files.EPISODES
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    for line in lines:  # run 0's last task ended with an error (a server outage, say)
        if line["run"] == 0 and line["task_id"] == "test3":
            line["status"] = "error"
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    resumed = Recorder(max_reflections=0)
    records = evaluate(_parts(tmp_path / "run", resumed, snapshot_from=source, **kw))
    # run 0 reruns test3; run 1 saw the memory run 0 left, so all of it runs again
    assert len(records) == 8 + 1 + 4
    assert resumed.observed == ["from-acquisition"] + [f"test{i}" for i in range(4)] * 2
    assert resumed.batches == [1] * 8


def test_the_official_keys_enter_the_run_identity_only_when_set():
    plain = config_identity(compose_cfg(["method=reme"]))
    assert "protocol.count_retries" not in plain and "protocol.memory_across_runs" not in plain
    dynamic = compose_cfg(["method=reme", "ablation=reme/dynamic"])
    assert dynamic.protocol.count_retries is True and dynamic.protocol.memory_across_runs is True
    identity = config_identity(dynamic)
    assert identity["protocol.count_retries"] is True
    assert identity["protocol.memory_across_runs"] is True
    other = compose_cfg(["method=reme", "ablation=reme/dynamic_memarena"])
    assert (other.protocol.count_retries, other.protocol.memory_across_runs) == (False, False)
    assert compose_cfg(["protocol=reme"]).protocol.history_steps is None  # the whole chat


def _bfcl_dynamic(tmp_path, official: bool):
    """A ReMe (dynamic) run on BFCL: one train task (one sample), one test task, 2 runs; the
    agent fails every first attempt and solves every retry (reme_doubles.RetryExpert), the
    memory LLM fills every schema (doubles.SchemaLLM), texts embed by hash."""
    cfg = compose_cfg(
        [
            "method=reme",
            "env=bfcl",
            "protocol=reme",
            "ablation=reme/dynamic",
            "backbone=scripted",
            "backbone.epsilon=0.0",
            "logger=none",
            "method.samples=1",
            "protocol.max_train_tasks=1",
            "protocol.max_eval_tasks=1",
            "protocol.runs=2",
            "protocol.repetitions=1",
            f"protocol.count_retries={str(official).lower()}",
            f"protocol.memory_across_runs={str(official).lower()}",
            f"paths.results_dir={tmp_path / 'results'}",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ]
    )
    use_schema_llm(cfg)
    OmegaConf.update(cfg, "backbone._target_", "reme_doubles.RetryExpert")
    OmegaConf.update(cfg, "embedder", {"_target_": "reme_doubles.HashEmbedder",
                                       "name": "hash-embedder"}, merge=False)  # fmt: skip
    parts = build(cfg)
    try:
        acquire(parts, parts.policy)
        records = latest(evaluate(parts))
        retries = parts.store.read_records(files.REFLECTIONS)
    finally:
        close_parts(parts)
    return records, retries


@pytest.mark.parametrize("official", [True, False])
def test_bfcl_reme_dynamic_counts_a_retry_success_only_under_the_official_setting(
    tmp_path, official
):
    records, retries = _bfcl_dynamic(tmp_path, official)
    assert [(r.run, r.success) for r in records] == [(0, official), (1, official)]
    assert compute_metrics(records)["success_rate"] == (1.0 if official else 0.0)
    # in both readings the first attempt failed and the first retry succeeded
    tries = sorted((r.run, r.attempt, r.success) for r in retries)
    firsts = [(0, 0, False), (1, 0, False)] if official else []
    assert tries == sorted(firsts + [(0, 1, True), (1, 1, True)])
    # run 1's first attempt saw the experience run 0's successful retry added (exp-2) only
    # when the runs share one memory; otherwise it starts again from the snapshot (exp-1)
    if official:  # the counted record is the retry; the first attempt is attempt 0
        first = {r.run: r for r in retries if r.attempt == 0}
    else:
        first = {r.run: r for r in records}
    assert sorted(first[1].memory_ids) == (["exp-1", "exp-2"] if official else ["exp-1"])
    assert first[0].memory_ids == ["exp-1"]
