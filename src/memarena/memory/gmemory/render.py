"""How stored tasks are written into prompts, following the reference code's formats.

- :func:`render_solved`: a solved task as the agent sees it (``tasks/mas_workflow/format.py:
  format_task_context``: task, key steps, detailed trajectory) and as the comparative insight
  pass sees the solved side. The trajectory leaves out the steps the env rejected, as the
  reference's ``GMemory._extract_mas_message`` drops negative-reward steps from a solved task.
  ``key_steps=False``: task and trajectory only, as MemCo's fork shows a solved task
  (``memory_base.py: _message_to_execution_pattern``: task description, detailed trajectory).
- :func:`render_failed`: the failed side of the comparative pass (task and its whole
  trajectory; the reference keeps a failed task's trajectory as it happened). The cause of the
  failure is written next to it by the prompt.
- :func:`render_key_steps`: one task of a success chunk (``_build_success_prompts``: task
  description and key steps).
- :func:`render_rules`: the numbered existing rules of an insight prompt, by id.
"""

from __future__ import annotations

from collections.abc import Sequence

from memarena.memory.gmemory.interaction import OBS_CHARS, clip, step_line
from memarena.memory.gmemory.query_graph import QueryNode


def key_step_lines(node: QueryNode, chars: int | None = OBS_CHARS) -> list[str]:
    return [
        "  " + step_line(i, *node.steps[i], chars)
        for i in node.key_steps
        if 0 <= i < len(node.steps)
    ]


def trajectory_lines(
    node: QueryNode, skip_invalid: bool, chars: int | None = OBS_CHARS
) -> list[str]:
    """The start and the steps (``skip_invalid``: the rejected ones left out), each
    observation cut to ``chars`` (None: whole)."""
    skipped = set(node.invalid) if skip_invalid else set()
    lines = [f"  start: {clip(node.initial, chars)}"] if node.initial else []
    for i, (action, observation) in enumerate(node.steps):
        if i not in skipped:
            lines.append("  " + step_line(i, action, observation, chars))
    return lines


def render_solved(node: QueryNode, key_steps: bool = True, chars: int | None = OBS_CHARS) -> str:
    """Task, key steps (unless ``key_steps`` is False) and the full trajectory (rejected steps
    left out) of a solved task, observations cut to ``chars`` (None: whole)."""
    lines = [f"Task: {node.goal} ({node.status})"]
    if key_steps:
        lines += ["Key steps:", *(key_step_lines(node, chars) or ["  (none)"])]
    lines += ["Full trajectory:", *trajectory_lines(node, skip_invalid=True, chars=chars)]
    return "\n".join(lines)


def render_failed(node: QueryNode) -> str:
    """Task and whole trajectory of a failed task."""
    lines = [f"Task: {node.goal} ({node.status})", "Full trajectory:"]
    return "\n".join(lines + trajectory_lines(node, skip_invalid=False))


def render_key_steps(node: QueryNode) -> str:
    """Task and key steps of one solved task of a success chunk."""
    return "\n".join([f"Task: {node.goal}", *(key_step_lines(node) or ["  (no key steps)"])])


def render_rules(rules: Sequence[tuple[str, str]]) -> str:
    """``[id] content`` lines of the existing rules an insight prompt shows."""
    return "\n".join(f"[{i}] {content}" for i, content in rules) or "(none yet)"
