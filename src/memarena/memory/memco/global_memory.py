"""Progressive global memory collaboration: a full snapshot rebuild (paper Alg. B.1, B.3.3).

For every shareable local record of every agent: abstract it (it stays local when there is no
transferable form), group the abstract forms by exact global key, and sum the episode-reduced
counts of the contributing local records (Eq. 3; ``n0`` by Eq. 20, outside the Wilson sample)
together with the occurrence counters and the contributing agents. Each aggregate then passes
``A_str``, ``A_info`` and the promotion score ``>= threshold`` (Eq. 6) or is left out.
:func:`global_merge` keeps one record per key. Every rebuild starts from an empty memory, so a
record whose local evidence is gone or no longer passes disappears.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from memarena.memory.memco.abstraction import AbstractForm, abstract
from memarena.memory.memco.base import GlobalRecord, RoleAdapter
from memarena.memory.memco.checks import informative, structural
from memarena.memory.memco.records import Record, RecordStore
from memarena.memory.memco.wilson import empirical_rate, promotion_score

DIAGNOSTICS = (
    "shareable",  # shareable local records seen
    "kept_local",  # shareable records without a transferable abstract form
    "candidates",  # distinct global keys after grouping
    "failed_structure",  # A_str = 0
    "failed_information",  # A_info = 0
    "failed_threshold",  # score < threshold
    "promoted",
)


def record_roles(record: Record) -> dict[str, str]:
    """The source task's roles, as the method stores them on the record."""
    return dict(record.extra.get("roles", {}))


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
    """A global snapshot built from empty out of all agents' current local records."""
    if adapter is None:
        from memarena.memory.memco.roles import GENERIC

        adapter = GENERIC
    snap = GlobalSnapshot(rule=rule, alpha=alpha, threshold=threshold)
    diag = snap.diagnostics
    groups: dict[str, _Aggregate] = {}
    for agent, store in local_stores.items():
        for record in store:
            if not record.shareable:
                continue
            diag["shareable"] += 1
            form = abstract(record, roles_of(record), adapter)
            if form is None:
                diag["kept_local"] += 1
                continue
            groups.setdefault(form.key, _Aggregate(form)).add(str(agent), record, form)
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
