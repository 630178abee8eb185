"""ReMe's experience E = <omega, e, kappa, c, tau> and the experience pool (reme.txt Section 3.2).

The pool keeps the experiences in insertion order with their usage statistics (retrievals f
and utility u, Section 3.4) and one embedding matrix per retrieval key, built lazily and kept
in step with additions and deletions:

- ``usage_scenario``: phi(omega), the paper's index (Appendix C.2);
- ``task_query``: the raw query of the task the experience came from;
- ``generalized_query``: an LLM-generalised version of that query;
- ``keywords``: keywords extracted from that query without an LLM (:func:`query_keywords`; the
  task being solved is keyworded the same way): Table 5's "query keywords", which the paper
  groups with the simple, non-LLM keys;
- ``experience_keywords``: the experience's own LLM keywords kappa, joined (memarena's earlier
  reading of that key).

``content`` (scenario + experience text, as ReMe's deduplication embeds a candidate) is the
matrix used for similarity deduplication against contents (``dedup_against: content``).

The matrices built so far are saved with the pool (base64 float32 with the embedder's name and
dimension) and used as they are on load: a 10k-experience index is not embedded again.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memarena.memory.vectors import (
    RowMatrix,
    embedder_identity,
    pack,
    stored_matches,
    top_k,
    unit_rows,
    unpack,
)

RETRIEVAL_KEYS = (
    "usage_scenario",
    "task_query",
    "generalized_query",
    "keywords",
    "experience_keywords",
)
# version of the texts behind the stored matrices; older snapshots embedded the keys below from
# other texts (keywords: the experience's own; content: scenario and content on two lines)
KEY_TEXTS = 2
CHANGED_KEY_TEXTS = ("keywords", "content")
# words a keyword list leaves out (function words and the verbs of polite requests)
STOPWORDS = frozenset(
    """a about above after again against all also am an and any are as at be because been before
    being below between both but by can could did do does doing down during each few for from
    further had has have having he her here hers him his how i if in into is it its itself just
    let like me more most my no nor not now of off on once only or other our ours out over own
    please same she should so some such than that the their theirs them then there these they
    this those through to too under until up very was we were what when where which while who
    whom why will with would you your yours yourself""".split()
)


def query_keywords(text: str, limit: int = 16) -> str:
    """The keywords of a task query without an LLM: its words (letters, digits, ``_``, ``.``,
    ``-`` inside a word), lowercased, minus stopwords and one-letter words, first occurrence
    first, at most ``limit``, joined with ``", "``."""
    words = re.findall(r"[a-z0-9_]+(?:[.\-][a-z0-9_]+)*", text.lower())
    kept = [w for w in dict.fromkeys(words) if len(w) > 1 and w not in STOPWORDS]
    return ", ".join(kept[:limit]) or text.strip()


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
    released: dict[str, Any] = field(default_factory=dict)  # a released pool's line, whole

    def key_text(self, key: str) -> str:
        if key == "usage_scenario":
            return self.when_to_use
        if key == "task_query":
            return self.task_query
        if key == "generalized_query":
            return self.generalized_query or self.task_query
        if key == "keywords":
            return query_keywords(self.task_query or self.when_to_use)
        if key == "experience_keywords":
            return ", ".join(self.keywords) or self.when_to_use
        if key == "content":
            return f"{self.when_to_use} {self.content}"
        raise KeyError(key)

    def render(self, number: int) -> str:
        """The block the agent reads: ``Experience i:`` then ``When to use:`` and ``Content:``
        lines (the layout of ReMe's agents)."""
        return f"Experience {number}:\n When to use: {self.when_to_use}\n Content: {self.content}\n"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Experience:
        return Experience(**d)

    def to_released(self) -> dict[str, Any]:
        """The released pool's line this experience came from, with its counts as they are
        now (``metadata.freq`` / ``metadata.utility``)."""
        line = dict(self.released)
        line["metadata"] = {**line.get("metadata", {}), "freq": self.retrievals,
                            "utility": self.utility}  # fmt: skip
        return line


class ExperiencePool:
    """Experiences with lazily built, incrementally maintained embedding matrices.

    Each matrix is a :class:`~memarena.memory.vectors.RowMatrix` (unit float32 rows, grown in
    chunks). :meth:`to_dict` stores the matrices built so far with the embedder's name and
    dimension; :meth:`load_dict` keeps them and uses them as they are, unless the embedder in
    use differs (then the texts are embedded again, with a warning) or the snapshot has none
    (older snapshots: embedded on first use, as before).
    """

    def __init__(
        self,
        encode: Callable[[list[str]], np.ndarray],
        embedder: Callable[[], Any] | None = None,
    ) -> None:
        self._encode = encode
        self._embedder = embedder  # -> the embedder object (its name and dim are recorded)
        self.items: dict[str, Experience] = {}
        self._vectors: dict[str, RowMatrix] = {}  # key -> (len(items), dim), unit rows
        self._stored: dict[str, np.ndarray] = {}  # key -> loaded rows not yet checked
        self._stored_identity: dict[str, Any] = {}
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
        return unit_rows(self._encode(texts))

    def _use_stored(self) -> None:
        """Adopt the loaded matrices once (checked against the embedder in use)."""
        if not self._stored:
            return
        stored, self._stored = self._stored, {}
        embedder = self._embedder() if self._embedder is not None else None
        if embedder is not None and not stored_matches(
            self._stored_identity, embedder, "ReMe experience pool"
        ):
            return
        for key, rows in stored.items():
            if key not in self._vectors and len(rows) == len(self.items):
                self._vectors[key] = RowMatrix(rows)

    def matrix(self, key: str) -> np.ndarray:
        """Unit embedding rows of every experience's ``key`` text, in pool order."""
        self._use_stored()
        if key not in self._vectors:
            texts = [e.key_text(key) for e in self.items.values()]
            self._vectors[key] = RowMatrix(self.embed(texts) if texts else None)
        return self._vectors[key].array

    def add(self, experience: Experience, content_vector: np.ndarray | None = None) -> None:
        self._use_stored()
        self.items[experience.id] = experience
        for key, rows in self._vectors.items():
            if key == "content" and content_vector is not None:
                row = np.asarray(content_vector, dtype=np.float32)[None, :]
            else:
                row = self.embed([experience.key_text(key)])
            rows.append(row)

    def add_many(
        self, experiences: list[Experience], content_vectors: np.ndarray | None = None
    ) -> None:
        """:meth:`add` of several experiences (with their content rows when given): each other
        built matrix embeds the new texts in one call."""
        if not experiences:
            return
        self._use_stored()
        for experience in experiences:
            self.items[experience.id] = experience
        for key, rows in self._vectors.items():
            if key == "content" and content_vectors is not None:
                rows.append(np.asarray(content_vectors, dtype=np.float32))
            else:
                rows.append(self.embed([e.key_text(key) for e in experiences]))

    def remove(self, ids: Iterable[str]) -> None:
        drop = set(ids) & set(self.items)
        if not drop:
            return
        keep = [i for i, exp_id in enumerate(self.items) if exp_id not in drop]
        for rows in self._vectors.values():
            rows.keep(keep)
        self._stored = {key: rows[keep] for key, rows in self._stored.items()}
        for exp_id in drop:
            del self.items[exp_id]

    def search(self, query: np.ndarray, key: str, k: int) -> list[tuple[Experience, float]]:
        """Top-``k`` experiences by cosine between ``query`` (a unit vector) and ``key``,
        best first, ties by pool order."""
        if k <= 0 or not self.items:
            return []
        scores = self.matrix(key) @ np.asarray(query, dtype=np.float32)
        top = top_k(scores, k)
        experiences = list(self.items.values())
        return [(experiences[i], float(scores[i])) for i in top]

    def search_many(
        self, queries: np.ndarray, key: str, k: int
    ) -> list[list[tuple[Experience, float]]]:
        """:meth:`search` for each row of ``queries`` (one matrix product for all)."""
        queries = np.asarray(queries, dtype=np.float32)
        if k <= 0 or not self.items or not len(queries):
            return [[] for _ in range(len(queries))]
        scores = queries @ self.matrix(key).T  # (queries, experiences)
        experiences = list(self.items.values())
        return [[(experiences[i], float(row[i])) for i in top_k(row, k)] for row in scores]

    def max_similarity(self, vector: np.ndarray, key: str = "content") -> float:
        """Highest cosine between ``vector`` and any experience's ``key`` embedding (-1 when
        empty)."""
        if not self.items:
            return -1.0
        return float(np.max(self.matrix(key) @ vector))

    def to_dict(self) -> dict[str, Any]:
        """Items, and each embedding matrix built so far (base64 float32, with the
        embedder's name and dim: see :func:`~memarena.memory.vectors.pack`)."""
        self._use_stored()
        identity = None
        if self._embedder is not None and self._vectors:
            identity = embedder_identity(self._embedder())
        return {
            "items": [e.to_dict() for e in self.items.values()],
            "next_id": self.next_id,
            "key_texts": KEY_TEXTS,
            "vectors": {
                key: pack(rows.array, identity)
                for key, rows in self._vectors.items()
                if len(rows) == len(self.items) and len(rows)
            },
        }

    def load_dict(self, d: dict[str, Any]) -> None:
        self.items = {x["id"]: Experience.from_dict(x) for x in d.get("items", [])}
        self.next_id = int(d.get("next_id", len(self.items) + 1))
        self._vectors = {}
        self._stored = {}
        self._stored_identity = {}
        for key, blob in (d.get("vectors") or {}).items():
            if key in CHANGED_KEY_TEXTS and d.get("key_texts") != KEY_TEXTS:
                continue  # embedded from texts this version builds otherwise: embed again
            rows = unpack(blob)
            if len(rows) == len(self.items):
                self._stored[key] = rows
                self._stored_identity = dict(blob.get("embedder") or {})
