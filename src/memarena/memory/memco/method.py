"""``MemCo``: the memory method that wires local memory, global promotion and query-guided
support together (paper Sections 3.3-3.5, Appendix B).

- One *agent* per source domain (``task.domain``): each completed acquisition episode updates
  its agent's local memory ``[G, P, E, R]`` (graph LocalMerge, record induction with
  deterministic evidence). The episode's task roles are kept with its occurrences. No LLM call.
- The global memory is rebuilt from all current local memories (Wilson promotion) whenever
  local memory changed, before the next retrieval: a complete snapshot is published between
  decisions, never during one. Every occurrence is abstracted under its own episode's roles
  (Table 8's caption, B.3.1), so the global memory does not depend on the observation order.
- Every step (``granularity = "step"``) builds the decision query, retrieves ``k_l`` local and
  ``k_g`` global entries, composes them into ground / workflow / reflection and renders the
  seven-line Memory Decision Summary of Appendix G into the ``memco`` prompt slot. The
  ``composition: concat`` ablation (fixed L5+G5 concatenation, Fig. 4(c,d), Table 12) retrieves
  the same entries per step and lists them as stored instead of composing them.
- Evaluation (``eval_views``): each agent in turn, with its own frozen local memory plus the
  shared global memory, on the whole test set. During acquisition an episode uses the memory of
  its own domain's agent.
- A snapshot (schema v2: the occurrence log holds each episode's roles) stores the local
  memories (graph, records, occurrence log) and, for inspection, the global snapshot; loading
  rebuilds the global memory with the *current* promotion settings, so a threshold sweep on a
  saved snapshot rebuilds only the global memory.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Outcome, Trajectory
from memarena.memory.memco.compiled import CompiledPool, GlobalPools, Vocabs, retrieve_compiled
from memarena.memory.memco.compose import compose, concat_context
from memarena.memory.memco.global_memory import GlobalSnapshot, rebuild
from memarena.memory.memco.graph import LocalGraph
from memarena.memory.memco.induction import (
    OccurrenceLog,
    build_transitions,
    induce,
    occurrence_log,
)
from memarena.memory.memco.query import DecisionQuery, build_query
from memarena.memory.memco.records import RecordStore
from memarena.memory.memco.retrieval import (
    FACETS,
    PoolIndex,
    RetrievalSettings,
    Retrieved,
    candidates,
    global_pool,
    index_pool,
    local_pool,
    retrieve_pools,
)
from memarena.memory.memco.roles import adapter_for

log = logging.getLogger(__name__)

PROMOTION_RULES = ("wilson", "empirical")
COMPOSITIONS = ("query_guided", "concat")
SLOT = "memco"


class LocalMemory:
    """One agent's ``M_i^l = [G_i^l, P_i^l, E_i^l, R_i^l]``."""

    def __init__(self) -> None:
        self.graph = LocalGraph()
        self.store = RecordStore()  # its occurrence log is created on first induction

    def counts(self) -> dict[str, int]:
        by_type: dict[str, int] = {}
        for record in self.store:
            by_type[record.type] = by_type.get(record.type, 0) + 1
        return dict(sorted(by_type.items()))

    def to_dict(self) -> dict[str, Any]:
        return {
            "graph": self.graph.to_dict(),
            "records": self.store.to_list(),
            "occurrences": occurrence_log(self.store).to_dict(),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> LocalMemory:
        local = LocalMemory()
        local.graph = LocalGraph.from_dict(d["graph"])
        local.store = RecordStore.from_list(d["records"])
        local.store.occurrences = OccurrenceLog.from_dict(d["occurrences"])  # type: ignore[attr-defined]
        return local


class MemCo(MemoryMethod):
    """MemCo as ``method=memco`` (parameters in ``conf/method/memco.yaml``)."""

    name = "memco"
    schema_version = 2  # v2: per-episode task roles in the occurrence log
    granularity = "step"
    acquisition_policy = "agent"

    def __init__(
        self,
        env_name: str = "",
        alpha: float = 0.05,
        threshold: float = 0.35,
        promotion: str = "wilson",
        use_local: bool = True,
        use_global: bool = True,
        k_local: int = 5,
        k_global: int = 5,
        facets: Sequence[str] = FACETS,
        scorer: str = "facets",
        composition: str = "query_guided",
        max_items_per_role: int = 3,
        max_transitions: int = 8,
        eval_agents: str = "all",
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        if promotion not in PROMOTION_RULES:
            raise ConfigError(
                f"memarena: method.promotion={promotion!r}; valid: {list(PROMOTION_RULES)}."
            )
        if composition not in COMPOSITIONS:
            raise ConfigError(
                f"memarena: method.composition={composition!r}; valid: {list(COMPOSITIONS)}."
            )
        if not 0.0 < float(alpha) < 0.5 or not 0.0 < float(threshold) < 1.0:
            raise ConfigError(
                f"memarena: method.alpha={alpha} must lie in (0, 0.5) and method.threshold="
                f"{threshold} in (0, 1) (the paper uses alpha=0.05, lambda=0.35)."
            )
        if not use_local and not use_global:
            raise ConfigError("memarena: method.use_local and method.use_global are both false.")
        if eval_agents != "all":
            raise ConfigError(f"memarena: method.eval_agents={eval_agents!r}; valid: ['all'].")
        try:
            self.settings = RetrievalSettings(
                facets=tuple(facets), scorer=scorer, k_local=k_local, k_global=k_global
            )
        except ValueError as exc:
            raise ConfigError(f"memarena: method: {exc}") from None
        self.env_name = env_name
        self.adapter = adapter_for(env_name)
        self.alpha, self.threshold, self.promotion = float(alpha), float(threshold), promotion
        self.use_local, self.use_global = bool(use_local), bool(use_global)
        self.composition = composition
        self.max_items_per_role = int(max_items_per_role)
        self.max_transitions = int(max_transitions)
        self.locals: dict[str, LocalMemory] = {}
        self.global_memory = GlobalSnapshot(rule=promotion, alpha=self.alpha, threshold=threshold)
        self._dirty = False
        self._view: str | None = None
        self._entries_cache: dict[str, PoolIndex] = {}  # reference path (ablation scorers)
        self._global_cache: PoolIndex | None = None
        self._vocabs = Vocabs.new()
        self._compiled: dict[str, CompiledPool] = {}  # fast path (facets scorer)
        self._compiled_global: GlobalPools | None = None

    # -- memory construction (no LLM call) -------------------------------------------------
    def _observe(self, trajectory: Trajectory, outcome: Outcome) -> None:
        task = trajectory.task
        local = self.locals.setdefault(task.domain, LocalMemory())
        transitions = build_transitions(trajectory, self.adapter.state_cue, success=outcome.success)
        if not transitions:
            return
        episode = task.id
        if not local.graph.add_episode(transitions, episode):
            return  # already merged (a replay on resume)
        roles = self.adapter.roles(task)
        induce(
            transitions,
            outcome.success,
            task.goal,
            local.store,
            episode,
            scope=task.domain,
            roles=roles,
        )
        self._entries_cache.pop(task.domain, None)
        self._compiled.pop(task.domain, None)
        self._dirty = True

    def rebuild_global(self) -> GlobalSnapshot:
        """Algorithm B.1: the global snapshot rebuilt from every agent's current records."""
        self.global_memory = rebuild(
            {agent: local.store for agent, local in sorted(self.locals.items())},
            adapter=self.adapter,
            alpha=self.alpha,
            threshold=self.threshold,
            rule=self.promotion,
        )
        self._global_cache = None
        self._compiled_global = None
        self._dirty = False
        return self.global_memory

    # -- evaluation views ------------------------------------------------------------------
    def eval_views(self) -> list[str | None]:
        if not self.use_local or not self.locals:
            return [None]  # global-only: every agent sees the same memory
        return sorted(self.locals)

    def set_view(self, view: str | None) -> None:
        if view is not None and view not in self.locals:
            raise ConfigError(
                f"memarena: MemCo has no agent {view!r}; agents: {sorted(self.locals)}."
            )
        self._view = view

    # -- query-guided support --------------------------------------------------------------
    def retrieve(self, query: MemoryQuery) -> MemoryContext:
        if self._dirty:
            self.rebuild_global()
        selected = self._select(query)
        if selected is None:
            return MemoryContext.empty()
        q, picked = selected
        if self.composition == "concat":  # L5+G5: the selections as stored, not composed
            composed = concat_context(picked.local, picked.global_)
        else:
            composed = compose(
                picked.local, picked.global_, q, self.adapter, self.max_items_per_role
            )
        return composed.to_context(SLOT)

    def _select(
        self, query: MemoryQuery, reference: bool = False
    ) -> tuple[DecisionQuery, Retrieved] | None:
        """The decision query and ``S^l``, ``S^g`` (Eq. 7) of the view's agent; None when
        neither source holds an entry. The facets scorer runs on the compiled pools
        (compiled.py); the ablation scorers, and ``reference=True``, on the entry-by-entry
        reference path (retrieval.py), which gives the same selections."""
        agent = self._view if self._view is not None else query.task.domain
        local = self.locals.get(agent) if self.use_local else None
        if self.settings.scorer != "facets":
            reference = True
        if reference:
            record_entries = self._record_entries(agent) if local is not None else PoolIndex()
            global_entries = self._global_entries() if self.use_global else PoolIndex()
        else:
            record_entries = self._compiled_records(agent) if local is not None else []
            global_entries = self._compiled_globals() if self.use_global else []
        if not len(record_entries) and not len(global_entries):
            return None
        q = build_query(query, self.adapter)
        transitions = (
            local.graph.neighborhood(q.state, self.max_transitions) if local is not None else []
        )
        if not reference:
            s = self.settings
            local_sel = (
                retrieve_compiled(q, record_entries, s.k_local, s, self.adapter,
                                  local_pool([], transitions))
                if local is not None else []
            )  # fmt: skip
            global_sel = (
                retrieve_compiled(q, global_entries.for_roles(q.roles), s.k_global, s,
                                  self.adapter)
                if len(global_entries) else []
            )  # fmt: skip
            return q, Retrieved(local_sel, global_sel)
        embedder = self.services.embedder if self.settings.scorer == "cosine" else None
        picked = retrieve_pools(
            q,
            candidates(record_entries, q, self.adapter) + local_pool([], transitions),
            candidates(global_entries, q, self.adapter),
            self.adapter,
            self.settings,
            embedder,
        )
        return q, picked

    def metrics(self) -> dict[str, float]:
        """Promoted global records (the memory-cost numbers of paper Figure 3 a-c, entries and
        words per retrieval call, come from the episode records: ``avg_mem_entries``,
        ``mem_words_per_call``)."""
        return {"global_records": len(self.global_memory)}

    def size(self) -> int:
        """Decision records of every agent plus the promoted global records."""
        if self._dirty:
            self.rebuild_global()
        local = sum(len(m.store) for m in self.locals.values())
        return local + len(self.global_memory)

    def _record_entries(self, agent: str) -> PoolIndex:
        """The agent's records as indexed retrieval entries, built once per memory change."""
        if agent not in self._entries_cache:
            self._entries_cache[agent] = index_pool(local_pool(self.locals[agent].store, []))
        return self._entries_cache[agent]

    def _compiled_records(self, agent: str) -> CompiledPool:
        """The agent's records compiled to arrays, once per memory change."""
        if agent not in self._compiled:
            self._compiled[agent] = CompiledPool(
                local_pool(self.locals[agent].store, []), self._vocabs
            )
        return self._compiled[agent]

    def _compiled_globals(self) -> GlobalPools:
        if self._compiled_global is None:
            self._compiled_global = GlobalPools(
                global_pool(self.global_memory), self._vocabs, self.adapter
            )
        return self._compiled_global

    def _global_entries(self) -> PoolIndex:
        if self._global_cache is None:
            self._global_cache = index_pool(global_pool(self.global_memory))
        return self._global_cache

    # -- snapshots ---------------------------------------------------------------------------
    def freeze(self) -> None:
        if self._dirty:
            self.rebuild_global()
        super().freeze()

    def state_dict(self) -> dict[str, Any]:
        if self._dirty:
            self.rebuild_global()
        return {
            "env": self.env_name,
            "agents": {agent: local.to_dict() for agent, local in sorted(self.locals.items())},
            "global": self.global_memory.to_dict(),
        }

    def load_state_dict(self, state: dict[str, Any]) -> None:
        try:
            self.locals = {a: LocalMemory.from_dict(d) for a, d in state["agents"].items()}
        except ValueError as exc:
            raise ConfigError(f"memarena: MemCo snapshot: {exc}") from None
        self._entries_cache.clear()
        self._compiled.clear()
        self.rebuild_global()  # with the current alpha / threshold / promotion rule

    def summary(self) -> dict[str, Any]:
        """Sizes for inspection: per agent graph size and record counts; global records."""
        if self._dirty:
            self.rebuild_global()
        return {
            "agents": {
                agent: {"graph": local.graph.sizes(), "records": local.counts()}
                for agent, local in sorted(self.locals.items())
            },
            "global": {
                "records": len(self.global_memory),
                "rule": self.global_memory.rule,
                "threshold": self.global_memory.threshold,
                "diagnostics": dict(self.global_memory.diagnostics),
            },
        }
