"""LLM_summ's requests and the parsing of their answers (reme.txt Section 3.2, Appendix C.1).

Functions here build :class:`ChatRequest` objects and turn parsed JSON answers into
:class:`Experience` candidates; the method batches the requests of a whole wave into one call.

What the summarizer is shown of a trajectory (``summary_input``):

- ``messages`` (ReMe's released code: ``merge_messages_content``): the whole conversation, one
  block per message numbered from 0: the first user message (the task, and at acquisition the
  task's tool list appended to it as a tools block, as ``init_task_memory_pool.py`` does; the
  summaries made while evaluating go without it, as ``bfcl_agent.py summary_memory``), then per
  step the agent's reply (its reasoning text, its content, each tool call with its arguments)
  and what came back (a tool message with the call results when the reply called tools, else a
  user message). Nothing is clipped: the text is cut only when the request would not fit the
  summarizer's context (:func:`fit_messages`), and the method counts each cut;
- ``steps`` (memarena's earlier reading): :func:`render`, ``Step i: action -> observation``
  lines, each observation clipped and the whole cut in the middle to a character budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from memarena.core import ChatRequest, Outcome, Task, Trajectory
from memarena.core.json_budget import UnboundedSchemaError, answer_tokens, reply_tokens
from memarena.core.tool_calls import bfcl_tools, parse_tool_calls
from memarena.memory.llm_calls import clip_text
from memarena.memory.reme import prompts
from memarena.memory.reme.experience import Experience

SUCCESS_SCORE = 1.0  # Appendix C.1: a trajectory is successful at reward >= 1.0
REWARDS = ("success", "progress")


def score(outcome: Outcome, reward: str = "progress") -> float:
    """The reward that ranks a task's samples and gates the comparative analysis: ``success``
    is 1 or 0 (BFCL's checker, the reward of ReMe's BFCL agent); ``progress`` is 1 for a
    success, else the env's progress kept below 1 (AppWorld's passed / all tests, the reward of
    ReMe's AppWorld agent)."""
    if outcome.success:
        return SUCCESS_SCORE
    return 0.0 if reward == "success" else min(float(outcome.progress), 0.999)


def render(trajectory: Trajectory, outcome: Outcome, max_chars: int, obs_chars: int) -> str:
    """Task, steps (``Step i: action -> observation``) and outcome, cut in the middle to
    ``max_chars`` when long (the beginning and the end of an attempt matter most)."""
    head = [
        f"Task: {clip_text(trajectory.task.goal, 1000)}",
        f"Start: {clip_text(trajectory.initial_observation, obs_chars)}",
    ]
    steps = [
        f"Step {i}: {clip_text(s.action, 300)} -> {clip_text(s.observation, obs_chars)}"
        for i, s in enumerate(trajectory.steps, 1)
    ]
    tail = [
        f"Outcome: {'success' if outcome.success else 'failure'} "
        f"(status {outcome.status}, progress {outcome.progress:.2f}, {outcome.steps} steps)"
    ]
    budget = max_chars - sum(len(x) + 1 for x in head + tail)
    if sum(len(x) + 1 for x in steps) > budget:
        kept_head: list[str] = []
        kept_tail: list[str] = []
        used = 0
        for i in range(len(steps)):
            line = steps[i // 2] if i % 2 == 0 else steps[-1 - i // 2]
            if used + len(line) + 1 > budget - 40 or len(kept_head) + len(kept_tail) >= len(steps):
                break
            (kept_head if i % 2 == 0 else kept_tail).append(line)
            used += len(line) + 1
        omitted = len(steps) - len(kept_head) - len(kept_tail)
        steps = [*kept_head, f"... ({omitted} steps omitted) ...", *reversed(kept_tail)]
    return "\n".join(head + steps + tail)


def request(
    user: str,
    schema: dict[str, Any],
    cap: int | None,
    temperature: float,
    context: int | None = None,
) -> ChatRequest:
    """LLM_summ's request; ``max_tokens`` is the longest valid answer of ``schema`` (or
    ``cap`` when smaller: :func:`memarena.core.json_budget.reply_tokens`). A schema without
    a bound (the released reading of the experience fields: no length caps) asks for ``cap``,
    else for what the ``context`` leaves beside the prompt, as a vLLM server serves a request
    without ``max_tokens`` (ReMe's summarizer sends none)."""
    messages = [
        {"role": "system", "content": prompts.SYSTEM},
        {"role": "user", "content": user},
    ]
    try:
        max_tokens = reply_tokens(schema, cap)
    except UnboundedSchemaError:
        used = prompt_tokens(sum(len(m["content"]) for m in messages))
        context = context or DEFAULT_CONTEXT_TOKENS
        max_tokens = int(cap) if cap is not None else max(1, context - used)
    return ChatRequest(
        messages=messages, json_schema=schema, max_tokens=max_tokens, temperature=temperature
    )


# -- the released layout (summary_input: messages) ----------------------------------------------
# The summarizer's context when its backbone states none (hf and vllm do: ``context_limit``):
# the native context of the Qwen3 backbones of ReMe's runs.
DEFAULT_CONTEXT_TOKENS = 32768
# Characters per prompt token for the estimate (the memory side holds no tokenizer): English
# runs at three to four characters per token with these vocabularies; three cuts a little
# early rather than overflowing (what still overflows is the engine's backbone.prompt_overflow).
CHARS_PER_TOKEN = 3
TEMPLATE_TOKENS = 64  # the chat template around the system and user messages
MIN_PIECE_CHARS = 80  # a cut message keeps at least this much before the middle goes
# The prompt around a trajectory: the system message, the longest analysis prompt and the
# experience fields (the trajectory's room is the context less these and the reply)
_FRAMES = (
    prompts.SUCCESS,
    prompts.FAILURE,
    prompts.COMPARATIVE,
    prompts.TRAJECTORY,
    prompts.REFLECT,
)
FRAME_CHARS = len(prompts.SYSTEM) + len(prompts.FIELDS) + max(len(t) for t in _FRAMES)


def reply_reserve(schema: dict[str, Any], cap: int | None) -> int:
    """Tokens a summarizer request keeps free for its answer when its input is fitted: the
    schema's bound (or ``cap`` when smaller); an uncapped schema (the released reading) keeps
    ``cap``, else the bound of the same answer under memarena's caps."""
    try:
        return reply_tokens(schema, cap)
    except UnboundedSchemaError:
        if cap is not None:
            return int(cap)
        limit = schema["properties"]["experiences"].get("maxItems", 1)
        return answer_tokens(prompts.experiences_schema(limit))


def task_tools(task: Task) -> list[dict[str, Any]]:
    """The functions a task offers, as OpenAI-style function tools without their response
    documents (BFCL's function documents in ``payload["functions"]``, as ReMe's
    ``extract_tool_schema`` gives them); [] for a task without functions."""
    docs = task.payload.get("functions") or []
    return bfcl_tools(docs) if docs else []


def prompt_tokens(chars: int) -> int:
    """The estimated tokens of a prompt of ``chars`` characters (template included)."""
    return -(-chars // CHARS_PER_TOKEN) + TEMPLATE_TOKENS


def room_chars(context: int, reply: int, share: int = 1) -> int:
    """Characters one of ``share`` trajectories may take in a prompt that leaves ``reply``
    tokens of ``context`` for the answer."""
    free = (context - reply - TEMPLATE_TOKENS) * CHARS_PER_TOKEN - FRAME_CHARS
    return max(0, free // max(1, share))


@dataclass
class Message:
    """One message of a trajectory's conversation as the summarizer is shown it."""

    role: str  # user | assistant | tool
    content: str
    reasoning: str = ""
    calls: list[tuple[str, str]] = field(default_factory=list)  # (name, arguments as JSON)


def split_reasoning(text: str) -> tuple[str, str]:
    """(the reasoning text of a reply, the reply without it): the bodies of its
    ``<think>...</think>`` blocks, and the text before a ``</think>`` whose block the prompt
    opened (Qwen3's template starts a thinking reply inside it)."""
    thoughts = [m.strip() for m in re.findall(r"<think>(.*?)</think>", text, re.DOTALL)]
    rest = re.sub(r"<think>.*?</think>", "", text, flags=re.DOTALL)
    if "</think>" in rest:
        before, rest = rest.split("</think>", 1)
        thoughts.insert(0, before.replace("<think>", "").strip())
    return "\n\n".join(t for t in thoughts if t), rest.strip()


def tools_block(tools: Sequence[dict[str, Any]]) -> str:
    """The task's tools as a Qwen-style tools section (a heading, one JSON document per tool
    between ``<tools>`` tags, the ``<tool_call>`` answer format), as ReMe's pool
    initialisation appends to the first user message (``get_tool_prompt``)."""
    lines = [
        "",
        "",
        "# Tools",
        "",
        "You can call one or more of the functions below to help with the request.",
        "",
        "Their signatures are given inside the <tools></tools> tags:",
        "<tools>",
        *(json.dumps(tool) for tool in tools),
        "</tools>",
        "",
        "Return each function call as a JSON object with the function's name and its "
        "arguments inside <tool_call></tool_call> tags:",
        '<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>',
    ]
    return "\n".join(lines)


def conversation(
    trajectory: Trajectory, tools: Sequence[dict[str, Any]] | None = None
) -> list[Message]:
    """The trajectory as the messages the agent exchanged: the first user message (the task,
    the initial observation when it is not the task's text again, and ``tools`` as a tools
    block when given), then per step the reply (reasoning, content, tool calls; the action
    when no reply was recorded) and a tool message with the step's observation when the reply
    called tools, else a user message with it (the agent's conversation prompt does the same,
    memarena.agent.prompts)."""
    task = trajectory.task
    first = task.goal
    if trajectory.initial_observation.strip() != task.goal.strip():
        first = f"{first}\n\n{trajectory.initial_observation}"
    if tools:
        first += tools_block(tools)
    out = [Message("user", first)]
    for step in trajectory.steps:
        raw = step.raw_output or step.action
        reasoning, rest = split_reasoning(raw)
        content, calls = parse_tool_calls(rest)
        out.append(
            Message(
                "assistant",
                content,
                reasoning,
                [(c["name"], json.dumps(c["arguments"], ensure_ascii=False)) for c in calls],
            )
        )
        out.append(Message("tool" if calls else "user", step.observation))
    return out


def _piece(text: str, cap: int | None) -> str:
    """``text`` whole, or its head and tail around a marker in about ``cap`` characters."""
    if cap is None or len(text) <= cap:
        return text
    marker = f" ... [{len(text) - cap} characters cut to fit the context] ... "
    keep = max(0, cap - len(marker))
    return text[: keep - keep // 2] + marker + text[len(text) - keep // 2 :]


def render_messages(messages: Sequence[Message], cap: int | None = None) -> str:
    """One block per message, numbered from 0 (the layout of ReMe's
    ``merge_messages_content``): a header with the step and the role, then an assistant's
    reasoning and content and each tool call's name and arguments, a user message's content,
    a tool message's call results. ``cap`` cuts every text longer than it (a cut input)."""
    blocks = []
    for i, m in enumerate(messages):
        if m.role == "assistant":
            block = f"### step {i}, role: assistant, content:\n{_piece(m.reasoning, cap)}\n\n"
            block += f"{_piece(m.content, cap)}\n"
            for name, arguments in m.calls:
                block += f" - tool call: {name}\n   arguments: {_piece(arguments, cap)}\n"
        elif m.role == "tool":
            block = f"### step {i}, role: tool, tool call result:\n{_piece(m.content, cap)}\n"
        else:
            block = f"### step {i}, role: user, content:\n{_piece(m.content, cap)}\n"
        blocks.append(block)
    return "\n".join(blocks)


def fit_messages(messages: Sequence[Message], room: int) -> tuple[str, bool]:
    """The conversation in at most ``room`` characters when it can be, and whether it was cut:
    whole when it fits; else every text cut to the largest common length that fits (the
    longest texts, a tools block or a long result, lose their middles first; every message
    stays); else, at :data:`MIN_PIECE_CHARS`, the middle of the whole text left out."""
    room = max(0, int(room))
    whole = render_messages(messages)
    if len(whole) <= room:
        return whole, False
    if len(render_messages(messages, MIN_PIECE_CHARS)) <= room:
        texts = [t for m in messages for t in (m.content, m.reasoning, *(a for _, a in m.calls))]
        lo, hi = MIN_PIECE_CHARS, max(len(t) for t in texts)  # fits at lo, not at hi
        while hi - lo > 1:
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if len(render_messages(messages, mid)) <= room else (lo, mid)
        return render_messages(messages, lo), True
    text = render_messages(messages, MIN_PIECE_CHARS)
    marker = f"\n... [{len(text)} characters; the middle cut to fit the context] ...\n"
    keep = max(0, room - len(marker))
    return text[: keep - keep // 2] + marker + text[len(text) - keep // 2 :], True


def parse_experiences(
    raw: Any, limit: int, *, kind: str, task_query: str, source_task: str
) -> list[Experience] | None:
    """Experiences from a parsed answer; None when the answer has the wrong shape. Items without
    a usage scenario or content are dropped; confidence is clipped to [0, 1]."""
    if not isinstance(raw, dict) or not isinstance(raw.get("experiences"), list):
        return None
    out = []
    for item in raw["experiences"][:limit]:
        if not isinstance(item, dict):
            continue
        when = str(item.get("when_to_use") or "").strip()
        content = str(item.get("experience") or "").strip()
        if not when or not content:
            continue
        try:
            confidence = min(max(float(item.get("confidence", 0.5)), 0.0), 1.0)
        except (TypeError, ValueError):
            confidence = 0.5
        out.append(
            Experience(
                id="",
                when_to_use=when,
                content=content,
                keywords=_strings(item.get("keywords")),
                confidence=confidence,
                tools=_strings(item.get("tools")),
                kind=kind,
                source_task=source_task,
                task_query=task_query,
            )
        )
    return out


def _strings(value: Any) -> list[str]:
    if not isinstance(value, list):
        return []
    return [str(v).strip() for v in value if str(v).strip()][:8]


LENIENT_VALID, LENIENT_SCORE = True, 0.5  # ReMe's validation op: what a reply lacks


def judge_verdict(raw: Any, min_score: float, lenient: bool = False) -> tuple[bool, bool]:
    """(keep, malformed): keep when the judge says valid with score >= ``min_score``. A reply
    without a verdict (not a JSON object, or missing or mistyped ``valid`` / ``score``) is
    malformed; ``lenient`` (ReMe's validation op) reads what it lacks as valid with score 0.5,
    otherwise a malformed reply keeps nothing."""
    answer = raw if isinstance(raw, dict) else {}
    valid, value = answer.get("valid"), answer.get("score")
    number = isinstance(value, int | float) and not isinstance(value, bool)
    malformed = not isinstance(valid, bool) or not number
    if malformed and not lenient:
        return False, True
    valid = valid if isinstance(valid, bool) else LENIENT_VALID
    value = float(value) if number else LENIENT_SCORE
    return bool(valid) and value >= min_score, malformed


def rerank_order(raw: Any, n: int) -> list[int] | None:
    """0-based candidate order from 1-based numbers; unknown or repeated numbers are dropped,
    candidates the answer left out follow in their retrieval order. None if malformed."""
    if not isinstance(raw, dict) or not isinstance(raw.get("order"), list):
        return None
    seen: list[int] = []
    for value in raw["order"]:
        if isinstance(value, int) and 1 <= value <= n and value - 1 not in seen:
            seen.append(value - 1)
    return seen + [i for i in range(n) if i not in seen]


def numbered(experiences: Sequence[Experience]) -> str:
    """``Experience i:`` blocks (:meth:`Experience.render`), numbered from 1."""
    return "\n".join(e.render(i) for i, e in enumerate(experiences, 1))


def numbered_bfcl(experiences: Sequence[Experience]) -> str:
    """The blocks as ReMe's released BFCL agent lists them (``Experience i :``, a space before
    the colon: bfcl_agent.py renames its memory service's ``Memory i :`` blocks and writes a
    retry's lessons the same way; ``MemoryContext.bare``)."""
    return "\n".join(
        f"Experience {i} :\n When to use: {e.when_to_use}\n Content: {e.content}\n"
        for i, e in enumerate(experiences, 1)
    )


# either numbering (memarena's ``Experience i:`` or the released BFCL agent's ``Experience i :``)
_BLOCK = re.compile(
    r"^Experience \d+ ?:\n When to use: (.*?)\n Content: (.*?)\n(?=\nExperience \d+ ?:\n|\Z)",
    re.DOTALL | re.MULTILINE,
)


def parse_numbered(text: str) -> list[tuple[str, str]]:
    """(when to use, content) of each block :func:`numbered` wrote into ``text``."""
    return [(m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]
