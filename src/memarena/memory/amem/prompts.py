"""A-Mem's memory-LLM prompts (memarena's wording, written from the paper): the note analysis
(keywords, context, tags), the evolution decision over a new note's nearest neighbours, and
the procedural-memory extraction ReMe ran its A-Mem with (``method.note_content: extracted``;
reme.txt Appendix B: "slight prompt modifications to extract procedural memories")."""

ANALYSIS_SYSTEM = (
    "You index an agent's memories. For the memory below give: keywords (at least three "
    "salient nouns, verbs or concepts, most important first), context (one sentence: what it "
    "is about, its key points and purpose) and tags (at least three broad categories: domain, "
    "kind of task, kind of outcome)."
)
ANALYSIS_USER = (
    'Memory:\n{content}\n\nAnswer with JSON: {{"keywords": [...], "context": "...", "tags": [...]}}'
)
TERM_CHARS, TERMS = 40, 8  # a keyword or tag, and how many a note keeps
CONTEXT_CHARS = 300  # a note's context sentence
_TERMS = {"type": "array", "items": {"type": "string", "maxLength": TERM_CHARS}, "maxItems": TERMS}

ANALYSIS_SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": _TERMS,
        "context": {"type": "string", "maxLength": CONTEXT_CHARS},
        "tags": _TERMS,
    },
    "required": ["keywords", "context", "tags"],
    "additionalProperties": False,
}

# ``method.note_content: extracted``: the trajectory goes to the memory LLM first, and the
# procedural memory it extracts becomes the note's content (then analysed and evolved as any note)
EXTRACTION_SYSTEM = (
    "You turn an agent's finished attempt at a task into procedural memory: reusable how-to "
    "knowledge for later tasks of the same kind. Say what kind of task it was, then the "
    "procedure as numbered steps in order (the actions or calls that moved the task forward, "
    "with the arguments that mattered), then any pitfall the attempt met and how to avoid it. "
    "Leave out observations that did not matter and steps that led nowhere."
)
EXTRACTION_USER = 'Attempt:\n{trajectory}\n\nAnswer with JSON: {{"memory": "..."}}'
EXTRACTION_CHARS = 1200  # the longest procedural memory (the note's whole content)
EXTRACTION_SCHEMA = {
    "type": "object",
    "properties": {"memory": {"type": "string", "maxLength": EXTRACTION_CHARS}},
    "required": ["memory"],
    "additionalProperties": False,
}

EVOLUTION_SYSTEM = (
    "You maintain a network of an agent's memories. Decide whether a new memory should evolve "
    "the network. Two actions are possible: strengthen (connect the new memory to some of its "
    "neighbours, by their numbers, and give the new memory updated tags) and update_neighbor "
    "(give each neighbour, in the order shown, an updated context and tags; repeat the current "
    "ones to leave a neighbour unchanged)."
)
EVOLUTION_USER = (
    "New memory (context: {context}; keywords: {keywords}):\n{content}\n\n"
    "Its {n} nearest memories:\n{neighbours}\n\n"
    'Answer with JSON: {{"should_evolve": true|false, "actions": ["strengthen", '
    '"update_neighbor"], "suggested_connections": [numbers], "tags_to_update": [...], '
    '"new_context_neighborhood": [...], "new_tags_neighborhood": [[...], ...]}}'
)


def evolution_schema(n: int) -> dict:
    """The evolution decision over ``n`` neighbours: connections name neighbours 1..n, and
    there is at most one new context and one tag list per neighbour (what is applied)."""
    n = max(1, n)
    return {
        "type": "object",
        "properties": {
            "should_evolve": {"type": "boolean"},
            "actions": {
                "type": "array",
                "items": {"type": "string", "enum": ["strengthen", "update_neighbor"]},
                "maxItems": 2,
            },
            "suggested_connections": {
                "type": "array",
                "items": {"type": "integer", "minimum": 1, "maximum": n},
                "maxItems": n,
            },
            "tags_to_update": _TERMS,
            "new_context_neighborhood": {
                "type": "array",
                "items": {"type": "string", "maxLength": CONTEXT_CHARS},
                "maxItems": n,
            },
            "new_tags_neighborhood": {"type": "array", "items": _TERMS, "maxItems": n},
        },
        "required": [
            "should_evolve",
            "actions",
            "suggested_connections",
            "tags_to_update",
            "new_context_neighborhood",
            "new_tags_neighborhood",
        ],
        "additionalProperties": False,
    }


MEMORY_HEADER = "Related memories:"
# the insight lines (``method.insight_k``) and the failed-cases line (``method.hint_k``) in
# memarena's own layout (``method.layout: amem``)
AMEM_INSIGHTS_HEADER = "Related memories in brief:"

# ``method.layout: memco``: the section headers of MemCo's harness (the protocol; the sentences
# under them are memarena's wording) and the parts of a note's execution pattern
MEMCO_EXAMPLES_HEADER = "## Your Own Past Successes (Execution Patterns)"
MEMCO_EXAMPLES_INTRO = (
    "Tasks like this one that you carried out before, step by step; reuse the steps that "
    "worked, above all where you get stuck."
)
MEMCO_INSIGHTS_HEADER = "## Key Insights from Related Tasks"
MEMCO_INSIGHTS_INTRO = "What your memory holds about related tasks; draw on it where it applies."
TASK_DESCRIPTION_HEADER = "### Task description:"
TRAJECTORY_HEADER = "### Detailed trajectory:"
OUTCOME_LABEL = "Outcome:"
# shown when a note was ranked below the examples (``method.hint_k``): MemCo's A-Mem passes
# those notes on as "failed" cases, which the harness shows as this one line alone
FAILED_HINT = "[Memory] Some similar tasks went wrong before; if your approach stalls, change it."
