"""Generative Agents' memory stream and its retrieval score (Park et al., 2023, Section 4.1).

A memory object has a natural-language description, the time it was created and last
accessed, and an importance from 1 to 10. For a query, every memory gets

    score = w_recency * recency + w_importance * importance + w_relevance * relevance

where recency is ``decay ** (now - last_access)`` (the paper: 0.995 per game hour since the
memory was last retrieved), importance the 1-10 rating and relevance the cosine between the
query's and the memory's embeddings, each min-max normalised to [0, 1] over the candidates
(all three weights 1 in the paper). When every candidate has the same value, the normalised
value is 0.5 for all, as the Generative Agents code does. Ties in the score keep insertion
order. memarena's clock is the task index (one task = one hour of the paper's clock).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memarena.memory.episodic import VectorIndex

OBSERVATION, REFLECTION = "observation", "reflection"


@dataclass
class MemoryObject:
    id: str
    kind: str  # observation (a finished task) | reflection (an insight)
    description: str  # listed in reflection prompts; shown for a reflection
    created: int
    last_access: int
    importance: int
    detail: str = ""  # an observation's rendered trajectory, shown with it
    evidence: list[str] = field(default_factory=list)  # a reflection's supporting memories
    key: str = ""  # the text embedded for relevance (the code's embedding_key): an
    # observation's task goal; empty: the description

    @property
    def embedding_key(self) -> str:
        return self.key or self.description

    def render(self) -> str:
        if self.kind == REFLECTION:
            return f"Insight: {self.description}"
        return self.detail or self.description

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def min_max(values: Sequence[float]) -> list[float]:
    """Values scaled to [0, 1]; all 0.5 when they are all equal (or there is one)."""
    if not values:
        return []
    low, high = min(values), max(values)
    if high - low <= 1e-12:
        return [0.5] * len(values)
    return [(v - low) / (high - low) for v in values]


class MemoryStream:
    def __init__(self) -> None:
        self.objects: dict[str, MemoryObject] = {}
        self.index = VectorIndex()  # description embeddings

    def __len__(self) -> int:
        return len(self.objects)

    def add(self, memory: MemoryObject, vector: np.ndarray) -> None:
        self.objects[memory.id] = memory
        self.index.add(memory.id, vector)

    def scores(
        self,
        vector: np.ndarray,
        now: int,
        decay: float,
        weights: Sequence[float] = (1.0, 1.0, 1.0),
    ) -> dict[str, float]:
        """The combined score of every memory for a query embedded as ``vector``."""
        ids = list(self.objects)
        if not ids:
            return {}
        cosine = self.index.similarity(vector)
        recency = min_max([decay ** (now - self.objects[i].last_access) for i in ids])
        importance = min_max([float(self.objects[i].importance) for i in ids])
        relevance = min_max([cosine[i] for i in ids])
        w_rec, w_imp, w_rel = weights
        return {
            i: w_rec * rec + w_imp * imp + w_rel * rel
            for i, rec, imp, rel in zip(ids, recency, importance, relevance, strict=True)
        }

    def top(self, scores: dict[str, float], k: int) -> list[str]:
        """The ``k`` best-scored ids (ties: insertion order)."""
        return sorted(scores, key=lambda i: -scores[i])[:k]

    def latest(self, n: int) -> list[MemoryObject]:
        """The ``n`` most recently accessed memories, oldest first (ties: insertion order)."""
        ranked = sorted(self.objects.values(), key=lambda m: m.last_access)
        return ranked[-n:] if n > 0 else []

    def touch(self, ids: Sequence[str], now: int) -> None:
        for i in ids:
            self.objects[i].last_access = now

    def to_dict(self, embedder: Any = None) -> dict[str, Any]:
        return {
            "objects": [m.to_dict() for m in self.objects.values()],
            "index": self.index.to_dict(embedder),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> MemoryStream:
        stream = MemoryStream()
        stream.objects = {o["id"]: MemoryObject(**o) for o in d.get("objects", [])}
        stream.index = VectorIndex.from_dict(d["index"])
        return stream
