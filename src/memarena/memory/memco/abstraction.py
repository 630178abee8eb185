"""Role-level abstraction of shareable records and their global key (paper B.3.1, Eq. 19).

:func:`abstract` keeps what makes a record transferable, its type, applicability condition,
action order and outcome, with role entities replaced by ``<role>`` and episode / scene anchors
(instance ids, raw observations, scopes, ledgers) removed. It returns None when the record has
no transferable form: ``case`` / ``reflection`` records (they stay local) and records with an
action the adapter cannot abstract. :func:`global_key` identifies an abstract relation; evidence,
display text and sources never enter it.
"""

from __future__ import annotations

from dataclasses import dataclass

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

    @property
    def key(self) -> str:
        return global_key(self.type, self.condition, self.actions, self.outcome)


def abstract(record: Record, roles: dict[str, str], adapter: RoleAdapter) -> AbstractForm | None:
    """The role-level form of ``record`` under its source task's ``roles``; None: stays local."""
    if record.type not in SHAREABLE_TYPES or not record.actions:
        return None
    actions = tuple(adapter.abstract_action(a, roles) for a in record.actions)
    if any(not a for a in actions):
        return None
    return AbstractForm(
        type=record.type,
        condition=adapter.abstract_text(record.condition, roles),
        actions=actions,  # type: ignore[arg-type]  # no None left
        outcome=record.outcome.strip(),
        text=adapter.abstract_text(record.text, roles),
    )
