"""Pipeline support for ReMe-style methods, on a tiny env and a rule policy: N samples per
train task observed as one group (and resumed by complete groups), failure-aware retries
bounded by ``max_reflections`` and kept out of the metrics, and Avg@k / Pass@k over
repetitions."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from memarena.agent import RunnerSettings
from memarena.core import (
    Completion,
    EnvPrompt,
    Feedback,
    MemoryContext,
    Observation,
    StepResult,
    Task,
    Usage,
)
from memarena.memory.base import BaseMemory, MemoryServices
from memarena.pipeline import Parts, acquire, evaluate
from memarena.results import store as files
from memarena.results.metrics import compute_metrics
from memarena.results.store import RunStore


class StepEnv:
    """Reach 2 with "inc"; three steps allowed."""

    name = "step"
    step_budget = 3

    def tasks(self, split):
        return [Task(f"{split}{i}", "step", split, "d", f"task {i}") for i in range(4)]

    def domains(self):
        return ["d"]

    def prompt(self, task=None):
        return EnvPrompt(system="s", action_format="one action")

    def open(self, task):
        return StepEpisode(task)

    def close(self):
        pass


class StepEpisode:
    def __init__(self, task):
        self.task, self.n = task, 0

    def reset(self):
        return Observation(f"n={self.n}", self.task.goal, ["inc", "wait"])

    def step(self, action):
        self.n += action == "inc"
        done = self.n >= 2
        obs = Observation(f"n={self.n}", self.task.goal, ["inc", "wait"])
        return StepResult(obs, float(done), done, done, self.n / 2, Feedback(True, True))

    def expert_action(self):
        return "inc"

    def close(self):
        pass


class LessonPolicy:
    """Chooses "inc" only when the prompt holds a LESSON; records request seeds."""

    name = "lesson-policy"
    is_llm = True

    def __init__(self):
        self.usage = Usage()
        self.seeds: list[tuple[str, int]] = []

    def generate(self, requests):
        out = []
        for r in requests:
            self.seeds.append((r.meta["episode_key"], r.seed))
            index = 0 if "LESSON" in r.messages[-1]["content"] else 1
            out.append(Completion(r.choices[index], 1, 1, choice_index=index))
        return out

    def close(self):
        pass


class Recorder(BaseMemory):
    name = "recorder"
    acquisition_samples = 3
    acquisition_temperature = 0.9

    def __init__(self, lesson_at: int = 3, max_reflections: int = 3):
        super().__init__()
        self.lesson_at, self.max_reflections = lesson_at, max_reflections
        self.groups: list[list[str]] = []
        self.batches: list[int] = []
        self.observed: list[str] = []
        self.retries: list[tuple[str, int, bool]] = []

    def observe_groups(self, groups):
        self.batches.append(len(groups))
        self.groups.extend([[t.task.id for t, _ in g] for g in groups])
        super().observe_groups(groups)

    def _observe(self, trajectory, outcome):
        self.observed.append(trajectory.task.id)

    def reflect(self, failures, attempt):
        text = "LESSON" if attempt >= self.lesson_at else "try again"
        return [MemoryContext(slots={"l": text}) for _ in failures]

    def observe_retry(self, trajectory, outcome, attempt, context):
        self.retries.append((trajectory.task.id, attempt, outcome.success))

    def state_dict(self):
        return {"observed": list(self.observed)}

    def load_state_dict(self, state):
        self.observed = list(state["observed"])


def _parts(tmp_path, memory, policy=None) -> Parts:
    return Parts(
        env=StepEnv(),
        backbone=policy or LessonPolicy(),
        memory=memory,
        services=MemoryServices(),
        settings=RunnerSettings(concurrency=4, step_budget=3),
        store=RunStore(tmp_path),
    )


def _cfg(**protocol):
    base = {
        "snapshot_from": None,
        "train_split": "train",
        "eval_split": "test",
        "max_train_tasks": None,
        "max_eval_tasks": None,
        "runs": 1,
        "repetitions": 1,
    }
    return OmegaConf.create({"protocol": {**base, **protocol}})


def test_acquisition_samples_are_observed_as_one_group_per_task(tmp_path):
    memory = Recorder()
    parts = _parts(tmp_path, memory)
    acquire(parts, _cfg(), parts.backbone)
    assert memory.groups == [[f"train{i}"] * 3 for i in range(4)]
    assert memory.batches == [1, 1, 1, 1]  # concurrency 4 // 3 samples: one task per wave
    records = parts.store.read(files.ACQUISITION)
    assert sorted((r["task_id"], r["run"]) for r in records) == sorted(
        (f"train{i}", s) for i in range(4) for s in range(3)
    )
    seeds = {seed for key, seed in parts.backbone.seeds if key.endswith("train0:0")}
    assert len(seeds) == 3  # the three samples of a task are sampled with different seeds

    # resume: the last task's group is incomplete -> replayed groups, that task rerun whole
    lines = (tmp_path / files.ACQUISITION).read_text().splitlines()
    (tmp_path / files.ACQUISITION).write_text("\n".join(lines[:-2]) + "\n")
    (tmp_path / files.MEMORY_DIR / files.SNAPSHOT_DONE).unlink()
    again = Recorder()
    parts = _parts(tmp_path, again)
    acquire(parts, _cfg(), parts.backbone)
    assert again.groups == [[f"train{i}"] * 3 for i in range(4)]
    assert {key for key, _ in parts.backbone.seeds} <= {
        f"acquire:{s}:train3:{k}" for s in range(3) for k in range(3)
    }


def test_a_method_may_observe_many_tasks_per_call(tmp_path):
    memory = Recorder()
    memory.acquisition_observe_tasks = 3
    parts = _parts(tmp_path, memory)
    acquire(parts, _cfg(), parts.backbone)
    assert memory.batches == [3, 1]
    assert memory.groups == [[f"train{i}"] * 3 for i in range(4)]


@pytest.mark.parametrize(("lesson_at", "limit", "attempts"), [(3, 3, 3), (2, 3, 2), (9, 3, 3)])
def test_reflection_retries_stop_at_success_or_the_limit(tmp_path, lesson_at, limit, attempts):
    memory = Recorder(lesson_at=lesson_at, max_reflections=limit)
    parts = _parts(tmp_path, memory)
    records = evaluate(parts, _cfg())
    assert len(records) == 4 and not any(r["success"] for r in records)  # retries not counted
    assert memory.observed == [f"test{i}" for i in range(4)]
    for i in range(4):
        tries = [(a, ok) for t, a, ok in memory.retries if t == f"test{i}"]
        assert [a for a, _ in tries] == list(range(1, attempts + 1))
        assert [ok for _, ok in tries] == [a >= lesson_at for a, _ in tries]
    retries = parts.store.read(files.REFLECTIONS)
    assert len(retries) == 4 * attempts and {r["attempt"] for r in retries} == set(
        range(1, attempts + 1)
    )
    assert compute_metrics(records)["success_rate"] == 0.0


def test_every_learning_run_starts_from_the_saved_snapshot(tmp_path):
    saved = Recorder()
    saved.observed = ["from-acquisition"]
    source = RunStore(tmp_path / "source")
    saved.save(source.memory_dir)
    source.mark_snapshot_complete({})
    memory = Recorder(max_reflections=0)
    parts = _parts(tmp_path / "run", memory)
    cfg = _cfg(runs=2, snapshot_from=str(tmp_path / "source"))
    acquire(parts, cfg, parts.backbone)
    records = evaluate(parts, cfg)
    assert len(records) == 8
    assert memory.observed == ["from-acquisition"] + [f"test{i}" for i in range(4)]


def test_frozen_memory_makes_no_retries(tmp_path):
    memory = Recorder()
    memory.freeze()
    parts = _parts(tmp_path, memory)
    evaluate(parts, _cfg(runs=2))
    assert memory.retries == [] and not (tmp_path / files.REFLECTIONS).exists()


def _rec(task, run, success):
    return {
        "task_id": task,
        "run": run,
        "success": success,
        "progress": 0,
        "steps": 1,
        "status": "x",
    }


def test_avg_and_pass_at_k_over_repetitions():
    # repetition 0 (runs 0,1): a succeeds once, b never -> Avg 0.25, Pass 0.5
    # repetition 1 (runs 2,3): a twice, b once          -> Avg 0.75, Pass 1.0
    wins = {
        (0, "a"): 1,
        (1, "a"): 0,
        (0, "b"): 0,
        (1, "b"): 0,
        (2, "a"): 1,
        (3, "a"): 1,
        (2, "b"): 0,
        (3, "b"): 1,
    }
    records = [_rec(t, run, bool(ok)) for (run, t), ok in wins.items()]
    m = compute_metrics(records, runs_per_repetition=2)
    assert (m["runs"], m["repetitions"]) == (2, 2)
    assert m["at_k_repetitions"] == [
        {"avg_at_k": 0.25, "pass_at_k": 0.5},
        {"avg_at_k": 0.75, "pass_at_k": 1.0},
    ]
    assert m["avg_at_k"] == pytest.approx(0.5) and m["avg_at_k_std"] == pytest.approx(0.25)
    assert m["pass_at_k"] == pytest.approx(0.75) and m["pass_at_k_std"] == pytest.approx(0.25)
    single = compute_metrics(records[:4], runs_per_repetition=2)
    assert single["repetitions"] == 1 and single["avg_at_k_std"] == 0.0


def test_a_killed_learning_evaluation_resumes_to_the_same_memory(tmp_path, monkeypatch):
    whole = Recorder(lesson_at=2)
    evaluate(_parts(tmp_path / "whole", whole), _cfg())

    original = RunStore.append
    written = {"n": 0}

    def dying_append(self, name, record):
        original(self, name, record)
        if name == files.EPISODES:
            written["n"] += 1
            if written["n"] == 2:
                raise KeyboardInterrupt  # killed after 2 of the wave's 4 episodes were written

    monkeypatch.setattr(RunStore, "append", dying_append)
    with pytest.raises(KeyboardInterrupt):
        evaluate(_parts(tmp_path / "killed", Recorder(lesson_at=2)), _cfg())
    monkeypatch.setattr(RunStore, "append", original)
    resumed = Recorder(lesson_at=2)
    parts = _parts(tmp_path / "killed", resumed)
    records = evaluate(parts, _cfg())
    assert sorted(r["task_id"] for r in records) == [f"test{i}" for i in range(4)]
    assert resumed.observed == whole.observed
    assert sorted(resumed.retries) == sorted(whole.retries)
