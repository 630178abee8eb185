"""ReMe's experience E = <omega, e, kappa, c, tau> and the experience pool (reme.txt Section 3.2).

The pool keeps the experiences in insertion order with their usage statistics (retrievals f
and utility u, Section 3.4) and one embedding matrix per retrieval key, built lazily and kept
in step with additions and deletions:

- ``usage_scenario``: phi(omega), the paper's index (Appendix C.2);
- ``task_query``: the raw query of the task the experience came from;
- ``generalized_query``: an LLM-generalised version of that query;
- ``keywords``: the experience's keywords kappa, joined.

``content`` (scenario + experience text) is the matrix used for similarity deduplication.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

RETRIEVAL_KEYS = ("usage_scenario", "task_query", "generalized_query", "keywords")


@dataclass
class Experience:
    id: str
    when_to_use: str  # omega: the usage scenario
    content: str  # e: the experience itself
    keywords: list[str] = field(default_factory=list)  # kappa
    confidence: float = 0.5  # c in [0, 1]
    tools: list[str] = field(default_factory=list)  # tau
    kind: str = "success"  # success | failure | comparative | trajectory | reflection
    source_task: str = ""
    task_query: str = ""
    generalized_query: str = ""
    retrievals: int = 0  # f
    utility: int = 0  # u

    def key_text(self, key: str) -> str:
        if key == "usage_scenario":
            return self.when_to_use
        if key == "task_query":
            return self.task_query
        if key == "generalized_query":
            return self.generalized_query or self.task_query
        if key == "keywords":
            return ", ".join(self.keywords) or self.when_to_use
        if key == "content":
            return f"{self.when_to_use}\n{self.content}"
        raise KeyError(key)

    def render(self) -> str:
        return f"When {self.when_to_use.rstrip('.')}: {self.content}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Experience:
        return Experience(**d)


class ExperiencePool:
    """Experiences with lazily built, incrementally maintained embedding matrices."""

    def __init__(self, encode: Callable[[list[str]], np.ndarray]) -> None:
        self._encode = encode
        self.items: dict[str, Experience] = {}
        self._vectors: dict[str, np.ndarray] = {}  # key -> (len(items), dim), unit rows
        self.next_id = 1

    def __len__(self) -> int:
        return len(self.items)

    def __contains__(self, exp_id: str) -> bool:
        return exp_id in self.items

    def new_id(self) -> str:
        exp_id = f"exp-{self.next_id}"
        self.next_id += 1
        return exp_id

    def embed(self, texts: list[str]) -> np.ndarray:
        vectors = np.asarray(self._encode(texts), dtype=np.float32)
        norms = np.linalg.norm(vectors, axis=1, keepdims=True)
        return vectors / np.maximum(norms, 1e-12)

    def matrix(self, key: str) -> np.ndarray:
        """Unit embedding rows of every experience's ``key`` text, in pool order."""
        if key not in self._vectors:
            texts = [e.key_text(key) for e in self.items.values()]
            self._vectors[key] = self.embed(texts) if texts else np.zeros((0, 0), np.float32)
        return self._vectors[key]

    def add(self, experience: Experience, content_vector: np.ndarray | None = None) -> None:
        self.items[experience.id] = experience
        for key in list(self._vectors):
            if key == "content" and content_vector is not None:
                row = content_vector[None, :]
            else:
                row = self.embed([experience.key_text(key)])
            old = self._vectors[key]
            self._vectors[key] = row if old.size == 0 else np.vstack([old, row])

    def remove(self, ids: Iterable[str]) -> None:
        drop = set(ids) & set(self.items)
        if not drop:
            return
        keep = [i for i, exp_id in enumerate(self.items) if exp_id not in drop]
        for key, matrix in self._vectors.items():
            self._vectors[key] = matrix[keep]
        for exp_id in drop:
            del self.items[exp_id]

    def search(self, query: np.ndarray, key: str, k: int) -> list[tuple[Experience, float]]:
        """Top-``k`` experiences by cosine between ``query`` (a unit vector) and ``key``."""
        if k <= 0 or not self.items:
            return []
        scores = self.matrix(key) @ query
        k = min(k, len(scores))
        top = np.argpartition(-scores, k - 1)[:k]
        top = top[np.argsort(-scores[top], kind="stable")]
        experiences = list(self.items.values())
        return [(experiences[i], float(scores[i])) for i in top]

    def max_similarity(self, vector: np.ndarray) -> float:
        """Highest cosine between ``vector`` and any experience's content (-1 when empty)."""
        if not self.items:
            return -1.0
        return float(np.max(self.matrix("content") @ vector))

    def to_dict(self) -> dict[str, Any]:
        return {"items": [e.to_dict() for e in self.items.values()], "next_id": self.next_id}

    def load_dict(self, d: dict[str, Any]) -> None:
        self.items = {x["id"]: Experience.from_dict(x) for x in d.get("items", [])}
        self.next_id = int(d.get("next_id", len(self.items) + 1))
        self._vectors = {}
