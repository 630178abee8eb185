"""Prompt strings of the G-Memory baseline (memarena's own wording, not the reference code's).

Memory-side LLM calls, each constrained by the JSON schema next to its prompt (the reference
code's purposes, in memarena's words; see ``method.py`` for where each is used):

- key steps: which steps of one trajectory decided its outcome (``extract_true_traj_*``);
- fail reason: the likely cause of a failed task (``detect_mistakes_*``);
- relevance: a 1-10 score of a solved task for a new one (``generative_task_*``);
- insight operations: ADD / EDIT / AGREE / REMOVE on the shown rules, from a solved/failed pair
  (``critique_compare_rules_*``) or from a chunk of solved tasks (``critique_success_rules_*``),
  with a note against ADD once the list is long (``finetune_insights_suffix``);
- merge: the lessons of one task cluster rewritten as fewer lessons (``merge_rules_*``).
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

FAIL_REASON_SYSTEM = (
    "You study the record of an agent that failed a task. Compare the state the agent left the "
    "environment in with the state the task asked for, and name the most likely cause of the "
    "failure in one or two sentences. Answer in JSON only."
)

FAIL_REASON_USER = (
    "Task: {goal}\n"
    "Initial observation: {initial}\n\n"
    "Steps (numbered from 1):\n{steps}\n\n"
    "The task was not completed. Reply with "
    '{{"reason": "<the most likely cause of the failure>"}}.'
)

FAIL_REASON_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"reason": {"type": "string", "maxLength": 300}},
    "required": ["reason"],
    "additionalProperties": False,
}

RELEVANCE_SYSTEM = "You judge how much a solved example helps with a new task. Answer in JSON only."

RELEVANCE_USER = (
    "Solved example:\n{example}\n\n"
    "New task: {goal}\n\n"
    "Do not summarise the two. Rate how relevant and useful the solved example is for the new "
    "task, from 1 (of no use) to 10 (directly applicable). Reply with "
    '{{"score": <integer from 1 to 10>}}.'
)

RELEVANCE_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["score"],
    "additionalProperties": False,
}

MAX_OPS = 4  # operations per insight call (the reference prompt asks for at most 4)

_RULE_STYLE = (
    "Every rule is one general sentence of the form '<what to do>, because <why>': a clear "
    "cause, useful for many tasks, and it never names the particular objects of these tasks."
)

COMPARE_SYSTEM = (
    "You derive rules for an agent from two similar tasks: the agent solved the first and "
    "failed the second, and the cause of the failure is given. Turn that cause into rules that "
    "keep future agents from repeating the mistake. " + _RULE_STYLE + " Answer in JSON only."
)

SUCCESS_SYSTEM = (
    "You derive rules for an agent from tasks it solved: the strategies that made them work. "
    + _RULE_STYLE
    + " Answer in JSON only."
)

_OPERATIONS = (
    "Existing rules:\n{rules}\n\n"
    "Update the rules with at most {max_ops} operations, at most one per existing rule:\n"
    "- AGREE with the `id` of an existing rule these tasks clearly support;\n"
    "- REMOVE with the `id` of an existing rule they contradict or that repeats another rule;\n"
    "- EDIT with the `id` of an existing rule and its improved, more general `content`;\n"
    "- ADD a new rule in `content`, only when it differs clearly from the existing rules and "
    "helps with other tasks.\n"
    "Do not mention these particular tasks in any rule.{full}\n"
    'Reply with {{"operations": [{{"op": "ADD", "content": "..."}}, '
    '{{"op": "AGREE", "id": "ins-1"}}]}}.'
)

COMPARE_USER = (
    "Solved task:\n{success}\n\n"
    "Failed task:\nCause of the failure: {reason}\n{failure}\n\n" + _OPERATIONS
)

SUCCESS_USER = "Solved tasks:\n{successes}\n\n" + _OPERATIONS

FULL_RULES_NOTE = (
    "\nThe rule list is long: prefer REMOVE, EDIT and AGREE; ADD only a rule that is very "
    "insightful and clearly different from every existing rule."
)

OPS_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "operations": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "op": {"type": "string", "enum": ["ADD", "EDIT", "AGREE", "REMOVE"]},
                    "id": {"type": "string", "maxLength": 24},
                    "content": {"type": "string", "maxLength": 200},
                },
                "required": ["op"],
                "additionalProperties": False,
            },
            "maxItems": MAX_OPS,
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
    "You consolidate lessons for an agent. The lessons come from similar tasks and may repeat "
    "or overlap. Merge them into fewer clear, concise and actionable lessons, using only what "
    "the given lessons say: invent nothing. Answer in JSON only."
)

MERGE_USER = (
    "Lessons:\n{insights}\n\n"
    "Rewrite them as at most {limit} lessons, one short sentence each, combining the ones that "
    'overlap. Reply with {{"insights": ["...", "..."]}}.'
)


def merge_schema(limit: int) -> dict[str, Any]:
    """The merge answer: between 1 and ``limit`` merged lessons."""
    lesson = {"type": "string", "maxLength": 240}
    items = {"type": "array", "items": lesson, "minItems": 1, "maxItems": max(1, limit)}
    return {
        "type": "object",
        "properties": {"insights": items},
        "required": ["insights"],
        "additionalProperties": False,
    }


# retrieval slots (the agent prompt shows them in this order)
PAST_SUCCESSES_HEADER = "Similar tasks solved before (their key steps and full trajectory):"
# show_key_steps=false (MemCo's fork shows a solved task without G-Memory's key steps)
PAST_TRAJECTORIES_HEADER = "Similar tasks solved before (their full trajectory):"
INSIGHTS_HEADER = "Lessons learned from earlier tasks:"
# failed_cases=hint: the one line that stands for the failed tasks retrieved (after the insights)
FAILED_HINT = (
    "Some similar earlier tasks failed: if your plan repeats what they did, try another way."
)

# use_llm=False test mode: the one deterministic insight rule (not part of G-Memory)
AVOID_RULE = "Avoid '{action}' when the task is: {goal}"
