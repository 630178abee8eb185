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
- ``ehc_ff``: enforced hill climbing with hFF's helpful actions, depth-first on plateaus; its
  work grows with the plan's length, so it plans problems of hundreds of objects in seconds
  (gripper with 300 balls: 2,404 ground actions, a 915-step plan from ~900 evaluations).

A problem whose size (ground actions x goal atoms) is over ``large_size`` runs ``ehc_ff``
alone: the searches above expand up to their node limits at a cost per node that grows with
the problem (a 300-ball gripper ran for more than 5 minutes), while every generated problem
of the default sizes and every AgentBoard problem is under half the limit and keeps the
portfolio (and its plans). When ``ehc_ff`` fails too, the warning names the problem's size.

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
    ehc,
    gbfs,
    goal_agenda,
    wastar,
)
from memarena.envs.pddl.simulator import GroundedProblem

log = logging.getLogger(__name__)

STRATEGIES = ("bfs", "wastar_ff", "gbfs_ff", "agenda_add", "gbfs_add", "ehc_ff")
DEFAULT_STRATEGIES = ("bfs", "wastar_ff", "agenda_add")
DEFAULT_NODE_LIMITS = {
    "bfs": 50000,
    "wastar_ff": 5000,
    "gbfs_ff": 5000,
    "agenda_add": 2000,
    "gbfs_add": 20000,
    "ehc_ff": 5000,  # heuristic evaluations; ~2 ms each on a 300-ball gripper
}
# ground actions x goal atoms over which only the scalable strategy runs (see the docstring);
# the largest default-size and AgentBoard problems: 4,422 (tyreworld), 4,338 (barman)
LARGE_SIZE = 10000
LARGE_STRATEGIES = ("ehc_ff",)


@dataclass(frozen=True)
class PlannerConfig:
    """Strategies tried in order and the node (expansion) limit of each."""

    strategies: tuple[str, ...] = DEFAULT_STRATEGIES
    node_limits: tuple[tuple[str, int], ...] = tuple(sorted(DEFAULT_NODE_LIMITS.items()))
    weight: float = 2.0
    repair_limit: int = 2000
    large_size: int = LARGE_SIZE

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
        goals = bin(self.enc.goal).count("1")
        self.size = len(self.enc.pre) * max(goals, 1)
        self.large = self.size > config.large_size
        self.described = (
            f"{len(problem.objects)} objects, {len(self.enc.pre)} ground actions, {goals} goal "
            f"atoms: size {self.size}"
        )
        if self.large:
            log.info(
                "%s/%s is a large problem (%s > %d): the expert plans with %s",
                problem.domain_name, problem.problem_name, self.described, config.large_size,
                "/".join(LARGE_STRATEGIES),
            )  # fmt: skip

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
        if strategy == "ehc_ff":
            return ehc(enc, start, goal, self._heuristic("ff"), limit)
        return goal_agenda(enc, start, goal, limit)

    def _search(self, start: int) -> tuple[list[int] | None, str | None, int]:
        expansions = 0
        for strategy in LARGE_STRATEGIES if self.large else self.config.strategies:
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
                "expert found no plan for %s/%s (%s%s) after %d expansions (%.2fs)",
                self.problem.domain_name,
                self.problem.problem_name,
                self.described,
                f", over the planner's large_size {self.config.large_size}: "
                f"{'/'.join(LARGE_STRATEGIES)} only"
                if self.large
                else "",
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
