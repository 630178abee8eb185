"""Prompt building: env prompt pieces + memory slots + task + recent history -> chat messages."""

from __future__ import annotations

from memarena.core import EnvPrompt, MemoryContext, Message, Observation, Step, Task


def build_messages(
    prompt: EnvPrompt,
    task: Task,
    observation: Observation,
    history: list[Step],
    memory: MemoryContext,
    *,
    initial_observation: str,
    history_steps: int,
    show_actions: bool,
    examples: int | str | None = None,
) -> list[Message]:
    """One system message (env instructions) and one user message holding, in order:
    the env's fixed examples (``examples`` of them: None = the env's default count), the
    memory slots, the task, the recent history and the current observation (with the
    admissible actions when ``show_actions``)."""
    parts: list[str] = []
    shown = prompt.examples(examples)
    if shown:
        parts.append("\n\n".join(shown))
    parts.extend(text for text in memory.slots.values() if text)
    parts.append(f"Your task: {task.goal}")
    parts.append(f"Initial observation: {initial_observation}")
    recent = history[-history_steps:] if history_steps > 0 else []
    if recent:
        skipped = len(history) - len(recent)
        lines = [f"(earlier {skipped} steps omitted)"] if skipped else []
        for step in recent:
            lines.append(f"> {step.action}\n{step.observation}")
        parts.append("History:\n" + "\n".join(lines))
        parts.append(f"Current observation: {observation.text}")
    if show_actions and observation.admissible_actions:
        parts.append("Valid actions: " + "; ".join(observation.admissible_actions))
    parts.append(prompt.action_format)
    return [
        {"role": "system", "content": prompt.system},
        {"role": "user", "content": "\n\n".join(parts)},
    ]
