"""MemSkill: the four memory operations, skill-bank changes, the controller -> executor flow
batched per wave, the designer from hard cases, and the eval-time top-k."""

from __future__ import annotations

import json

import numpy as np
from baseline_helpers import episode, query, services
from doubles import FakeLLM

from memarena.memory.memskill import ItemBank, MemSkill, SkillBank


def _embed(text: str) -> np.ndarray:
    return np.asarray([len(text), 1.0, 0.0], dtype=np.float32)


def test_the_four_operations():
    bank = ItemBank()
    assert bank.apply({"op": "INSERT", "content": "fridge holds apples"}, [], _embed) == "insert"
    assert bank.apply({"op": "insert", "content": "sink is in kitchen"}, [], _embed) == "insert"
    assert bank.items == {"m1": "fridge holds apples", "m2": "sink is in kitchen"}
    shown = ["m2", "m1"]  # numbered 1, 2 for the executor
    assert bank.apply({"op": "UPDATE", "index": 2, "content": "fridge 1 holds apples"}, shown,
                      _embed) == "update"  # fmt: skip
    assert bank.items["m1"] == "fridge 1 holds apples" and len(bank.index) == 2
    assert bank.apply({"op": "DELETE", "index": 1}, shown, _embed) == "delete"
    assert list(bank.items) == ["m1"] and bank.index.ids == ["m1"]
    assert bank.apply({"op": "NOOP"}, shown, _embed) == "noop"
    # a gone item, an index out of range, an empty insert: invalid, nothing changes
    assert bank.apply({"op": "DELETE", "index": 1}, shown, _embed) == "invalid"
    assert bank.apply({"op": "UPDATE", "index": 3, "content": "x"}, shown, _embed) == "invalid"
    assert bank.apply({"op": "INSERT", "content": " "}, shown, _embed) == "invalid"
    assert bank.items == {"m1": "fridge 1 holds apples"}


def test_skill_bank_add_refine_and_capacity():
    bank = SkillBank(max_skills=5)
    assert sorted(bank.skills) == ["delete", "insert", "noop", "update"]
    add = {"action": "add", "name": "track_locations", "op": "insert",
           "description": "d", "instruction": "i"}  # fmt: skip
    assert bank.change(add) == "track_locations" and bank.skills["track_locations"].op == "insert"
    assert bank.change({**add, "name": "another"}) is None  # full (5 skills)
    assert bank.change({**add, "op": "teleport"}) is None
    refine = {"action": "refine", "name": "insert", "description": "d2", "instruction": "i2"}
    assert bank.change(refine) == "insert"
    assert (bank.skills["insert"].instruction, bank.skills["insert"].version) == ("i2", 2)
    assert bank.change({"action": "refine", "name": "missing", "description": "d",
                        "instruction": "i"}) is None  # fmt: skip


def test_controller_then_executor_in_one_batched_call_each():
    llm = FakeLLM()
    memory = MemSkill(services=services(llm), design_every=100)
    llm.answers = [
        json.dumps({"skills": ["insert", "noop"]}),
        json.dumps({"skills": ["not_a_skill"]}),  # unusable: the bank's first 3 skills
        json.dumps({"operations": [{"op": "INSERT", "content": "keep the rule"}]}),
        json.dumps({"operations": [{"op": "DELETE", "index": 4}, {"op": "NOOP"}]}),
    ]
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", False, "b")]])
    assert llm.batches == 2 and [len(r.messages) for r in llm.requests] == [2, 2, 2, 2]
    executor_prompt = llm.requests[2].messages[-1]["content"]
    assert "[insert]" in executor_prompt and "[noop]" in executor_prompt
    assert "[delete]" not in executor_prompt  # only the selected skills' instructions
    assert memory.counts["insert"] == 1 and memory.counts["invalid"] == 1
    assert memory.counts["noop"] == 1 and memory.fallbacks == {"memskill_controller_skills": 1}
    assert memory.skills.skills["insert"].uses == 2 and len(memory.hard) == 1


def test_designer_runs_every_design_every_tasks_from_hard_cases(tmp_path):
    llm = FakeLLM()
    memory = MemSkill(services=services(llm), design_every=2)
    change = {"action": "add", "name": "note_failures", "op": "insert",
              "description": "d", "instruction": "i"}  # fmt: skip
    llm.answers = ["{}", "{}", "{}", "{}", json.dumps({"changes": [change]})]
    memory.observe_groups([[episode("g", False, "a")], [episode("g", False, "b")]])
    assert memory.counts["designs"] == 1 and "note_failures" in memory.skills.skills
    assert "Hard cases" in llm.requests[-1].messages[-1]["content"]
    memory.save(tmp_path)
    again = MemSkill(services=services(FakeLLM()))
    again.load(tmp_path)
    assert again.state_dict() == memory.state_dict()


def test_eval_shows_top_k_eval_items():
    memory = MemSkill(services=services(FakeLLM()), top_k=1, top_k_eval=3)
    for n in range(4):
        memory.memory.apply({"op": "INSERT", "content": f"v:1,{n},0"}, [], memory._embed)
    assert len(memory.retrieve(query("v:1,0,0")).memory_ids) == 1  # acquiring: top_k
    memory.begin_phase("eval")
    ctx = memory.retrieve(query("v:1,0,0"))
    assert ctx.memory_ids == ["m1", "m2", "m3"] and "- v:1,0,0" in ctx.slots["memskill_items"]
