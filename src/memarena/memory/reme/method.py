"""``ReMe``: Remember Me, Refine Me (reme.txt) as ``method=reme``.

Acquisition (Section 3.2, Appendix C.1): the pipeline samples ``samples`` (N=8) trajectories per
train task at ``sample_temperature`` (0.9) without memory; per task the best and the worst are
kept; the summarizer (the memory-side LLM, LLM_summ) runs success-pattern recognition on a
successful one, failure analysis on a failed one and comparative insight when their scores
differ; an LLM judge validates each candidate (valid and score >= ``judge_min_score``); a
candidate whose content embedding is within ``dedup_threshold`` cosine of a stored (or an
earlier new) experience is dropped; the rest are indexed by the embedding of their usage
scenario. ``granularity: trajectory`` (Table 2) replaces the three analyses by one whole-
procedure summary per kept trajectory.

Reuse (Section 3.3, Appendix C.2): once per task, the top-``top_k`` experiences by cosine
between the task query and ``retrieval_key`` (Table 5); optional LLM rerank of the top
``rerank_pool`` and rewrite into one guidance (off by default, as in the paper's runs).

Refinement (Section 3.4), only while the memory learns during evaluation (ReMe (dynamic),
``protocol.freeze_during_eval=false``): each recall counts f, each recall in a successful task
counts u; an experience with f >= ``delete_min_retrievals`` (alpha=5) and u/f <=
``delete_max_utility`` (beta=0.5) is deleted (``deletion``); ``addition: selective`` distils
successful tasks only, ``full`` every task; ``reflection`` retries a failed task up to
``max_reflections`` (3) times with the summarizer's lessons, which join the pool only when a
retry succeeds. Retries are never counted in the metrics.

Scale: the task queries of a wave of episodes are embedded in one call (``retrieve_batch``;
an LRU keeps goals already seen) and scored against the pool in one matrix product; the
snapshot stores the pool's retrieval-key and content embeddings, so a load embeds nothing
(:mod:`memarena.memory.reme.experience`).

Every LLM answer is JSON-schema constrained; a malformed one adds nothing and is counted in
``memory_fallbacks`` (and on the backbone's usage). Nothing here depends on the benchmark.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

import numpy as np

from memarena.core import (
    ChatRequest,
    ConfigError,
    MemoryContext,
    MemoryMethod,
    MemoryQuery,
    Outcome,
    Task,
    Trajectory,
)
from memarena.core.json_budget import token_caps
from memarena.memory.llm_calls import json_batch
from memarena.memory.reme import prompts
from memarena.memory.reme import summarizer as summ
from memarena.memory.reme.experience import RETRIEVAL_KEYS, Experience, ExperiencePool
from memarena.memory.vectors import QueryEncoder

log = logging.getLogger(__name__)

PURPOSES = ("summarize", "judge", "generalize", "rerank", "rewrite", "reflect")
Pair = tuple[Trajectory, Outcome]


def _choice(option: str, value: str, valid: Sequence[str]) -> str:
    if value not in valid:
        raise ConfigError(f"memarena: method.{option}={value!r}; valid values: {list(valid)}.")
    return value


class ReMe(MemoryMethod):
    """ReMe as ``method=reme`` (parameters in ``conf/method/reme.yaml``)."""

    name = "reme"
    schema_version = 1
    granularity = "task"
    acquisition_policy = "agent"

    def __init__(
        self,
        samples: int = 8,
        sample_temperature: float = 0.9,
        extraction: str = "keypoint",
        max_experiences: int = 3,
        judge: bool = True,
        judge_min_score: float = 0.5,
        dedup_threshold: float = 0.9,
        generalize_queries: bool = True,
        top_k: int = 5,
        retrieval_key: str = "usage_scenario",
        retrieve_during_acquisition: bool = False,
        summary_batch: int = 16,
        rerank: bool = False,
        rerank_pool: int = 10,
        rewrite: bool = False,
        addition: str = "selective",
        reflection: bool = True,
        max_reflections: int = 3,
        deletion: bool = True,
        delete_min_retrievals: int = 5,
        delete_max_utility: float = 0.5,
        temperature: float = 0.0,
        max_tokens: Any = None,
        trajectory_chars: int = 6000,
        observation_chars: int = 300,
        env_name: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if samples < 1 or top_k < 0 or max_experiences < 1 or max_reflections < 0:
            raise ConfigError(
                "memarena: method=reme needs samples >= 1, top_k >= 0, max_experiences >= 1 "
                f"and max_reflections >= 0; got samples={samples}, top_k={top_k}, "
                f"max_experiences={max_experiences}, max_reflections={max_reflections}."
            )
        if not -1.0 <= dedup_threshold <= 1.0 or not 0.0 <= judge_min_score <= 1.0:
            raise ConfigError(
                f"memarena: method.dedup_threshold={dedup_threshold} must be a cosine in "
                f"[-1, 1] and method.judge_min_score={judge_min_score} in [0, 1]."
            )
        self.extraction = _choice("extraction", extraction, ("keypoint", "trajectory"))
        self.retrieval_key = _choice("retrieval_key", retrieval_key, RETRIEVAL_KEYS)
        self.addition = _choice("addition", addition, ("selective", "full"))
        self.acquisition_samples = int(samples)
        self.acquisition_temperature = float(sample_temperature)
        self.max_experiences = int(max_experiences)
        self.judge, self.judge_min_score = bool(judge), float(judge_min_score)
        self.dedup_threshold = float(dedup_threshold)
        self.generalize_queries = bool(generalize_queries) or retrieval_key == "generalized_query"
        self.top_k, self.rerank_pool = int(top_k), max(int(rerank_pool), int(top_k))
        self.retrieves_during_acquisition = bool(retrieve_during_acquisition)
        # without retrieval the pool is not read while acquiring: distil many tasks per batch
        self.acquisition_observe_tasks = int(summary_batch)
        self.rerank, self.rewrite = bool(rerank), bool(rewrite)
        self.reflection = bool(reflection)
        self.max_reflections = int(max_reflections) if self.reflection else 0
        self.deletion = bool(deletion)
        self.alpha, self.beta = int(delete_min_retrievals), float(delete_max_utility)
        self.temperature = float(temperature)
        # caps per purpose; None: the bound of the answer's schema (core.json_budget)
        self.token_caps = token_caps(max_tokens, PURPOSES, "method")
        self.trajectory_chars = int(trajectory_chars)
        self.observation_chars = int(observation_chars)
        self.env_name = env_name
        self.pool = ExperiencePool(
            lambda texts: self.services.embedder.encode(texts), lambda: self.services.embedder
        )
        # task queries: one encode call per wave of episodes, repeated goals from an LRU
        self.query_encoder = QueryEncoder(lambda texts: self.services.embedder.encode(texts))
        self.token_usage: dict[str, dict[str, int]] = {p: _zero() for p in PURPOSES}
        self.fallbacks: dict[str, int] = {}
        self.counts = {
            "candidates": 0,
            "judge_rejected": 0,
            "duplicates": 0,
            "added": 0,
            "deleted": 0,
            "reflection_attempts": 0,
            "reflection_successes": 0,
        }
        self.shown: dict[str, MemoryContext] = {}  # task id -> context given at retrieval
        self.lessons: dict[str, list[Experience]] = {}  # task id -> lessons of its retry

    # -- LLM plumbing --------------------------------------------------------------------------
    def _ask(self, purpose: str, requests: list[ChatRequest]) -> list[Any]:
        return json_batch(
            self.services.llm,
            requests,
            usage=self.token_usage[purpose],
            fallbacks=self.fallbacks,
            kind=f"reme_{purpose}",
        )

    def _request(self, purpose: str, user: str, schema: dict[str, Any]) -> ChatRequest:
        return summ.request(user, schema, self.token_caps[purpose], self.temperature)

    def _render(self, pair: Pair) -> str:
        return summ.render(*pair, self.trajectory_chars, self.observation_chars)

    def _fields(self) -> dict[str, Any]:
        return {"limit": self.max_experiences, "fields": prompts.FIELDS}

    # -- acquisition ---------------------------------------------------------------------------
    def observe_groups(self, groups: list[list[Pair]]) -> None:
        self.refuse_if_frozen()
        if self.phase == "acquire":
            self._acquire(groups)
        else:
            self._refine([pair for group in groups for pair in group])

    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        self.observe_groups([[(trajectory, outcome)]])

    def _acquire(self, groups: list[list[Pair]]) -> None:
        """Best and worst sample per task -> analyses -> judge -> dedup -> pool."""
        jobs: list[tuple[str, Trajectory, ChatRequest]] = []
        for group in groups:
            if not group:
                continue
            ranked = sorted(group, key=lambda p: summ.score(p[1]), reverse=True)
            best, worst = ranked[0], ranked[-1]
            jobs.extend(self._analyses(best, worst if len(ranked) > 1 else None))
        self._distil(jobs)
        if self.generalize_queries:
            self._generalize([g[0][0] for g in groups if g])

    def _analyses(self, best: Pair, worst: Pair | None) -> list[tuple[str, Trajectory, Any]]:
        """(kind, source trajectory, request) of the analyses Appendix C.1 runs on a task."""
        fields = self._fields()
        schema = prompts.experiences_schema(self.max_experiences)
        chosen = [best] if worst is None else [best, worst]
        if self.extraction == "trajectory":
            one = prompts.experiences_schema(1)
            return [
                (
                    "trajectory",
                    t,
                    self._request(
                        "summarize",
                        prompts.TRAJECTORY.format(
                            status="successful" if o.success else "failed",
                            trajectory=self._render((t, o)),
                            **fields,
                        ),
                        one,
                    ),
                )
                for t, o in chosen
            ]
        jobs = []
        successes = [p for p in chosen if p[1].success]
        failures = [p for p in chosen if not p[1].success]
        if successes:
            text = prompts.SUCCESS.format(trajectory=self._render(successes[0]), **fields)
            jobs.append(("success", successes[0][0], self._request("summarize", text, schema)))
        if failures:
            text = prompts.FAILURE.format(trajectory=self._render(failures[-1]), **fields)
            jobs.append(("failure", failures[-1][0], self._request("summarize", text, schema)))
        if worst is not None and summ.score(best[1]) > summ.score(worst[1]):
            text = prompts.COMPARATIVE.format(
                high=summ.score(best[1]),
                low=summ.score(worst[1]),
                better=self._render(best),
                worse=self._render(worst),
                **fields,
            )
            jobs.append(("comparative", best[0], self._request("summarize", text, schema)))
        return jobs

    def _distil(self, jobs: list[tuple[str, Trajectory, ChatRequest]]) -> list[Experience]:
        """Run the summarizer requests, validate and deduplicate, add; returns the added."""
        answers = self._ask("summarize", [request for _, _, request in jobs])
        candidates: list[Experience] = []
        for (kind, trajectory, _), raw in zip(jobs, answers, strict=True):
            limit = 1 if kind == "trajectory" else self.max_experiences
            parsed = summ.parse_experiences(
                raw,
                limit,
                kind=kind,
                task_query=trajectory.task.goal,
                source_task=trajectory.task.id,
            )
            if parsed is None and raw is not None:
                self._count_fallback("reme_summarize_shape")
            candidates.extend(parsed or [])
        return self._admit(candidates)

    def _admit(self, candidates: list[Experience]) -> list[Experience]:
        """LLM-judge validation, then similarity dedup against the pool, then addition."""
        self.counts["candidates"] += len(candidates)
        if self.judge and candidates:
            verdicts = self._ask(
                "judge",
                [
                    self._request(
                        "judge",
                        prompts.JUDGE.format(
                            task=e.task_query, when_to_use=e.when_to_use, content=e.content
                        ),
                        prompts.JUDGE_SCHEMA,
                    )
                    for e in candidates
                ],
            )
            kept = []
            for experience, raw in zip(candidates, verdicts, strict=True):
                verdict = summ.judge_verdict(raw, self.judge_min_score)
                if verdict is None and raw is not None:
                    self._count_fallback("reme_judge_shape")
                if verdict:
                    kept.append(experience)
            self.counts["judge_rejected"] += len(candidates) - len(kept)
            candidates = kept
        if not candidates:
            return []
        vectors = self.pool.embed([e.key_text("content") for e in candidates])
        self.pool.matrix("content")  # built before the additions, then kept in step
        added, rows = [], []
        for experience, vector in zip(candidates, vectors, strict=True):
            # against the pool and the candidates admitted before this one
            best = max([self.pool.max_similarity(vector), *(float(r @ vector) for r in rows)])
            if best >= self.dedup_threshold:
                self.counts["duplicates"] += 1
                continue
            experience.id = self.pool.new_id()
            added.append(experience)
            rows.append(vector)
        if added:  # the other built matrices embed the new texts in one call
            self.pool.add_many(added, np.stack(rows))
        self.counts["added"] += len(added)
        return added

    def _generalize(self, trajectories: list[Trajectory]) -> None:
        """One generalised query per source task, set on its experiences (Table 5's key)."""
        tasks = {t.task.id: t.task.goal for t in trajectories}
        missing = {e.source_task for e in self.pool.items.values() if not e.generalized_query}
        wanted = {tid: goal for tid, goal in tasks.items() if tid in missing}
        if not wanted:
            return
        answers = self._ask(
            "generalize",
            [
                self._request(
                    "generalize", prompts.GENERALIZE.format(task=goal), prompts.GENERALIZE_SCHEMA
                )
                for goal in wanted.values()
            ],
        )
        for tid, raw in zip(wanted, answers, strict=True):
            text = str(raw.get("generalized_query") or "").strip() if isinstance(raw, dict) else ""
            for e in self.pool.items.values():
                if e.source_task == tid and not e.generalized_query:
                    e.generalized_query = text or e.task_query

    # -- reuse ---------------------------------------------------------------------------------
    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.retrieve_batch([query])[0]

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        """The contexts of a wave of episodes: their task queries embedded in one call, the
        cosine scores of all of them against the pool in one matrix product."""
        if self.phase == "acquire" and not self.retrieves_during_acquisition:
            return [MemoryContext.empty() for _ in queries]
        if self.top_k == 0 or not len(self.pool) or not queries:
            for query in queries:
                self.shown[query.task.id] = MemoryContext.empty()
            return [MemoryContext.empty() for _ in queries]
        vectors = self.query_encoder([q.task.goal for q in queries])
        pool_k = self.rerank_pool if self.rerank else self.top_k
        hits = self.pool.search_many(vectors, self.retrieval_key, pool_k)
        return [
            self._context(query.task, [e for e, _ in found])
            for query, found in zip(queries, hits, strict=True)
        ]

    def _context(self, task: Task, found: list[Experience]) -> MemoryContext:
        if self.rerank and len(found) > 1:
            found = self._rerank(task.goal, found)
        chosen = found[: self.top_k]
        body = summ.numbered(chosen)
        slots = {"experience": f"{prompts.HEADER}\n{body}"}
        if self.rewrite:
            guidance = self._rewrite(task.goal, body)
            if guidance:
                slots = {"experience": f"{prompts.GUIDANCE_HEADER}\n{guidance}"}
        context = MemoryContext(slots=slots, memory_ids=[e.id for e in chosen])
        self.shown[task.id] = context
        return context

    def _rerank(self, goal: str, found: list[Experience]) -> list[Experience]:
        text = prompts.RERANK.format(task=goal, candidates=summ.numbered(found))
        schema = prompts.rerank_schema(len(found))
        (raw,) = self._ask("rerank", [self._request("rerank", text, schema)])
        order = summ.rerank_order(raw, len(found))
        if order is None:
            if raw is not None:
                self._count_fallback("reme_rerank_shape")
            return found
        return [found[i] for i in order]

    def _rewrite(self, goal: str, body: str) -> str:
        text = prompts.REWRITE.format(task=goal, experiences=body)
        (raw,) = self._ask("rewrite", [self._request("rewrite", text, prompts.REWRITE_SCHEMA)])
        guidance = str(raw.get("guidance") or "").strip() if isinstance(raw, dict) else ""
        if not guidance and raw is not None:
            self._count_fallback("reme_rewrite_shape")
        return guidance

    # -- refinement ----------------------------------------------------------------------------
    def _refine(self, pairs: list[Pair]) -> None:
        """Utility bookkeeping and deletion, then selective or full addition (one batch)."""
        touched: set[str] = set()
        for trajectory, outcome in pairs:
            for exp_id in dict.fromkeys(trajectory.memory_ids):
                experience = self.pool.items.get(exp_id)
                if experience is not None:
                    experience.retrievals += 1
                    experience.utility += int(outcome.success)
                    touched.add(exp_id)
        if self.deletion:
            self.delete_low_utility(touched)
        wanted = [p for p in pairs if p[1].success or self.addition == "full"]
        self._distil([job for pair in wanted for job in self._analyses(pair, None)])
        if self.generalize_queries:
            self._generalize([t for t, _ in wanted])

    def should_delete(self, experience: Experience) -> bool:
        """Eq. 1: f >= alpha and u / f <= beta."""
        f = experience.retrievals
        return f >= self.alpha and f > 0 and experience.utility / f <= self.beta

    def delete_low_utility(self, ids: Sequence[str] | set[str] | None = None) -> list[str]:
        scope = list(self.pool.items) if ids is None else [i for i in ids if i in self.pool]
        doomed = [i for i in scope if self.should_delete(self.pool.items[i])]
        self.pool.remove(doomed)
        self.counts["deleted"] += len(doomed)
        return doomed

    def reflect(self, failures: list[Pair], attempt: int) -> list[MemoryContext | None]:
        """Failure-aware reflection: lessons from each failed attempt guide one more try."""
        if not self.reflection or attempt > self.max_reflections or not failures:
            return [None] * len(failures)
        fields = self._fields()
        schema = prompts.experiences_schema(self.max_experiences)
        requests = []
        for pair in failures:
            previous = " again, after the lessons of an earlier attempt" if attempt > 1 else ""
            text = prompts.REFLECT.format(
                previous=previous, trajectory=self._render(pair), **fields
            )
            requests.append(self._request("reflect", text, schema))
        answers = self._ask("reflect", requests)
        contexts: list[MemoryContext | None] = []
        for (trajectory, _), raw in zip(failures, answers, strict=True):
            task = trajectory.task
            lessons = summ.parse_experiences(
                raw,
                self.max_experiences,
                kind="reflection",
                task_query=task.goal,
                source_task=task.id,
            )
            if not lessons:
                if raw is not None:
                    self._count_fallback("reme_reflect_shape")
                self.lessons.pop(task.id, None)
                contexts.append(None)
                continue
            self.lessons[task.id] = lessons
            base = self.shown.get(task.id, MemoryContext.empty())
            slots = dict(base.slots)
            slots["lessons"] = f"{prompts.LESSONS_HEADER}\n{summ.numbered(lessons)}"
            contexts.append(MemoryContext(slots=slots, memory_ids=list(base.memory_ids)))
        return contexts

    def observe_retry(
        self, trajectory: Trajectory, outcome: Outcome, attempt: int, context: MemoryContext
    ) -> None:
        """A successful retry adds its lessons (judged, deduplicated); a failed one drops them."""
        self.counts["reflection_attempts"] += 1  # counted here, so a replay on resume counts too
        lessons = self.lessons.pop(trajectory.task.id, None)
        if lessons is None:  # a replay on resume: rebuild the lessons from the stored context
            lessons = _lessons_from(context, trajectory)
        if outcome.success and lessons:
            self.counts["reflection_successes"] += 1
            self._admit(lessons)
            if self.generalize_queries:
                self._generalize([trajectory])

    # -- reporting and snapshots ---------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_experiences": len(self.pool),
            "memory_by_kind": _kinds(self.pool.items.values()),
            "memory_added": self.counts["added"],
            "memory_deleted": self.counts["deleted"],
            "memory_candidates": self.counts["candidates"],
            "memory_judge_rejected": self.counts["judge_rejected"],
            "memory_duplicates": self.counts["duplicates"],
            "reflection_attempts": self.counts["reflection_attempts"],
            "reflection_successes": self.counts["reflection_successes"],
        }

    def size(self) -> int:
        return len(self.pool)

    def _count_fallback(self, kind: str) -> None:
        self.fallbacks[kind] = self.fallbacks.get(kind, 0) + 1

    def state_dict(self) -> dict[str, Any]:
        """JSON values; the pool's retrieval-key and content embeddings are stored with it
        (base64 float32), so a load does not embed the experiences again."""
        if len(self.pool) and self.top_k > 0:
            self.pool.matrix(self.retrieval_key)  # built here once rather than on every load
        return {
            "pool": self.pool.to_dict(),
            "token_usage": {p: dict(u) for p, u in self.token_usage.items()},
            "fallbacks": dict(self.fallbacks),
            "counts": dict(self.counts),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.pool.load_dict(state["pool"])
        usage = state.get("token_usage", {})
        self.token_usage = {p: {**_zero(), **usage.get(p, {})} for p in PURPOSES}
        self.fallbacks = dict(state.get("fallbacks", {}))
        self.counts.update(state.get("counts", {}))


def _zero() -> dict[str, int]:
    return {"calls": 0, "requests": 0, "prompt_tokens": 0, "completion_tokens": 0}


def _kinds(experiences: Any) -> dict[str, int]:
    out: dict[str, int] = {}
    for e in experiences:
        out[e.kind] = out.get(e.kind, 0) + 1
    return dict(sorted(out.items()))


def _lessons_from(context: MemoryContext, trajectory: Trajectory) -> list[Experience]:
    """Lessons rendered in a retry context (``When <scenario>: <content>`` lines)."""
    text = context.slots.get("lessons", "")
    out = []
    for line in text.splitlines()[1:]:
        body = line.split(". ", 1)[1] if ". " in line else line
        if body.startswith("When ") and ": " in body:
            when, content = body[5:].split(": ", 1)
            out.append(
                Experience(
                    id="",
                    when_to_use=when,
                    content=content,
                    kind="reflection",
                    source_task=trajectory.task.id,
                    task_query=trajectory.task.goal,
                )
            )
    return out
