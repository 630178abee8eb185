"""``GenerativeAgents`` (Park et al., 2023) as ``method=generative_agents``, in two modes.

``mode: faithful`` -- the paper's memory stream (:mod:`.stream`):

- each finished task is an observation memory (its task, outcome and trajectory), rated 1-10
  for importance by the memory LLM (one batched call per observed wave); memarena's memories
  are tasks, not the paper's per-minute perceptions, so one is written per episode;
- retrieval, once per task: the ``top_k`` (3, memarena's choice: the paper fills its context
  window) memories by recency + importance + relevance, each min-max normalised, weights
  ``weights`` (1, 1, 1); recency decays ``recency_decay`` (0.995) per task since the last
  access; a retrieval refreshes the access time while the memory learns (never when frozen);
- reflection: when the importance of the observations written since the last reflection sums
  to ``reflection_threshold`` (150) or more, the memory LLM asks ``reflection_questions`` (3)
  questions about the ``reflection_window`` (100) most recently accessed memories; for each
  question the ``reflection_evidence`` (10, memarena's choice) best-scored memories go to the
  LLM, which infers up to ``insights_per_question`` (5) insights citing them; each insight is
  stored as a reflection memory (importance rated like an observation, its evidence kept).

``mode: parity`` -- as the G-Memory reference code (``mas_memory/generative.py``) runs it,
which is what EvoGraph-Mem's and MemCo's tables measured: every finished task is stored with
its label under the raw task text; retrieval takes the ``2 * top_k`` solved tasks most similar
to the new task, the memory LLM rates each candidate's relevance to it from 1 to 10 (one
batched call for all the tasks that start together), and the ``top_k`` (1) best-rated are
shown as past examples (ties: similarity order). An unusable rating counts as 0 (the
reference's value when no number is found) and as a fallback.

Memory-LLM answers are JSON-schema constrained; a malformed one is a counted fallback: an
importance of ``FALLBACK_IMPORTANCE``, no questions or insights from it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Annotated, Any, Literal

from memarena.core import ChatRequest, MemoryContext, MemoryQuery, Trajectory
from memarena.core.typecheck import NonNegative, Positive, Range
from memarena.memory.episodic import (
    BaselineSettings,
    ModalBaseline,
    Pair,
    StoredTask,
    VectorIndex,
    int_field,
    json_request,
    stored_tasks,
    text_field,
    whole_observations,
)
from memarena.memory.generative_agents import prompts
from memarena.memory.generative_agents.stream import (
    OBSERVATION,
    REFLECTION,
    MemoryObject,
    MemoryStream,
)
from memarena.memory.llm_calls import record_fallback

FALLBACK_IMPORTANCE = 5  # the middle of the scale (memarena's choice)


@dataclass(frozen=True)
class GenerativeAgentsSettings(BaselineSettings):
    """Generative Agents' keys (``conf/method/generative_agents.yaml`` gives their sources)."""

    observation_chars: Positive | None = whole_observations()
    mode: Literal["parity", "faithful"] = "parity"
    recency_decay: Annotated[float, Range(gt=0, le=1)] = 0.995
    weights: tuple[float, float, float] = (1.0, 1.0, 1.0)  # recency, importance, relevance
    reflection_threshold: NonNegative = 150.0
    reflection_window: Positive = 100
    reflection_questions: Positive = 3
    reflection_evidence: Positive = 10
    insights_per_question: Positive = 5


class GenerativeAgents(ModalBaseline):
    """Generative Agents' memory (parameters in ``conf/method/generative_agents.yaml``)."""

    name = "generative_agents"
    # faithful: a retrieval while learning refreshes what it showed (replayed on resume)
    capabilities = replace(ModalBaseline.capabilities, retrieval_mutates=True)
    schema_version = 1
    DEFAULT_TOP_K = {"parity": 1, "faithful": 3}
    PURPOSES = ("importance", "questions", "insights", "relevance")
    COUNTS = ("writes", "reflections", "insights")

    Settings = GenerativeAgentsSettings

    def __init__(
        self, settings: GenerativeAgentsSettings | None = None, /, **kwargs: Any
    ) -> None:
        super().__init__(settings, **kwargs)
        s: GenerativeAgentsSettings = self.settings
        self.decay, self.weights = float(s.recency_decay), tuple(float(w) for w in s.weights)
        self.threshold = float(s.reflection_threshold)
        self.window, self.n_questions = s.reflection_window, s.reflection_questions
        self.n_evidence, self.n_insights = s.reflection_evidence, s.insights_per_question
        self.stream = MemoryStream()  # faithful
        self.pending_importance = 0.0  # summed importance since the last reflection
        self.tasks: dict[str, StoredTask] = {}  # parity
        self.index = VectorIndex()

    def _rating(self, answer: Any, key: str) -> int | None:
        """``answer[key]`` as a 1-10 rating; a parsed answer without one is a counted fallback
        (an unparsable one was counted by ``json_batch``)."""
        rated = int_field(answer, key, 1, 10)
        if rated is None and answer is not None:
            record_fallback(self.services.llm, f"generative_agents_{key}", self.fallbacks)
        return rated

    def _request(self, purpose: str, system: str, user: str, schema: dict[str, Any]) -> ChatRequest:
        return json_request(system, user, schema, self.token_caps[purpose], self.temperature)

    # -- writing -------------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        self.verify_embeddings()
        new, self.clock = stored_tasks(groups, self.clock)
        if not new:
            return
        self.counts["writes"] += len(new)
        if self.mode == "parity":  # keyed by the raw task text, no LLM at write time
            vectors = self.services.embedder.encode([t.goal for t in new])
            for task, vector in zip(new, vectors, strict=True):
                self.tasks[task.id] = task
                self.index.add(task.id, vector)
            return
        memories = [
            MemoryObject(
                id=t.id,
                kind=OBSERVATION,
                description=f"Task: {t.goal} ({t.status})",
                created=t.time,
                last_access=t.time,
                importance=FALLBACK_IMPORTANCE,
                detail=t.render(self.observation_chars),
                key=t.goal,
            )
            for t in new
        ]
        self._rate_and_store(memories)
        self.pending_importance += sum(m.importance for m in memories)
        if self.pending_importance >= self.threshold:
            self.reflect_now()

    def _rate_and_store(self, memories: list[MemoryObject]) -> None:
        """Importance of each memory (one batched call), then into the stream."""
        requests = [
            self._request(
                "importance",
                prompts.IMPORTANCE_SYSTEM,
                prompts.IMPORTANCE_USER.format(memory=m.render()),
                prompts.IMPORTANCE_SCHEMA,
            )
            for m in memories
        ]
        for memory, answer in zip(memories, self._ask("importance", requests), strict=True):
            rated = self._rating(answer, "importance")
            memory.importance = FALLBACK_IMPORTANCE if rated is None else rated
        vectors = self.services.embedder.encode([m.embedding_key for m in memories])
        for memory, vector in zip(memories, vectors, strict=True):
            self.stream.add(memory, vector)

    # -- reflection (faithful) -----------------------------------------------------------------
    def reflect_now(self) -> int:
        """One reflection over the latest memories; the number of insights stored."""
        self.pending_importance = 0.0
        self.counts["reflections"] += 1
        latest = self.stream.latest(self.window)
        listing = "\n".join(f"- {m.description}" for m in latest)
        (answer,) = self._ask(
            "questions",
            [
                self._request(
                    "questions",
                    prompts.QUESTIONS_SYSTEM,
                    prompts.QUESTIONS_USER.format(memories=listing),
                    _questions_schema(self.n_questions),
                )
            ],
        )
        raw = answer.get("questions") if isinstance(answer, dict) else None
        questions = [q for q in raw if isinstance(q, str) and q.strip()] if raw else []
        questions = questions[: self.n_questions]
        if not questions:
            return 0
        vectors = self.services.embedder.encode(questions)
        evidence: list[list[str]] = []
        for vector in vectors:
            chosen = self._best(vector, self.n_evidence)
            self.stream.touch(chosen, self.clock)
            evidence.append(chosen)
        requests = [
            self._request(
                "insights",
                prompts.INSIGHTS_SYSTEM,
                prompts.INSIGHTS_USER.format(
                    question=q,
                    memories="\n".join(
                        f"{n}. {self.stream.objects[i].description}" for n, i in enumerate(ids, 1)
                    ),
                ),
                _insights_schema(self.n_insights, len(ids)),
            )
            for q, ids in zip(questions, evidence, strict=True)
        ]
        made: list[MemoryObject] = []
        for ids, answer in zip(evidence, self._ask("insights", requests), strict=True):
            for text, cited in _insights(answer, self.n_insights):
                made.append(
                    MemoryObject(
                        id=f"reflection-{self.counts['reflections']}.{len(made) + 1}",
                        kind=REFLECTION,
                        description=text,
                        created=self.clock,
                        last_access=self.clock,
                        importance=FALLBACK_IMPORTANCE,
                        evidence=list(dict.fromkeys(ids[n - 1] for n in cited if n <= len(ids))),
                    )
                )
        if made:
            self._rate_and_store(made)
        self.counts["insights"] += len(made)
        return len(made)

    # -- retrieval -----------------------------------------------------------------------------
    def _best(self, vector: Any, k: int) -> list[str]:
        """The ``k`` memories of the stream with the best combined score for ``vector``."""
        return self.stream.top(self.stream.scores(vector, self.clock, self.decay, self.weights), k)

    def embedding_indexes(self) -> list[tuple[VectorIndex, Any]]:
        objects = self.stream.objects
        return [
            (self.index, lambda ids: [self.tasks[i].goal for i in ids]),
            (self.stream.index, lambda ids: [objects[i].embedding_key for i in ids]),
        ]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        self.verify_embeddings()
        if not queries or self.size() == 0 or self.top_k == 0:
            return [MemoryContext.empty() for _ in queries]
        vectors = self.encode_queries([q.task.goal for q in queries])
        if self.mode == "parity":
            return self._parity(queries, vectors)
        out = []
        for vector in vectors:
            chosen = self._best(vector, self.top_k)
            if not self.frozen:
                self.stream.touch(chosen, self.clock)
            body = "\n\n".join(self.stream.objects[i].render() for i in chosen)
            slots = {"memories": f"{prompts.MEMORIES_HEADER}\n{body}"}
            out.append(MemoryContext(slots=slots, memory_ids=chosen))
        return out

    def replay_retrieval(self, trajectory: Trajectory, spent: Any) -> None:
        """Faithful, learning: the access time of the memories the episode was shown, again."""
        super().replay_retrieval(trajectory, spent)
        if self.mode == "faithful" and not self.frozen:
            shown = [i for i in trajectory.memory_ids if i in self.stream.objects]
            self.stream.touch(shown, self.clock)

    def _parity(self, queries: list[MemoryQuery], vectors: Any) -> list[MemoryContext]:
        """2k solved candidates per query by similarity, LLM-rated 1-10 in one batched call,
        the top k shown."""
        pools = [
            [i for i, _ in self.index.search(v, 2 * self.top_k, lambda i: self.tasks[i].success)]
            for v in vectors
        ]
        requests = [
            self._request(
                "relevance",
                prompts.RELEVANCE_SYSTEM,
                prompts.RELEVANCE_USER.format(
                    example=self.tasks[i].render(self.observation_chars), goal=q.task.goal
                ),
                prompts.RELEVANCE_SCHEMA,
            )
            for q, pool in zip(queries, pools, strict=True)
            for i in pool
        ]
        answers = iter(self._ask("relevance", requests))
        out = []
        for pool in pools:
            rated = [self._rating(next(answers), "score") or 0 for _ in pool]
            order = sorted(range(len(pool)), key=lambda n: -rated[n])  # stable: similarity order
            ranked = [pool[n] for n in order[: self.top_k]]
            if not ranked:
                out.append(MemoryContext.empty())
                continue
            body = "\n\n".join(self.tasks[i].render(self.observation_chars) for i in ranked)
            slots = {"past_tasks": f"{prompts.PAST_HEADER}\n{body}"}
            out.append(MemoryContext(slots=slots, memory_ids=ranked))
        return out

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        out = {"memory_entries": self.size(), "memory_writes": self.counts["writes"]}
        if self.mode == "faithful":
            out["memory_reflections"] = self.counts["reflections"]
            out["memory_insights"] = self.counts["insights"]
        return out

    def size(self) -> int:
        return len(self.stream) if self.mode == "faithful" else len(self.tasks)

    def state_dict(self) -> dict[str, Any]:
        return {
            **self.common_state(),
            "stream": self.stream.to_dict(self.services.embedder_if_built),
            "pending_importance": self.pending_importance,
            "tasks": [t.to_dict() for t in self.tasks.values()],
            "index": self.index.to_dict(self.services.embedder_if_built),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.load_common_state(state)
        self.stream = MemoryStream.from_dict(state["stream"])
        self.pending_importance = float(state["pending_importance"])
        self.tasks = {d["id"]: StoredTask.from_dict(d) for d in state["tasks"]}
        self.index = VectorIndex.from_dict(state["index"])


def _questions_schema(n: int) -> dict[str, Any]:
    schema = prompts.QUESTIONS_SCHEMA
    items = {**schema["properties"]["questions"], "minItems": n, "maxItems": n}
    return {**schema, "properties": {"questions": items}}


def _insights_schema(n: int, n_memories: int) -> dict[str, Any]:
    """At most ``n`` insights, each citing memories 1..``n_memories`` (each at most once)."""
    schema = prompts.INSIGHTS_SCHEMA
    insights = schema["properties"]["insights"]
    item = insights["items"]
    cited = max(1, n_memories)
    evidence = {
        **item["properties"]["evidence"],
        "items": {"type": "integer", "minimum": 1, "maximum": cited},
        "maxItems": cited,
    }
    item = {**item, "properties": {**item["properties"], "evidence": evidence}}
    return {**schema, "properties": {"insights": {**insights, "items": item, "maxItems": n}}}


def _insights(answer: Any, limit: int) -> list[tuple[str, list[int]]]:
    """(insight, cited memory numbers >= 1) of an insights answer, at most ``limit``."""
    items = answer.get("insights") if isinstance(answer, dict) else None
    out: list[tuple[str, list[int]]] = []
    for item in (items if isinstance(items, list) else [])[:limit]:
        text = text_field(item, "insight", 300)
        if text is None:
            continue
        cited = item.get("evidence")
        numbers = [n for n in (cited if isinstance(cited, list) else []) if _positive_int(n)]
        out.append((text, numbers))
    return out


def _positive_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= 1
