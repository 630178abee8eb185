"""``EvoGraphMem``: G-Memory's query and interaction graphs with EvoGraph-Mem's failure-aware,
editable insight graph (evograph_mem.txt, Sections 3.2-3.4).

- Insight nodes carry (content, Omega+, Omega-, active); retrieval takes the active insights
  supported by the expanded query set (Eq. 7), scores r = s - lambda*c (Eq. 8-9) and shows the
  top-B (Eq. 10). Archived nodes stay in the graph for audit and are never retrieved.
- After every task the graph controller (the memory-side LLM, JSON-constrained) decides KEEP /
  ARCHIVE / REVISE for each insight shown in that task and, separately, whether to ADD one;
  the state changes are exactly Eq. 13-17 and the edge update Eq. 18. Each decision is
  validated per operation: the valid ones are applied, each invalid one is counted
  (``controller_invalid_ops``; fallback ``evograph_controller_op`` on the backbone); an answer
  that is not a JSON object changes nothing (``controller_fallbacks``). The controller reads
  what Appendix A gives it: the query, the full trajectory (every action and observation,
  verbatim), the final answer, the task feedback and the shown insights
  (:func:`~memarena.memory.evograph.controller.trajectory_text`). The trajectory is cut only
  when the request would overflow the memory LLM's context (``controller_context_tokens``;
  null: the backbone's own ``context_limit``, else 32768), and each cut request is counted
  (``controller_truncations``).
- G-Memory's periodic insight maintenance, per-task insight scoring and cause-of-failure call
  are replaced by the controller; key-step extraction, the query graph and the choice and
  rendering of the solved tasks shown are G-Memory's (shared code), with G-Memory's reference
  retrieval numbers, inherited from ``conf/method/gmemory.yaml`` (and the defaults of
  :class:`~memarena.memory.gmemory.method.GMemory`): k=1 nearest task, hops=1, one solved task
  shown (n_successes=1), links to the 10 nearest tasks at cosine >= 0.85, no similarity cut
  (retrieve_threshold 0.0), LLM re-ranking of the solved candidates on. The insights come from
  the expanded query set (Eq. 7), not G-Memory's nearest-task neighbourhood, and B of Eq. 10 is
  ``top_b=5`` here (G-Memory shows 3).
- ``controller_ops`` restricts the edit operations (Figure 3: add+keep = [KEEP],
  add+keep+archive = [KEEP, ARCHIVE], all = [KEEP, ARCHIVE, REVISE]); ``keep_mode`` says what
  a KEEP does: ``reinforce`` is Eq. 17 (Omega+ | {q}), ``untouched`` leaves the insight as it
  was. Figure 3's add+keep is [KEEP] with ``untouched`` (Section 4.3: it "only appends new
  insights and retains existing ones"; ``ablation=evograph/add_keep_reinforce`` is the other
  reading, where every shown insight gains the query as positive evidence, failed or not).
- ``use_llm=false`` is an offline TEST MODE (no LLM): resolved tasks KEEP what they were shown
  and ADD a rule insight, failed tasks ARCHIVE what they were shown. It is not EvoGraph-Mem.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from memarena.core import ConfigError, Outcome, Trajectory
from memarena.core.memory import Capabilities
from memarena.core.typecheck import Count, NonNegative, Positive
from memarena.memory.evograph.controller import (
    DEFAULT_CONTEXT_TOKENS,
    EDIT_OPS,
    ControllerItem,
    Decision,
    GraphController,
    apply_decision,
    trajectory_text,
)
from memarena.memory.evograph.insight_graph import InsightGraph
from memarena.memory.gmemory.method import PURPOSES as GMEMORY_PURPOSES
from memarena.memory.gmemory.method import GMemory, GMemorySettings, _zero_usage
from memarena.memory.gmemory.query_graph import RESOLVED

__all__ = ["EvoGraphMem", "trajectory_text"]


@dataclass(frozen=True)
class EvoGraphSettings(GMemorySettings):
    """EvoGraph-Mem's keys on top of G-Memory's (``conf/method/evograph.yaml``)."""

    top_b: Count = 5  # B of Eq. 10 (the paper gives no value)
    lam: NonNegative = 1.0  # lambda of Eq. 8
    controller_ops: tuple[Literal["KEEP", "ARCHIVE", "REVISE"], ...] = ("KEEP", "ARCHIVE", "REVISE")
    allow_add: bool = True
    keep_mode: Literal["reinforce", "untouched"] = "reinforce"  # what KEEP does (Figure 3)
    controller_context_tokens: Positive | None = None  # null: the memory backbone's context


class EvoGraphMem(GMemory):
    """EvoGraph-Mem as ``method=evograph`` (parameters in ``conf/method/evograph.yaml``)."""

    name = "evograph"
    schema_version = 1
    explains_failures = False  # the controller reads the trajectory itself
    # no paper or code runs EvoGraph-Mem under per-domain memories: each domain's agent reads its
    # own graph (G-Memory's global-only retrieval under MemCo's protocol is not inherited)
    # G-Memory's retrieval keeps the insights shown, which the controller edits (replayed on
    # resume)
    capabilities = Capabilities(has_global=False, retrieval_mutates=True)
    PURPOSES = (*GMEMORY_PURPOSES, "controller")

    Settings = EvoGraphSettings

    def __init__(self, settings: EvoGraphSettings | None = None, /, **kwargs: Any) -> None:
        # query retrieval is G-Memory's (the code EvoGraph-Mem builds on); B of Eq. 10 its own
        super().__init__(settings, **kwargs)
        s: EvoGraphSettings = self.settings
        ops = tuple(dict.fromkeys(s.controller_ops))
        if not ops:
            raise ConfigError(
                f"memarena: method.controller_ops=[] must be a non-empty subset of "
                f"{list(EDIT_OPS)} (Figure 3: [KEEP], [KEEP, ARCHIVE], all three)."
            )
        self.lam = float(s.lam)
        self.controller_ops = ops
        self.allow_add = s.allow_add
        self.keep_mode = s.keep_mode
        self.controller_context_tokens = s.controller_context_tokens
        self.graph = InsightGraph()
        self.token_usage["controller"] = _zero_usage()
        self.decisions: dict[str, int] = {op: 0 for op in (*EDIT_OPS, "ADD")}
        self.controller_fallbacks = 0
        self.controller_invalid_ops = 0
        self.controller_truncations = 0
        self._controller: GraphController | None = None

    @property
    def controller(self) -> GraphController:
        if self._controller is None:
            llm = self.services.llm
            self._controller = GraphController(
                llm,
                allowed_ops=self.controller_ops,
                allow_add=self.allow_add,
                max_tokens=self.token_caps["controller"],
                context_tokens=context_budget(llm, self.controller_context_tokens),
                keep_mode=self.keep_mode,
            )
        return self._controller

    # -- hooks of GMemory ----------------------------------------------------------------------
    def insight_queries(self, embedding: np.ndarray, expanded: list[str]) -> list[str]:
        """Eq. 7 takes the candidates from the expanded query set ``Q~``."""
        return expanded

    def select_insights(self, expanded: list[str], top_ids: list[str]) -> list[tuple[str, str]]:
        """Eq. 7-10: active candidates supported by the expanded set, top-B by s - lambda*c."""
        return [
            (i, self.graph.get(i).content)
            for i in self.graph.select(expanded, self.lam, self.top_b)
        ]

    def insight_content(self, insight_id: str) -> str | None:
        """The content of a node of the insight graph (None: not one of its nodes)."""
        return self.graph.get(insight_id).content if insight_id in self.graph else None

    def after_task(
        self,
        query_id: str,
        trajectory: Trajectory,
        outcome: Outcome,
        retrieved_insight_ids: list[str],
    ) -> None:
        """The graph controller's post-task edit (Section 3.4), applied at once."""
        resolved = outcome.success
        shown = [i for i in retrieved_insight_ids if i in self.graph]
        if self.use_llm:
            decision = self._llm_decision(trajectory, outcome, shown)
        else:
            decision = self._rule_decision(trajectory, resolved, shown)
        self.controller_truncations += int(decision.truncated)
        if decision.fallback:
            self.controller_fallbacks += 1
            return
        self.controller_invalid_ops += len(decision.invalid)
        for op in decision.ops.values():
            self.decisions[op] += 1
        self.decisions["ADD"] += int(decision.add)
        apply_decision(self.graph, decision, query_id, resolved, self.keep_mode)

    def _llm_decision(self, trajectory: Trajectory, outcome: Outcome, shown: list[str]) -> Decision:
        item = ControllerItem(
            query=trajectory.task.goal,
            status=RESOLVED if outcome.success else "Failed",
            trajectory=trajectory,  # in full (trajectory_text), cut only past the context
            insights=[(i, self.graph.get(i).content) for i in shown],
            outcome=outcome,
        )
        before = dict(self.controller.stats)
        (decision,) = self.controller.decide([item])
        usage = self.token_usage["controller"]
        for key in ("calls", "requests", "prompt_tokens", "completion_tokens"):
            usage[key] = usage.get(key, 0) + self.controller.stats[key] - before[key]
        return decision

    def _rule_decision(self, trajectory: Trajectory, resolved: bool, shown: list[str]) -> Decision:
        allowed = self.controller_ops
        op = "KEEP" if resolved or "ARCHIVE" not in allowed else "ARCHIVE"
        actions = [s.action for s in trajectory.steps if s.feedback.state_changed][:4]
        text = f"For '{trajectory.task.goal}', a working order was: {' -> '.join(actions)}"
        return Decision(
            ops={i: op for i in shown},
            retrieved=list(shown),
            add=self.allow_add and resolved and bool(actions),
            new_insight=text if resolved and actions else "",
        )

    # -- reporting and snapshots -----------------------------------------------------------------
    def metrics(self) -> dict[str, Any]:
        out = super().metrics()
        active = len(self.graph.active_ids())
        out.update(
            memory_insights=len(self.graph),
            memory_insights_active=active,
            memory_insights_archived=len(self.graph) - active,
            memory_insight_edges=len(self.graph.edges),
            controller_decisions=dict(self.decisions),
            controller_fallbacks=self.controller_fallbacks,
            controller_invalid_ops=self.controller_invalid_ops,
            controller_truncations=self.controller_truncations,
        )
        return out

    def size(self) -> int:
        """Stored tasks plus active insights."""
        return len(self.queries) + len(self.graph.active_ids())

    def state_dict(self) -> dict[str, Any]:
        state = super().state_dict()
        graph = self.graph.to_dict()
        state.update(
            insights=graph["nodes"],
            edges=graph["edges"],
            insight_graph={k: v for k, v in graph.items() if k not in ("nodes", "edges")},
            decisions=dict(self.decisions),
            controller_fallbacks=self.controller_fallbacks,
            controller_invalid_ops=self.controller_invalid_ops,
            controller_truncations=self.controller_truncations,
        )
        return state

    def load_state_dict(self, state: dict[str, Any]) -> None:
        gstate = dict(state)
        gstate["insights"] = {}  # G-Memory's own insight graph is unused here
        super().load_state_dict(gstate)
        self.token_usage.setdefault("controller", _zero_usage())
        meta = state.get("insight_graph", {})
        self.graph = InsightGraph.from_dict(
            {**meta, "nodes": state.get("insights", []), "edges": state.get("edges", [])}
        )
        self.decisions = {op: 0 for op in (*EDIT_OPS, "ADD")} | dict(state.get("decisions", {}))
        self.controller_fallbacks = int(state.get("controller_fallbacks", 0))
        self.controller_invalid_ops = int(state.get("controller_invalid_ops", 0))
        self.controller_truncations = int(state.get("controller_truncations", 0))


def context_budget(llm: Any, configured: int | None) -> int:
    """The controller's context in tokens: ``configured`` (``method.controller_context_tokens``)
    or, when null, the memory backbone's own ``context_limit`` (hf: the model's
    ``max_position_embeddings``; vllm: ``max_model_len``), else :data:`DEFAULT_CONTEXT_TOKENS`.
    A configured value larger than the backbone's limit is lowered to it."""
    limit = getattr(llm, "context_limit", None)
    limit = int(limit) if isinstance(limit, int) and limit > 0 else None
    if configured is None:
        return limit or DEFAULT_CONTEXT_TOKENS
    return min(int(configured), limit) if limit else int(configured)
