"""G-Memory's insight graph (evograph_mem.txt Eq. 5) and its LLM maintenance.

An insight ``iota_k = <kappa_k, Omega_k>`` holds its content and the ids of the queries that
support it, plus the reference code's integer score. A hyper-edge ``(m, n, q)`` says insight
``m`` contextualised insight ``n`` through query ``q``: it is added when a maintenance batch
creates or edits ``n`` from query ``q`` while ``m`` had been shown to the agent on ``q``.

Maintenance (:func:`maintain`) is one JSON-constrained call returning ADD / EDIT / AGREE /
REMOVE operations; :meth:`InsightGraph.apply` scores them as the reference code does (ADD sets
2, EDIT and AGREE +1, REMOVE -1; an insight at score <= 0 is deleted). :func:`merge_groups` is
the periodic merge call (groups of near-duplicate ids and their merged content; supports are
unioned). Malformed output changes nothing and is counted as fallback ``gmemory_insights``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from memarena.core import Backbone, ChatRequest
from memarena.memory.gmemory import prompts
from memarena.memory.llm_calls import add_usage, record_fallback

FALLBACK_INSIGHTS = "gmemory_insights"
OPS = ("ADD", "EDIT", "AGREE", "REMOVE")
ADD_SCORE = 2
MAX_OPS = 5  # operations per maintenance call (also the schema's maxItems)


@dataclass
class Insight:
    id: str
    content: str
    supports: set[str] = field(default_factory=set)
    score: int = ADD_SCORE

    def to_dict(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "content": self.content,
            "supports": sorted(self.supports),
            "score": self.score,
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> Insight:
        return Insight(d["id"], d["content"], set(d.get("supports", [])), int(d["score"]))


def id_key(insight_id: str) -> tuple[int, str]:
    """Order of ids: by their trailing number (creation order), then the text."""
    match = re.search(r"(\d+)$", insight_id)
    return (int(match.group(1)) if match else -1, insight_id)


class InsightGraph:
    def __init__(self) -> None:
        self.insights: dict[str, Insight] = {}
        self.edges: list[tuple[str, str, str]] = []  # (m, n, query): m contextualises n via q
        self.next_id = 1

    def __len__(self) -> int:
        return len(self.insights)

    def new_id(self) -> str:
        insight_id = f"ins-{self.next_id}"
        self.next_id += 1
        return insight_id

    def add(self, content: str, supports: Iterable[str], score: int = ADD_SCORE) -> Insight:
        insight = Insight(self.new_id(), content.strip(), set(supports), int(score))
        self.insights[insight.id] = insight
        return insight

    def delete(self, insight_id: str) -> None:
        self.insights.pop(insight_id, None)
        self.edges = [e for e in self.edges if insight_id not in (e[0], e[1])]

    def add_edges(self, target: str, context: Mapping[str, Sequence[str]]) -> None:
        """Edges (m, target, q) for every insight m shown on query q of ``context``."""
        known = set(self.edges)
        for query_id, shown in context.items():
            for m in shown:
                edge = (m, target, query_id)
                if m != target and m in self.insights and edge not in known:
                    known.add(edge)
                    self.edges.append(edge)

    def rank_insights(self, expanded_query_ids: Iterable[str], top_b: int) -> list[Insight]:
        """Insights whose supports meet the expanded query set, by |supports ∩ set| (desc),
        then score (desc), then id (creation order); at most ``top_b``."""
        expanded = set(expanded_query_ids)
        if top_b <= 0 or not expanded:
            return []
        hits = [(len(i.supports & expanded), i) for i in self.insights.values()]
        hits = [(n, i) for n, i in hits if n > 0]
        hits.sort(key=lambda h: (-h[0], -h[1].score, id_key(h[1].id)))
        return [i for _, i in hits[:top_b]]

    def apply(
        self,
        ops: Sequence[Mapping[str, Any]],
        supports: Sequence[str],
        context: Mapping[str, Sequence[str]] | None = None,
    ) -> dict[str, int]:
        """Apply validated operations; returns counts per op (plus ``deleted``).

        ``supports``: the query ids of the batch the operations were written from; ADD, EDIT and
        AGREE add them to the insight's supports. ``context``: insight ids shown per query of
        the batch (for the hyper-edges of ADD and EDIT).
        """
        counts = dict.fromkeys((*OPS, "deleted"), 0)
        for op in ops:
            kind = op["op"]
            if kind == "ADD":
                target = self.add(op["content"], supports).id
            else:
                insight = self.insights.get(op["id"])
                if insight is None:  # deleted by an earlier op of the same batch
                    continue
                target = insight.id
                if kind == "REMOVE":
                    insight.score -= 1
                else:
                    insight.score += 1
                    insight.supports.update(supports)
                    if kind == "EDIT":
                        insight.content = op["content"].strip()
                if insight.score <= 0:
                    self.delete(insight.id)
                    counts["deleted"] += 1
            counts[kind] += 1
            if kind in ("ADD", "EDIT") and context and target in self.insights:
                self.add_edges(target, context)
        return counts

    def merge(self, groups: Sequence[Mapping[str, Any]]) -> int:
        """Merge each group (>= 2 existing ids, disjoint from earlier groups) into its first id
        (creation order): merged content, unioned supports, the highest score; edges of the
        absorbed ids are redirected. Returns the number of insights removed."""
        removed = 0
        used: set[str] = set()
        for group in groups:
            ids = sorted({i for i in group["ids"] if i in self.insights} - used, key=id_key)
            if len(ids) < 2:
                continue
            used.update(ids)
            keep, rest = self.insights[ids[0]], ids[1:]
            keep.content = group["content"].strip()
            for other in rest:
                gone = self.insights.pop(other)
                keep.supports |= gone.supports
                keep.score = max(keep.score, gone.score)
                removed += 1
            rename = {other: keep.id for other in rest}
            edges: list[tuple[str, str, str]] = []
            for m, n, q in self.edges:
                edge = (rename.get(m, m), rename.get(n, n), q)
                if edge[0] != edge[1] and edge not in edges:
                    edges.append(edge)
            self.edges = edges
        return removed

    def render(self) -> str:
        if not self.insights:
            return "(none yet)"
        ordered = sorted(self.insights.values(), key=lambda i: id_key(i.id))
        return "\n".join(f"[{i.id}] {i.content}" for i in ordered)

    def to_dict(self) -> dict[str, Any]:
        return {
            "insights": [i.to_dict() for i in sorted(self.insights.values(), key=_by_id)],
            "edges": [list(e) for e in self.edges],
            "next_id": self.next_id,
        }

    def load_dict(self, d: dict[str, Any]) -> None:
        self.insights = {x["id"]: Insight.from_dict(x) for x in d.get("insights", [])}
        self.edges = [(m, n, q) for m, n, q in d.get("edges", [])]
        self.next_id = int(d.get("next_id", len(self.insights) + 1))


def _by_id(insight: Insight) -> tuple[int, str]:
    return id_key(insight.id)


# -- LLM calls ---------------------------------------------------------------------------------
def _json_call(
    llm: Backbone, system: str, user: str, schema: dict[str, Any], max_tokens: int, usage
) -> Any:
    request = ChatRequest(
        messages=[{"role": "system", "content": system}, {"role": "user", "content": user}],
        json_schema=schema,
        max_tokens=max_tokens,
    )
    (completion,) = llm.generate([request])
    add_usage(usage, [completion])
    if completion.fallback:
        return None
    try:
        return json.loads(completion.text)
    except (ValueError, TypeError):
        return None


def validate_ops(raw: Any, known_ids: set[str]) -> tuple[list[dict[str, Any]], int]:
    """(valid operations, number of dropped ones); ``raw`` is the parsed answer."""
    if not isinstance(raw, dict) or not isinstance(raw.get("operations"), list):
        raise ValueError("no operations list")
    valid, dropped = [], 0
    for op in raw["operations"]:
        kind = op.get("op") if isinstance(op, dict) else None
        content = op.get("content") if isinstance(op, dict) else None
        has_content = isinstance(content, str) and bool(content.strip())
        if kind == "ADD" and has_content:
            valid.append({"op": kind, "content": content})
        elif kind in ("AGREE", "REMOVE") and op.get("id") in known_ids:
            valid.append({"op": kind, "id": op["id"]})
        elif kind == "EDIT" and op.get("id") in known_ids and has_content:
            valid.append({"op": kind, "id": op["id"], "content": content})
        else:
            dropped += 1
    return valid[:MAX_OPS], dropped


def maintain(
    llm: Backbone,
    successes: Sequence[str],
    failures: Sequence[str],
    insights: InsightGraph,
    usage: dict[str, int] | None = None,
    fallbacks: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Operations written from rendered successful and failed trajectories (one call).

    An unparseable answer returns ``[]`` and counts one fallback; each operation naming an
    unknown id or missing its content is dropped and counted.
    """
    user = prompts.INSIGHTS_USER.format(
        insights=insights.render(),
        successes="\n\n".join(successes) or "(none)",
        failures="\n\n".join(failures) or "(none)",
        max_ops=MAX_OPS,
    )
    raw = _json_call(
        llm, prompts.INSIGHTS_SYSTEM, user, prompts.INSIGHTS_SCHEMA, 96 * MAX_OPS, usage
    )
    try:
        ops, dropped = validate_ops(raw, set(insights.insights))
    except ValueError:
        record_fallback(llm, FALLBACK_INSIGHTS, fallbacks)
        return []
    for _ in range(dropped):
        record_fallback(llm, FALLBACK_INSIGHTS, fallbacks)
    return ops


def merge_groups(
    llm: Backbone,
    insights: InsightGraph,
    usage: dict[str, int] | None = None,
    fallbacks: dict[str, int] | None = None,
) -> list[dict[str, Any]]:
    """Groups ``{"ids": [...], "content": str}`` of near-duplicates (one call); ``[]`` and a
    counted fallback when the answer is malformed."""
    user = prompts.MERGE_USER.format(insights=insights.render())
    budget = 1024  # at most 10 groups of 10 ids and 240 characters
    raw = _json_call(llm, prompts.MERGE_SYSTEM, user, prompts.MERGE_SCHEMA, budget, usage)
    groups = raw.get("groups") if isinstance(raw, dict) else None
    if not isinstance(groups, list) or not all(
        isinstance(g, dict)
        and isinstance(g.get("ids"), list)
        and isinstance(g.get("content"), str)
        and g["content"].strip()
        for g in groups
    ):
        record_fallback(llm, FALLBACK_INSIGHTS, fallbacks)
        return []
    return groups
