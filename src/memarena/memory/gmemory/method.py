"""``GMemory``: the G-Memory baseline (Zhang et al. 2025) as ``method=gmemory``, at parity with
the reference code (bingreeky/GMemory: ``mas/memory/mas_memory/GMemory.py``, run by
``tasks/run.py`` / ``run_mas.sh``).

Three tiers (evograph_mem.txt Section 3.1):

- interaction graphs: every observed task's utterance chain, its LLM-picked key steps, the
  steps the env rejected and, for a failed task, the LLM's cause of the failure;
- the query graph: one node per observed task (goal, Resolved/Failed, interaction graph),
  linked to its nearest past queries (cosine >= ``link_threshold``, at most ``link_k``);
- the insights: lessons with their supporting tasks and the reference's integer score.

Retrieval (once per task, :mod:`~memarena.memory.gmemory.retrieval`): the top-``k`` queries by
cosine plus their ``hops``-hop neighbours give the solved candidates (completed by plain
similarity when too few, cut at ``retrieve_threshold``, a pool of ``2 * n_successes``), which
the LLM scores for relevance (``rerank_successes``); the agent sees the best ``n_successes``
as task, key steps and full trajectory, then ``top_b`` insights.

Learning, after every observed task (reference ``add_memory`` then ``backward``): every
``rounds_per_insights`` tasks once ``start_insights_threshold`` are stored, fine-tune the
insights on ``insights_point_num`` tasks drawn with a generator seeded by (``seed``, number of
stored tasks); every ``merge_every`` tasks, merge them per task cluster
(:mod:`~memarena.memory.gmemory.maintenance`); then score the insights shown for the task (+1
solved, -2 failed; removed at <= 0). The reference names the insights shown by their wording,
so this scoring reaches every insight whose content holds a shown wording at the end of the task,
one merged or added since included (``insight_identity``, below).

Where the reference code differs from the paper's Section 3.1, this follows the code:

- insights are ranked by the support of the 4 solved + 2 failed tasks nearest by plain cosine,
  not of the query graph's expanded set ``Q~``; the reference also counts the new task's own
  goal text, which only matters when a stored task has the very same goal (left out here).
  The rank is the number of those tasks supporting an insight, nothing else: ties keep the
  order in which the insights were first met going through the nearest solved tasks (nearest
  first), then the failed ones, each task's insights in creation order
  (``InsightsManager.query_insights_with_score``, a stable sort by count alone);
- no insight-to-insight edges (``E_i`` of Eq. 5) are kept;
- failed tasks are never shown to the agent (the reference's MAS workflows discard them and
  ``tasks/run.py`` passes ``failed_topk=0``; MemCo's fork shows one hint line for them:
  ``n_failed`` / ``failed_cases``);
- the relevance re-ranking and the fine-tuning on sampled tasks are not in the paper's text.

Where memarena differs from the code: supports are task ids (the reference keys them by goal
text, so tasks with one goal share them); an AGREE names its insight by id (the reference looks
it up by its wording and, when that fails, credits the last insight);
invalid operations and malformed answers are counted fallbacks; the calls of one drawn task and
of one merge are batched (see :mod:`~memarena.memory.gmemory.maintenance`); a rejected step is
one the env marks invalid (``feedback.valid_action``) where the reference uses its envs'
negative rewards (invalid actions, no effect, thinking).

``use_llm=False`` is a TEST/OFFLINE MODE, not G-Memory: key steps come from a heuristic, nothing
is re-ranked or merged, and the only insights are a deterministic rule ("avoid <last failing
action> when <goal>" for each drawn failed task), so the wiring can be tested without a model.

Scale: ``retrieve_batch`` embeds the goals of a wave of episodes in one call (an LRU keeps goals
already seen); the snapshot stores the query embeddings with the embedder's name and dim, and a
load uses them unless another embedder is configured (then the goals are embedded again).

Per-domain memories (MemCo's protocol, :mod:`memarena.memory.team`; ``method=gmemory_memco``
runs it with MemCo's settings): every domain's G-Memory keeps the episodes it stored
(:mod:`~memarena.memory.gmemory.episodes`); when all domains are trained, :meth:`merge_domains`
feeds them, domain by domain, through a fresh G-Memory's ordinary write path (key steps, cause
of failure, query node, fine-tuning and merge schedule all run again, on the combined stream,
with nothing marking the source domain), and every domain's agent retrieves from that global
memory only (:meth:`retrieve_in_team`), as MemCo's code runs G-Memory (its
``eval_collab_multidomain_global.py`` and the ``_global_retriever`` of its ``GMemory.py``).

What the agent sees of a retrieval, and the key-step temperature, have two readings (keys
``show_key_steps``, ``n_failed`` / ``failed_cases``, ``key_steps_temperature``; both written in
``conf/method/gmemory.yaml`` and ``gmemory_memco.yaml``).

Which insight a shown one is (``insight_identity``, written in ``conf/method/gmemory.yaml``):

- ``text`` (G-Memory's code, the default): an insight is its wording. The ranking counts
  insights of one wording as one (``query_insights_with_score`` keys its counts by rule text)
  and the per-task score goes, for each wording shown, to every insight whose content at the
  end of the task contains it (``GMemory.backward`` keeps the shown texts,
  ``InsightsManager.backward`` matches ``insight in rule``): when a merge or an ADD in that
  task's maintenance gives an insight a shown wording, that insight is scored (-2 on a failed
  task); an insight edited away from its shown wording is not.
- ``id`` (memarena's earlier reading): the shown insights are the ids picked at retrieval; the
  score goes to those still present (an edited one included, one merged away not), and equal
  wordings are ranked separately.

Hooks for subclasses (EvoGraph-Mem): :meth:`insight_queries` (the tasks whose support ranks the
insights) and :meth:`select_insights` pick the insights shown at retrieval; :meth:`after_task`
runs at the end of every observation with the insight ids shown for that task (``self.shown``);
``explains_failures`` turns the cause-of-failure call off.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Outcome, Trajectory
from memarena.core.json_budget import token_caps
from memarena.core.memory import Capabilities
from memarena.core.settings import MethodSettings, reading
from memarena.core.typecheck import Count, NonNegative, Positive
from memarena.memory.gmemory import episodes, maintenance, prompts
from memarena.memory.gmemory.insights import InsightGraph
from memarena.memory.gmemory.interaction import (
    clip,
    cut_count,
    extract_fail_reasons,
    extract_key_steps,
    heuristic_key_steps,
)
from memarena.memory.gmemory.query_graph import FAILED, RESOLVED, QueryGraph, QueryNode
from memarena.memory.gmemory.render import render_solved
from memarena.memory.gmemory.retrieval import insight_neighbourhood, rerank, success_candidates
from memarena.memory.vectors import QueryEncoder, embedder_identity, stored_matches

log = logging.getLogger(__name__)

PURPOSES = ("key_steps", "fail_reason", "relevance", "insights", "merge")


@dataclass(frozen=True)
class GMemorySettings(MethodSettings):
    """G-Memory's keys (``conf/method/gmemory.yaml`` gives each one's source; MemCo's fork:
    ``gmemory_memco.yaml``)."""

    k: Positive = 1  # nearest queries
    hops: Count = 1
    # insights shown: G-Memory's released logs record "Insights Topk: 5" (its run.py's default
    # is 3); MemCo's fork forces 1 (gmemory_memco.yaml)
    top_b: Count = reading(5, released=5, memco_released=1, memarena=3)
    # each shown observation (the start included) cut to this many characters; None: whole
    # (the released format_task_context cuts nothing); memarena's earlier reading: 160
    observation_chars: Positive | None = reading(None, released=None, memarena=160)
    n_successes: Count = 1
    retrieve_threshold: float = 0.0
    rerank_successes: bool = reading(True, released=True, memco_released=False)
    link_k: Count = 10
    link_threshold: float = 0.85
    start_insights_threshold: Count = 5
    rounds_per_insights: Positive = 5
    insights_point_num: Count = 5
    merge_every: Positive = 20
    max_key_steps: Count = 5
    key_steps_temperature: NonNegative = reading(0.1, released=0.1, memco_released=0.0)
    # llm_config's default for calls that set none (both codes); memarena's earlier 0
    memory_temperature: NonNegative = reading(0.1, released=0.1, memarena=0.0)
    show_key_steps: bool = reading(True, released=True, memco_released=False)
    n_failed: Count = reading(0, released=0, memco_released=1)
    # how retrieved failed tasks reach the prompt
    failed_cases: Literal["none", "hint"] = reading("none", released="none", memco_released="hint")
    # what names a shown insight
    insight_identity: Literal["text", "id"] = reading("text", released="text", memarena="id")
    use_llm: bool = True
    max_tokens: Any = None
    seed: int = 0


STORED_OBS_CHARS = 300


class GMemory(MemoryMethod):
    """G-Memory as ``method=gmemory`` (parameters in ``conf/method/gmemory.yaml``)."""

    name = "gmemory"
    schema_version = 2
    # per-domain memories: a global memory re-observes every domain's episodes
    # a learning retrieval keeps the insights it showed, which the task's observation scores;
    # every retrieval counts the observations it cut (both replayed on resume)
    capabilities = Capabilities(has_global=True, retrieval_mutates=True)
    explains_failures = True  # ask the LLM why a failed task failed (comparative pass input)
    PURPOSES: tuple[str, ...] = PURPOSES  # memory-LLM calls, as counted in token_usage

    Settings = GMemorySettings

    def __init__(self, settings: GMemorySettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: GMemorySettings = self.settings
        self.k, self.hops, self.top_b = s.k, s.hops, s.top_b
        self.n_successes, self.retrieve_threshold = s.n_successes, float(s.retrieve_threshold)
        self.rerank_successes = s.rerank_successes
        self.start_insights_threshold = s.start_insights_threshold
        self.rounds_per_insights, self.merge_every = s.rounds_per_insights, s.merge_every
        self.insights_point_num, self.max_key_steps = s.insights_point_num, s.max_key_steps
        self.key_steps_temperature = float(s.key_steps_temperature)
        # cause of failure, relevance, insight fine-tuning and merge: the reference passes no
        # temperature, so its llm_config default (configs/configs.yaml: 0.1) applies
        self.memory_temperature = float(s.memory_temperature)
        self.show_key_steps = s.show_key_steps
        self.observation_chars = s.observation_chars
        # what a stored task keeps of each observation (whole when shown whole)
        self.stored_chars = None if s.observation_chars is None else STORED_OBS_CHARS
        self.observations_cut = 0  # shown observations cut to observation_chars
        self.n_failed, self.failed_cases = s.n_failed, s.failed_cases
        self.insight_identity = s.insight_identity
        self.use_llm, self.seed = s.use_llm, s.seed
        # reply-budget caps per purpose; None: the bound of the answer's schema
        self.token_caps = token_caps(s.max_tokens, self.PURPOSES, "method")
        self.queries = QueryGraph(link_k=s.link_k, link_threshold=s.link_threshold)
        self.insights = InsightGraph()
        self.shown: dict[str, list[str]] = {}  # task id -> insight ids shown at retrieval
        # insight_identity=text: task id -> the wordings shown at retrieval (scored by wording)
        self.shown_texts: dict[str, list[str]] = {}
        self.n_observed = 0
        # every stored episode as a compact row, in the order stored (for merge_domains)
        self.episodes: list[dict[str, Any]] = []
        self.token_usage: dict[str, dict[str, int]] = {p: _zero_usage() for p in PURPOSES}
        self.fallbacks: dict[str, int] = {}
        # task goals at retrieval: one encode call per wave of episodes (raw rows, as
        # ``_embed`` gives them), repeated goals from an LRU
        self.query_encoder = QueryEncoder(
            lambda texts: self.services.embedder.encode(texts), normalize=False
        )
        self._stored_embedder: dict[str, Any] | None = None  # checked on first use

    # -- observing ---------------------------------------------------------------------------
    def _embed(self, text: str) -> np.ndarray:
        self._check_embedder()
        return np.asarray(self.services.embedder.encode([text]), dtype=np.float32)[0]

    def _check_embedder(self) -> None:
        """After a load: the stored query embeddings are used as they are unless the snapshot
        names another embedder (then every stored goal is embedded again, in one call)."""
        stored, self._stored_embedder = self._stored_embedder, None
        if not stored or not len(self.queries):
            return
        if not stored_matches(stored, self.services.embedder, "G-Memory query graph"):
            goals = [self.queries.nodes[q].goal for q in self.queries.ids]
            self.queries.replace_embeddings(self.services.embedder.encode(goals))

    def _key_steps(self, trajectory: Trajectory, status: str) -> list[int]:
        if not self.use_llm:
            return heuristic_key_steps(trajectory, self.max_key_steps)
        (steps,) = extract_key_steps(
            self.services.llm,
            [trajectory],
            self.max_key_steps,
            statuses=[status],
            usage=self.token_usage["key_steps"],
            fallbacks=self.fallbacks,
            cap=self.token_caps["key_steps"],
            temperature=self.key_steps_temperature,
        )
        return steps

    def _fail_reason(self, trajectory: Trajectory) -> str:
        if not (self.use_llm and self.explains_failures):
            return ""
        (reason,) = extract_fail_reasons(
            self.services.llm,
            [trajectory],
            usage=self.token_usage["fail_reason"],
            fallbacks=self.fallbacks,
            cap=self.token_caps["fail_reason"],
            temperature=self.memory_temperature,
        )
        return reason

    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        task = trajectory.task
        if task.id in self.queries:
            return  # already observed (a replay on resume)
        status = RESOLVED if outcome.success else FAILED
        node = QueryNode(
            id=task.id,
            goal=task.goal,
            status=status,
            domain=task.domain,
            initial=clip(trajectory.initial_observation, self.stored_chars),
            steps=[(s.action, clip(s.observation, self.stored_chars)) for s in trajectory.steps],
            key_steps=self._key_steps(trajectory, status),
            invalid=[i for i, s in enumerate(trajectory.steps) if not s.feedback.valid_action],
            fail_reason="" if outcome.success else self._fail_reason(trajectory),
        )
        self.queries.add(node, self._embed(task.goal))
        self.episodes.append(
            episodes.encode(trajectory, outcome, whole=self.observation_chars is None)
        )
        self.n_observed += 1
        self.after_task(task.id, trajectory, outcome, self.shown.pop(task.id, []))
        self.shown_texts.pop(task.id, None)

    def after_task(
        self,
        query_id: str,
        trajectory: Trajectory,
        outcome: Outcome,
        retrieved_insight_ids: list[str],
    ) -> None:
        """G-Memory (reference ``add_memory`` then ``backward``): fine-tune and merge when due,
        then score the insights shown for this task, by wording or by id
        (``insight_identity``)."""
        texts = None
        if self.insight_identity == "text":
            texts = self.shown_texts.get(query_id)
            if texts is None:  # a snapshot written before the wordings were kept
                now = self.insights.insights
                texts = [now[i].content for i in retrieved_insight_ids if i in now]
        if self.finetune_due():
            self.run_finetune()
        if self.n_observed % self.merge_every == 0:
            self.run_merge()
        if texts is None:
            self.insights.reward(retrieved_insight_ids, outcome.success)
        else:
            self.insights.reward_texts(texts, outcome.success)

    def finetune_due(self) -> bool:
        n = self.n_observed
        return n >= self.start_insights_threshold and n % self.rounds_per_insights == 0

    def rng(self) -> random.Random:
        """The draws of one fine-tuning: seeded by the run's seed and the memory's size, so a
        memory loaded from a snapshot draws what the saved one would have."""
        return random.Random(f"memarena/gmemory/{self.seed}/{self.n_observed}")

    def run_finetune(self) -> dict[str, int]:
        rng = self.rng()
        points = maintenance.sample_points(self.queries.ids, self.insights_point_num, rng)
        if self.use_llm:

            def propose(query_id: str) -> dict[str, int]:
                return maintenance.finetune_point(
                    self.services.llm,
                    self.queries,
                    self.insights,
                    query_id,
                    rng,
                    usage=self.token_usage["insights"],
                    fallbacks=self.fallbacks,
                    cap=self.token_caps["insights"],
                    temperature=self.memory_temperature,
                )
        else:

            def propose(query_id: str) -> dict[str, int]:
                return self.insights.apply(self.rule_ops(query_id), [query_id])

        return maintenance.finetune(self.insights, points, propose)

    def rule_ops(self, query_id: str) -> list[dict[str, Any]]:
        """use_llm=False only: "avoid <last failing action> when <goal>" for a failed task
        (AGREE when that exact insight exists); nothing for a resolved one."""
        node = self.queries.nodes[query_id]
        if node.resolved or not node.steps:
            return []
        content = prompts.AVOID_RULE.format(action=node.steps[-1][0], goal=node.goal)
        for insight in self.insights.insights.values():
            if insight.content == content:
                return [{"op": "AGREE", "id": insight.id}]
        return [{"op": "ADD", "content": content}]

    def run_merge(self) -> int:
        if not self.use_llm:
            return 0
        return maintenance.merge(
            self.services.llm,
            self.queries,
            self.insights,
            usage=self.token_usage["merge"],
            fallbacks=self.fallbacks,
            cap=self.token_caps["merge"],
            temperature=self.memory_temperature,
        )

    # -- retrieval ---------------------------------------------------------------------------
    def insight_queries(self, embedding: np.ndarray, expanded: list[str]) -> list[str]:
        """The tasks whose support ranks the insights: G-Memory's code takes the 4 solved and
        2 failed tasks nearest by cosine (``query_insights_with_score``)."""
        return insight_neighbourhood(self.queries, embedding)

    def select_insights(self, queries: list[str], top_ids: list[str]) -> list[tuple[str, str]]:
        """(insight id, content) to show: ranked by support among ``queries`` (under
        ``insight_identity=text`` one wording is one entry)."""
        by_text = self.insight_identity == "text"
        ranked = self.insights.rank_insights(queries, self.top_b, by_text=by_text)
        return [(i.id, i.content) for i in ranked]

    def past_successes(self, goal: str, embedding: np.ndarray, expanded: list[str]) -> list[str]:
        """The solved tasks to show (see :mod:`~memarena.memory.gmemory.retrieval`)."""
        pool = success_candidates(
            self.queries, embedding, expanded, 2 * self.n_successes, self.retrieve_threshold
        )
        if pool and self.use_llm and self.rerank_successes:
            # the reference's relevance prompt: the stored task and its trajectory, no key steps
            rendered = [
                (q, render_solved(self.queries.nodes[q], False, self.observation_chars))
                for q in pool
            ]
            pool = rerank(
                self.services.llm,
                goal,
                rendered,
                usage=self.token_usage["relevance"],
                fallbacks=self.fallbacks,
                cap=self.token_caps["relevance"],
                temperature=self.memory_temperature,
            )
        return pool[: self.n_successes]

    def past_failures(self, embedding: np.ndarray, expanded: list[str]) -> list[str]:
        """The failed tasks retrieved (``n_failed``; only when ``failed_cases`` shows them):
        picked as the solved ones, from a pool of ``2 * n_failed`` (the reference's
        ``retrieve_memory`` / ``_retrieve_memory_raw``), with no LLM re-ranking."""
        if self.failed_cases == "none" or self.n_failed == 0:
            return []
        pool = success_candidates(
            self.queries, embedding, expanded, 2 * self.n_failed, self.retrieve_threshold, FAILED
        )
        return pool[: self.n_failed]

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        return self.retrieve_batch([query])[0]

    def retrieve_in_team(
        self, query: MemoryQuery, global_memory: MemoryMethod | None
    ) -> MemoryContext:
        """Per-domain memories: the global memory only, as MemCo's code runs G-Memory (its
        ``GMemory.retrieve_memory`` hands the query to the global retriever and never reads the
        domain's own store); this domain's memory when there is no global one."""
        if global_memory is None:
            return self.retrieve(query)
        return global_memory.retrieve(query)

    def replay_retrieval_in_team(
        self, trajectory: Trajectory, spent: Any, global_memory: MemoryMethod | None
    ) -> None:
        """On the memory :meth:`retrieve_in_team` asked: the global one when there is one."""
        target = self if global_memory is None else global_memory
        target.replay_retrieval(trajectory, spent)

    def retrieve_batch(self, queries: list[MemoryQuery]) -> list[MemoryContext]:
        """The contexts of a wave of episodes; their goals are embedded in one call."""
        if not self.frozen:  # what a learning memory scores after the task; frozen: untouched
            for query in queries:
                self.shown[query.task.id] = []
                if self.insight_identity == "text":
                    self.shown_texts[query.task.id] = []
        if not len(self.queries) or not queries:
            return [MemoryContext.empty() for _ in queries]
        self._check_embedder()
        vectors = self.query_encoder([q.task.goal for q in queries])
        return [self._context(q, v) for q, v in zip(queries, vectors, strict=True)]

    def _context(self, query: MemoryQuery, embedding: np.ndarray) -> MemoryContext:
        task_id, goal = query.task.id, query.task.goal
        top, expanded = self.queries.retrieve(embedding, self.k, self.hops)
        past = self.past_successes(goal, embedding, expanded)
        failed = self.past_failures(embedding, expanded)
        chosen = self.select_insights(self.insight_queries(embedding, expanded), top)
        if not self.frozen:
            self.shown[task_id] = [i for i, _ in chosen]
            if self.insight_identity == "text":
                self.shown_texts[task_id] = [content for _, content in chosen]
        slots: dict[str, str] = {}
        if past:
            nodes = [self.queries.nodes[q] for q in past]
            body = "\n\n".join(
                render_solved(n, self.show_key_steps, self.observation_chars) for n in nodes
            )
            self.observations_cut += self._cut(nodes)
            header = prompts.PAST_SUCCESSES_HEADER
            if not self.show_key_steps:
                header = prompts.PAST_TRAJECTORIES_HEADER
            slots["past_successes"] = f"{header}\n{body}"
        # the failed tasks' hint follows the insights (MemCo's prompt lists its repair hints
        # after them)
        lines = [content for _, content in chosen] + ([prompts.FAILED_HINT] if failed else [])
        if lines:
            body = "\n".join(f"{n}. {line}" for n, line in enumerate(lines, 1))
            slots["insights"] = f"{prompts.INSIGHTS_HEADER}\n{body}"
        if not slots:
            return MemoryContext.empty()
        return MemoryContext(slots=slots, memory_ids=past + [i for i, _ in chosen] + failed)

    def _cut(self, nodes: list[QueryNode]) -> int:
        """How many observations of the solved tasks ``nodes`` showing them cuts."""
        return sum(
            cut_count([n.initial, *(o for _, o in n.steps)], self.observation_chars) for n in nodes
        )

    def insight_content(self, insight_id: str) -> str | None:
        """The wording of an insight this memory holds now (None: not one of its insights)."""
        insight = self.insights.insights.get(insight_id)
        return None if insight is None else insight.content

    def replay_retrieval(self, trajectory: Trajectory, spent: Any) -> None:
        """A recorded retrieval, again (on resume): the insights it showed are kept for the
        task's scoring (when learning; by id, and by wording under ``insight_identity=text``)
        and the observations its solved tasks' rendering cut are counted. The shown ids are
        the record's: its solved tasks, then its insights, then its failed tasks; this memory
        is as the live retrieval saw it, so their wordings are those shown."""
        super().replay_retrieval(trajectory, spent)
        ids = trajectory.memory_ids
        nodes = self.queries.nodes
        past = [nodes[i] for i in ids if i in nodes and nodes[i].status == RESOLVED]
        self.observations_cut += self._cut(past)
        if self.frozen:
            return
        task_id = trajectory.task.id
        chosen = [(i, c) for i in ids if (c := self.insight_content(i)) is not None]
        self.shown[task_id] = [i for i, _ in chosen]
        if self.insight_identity == "text":
            self.shown_texts[task_id] = [c for _, c in chosen]

    # -- per-domain memories -----------------------------------------------------------------
    def stored_episodes(self) -> list[tuple[Trajectory, Outcome]]:
        """Every episode this memory stored, in the order it stored them."""
        return [episodes.decode(row) for row in self.episodes]

    def merge_domains(self, memories: dict[str, MemoryMethod]) -> None:
        """The global memory of MemCo's protocol: every domain memory's episodes, domain by
        domain in the given order, observed again through :meth:`observe_groups` (MemCo's
        code feeds each domain's saved messages to ``add_memory`` in domain order, with no
        source tag; G-Memory's whole pipeline runs again on the combined stream)."""
        for domain, memory in memories.items():
            if not isinstance(memory, GMemory):
                raise ConfigError(
                    f"memarena: {self.name} cannot merge the {domain!r} memory, a "
                    f"{type(memory).__name__}."
                )
            if len(memory.episodes) != len(memory.queries):
                raise ConfigError(
                    f"memarena: the {domain!r} {self.name} memory holds {len(memory.queries)} "
                    f"tasks but the episodes of {len(memory.episodes)} (a snapshot written "
                    "before G-Memory kept its episodes); acquire again (protocol.resume=false) "
                    "to build the global memory."
                )
            self.observe_groups([[episode] for episode in memory.stored_episodes()])

    # -- reporting and snapshots -------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_queries": len(self.queries),
            "memory_insights": len(self.insights),
            "memory_query_edges": self.queries.graph.number_of_edges(),
            "observations_cut": self.observations_cut,
        }

    def size(self) -> int:
        """Stored tasks plus insights."""
        return len(self.queries) + len(self.insights)

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable; the query embeddings are one base64 float32 matrix
        (see :meth:`QueryGraph.to_dict`)."""
        built = self.services.embedder_if_built
        queries = self.queries.to_dict()
        if self._stored_embedder:  # loaded and not used since: what the snapshot said
            queries["embedder"] = dict(self._stored_embedder)
        elif built is not None and len(self.queries):
            queries["embedder"] = embedder_identity(built)
        return {
            "queries": queries,
            "insights": self.insights.to_dict(),
            "shown": {t: list(s) for t, s in self.shown.items()},
            "shown_texts": {t: list(s) for t, s in self.shown_texts.items()},
            "n_observed": self.n_observed,
            "episodes": list(self.episodes),
            "token_usage": {p: dict(u) for p, u in self.token_usage.items()},
            "fallbacks": dict(self.fallbacks),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.queries.load_dict(state["queries"])
        self._stored_embedder = dict(state["queries"].get("embedder") or {}) or None
        self.query_encoder.clear()
        self.insights.load_dict(state["insights"])
        self.shown = {t: list(s) for t, s in state.get("shown", {}).items()}
        self.shown_texts = {t: list(s) for t, s in state.get("shown_texts", {}).items()}
        self.n_observed = int(state.get("n_observed", len(self.queries)))
        self.episodes = list(state.get("episodes", []))
        usage = state.get("token_usage", {})
        self.token_usage = {p: {**_zero_usage(), **usage.get(p, {})} for p in PURPOSES}
        self.fallbacks = dict(state.get("fallbacks", {}))


def _zero_usage() -> dict[str, int]:
    return {"calls": 0, "requests": 0, "prompt_tokens": 0, "completion_tokens": 0}
