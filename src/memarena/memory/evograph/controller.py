"""The prompt-constrained graph controller of EvoGraph-Mem (Section 3.4, Appendix A).

After a task, the controller reads what Appendix A gives it: the current query, the agent's
full trajectory, the final answer, the task feedback (Resolved / Failed) and the retrieved
insights; it returns one edit per retrieved insight (KEEP / ARCHIVE / REVISE, Eq. 11) plus a
separate ADD decision (Eq. 12). A batch of finished tasks is decided in one ``llm.generate``
call, each request constrained by a JSON schema whose properties are exactly that task's insight
ids (every text bounded, so the reply budget is the schema's bound: core/json_budget.py).

The trajectory (:func:`trajectory_text`) is every step, action and observation verbatim, then
the final answer (the agent's last action) and the final outcome. It is cut only when the
request would not fit the memory LLM's context (``context_tokens``, less the reply budget):
:func:`fit_trajectory` then clips the longest texts first, all to one common length, so every
step stays in the prompt, and only when that is not enough leaves out middle steps (keeping
the first ones, the failing ones and the last). Each cut request is counted
(``stats["truncations"]``, the method's ``controller_truncations``, fallback
``evograph_controller_truncated`` on the backbone). The prompt's length in tokens is estimated
as characters / :data:`CHARS_PER_TOKEN` (memory methods see no tokenizer).

Validation is per operation. An answer that is not a JSON object is the counted fallback
``evograph_controller``: ``Decision(fallback=True)``, which changes nothing. Otherwise every
operation is checked on its own: an edit of a retrieved insight (its operation must be in
``allowed_ops``, a REVISE needs a revised text) and the ADD decision (a boolean, with a text when
true, and allowed). Valid ones are applied; each invalid one (also an edit for an id that was
not retrieved, or a retrieved insight left without an edit) is listed in ``Decision.invalid``,
changes nothing and counts one fallback ``evograph_controller_op``. Ablations restrict
``allowed_ops``: ("KEEP",) is add+keep, ("KEEP", "ARCHIVE") is add+keep+archive, all three is
the full method.

``keep_mode`` says what a KEEP does (:func:`apply_decision`): ``reinforce`` is Eq. 17
(``Omega+ | {q}``, z = 1); ``untouched`` leaves the insight exactly as it was. Figure 3's
add+keep uses ``untouched`` (Section 4.3: add+keep "only appends new insights and retains
existing ones", the "append-only memory" of the conclusion); the full method and
add+keep+archive use Eq. 17.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from memarena.core.json_budget import reply_tokens
from memarena.core.llm_types import ChatRequest, Message
from memarena.core.types import Outcome, Step, Trajectory
from memarena.memory.evograph.insight_graph import InsightGraph
from memarena.memory.llm_calls import clip_text, generate_logged, record_fallback

log = logging.getLogger(__name__)

EDIT_OPS = ("KEEP", "ARCHIVE", "REVISE")
KEEP_MODES = ("reinforce", "untouched")  # what KEEP does: Eq. 17, or nothing (module docstring)
INSIGHT_CHARS = 300  # a new or revised insight: "one or two sentences" (the prompt's words)
RESERVED = ("add", "insight")
FALLBACK_KIND = "evograph_controller"  # the whole answer is unusable
FALLBACK_OP_KIND = "evograph_controller_op"  # one operation of a usable answer is invalid
TRUNCATED_KIND = "evograph_controller_truncated"  # a trajectory cut to fit the context
# The memory LLM's context when its backbone states none (hf and vllm do: ``context_limit``):
# the native context of the paper's Qwen2.5-7B-Instruct and of the Qwen3 backbones here
# (GPT-4o-mini takes 128k, so this is the safe side for it).
DEFAULT_CONTEXT_TOKENS = 32768
# Characters per prompt token for the estimate (no tokenizer on the memory side). English runs
# at three to four characters per token with these byte-pair vocabularies (json_budget.py);
# three errs towards cutting a little early rather than overflowing the context.
CHARS_PER_TOKEN = 3
TEMPLATE_TOKENS = 64  # the chat template around the two messages (role markers, BOS)
MIN_PIECE_CHARS = 80  # a cut text keeps at least this much before steps are left out

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
_KEEP_UNTOUCHED = "KEEP: the insight stays in memory exactly as it is."


class ControllerItem(NamedTuple):
    """One finished task for the controller; a plain tuple in this order works as well.

    ``trajectory`` is the agent's :class:`Trajectory` (rendered in full with ``outcome`` by
    :func:`trajectory_text`) or an already written text (shown as given)."""

    query: str
    status: str  # "Resolved" or "Failed"
    trajectory: Trajectory | str
    insights: list[tuple[str, str]]  # retrieved (id, content), in retrieval order
    outcome: Outcome | None = None


@dataclass
class Decision:
    """The controller's edits for one task.

    ``ops`` maps each retrieved insight id with a valid edit to KEEP / ARCHIVE / REVISE (in
    retrieval order), ``revisions`` holds the new text of each REVISE, ``add`` / ``new_insight``
    the ADD decision. ``retrieved`` lists every insight retrieved for the task (the sources of
    the Eq. 18 edges), ``invalid`` the reason of each operation that was dropped.
    ``fallback=True`` marks an output that could not be used at all: nothing is applied.
    ``truncated`` says the trajectory in the request was cut to fit the context.
    """

    ops: dict[str, str] = field(default_factory=dict)
    revisions: dict[str, str] = field(default_factory=dict)
    add: bool = False
    new_insight: str = ""
    fallback: bool = False
    reason: str = ""
    retrieved: list[str] = field(default_factory=list)
    invalid: list[str] = field(default_factory=list)
    truncated: bool = False


def controller_schema(
    insight_ids: list[str], allowed_ops: tuple[str, ...] = EDIT_OPS, allow_add: bool = True
) -> dict[str, Any]:
    """JSON schema of one decision: each insight id is a property ``{"op", "revision"}`` whose
    ``op`` is restricted to ``allowed_ops``; ``add`` (boolean) and ``insight`` (string). Texts
    are at most :data:`INSIGHT_CHARS` characters."""
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
        edit["properties"]["revision"] = {"type": "string", "maxLength": INSIGHT_CHARS}
        edit["required"] = ["op", "revision"]
    props: dict[str, Any] = {i: edit for i in insight_ids}
    required = list(insight_ids)
    if allow_add:
        props["add"] = {"type": "boolean"}
        props["insight"] = {"type": "string", "maxLength": INSIGHT_CHARS}
        required += ["add", "insight"]
    return {
        "type": "object",
        "properties": props,
        "required": required,
        "additionalProperties": False,
    }


class GraphController:
    """Prompt-constrained LLM that turns finished tasks into insight-graph edits.

    ``context_tokens`` is the memory LLM's context (prompt and reply); a request whose
    trajectory would overflow it gets a cut trajectory (:func:`fit_trajectory`), counted."""

    def __init__(
        self,
        llm: Any,
        allowed_ops: tuple[str, ...] = EDIT_OPS,
        allow_add: bool = True,
        max_tokens: int | None = None,
        temperature: float = 0.0,
        context_tokens: int = DEFAULT_CONTEXT_TOKENS,
        keep_mode: str = "reinforce",
    ) -> None:
        unknown = [op for op in allowed_ops if op not in EDIT_OPS]
        if unknown or not allowed_ops:
            raise ValueError(
                f"GraphController: allowed_ops must be a non-empty subset of {EDIT_OPS}"
            )
        if keep_mode not in KEEP_MODES:
            raise ValueError(f"GraphController: keep_mode must be one of {KEEP_MODES}")
        if int(context_tokens) < 1:
            raise ValueError("GraphController: context_tokens must be >= 1")
        self.llm = llm
        self.allowed_ops = tuple(op for op in EDIT_OPS if op in allowed_ops)
        self.allow_add = allow_add
        self.max_tokens = max_tokens  # a cap; None: each decision's schema bound
        self.temperature = temperature
        self.context_tokens = int(context_tokens)
        self.keep_mode = keep_mode
        self.stats: dict[str, int] = {
            "calls": 0,
            "requests": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "fallbacks": 0,
            "invalid_ops": 0,
            "truncations": 0,
            **{op: 0 for op in EDIT_OPS},
            "ADD": 0,
        }

    @property
    def fallbacks(self) -> int:
        """Answers that were not a JSON object (each invalid operation counts in
        ``stats["invalid_ops"]``)."""
        return self.stats["fallbacks"]

    # -- prompting ----------------------------------------------------------------------------
    def messages(self, item: ControllerItem, reply_budget: int = 0) -> tuple[list[Message], bool]:
        """The request's messages with the trajectory fitted to the context left after the
        fixed parts and ``reply_budget`` tokens; and whether the trajectory was cut."""
        bare = self._messages(item, "")
        fixed = sum(len(m["content"]) for m in bare)
        room = (self.context_tokens - reply_budget - TEMPLATE_TOKENS) * CHARS_PER_TOKEN - fixed
        text, cut = fit_trajectory(item.trajectory, item.outcome, room)
        return self._messages(item, text), cut

    def _messages(self, item: ControllerItem, trajectory: str) -> list[Message]:
        texts = dict(_OP_TEXT)
        if self.keep_mode == "untouched":
            texts["KEEP"] = _KEEP_UNTOUCHED
        ops = "\n".join(f"- {texts[op]}" for op in self.allowed_ops)
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
            f"Trajectory:\n{trajectory}\n"
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
        requests, cut = [], []
        for k in todo:
            ids = [i for i, _ in items[k].insights]
            schema = controller_schema(ids, self.allowed_ops, self.allow_add)
            budget = reply_tokens(schema, self.max_tokens)
            messages, truncated = self.messages(items[k], budget)
            requests.append(
                ChatRequest(
                    messages=messages,
                    json_schema=schema,
                    temperature=self.temperature,
                    max_tokens=budget,
                )
            )
            cut.append(truncated)
            if truncated:
                self._count(TRUNCATED_KIND, "truncations", f"trajectory of {items[k].query!r}")
        completions = generate_logged(self.llm, requests, FALLBACK_KIND)
        self.stats["calls"] += 1
        self.stats["requests"] += len(requests)
        for k, completion, truncated in zip(todo, completions, cut, strict=True):
            self.stats["prompt_tokens"] += completion.prompt_tokens
            self.stats["completion_tokens"] += completion.completion_tokens
            ids = [i for i, _ in items[k].insights]
            decision = self.parse(completion.text, ids)
            decision.truncated = truncated
            if decision.fallback:
                self._count(FALLBACK_KIND, "fallbacks", decision.reason)
            else:
                for op in decision.ops.values():
                    self.stats[op] += 1
                self.stats["ADD"] += int(decision.add)
                for reason in decision.invalid:
                    self._count(FALLBACK_OP_KIND, "invalid_ops", reason)
            decisions[k] = decision
        return decisions

    def parse(self, text: str, insight_ids: list[str]) -> Decision:
        """Validate one controller output per operation (see the module docstring)."""
        try:
            data = json.loads(text)
        except (ValueError, TypeError):
            return _fail("not JSON")
        if not isinstance(data, dict):
            return _fail("not a JSON object")
        decision = Decision(retrieved=list(insight_ids))
        unknown = [key for key in data if key not in insight_ids and key not in RESERVED]
        decision.invalid += [f"edit of {key!r}, which was not retrieved" for key in unknown]
        for node_id in insight_ids:
            problem = self._edit_problem(node_id, data.get(node_id))
            if problem:
                decision.invalid.append(problem)
                continue
            decision.ops[node_id] = data[node_id]["op"]
            if decision.ops[node_id] == "REVISE":
                decision.revisions[node_id] = data[node_id]["revision"].strip()
        problem = self._add_problem(data)
        if problem:
            decision.invalid.append(problem)
        elif data.get("add") is True:
            decision.add, decision.new_insight = True, data["insight"].strip()
        return decision

    def _edit_problem(self, node_id: str, edit: Any) -> str | None:
        """Why the edit of one retrieved insight cannot be applied, or None."""
        if not isinstance(edit, dict):
            return f"no edit for {node_id}"
        op = edit.get("op")
        if not isinstance(op, str) or op not in self.allowed_ops:
            return f"operation {op!r} for {node_id} not in {self.allowed_ops}"
        if op == "REVISE" and not _has_text(edit.get("revision")):
            return f"REVISE of {node_id} without a revised insight"
        return None

    def _add_problem(self, data: dict[str, Any]) -> str | None:
        """Why the ADD decision cannot be applied, or None (also when there is none to make)."""
        if "add" not in data:
            return "no add decision" if self.allow_add else None
        add = data["add"]
        if not isinstance(add, bool):
            return "add is not a boolean"
        if add and not self.allow_add:
            return "add is disabled"
        if add and not _has_text(data.get("insight")):
            return "add without an insight"
        return None

    def _count(self, kind: str, stat: str, reason: str) -> None:
        """One counted fallback: in ``stats`` and on the backbone."""
        self.stats[stat] += 1
        log.debug("graph controller fallback %s: %s", kind, reason)
        record_fallback(self.llm, kind)


def apply_decision(
    graph: InsightGraph,
    decision: Decision,
    q: str,
    resolved: bool,
    keep_mode: str = "reinforce",
) -> list[str]:
    """Apply a decision for query ``q`` (Eq. 13-18); returns the new / revised node ids.
    A KEEP is Eq. 17 under ``keep_mode="reinforce"`` and changes nothing under
    ``"untouched"``. A fallback decision applies nothing; the Eq. 18 edges start at every
    retrieved insight."""
    if keep_mode not in KEEP_MODES:
        raise ValueError(f"apply_decision: keep_mode {keep_mode!r} is not one of {KEEP_MODES}")
    if decision.fallback:
        return []
    new_ids: list[str] = []
    for node_id, op in decision.ops.items():
        if op == "REVISE":
            new_ids.append(graph.revise(node_id, q, decision.revisions[node_id]))
        elif op == "ARCHIVE":
            graph.archive(node_id, q)
        elif op == "KEEP":
            if keep_mode == "reinforce":
                graph.keep(node_id, q)
        else:
            raise ValueError(f"apply_decision: unknown operation {op!r} for {node_id}")
    if decision.add:
        new_ids.append(graph.add(decision.new_insight, q))
    graph.update_edges(decision.retrieved or list(decision.ops), new_ids, q, resolved)
    return new_ids


def _fail(reason: str) -> Decision:
    return Decision(fallback=True, reason=reason)


def _has_text(value: Any) -> bool:
    return isinstance(value, str) and bool(value.strip())


# -- the trajectory the controller reads ---------------------------------------------------------
def failing(step: Step) -> bool:
    """A step the env rejected or flagged (invalid action, unmet precondition, no effect ...)."""
    return not step.feedback.valid_action or step.feedback.failure_label is not None


def kept_steps(steps: Sequence[Step], max_steps: int, head: int = 2) -> list[int]:
    """Indices of the steps a shortened trajectory shows: all when at most ``max_steps``;
    otherwise the first ``head``, the last, the failing steps (the first and the latest when
    they do not all fit) and, with room left, the steps just before the last."""
    n = len(steps)
    if n <= max_steps:
        return list(range(n))
    keep = set(range(min(head, n))) | {n - 1}
    failed = [i for i, step in enumerate(steps) if failing(step) and i not in keep]
    room = max(0, max_steps - len(keep))
    if len(failed) > room:
        failed = failed[:1] + failed[len(failed) - (room - 1) :] if room > 1 else failed[:room]
    keep.update(failed)
    for i in range(n - 2, -1, -1):
        if len(keep) >= max_steps:
            break
        keep.add(i)
    return sorted(keep)


def outcome_line(outcome: Outcome) -> str:
    verdict = "Resolved" if outcome.success else "Failed"
    return (
        f"Final outcome: {verdict} (status {outcome.status}, progress {outcome.progress:.2f}, "
        f"{outcome.steps} steps)"
    )


def _piece(text: str, cap: int | None) -> str:
    """``text`` as it is, or cut to ``cap`` characters (one line) when longer."""
    text = str(text)
    return text if cap is None or len(text) <= cap else clip_text(text, cap)


def trajectory_text(
    trajectory: Trajectory,
    outcome: Outcome | None = None,
    cap: int | None = None,
    keep: Sequence[int] | None = None,
) -> str:
    """The controller's view of a trajectory (Appendix A): the initial observation, then
    ``n. > action -> observation`` for every step (failing steps marked), the final answer
    (the agent's last action) and the final outcome. Texts are verbatim; :func:`fit_trajectory`
    passes ``cap`` (each text cut to that many characters) and ``keep`` (the step indices
    shown, each left-out run replaced by a marker) only when the full text does not fit."""
    steps = trajectory.steps
    lines = [f"Start: {_piece(trajectory.initial_observation, cap)}"]
    previous = -1
    for i in range(len(steps)) if keep is None else keep:
        if i > previous + 1:
            lines.append(f"... ({i - previous - 1} steps left out to fit the context) ...")
        step = steps[i]
        line = f"{i + 1}. > {_piece(step.action, cap)} -> {_piece(step.observation, cap)}"
        if failing(step):
            line += f" [failed: {step.feedback.failure_label or 'invalid action'}]"
        lines.append(line)
        previous = i
    if not steps:
        lines.append("(no steps)")
    final = _piece(steps[-1].action, cap) if steps else "(none)"
    lines.append(f"Final answer (the agent's last action): {final}")
    if outcome is not None:
        lines.append(outcome_line(outcome))
    return "\n".join(lines)


def fit_trajectory(
    trajectory: Trajectory | str, outcome: Outcome | None, room: int
) -> tuple[str, bool]:
    """The trajectory text in at most ``room`` characters when it can be, and whether it was
    cut. The full text when it fits; else every text cut to the largest common length that
    fits (at least :data:`MIN_PIECE_CHARS`: long observations lose their tails first, every
    step stays); else, at that length, the most steps :func:`kept_steps` can show. A text
    given as a string loses its middle. What still does not fit is left to the engine's
    ``backbone.prompt_overflow`` (:mod:`memarena.llm.context_fit`)."""
    room = max(0, int(room))
    if isinstance(trajectory, str):
        if len(trajectory) <= room:
            return trajectory, False
        return _cut_middle(trajectory, room), True
    full = trajectory_text(trajectory, outcome)
    if len(full) <= room:
        return full, False

    def size(cap: int, keep: list[int] | None = None) -> int:
        return len(trajectory_text(trajectory, outcome, cap, keep))

    steps = trajectory.steps
    if size(MIN_PIECE_CHARS) <= room:
        texts = [trajectory.initial_observation] + [
            t for s in steps for t in (s.action, s.observation)
        ]
        lo, hi = MIN_PIECE_CHARS, max(len(str(t)) for t in texts)  # fits at lo, not at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if size(mid) <= room else (lo, mid)
        return trajectory_text(trajectory, outcome, lo), True
    lo, hi = 1, len(steps)  # steps shown: the most that fit, at least kept_steps(..., 1)
    if size(MIN_PIECE_CHARS, kept_steps(steps, lo)) <= room:
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (
                (mid, hi) if size(MIN_PIECE_CHARS, kept_steps(steps, mid)) <= room else (lo, mid)
            )
    return trajectory_text(trajectory, outcome, MIN_PIECE_CHARS, kept_steps(steps, lo)), True


def _cut_middle(text: str, room: int) -> str:
    """``text`` in about ``room`` characters: its head and tail around a marker."""
    marker = f"\n... ({len(text)} characters, the middle left out to fit the context) ...\n"
    keep = max(0, room - len(marker))
    head = keep // 2
    return text[:head] + marker + text[len(text) - (keep - head) :]
