"""Generative Agents: the combined retrieval score on a 3-memory example worked by hand, the
reflection trigger at exactly 150, reflections stored with their evidence, and the parity mode
of G-Memory's code (2k candidates re-ranked by LLM relevance in one batched call)."""

from __future__ import annotations

import json

import numpy as np
import pytest
from baseline_helpers import answer, episode, query, services
from doubles import FakeLLM

from memarena.memory.generative_agents import GenerativeAgents, MemoryObject, MemoryStream, min_max


def _ga(llm: FakeLLM, **kw) -> GenerativeAgents:
    return GenerativeAgents(services=services(llm), **kw)


def test_min_max_and_its_equal_values_case():
    assert min_max([2, 8, 5]) == [0.0, 1.0, 0.5]
    assert min_max([3, 3]) == [0.5, 0.5]


def test_combined_score_on_three_memories_by_hand():
    """now = 10, decay 0.995, query [1, 0, 0]:
    recency  0.995^10 = 0.951110, 0.995^5 = 0.975248, 0.995^0 = 1 -> 0, 0.493735, 1
    importance 2, 8, 5                                            -> 0, 1, 0.5
    relevance  cos 1, 0, 0.707107                                 -> 1, 0, 0.707107
    score      1.0, 1.493735, 2.207107 (weights 1, 1, 1)."""
    stream = MemoryStream()
    for mid, access, importance, vector in [
        ("m1", 0, 2, [1, 0, 0]),
        ("m2", 5, 8, [0, 1, 0]),
        ("m3", 10, 5, [1, 1, 0]),
    ]:
        memory = MemoryObject(mid, "observation", mid, 0, access, importance)
        stream.add(memory, np.asarray(vector, dtype=np.float32))
    scores = stream.scores(np.asarray([1, 0, 0], dtype=np.float32), now=10, decay=0.995)
    assert scores["m1"] == pytest.approx(1.0, abs=1e-5)
    assert scores["m2"] == pytest.approx(1.493735, abs=1e-5)
    assert scores["m3"] == pytest.approx(2.207107, abs=1e-5)
    assert stream.top(scores, 2) == ["m3", "m2"]
    weighted = stream.scores(np.asarray([1, 0, 0]), now=10, decay=0.995, weights=(0, 0, 1))
    assert stream.top(weighted, 1) == ["m1"]


def _importance(*values: int) -> list[str]:
    return [answer(importance=v) for v in values]


def test_reflection_triggers_at_exactly_150():
    llm = FakeLLM(_importance(*[10] * 14, 9))  # 149: no reflection
    memory = _ga(llm, mode="faithful")
    memory.observe_groups([[episode(f"v:1,{i},0", True, f"t{i}")] for i in range(15)])
    assert llm.batches == 1 and memory.pending_importance == 149
    assert memory.counts["reflections"] == 0
    llm.answers = _importance(1)  # 150 reached: the reflection asks its questions
    memory.observe(*episode("v:0,0,1", True, "t15"))
    assert memory.counts["reflections"] == 1 and memory.pending_importance == 0
    asked = llm.requests[-1].messages[-1]["content"]
    assert "salient" in llm.requests[-1].messages[0]["content"] and "Task: v:0,0,1" in asked


def test_a_reflection_stores_insights_with_their_evidence():
    llm = FakeLLM(_importance(*[10] * 5))
    memory = _ga(llm, mode="faithful", reflection_threshold=50, reflection_evidence=2,
                 reflection_questions=1)  # fmt: skip
    questions = json.dumps({"questions": ["v:1,0,0"]})
    insights = json.dumps({"insights": [{"insight": "v:1,0.5,0", "evidence": [1, 2, 9]}]})
    llm.answers += [questions, insights, answer(importance=7)]
    memory.observe_groups([[episode(f"v:1,{i},0", True, f"t{i}")] for i in range(5)])
    assert memory.counts == {"writes": 5, "reflections": 1, "insights": 1}
    reflection = memory.stream.objects["reflection-1.1"]
    assert reflection.kind == "reflection" and reflection.importance == 7
    assert len(reflection.evidence) == 2  # the cited 9 is not among the 2 shown: dropped
    assert set(reflection.evidence) <= {m for m in memory.stream.objects if m.startswith("t")}
    ctx = memory.retrieve(query("v:1,0.5,0"))
    assert "reflection-1.1" in ctx.memory_ids and "Insight: v:1,0.5,0" in ctx.slots["memories"]


def test_retrieval_refreshes_access_unless_frozen(tmp_path):
    memory = _ga(FakeLLM(_importance(3, 3)), mode="faithful", top_k=1)
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", True, "b")]])
    (first, _) = memory.stream.objects
    assert memory.stream.objects[first].last_access == 0
    memory.retrieve(query("v:1,0,0"))
    assert memory.stream.objects[first].last_access == 2
    memory.save(tmp_path)
    frozen = _ga(FakeLLM(), mode="faithful", top_k=1)
    frozen.load(tmp_path)
    frozen.freeze()
    ctx = frozen.retrieve(query("v:0,1,0"))
    assert ctx.memory_ids and frozen.state_dict() == memory.state_dict()  # nothing touched


def test_parity_rates_two_candidates_per_task_in_one_call_and_shows_the_best():
    memory = _ga(FakeLLM())
    episodes = [episode("v:1,0,0", True, "same"), episode("v:0.9,0.1,0", True, "close"),
                episode("v:1,0,0", False, "failed"), episode("v:0,1,0", True, "other")]  # fmt: skip
    memory.observe_groups([[e] for e in episodes])
    llm = memory.services.llm
    assert llm.requests == []  # the raw task is the key: no LLM call at write time
    llm.answers = [answer(score=2), answer(score=9), "garbage", answer(score=4)]
    first, second = memory.retrieve_batch([query("v:1,0,0", "q1"), query("v:0,1,0", "q2")])
    assert llm.batches == 1 and len(llm.requests) == 4  # 2 candidates x 2 tasks, one call
    assert [i.split("@")[0] for i in first.memory_ids] == ["close"]  # rated 9 over 2
    assert [i.split("@")[0] for i in second.memory_ids] == ["close"]  # 0 (unusable) vs 4
    assert memory.fallbacks == {"generative_agents_relevance": 1}  # the unparsable answer
