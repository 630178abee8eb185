"""``Voyager`` (Wang et al., 2023) as ``method=voyager``: its skill library, in two modes.

``mode: faithful`` -- the paper's skill library (:mod:`.library`): after a *successful* task
the memory LLM names the skill and describes it; the program (the task's accepted actions) is
stored under the name, keyed by the description's embedding; a name already in the library
becomes a new version. Retrieval, once per task: the ``top_k`` (5, Voyager's) skills whose
description is most similar to the task, shown as named action programs. Voyager's automatic
curriculum, iterative prompting and self-verification drive its own agent loop, not the memory,
and are left out (the harness's protocol drives every method's agent the same way); its query
is the task text (Voyager asks an LLM for a context to search with).

``mode: parity`` -- as the G-Memory reference code (``mas_memory/voyager.py``) runs it, which is
what EvoGraph-Mem's and MemCo's tables measured: every finished task is stored with its label,
keyed by a memory-LLM summary (at most 6 sentences); retrieval shows the ``top_k`` (1) solved
tasks most similar to the new task as past examples (task and trajectory).

Memory-LLM calls are batched per observed wave and JSON-schema constrained. An unusable skill
answer is a counted fallback and the skill is named after the task (``task_<id>``) with the
goal as its description; an unusable summary is replaced by the goal (counted).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Literal

from memarena.core import MemoryContext, MemoryQuery
from memarena.core.typecheck import Positive
from memarena.memory.episodic import (
    BaselineSettings,
    ModalBaseline,
    Pair,
    StoredTask,
    VectorIndex,
    json_request,
    stored_tasks,
    text_field,
    whole_observations,
)
from memarena.memory.llm_calls import record_fallback
from memarena.memory.voyager import prompts
from memarena.memory.voyager.library import Skill, SkillLibrary

NAME = re.compile(r"^[a-z][a-z0-9_]{0,47}$")


@dataclass(frozen=True)
class VoyagerSettings(BaselineSettings):
    """Voyager's keys (``conf/method/voyager.yaml`` gives each one's source)."""

    observation_chars: Positive | None = whole_observations()

    mode: Literal["parity", "faithful"] = "parity"
    summary_chars: Positive = 600
    trajectory_chars: Positive = 6000


class Voyager(ModalBaseline):
    """Voyager's skill library (parameters in ``conf/method/voyager.yaml``)."""

    name = "voyager"
    schema_version = 1
    DEFAULT_TOP_K = {"parity": 1, "faithful": 5}
    PURPOSES = ("summary", "skill")
    TEMPERATURE = 0.1  # the reference's summary temperature
    COUNTS = ("writes", "versions", "skipped_failures")

    Settings = VoyagerSettings

    def __init__(self, settings: VoyagerSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: VoyagerSettings = self.settings
        self.summary_chars, self.trajectory_chars = s.summary_chars, s.trajectory_chars
        self.library = SkillLibrary()  # faithful
        self.tasks: dict[str, StoredTask] = {}  # parity
        self.summaries: dict[str, str] = {}
        self.index = VectorIndex()

    # -- writing -------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        new, self.clock = stored_tasks(groups, self.clock)
        if self.mode == "parity":
            self._store_tasks(new)
        else:
            solved = [t for t in new if t.success]
            self.counts["skipped_failures"] += len(new) - len(solved)
            self._add_skills(solved)

    def _store_tasks(self, new: list[StoredTask]) -> None:
        if not new:
            return
        summaries = self.summarize(new)
        vectors = self.services.embedder.encode(summaries)
        for task, summary, vector in zip(new, summaries, vectors, strict=True):
            self.tasks[task.id] = task
            self.summaries[task.id] = summary
            self.index.add(task.id, vector)
        self.counts["writes"] += len(new)

    def _add_skills(self, solved: list[StoredTask]) -> None:
        """One batched call naming and describing each solved task's program."""
        if not solved:
            return
        requests = [
            json_request(
                prompts.SKILL_SYSTEM,
                prompts.SKILL_USER.format(
                    goal=t.goal, program="\n".join(f"- {a}" for a in t.program()) or "(none)"
                ),
                prompts.SKILL_SCHEMA,
                self.token_caps["skill"],
                self.temperature,
            )
            for t in solved
        ]
        answers = self._ask("skill", requests)
        skills = [self._skill(t, a) for t, a in zip(solved, answers, strict=True)]
        vectors = self.services.embedder.encode([s.description for s in skills])
        for skill, vector in zip(skills, vectors, strict=True):
            stored = self.library.add(skill, vector)
            self.counts["writes"] += 1
            self.counts["versions"] += stored.version > 1

    def _skill(self, task: StoredTask, answer: Any) -> Skill:
        name = answer.get("name") if isinstance(answer, dict) else None
        description = text_field(answer, "description", prompts.DESCRIPTION_CHARS)
        if not isinstance(name, str) or not NAME.match(name) or description is None:
            if answer is not None:  # parsed but unusable (an unparsable one is counted already)
                record_fallback(self.services.llm, "voyager_skill_fields", self.fallbacks)
            name = "task_" + re.sub(r"[^a-z0-9_]", "_", task.id.lower())[:40]
            description = task.goal
        return Skill(name, 1, description, task.program(), task.goal, task.id)

    # -- retrieval -----------------------------------------------------------------------------
    def embedding_indexes(self) -> list[tuple[VectorIndex, Any]]:
        skills = self.library.skills
        return [
            (self.index, lambda ids: [self.summaries[i] for i in ids]),
            (self.library.index, lambda ids: [skills[b].description for b in ids]),
        ]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        self.verify_embeddings()
        if not queries or self.size() == 0 or self.top_k == 0:
            return [MemoryContext.empty() for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries])
        return [self._context(v) for v in vectors]

    def _context(self, vector: Any) -> MemoryContext:
        if self.mode == "faithful":
            skills = self.library.search(vector, self.top_k)
            if not skills:
                return MemoryContext.empty()
            body = "\n\n".join(s.render() for s in skills)
            return MemoryContext(
                slots={"skills": f"{prompts.SKILLS_HEADER}\n{body}"},
                memory_ids=[s.name for s in skills],
            )
        hits = [
            i for i, _ in self.index.search(vector, self.top_k, lambda i: self.tasks[i].success)
        ]
        if not hits:
            return MemoryContext.empty()
        body = "\n\n".join(self.tasks[i].render(self.observation_chars) for i in hits)
        return MemoryContext(
            slots={"past_tasks": f"{prompts.PAST_HEADER}\n{body}"}, memory_ids=hits
        )

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        out = {"memory_entries": self.size(), "memory_writes": self.counts["writes"]}
        if self.mode == "faithful":
            out["skill_versions"] = self.counts["versions"]
            out["skills_replaced"] = len(self.library.replaced)
        return out

    def size(self) -> int:
        return len(self.library) if self.mode == "faithful" else len(self.tasks)

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.common_state(),
            "library": self.library.to_dict(self.services.embedder_if_built),
            "tasks": [t.to_dict() for t in self.tasks.values()],
            "summaries": dict(self.summaries),
            "index": self.index.to_dict(self.services.embedder_if_built),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        self.library = SkillLibrary.from_dict(state["library"])
        self.tasks = {d["id"]: StoredTask.from_dict(d) for d in state["tasks"]}
        self.summaries = dict(state["summaries"])
        self.index = VectorIndex.from_dict(state["index"])
