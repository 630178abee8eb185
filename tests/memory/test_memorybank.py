"""MemoryBank: the forgetting curve R = exp(-t/S) worked by hand, recall strengthening,
forgetting at the threshold, and the parity mode of G-Memory's code."""

from __future__ import annotations

import math

import pytest
from baseline_helpers import answer, episode, query, services
from doubles import FakeLLM

from memarena.core import ConfigError, MemoryFrozenError
from memarena.memory.memorybank import MemoryBank, retention


def _bank(llm: FakeLLM, **kw) -> MemoryBank:
    return MemoryBank(services=services(llm), **kw)


def _summaries(*keys: str) -> list[str]:
    return [answer(summary=k) for k in keys]


def test_retention_is_the_papers_exp_minus_t_over_s():
    assert retention(0, 1) == 1.0
    assert retention(1, 1) == pytest.approx(0.367879, abs=1e-6)  # e^-1
    assert retention(2, 2) == pytest.approx(0.367879, abs=1e-6)  # e^(-2/2)
    assert retention(3, 2) == pytest.approx(0.223130, abs=1e-6)  # e^-1.5
    # the released code's exp(-t / 5 * S) would give e^(-3/5*2) = 0.301 here: not used
    assert retention(3, 2) != pytest.approx(math.exp(-3 / 5 * 2))


def test_retention_after_k_tasks_and_one_recall_forgets_in_the_worked_order():
    """A written at task 0 (S=1). Clock 1: R_A = e^-1 = 0.368 >= 0.3, kept; a recall at clock 1
    sets S_A = 2, t_A = 0. B at task 1, C at task 2, D at task 3 (S=1 each, never recalled).
    Clock 3: R_A = e^(-2/2) = 0.368 kept, R_B = e^-2 = 0.135 forgotten, R_C = e^-1 kept.
    Clock 4: R_A = e^(-3/2) = 0.223 forgotten, R_C = e^-2 forgotten, R_D = e^-1 kept."""
    llm = FakeLLM(_summaries("v:1,0,0", "v:0,1,0", "v:0,0,1", "v:1,1,0"))
    bank = _bank(llm, mode="faithful", overview=False, top_k=1)
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
    at = _bank(llm, mode="faithful", overview=False, forget_threshold=math.exp(-1))
    at.observe(*episode("v:1,0,0", True, "A"))  # clock 1: R = e^-1, exactly the threshold
    assert len(at.tasks) == 1
    above = _bank(FakeLLM(_summaries("v:1,0,0")), mode="faithful", overview=False,
                  forget_threshold=math.exp(-1) + 1e-9)  # fmt: skip
    above.observe(*episode("v:1,0,0", True, "A"))
    assert not above.tasks and above.counts["forgotten"] == 1


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
