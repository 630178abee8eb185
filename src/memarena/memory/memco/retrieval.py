"""MemCo's source-aware retrieval ``R(q, M, k)`` (paper Section 3.5, Appendix B.4.1-B.4.3).

Pools. Local: the records of ``P, E, R`` plus the bounded transition entries of the local graph's
query-matched neighborhood (dicts ``{state, action, next_state, count, progressed, stalled,
labels, success, similarity}``). Global: the promoted :class:`GlobalRecord` s. Everything becomes
an :class:`Entry`.

Grounding. The *steps* of an entry are its actions, for a global entry each bound with
``adapter.bind_action(a, q.roles, None)``. The *next action* is, for plans (``workflow``,
``case``), the first step after the longest step prefix found in order in ``q.done`` (None when
all steps are done); for ``precondition`` / ``repair`` the last step (the action after the
condition); otherwise the first step. It is *available* when ``q.admissible`` is None, or when it
is one of ``q.admissible`` (local: exact normalized match; global:
``adapter.bind_action(abstract, q.roles, q.admissible)`` is not None). *Warnings* are ``failure``,
``reflection``, ``actionable`` relations whose outcome is a failure or no effect, and graph
transitions that stalled or carry a failure label.

Facets (outer weights 1; ``r = r_x + r_p + r_g`` over ``settings.facets``):

- ``r_x = s_state + s_act``. ``s_state`` compares the entry's state condition (not for
  ``precondition`` / ``repair``, whose condition is an action) with ``q.state``: when both hold
  ``key=value`` facts (``;``-separated), ``s_state = (n_match - n_mismatch) / n_cond`` where a
  condition fact matches when its key is in the cue with a value set containing the condition's
  (``,``-separated), mismatches when the key is there with another value, and counts nothing when
  the key is absent; otherwise ``s_state = |T(cond) & T(cue)| / |T(cond)|`` over content tokens
  ``T`` (0 for an empty condition). ``s_act = +1`` when the next action is available, ``-1`` when
  the env lists actions and it is not (``0`` instead for warnings), ``0`` when there is no list or
  no next action.
- ``r_p``: ``precondition``: +1 when its condition action is in ``q.done`` and its action is not;
  ``repair``: +1 when its condition (the failed action) equals ``q.last_failed``, -1 when another
  action failed last, 0 with no failure; ``workflow`` / ``case``: +1 when a done prefix of length
  ``m > 0`` matches and a step remains, or when nothing is done yet; -1 when ``m = 0`` but a later
  step is already done (order conflict); 0 otherwise; ``failure`` / ``reflection`` / warning
  transitions: +1 when their action (or, for reflections, any action or the condition) equals
  ``q.last_failed``; ``actionable`` / transitions: +1 when the recorded outcome made progress
  (``progress``, ``success``) and the action is not done yet; 0 otherwise.
- ``r_g = (n_match - n_mismatch) / |roles|`` over the goal roles: a role matches when its entity's
  tokens all occur in the entry's bound steps or condition, mismatches when the entry records
  (``extra["roles"]``: the roles all of a local record's episodes agree on) another entity for
  that role; 0 without goal roles.

Hard filters (before ranking): ``s_state`` facts with more mismatches than matches; a global
step whose roles cannot be bound; a ``case`` or ``reflection`` recorded for other goal entities
(instance-specific); a single-action entry whose next action is not available, except a warning
about the action that just failed; and a plan whose next step is not available when the env lists
its actions, when its source's setting (``settings.unavailable_local`` / ``unavailable_global``)
is ``"drop"``. With ``"hide"`` such a plan stays in the ranking (``s_act = -1``) but its next step
is discarded (``extra["next_action"]`` is None), so Compose never shows an unavailable next action
(Appendix B.4.4: "resolve action conflicts by discarding unavailable actions"; Section 5).
Defaults follow MemCo's code: a local item reaches its prompt only through an admissible action
(local ``drop``), a global workflow stays as abstract ordering advice without a concrete
unavailable action (global ``hide``). The paper's Compose reads the other way round (a global
record whose "required action is unavailable" is excluded, a local action is discarded): local
``hide``, global ``drop``.

Full rank ``s = r + d_ev + d_bind + d_src - p_soft``:

- ``d_ev = (c+ - c-) / (c+ + c- + 1)`` over the occurrence counters (transitions: ``c+ = count``);
- ``d_bind = 0.5`` when the next action equals an admissible action verbatim (local), ``0.25``
  when it was bound through the roles (global), ``0`` otherwise;
- ``d_src``: transitions ``0.5 * similarity``; local records ``+0.25`` when a progressing
  neighborhood transition ran their next action, ``-0.25`` when only a stalled one did; global
  records ``0.25 * min(|sources|, 2)``;
- ``p_soft = 1`` when stale (a non-warning whose next action is done already and not
  ``extra["repeatable"]``, or a plan with no step left) plus ``0.5`` for a weak state mismatch
  (some mismatched fact that did not trigger the filter).

Selection (Algorithm B.4.3): dedupe equivalent entries (same support role, steps and condition
content tokens; same text when there are no steps) keeping the higher rank; sort by rank; when
more than ``k`` remain, take per facet ``d`` in ``(x, p, g)`` the unselected entry with the
largest ``r_d > 0`` (ties by rank), then fill by rank. Ablation scorers ``cosine`` / ``bm25``
replace ``r`` by one similarity of ``q.text`` and the entry text in ``[0, 1]`` (BM25 divided by
its maximum) and skip the facet coverage; filters and the other rank terms stay. The fixed
L5+G5 concatenation ablation (compose.py ``concat_context``) uses these same selections.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from typing import Any, Protocol

import numpy as np

from memarena.memory.memco.base import Entry, GlobalRecord, RoleAdapter
from memarena.memory.memco.query import DecisionQuery, norm, tokens
from memarena.memory.memco.records import Record
from memarena.memory.memco.roles import abstract_cached

FACETS = ("x", "p", "g")
SCORERS = ("facets", "cosine", "bm25")
UNAVAILABLE_NEXT = ("drop", "hide")  # a plan whose next step is not available (B.4.4)
PLAN_KINDS = ("workflow", "case")
COND_ACTION_KINDS = ("precondition", "repair")
GROUND_KINDS = ("actionable", "transition", "case")
WORKFLOW_KINDS = ("workflow", "precondition")
REFLECTION_KINDS = ("failure", "repair", "reflection")
PROGRESS_OUTCOMES = ("progress", "success")
_STOP = {"the", "a", "an", "you", "is", "are", "of", "in", "on", "to", "at", "and", "with", "from"}
_PLACEHOLDER = re.compile(r"<(\w+)>")


class Embedder(Protocol):
    def encode(self, texts: list[str]) -> Any: ...


@dataclass
class RetrievalSettings:
    """Retrieval switches (MemCo ablations): relevance facets, scorer, source caps."""

    facets: tuple[str, ...] = FACETS
    scorer: str = "facets"
    k_local: int = 5
    k_global: int = 5
    # a plan whose next step is not available, per source: drop | hide (module docstring)
    unavailable_local: str = "drop"
    unavailable_global: str = "hide"

    def __post_init__(self) -> None:
        self.facets = tuple(self.facets)
        for name in ("unavailable_local", "unavailable_global"):
            if getattr(self, name) not in UNAVAILABLE_NEXT:
                raise ValueError(
                    f"memco {name}={getattr(self, name)!r} must be one of {list(UNAVAILABLE_NEXT)}"
                )
        bad = [f for f in self.facets if f not in FACETS]
        if bad:
            raise ValueError(f"memco retrieval facets {bad} must be a subset of {list(FACETS)}")
        if self.scorer not in SCORERS:
            raise ValueError(f"memco retrieval scorer={self.scorer!r} must be one of {SCORERS}")
        if self.k_local < 0 or self.k_global < 0:
            raise ValueError("memco retrieval caps k_local and k_global must be >= 0")

    def drops(self, source: str) -> bool:
        """Whether a plan of ``source`` whose next step is unavailable is dropped."""
        setting = self.unavailable_global if source == "global" else self.unavailable_local
        return setting == "drop"


# ---------------------------------------------------------------- pool construction


GOOD_OUTCOMES = ("progress", "state_change", "success")


def is_warning(entry: Entry) -> bool:
    """Failures, reflections, actionable relations whose outcome is a failure or no effect, and
    stalled/failed graph transitions warn; they are not plans."""
    if entry.kind in ("failure", "reflection") or entry.extra.get("warning"):
        return True
    return entry.kind == "actionable" and entry.outcome not in GOOD_OUTCOMES


def support_role(entry: Entry) -> str:
    """``ground``, ``workflow`` or ``reflection`` (paper Appendix B.4.4)."""
    if entry.kind in REFLECTION_KINDS or is_warning(entry):
        return "reflection"
    if entry.kind in WORKFLOW_KINDS:
        return "workflow"
    return "ground"


def record_entry(record: Record) -> Entry:
    return Entry(
        id=f"local:{record.key}",
        source="local",
        kind=record.type,
        condition=norm(record.condition),
        actions=tuple(norm(a) for a in record.actions),
        outcome=record.outcome,
        text=record.text,
        evidence=(record.c_pos, record.c_neg, record.c_stall),
        extra=dict(record.extra),
    )


def transition_outcome(t: dict[str, Any]) -> str:
    if t.get("success"):
        return "success"
    if t.get("progressed"):
        return "progress"
    labels = list(t.get("labels") or [])
    if labels:
        return f"fail:{labels[0]}"
    return "no_progress" if t.get("stalled") else "state_change"


def transition_entry(t: dict[str, Any]) -> Entry:
    state, action, nxt = norm(t["state"]), norm(t["action"]), norm(t.get("next_state", ""))
    count = int(t.get("count", 1))
    stalled = bool(t.get("stalled"))
    digest = hashlib.sha1(f"{state}|{action}|{nxt}".encode()).hexdigest()[:16]
    outcome = transition_outcome(t)
    warning = not (t.get("progressed") or t.get("success")) and (
        stalled or outcome.startswith("fail:")
    )
    return Entry(
        id=f"graph:{digest}",
        source="local",
        kind="transition",
        condition=state,
        actions=(action,),
        outcome=outcome,
        text=f"{state} -> {action} -> {nxt}",
        evidence=(count, 0, count if stalled else 0),
        extra={
            "next_state": nxt,
            "similarity": float(t.get("similarity", 0.0)),
            "warning": warning,
            "progressed": bool(t.get("progressed") or t.get("success")),
        },
    )


def global_entry(g: GlobalRecord) -> Entry:
    return Entry(
        id=f"global:{g.key}",
        source="global",
        kind=g.type,
        condition=norm(g.condition),
        actions=tuple(norm(a) for a in g.actions),
        outcome=g.outcome,
        text=g.text,
        evidence=(g.c_pos, g.c_neg, g.c_stall),
        extra={
            "score": g.score,
            "rho": g.rho,
            "n": (g.n_pos, g.n_neg, g.n_stall),
            "sources": list(g.sources),
        },
    )


def local_pool(records: Iterable[Record], transitions: Iterable[dict[str, Any]]) -> list[Entry]:
    return [record_entry(r) for r in records] + [transition_entry(t) for t in transitions]


def global_pool(records: Iterable[GlobalRecord]) -> list[Entry]:
    return [global_entry(g) for g in records]


@dataclass
class PoolIndex:
    """A source's entries, single-action ones indexed by action (local: the normalized action;
    global: the role-level action), so a step only grounds entries whose action can be
    available. Built once per memory change; :func:`candidates` gives the same entries
    :func:`score_entries` would keep, without scanning the whole pool."""

    always: list[Entry] = field(default_factory=list)
    by_action: dict[str, list[Entry]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.always) + sum(len(v) for v in self.by_action.values())

    def entries(self) -> list[Entry]:
        """Every entry of the pool."""
        return self.always + [e for group in self.by_action.values() for e in group]


def index_pool(entries: Iterable[Entry]) -> PoolIndex:
    index = PoolIndex()
    for e in entries:
        planless = e.kind in PLAN_KINDS or e.kind == "reflection" or not e.actions
        if planless or (e.source == "global" and is_warning(e)):
            index.always.append(e)
        else:
            index.by_action.setdefault(norm(e.actions[-1]), []).append(e)
    return index


def candidates(index: PoolIndex, q: DecisionQuery, adapter: RoleAdapter | None) -> list[Entry]:
    """The entries of ``index`` whose action may be available at this step (plus those that do
    not depend on it); a superset of what the hard filters keep."""
    if q.admissible is None:
        return index.entries()
    keys = set(q.admissible) | ({q.last_failed} if q.last_failed else set())
    if adapter is not None:
        roles = tuple(sorted(q.roles.items()))
        keys |= {a for a in (abstract_cached(adapter, x, roles) for x in q.admissible) if a}
    out = list(index.always)
    for key in keys:
        out.extend(index.by_action.get(key, ()))
    return out


# ---------------------------------------------------------------- grounding


def fill_roles(text: str, roles: dict[str, str]) -> str:
    """``<role>`` placeholders replaced by the role entities (unknown roles kept)."""
    return _PLACEHOLDER.sub(lambda m: roles.get(m.group(1), m.group(0)), text)


@dataclass
class Grounding:
    steps: tuple[str | None, ...]  # concrete steps (None: a global role did not bind)
    next_index: int | None
    next_action: str | None
    bound: str | None  # the admissible (or free-text) action for next_action
    bind_kind: str  # "exact", "role", "free" or "" (not bound)
    prefix: int  # matched done prefix length (plans)
    order_conflict: bool = False
    roles_ok: bool = True


def done_prefix(steps: Sequence[str | None], done: Sequence[str]) -> int:
    """Length of the longest step prefix found in order (as a subsequence) in ``done``."""
    pos = 0
    for i, step in enumerate(steps):
        try:
            pos = done.index(step, pos) + 1 if step is not None else -1
        except ValueError:
            return i
        if pos < 0:
            return i
    return len(steps)


def ground(entry: Entry, q: DecisionQuery, adapter: RoleAdapter | None) -> Grounding:
    """Concrete steps, next action and its binding to the current actions."""
    if entry.source == "global":
        if adapter is None:
            raise ValueError("memco: grounding a global record needs the env's role adapter")
        steps = tuple(_bind(adapter, a, q.roles, None) for a in entry.actions)
    else:
        steps = tuple(entry.actions)
    roles_ok = all(s is not None for s in steps)
    prefix, conflict = 0, False
    if not steps:
        index = None
    elif entry.kind in PLAN_KINDS:
        prefix = done_prefix(steps, q.done)
        index = prefix if prefix < len(steps) else None
        conflict = prefix == 0 and any(s in q.done for s in steps[1:])
    elif entry.kind in COND_ACTION_KINDS:
        index = len(steps) - 1
    else:
        index = 0
    next_action = steps[index] if index is not None else None
    bound, kind = None, ""
    if next_action is not None:
        if q.admissible is None:
            bound, kind = next_action, "free"
        elif entry.source == "global":
            bound = _bind(adapter, entry.actions[index], q.roles, list(q.admissible))
            kind = "role" if bound is not None else ""
        elif next_action in q.admissible:
            bound, kind = next_action, "exact"
    return Grounding(steps, index, next_action, bound, kind, prefix, conflict, roles_ok)


def _bind(adapter: RoleAdapter, abstract: str, roles: dict[str, str], adm: list[str] | None):
    out = adapter.bind_action(abstract, roles, adm)
    return norm(out) if out else None


# ---------------------------------------------------------------- facets


@lru_cache(maxsize=65536)
def content_tokens(text: str) -> frozenset[str]:
    return frozenset(t for t in tokens(text) if t not in _STOP and not t.isdigit())


@lru_cache(maxsize=65536)
def _facts(text: str) -> dict[str, frozenset[str]]:
    out: dict[str, frozenset[str]] = {}
    for part in re.split(r"[;|\n]", text):
        if "=" in part:
            key, value = part.split("=", 1)
            out[norm(key)] = frozenset(norm(v) for v in value.split(",") if v.strip())
    return out


def state_match(condition: str, cue: str) -> tuple[float, int, int]:
    """``(s_state, n_match, n_mismatch)`` of a state condition against the current cue."""
    cond_facts, cue_facts = _facts(condition), _facts(cue)
    if cond_facts and cue_facts:
        match = sum(1 for k, v in cond_facts.items() if k in cue_facts and v <= cue_facts[k])
        miss = sum(1 for k, v in cond_facts.items() if k in cue_facts and not v <= cue_facts[k])
        return (match - miss) / len(cond_facts), match, miss
    ct = content_tokens(condition)
    if not ct:
        return 0.0, 0, 0
    shared = len(ct & content_tokens(cue))
    return shared / len(ct), shared, 0


def _state_condition(entry: Entry, q: DecisionQuery) -> str:
    if entry.kind in COND_ACTION_KINDS:
        return ""
    return fill_roles(entry.condition, q.roles) if entry.source == "global" else entry.condition


def _condition_action(entry: Entry, q: DecisionQuery) -> str:
    cond = entry.extra.get("condition_action", entry.condition)
    return norm(fill_roles(cond, q.roles)) if entry.source == "global" else norm(cond)


def facet_x(entry: Entry, q: DecisionQuery, g: Grounding) -> tuple[float, int]:
    """``r_x`` and the number of mismatched state facts."""
    s_state, _, miss = state_match(_state_condition(entry, q), q.state)
    if g.next_action is None or q.admissible is None:
        s_act = 0.0
    elif g.bound is not None:
        s_act = 1.0
    else:
        s_act = 0.0 if is_warning(entry) else -1.0
    return s_state + s_act, miss


def facet_p(entry: Entry, q: DecisionQuery, g: Grounding) -> float:
    kind = entry.kind
    if kind == "precondition":
        cond = _condition_action(entry, q)
        return 1.0 if cond in q.done and g.next_action not in q.done else 0.0
    if kind == "repair":
        if q.last_failed is None:
            return 0.0
        return 1.0 if _condition_action(entry, q) == q.last_failed else -1.0
    if kind in PLAN_KINDS:
        if g.order_conflict:
            return -1.0
        if g.next_index is not None and (g.prefix > 0 or not q.done):
            return 1.0
        return 0.0
    if is_warning(entry):
        if q.last_failed is None:
            return 0.0
        hit = q.last_failed in g.steps or (
            kind == "reflection" and q.last_failed == _condition_action(entry, q)
        )
        return 1.0 if hit else 0.0
    progressed = entry.outcome in PROGRESS_OUTCOMES or entry.extra.get("progressed", False)
    return 1.0 if progressed and g.next_action not in q.done else 0.0


def facet_g(entry: Entry, q: DecisionQuery, g: Grounding) -> float:
    if not q.roles:
        return 0.0
    text_tokens = set(tokens(" ".join(s for s in g.steps if s)))
    text_tokens |= set(tokens(_state_condition(entry, q) or _condition_action(entry, q)))
    recorded = entry.extra.get("roles") or {}
    score = 0
    for role, entity in q.roles.items():
        other = recorded.get(role)
        if other is not None and norm(other) != entity:
            score -= 1
        elif set(tokens(entity)) <= text_tokens:
            score += 1
    return score / len(q.roles)


# ---------------------------------------------------------------- rank


def delta_ev(entry: Entry) -> float:
    c_pos, c_neg, _ = entry.evidence
    return (c_pos - c_neg) / (c_pos + c_neg + 1)


def delta_bind(g: Grounding) -> float:
    return {"exact": 0.5, "role": 0.25}.get(g.bind_kind, 0.0)


def delta_src(entry: Entry, graph: dict[str, tuple[bool, bool]], g: Grounding) -> float:
    if entry.source == "global":
        return 0.25 * min(len(entry.extra.get("sources", [])), 2)
    if entry.kind == "transition":
        return 0.5 * float(entry.extra.get("similarity", 0.0))
    ran = graph.get(g.next_action or "")
    if ran is None:
        return 0.0
    progressed, stalled = ran
    if progressed:
        return 0.25
    return -0.25 if stalled else 0.0


def soft_penalty(entry: Entry, q: DecisionQuery, g: Grounding, mismatches: int) -> float:
    stale = False
    if not is_warning(entry) and g.steps:
        if entry.kind in PLAN_KINDS:
            stale = g.next_index is None
        else:
            stale = g.next_action in q.done and not entry.extra.get("repeatable", False)
    return (1.0 if stale else 0.0) + (0.5 if mismatches else 0.0)


def _role_conflict(entry: Entry, q: DecisionQuery) -> bool:
    recorded = entry.extra.get("roles") or {}
    return any(
        role in recorded and norm(recorded[role]) != entity for role, entity in q.roles.items()
    )


def hard_filtered(entry: Entry, q: DecisionQuery, g: Grounding, drop_plans: bool = True) -> bool:
    """Applicability constraints: contradicted condition, unbindable role, a case or reflection
    of a task with other goal entities, unavailable action (a plan's next step only with
    ``drop_plans``: its source's setting is ``"drop"``)."""
    _, match, miss = state_match(_state_condition(entry, q), q.state)
    if miss > match:
        return True
    if not g.roles_ok:
        return True
    if entry.kind in ("case", "reflection") and _role_conflict(entry, q):
        return True  # an instance-specific record of a task with other goal entities
    if q.admissible is None or g.next_action is None or g.bound is not None:
        return False
    if entry.kind == "reflection":
        return False
    if entry.kind in PLAN_KINDS:
        return drop_plans  # a plan whose next step is unavailable (B.4.4)
    # an unavailable action: a plan step is filtered; a warning only when it is not about the
    # action that just failed (a warning about an action nobody can take now says nothing)
    return not is_warning(entry) or norm(g.next_action) != (q.last_failed or "")


# ---------------------------------------------------------------- selection


def entry_text(entry: Entry) -> str:
    return entry.text or " ".join([entry.condition, *entry.actions, entry.outcome])


def _similarities(
    scorer: str, q: DecisionQuery, entries: list[Entry], embedder: Embedder | None
) -> list[float]:
    texts = [entry_text(e) for e in entries]
    if scorer == "cosine":
        if embedder is None:
            raise ValueError("memco retrieval scorer=cosine needs an embedder")
        vecs = np.asarray(embedder.encode([q.text, *texts]), dtype=np.float64)
        vecs = vecs / np.maximum(np.linalg.norm(vecs, axis=1, keepdims=True), 1e-12)
        return [float(v) for v in vecs[1:] @ vecs[0]]
    import bm25s

    corpus = bm25s.tokenize(texts, stopwords=None, show_progress=False)
    index = bm25s.BM25()
    index.index(corpus, show_progress=False)
    query_tokens = [t for t in tokens(q.text) if t in corpus.vocab]
    if not query_tokens:
        return [0.0] * len(entries)
    scores = np.asarray(index.get_scores(query_tokens), dtype=np.float64)
    top = float(scores.max()) if len(scores) else 0.0
    return [float(s / top) if top > 0 else 0.0 for s in scores]


def _dedupe_key(entry: Entry) -> tuple:
    """Equivalent entries: same support role, same (bound) steps, same condition content."""
    return dedupe_key(support_role(entry), entry.bound_actions or entry.actions, entry)


def dedupe_key(role: str, steps: tuple[str, ...], entry: Entry) -> tuple:
    """:func:`_dedupe_key` from an entry's support role and (bound) steps."""
    if steps:
        return (role, steps, frozenset(content_tokens(entry.condition)))
    return (role, norm(entry.text))


def _unavailable(
    entry: Entry, admissible: set[str], abstracted: set[str] | None, last_failed: str
) -> bool:
    """A single-action entry (not a plan) that :func:`hard_filtered` would remove, decided
    without grounding: its action (local) or role-level action (global: ``abstracted`` holds the
    abstractions of the admissible actions under the current roles) is not available, and, for
    a warning, it is not the action that just failed."""
    if entry.kind in PLAN_KINDS or entry.kind == "reflection" or not entry.actions:
        return False
    action = norm(entry.actions[-1])
    if entry.source == "local":
        if action in admissible:
            return False
        return not (is_warning(entry) and action == last_failed)
    if abstracted is None or action in abstracted:
        return False
    return not is_warning(entry)  # global warnings are left to grounding


def score_entries(
    q: DecisionQuery,
    entries: list[Entry],
    settings: RetrievalSettings,
    adapter: RoleAdapter | None = None,
    embedder: Embedder | None = None,
) -> list[Entry]:
    """Filter, score and rank the pool (facets and full rank filled in copies)."""
    graph: dict[str, tuple[bool, bool]] = {}
    for e in entries:
        if e.kind == "transition":
            prog, stall = graph.get(e.actions[0], (False, False))
            graph[e.actions[0]] = (prog or e.extra["progressed"], stall or e.evidence[2] > 0)
    kept: list[tuple[Entry, Grounding]] = []
    admissible = set(q.admissible) if q.admissible is not None else None
    abstracted = None
    if admissible is not None and adapter is not None:
        roles = tuple(sorted(q.roles.items()))
        abstracted = {a for a in (abstract_cached(adapter, x, roles) for x in admissible) if a}
    last_failed = q.last_failed or ""
    for entry in entries:
        if admissible is not None and _unavailable(entry, admissible, abstracted, last_failed):
            continue  # the hard filter below, decided without grounding (most of a large pool)
        g = ground(entry, q, adapter)
        if not hard_filtered(entry, q, g, settings.drops(entry.source)):
            kept.append((entry, g))
    sims = None
    if settings.scorer != "facets" and kept:
        sims = _similarities(settings.scorer, q, [e for e, _ in kept], embedder)
    out: list[Entry] = []
    for i, (entry, g) in enumerate(kept):
        r_x, miss = facet_x(entry, q, g)
        facets = {"x": r_x, "p": facet_p(entry, q, g), "g": facet_g(entry, q, g)}
        if sims is None:
            r = sum(facets[d] for d in settings.facets)
        else:
            r = sims[i]
        rank = (
            r
            + delta_ev(entry)
            + delta_bind(g)
            + delta_src(entry, graph, g)
            - soft_penalty(entry, q, g, miss)
        )
        extra = {
            **entry.extra,
            "next_action": shown_next(entry.kind in PLAN_KINDS, q, g.next_action, g.bound),
            "steps": g.steps,
            "relevance": r,
        }
        bound = tuple(s for s in g.steps if s is not None)
        out.append(replace(entry, facets=facets, rank=rank, bound_actions=bound, extra=extra))
    out.sort(key=lambda e: (-e.rank, e.id))
    best: dict[tuple, Entry] = {}
    for e in out:
        best.setdefault(_dedupe_key(e), e)
    return [e for e in out if best[_dedupe_key(e)] is e]


def shown_next(plan: bool, q: DecisionQuery, next_action: str | None, bound: str | None):
    """The next action an entry carries into Compose: the bound (available) action; an unbound
    next step only where there is no action list, or for a non-plan entry the hard filters kept
    (a warning about the action that just failed). A plan never carries an unavailable next step
    (B.4.4: unavailable actions are discarded)."""
    if plan and q.admissible is not None:
        return bound
    return bound or next_action


def select(ranked: list[Entry], k: int, facets: Sequence[str]) -> list[Entry]:
    """Bounded selection: per-facet strongest support first, then by full rank."""
    if len(ranked) <= k:
        return list(ranked)
    chosen: list[Entry] = []
    ids: set[str] = set()
    for d in facets:
        if len(chosen) >= k:
            break
        pool = [e for e in ranked if e.facets.get(d, 0.0) > 0 and e.id not in ids]
        if pool:
            top = max(pool, key=lambda e: (e.facets[d], e.rank))
            chosen.append(top)
            ids.add(top.id)
    for e in ranked:
        if len(chosen) >= k:
            break
        if e.id not in ids:
            chosen.append(e)
            ids.add(e.id)
    return chosen


def retrieve(
    q: DecisionQuery,
    entries: list[Entry],
    k: int,
    settings: RetrievalSettings,
    adapter: RoleAdapter | None = None,
    embedder: Embedder | None = None,
) -> list[Entry]:
    """``R(q, M, k)`` over one source's pool."""
    if k <= 0 or not entries:
        return []
    ranked = score_entries(q, entries, settings, adapter, embedder)
    facets = settings.facets if settings.scorer == "facets" else ()
    return select(ranked, k, facets)


@dataclass
class Retrieved:
    local: list[Entry] = field(default_factory=list)
    global_: list[Entry] = field(default_factory=list)


def retrieve_both(
    q: DecisionQuery,
    records: Iterable[Record],
    transitions: Iterable[dict[str, Any]],
    global_records: Iterable[GlobalRecord],
    adapter: RoleAdapter,
    settings: RetrievalSettings | None = None,
    embedder: Embedder | None = None,
) -> Retrieved:
    """Eq. 7: ``S^l = R(q, M^l, k^l)`` and ``S^g = R(q, M^g, k^g)``, retrieved separately."""
    return retrieve_pools(
        q, local_pool(records, transitions), global_pool(global_records), adapter, settings,
        embedder,
    )  # fmt: skip


def retrieve_pools(
    q: DecisionQuery,
    local_entries: list[Entry],
    global_entries: list[Entry],
    adapter: RoleAdapter,
    settings: RetrievalSettings | None = None,
    embedder: Embedder | None = None,
) -> Retrieved:
    """:func:`retrieve_both` on pools already converted to entries (cached by the method)."""
    settings = settings or RetrievalSettings()
    local = retrieve(q, local_entries, settings.k_local, settings, adapter, embedder)
    glob = retrieve(q, global_entries, settings.k_global, settings, adapter, embedder)
    return Retrieved(local, glob)
