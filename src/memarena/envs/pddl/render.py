"""Natural-language rendering of PDDL atoms, states and goals.

Atoms are pyperplan's strings, e.g. ``"(at ball1 rooma)"``. A sentence ends with a full stop:
``"ball1 is at rooma."``. Unknown predicates fall back to ``"<pred> is true for a, b."``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from functools import lru_cache

from memarena.envs.pddl.specs import DomainSpec

GOAL_PREFIX = "The goal is to satisfy the following conditions: "

_DIGITS = re.compile(r"(\d+)")


@lru_cache(maxsize=65536)
def split_atom(atom: str) -> tuple[str, tuple[str, ...]]:
    """``"(at ball1 rooma)"`` -> ``("at", ("ball1", "rooma"))``."""
    parts = atom.strip("()").split()
    return parts[0], tuple(parts[1:])


def natural_key(text: str) -> tuple:
    """Sort key that orders ``ball2`` before ``ball10`` and ``p02`` before ``p10``."""
    return tuple(int(t) if t.isdigit() else t for t in _DIGITS.split(text))


def atom_sentence(atom: str, spec: DomainSpec | None) -> str:
    """One atom as a sentence with a final full stop."""
    pred, args = split_atom(atom)
    template = spec.templates.get((pred, len(args))) if spec is not None else None
    if template is not None:
        return template.format(*args) + "."
    if not args:
        return f"{pred} is true."
    return f"{pred} is true for {', '.join(args)}."


def _atom_order(atom: str, order: Mapping[tuple[str, int], int]) -> tuple:
    pred, args = split_atom(atom)
    return (order.get((pred, len(args)), len(order)), pred, tuple(natural_key(a) for a in args))


def state_sentences(atoms: Iterable[str], spec: DomainSpec | None) -> list[str]:
    """Sentences for a set of atoms: predicates in the spec's template order (unknown ones
    last, by name), arguments in natural order."""
    order = {k: i for i, k in enumerate(spec.templates)} if spec is not None else {}
    return [atom_sentence(a, spec) for a in sorted(atoms, key=lambda a: _atom_order(a, order))]


def describe_state(atoms: Iterable[str], spec: DomainSpec | None) -> str:
    return " ".join(state_sentences(atoms, spec))


def goal_sentences(goals: Iterable[str], spec: DomainSpec | None) -> list[str]:
    """Goal sentences in plain string order (AgentBoard's subgoal order)."""
    return sorted(atom_sentence(g, spec) for g in goals)


def goal_text(goals: Iterable[str], spec: DomainSpec | None) -> str:
    """``"The goal is to satisfy the following conditions: ball1 is at roomb. ..."``."""
    return GOAL_PREFIX + " ".join(goal_sentences(goals, spec))


def describe_change(added: Iterable[str], deleted: Iterable[str], spec: DomainSpec | None) -> str:
    """What an action changed: ``"Now true: ... No longer true: ..."``."""
    parts = []
    added_s = state_sentences(added, spec)
    deleted_s = state_sentences(deleted, spec)
    if added_s:
        parts.append("Now true: " + " ".join(added_s))
    if deleted_s:
        parts.append("No longer true: " + " ".join(deleted_s))
    return " ".join(parts) if parts else "Nothing changed."
