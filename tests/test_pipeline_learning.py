"""Pipeline support for learning memories, on a tiny env and a rule policy: N samples per
train task observed as one group (and resumed by complete groups), memory updates every
``protocol.update_every`` tasks whatever the concurrency, failure-aware retries bounded by
``max_reflections`` and kept out of the metrics, a killed run resuming to the same memory
updates and metrics, and Avg@k / Pass@k over repetitions."""

from __future__ import annotations

import pytest

from memarena.agent import RunnerSettings, as_policy
from memarena.core import (
    Completion,
    ConfigError,
    Env,
    EnvPrompt,
    Episode,
    Feedback,
    MemoryContext,
    MemoryMethod,
    MemoryServices,
    Observation,
    StepResult,
    Task,
    Usage,
)
from memarena.core.memory import Capabilities
from memarena.pipeline import Parts, ProtocolSettings, acquire, evaluate
from memarena.results import store as files
from memarena.results.metrics import compute_metrics
from memarena.results.store import RunStore


class StepEnv(Env):
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


class StepEpisode(Episode):
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


class LessonPolicy:
    """An LLM double that chooses "inc" only when the prompt holds a LESSON; records the
    request seeds per prompt (its user messages' text) and which step's prompt it was."""

    name = "lesson-policy"

    def __init__(self):
        self.usage = Usage()
        self.seeds: list[tuple[str, int]] = []
        self.first_steps: list[int] = []  # seeds of prompts that start an episode

    def generate(self, requests):
        out = []
        for r in requests:
            text = "\n".join(m["content"] for m in r.messages if m["role"] == "user")
            self.seeds.append((text, r.seed))
            if len(r.messages) == 2:  # system and the first user message: a first step
                self.first_steps.append(r.seed)
            index = 0 if "LESSON" in text else 1
            out.append(Completion(r.choices[index], 1, 1, choice_index=index))
        return out

    def close(self):
        pass


class Recorder(MemoryMethod):
    name = "recorder"
    capabilities = Capabilities(acquisition_samples=3, acquisition_temperature=0.9)

    def __init__(self, lesson_at: int = 3, max_reflections: int = 3):
        super().__init__()
        self.lesson_at, self.max_reflections = lesson_at, max_reflections
        self.groups: list[list[str]] = []
        self.batches: list[int] = []
        self.observed: list[str] = []
        self.retries: list[tuple[str, int, bool]] = []
        self.seen_at_start: dict[str, int] = {}

    def retrieve(self, query):
        self.seen_at_start[query.task.id] = len(self.observed)  # what the task could see
        return MemoryContext.empty()

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


def _parts(tmp_path, memory, policy=None, concurrency=4, **protocol) -> Parts:
    settings = ProtocolSettings(concurrency=concurrency, **protocol)
    store = RunStore(tmp_path)
    store.check_identity({"protocol.update_every": settings.update_every}, "")
    snapshot = settings.snapshot_from
    return Parts(
        env=StepEnv(),
        policy=as_policy(policy or LessonPolicy()),
        memory=memory,
        services=MemoryServices(),
        settings=RunnerSettings(concurrency=concurrency, step_budget=3),
        protocol=settings,
        store=store,
        snapshot_from=RunStore(snapshot).memory_dir if snapshot else None,
    )



def test_acquisition_samples_are_observed_as_one_group_per_task(tmp_path):
    memory = Recorder()
    parts = _parts(tmp_path, memory, update_every=1)
    acquire(parts, parts.policy)
    assert memory.groups == [[f"train{i}"] * 3 for i in range(4)]
    assert memory.batches == [1, 1, 1, 1]  # update_every 1: one task per memory update
    records = parts.store.read_records(files.ACQUISITION)
    assert sorted((r.task_id, r.run) for r in records) == sorted(
        (f"train{i}", s) for i in range(4) for s in range(3)
    )
    policy = parts.policy.backbone
    first = {seed for p, seed in policy.seeds if "task 0" in p and seed in policy.first_steps}
    assert len(first) == 3  # the three samples of a task are sampled with different seeds

    # resume: the last task's group is incomplete -> replayed groups, that task rerun whole
    lines = (tmp_path / files.ACQUISITION).read_text().splitlines()
    (tmp_path / files.ACQUISITION).write_text("\n".join(lines[:-2]) + "\n")
    (tmp_path / files.MEMORY_DIR / files.SNAPSHOT_DONE).unlink()
    again = Recorder()
    parts = _parts(tmp_path, again, update_every=1)
    acquire(parts, parts.policy)
    assert again.groups == [[f"train{i}"] * 3 for i in range(4)]
    assert again.batches == [1, 1, 1, 1]  # the replay makes the same updates
    prompts = [p for p, _ in parts.policy.backbone.seeds]
    # only train3 ran again: 3 samples x 3 steps (no lesson, so "wait" until the budget)
    assert len(prompts) == 9 and all("task 3" in p for p in prompts)


def test_a_method_that_does_not_read_while_acquiring_is_observed_in_batches(tmp_path):
    memory = Recorder()
    memory.retrieves_during_acquisition = False
    memory.acquisition_observe_tasks = 3
    parts = _parts(tmp_path, memory, update_every=1)
    acquire(parts, parts.policy)
    assert memory.batches == [3, 1]
    assert memory.groups == [[f"train{i}"] * 3 for i in range(4)]
    assert memory.seen_at_start == {}  # it never read its memory while acquiring


@pytest.mark.parametrize(("update_every", "seen"), [(1, [0, 1, 2, 3]), (2, [0, 0, 2, 2])])
def test_a_learning_evaluation_updates_every_update_every_tasks(tmp_path, update_every, seen):
    """concurrency 8 never batches the stream: with update_every=1 the memory observes after
    every task, and each task sees the ones before it."""
    memory = Recorder(max_reflections=0)
    parts = _parts(tmp_path, memory, concurrency=8, update_every=update_every)
    records = evaluate(parts)
    assert memory.observed == [f"test{i}" for i in range(4)]
    assert memory.batches == [update_every] * (4 // update_every)
    assert [memory.seen_at_start[f"test{i}"] for i in range(4)] == seen
    assert [r.update for r in records] == [i // update_every for i in range(4)]


@pytest.mark.parametrize(("lesson_at", "limit", "attempts"), [(3, 3, 3), (2, 3, 2), (9, 3, 3)])
def test_reflection_retries_stop_at_success_or_the_limit(tmp_path, lesson_at, limit, attempts):
    memory = Recorder(lesson_at=lesson_at, max_reflections=limit)
    parts = _parts(tmp_path, memory)
    records = evaluate(parts)
    assert len(records) == 4 and not any(r.success for r in records)  # retries not counted
    assert memory.observed == [f"test{i}" for i in range(4)]
    for i in range(4):
        tries = [(a, ok) for t, a, ok in memory.retries if t == f"test{i}"]
        assert [a for a, _ in tries] == list(range(1, attempts + 1))
        assert [ok for _, ok in tries] == [a >= lesson_at for a, _ in tries]
    retries = parts.store.read_records(files.REFLECTIONS)
    assert len(retries) == 4 * attempts and {r.attempt for r in retries} == set(
        range(1, attempts + 1)
    )
    assert compute_metrics(records)["success_rate"] == 0.0


def saved_snapshot(tmp_path) -> str:
    """A saved snapshot (``tmp_path/source``) whose memory has observed one task
    ("from-acquisition")."""
    saved = Recorder()
    saved.observed = ["from-acquisition"]
    source = RunStore(tmp_path / "source")
    saved.save(source.memory_dir)
    source.mark_snapshot_complete({})
    return str(tmp_path / "source")


def test_every_learning_run_starts_from_the_saved_snapshot(tmp_path):
    saved_snapshot(tmp_path)
    memory = Recorder(max_reflections=0)
    parts = _parts(tmp_path / "run", memory, runs=2, snapshot_from=str(tmp_path / "source"))
    acquire(parts, parts.policy)
    records = evaluate(parts)
    assert len(records) == 8
    assert memory.observed == ["from-acquisition"] + [f"test{i}" for i in range(4)]


def test_frozen_memory_makes_no_retries(tmp_path):
    memory = Recorder()
    memory.freeze()
    parts = _parts(tmp_path, memory, runs=2)
    evaluate(parts)
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


def _kill_after(monkeypatch, n_episodes: int):
    """RunStore.append raises after the n-th episode record is written (a kill -9 mid-run)."""
    original = RunStore.append
    written = {"n": 0}

    def dying_append(self, name, record):
        original(self, name, record)
        if name == files.EPISODES:
            written["n"] += 1
            if written["n"] == n_episodes:
                raise KeyboardInterrupt

    monkeypatch.setattr(RunStore, "append", dying_append)
    return original


@pytest.mark.parametrize(
    ("update_every", "killed_after"),
    [(1, 2), (2, 1), (2, 2)],
    ids=["online-between-tasks", "mid-chunk", "between-chunks"],
)
def test_a_killed_learning_evaluation_resumes_to_the_same_updates_and_metrics(
    tmp_path, monkeypatch, update_every, killed_after
):
    kw = {"concurrency": 8, "update_every": update_every, "runs": 2}
    whole = Recorder(lesson_at=2)
    whole_records = evaluate(_parts(tmp_path / "whole", whole, **kw))

    original = _kill_after(monkeypatch, killed_after)
    with pytest.raises(KeyboardInterrupt):
        evaluate(_parts(tmp_path / "killed", Recorder(lesson_at=2), **kw))
    monkeypatch.setattr(RunStore, "append", original)
    resumed = Recorder(lesson_at=2)
    records = evaluate(_parts(tmp_path / "killed", resumed, **kw))

    assert sorted((r.run, r.task_id) for r in records) == sorted(
        (run, f"test{i}") for run in range(2) for i in range(4)
    )
    # run 1 is whole in both; the memory of the last run made the same updates in the same order
    assert resumed.observed == whole.observed and resumed.batches[-2:] == whole.batches[-2:]
    assert resumed.retries == whole.retries
    assert compute_metrics(records) == compute_metrics(whole_records)
    assert [r.update for r in records] == [r.update for r in whole_records]


def test_a_resume_with_another_update_schedule_is_refused(tmp_path):
    evaluate(_parts(tmp_path, Recorder(max_reflections=0), update_every=1))
    with pytest.raises(ConfigError, match="protocol.update_every: 1 in the records, 4 now"):
        _parts(tmp_path, Recorder(max_reflections=0), update_every=4)


class FreshRetrieval(Recorder):
    """A retry shown a fresh retrieval (as ReMe's ``retry_without_lessons: retrieve``): each one
    costs the memory a rerank call, counted where :meth:`reflect` makes it, and is noted."""

    def __init__(self, **kw):
        super().__init__(**kw)
        self.fresh: list[tuple[str, int]] = []

    def _retrieve_again(self, task_id: str, attempt: int) -> MemoryContext:
        usage = self.token_usage.setdefault("rerank", {"calls": 0, "prompt_tokens": 0})
        usage["calls"] += 1
        usage["prompt_tokens"] += 10 * attempt
        self.fresh.append((task_id, attempt))
        text = "LESSON" if attempt >= self.lesson_at else "try again"
        return MemoryContext(slots={"memory": text}, memory_ids=[f"{task_id}-{attempt}"])

    def reflect(self, failures, attempt):
        return [self._retrieve_again(t.task.id, attempt) for t, _ in failures]

    def replay_retry_retrieval(self, trajectory, context):
        attempt = int(context.memory_ids[0].rsplit("-", 1)[1])
        self._retrieve_again(trajectory.task.id, attempt)


def test_a_resume_inside_a_chunk_replays_the_fresh_retrievals_of_its_recorded_retries(
    tmp_path, monkeypatch
):
    """Killed after the first episode of a two-task chunk: the written task's retries are
    replayed, not run, and the fresh retrievals its retries were shown are made again at their
    attempt, so the memory spends (and the chunk's update cost records) what it did whole."""
    kw = {"concurrency": 8, "update_every": 2, "runs": 1}
    whole = FreshRetrieval(lesson_at=2)
    whole_records = evaluate(_parts(tmp_path / "whole", whole, **kw))

    original = _kill_after(monkeypatch, 1)
    with pytest.raises(KeyboardInterrupt):
        evaluate(_parts(tmp_path / "killed", FreshRetrieval(lesson_at=2), **kw))
    monkeypatch.setattr(RunStore, "append", original)
    resumed = FreshRetrieval(lesson_at=2)
    records = evaluate(_parts(tmp_path / "killed", resumed, **kw))

    assert sorted(resumed.fresh) == sorted(whole.fresh) and whole.fresh
    assert resumed.token_usage == whole.token_usage
    got, want = compute_metrics(records), compute_metrics(whole_records)
    assert got["eval_memory_usage"] == want["eval_memory_usage"] != {}
    assert got == want
