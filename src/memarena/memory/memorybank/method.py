"""``MemoryBank`` (Zhong et al., 2023) as ``method=memorybank``, in two modes.

``mode: parity`` -- as the G-Memory reference code (bingreeky/GMemory,
``mas_memory/memorybank.py``) runs it, which is what EvoGraph-Mem's and MemCo's tables measured:

- every finished task is stored with its label; its key is one memory-LLM summary of the
  trajectory (at most 6 sentences, one line);
- retrieval, once per task: the ``top_k`` (1) solved tasks whose key is most similar to the new
  task (failed ones are never shown: the reference runs ``failed_topk=0``), shown as past
  examples (task and trajectory);
- inside a task the agent sees only its last ``in_task_window`` (7) steps: the reference's
  ``MemoryForgetter`` keeps a step while ``exp(-dt / 5) >= 0.3``, i.e. ``dt <= 6``.

``mode: faithful`` -- the mechanism of the paper:

- each finished task is a memory with its event summary (memory LLM), a strength S
  (``initial_strength``) and the time of its last recall; the clock is the task index;
- retention ``R = exp(-t / S)`` (:mod:`.forgetting`); after every observed batch, memories with
  ``R < forget_threshold`` are forgotten;
- retrieval: the ``top_k`` (3) memories most similar to the task, solved or failed, each shown
  with its summary and trajectory, plus the global overview of past events; a recall (while the
  memory learns, never when frozen) sets ``S <- S + 1`` and resets t;
- the global overview is rewritten by the memory LLM once per observed batch.
  The paper's user portrait (personality) is about a human interlocutor and is left out.

Every memory-LLM answer is JSON-schema constrained and batched per observed wave; a malformed
summary is a counted fallback and the task is keyed by its goal instead (it is still stored).
"""

from __future__ import annotations

from typing import Any

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Outcome, Trajectory
from memarena.memory.episodic import (
    StoredTask,
    VectorIndex,
    json_request,
    stored_tasks,
    summarize_tasks,
    summary_schema,
    text_field,
)
from memarena.memory.llm_calls import json_batch
from memarena.memory.memorybank import prompts
from memarena.memory.memorybank.forgetting import retention

MODES = ("parity", "faithful")
DEFAULT_TOP_K = {"parity": 1, "faithful": 3}
PURPOSES = ("summary", "overview")
Pair = tuple[Trajectory, Outcome]


class MemoryBank(MemoryMethod):
    """MemoryBank (parameters in ``conf/method/memorybank.yaml``)."""

    name = "memorybank"
    schema_version = 1
    granularity = "task"

    def __init__(
        self,
        mode: str = "parity",
        top_k: int | None = None,
        in_task_window: int | None = 7,
        initial_strength: float = 1.0,
        forget_threshold: float = 0.3,
        overview: bool = True,
        summary_chars: int = 600,
        observation_chars: int = 300,
        trajectory_chars: int = 6000,
        max_tokens: int = 256,
        temperature: float = 0.1,
        observe_batch: int = 16,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if mode not in MODES:
            raise ConfigError(f"memarena: method.mode={mode!r}; valid values: {list(MODES)}.")
        self.mode = mode
        self.top_k = DEFAULT_TOP_K[mode] if top_k is None else int(top_k)
        if self.top_k < 0 or initial_strength <= 0 or not 0.0 <= forget_threshold <= 1.0:
            raise ConfigError(
                "memarena: method=memorybank needs top_k >= 0, initial_strength > 0 and "
                f"forget_threshold in [0, 1]; got top_k={self.top_k}, initial_strength="
                f"{initial_strength}, forget_threshold={forget_threshold}."
            )
        # parity: the reference's in-task forgetting window; faithful: the protocol's history
        self.history_steps = int(in_task_window) if mode == "parity" and in_task_window else None
        self.initial_strength = float(initial_strength)
        self.forget_threshold = float(forget_threshold)
        self.overview_on = bool(overview) and mode == "faithful"
        self.summary_chars, self.observation_chars = int(summary_chars), int(observation_chars)
        self.trajectory_chars = int(trajectory_chars)
        self.max_tokens, self.temperature = int(max_tokens), float(temperature)
        # the memory is read while acquiring (waves of protocol.update_every); without it
        # tasks are observed this many at a time, one batched summary call each
        self.acquisition_observe_tasks = int(observe_batch)
        self.tasks: dict[str, StoredTask] = {}
        self.summaries: dict[str, str] = {}
        self.strength: dict[str, float] = {}
        self.last_recall: dict[str, int] = {}
        self.index = VectorIndex()
        self.overview = ""
        self.clock = 0  # tasks observed so far (the memory's time)
        self.counts = {"writes": 0, "forgotten": 0, "recalls": 0, "overviews": 0}
        self.token_usage = {p: {} for p in PURPOSES}
        self.fallbacks: dict[str, int] = {}

    # -- writing -------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        new, self.clock = stored_tasks(groups, self.clock)
        if not new:
            return
        summaries = self._summaries(new)
        vectors = self.services.embedder.encode(summaries)
        for task, summary, vector in zip(new, summaries, vectors, strict=True):
            self.tasks[task.id] = task
            self.summaries[task.id] = summary
            self.strength[task.id] = self.initial_strength
            self.last_recall[task.id] = task.time
            self.index.add(task.id, vector)
        self.counts["writes"] += len(new)
        if self.mode == "faithful":
            if self.overview_on:
                self._rewrite_overview(summaries)
            self.forget()

    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        self.observe_groups([[(trajectory, outcome)]])

    def _summaries(self, tasks: list[StoredTask]) -> list[str]:
        return summarize_tasks(
            self.services.llm,
            tasks,
            usage=self.token_usage["summary"],
            fallbacks=self.fallbacks,
            kind="memorybank_summary",
            chars=self.summary_chars,
            max_tokens=self.max_tokens,
            temperature=self.temperature,
            observation_chars=self.observation_chars,
            trajectory_chars=self.trajectory_chars,
        )

    def _rewrite_overview(self, summaries: list[str]) -> None:
        user = prompts.OVERVIEW_USER.format(
            overview=self.overview or "(none yet)",
            summaries="\n".join(f"- {s}" for s in summaries),
        )
        request = json_request(
            prompts.OVERVIEW_SYSTEM,
            user,
            summary_schema(self.summary_chars),
            self.max_tokens,
            self.temperature,
        )
        (answer,) = self._ask("overview", [request])
        text = text_field(answer, "summary", self.summary_chars)
        if text:
            self.overview = text
            self.counts["overviews"] += 1

    def _ask(self, purpose: str, requests: list) -> list[Any]:
        return json_batch(
            self.services.llm,
            requests,
            usage=self.token_usage[purpose],
            fallbacks=self.fallbacks,
            kind=f"memorybank_{purpose}",
        )

    # -- forgetting (faithful) -----------------------------------------------------------------
    def retention_of(self, entry_id: str, now: int | None = None) -> float:
        """``exp(-t / S)`` of a memory at time ``now`` (default: the memory's clock)."""
        now = self.clock if now is None else now
        return retention(now - self.last_recall[entry_id], self.strength[entry_id])

    def forget(self) -> list[str]:
        """Drop the memories whose retention is below the threshold now; their ids."""
        gone = [i for i in self.tasks if self.retention_of(i) < self.forget_threshold]
        for entry_id in gone:
            for table in (self.tasks, self.summaries, self.strength, self.last_recall):
                table.pop(entry_id, None)
        self.index.remove(gone)
        self.counts["forgotten"] += len(gone)
        return gone

    def recall(self, entry_ids: list[str]) -> None:
        """A recall strengthens each memory (S + 1) and resets its elapsed time."""
        for entry_id in entry_ids:
            self.strength[entry_id] += 1.0
            self.last_recall[entry_id] = self.clock
        self.counts["recalls"] += len(entry_ids)

    # -- retrieval -----------------------------------------------------------------------------
    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        if not queries or not self.tasks or self.top_k == 0:
            return [self._context([]) for _ in queries]
        vectors = self.services.embedder.encode([q.task.goal for q in queries])
        allowed = (lambda i: self.tasks[i].success) if self.mode == "parity" else None
        out = []
        for vector in vectors:
            hits = [i for i, _ in self.index.search(vector, self.top_k, allowed)]
            out.append(self._context(hits))
            if self.mode == "faithful" and not self.frozen:
                self.recall(hits)
        return out

    def _context(self, hits: list[str]) -> MemoryContext:
        slots: dict[str, str] = {}
        ids = list(hits)
        if self.overview_on and self.overview:
            slots["memory_overview"] = f"{prompts.OVERVIEW_HEADER} {self.overview}"
            ids.insert(0, "overview")
        if hits:
            slots["past_tasks"] = "\n\n".join([prompts.PAST_HEADER, *map(self.render, hits)])
        return MemoryContext(slots=slots, memory_ids=ids)

    def render(self, entry_id: str) -> str:
        task = self.tasks[entry_id].render(self.observation_chars)
        if self.mode == "parity":
            return task
        return f"Summary: {self.summaries[entry_id]}\n{task}"

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_entries": len(self.tasks),
            "memory_writes": self.counts["writes"],
            "memory_forgotten": self.counts["forgotten"],
            "memory_recalls": self.counts["recalls"],
        }

    def size(self) -> int:
        return len(self.tasks)

    def state_dict(self) -> dict[str, Any]:
        return {
            "mode": self.mode,
            "tasks": [t.to_dict() for t in self.tasks.values()],
            "summaries": dict(self.summaries),
            "strength": dict(self.strength),
            "last_recall": dict(self.last_recall),
            "index": self.index.to_dict(),
            "overview": self.overview,
            "clock": self.clock,
            "counts": dict(self.counts),
            "token_usage": {p: dict(u) for p, u in self.token_usage.items()},
            "fallbacks": dict(self.fallbacks),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        if state.get("mode", self.mode) != self.mode:
            raise ConfigError(
                f"memarena: this MemoryBank snapshot was written in mode={state['mode']}, the "
                f"run asks for mode={self.mode}; use method.mode={state['mode']} or a fresh run."
            )
        self.tasks = {d["id"]: StoredTask.from_dict(d) for d in state["tasks"]}
        self.summaries = dict(state["summaries"])
        self.strength = {k: float(v) for k, v in state["strength"].items()}
        self.last_recall = {k: int(v) for k, v in state["last_recall"].items()}
        self.index = VectorIndex.from_dict(state["index"])
        self.overview = state.get("overview", "")
        self.clock = int(state["clock"])
        self.counts = {**self.counts, **state.get("counts", {})}
        self.token_usage = {p: dict(state.get("token_usage", {}).get(p, {})) for p in PURPOSES}
        self.fallbacks = dict(state.get("fallbacks", {}))
