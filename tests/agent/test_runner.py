"""The batched runner: lockstep batching, refill, budgets, and env failures recorded per episode."""

from __future__ import annotations

import pytest

from memarena.agent import EpisodeRunner, RunnerSettings, as_policy
from memarena.agent.parse import parse_action
from memarena.core import (
    REQUEST_FAILED,
    Completion,
    Env,
    EnvPrompt,
    Episode,
    Feedback,
    MemoryContext,
    Observation,
    ServerUnreachableError,
    StepResult,
    Task,
    Usage,
)
from memarena.core.memory import Capabilities
from memarena.memory.none import NoMemory


class CountEnv(Env):
    """A tiny env: reach `target` by choosing "inc"; "boom" tasks raise at step `crash_at`."""

    name = "count"
    step_budget = 10

    def __init__(self, crash_at: int | None = None):
        self.crash_at = crash_at
        self.opened = self.closed = 0

    def tasks(self, split):
        return [
            Task(f"t{i}", "count", split, "d", f"count to {i % 3 + 1}", {"target": i % 3 + 1})
            for i in range(5)
        ]

    def domains(self):
        return ["d"]

    def prompt(self, task=None):
        return EnvPrompt(system="count", action_format="Reply with one action.")

    def open(self, task):
        self.opened += 1
        return CountEpisode(self, task)

    def close(self):
        pass


class CountEpisode(Episode):
    def __init__(self, env, task):
        self.env, self.task, self.n = env, task, 0

    def _obs(self):
        return Observation(f"n={self.n}", self.task.goal, ["inc", "wait"])

    def reset(self):
        return self._obs()

    def step(self, action):
        if self.env.crash_at is not None and self.task.id == "t1" and self.n >= self.env.crash_at:
            raise RuntimeError("simulator died")
        changed = action == "inc"
        self.n += changed
        target = self.task.payload["target"]
        done = self.n >= target
        return StepResult(
            self._obs(),
            float(done),
            done,
            done,
            min(1.0, self.n / target),
            Feedback(True, changed, None if changed else "no_effect"),
        )

    def expert_action(self):
        return "inc"

    def close(self):
        self.env.closed += 1


class RecordingBackbone:
    """Test double: always picks the first choice ("inc"), records batch sizes."""

    name = "test-double"

    def __init__(self, pick=0):
        self.usage = Usage()
        self.batches: list[int] = []
        self.pick = pick

    def generate(self, requests):
        self.batches.append(len(requests))
        return [Completion(r.choices[self.pick], 10, 1, choice_index=self.pick) for r in requests]

    def close(self):
        pass


def test_lockstep_batches_and_refill():
    env, bb = CountEnv(), RecordingBackbone()
    runner = EpisodeRunner(
        env, as_policy(bb), NoMemory(), RunnerSettings(concurrency=3), progress_bar=False
    )
    results = runner.run(env.tasks("test"))
    assert [r.trajectory.task.id for r in results] == ["t0", "t1", "t2", "t3", "t4"]
    assert all(r.outcome.success for r in results)
    # targets 1,2,3,1,2: steps equal targets; batches never exceed concurrency
    assert [r.outcome.steps for r in results] == [1, 2, 3, 1, 2]
    assert max(bb.batches) == 3 and sum(bb.batches) == 9
    assert results[2].outcome.prompt_tokens == 30 and results[2].outcome.completion_tokens == 3
    assert env.opened == env.closed == 5


def test_budget_and_failure_are_recorded_and_run_continues():
    env = CountEnv(crash_at=1)
    bb = RecordingBackbone(pick=1)  # always "wait": never reaches the target
    runner = EpisodeRunner(
        env,
        as_policy(bb),
        NoMemory(),
        RunnerSettings(concurrency=2, step_budget=4),
        progress_bar=False,
    )
    results = runner.run(env.tasks("test"))
    statuses = {r.trajectory.task.id: r.outcome.status for r in results}
    assert statuses == {
        "t0": "budget",
        "t1": "budget",
        "t2": "budget",
        "t3": "budget",
        "t4": "budget",
    }
    env2 = CountEnv(crash_at=1)
    results = EpisodeRunner(
        env2,
        as_policy(RecordingBackbone()),
        NoMemory(),
        RunnerSettings(concurrency=2),
        progress_bar=False,
    ).run(env2.tasks("test"))
    crashed = results[1].outcome
    assert crashed.status == "error" and "simulator died" in crashed.error and crashed.steps == 1
    assert [r.outcome.status for r in results if r.trajectory.task.id != "t1"] == ["success"] * 4
    assert env2.opened == env2.closed == 5


def test_parse_action_free_text():
    adm = ["pick ball1 rooma left", "move rooma roomb"]
    assert parse_action("Action: Pick  ball1 rooma LEFT.\nbecause", adm) == "pick ball1 rooma left"
    assert parse_action("> move rooma roomb", adm) == "move rooma roomb"
    assert parse_action("\n\nfly away", adm) == "fly away"
    react = "Thought 1: I should search the town.\nAction 1: Search[Kestrel Bay]\nObservation"
    assert parse_action(react) == "Search[Kestrel Bay]"


class ReplyEpisode(CountEpisode):
    """Free-text episode (no admissible actions) that parses its own replies and has details."""

    def __init__(self, env, task):
        super().__init__(env, task)
        self.seen: list[str] = []

    def _obs(self):
        return Observation(f"n={self.n}", self.task.goal, None)

    def parse_reply(self, text):
        return "inc" if "<inc/>" in text else text.strip()

    def step(self, action):
        self.seen.append(action)
        return super().step(action)

    def details(self):
        return {"n": self.n, "seen": list(self.seen)}


class ReplyEnv(CountEnv):
    def open(self, task):
        self.opened += 1
        return ReplyEpisode(self, task)


class TextBackbone(RecordingBackbone):
    def generate(self, requests):
        self.batches.append(len(requests))
        return [Completion("Thought: step up.\nsecond line <inc/>", 10, 1) for _ in requests]


def test_parse_reply_and_details_hooks():
    env = ReplyEnv()
    runner = EpisodeRunner(
        env,
        as_policy(TextBackbone()),
        NoMemory(),
        RunnerSettings(action_mode="free"),
        progress_bar=False,
    )
    results = runner.run(env.tasks("test")[:2])
    # parse_action would keep only the first line ("Thought: step up."); the hook saw <inc/>
    assert [r.outcome.status for r in results] == ["success", "success"]
    assert results[1].trajectory.steps[0].action == "inc"
    assert results[1].details == {"n": 2, "seen": ["inc", "inc"]}
    plain = EpisodeRunner(
        CountEnv(), as_policy(RecordingBackbone()), NoMemory(), RunnerSettings(), progress_bar=False
    ).run(CountEnv().tasks("test")[:1])
    assert plain[0].details is None


def test_failing_details_hook_is_logged_not_raised():
    env = ReplyEnv()

    def broken(self):
        raise RuntimeError("no details")

    ReplyEpisode.details, saved = broken, ReplyEpisode.details
    try:
        results = EpisodeRunner(
            env,
            as_policy(TextBackbone()),
            NoMemory(),
            RunnerSettings(action_mode="free"),
            progress_bar=False,
        ).run(env.tasks("test")[:1])
    finally:
        ReplyEpisode.details = saved
    assert results[0].outcome.status == "success" and results[0].details is None


class DeadServer(RecordingBackbone):
    """Requests fail as an unreachable server's would (after the engine's retries): all of
    them, or those of the batches where ``answers`` (cycled) is False."""

    def __init__(self, answers=(False,)):
        super().__init__()
        self.answers = answers

    def generate(self, requests):
        self.batches.append(len(requests))
        if self.answers[(len(self.batches) - 1) % len(self.answers)]:
            return [Completion(r.choices[0], 1, 1, choice_index=0) for r in requests]
        error = "APIConnectionError: Connection refused"
        return [Completion("", fallback=REQUEST_FAILED, error=error) for _ in requests]


def test_unanswered_requests_end_episodes_as_errors_and_then_stop_the_run():
    env, finished = CountEnv(), []
    runner = EpisodeRunner(
        env,
        as_policy(DeadServer()),
        NoMemory(),
        RunnerSettings(concurrency=1, max_failed_batches=3),
        progress_bar=False,
    )
    with pytest.raises(ServerUnreachableError, match="none of the requests of 3 steps"):
        runner.run(env.tasks("test"), on_finish=finished.append)
    assert [r.trajectory.task.id for r in finished] == ["t0", "t1", "t2"]
    for result in finished:  # recorded, so a rerun retries them
        assert result.outcome.status == "error" and result.outcome.steps == 0
        assert result.outcome.error == "LLM request failed: APIConnectionError: Connection refused"
    assert env.opened == env.closed == 3


def test_a_batch_with_an_answer_resets_the_failure_count():
    env = CountEnv()
    backbone = DeadServer(answers=(False, True))  # a flaky server: every other step answered
    runner = EpisodeRunner(
        env, as_policy(backbone), NoMemory(), RunnerSettings(concurrency=1,
        max_failed_batches=2), progress_bar=False,
    )  # fmt: skip
    results = runner.run(env.tasks("test"))  # never two unanswered steps in a row
    # steps alternate: t0 fails at once; t1, t2 take one step, then fail; t3 ends in one step
    assert [r.outcome.status for r in results] == ["error", "error", "error", "success", "error"]


class Garbled(RecordingBackbone):
    """Choice mode: an answer outside the choices (the engine's fallback); free mode: empty
    text, then an action the env cannot read, then the right one."""

    def generate(self, requests):
        out = []
        for r in requests:
            if r.choices is not None:
                out.append(Completion("jump", 1, 1, fallback="choice_invalid"))
            else:
                out.append(Completion(["", "fly", "inc"][len(self.batches) % 3], 1, 1))
        self.batches.append(len(requests))
        return out


class StrictEpisode(CountEpisode):
    def step(self, action):
        if action not in ("inc", "wait"):
            return StepResult(self._obs(), 0.0, False, False, 0.0,
                              Feedback(False, False, "invalid_action"))  # fmt: skip
        return super().step(action)


class StrictEnv(CountEnv):
    def open(self, task):
        self.opened += 1
        return StrictEpisode(self, task)


@pytest.mark.parametrize(("mode", "invalid"), [("choice", 3), ("free", 2)])
def test_replies_the_agent_cannot_act_on_are_counted_per_episode(mode, invalid):
    env = StrictEnv()
    settings = RunnerSettings(concurrency=1, step_budget=3, action_mode=mode)
    runner = EpisodeRunner(env, as_policy(Garbled()), NoMemory(), settings, progress_bar=False)
    (result,) = runner.run(env.tasks("test")[:1])
    assert result.outcome.invalid_replies == invalid
    assert result.outcome.status == ("budget" if mode == "choice" else "success")


class PricedMemory(NoMemory):
    """Shows two entries per retrieval and spends 7 LLM tokens on each."""

    capabilities = Capabilities(granularity="step")

    def __init__(self):
        super().__init__()
        self.token_usage = {"rerank": {"calls": 0, "prompt_tokens": 0}}

    def retrieve(self, query):
        self.token_usage["rerank"]["calls"] += 1
        self.token_usage["rerank"]["prompt_tokens"] += 7
        return MemoryContext(slots={"m": "three words here"}, memory_ids=["a", "b"])


def test_each_episode_keeps_what_its_retrievals_cost():
    env = CountEnv()
    runner = EpisodeRunner(
        env, as_policy(RecordingBackbone()), PricedMemory(), RunnerSettings(concurrency=2),
        progress_bar=False,
    )  # fmt: skip
    results = runner.run(env.tasks("test")[:3])  # targets 1, 2, 3: 1, 2, 3 retrievals
    costs = [r.memory_cost for r in results]
    assert [c["calls"] for c in costs] == [1, 2, 3]
    assert costs[2] == {"calls": 3, "entries": 6, "words": 9,
                        "usage": {"rerank": {"calls": 3, "prompt_tokens": 21}}}
    assert runner.retrieval_spent == {"usage": {"rerank": {"calls": 6, "prompt_tokens": 42}}}


class QueryLog(NoMemory):
    """A per-step memory that keeps every query it is asked (MemCo's granularity)."""

    capabilities = Capabilities(granularity="step")

    def __init__(self):
        super().__init__()
        self.queries = []

    def retrieve(self, query):
        self.queries.append(
            (query.task.id, query.step, [s.action for s in query.history], query.progress,
             query.observation.text)
        )  # fmt: skip
        hint = f"hint {len(self.queries)}"
        return MemoryContext(slots={"m": hint}, memory_ids=[f"m{query.step}"])


def test_a_step_memory_is_asked_before_every_step_with_the_history_and_progress():
    env, memory = CountEnv(), QueryLog()
    runner = EpisodeRunner(
        env, as_policy(RecordingBackbone()), memory, RunnerSettings(concurrency=2),
        progress_bar=False,
    )  # fmt: skip
    (result,) = runner.run([env.tasks("test")[2]])  # target 3: three "inc" steps
    # once at the start, then before steps 2 and 3, each with what happened so far
    assert memory.queries == [
        ("t2", 0, [], 0.0, "n=0"),
        ("t2", 1, ["inc"], 1 / 3, "n=1"),
        ("t2", 2, ["inc", "inc"], 2 / 3, "n=2"),
    ]
    assert result.trajectory.memory_ids == ["m0", "m1", "m2"]
    assert result.memory_cost == {"calls": 3, "entries": 3, "words": 6}


@pytest.mark.parametrize("record", [True, False])
def test_record_prompts_keeps_each_steps_messages_and_shown_memory(record):
    env, memory = CountEnv(), QueryLog()
    runner = EpisodeRunner(
        env, as_policy(RecordingBackbone()), memory,
        RunnerSettings(concurrency=1, record_prompts=record), progress_bar=False,
    )  # fmt: skip
    (result,) = runner.run([env.tasks("test")[1]])  # target 2: two steps
    steps = result.trajectory.to_dict()["steps"]
    if not record:  # the messages are left out of the record; the shown ids are kept
        assert all("prompt" not in s for s in steps)
        assert [s["memory_ids"] for s in steps] == [["m0"], ["m1"]]
        return
    # the step's own hint (retrieved just before it) is in the messages the model was given:
    # the first in the first user message, the second in the newest user message, after the
    # first step's reply (the conversation keeps what it sent: the first hint stays)
    assert [s["memory_ids"] for s in steps] == [["m0"], ["m1"]]
    first, second = (s["prompt"] for s in steps)
    assert [m["role"] for m in first] == ["system", "user"]
    assert "hint 1" in first[1]["content"] and "hint 2" not in first[1]["content"]
    assert [m["role"] for m in second] == ["system", "user", "assistant", "user"]
    assert second[:2] == first
    assert second[2]["content"] == steps[0]["raw_output"]
    assert "hint 2" in second[3]["content"] and "n=1" in second[3]["content"]


def test_record_memory_keeps_each_steps_memory_text_without_the_prompt():
    env, memory = CountEnv(), QueryLog()
    runner = EpisodeRunner(
        env, as_policy(RecordingBackbone()), memory,
        RunnerSettings(concurrency=1, record_memory=True), progress_bar=False,
    )  # fmt: skip
    (result,) = runner.run([env.tasks("test")[1]])
    steps = result.trajectory.to_dict()["steps"]
    assert [s["memory"] for s in steps] == [{"m": "hint 1"}, {"m": "hint 2"}]
    assert [s["memory_ids"] for s in steps] == [["m0"], ["m1"]]
    assert all("prompt" not in s for s in steps)


def test_single_format_shows_only_the_steps_own_memory():
    env, memory = CountEnv(), QueryLog()
    runner = EpisodeRunner(
        env, as_policy(RecordingBackbone()), memory,
        RunnerSettings(concurrency=1, record_prompts=True, prompt_format="single"),
        progress_bar=False,
    )  # fmt: skip
    (result,) = runner.run([env.tasks("test")[1]])
    steps = result.trajectory.to_dict()["steps"]
    assert [len(s["prompt"]) for s in steps] == [2, 2]
    texts = ["\n".join(m["content"] for m in s["prompt"]) for s in steps]
    assert ["hint 1" in t for t in texts] == [True, False]
    assert ["hint 2" in t for t in texts] == [False, True]
