"""Hand-built episodes for the trajectory-storing baselines' tests (MemoryBank, Voyager,
Generative Agents). Goals ``v:a,b,c`` embed as [a, b, c] with :class:`doubles.FakeEmbedder`."""

from __future__ import annotations

import json

from doubles import FakeEmbedder, FakeLLM

from memarena.core import (
    Feedback,
    MemoryQuery,
    MemoryServices,
    Observation,
    Outcome,
    Step,
    Task,
    Trajectory,
)


def episode(goal: str, success: bool, task_id: str = "t", actions=("a1", "a2")):
    """One finished episode: the actions all accepted, except a last rejected ``oops``."""
    task = Task(task_id, "fake", "train", "d", goal)
    steps = [Step(a, f"after {a}", 0.0, 0.5, Feedback(True, True)) for a in actions]
    steps.append(Step("oops", "Nothing happens.", 0.0, 0.5, Feedback(False, False)))
    status = "success" if success else "failure"
    outcome = Outcome(success, 1.0 if success else 0.5, len(steps), status)
    return Trajectory(task, "you see a room", steps), outcome


def query(goal: str, task_id: str = "q") -> MemoryQuery:
    return MemoryQuery(
        task=Task(task_id, "fake", "test", "d", goal), observation=Observation("o", goal)
    )


def sentence_embedder(model: str, normalize: bool):
    """A real sentence-transformers embedder of ``model`` (a released checkpoint's encoders)."""
    from memarena.embed.sentence import SentenceEmbedder

    return SentenceEmbedder(model=model, normalize=normalize)


def services(llm: FakeLLM) -> MemoryServices:
    return MemoryServices(
        llm_factory=lambda: llm,
        embedder_factory=FakeEmbedder,
        named_embedder_factory=sentence_embedder,
    )


def answer(**fields) -> str:
    return json.dumps(fields)
