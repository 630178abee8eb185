"""MemRL's memory-LLM prompts and how its experiences read in the agent's prompt (memarena's
wording; the layout follows the reference code, see :mod:`.method`).

- the *script* of a solved task is asked from its trajectory alone (the reference's
  ``generate_script(trajectory)``: no separate goal);
- the *reflection* on a failed task is asked from its goal and its failed trajectory;
- a solved experience shows as ``Task`` / ``SCRIPT`` / ``TRAJECTORY`` sections, a failed one as
  its reflection and failed approach, after one line that says similar tasks failed.
"""

from __future__ import annotations

SCRIPT_SYSTEM = (
    "You turn a solved task into a short reusable script for similar tasks: 3 to 5 high-level "
    "steps with the key decisions, general enough to transfer and specific enough to follow."
)
SCRIPT_USER = 'Trajectory of a solved task:\n{trajectory}\n\nAnswer with JSON: {{"script": "..."}}'
REFLECTION_SYSTEM = (
    "A task failed. Reflect briefly: which assumptions were wrong, what should be done "
    "differently next time, and what to avoid."
)
REFLECTION_USER = (
    "Task: {goal}\n\nIts failed trajectory:\n{trajectory}\n\n"
    'Answer with JSON: {{"reflection": "..."}}'
)


def text_schema(key: str, max_chars: int) -> dict:
    return {
        "type": "object",
        "properties": {key: {"type": "string", "maxLength": max_chars}},
        "required": [key],
        "additionalProperties": False,
    }


SUCCESS_HEADER = "Solved tasks similar to this one (scripts and trajectories to follow):"
# one line before the failed experiences, shown only when there are some: the repair hint of
# MemCo's memrl_mas.py (a "[Memory]" line saying similar cases failed and the action pattern
# should change), in memarena's words
FAILURE_HEADER = (
    "[Memory] Tasks like this one have failed before: think about moving away from the pattern "
    "of actions you are following now."
)


def render_success(goal: str, script: str, trajectory: str) -> str:
    """A solved experience: the task, its script (when the memory LLM gave one), the
    trajectory."""
    parts = [f"Task: {goal}"]
    if script:
        parts.append(f"SCRIPT:\n{script}")
    parts.append(f"TRAJECTORY:\n{trajectory}")
    return "\n\n".join(parts)


def render_failure(goal: str, reflection: str, trajectory: str) -> str:
    """A failed experience: the task, what went wrong (when the memory LLM gave a
    reflection), the failed approach."""
    parts = [f"Reflection on a failed task\nTask: {goal}"]
    if reflection:
        parts.append(f"What went wrong:\n{reflection}")
    parts.append(f"Failed approach:\n{trajectory}")
    return "\n\n".join(parts)
