"""The prompt-constrained graph controller of EvoGraph-Mem (Section 3.4, Appendix A).

After a task, the controller reads the query, a compact trajectory summary, the task feedback
(Resolved / Failed) and the retrieved insights, and returns one edit per retrieved insight
(KEEP / ARCHIVE / REVISE, Eq. 11) plus a separate ADD decision (Eq. 12). A batch of finished
tasks is decided in one ``llm.generate`` call, each request constrained by a JSON schema whose
properties are exactly that task's insight ids.

Anything the controller returns that cannot be applied as given (not JSON, a missing or unknown
id, an operation outside ``allowed_ops``, REVISE without a revised text, ADD without a text) is
the counted fallback ``evograph_controller``: ``Decision(fallback=True)``, which changes
nothing in the graph. Ablations restrict ``allowed_ops``: ("KEEP",) is add+keep, ("KEEP",
"ARCHIVE") is add+keep+archive, all three is the full method.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from memarena.core.llm_types import ChatRequest, Message
from memarena.memory.evograph.insight_graph import InsightGraph

EDIT_OPS = ("KEEP", "ARCHIVE", "REVISE")
RESERVED = ("add", "insight")
FALLBACK_KIND = "evograph_controller"

_OP_TEXT = {
    "KEEP": (
        "KEEP: the insight was correct and directly helped with this task. The current query "
        "becomes positive evidence for it."
    ),
    "ARCHIVE": (
        "ARCHIVE: the insight was wrong, misleading, harmful or contradicted by this task. The "
        "current query becomes negative evidence and the insight is deactivated."
    ),
    "REVISE": (
        "REVISE: the insight was partly useful but too broad, outdated or missing a condition. "
        "The old insight is deactivated and your corrected version replaces it. The revision "
        "must fix or narrow the insight, not reword it."
    ),
}


class ControllerItem(NamedTuple):
    """One finished task for the controller; a plain tuple in this order works as well."""

    query: str
    status: str  # "Resolved" or "Failed"
    trajectory: str  # compact summary of the agent's trajectory (and its final answer)
    insights: list[tuple[str, str]]  # retrieved (id, content), in retrieval order


@dataclass
class Decision:
    """The controller's edits for one task.

    ``ops`` maps every retrieved insight id to KEEP / ARCHIVE / REVISE (in retrieval order),
    ``revisions`` holds the new text of each REVISE, ``add`` / ``new_insight`` the ADD decision.
    ``fallback=True`` marks an output that could not be used: nothing is applied.
    """

    ops: dict[str, str] = field(default_factory=dict)
    revisions: dict[str, str] = field(default_factory=dict)
    add: bool = False
    new_insight: str = ""
    fallback: bool = False
    reason: str = ""


def controller_schema(
    insight_ids: list[str], allowed_ops: tuple[str, ...] = EDIT_OPS, allow_add: bool = True
) -> dict[str, Any]:
    """JSON schema of one decision: each insight id is a property ``{"op", "revision"}`` whose
    ``op`` is restricted to ``allowed_ops``; ``add`` (boolean) and ``insight`` (string)."""
    clash = [i for i in insight_ids if i in RESERVED]
    if clash:
        raise ValueError(f"controller_schema: insight ids {clash} clash with {RESERVED}")
    edit: dict[str, Any] = {
        "type": "object",
        "properties": {"op": {"type": "string", "enum": list(allowed_ops)}},
        "required": ["op"],
        "additionalProperties": False,
    }
    if "REVISE" in allowed_ops:
        edit["properties"]["revision"] = {"type": "string"}
        edit["required"] = ["op", "revision"]
    props: dict[str, Any] = {i: edit for i in insight_ids}
    required = list(insight_ids)
    if allow_add:
        props["add"] = {"type": "boolean"}
        props["insight"] = {"type": "string"}
        required += ["add", "insight"]
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


class GraphController:
    """Prompt-constrained LLM that turns finished tasks into insight-graph edits."""

    def __init__(
        self,
        llm: Any,
        allowed_ops: tuple[str, ...] = EDIT_OPS,
        allow_add: bool = True,
        max_tokens: int = 768,
        temperature: float = 0.0,
    ) -> None:
        unknown = [op for op in allowed_ops if op not in EDIT_OPS]
        if unknown or not allowed_ops:
            raise ValueError(
                f"GraphController: allowed_ops must be a non-empty subset of {EDIT_OPS}"
            )
        self.llm = llm
        self.allowed_ops = tuple(op for op in EDIT_OPS if op in allowed_ops)
        self.allow_add = allow_add
        self.max_tokens = max_tokens
        self.temperature = temperature
        self.fallbacks = 0
        self.stats: dict[str, int] = {
            "calls": 0,
            "requests": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "fallbacks": 0,
            **{op: 0 for op in EDIT_OPS},
            "ADD": 0,
        }

    # -- prompting ----------------------------------------------------------------------------
    def messages(self, item: ControllerItem) -> list[Message]:
        ops = "\n".join(f"- {_OP_TEXT[op]}" for op in self.allowed_ops)
        add = (
            "Then decide separately whether this task teaches a new, reusable insight that none "
            "of the retrieved insights covers. Add only general, non-duplicated insights of one "
            "or two sentences; never a fact specific to this one task."
            if self.allow_add
            else "Do not create new insights."
        )
        system = (
            "You maintain a graph of reusable insights for an agent. A task has just finished; "
            "judge each insight that was retrieved for it and choose exactly one operation:\n"
            f"{ops}\n{add}\nUse only the task information given. Be conservative."
        )
        insights = json.dumps(
            [{"id": i, "insight": text} for i, text in item.insights], ensure_ascii=False
        )
        shape: dict[str, Any] = {}
        for i, _ in item.insights[:1]:
            shape[i] = {"op": self.allowed_ops[0]}
            if "REVISE" in self.allowed_ops:
                shape[i]["revision"] = ""
        if self.allow_add:
            shape["add"] = False
            shape["insight"] = ""
        fields = f"op is one of {', '.join(self.allowed_ops)}"
        if "REVISE" in self.allowed_ops:
            fields += "; revision is the corrected insight for REVISE, else empty"
        if self.allow_add:
            fields += "; add is true or false; insight is the new insight when add is true"
        user = (
            f"Task: {item.query}\n"
            f"Trajectory: {item.trajectory}\n"
            f"Task feedback: {item.status}\n"
            f"Retrieved insights: {insights}\n\n"
            "Answer with one JSON object only, with one entry per retrieved insight id "
            f"({fields}), e.g. {json.dumps(shape, ensure_ascii=False)}"
        )
        return [{"role": "system", "content": system}, {"role": "user", "content": user}]

    # -- deciding -----------------------------------------------------------------------------
    def decide(self, items: list[ControllerItem | tuple]) -> list[Decision]:
        """One decision per item, from a single ``llm.generate`` call for the whole batch.
        Items with nothing to decide (no insights and ADD disabled) get an empty Decision."""
        items = [ControllerItem(*item) for item in items]
        decisions: list[Decision] = [Decision() for _ in items]
        todo = [k for k, item in enumerate(items) if item.insights or self.allow_add]
        if not todo:
            return decisions
        requests = []
        for k in todo:
            ids = [i for i, _ in items[k].insights]
            requests.append(
                ChatRequest(
                    messages=self.messages(items[k]),
                    json_schema=controller_schema(ids, self.allowed_ops, self.allow_add),
                    temperature=self.temperature,
                    max_tokens=self.max_tokens,
                )
            )
        completions = self.llm.generate(requests)
        self.stats["calls"] += 1
        self.stats["requests"] += len(requests)
        for k, completion in zip(todo, completions, strict=True):
            self.stats["prompt_tokens"] += completion.prompt_tokens
            self.stats["completion_tokens"] += completion.completion_tokens
            ids = [i for i, _ in items[k].insights]
            decision = self.parse(completion.text, ids)
            if decision.fallback:
                self._count_fallback(decision.reason)
            else:
                for op in decision.ops.values():
                    self.stats[op] += 1
                self.stats["ADD"] += int(decision.add)
            decisions[k] = decision
        return decisions

    def parse(self, text: str, insight_ids: list[str]) -> Decision:
        """Validate one controller output; any defect gives ``Decision(fallback=True)``."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError):
            return _fail("not JSON")
        if not isinstance(data, dict):
            return _fail("not a JSON object")
        extra = [k for k in data if k not in insight_ids and k not in RESERVED]
        if extra:
            return _fail(f"unknown insight ids {extra}")
        decision = Decision()
        for node_id in insight_ids:
            edit = data.get(node_id)
            if not isinstance(edit, dict):
                return _fail(f"no edit for {node_id}")
            op = edit.get("op")
            if not isinstance(op, str) or op not in self.allowed_ops:
                return _fail(f"operation {op!r} for {node_id} not in {self.allowed_ops}")
            if op == "REVISE":
                revision = edit.get("revision")
                if not isinstance(revision, str) or not revision.strip():
                    return _fail(f"REVISE of {node_id} without a revised insight")
                decision.revisions[node_id] = revision.strip()
            decision.ops[node_id] = op
        if self.allow_add and "add" not in data:
            return _fail("no add decision")
        add = data.get("add", False)
        if not isinstance(add, bool):
            return _fail("add is not a boolean")
        if add:
            if not self.allow_add:
                return _fail("add is disabled")
            insight = data.get("insight")
            if not isinstance(insight, str) or not insight.strip():
                return _fail("add without an insight")
            decision.add, decision.new_insight = True, insight.strip()
        return decision

    def _count_fallback(self, reason: str) -> None:
        self.fallbacks += 1
        self.stats["fallbacks"] += 1
        record = getattr(self.llm, "record_fallback", None)
        if callable(record):
            record(FALLBACK_KIND, detail=reason)


def apply_decision(graph: InsightGraph, decision: Decision, q: str, resolved: bool) -> list[str]:
    """Apply a decision for query ``q`` (Eq. 13-18); returns the new / revised node ids.
    A fallback decision applies nothing."""
    if decision.fallback:
        return []
    new_ids: list[str] = []
    for node_id, op in decision.ops.items():
        if op == "REVISE":
            new_ids.append(graph.revise(node_id, q, decision.revisions[node_id]))
        elif op == "ARCHIVE":
            graph.archive(node_id, q)
        elif op == "KEEP":
            graph.keep(node_id, q)
        else:
            raise ValueError(f"apply_decision: unknown operation {op!r} for {node_id}")
    if decision.add:
        new_ids.append(graph.add(decision.new_insight, q))
    graph.update_edges(list(decision.ops), new_ids, q, resolved)
    return new_ids


def _fail(reason: str) -> Decision:
    return Decision(fallback=True, reason=reason)
