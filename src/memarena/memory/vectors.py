"""Embedding helpers the embedding-based memory methods share.

- :func:`top_k`: the indices of the ``k`` highest scores, highest first, ties by lower index:
  exactly ``np.argsort(-scores, kind="stable")[:k]``, but through ``np.argpartition`` when
  ``k`` is small against the number of scores (O(n) instead of O(n log n)).
- :class:`RowMatrix`: unit float32 rows in one contiguous buffer that grows in chunks (an
  append never copies the whole matrix; a ``vstack`` per insert does).
- :func:`pack` / :func:`unpack`: a matrix as base64 of its little-endian float32 bytes with
  the embedder's identity (:func:`embedder_identity`: name, dimension, model, maximum sequence
  length, normalisation), so a snapshot stores its embeddings and a load uses them instead of
  encoding every stored text again (10k texts: ~20 s on the embedded MiniLM).
  :func:`stored_matches` tells whether stored vectors came from the embedder in use: every
  field both sides recorded must agree (a snapshot from before a field was recorded is
  compared on the fields it has).
- :class:`QueryEncoder`: one ``encode`` call for a whole wave of queries, with a bounded LRU
  of the texts already embedded (the same test task is retrieved once per run).
"""

from __future__ import annotations

import base64
import logging
from collections import OrderedDict
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

log = logging.getLogger(__name__)

CHUNK = 1024  # rows a RowMatrix grows by
_PARTITION_MIN = 256  # below this many scores a full stable sort is as fast


def unit_rows(vectors: Any) -> np.ndarray:
    """``vectors`` as float32 rows of unit norm (zero rows stay zero)."""
    rows = np.asarray(vectors, dtype=np.float32)
    if rows.ndim == 1:
        rows = rows[None, :]
    norms = np.linalg.norm(rows, axis=1, keepdims=True)
    return np.ascontiguousarray(rows / np.maximum(norms, 1e-12), dtype=np.float32)


def top_k(scores: np.ndarray, k: int) -> np.ndarray:
    """Indices of the ``k`` highest ``scores``, highest first, ties by lower index (the same
    as ``np.argsort(-scores, kind="stable")[:k]``)."""
    n = int(scores.size)
    if k <= 0 or n == 0:
        return np.empty(0, dtype=np.int64)
    if k >= n or n < _PARTITION_MIN or 4 * k > n:
        return np.argsort(-scores, kind="stable")[:k]
    kth = scores[np.argpartition(-scores, k - 1)[k - 1]]
    candidates = np.flatnonzero(scores >= kth)  # every score tied with the k-th is kept
    return candidates[np.argsort(-scores[candidates], kind="stable")][:k]


class RowMatrix:
    """A growing float32 matrix: ``array`` is a view of its first ``len`` rows."""

    def __init__(self, rows: np.ndarray | None = None) -> None:
        self._buffer = np.zeros((0, 0), dtype=np.float32)
        self._n = 0
        if rows is not None and len(rows):
            self._buffer = np.ascontiguousarray(rows, dtype=np.float32).copy()
            self._n = len(rows)

    def __len__(self) -> int:
        return self._n

    @property
    def dim(self) -> int:
        return int(self._buffer.shape[1]) if self._buffer.ndim == 2 else 0

    @property
    def array(self) -> np.ndarray:
        return self._buffer[: self._n]

    def append(self, rows: np.ndarray) -> None:
        rows = np.asarray(rows, dtype=np.float32)
        if rows.ndim == 1:
            rows = rows[None, :]
        if not len(rows):
            return
        if self._n and rows.shape[1] != self.dim:
            raise ValueError(
                f"embedding has {rows.shape[1]} dims, the matrix holds {self.dim}-d rows "
                "(was the embedder changed?)"
            )
        need = self._n + len(rows)
        if need > self._buffer.shape[0] or self._buffer.shape[1] != rows.shape[1]:
            grown = np.zeros((need + CHUNK, rows.shape[1]), dtype=np.float32)
            if self._n:
                grown[: self._n] = self._buffer[: self._n]
            self._buffer = grown
        self._buffer[self._n : need] = rows
        self._n = need

    def keep(self, indices: Sequence[int]) -> None:
        """Keep only the rows at ``indices`` (in that order)."""
        self._buffer = np.ascontiguousarray(self.array[list(indices)])
        self._n = len(self._buffer)


# what makes two embedders give the same vectors, as embedder_identity records it
IDENTITY_FIELDS = ("name", "dim", "model", "max_seq_length", "normalize")


def embedder_identity(embedder: Any) -> dict[str, Any]:
    """What a snapshot records about the embedder its vectors came from: ``name``, ``dim``,
    ``model`` (the weights it loaded: a hub id, or a local folder's name, so a snapshot moved to
    another machine keeps its vectors), ``max_seq_length`` (the length texts are cut to, as the
    loaded model has it) and ``normalize``; the last three only where the embedder says."""
    dim = getattr(embedder, "dim", None)
    model_ref = getattr(embedder, "model_ref", None)
    loaded = getattr(embedder, "model", None)
    length = getattr(embedder, "max_seq_length", None)
    if length is None and loaded is not None and not isinstance(loaded, str):
        length = getattr(loaded, "max_seq_length", None)
    normalize = getattr(embedder, "normalize", None)
    identity = {
        "name": getattr(embedder, "name", None),
        "dim": int(dim) if dim else None,
        "model": _model_name(str(model_ref)) if model_ref else None,
        "max_seq_length": int(length) if isinstance(length, int) and length else None,
        "normalize": normalize if isinstance(normalize, bool) else None,
    }
    # name and dim always; the others only where the embedder says (an embedder without them
    # records what it had before they were recorded)
    return {k: v for k, v in identity.items() if k in ("name", "dim") or v is not None}


def _model_name(ref: str) -> str:
    path = Path(ref)
    return path.name if path.is_absolute() or ref.startswith(".") else ref


def pack(matrix: np.ndarray, identity: dict[str, Any] | None) -> dict[str, Any]:
    """``matrix`` as JSON values: ``{"embedder", "rows", "dim", "b64"}``."""
    matrix = np.asarray(matrix, dtype=np.float32)
    dim = int(matrix.shape[1]) if matrix.ndim == 2 and matrix.size else 0
    return {
        "embedder": dict(identity or {}),
        "rows": int(matrix.shape[0]) if matrix.ndim == 2 else 0,
        "dim": dim,
        "b64": base64.b64encode(matrix.astype("<f4").tobytes()).decode("ascii"),
    }


def unpack(blob: dict[str, Any]) -> np.ndarray:
    """The matrix :func:`pack` wrote (float32, C-contiguous, writable)."""
    dim = int(blob.get("dim", 0))
    raw = np.frombuffer(base64.b64decode(blob.get("b64", "")), dtype="<f4")
    return raw.astype(np.float32).reshape(-1, dim) if dim else np.zeros((0, 0), np.float32)


def stored_matches(stored: dict[str, Any], embedder: Any, what: str) -> bool:
    """Whether vectors recorded with ``stored`` identity can be used with ``embedder``; a
    mismatch is logged as a warning (the caller then embeds the texts again)."""
    current = embedder_identity(embedder)
    for field in IDENTITY_FIELDS:
        old, new = stored.get(field), current.get(field)
        if old is not None and new is not None and old != new:
            log.warning(
                "%s: the snapshot's embeddings come from embedder %s=%r, this run's is %r; "
                "embedding the stored texts again",
                what,
                field,
                old,
                new,
            )
            return False
    return True


class QueryEncoder:
    """Unit query embeddings through one ``encode`` call per batch, with a bounded LRU of the
    texts already seen (``size`` entries; 0 turns the cache off). ``normalize=False`` gives
    the rows as the embedder returns them (for callers that normalise themselves)."""

    def __init__(
        self, encode: Callable[[list[str]], Any], size: int = 4096, normalize: bool = True
    ) -> None:
        self._encode = encode
        self.size = int(size)
        self.normalize = bool(normalize)
        self._cache: OrderedDict[str, np.ndarray] = OrderedDict()
        self.calls = 0  # encode calls made (for tests and benchmarks)

    def clear(self) -> None:
        self._cache.clear()

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        """Unit rows, one per text, in order; the texts not cached are encoded together."""
        texts = list(texts)
        missing = list(dict.fromkeys(t for t in texts if t not in self._cache))
        fresh: dict[str, np.ndarray] = {}
        if missing:
            self.calls += 1
            rows_in = self._encode(missing)
            rows_in = unit_rows(rows_in) if self.normalize else np.asarray(rows_in, np.float32)
            fresh = dict(zip(missing, rows_in, strict=True))
        rows = []
        for text in texts:
            vector = fresh.get(text)
            if vector is None:
                vector = self._cache[text]
                self._cache.move_to_end(text)
            rows.append(vector)
        if self.size > 0:
            for text, vector in fresh.items():
                self._cache[text] = vector
            while len(self._cache) > self.size:
                self._cache.popitem(last=False)
        if not rows:
            return np.zeros((0, 0), dtype=np.float32)
        return np.ascontiguousarray(np.stack(rows), dtype=np.float32)
