"""Shared plumbing for memory methods: freezing, snapshot files, lazy services."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any

from memarena.core import (
    Backbone,
    ConfigError,
    Embedder,
    MemoryContext,
    MemoryFrozenError,
    MemoryQuery,
    Outcome,
    Trajectory,
)

log = logging.getLogger(__name__)

SNAPSHOT_FILE = "memory.json"


class MemoryServices:
    """Models a memory method may need, built on first use so methods that need none pay nothing.

    ``llm`` is the memory-side backbone (see conf/memory_backbone), ``embedder`` the sentence
    embedder (conf/embedder).
    """

    def __init__(
        self,
        llm_factory: Callable[[], Backbone] | None = None,
        embedder_factory: Callable[[], Embedder] | None = None,
    ) -> None:
        self._llm_factory = llm_factory
        self._embedder_factory = embedder_factory
        self._llm: Backbone | None = None
        self._embedder: Embedder | None = None

    @property
    def llm(self) -> Backbone:
        if self._llm is None:
            if self._llm_factory is None:
                raise ConfigError("this memory method needs an LLM but no memory_backbone is set")
            self._llm = self._llm_factory()
        return self._llm

    @property
    def embedder(self) -> Embedder:
        if self._embedder is None:
            if self._embedder_factory is None:
                raise ConfigError("this memory method needs an embedder but none is configured")
            self._embedder = self._embedder_factory()
        return self._embedder

    @property
    def llm_if_built(self) -> Backbone | None:
        return self._llm


class BaseMemory:
    """Default behaviour of the MemoryMethod protocol.

    Subclasses implement ``_observe``, ``retrieve``, ``state_dict`` and ``load_state_dict``.
    ``learns`` tells the pipeline whether an acquisition phase is worth running.
    """

    name: str = "base"
    schema_version: int = 1
    granularity: str = "task"
    acquisition_policy: str = "agent"
    learns: bool = True
    # acquisition: trajectories sampled per train task and their temperature (None = the
    # protocol's); ReMe samples N=8 at 0.9 and distils each task's group together
    acquisition_samples: int = 1
    acquisition_temperature: float | None = None
    # train tasks whose sample groups are observed in one call: a method that does not retrieve
    # while acquiring can batch its LLM calls over many tasks (the default observes every wave)
    acquisition_observe_tasks: int = 1
    # failure-aware retries while the memory learns during evaluation (ReMe's reflection)
    max_reflections: int = 0

    def __init__(self, name: str | None = None, services: MemoryServices | None = None, **_: Any):
        if name is not None:
            self.name = name
        self.services = services or MemoryServices()
        self.frozen = False
        self.phase = "acquire"
        # {purpose: {calls, prompt_tokens, completion_tokens, ...}} of the method's own LLM calls
        self.token_usage: dict[str, dict[str, int]] = {}
        self._calls = self._entries = 0  # retrievals and entries shown, since freeze()

    # --- protocol ---------------------------------------------------------------------------
    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return MemoryContext.empty()

    def observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        self.refuse_if_frozen()
        self._observe(trajectory, outcome)

    def refuse_if_frozen(self) -> None:
        """MemoryFrozenError when frozen (for every method entry point that learns)."""
        if self.frozen:
            raise MemoryFrozenError(
                f"memory '{self.name}' is frozen (evaluation with freeze_during_eval=true); "
                "it cannot observe new trajectories"
            )

    def observe_groups(self, groups: list[list[tuple[Trajectory, Outcome]]]) -> None:
        """Acquisition: each group holds the ``acquisition_samples`` trajectories of one train
        task; groups come in task order, one call per wave so a method can batch its LLM calls.
        Default: observe every trajectory in order."""
        for group in groups:
            for trajectory, outcome in group:
                self.observe(trajectory, outcome)

    def begin_phase(self, phase: str) -> None:
        """Called by the pipeline as ``"acquire"`` and ``"eval"`` begin."""
        self.phase = phase

    def reflect(
        self, failures: list[tuple[Trajectory, Outcome]], attempt: int
    ) -> list[MemoryContext | None]:
        """While learning during evaluation: for each failed episode, the context of a retry
        (lessons from the failure) or None for no retry. Attempt counts from 1 and stops at
        ``max_reflections``; retries never count in the metrics. Default: no retries."""
        return [None] * len(failures)

    def observe_retry(
        self, trajectory: Trajectory, outcome: Outcome, attempt: int, context: MemoryContext
    ) -> None:
        """The result of a retry made with ``context`` (see :meth:`reflect`)."""
        return None

    def freeze(self) -> None:
        self._calls = self._entries = 0
        self.frozen = True

    def retrieval_metrics(self) -> dict[str, float]:
        """``retrieval_calls`` and ``avg_mem_entries`` (entries shown per call) since freeze."""
        return {
            "retrieval_calls": self._calls,
            "avg_mem_entries": self._entries / max(self._calls, 1),
        }

    def metrics(self) -> dict[str, float]:
        """Method-specific numbers added to ``metrics.json`` after evaluation (memory size,
        retrieved entries per call ...); none by default."""
        return {}

    def own_tokens(self) -> int:
        """Tokens of the method's own LLM calls so far (prompt + completion, summed over
        ``token_usage``); the pipeline reports the evaluation-time delta as ``memory_tokens``."""
        return sum(
            u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
            for u in self.token_usage.values()
        )

    def eval_views(self) -> list[str | None]:
        """The views evaluation runs under, each over the whole test set. One view (None) by
        default; MemCo returns its agents (each agent's local memory + the global memory)."""
        return [None]

    def set_view(self, view: str | None) -> None:
        """Select the view for the following retrievals (see :meth:`eval_views`)."""
        if view is not None:
            raise ConfigError(f"memory '{self.name}' has no evaluation view {view!r}")

    def save(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        blob = {"method": self.name, "schema_version": self.schema_version}
        blob["state"] = self.state_dict()
        tmp = directory / (SNAPSHOT_FILE + ".tmp")
        tmp.write_text(json.dumps(blob, ensure_ascii=False))
        tmp.replace(directory / SNAPSHOT_FILE)

    def load(self, directory: Path) -> None:
        path = directory / SNAPSHOT_FILE
        if not path.exists():
            raise ConfigError(f"no memory snapshot at {path}; run acquisition first")
        blob = json.loads(path.read_text())
        if blob.get("method") != self.name or blob.get("schema_version") != self.schema_version:
            raise ConfigError(
                f"snapshot {path} was written by method={blob.get('method')} schema "
                f"v{blob.get('schema_version')}; this is method={self.name} "
                f"v{self.schema_version}. Use a fresh results dir or the matching method."
            )
        self.load_state_dict(blob["state"])

    # --- for subclasses ---------------------------------------------------------------------
    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        return None

    def state_dict(self) -> dict[str, Any]:
        return {}

    def load_state_dict(self, state: dict[str, Any]) -> None:
        return None
