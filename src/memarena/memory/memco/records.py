"""MemCo's record types and their evidence (paper Sections 3.3-3.4, Appendix B.2).

Local memory ``M_i^l = [G_i^l, P_i^l, E_i^l, R_i^l]``:

- ``P``: pattern records: ``workflow`` (ordered progress phases and their operations),
  ``precondition`` (a temporal transition associated with successful progress), ``repair`` (a
  successful action resolving an observed failure), ``failure`` (an action associated with a
  failure or no-progress outcome; an *anti-pattern*);
- ``E``: ``actionable`` knowledge: state-action-outcome relations that ground an action;
- ``R``: ``case`` (a concrete successful episode) and ``reflection`` (a failure diagnosis or a
  recovery); these stay local.

A record is identified by its *relation*: ``(type, condition, actions, outcome)``, all
normalized strings. Records with the same relation are one local entry (consolidation by record
key). ``P`` and ``E`` records are shareable: they carry evidence.

Evidence. Every observed occurrence ``j`` of a record gets a signed label ``e_j in {+, -}``
and, when the occurrence made no observable state or task progress, a stall marker. The
occurrence counters ``c+, c-, c0`` summarise all occurrences (retrieval ranking only). For
promotion, the annotations of one (source scope, episode) key are kept as a *set* in the
episode ledger and reduced to at most one vote (:func:`reduce_episode`): for ordinary relations a
contradiction wins; for anti-patterns (``failure``) an observed stall or failure supports the
record. ``n+, n-`` count the reduced votes; ``n0`` counts episodes with a stall marker and never
enters the Wilson sample. Because a ledger entry is a set, the reduction is invariant to the order
and repetition of annotations (Proposition D.2).

MemCo's released code (SYannL/nvdamas, ``memco_backend``) and these types. Its local memory
holds *candidates* (``CandidateType``) and, beside them, *rules* (``RuleType``) and artifacts:

- candidates ``precondition_rule``, ``workflow_chunk`` (pattern kinds workflow / closure) and
  ``repair_pattern`` ("after failure label L, try A", seen when a failed step is followed by a
  successful one) are ``precondition``, ``workflow`` and ``repair`` here;
- a ``failure_pattern`` candidate is either a *raw failure* (an action whose step failed with a
  failure label): a ``failure`` record with a ``fail:<label>`` outcome here; or an
  ``anti_pattern`` (actions whose steps stalled: no failure label, no state change, not done):
  a ``failure`` record with the ``no_progress`` outcome here (an unlabelled setback is exactly
  such a stall). The released anti-pattern is the episode's first three stalled actions, this
  one a single stalled action after its predecessor;
- rules are a second layer of ALFWorld relations conditioned on the task's progress state:
  ``blocked`` (avoid taking a non-target object, avoid placing the held target on a non-goal
  destination) and ``repair`` (the repair candidate's "after L, try A" in a given progress
  state), besides precondition / workflow / closure rules. memarena has no rule layer and no
  blocked record: its records are the candidates' counterparts, so the released code's "REPAIR
  and BLOCKED rules are never promoted" withholds nothing memarena has (``repair`` records are
  promoted under both readings, as the released code promotes repair candidates);
- reflection artifacts stay local, as ``case`` / ``reflection`` records do here; ``actionable``
  records have no released candidate type (the released structure rule does not concern them).

Two settings take the released code's reading instead of the paper's (``method.promotion_types``
and ``method.anti_pattern_counting``, conf/method/memco.yaml): the released structure check
accepts a failure candidate only as an anti-pattern (``structural`` in checks.py), and its
per-episode reduction of an anti-pattern counts an episode with a stall marker as one supporting
vote and any other annotated episode as one contradicting vote (the paper's: any support or stall
supports it; :func:`reduce_episode`). memarena applies that reduction to all of its anti-patterns,
the ``failure`` records. A ``no_progress`` record's support always carries a stall marker, so
the two reductions differ only on ``fail:<label>`` records, in an episode where the labelled
failure changed the state (no stall): a contradiction under the released reading. (The released
code reduces a raw failure candidate as an ordinary relation, but never promotes it.)
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

PATTERN_TYPES = ("workflow", "precondition", "repair", "failure")
ACTIONABLE_TYPES = ("actionable",)
REFLECTION_TYPES = ("case", "reflection")
SHAREABLE_TYPES = PATTERN_TYPES + ACTIONABLE_TYPES
RECORD_TYPES = SHAREABLE_TYPES + REFLECTION_TYPES
ANTI_PATTERN_TYPES = ("failure",)

SUPPORT, CONTRADICT, STALL = "+", "-", "0"


def relation_signature(rtype: str, condition: str, actions: tuple[str, ...], outcome: str) -> str:
    """A stable id of a relation: the record type plus its normalized relation fields."""
    blob = json.dumps([rtype, condition, list(actions), outcome], ensure_ascii=False)
    return f"{rtype}:" + hashlib.sha1(blob.encode("utf-8")).hexdigest()[:16]


def reduce_episode(
    annotations: set[str] | frozenset[str], anti_pattern: bool, counting: str = "paper"
) -> str | None:
    """One episode's vote for one record: ``"+"``, ``"-"`` or None (no vote).

    Ordinary relations: a contradiction takes precedence over support. Anti-patterns, the
    paper's reading (``counting="paper"``): an observed stall (or a supporting failure) supports
    the record; it is contradicted only when the episode holds a contradiction and no support or
    stall. The released code's (``counting="released"``): a stall supports it, and an episode
    with annotations but no stall contradicts it (a failure seen without a stall is a
    contradiction). An unannotated episode gives no vote. The stall marker itself is reported
    separately (``n0``).
    """
    if anti_pattern and counting == "released":
        if STALL in annotations:
            return SUPPORT
        return CONTRADICT if annotations & {SUPPORT, CONTRADICT} else None
    if anti_pattern:
        if SUPPORT in annotations or STALL in annotations:
            return SUPPORT
        return CONTRADICT if CONTRADICT in annotations else None
    if CONTRADICT in annotations:
        return CONTRADICT
    return SUPPORT if SUPPORT in annotations else None


@dataclass
class Record:
    """One local record with its occurrence counters and episode ledger.

    ``condition``: the applicability condition (normalized state cue or previous action);
    ``actions``: the operations in order; ``outcome``: the observed outcome class (``progress``,
    ``success``, ``state_change``, ``fail:<label>``, ``no_progress`` ...). ``text`` is a
    human-readable summary (display only; not part of the key). ``ledger`` maps
    ``"<scope>|<episode>"`` to the set of annotations seen in that episode.
    """

    type: str
    condition: str
    actions: tuple[str, ...]
    outcome: str
    text: str = ""
    scope: str = ""
    c_pos: int = 0
    c_neg: int = 0
    c_stall: int = 0
    ledger: dict[str, set[str]] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def key(self) -> str:
        """The record key (its relation; computed once, the relation fields never change)."""
        return relation_signature(self.type, self.condition, self.actions, self.outcome)

    @property
    def shareable(self) -> bool:
        return self.type in SHAREABLE_TYPES

    @property
    def anti_pattern(self) -> bool:
        return self.type in ANTI_PATTERN_TYPES

    def annotate(self, episode: str, sign: str, stall: bool = False) -> None:
        """Record one occurrence: its signed label and optional stall marker."""
        if sign == SUPPORT:
            self.c_pos += 1
        elif sign == CONTRADICT:
            self.c_neg += 1
        else:
            raise ValueError(f"evidence sign must be '+' or '-', got {sign!r}")
        marks = self.ledger.setdefault(episode, set())
        marks.add(sign)
        if stall:
            self.c_stall += 1
            marks.add(STALL)

    def promotion_counts(self, counting: str = "paper") -> tuple[int, int, int]:
        """Episode-reduced ``(n+, n-, n0)``; ``counting``: the anti-pattern reduction
        (:func:`reduce_episode`)."""
        n_pos = n_neg = n_stall = 0
        for marks in self.ledger.values():
            vote = reduce_episode(marks, self.anti_pattern, counting)
            n_pos += vote == SUPPORT
            n_neg += vote == CONTRADICT
            n_stall += STALL in marks
        return n_pos, n_neg, n_stall

    def merge(self, other: Record) -> None:
        """Consolidate another occurrence set of the same relation (same key)."""
        assert other.key == self.key, "only records with the same relation merge"
        self.c_pos += other.c_pos
        self.c_neg += other.c_neg
        self.c_stall += other.c_stall
        for episode, marks in other.ledger.items():
            self.ledger.setdefault(episode, set()).update(marks)
        if not self.text:
            self.text = other.text

    def to_dict(self) -> dict[str, Any]:
        return {
            "type": self.type,
            "condition": self.condition,
            "actions": list(self.actions),
            "outcome": self.outcome,
            "text": self.text,
            "scope": self.scope,
            "c_pos": self.c_pos,
            "c_neg": self.c_neg,
            "c_stall": self.c_stall,
            "ledger": {k: sorted(v) for k, v in sorted(self.ledger.items())},
            "extra": self.extra,
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Record:
        return Record(
            type=d["type"],
            condition=d["condition"],
            actions=tuple(d["actions"]),
            outcome=d["outcome"],
            text=d.get("text", ""),
            scope=d.get("scope", ""),
            c_pos=int(d.get("c_pos", 0)),
            c_neg=int(d.get("c_neg", 0)),
            c_stall=int(d.get("c_stall", 0)),
            ledger={k: set(v) for k, v in d.get("ledger", {}).items()},
            extra=dict(d.get("extra", {})),
        )


class RecordStore:
    """Records of one agent, consolidated by record key."""

    def __init__(self) -> None:
        self.records: dict[str, Record] = {}

    def add(self, record: Record) -> Record:
        existing = self.records.get(record.key)
        if existing is None:
            self.records[record.key] = record
            return record
        existing.merge(record)
        return existing

    def get(self, rtype: str, condition: str, actions: tuple[str, ...], outcome: str) -> Record:
        """The record with this relation, created empty when absent."""
        key = relation_signature(rtype, condition, actions, outcome)
        if key not in self.records:
            self.records[key] = Record(rtype, condition, actions, outcome)
        return self.records[key]

    def of_type(self, *types: str) -> list[Record]:
        return [r for r in self.records.values() if r.type in types]

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self):
        return iter(self.records.values())

    def to_list(self) -> list[dict[str, Any]]:
        return [r.to_dict() for r in self.records.values()]

    @staticmethod
    def from_list(rows: list[dict[str, Any]]) -> RecordStore:
        store = RecordStore()
        for row in rows:
            store.add(Record.from_dict(row))
        return store
