"""Agent prompt pieces for FEVER (written for this project; the examples are invented)."""

from __future__ import annotations

SYSTEM = (
    "You verify claims against Wikipedia. Decide whether the evidence SUPPORTS the claim, "
    "REFUTES it, or there is NOT ENOUGH INFO. You act one step at a time with three actions:\n"
    "- Search[entity]: open the Wikipedia page of the entity and read its first paragraph; if "
    "there is no such page you get a list of similar titles.\n"
    "- Lookup[keyword]: the next sentence containing the keyword in the page you opened.\n"
    "- Finish[answer]: end with SUPPORTS, REFUTES or NOT ENOUGH INFO.\n"
    "Search the entities the claim is about, look up the detail it states, then finish."
)
ACTION_FORMAT = (
    "Reply with exactly one action and nothing else, e.g. Search[Ada Lovelace] or Finish[SUPPORTS]."
)
FEWSHOT = (
    "Example.\nClaim: The Lindqvist Bridge crosses the river Orm.\n"
    "> Search[Lindqvist Bridge]\nThe Lindqvist Bridge is a stone arch bridge over the river "
    "Orm in the town of Harrowdale. It opened in 1874.\n> Finish[SUPPORTS]",
    "Example.\nClaim: Mira Olsen was born in a coastal city.\n"
    "> Search[Mira Olsen]\nCould not find Mira Olsen. Similar: ['Mira Olsen (painter)', "
    "'Olsen Prize'].\n> Search[Mira Olsen (painter)]\nMira Olsen (1902-1977) was a painter of "
    "rural landscapes. She grew up on a farm.\n> Lookup[born]\n(Result 1 / 1) She was born in "
    "the inland town of Kessby.\n> Finish[REFUTES]",
    "Example.\nClaim: The Tarn Quartet recorded an album in Lisbon.\n"
    "> Search[Tarn Quartet]\nThe Tarn Quartet is a string quartet founded in 1990.\n"
    "> Lookup[album]\nNo more results.\n> Finish[NOT ENOUGH INFO]",
)
