"""Progressive global memory collaboration: a full snapshot rebuild (paper Alg. B.1, B.3.3).

For every shareable local record of every agent: abstract each of its occurrences under its own
episode's task roles (:func:`abstract_occurrences`; Table 8's caption: role normalization at
induction time, B.3.1), so one local record seen in tasks with other role entities contributes
to each abstract form its episodes give, and the record stays local when no occurrence has a
transferable form. Group the abstract forms by exact global key and sum the episode-reduced
counts of the contributing parts (Eq. 3; ``n0`` by Eq. 20, outside the Wilson sample) together
with their occurrence counters and the contributing agents. Each aggregate then passes
``A_str``, ``A_info`` and the promotion score ``>= threshold`` (Eq. 6) or is left out.
:func:`global_merge` keeps one record per key. Every rebuild starts from an empty memory, so a
record whose local evidence is gone or no longer passes disappears. Nothing depends on the order
in which episodes were observed or records are stored (Proposition D.2).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from memarena.core.progress import Progress
from memarena.memory.memco.abstraction import AbstractForm, abstract
from memarena.memory.memco.base import GlobalRecord, RoleAdapter
from memarena.memory.memco.checks import informative, structural
from memarena.memory.memco.induction import OccurrenceLog, restrict
from memarena.memory.memco.records import Record, RecordStore
from memarena.memory.memco.wilson import empirical_rate, promotion_score

DIAGNOSTICS = (
    "shareable",  # shareable local records seen
    "kept_local",  # shareable records with no transferable abstract form for any occurrence
    "candidates",  # distinct global keys after grouping
    "failed_structure",  # A_str = 0
    "failed_information",  # A_info = 0
    "failed_threshold",  # score < threshold
    "promoted",
)


def record_roles(record: Record) -> dict[str, str]:
    """The roles stored on the record (``extra["roles"]``): used for the episodes whose roles
    the store's occurrence log does not hold (a hand-built store without a log)."""
    return dict(record.extra.get("roles") or {})


def abstract_occurrences(
    record: Record,
    log: OccurrenceLog | None,
    adapter: RoleAdapter,
    roles_of: Callable[[Record], dict[str, str]] = record_roles,
) -> list[tuple[AbstractForm, Record]]:
    """``Abstract`` per occurrence: each episode of ``record`` under its own task roles.

    An episode's roles are ``log.roles[episode]`` (``roles_of(record)`` for an episode the log
    holds no roles of; for every episode when there is no log). Returns one ``(form, part)`` per
    abstract form, ``part`` being what the episodes of that form contribute
    (:func:`~memarena.memory.memco.induction.restrict`); the record itself when every episode
    gives the same form. Empty when no occurrence has a transferable form (it stays local).
    """
    if log is None:
        form = abstract(record, roles_of(record), adapter)
        return [] if form is None else [(form, record)]
    groups: dict[str, tuple[AbstractForm, list[str]]] = {}
    dropped = False
    for episode in sorted(record.ledger) or [""]:
        roles = log.roles.get(episode)
        form = abstract(record, roles_of(record) if roles is None else roles, adapter)
        if form is None:
            dropped = True
        else:
            groups.setdefault(form.key, (form, []))[1].append(episode)
    if len(groups) == 1 and not dropped:
        ((form, _),) = groups.values()
        return [(form, record)]
    return [(form, restrict(record, log, set(episodes))) for form, episodes in groups.values()]


@dataclass
class _Aggregate:
    form: AbstractForm
    n_pos: int = 0
    n_neg: int = 0
    n_stall: int = 0
    c_pos: int = 0
    c_neg: int = 0
    c_stall: int = 0
    sources: set[str] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)

    def add(self, agent: str, record: Record, form: AbstractForm) -> None:
        n_pos, n_neg, n_stall = record.promotion_counts()
        self.n_pos += n_pos
        self.n_neg += n_neg
        self.n_stall += n_stall
        self.c_pos += record.c_pos
        self.c_neg += record.c_neg
        self.c_stall += record.c_stall
        self.sources.add(agent)
        if form.text:
            self.texts.add(form.text)


@dataclass
class GlobalSnapshot:
    """The promoted global records (by key) and how the rebuild decided."""

    records: dict[str, GlobalRecord] = field(default_factory=dict)
    diagnostics: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DIAGNOSTICS, 0))
    rule: str = "wilson"
    alpha: float = 0.05
    threshold: float = 0.35

    def __len__(self) -> int:
        return len(self.records)

    def __iter__(self) -> Iterator[GlobalRecord]:
        return iter(self.records.values())

    def __contains__(self, key: str) -> bool:
        return key in self.records

    def to_dict(self) -> dict[str, Any]:
        return {
            "rule": self.rule,
            "alpha": self.alpha,
            "threshold": self.threshold,
            "diagnostics": dict(self.diagnostics),
            "records": [r.to_dict() for r in self.records.values()],
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> GlobalSnapshot:
        records = [GlobalRecord.from_dict(r) for r in d.get("records", [])]
        return GlobalSnapshot(
            records={r.key: r for r in records},
            diagnostics=dict(d.get("diagnostics", {})),
            rule=d.get("rule", "wilson"),
            alpha=float(d.get("alpha", 0.05)),
            threshold=float(d.get("threshold", 0.35)),
        )


def global_merge(memory: dict[str, GlobalRecord], promoted: list[GlobalRecord]) -> None:
    """Algorithm B.3.3: one record per global key; a present key gets the current fields."""
    for record in promoted:
        memory[record.key] = record


def rebuild(
    local_stores: dict[str, RecordStore],
    roles_of: Callable[[Record], dict[str, str]] = record_roles,
    adapter: RoleAdapter | None = None,
    alpha: float = 0.05,
    threshold: float = 0.35,
    rule: str = "wilson",
) -> GlobalSnapshot:
    """A global snapshot built from empty out of all agents' current local records.

    Each store's occurrence log (``store.occurrences``, kept by induction) gives the roles of
    every episode; ``roles_of`` gives the roles of a record whose episodes it does not cover.
    """
    if adapter is None:
        from memarena.memory.memco.roles import GENERIC

        adapter = GENERIC
    snap = GlobalSnapshot(rule=rule, alpha=alpha, threshold=threshold)
    diag = snap.diagnostics
    groups: dict[str, _Aggregate] = {}
    progress = Progress(sum(len(s) for s in local_stores.values()), "memco global rebuild",
                        unit="records")  # fmt: skip
    for agent, store in local_stores.items():
        log = getattr(store, "occurrences", None)
        for record in store:
            progress.update()
            if not record.shareable:
                continue
            diag["shareable"] += 1
            parts = abstract_occurrences(record, log, adapter, roles_of)
            if not parts:
                diag["kept_local"] += 1
            for form, part in parts:
                groups.setdefault(form.key, _Aggregate(form)).add(str(agent), part, form)
    progress.close()
    diag["candidates"] = len(groups)
    promoted = []
    for key in sorted(groups):
        agg = groups[key]
        if not structural(agg.form):
            diag["failed_structure"] += 1
            continue
        if not informative(agg.form):
            diag["failed_information"] += 1
            continue
        score = promotion_score(agg.n_pos, agg.n_neg, rule, alpha)
        if score < threshold:
            diag["failed_threshold"] += 1
            continue
        promoted.append(_global_record(key, agg, score))
    global_merge(snap.records, promoted)
    diag["promoted"] = len(snap.records)
    return snap


def _global_record(key: str, agg: _Aggregate, score: float) -> GlobalRecord:
    form = agg.form
    return GlobalRecord(
        key=key,
        type=form.type,
        condition=form.condition,
        actions=form.actions,
        outcome=form.outcome,
        n_pos=agg.n_pos,
        n_neg=agg.n_neg,
        n_stall=agg.n_stall,
        score=score,
        rho=empirical_rate(agg.n_pos, agg.n_neg),
        c_pos=agg.c_pos,
        c_neg=agg.c_neg,
        c_stall=agg.c_stall,
        sources=sorted(agg.sources),
        text=min(agg.texts) if agg.texts else "",  # order-independent choice
    )
