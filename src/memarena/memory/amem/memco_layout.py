"""A-Mem as MemCo's code ran it (SYannL/nvdamas ``mas/memory/mas_memory/amem.py`` with
``memory_base.py`` and ``tasks/mas_workflow/format.py``; facts read there, the code is memarena's).

Writing a note, without an LLM (:func:`token_terms`, :func:`note_content`):

- content: the finished task as an execution pattern, a ``### Task description:`` part (the task
  as the agent was given it, then how it ended) and a ``### Detailed trajectory:`` part (each
  action and the observation it returned, none clipped);
- context: that task description;
- keywords and tags: the content lower-cased and cut at every character that is not an ASCII
  letter, digit or underscore; tokens shorter than 3 characters and 12 common words
  (:data:`STOPWORDS`) are dropped; the first 8 distinct tokens, in order of first appearance,
  are the keywords and the first 4 the tags (so the tags are the first keywords). The content
  opens with its section headers, so "task" and "description" usually lead both lists.

Showing notes (:func:`render_examples`, :func:`insight_line`): a note shown as an example is the
execution pattern whose description is the note's context and whose trajectory is the whole
note content (the description therefore appears twice, as MemCo's harness shows it); an insight
line is the note's ``[Context]``, ``[Keywords]`` and ``[Tags]``, one per line.
"""

from __future__ import annotations

import re

from memarena.memory.amem import prompts
from memarena.memory.episodic import StoredTask
from memarena.memory.llm_calls import clip_text

# the 12 words MemCo's heuristic drops (besides every token shorter than 3 characters)
STOPWORDS = frozenset("the and that this with from have been will your about into".split())
KEYWORDS, TAGS = 8, 4
_SEPARATORS = re.compile(r"[^a-z0-9_]+")


def token_terms(
    text: str, keywords: int = KEYWORDS, tags: int = TAGS
) -> tuple[list[str], list[str]]:
    """(keywords, tags) of ``text`` by MemCo's heuristic (see the module docstring)."""
    wanted = max(keywords, tags)
    distinct: dict[str, None] = {}
    for token in _SEPARATORS.split(text.lower()):
        if len(token) < 3 or token in STOPWORDS or token in distinct:
            continue
        distinct[token] = None
        if len(distinct) == wanted:
            break
    ordered = list(distinct)
    return ordered[:keywords], ordered[:tags]


def _clip(text: str, limit: int | None) -> str:
    return text if limit is None else clip_text(text, limit)


def task_description(task: StoredTask, observation_chars: int | None = None) -> str:
    """The task as the agent was given it (its goal, then the initial observation when that
    does not already state the goal) and the outcome, the env's last word on it."""
    initial = _clip(task.initial, observation_chars) if task.initial else ""
    lines = [initial] if initial and task.goal in task.initial else [task.goal, initial]
    lines.append(f"{prompts.OUTCOME_LABEL} {task.status}")
    return "\n".join(line.strip() for line in lines if line.strip())


def trajectory(task: StoredTask, observation_chars: int | None = None) -> str:
    """Each action (``> action``) and the observation it returned, in order."""
    lines: list[str] = []
    for action, observation, _ in task.steps:
        lines += [f"> {action.strip()}", _clip(observation, observation_chars).strip()]
    return "\n".join(line for line in lines if line)


def execution_pattern(description: str, trajectory_text: str) -> str:
    """The task-description and trajectory parts under their headers (an empty part left out)."""
    parts = []
    if description.strip():
        parts.append(f"{prompts.TASK_DESCRIPTION_HEADER}\n{description.strip()}")
    if trajectory_text.strip():
        parts.append(f"{prompts.TRAJECTORY_HEADER}\n{trajectory_text.strip()}")
    return "\n\n".join(parts)


def note_content(task: StoredTask, observation_chars: int | None = None) -> str:
    """A finished task as the content of a note (MemCo's execution pattern)."""
    return execution_pattern(
        task_description(task, observation_chars), trajectory(task, observation_chars)
    )


def insight_line(context: str, keywords: list[str], tags: list[str]) -> str:
    """A note as one insight: its context, keywords and tags (each only when it has one)."""
    parts = []
    if context.strip():
        parts.append(f"[Context] {context.strip()}")
    if keywords:
        parts.append(f"[Keywords] {', '.join(keywords)}")
    if tags:
        parts.append(f"[Tags] {', '.join(tags)}")
    return "\n".join(parts)


def render_examples(patterns: list[str]) -> str:
    """The examples section: ``Task i:`` and each execution pattern."""
    body = "\n\n".join(f"Task {i}:\n{p}" for i, p in enumerate(patterns, 1))
    return f"{prompts.MEMCO_EXAMPLES_HEADER}\n{prompts.MEMCO_EXAMPLES_INTRO}\n\n{body}"


def render_insights(lines: list[str]) -> str:
    """The insights section: the lines numbered from 1."""
    body = "\n".join(f"{i}. {line}" for i, line in enumerate(lines, 1))
    return f"{prompts.MEMCO_INSIGHTS_HEADER}\n{prompts.MEMCO_INSIGHTS_INTRO}\n\n{body}"
