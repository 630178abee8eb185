"""A-Mem's memory-LLM prompts (memarena's wording, written from the paper): the note analysis
(keywords, context, tags) and the evolution decision over a new note's nearest neighbours."""

ANALYSIS_SYSTEM = (
    "You index an agent's memories. For the memory below give: keywords (at least three "
    "salient nouns, verbs or concepts, most important first), context (one sentence: what it "
    "is about, its key points and purpose) and tags (at least three broad categories: domain, "
    "kind of task, kind of outcome)."
)
ANALYSIS_USER = (
    'Memory:\n{content}\n\nAnswer with JSON: {{"keywords": [...], "context": "...", "tags": [...]}}'
)
ANALYSIS_SCHEMA = {
    "type": "object",
    "properties": {
        "keywords": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 8},
        "context": {"type": "string", "maxLength": 300},
        "tags": {"type": "array", "items": {"type": "string", "maxLength": 40}, "maxItems": 8},
    },
    "required": ["keywords", "context", "tags"],
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
EVOLUTION_SCHEMA = {
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
            "items": {"type": "integer", "minimum": 1},
            "maxItems": 10,
        },
        "tags_to_update": {"type": "array", "items": {"type": "string", "maxLength": 40}},
        "new_context_neighborhood": {
            "type": "array",
            "items": {"type": "string", "maxLength": 300},
        },
        "new_tags_neighborhood": {
            "type": "array",
            "items": {"type": "array", "items": {"type": "string", "maxLength": 40}},
        },
    },
    "required": [
        "should_evolve",
        "actions",
        "suggested_connections",
        "tags_to_update",
        "new_context_neighborhood",
        "new_tags_neighborhood",
    ],
}

MEMORY_HEADER = "Related memories:"
