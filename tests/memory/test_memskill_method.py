"""MemSkill as MemCo ran it: the four memory operations and skill-bank changes; success-only
writes with a failure pool; the LLM controller -> executor flow batched per wave; the PPO
controller learning on the train stream and its checkpoint in the snapshot; the rebuild from
replay when acquisition ends; the designer off unless enabled; the evaluation hint; the global
memory merged from per-domain memories."""

from __future__ import annotations

import dataclasses
import json

import numpy as np
import pytest
from baseline_helpers import episode, query, services
from doubles import FakeLLM

from memarena.core import ConfigError
from memarena.memory.memskill import ItemBank, MemSkill, SkillBank
from memarena.memory.memskill.controller import PPOController
from memarena.memory.memskill.prompts import FAILURE_HINT

TINY = {"hidden_dim": 8}


def _embed(text: str) -> np.ndarray:
    return np.asarray([len(text), 1.0, 0.0], dtype=np.float32)


def _insert(text: str) -> str:
    return json.dumps({"operations": [{"op": "INSERT", "content": text}]})


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


def test_a_failed_task_lands_in_the_failure_pool_not_in_memory():
    llm = FakeLLM()
    memory = MemSkill(services=services(llm), ppo=TINY)
    memory.observe_groups([[episode("v:1,0,0", False, "lost")]])
    assert llm.requests == []  # nothing to write: no controller or executor call
    assert len(memory.memory) == 0 and memory.counts["spans"] == 0
    assert [f["goal"] for f in memory.failures] == ["v:1,0,0"]
    assert "Task: v:1,0,0" in memory.failures[0]["text"]


def test_llm_controller_then_executor_in_one_batched_call_each():
    llm = FakeLLM()
    memory = MemSkill(services=services(llm), controller="llm")
    llm.answers = [
        json.dumps({"skills": ["insert", "noop"]}),
        json.dumps({"skills": ["not_a_skill"]}),  # unusable: the bank's first 3 skills
        _insert("keep the rule"),
        json.dumps({"operations": [{"op": "DELETE", "index": 4}, {"op": "NOOP"}]}),
    ]
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", True, "b")],
                           [episode("v:0,0,1", False, "c")]])  # fmt: skip
    assert llm.batches == 2 and len(llm.requests) == 4  # the failure is not written
    executor_prompt = llm.requests[2].messages[-1]["content"]
    assert "[insert]" in executor_prompt and "[noop]" not in executor_prompt  # NOOP not sent
    assert "[delete]" not in executor_prompt  # only the selected skills' instructions
    assert memory.counts["insert"] == 1 and memory.counts["invalid"] == 1
    assert memory.counts["noop"] == 1 and memory.fallbacks == {"memskill_controller_skills": 1}
    assert memory.skills.skills["insert"].uses == 2 and len(memory.failures) == 1


def test_noop_only_selection_makes_no_executor_call():
    llm = FakeLLM()
    memory = MemSkill(services=services(llm), controller="llm", finalize_local=False)
    llm.answers = [json.dumps({"skills": ["noop"]})]
    memory.observe_groups([[episode("v:1,0,0", True, "a")]])
    assert len(llm.requests) == 1 and memory.counts["noop"] == 1


def test_ppo_controller_learns_on_the_train_stream():
    llm = FakeLLM(default=_insert("a durable fact"))
    memory = MemSkill(services=services(llm), ppo={**TINY, "batch_episodes": 1})
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", True, "b")]])
    # wave 1 wrote two spans with sampled skills: the open episode's two steps
    steps = memory.ppo.buffer.steps
    assert len(steps) == 2 and not any(s.done for s in steps)
    assert all(len(s.action) == 3 for s in steps)  # skills_per_span
    rewards = [s.reward for s in steps]
    assert memory.ppo.trainer is not None and memory.counts["ppo_updates"] == 0
    # wave 2: one of two tasks solved -> delayed reward 0.5 closes the episode, one update
    memory.observe_groups([[episode("v:1,1,0", True, "c")], [episode("v:1,0,1", False, "d")]])
    assert memory.ppo.episodes == 1 and memory.counts["ppo_updates"] == 1
    # 0.5 spread: 0.6 of it on the last step, 0.4 over both with weights [0.9, 1] / 1.9
    closed = [rewards[0] + 0.2 * 0.9 / 1.9, rewards[1] + 0.2 / 1.9 + 0.3]
    assert memory.ppo.trainer.updates == 1 and closed[1] > closed[0]
    assert len(memory.ppo.buffer.steps) == 1  # wave 2's solved task: the next open episode


def test_snapshot_keeps_the_checkpoint_and_the_frozen_controller(tmp_path):
    llm = FakeLLM(default=_insert("a durable fact"))
    memory = MemSkill(services=services(llm), ppo={**TINY, "batch_episodes": 1},
                      finalize_local=False)  # fmt: skip
    memory.observe_groups([[episode("v:1,0,0", True, "a")]])
    memory.observe_groups([[episode("v:0,1,0", True, "b")]])
    memory.save(tmp_path)
    assert memory.finished and memory.ppo.dropped == 1  # wave 2's step never got its reward
    state = json.loads((tmp_path / "memory.json").read_text())["state"]
    assert state["ppo"]["checkpoint"]["updates"] == 1 and state["controller"] == "ppo"
    again = MemSkill(services=services(FakeLLM()), ppo=TINY)
    again.load(tmp_path)
    assert again.state_dict() == memory.state_dict()
    skills = list(memory.skills.skills.values())
    ops = memory.ppo.skill_matrix(skills, memory.services.embedder.encode)
    s = PPOController.state(np.array([0.2, 0.1, 0.9]), [memory.memory.vector("m1")])
    assert np.array_equal(again.ppo.trainer.probabilities(s, ops),
                          memory.ppo.trainer.probabilities(s, ops))  # fmt: skip
    # frozen: the K largest logits, the same on both, and nothing learnt
    picks = [m.ppo.select([s], ops, skills, learn=False)[0] for m in (memory, again)]
    assert picks[0].names == picks[1].names and picks[0].step is None


def test_finalize_local_rebuilds_the_memory_from_the_replay():
    llm = FakeLLM(default=_insert("a durable fact"))
    memory = MemSkill(services=services(llm), controller="llm")
    llm.answers = [json.dumps({"skills": ["insert"]}), _insert("first pass")]
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", False, "b")]])
    assert list(memory.memory.items.values()) == ["first pass"] and len(memory.failures) == 1
    llm.answers = [json.dumps({"skills": ["insert"]}), _insert("rebuilt")]
    memory.begin_phase("eval")  # acquisition over: the rebuild, once
    assert list(memory.memory.items.values()) == ["rebuilt"] and len(memory.failures) == 1
    assert memory.counts["rebuilds"] == 1 and len(llm.requests) == 4
    memory.state_dict()
    memory.begin_phase("eval")
    assert memory.counts["rebuilds"] == 1  # not again
    plain = MemSkill(services=services(FakeLLM(default=_insert("x"))), controller="llm",
                     finalize_local=False)  # fmt: skip
    plain.observe_groups([[episode("v:1,0,0", True, "a")]])
    plain.begin_phase("eval")
    assert plain.counts["rebuilds"] == 0 and plain.replay == []


def test_designer_off_unless_enabled():
    llm = FakeLLM()
    memory = MemSkill(services=services(llm), design_every=1, designer_min_failures=1, ppo=TINY)
    memory.observe_groups([[episode("g", False, "a")]])
    assert memory.counts["designs"] == 0 and llm.requests == []
    change = {"action": "add", "name": "note_failures", "op": "insert",
              "description": "d", "instruction": "i"}  # fmt: skip
    llm = FakeLLM([json.dumps({"changes": [change]})])
    memory = MemSkill(services=services(llm), designer=True, design_every=2,
                      designer_min_failures=2, ppo=TINY)  # fmt: skip
    memory.observe_groups([[episode("g", False, "a")]])
    assert memory.counts["designs"] == 0  # one task observed, one failure
    memory.observe_groups([[episode("h", False, "b")]])
    assert memory.counts["designs"] == 1 and "note_failures" in memory.skills.skills
    assert "Task: g" in llm.requests[-1].messages[-1]["content"]


def test_eval_shows_top_k_eval_items_and_the_failure_hint():
    memory = MemSkill(services=services(FakeLLM()), top_k_eval=3, acquire_top_k=1)
    for n in range(4):
        memory.memory.apply({"op": "INSERT", "content": f"v:1,{n},0"}, [], memory._embed)
    ctx = memory.retrieve(query("v:1,0,0"))
    assert len(ctx.memory_ids) == 1 and "memskill_hint" not in ctx.slots  # no failure yet
    memory.failures.append({"goal": "g", "text": "t"})
    memory.begin_phase("eval")
    ctx = memory.retrieve(query("v:1,0,0"))
    assert ctx.memory_ids == ["m1", "m2", "m3"] and "- v:1,0,0" in ctx.slots["memskill_items"]
    assert ctx.slots["memskill_hint"] == FAILURE_HINT
    empty = MemSkill(services=services(FakeLLM()))
    empty.failures.append({"goal": "g", "text": "t"})
    assert empty.retrieve(query("v:1,0,0")).slots == {"memskill_hint": FAILURE_HINT}
    assert (
        MemSkill(services=services(FakeLLM()), failure_hint=False).retrieve(query("v:1,0,0")).slots
        == {}
    )


def _domain(items: list[str], failures: int) -> MemSkill:
    memory = MemSkill(services=services(FakeLLM()), top_k_eval=5)
    for text in items:
        memory.memory.apply({"op": "INSERT", "content": text}, [], memory._embed)
    memory.failures = [{"goal": f"f{n}", "text": "t"} for n in range(failures)]
    memory.revision += 1
    return memory


def test_merge_domains_builds_the_global_memory_and_evaluation_reads_it():
    film, music = _domain(["v:1,0,0", "v:0,1,0"], 1), _domain(["v:0,0,1"], 2)
    merged = MemSkill(services=services(FakeLLM()), top_k_eval=2, failure_pool=2)
    merged.merge_domains({"film": film, "music": music})  # the domains in the lists' order
    assert merged.memory.items == {"film/m1": "v:1,0,0", "film/m2": "v:0,1,0",
                                   "music/m1": "v:0,0,1"}  # fmt: skip
    assert np.allclose(merged.memory.vector("music/m1"), music.memory.vector("m1"))
    # the pool: film's case then music's two, the latest failure_pool (2) kept
    pool = [(f["source"], f["goal"]) for f in merged.failures]
    assert pool == [("music", "f0"), ("music", "f1")]
    assert len(film.memory) == 2 and len(film.failures) == 1  # the domains are not changed
    ctx = film.retrieve_in_team(query("v:0,0,1"), merged)
    assert ctx.memory_ids == ["music/m1", "film/m1"]  # the other domain's item first
    assert ctx.slots["memskill_hint"] == FAILURE_HINT
    # no global memory (pooled): the domain's own retrieval (top_k_eval 5 holds both items)
    assert film.retrieve_in_team(query("v:1,0,0"), None).memory_ids == ["m1", "m2"]
    # a domain memory changed after the merge (its rebuild): the global memory follows
    music.memory.apply({"op": "INSERT", "content": "v:0,1,1"}, [], music._embed)
    music.revision += 1
    assert "music/m2" in film.retrieve_in_team(query("v:0,1,1"), merged).memory_ids


def test_config_errors_name_the_valid_values():
    with pytest.raises(ConfigError, match="controller='heuristic' must be one of 'ppo', 'llm'"):
        MemSkill(services=services(FakeLLM()), controller="heuristic")
    with pytest.raises(ConfigError, match="method.ppo has no key"):
        MemSkill(services=services(FakeLLM()), ppo={"learning_rate": 1.0})


def _in(domain: str, goal: str, success: bool, task_id: str):
    trajectory, outcome = episode(goal, success, task_id)
    task = dataclasses.replace(trajectory.task, domain=domain)
    return dataclasses.replace(trajectory, task=task), outcome


def test_per_domain_team_snapshot_holds_the_finalized_domains_and_their_global(tmp_path):
    from memarena.memory.team import DomainTeam

    llm = FakeLLM(default=_insert("rebuilt fact"))
    team = DomainTeam(lambda: MemSkill(services=services(llm), controller="llm"))
    llm.answers = [json.dumps({"skills": ["insert"]}), _insert("live fact")] * 2
    team.observe_groups([[_in("film", "v:1,0,0", True, "a")], [_in("music", "v:0,1,0", True, "b")],
                         [_in("music", "v:0,0,1", False, "c")]])  # fmt: skip
    assert team.size() == 2  # two live items; no global memory while acquiring
    team.save(tmp_path)  # acquisition over: each domain rebuilt, the global memory follows
    state = json.loads((tmp_path / "memory.json").read_text())["state"]
    for domain in ("film", "music"):
        assert list(state["domain_memories"][domain]["memory"]["items"].values()) == [
            "rebuilt fact"
        ]
    assert sorted(state["global"]["memory"]["items"]) == ["film/m1", "music/m1"]
    assert set(state["global"]["memory"]["items"].values()) == {"rebuilt fact"}
    assert [f["source"] for f in state["global"]["failures"]] == ["music"]
    again = DomainTeam(lambda: MemSkill(services=services(FakeLLM()), controller="llm"))
    again.load(tmp_path)
    again.begin_phase("eval")
    again.set_view("film")
    ctx = again.retrieve(query("v:1,0,0"))
    assert ctx.memory_ids == ["film/m1"] and ctx.slots["memskill_hint"] == FAILURE_HINT
