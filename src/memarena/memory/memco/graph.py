"""Episodic graphs and the local graph ``G_i^l`` built by LocalMerge (paper 3.3, B.2.1-B.2.2).

Episodic graph (serialized realization, B.2.1): one node per time step, ``x<t>`` (type
``state``, content the normalized state cue) and ``a<t>`` (type ``action``, content the
normalized action). The feedback node ``v_t^f`` is not materialized: its information
(``valid``, ``state_changed``, failure ``label``, ``progressed``, ``stalled``, ``success``) is
attached to the edges of transition ``t``:

- ``x_t -[act]-> a_t`` and ``a_t -[result]-> x_{t+1}``: the stored backbone;
- ``x_t -[delta:<a_t>]-> x_{t+1}``: a typed state-delta relation, so that a merged transition
  keeps its full ``(state, action, next state)`` triple and its own statistics.

LocalMerge (Algorithm B.2.2): node key ``(type, normalize(content))``, edge key
``(key(u), relation, key(v))``. A matched node accumulates ``visits``; a matched edge accumulates
``count``, ``progressed``, ``stalled``, ``success`` and failure-label counts, and keeps the
payload of its first occurrence. Episode ids are kept once, as a set on the graph (not on nodes
or edges). The merged graph is a structural index: an adjacent path in it is not claimed to be an
observed episode.
"""

from __future__ import annotations

import re
from typing import Any

import networkx as nx
import numpy as np
from scipy import sparse

from memarena.memory.memco.base import Transition
from memarena.memory.memco.induction import normalize

STATE, ACTION = "state", "action"
ACT, RESULT, DELTA = "act", "result", "delta"
_TOKEN = re.compile(r"[a-z0-9]+")


def node_id(ntype: str, content: str) -> str:
    """The local node key ``(type, normalized content)`` as a string."""
    return f"{ntype}:{normalize(content)}"


def feedback_payload(tr: Transition) -> dict[str, Any]:
    fb = tr.feedback
    return {
        "valid": fb.valid,
        "state_changed": fb.state_changed,
        "label": fb.label,
        "progressed": fb.progressed,
        "stalled": fb.stalled,
        "success": fb.success,
    }


def episodic_graph(transitions: list[Transition]) -> nx.MultiDiGraph:
    """One episode's graph: per-step state and action nodes, feedback on the transition edges."""
    g = nx.MultiDiGraph()
    for tr in transitions:
        x, a, y = f"x{tr.t}", f"a{tr.t}", f"x{tr.t + 1}"
        g.add_node(x, type=STATE, content=tr.state, t=tr.t)
        g.add_node(a, type=ACTION, content=tr.action, t=tr.t)
        g.add_node(y, type=STATE, content=tr.next_state, t=tr.t + 1)
        fb = feedback_payload(tr)
        delta = f"{DELTA}:{tr.action}"
        g.add_edge(x, a, key=ACT, relation=ACT, t=tr.t, action=tr.action, feedback=fb)
        g.add_edge(a, y, key=RESULT, relation=RESULT, t=tr.t, action=tr.action, feedback=fb)
        g.add_edge(x, y, key=delta, relation=delta, t=tr.t, action=tr.action, feedback=fb)
    return g


def tokens(text: str) -> set[str]:
    return set(_TOKEN.findall(normalize(text)))


def jaccard(a: set[str], b: set[str]) -> float:
    union = a | b
    return len(a & b) / len(union) if union else 0.0


class StateIndex:
    """The graph's state nodes as arrays for anchor look-up: a sparse node x token matrix
    gives every node's token overlap with a cue in one product (Jaccard from the overlap and
    the two sizes), so a look-up does not visit every node. Rebuilt after a merge."""

    def __init__(self, graph: nx.MultiDiGraph) -> None:
        states = [(key, d) for key, d in graph.nodes(data=True) if d["type"] == STATE]
        self.keys = [key for key, _ in states]
        self.contents = [d["content"] for _, d in states]
        self.position = {key: i for i, key in enumerate(self.keys)}
        self._deltas: dict[str, list[dict[str, Any]]] = {}
        self.visits = np.array([d["visits"] for _, d in states], dtype=np.int64)
        order = sorted(range(len(states)), key=lambda i: (self.contents[i], self.keys[i]))
        self.text_rank = np.empty(len(states), dtype=np.int64)
        self.text_rank[order] = np.arange(len(states))
        self.vocab: dict[str, int] = {}
        rows = [[self.vocab.setdefault(t, len(self.vocab)) for t in tokens(c)]
                for c in self.contents]  # fmt: skip
        self.sizes = np.array([len(r) for r in rows], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(self.sizes)]).astype(np.int64)
        cols = np.array([c for r in rows for c in r], dtype=np.int64)
        self.matrix = sparse.csr_matrix(
            (np.ones(len(cols)), cols, indptr), shape=(len(rows), max(len(self.vocab), 1))
        )

    def ranked_deltas(self, graph: nx.MultiDiGraph, node: str) -> list[dict[str, Any]]:
        """The transition entries (state-delta edges) leaving ``node`` in neighborhood order
        (the anchor's state and similarity are the same for all of them), computed once."""
        cached = self._deltas.get(node)
        if cached is None:
            state = graph.nodes[node]["content"]
            cached = []
            for _, target, relation, data in graph.out_edges(node, keys=True, data=True):
                if relation.startswith(f"{DELTA}:"):
                    cached.append({
                        "state": state,
                        "action": data["payload"]["action"],
                        "next_state": graph.nodes[target]["content"],
                        "count": data["count"],
                        "progressed": data["progressed"],
                        "stalled": data["stalled"],
                        "labels": dict(data["labels"]),
                        "success": data["success"],
                        "similarity": 0.0,
                    })  # fmt: skip
            cached.sort(key=_neighborhood_order)
            self._deltas[node] = cached
        return cached

    def similarities(self, query_tokens: set[str]) -> np.ndarray:
        """Token Jaccard similarity of every state node with ``query_tokens``."""
        ind = np.zeros(self.matrix.shape[1])
        cols = [self.vocab[t] for t in query_tokens if t in self.vocab]
        ind[cols] = 1.0
        inter = self.matrix @ ind
        union = self.sizes + len(query_tokens) - inter
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(union > 0, inter / union, 0.0)


def _neighborhood_order(e: dict[str, Any]) -> tuple:
    return (
        -e["similarity"],
        -e["progressed"] / max(e["count"], 1),
        -e["count"],
        e["state"],
        e["action"],
        e["next_state"],
    )


class LocalGraph:
    """One agent's merged graph ``G_i^l`` with anchor look-up and bounded neighborhoods."""

    def __init__(self, similarity_threshold: float = 0.5) -> None:
        self.similarity_threshold = similarity_threshold
        self.graph = nx.MultiDiGraph()
        self.episodes: set[str] = set()
        self._index: StateIndex | None = None

    def state_index(self) -> StateIndex:
        if self._index is None:
            self._index = StateIndex(self.graph)
        return self._index

    def add_episode(self, transitions: list[Transition], episode_id: str) -> bool:
        """LocalMerge one episode; an episode id already merged is skipped (returns False)."""
        if episode_id in self.episodes:
            return False
        self.merge(episodic_graph(transitions))
        self.episodes.add(episode_id)
        return True

    def merge(self, episodic: nx.MultiDiGraph) -> None:
        self._index = None
        local_of: dict[str, str] = {}
        for nid, data in episodic.nodes(data=True):
            key = node_id(data["type"], data["content"])
            if key not in self.graph:
                self.graph.add_node(
                    key, type=data["type"], content=normalize(data["content"]), visits=0
                )
            self.graph.nodes[key]["visits"] += 1
            local_of[nid] = key
        for u, v, relation, data in episodic.edges(keys=True, data=True):
            lu, lv = local_of[u], local_of[v]
            if not self.graph.has_edge(lu, lv, key=relation):
                payload = {"t": data["t"], "action": data["action"], **data["feedback"]}
                self.graph.add_edge(
                    lu,
                    lv,
                    key=relation,
                    relation=relation,
                    payload=payload,
                    count=0,
                    progressed=0,
                    stalled=0,
                    success=0,
                    labels={},
                )
            _accumulate(self.graph.edges[lu, lv, relation], data["feedback"])

    def anchors(self, state_cue: str, k: int = 3) -> list[dict[str, Any]]:
        """Up to ``k`` state nodes for a query cue: exact match first, then token Jaccard
        similarity at or above the threshold; best first, ties by visits then content."""
        query, query_tokens = normalize(state_cue), tokens(state_cue)
        index = self.state_index()
        sims = index.similarities(query_tokens)
        hits = set(np.flatnonzero(sims >= self.similarity_threshold).tolist())
        exact = index.position.get(node_id(STATE, query))
        if exact is not None:
            hits.add(exact)
        if not hits:
            return []
        pos = np.array(sorted(hits), dtype=np.int64)
        is_exact = pos == (exact if exact is not None else -1)
        sim = np.where(is_exact, 1.0, sims[pos])
        order = np.lexsort((index.text_rank[pos], -index.visits[pos], -sim, ~is_exact))
        return [
            {"node": index.keys[i], "state": index.contents[i], "similarity": float(sim[j]),
             "visits": int(index.visits[i])}
            for j, i in ((j, int(pos[j])) for j in order[: max(k, 0)])
        ]  # fmt: skip

    def neighborhood(
        self, state_cue: str, max_transitions: int = 8, k: int = 3
    ) -> list[dict[str, Any]]:
        """Bounded transition entries leaving the anchors of ``state_cue``, sorted by anchor
        similarity, progress rate, count, then state/action/next state."""
        index = self.state_index()
        limit = max(max_transitions, 0)
        entries = []
        for anchor in self.anchors(state_cue, k):
            for data in index.ranked_deltas(self.graph, anchor["node"])[:limit]:
                entries.append({**data, "state": anchor["state"],
                                "similarity": anchor["similarity"]})  # fmt: skip
        entries.sort(key=_neighborhood_order)
        return entries[:limit]

    def sizes(self) -> dict[str, int]:
        return {
            "nodes": self.graph.number_of_nodes(),
            "edges": self.graph.number_of_edges(),
            "episodes": len(self.episodes),
        }

    def to_dict(self) -> dict[str, Any]:
        return {
            "similarity_threshold": self.similarity_threshold,
            "episodes": sorted(self.episodes),
            "nodes": [{"id": n, **d} for n, d in self.graph.nodes(data=True)],
            "edges": [
                {"source": u, "target": v, "key": k, **d}
                for u, v, k, d in self.graph.edges(keys=True, data=True)
            ],
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> LocalGraph:
        local = LocalGraph(d.get("similarity_threshold", 0.5))
        local.episodes = set(d.get("episodes", []))
        for node in d.get("nodes", []):
            attrs = dict(node)
            local.graph.add_node(attrs.pop("id"), **attrs)
        for edge in d.get("edges", []):
            attrs = dict(edge)
            u, v, key = attrs.pop("source"), attrs.pop("target"), attrs.pop("key")
            attrs["labels"] = dict(attrs.get("labels", {}))
            attrs["payload"] = dict(attrs.get("payload", {}))
            local.graph.add_edge(u, v, key=key, **attrs)
        return local


def _accumulate(edge: dict[str, Any], fb: dict[str, Any]) -> None:
    edge["count"] += 1
    edge["progressed"] += bool(fb["progressed"])
    edge["stalled"] += bool(fb["stalled"])
    edge["success"] += bool(fb["success"])
    if fb["label"]:
        edge["labels"][fb["label"]] = edge["labels"].get(fb["label"], 0) + 1
