"""MemRL's memory-LLM prompts (memarena's wording, written from the paper): the script of a
solved task and the reflection on a failed one."""

SCRIPT_SYSTEM = (
    "You turn a solved task into a short reusable script for similar tasks: 3 to 5 high-level "
    "steps with the key decisions, general enough to transfer and specific enough to follow."
)
SCRIPT_USER = 'Solved task and trajectory:\n{trajectory}\n\nAnswer with JSON: {{"script": "..."}}'
REFLECTION_SYSTEM = (
    "A task failed. Reflect briefly: which assumptions were wrong, what should be done "
    "differently next time, and what to avoid."
)
REFLECTION_USER = (
    'Failed task and trajectory:\n{trajectory}\n\nAnswer with JSON: {{"reflection": "..."}}'
)


def text_schema(key: str, max_chars: int) -> dict:
    return {
        "type": "object",
        "properties": {key: {"type": "string", "maxLength": max_chars}},
        "required": [key],
        "additionalProperties": False,
    }


SUCCESS_HEADER = "Successful experiences (examples to follow):"
FAILURE_HEADER = "Failed experiences (mistakes to avoid):"
