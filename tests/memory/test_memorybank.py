"""MemoryBank: the forgetting curve R = exp(-t/S) worked by hand, recall strengthening,
forgetting at the threshold, and the parity mode of G-Memory's code."""

from __future__ import annotations

import math

import pytest
from baseline_helpers import answer, episode, query, services
from doubles import FakeLLM

from memarena.core import ConfigError, MemoryFrozenError
from memarena.memory.memorybank import MemoryBank, retention
from memarena.memory.memorybank.forgetting import days_between


def _bank(llm: FakeLLM, **kw) -> MemoryBank:
    return MemoryBank(services=services(llm), **kw)


def _summaries(*keys: str) -> list[str]:
    return [answer(summary=k) for k in keys]


def test_retention_is_the_papers_exp_minus_t_over_s():
    assert retention(0, 1) == 1.0
    assert retention(1, 1) == pytest.approx(0.367879, abs=1e-6)  # e^-1
    assert retention(2, 2) == pytest.approx(0.367879, abs=1e-6)  # e^(-2/2)
    assert retention(3, 2) == pytest.approx(0.223130, abs=1e-6)  # e^-1.5
    # G-Memory's exp(-dt / 5 * scale), read with scale as S, would give e^(-3/5*2) = 0.301: not used
    assert retention(3, 2) != pytest.approx(math.exp(-3 / 5 * 2))


def test_task_index_clock_forgets_in_the_worked_order():
    """tasks_per_day=1, the clock is the task index. A written at task 0 (S=1). Clock 1:
    R_A = e^-1 = 0.368 >= 0.3, kept; a recall at clock 1 sets S_A = 2, t_A = 0. B at task 1,
    C at task 2, D at task 3 (S=1 each, never recalled).
    Clock 3: R_A = e^(-2/2) = 0.368 kept, R_B = e^-2 = 0.135 forgotten, R_C = e^-1 kept.
    Clock 4: R_A = e^(-3/2) = 0.223 forgotten, R_C = e^-2 forgotten, R_D = e^-1 kept."""
    llm = FakeLLM(_summaries("v:1,0,0", "v:0,1,0", "v:0,0,1", "v:1,1,0"))
    bank = _bank(llm, mode="faithful", overview=False, top_k=1, tasks_per_day=1)
    bank.observe(*episode("v:1,0,0", True, "A"))
    (a,) = bank.tasks
    assert bank.clock == 1 and bank.retention_of(a) == pytest.approx(math.exp(-1))
    shown = bank.retrieve(query("v:1,0,0"))
    assert shown.memory_ids == [a] and bank.strength[a] == 2.0 and bank.last_recall[a] == 1
    bank.observe(*episode("v:0,1,0", False, "B"))
    assert bank.retention_of(a) == pytest.approx(math.exp(-0.5)) and len(bank.tasks) == 2
    bank.observe(*episode("v:0,0,1", True, "C"))
    assert sorted(t.split("@")[0] for t in bank.tasks) == ["A", "C"]
    assert bank.retention_of(a) == pytest.approx(math.exp(-1))
    bank.observe(*episode("v:1,1,0", True, "D"))
    assert [t.split("@")[0] for t in bank.tasks] == ["D"]
    assert bank.metrics()["memory_forgotten"] == 3 and bank.metrics()["memory_recalls"] == 1
    assert len(bank.index) == 1


def test_forgetting_at_the_threshold_keeps_equal_and_drops_below():
    llm = FakeLLM(_summaries("v:1,0,0", "v:0,1,0"))
    day = {"mode": "faithful", "overview": False, "tasks_per_day": 1}
    at = _bank(llm, forget_threshold=math.exp(-1), **day)
    at.observe(*episode("v:1,0,0", True, "A"))  # clock 1: R = e^-1, exactly the threshold
    assert len(at.tasks) == 1
    above = _bank(FakeLLM(_summaries("v:1,0,0")), forget_threshold=math.exp(-1) + 1e-9, **day)
    above.observe(*episode("v:1,0,0", True, "A"))
    assert not above.tasks and above.counts["forgotten"] == 1


def _stream(bank: MemoryBank, goals: list[str], prefix: str) -> list[list[str]]:
    """Observe one task per goal, in order; after each, the surviving ids (sorted)."""
    seen = []
    for n, goal in enumerate(goals):
        bank.observe(*episode(goal, True, f"{prefix}{n}"))
        seen.append(sorted(i.split("@")[0] for i in bank.tasks))
    return seen


def test_days_between_counts_whole_days_of_tasks():
    # tasks_per_day=5: tasks 0-4 are day 0, 5-9 day 1, 10-14 day 2
    assert days_between(0, 4, 5) == 0  # same day: no decay (one date in the paper's code)
    assert days_between(4, 5, 5) == 1 and days_between(0, 9, 5) == 1
    assert days_between(3, 10, 5) == 2 and days_between(9, 15, 5) == 2
    assert days_between(7, 3, 5) == 0  # never negative
    assert [days_between(2, n, 1) for n in (2, 3, 5)] == [0, 1, 3]  # 1: the task index
    with pytest.raises(ValueError):
        days_between(0, 1, 0)


def test_default_clock_is_five_tasks_a_day_and_retention_is_worked_in_days():
    """A written at task 0 (day 0, S=1). Task about to run 4: t=0, R=1; 5 and 9: t=1 day,
    R=e^-1=0.368; 10: t=2, R=e^-2=0.135. Recalled at task 6 (day 1): S=2, t counts from day 1;
    task 14 (day 2): t=1, R=e^-0.5=0.607; 15: t=2, R=e^-1; 20: t=3, R=e^-1.5=0.223."""
    llm = FakeLLM(_summaries("v:1,0,0", *["v:0,1,0"] * 5))
    bank = _bank(llm, mode="faithful", overview=False, top_k=1)
    assert bank.tasks_per_day == 5
    bank.observe(*episode("v:1,0,0", True, "A"))
    (a,) = bank.tasks
    expected = {1: 1.0, 4: 1.0, 5: math.exp(-1), 9: math.exp(-1), 10: math.exp(-2)}
    for now, r in expected.items():
        assert bank.retention_of(a, now=now) == pytest.approx(r), now
    _stream(bank, ["v:0,1,0"] * 5, "F")  # tasks 1-5: the task about to run is task 6
    bank.retrieve(query("v:1,0,0"))
    assert bank.strength[a] == 2.0 and bank.last_recall[a] == 6
    expected = {9: 1.0, 14: math.exp(-0.5), 15: math.exp(-1), 20: math.exp(-1.5)}
    for now, r in expected.items():
        assert bank.retention_of(a, now=now) == pytest.approx(r), now


def test_memory_never_recalled_lives_through_the_next_day_and_goes_on_the_second():
    """tasks_per_day=5, S=1, threshold 0.3, no recall. Tasks 0-4 are day 0, 5-9 day 1. After
    task 9 the next task (10) is on day 2: day-0 memories have t=2, R=e^-2=0.135 < 0.3, gone
    (task 4, written last on day 0, goes with task 0); day-1 memories have t=1, R=e^-1, kept.
    So a memory of day d is shown to tasks up to the end of day d+1 (5 to 9 tasks later)."""
    goals = [f"v:{n + 1},1,0" for n in range(11)]
    bank = _bank(FakeLLM(_summaries(*goals)), mode="faithful", overview=False)
    seen = _stream(bank, goals, "T")
    assert seen[8] == sorted(f"T{n}" for n in range(9))  # next task 9, day 1: all kept
    assert seen[9] == sorted(f"T{n}" for n in range(5, 10))  # next task 10, day 2: 0-4 gone
    assert seen[10] == sorted(f"T{n}" for n in range(5, 11))
    assert bank.counts["forgotten"] == 5 and bank.counts["recalls"] == 0
    # the task-index clock (tasks_per_day=1) forgets the same stream two tasks later
    index = _bank(FakeLLM(_summaries(*goals)), mode="faithful", overview=False, tasks_per_day=1)
    assert _stream(index, goals[:3], "T") == [["T0"], ["T1"], ["T2"]]  # t=2: R=e^-2 < 0.3


def test_memory_recalled_once_survives_two_days_after_the_recall():
    """tasks_per_day=5. A written at task 0 (day 0) and recalled once by task 1 (day 0): S=2.
    Fillers F0..F12 (tasks 1-13) and G0 (task 14), never recalled. Next task 14 (day 2): A has
    t=2 days, R=e^(-2/2)=0.368 >= 0.3, kept (the unrecalled day-0 fillers went at task 10,
    e^-2). Next task 15 (day 3): t=3, R=e^-1.5=0.223 < 0.3, A is gone. So one recall keeps A
    shown through the end of day 2 (task 14); the task-index clock drops it at task 4 (t=3
    tasks since the recall, e^-1.5)."""
    fillers = [f"v:0,1,{n}" for n in range(1, 15)]
    bank = _bank(FakeLLM(_summaries("v:1,0,0", *fillers)), mode="faithful", overview=False,
                 top_k=1)  # fmt: skip
    bank.observe(*episode("v:1,0,0", True, "A"))
    (a,) = bank.tasks
    assert bank.retrieve(query("v:1,0,0")).memory_ids == [a]  # the recall: task 1, day 0
    assert bank.strength[a] == 2.0 and bank.last_recall[a] == 1
    seen = _stream(bank, fillers[:13], "F")  # tasks 1-13
    assert bank.clock == 14 and bank.retention_of(a) == pytest.approx(math.exp(-1))
    assert seen[-1] == sorted(["A", *(f"F{n}" for n in range(4, 13))])  # F0-F3 (day 0) gone
    assert bank.retention_of(a, now=15) == pytest.approx(math.exp(-1.5))
    _stream(bank, fillers[13:], "G")  # task 14
    assert "A" not in [i.split("@")[0] for i in bank.tasks]
    assert sorted(i.split("@")[0] for i in bank.tasks) == ["F10", "F11", "F12", "F9", "G0"]
    assert bank.counts["forgotten"] == 4 + 1 + 5 and bank.counts["recalls"] == 1


def test_tasks_per_day_must_be_a_whole_number_of_tasks():
    for bad in (0, 2.5, True):
        with pytest.raises(ConfigError, match="method.tasks_per_day"):
            _bank(FakeLLM(), mode="faithful", tasks_per_day=bad)


def test_faithful_shows_failures_the_overview_and_frozen_recall_changes_nothing():
    llm = FakeLLM([*_summaries("v:1,0,0", "v:0.9,0.1,0"), answer(summary="tasks about v")])
    bank = _bank(llm, mode="faithful", top_k=2, forget_threshold=0.0)
    bank.observe_groups([[episode("v:1,0,0", False, "A")], [episode("v:0.9,0.1,0", True, "B")]])
    assert llm.batches == 2  # one batched summary call for the wave, one overview call
    bank.freeze()
    before = dict(bank.strength)
    ctx = bank.retrieve(query("v:1,0,0"))
    assert ctx.memory_ids[0] == "overview" and len(ctx.memory_ids) == 3
    assert "tasks about v" in ctx.slots["memory_overview"]
    assert "failed" in ctx.slots["past_tasks"] and "Summary: v:1,0,0" in ctx.slots["past_tasks"]
    assert bank.strength == before  # frozen: a recall does not strengthen
    with pytest.raises(MemoryFrozenError):
        bank.observe(*episode("v:1,0,0", True, "C"))
    assert bank.history_steps is None  # faithful: the protocol's window


def test_parity_keys_by_summary_shows_the_top_solved_task_and_a_seven_step_window():
    llm = FakeLLM(_summaries("v:1,0,0", "v:0.8,0.2,0", "v:0,1,0"))
    bank = _bank(llm)
    assert bank.history_steps == 7 and bank.top_k == 1
    waves = [
        [episode("x", False, "fail")],
        [episode("y", True, "near")],
        [episode("z", True, "far")],
    ]
    bank.observe_groups(waves)
    assert llm.batches == 1 and len(llm.requests) == 3  # every task summarised, one call
    ctx = bank.retrieve(query("v:1,0,0"))  # the failed task is most similar but never shown
    assert [i.split("@")[0] for i in ctx.memory_ids] == ["near"]
    assert "Task: y (solved)" in ctx.slots["past_tasks"] and "> a1" in ctx.slots["past_tasks"]
    assert bank.metrics()["memory_forgotten"] == 0


def test_malformed_summary_is_counted_and_the_goal_keys_the_task(tmp_path):
    llm = FakeLLM(["not json"])
    bank = _bank(llm)
    bank.observe(*episode("v:0,1,0", True, "A"))
    assert bank.fallbacks == {"memorybank_summary": 1}
    assert list(bank.summaries.values()) == ["v:0,1,0"]
    bank.save(tmp_path)
    again = _bank(FakeLLM())
    again.load(tmp_path)
    q = query("v:0,1,0")
    assert again.retrieve(q).slots == bank.retrieve(q).slots


def test_bad_mode_is_a_config_error():
    with pytest.raises(ConfigError, match="method.mode"):
        _bank(FakeLLM(), mode="original")
