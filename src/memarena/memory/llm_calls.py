"""Memory-side LLM calls shared by the methods: token accounting per purpose, counted
fallbacks, and batched JSON-constrained requests that never raise on malformed output."""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from typing import Any

from memarena.core import Backbone, ChatRequest, Completion
from memarena.core.progress import heartbeat

log = logging.getLogger(__name__)


def clip_text(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters (ending in "...") when longer."""
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


def add_usage(usage: dict[str, int] | None, completions: Sequence[Completion]) -> None:
    """Count one LLM call, its requests and their tokens into a per-purpose usage entry."""
    if usage is None or not completions:
        return
    usage["calls"] = usage.get("calls", 0) + 1
    usage["requests"] = usage.get("requests", 0) + len(completions)
    usage["prompt_tokens"] = usage.get("prompt_tokens", 0) + sum(
        c.prompt_tokens for c in completions
    )
    usage["completion_tokens"] = usage.get("completion_tokens", 0) + sum(
        c.completion_tokens for c in completions
    )


def record_fallback(llm: Any, kind: str, fallbacks: dict[str, int] | None = None) -> None:
    """Count a fallback on the backbone (when it can count) and in ``fallbacks``."""
    if fallbacks is not None:
        fallbacks[kind] = fallbacks.get(kind, 0) + 1
    recorder = getattr(llm, "record_fallback", None)
    if callable(recorder):
        recorder(kind)
    else:
        log.warning("memory fallback %s (backbone %r cannot count it)", kind, llm)


def json_batch(
    llm: Backbone,
    requests: Sequence[ChatRequest],
    *,
    usage: dict[str, int] | None,
    fallbacks: dict[str, int] | None,
    kind: str,
) -> list[Any]:
    """One batched call of JSON-schema requests; each answer parsed with ``json.loads``.

    An answer the backbone flagged as a fallback, or that does not parse, is ``None`` and is
    counted once as fallback ``kind`` (on the backbone and in ``fallbacks``). A call that runs
    longer than 15 s logs a heartbeat with an ETA (:func:`generate_logged`)."""
    if not requests:
        return []
    completions = generate_logged(llm, list(requests), kind)
    add_usage(usage, completions)
    out: list[Any] = []
    for completion in completions:
        value = None if completion.fallback else _loads(completion.text)
        if value is None:
            record_fallback(llm, kind, fallbacks)
        out.append(value)
    return out


def generate_logged(llm: Backbone, requests: list[ChatRequest], kind: str) -> list[Completion]:
    """``llm.generate(requests)`` (one batched engine call, which reports nothing until it
    ends) under a heartbeat: past 15 s it logs how long the ``kind`` call has run and an ETA
    from earlier calls of that kind (:func:`memarena.core.progress.heartbeat`)."""
    with heartbeat(f"memory LLM {kind}", len(requests)):
        return llm.generate(requests)


def _loads(text: str) -> Any:
    try:
        return json.loads(text)
    except (ValueError, TypeError):
        return None
