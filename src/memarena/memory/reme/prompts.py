"""ReMe's summarizer, judge and reuse prompts, written for memarena from reme.txt (Sections
3.2-3.4, Appendix C.1): success-pattern recognition, failure analysis, comparative insight,
trajectory-level summaries (the granularity ablation), LLM-as-judge validation, query
generalisation (a retrieval key of Table 5), rerank, rewrite and failure-aware reflection.
Every answer is a JSON document constrained by the schema next to its prompt."""

from __future__ import annotations

from typing import Any

SYSTEM = (
    "You maintain a library of procedural experience for an AI agent that acts in an "
    "environment step by step. Experiences must be general enough to help on other, similar "
    "tasks: describe situations and actions by their role, not by one task's particular "
    "names, numbers or ids unless they are fixed parts of the environment. Answer with JSON only."
)

FIELDS = (
    "Each experience has: when_to_use (the situation in which it applies, one sentence), "
    "experience (what to do or avoid and why, at most three sentences), keywords (3-6 short "
    "terms), confidence (0 to 1, how sure you are it transfers) and tools (the functions, "
    "commands or action types it involves)."
)

SUCCESS = """The agent solved the task below. Find the key step or decision that made the \
attempt succeed and state the principle behind it as reusable experience (at most {limit} \
items). {fields}

{trajectory}"""

FAILURE = """The agent failed the task below. Find the earliest step that put the attempt on a \
losing path, say what went wrong and what should be done instead, as reusable lessons (at most \
{limit} items). {fields}

{trajectory}"""

COMPARATIVE = """Two attempts at the same task scored differently. Name the specific decision \
or action that separates the better attempt from the worse one, as reusable experience (at \
most {limit} items). {fields}

Better attempt (score {high:.2f}):
{better}

Worse attempt (score {low:.2f}):
{worse}"""

TRAJECTORY = """Summarise this whole {status} attempt as ONE experience whose text walks \
through the complete procedure, step by step, in order (trajectory-level granularity). \
{fields}

{trajectory}"""

JUDGE = """Judge one experience extracted for an AI agent. It is valid when it is actionable \
(says what to do or avoid), accurate (consistent with the attempt it came from) and valuable \
for future tasks of this kind (not trivial, not specific to one instance). Give a score from 0 \
(useless or wrong) to 1 (clearly useful).
{task}
Experience:
  when to use: {when_to_use}
  experience: {content}"""
# the judge's line about the source task (judge_sees_task: true; ReMe's judge sees only the
# condition and the content)
JUDGE_TASK = "\nTask it came from: {task}"

GENERALIZE = """Rewrite this task request as a generalised query: keep the kind of task and \
the operations it needs, drop the particular names, values and ids.

Task: {task}"""

RERANK = """A new task and candidate experiences from past tasks. Order the candidates by how \
much they help with this task, given its context, constraints and goal; most helpful first. \
Answer with the candidate numbers.

Task: {task}

Candidates:
{candidates}"""

REWRITE = """Rewrite the experiences below into one short, coherent guidance for the new task: \
keep what applies, adapt it to the task's specifics, drop what does not apply.

Task: {task}

Experiences:
{experiences}"""

REFLECT = """The agent failed the task below{previous}. Analyse the attempt: what went wrong \
and what should the next attempt do differently? Give the lessons as reusable experience (at \
most {limit} items); they will guide a new attempt at the same task. {fields}

{trajectory}"""

HEADER = "Experience from past tasks (apply what fits this task):"
GUIDANCE_HEADER = "Guidance from past experience:"
LESSONS_HEADER = "Lessons from your previous failed attempt at this task:"


# Bounds on the generated strings. The experience's usage scenario and content: ReMe's released
# extraction prompts set no length (settings scenario_chars / experience_chars: null, the
# request then asks for what the summarizer's context leaves, summarizer.request); memarena's
# earlier reading keeps them short (one sentence of scenario, at most three of content) with
# these caps. Every other string is bounded, so with the caps each request's max_tokens is its
# schema's longest valid answer (memarena.core.json_budget) and a constrained decoder always
# closes the document.
SCENARIO_CHARS = 200
CONTENT_CHARS = 400


def _short(n: int) -> dict[str, Any]:
    return {"type": "string", "maxLength": n}


def _text(n: int | None) -> dict[str, Any]:
    """A string capped at ``n`` characters; None: uncapped."""
    return {"type": "string"} if n is None else _short(n)


def experiences_schema(
    limit: int,
    scenario_chars: int | None = SCENARIO_CHARS,
    content_chars: int | None = CONTENT_CHARS,
) -> dict[str, Any]:
    """The summarizer's answer: at most ``limit`` experiences, their usage scenario and content
    capped at ``scenario_chars`` / ``content_chars`` characters (None: uncapped)."""
    item = {
        "type": "object",
        "properties": {
            "when_to_use": _text(scenario_chars),
            "experience": _text(content_chars),
            "keywords": {"type": "array", "items": _short(40), "maxItems": 6},
            "confidence": {"type": "number", "minimum": 0, "maximum": 1},
            "tools": {"type": "array", "items": _short(80), "maxItems": 6},
        },
        "required": ["when_to_use", "experience", "keywords", "confidence", "tools"],
        "additionalProperties": False,
    }
    return {
        "type": "object",
        "properties": {"experiences": {"type": "array", "items": item, "maxItems": limit}},
        "required": ["experiences"],
        "additionalProperties": False,
    }


JUDGE_SCHEMA = {
    "type": "object",
    "properties": {
        "valid": {"type": "boolean"},
        "score": {"type": "number", "minimum": 0, "maximum": 1},
        "reason": _short(300),
    },
    "required": ["valid", "score", "reason"],
    "additionalProperties": False,
}

GENERALIZE_SCHEMA = {
    "type": "object",
    "properties": {"generalized_query": _short(300)},
    "required": ["generalized_query"],
    "additionalProperties": False,
}


def rerank_schema(n: int) -> dict[str, Any]:
    """The rerank answer over ``n`` candidates: their numbers 1..n, each at most once."""
    number = {"type": "integer", "minimum": 1, "maximum": max(1, n)}
    return {
        "type": "object",
        "properties": {"order": {"type": "array", "items": number, "maxItems": max(1, n)}},
        "required": ["order"],
        "additionalProperties": False,
    }


REWRITE_SCHEMA = {
    "type": "object",
    "properties": {"guidance": _short(1500)},
    "required": ["guidance"],
    "additionalProperties": False,
}
