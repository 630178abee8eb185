"""MemRL as MemCo's released code ran it (``conf/method/memrl.yaml`` defaults): z(sim) with the
service's fixed statistics, the script from the trajectory alone at 0.7 and the reflection with
the goal at 0.3, the Task / SCRIPT / TRAJECTORY and reflection renderings, the global merge (one
intent per task, Q not carried over), global picks before local ones, seeded exploration while
frozen, and the empty intent table of ``eval_memory=empty_as_released``.

Goals ``v:a,b,c`` embed as [a, b, c] (:class:`doubles.FakeEmbedder`)."""

from __future__ import annotations

import dataclasses
import json

import pytest
from baseline_helpers import episode, query, services
from doubles import FakeLLM

from memarena.core import ConfigError, MemoryContext
from memarena.memory.memrl import MemRL, prompts, value_scores
from memarena.memory.memrl.method import temperatures

MEAN, STD = 0.1856827586889267, 0.09407906234264374  # MemoryService defaults
# the trajectory of baseline_helpers.episode, as MemRL keeps and shows it (no goal line)
TRAJECTORY = "you see a room\n> a1\nafter a1\n> a2\nafter a2\n> oops\nNothing happens."


def _memrl(answers=(), **kw) -> MemRL:
    return MemRL(services=services(FakeLLM(list(answers))), **kw)


def _stocked(qs, goals=("v:1,0,0", "v:0,1,0", "v:0.6,0.8,0"), **kw) -> MemRL:
    """One solved experience per goal (one intent each), Q set by hand."""
    memory = _memrl([json.dumps({"script": "s"})] * len(goals), **kw)
    memory.observe_groups([[episode(g, True, f"t{n}")] for n, g in enumerate(goals)])
    for experience, q in zip(memory.experiences.values(), qs, strict=True):
        experience.q = q
    return memory


def _ids(context) -> list[str]:
    return [i.split("@")[0] for i in context.memory_ids]


def test_defaults_are_memcos_run():
    memory = _memrl()
    assert memory.sim_stats == (MEAN, STD)
    assert memory.temperatures == {"script": 0.7, "reflection": 0.3}
    assert memory.epsilon == 0.1 and memory.explore_when_frozen
    assert memory.eval_memory == "learnt" and memory.has_global
    assert temperatures(0.0) == {"script": 0.0, "reflection": 0.0}  # one number: both
    with pytest.raises(ConfigError, match="script"):
        _memrl(temperature={"script": 0.7, "summary": 0.3})
    with pytest.raises(ConfigError, match="eval_memory"):
        _memrl(eval_memory="empty")


def test_fixed_statistics_score_on_three_intents_by_hand():
    """Query [0.8, 0.6, 0] against intents [1,0,0], [0,1,0], [0.6,0.8,0]: cos 0.8, 0.6, 0.96.
    z(sim) = (cos - 0.18568276) / 0.09407906, unclipped: 6.529798, 4.403926, 8.230495.
    Q 0, 1, -1: mean 0, population std sqrt(2/3) = 0.816497 -> z(Q) = 0, 1.224745, -1.224745.
    score = 0.5 z(sim) + 0.5 z(Q) = 3.264899, 2.814336, 3.502875 -> t2, t0, t1.
    With the candidates' own statistics (mean 0.786667, std 0.147271) z(sim) = 0.090536,
    -1.267500, 1.176965 and the scores 0.045268, -0.021378, -0.023890 rank t0, t1, t2."""
    memory = _stocked((0.0, 1.0, -1.0), top_k=3, epsilon=0.0, eval_memory="learnt")
    sims = [s for _, s in memory.candidates(memory.encode_queries(["v:0.8,0.6,0"])[0])]
    assert sorted(sims) == pytest.approx([0.6, 0.8, 0.96], abs=1e-6)
    fixed = value_scores([0.8, 0.6, 0.96], [0.0, 1.0, -1.0], sim_stats=(MEAN, STD))
    assert fixed == pytest.approx([3.264899, 2.814336, 3.502875], abs=1e-5)
    own = value_scores([0.8, 0.6, 0.96], [0.0, 1.0, -1.0])
    assert own == pytest.approx([0.045268, -0.021378, -0.023890], abs=1e-5)
    assert _ids(memory.retrieve(query("v:0.8,0.6,0"))) == ["t2", "t0", "t1"]
    paper = _stocked((0.0, 1.0, -1.0), top_k=3, epsilon=0.0, eval_memory="learnt", sim_mean=None,
                     sim_std=None)  # fmt: skip
    assert _ids(paper.retrieve(query("v:0.8,0.6,0"))) == ["t0", "t1", "t2"]


def test_script_from_the_trajectory_alone_and_reflection_with_the_goal():
    llm = FakeLLM([json.dumps({"script": "open the fridge"}), json.dumps({"reflection": "r"})])
    memory = MemRL(services=services(llm), eval_memory="learnt")
    memory.observe_groups([[episode("v:1,0,0", True, "won")], [episode("v:0,1,0", False, "lost")]])
    script, reflection = llm.requests  # one batched call per purpose, script first
    assert script.temperature == 0.7 and reflection.temperature == 0.3
    assert TRAJECTORY in script.messages[1]["content"]
    assert "v:1,0,0" not in script.messages[1]["content"]  # the goal is not given apart
    assert "Task: v:0,1,0" in reflection.messages[1]["content"]
    assert TRAJECTORY in reflection.messages[1]["content"]


def test_rendering_of_a_success_and_a_failure():
    llm = FakeLLM([json.dumps({"script": "open the fridge"}), json.dumps({"reflection": "look"})])
    memory = MemRL(services=services(llm), epsilon=0.0, eval_memory="learnt")
    memory.observe_groups([[episode("v:1,0,0", True, "won")], [episode("v:0,1,0", False, "lost")]])
    context = memory.retrieve(query("v:1,1,0"))  # cos 0.707 to both intents
    assert context.slots["memrl_successes"] == (
        f"{prompts.SUCCESS_HEADER}\n\nTask: v:1,0,0\n\nSCRIPT:\nopen the fridge\n\n"
        f"TRAJECTORY:\n{TRAJECTORY}"
    )
    assert context.slots["memrl_failures"] == (
        f"{prompts.FAILURE_HEADER}\n\nReflection on a failed task\nTask: v:0,1,0\n\n"
        f"What went wrong:\nlook\n\nFailed approach:\n{TRAJECTORY}"
    )
    assert list(context.slots) == ["memrl_successes", "memrl_failures"]


def _domain(goals_and_outcomes, qs, **kw) -> MemRL:
    answers = [json.dumps({"script": "s"}), json.dumps({"reflection": "r"})] * 4
    memory = _memrl(answers, epsilon=0.0, eval_memory="learnt", **kw)
    memory.observe_groups(
        [[episode(g, ok, f"{tid}")] for tid, g, ok in goals_and_outcomes]
    )  # fmt: skip
    for experience, q in zip(memory.experiences.values(), qs, strict=True):
        experience.q = q
    return memory


def test_merge_makes_one_intent_per_task_and_carries_no_q():
    # a: "v:1,0,0" and "v:1,0,0.05" (cos 0.9988 >= 0.9: one intent in a)
    a = _domain([("a0", "v:1,0,0", True), ("a1", "v:1,0,0.05", True)], (0.4, 0.7))
    b = _domain([("b0", "v:0,1,0", False), ("b1", "v:1,0,0", True)], (-0.3, 0.2))
    assert len(a.intents) == 1 and len(b.intents) == 2
    merged = _memrl(eval_memory="learnt")
    merged.merge_domains({"a": a, "b": b})
    # one intent per task text; b1 has a0's text and replaces it (a later task wins)
    assert sorted(merged.intent_text.values()) == ["v:0,1,0", "v:1,0,0", "v:1,0,0.05"]
    assert all(len(ids) == 1 for ids in merged.intents.values())
    assert sorted(merged.experiences) == ["a/a1@1", "b/b0@0", "b/b1@1"]
    assert merged.counts["replaced"] == 1 and merged.clock == 4
    assert all(e.q == 0.0 and e.visits == 0 for e in merged.experiences.values())  # q_init
    assert merged.experiences["b/b0@0"].note == "r" and not merged.experiences["b/b0@0"].success
    # the domain memories are untouched
    assert [e.q for e in a.experiences.values()] == [0.4, 0.7]
    assert [e.q for e in b.experiences.values()] == [-0.3, 0.2]


def test_retrieve_in_team_shows_global_picks_first_then_local():
    local = _domain([("l0", "v:1,0,0", True), ("l1", "v:0.9,0.1,0", False)], (0.5, 0.0))
    other = _domain([("g0", "v:0.95,0.05,0", True), ("g1", "v:1,0.2,0", False)], (0.0, 0.0))
    glob = _memrl(epsilon=0.0, eval_memory="learnt")
    glob.merge_domains({"x": other})
    glob.freeze()
    local.freeze()
    context = local.retrieve_in_team(query("v:1,0.05,0"), glob)
    assert context.memory_ids == ["x/g0@0", "x/g1@1", "l0@0", "l1@1"]
    successes, failures = context.slots["memrl_successes"], context.slots["memrl_failures"]
    assert successes.index("Task: v:0.95,0.05,0") < successes.index("Task: v:1,0,0")
    assert failures.index("Task: v:1,0.2,0") < failures.index("Task: v:0.9,0.1,0")
    assert local.retrieve_in_team(query("v:1,0.05,0"), None) == local.retrieve(
        query("v:1,0.05,0")
    )  # fmt: skip


def test_exploration_also_when_frozen_and_seeded():
    memory = _stocked((0.0, 1.0, -1.0), top_k=1, epsilon=1.0, eval_memory="learnt")
    memory.freeze()
    draws = [memory.retrieve(query("v:1,0,0", f"q{n}")).memory_ids for n in range(12)]
    assert len({tuple(d) for d in draws}) > 1 and memory.counts["explorations"] == 12
    twin = _stocked((0.0, 1.0, -1.0), top_k=1, epsilon=1.0, eval_memory="learnt")
    twin.freeze()
    assert [twin.retrieve(query("v:1,0,0", f"q{n}")).memory_ids for n in range(12)] == draws
    # epsilon 0.1 over 40 frozen retrievals: the draws seeded by (seed 0, clock 3, task id)
    # explore in 4 of them, in every run
    memory.epsilon, memory.counts["explorations"] = 0.1, 0
    for n in range(40):
        memory.retrieve(query("v:1,0,0", f"q{n}"))
    assert memory.counts["explorations"] == 4
    greedy = _stocked((0.0, 1.0, -1.0), top_k=1, epsilon=1.0, eval_memory="learnt",
                      explore_when_frozen=False)  # fmt: skip
    greedy.freeze()
    assert {tuple(greedy.retrieve(query("v:1,0,0", f"q{n}")).memory_ids) for n in range(6)} == {
        ("t0@0",)
    }  # fmt: skip


def test_empty_as_released_evaluates_with_no_memory():
    memory = _stocked((0.0, 1.0, -1.0), epsilon=0.0, eval_memory="empty_as_released")
    glob = _memrl(epsilon=0.0, eval_memory="empty_as_released")
    glob.merge_domains({"d": memory})
    assert memory.retrieve(query("v:1,0,0")).memory_ids  # acquisition reads its memory
    memory.freeze()
    memory.begin_phase("eval")
    assert memory.retrieve(query("v:1,0,0")) == MemoryContext.empty()
    assert memory.retrieve_in_team(query("v:1,0,0"), glob).memory_ids == []
    assert memory.retrieve_batch([query("v:0,1,0"), query("v:1,0,0")])[1].slots == {}
    assert memory.metrics()["memory_eval_reads_empty"] is True
    assert memory.size() == 3  # what acquisition learnt is still there (and in the snapshot)
    learnt = _stocked((0.0, 1.0, -1.0), epsilon=0.0, eval_memory="learnt")
    learnt.freeze()
    learnt.begin_phase("eval")
    assert learnt.retrieve_in_team(query("v:1,0,0"), glob).memory_ids[0] == "d/t0@0"
    unfrozen = _stocked((0.0, 1.0, -1.0), eval_memory="empty_as_released")
    unfrozen.begin_phase("eval")
    with pytest.raises(ConfigError, match="freeze_during_eval"):
        unfrozen.observe(*episode("v:1,0,0", True, "x"))


def test_stored_observations_are_whole_as_released_and_cut_one_key_away():
    """memrl_mas.py hands MemoryService the trajectory text whole (observation_chars: null);
    300 is memarena's earlier cut, one key away."""
    long = "the fridge holds " + ", ".join(f"item {i}" for i in range(60)) + "."
    answers = [json.dumps({"script": "s"})]
    whole = _memrl(answers, eval_memory="learnt")
    cut = _memrl(answers, eval_memory="learnt", observation_chars=300)
    for memory in (whole, cut):
        trajectory, outcome = episode("v:1,0,0", True, "won")
        trajectory = dataclasses.replace(
            trajectory, steps=[dataclasses.replace(trajectory.steps[0], observation=long)]
        )
        memory.observe_groups([[(trajectory, outcome)]])
    (kept,) = whole.experiences.values()
    (clipped,) = cut.experiences.values()
    assert long in kept.trajectory
    assert long not in clipped.trajectory and long[:297] + "..." in clipped.trajectory

