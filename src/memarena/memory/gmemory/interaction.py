"""Interaction graphs, key steps and causes of failure (G-Memory's lowest tier).

The interaction graph of one task is a chain: the env's initial observation, then for every
step the agent's utterance (its action) and the env's reply (the observation), linked in the
order they happened. ``key_steps`` are the step indices (0-based, into ``trajectory.steps``)
an LLM picks as decisive; :func:`extract_key_steps` asks for them in one batched call. For a
failed task the reference code also asks the LLM for the likely cause of the failure
(``GMemory._detect_mistakes``, used by the comparative insight pass):
:func:`extract_fail_reasons`.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence

import networkx as nx

from memarena.core import Backbone, ChatRequest, Completion, Trajectory
from memarena.core.json_budget import reply_tokens
from memarena.memory.gmemory import prompts
from memarena.memory.llm_calls import (
    add_usage,
    clip_text,
    generate_logged,
    json_batch,
    record_fallback,
)

log = logging.getLogger(__name__)

FALLBACK_KEY_STEPS = "gmemory_key_steps"
FALLBACK_FAIL_REASON = "gmemory_fail_reason"
OBS_CHARS = 160  # observation text kept per step in prompts and stored graphs


def clip(text: str, limit: int | None = OBS_CHARS) -> str:
    """``text`` on one line cut to ``limit`` characters; ``limit`` None: the text whole, as
    it came (the released ``format_task_context`` cuts nothing)."""
    return str(text).strip() if limit is None else clip_text(text, limit)


def cut_count(texts: Sequence[str], limit: int | None) -> int:
    """How many of ``texts`` :func:`clip` cuts at ``limit``."""
    if limit is None:
        return 0
    return sum(len(" ".join(str(t).split())) > limit for t in texts)


def build_interaction_graph(trajectory: Trajectory) -> nx.DiGraph:
    """One node per utterance (``speaker`` "env" or "agent", ``step``, ``text``), chained."""
    graph = nx.DiGraph()
    graph.add_node(0, speaker="env", step=-1, text=trajectory.initial_observation)
    node = 0
    for i, step in enumerate(trajectory.steps):
        graph.add_node(node + 1, speaker="agent", step=i, text=step.action)
        graph.add_node(node + 2, speaker="env", step=i, text=step.observation)
        graph.add_edge(node, node + 1)
        graph.add_edge(node + 1, node + 2)
        node += 2
    return graph


def heuristic_key_steps(trajectory: Trajectory, max_key_steps: int = 5) -> list[int]:
    """Steps that raised progress, then steps that changed the state, capped and in order.

    With neither (nothing worked), the last ``max_key_steps`` steps, which show where a failed
    episode ended.
    """
    steps = trajectory.steps
    if max_key_steps <= 0 or not steps:
        return []
    progressed, changed = [], []
    previous = 0.0
    for i, step in enumerate(steps):
        if step.progress > previous:
            progressed.append(i)
        elif step.feedback.state_changed:
            changed.append(i)
        previous = max(previous, step.progress)
    chosen = (progressed + changed)[:max_key_steps]
    if not chosen:
        chosen = list(range(max(0, len(steps) - max_key_steps), len(steps)))
    return sorted(chosen)


def step_line(index: int, action: str, observation: str, chars: int | None = OBS_CHARS) -> str:
    """``step n: > action -> observation`` for the 0-based step ``index`` (shown 1-based),
    the observation cut to ``chars`` (None: whole)."""
    return f"step {index + 1}: > {clip(action, 120)} -> {clip(observation, chars)}"


def render_steps(trajectory: Trajectory, indices: Sequence[int] | None = None) -> str:
    """One :func:`step_line` per step, all steps or ``indices``."""
    chosen = range(len(trajectory.steps)) if indices is None else indices
    steps = trajectory.steps
    return "\n".join(step_line(i, steps[i].action, steps[i].observation) for i in chosen)


def key_steps_request(
    trajectory: Trajectory,
    status: str,
    max_key_steps: int,
    cap: int | None = None,
    temperature: float = 0.0,
) -> ChatRequest:
    """The key-steps request; ``max_tokens`` is its schema's longest valid answer, or ``cap``
    when smaller (:func:`memarena.core.json_budget.reply_tokens`); sampled at ``temperature``
    (G-Memory's code: 0.1; MemCo's fork of it: 0)."""
    user = prompts.KEY_STEPS_USER.format(
        goal=trajectory.task.goal,
        status=status,
        initial=clip(trajectory.initial_observation, 400),
        steps=render_steps(trajectory),
        max_steps=max_key_steps,
        n_steps=len(trajectory.steps),
    )
    schema = prompts.key_steps_schema(len(trajectory.steps), max_key_steps)
    return ChatRequest(
        messages=[
            {"role": "system", "content": prompts.KEY_STEPS_SYSTEM},
            {"role": "user", "content": user},
        ],
        json_schema=schema,
        max_tokens=reply_tokens(schema, cap),
        temperature=float(temperature),
    )


def parse_key_steps(completion: Completion, n_steps: int, max_key_steps: int) -> list[int] | None:
    """0-based indices from a completion, or None when it is malformed, empty or out of range."""
    if completion.fallback:
        return None
    try:
        items = json.loads(completion.text)["key_steps"]
        numbers = [item["step"] for item in items]
    except (ValueError, TypeError, KeyError):
        return None
    if not numbers or any(
        isinstance(n, bool) or not isinstance(n, int) or not 1 <= n <= n_steps for n in numbers
    ):
        return None
    return sorted(dict.fromkeys(n - 1 for n in numbers))[:max_key_steps]


def extract_key_steps(
    llm: Backbone,
    trajectories: Sequence[Trajectory],
    max_key_steps: int = 5,
    statuses: Sequence[str] | None = None,
    usage: dict[str, int] | None = None,
    fallbacks: dict[str, int] | None = None,
    cap: int | None = None,
    temperature: float = 0.0,
) -> list[list[int]]:
    """Key steps (0-based, sorted) of each trajectory from ONE batched ``llm.generate`` call.

    ``statuses`` ("Resolved"/"Failed") go into the prompts. A malformed answer, or one naming a
    step out of range, falls back to :func:`heuristic_key_steps` and is counted as fallback
    ``gmemory_key_steps`` on the backbone. Trajectories without steps get ``[]`` without a call.
    ``usage`` (a per-purpose token entry) receives the call's tokens, ``fallbacks`` the
    method's own fallback counts; ``cap`` an optional cap on the reply budget; ``temperature``
    the requests' sampling temperature.
    """
    statuses = list(statuses) if statuses is not None else ["Unknown"] * len(trajectories)
    out: list[list[int]] = [[] for _ in trajectories]
    asked = [i for i, t in enumerate(trajectories) if t.steps and max_key_steps > 0]
    if not asked:
        return out
    requests = [
        key_steps_request(trajectories[i], statuses[i], max_key_steps, cap, temperature)
        for i in asked
    ]
    completions = generate_logged(llm, requests, FALLBACK_KEY_STEPS)
    add_usage(usage, completions)
    for i, completion in zip(asked, completions, strict=True):
        trajectory = trajectories[i]
        parsed = parse_key_steps(completion, len(trajectory.steps), max_key_steps)
        if parsed is None:
            record_fallback(llm, FALLBACK_KEY_STEPS, fallbacks)
            parsed = heuristic_key_steps(trajectory, max_key_steps)
        out[i] = parsed
    return out


def fail_reason_request(
    trajectory: Trajectory, cap: int | None = None, temperature: float = 0.0
) -> ChatRequest:
    user = prompts.FAIL_REASON_USER.format(
        goal=trajectory.task.goal,
        initial=clip(trajectory.initial_observation, 400),
        steps=render_steps(trajectory) or "(no steps)",
    )
    return ChatRequest(
        messages=[
            {"role": "system", "content": prompts.FAIL_REASON_SYSTEM},
            {"role": "user", "content": user},
        ],
        json_schema=prompts.FAIL_REASON_SCHEMA,
        max_tokens=reply_tokens(prompts.FAIL_REASON_SCHEMA, cap),
        temperature=float(temperature),
    )


def extract_fail_reasons(
    llm: Backbone,
    trajectories: Sequence[Trajectory],
    usage: dict[str, int] | None = None,
    fallbacks: dict[str, int] | None = None,
    cap: int | None = None,
    temperature: float = 0.0,
) -> list[str]:
    """The likely cause of each failed trajectory, from ONE batched JSON call. A malformed or
    empty answer gives ``""`` and counts fallback ``gmemory_fail_reason``."""
    requests = [fail_reason_request(t, cap, temperature) for t in trajectories]
    answers = json_batch(llm, requests, usage=usage, fallbacks=fallbacks, kind=FALLBACK_FAIL_REASON)
    reasons = []
    for answer in answers:
        reason = answer.get("reason") if isinstance(answer, dict) else None
        if answer is not None and not (isinstance(reason, str) and reason.strip()):
            record_fallback(llm, FALLBACK_FAIL_REASON, fallbacks)  # parsed, but no reason
        reasons.append(reason.strip() if isinstance(reason, str) else "")
    return reasons
