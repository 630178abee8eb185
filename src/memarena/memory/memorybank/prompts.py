"""MemoryBank's memory-LLM prompts (memarena's wording, written from the papers).

- the summary of one finished task is :data:`memarena.memory.episodic.SUMMARY_SYSTEM`
  (parity: the key a task is retrieved by; faithful: the episode's event summary);
- ``OVERVIEW_*``: faithful mode's global summary, rewritten from the previous one and the new
  event summaries (the paper's "global summary" of past events).
"""

OVERVIEW_SYSTEM = (
    "You keep a running overview of an agent's past tasks. Merge the previous overview and the "
    "new task summaries into at most 6 sentences on one line: recurring kinds of tasks, what "
    "tended to work and what tended to fail."
)
OVERVIEW_USER = (
    "Previous overview:\n{overview}\n\nNew task summaries:\n{summaries}\n\n"
    'Answer with JSON: {{"summary": "..."}}'
)

PAST_HEADER = "Relevant past tasks from memory:"
OVERVIEW_HEADER = "Overview of past tasks:"
