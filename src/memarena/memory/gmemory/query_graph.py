"""G-Memory's query graph (evograph_mem.txt Eq. 1-4).

A node is one past query ``q_i = (Q_i, Psi_i, G_inter)``: its id (the task id), the query text
(the task goal), the status ("Resolved"/"Failed"), the interaction graph (stored compactly as
(action, observation) pairs, rebuilt with :func:`build_interaction_graph` on demand), its key
steps, the steps the env rejected (``invalid``: the reference code's negative-reward steps,
dropped from a solved task's shown trajectory) and, for a failed task, the LLM's cause of the
failure. A new query is linked (undirected) to at most ``link_k`` nearest existing queries whose
cosine is at least ``link_threshold``. Retrieval is Eq. 2 (top-k cosine) plus the ``hops``-hop
neighbourhood of the top-k (Eq. 3-4); :meth:`QueryGraph.nearest` is the plain similarity search
(optionally of one status) the reference code uses besides the graph.

Embeddings are unit-normalised rows of one float32 matrix that grows in chunks, so a retrieval
over 100k queries is a single matrix-vector product. Ties are broken by insertion order.
"""

from __future__ import annotations

import base64
from dataclasses import dataclass, field
from typing import Any

import networkx as nx
import numpy as np

from memarena.core import Feedback, Step, Task, Trajectory
from memarena.memory.gmemory.interaction import build_interaction_graph
from memarena.memory.vectors import RowMatrix, top_k, unit_rows

RESOLVED, FAILED = "Resolved", "Failed"


@dataclass
class QueryNode:
    id: str
    goal: str
    status: str
    domain: str = ""
    initial: str = ""
    steps: list[tuple[str, str]] = field(default_factory=list)  # (action, observation)
    key_steps: list[int] = field(default_factory=list)  # 0-based indices into steps
    invalid: list[int] = field(default_factory=list)  # 0-based steps the env rejected
    fail_reason: str = ""  # failed tasks: the LLM's cause of the failure

    @property
    def resolved(self) -> bool:
        return self.status == RESOLVED

    def interaction_graph(self) -> nx.DiGraph:
        task = Task(id=self.id, env="", split="", domain=self.domain, goal=self.goal)
        steps = [
            Step(action=a, observation=o, reward=0.0, progress=0.0, feedback=_NO_FEEDBACK)
            for a, o in self.steps
        ]
        return build_interaction_graph(Trajectory(task, self.initial, steps))

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "goal": self.goal,
            "status": self.status,
            "domain": self.domain,
            "initial": self.initial,
            "steps": [list(s) for s in self.steps],
            "key_steps": list(self.key_steps),
            "invalid": list(self.invalid),
            "fail_reason": self.fail_reason,
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> QueryNode:
        return QueryNode(
            id=d["id"],
            goal=d["goal"],
            status=d["status"],
            domain=d.get("domain", ""),
            initial=d.get("initial", ""),
            steps=[(a, o) for a, o in d.get("steps", [])],
            key_steps=[int(i) for i in d.get("key_steps", [])],
            invalid=[int(i) for i in d.get("invalid", [])],
            fail_reason=d.get("fail_reason", ""),
        )


_NO_FEEDBACK = Feedback(valid_action=True, state_changed=False)


def _unit(vector: np.ndarray) -> np.ndarray:
    v = np.asarray(vector, dtype=np.float32).reshape(-1)
    norm = float(np.linalg.norm(v))
    return v / norm if norm > 0 else v


class QueryGraph:
    def __init__(self, link_k: int = 10, link_threshold: float = 0.7) -> None:
        self.link_k = int(link_k)
        self.link_threshold = float(link_threshold)
        self.nodes: dict[str, QueryNode] = {}
        self.ids: list[str] = []  # row i of the matrix is query ids[i]
        self.row: dict[str, int] = {}
        self.resolved: list[bool] = []  # row i: is query ids[i] resolved
        self.graph = nx.Graph()
        self._rows = RowMatrix()  # row i: the unit embedding of query ids[i]
        self._resolved_rows: np.ndarray | None = None  # np.asarray(self.resolved), cached
        # (rows, unit query, cosines): one retrieval asks for the same query's cosines up to
        # five times (top-k, solved pool, 4 solved + 2 failed neighbours); computed once
        self._last: tuple[int, np.ndarray, np.ndarray] | None = None

    def __len__(self) -> int:
        return len(self.ids)

    def __contains__(self, query_id: str) -> bool:
        return query_id in self.row

    @property
    def embeddings(self) -> np.ndarray:
        return self._rows.array

    def _append_row(self, vector: np.ndarray) -> None:
        if len(self._rows) and vector.size != self._rows.dim:
            raise ValueError(
                f"QueryGraph: embedding has {vector.size} dims, the graph holds "
                f"{self._rows.dim}-d embeddings (was the embedder changed?)"
            )
        self._rows.append(vector)

    def replace_embeddings(self, vectors: np.ndarray) -> None:
        """New embeddings for every stored query, in row order (the embedder changed); the
        links stay as they were made."""
        rows = np.asarray(vectors, dtype=np.float32).reshape(len(self.ids), -1)
        self._rows = RowMatrix(unit_rows(rows))
        self._last = None

    def similarities(self, embedding: np.ndarray) -> np.ndarray:
        """Cosine of ``embedding`` with every stored query, in row order (read-only)."""
        if not self.ids:
            return np.zeros(0, dtype=np.float32)
        vector = _unit(embedding)
        last = self._last
        if last is not None and last[0] == len(self.ids) and np.array_equal(last[1], vector):
            return last[2]
        sims = self.embeddings @ vector
        sims.setflags(write=False)
        self._last = (len(self.ids), vector, sims)
        return sims

    def add(self, node: QueryNode, embedding: np.ndarray) -> list[str]:
        """Add ``node`` and link it; returns the ids it was linked to (best first).

        An id already present is left unchanged (a replayed trajectory) and links nothing.
        """
        if node.id in self.row:
            return []
        vector = _unit(embedding)
        sims = self.similarities(vector)
        eligible = np.flatnonzero(sims >= self.link_threshold)
        linked = eligible[top_k(sims[eligible], self.link_k)] if eligible.size else eligible
        self._append_row(vector)
        self._insert(node)
        out = [self.ids[int(i)] for i in linked]
        for other in out:
            self.graph.add_edge(node.id, other)
        return out

    def _insert(self, node: QueryNode) -> None:
        """Register ``node`` as the next row (its embedding row is already appended)."""
        self.row[node.id] = len(self.ids)
        self.ids.append(node.id)
        self.resolved.append(node.resolved)
        self._resolved_rows = None
        self._last = None
        self.nodes[node.id] = node
        self.graph.add_node(node.id)

    def nearest(self, embedding: np.ndarray, k: int, status: str | None = None) -> list[str]:
        """The ``k`` queries most similar to ``embedding`` (of ``status`` only when given), best
        first, ties by insertion order: the reference code's plain ``similarity_search``."""
        sims = self.similarities(embedding)
        rows = np.arange(sims.size)
        if status is not None:
            if self._resolved_rows is None:
                self._resolved_rows = np.asarray(self.resolved, dtype=bool)
            rows = np.flatnonzero(self._resolved_rows == (status == RESOLVED))
        return [self.ids[int(rows[i])] for i in top_k(sims[rows], k)]

    def similarity(self, embedding: np.ndarray, query_ids: list[str]) -> dict[str, float]:
        """Cosine of ``embedding`` to each of ``query_ids``."""
        sims = self.similarities(embedding)
        return {q: float(sims[self.row[q]]) for q in query_ids}

    def retrieve(self, embedding: np.ndarray, k: int, hops: int = 1) -> tuple[list[str], list[str]]:
        """(top-k ids by cosine, Eq. 2; top-k plus their ``hops``-hop neighbours, Eq. 3-4).

        The expanded list holds the top-k first, then the added neighbours by cosine to the
        query (ties by insertion order).
        """
        if not self.ids:
            return [], []
        sims = self.similarities(embedding)
        top = [self.ids[int(i)] for i in top_k(sims, k)]
        seen = set(top)
        frontier = list(top)
        added: list[str] = []
        for _ in range(max(0, hops)):
            nxt = []
            for qid in frontier:
                for other in self.graph.neighbors(qid):
                    if other not in seen:
                        seen.add(other)
                        nxt.append(other)
            added.extend(nxt)
            frontier = nxt
        added.sort(key=lambda q: (-float(sims[self.row[q]]), self.row[q]))
        return top, top + added

    # -- snapshots -------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        """Nodes in insertion order, edges as id pairs, and the embedding matrix as base64 of
        its little-endian float32 bytes (row-major, ``dim`` columns)."""
        matrix = self.embeddings
        return {
            "nodes": [self.nodes[q].to_dict() for q in self.ids],
            "edges": sorted(sorted(e) for e in self.graph.edges()),
            "dim": int(matrix.shape[1]) if matrix.size else 0,
            "embeddings_b64": base64.b64encode(matrix.astype("<f4").tobytes()).decode("ascii"),
        }

    def load_dict(self, d: dict[str, Any]) -> None:
        self.nodes, self.ids, self.row, self.resolved = {}, [], {}, []
        self.graph = nx.Graph()
        self._rows = RowMatrix()
        self._resolved_rows = None
        self._last = None
        dim = int(d.get("dim", 0))
        raw = base64.b64decode(d.get("embeddings_b64", ""))
        matrix = np.frombuffer(raw, dtype="<f4").astype(np.float32)
        matrix = matrix.reshape(-1, dim) if dim else matrix.reshape(0, 0)
        if len(d["nodes"]):  # the stored rows as they are: one copy, never re-embedded
            self._rows = RowMatrix(matrix[: len(d["nodes"])])
        for nd in d["nodes"]:
            self._insert(QueryNode.from_dict(nd))
        self.graph.add_edges_from(tuple(e) for e in d.get("edges", []))
