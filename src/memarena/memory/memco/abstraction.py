"""Role-level abstraction of shareable records and their global key (paper B.3.1, Eq. 19).

:func:`abstract` keeps what makes a record transferable, its type, applicability condition,
action order and outcome, with role entities replaced by ``<role>`` and episode / scene anchors
(instance ids, raw observations, scopes, ledgers) removed. It returns None when the record has
no transferable form: ``case`` / ``reflection`` records (they stay local) and records with an
action the adapter cannot abstract. :func:`global_key` identifies an abstract relation; evidence,
display text and sources never enter it. Abstraction is a pure function of the relation and
the roles, cached: the global rebuild abstracts every occurrence (each under its own episode's
roles) after every memory change.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass
from functools import cached_property, lru_cache
from json.encoder import encode_basestring

from memarena.memory.memco.base import RoleAdapter
from memarena.memory.memco.records import SHAREABLE_TYPES, Record


def global_key(rtype: str, condition: str, actions: tuple[str, ...], outcome: str) -> str:
    """``StoredRecordID(type, sig(relation))``: the record type plus a hash of its relation.

    Equal to :func:`~memarena.memory.memco.records.relation_signature` (the ``json.dumps`` of
    ``[type, condition, [actions...], outcome]`` with ``ensure_ascii=False`` written out with the
    same C string encoder and separators, ~2x faster: the rebuild keys every abstract form).
    """
    enc = encode_basestring
    blob = f"[{enc(rtype)}, {enc(condition)}, [{', '.join(map(enc, actions))}], {enc(outcome)}]"
    return f"{rtype}:" + hashlib.sha1(blob.encode("utf-8")).hexdigest()[:16]


@dataclass(frozen=True)
class AbstractForm:
    """The transferable relation of one local record (display text is not part of the key)."""

    type: str
    condition: str
    actions: tuple[str, ...]
    outcome: str
    text: str = ""

    @cached_property
    def key(self) -> str:
        return global_key(self.type, self.condition, self.actions, self.outcome)


RolesKey = tuple[tuple[str, str], ...]


def roles_key(roles: dict[str, str]) -> RolesKey:
    """The hashable, order-free form of a roles dict (the caches below are keyed by it)."""
    return tuple(sorted(roles.items()))


def abstract(record: Record, roles: dict[str, str], adapter: RoleAdapter) -> AbstractForm | None:
    """The role-level form of ``record`` under one episode's task ``roles``; None: stays local."""
    if record.type not in SHAREABLE_TYPES or not record.actions:
        return None
    relation = (record.type, record.condition, record.actions, record.outcome, record.text)
    return _abstract(adapter, *relation, roles_key(roles))


def abstract_uncached(
    record: Record, roles: dict[str, str], adapter: RoleAdapter
) -> AbstractForm | None:
    """:func:`abstract` computed directly from the adapter, no cache (the reference path)."""
    if record.type not in SHAREABLE_TYPES or not record.actions:
        return None
    abstract_actions = tuple(adapter.abstract_action(a, roles) for a in record.actions)
    if any(not a for a in abstract_actions):
        return None
    return AbstractForm(
        type=record.type,
        condition=adapter.abstract_text(record.condition, roles),
        actions=abstract_actions,  # type: ignore[arg-type]  # no None left
        outcome=record.outcome.strip(),
        text=adapter.abstract_text(record.text, roles),
    )


@lru_cache(maxsize=1 << 17)
def _abstract(
    adapter: RoleAdapter,
    rtype: str,
    condition: str,
    actions: tuple[str, ...],
    outcome: str,
    text: str,
    roles: RolesKey,
) -> AbstractForm | None:
    form = abstract_relation(adapter, rtype, condition, actions, outcome, roles)
    if form is None:
        return None
    return AbstractForm(
        form.type, form.condition, form.actions, form.outcome, abstract_text(adapter, text, roles)
    )


@lru_cache(maxsize=1 << 18)
def abstract_relation(
    adapter: RoleAdapter,
    rtype: str,
    condition: str,
    actions: tuple[str, ...],
    outcome: str,
    roles: RolesKey,
) -> AbstractForm | None:
    """:func:`abstract` without the display text (``text=""``), which the global key and the
    checks never read: the global rebuild abstracts a record's text only for the keys it
    promotes (:func:`abstract_text`). The caller checks the record type (shareable, with
    actions)."""
    abstract_actions = tuple(_action(adapter, a, roles) for a in actions)
    if any(not a for a in abstract_actions):
        return None
    return AbstractForm(
        type=rtype,
        condition=abstract_text(adapter, condition, roles),
        actions=abstract_actions,  # type: ignore[arg-type]  # no None left
        outcome=outcome.strip(),
    )


@lru_cache(maxsize=1 << 18)
def abstract_text(adapter: RoleAdapter, text: str, roles: RolesKey) -> str:
    """``adapter.abstract_text(text, roles)``, cached (conditions recur across records)."""
    return adapter.abstract_text(text, dict(roles))


@lru_cache(maxsize=1 << 17)
def _action(adapter: RoleAdapter, action: str, roles: RolesKey) -> str | None:
    """``adapter.abstract_action(action, roles)``, cached (actions recur across records)."""
    return adapter.abstract_action(action, dict(roles))
