"""Agent prompt pieces for HotpotQA (written for this project; the examples are invented)."""

from __future__ import annotations

SYSTEM = (
    "You answer multi-hop questions by searching Wikipedia. You act one step at a time with "
    "three actions:\n"
    "- Search[entity]: open the Wikipedia page of the entity and read its first paragraph; if "
    "there is no such page you get a list of similar titles.\n"
    "- Lookup[keyword]: the next sentence containing the keyword in the page you opened.\n"
    "- Finish[answer]: end with a short answer (a name, a date, a number, yes or no).\n"
    "Find the first entity, read what links it to the second, search that, then finish."
)
ACTION_FORMAT = (
    "Reply with exactly one action and nothing else, e.g. Search[Ada Lovelace] or Finish[1843]."
)
FEWSHOT = (
    "Example.\nQuestion: In which town was the architect of the Lindqvist Bridge born?\n"
    "> Search[Lindqvist Bridge]\nThe Lindqvist Bridge is a stone arch bridge over the river Orm. "
    "It was designed by the engineer Hanna Brisk.\n> Search[Hanna Brisk]\nHanna Brisk "
    "(1831-1899) was an engineer born in Kessby.\n> Finish[Kessby]",
    "Example.\nQuestion: Were the Tarn Quartet and the Orm Trio founded in the same decade?\n"
    "> Search[Tarn Quartet]\nThe Tarn Quartet is a string quartet founded in 1990.\n"
    "> Search[Orm Trio]\nThe Orm Trio is a piano trio formed in 1996 in Harrowdale.\n"
    "> Finish[yes]",
)

# The released agent loop's prompt (protocol.agent_loop gmemory_autogen / memco_autogen): G-Memory
# has no HotpotQA env, so this follows its FEVER prompt's ReAct form (interleaved numbered
# Thought / Action / Observation steps, one step per reply), written anew with invented pages.
RELEASED_SYSTEM = (
    "Answer a question by working through steps of Thought, Action and Observation in turn. A "
    "Thought reasons about where things stand; an Action is one of three kinds:\n"
    "(1) Search[entity]: looks the entity up on Wikipedia and gives back its opening paragraph "
    "if the page exists; if it does not, you get some similar entities to search instead.\n"
    "(2) Lookup[keyword]: gives back the next sentence with the keyword in the page you last "
    "found.\n"
    "(3) Finish[answer]: gives a short answer (a name, a date, a number, yes or no) and ends "
    "the task.\nWrite one step per reply."
)
RELEASED_FEWSHOT = (
    "Question: In which town was the architect of the Lindqvist Bridge born?\n"
    "Thought 1: I need to find who designed the Lindqvist Bridge, then where that person was "
    "born.\nAction 1: Search[Lindqvist Bridge]\nObservation 1: The Lindqvist Bridge is a stone "
    "arch bridge over the river Orm. It was designed by the engineer Hanna Brisk.\n"
    "Thought 2: The bridge was designed by Hanna Brisk. I should search for her.\n"
    "Action 2: Search[Hanna Brisk]\nObservation 2: Hanna Brisk (1831-1899) was an engineer "
    "born in Kessby.\nThought 3: Hanna Brisk was born in Kessby.\nAction 3: Finish[Kessby]",
    "Question: Were the Tarn Quartet and the Orm Trio founded in the same decade?\n"
    "Thought 1: I need the founding years of both ensembles.\nAction 1: Search[Tarn Quartet]\n"
    "Observation 1: The Tarn Quartet is a string quartet founded in 1990.\n"
    "Thought 2: The Tarn Quartet was founded in 1990. Now the Orm Trio.\n"
    "Action 2: Search[Orm Trio]\nObservation 2: The Orm Trio is a piano trio formed in 1996 "
    "in Harrowdale.\nThought 3: 1990 and 1996 are both in the 1990s, so yes.\n"
    "Action 3: Finish[yes]",
)
