"""Sentence embedders (the embedded all-MiniLM-L6-v2 by default; Qwen3-Embedding for users).

``SentenceEmbedder`` is imported lazily: sentence-transformers takes seconds to import.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memarena.embed.sentence import SentenceEmbedder

__all__ = ["SentenceEmbedder"]


def __getattr__(name: str) -> Any:
    if name == "SentenceEmbedder":
        from memarena.embed.sentence import SentenceEmbedder

        return SentenceEmbedder
    raise AttributeError(f"module 'memarena.embed' has no attribute {name!r}")
