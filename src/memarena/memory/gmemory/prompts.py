"""Prompt strings of the G-Memory baseline (memarena's own wording, not the reference code's).

Three memory-side LLM calls, each constrained by the JSON schema next to its prompt:

- key steps: which steps of one trajectory decided its outcome;
- insight maintenance: ADD / EDIT / AGREE / REMOVE operations on the insight list, written
  from a batch of successful and failed trajectories;
- merge: groups of near-duplicate insights and the merged wording of each group.
"""

from __future__ import annotations

from typing import Any

KEY_STEPS_SYSTEM = (
    "You study the record of an agent solving a task step by step. Your job is to point at "
    "the few steps that decided how the task ended: the steps that made real progress, or, "
    "when the task failed, the steps where it went wrong. Answer in JSON only."
)

KEY_STEPS_USER = (
    "Task: {goal}\n"
    "Outcome: {status}\n"
    "Initial observation: {initial}\n\n"
    "Steps (numbered from 1):\n{steps}\n\n"
    "Pick at most {max_steps} decisive steps. For each give its number (between 1 and "
    "{n_steps}) and a short reason. Reply with "
    '{{"key_steps": [{{"step": <number>, "why": "<reason>"}}]}}.'
)

KEY_STEPS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "key_steps": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "step": {"type": "integer", "minimum": 1},
                    "why": {"type": "string", "maxLength": 120},
                },
                "required": ["step", "why"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["key_steps"],
    "additionalProperties": False,
}

INSIGHTS_SYSTEM = (
    "You keep a short list of general lessons (insights) that help an agent solve future "
    "tasks of the same kind. You compare tasks the agent solved with tasks it failed, and "
    "update the list with operations. Lessons must be general (no task-specific object "
    "names unless they always apply) and one sentence each. Answer in JSON only."
)

INSIGHTS_USER = (
    "Current insights:\n{insights}\n\n"
    "Solved tasks (key steps):\n{successes}\n\n"
    "Failed tasks (key steps):\n{failures}\n\n"
    "Return at most {max_ops} operations:\n"
    "- ADD with a new lesson in `content`;\n"
    "- EDIT with the `id` of an insight and its improved `content`;\n"
    "- AGREE with the `id` of an insight these tasks confirm;\n"
    "- REMOVE with the `id` of an insight these tasks contradict or that is useless.\n"
    'Reply with {{"operations": [{{"op": "ADD", "content": "..."}}, '
    '{{"op": "AGREE", "id": "ins-1"}}]}}.'
)

INSIGHTS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "operations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["ADD", "EDIT", "AGREE", "REMOVE"]},
                    "id": {"type": "string", "maxLength": 24},
                    "content": {"type": "string", "maxLength": 160},
                },
                "required": ["op"],
                "additionalProperties": False,
            },
            "maxItems": 5,
        }
    },
    "required": ["operations"],
    "additionalProperties": False,
}


def key_steps_schema(n_steps: int, max_key_steps: int) -> dict[str, Any]:
    """:data:`KEY_STEPS_SCHEMA` with the step range and the list length of one trajectory
    (bounds that also keep a small constrained model from rambling)."""
    items = KEY_STEPS_SCHEMA["properties"]["key_steps"]["items"]
    step = {**items["properties"]["step"], "maximum": max(1, n_steps)}
    bounded = {
        **KEY_STEPS_SCHEMA["properties"]["key_steps"],
        "minItems": 1,
        "maxItems": max(1, max_key_steps),
        "items": {**items, "properties": {**items["properties"], "step": step}},
    }
    return {**KEY_STEPS_SCHEMA, "properties": {"key_steps": bounded}}


MERGE_SYSTEM = (
    "You tidy a list of lessons for an agent. Some lessons say the same thing in different "
    "words; group those and write one lesson for each group. Answer in JSON only."
)

MERGE_USER = (
    "Insights:\n{insights}\n\n"
    "List only groups of two or more insights that say the same thing, with the wording that "
    "replaces them. Leave every other insight out. Reply with "
    '{{"groups": [{{"ids": ["ins-1", "ins-4"], "content": "..."}}]}} '
    "(an empty list when nothing repeats)."
)

MERGE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "groups": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "ids": {
                        "type": "array",
                        "items": {"type": "string", "maxLength": 24},
                        "maxItems": 10,
                    },
                    "content": {"type": "string", "maxLength": 240},
                },
                "required": ["ids", "content"],
                "additionalProperties": False,
            },
            "maxItems": 10,
        }
    },
    "required": ["groups"],
    "additionalProperties": False,
}

# retrieval slots (the agent prompt shows them in this order)
PAST_SUCCESSES_HEADER = "Key steps of similar tasks solved before:"
INSIGHTS_HEADER = "Lessons learned from earlier tasks:"

# use_llm=False test mode: the one deterministic insight rule (not part of G-Memory)
AVOID_RULE = "Avoid '{action}' when the task is: {goal}"
