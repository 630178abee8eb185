"""The failure-aware insight graph of EvoGraph-Mem (evograph_mem.txt, Sections 3.2-3.4).

Each node is ``iota_k = (kappa_k, Omega_k^+, Omega_k^-, z_k)`` (Eq. 6): the insight text, the
queries it supported, the queries where it was ineffective or harmful, and whether it is active.
The edge set holds hyper-edges ``(iota_a, iota_b, q)``: ``a`` contextualises ``b``, mediated by
query ``q`` (Eq. 5, Eq. 18).

The four maintenance operations change exactly what the paper's equations change:

    keep(k, q)       Eq. 17  (kappa, Omega+ | {q}, Omega-, 1)
    archive(k, q)    Eq. 13  (kappa, Omega+, Omega- | {q}, 0)
    revise(k, q, t)  Eq. 14  old: (kappa, Omega+, Omega- | {q}, 0)
                     Eq. 15  new: (t, Omega+ | {q}, {}, 1), version + 1, parent = k
    add(t, q)        Eq. 16  (t, {q}, {}, 1)

Retrieval (Eq. 7-10) only ever sees active nodes: candidates come from an inverted index
``query id -> active node ids whose Omega+ holds it``, which every operation keeps in step, so
a lookup costs the size of the expanded query set plus its hits, not a scan of the graph.
Archived nodes stay in the graph (and keep their edges) for auditability and edit tracing.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

OPS = ("ADD", "KEEP", "ARCHIVE", "REVISE", "REVISED_FROM")


@dataclass
class EvoInsight:
    """One insight node ``(kappa, Omega+, Omega-, z)`` plus its version bookkeeping.

    ``trace`` lists every operation that touched the node, in order, as
    ``{"query": q, "op": one of OPS, "detail": ...}`` (for REVISE the new node's id, for
    REVISED_FROM the old node's id, otherwise None).
    """

    id: str
    content: str
    pos: set[str] = field(default_factory=set)
    neg: set[str] = field(default_factory=set)
    active: bool = True
    version: int = 1
    parent: str | None = None
    created_at: str | None = None
    trace: list[dict[str, Any]] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "pos": sorted(self.pos),
            "neg": sorted(self.neg),
            "active": self.active,
            "version": self.version,
            "parent": self.parent,
            "created_at": self.created_at,
            "trace": [dict(t) for t in self.trace],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> EvoInsight:
        return cls(
            id=data["id"],
            content=data["content"],
            pos=set(data.get("pos", ())),
            neg=set(data.get("neg", ())),
            active=bool(data.get("active", True)),
            version=int(data.get("version", 1)),
            parent=data.get("parent"),
            created_at=data.get("created_at"),
            trace=[dict(t) for t in data.get("trace", ())],
        )


def _id_key(node_id: str) -> tuple[int, str]:
    """Order ids naturally ("ins-0999" < "ins-10000"): by length, then text."""
    return len(node_id), node_id


class InsightGraph:
    """Insight nodes by id, hyper-edges ``(a, b, q)``, and the active-node inverted index."""

    def __init__(self, id_prefix: str = "ins") -> None:
        self.id_prefix = id_prefix
        self.nodes: dict[str, EvoInsight] = {}
        self.edges: list[tuple[str, str, str]] = []
        self._edge_set: set[tuple[str, str, str]] = set()
        self._index: dict[str, set[str]] = {}  # query id -> active node ids with it in Omega+
        self._children: dict[str, list[str]] = {}  # node id -> ids of its revisions
        self._next = 1

    # -- bookkeeping --------------------------------------------------------------------------
    def __len__(self) -> int:
        return len(self.nodes)

    def __contains__(self, node_id: object) -> bool:
        return node_id in self.nodes

    def get(self, node_id: str) -> EvoInsight:
        try:
            return self.nodes[node_id]
        except KeyError:
            raise KeyError(f"InsightGraph: no insight {node_id!r}") from None

    def active_ids(self) -> list[str]:
        return [k for k, n in self.nodes.items() if n.active]

    def _new_id(self) -> str:
        node_id = f"{self.id_prefix}-{self._next:04d}"
        self._next += 1
        while node_id in self.nodes:  # ids loaded from elsewhere never get reused
            node_id = f"{self.id_prefix}-{self._next:04d}"
            self._next += 1
        return node_id

    def _index_add(self, node: EvoInsight, queries: Iterable[str]) -> None:
        for q in queries:
            self._index.setdefault(q, set()).add(node.id)

    def _index_drop(self, node: EvoInsight) -> None:
        for q in node.pos:
            ids = self._index.get(q)
            if ids is not None:
                ids.discard(node.id)
                if not ids:
                    del self._index[q]

    def _insert(self, node: EvoInsight) -> None:
        self.nodes[node.id] = node
        if node.parent is not None:
            self._children.setdefault(node.parent, []).append(node.id)
        if node.active:
            self._index_add(node, node.pos)

    # -- operations (Section 3.4) -------------------------------------------------------------
    def add(self, content: str, q: str) -> str:
        """Eq. 16: a new node ``(content, {q}, {}, 1)``; returns its id."""
        node = EvoInsight(self._new_id(), content, {q}, set(), True, 1, None, q)
        node.trace.append({"query": q, "op": "ADD", "detail": None})
        self._insert(node)
        return node.id

    def keep(self, node_id: str, q: str) -> None:
        """Eq. 17: ``(kappa, Omega+ | {q}, Omega-, 1)``."""
        node = self.get(node_id)
        node.pos.add(q)
        if node.active:
            self._index_add(node, (q,))
        else:  # z <- 1 re-activates the node: every query of Omega+ becomes a hit again
            node.active = True
            self._index_add(node, node.pos)
        node.trace.append({"query": q, "op": "KEEP", "detail": None})

    def archive(self, node_id: str, q: str) -> None:
        """Eq. 13: ``(kappa, Omega+, Omega- | {q}, 0)``; edges are kept."""
        node = self.get(node_id)
        self._deactivate(node, q)
        node.trace.append({"query": q, "op": "ARCHIVE", "detail": None})

    def revise(self, node_id: str, q: str, new_content: str) -> str:
        """Eq. 14-15: archive the old node with ``q`` as negative evidence and create
        ``(new_content, Omega+ | {q}, {}, 1)`` as its next version; returns the new id."""
        old = self.get(node_id)
        self._deactivate(old, q)
        new = EvoInsight(
            self._new_id(), new_content, old.pos | {q}, set(), True, old.version + 1, old.id, q
        )
        old.trace.append({"query": q, "op": "REVISE", "detail": new.id})
        new.trace.append({"query": q, "op": "REVISED_FROM", "detail": old.id})
        self._insert(new)
        return new.id

    def _deactivate(self, node: EvoInsight, q: str) -> None:
        node.neg.add(q)
        if node.active:
            self._index_drop(node)
            node.active = False

    def update_edges(
        self, retrieved_ids: Iterable[str], new_ids: Iterable[str], q: str, resolved: bool
    ) -> list[tuple[str, str, str]]:
        """Eq. 18: add ``(a, b, q)`` for every retrieved ``a`` and new/revised ``b``, only when
        the task was resolved; duplicates are skipped. Returns the edges actually added."""
        if not resolved:
            return []
        added = []
        new_ids = list(new_ids)
        for a in retrieved_ids:
            for b in new_ids:
                edge = (a, b, q)
                if a != b and edge not in self._edge_set:
                    self._edge_set.add(edge)
                    self.edges.append(edge)
                    added.append(edge)
        return added

    # -- retrieval (Section 3.3) --------------------------------------------------------------
    def _support(self, expanded: Iterable[str]) -> dict[str, int]:
        """``s_{t,k} = |Omega_k^+ & Q~|`` for every candidate of Eq. 7, from the index."""
        support: dict[str, int] = {}
        for q in set(expanded):
            for node_id in self._index.get(q, ()):
                support[node_id] = support.get(node_id, 0) + 1
        return support

    def candidates(self, expanded_query_ids: Iterable[str]) -> list[str]:
        """Eq. 7: active nodes with ``Omega+ & Q~ != {}``, in id order."""
        return sorted(self._support(expanded_query_ids), key=_id_key)

    @staticmethod
    def utility(node: EvoInsight, expanded: Iterable[str], lam: float) -> float:
        """Eq. 8-9: ``r = |Omega+ & Q~| - lam * |Omega- & Q~|``."""
        exp = expanded if isinstance(expanded, set | frozenset) else set(expanded)
        return len(node.pos & exp) - lam * len(node.neg & exp)

    def select(self, expanded: Iterable[str], lam: float, top_b: int) -> list[str]:
        """Eq. 10: the top-B candidates by ``r``; ties by ``s`` (larger first), then id."""
        if top_b <= 0:
            return []
        exp = expanded if isinstance(expanded, set | frozenset) else set(expanded)
        support = self._support(exp)
        nodes = self.nodes
        scored = (
            (-(s - lam * len(nodes[k].neg & exp)), -s, _id_key(k), k) for k, s in support.items()
        )
        return [row[3] for row in heapq.nsmallest(top_b, scored)]

    # -- case-study view (Figure 2) -----------------------------------------------------------
    def history(self, node_id: str) -> list[dict[str, Any]]:
        """The version chain of an insight: its ancestors, itself and its descendants, oldest
        first, each with content, Omega+, Omega-, z and trace."""
        root = self.get(node_id)
        while root.parent is not None and root.parent in self.nodes:
            root = self.nodes[root.parent]
        chain, todo = [], [root.id]
        while todo:
            current = todo.pop(0)
            chain.append(self.nodes[current].to_dict())
            todo.extend(self._children.get(current, ()))
        chain.sort(key=lambda d: (d["version"], _id_key(d["id"])))
        return chain

    # -- persistence --------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {
            "id_prefix": self.id_prefix,
            "next": self._next,
            "nodes": [n.to_dict() for n in self.nodes.values()],
            "edges": [list(e) for e in self.edges],
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> InsightGraph:
        graph = cls(data.get("id_prefix", "ins"))
        for item in data.get("nodes", ()):
            graph._insert(EvoInsight.from_dict(item))
        for a, b, q in data.get("edges", ()):
            edge = (a, b, q)
            if edge not in graph._edge_set:
                graph._edge_set.add(edge)
                graph.edges.append(edge)
        graph._next = max(int(data.get("next", 1)), len(graph.nodes) + 1)
        return graph
