"""The three interfaces everything plugs into: Env, Backbone and MemoryMethod.

An *Env* is a benchmark: it lists tasks and opens *Episodes*. One Env object can have many
episodes open at once, which is what the batched runner needs (N concurrent episodes stepped
in lockstep). Envs never import models or memory methods.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from memarena.core.llm_types import ChatRequest, Completion
from memarena.core.types import (
    MemoryContext,
    MemoryQuery,
    Observation,
    Outcome,
    StepResult,
    Task,
    Trajectory,
    Usage,
)


@dataclass
class EnvPrompt:
    """Per-benchmark prompt pieces used by the agent's prompt builder.

    ``fewshot`` holds fixed demonstrations (text) that the env ships; memory methods add their
    own slots next to it.
    """

    system: str
    action_format: str
    fewshot: list[str] = field(default_factory=list)


@runtime_checkable
class Episode(Protocol):
    task: Task

    def reset(self) -> Observation: ...

    def step(self, action: str) -> StepResult: ...

    def expert_action(self) -> str | None:
        """The expert's next action in the current state (None when it has none)."""
        ...

    def close(self) -> None: ...


@runtime_checkable
class Env(Protocol):
    name: str
    step_budget: int

    def tasks(self, split: str) -> list[Task]:
        """Tasks of a split (``train`` or ``test``; envs may offer more)."""
        ...

    def domains(self) -> list[str]:
        """Source domains (MemCo: one agent per domain)."""
        ...

    def prompt(self, task: Task | None = None) -> EnvPrompt:
        """Prompt pieces for a task (benchmarks with several domains describe only its own)."""
        ...

    def open(self, task: Task) -> Episode: ...

    def close(self) -> None: ...


@runtime_checkable
class Backbone(Protocol):
    """An LLM (or the scripted expert) answering a batch of chat requests."""

    name: str
    is_llm: bool
    usage: Usage

    def generate(self, requests: list[ChatRequest]) -> list[Completion]: ...

    def close(self) -> None: ...


@runtime_checkable
class Embedder(Protocol):
    name: str
    dim: int

    def encode(self, texts: list[str]) -> Any:
        """A float32 array of shape (len(texts), dim)."""
        ...


@runtime_checkable
class MemoryMethod(Protocol):
    """A long-term memory method.

    ``granularity`` is ``"task"`` (retrieve once at the start of an episode) or ``"step"``
    (retrieve before every step, as MemCo does). ``acquisition_policy`` is ``"agent"`` (the
    backbone acts on the training tasks) or ``"expert"`` (the env's expert acts, e.g. ICL
    demonstrations).
    """

    name: str
    granularity: str
    acquisition_policy: str
    frozen: bool

    def retrieve(self, query: MemoryQuery) -> MemoryContext: ...

    def observe(self, trajectory: Trajectory, outcome: Outcome) -> None: ...

    def freeze(self) -> None: ...

    def save(self, directory: Path) -> None: ...

    def load(self, directory: Path) -> None: ...
