"""A-Mem as MemCo's code ran it (``method=amem_lite``; SYannL/nvdamas ``amem.py``,
``memory_base.py``, ``format.py``), worked by hand: the keyword / tag heuristic, the text a note
is embedded from, ranking 2 notes and showing the top one twice plus the failed-cases line,
observations kept whole, and the A-Mem reading one key away."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from baseline_helpers import episode, query
from doubles import FakeLLM
from omegaconf import OmegaConf

from memarena.core import ConfigError, MemoryServices
from memarena.memory.amem import AMem, prompts
from memarena.memory.amem.memco_layout import token_terms

CONF = Path(__file__).resolve().parents[2] / "conf" / "method"
MEMCO = {"mode": "lite", "top_k": 1, "hint_k": 1, "insight_k": 1, "note_terms": "tokens",
         "index_text": "memco", "layout": "memco", "observation_chars": None,
         "content_chars": None}  # fmt: skip


class VocabEmbedder:
    """Counts of a few words in a text (a bag of words), and every text it was asked for."""

    name, dim = "vocab", 5
    VOCAB = ("apple", "fridge", "desk", "lamp", "book")

    def __init__(self) -> None:
        self.seen: list[str] = []

    def close(self) -> None:
        return None

    def encode(self, texts):
        self.seen.extend(texts)
        words = [t.lower().replace(",", " ").split() for t in texts]
        rows = [[w.count(v) + 1e-3 for v in self.VOCAB] for w in words]
        return np.asarray(rows, dtype=np.float32)


def _memco(**overrides) -> AMem:
    services = MemoryServices(llm_factory=FakeLLM, embedder_factory=VocabEmbedder)
    return AMem(services=services, **(MEMCO | overrides))


# the note of episode("put apple in fridge", True, "a"): the task description (goal, the initial
# observation "you see a room", the outcome), then each action and what it returned
A_CONTEXT = "put apple in fridge\nyou see a room\nOutcome: solved"
A_CONTENT = (
    "### Task description:\n" + A_CONTEXT + "\n\n### Detailed trajectory:\n"
    "> a1\nafter a1\n> a2\nafter a2\n> oops\nNothing happens."
)
# its tokens: task description put apple [in: 2 chars] fridge you see [a] room outcome ...
A_KEYWORDS = ["task", "description", "put", "apple", "fridge", "you", "see", "room"]
A_TAGS = ["task", "description", "put", "apple"]


def test_token_heuristic_keeps_distinct_tokens_of_three_or_more_characters_in_order():
    text = "Move the block_a onto b2 and then move BLOCK_A into box99; about 12 steps, from your plan. Café"  # noqa: E501
    # lower-cased, cut at every character outside [a-z0-9_] ("café" -> "caf"); "b2", "12" too
    # short; the, and, into, about, from, your stopwords; the 2nd "move" / "block_a" repeats
    keywords, tags = token_terms(text)
    assert keywords == ["move", "block_a", "onto", "then", "box99", "steps", "plan", "caf"]
    assert tags == ["move", "block_a", "onto", "then"]  # the first 4 keywords
    eleven = " ".join(f"w{i:02d}" for i in range(11))  # 11 distinct tokens: 8 kept
    assert token_terms(eleven)[0] == [f"w{i:02d}" for i in range(8)]
    assert token_terms("an is of") == ([], [])
    assert token_terms(A_CONTENT) == (A_KEYWORDS, A_TAGS)


def test_note_holds_the_execution_pattern_and_is_embedded_with_its_terms():
    memory = _memco()
    memory.observe(*episode("put apple in fridge", True, "a"))
    note = memory.notes["a@0"]
    assert (note.content, note.context) == (A_CONTENT, A_CONTEXT)
    assert (note.keywords, note.tags) == (A_KEYWORDS, A_TAGS)
    indexed = (
        A_CONTENT + "\n" + A_CONTEXT + "\n"
        "task description put apple fridge you see room\ntask description put apple"
    )
    assert note.index_text("memco") == indexed
    assert memory.services.embedder.seen == [indexed]  # what the index row was made from


def test_ranks_two_shows_the_top_note_twice_and_the_second_as_one_failed_cases_line():
    memory = _memco()
    memory.observe_groups([[episode("put apple in fridge", True, "a")],
                           [episode("put apple on desk", False, "b")],
                           [episode("turn on lamp and read book", True, "c")]])  # fmt: skip
    # query [apple 1, fridge 1]: a's row counts apple 4 (content, context, keywords, tags) and
    # fridge 3 (not in its 4 tags): cos 0.99; b's apple 4, desk 3: cos 0.57; c: 0
    ctx = memory.retrieve(query("apple fridge"))
    assert ctx.memory_ids == ["a@0", "b@1"]
    assert list(ctx.slots) == ["amem_notes", "amem_insights"]
    example = f"### Task description:\n{A_CONTEXT}\n\n### Detailed trajectory:\n{A_CONTENT}"
    assert ctx.slots["amem_notes"] == (
        f"{prompts.MEMCO_EXAMPLES_HEADER}\n{prompts.MEMCO_EXAMPLES_INTRO}\n\nTask 1:\n{example}"
    )
    insight = (
        f"[Context] {A_CONTEXT}\n[Keywords] {', '.join(A_KEYWORDS)}\n[Tags] {', '.join(A_TAGS)}"
    )
    assert ctx.slots["amem_insights"] == (
        f"{prompts.MEMCO_INSIGHTS_HEADER}\n{prompts.MEMCO_INSIGHTS_INTRO}\n\n"
        f"1. {insight}\n2. {prompts.FAILED_HINT}"
    )
    assert "desk" not in "".join(ctx.slots.values())  # b itself is never shown
    assert [memory.notes[i].retrieval_count for i in ("a@0", "b@1", "c@2")] == [1, 1, 0]


def test_one_note_gives_no_failed_cases_line():
    memory = _memco()
    memory.observe(*episode("put apple in fridge", True, "a"))
    ctx = memory.retrieve(query("apple"))
    assert ctx.memory_ids == ["a@0"]
    assert ctx.slots["amem_insights"].endswith(f"1. [Context] {A_CONTEXT}\n[Keywords] "
                                               f"{', '.join(A_KEYWORDS)}\n[Tags] "
                                               f"{', '.join(A_TAGS)}")  # fmt: skip
    assert prompts.FAILED_HINT not in ctx.slots["amem_insights"]


def _long_observation_episode():
    trajectory, outcome = episode("put apple in fridge", True, "a", actions=("look",))
    trajectory.steps[0].observation = "line one\n" + "x" * 500
    return trajectory, outcome


def test_memco_keeps_observations_whole_and_amem_clips_them_to_300():
    memory = _memco()
    memory.observe(*_long_observation_episode())
    assert "> look\nline one\n" + "x" * 500 + "\n> oops" in memory.notes["a@0"].content
    amem = AMem(services=MemoryServices(FakeLLM, VocabEmbedder), mode="lite")
    amem.observe(*_long_observation_episode())
    clipped = "line one " + "x" * 288 + "..."  # one line, 300 characters
    assert f"> look\n{clipped}\n" in amem.notes["a@0"].content


def test_a_mem_reading_is_one_key_away():
    defaults = AMem(services=MemoryServices(FakeLLM, VocabEmbedder), mode="lite")
    assert (defaults.top_k, defaults.hint_k, defaults.insight_k) == (3, 0, 0)
    assert (defaults.note_terms, defaults.index_text, defaults.layout) == (
        "default", "content", "amem")  # fmt: skip
    assert (defaults.observation_chars, defaults.content_chars) == (300, 4000)
    defaults.observe(*episode("put apple in fridge", True, "a"))
    assert defaults.notes["a@0"].keywords == [] and defaults.notes["a@0"].context == "General"
    ctx = defaults.retrieve(query("apple"))
    assert list(ctx.slots) == ["amem_notes"]
    assert ctx.slots["amem_notes"].startswith("Related memories:\nMemory note (General)\nTask:")
    # one key: the same memory with MemCo's heuristic terms, everything else A-Mem's
    tokens = AMem(services=MemoryServices(FakeLLM, VocabEmbedder), mode="lite",
                  note_terms="tokens")  # fmt: skip
    tokens.observe(*episode("put apple in fridge", True, "a"))
    assert tokens.notes["a@0"].context == A_CONTEXT
    assert tokens.notes["a@0"].keywords[:4] == ["task", "put", "apple", "fridge"]
    assert AMem.capabilities.has_global is False  # MemCo's A-Mem has no global retriever


def test_amem_lite_yaml_carries_memcos_values():
    base = OmegaConf.load(CONF / "amem.yaml")
    lite = OmegaConf.load(CONF / "amem_lite.yaml")
    cfg = OmegaConf.to_container(OmegaConf.merge(base, lite))
    cfg.pop("defaults", None)
    assert {k: cfg[k] for k in MEMCO} == MEMCO
    assert (cfg["_target_"], base.mode) == ("memarena.memory.amem.AMem", "full")


def test_snapshot_refuses_a_run_that_writes_notes_otherwise(tmp_path):
    memory = _memco()
    memory.observe(*episode("put apple in fridge", True, "a"))
    memory.save(tmp_path)
    again = _memco()
    again.load(tmp_path)
    assert again.retrieve(query("apple")).slots == memory.retrieve(query("apple")).slots
    with pytest.raises(ConfigError, match="method.layout=memco method.observation_chars=null"):
        _memco(layout="amem", observation_chars=300).load(tmp_path)
