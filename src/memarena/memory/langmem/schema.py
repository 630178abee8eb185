"""The memory schema LangMem manages (its episodic-memory guide: observation, thoughts, action,
result; the descriptions are memarena's wording) and how a stored episode is shown."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, Field

# how each field is labelled when an episode is shown to the agent, in order
LABELS = (("observation", "When"), ("thoughts", "Thought"), ("action", "Did"), ("result", "Result"))


class Episode(BaseModel):
    """An episode from the agent's own experience, written from its perspective with
    hindsight, so that it can learn from it in later tasks."""

    observation: str = Field(
        description="The situation the agent faced: the task it was given and what it saw."
    )
    thoughts: str = Field(
        description="The agent's reasoning in the episode, in the first person: what it "
        "noticed and why it chose what it did."
    )
    action: str = Field(
        description="What the agent did, in order and in the form it used (the commands or "
        "calls that mattered)."
    )
    result: str = Field(
        description="How the episode ended and, in hindsight, what worked and what to do "
        "differently next time."
    )


def render_episode(value: dict[str, Any]) -> str:
    """A stored item's value (``{"kind": "Episode", "content": {...}}``) as the lines
    ``When: / Thought: / Did: / Result:``; fields that are missing or empty are left out."""
    content = value.get("content", value) if isinstance(value, dict) else {}
    if not isinstance(content, dict):
        return str(content)
    lines = []
    for key, label in LABELS:
        text = content.get(key)
        if isinstance(text, str) and text.strip():
            lines.append(f"{label}: {text.strip()}")
    return "\n".join(lines)
