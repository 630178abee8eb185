"""Deterministic forward search on bit-mask states: BFS, GBFS, weighted A*, goal agenda.

The planner works on the fluents of a :class:`GroundedProblem` only: each fluent is one bit of
a Python int, so a state hashes and compares fast and every tie is broken by fixed indices
(no set iteration order, hence the same plans in every process). Heuristics are the classic
delete-relaxation estimates hAdd and hFF, written here on integer indices for the same reason.
"""

from __future__ import annotations

import heapq
import math
from collections import deque
from collections.abc import Container, Iterable
from dataclasses import dataclass

from memarena.envs.pddl.simulator import GroundedProblem

INF = math.inf


def _bits(mask: int) -> list[int]:
    out = []
    while mask:
        low = mask & -mask
        out.append(low.bit_length() - 1)
        mask ^= low
    return out


class Encoding:
    """Fluents as bits and the useful actions (those that add something) as masks."""

    def __init__(self, problem: GroundedProblem) -> None:
        self.facts: list[str] = sorted(problem.fluents)
        self.index = {f: i for i, f in enumerate(self.facts)}
        self.op_action: list[int] = []  # op index -> index in problem.actions
        self.pre: list[int] = []
        self.add: list[int] = []
        self.keep: list[int] = []  # complement of the delete mask
        for k, act in enumerate(problem.actions):
            add = self.mask(act.add)
            if not add:
                continue  # deletes only (or nothing): never useful with positive goals
            self.op_action.append(k)
            self.pre.append(self.mask(act.pre))
            self.add.append(add)
            self.keep.append(~self.mask(act.delete))
        self.goal = self.mask(problem.goals)

    def mask(self, atoms) -> int:
        m = 0
        index = self.index
        for a in atoms:
            i = index.get(a)
            if i is not None:
                m |= 1 << i
        return m

    def successors(self, s: int, ops: Iterable[int] | None = None):
        """Yield (op index, successor state) for every applicable op that changes the state
        (of ``ops`` only, when given)."""
        pre, add, keep = self.pre, self.add, self.keep
        for o in range(len(pre)) if ops is None else ops:
            p = pre[o]
            if s & p == p:
                t = (s & keep[o]) | add[o]
                if t != s:
                    yield o, t


class RelaxedHeuristic:
    """hAdd (``ff=False``) or hFF (``ff=True``) for a fixed goal mask."""

    def __init__(self, enc: Encoding, goal: int, ff: bool = False) -> None:
        self.ff = ff
        n = len(enc.facts)
        self.n = n
        self.pre_idx = [_bits(p) for p in enc.pre]
        self.add_idx = [_bits(a) for a in enc.add]
        self.pre_count = [len(p) for p in self.pre_idx]
        self.pre_of: list[list[int]] = [[] for _ in range(n)]
        for o, pres in enumerate(self.pre_idx):
            for f in pres:
                self.pre_of[f].append(o)
        self.free_ops = [o for o, pres in enumerate(self.pre_idx) if not pres]
        self.goal_idx = _bits(goal)
        self.is_goal = [False] * n
        for g in self.goal_idx:
            self.is_goal[g] = True

    def __call__(self, s: int) -> float:
        return self._evaluate(s, helpful=False)[0]

    def helpful(self, s: int) -> tuple[float, list[int]]:
        """hFF of ``s`` and its helpful ops: the ops of the relaxed plan applicable in ``s``
        (their preconditions hold there), by index."""
        return self._evaluate(s, helpful=True)

    def _evaluate(self, s: int, helpful: bool) -> tuple[float, list[int]]:
        dist = [INF] * self.n
        ach = [-1] * self.n
        heap: list[tuple[float, int]] = []
        for f in _bits(s):
            dist[f] = 0
            heap.append((0, f))
        counter = list(self.pre_count)
        cost = [0.0] * len(counter)
        add_idx = self.add_idx

        def fire(o: int, c: float) -> None:
            for g in add_idx[o]:
                if c < dist[g]:
                    dist[g] = c
                    ach[g] = o
                    heapq.heappush(heap, (c, g))

        for o in self.free_ops:
            fire(o, 1)
        heapq.heapify(heap)
        goals_left = len(self.goal_idx)
        is_goal, pre_of = self.is_goal, self.pre_of
        while heap and goals_left:
            d, f = heapq.heappop(heap)
            if d > dist[f]:
                continue
            if is_goal[f]:
                goals_left -= 1
            for o in pre_of[f]:
                counter[o] -= 1
                cost[o] += d
                if counter[o] == 0:
                    fire(o, cost[o] + 1)
        if goals_left:
            return INF, []
        if not self.ff:
            return sum(dist[g] for g in self.goal_idx), []
        chosen = self._relaxed_plan(dist, ach)
        if not helpful:
            return len(chosen), []
        useful = [o for o in sorted(chosen) if all(dist[p] == 0 for p in self.pre_idx[o])]
        return len(chosen), useful

    def _relaxed_plan(self, dist: list[float], ach: list[int]) -> set[int]:
        chosen: set[int] = set()
        stack = [g for g in self.goal_idx if dist[g] > 0]
        seen = set(stack)
        while stack:
            f = stack.pop()
            o = ach[f]
            if o in chosen:
                continue
            chosen.add(o)
            for p in self.pre_idx[o]:
                if dist[p] > 0 and p not in seen:
                    seen.add(p)
                    stack.append(p)
        return chosen


@dataclass
class SearchResult:
    plan: list[int] | None  # op indices of the Encoding
    expansions: int


def _extract(parent: dict[int, tuple[int, int] | None], s: int) -> list[int]:
    plan = []
    while parent[s] is not None:
        o, prev = parent[s]
        plan.append(o)
        s = prev
    plan.reverse()
    return plan


def bfs(
    enc: Encoding, start: int, goal: int, limit: int, known: Container[int] = ()
) -> SearchResult:
    """Breadth-first search: optimal plans, for small problems (stops after ``limit``).

    States in ``known`` count as goals too (used to rejoin a plan after a deviation).
    """
    parent: dict[int, tuple[int, int] | None] = {start: None}
    queue = deque([start])
    expansions = 0
    while queue:
        s = queue.popleft()
        if s & goal == goal or s in known:
            return SearchResult(_extract(parent, s), expansions)
        if expansions >= limit:
            break
        expansions += 1
        for o, t in enc.successors(s):
            if t not in parent:
                parent[t] = (o, s)
                queue.append(t)
    return SearchResult(None, expansions)


def gbfs(enc: Encoding, start: int, goal: int, h: RelaxedHeuristic, limit: int) -> SearchResult:
    """Greedy best-first search with eager evaluation, FIFO among equal h."""
    parent: dict[int, tuple[int, int] | None] = {start: None}
    h0 = h(start)
    if h0 == INF:
        return SearchResult(None, 0)
    tie = 0
    heap = [(h0, tie, start)]
    expansions = 0
    while heap:
        _, _, s = heapq.heappop(heap)
        if s & goal == goal:
            return SearchResult(_extract(parent, s), expansions)
        if expansions >= limit:
            break
        expansions += 1
        for o, t in enc.successors(s):
            if t in parent:
                continue
            parent[t] = (o, s)
            ht = h(t)
            if ht < INF:
                tie += 1
                heapq.heappush(heap, (ht, tie, t))
    return SearchResult(None, expansions)


def wastar(
    enc: Encoding, start: int, goal: int, h: RelaxedHeuristic, limit: int, weight: float
) -> SearchResult:
    """Weighted A* (f = g + weight * h), re-opening states reached by a cheaper path."""
    parent: dict[int, tuple[int, int] | None] = {start: None}
    cost = {start: 0}
    h0 = h(start)
    if h0 == INF:
        return SearchResult(None, 0)
    tie = 0
    heap = [(weight * h0, h0, tie, 0, start)]
    expansions = 0
    while heap:
        _, _, _, g, s = heapq.heappop(heap)
        if g > cost[s]:
            continue
        if s & goal == goal:
            return SearchResult(_extract(parent, s), expansions)
        if expansions >= limit:
            break
        expansions += 1
        for o, t in enc.successors(s):
            if cost.get(t, INF) <= g + 1:
                continue
            cost[t] = g + 1
            parent[t] = (o, s)
            ht = h(t)
            if ht < INF:
                tie += 1
                heapq.heappush(heap, (g + 1 + weight * ht, ht, tie, g + 1, t))
    return SearchResult(None, expansions)


def goal_agenda(enc: Encoding, start: int, goal: int, limit: int) -> SearchResult:
    """Reach the goal atoms one more at a time, keeping the earlier ones (FF's goal agenda).

    Goal atoms are taken hardest first (larger hAdd from ``start``; ties by index) and each
    stage runs A* with hAdd, bounded by ``limit`` expansions. Cheap and good on domains with
    independent goals (barman cocktails), where hAdd and hFF over the whole goal plateau.
    """
    goals = _bits(goal)
    hardness = {g: RelaxedHeuristic(enc, 1 << g)(start) for g in goals}
    plan: list[int] = []
    expansions = 0
    s, target = start, 0
    for g in sorted(goals, key=lambda g: (-hardness[g], g)):
        target |= 1 << g
        if s & target == target:
            continue
        res = wastar(enc, s, target, RelaxedHeuristic(enc, target), limit, weight=1.0)
        expansions += res.expansions
        if res.plan is None:
            return SearchResult(None, expansions)
        for o in res.plan:
            s = (s & enc.keep[o]) | enc.add[o]
        plan += res.plan
    return SearchResult(plan, expansions)


def ehc(
    enc: Encoding, start: int, goal: int, h: RelaxedHeuristic, limit: int, depth: int = 8
) -> SearchResult:
    """Enforced hill climbing with helpful actions (FF's first search), for problems too big
    for the searches above: from the current state, look for a state with a lower hFF through
    helpful ops (all ops when those lead nowhere better), depth-first up to ``depth`` steps, and
    make it the current state. Depth-first, so a plateau is left along its first way out
    instead of evaluating every sibling (gripper: each of hundreds of balls a second gripper
    could pick). One heuristic evaluation per state seen: the work grows with the plan's length,
    not with the state space. ``limit`` counts heuristic evaluations (``expansions`` of the
    result); fails at a dead end or at the limit."""
    s = start
    hs, helpful = h.helpful(s)
    if hs == INF:
        return SearchResult(None, 1)
    evaluations, plan = 1, []
    while s & goal != goal:
        found = None
        for only_helpful in (True, False):
            parent: dict[int, tuple[int, int] | None] = {s: None}
            stack = [(enc.successors(s, helpful if only_helpful else None), s, 0)]
            while stack and found is None:
                successors, u, level = stack[-1]
                step = next(successors, None)
                if step is None:
                    stack.pop()
                    continue
                o, t = step
                if t in parent:
                    continue
                parent[t] = (o, u)
                if evaluations >= limit:
                    return SearchResult(None, evaluations)
                ht, t_helpful = h.helpful(t)
                evaluations += 1
                if ht < hs:
                    found, hs, helpful = t, ht, t_helpful
                elif ht < INF and level + 1 < depth:
                    ops = t_helpful if only_helpful else None
                    stack.append((enc.successors(t, ops), t, level + 1))
            if found is not None:
                break
        if found is None:
            return SearchResult(None, evaluations)
        plan += _extract(parent, found)
        s = found
    return SearchResult(plan, evaluations)
