"""What a memory costs, counted where it happens and stored with the records.

A memory method counts its own LLM calls in ``token_usage`` (``{purpose: {calls, requests,
prompt_tokens, completion_tokens}}``) and its malformed answers in ``fallbacks`` (``{kind: n}``).
Those are counters of one process: a resumed run skips finished episodes and would count less.
So the runner measures what each retrieval added (:func:`counters` before and after, the
:func:`difference`) and keeps it per episode as a :class:`MemoryCost` in the episode record;
what a learning memory spends observing a chunk is kept on that chunk's records the same way.
Every cost metric is then a sum over the records on disk (:func:`add_into`), the same for a
resumed run as for an uninterrupted one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

Nested = dict[str, Any]  # {purpose: {counter: int}} or {kind: int}


def counters(memory: Any) -> Nested:
    """A copy of ``memory``'s LLM usage and fallback counters."""
    return {
        "usage": {p: dict(u) for p, u in getattr(memory, "token_usage", {}).items()},
        "fallbacks": dict(getattr(memory, "fallbacks", {}) or {}),
    }


def difference(after: Mapping[str, Any], before: Mapping[str, Any]) -> Nested:
    """``after - before`` for nested dicts of ints; zero entries are left out."""
    out: Nested = {}
    for key, value in after.items():
        old = before.get(key)
        if isinstance(value, Mapping):
            inner = difference(value, old if isinstance(old, Mapping) else {})
            if inner:
                out[key] = inner
        elif isinstance(value, int | float) and not isinstance(value, bool):
            change = value - (old or 0)
            if change:
                out[key] = change
    return out


def add_into(total: Nested, part: Mapping[str, Any] | None) -> Nested:
    """Add the nested counters of ``part`` into ``total`` (in place) and return it."""
    for key, value in (part or {}).items():
        if isinstance(value, Mapping):
            add_into(total.setdefault(key, {}), value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            total[key] = total.get(key, 0) + value
    return total


def negated(part: Mapping[str, Any] | None) -> Nested:
    """``-part`` for nested counters (every key kept), so ``add_into(total, negated(x))``
    takes ``x`` back out of ``total``."""
    out: Nested = {}
    for key, value in (part or {}).items():
        if isinstance(value, Mapping):
            out[key] = negated(value)
        elif isinstance(value, int | float) and not isinstance(value, bool):
            out[key] = -value
    return out


def split(spent: Mapping[str, Any], n: int) -> list[Nested]:
    """``spent`` (nested int counters) shared among ``n`` episodes that were answered in one
    batch: each counter divided evenly, the remainder going to the first ones, so the shares
    add up to ``spent`` exactly."""
    shares: list[Nested] = [{} for _ in range(n)]
    for key, value in spent.items():
        if isinstance(value, Mapping):
            for share, inner in zip(shares, split(value, n), strict=True):
                if inner:
                    share[key] = inner
        elif isinstance(value, int) and not isinstance(value, bool):
            base, extra = divmod(value, n)
            for i, share in enumerate(shares):
                if base + (i < extra):
                    share[key] = base + (i < extra)
    return shares


def tokens(usage: Mapping[str, Mapping[str, int]] | None) -> int:
    """Prompt + completion tokens of a ``{purpose: counters}`` usage."""
    return sum(
        int(u.get("prompt_tokens", 0)) + int(u.get("completion_tokens", 0))
        for u in (usage or {}).values()
    )


def requests(usage: Mapping[str, Mapping[str, int]] | None) -> int:
    """Requests of a ``{purpose: counters}`` usage (calls where requests are not counted)."""
    return sum(int(u.get("requests", u.get("calls", 0))) for u in (usage or {}).values())


@dataclass
class MemoryCost:
    """An episode's retrievals: how many calls, the entries and words they showed, and the
    memory's own LLM usage and fallbacks while answering them."""

    calls: int = 0
    entries: int = 0
    words: int = 0
    usage: Nested = field(default_factory=dict)
    fallbacks: Nested = field(default_factory=dict)

    def add(self, memory_ids: list[str], slots: Mapping[str, str], spent: Mapping) -> None:
        """Count one retrieval that showed ``memory_ids`` / ``slots`` and cost ``spent``
        (a :func:`difference` of :func:`counters`)."""
        self.calls += 1
        self.entries += len(memory_ids)
        self.words += sum(len(str(text).split()) for text in slots.values())
        add_into(self.usage, spent.get("usage"))
        add_into(self.fallbacks, spent.get("fallbacks"))

    def to_json(self) -> Nested | None:
        """The record's ``memory_cost`` (None when the memory was never asked)."""
        if not self.calls:
            return None
        out: Nested = {"calls": self.calls, "entries": self.entries, "words": self.words}
        if self.usage:
            out["usage"] = self.usage
        if self.fallbacks:
            out["fallbacks"] = self.fallbacks
        return out
