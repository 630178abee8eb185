"""LLM_summ's requests and the parsing of their answers (reme.txt Section 3.2, Appendix C.1).

Functions here build :class:`ChatRequest` objects and turn parsed JSON answers into
:class:`Experience` candidates; the method batches the requests of a whole wave into one call.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from memarena.core import ChatRequest, Outcome, Trajectory
from memarena.core.json_budget import reply_tokens
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


def request(user: str, schema: dict[str, Any], cap: int | None, temperature: float) -> ChatRequest:
    """LLM_summ's request; ``max_tokens`` is the longest valid answer of ``schema`` (or
    ``cap`` when smaller: :func:`memarena.core.json_budget.reply_tokens`)."""
    return ChatRequest(
        messages=[
            {"role": "system", "content": prompts.SYSTEM},
            {"role": "user", "content": user},
        ],
        json_schema=schema,
        max_tokens=reply_tokens(schema, cap),
        temperature=temperature,
    )


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
