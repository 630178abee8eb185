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
  (``initial_strength``) and the time of its last recall;
- retention ``R = exp(-t / S)`` (:mod:`.forgetting`), t in days as in the paper's code: every
  ``tasks_per_day`` (5) consecutive tasks make one day, so t is the whole days between the day
  of the last recall and the day of the task about to run. 5 because the paper's simulated
  histories hold about five memory pieces a day (the released
  ``eval_data/en/memory_bank_en.json``: 566 exchanges over 15 users x 10 days, plus each day's
  summary) and G-Memory's forgetting counts 5 steps per unit of t. With S = 1 and
  ``forget_threshold`` 0.3 a memory never recalled lives through the next day (R = e^-1) and
  is gone on the second (e^-2 = 0.135 < 0.3); recalled once (S = 2) it lives two days after
  the recall (e^-1 = 0.368) and is gone on the third (e^-1.5 = 0.223). ``tasks_per_day: 1`` is
  the task-index clock, under which a memory not recalled is gone two tasks later. After every
  observed batch, memories with ``R < forget_threshold`` are forgotten;
- retrieval: the ``top_k`` (3) memories most similar to the task, solved or failed, each shown
  with its summary and trajectory, plus the global overview of past events; a recall (while the
  memory learns, never when frozen) sets ``S <- S + 1`` and resets t;
- the global overview is rewritten by the memory LLM once per observed batch.
  The paper's user portrait (personality) is about a human interlocutor and is left out.

Every memory-LLM answer is JSON-schema constrained and batched per observed wave; a malformed
summary is a counted fallback and the task is keyed by its goal instead (it is still stored).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from memarena.core import MemoryContext, MemoryQuery, Trajectory
from memarena.core.typecheck import Count, Positive, Range, Unit
from memarena.memory.episodic import (
    BaselineSettings,
    ModalBaseline,
    Pair,
    StoredTask,
    VectorIndex,
    json_request,
    stored_tasks,
    summary_schema,
    text_field,
    whole_observations,
)
from memarena.memory.memorybank import prompts
from memarena.memory.memorybank.forgetting import days_between, retention


@dataclass(frozen=True)
class MemoryBankSettings(BaselineSettings):
    """MemoryBank's keys (``conf/method/memorybank.yaml`` gives each one's source)."""

    observation_chars: Positive | None = whole_observations()

    mode: Literal["parity", "faithful"] = "parity"
    in_task_window: Count | None = 7  # parity: the reference's window of steps in a task
    initial_strength: Annotated[float, Range(gt=0)] = 1.0
    forget_threshold: Unit = 0.3
    tasks_per_day: Positive = 5  # tasks that make one day of the forgetting clock
    overview: bool = True
    summary_chars: Positive = 600
    trajectory_chars: Positive = 6000


class MemoryBank(ModalBaseline):
    """MemoryBank (parameters in ``conf/method/memorybank.yaml``)."""

    name = "memorybank"
    schema_version = 1
    DEFAULT_TOP_K = {"parity": 1, "faithful": 3}
    PURPOSES = ("summary", "overview")
    TEMPERATURE = 0.1  # the reference's summary temperature
    COUNTS = ("writes", "forgotten", "recalls", "overviews")
    # faithful: a recall while learning strengthens what it showed (replayed on resume)
    capabilities = replace(ModalBaseline.capabilities, retrieval_mutates=True)

    Settings = MemoryBankSettings

    def __init__(self, settings: MemoryBankSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: MemoryBankSettings = self.settings
        # parity: the reference's in-task forgetting window; faithful: the protocol's history
        window = s.in_task_window
        self.history_steps = int(window) if s.mode == "parity" and window else None
        self.initial_strength = float(s.initial_strength)
        self.forget_threshold = float(s.forget_threshold)
        self.tasks_per_day = s.tasks_per_day
        self.overview_on = s.overview and s.mode == "faithful"
        self.summary_chars, self.trajectory_chars = s.summary_chars, s.trajectory_chars
        self.tasks: dict[str, StoredTask] = {}
        self.summaries: dict[str, str] = {}
        self.strength: dict[str, float] = {}
        self.last_recall: dict[str, int] = {}
        self.index = VectorIndex()
        self.overview = ""

    # -- writing -------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        new, self.clock = stored_tasks(groups, self.clock)
        if not new:
            return
        summaries = self.summarize(new)
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

    def _rewrite_overview(self, summaries: list[str]) -> None:
        user = prompts.OVERVIEW_USER.format(
            overview=self.overview or "(none yet)",
            summaries="\n".join(f"- {s}" for s in summaries),
        )
        request = json_request(
            prompts.OVERVIEW_SYSTEM,
            user,
            summary_schema(self.summary_chars),
            self.token_caps["overview"],
            self.temperature,
        )
        (answer,) = self._ask("overview", [request])
        text = text_field(answer, "summary", self.summary_chars)
        if text:
            self.overview = text
            self.counts["overviews"] += 1

    # -- forgetting (faithful) -----------------------------------------------------------------
    def retention_of(self, entry_id: str, now: int | None = None) -> float:
        """``exp(-t / S)`` of a memory when task ``now`` is about to run (default: the memory's
        clock, the next task); t in days of ``tasks_per_day`` tasks since its last recall."""
        now = self.clock if now is None else now
        days = days_between(self.last_recall[entry_id], now, self.tasks_per_day)
        return retention(days, self.strength[entry_id])

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
    def embedding_indexes(self) -> list[tuple[VectorIndex, Any]]:
        return [(self.index, lambda ids: [self.summaries[i] for i in ids])]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        self.verify_embeddings()
        if not queries or not self.tasks or self.top_k == 0:
            return [self._context([]) for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries])
        allowed = (lambda i: self.tasks[i].success) if self.mode == "parity" else None
        out = []
        for vector in vectors:
            hits = [i for i, _ in self.index.search(vector, self.top_k, allowed)]
            out.append(self._context(hits))
            if self.mode == "faithful" and not self.frozen:
                self.recall(hits)
        return out

    def replay_retrieval(self, trajectory: Trajectory, spent: Any) -> None:
        """Faithful, learning: the recall of the memories the episode was shown, again."""
        super().replay_retrieval(trajectory, spent)
        if self.mode == "faithful" and not self.frozen:
            self.recall([i for i in trajectory.memory_ids if i in self.tasks])

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
            **self.common_state(),
            "tasks": [t.to_dict() for t in self.tasks.values()],
            "summaries": dict(self.summaries),
            "strength": dict(self.strength),
            "last_recall": dict(self.last_recall),
            "index": self.index.to_dict(self.services.embedder_if_built),
            "overview": self.overview,
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        self.tasks = {d["id"]: StoredTask.from_dict(d) for d in state["tasks"]}
        self.summaries = dict(state["summaries"])
        self.strength = {k: float(v) for k, v in state["strength"].items()}
        self.last_recall = {k: int(v) for k, v in state["last_recall"].items()}
        self.index = VectorIndex.from_dict(state["index"])
        self.overview = state.get("overview", "")
