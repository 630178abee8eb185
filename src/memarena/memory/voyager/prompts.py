"""Voyager's memory-LLM prompt (memarena's wording, written from the paper): a name and a
description of a skill, the program being the actions of a solved task. Parity mode keys tasks
by :data:`memarena.memory.episodic.SUMMARY_SYSTEM` instead (G-Memory's code)."""

SKILL_SYSTEM = (
    "You maintain a library of reusable skills of an agent. Given a solved task and the actions "
    "that solved it, name the skill in snake_case (a verb first, at most 5 words) and describe "
    "in at most 3 sentences what it achieves and when it applies, without naming the specific "
    "objects of this task."
)
SKILL_USER = (
    'Task: {goal}\nActions:\n{program}\n\nAnswer with JSON: {{"name": "...", "description": "..."}}'
)
DESCRIPTION_CHARS = 400  # longest skill description kept
SKILL_SCHEMA = {
    "type": "object",
    "properties": {
        # the pattern allows 48 characters; maxLength states it for the reply budget
        "name": {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,47}$", "maxLength": 48},
        "description": {"type": "string", "maxLength": DESCRIPTION_CHARS},
    },
    "required": ["name", "description"],
    "additionalProperties": False,
}

SKILLS_HEADER = "Skills from your library (actions that solved similar tasks):"
PAST_HEADER = "Relevant past tasks from memory:"
