"""Worked examples for a benchmark's prompt, written by this project: the env's expert plays a
fixed task and its turns are rendered in the agent's own format (task, observation, then
``> action`` / observation pairs), the shape of the one-shot cases the papers' agents get."""

from __future__ import annotations

from memarena.core import Episode


def play_expert(episode: Episode, max_steps: int = 30) -> tuple[str, list[tuple[str, str]]]:
    """(initial observation, [(action, observation), ...]) of the expert on ``episode``, until
    it is done or has no action."""
    initial = episode.reset().text
    turns: list[tuple[str, str]] = []
    for _ in range(max_steps):
        action = episode.expert_action()
        if action is None:
            break
        result = episode.step(action)
        turns.append((action, result.observation.text))
        if result.done:
            break
    return initial, turns


def render_example(goal: str, initial: str, turns: list[tuple[str, str]]) -> str:
    """One worked example as the agent sees a task: its goal, the first observation, then each
    action with the observation it produced."""
    lines = [f"Task: {goal}", f"Observation: {initial}"]
    for action, observation in turns:
        lines += [f"> {action}", observation]
    return "\n".join(lines)
