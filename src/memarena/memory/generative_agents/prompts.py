"""Generative Agents' memory-LLM prompts (memarena's wording, written from the paper).

Faithful mode: importance of a memory (1-10), the three salient questions of a reflection and
five insights per question with their evidence. Parity mode: the 1-10 relevance of a solved
task for an ongoing one (G-Memory's ``GenerativeMASMemory`` re-ranking).
"""

IMPORTANCE_SYSTEM = (
    "You rate memories of an agent that solves tasks. On a scale of 1 to 10, where 1 is "
    "routine (nothing to learn from it) and 10 is pivotal (it changes how similar tasks should "
    "be approached), rate how important the memory is for the agent's future tasks."
)
IMPORTANCE_USER = 'Memory:\n{memory}\n\nAnswer with JSON: {{"importance": <1-10>}}'
IMPORTANCE_SCHEMA = {
    "type": "object",
    "properties": {"importance": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["importance"],
    "additionalProperties": False,
}

QUESTIONS_SYSTEM = (
    "You help an agent reflect on its recent experience. Given its latest memories, write the "
    "3 most salient high-level questions that the memories can answer about how to do such "
    "tasks well."
)
QUESTIONS_USER = 'Memories:\n{memories}\n\nAnswer with JSON: {{"questions": ["...", "...", "..."]}}'
QUESTIONS_SCHEMA = {
    "type": "object",
    "properties": {
        "questions": {
            "type": "array",
            "items": {"type": "string", "maxLength": 200},
            "minItems": 3,
            "maxItems": 3,
        }
    },
    "required": ["questions"],
    "additionalProperties": False,
}

INSIGHTS_SYSTEM = (
    "You help an agent reflect on its experience. From the numbered memories, infer up to 5 "
    "high-level insights that answer the question; for each, give the numbers of the memories "
    "that support it."
)
INSIGHTS_USER = (
    "Question: {question}\n\nMemories:\n{memories}\n\n"
    'Answer with JSON: {{"insights": [{{"insight": "...", "evidence": [1, 2]}}]}}'
)
INSIGHTS_SCHEMA = {
    "type": "object",
    "properties": {
        "insights": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {
                    "insight": {"type": "string", "maxLength": 300},
                    # bounded per request to the memories shown (method._insights_schema)
                    "evidence": {"type": "array", "items": {"type": "integer", "minimum": 1}},
                },
                "required": ["insight", "evidence"],
                "additionalProperties": False,
            },
            "maxItems": 5,
        }
    },
    "required": ["insights"],
    "additionalProperties": False,
}

RELEVANCE_SYSTEM = "You judge how relevant a solved example is to an ongoing task."
RELEVANCE_USER = (
    "Solved example:\n{example}\n\nOngoing task:\n{goal}\n\n"
    "Do not summarize either of them. On a scale of 1 to 10, how relevant and helpful is the "
    'solved example for the ongoing task? Answer with JSON: {{"score": <1-10>}}'
)
RELEVANCE_SCHEMA = {
    "type": "object",
    "properties": {"score": {"type": "integer", "minimum": 1, "maximum": 10}},
    "required": ["score"],
    "additionalProperties": False,
}

MEMORIES_HEADER = "Memories relevant to this task:"
PAST_HEADER = "Relevant past tasks from memory:"
