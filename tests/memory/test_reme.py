"""ReMe (reme.txt) with an LLM test double for the summarizer and judge: acquisition on the
best/worst samples, validation, dedup, retrieval keys, the deletion rule, selective vs full
addition, reflection, fallbacks and snapshots."""

from __future__ import annotations

import json

import numpy as np
import pytest
from doubles import FakeLLM

from memarena.core import (
    ConfigError,
    Feedback,
    MemoryContext,
    MemoryFrozenError,
    MemoryQuery,
    MemoryServices,
    Observation,
    Outcome,
    Step,
    Task,
    Trajectory,
)
from memarena.memory.reme import Experience, ReMe
from memarena.memory.reme import prompts as reme_prompts

VOCAB = ("file", "folder", "stock", "price", "car", "fuel", "message", "ticket")


class VocabEmbedder:
    """Word counts over a small vocabulary (+ a constant so no vector is zero)."""

    name = "vocab"

    def encode(self, texts):
        rows = [[t.lower().count(w) for w in VOCAB] + [0.05] for t in texts]
        return np.asarray(rows, dtype=np.float32)


def _exp(when: str, content: str, **kw) -> dict:
    return {
        "when_to_use": when,
        "experience": content,
        "keywords": kw.get("keywords", ["k"]),
        "confidence": kw.get("confidence", 0.8),
        "tools": kw.get("tools", ["f"]),
    }


def _answer(*items: dict) -> str:
    return json.dumps({"experiences": list(items)})


OK = json.dumps({"valid": True, "score": 0.9, "reason": "useful"})
BAD = json.dumps({"valid": False, "score": 0.9, "reason": "wrong"})
LOW = json.dumps({"valid": True, "score": 0.3, "reason": "weak"})
GEN = json.dumps({"generalized_query": "move files between folders"})


def _traj(goal: str, actions: list[str], success: bool, progress: float, task_id="t1"):
    task = Task(task_id, "fake", "train", "d", goal)
    steps = [Step(a, f"did {a}", 0.0, progress, Feedback(True, True)) for a in actions]
    status = "success" if success else "failure"
    out = Outcome(success, 1.0 if success else progress, len(steps), status)
    return Trajectory(task, "start", steps), out


def _reme(llm: FakeLLM, **kw) -> ReMe:
    services = MemoryServices(llm_factory=lambda: llm, embedder_factory=VocabEmbedder)
    return ReMe(services=services, **kw)


def _user(request) -> str:
    return request.messages[-1]["content"]


def test_acquisition_keeps_best_and_worst_and_runs_three_analyses():
    llm = FakeLLM(
        [
            _answer(_exp("moving a file into a folder", "cd into the folder first")),
            _answer(_exp("a message send fails", "check the message recipient")),
            _answer(_exp("a ticket or a stock", "name the ticket, not the stock")),
            OK,
            OK,
            OK,
            GEN,
        ]
    )
    memory = _reme(llm)
    group = [
        _traj("move report.txt to folder docs", ["mid_action"], False, 0.5),
        _traj("move report.txt to folder docs", ["best_action"], True, 1.0),
        _traj("move report.txt to folder docs", ["worst_action"], False, 0.0),
    ]
    memory.observe_groups([group])
    prompts = [_user(r) for r in llm.requests]
    assert llm.batches == 3  # summarize, judge, generalize: one batched call each
    assert "solved the task" in prompts[0] and "best_action" in prompts[0]
    assert "failed the task" in prompts[1] and "worst_action" in prompts[1]
    assert "mid_action" not in " ".join(prompts[:3])
    assert "Better attempt (score 1.00)" in prompts[2]
    assert "Worse attempt (score 0.00)" in prompts[2]
    # three summaries (up to max_experiences=3 each), three judgements, one generalization
    # the released reading: the usage scenario and the content uncapped
    summary, judge = reme_prompts.experiences_schema(3, None, None), reme_prompts.JUDGE_SCHEMA
    schemas = [summary] * 3 + [judge] * 3 + [reme_prompts.GENERALIZE_SCHEMA]
    assert [r.json_schema for r in llm.requests] == schemas
    kinds = sorted(e.kind for e in memory.pool.items.values())
    assert kinds == ["comparative", "failure", "success"]
    first = memory.pool.items["exp-1"]
    assert first.generalized_query == "move files between folders"
    assert first.task_query == "move report.txt to folder docs"
    assert memory.metrics()["memory_added"] == 3


def test_same_score_samples_skip_the_comparison():
    llm = FakeLLM([_answer(_exp("a", "b")), _answer(_exp("c", "d"))], default=OK)
    memory = _reme(llm, generalize_queries=False)
    group = [_traj("g", ["x"], True, 1.0), _traj("g", ["y"], True, 1.0)]
    memory.observe_groups([group])
    # ReMe's summary flow: success-pattern recognition on every kept success (both here)
    asked = [_user(r) for r in llm.requests if "solved the task" in _user(r)]
    assert len(asked) == 2 and "x" in asked[0] and "y" in asked[1]
    assert not any("Better attempt" in _user(r) for r in llm.requests)


@pytest.mark.parametrize(("unparsed", "kept"), [("drop", ["file"]), ("keep", ["file", "car"])])
def test_judge_rejects_invalid_and_low_scores_and_counts_malformed(unparsed, kept):
    # four candidates on different vocabulary words (cosine ~0.003: no duplicates); the fourth
    # judge reply is not JSON: ReMe's validation op reads a reply without a verdict as valid at
    # score 0.5, so it enters at the 0.5 threshold (keep); drop rejects it
    words = ("file", "stock", "message", "car")
    items = [_exp(f"{w} case", f"content {w}") for w in words]
    llm = FakeLLM([_answer(*items), OK, BAD, LOW, "not json"])
    memory = _reme(llm, max_experiences=4, generalize_queries=False, judge_unparsed=unparsed)
    memory.observe_groups([[_traj("g", ["a"], True, 1.0)]])
    assert [e.content for e in memory.pool.items.values()] == [f"content {w}" for w in kept]
    assert memory.metrics()["memory_judge_rejected"] == 4 - len(kept)
    assert memory.fallbacks == {"reme_judge": 1}
    assert llm.usage.fallbacks == {"reme_judge": 1}


def test_similarity_dedup_against_pool_and_within_batch():
    same = _exp("moving a file", "use the folder path")
    llm = FakeLLM([_answer(same, same, _exp("stock price", "fetch the price first"))], default=OK)
    memory = _reme(llm, generalize_queries=False)
    memory.observe_groups([[_traj("g", ["a"], True, 1.0)]])
    assert len(memory.pool) == 2 and memory.metrics()["memory_duplicates"] == 1
    llm.answers = [_answer(same)]
    memory.observe_groups([[_traj("g2", ["a"], True, 1.0, task_id="t2")]])
    assert len(memory.pool) == 2 and memory.metrics()["memory_duplicates"] == 2


def test_malformed_summary_adds_nothing_and_is_counted():
    llm = FakeLLM(["{oops", json.dumps({"experiences": "nope"})], default=OK)
    memory = _reme(llm, generalize_queries=False)
    memory.observe_groups([[_traj("g", ["a"], True, 1.0)], [_traj("h", ["b"], True, 1.0, "t2")]])
    assert len(memory.pool) == 0
    assert memory.fallbacks == {"reme_summarize": 1, "reme_summarize_shape": 1}


def _stocked(**kw) -> ReMe:
    memory = _reme(FakeLLM(), **kw)
    rows = [
        ("buying stock at the market price", "get the stock price before ordering", "buy AAPL"),
        ("moving files between folders", "cd into the folder, then mv the file", "move a.txt"),
        ("refuelling the car", "check the fuel level before filling", "fill the car"),
    ]
    for when, content, query in rows:
        e = Experience("", when, content, keywords=[when.split()[1]], task_query=query)
        e.id = memory.pool.new_id()
        memory.pool.add(e)
    memory.begin_phase("eval")
    return memory


def _query(goal: str, task_id="q1") -> MemoryQuery:
    task = Task(task_id, "fake", "test", "d", goal)
    return MemoryQuery(task=task, observation=Observation("o", goal))


def test_retrieval_top_k_by_usage_scenario():
    memory = _stocked(top_k=2)
    ctx = memory.retrieve(_query("what is the stock price, then buy stock"))
    # exp-1 shares "stock" and "price"; exp-2 and exp-3 share only the constant column and tie
    # (equal norms): the earlier experience fills the second slot
    assert ctx.memory_ids == ["exp-1", "exp-2"]
    # ReMe's agents' layout: Experience i: / When to use: / Content: blocks
    assert ctx.slots["experience"].split("\n", 1)[1] == (
        "Experience 1:\n When to use: buying stock at the market price\n"
        " Content: get the stock price before ordering\n\n"
        "Experience 2:\n When to use: moving files between folders\n"
        " Content: cd into the folder, then mv the file\n"
    )
    assert _stocked(top_k=0).retrieve(_query("stock")).memory_ids == []


def test_retrieval_key_task_query_uses_the_source_query():
    memory = _stocked(top_k=1, retrieval_key="task_query")
    # "car" is only in the usage scenario of exp-3, "fill" only in its task query
    assert memory.retrieve(_query("fill the car")).memory_ids == ["exp-3"]
    with pytest.raises(ConfigError, match="retrieval_key"):
        _reme(FakeLLM(), retrieval_key="title")


def test_no_retrieval_during_acquisition_by_default():
    memory = _stocked()
    memory.begin_phase("acquire")
    assert memory.retrieve(_query("stock price")).memory_ids == []
    memory.retrieves_during_acquisition = True
    assert memory.retrieve(_query("stock price")).memory_ids == ["exp-1", "exp-2", "exp-3"]


@pytest.mark.parametrize(
    ("f", "u", "strict", "deleted"),
    [
        (5, 2, True, True),  # 0.4 < 0.5
        (5, 3, True, False),
        (4, 0, True, False),  # f < alpha = 5
        (10, 5, True, False),  # 0.5 is not < 0.5 (ReMe's delete_memory_op) ...
        (10, 5, False, True),  # ... but is <= 0.5 (Eq. 1)
        (6, 4, False, False),
        (0, 0, False, False),
    ],
)
def test_deletion_rule(f, u, strict, deleted):
    memory = _stocked(delete_strict=strict)
    e = memory.pool.items["exp-1"]
    e.retrievals, e.utility = f, u
    assert memory.should_delete(e) is deleted
    assert (memory.delete_low_utility() == ["exp-1"]) is deleted


@pytest.mark.parametrize("every", [5, None])
def test_refinement_counts_recalls_and_deletes_unhelpful_experiences(every):
    # delete_every 5: the pass over the pool after the 5th trial; None: after each update among
    # the touched experiences; either way exp-2 goes exactly after the 5th trial here
    memory = _stocked(generalize_queries=False, delete_every=every)
    pairs = []
    for i in range(5):  # exp-2 recalled 5 times, helpful twice -> u/f = 0.4 <= 0.5
        t, o = _traj("move", ["a"], success=i < 2, progress=0.0, task_id=f"e{i}")
        t.memory_ids = ["exp-2"]
        pairs.append((t, o))
    memory.services = MemoryServices(
        llm_factory=lambda: FakeLLM(default=_answer()), embedder_factory=VocabEmbedder
    )
    for pair in pairs[:4]:
        memory.observe(*pair)
    assert memory.pool.items["exp-2"].retrievals == 4 and memory.pool.items["exp-2"].utility == 2
    memory.observe(*pairs[4])
    assert "exp-2" not in memory.pool and memory.metrics()["memory_deleted"] == 1
    kept = _stocked(deletion=False)
    kept.services = memory.services
    for pair in pairs:
        kept.observe(*pair)
    assert "exp-2" in kept.pool


@pytest.mark.parametrize(("addition", "asked"), [("selective", 0), ("full", 1)])
def test_selective_addition_distils_successes_only(addition, asked):
    llm = FakeLLM(default=_answer())
    memory = _stocked(addition=addition, generalize_queries=False)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=VocabEmbedder)
    memory.observe(*_traj("move", ["a"], False, 0.2))
    assert sum("failed the task" in _user(r) for r in llm.requests) == asked
    memory.observe(*_traj("move", ["a"], True, 1.0, task_id="t2"))
    assert sum("solved the task" in _user(r) for r in llm.requests) == 1


# memarena's earlier reading of the retry: a reflection prompt's lessons beside the retrieved
# experiences, no retry without lessons, the lessons join when the retry succeeds (the paper)
PAPER_RETRY = {
    "retry_lessons": "reflect",
    "retry_context": "experiences_and_lessons",
    "retry_without_lessons": "none",
    "retry_success_adds": "lessons",
}


def test_reflection_lessons_join_only_after_a_successful_retry():
    lesson = _answer(_exp("a ticket cannot be closed twice", "check the ticket status first"))
    llm = FakeLLM([lesson, lesson], default=OK)
    memory = _stocked(generalize_queries=False, **PAPER_RETRY)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=VocabEmbedder)
    failed = _traj("close ticket 7", ["close_ticket()"], False, 0.0, task_id="q1")
    memory.retrieve(_query("close ticket 7"))
    (ctx,) = memory.reflect([failed], attempt=1)
    assert "check the ticket status first" in ctx.slots["lessons"]
    assert ctx.slots["experience"].startswith("Experience from past tasks")
    before = len(memory.pool)
    memory.observe_retry(*_traj("close ticket 7", ["x"], False, 0.0, "q1"), 1, ctx)
    assert len(memory.pool) == before  # failed retry: lessons dropped
    (ctx2,) = memory.reflect([failed], attempt=2)
    assert "again" in _user(llm.requests[-1])
    memory.observe_retry(*_traj("close ticket 7", ["y"], True, 1.0, "q1"), 2, ctx2)
    assert len(memory.pool) == before + 1
    assert memory.metrics()["reflection_successes"] == 1
    assert memory.reflect([failed], attempt=4) == [None]
    assert _stocked(reflection=False).reflect([failed], attempt=1) == [None]
    # no lesson and retry_without_lessons none: no retry
    llm.answers = [_answer()]
    assert memory.reflect([failed], attempt=3) == [None]
    assert _stocked(reflection=False).max_reflections == 0


def test_retry_replay_rebuilds_lessons_from_the_context():
    memory = _stocked(generalize_queries=False, retry_success_adds="lessons")
    llm = FakeLLM(default=OK)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=VocabEmbedder)
    lesson = "Experience 1:\n When to use: a ticket is open\n Content: close it once\n"
    ctx = MemoryContext(slots={"lessons": f"Lessons:\n{lesson}"}, memory_ids=[])
    memory.observe_retry(*_traj("close", ["y"], True, 1.0, "q9"), 1, ctx)
    added = list(memory.pool.items.values())[-1]
    assert (added.when_to_use, added.content, added.kind) == (
        "a ticket is open",
        "close it once",
        "reflection",
    )


def test_frozen_memory_refuses_observation_and_snapshot_roundtrip(tmp_path):
    memory = _stocked()
    memory.pool.items["exp-2"].retrievals = 3
    memory.save(tmp_path)
    again = _reme(FakeLLM())
    again.load(tmp_path)
    assert list(again.pool.items) == ["exp-1", "exp-2", "exp-3"]
    assert again.pool.items["exp-2"].retrievals == 3 and again.pool.next_id == 4
    again.begin_phase("eval")
    assert again.retrieve(_query("buy stock at the price")).memory_ids == [
        "exp-1",
        "exp-2",
        "exp-3",
    ]  # top_k=5: the whole pool, the stock experience first
    again.freeze()
    with pytest.raises(MemoryFrozenError):
        again.observe_groups([[_traj("g", ["a"], True, 1.0)]])


def test_trajectory_granularity_asks_one_whole_procedure_per_kept_sample():
    llm = FakeLLM(default=OK)
    llm.answers = [_answer(_exp("a", "step 1 then step 2")), _answer(_exp("b", "c"))]
    memory = _reme(llm, extraction="trajectory", generalize_queries=False)
    memory.observe_groups([[_traj("g", ["x"], True, 1.0), _traj("g", ["y"], False, 0.0)]])
    asks = [_user(r) for r in llm.requests if "whole" in _user(r)]
    assert len(asks) == 2 and "successful attempt" in asks[0] and "failed attempt" in asks[1]
    assert llm.requests[0].json_schema["properties"]["experiences"]["maxItems"] == 1
    assert {e.kind for e in memory.pool.items.values()} == {"trajectory"}
