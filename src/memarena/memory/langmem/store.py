"""The LangGraph store LangMem writes to, over memarena's embedder, and the ids it makes.

- :class:`EmbedderEmbeddings`: LangChain's ``Embeddings`` over ``services.embedder`` (the
  ``embed`` of ``InMemoryStore(index=...)``). The async methods run in the caller's thread (no
  executor threads); :meth:`EmbedderEmbeddings.primed` encodes a batch of queries at once
  before a batch of searches.
- :func:`new_store`: an ``InMemoryStore`` indexed by that embedder.
- :class:`SearchIndex`: the store's item embeddings under one namespace as one matrix, searched
  with the same scores and order as ``InMemoryStore.search(namespace, query=..., limit=k)``
  (whose Python scan over every item cost 184 ms per query at 10k items); built once per change
  of the store.
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

import numpy as np
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


class SearchIndex:
    """``InMemoryStore.search`` by query vector over a snapshot of the store's items.

    Same candidates (``store._filter_items``: every namespace under the prefix, items in
    insertion order, each with its field vectors in path order), same scores (the store's
    ``_cosine_similarity`` formula: row norms, zero rows scored 0), same order (a stable sort by
    descending score over the flat (item, vector) rows, the first row of an item giving its rank:
    max pooling), then unscored items when fewer than ``limit`` were found. The matrix and norms
    are computed once; a query is one matrix-vector product and a stable argsort.
    """

    def __init__(self, store: Any, namespace: tuple[str, ...]) -> None:
        from langgraph.store.base import SearchOp

        op = SearchOp(namespace_prefix=tuple(namespace), filter=None, limit=10, offset=0,
                      query="*")  # a query: every item with its vectors  # fmt: skip
        candidates = store._filter_items(op)
        self.items = [item for item, _ in candidates]
        self.scoreless = [item for item, vectors in candidates if not vectors]
        rows = [(i, v) for i, (_, vectors) in enumerate(candidates) for v in vectors]
        self.owner = np.array([i for i, _ in rows], dtype=np.int64)
        self.matrix = np.array([v for _, v in rows]) if rows else np.zeros((0, 0))
        self.norms = np.linalg.norm(self.matrix, axis=1) if rows else np.zeros(0)
        self.mask = self.norms != 0
        self.masked = self.matrix[self.mask]

    def search(self, query: list[float], limit: int) -> list[Any]:
        """The items ``store.search(namespace, query=<the text of query>, limit=limit)``
        returns, in order."""
        if not self.items or limit <= 0:
            return []
        found: list[Any] = []
        if len(self.owner):
            x = np.array(query)
            scores = np.zeros_like(self.norms)
            scores[self.mask] = np.dot(self.masked, x) / (
                self.norms[self.mask] * np.linalg.norm(x)
            )
            seen: set[int] = set()
            for row in np.argsort(-scores, kind="stable"):
                owner = int(self.owner[row])
                if owner in seen:
                    continue
                seen.add(owner)
                found.append(self.items[owner])
                if len(found) >= limit:
                    return found
        return found + self.scoreless[: limit - len(found)]


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
