"""MemRL: the Q update and the z-score mix on a 3-intent example worked by hand (z(sim) over
the candidates: ``sim_mean: null``), intent thresholds and merging, epsilon-greedy only while
learning (``explore_when_frozen: false``). MemCo's settings: ``test_memrl_memco.py``."""

from __future__ import annotations

import json

import numpy as np
import pytest
from baseline_helpers import episode, query, services
from doubles import FakeLLM

from memarena.core import MemoryFrozenError
from memarena.memory.memrl import MemRL, q_update, value_scores, zscores


def _memrl(llm: FakeLLM, **kw) -> MemRL:
    return MemRL(services=services(llm), **kw)


def test_q_update_by_hand():
    # Q <- (1 - 0.1) Q + 0.1 r: 0 -> 0.1 -> 0.19 after two successes, then 0.071 after a failure
    q = q_update(0.0, 1.0, 0.1)
    assert q == pytest.approx(0.1)
    q = q_update(q, 1.0, 0.1)
    assert q == pytest.approx(0.19)
    assert q_update(q, -1.0, 0.1) == pytest.approx(0.071)


def test_zscores_clip_and_constant_case():
    assert zscores([1.0, 1.0]) == [0.0, 0.0]
    # mean 1, population std sqrt(2/3): z = -1.2247, 0, 1.2247
    assert zscores([0.0, 1.0, 2.0]) == pytest.approx([-1.224745, 0.0, 1.224745])
    assert max(zscores([0.0] * 20 + [100.0])) == 3.0  # z = 4.47, clipped


def test_value_scores_on_three_intents_by_hand():
    """sims 0.9, 0.7, 0.5 -> z = 1.224745, 0, -1.224745; Q -0.5, 0.5, 0.9 (mean 0.3,
    population std sqrt(1.04 / 3) = 0.588784) -> z = -1.358732, 0.339683, 1.019049;
    score = 0.5 z_sim + 0.5 z_Q = -0.066994, 0.169842, -0.102848."""
    scores = value_scores([0.9, 0.7, 0.5], [-0.5, 0.5, 0.9])
    assert scores == pytest.approx([-0.066994, 0.169842, -0.102848], abs=1e-5)
    # the fixed corpus statistics of MemRL's ALFWorld config: z_sim unclipped
    fixed = value_scores([0.9], [0.0], sim_stats=(0.5187, 0.1203))
    assert fixed == pytest.approx([0.5 * (0.9 - 0.5187) / 0.1203])


def _stocked(**kw) -> MemRL:
    """Three intents ([1,0,0], [0,1,0], [0.6,0.8,0]), one experience each, Q set by hand."""
    llm = FakeLLM([json.dumps({"script": "s"})] * 3)
    kw = {"sim_mean": None, "sim_std": None, "eval_memory": "learnt", **kw}
    memory = _memrl(llm, epsilon=0.0, **kw)
    goals = ["v:1,0,0", "v:0,1,0", "v:0.6,0.8,0"]
    memory.observe_groups([[episode(g, True, f"t{n}")] for n, g in enumerate(goals)])
    for experience, q in zip(memory.experiences.values(), (-0.5, 0.9, 0.5), strict=True):
        experience.q = q
    return memory


def test_retrieval_keeps_intents_above_tau_and_ranks_by_value():
    memory = _stocked(top_k=2)
    assert memory.metrics()["memory_intents"] == 3
    # query [0.8, 0.6, 0]: cos 0.8 (t0), 0.6 (t1), 0.96 (t2); tau 0.5 keeps all three
    # z_sim: 0.8, 0.6, 0.96 -> mean 0.786667, std 0.147271 -> 0.090536, -1.267504, 1.176968
    # z_Q: -0.5, 0.9, 0.5 -> -1.358732, 1.019049, 0.339683
    # score: -0.634098, -0.124226, 0.758324 -> t2, t1
    ids = memory.retrieve(query("v:0.8,0.6,0")).memory_ids
    assert [i.split("@")[0] for i in ids] == ["t2", "t1"]
    memory.tau = 0.7  # t1's intent (0.6) falls below tau
    ids = memory.retrieve(query("v:0.8,0.6,0")).memory_ids
    assert [i.split("@")[0] for i in ids] == ["t2", "t0"]


def test_shown_experiences_are_updated_and_the_task_merges_into_its_intent():
    memory = _stocked(top_k=1)
    shown = memory.retrieve(query("v:0.6,0.8,0")).memory_ids
    assert [i.split("@")[0] for i in shown] == ["t2"]
    trajectory, outcome = episode("v:0.6,0.8,0", False, "new")
    trajectory.memory_ids = list(shown)
    memory.services.llm.answers = [json.dumps({"reflection": "check the order"})]
    memory.observe(trajectory, outcome)
    assert memory.experiences[shown[0]].q == pytest.approx(0.9 * 0.5 - 0.1)  # r = -1
    assert memory.experiences[shown[0]].visits == 1
    new = memory.experiences["new@3"]
    assert new.intent == memory.experiences[shown[0]].intent  # cosine 1 >= 0.9: merged
    assert new.note == "check the order" and not new.success
    ctx = memory.retrieve(query("v:0.6,0.8,0"))
    assert "memrl_failures" in ctx.slots or "memrl_successes" in ctx.slots


def test_exploration_only_while_learning_and_reproducible():
    memory = _stocked(top_k=1, explore_when_frozen=False)
    memory.epsilon = 1.0  # always explore while learning
    draws = {tuple(memory.retrieve(query("v:1,0,0", f"q{n}")).memory_ids) for n in range(12)}
    assert len(draws) > 1 and memory.counts["explorations"] == 12
    again = [memory.retrieve(query("v:1,0,0", "q0")).memory_ids for _ in range(3)]
    assert again[0] == again[1] == again[2]  # seeded by (seed, clock, task id)
    memory.freeze()
    frozen = {tuple(memory.retrieve(query("v:1,0,0", f"q{n}")).memory_ids) for n in range(6)}
    assert frozen == {("t0@0",)}  # greedy: the value-aware best
    with pytest.raises(MemoryFrozenError):
        memory.observe(*episode("v:1,0,0", True, "x"))


def test_snapshot_roundtrip(tmp_path):
    memory = _stocked()
    memory.save(tmp_path)
    again = _memrl(FakeLLM(), epsilon=0.0, sim_mean=None, sim_std=None, eval_memory="learnt")
    again.load(tmp_path)
    q = query("v:0.5,0.5,0")
    assert again.retrieve(q) == memory.retrieve(q)
    assert np.isclose(again.metrics()["memory_mean_q"], memory.metrics()["memory_mean_q"])
