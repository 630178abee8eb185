"""ReMe's dynamic retry loop over four trials of one task, driven as the learning evaluation
drives it (``pipeline/learning.py``: observe the first attempt, then ``reflect`` / retry /
``observe_retry`` per attempt), checked against ReMe's released agent (agentscope-ai/ReMe
26cb5ca6 benchmark/bfcl/bfcl_agent.py ``execute``):

- every trial is summarised while adding is on, the last failed one too (``summary_memory``
  after each trial); under reme2 (``addition: selective``) only a reward-1 trial is added, so the
  last failure's lessons are dropped; under reme_ai (``addition: full``) every trial's summary is
  inserted and is what the next trial is shown;
- a trial shown lessons does not retrieve (``update_task_history_with_memory`` retrieves only
  when ``previous_memories`` is empty), so it counts no recall; a trial without lessons
  retrieves afresh and its recalls count f again (``record_task_memory`` of that trial's list);
- every trial ticks the deletion clock.
"""

from __future__ import annotations

import pytest
from doubles import FakeLLM
from test_reme import BAD, OK, _answer, _exp, _query, _stocked, _traj, _user

from memarena.core import MemoryContext, MemoryServices
from memarena.memory.reme.method import ReMe

GOAL = "buy stock at the price"
A1 = _answer(_exp("a ticket cannot be closed twice", "check the ticket status first"))
A2 = _answer(_exp("a message is long", "send the message in parts"))  # the judge rejects it
A3 = _answer(_exp("a message needs a recipient", "name the recipient before sending"))
A4 = _answer(_exp("an empty reply ends the turn", "answer with a call instead"))
SCRIPT = [A1, OK, A2, BAD, A3, OK, A4, OK]  # per trial: its failure analysis, then its judge


def _vocab():
    from test_reme import VocabEmbedder

    return VocabEmbedder()


def _memory(llm: FakeLLM, **kw) -> ReMe:
    memory = _stocked(generalize_queries=False, top_k=2, deletion=False, **kw)
    memory.services = MemoryServices(llm_factory=lambda: llm, embedder_factory=_vocab)
    return memory


def _four_failed_trials(memory: ReMe) -> list:
    """Trial 0 (first attempt, retrieved), then retries 1-3; every trial fails. Returns the
    context each retry was shown."""
    shown = memory.retrieve(_query(GOAL))
    first = _traj(GOAL, ["a0"], False, 0.0, task_id="q1")
    first[0].memory_ids = list(shown.memory_ids)
    memory.observe_groups([[first]])
    failed, contexts = first, []
    for attempt in (1, 2, 3):
        (context,) = memory.reflect([failed], attempt)
        assert context is not None  # lessons, or a fresh retrieval: the task is retried
        contexts.append(context)
        failed = _traj(GOAL, [f"a{attempt}"], False, 0.0, task_id="q1")
        failed[0].memory_ids = list(context.memory_ids)
        memory.observe_retry(*failed, attempt, context)
    assert memory.reflect([failed], 4) == [None]  # no fifth trial (max_reflections 3)
    return contexts


def _analyses(llm: FakeLLM) -> list[str]:
    return [_user(r) for r in llm.requests if "failed the task" in _user(r)]


def _counts(memory: ReMe) -> dict[str, tuple[int, int]]:
    return {i: (e.retrievals, e.utility) for i, e in memory.pool.items.items()}


def test_selective_addition_summarises_every_trial_and_adds_none_of_the_failures():
    llm = FakeLLM(list(SCRIPT))
    memory = _memory(llm)
    lessons, fresh, lessons_again = _four_failed_trials(memory)
    # trial 1: the judged failure analysis of trial 0 in the lessons slot, nothing retrieved
    assert "a ticket cannot be closed twice" in lessons.slots["lessons"]
    assert lessons.memory_ids == []
    # trial 2: trial 1's analysis was rejected, so the retry retrieves afresh
    assert "lessons" not in fresh.slots and fresh.memory_ids == ["exp-1", "exp-2"]
    assert "a message needs a recipient" in lessons_again.slots["lessons"]
    # one failure analysis per trial, the last trial's included (a0 .. a3), in trial order
    analysed = _analyses(llm)
    assert [[f"did a{k}" in text for k in range(4)] for text in analysed] == [
        [k == trial for k in range(4)] for trial in range(4)
    ]
    assert "answer with a call instead" in _user(llm.requests[-1])  # the last one was judged
    assert len(memory.pool) == 3  # selective: no failed trial's lessons enter the pool
    # f counts the first attempt's and the fresh retrieval's recalls; lessons trials count none
    assert _counts(memory) == {"exp-1": (2, 0), "exp-2": (2, 0), "exp-3": (0, 0)}
    assert memory.counts["trials"] == 4
    metrics = memory.metrics()
    assert metrics["memory_last_trial_summaries"] == 1
    assert metrics["reflection_attempts"] == 3 and metrics["memory_added"] == 0


def test_full_addition_adds_every_trials_summary_and_shows_it_as_the_lessons():
    llm = FakeLLM(list(SCRIPT))
    memory = _memory(llm, addition="full")
    lessons, fresh, lessons_again = _four_failed_trials(memory)
    assert len(_analyses(llm)) == 4  # one summary per trial: the lessons are not asked twice
    added = {e.id: e.content for e in list(memory.pool.items.values())[3:]}
    # trials 0, 2 and 3 pass the judge and enter the pool, the last failed trial's included
    assert added == {
        "exp-4": "check the ticket status first",
        "exp-5": "name the recipient before sending",
        "exp-6": "answer with a call instead",
    }
    assert "check the ticket status first" in lessons.slots["lessons"]  # trial 0's, as added
    assert "name the recipient before sending" in lessons_again.slots["lessons"]
    # trial 1 added nothing: trial 2 retrieves afresh, from the grown pool
    assert "lessons" not in fresh.slots and fresh.memory_ids == ["exp-1", "exp-4"]
    assert _counts(memory)["exp-1"] == (2, 0) and _counts(memory)["exp-4"] == (1, 0)
    assert memory.metrics()["memory_last_trial_summaries"] == 0


def test_nothing_is_asked_after_the_last_trial_in_memarenas_earlier_reading():
    llm = FakeLLM(list(SCRIPT))
    memory = _memory(llm, summarize_last_trial=False)
    _four_failed_trials(memory)
    assert len(_analyses(llm)) == 3 and llm.answers == [A4, OK]  # trial 3 not analysed
    assert memory.metrics()["memory_last_trial_summaries"] == 0


@pytest.mark.parametrize("reading", [True, False])
def test_without_retries_the_only_trial_is_summarised_under_the_released_reading(reading):
    llm = FakeLLM([A1, OK])
    memory = _memory(llm, reflection=False, summarize_last_trial=reading)
    memory.observe_groups([[_traj(GOAL, ["a0"], False, 0.0, task_id="q1")]])
    assert len(_analyses(llm)) == int(reading) and len(memory.pool) == 3


def test_a_recorded_retry_shown_no_lessons_is_retrieved_again_on_resume():
    """A resume replays a recorded retry without running it: when that retry was shown a fresh
    retrieval (no lessons), the retrieval is made again at its attempt (its rerank / rewrite
    calls counted, the task's shown context set as live); a retry shown lessons retrieved
    nothing and replays nothing."""
    memory = _memory(FakeLLM())
    failed, _ = _traj(GOAL, ["a1"], False, 0.0, task_id="q1")
    memory.replay_retry_retrieval(failed, MemoryContext(slots={"lessons": "x"}))
    assert "q1" not in memory.shown
    memory.replay_retry_retrieval(failed, MemoryContext(slots={"experience": "y"}))
    live = _memory(FakeLLM()).retrieve(_query(GOAL))
    assert live.memory_ids and memory.shown["q1"].memory_ids == live.memory_ids
