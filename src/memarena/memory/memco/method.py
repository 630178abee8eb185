"""``MemCo``: the memory method that wires local memory, global promotion and query-guided
support together (paper Sections 3.3-3.5, Appendix B).

- One *agent* per source domain (``task.domain``): each completed acquisition episode updates
  its agent's local memory ``[G, P, E, R]`` (graph LocalMerge, record induction with
  deterministic evidence). The episode's task roles are kept with its occurrences. No LLM call.
- The global memory is built once, from the complete local memories, when acquisition ends
  (Appendix F.5; the code's ``rebuild_memco_global_from_locals`` runs once after every domain
  finished training): acquisition retrieves local memory only. It is published by
  :meth:`freeze`, by loading a snapshot, or when a phase other than ``acquire`` begins; from
  then on it is rebuilt from all current local memories (Wilson promotion) whenever local
  memory changed, before the next retrieval (a learning evaluation), never during a decision.
  ``global_during_acquisition: true`` is the ablation that publishes it during acquisition too
  (rebuilt before each retrieval), memarena's earlier behaviour. Every occurrence is abstracted
  under its own episode's roles (Table 8's caption, B.3.1), so the global memory does not
  depend on the observation order.
- Every step (``granularity = "step"``) builds the decision query, retrieves ``k_l`` local and
  ``k_g`` global entries, composes them into ground / workflow / reflection and renders the
  seven-line Memory Decision Summary of Appendix G into the ``memco`` prompt slot. The
  ``composition: concat`` ablation (fixed L5+G5 concatenation, Fig. 4(c,d), Table 12) retrieves
  the same entries per step and lists them as stored instead of composing them. A plan whose
  next step the env does not list is never shown with it (B.4.4; ``unavailable_next_local`` /
  ``unavailable_next_global``, retrieval.py).
- Evaluation (``eval_views``): each agent in turn, with its own frozen local memory plus the
  shared global memory, on the whole test set. During acquisition an episode uses the memory of
  its own domain's agent.
- A snapshot (schema v2: the occurrence log holds each episode's roles) stores the local
  memories (graph, records, occurrence log) and, for inspection, the global snapshot; loading
  rebuilds the global memory with the *current* promotion settings, so a threshold sweep on a
  saved snapshot rebuilds only the global memory.

What the released MemCo code cannot give (SYannL/nvdamas, read at every stored commit): its MemCo
composes the prompt through a text-loss router that ``MemCoMASMemory.__post_init__``
(``mas/memory/mas_memory/memco.py``, e.g. 01fb3103) forces on in every run (any other
``memco_router`` falls back to ``textloss``), and the public repository is incomplete:
``memco_backend/alfworld_adapter.py``, imported unguarded at module level by
``memco_backend/__init__.py`` (3b8541a1) and ``construction_graph.py`` (4245b029, 186acbed,
9edae1ce), is absent at every stored commit, so ``_memco_base`` / ``memco`` cannot be imported;
and the Wilson ``GlobalPromoter(policy=, wilson_alpha=, wilson_threshold=)`` that
``_memco_base.py`` (3b8541a1) calls exists only in two stored ``construction_graph.py``
versions (4a93e045, 9edae1ce) that still import the missing adapter. So MemCo's row is the
paper's description (its Sections 3.3-3.5 and Appendix B), not a run of the released code; the
baselines' rows follow the released code where it runs (``*_as_released``, ``gmemory_memco``,
``amem_lite``). ``run_memco.sh``'s ``--batch_size 10`` has no effect in the script it calls
(``scripts/eval_collab_multidomain_global.py`` at 5fb7749e only writes it into its report):
tasks run one at a time in list order, each seeing the memory as the previous one left it, as
memarena runs them (``update_every: 1``).
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from typing import Annotated, Any, Literal

from memarena.core import ConfigError, MemoryContext, MemoryMethod, MemoryQuery, Outcome, Trajectory
from memarena.core.memory import Capabilities
from memarena.core.settings import MethodSettings, reading
from memarena.core.typecheck import Count, Range
from memarena.memory.memco.base import GlobalRecord
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


@dataclass(frozen=True)
class MemCoSettings(MethodSettings):
    """MemCo's keys (``conf/method/memco.yaml`` gives each one's source; the ablations of
    Tables 11-14 set them)."""

    # one-sided Wilson level
    alpha: Annotated[float, Range(gt=0, lt=0.5)] = reading(0.05, paper=0.05, released=0.05)
    # lambda, the promotion bound: the paper's and the released runs' 0.35 (0.5, the released
    # GlobalPromoter's own default, is what its unit test promotes under)
    threshold: Annotated[float, Range(gt=0, lt=1)] = reading(0.35, paper=0.35, released=0.35)
    promotion: Literal["wilson", "empirical"] = "wilson"
    # which failure records may be promoted, and how an anti-pattern's episodes vote: the
    # paper's reading (default: MemCo's row is the paper's method, its released code cannot run
    # as published) or the released code's (records.py maps its types onto memarena's)
    promotion_types: Literal["paper", "released"] = reading(
        "paper", paper="paper", released="released"
    )
    anti_pattern_counting: Literal["paper", "released"] = reading(
        "paper", paper="paper", released="released"
    )
    use_local: bool = True
    use_global: bool = True
    k_local: Count = 5
    k_global: Count = 5
    facets: tuple[Literal["x", "p", "g"], ...] = ("x", "p", "g")
    scorer: Literal["facets", "cosine", "bm25"] = "facets"
    composition: Literal["query_guided", "concat"] = "query_guided"
    max_items_per_role: Count = 3
    max_transitions: Count = 8
    eval_agents: Literal["all"] = "all"
    unavailable_next_local: Literal["drop", "hide"] = "drop"
    unavailable_next_global: Literal["drop", "hide"] = "hide"
    global_during_acquisition: bool = False
    global_exclude_owner: bool = True
    local_weight: Annotated[float, Range(gt=0)] = 1.0  # MemCo's code: 1.0
    global_weight: Annotated[float, Range(gt=0)] = 0.65  # MemCo's code: 0.65
    history_steps_by_env: dict[str, int] | None = None
    # the released agent loop: each kept step's observation whitespace-collapsed and cut to this
    # many characters, per benchmark (nvdamas memco.py, ScienceWorld's compaction: 520)
    history_observation_chars_by_env: dict[str, int] | None = None


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
    """MemCo as ``method=memco`` (parameters in ``conf/method/memco.yaml``).

    Mechanisms of MemCo's released code (SYannL/nvdamas) that the paper does not describe.
    Locations are ``file::function`` (memco.py: ``mas/memory/mas_memory/memco.py``; eval:
    ``scripts/eval_collab_multidomain_global.py``; llm.py: ``mas/llm.py``). "Paper runs":
    ``scripts/run_memco.sh`` -> the eval script, the code that produced the paper's numbers.

    ====================  =====================================  ===============  =============
    mechanism             reference location                     memarena         paper numbers
    ====================  =====================================  ===============  =============
    text-loss router      memco.py::_memco_textloss_route,       left out         all (on in
    (``--memco_router     _memco_section_textloss,                                every paper
    textloss``)           _memco_select_composed_sections,                        run)
                          _memco_should_emit_summary
    global weight 0.65,   memco.py::__post_init__ (memco_local_  ``local_weight:  ALFWorld
    local 1.0             weight / memco_global_weight),         1.0``,           (source
                          _memco_source_base_evidence_rows,      ``global_weight: search
                          _memco_fever_direct_retrieval_hint     0.65``           priors)
    exclude owner         memco.py::__post_init__ (memco_global_ ``global_        all (global
                          exclude_owner=True),                   exclude_owner:   memory on)
                          _memco_keep_global_item_for_owner      true``
    PDDL action_guard     eval::_resolve_memco_dataset_policy,   left out         PDDL, Qwen
                          main (NV_MEMCO_PDDL_POLICY); llm.py::                   backbones
                          GPTChat._inject_action_only_guard
    FEVER adaptive_cache  eval::main (NV_MEMCO_FEVER_POLICY,     left out         FEVER
    policy                FEVER_WIKI_CACHE); memco.py::
                          _memco_fever_policy_enabled; memco_
                          backend/fever_adapter.py; llm.py
    ScienceWorld action   memco.py::repair_action,               left out         none
    hook                  _memco_scienceworld_repair_action
    ====================  =====================================  ===============  =============

    - Text-loss router: the code scores candidate prompt *sections* (phase policy, local
      grounding, source roles, global workflow, failure avoidance) with hand-set losses, keeps
      at most one section per slot under per-slot loss caps, applies FEVER / PDDL string gates
      and an emit gate, and renders the seven-line summary from what survives. It is the code's
      composition stage; memarena composes as the paper's Appendix B.4.4 / G describe (support
      roles, binding, local override, per-role budget). Not reproduced: its losses and gates
      are keyed to the code's own artifact types (source-type priors, scene relations, FEVER
      claim patterns) that the paper's records do not have.
    - Source weights: in Compose (compose.py, step 4), where local and global entries compete
      for one role budget; the code weights its source-evidence rows (ALFWorld search priors)
      and, with the FEVER policy off, its FEVER route-template counts.
    - Exclude owner: a global record whose contributing agents are only the viewing agent is
      not retrieved for that agent (its own local memory holds that evidence); records without
      sources are kept. Applied whenever an agent owns the view (local memory in use).
    - PDDL action_guard: a backbone-side prompt prefix (Qwen only: "/no_think" and an
      instruction to output exactly one valid command) on every user message; without the
      policy the code adds the same prefix to action prompts anyway, so it changes only
      prompts that are not the agent's action prompt. Not a memory mechanism: memarena's Qwen3
      backbones turn thinking off through ``chat_template_kwargs`` for every method alike.
    - FEVER adaptive_cache: on in the paper's FEVER runs (the eval script sets it for
      ``--dataset_family fever``). It moves the code's FEVER memory from direct pattern hints
      to phase-gated items of the text-loss router, changes its FEVER graph adapter, gives Qwen
      the generic one-command prefix instead of the FEVER action-format prefix, and sets a
      Wikipedia cache file. Not reproduced: it depends on the router and the code's own FEVER
      artifact types; the prompt prefix is backbone-side.
    - ScienceWorld action hook: returns the model's action unchanged (it only logs an
      "advisory" trace): no effect on actions. The code's other ScienceWorld-only pieces (up to
      two retrieved score-improving trajectory fragments of similar tasks as "execution
      patterns"; the trajectory shown to the agent cut to its last six steps, observations to
      520 characters) change ScienceWorld prompts and are not reproduced either. The hook's
      ALFWorld branch rewrites actions (delivery repair, object guard, search bias); the code's
      class docstring calls MemCo "prompt-only by default"; not reproduced.
    """

    name = "memco"
    schema_version = 2  # v2: per-episode task roles in the occurrence log
    # per-agent locals and the global memory are MemCo's own
    capabilities = Capabilities(granularity="step", own_domain_memories=True)

    Settings = MemCoSettings

    def __init__(self, settings: MemCoSettings | None = None, /, **kwargs: Any) -> None:
        super().__init__(settings, **kwargs)
        s: MemCoSettings = self.settings
        if not s.use_local and not s.use_global:
            raise ConfigError("memarena: method.use_local and method.use_global are both false.")
        self.retrieval = RetrievalSettings(
            facets=tuple(s.facets),
            scorer=s.scorer,
            k_local=s.k_local,
            k_global=s.k_global,
            unavailable_local=s.unavailable_next_local,
            unavailable_global=s.unavailable_next_global,
        )
        self.adapter = adapter_for(self.env_name)
        self.alpha, self.threshold, self.promotion = float(s.alpha), float(s.threshold), s.promotion
        self.promotion_types = s.promotion_types
        self.anti_pattern_counting = s.anti_pattern_counting
        self.use_local, self.use_global = s.use_local, s.use_global
        self.composition = s.composition
        self.max_items_per_role = s.max_items_per_role
        self.max_transitions = s.max_transitions
        # the agent's in-task window MemCo imposes per benchmark (its code's summarize override,
        # _memco_compact_scienceworld_trajectory: the last 6 steps, observations collapsed and
        # cut to 520 characters, a line counting the steps left out; ScienceWorld only)
        self.history_steps = (s.history_steps_by_env or {}).get(self.env_name)
        by_env = s.history_observation_chars_by_env or {}
        self.history_observation_chars = by_env.get(self.env_name)
        self.global_during_acquisition = s.global_during_acquisition
        self.global_exclude_owner = s.global_exclude_owner
        self.local_weight, self.global_weight = float(s.local_weight), float(s.global_weight)
        self.locals: dict[str, LocalMemory] = {}
        self.global_memory = GlobalSnapshot(
            rule=s.promotion, alpha=self.alpha, threshold=self.threshold,
            promotion_types=s.promotion_types, anti_pattern_counting=s.anti_pattern_counting,
        )  # fmt: skip
        self._dirty = False
        self._published = False  # acquisition ended: the global memory exists (item F.5)
        self._view: str | None = None
        self._entries_cache: dict[str, PoolIndex] = {}  # reference path (ablation scorers)
        # global pools per owner (None: every record; an agent: without its own-only records)
        self._global_cache: dict[str | None, PoolIndex] = {}
        self._vocabs = Vocabs.new()
        self._compiled: dict[str, CompiledPool] = {}  # fast path (facets scorer)
        self._compiled_global: dict[str | None, GlobalPools] = {}

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
            promotion_types=self.promotion_types,
            anti_pattern_counting=self.anti_pattern_counting,
        )
        self._global_cache.clear()
        self._compiled_global.clear()
        self._dirty = False
        return self.global_memory

    def global_published(self) -> bool:
        """Whether retrieval sees the global memory: once acquisition ended (a phase other than
        ``acquire``, :meth:`freeze`, a loaded snapshot), or always with the
        ``global_during_acquisition`` ablation."""
        return self.global_during_acquisition or self._published or self.phase != "acquire"

    def begin_phase(self, phase: str) -> None:
        super().begin_phase(phase)
        if phase != "acquire":
            self._published = True

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
        selected = self._select(query)
        if selected is None:
            return MemoryContext.empty()
        q, picked = selected
        if self.composition == "concat":  # L5+G5: the selections as stored, not composed
            composed = concat_context(picked.local, picked.global_)
        else:
            composed = compose(
                picked.local, picked.global_, q, self.adapter, self.max_items_per_role,
                self.local_weight, self.global_weight,
            )  # fmt: skip
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
        use_global = self.use_global and self.global_published()
        if use_global and self._dirty:
            self.rebuild_global()  # between decisions, never during one
        # exclude owner: the viewing agent does not get records only it contributed
        owner = agent if self.global_exclude_owner and local is not None else None
        if self.retrieval.scorer != "facets":
            reference = True
        if reference:
            record_entries = self._record_entries(agent) if local is not None else PoolIndex()
            global_entries = self._global_entries(owner) if use_global else PoolIndex()
        else:
            record_entries = self._compiled_records(agent) if local is not None else []
            global_entries = self._compiled_globals(owner) if use_global else []
        if not len(record_entries) and not len(global_entries):
            return None
        q = build_query(query, self.adapter)
        transitions = (
            local.graph.neighborhood(q.state, self.max_transitions) if local is not None else []
        )
        if not reference:
            s = self.retrieval
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
        embedder = self.services.embedder if self.retrieval.scorer == "cosine" else None
        picked = retrieve_pools(
            q,
            candidates(record_entries, q, self.adapter) + local_pool([], transitions),
            candidates(global_entries, q, self.adapter),
            self.adapter,
            self.retrieval,
            embedder,
        )
        return q, picked

    def metrics(self) -> dict[str, float]:
        """Promoted global records (the memory-cost numbers of paper Figure 3 a-c, entries and
        words per retrieval call, come from the episode records: ``avg_mem_entries``,
        ``mem_words_per_call``)."""
        return {"global_records": len(self.global_memory)}

    def size(self) -> int:
        """Decision records of every agent plus the promoted global records (none while
        acquisition runs: the global memory is built when it ends)."""
        local = sum(len(m.store) for m in self.locals.values())
        if not self.global_published():
            return local
        if self._dirty:
            self.rebuild_global()
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

    def _global_records(self, owner: str | None) -> list[GlobalRecord]:
        """The global records retrieval may show ``owner``'s view: all of them (None), or those
        some other agent contributed to (records without sources are kept), as the code's
        ``_memco_keep_global_item_for_owner``."""
        records = list(self.global_memory)
        if owner is None:
            return records
        return [g for g in records if not g.sources or any(s != owner for s in g.sources)]

    def _compiled_globals(self, owner: str | None = None) -> GlobalPools:
        if owner not in self._compiled_global:
            self._compiled_global[owner] = GlobalPools(
                global_pool(self._global_records(owner)), self._vocabs, self.adapter
            )
        return self._compiled_global[owner]

    def _global_entries(self, owner: str | None = None) -> PoolIndex:
        if owner not in self._global_cache:
            self._global_cache[owner] = index_pool(global_pool(self._global_records(owner)))
        return self._global_cache[owner]

    # -- snapshots ---------------------------------------------------------------------------
    def freeze(self) -> None:
        """Acquisition ended: the global memory is built from the complete local memories."""
        self._published = True
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
        self._published = True  # a snapshot holds a finished acquisition
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
