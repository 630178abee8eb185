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


class LocalGraph:
    """One agent's merged graph ``G_i^l`` with anchor look-up and bounded neighborhoods."""

    def __init__(self, similarity_threshold: float = 0.5) -> None:
        self.similarity_threshold = similarity_threshold
        self.graph = nx.MultiDiGraph()
        self.episodes: set[str] = set()

    def add_episode(self, transitions: list[Transition], episode_id: str) -> bool:
        """LocalMerge one episode; an episode id already merged is skipped (returns False)."""
        if episode_id in self.episodes:
            return False
        self.merge(episodic_graph(transitions))
        self.episodes.add(episode_id)
        return True

    def merge(self, episodic: nx.MultiDiGraph) -> None:
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
        found = []
        for key, data in self.graph.nodes(data=True):
            if data["type"] != STATE:
                continue
            exact = data["content"] == query
            sim = 1.0 if exact else jaccard(query_tokens, tokens(data["content"]))
            if exact or sim >= self.similarity_threshold:
                found.append((not exact, -sim, -data["visits"], data["content"], key, sim))
        found.sort()
        return [
            {"node": key, "state": content, "similarity": sim, "visits": -neg_visits}
            for _, _, neg_visits, content, key, sim in found[: max(k, 0)]
        ]

    def neighborhood(
        self, state_cue: str, max_transitions: int = 8, k: int = 3
    ) -> list[dict[str, Any]]:
        """Bounded transition entries leaving the anchors of ``state_cue``, sorted by anchor
        similarity, progress rate, count, then state/action/next state."""
        entries = []
        for anchor in self.anchors(state_cue, k):
            for _, target, relation, data in self.graph.out_edges(
                anchor["node"], keys=True, data=True
            ):
                if not relation.startswith(f"{DELTA}:"):
                    continue
                entries.append(
                    {
                        "state": anchor["state"],
                        "action": data["payload"]["action"],
                        "next_state": self.graph.nodes[target]["content"],
                        "count": data["count"],
                        "progressed": data["progressed"],
                        "stalled": data["stalled"],
                        "labels": dict(data["labels"]),
                        "success": data["success"],
                        "similarity": anchor["similarity"],
                    }
                )
        entries.sort(
            key=lambda e: (
                -e["similarity"],
                -e["progressed"] / max(e["count"], 1),
                -e["count"],
                e["state"],
                e["action"],
                e["next_state"],
            )
        )
        return entries[: max(max_transitions, 0)]

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
