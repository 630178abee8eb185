"""Transitions from trajectories, and record induction with deterministic evidence (B.2.3-B.2.5).

An episode is reduced to transitions ``x_t -> a_t -> f_t -> x_{t+1}`` (:func:`build_transitions`)
and :func:`induce` walks them in the observed order. Every step yields *occurrences*: a record
relation ``(type, condition, actions)`` (its *stem*) observed with an outcome. Per step ``t``
(``o_t`` the outcome class: ``progress`` if the step progressed, ``state_change`` if the state
changed without progress, ``fail:<label>`` if it failed with a label, else ``no_effect``; a
*setback* is a step without progress that failed with a label or stalled; its failure outcome is
``fail:<label>``, or ``no_progress`` without a label):

- ``actionable`` (E): stem ``(x_t, (a_t,))``, outcome ``o_t``. ``+`` for the record of the
  observed outcome, ``-`` for every sibling (same stem, other outcome). Stall marker when the
  step stalled (on both signs).
- ``failure`` (P, anti-pattern): stem ``(a_{t-1} or "start", (a_t,))``. A setback gives ``+``
  (with a stall marker when stalled) to the record of its failure outcome; a step of the same stem
  that progressed gives ``-`` to every failure outcome of the stem. Other steps are no evidence.
- ``precondition`` (P): stem ``(c, (a_t,))`` with ``c`` the last earlier action of the episode
  that progressed (or ``"start"``), outcome ``progress``: ``+`` when the step progressed, ``-``
  otherwise (stall marker when stalled).
- ``repair`` (P): every setback ``a_s`` opens a window of the later steps up to and including the
  first step ``e`` that progressed. The *fix* is ``a_e``, or, when ``a_e`` retries ``a_s``, the
  last state-changing action before it (what enabled the retry). Stem ``(a_s, (fix,))``, outcome
  ``progress``: ``+``; every other action tried in the window (not ``a_s``) gives ``-`` to its
  own stem ``(a_s, (a_t,))`` (stall marker when stalled).
- ``workflow`` (P): stem ``(goal, progress actions)``: the actions of the steps that progressed,
  consecutive duplicates dropped, when there are at least two; outcome ``success``: ``+`` when the
  episode succeeded, ``-`` when it failed.
- ``case`` (R) for a successful episode (goal, every action in order) and ``reflection`` (R) for
  a failed one (goal, the first setback's action and its repair if any, the setback's failure
  outcome); occurrence counter ``c+`` only, no ledger.

A record exists once a *supporting* occurrence of its outcome was seen (any outcome for
``actionable``; a setback for ``failure``; progress for ``precondition``/``repair``; success for
``workflow``). Contradicting occurrences may come first, from another episode. So that a record's
evidence does not depend on the order in which episodes are induced (Proposition D.2),
:class:`OccurrenceLog` keeps every occurrence per stem: a new occurrence is applied to every
existing record of its stem, and a newly created record replays the whole stem log. Each record
is then a fold over the same multiset of occurrences whatever the order. Inducing an episode key
(``"<scope>|<episode>"``) a second time is a no-op, so repetition changes nothing either.

Roles. The log also keeps the task roles of every induced episode (``OccurrenceLog.roles``,
keyed like the occurrences by episode key), so each occurrence is abstracted for global
promotion under its *own* episode's roles (Table 8's caption: role normalization at induction
time; B.3.1); :func:`restrict` gives the part of a record that a set of episodes contributes.
A record's ``extra["roles"]`` holds the roles all of its episodes agree on
(:func:`~memarena.memory.memco.roles.agreed_roles`), likewise order-independent.
"""

from __future__ import annotations

import json
import string
from collections.abc import Callable, Collection, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from memarena.core.types import Trajectory
from memarena.memory.memco.base import Feedback, Transition
from memarena.memory.memco.query import norm
from memarena.memory.memco.records import (
    ANTI_PATTERN_TYPES,
    CONTRADICT,
    SUPPORT,
    Record,
    RecordStore,
)
from memarena.memory.memco.roles import agreed_roles

START = "start"
PROGRESS, NO_PROGRESS, SUCCESS, FAILURE = "progress", "no_progress", "success", "failure"
_EDGE_CHARS = string.punctuation + string.whitespace


def normalize(text: str) -> str:
    """Lowercase, collapse whitespace, strip punctuation at both ends."""
    return " ".join(text.lower().split()).strip(_EDGE_CHARS)


def build_transitions(
    trajectory: Trajectory, state_cue: Callable[[str], str], success: bool = False
) -> list[Transition]:
    """The episode as transitions; ``success`` (the episode outcome) marks the last step."""
    transitions: list[Transition] = []
    state = normalize(state_cue(trajectory.initial_observation))
    before = 0.0
    last = len(trajectory.steps) - 1
    for t, step in enumerate(trajectory.steps):
        terminal = success and t == last
        feedback = Feedback(
            valid=step.feedback.valid_action,
            state_changed=step.feedback.state_changed,
            label=step.feedback.failure_label,
            progress_delta=max(0.0, step.progress - before),
            done=terminal,
            success=terminal,
        )
        before = step.progress
        next_state = normalize(state_cue(step.observation))
        transitions.append(
            Transition(t, state, norm(step.action), feedback, next_state, step.observation)
        )
        state = next_state
    return transitions


def outcome_class(fb: Feedback) -> str:
    if fb.progressed:
        return PROGRESS
    if fb.state_changed:
        return "state_change"
    return f"fail:{fb.label}" if fb.label else "no_effect"


def is_setback(fb: Feedback) -> bool:
    """A failed or stalled step that did not progress."""
    return not fb.progressed and (fb.label is not None or fb.stalled)


def failure_outcome(fb: Feedback) -> str:
    return f"fail:{fb.label}" if fb.label else NO_PROGRESS


@dataclass(frozen=True)
class Occurrence:
    """One observed occurrence of a stem; ``creates``: it supports (and so creates) a record."""

    type: str
    condition: str
    actions: tuple[str, ...]
    outcome: str
    stall: bool = False
    creates: bool = True

    @property
    def stem(self) -> str:
        return stem_key(self.type, self.condition, self.actions)


def stem_key(rtype: str, condition: str, actions: tuple[str, ...]) -> str:
    """The occurrence-log key of a relation without its outcome (all records of one stem)."""
    return json.dumps([rtype, condition, list(actions)], ensure_ascii=False)


def evidence_sign(rtype: str, record_outcome: str, observed: str) -> str | None:
    """The sign an observed outcome gives a record of the same stem (None: no evidence)."""
    if observed == record_outcome:
        return SUPPORT
    if rtype in ANTI_PATTERN_TYPES and observed != PROGRESS:
        return None  # another failure label neither supports nor contradicts this anti-pattern
    return CONTRADICT


def record_text(rtype: str, condition: str, actions: tuple[str, ...], outcome: str) -> str:
    steps = " -> ".join(actions)
    return {
        "actionable": f"at '{condition}': {steps} gives {outcome}",
        "failure": f"after '{condition}': {steps} gives {outcome} (avoid)",
        "precondition": f"after '{condition}': {steps} makes progress",
        "repair": f"after '{condition}' failed: {steps} makes progress",
        "workflow": f"for '{condition}': {steps}",
    }.get(rtype, f"{condition}: {steps} -> {outcome}")


class OccurrenceLog:
    """Every shareable occurrence per stem, the episode keys already induced and the task roles
    of each (``roles``: episode key -> role -> entity; the roles of every occurrence of that
    episode)."""

    def __init__(self) -> None:
        self.episodes: set[str] = set()
        # stem -> [(episode key, observed outcome, stall, creates)]
        self.stems: dict[str, list[tuple[str, str, bool, bool]]] = {}
        self.roles: dict[str, dict[str, str]] = {}

    def observe(self, store: RecordStore, occ: Occurrence, episode: str, scope: str) -> None:
        entries = self.stems.setdefault(occ.stem, [])
        entry = (episode, occ.outcome, occ.stall, occ.creates)
        outcomes = sorted({o for _, o, _, creates in entries if creates})
        entries.append(entry)
        for outcome in outcomes:
            self.apply(store.get(occ.type, occ.condition, occ.actions, outcome), entry)
        if occ.creates and occ.outcome not in outcomes:
            record = store.get(occ.type, occ.condition, occ.actions, occ.outcome)
            record.scope = record.scope or scope
            record.text = record.text or record_text(
                occ.type, occ.condition, occ.actions, occ.outcome
            )
            for logged in entries:
                self.apply(record, logged)

    def apply(self, record: Record, entry: tuple[str, str, bool, bool]) -> None:
        """Fold one logged occurrence into ``record``: its evidence sign (B.2.5) and, when it
        is evidence, its episode's roles into the record's agreed roles."""
        episode, observed, stall, _ = entry
        sign = evidence_sign(record.type, record.outcome, observed)
        if sign is None:
            return
        record.annotate(episode, sign, stall=stall)
        roles = self.roles.get(episode, {})
        record.extra["roles"] = agreed_roles(record.extra.get("roles"), roles)

    def to_dict(self) -> dict[str, Any]:
        return {
            "episodes": sorted(self.episodes),
            "stems": {stem: [list(e) for e in entries] for stem, entries in self.stems.items()},
            "roles": {e: dict(sorted(r.items())) for e, r in sorted(self.roles.items())},
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> OccurrenceLog:
        if d.get("episodes") and "roles" not in d:
            raise ValueError(
                "memco occurrence log without per-episode task roles (written before MemCo "
                "snapshot schema v2): its occurrences cannot be abstracted under their own "
                "episode's roles; re-run acquisition to write a v2 snapshot."
            )
        log = OccurrenceLog()
        log.episodes = set(d.get("episodes", []))
        log.stems = {
            stem: [(str(e), str(o), bool(s), bool(c)) for e, o, s, c in entries]
            for stem, entries in d.get("stems", {}).items()
        }
        log.roles = {str(e): dict(r) for e, r in d.get("roles", {}).items()}
        return log


def restrict(record: Record, log: OccurrenceLog, episodes: Collection[str]) -> Record:
    """The part of ``record`` that ``episodes`` contribute: a record of the same relation folded
    over their logged occurrences only (the fold of :meth:`OccurrenceLog.observe`; over all of
    the record's episodes it gives the record's own counters and ledger back)."""
    part = Record(
        record.type,
        record.condition,
        record.actions,
        record.outcome,
        text=record.text,
        scope=record.scope,
    )
    for entry in log.stems.get(stem_key(record.type, record.condition, record.actions), ()):
        if entry[0] in episodes:
            log.apply(part, entry)
    return part


def occurrence_log(store: RecordStore) -> OccurrenceLog:
    """The log kept with ``store`` (attribute ``occurrences``; created on first use).

    The log must travel with the store: serialise it with ``store.occurrences.to_dict()``.
    """
    log = getattr(store, "occurrences", None)
    if log is None:
        log = OccurrenceLog()
        store.occurrences = log  # type: ignore[attr-defined]
    return log


def occurrences(transitions: list[Transition], success: bool, goal: str) -> Iterator[Occurrence]:
    """The shareable occurrences of one episode, in observed order."""
    last_progress = START
    open_setbacks: list[int] = []
    progress_actions: list[str] = []
    for i, tr in enumerate(transitions):
        fb, a = tr.feedback, (tr.action,)
        prev = transitions[i - 1].action if i else START
        yield Occurrence("actionable", tr.state, a, outcome_class(fb), fb.stalled)
        if is_setback(fb):
            yield Occurrence("failure", prev, a, failure_outcome(fb), fb.stalled)
        elif fb.progressed:
            yield Occurrence("failure", prev, a, PROGRESS, creates=False)
        observed = PROGRESS if fb.progressed else NO_PROGRESS
        yield Occurrence("precondition", last_progress, a, observed, fb.stalled, fb.progressed)
        if fb.progressed:
            for s in open_setbacks:
                yield from repair_occurrences(transitions, s, i)
            open_setbacks.clear()
            last_progress = tr.action
            if not progress_actions or progress_actions[-1] != tr.action:
                progress_actions.append(tr.action)
        elif is_setback(fb):
            open_setbacks.append(i)
    if len(progress_actions) >= 2:
        outcome = SUCCESS if success else FAILURE
        yield Occurrence("workflow", goal, tuple(progress_actions), outcome, creates=success)


def repair_occurrences(transitions: list[Transition], s: int, e: int) -> Iterator[Occurrence]:
    """Repair evidence of the setback at step ``s``, closed by the progressing step ``e``.

    The fix is the progressing action itself, or, when that is a retry of the failed action,
    the last state-changing action before it (the one that enabled the retry). The other
    actions tried in the window (not the failed action) did not repair it: ``-``.
    """
    failed = transitions[s].action
    fix = e
    if transitions[e].action == failed:
        enabling = [
            t
            for t in range(s + 1, e)
            if transitions[t].action != failed and transitions[t].feedback.state_changed
        ]
        if not enabling:
            return
        fix = enabling[-1]
    for t in range(s + 1, e + 1):
        action = transitions[t].action
        if t == fix:
            yield Occurrence("repair", failed, (action,), PROGRESS)
        elif action not in (failed, transitions[fix].action):
            fb = transitions[t].feedback
            yield Occurrence("repair", failed, (action,), NO_PROGRESS, fb.stalled, creates=False)


def reflection_records(
    transitions: list[Transition], success: bool, goal: str, scope: str
) -> list[Record]:
    """The episode's ``case`` (success) or ``reflection`` (failure with a setback)."""
    if success:
        actions = tuple(tr.action for tr in transitions)
        text = f"goal: {goal}; actions: " + " -> ".join(actions)
        return [Record("case", goal, actions, SUCCESS, text=text, scope=scope, c_pos=1)]
    for i, tr in enumerate(transitions):
        if not is_setback(tr.feedback):
            continue
        repair = next((r.action for r in transitions[i + 1 :] if r.feedback.progressed), None)
        outcome = failure_outcome(tr.feedback)
        text = f"goal: {goal}; '{tr.action}' gave {outcome} (observation: {tr.observation})"
        text += f"; repaired by '{repair}'" if repair else "; not repaired"
        actions = (tr.action, repair) if repair else (tr.action,)
        return [Record("reflection", goal, actions, outcome, text=text, scope=scope, c_pos=1)]
    return []


def induce(
    transitions: list[Transition],
    success: bool,
    goal: str,
    store: RecordStore,
    episode: str,
    scope: str,
    log: OccurrenceLog | None = None,
    roles: Mapping[str, str] | None = None,
) -> None:
    """Induce one episode's records and evidence into ``store`` (idempotent per episode key).

    ``roles``: the episode's task roles (``adapter.roles(task)``), kept in the log for its
    occurrences and folded into the agreed roles of every record it gives evidence to.
    """
    log = occurrence_log(store) if log is None else log
    key = f"{scope}|{episode}"
    if key in log.episodes:
        return
    log.episodes.add(key)
    log.roles[key] = dict(sorted((roles or {}).items()))
    goal = normalize(goal)
    for occ in occurrences(transitions, success, goal):
        log.observe(store, occ, key, scope)
    for record in reflection_records(transitions, success, goal, scope):
        kept = store.add(record)
        kept.extra["roles"] = agreed_roles(kept.extra.get("roles"), log.roles[key])
