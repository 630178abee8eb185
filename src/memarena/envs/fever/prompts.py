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

# The released agent loop's prompt (protocol.agent_loop gmemory_autogen / memco_autogen): G-Memory's
# FEVER instruction and worked examples are ReAct's (tasks/prompts/fever_prompt.py): interleaved
# thought, action and observation steps, three examples (about 1.3k, 0.7k and 1.2k characters;
# 2, 2 and 4 thoughts; ending SUPPORTS, REFUTES and NOT ENOUGH INFO, the last with a missed search
# and a lookup). Written anew here with invented pages, of the same kind, length and number.
RELEASED_SYSTEM = (
    "Check a claim by working through steps of Thought, Action and Observation in turn. A "
    "Thought reasons about where things stand; an Action is one of three kinds:\n"
    "(1) Search[entity]: looks the entity up on Wikipedia and gives back its opening paragraph "
    "if the page exists; if it does not, you get some similar entities to search instead.\n"
    "(2) Lookup[keyword]: gives back the next sentence with the keyword in the page you last "
    "found.\n"
    "(3) Finish[answer]: gives the answer and ends the task; the answer is SUPPORTS, REFUTES or "
    "NOT ENOUGH INFO.\n"
    "Write one step per reply."
)
RELEASED_FEWSHOT = (
    "Claim: Oskar Vallin played a starring role in the television series Northern Lanterns.\n"
    "Thought 1: I should search for Oskar Vallin and see whether he starred in Northern "
    "Lanterns.\nAction 1: Search[Oskar Vallin]\nObservation 1: Oskar Vallin (born 14 March "
    "1979) is a Swedish actor, director and screenwriter. He studied at the Malmo Theatre "
    "Academy and worked for several years on the stage of the Gothenburg City Theatre before "
    "his first screen role in the crime drama Harbour Watch (2006). He became known to a wide "
    "audience as the lighthouse keeper Elias Brandt in the drama series Northern Lanterns "
    "(2011-2017), a role for which he was nominated twice for the Kristallen award. Since then "
    "he has appeared in the films The Salt Road (2015) and Winter Ferry (2019), and in 2021 "
    "he directed his first feature, Quiet Water. He lives in Stockholm with his family.\n"
    "Thought 2: Oskar Vallin played the lead role of Elias Brandt in Northern Lanterns, so he "
    "did have a starring role in it.\nAction 2: Finish[SUPPORTS]",
    "Claim: The Harrow Circle is a band that was formed after 2010.\n"
    "Thought 1: I need to search for The Harrow Circle and find out when it was formed.\n"
    "Action 1: Search[The Harrow Circle]\nObservation 1: The Harrow Circle is an English folk "
    "rock band formed in Leeds in 1998. The band has released six studio albums and toured "
    "widely in Europe.\nThought 2: The Harrow Circle was formed in 1998, before 2010, so the "
    "claim is false.\nAction 2: Finish[REFUTES]",
    "Claim: Lantern Hill is a novel whose author grew up in a fishing town.\n"
    "Thought 1: I need to search for Lantern Hill and find who wrote it.\n"
    "Action 1: Search[Lantern Hill]\nObservation 1: Could not find [Lantern Hill]. Similar: "
    "['Lantern Hill (novel)', 'Lantern Hill Park', 'Lantern Hill (film)'].\n"
    "Thought 2: The novel is the one to search for.\nAction 2: Search[Lantern Hill (novel)]\n"
    "Observation 2: Lantern Hill is a 1952 novel by the writer Ingrid Moss. It follows a girl "
    "who spends one summer with her grandfather at a lighthouse.\n"
    "Thought 3: The author is Ingrid Moss. I should look up where she grew up.\n"
    "Action 3: Lookup[grew up]\nObservation 3: (Result 1 / 3) Moss wrote about the sea in "
    "most of her books.\nThought 4: The page says nothing about the town she grew up in, so "
    "there is not enough information.\nAction 4: Finish[NOT ENOUGH INFO]",
)
