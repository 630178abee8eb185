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

from dataclasses import dataclass
from functools import cached_property, lru_cache

from memarena.memory.memco.base import RoleAdapter
from memarena.memory.memco.records import SHAREABLE_TYPES, Record, relation_signature


def global_key(rtype: str, condition: str, actions: tuple[str, ...], outcome: str) -> str:
    """``StoredRecordID(type, sig(relation))``: the record type plus a hash of its relation."""
    return relation_signature(rtype, condition, tuple(actions), outcome)


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


def abstract(record: Record, roles: dict[str, str], adapter: RoleAdapter) -> AbstractForm | None:
    """The role-level form of ``record`` under one episode's task ``roles``; None: stays local."""
    if record.type not in SHAREABLE_TYPES or not record.actions:
        return None
    relation = (record.type, record.condition, record.actions, record.outcome, record.text)
    return _abstract(adapter, *relation, tuple(sorted(roles.items())))


@lru_cache(maxsize=1 << 17)
def _abstract(
    adapter: RoleAdapter,
    rtype: str,
    condition: str,
    actions: tuple[str, ...],
    outcome: str,
    text: str,
    roles: tuple[tuple[str, str], ...],
) -> AbstractForm | None:
    role_map = dict(roles)
    abstract_actions = tuple(adapter.abstract_action(a, role_map) for a in actions)
    if any(not a for a in abstract_actions):
        return None
    return AbstractForm(
        type=rtype,
        condition=adapter.abstract_text(condition, role_map),
        actions=abstract_actions,  # type: ignore[arg-type]  # no None left
        outcome=outcome.strip(),
        text=adapter.abstract_text(text, role_map),
    )
