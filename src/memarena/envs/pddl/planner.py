"""The expert: a portfolio planner with a per-problem policy cache.

The portfolio tries its strategies in order, each within a node (expansion) limit, and keeps
the first plan it finds:

- ``bfs``: breadth-first search, optimal; small problems finish within its limit.
- ``wastar_ff``: weighted A* with hFF (weight ``weight``); good plans on gripper, blocksworld
  and tyreworld.
- ``gbfs_ff``: greedy best-first with hFF.
- ``agenda_add``: goal agenda, one more goal atom per stage, greedy best-first with hAdd per
  stage; solves barman, where hFF and whole-goal hAdd plateau.
- ``gbfs_add``: greedy best-first with hAdd over the whole goal.

Node limits (not time limits) keep plans identical on every machine. :class:`Expert` remembers,
for every state on a plan it found, the next action: asking in a known state is a dict lookup.
In a state off every known plan (the agent deviated) it first looks for the shortest way back
onto a known plan (breadth-first, ``repair_limit`` expansions), then runs the portfolio.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

from memarena.envs.pddl.search import (
    Encoding,
    RelaxedHeuristic,
    SearchResult,
    bfs,
    gbfs,
    goal_agenda,
    wastar,
)
from memarena.envs.pddl.simulator import GroundedProblem

log = logging.getLogger(__name__)

STRATEGIES = ("bfs", "wastar_ff", "gbfs_ff", "agenda_add", "gbfs_add")
DEFAULT_STRATEGIES = ("bfs", "wastar_ff", "agenda_add")
DEFAULT_NODE_LIMITS = {
    "bfs": 50000,
    "wastar_ff": 5000,
    "gbfs_ff": 5000,
    "agenda_add": 2000,
    "gbfs_add": 20000,
}


@dataclass(frozen=True)
class PlannerConfig:
    """Strategies tried in order and the node (expansion) limit of each."""

    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    node_limits: tuple[tuple[str, int], ...] = tuple(sorted(DEFAULT_NODE_LIMITS.items()))
    weight: float = 2.0
    repair_limit: int = 2000

    @staticmethod
    def build(
        strategies: Sequence[str],
        node_limits: Mapping[str, int],
        weight: float = 2.0,
        repair_limit: int = 2000,
    ) -> PlannerConfig:
        """Validated config; raises ValueError naming an unknown strategy."""
        unknown = [s for s in [*strategies, *node_limits] if s not in STRATEGIES]
        if unknown:
            raise ValueError(f"unknown planner strategies {unknown}; valid: {list(STRATEGIES)}")
        if not strategies:
            raise ValueError("the planner needs at least one strategy")
        limits = {**DEFAULT_NODE_LIMITS, **{str(k): int(v) for k, v in node_limits.items()}}
        return PlannerConfig(
            tuple(strategies), tuple(sorted(limits.items())), float(weight), int(repair_limit)
        )

    def limit(self, strategy: str) -> int:
        return dict(self.node_limits)[strategy]


@dataclass
class PlanResult:
    actions: list[str] | None
    strategy: str | None
    expansions: int
    seconds: float


@dataclass
class PlannerStats:
    searches: int = 0
    failures: int = 0
    seconds: float = 0.0
    by_strategy: dict[str, int] = field(default_factory=dict)


class Expert:
    """Plans for one grounded problem and caches the next action of every state it planned."""

    def __init__(self, problem: GroundedProblem, config: PlannerConfig) -> None:
        self.problem = problem
        self.config = config
        self.enc = Encoding(problem)
        self._policy: dict[int, int | None] = {}  # state mask -> op index (None: no plan)
        self._h: dict[str, RelaxedHeuristic] = {}
        self.stats = PlannerStats()

    def _heuristic(self, kind: str) -> RelaxedHeuristic:
        if kind not in self._h:
            self._h[kind] = RelaxedHeuristic(self.enc, self.enc.goal, ff=(kind == "ff"))
        return self._h[kind]

    def _run(self, strategy: str, start: int) -> SearchResult:
        enc, goal, limit = self.enc, self.enc.goal, self.config.limit(strategy)
        if strategy == "bfs":
            return bfs(enc, start, goal, limit)
        if strategy == "wastar_ff":
            return wastar(enc, start, goal, self._heuristic("ff"), limit, self.config.weight)
        if strategy == "gbfs_ff":
            return gbfs(enc, start, goal, self._heuristic("ff"), limit)
        if strategy == "gbfs_add":
            return gbfs(enc, start, goal, self._heuristic("add"), limit)
        return goal_agenda(enc, start, goal, limit)

    def _search(self, start: int) -> tuple[list[int] | None, str | None, int]:
        expansions = 0
        for strategy in self.config.strategies:
            res = self._run(strategy, start)
            expansions += res.expansions
            if res.plan is not None:
                return res.plan, strategy, expansions
        return None, None, expansions

    def _repair(self, start: int) -> tuple[list[int] | None, str | None, int]:
        """Shortest way from ``start`` onto a state with a known next action."""
        known = {s for s, o in self._policy.items() if o is not None}
        if not known or self.config.repair_limit <= 0:
            return None, None, 0
        res = bfs(self.enc, start, self.enc.goal, self.config.repair_limit, known)
        return res.plan, ("repair" if res.plan is not None else None), res.expansions

    def plan(self, state: frozenset[str], repair: bool = False) -> PlanResult:
        """Search a plan from ``state`` and record it in the policy.

        With ``repair``, the plan may end on a state whose next action is already known (the
        returned actions then lead back onto an earlier plan, not to the goal).
        """
        t0 = time.perf_counter()
        start = self.enc.mask(state)
        ops, strategy, expansions = self._repair(start) if repair else (None, None, 0)
        if ops is None:
            ops, strategy, more = self._search(start)
            expansions += more
        seconds = time.perf_counter() - t0
        self.stats.searches += 1
        self.stats.seconds += seconds
        if ops is None:
            self.stats.failures += 1
            self._policy[start] = None
            # from the initial state this is a planner limit worth a warning; later it is
            # usually a dead end the agent walked into (barman)
            level = logging.WARNING if state == self.problem.initial_state else logging.INFO
            log.log(
                level,
                "expert found no plan for %s/%s after %d expansions (%.2fs)",
                self.problem.domain_name,
                self.problem.problem_name,
                expansions,
                seconds,
            )
            return PlanResult(None, None, expansions, seconds)
        self.stats.by_strategy[strategy] = self.stats.by_strategy.get(strategy, 0) + 1
        s = start
        for o in ops:
            self._policy.setdefault(s, o)
            s = (s & self.enc.keep[o]) | self.enc.add[o]
        log.debug(
            "planned %s/%s with %s: %d steps, %d expansions, %.3fs",
            self.problem.domain_name,
            self.problem.problem_name,
            strategy,
            len(ops),
            expansions,
            seconds,
        )
        return PlanResult(self._texts(ops), strategy, expansions, seconds)

    def _texts(self, ops: list[int]) -> list[str]:
        actions = self.problem.actions
        return [actions[self.enc.op_action[o]].text for o in ops]

    def next_action(self, state: frozenset[str], search: bool = True) -> str | None:
        """The next action of a plan from ``state``; None at the goal or when none is found.

        With ``search=False`` only the cache answers (None for a state never planned).
        """
        s = self.enc.mask(state)
        if s & self.enc.goal == self.enc.goal:
            return None
        if s not in self._policy:
            if not search:
                return None
            self.plan(state, repair=True)
        o = self._policy.get(s)
        return None if o is None else self._texts([o])[0]


@lru_cache(maxsize=512)
def get_expert(problem: GroundedProblem, config: PlannerConfig) -> Expert:
    """One expert per (grounded problem, planner config) in this process."""
    return Expert(problem, config)
