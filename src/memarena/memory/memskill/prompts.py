"""MemSkill's LLM prompts (memarena's wording, written from the paper): the controller that
selects skills for a span (``controller: llm``), the executor that turns a span into memory
operations, the designer that evolves the skill bank from failure cases, and the failure hint
shown to the agent."""

CONTROLLER_SYSTEM = (
    "You manage an agent's memory. Given a span of its experience and the memories retrieved "
    "for it, choose the {n} skills from the bank that best decide what to store, correct or "
    "remove."
)
CONTROLLER_USER = (
    "Task: {goal}\nSpan:\n{span}\n\nRetrieved memories:\n{memories}\n\nSkill bank:\n{skills}\n\n"
    'Answer with JSON: {{"skills": ["name", ...]}}'
)


def controller_schema(names: list[str], n: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "skills": {
                "type": "array",
                "items": {"type": "string", "enum": names},
                "minItems": 1,
                "maxItems": n,
            }
        },
        "required": ["skills"],
        "additionalProperties": False,
    }


EXECUTOR_SYSTEM = (
    "You update an agent's memory from a span of its experience, following the given skills. "
    "Emit operations: INSERT a new item (content), UPDATE a shown item (its number and the new "
    "content), DELETE a shown item (its number), or NOOP."
)
EXECUTOR_USER = (
    "Task: {goal}\nSpan:\n{span}\n\nShown memory items:\n{memories}\n\nSkills:\n{skills}\n\n"
    'Answer with JSON: {{"operations": [{{"op": "INSERT", "content": "..."}}, '
    '{{"op": "UPDATE", "index": 1, "content": "..."}}, {{"op": "DELETE", "index": 2}}]}}'
)
ITEM_CHARS = 400  # a memory item's content
MAX_OPERATIONS = 6  # operations per span


def executor_schema(n_shown: int) -> dict:
    """The executor's operations; ``index`` numbers one of the ``n_shown`` items shown (an
    out-of-range number would be an invalid operation anyway)."""
    return {
        "type": "object",
        "properties": {
            "operations": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "op": {"type": "string", "enum": ["INSERT", "UPDATE", "DELETE", "NOOP"]},
                        "index": {"type": "integer", "minimum": 1, "maximum": max(1, n_shown)},
                        "content": {"type": "string", "maxLength": ITEM_CHARS},
                    },
                    "required": ["op"],
                    "additionalProperties": False,
                },
                "maxItems": MAX_OPERATIONS,
            }
        },
        "required": ["operations"],
        "additionalProperties": False,
    }


DESIGNER_SYSTEM = (
    "You improve the memory skills of an agent. From the hard cases (tasks it failed with the "
    "current memory) and the skill bank, propose at most {n} changes: add a new skill (name, "
    "operation type insert/update/delete/noop, description, instruction) or refine an existing "
    "one (its name, new description and instruction)."
)
DESIGNER_USER = (
    "Skill bank:\n{skills}\n\nHard cases:\n{cases}\n\n"
    'Answer with JSON: {{"changes": [{{"action": "add"|"refine", "name": "...", '
    '"op": "insert", "description": "...", "instruction": "..."}}]}}'
)


def designer_schema(n: int) -> dict:
    return {
        "type": "object",
        "properties": {
            "changes": {
                "type": "array",
                "items": {
                    "type": "object",
                    "properties": {
                        "action": {"type": "string", "enum": ["add", "refine"]},
                        # the pattern allows 40 characters; maxLength states it for the budget
                        "name": {
                            "type": "string",
                            "pattern": "^[a-z][a-z0-9_]{0,39}$",
                            "maxLength": 40,
                        },
                        "op": {"type": "string", "enum": ["insert", "update", "delete", "noop"]},
                        "description": {"type": "string", "maxLength": 200},
                        "instruction": {"type": "string", "maxLength": 400},
                    },
                    "required": ["action", "name", "description", "instruction"],
                    "additionalProperties": False,
                },
                "maxItems": n,
            }
        },
        "required": ["changes"],
        "additionalProperties": False,
    }


MEMORY_HEADER = "Memory items relevant to this task:"
# shown to the agent while the failure pool holds a case (memarena's wording of the generic hint
# MemCo's memskill.py adds when a similar failed episode is retrieved)
FAILURE_HINT = (
    "Caution: attempts at similar tasks have failed before; do not repeat the action pattern "
    "that led to those failures."
)
