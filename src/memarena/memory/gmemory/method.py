"""``GMemory``: the G-Memory baseline (Zhang et al. 2025) as ``method=gmemory``.

Three tiers (evograph_mem.txt Section 3.1; DESIGN.md section 6):

- interaction graphs: every observed task's utterance chain and its LLM-picked key steps;
- the query graph: one node per observed task (goal, Resolved/Failed, interaction graph),
  linked to its nearest past queries (cosine >= ``link_threshold``, at most ``link_k``);
- the insight graph: lessons with their supporting queries, maintained by an LLM every
  ``finetune_every`` observed tasks and merged every ``merge_every`` tasks.

Retrieval (once per task): top-``k`` queries by cosine plus their ``hops``-hop neighbours; the
agent sees the key steps of up to ``n_successes`` resolved queries, then up to ``top_b``
insights supported by the expanded query set.

``use_llm=False`` is a TEST/OFFLINE MODE, not G-Memory: key steps come from a heuristic and the
only insights are a deterministic rule ("avoid <last failing action> when <goal>" for each
failed task), so the wiring can be tested without any model.

Hooks for subclasses (EvoGraph-Mem): :meth:`select_insights` picks the insights shown at
retrieval; :meth:`after_task` runs at the end of every observation with the insight ids that
were shown for that task (``self.shown``).
"""

from __future__ import annotations

import logging
from typing import Any

import numpy as np

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Outcome, Trajectory
from memarena.memory.gmemory import prompts
from memarena.memory.gmemory.insights import InsightGraph, maintain, merge_groups
from memarena.memory.gmemory.interaction import (
    clip,
    extract_key_steps,
    heuristic_key_steps,
)
from memarena.memory.gmemory.query_graph import FAILED, RESOLVED, QueryGraph, QueryNode

log = logging.getLogger(__name__)

PURPOSES = ("key_steps", "insights", "merge")
STORED_OBS_CHARS = 300


class GMemory(MemoryMethod):
    """G-Memory as ``method=gmemory`` (parameters in ``conf/method/gmemory.yaml``)."""

    name = "gmemory"
    schema_version = 1
    granularity = "task"
    acquisition_policy = "agent"

    def __init__(
        self,
        k: int = 3,
        hops: int = 1,
        top_b: int = 5,
        link_k: int = 10,
        link_threshold: float = 0.7,
        finetune_every: int = 5,
        merge_every: int = 20,
        max_key_steps: int = 5,
        n_successes: int = 2,
        use_llm: bool = True,
        env_name: str = "",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if k < 1 or hops < 0 or top_b < 0 or n_successes < 0 or max_key_steps < 0:
            raise ConfigError(
                f"memarena: method=gmemory needs k >= 1 and hops, top_b, n_successes, "
                f"max_key_steps >= 0; got k={k}, hops={hops}, top_b={top_b}, "
                f"n_successes={n_successes}, max_key_steps={max_key_steps}."
            )
        if finetune_every < 1 or merge_every < 1:
            raise ConfigError(
                f"memarena: method.finetune_every={finetune_every} and method.merge_every="
                f"{merge_every} must be >= 1 (G-Memory uses 5 and 20)."
            )
        self.env_name = env_name
        self.k, self.hops, self.top_b = int(k), int(hops), int(top_b)
        self.finetune_every, self.merge_every = int(finetune_every), int(merge_every)
        self.max_key_steps, self.n_successes = int(max_key_steps), int(n_successes)
        self.use_llm = bool(use_llm)
        self.queries = QueryGraph(link_k=link_k, link_threshold=link_threshold)
        self.insights = InsightGraph()
        self.shown: dict[str, list[str]] = {}  # task id -> insight ids shown at retrieval
        self.pending: list[tuple[str, list[str]]] = []  # (query id, shown) since maintenance
        self.n_observed = 0
        self.token_usage: dict[str, dict[str, int]] = {p: _zero_usage() for p in PURPOSES}
        self.fallbacks: dict[str, int] = {}

    # -- construction ------------------------------------------------------------------------
    def _embed(self, text: str) -> np.ndarray:
        return np.asarray(self.services.embedder.encode([text]), dtype=np.float32)[0]

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
        )
        return steps

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
            initial=clip(trajectory.initial_observation, STORED_OBS_CHARS),
            steps=[(s.action, clip(s.observation, STORED_OBS_CHARS)) for s in trajectory.steps],
            key_steps=self._key_steps(trajectory, status),
        )
        self.queries.add(node, self._embed(task.goal))
        self.n_observed += 1
        self.after_task(task.id, trajectory, outcome, self.shown.pop(task.id, []))

    def after_task(
        self,
        query_id: str,
        trajectory: Trajectory,
        outcome: Outcome,
        retrieved_insight_ids: list[str],
    ) -> None:
        """G-Memory: queue the task; every ``finetune_every`` tasks maintain the insights from
        the queued tasks, every ``merge_every`` tasks merge near-duplicate insights."""
        self.pending.append((query_id, list(retrieved_insight_ids)))
        if self.n_observed % self.finetune_every == 0:
            self.run_maintenance()
        if self.n_observed % self.merge_every == 0:
            self.run_merge()

    def run_maintenance(self) -> dict[str, int]:
        batch, self.pending = self.pending, []
        if not batch:
            return {}
        ids = [q for q, _ in batch]
        context = {q: shown for q, shown in batch if shown}
        if self.use_llm:
            successes = [self.render_query(q) for q in ids if self.queries.nodes[q].resolved]
            failures = [self.render_query(q) for q in ids if not self.queries.nodes[q].resolved]
            ops = maintain(
                self.services.llm,
                successes,
                failures,
                self.insights,
                usage=self.token_usage["insights"],
                fallbacks=self.fallbacks,
            )
            return self.insights.apply(ops, ids, context)
        counts: dict[str, int] = {}
        for q in ids:  # test mode: one rule-made insight per failed task, supported by it
            for op in self.rule_ops(q):
                for kind, n in self.insights.apply([op], [q], context).items():
                    counts[kind] = counts.get(kind, 0) + n
        return counts

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
        if not self.use_llm or len(self.insights) < 2:
            return 0
        groups = merge_groups(
            self.services.llm,
            self.insights,
            usage=self.token_usage["merge"],
            fallbacks=self.fallbacks,
        )
        return self.insights.merge(groups)

    # -- retrieval ---------------------------------------------------------------------------
    def select_insights(self, expanded: list[str], top_ids: list[str]) -> list[tuple[str, str]]:
        """(insight id, content) to show: G-Memory ranks by support in the expanded set."""
        return [(i.id, i.content) for i in self.insights.rank_insights(expanded, self.top_b)]

    def render_query(self, query_id: str) -> str:
        """Goal, status and key steps of a stored query, compactly."""
        node = self.queries.nodes[query_id]
        lines = [f"Task: {node.goal} ({node.status})"]
        for i in node.key_steps:
            if 0 <= i < len(node.steps):
                action, observation = node.steps[i]
                lines.append(f"  step {i + 1}: > {action} -> {clip(observation)}")
        return "\n".join(lines)

    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        self._calls += 1
        task_id = query.task.id
        if not len(self.queries):
            self.shown[task_id] = []
            return MemoryContext.empty()
        top, expanded = self.queries.retrieve(self._embed(query.task.goal), self.k, self.hops)
        past = [q for q in dict.fromkeys(top + expanded) if self.queries.nodes[q].resolved][
            : self.n_successes
        ]
        chosen = self.select_insights(expanded, top)
        self.shown[task_id] = [i for i, _ in chosen]
        slots: dict[str, str] = {}
        if past:
            body = "\n".join(self.render_query(q) for q in past)
            slots["past_successes"] = f"{prompts.PAST_SUCCESSES_HEADER}\n{body}"
        if chosen:
            body = "\n".join(f"{n}. {content}" for n, (_, content) in enumerate(chosen, 1))
            slots["insights"] = f"{prompts.INSIGHTS_HEADER}\n{body}"
        if not slots:
            return MemoryContext.empty()
        memory_ids = past + [i for i, _ in chosen]
        self._entries += len(memory_ids)
        return MemoryContext(slots=slots, memory_ids=memory_ids)

    # -- reporting and snapshots -------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        return {
            "memory_queries": len(self.queries),
            "memory_insights": len(self.insights),
            "memory_query_edges": self.queries.graph.number_of_edges(),
            "memory_insight_edges": len(self.insights.edges),
            "memory_token_usage": {p: dict(u) for p, u in self.token_usage.items()},
            "memory_fallbacks": dict(sorted(self.fallbacks.items())),
            **self.retrieval_metrics(),
        }

    def state_dict(self) -> dict[str, Any]:
        """JSON-serialisable; the query embeddings are one base64 float32 matrix
        (see :meth:`QueryGraph.to_dict`)."""
        return {
            "queries": self.queries.to_dict(),
            "insights": self.insights.to_dict(),
            "pending": [[q, list(s)] for q, s in self.pending],
            "shown": {t: list(s) for t, s in self.shown.items()},
            "n_observed": self.n_observed,
            "token_usage": {p: dict(u) for p, u in self.token_usage.items()},
            "fallbacks": dict(self.fallbacks),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        self.queries.load_dict(state["queries"])
        self.insights.load_dict(state["insights"])
        self.pending = [(q, list(s)) for q, s in state.get("pending", [])]
        self.shown = {t: list(s) for t, s in state.get("shown", {}).items()}
        self.n_observed = int(state.get("n_observed", len(self.queries)))
        usage = state.get("token_usage", {})
        self.token_usage = {p: {**_zero_usage(), **usage.get(p, {})} for p in PURPOSES}
        self.fallbacks = dict(state.get("fallbacks", {}))


def _zero_usage() -> dict[str, int]:
    return {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0}
