"""G-Memory's insights (evograph_mem.txt Eq. 5) as the reference code keeps and scores them.

An insight ``iota_k = <kappa_k, Omega_k>`` holds its content, the ids of the tasks that support
it (the reference's ``positive_correlation_tasks``) and the reference code's integer score
(``GMemory.py: InsightsManager``):

- ADD creates it at score 2; AGREE and EDIT add 1 (EDIT also rewrites it); REMOVE subtracts 1,
  or 3 once the list holds ``MAX_RULES`` (10) insights (``_update_rules``). Before applying, an
  ADD whose text contains an existing insight is dropped and an EDIT whose text contains one
  becomes an AGREE of that insight; operations apply in the order REMOVE, AGREE, EDIT, ADD.
- After every task the insights shown for it get +1 when it succeeded and -2 when it failed
  (``GMemory.backward``): the reference names them by their wording, so every insight whose
  content contains a shown wording is scored (:meth:`InsightGraph.reward_texts`);
  :meth:`InsightGraph.reward` names them by id instead (``insight_identity``, see
  :mod:`~memarena.memory.gmemory.method`).
- An insight at score <= 0 is removed (``clear_insights``) after each fine-tuned task and after
  each per-task score update, not in between: a REMOVE and a later AGREE of the same sampled
  task can cancel out.

This module also parses the LLM's operation answers (:func:`parse_ops`) and merge answers
(:func:`parse_merge`): malformed output never raises; each defect is a counted fallback
``gmemory_insights`` and changes nothing.

The reference keeps no insight-to-insight edges (the paper's ``E_i`` of Eq. 5 is not built
by its code), so neither does this baseline.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from memarena.core import Backbone
from memarena.memory.gmemory.prompts import MAX_OPS
from memarena.memory.llm_calls import record_fallback

FALLBACK_INSIGHTS = "gmemory_insights"
OPS = ("ADD", "EDIT", "AGREE", "REMOVE")
APPLY_ORDER = ("REMOVE", "AGREE", "EDIT", "ADD")  # _update_rules
ADD_SCORE = 2  # _update_rules ADD and merge_insights
MAX_RULES = 10  # _finetune_insights MAX_RULE_THRESHOLD
SUCCESS_REWARD, FAILURE_REWARD = 1, -2  # GMemory.backward


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


class InsightGraph:
    """The insight list, in creation order (``insights`` is an insertion-ordered dict)."""

    def __init__(self) -> None:
        self.insights: dict[str, Insight] = {}
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

    # -- which insights a set of tasks touches ---------------------------------------------------
    def related(self, query_ids: Sequence[str], threshold: float = 1) -> list[Insight]:
        """Insights supported by at least ``threshold`` entries of ``query_ids`` (a list:
        repeats count), most supported first, then creation order
        (``InsightsManager._find_related_insights``)."""
        hits = [(sum(q in i.supports for q in query_ids), i) for i in self.insights.values()]
        hits = [(n, i) for n, i in hits if n >= threshold and n > 0]
        hits.sort(key=lambda h: -h[0])  # stable: creation order among ties
        return [i for _, i in hits]

    def rank_insights(
        self, query_ids: Sequence[str], top_b: int, by_text: bool = False
    ) -> list[Insight]:
        """At most ``top_b`` insights supported by ``query_ids``, as the reference ranks them
        (``InsightsManager.query_insights_with_score``): each query task in the given order adds
        1 to every insight it supports, met in creation order; the insights are then sorted by
        that count alone, a stable sort, so ties keep the order in which they were first met
        (the nearest solved task's insights first). ``by_text``: insights of the same wording
        are one entry whose count is the sum of theirs (the reference counts by rule text),
        shown as the first of them met; otherwise every insight is its own entry."""
        if top_b <= 0:
            return []
        counts: dict[str, int] = {}  # entry key -> count, in first-encounter order
        first: dict[str, Insight] = {}
        for query_id in query_ids:
            for insight in self.insights.values():
                if query_id in insight.supports:
                    key = insight.content if by_text else insight.id
                    counts[key] = counts.get(key, 0) + 1
                    first.setdefault(key, insight)
        ranked = sorted(counts, key=lambda key: -counts[key])  # stable: first met among ties
        return [first[key] for key in ranked[:top_b]]

    # -- updates ---------------------------------------------------------------------------------
    def containing(self, text: str) -> Insight | None:
        """The first insight whose content occurs in ``text`` (``_is_existing_rule``)."""
        return next((i for i in self.insights.values() if i.content in text), None)

    def apply(self, ops: Sequence[dict[str, Any]], relative_tasks: Sequence[str]) -> dict[str, int]:
        """Apply validated operations written from ``relative_tasks`` (``_update_rules``);
        returns counts per operation plus ``duplicate`` (ADDs of an existing insight)."""
        counts = dict.fromkeys((*OPS, "duplicate"), 0)
        resolved = []
        for op in ops:
            if op["op"] in ("ADD", "EDIT"):
                existing = self.containing(op["content"])
                if existing is not None and op["op"] == "ADD":
                    counts["duplicate"] += 1
                    continue
                if existing is not None:
                    op = {"op": "AGREE", "id": existing.id}
            resolved.append(op)
        remove_strength = 3 if len(self) >= MAX_RULES else 1
        for kind in APPLY_ORDER:
            for op in (o for o in resolved if o["op"] == kind):
                if kind == "ADD":
                    self.add(op["content"], relative_tasks)
                elif (insight := self.insights.get(op["id"])) is None:
                    continue
                elif kind == "REMOVE":
                    insight.score -= remove_strength
                else:
                    insight.score += 1
                    insight.supports.update(relative_tasks)
                    if kind == "EDIT":
                        insight.content = op["content"].strip()
                counts[kind] += 1
        return counts

    def clear(self) -> int:
        """Remove every insight at score <= 0 (``clear_insights``); returns how many."""
        gone = [i for i, insight in self.insights.items() if insight.score <= 0]
        for insight_id in gone:
            del self.insights[insight_id]
        return len(gone)

    def reward(self, shown_ids: Iterable[str], success: bool) -> int:
        """+1 (success) or -2 (failure) to each shown insight still present, named by id, then
        :meth:`clear`; returns how many were removed (``insight_identity: id``)."""
        delta = SUCCESS_REWARD if success else FAILURE_REWARD
        for insight_id in dict.fromkeys(shown_ids):
            if insight_id in self.insights:
                self.insights[insight_id].score += delta
        return self.clear()

    def reward_texts(self, shown_texts: Iterable[str], success: bool) -> int:
        """The reference's backward pass (``GMemory.backward`` / ``InsightsManager.backward``):
        for each shown wording in turn, +1 (success) or -2 (failure) to every insight whose
        current content contains it, then :meth:`clear`. An insight merged or added since with
        a shown wording is scored too; one edited away from it is not. Returns how many were
        removed (``insight_identity: text``)."""
        delta = SUCCESS_REWARD if success else FAILURE_REWARD
        removed = 0
        for text in shown_texts:
            for insight in self.insights.values():
                if text in insight.content:
                    insight.score += delta
            removed += self.clear()
        return removed

    def replace(self, merged: Sequence[tuple[str, Sequence[str]]]) -> None:
        """Drop every insight and add ``(content, supports)`` at score 2 (``merge_insights``)."""
        self.insights = {}
        for content, supports in merged:
            self.add(content, supports)

    # -- snapshots -------------------------------------------------------------------------------
    def to_dict(self) -> dict[str, Any]:
        return {"insights": [i.to_dict() for i in self.insights.values()], "next_id": self.next_id}

    def load_dict(self, d: dict[str, Any]) -> None:
        self.insights = {x["id"]: Insight.from_dict(x) for x in d.get("insights", [])}
        self.next_id = int(d.get("next_id", len(self.insights) + 1))


# -- parsing the LLM's answers -------------------------------------------------------------------
def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None


def _valid_op(op: Any, shown_ids: set[str]) -> dict[str, Any] | None:
    """One operation as applied, or None: ADD needs content; EDIT a shown id and content;
    AGREE and REMOVE a shown id (the reference drops rule numbers outside the shown list)."""
    if not isinstance(op, dict):
        return None
    kind, content, target = op.get("op"), _text(op.get("content")), op.get("id")
    if kind == "ADD" and content:
        return {"op": kind, "content": content}
    if kind == "EDIT" and target in shown_ids and content:
        return {"op": kind, "id": target, "content": content}
    if kind in ("AGREE", "REMOVE") and target in shown_ids:
        return {"op": kind, "id": target}
    return None


def parse_ops(
    llm: Backbone, raw: Any, shown_ids: set[str], fallbacks: dict[str, int] | None
) -> list[dict[str, Any]]:
    """The valid operations of one parsed answer (at most ``MAX_OPS``). ``raw=None`` (already
    counted by ``json_batch``) gives ``[]``; an answer without an operations list, and each
    invalid operation, counts one fallback ``gmemory_insights``."""
    if raw is None:
        return []
    items = raw.get("operations") if isinstance(raw, dict) else None
    if not isinstance(items, list):
        record_fallback(llm, FALLBACK_INSIGHTS, fallbacks)
        return []
    valid = []
    for op in items:
        parsed = _valid_op(op, shown_ids)
        if parsed is None:
            record_fallback(llm, FALLBACK_INSIGHTS, fallbacks)
        else:
            valid.append(parsed)
    return valid[:MAX_OPS]


def parse_merge(
    llm: Backbone, raw: Any, batch: Sequence[str], limit: int, fallbacks: dict[str, int] | None
) -> list[str]:
    """The merged lessons of one batch; the batch unchanged (and one counted fallback unless
    ``json_batch`` counted it) when the answer is malformed."""
    items = raw.get("insights") if isinstance(raw, dict) else None
    merged = [t for t in map(_text, items) if t] if isinstance(items, list) else []
    if merged and len(merged) == len(items):
        return merged[: max(1, limit)]
    if raw is not None:
        record_fallback(llm, FALLBACK_INSIGHTS, fallbacks)
    return list(batch)
