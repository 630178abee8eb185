"""The LangGraph store LangMem writes to, over memarena's embedder, and the ids it makes.

- :class:`EmbedderEmbeddings`: LangChain's ``Embeddings`` over ``services.embedder`` (the
  ``embed`` of ``InMemoryStore(index=...)``). The async methods run in the caller's thread (no
  executor threads); :meth:`EmbedderEmbeddings.primed` encodes a batch of queries at once
  before a batch of searches.
- :func:`new_store`: an ``InMemoryStore`` indexed by that embedder.
- :func:`deterministic_ids`: LangMem draws ``uuid4()`` for each new memory's key and for the
  session tag in its prompt, so keys and prompts would change on every run: the call cache
  could never replay a run and memory ids in the records would differ. While the manager runs,
  its module's ``uuid`` is replaced by one whose ``uuid4()`` comes from the running worker's
  :class:`IdStream` (seeded by the observed episode), falling back to ``uuid.uuid4``.
"""

from __future__ import annotations

import contextlib
import hashlib
import uuid
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from typing import Any

from langchain_core.embeddings import Embeddings

from memarena.core import Embedder


class EmbedderEmbeddings(Embeddings):
    """LangChain embeddings computed by a memarena embedder (built on first use)."""

    def __init__(self, embedder: Callable[[], Embedder]) -> None:
        self._embedder = embedder
        self._primed: dict[str, list[float]] = {}

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        if not texts:
            return []
        return [[float(x) for x in row] for row in self._embedder().encode(list(texts))]

    def embed_query(self, text: str) -> list[float]:
        found = self._primed.get(text)
        return found if found is not None else self.embed_documents([text])[0]

    async def aembed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.embed_documents(texts)

    async def aembed_query(self, text: str) -> list[float]:
        return self.embed_query(text)

    @contextlib.contextmanager
    def primed(self, queries: list[str]) -> Iterator[None]:
        """Encode ``queries`` in one call; searches for them inside the block reuse it."""
        unique = list(dict.fromkeys(queries))
        self._primed = dict(zip(unique, self.embed_documents(unique), strict=True))
        try:
            yield
        finally:
            self._primed = {}


def new_store(embeddings: Embeddings, dims: int, fields: list[str] | None) -> Any:
    """An in-memory LangGraph store whose items are embedded by ``embeddings`` (``fields``:
    the value paths embedded; None: the whole value, the store's default)."""
    from langgraph.store.memory import InMemoryStore

    index: dict[str, Any] = {"dims": int(dims), "embed": embeddings}
    if fields:
        index["fields"] = list(fields)
    return InMemoryStore(index=index)


class IdStream:
    """uuid-shaped ids from sha256(``seed``#n), n = 0, 1, ..."""

    def __init__(self, seed: str) -> None:
        self.seed, self.n = seed, 0

    def next(self) -> uuid.UUID:
        digest = hashlib.sha256(f"{self.seed}#{self.n}".encode()).digest()
        self.n += 1
        return uuid.UUID(bytes=digest[:16], version=4)


CURRENT_IDS: ContextVar[IdStream | None] = ContextVar("langmem_ids", default=None)


class _UuidModule:
    """The ``uuid`` module with ``uuid4`` drawn from the current :class:`IdStream`."""

    def __getattr__(self, name: str) -> Any:
        return getattr(uuid, name)

    @staticmethod
    def uuid4() -> uuid.UUID:
        stream = CURRENT_IDS.get()
        return stream.next() if stream is not None else uuid.uuid4()


@contextlib.contextmanager
def deterministic_ids() -> Iterator[None]:
    """LangMem's extraction module draws its uuid4s from the current :class:`IdStream`."""
    from langmem.knowledge import extraction

    original = extraction.uuid
    extraction.uuid = _UuidModule()
    try:
        yield
    finally:
        extraction.uuid = original
