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
