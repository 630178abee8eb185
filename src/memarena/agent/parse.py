"""Turning a model's free-text reply into one action string."""

from __future__ import annotations

import re

_PREFIX = re.compile(r"^\s*(?:action|next action|answer)(?:\s*\d+)?\s*[:\-]\s*", re.IGNORECASE)
_NORM = re.compile(r"\s+")
_ACTION_LINE = re.compile(r"^\s*(?:next )?action(?:\s*\d+)?\s*:", re.IGNORECASE)


def _norm(text: str) -> str:
    return _NORM.sub(" ", text.strip().strip("`\"'").rstrip(".").strip()).lower()


def parse_action(text: str, admissible: list[str] | None = None) -> str:
    """Take the line with an ``Action:`` prefix (ReAct's "Thought: ...\nAction: ..." replies)
    or else the first non-empty line; drop the prefix, prompt markers and quotes.

    When admissible actions are known and one matches case- and space-insensitively, that
    exact admissible string is returned (so the env sees its own spelling); otherwise the
    cleaned text goes to the env, which reports it as invalid if it is.
    """
    lines = [ln for ln in text.splitlines() if ln.strip()]
    line = next((ln for ln in lines if _ACTION_LINE.match(ln)), lines[0] if lines else "")
    line = _PREFIX.sub("", line).lstrip("> ").strip()
    if admissible:
        wanted = _norm(line)
        for action in admissible:
            if _norm(action) == wanted:
                return action
    return line.strip().strip("`\"'")
