"""``ReMe``: Remember Me, Refine Me (reme.txt) as ``method=reme``.

The paper's experiments follow ReMe's released code (agentscope-ai/ReMe: benchmark/bfcl,
benchmark/appworld, reme_ai/summary/task, reme_ai/vector_store); where the paper reads
otherwise, the other reading is one key away (``conf/method/reme.yaml`` names both).

Acquisition (Section 3.2, Appendix C.1): the pipeline samples ``samples`` (N=8) trajectories per
train task at ``sample_temperature`` (0.9) without memory; per task the samples are sorted by
reward ascending (``reward``: BFCL's 0/1, AppWorld's share of passed tests) and the first and the
last are kept (a task with one or two samples keeps them all); the summarizer (the memory-side
LLM, LLM_summ) runs success-pattern recognition on every kept success, failure analysis on every
kept failure and the comparative analysis when the kept rewards differ; an LLM judge validates
each candidate on its usage scenario and content (valid and score >= ``judge_min_score``); a
candidate whose scenario-plus-content embedding is more than ``dedup_threshold`` cosine-close to
a stored experience's usage scenario (or to an earlier candidate of the batch) is dropped; the
rest are indexed by the embedding of their usage scenario. ``granularity: trajectory`` (Table
2) replaces the three analyses by one whole-procedure summary per kept trajectory.

Reuse (Section 3.3, Appendix C.2): once per task, the top-``top_k`` experiences by cosine
between the task query and ``retrieval_key`` (Table 5), shown as ``Experience i:`` /
``When to use:`` / ``Content:`` blocks; optional LLM rerank of the top ``rerank_pool`` and
rewrite into one guidance (off by default, as in the paper's runs).

Refinement (Section 3.4), only while the memory learns during evaluation (ReMe (dynamic),
``protocol.freeze_during_eval=false``): every trial (retries included) counts f for each
experience it was shown and u when it succeeded; every ``delete_every`` trials one deletion
pass over the whole pool removes the experiences with f >= ``delete_min_retrievals`` (alpha=5)
and u/f < ``delete_max_utility`` (beta=0.5; ``delete_strict: false`` is Eq. 1's <=);
``addition: selective`` distils successful trials only, ``full`` every task; ``reflection``
retries a failed task up to ``max_reflections`` (3) times: the retry is shown the failed
trial's failure analysis (judged and deduplicated, not added) or, when none survives, a fresh
retrieval; a successful retry adds the summary of the retry (``retry_success_adds``). Whether
retries count in the metrics is the protocol's ``count_retries``.

Scale: the task queries of a wave of episodes are embedded in one call (``retrieve_batch``;
an LRU keeps goals already seen) and scored against the pool in one matrix product; the
snapshot stores the pool's retrieval-key and content embeddings, so a load embeds nothing
(:mod:`memarena.memory.reme.experience`).

Every LLM answer is JSON-schema constrained; a malformed one adds nothing (a judge reply: see
``judge_unparsed``) and is counted in ``memory_fallbacks`` (and on the backbone's usage). The
benchmark enters only through the ``official`` readings of its settings (the reward and the
deletion period ReMe's agent for it uses), settled by the env's family when it is built.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memarena.core import (
    ChatRequest,
    MemoryContext,
    MemoryMethod,
    MemoryQuery,
    Observation,
    Outcome,
    Task,
    Trajectory,
)
from memarena.core.json_budget import token_caps
from memarena.memory.llm_calls import json_batch
from memarena.memory.reme import prompts
from memarena.memory.reme import summarizer as summ
from memarena.memory.reme.experience import (
    Experience,
    ExperiencePool,
    query_keywords,
)
from memarena.memory.reme.released import read_pool
from memarena.memory.reme.settings import ReMeSettings
from memarena.memory.vectors import QueryEncoder

log = logging.getLogger(__name__)

PURPOSES = ("summarize", "judge", "generalize", "rerank", "rewrite", "reflect")
Pair = tuple[Trajectory, Outcome]


class ReMe(MemoryMethod):
    """ReMe as ``method=reme`` (its settings: :class:`~memarena.memory.reme.settings.ReMeSettings`;
    ``conf/method/reme.yaml`` gives each one's source)."""

    name = "reme"
    schema_version = 1
    Settings = ReMeSettings

    def __init__(self, settings: ReMeSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: ReMeSettings = self.settings  # checked, official readings resolved for the env
        self.extraction, self.retrieval_key = s.extraction, s.retrieval_key
        self.addition = s.addition
        self.acquisition_samples = s.samples
        self.acquisition_temperature = float(s.sample_temperature)
        self.max_experiences = s.max_experiences
        self.judge, self.judge_min_score = s.judge, float(s.judge_min_score)
        self.judge_sees_task = s.judge_sees_task
        self.judge_lenient = s.judge_unparsed == "keep"
        self.dedup_threshold = float(s.dedup_threshold)
        self.dedup, self.dedup_against, self.dedup_scope = s.dedup, s.dedup_against, s.dedup_scope
        self.reward = s.reward
        self.generalize_queries = s.generalize_queries or s.retrieval_key == "generalized_query"
        self.top_k, self.rerank_pool = s.top_k, max(s.rerank_pool, s.top_k)
        self.retrieves_during_acquisition = s.retrieve_during_acquisition
        # without retrieval the pool is not read while acquiring: distil many tasks per batch
        self.acquisition_observe_tasks = s.summary_batch
        self.rerank, self.rewrite = s.rerank, s.rewrite
        self.reflection = s.reflection
        self.max_reflections = s.max_reflections if self.reflection else 0
        self.retry_lessons, self.retry_context = s.retry_lessons, s.retry_context
        self.retry_without_lessons = s.retry_without_lessons
        self.retry_success_adds = s.retry_success_adds
        self.summarize_last_trial = s.summarize_last_trial
        self.deletion = s.deletion
        self.alpha, self.beta = s.delete_min_retrievals, float(s.delete_max_utility)
        self.delete_strict = s.delete_strict
        self.delete_every = s.delete_every
        self.temperature = float(s.temperature)
        # caps per purpose; None: the bound of the answer's schema (core.json_budget)
        self.token_caps = token_caps(s.max_tokens, PURPOSES, "method")
        self.summary_input, self.summary_context = s.summary_input, s.summary_context_tokens
        self.trajectory_chars = s.trajectory_chars
        self.observation_chars = s.observation_chars
        self.scenario_chars, self.experience_chars = s.scenario_chars, s.experience_chars
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
            "trials": 0,  # evaluation trials observed (retries included): the deletion clock
            "last_trial_summaries": 0,  # last failed trials analysed under selective addition
            "inputs_cut": 0,  # summarizer inputs cut to fit its context (summary_input: messages)
        }
        self.shown: dict[str, MemoryContext] = {}  # task id -> context given at retrieval
        self.lessons: dict[str, list[Experience]] = {}  # task id -> lessons of its retry
        # task id -> what its failed trial's summary added under full addition: the lessons of
        # its next trial (reme_ai's summary_task_memory returns what it inserted)
        self.added_lessons: dict[str, list[Experience]] = {}

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
        cap, context = self.token_caps[purpose], self._summary_context_tokens()
        return summ.request(user, schema, cap, self.temperature, context)

    def _schema(self, limit: int) -> dict[str, Any]:
        """The summarizer's answer schema, the usage scenario and content capped as set."""
        return prompts.experiences_schema(limit, self.scenario_chars, self.experience_chars)

    def _summary_context_tokens(self) -> int:
        """``summary_context_tokens``, or the memory backbone's own ``context_limit`` (hf: the
        model's ``max_position_embeddings``; vllm: ``max_model_len``), else 32768; a set value
        larger than the backbone's limit is lowered to it."""
        limit = getattr(self.services.llm, "context_limit", None)
        limit = int(limit) if isinstance(limit, int) and limit > 0 else None
        if self.summary_context is None:
            return limit or summ.DEFAULT_CONTEXT_TOKENS
        return min(int(self.summary_context), limit) if limit else int(self.summary_context)

    def _render(self, pair: Pair, share: int = 1) -> str:
        """A trajectory as the summarizer is shown it (``summary_input``, module
        :mod:`.summarizer`); ``share``: the trajectories the prompt holds (the comparative
        analysis shows two, each in half the room). ``messages`` adds the task's tools at
        acquisition only (ReMe's pool initialisation; its online summaries add none) and counts
        each input cut to fit the context (``memory_summary_inputs_cut``, fallback
        ``reme_summary_input_cut``)."""
        if self.summary_input == "steps":
            return summ.render(*pair, self.trajectory_chars, self.observation_chars)
        trajectory = pair[0]
        tools = summ.task_tools(trajectory.task) if self.phase == "acquire" else None
        context = self._summary_context_tokens()
        cap = self.token_caps["summarize"]
        reserve = summ.reply_reserve(self._schema(self.max_experiences), cap)
        room = summ.room_chars(context, reserve, share)
        text, cut = summ.fit_messages(summ.conversation(trajectory, tools), room)
        if cut:
            self.counts["inputs_cut"] += 1
            self._count_fallback("reme_summary_input_cut")
        return text

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
        """Lowest- and highest-reward sample per task -> analyses -> judge -> dedup -> pool."""
        jobs: list[tuple[str, Trajectory, ChatRequest]] = []
        for group in groups:
            if group:
                jobs.extend(self._analyses(self._kept(group)))
        self._distil(jobs)
        if self.generalize_queries:
            self._generalize([g[0][0] for g in groups if g])

    def _score(self, pair: Pair) -> float:
        return summ.score(pair[1], self.reward)

    def _kept(self, group: list[Pair]) -> list[Pair]:
        """ReMe's choice (init_task_memory_pool.py): one or two samples are kept as they are;
        more are sorted by reward ascending (a stable sort) and the first and the last kept."""
        if len(group) <= 2:
            return list(group)
        ranked = sorted(group, key=self._score)
        return [ranked[0], ranked[-1]]

    def _analyses(
        self, kept: list[Pair], purpose: str = "summarize"
    ) -> list[tuple[str, Trajectory, Any]]:
        """(kind, source trajectory, request) of the analyses Appendix C.1 runs on a task's
        kept samples, in the order ReMe's summary flow validates them: success-pattern
        recognition on every success, failure analysis on every failure, then the
        comparative analysis of the highest- against the lowest-reward sample when their
        rewards differ (with BFCL's 0/1 reward: never between two failures)."""
        fields = self._fields()
        schema = self._schema(self.max_experiences)
        if self.extraction == "trajectory":
            one = self._schema(1)
            return [
                (
                    "trajectory",
                    t,
                    self._request(
                        purpose,
                        prompts.TRAJECTORY.format(
                            status="successful" if o.success else "failed",
                            trajectory=self._render((t, o)),
                            **fields,
                        ),
                        one,
                    ),
                )
                for t, o in kept
            ]
        jobs = []
        for pair in [p for p in kept if p[1].success]:
            text = prompts.SUCCESS.format(trajectory=self._render(pair), **fields)
            jobs.append(("success", pair[0], self._request(purpose, text, schema)))
        for pair in [p for p in kept if not p[1].success]:
            text = prompts.FAILURE.format(trajectory=self._render(pair), **fields)
            jobs.append(("failure", pair[0], self._request(purpose, text, schema)))
        if len(kept) >= 2:
            ranked = sorted(kept, key=self._score, reverse=True)
            best, worst = ranked[0], ranked[-1]
            if self._score(best) > self._score(worst):
                text = prompts.COMPARATIVE.format(
                    high=self._score(best),
                    low=self._score(worst),
                    better=self._render(best, 2),
                    worse=self._render(worst, 2),
                    **fields,
                )
                jobs.append(("comparative", best[0], self._request(purpose, text, schema)))
        return jobs

    def _distil(self, jobs: list[tuple[str, Trajectory, ChatRequest]]) -> list[Experience]:
        """Run the summarizer requests, validate and deduplicate, add; returns the added."""
        return self._admit(self._summaries(jobs))

    def _summaries(
        self, jobs: list[tuple[str, Trajectory, ChatRequest]], purpose: str = "summarize"
    ) -> list[Experience]:
        """The candidates the summarizer's answers hold, in job order."""
        answers = self._ask(purpose, [request for _, _, request in jobs])
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
                self._count_fallback(f"reme_{purpose}_shape")
            candidates.extend(parsed or [])
        return candidates

    def _admit(self, candidates: list[Experience]) -> list[Experience]:
        """LLM-judge validation, then similarity dedup against the pool, then addition. With
        ``dedup_scope: task`` the candidates of each source task are deduplicated and added
        before the next task's (ReMe's summary flow runs one task at a time), so a batch of
        tasks gives the pool that one task at a time gives; ``batch`` deduplicates the batch's
        candidates against each other as one set (memarena's earlier reading)."""
        validated = self._validated(candidates)
        if self.dedup_scope == "batch":
            return self._add(*self._unique(validated))
        by_task: dict[str, list[Experience]] = {}
        for experience in validated:
            by_task.setdefault(experience.source_task, []).append(experience)
        return [e for group in by_task.values() for e in self._add(*self._unique(group))]

    def _add(self, kept: list[Experience], vectors: np.ndarray | None) -> list[Experience]:
        """Number and add the kept candidates (with their scenario + content rows)."""
        for experience in kept:
            experience.id = self.pool.new_id()
        if kept:  # the other built matrices embed the new texts in one call
            self.pool.add_many(kept, vectors)
        self.counts["added"] += len(kept)
        return kept

    def _validated(self, candidates: list[Experience]) -> list[Experience]:
        """The candidates the judge keeps: valid with score >= ``judge_min_score``. It sees the
        usage scenario and the content (with ``judge_sees_task``, the source task too)."""
        self.counts["candidates"] += len(candidates)
        if not self.judge or not candidates:
            return candidates
        requests = []
        for e in candidates:
            task = prompts.JUDGE_TASK.format(task=e.task_query) if self.judge_sees_task else ""
            text = prompts.JUDGE.format(task=task, when_to_use=e.when_to_use, content=e.content)
            requests.append(self._request("judge", text, prompts.JUDGE_SCHEMA))
        kept = []
        for experience, raw in zip(candidates, self._ask("judge", requests), strict=True):
            keep, malformed = summ.judge_verdict(raw, self.judge_min_score, self.judge_lenient)
            if malformed and raw is not None:
                self._count_fallback("reme_judge_shape")
            if keep:
                kept.append(experience)
        self.counts["judge_rejected"] += len(candidates) - len(kept)
        return kept

    def _unique(self, candidates: list[Experience]) -> tuple[list[Experience], np.ndarray | None]:
        """The candidates no stored experience or earlier kept candidate is more than
        ``dedup_threshold`` cosine-close to, and their scenario-plus-content rows. ReMe's
        deduplication (``dedup_against: usage_scenario``) compares a candidate's scenario-plus-
        content embedding with the stored usage-scenario embeddings (the index) and with the
        earlier kept candidates' scenario-plus-content embeddings; ``content`` compares
        scenario-plus-content on both sides. ``dedup: none`` keeps every candidate."""
        if not candidates:
            return [], None
        if self.dedup == "none":  # the September 2025 summary flow: nothing deduplicated
            return list(candidates), None
        vectors = self.pool.embed([e.key_text("content") for e in candidates])
        stored = "content" if self.dedup_against == "content" else "usage_scenario"
        kept, rows = [], []
        for experience, vector in zip(candidates, vectors, strict=True):
            near = [self.pool.max_similarity(vector, stored), *(float(r @ vector) for r in rows)]
            if max(near) > self.dedup_threshold:
                self.counts["duplicates"] += 1
                continue
            kept.append(experience)
            rows.append(vector)
        return kept, (np.stack(rows) if rows else None)

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
        vectors = self.query_encoder([self._query_text(q.task) for q in queries])
        pool_k = self.rerank_pool if self.rerank else self.top_k
        hits = self.pool.search_many(vectors, self.retrieval_key, pool_k)
        return [
            self._context(query.task, [e for e, _ in found])
            for query, found in zip(queries, hits, strict=True)
        ]

    def _query_text(self, task: Task) -> str:
        """What the task is matched by: its query, or its keywords for the keywords key."""
        return query_keywords(task.goal) if self.retrieval_key == "keywords" else task.goal

    def _context(self, task: Task, found: list[Experience]) -> MemoryContext:
        if self.rerank and len(found) > 1:
            found = self._rerank(task.goal, found)
        chosen = found[: self.top_k]
        body = summ.numbered(chosen)
        slots = {"experience": f"{prompts.HEADER}\n{body}"}
        bare = {"experience": summ.numbered_bfcl(chosen)}  # the released BFCL agent's blocks
        if self.rewrite:
            guidance = self._rewrite(task.goal, body)
            if guidance:
                slots = {"experience": f"{prompts.GUIDANCE_HEADER}\n{guidance}"}
                bare = {"experience": guidance}  # the service's answer replaces the blocks
        context = MemoryContext(slots=slots, memory_ids=[e.id for e in chosen], bare=bare)
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
        """f and u of what each task was shown, selective or full addition (one batch), then
        the deletion schedule (``delete_every`` trials, or the touched ones after the update).
        Under full addition a failed trial's summary, once added, is also the lessons of its
        retry; under selective addition a failed trial no retry follows is analysed and its
        lessons dropped (``summarize_last_trial``)."""
        touched = self._count_recalls(pairs)
        if self.deletion and self.delete_every is None:
            self.delete_low_utility(touched)
        wanted = [p for p in pairs if p[1].success or self.addition == "full"]
        added = self._distil([job for pair in wanted for job in self._analyses([pair])])
        failed = [p for p in pairs if not p[1].success]
        if self.addition == "full" and self.max_reflections > 0:
            self._keep_added_lessons(failed, added)
        elif self.addition == "selective" and self.max_reflections == 0:
            self._summarize_last(failed)
        if self.generalize_queries:
            self._generalize([t for t, _ in wanted])
        self._count_trials(len(pairs))

    def _keep_added_lessons(self, failed: list[Pair], added: list[Experience]) -> None:
        """Full addition: what each failed trial's summary added, kept as its retry's lessons."""
        for trajectory, _ in failed:
            tid = trajectory.task.id
            self.added_lessons[tid] = [e for e in added if e.source_task == tid]

    def _summarize_last(self, failed: list[Pair]) -> None:
        """Selective addition: a task's last failed trial is analysed and judged as ReMe's agent
        summarises every trial, and its lessons are dropped (only successes are added)."""
        if self.summarize_last_trial and failed:
            self._analysed_failures(failed)
            self.counts["last_trial_summaries"] += len(failed)

    def _count_recalls(self, pairs: list[Pair]) -> set[str]:
        """f += 1 for every experience a trial was shown, u += 1 when the trial succeeded
        (ReMe's record_task_memory); returns the ids touched."""
        touched: set[str] = set()
        for trajectory, outcome in pairs:
            for exp_id in dict.fromkeys(trajectory.memory_ids):
                experience = self.pool.items.get(exp_id)
                if experience is not None:
                    experience.retrievals += 1
                    experience.utility += int(outcome.success)
                    touched.add(exp_id)
        return touched

    def _count_trials(self, n: int) -> None:
        """Advance the deletion clock by ``n`` trials: one pass over the whole pool when it
        crosses a multiple of ``delete_every`` (bfcl_agent.py: every delete_freq = 5 trials,
        retries included)."""
        before = self.counts["trials"]
        self.counts["trials"] += n
        every = self.delete_every
        if self.deletion and every is not None and self.counts["trials"] // every > before // every:
            self.delete_low_utility()

    def should_delete(self, experience: Experience) -> bool:
        """f >= alpha and u / f < beta (ReMe's DeleteMemoryOp; ``delete_strict: false`` is
        Eq. 1's u / f <= beta)."""
        f = experience.retrievals
        if f < self.alpha or f <= 0:
            return False
        ratio = experience.utility / f
        return ratio < self.beta if self.delete_strict else ratio <= self.beta

    def delete_low_utility(self, ids: Sequence[str] | set[str] | None = None) -> list[str]:
        scope = list(self.pool.items) if ids is None else [i for i in ids if i in self.pool]
        doomed = [i for i in scope if self.should_delete(self.pool.items[i])]
        self.pool.remove(doomed)
        self.counts["deleted"] += len(doomed)
        return doomed

    def reflect(self, failures: list[Pair], attempt: int) -> list[MemoryContext | None]:
        """Failure-aware reflection: what the next try of each failed trial is shown.

        ``retry_lessons: failure_analysis`` (ReMe's agents): the failed trial's failure
        analysis, judged and deduplicated against the pool, not added; ``reflect``: lessons
        from a reflection prompt, unjudged. ``retry_context: lessons`` shows the lessons only
        (ReMe's agents), ``experiences_and_lessons`` beside the task's retrieved experiences.
        A task left without lessons retries with a fresh retrieval (``retry_without_lessons:
        retrieve``, ReMe's agents; its recalls count again) or not at all (``none``)."""
        if not self.reflection or attempt > self.max_reflections or not failures:
            return [None] * len(failures)
        if self.retry_lessons == "failure_analysis":
            found = self._failure_lessons(failures)
        else:
            found = self._reflection_lessons(failures, attempt)
            for trajectory, _ in failures:
                self.added_lessons.pop(trajectory.task.id, None)
        contexts: dict[int, MemoryContext | None] = {}
        fresh: list[int] = []
        for i, ((trajectory, _), lessons) in enumerate(zip(failures, found, strict=True)):
            task = trajectory.task
            if not lessons:
                self.lessons.pop(task.id, None)
                if self.retry_without_lessons == "retrieve":
                    fresh.append(i)
                contexts[i] = None
                continue
            self.lessons[task.id] = lessons
            base = self.shown.get(task.id, MemoryContext.empty())
            keep = self.retry_context == "experiences_and_lessons"
            slots = dict(base.slots) if keep else {}
            slots["lessons"] = f"{prompts.LESSONS_HEADER}\n{summ.numbered(lessons)}"
            # the released BFCL agent puts the lessons where the experiences go, same blocks
            bare = dict(base.bare) if keep else {}
            bare["lessons"] = summ.numbered_bfcl(lessons)
            contexts[i] = MemoryContext(
                slots=slots, memory_ids=list(base.memory_ids) if keep else [], bare=bare
            )
        if fresh:
            queries = [self._retry_query(failures[i][0]) for i in fresh]
            for i, context in zip(fresh, self.retrieve_batch(queries), strict=True):
                contexts[i] = context
        return [contexts[i] for i in range(len(failures))]

    def replay_retry_retrieval(self, trajectory: Trajectory, context: MemoryContext) -> None:
        """A recorded retry shown no lessons was shown a fresh retrieval (``retry_without_lessons:
        retrieve``): made again on the same pool, so its rerank / rewrite calls are counted
        where the live run counted them and the task's shown context is set as it was."""
        if self.reflection and "lessons" not in context.slots:
            if self.retry_without_lessons == "retrieve":
                self.retrieve_batch([self._retry_query(trajectory)])

    @staticmethod
    def _retry_query(trajectory: Trajectory) -> MemoryQuery:
        observation = Observation(trajectory.initial_observation, trajectory.task.goal)
        return MemoryQuery(task=trajectory.task, observation=observation)

    def _failure_lessons(self, failures: list[Pair]) -> list[list[Experience]]:
        """Each failed trial's failure analysis after the judge and the dedup (the lessons
        ReMe's agents show the next trial; bfcl_agent.py summary_memory). Under full addition
        the analysis was made, and added, when the trial was observed: those are its lessons."""
        todo = [p for p in failures if p[0].task.id not in self.added_lessons]
        analysed = iter(self._analysed_failures(todo))
        out: list[list[Experience]] = []
        for trajectory, _ in failures:
            found = self.added_lessons.pop(trajectory.task.id, None)
            lessons = next(analysed) if found is None else found
            out.append([replace_kind(e, "reflection") for e in lessons])
        return out

    def _analysed_failures(self, failures: list[Pair]) -> list[list[Experience]]:
        """Each failed trial's failure analysis, judged and deduplicated against the pool on its
        own, nothing added."""
        if not failures:
            return []
        # counted as the purpose reflect (the lessons of a retry), asked as the failure analysis
        jobs = [job for pair in failures for job in self._analyses([pair], "reflect")]
        judged = self._validated(self._summaries(jobs, "reflect"))  # one batched call each
        out: list[list[Experience]] = []
        for trajectory, _ in failures:  # each trial's summary is deduplicated on its own
            kept, _ = self._unique([e for e in judged if e.source_task == trajectory.task.id])
            out.append(kept)
        return out

    def _reflection_lessons(self, failures: list[Pair], attempt: int) -> list[list[Experience]]:
        """Lessons from the reflection prompt (memarena's earlier reading), unjudged."""
        fields = self._fields()
        schema = self._schema(self.max_experiences)
        requests = []
        for pair in failures:
            previous = " again, after the lessons of an earlier attempt" if attempt > 1 else ""
            text = prompts.REFLECT.format(
                previous=previous, trajectory=self._render(pair), **fields
            )
            requests.append(self._request("reflect", text, schema))
        out = []
        for (trajectory, _), raw in zip(failures, self._ask("reflect", requests), strict=True):
            task = trajectory.task
            lessons = summ.parse_experiences(
                raw,
                self.max_experiences,
                kind="reflection",
                task_query=task.goal,
                source_task=task.id,
            )
            if not lessons and raw is not None:
                self._count_fallback("reme_reflect_shape")
            out.append(lessons or [])
        return out

    def observe_retry(
        self, trajectory: Trajectory, outcome: Outcome, attempt: int, context: MemoryContext
    ) -> None:
        """A retry is a trial: it counts the recalls of a fresh retrieval (a context without
        lessons) and ticks the deletion clock. A successful retry adds the summary of the retry
        (``retry_success_adds: retry_summary``, ReMe's agents) or its lessons (``lessons``,
        the paper's text), judged and deduplicated. A failed one adds nothing under selective
        addition (its analysis comes with the next ``reflect``; after the last retry it is
        made and dropped, ``summarize_last_trial``); under full addition its summary is added
        and is the next retry's lessons."""
        self.counts["reflection_attempts"] += 1  # counted here, so a replay on resume counts too
        self.added_lessons.pop(trajectory.task.id, None)
        lessons = self.lessons.pop(trajectory.task.id, None)
        if lessons is None:  # a replay on resume: rebuild the lessons from the stored context
            lessons = _lessons_from(context, trajectory)
        if "lessons" not in context.slots:  # a fresh retrieval: its recalls count again
            self._count_recalls([(trajectory, outcome)])
        pair = (trajectory, outcome)
        added: list[Experience] = []
        if outcome.success:
            self.counts["reflection_successes"] += 1
            if self.retry_success_adds == "retry_summary":
                added = self._distil(self._analyses([pair]))
            elif lessons:
                added = self._admit(lessons)
        elif self.addition == "full":
            added = self._distil(self._analyses([pair]))
            if attempt < self.max_reflections:
                self._keep_added_lessons([pair], added)
        elif attempt >= self.max_reflections:
            self._summarize_last([pair])
        if self.generalize_queries and added:
            self._generalize([trajectory])
        self._count_trials(1)

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
            "memory_last_trial_summaries": self.counts["last_trial_summaries"],
            "memory_summary_inputs_cut": self.counts["inputs_cut"],
        }

    def size(self) -> int:
        return len(self.pool)

    def _count_fallback(self, kind: str) -> None:
        self.fallbacks[kind] = self.fallbacks.get(kind, 0) + 1

    def import_released(self, path: Path) -> None:
        """A pool ReMe's authors released (:mod:`.released`) as this memory's pool, every
        field kept; evaluation retrieves from it as from an acquired one."""
        experiences = read_pool(path)
        self.pool.remove(list(self.pool.items))
        self.pool.add_many(experiences)
        self.pool.next_id = len(experiences) + 1

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


def replace_kind(experience: Experience, kind: str) -> Experience:
    """A copy of a candidate as another kind (a failure analysis shown as a lesson)."""
    return Experience.from_dict({**experience.to_dict(), "kind": kind})


def _lessons_from(context: MemoryContext, trajectory: Trajectory) -> list[Experience]:
    """Lessons rendered in a retry context (``Experience i:`` blocks)."""
    return [
        Experience(
            id="",
            when_to_use=when,
            content=content,
            kind="reflection",
            source_task=trajectory.task.id,
            task_query=trajectory.task.goal,
        )
        for when, content in summ.parse_numbered(context.slots.get("lessons", ""))
    ]
