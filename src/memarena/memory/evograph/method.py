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
  that is not a JSON object changes nothing (``controller_fallbacks``). The controller reads a
  compressed trajectory that keeps the first steps, the failing steps, the last step and the
  final outcome (:func:`~memarena.memory.evograph.controller.trajectory_summary`).
- G-Memory's periodic insight maintenance, per-task insight scoring and cause-of-failure call
  are replaced by the controller; key-step extraction, the query graph and the choice and
  rendering of the solved tasks shown are G-Memory's (shared code). Its retrieval numbers stay
  memarena's earlier ones (k=3, two solved tasks, link cosine 0.7, no similarity cut, no LLM
  re-ranking: the defaults below and ``conf/method/evograph.yaml``); the insights come from the
  expanded query set (Eq. 7), not G-Memory's nearest-task neighbourhood.
- ``controller_ops`` restricts the edit operations (Figure 3: add+keep = [KEEP],
  add+keep+archive = [KEEP, ARCHIVE], all = [KEEP, ARCHIVE, REVISE]).
- ``use_llm=false`` is an offline TEST MODE (no LLM): resolved tasks KEEP what they were shown
  and ADD a rule insight, failed tasks ARCHIVE what they were shown. It is not EvoGraph-Mem.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from memarena.core import ConfigError, Outcome, Trajectory
from memarena.memory.evograph.controller import (
    EDIT_OPS,
    ControllerItem,
    Decision,
    GraphController,
    apply_decision,
    trajectory_summary,
)
from memarena.memory.evograph.insight_graph import InsightGraph
from memarena.memory.gmemory.method import PURPOSES as GMEMORY_PURPOSES
from memarena.memory.gmemory.method import GMemory, _zero_usage
from memarena.memory.gmemory.query_graph import RESOLVED

__all__ = ["EvoGraphMem", "trajectory_summary"]


class EvoGraphMem(GMemory):
    """EvoGraph-Mem as ``method=evograph`` (parameters in ``conf/method/evograph.yaml``)."""

    name = "evograph"
    schema_version = 1
    explains_failures = False  # the controller reads the trajectory itself
    # no paper or code runs EvoGraph-Mem under per-domain memories: each domain's agent reads its
    # own graph (G-Memory's global-only retrieval under MemCo's protocol is not inherited)
    has_global = False
    PURPOSES = (*GMEMORY_PURPOSES, "controller")

    def __init__(
        self,
        lam: float = 1.0,
        controller_ops: Sequence[str] = EDIT_OPS,
        allow_add: bool = True,
        top_b: int = 5,
        **kwargs: Any,
    ) -> None:
        # query retrieval is G-Memory's (the code EvoGraph-Mem builds on); B of Eq. 10 its own
        super().__init__(top_b=top_b, **kwargs)
        ops = tuple(str(o).upper() for o in controller_ops)
        if not ops or any(o not in EDIT_OPS for o in ops):
            raise ConfigError(
                f"memarena: method.controller_ops={list(controller_ops)} must be a non-empty "
                f"subset of {list(EDIT_OPS)} (Figure 3: [KEEP], [KEEP, ARCHIVE], all three)."
            )
        if float(lam) < 0:
            raise ConfigError(f"memarena: method.lam={lam} must be >= 0 (Eq. 8).")
        self.lam = float(lam)
        self.controller_ops = ops
        self.allow_add = bool(allow_add)
        self.graph = InsightGraph()
        self.token_usage["controller"] = _zero_usage()
        self.decisions: dict[str, int] = {op: 0 for op in (*EDIT_OPS, "ADD")}
        self.controller_fallbacks = 0
        self.controller_invalid_ops = 0
        self._controller: GraphController | None = None

    @property
    def controller(self) -> GraphController:
        if self._controller is None:
            self._controller = GraphController(
                self.services.llm,
                allowed_ops=self.controller_ops,
                allow_add=self.allow_add,
                max_tokens=self.token_caps["controller"],
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
        if decision.fallback:
            self.controller_fallbacks += 1
            return
        self.controller_invalid_ops += len(decision.invalid)
        for op in decision.ops.values():
            self.decisions[op] += 1
        self.decisions["ADD"] += int(decision.add)
        apply_decision(self.graph, decision, query_id, resolved)

    def _llm_decision(self, trajectory: Trajectory, outcome: Outcome, shown: list[str]) -> Decision:
        item = ControllerItem(
            query=trajectory.task.goal,
            status=RESOLVED if outcome.success else "Failed",
            trajectory=trajectory_summary(trajectory, outcome),
            insights=[(i, self.graph.get(i).content) for i in shown],
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
