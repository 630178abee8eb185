"""MemCo's Compose and Render (paper Section 3.5, Appendix B.4.4, Appendix G).

Compose, over the selected local and global entries in full-rank order:

1. Binding: a global record's steps are bound with ``adapter.bind_action(a, q.roles, None)``
   (every step must bind) and its next action with ``adapter.bind_action(a, q.roles,
   q.admissible)``; the record is excluded when a step does not bind, or when it is a
   single-action recommendation whose bound action is not available.
2. Roles: ``ground`` takes actionable relations, progressing/neutral graph transitions and cases;
   ``workflow`` takes workflows and preconditions; ``reflection`` takes failures, repairs,
   reflections and stalled/failed transitions.
3. Local override: a global recommendation whose next action is the *same step* as a local
   grounding's action (same verb and same first argument, text before the first preposition)
   but a different action yields: a global single-action record is dropped, a global plan takes
   the local action as its next action. A global recommendation whose next action a local
   warning names is dropped (plans keep their order but lose the next action).
4. Dedupe per role by rendered line (the higher rank wins), then the fixed budget
   ``max_items_per_role`` in deterministic order (source-weighted rank, local before global,
   id). The source weights (``local_weight``, ``global_weight``; 1 and 1 here, MemCo's config
   1.0 and 0.65 as its code's ``memco_local_weight`` / ``memco_global_weight``) multiply an
   entry's full rank where local and global entries compete for the same role budget: a global
   entry's evidence counts ``global_weight / local_weight`` as much as a local one's, penalties
   (negative ranks) included, as the code scales its global source rows. Within one source the
   order is the rank order (a positive factor keeps it), so retrieval is unchanged.

Render writes the seven-line "MemCo Memory Decision Summary" of Appendix G; the context is
empty when the three memory fields are.

``concat_context`` is the fixed-concatenation ablation (L5+G5, Fig. 4(c,d), Table 12): it gets
the same per-step selections ``S^l = R(q, M^l, k^l)`` and ``S^g = R(q, M^g, k^g)`` as MemCo
(retrieval.py: facets, hard filters, full rank, bounded selection; Eq. 7) and lists them as
stored, local then global in selection order: no role binding, no support roles, no local
override, no per-role budget and no Decision Summary.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from memarena.core.types import MemoryContext
from memarena.memory.memco.base import Entry, RoleAdapter
from memarena.memory.memco.query import DecisionQuery, tokens
from memarena.memory.memco.retrieval import (
    PLAN_KINDS,
    fill_roles,
    ground,
    is_warning,
    support_role,
)

ROLES = ("ground", "workflow", "reflection")
SLOT = "planner_notes"
HEADER = "### MemCo Memory Decision Summary"
CONCAT_HEADER = "### MemCo Memory (fixed concatenation)"  # the L5+G5 ablation's block
LABELS = (
    "Current phase",
    "Current state",
    "Local memory",
    "Global memory",
    "Failure memory",
    "Next priority",
    "Confidence / caveat",
)
_PREPOSITIONS = {"from", "in", "on", "to", "with", "into", "onto", "at", "using", "under"}
_MAX_STATE_CHARS = 200


@dataclass
class Composed:
    """Role-specific supports, the rendered text and the ids of the entries it uses."""

    roles: dict[str, list[Entry]] = field(default_factory=lambda: {h: [] for h in ROLES})
    text: str = ""
    memory_ids: list[str] = field(default_factory=list)
    entries: dict[str, str] = field(default_factory=dict)  # id -> the line it renders as

    def to_context(self, slot: str = SLOT) -> MemoryContext:
        if not self.text:
            return MemoryContext.empty()
        return MemoryContext(
            slots={slot: self.text}, memory_ids=list(self.memory_ids), entries=dict(self.entries)
        )


def step_key(action: str) -> tuple[str, ...]:
    """Verb and first argument of an action (the text before the first preposition)."""
    words = tokens(action)
    head: list[str] = []
    for w in words:
        if w in _PREPOSITIONS:
            break
        head.append(w)
    return tuple(head)


def _bind_global(entry: Entry, q: DecisionQuery, adapter: RoleAdapter) -> Entry | None:
    g = ground(entry, q, adapter)
    if not g.roles_ok:
        return None
    single = entry.kind not in PLAN_KINDS and not is_warning(entry)
    if single and g.next_action is not None and g.bound is None:
        return None
    nxt = g.bound
    bound = tuple(s for s in g.steps if s is not None)
    return replace(entry, bound_actions=bound, extra={**entry.extra, "next_action": nxt})


def _next(entry: Entry) -> str | None:
    return entry.extra.get("next_action")


def _local_override(entry: Entry, local: list[Entry]) -> Entry | None:
    nxt = _next(entry)
    if nxt is None:
        return entry
    plan = entry.kind in PLAN_KINDS
    for loc in local:
        loc_next = _next(loc) or (loc.actions[0] if loc.actions else None)
        if loc_next is None:
            continue
        if is_warning(loc):
            if loc_next == nxt:
                return replace(entry, extra={**entry.extra, "next_action": None}) if plan else None
            continue
        if loc_next != nxt and step_key(loc_next) == step_key(nxt):
            if not plan:
                return None
            return replace(
                entry, extra={**entry.extra, "next_action": loc_next, "grounded_by": loc.id}
            )
    return entry


def _q(text: str) -> str:
    return f"'{text}'"


def render_item(entry: Entry, q: DecisionQuery) -> str:
    """One concise instruction for a support item (current bindings for global records)."""
    steps = entry.bound_actions or entry.actions
    cond = fill_roles(entry.condition, q.roles) if entry.source == "global" else entry.condition
    nxt = _next(entry)
    act = nxt or (steps[-1] if entry.kind in ("precondition", "repair") and steps else "")
    act = act or (steps[0] if steps else "")
    kind = entry.kind
    if kind in PLAN_KINDS:
        label = "workflow" if kind == "workflow" else "past success"
        tail = f" (next: {nxt})" if nxt else ""
        return f"{label}: {' -> '.join(steps)}{tail}"
    if kind == "precondition":
        return f"after {_q(cond)}, do {_q(act)}"
    if kind == "repair":
        return f"if {_q(cond)} fails, try {_q(act)}"
    if kind == "failure":
        return f"avoid {_q(act)} when {_q(cond)} ({entry.outcome})"
    if kind == "reflection":
        return entry.text or f"{cond}: {' -> '.join(steps)}"
    if kind == "transition":
        seen = entry.evidence[0]
        if is_warning(entry):
            return f"{_q(act)} at {_q(cond)} gave {entry.outcome} ({seen}x); do not repeat"
        return f"at {_q(cond)}, {_q(act)} -> {entry.outcome} ({seen}x)"
    return f"at {_q(cond)}, {_q(act)} -> {entry.outcome}"


def _order(entry: Entry, weights: tuple[float, float] = (1.0, 1.0)) -> tuple:
    """Composition order: source-weighted full rank (``weights``: local, global), local before
    global on ties, then id."""
    weight = weights[0] if entry.source == "local" else weights[1]
    return (-(weight * entry.rank), entry.source != "local", entry.id)


def compose(
    local: list[Entry],
    global_: list[Entry],
    q: DecisionQuery,
    adapter: RoleAdapter,
    max_items_per_role: int = 3,
    local_weight: float = 1.0,
    global_weight: float = 1.0,
) -> Composed:
    """``Compose(S^l, S^g | q, A)`` followed by ``Render`` (source weights: module docstring,
    step 4)."""
    bound_global = [b for e in global_ if (b := _bind_global(e, q, adapter)) is not None]
    local_entries = [e if "next_action" in e.extra else _with_next(e, q, adapter) for e in local]
    kept = list(local_entries)
    for e in bound_global:
        if support_role(e) != "reflection":
            e = _local_override(e, local_entries)
        if e is not None:
            kept.append(e)
    roles: dict[str, list[Entry]] = {h: [] for h in ROLES}
    seen: dict[str, set[str]] = {h: set() for h in ROLES}
    weights = (float(local_weight), float(global_weight))
    for e in sorted(kept, key=lambda e: _order(e, weights)):
        h = support_role(e)
        line = render_item(e, q)
        if line in seen[h] or len(roles[h]) >= max_items_per_role:
            continue
        seen[h].add(line)
        roles[h].append(e)
    out = Composed(roles=roles)
    if not any(roles.values()):
        return out
    out.memory_ids = [e.id for h in ROLES for e in roles[h]]
    # each id under the summary field that shows it (the ground role is "Local memory", the
    # workflow role "Global memory", the reflection role "Failure memory", whatever the source)
    out.entries = {
        e.id: f"{label}: {render_item(e, q)}"
        for h, label in zip(ROLES, LABELS[2:5], strict=True)
        for e in roles[h]
    }
    out.text = render(q, roles)
    return out


def _with_next(entry: Entry, q: DecisionQuery, adapter: RoleAdapter) -> Entry:
    g = ground(entry, q, adapter)
    return replace(entry, extra={**entry.extra, "next_action": g.bound})


def next_priority(q: DecisionQuery, roles: dict[str, list[Entry]]) -> str:
    for h in ("workflow", "ground"):
        for e in roles[h]:
            nxt = _next(e)
            if nxt and (q.admissible is None or nxt in q.admissible) and nxt not in q.done:
                return nxt
    return "no grounded next action from memory; choose among the currently valid actions"


def caveat(roles: dict[str, list[Entry]]) -> str:
    parts: list[str] = []
    for h in ("workflow", "ground", "reflection"):
        if roles[h]:
            e = roles[h][0]
            c_pos, c_neg, c_stall = e.evidence
            part = f"{h} evidence c+={c_pos} c-={c_neg} c0={c_stall}"
            if e.source == "global":
                part += f", promotion score {float(e.extra.get('score', 0.0)):.2f}"
            parts.append(part)
    parts.append("memory is a hint: prefer currently valid actions and do not repeat failed ones")
    return "; ".join(parts)


def render(q: DecisionQuery, roles: dict[str, list[Entry]]) -> str:
    """The Appendix G summary: a header and exactly seven labelled lines."""

    def field_text(h: str) -> str:
        return "; ".join(render_item(e, q) for e in roles[h]) or "none"

    state = q.state if len(q.state) <= _MAX_STATE_CHARS else q.state[:_MAX_STATE_CHARS] + "..."
    values = (
        q.phase,
        state or "unknown",
        field_text("ground"),
        field_text("workflow"),
        field_text("reflection"),
        next_priority(q, roles),
        caveat(roles),
    )
    return "\n".join([HEADER, *(f"{label}: {v}" for label, v in zip(LABELS, values, strict=True))])


def stored_line(entry: Entry) -> str:
    """An entry as stored: its text, else its relation (a global one keeps its ``<role>`` s)."""
    return "- " + (
        entry.text
        or f"[{entry.kind}] {entry.condition}: {' -> '.join(entry.actions)} => {entry.outcome}"
    )


def concat_context(local: list[Entry], global_: list[Entry]) -> Composed:
    """Fixed-concatenation ablation: the retrieved ``S^l`` and ``S^g`` listed as stored.

    ``local`` and ``global_`` are the per-step selections of
    :func:`~memarena.memory.memco.retrieval.retrieve_pools` (the same ``R`` as MemCo); this
    replaces Compose and Render (Appendix B.4.4, G) only.
    """
    if not local and not global_:
        return Composed()
    parts = [CONCAT_HEADER]
    if local:
        parts += ["Local memory:", *(stored_line(e) for e in local)]
    if global_:
        parts += ["Global memory:", *(stored_line(e) for e in global_)]
    roles: dict[str, list[Entry]] = {h: [] for h in ROLES}
    for e in local + global_:
        roles[support_role(e)].append(e)
    entries = {e.id: stored_line(e)[2:] for e in local + global_}
    return Composed(
        roles=roles,
        text="\n".join(parts),
        memory_ids=[e.id for e in local + global_],
        entries=entries,
    )


__all__ = ["Composed", "compose", "concat_context", "render"]
