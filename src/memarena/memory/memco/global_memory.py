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

``promotion_types`` and ``anti_pattern_counting`` (``"paper"`` or ``"released"``) choose the
paper's or MemCo's released code's reading of which failure records may be promoted (``A_str``,
checks.py) and of how an anti-pattern's episode evidence is reduced (records.py); both
rebuilds honour them.

:func:`rebuild` is the fast path: it abstracts each record once per distinct roles of its
episodes (not per episode), abstracts only the relation (type, condition, actions, outcome:
what the key and the checks read) through caches that persist across rebuilds (records, their
actions and conditions recur across episodes and agents), and abstracts a record's display text
only for the keys it promotes. :func:`rebuild_reference` is the direct computation, no caches;
both give the same snapshot (tests/memory/test_memco_rebuild_speed.py).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

from memarena.core.gc_pause import gc_paused
from memarena.core.progress import Progress
from memarena.memory.memco.abstraction import (
    AbstractForm,
    RolesKey,
    abstract,
    abstract_relation,
    abstract_text,
    abstract_uncached,
    roles_key,
)
from memarena.memory.memco.base import GlobalRecord, RoleAdapter
from memarena.memory.memco.checks import informative, structural
from memarena.memory.memco.induction import OccurrenceLog, restrict
from memarena.memory.memco.records import SHAREABLE_TYPES, Record, RecordStore
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
    abstract_fn: Callable[[Record, dict[str, str], RoleAdapter], AbstractForm | None] = abstract,
) -> list[tuple[AbstractForm, Record]]:
    """``Abstract`` per occurrence: each episode of ``record`` under its own task roles.

    An episode's roles are ``log.roles[episode]`` (``roles_of(record)`` for an episode the log
    holds no roles of; for every episode when there is no log). Returns one ``(form, part)`` per
    abstract form, ``part`` being what the episodes of that form contribute
    (:func:`~memarena.memory.memco.induction.restrict`); the record itself when every episode
    gives the same form. Empty when no occurrence has a transferable form (it stays local).
    """
    if log is None:
        form = abstract_fn(record, roles_of(record), adapter)
        return [] if form is None else [(form, record)]
    groups: dict[str, tuple[AbstractForm, list[str]]] = {}
    dropped = False
    for episode in sorted(record.ledger) or [""]:
        roles = log.roles.get(episode)
        form = abstract_fn(record, roles_of(record) if roles is None else roles, adapter)
        if form is None:
            dropped = True
        else:
            groups.setdefault(form.key, (form, []))[1].append(episode)
    if len(groups) == 1 and not dropped:
        ((form, _),) = groups.values()
        return [(form, record)]
    return [(form, restrict(record, log, set(episodes))) for form, episodes in groups.values()]


def _occurrence_parts(
    record: Record,
    log: OccurrenceLog | None,
    adapter: RoleAdapter,
    roles_of: Callable[[Record], dict[str, str]],
    episode_keys: dict[str, RolesKey],
) -> list[tuple[AbstractForm, Record, RolesKey]]:
    """:func:`abstract_occurrences` with relation-only forms (``text=""``), each with the roles
    of its first episode (the reference's form text is the record text abstracted under them).

    One abstraction per distinct roles among the record's episodes; ``episode_keys`` memoises
    the roles key of each logged episode over one rebuild."""
    if record.type not in SHAREABLE_TYPES or not record.actions:
        return []  # every occurrence abstracts to None: the record stays local
    relation = (record.type, record.condition, record.actions, record.outcome)
    if log is None:
        key = roles_key(roles_of(record))
        form = abstract_relation(adapter, *relation, key)
        return [] if form is None else [(form, record, key)]
    if len(record.ledger) <= 1:  # one occurrence (most records): one form or none
        episode = next(iter(record.ledger), "")
        key = episode_keys.get(episode)
        if key is None:
            roles = log.roles.get(episode)
            key = roles_key(roles_of(record) if roles is None else roles)
            if roles is not None:
                episode_keys[episode] = key
        form = abstract_relation(adapter, *relation, key)
        return [] if form is None else [(form, record, key)]
    own: RolesKey | None = None  # roles_of(record), for episodes the log holds no roles of
    forms: dict[RolesKey, AbstractForm | None] = {}
    groups: dict[str, tuple[AbstractForm, RolesKey, list[str]]] = {}
    dropped = False
    for episode in sorted(record.ledger) or [""]:
        key = episode_keys.get(episode)
        if key is None:
            roles = log.roles.get(episode)
            if roles is None:
                key = own = roles_key(roles_of(record)) if own is None else own
            else:
                key = episode_keys[episode] = roles_key(roles)
        if key in forms:
            form = forms[key]
        else:
            form = forms[key] = abstract_relation(adapter, *relation, key)
        if form is None:
            dropped = True
        elif (group := groups.get(form.key)) is None:
            groups[form.key] = (form, key, [episode])
        else:
            group[2].append(episode)
    if len(groups) == 1 and not dropped:
        ((form, key, _),) = groups.values()
        return [(form, record, key)]
    return [(form, restrict(record, log, set(eps)), key) for form, key, eps in groups.values()]


@dataclass
class _Aggregate:
    form: AbstractForm
    counting: str = "paper"  # the anti-pattern reduction (records.reduce_episode)
    n_pos: int = 0
    n_neg: int = 0
    n_stall: int = 0
    c_pos: int = 0
    c_neg: int = 0
    c_stall: int = 0
    sources: set[str] = field(default_factory=set)
    texts: set[str] = field(default_factory=set)
    # (record text, roles) whose abstraction is a display text, abstracted on promotion
    pending: set[tuple[str, RolesKey]] = field(default_factory=set)

    def add(self, agent: str, record: Record, form: AbstractForm) -> None:
        self.count(agent, record)
        if form.text:
            self.texts.add(form.text)

    def count(self, agent: str, record: Record) -> None:
        n_pos, n_neg, n_stall = record.promotion_counts(self.counting)
        self.n_pos += n_pos
        self.n_neg += n_neg
        self.n_stall += n_stall
        self.c_pos += record.c_pos
        self.c_neg += record.c_neg
        self.c_stall += record.c_stall
        self.sources.add(agent)

    def display_texts(self, adapter: RoleAdapter) -> set[str]:
        pending = (abstract_text(adapter, text, roles) for text, roles in self.pending)
        return self.texts | {text for text in pending if text}


@dataclass
class GlobalSnapshot:
    """The promoted global records (by key) and how the rebuild decided."""

    records: dict[str, GlobalRecord] = field(default_factory=dict)
    diagnostics: dict[str, int] = field(default_factory=lambda: dict.fromkeys(DIAGNOSTICS, 0))
    rule: str = "wilson"
    alpha: float = 0.05
    threshold: float = 0.35
    promotion_types: str = "paper"
    anti_pattern_counting: str = "paper"

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
            "promotion_types": self.promotion_types,
            "anti_pattern_counting": self.anti_pattern_counting,
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
            promotion_types=d.get("promotion_types", "paper"),
            anti_pattern_counting=d.get("anti_pattern_counting", "paper"),
        )


def global_merge(memory: dict[str, GlobalRecord], promoted: list[GlobalRecord]) -> None:
    """Algorithm B.3.3: one record per global key; a present key gets the current fields."""
    for record in promoted:
        memory[record.key] = record


def _default_adapter(adapter: RoleAdapter | None) -> RoleAdapter:
    if adapter is None:
        from memarena.memory.memco.roles import GENERIC

        return GENERIC
    return adapter


def rebuild(
    local_stores: dict[str, RecordStore],
    roles_of: Callable[[Record], dict[str, str]] = record_roles,
    adapter: RoleAdapter | None = None,
    alpha: float = 0.05,
    threshold: float = 0.35,
    rule: str = "wilson",
    promotion_types: str = "paper",
    anti_pattern_counting: str = "paper",
) -> GlobalSnapshot:
    """A global snapshot built from empty out of all agents' current local records.

    Each store's occurrence log (``store.occurrences``, kept by induction) gives the roles of
    every episode; ``roles_of`` gives the roles of a record whose episodes it does not cover.
    Equal to :func:`rebuild_reference` (the caches only skip repeated abstraction).
    """
    adapter = _default_adapter(adapter)
    snap = GlobalSnapshot(
        rule=rule, alpha=alpha, threshold=threshold, promotion_types=promotion_types,
        anti_pattern_counting=anti_pattern_counting,
    )  # fmt: skip
    diag = snap.diagnostics
    groups: dict[str, _Aggregate] = {}
    progress = Progress(sum(len(s) for s in local_stores.values()), "memco global rebuild",
                        unit="records")  # fmt: skip
    with gc_paused():
        for agent, store in local_stores.items():
            log = getattr(store, "occurrences", None)
            episode_keys: dict[str, RolesKey] = {}
            name = str(agent)
            for record in store:
                if not record.shareable:
                    continue
                diag["shareable"] += 1
                parts = _occurrence_parts(record, log, adapter, roles_of, episode_keys)
                if not parts:
                    diag["kept_local"] += 1
                for form, part, roles in parts:
                    agg = groups.get(form.key)
                    if agg is None:
                        agg = groups[form.key] = _Aggregate(form, anti_pattern_counting)
                    agg.count(name, part)
                    agg.pending.add((record.text, roles))
            progress.update(len(store))
        progress.close()
        return _promote(snap, groups, adapter)


def rebuild_reference(
    local_stores: dict[str, RecordStore],
    roles_of: Callable[[Record], dict[str, str]] = record_roles,
    adapter: RoleAdapter | None = None,
    alpha: float = 0.05,
    threshold: float = 0.35,
    rule: str = "wilson",
    promotion_types: str = "paper",
    anti_pattern_counting: str = "paper",
) -> GlobalSnapshot:
    """:func:`rebuild` computed directly: every occurrence abstracted from the adapter, no
    cache (the equivalence reference of the fast path)."""
    adapter = _default_adapter(adapter)
    snap = GlobalSnapshot(
        rule=rule, alpha=alpha, threshold=threshold, promotion_types=promotion_types,
        anti_pattern_counting=anti_pattern_counting,
    )  # fmt: skip
    diag = snap.diagnostics
    groups: dict[str, _Aggregate] = {}
    for agent, store in local_stores.items():
        log = getattr(store, "occurrences", None)
        for record in store:
            if not record.shareable:
                continue
            diag["shareable"] += 1
            parts = abstract_occurrences(record, log, adapter, roles_of, abstract_uncached)
            if not parts:
                diag["kept_local"] += 1
            for form, part in parts:
                agg = groups.setdefault(form.key, _Aggregate(form, anti_pattern_counting))
                agg.add(str(agent), part, form)
    return _promote(snap, groups, adapter, _failed_check)


# (promotion types, global key) -> the failed check's counter ("" = both hold)
_CHECKED: dict[tuple[str, str], str] = {}


def _failed_check(form: AbstractForm, types: str = "paper") -> str:
    """``"failed_structure"``, ``"failed_information"`` or ``""`` (``A_str`` and ``A_info``
    hold); ``types``: the promotion-types reading ``A_str`` follows."""
    if not structural(form, types):
        return "failed_structure"
    return "" if informative(form) else "failed_information"


def _check_cached(form: AbstractForm, types: str = "paper") -> str:
    """:func:`_failed_check` memoised by reading and global key (both checks read only the
    relation the key identifies)."""
    failed = _CHECKED.get((types, form.key))
    if failed is None:
        if len(_CHECKED) >= 1 << 19:
            _CHECKED.clear()
        failed = _CHECKED[types, form.key] = _failed_check(form, types)
    return failed


def _promote(
    snap: GlobalSnapshot,
    groups: dict[str, _Aggregate],
    adapter: RoleAdapter,
    check: Callable[[AbstractForm, str], str] = _check_cached,
) -> GlobalSnapshot:
    """``A_str``, ``A_info`` and the promotion score per aggregate; the passing ones merged."""
    diag = snap.diagnostics
    diag["candidates"] = len(groups)
    promoted = []
    for key in sorted(groups):
        agg = groups[key]
        failed = check(agg.form, snap.promotion_types)
        if failed:
            diag[failed] += 1
            continue
        score = promotion_score(agg.n_pos, agg.n_neg, snap.rule, snap.alpha)
        if score < snap.threshold:
            diag["failed_threshold"] += 1
            continue
        promoted.append(_global_record(key, agg, score, agg.display_texts(adapter)))
    global_merge(snap.records, promoted)
    diag["promoted"] = len(snap.records)
    return snap


def _global_record(key: str, agg: _Aggregate, score: float, texts: set[str]) -> GlobalRecord:
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
        text=min(texts) if texts else "",  # order-independent choice
    )
