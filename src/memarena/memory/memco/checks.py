"""Pre-promotion record checks ``A_str`` and ``A_info`` (paper Appendix B.3.2, Table 7).

Both run on the abstract form, before any evidence is looked at; a record goes on to the Wilson
gate only when both hold.

Structural completeness ``A_str`` per type:

- ``workflow``: at least two ordered actions and a non-empty outcome;
- ``precondition``: a non-empty condition and exactly one action;
- ``repair``: a failed action and a different fixing action, either as the two actions
  ``(failed, fix)`` or as the condition (the failed action) and one fixing action;
- ``failure``: at least one action and a failure outcome (``fail...``, ``no_progress``,
  ``stall``, ``failure``); under the released code's reading (``method.promotion_types:
  released``) only an anti-pattern, a stall without a failure label (``no_progress``,
  ``stall``): its structure check accepts a failure candidate only as an anti-pattern, an
  explicit failure being evidence rather than a transferable relation (records.py maps its
  candidate types onto these record types);
- ``actionable``: a non-empty condition, at least one action and a non-empty outcome;
- any other type (``case``, ``reflection``): never complete (they stay local).

Low information ``A_info`` rejects a record when:

- none of its actions does more than generic interaction (``look``, ``look around``,
  ``inventory``, ``help``, ``wait``, ``check valid actions``, ``Think[...]``...);
- a workflow has fewer than two distinct non-generic actions;
- a type that needs a condition (``precondition``, ``actionable``, a one-action ``repair``)
  has an empty or start-only condition (``start``, ``none``, ``unknown``);
- a ``repair`` or ``precondition`` is conditioned on a generic action (``after look``);
- the outcome is empty or uninformative (``none``, ``unknown``).
"""

from __future__ import annotations

import re
from functools import lru_cache

from memarena.memory.memco.abstraction import AbstractForm

GENERIC_ACTION = re.compile(
    r"^(look|look around|inventory|help|wait\d*|check valid actions|think\b.*|think\[.*\])$",
    re.IGNORECASE,
)
EMPTY_CONDITIONS = frozenset({"", "start", "none", "unknown", "n/a"})
EMPTY_OUTCOMES = frozenset({"", "none", "unknown"})
FAILURE_OUTCOMES = ("fail", "no_progress", "stall", "failure")
STALL_OUTCOMES = ("no_progress", "stall")  # an anti-pattern in the released code's sense


@lru_cache(maxsize=1 << 16)
def is_generic(action: str) -> bool:
    """A generic interaction (cached: the same abstract actions recur in most records)."""
    return bool(GENERIC_ACTION.match(action.strip()))


def _needs_condition(form: AbstractForm) -> bool:
    return form.type in ("precondition", "actionable") or (
        form.type == "repair" and len(form.actions) == 1
    )


def structural(form: AbstractForm, types: str = "paper") -> bool:
    """``A_str``: the record has the fields its type needs; ``types="released"``: a failure
    record must be an anti-pattern too."""
    cond, acts, out = form.condition.strip(), form.actions, form.outcome.strip()
    if form.type == "workflow":
        return len(acts) >= 2 and bool(out)
    if form.type == "precondition":
        return bool(cond) and len(acts) == 1
    if form.type == "repair":
        if len(acts) == 2:
            return acts[0] != acts[1]
        return len(acts) == 1 and bool(cond) and cond != acts[0]
    if form.type == "failure":
        failure = out.startswith(FAILURE_OUTCOMES if types == "paper" else STALL_OUTCOMES)
        return len(acts) >= 1 and failure
    if form.type == "actionable":
        return bool(cond) and len(acts) >= 1 and bool(out)
    return False


def informative(form: AbstractForm) -> bool:
    """``A_info``: the record says more than generic interaction advice."""
    specific = {a for a in form.actions if not is_generic(a)}
    if not specific:
        return False
    if form.type == "workflow" and len(specific) < 2:
        return False
    if _needs_condition(form) and form.condition.strip().lower() in EMPTY_CONDITIONS:
        return False
    if form.type in ("repair", "precondition") and is_generic(form.condition):
        return False  # "after `look`": a generic action is no condition
    return form.outcome.strip().lower() not in EMPTY_OUTCOMES
