"""MemCo's retrieval ``R(q, M, k)`` over a pool compiled to arrays (the fast path).

:mod:`retrieval` states the scoring rules entry by entry (the reference path). Here the same rules
run over a whole pool at once: everything an entry contributes that does not depend on the
decision query (its kind flags, steps as action ids, condition facts and tokens, evidence term,
dedupe group, recorded roles) is computed once, when the memory changes, into a
:class:`CompiledPool`; a step then only

1. looks up the candidate rows by action key (as :func:`retrieval.candidates` does),
2. builds small indicator vectors for the query (admissible actions, done actions, the cue's
   tokens and facts, the goal roles' tokens) and evaluates every facet, filter and rank term
   as numpy expressions over the candidate rows (sparse matrix products for the token and fact
   overlaps), and
3. sorts, dedupes and runs the bounded selection on the arrays, building :class:`Entry` objects
   only for the selected rows.

Global records are grounded under the task's roles (role placeholders filled in their steps and
conditions); the roles stay fixed within a task, so a grounded global pool is compiled once per
roles assignment and kept in a small cache. Plans whose first step was done (a non-zero done
prefix) get their next step from :func:`retrieval.done_prefix` row by row; they are few.

The results are the reference path's, float for float (same operations in the same order); the
equivalence is tested on synthetic pools (tests/memory/test_memco_compiled.py). The ablation
scorers ``cosine`` / ``bm25`` keep the reference path.
"""

from __future__ import annotations

import bisect
from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass, replace
from types import SimpleNamespace
from typing import Any

import numpy as np
from scipy import sparse

from memarena.core.gc_pause import gc_paused
from memarena.memory.memco.base import Entry, RoleAdapter
from memarena.memory.memco.query import DecisionQuery, norm, tokens
from memarena.memory.memco.retrieval import (
    COND_ACTION_KINDS,
    PLAN_KINDS,
    PROGRESS_OUTCOMES,
    RetrievalSettings,
    _bind,
    _condition_action,
    _dedupe_key,
    _facts,
    _state_condition,
    content_tokens,
    dedupe_key,
    delta_ev,
    done_prefix,
    is_warning,
    score_entries,
    support_role,
)
from memarena.memory.memco.roles import GenericAdapter, abstract_cached, bound_abstract

ROLES_CACHE = 16  # grounded global pools kept (one per roles assignment, i.e. per task)


class Vocab:
    """Strings to dense ids (actions, tokens, facts, role entities), growing as needed."""

    def __init__(self) -> None:
        self.ids: dict[Any, int] = {}
        self.items: list[Any] = []

    def __len__(self) -> int:
        return len(self.items)

    def add(self, item: Any) -> int:
        i = self.ids.get(item)
        if i is None:
            i = self.ids[item] = len(self.items)
            self.items.append(item)
        return i

    def get(self, item: Any, default: int = -1) -> int:
        return self.ids.get(item, default)


@dataclass
class Vocabs:
    """The vocabularies shared by one MemCo instance's pools (query strings map once)."""

    actions: Vocab
    tokens: Vocab
    facts: Vocab  # (key, frozenset of values)
    entities: Vocab

    @classmethod
    def new(cls) -> Vocabs:
        return cls(Vocab(), Vocab(), Vocab(), Vocab())


def _columns(rows: list[list[int]], n_cols: int) -> sparse.csc_matrix:
    """A binary row x column matrix (rows: the column ids of each row, without repeats)
    stored by column, so a query reads only the columns it names."""
    rows = [sorted(set(r)) for r in rows]
    indptr = np.zeros(len(rows) + 1, dtype=np.int64)
    indptr[1:] = np.cumsum([len(r) for r in rows])
    cols = np.fromiter((c for r in rows for c in r), dtype=np.int64, count=int(indptr[-1]))
    data = np.ones(len(cols), dtype=np.float64)
    csr = sparse.csr_matrix((data, cols, indptr), shape=(len(rows), max(n_cols, 1)))
    return csr.tocsc()


def _count(matrix: sparse.csc_matrix, cols: Sequence[int], n: int) -> np.ndarray:
    """Per row, how many of the columns ``cols`` (ids beyond the matrix: none) it holds."""
    cols = [c for c in cols if 0 <= c < matrix.shape[1]]
    if not cols:
        return np.zeros(n, dtype=np.int64)
    ptr, idx = matrix.indptr, matrix.indices
    hit = np.concatenate([idx[ptr[c]: ptr[c + 1]] for c in cols])
    return np.bincount(hit, minlength=n)


def _indicator(ids: Sequence[int], size: int) -> np.ndarray:
    out = np.zeros(size + 1, dtype=bool)  # the last slot stands for "no id" (-1)
    ids = [i for i in ids if i >= 0]
    if ids:
        out[ids] = True
    return out


class CompiledPool:
    """One source's entries as arrays, grounded (global: under one roles assignment)."""

    def __init__(
        self,
        entries: list[Entry],
        vocabs: Vocabs,
        roles: dict[str, str] | None = None,
        adapter: RoleAdapter | None = None,
    ) -> None:
        with gc_paused():  # many small objects at once: collections would dominate
            self._compile(entries, vocabs, roles, adapter)

    def _compile(
        self,
        entries: list[Entry],
        vocabs: Vocabs,
        roles: dict[str, str] | None,
        adapter: RoleAdapter | None,
    ) -> None:
        self.entries = entries
        self.vocabs = v = vocabs
        n = len(entries)
        self.n = n
        stub = SimpleNamespace(roles=dict(roles or {}))
        is_global = np.array([e.source == "global" for e in entries], dtype=bool)
        self.is_global = is_global
        self.has_global = bool(is_global.any())
        kinds = [e.kind for e in entries]
        self.plan = np.array([k in PLAN_KINDS for k in kinds], dtype=bool)
        self.condact = np.array([k in COND_ACTION_KINDS for k in kinds], dtype=bool)
        self.precond = np.array([k == "precondition" for k in kinds], dtype=bool)
        self.repair = np.array([k == "repair" for k in kinds], dtype=bool)
        self.reflection = np.array([k == "reflection" for k in kinds], dtype=bool)
        self.case_or_refl = np.array([k in ("case", "reflection") for k in kinds], dtype=bool)
        self.warning = np.array([is_warning(e) for e in entries], dtype=bool)
        self.progressed = np.array(
            [e.outcome in PROGRESS_OUTCOMES or bool(e.extra.get("progressed", False))
             for e in entries], dtype=bool,
        )  # fmt: skip
        self.repeatable = np.array([bool(e.extra.get("repeatable", False)) for e in entries])
        self.d_ev = np.array([delta_ev(e) for e in entries], dtype=np.float64)
        self.d_src_global = np.array(
            [0.25 * min(len(e.extra.get("sources", [])), 2) if e.source == "global" else 0.0
             for e in entries], dtype=np.float64,
        )  # fmt: skip
        order = sorted(range(n), key=lambda i: entries[i].id)
        self.id_rank = np.empty(n, dtype=np.int64)
        self.id_rank[order] = np.arange(n)
        self.sorted_ids = [entries[i].id for i in order]

        # steps (concrete: local as stored, global filled under the roles)
        steps: list[tuple[str | None, ...]] = []
        for e in entries:
            if e.source == "global":
                if adapter is None:
                    raise ValueError("memco: grounding a global record needs the role adapter")
                steps.append(tuple(_bind(adapter, a, stub.roles, None) for a in e.actions))
            else:
                steps.append(tuple(e.actions))
        self.steps = steps
        self.nsteps = np.array([len(s) for s in steps], dtype=np.int64)
        self.roles_ok = np.array([all(s is not None for s in st) for st in steps], dtype=bool)
        width = max([len(s) for s in steps] or [1]) or 1
        mat = np.full((n, width), -1, dtype=np.int64)
        for i, st in enumerate(steps):
            for j, s in enumerate(st):
                if s is not None:
                    mat[i, j] = v.actions.add(s)
        self.step_ids = mat
        n_act = len(v.actions)
        self.any_step = _columns([[a for a in r if a >= 0] for r in mat.tolist()], n_act)
        self.later_step = _columns([[a for a in r[1:] if a >= 0] for r in mat.tolist()], n_act)
        self.first = mat[:, 0] if n else np.zeros(0, dtype=np.int64)
        last = np.maximum(self.nsteps - 1, 0)
        self.last = mat[np.arange(n), last] if n else np.zeros(0, dtype=np.int64)
        self.no_steps = self.nsteps == 0
        # default next step: plans the first (done prefix 0), precondition / repair the last
        self.next_default = np.where(self.condact, self.last, self.first)
        self.next_default[self.no_steps] = -1
        # global: the abstract action at the default next index (binding to admissible actions)
        self.abs_next = np.full(n, -1, dtype=np.int64)
        self.abs_last = np.full(n, -1, dtype=np.int64)
        for i, e in enumerate(entries):
            if e.source == "global" and e.actions:
                j = len(e.actions) - 1 if kinds[i] in COND_ACTION_KINDS else 0
                self.abs_next[i] = v.actions.add(e.actions[j])
                self.abs_last[i] = v.actions.add(norm(e.actions[-1]))

        # conditions: the action of precondition / repair / reflection, the state condition
        self.cond_action = np.array(
            [v.actions.add(_condition_action(e, stub)) for e in entries], dtype=np.int64
        )
        state_conds = [_state_condition(e, stub) for e in entries]
        fact_rows, ct_rows, g_rows = [], [], []
        for e, cond, st in zip(entries, state_conds, steps, strict=True):
            facts = _facts(cond)
            fact_rows.append([v.facts.add((k, val)) for k, val in facts.items()])
            ct_rows.append([v.tokens.add(t) for t in content_tokens(cond)])
            text = set(tokens(" ".join(s for s in st if s)))
            text |= set(tokens(cond or _condition_action(e, stub)))
            g_rows.append([v.tokens.add(t) for t in text])
        self.facts_by_key: dict[str, list[tuple[int, frozenset]]] = {}
        for fid in sorted({f for r in fact_rows for f in r}):
            key, values = v.facts.items[fid]
            self.facts_by_key.setdefault(key, []).append((fid, values))
        self.n_facts = np.array([len(r) for r in fact_rows], dtype=np.int64)
        self.ct_len = np.array([len(r) for r in ct_rows], dtype=np.int64)
        self.facts_m = _columns(fact_rows, len(v.facts))
        self.ct_m = _columns(ct_rows, len(v.tokens))
        self.gt_m = _columns(g_rows, len(v.tokens))
        self.n_fact_cols = len(v.facts)
        # recorded roles (local records): role -> entity id per row (-1: not recorded)
        self.recorded: dict[str, np.ndarray] = {}
        for i, e in enumerate(entries):
            for role, entity in (e.extra.get("roles") or {}).items():
                col = self.recorded.get(role)
                if col is None:
                    col = self.recorded[role] = np.full(n, -1, dtype=np.int64)
                col[i] = v.entities.add(norm(entity))
        # dedupe groups
        groups: dict[tuple, int] = {}
        self.groups = groups
        self.group = np.array(
            [groups.setdefault(self._group_key(e, st), len(groups))
             for e, st in zip(entries, steps, strict=True)], dtype=np.int64,
        )  # fmt: skip
        # candidate index: single-action rows by their last action (see retrieval.index_pool)
        always, by_action = [], {}
        for i, e in enumerate(entries):
            planless = e.kind in PLAN_KINDS or e.kind == "reflection" or not e.actions
            if planless or (e.source == "global" and is_warning(e)):
                always.append(i)
            else:
                by_action.setdefault(norm(e.actions[-1]), []).append(i)
        self.always = np.array(always, dtype=np.int64)
        self.by_action = {k: np.array(r, dtype=np.int64) for k, r in by_action.items()}

    @staticmethod
    def _group_key(e: Entry, steps: tuple[str | None, ...]) -> tuple:
        bound = tuple(s for s in steps if s is not None)
        return dedupe_key(support_role(e), bound or e.actions, e)

    def __len__(self) -> int:
        return self.n

    # ------------------------------------------------------------------ per step

    def abstracted(self, q: DecisionQuery, adapter: RoleAdapter | None) -> set[str] | None:
        """The role-level forms of the admissible actions (the keys of global rows); None
        without global rows, an adapter or an action list."""
        if q.admissible is None or adapter is None or not self.has_global:
            return None
        roles = tuple(sorted(q.roles.items()))
        return {a for a in (abstract_cached(adapter, x, roles) for x in q.admissible) if a}

    def candidate_rows(self, q: DecisionQuery, abstracted: set[str] | None) -> np.ndarray:
        if q.admissible is None:
            return np.arange(self.n, dtype=np.int64)
        keys = set(q.admissible) | ({q.last_failed} if q.last_failed else set())
        keys |= abstracted or set()
        parts = [self.always] + [self.by_action[k] for k in keys if k in self.by_action]
        return np.concatenate(parts) if len(parts) > 1 else self.always


@dataclass
class Scored:
    """Candidate rows with their facets and rank (the arrays behind :class:`Entry` copies)."""

    rows: np.ndarray
    r_x: np.ndarray
    r_p: np.ndarray
    r_g: np.ndarray
    relevance: np.ndarray
    rank: np.ndarray
    next_id: np.ndarray
    bound_id: np.ndarray
    bound_only: np.ndarray  # plans under an action list: only a bound next step is shown


def _bind_table(q: DecisionQuery, adapter: GenericAdapter, actions: Vocab) -> dict[int, int]:
    """Abstract action id -> the admissible action it binds to: the first admissible action,
    in order, bound to it (GenericAdapter.bind_action for every abstract action at once)."""
    roles = tuple(sorted(q.roles.items()))
    table: dict[int, int] = {}
    for x in q.admissible or ():
        a = bound_abstract(adapter, x, roles)
        aid = actions.get(a) if a else -1
        if aid >= 0 and aid not in table:
            table[aid] = actions.add(norm(x))
    return table


def _generic_binding(adapter: RoleAdapter | None) -> bool:
    return isinstance(adapter, GenericAdapter) and (
        type(adapter).bind_action is GenericAdapter.bind_action
    )


def score_pool(
    pool: CompiledPool,
    q: DecisionQuery,
    settings: RetrievalSettings,
    adapter: RoleAdapter | None,
    graph: dict[str, tuple[bool, bool]] | None = None,
) -> Scored:
    """Facets and rank of the pool's candidate rows that pass the hard filters."""
    v = pool.vocabs
    A = q.admissible
    done_ids = [v.actions.add(d) for d in q.done]
    lf = q.last_failed
    lf_id = v.actions.add(lf) if lf else -2
    adm_ids = [v.actions.add(a) for a in A] if A is not None else []
    in_done = _indicator(done_ids, len(v.actions))
    in_adm = _indicator(adm_ids, len(v.actions))
    abstracted = pool.abstracted(q, adapter)
    rows = pool.candidate_rows(q, abstracted)
    if A is not None:  # retrieval._unavailable: the hard filter decided before grounding
        single = ~pool.plan[rows] & ~pool.reflection[rows] & ~pool.no_steps[rows]
        warn = pool.warning[rows]
        last = pool.last[rows]
        local_drop = ~in_adm[last] & ~(warn & (last == lf_id))
        if abstracted is not None:
            in_abs = _indicator([v.actions.get(a) for a in abstracted], len(v.actions))
            global_drop = ~in_abs[pool.abs_last[rows]] & ~warn
        else:
            global_drop = np.zeros(len(rows), dtype=bool)
        drop = single & np.where(pool.is_global[rows], global_drop, local_drop)
        rows = rows[~drop]
    glob = pool.is_global[rows]

    # ---- grounding: next step, done prefix, order conflict
    plan = pool.plan[rows]
    nsteps = pool.nsteps[rows]
    next_id = pool.next_default[rows].copy()
    prefix = np.zeros(len(rows), dtype=np.int64)
    started = plan & in_done[pool.first[rows]] & (nsteps > 0)
    for j in np.flatnonzero(started):
        i = int(rows[j])
        m = done_prefix(pool.steps[i], q.done)
        prefix[j] = m
        next_id[j] = pool.step_ids[i, m] if m < nsteps[j] else -1
    next_index_none = plan & (prefix >= nsteps)
    next_id[next_index_none] = -1
    later_done = _count(pool.later_step, sorted(set(done_ids)), pool.n)[rows] > 0
    conflict = plan & (prefix == 0) & later_done
    has_next = next_id >= 0

    # ---- binding of the next step to the admissible actions
    bound_id = np.full(len(rows), -1, dtype=np.int64)
    bind_role = np.zeros(len(rows), dtype=bool)
    if A is None:
        bound_id[has_next] = next_id[has_next]  # "free"
    else:
        local_ok = ~glob & has_next & in_adm[next_id]
        bound_id[local_ok] = next_id[local_ok]
        gsel = np.flatnonzero(glob & has_next)
        if len(gsel):
            abs_ids = pool.abs_next[rows[gsel]].copy()
            for j in np.flatnonzero(prefix[gsel] > 0):  # a started plan binds its next step
                i = int(rows[gsel[j]])
                abs_ids[j] = v.actions.add(pool.entries[i].actions[prefix[gsel[j]]])
            if _generic_binding(adapter):
                table = _bind_table(q, adapter, v.actions)
                lut = np.full(len(v.actions) + 1, -1, dtype=np.int64)
                if table:
                    lut[list(table)] = list(table.values())
                got = lut[abs_ids]
            else:
                memo: dict[int, int] = {}
                for a in set(abs_ids.tolist()):
                    out = _bind(adapter, v.actions.items[a], q.roles, list(A))
                    memo[a] = v.actions.add(out) if out else -1
                got = np.array([memo[int(a)] for a in abs_ids], dtype=np.int64)
            bound_id[gsel] = got
            bind_role[gsel] = got >= 0
    bound = bound_id >= 0

    # ---- state condition: facts or content tokens against the cue
    cue_facts = _facts(q.state)
    n_facts = pool.n_facts[rows]
    if cue_facts and pool.n_fact_cols and (n_facts > 0).any():
        held, contradicted = [], []
        for key, cue_values in cue_facts.items():
            for fid, values in pool.facts_by_key.get(key, ()):
                (held if values <= cue_values else contradicted).append(fid)
        f_match = _count(pool.facts_m, held, pool.n)[rows]
        f_miss = _count(pool.facts_m, contradicted, pool.n)[rows]
    else:
        f_match = f_miss = np.zeros(len(rows))
    cue_ids = [v.tokens.get(x) for x in content_tokens(q.state)]
    shared = _count(pool.ct_m, cue_ids, pool.n)[rows]
    ct_len = pool.ct_len[rows]
    fact_mode = (n_facts > 0) & bool(cue_facts)
    with np.errstate(divide="ignore", invalid="ignore"):
        s_fact = (f_match - f_miss) / n_facts
        s_tok = shared / ct_len
    s_state = np.where(fact_mode, s_fact, np.where(ct_len > 0, s_tok, 0.0))
    match = np.where(fact_mode, f_match, np.where(ct_len > 0, shared, 0.0))
    miss = np.where(fact_mode, f_miss, 0.0)

    # ---- recorded roles: conflicts (r_g mismatch, case / reflection filter)
    role_miss: dict[str, np.ndarray] = {}
    for role, entity in q.roles.items():
        col = pool.recorded.get(role)
        if col is None:
            role_miss[role] = np.zeros(len(rows), dtype=bool)
        else:
            rec = col[rows]
            role_miss[role] = (rec >= 0) & (rec != v.entities.get(entity, -2))
    conflict_roles = np.zeros(len(rows), dtype=bool)
    for m in role_miss.values():
        conflict_roles |= m

    # ---- hard filters
    warning = pool.warning[rows]
    keep = ~(miss > match) & pool.roles_ok[rows] & ~(pool.case_or_refl[rows] & conflict_roles)
    if A is not None:  # a plan whose next step is unavailable: dropped per its source's setting
        drops = np.where(glob, settings.drops("global"), settings.drops("local"))
        unavailable = has_next & ~bound & (~plan | drops) & ~pool.reflection[rows]
        about_failure = warning & (next_id == lf_id)
        keep &= ~(unavailable & ~about_failure)
    sel = np.flatnonzero(keep)
    rows, glob, plan, nsteps = rows[sel], glob[sel], plan[sel], nsteps[sel]
    next_id, bound_id, bound, bind_role = next_id[sel], bound_id[sel], bound[sel], bind_role[sel]
    prefix, conflict, next_index_none = prefix[sel], conflict[sel], next_index_none[sel]
    s_state, miss, warning = s_state[sel], miss[sel], warning[sel]
    role_miss = {r: m[sel] for r, m in role_miss.items()}
    has_next = next_id >= 0

    # ---- facets
    if A is None:
        s_act = np.zeros(len(rows))
    else:
        s_act = np.where(~has_next, 0.0, np.where(bound, 1.0, np.where(warning, 0.0, -1.0)))
    r_x = s_state + s_act
    next_done = in_done[next_id] & has_next
    cond_action = pool.cond_action[rows]
    r_p = np.zeros(len(rows))
    precond = pool.precond[rows]
    repair = pool.repair[rows]
    r_p[precond & in_done[cond_action] & ~next_done] = 1.0
    if lf:
        r_p[repair] = np.where(cond_action[repair] == lf_id, 1.0, -1.0)
    plan_p = np.where(conflict, -1.0, np.where(has_next & ((prefix > 0) | (not q.done)), 1.0, 0.0))
    r_p[plan] = plan_p[plan]
    rest = ~precond & ~repair & ~plan
    warn_rows = rest & warning
    if lf:
        in_steps = _count(pool.any_step, [lf_id], pool.n)[rows] > 0
        hit = in_steps | (pool.reflection[rows] & (cond_action == lf_id))
        r_p[warn_rows] = np.where(hit[warn_rows], 1.0, 0.0)
    other = rest & ~warning
    r_p[other] = np.where(pool.progressed[rows][other] & ~next_done[other], 1.0, 0.0)
    r_g = np.zeros(len(rows))
    if q.roles:
        score = np.zeros(len(rows))
        for role, entity in q.roles.items():
            toks = {v.tokens.get(t) for t in tokens(entity)}  # an unknown token (-1): no row
            contained = _count(pool.gt_m, sorted(toks), pool.n)[rows] == len(toks)
            score = score + np.where(role_miss[role], -1.0, np.where(contained, 1.0, 0.0))
        r_g = score / len(q.roles)
    relevance = np.zeros(len(rows))
    for d in settings.facets:
        relevance = relevance + {"x": r_x, "p": r_p, "g": r_g}[d]

    # ---- rank terms
    d_bind = np.where(bind_role, 0.25, np.where(bound & (A is not None), 0.5, 0.0))
    d_src = pool.d_src_global[rows].copy()
    if graph:
        prog = np.zeros(len(v.actions) + 1)
        for action, (progressed, stalled) in graph.items():
            aid = v.actions.get(action)
            if aid >= 0:
                prog[aid] = 0.25 if progressed else (-0.25 if stalled else 0.0)
        local = ~glob
        d_src[local] = prog[next_id[local]] * has_next[local]
    stale_plain = next_done & ~pool.repeatable[rows]
    stale = ~warning & (nsteps > 0) & np.where(plan, next_index_none, stale_plain)
    soft = np.where(stale, 1.0, 0.0) + np.where(miss > 0, 0.5, 0.0)
    rank = relevance + pool.d_ev[rows] + d_bind + d_src - soft
    bound_only = plan & (A is not None)
    return Scored(rows, r_x, r_p, r_g, relevance, rank, next_id, bound_id, bound_only)


def _entry(pool: CompiledPool, s: Scored, j: int) -> Entry:
    i = int(s.rows[j])
    e = pool.entries[i]
    items = pool.vocabs.actions.items
    next_action = items[s.next_id[j]] if s.next_id[j] >= 0 else None
    bound = items[s.bound_id[j]] if s.bound_id[j] >= 0 else None
    steps = pool.steps[i]
    shown = bound if s.bound_only[j] else (bound or next_action)  # retrieval.shown_next
    extra = {**e.extra, "next_action": shown, "steps": steps,
             "relevance": float(s.relevance[j])}  # fmt: skip
    facets = {"x": float(s.r_x[j]), "p": float(s.r_p[j]), "g": float(s.r_g[j])}
    return replace(e, facets=facets, rank=float(s.rank[j]),
                   bound_actions=tuple(x for x in steps if x is not None), extra=extra)  # fmt: skip


def retrieve_compiled(
    q: DecisionQuery,
    pool: CompiledPool,
    k: int,
    settings: RetrievalSettings,
    adapter: RoleAdapter | None = None,
    extra: Sequence[Entry] = (),
) -> list[Entry]:
    """``R(q, M, k)`` of :func:`retrieval.retrieve` over ``pool``'s candidates plus ``extra``
    entries (the local graph's neighborhood transitions, few: scored by the reference code and
    merged by rank, id and dedupe group)."""
    if k <= 0 or (not len(pool) and not extra):
        return []
    if settings.scorer != "facets":
        raise ValueError("memco: the compiled pools score the facets; the cosine / bm25 "
                         "ablation scorers run retrieval.retrieve")
    graph: dict[str, tuple[bool, bool]] = {}
    for e in extra:
        if e.kind == "transition":
            prog, stall = graph.get(e.actions[0], (False, False))
            graph[e.actions[0]] = (prog or e.extra["progressed"], stall or e.evidence[2] > 0)
    s = score_pool(pool, q, settings, adapter, graph)
    # the extra entries (few) through the reference code, merged by (-rank, id) and group
    ref = score_entries(q, list(extra), settings, adapter) if extra else []
    n = len(s.rows)
    ranks = np.concatenate([s.rank, [e.rank for e in ref]])
    ords = np.concatenate([
        2 * pool.id_rank[s.rows],
        [2 * bisect.bisect_left(pool.sorted_ids, e.id) - 1 for e in ref],
    ])  # fmt: skip
    new_groups: dict[tuple, int] = {}

    def group_of(e: Entry) -> int:
        key = _dedupe_key(e)
        gid = pool.groups.get(key)
        if gid is None:
            gid = new_groups.setdefault(key, len(pool.groups) + len(new_groups))
        return gid

    groups = np.concatenate([pool.group[s.rows], [group_of(e) for e in ref]]).astype(np.int64)
    facet_arrays = {
        "x": np.concatenate([s.r_x, [e.facets["x"] for e in ref]]),
        "p": np.concatenate([s.r_p, [e.facets["p"] for e in ref]]),
        "g": np.concatenate([s.r_g, [e.facets["g"] for e in ref]]),
    }
    order = np.lexsort((ords, -ranks))
    _, first = np.unique(groups[order], return_index=True)
    survivors = order[np.sort(first)]

    def build(j: int) -> Entry:
        return _entry(pool, s, j) if j < n else ref[j - n]

    if len(survivors) <= k:
        return [build(int(j)) for j in survivors]
    chosen: list[int] = []
    taken = np.zeros(len(ranks), dtype=bool)
    for d in settings.facets:
        if len(chosen) >= k:
            break
        vals = facet_arrays[d][survivors]
        mask = (vals > 0) & ~taken[survivors]
        if mask.any():
            best = vals[mask].max()
            j = int(survivors[np.flatnonzero(mask & (vals == best))[0]])
            chosen.append(j)
            taken[j] = True
    for j in survivors:
        if len(chosen) >= k:
            break
        if not taken[j]:
            chosen.append(int(j))
            taken[j] = True
    return [build(j) for j in chosen]


class GlobalPools:
    """The global pool compiled under each recent roles assignment (an LRU of
    :data:`ROLES_CACHE` tasks' groundings)."""

    def __init__(self, entries: list[Entry], vocabs: Vocabs, adapter: RoleAdapter) -> None:
        self.entries, self.vocabs, self.adapter = entries, vocabs, adapter
        self.cache: OrderedDict[tuple, CompiledPool] = OrderedDict()

    def __len__(self) -> int:
        return len(self.entries)

    def for_roles(self, roles: dict[str, str]) -> CompiledPool:
        key = tuple(sorted(roles.items()))
        pool = self.cache.get(key)
        if pool is None:
            pool = CompiledPool(self.entries, self.vocabs, roles, self.adapter)
            self.cache[key] = pool
            if len(self.cache) > ROLES_CACHE:
                self.cache.popitem(last=False)
        else:
            self.cache.move_to_end(key)
        return pool


__all__ = ["CompiledPool", "GlobalPools", "Vocabs", "retrieve_compiled", "score_pool"]
