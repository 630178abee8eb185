"""Voyager's skill library: written only on success, a name clash is a new version, top-5 by
description; the parity mode of G-Memory's code."""

from __future__ import annotations

import numpy as np
from baseline_helpers import answer, episode, query, services
from doubles import FakeLLM

from memarena.memory.voyager import Skill, SkillLibrary, Voyager


def _voyager(llm: FakeLLM, **kw) -> Voyager:
    return Voyager(services=services(llm), **kw)


def test_skills_are_written_only_from_successful_tasks():
    llm = FakeLLM([answer(name="stack_blocks", description="v:1,0,0")])
    memory = _voyager(llm, mode="faithful")
    lost = episode("v:1,0,0", False, "lost", actions=("x1",))
    memory.observe_groups([[lost], [episode("v:1,0,0", True, "won")]])
    assert len(llm.requests) == 1 and "x1" not in llm.requests[0].messages[-1]["content"]
    assert "- a1\n- a2" in llm.requests[0].messages[-1]["content"]  # the accepted actions only
    (skill,) = memory.library.skills.values()
    assert (skill.name, skill.program, skill.source) == ("stack_blocks", ["a1", "a2"], "won@1")
    assert memory.counts["skipped_failures"] == 1 and memory.size() == 1


def test_a_name_clash_is_a_new_version_that_replaces_the_old():
    answers = [answer(name="stack_blocks", description=f"v:1,{i},0") for i in range(3)]
    memory = _voyager(FakeLLM(answers), mode="faithful")
    for n in range(3):
        memory.observe(*episode("v:1,0,0", True, f"t{n}", actions=(f"act{n}",)))
    (skill,) = memory.library.skills.values()
    assert skill.name == "stack_blocksV3" and skill.program == ["act2"]
    assert [s.name for s in memory.library.replaced] == ["stack_blocks", "stack_blocksV2"]
    assert len(memory.library.index) == 1 and memory.metrics()["skill_versions"] == 2
    ctx = memory.retrieve(query("v:1,0,0"))
    assert ctx.memory_ids == ["stack_blocksV3"] and "1. act2" in ctx.slots["skills"]


def test_library_version_numbers_by_hand():
    library = SkillLibrary()
    v = np.ones(3, dtype=np.float32)
    assert library.add(Skill("open_door", 0, "d"), v).name == "open_door"
    assert library.add(Skill("open_door", 0, "d"), v).name == "open_doorV2"
    assert library.add(Skill("close_door", 0, "d"), v).name == "close_door"
    assert sorted(s.name for s in library.skills.values()) == ["close_door", "open_doorV2"]


def test_faithful_retrieves_the_top_five_by_description():
    names = [f"skill_{i}" for i in range(7)]
    descriptions = [f"v:1,{0.1 * i},0" for i in range(7)]
    llm = FakeLLM([answer(name=n, description=d) for n, d in zip(names, descriptions, strict=True)])
    memory = _voyager(llm, mode="faithful")
    memory.observe_groups([[episode("g", True, f"t{i}")] for i in range(7)])
    assert llm.batches == 1  # one batched call for the wave
    assert memory.retrieve(query("v:1,0,0")).memory_ids == names[:5]


def test_unusable_skill_answer_is_counted_and_named_after_the_task():
    llm = FakeLLM([answer(name="Bad Name!", description="x")])
    memory = _voyager(llm, mode="faithful")
    memory.observe(*episode("v:1,0,0", True, "T-1"))
    (skill,) = memory.library.skills.values()
    assert skill.name == "task_t_1_0" and skill.description == "v:1,0,0"
    assert memory.fallbacks == {"voyager_skill_fields": 1}


def test_parity_summarises_every_task_and_shows_the_top_solved_one(tmp_path):
    llm = FakeLLM([answer(summary=s) for s in ("v:1,0,0", "v:0.7,0.3,0", "v:0,1,0")])
    memory = _voyager(llm)
    memory.observe_groups(
        [[episode("a", False, "fail")], [episode("b", True, "near")], [episode("c", True, "far")]]
    )
    assert len(llm.requests) == 3 and memory.size() == 3
    ctx = memory.retrieve(query("v:1,0,0"))
    assert [i.split("@")[0] for i in ctx.memory_ids] == ["near"]
    memory.save(tmp_path)
    again = _voyager(FakeLLM())
    again.load(tmp_path)
    assert again.retrieve(query("v:1,0,0")) == ctx
