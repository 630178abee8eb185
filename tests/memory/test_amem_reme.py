"""A-Mem as ReMe ran it (``method=amem_reme``; reme.txt Section 4.1 and Appendix B), worked by
hand: ``success_only`` writes solved tasks only, ``note_content: extracted`` makes the memory
LLM's procedural memory the note's content, both keys are writing keys of a snapshot, and the
variant composes with both on while A-Mem's other uses (``amem``, MemCo's ``amem_lite``) keep
their readings."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from baseline_helpers import answer, episode, services
from doubles import FakeEmbedder, FakeLLM
from omegaconf import OmegaConf

from conftest import compose_cfg
from memarena.core import ConfigError, MemoryServices
from memarena.memory.amem import AMem, prompts
from memarena.pipeline.build import build_part

EXPERIMENTS = Path(__file__).resolve().parents[2] / "conf" / "experiment"

# episode("v:1,0,0", True, "a") as A-Mem's layout renders it (observations clipped to 300): the
# task and its outcome, the initial observation, then each action and what it returned
TRAJECTORY_A = (
    "Task: v:1,0,0 (solved)\nyou see a room\n> a1\nafter a1\n> a2\nafter a2\n> oops\n"
    "Nothing happens."
)
PROCEDURE = "Kind: a v-task.\n1. a1\n2. a2\nPitfall: oops does nothing; skip it."


def _amem(llm: FakeLLM, **kw) -> AMem:
    return AMem(services=services(llm), **kw)


def _analysis() -> str:
    return json.dumps({"keywords": ["k1", "k2", "k3"], "context": "c", "tags": ["t"]})


def _user(request) -> str:
    return request.messages[1]["content"]


# -- success_only --------------------------------------------------------------------------------
def test_success_only_writes_the_solved_task_and_drops_the_failed_one():
    llm = FakeLLM()
    memory = _amem(llm, mode="lite", success_only=True)
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", False, "b")]])
    # a is written at time 0; b is dropped, yet still takes time 1 on the memory's clock
    assert list(memory.notes) == ["a@0"] and memory.clock == 2
    assert memory.notes["a@0"].content == TRAJECTORY_A
    assert memory.counts == {**memory.counts, "writes": 1, "skipped": 1}
    assert memory.metrics()["memory_skipped_failed"] == 1 and llm.requests == []
    assert len(memory.index) == 1


def test_without_success_only_the_failed_task_is_a_note_too():
    memory = _amem(FakeLLM(), mode="lite")  # A-Mem's (and MemCo's) reading: the default
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", False, "b")]])
    assert list(memory.notes) == ["a@0", "b@1"] and memory.counts["skipped"] == 0
    # episode(..., False) ends with progress 0.5
    assert memory.notes["b@1"].content.startswith("Task: v:0,1,0 (failed, progress 0.50)")


def test_a_wave_of_failed_tasks_costs_no_memory_call():
    llm = FakeLLM()
    memory = _amem(llm, success_only=True, note_content="extracted")  # full mode
    memory.observe_groups([[episode("v:1,0,0", False, "a"), episode("v:1,0,0", False, "a")]])
    assert memory.notes == {} and memory.counts["skipped"] == 2 and llm.batches == 0
    assert memory.clock == 1  # one task (two samples of it)


# -- note_content: extracted ---------------------------------------------------------------------
def test_extracted_note_content_is_the_extraction_not_the_trajectory():
    llm = FakeLLM([answer(memory=PROCEDURE), _analysis()])
    memory = _amem(llm, success_only=True, note_content="extracted")
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", False, "b")]])
    # a alone: one extraction call, then one analysis call; a has no earlier note, so no
    # evolution call
    assert llm.batches == 2 and len(llm.requests) == 2
    extraction, analysis = llm.requests
    assert extraction.messages[0]["content"] == prompts.EXTRACTION_SYSTEM
    assert _user(extraction) == prompts.EXTRACTION_USER.format(trajectory=TRAJECTORY_A)
    assert extraction.json_schema == prompts.EXTRACTION_SCHEMA
    # the longest valid answer {"memory":"<1200 characters>"}: 13 + 1200 characters, plus the
    # end token = 1214 tokens (core/json_budget.py)
    assert extraction.max_tokens == 1214
    note = memory.notes["a@0"]
    assert note.content == PROCEDURE  # the extraction whole, its lines kept
    assert "> a1" not in note.content and "you see a room" not in note.content
    # the analysis reads the extraction, not the trajectory
    assert PROCEDURE in _user(analysis) and "> a1" not in _user(analysis)
    assert (note.keywords, note.context) == (["k1", "k2", "k3"], "c")
    assert memory.token_usage["extraction"]["requests"] == 1
    assert memory.fallbacks == {}


def test_one_extraction_call_serves_a_wave_and_evolution_reads_the_extractions():
    first, second = "1. a1\n2. a2", "1. b1"
    evolution = json.dumps(
        {
            "should_evolve": True,
            "actions": ["strengthen"],
            "suggested_connections": [1],
            "tags_to_update": ["linked"],
            "new_context_neighborhood": [],
            "new_tags_neighborhood": [],
        }  # fmt: skip
    )
    llm = FakeLLM(
        [answer(memory=first), answer(memory=second), _analysis(), _analysis(), evolution]
    )
    memory = _amem(llm, note_content="extracted")
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", True, "b")]])
    # extraction (2 requests), analysis (2 requests), evolution of b against a (1 request)
    assert llm.batches == 3 and len(llm.requests) == 5
    assert [memory.notes[i].content for i in ("a@0", "b@1")] == [first, second]
    assert memory.notes["b@1"].links == ["a@0"]
    # the decision shows both contents on one line each (clip_text joins a content's lines)
    evolve = _user(llm.requests[4])
    assert "1. a1 2. a2" in evolve and "1. b1" in evolve and "> a1" not in evolve


def test_an_unusable_extraction_keeps_the_trajectory_and_is_counted():
    # a parsed answer without a memory, then an answer that does not parse
    llm = FakeLLM([answer(memory="   "), "not json"])
    memory = _amem(llm, mode="lite", note_content="extracted")  # lite: extraction is its only call
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", True, "b")]])
    assert llm.batches == 1 and memory.notes["a@0"].content == TRAJECTORY_A
    assert memory.notes["b@1"].content.startswith("Task: v:0,1,0 (solved)")
    assert memory.fallbacks == {"amem_extraction": 2}


def test_bad_values_name_the_key_and_the_choices():
    with pytest.raises(ConfigError, match=r"method.note_content='summary'.*trajectory"):
        _amem(FakeLLM(), note_content="summary")
    with pytest.raises(ConfigError, match=r"method.success_only='yes' must be true or false"):
        _amem(FakeLLM(), success_only="yes")


# -- snapshots -----------------------------------------------------------------------------------
def test_a_snapshot_keeps_the_keys_its_notes_were_written_under(tmp_path):
    memory = _amem(FakeLLM(), mode="lite", success_only=True)
    memory.observe_groups([[episode("v:1,0,0", True, "a")], [episode("v:0,1,0", False, "b")]])
    memory.save(tmp_path)
    again = _amem(FakeLLM(), mode="lite", success_only=True)
    again.load(tmp_path)
    assert list(again.notes) == ["a@0"] and again.counts["skipped"] == 1
    with pytest.raises(ConfigError, match=r"under method.success_only=true; the run asks for "
                                          r"method.success_only=false"):  # fmt: skip
        _amem(FakeLLM(), mode="lite").load(tmp_path)


def test_a_snapshot_from_before_the_keys_reads_as_a_mems_readings():
    memory = _amem(FakeLLM(), mode="lite")
    memory.observe(*episode("v:1,0,0", True, "a"))
    state = memory.state_dict()
    for key in ("success_only", "note_content"):
        del state["writing"][key]
    again = _amem(FakeLLM(), mode="lite")
    again.load_state_dict(state)
    assert list(again.notes) == ["a@0"]
    with pytest.raises(ConfigError, match="method.note_content=trajectory"):
        _amem(FakeLLM(), mode="lite", note_content="extracted").load_state_dict(state)


# -- configs -------------------------------------------------------------------------------------
def _built(cfg) -> AMem:
    built = MemoryServices(llm_factory=FakeLLM, embedder_factory=FakeEmbedder)
    return build_part(cfg.method, services=built, env_name=cfg.env.name)


def test_the_reme_variant_composes_with_both_keys_on():
    cfg = compose_cfg(["method=amem_reme"])
    memory = _built(cfg)
    assert (memory.name, memory.mode) == ("amem_reme_full", "full")  # its result folder
    assert memory.success_only is True and memory.note_content == "extracted"
    # every other key keeps A-Mem's reading
    plain = OmegaConf.to_container(compose_cfg(["method=amem"]).method, resolve=True)
    reme = OmegaConf.to_container(cfg.method, resolve=True)
    differ = {k for k in plain if plain[k] != reme[k]}
    assert differ == {"name", "success_only", "note_content"} and set(reme) == set(plain)
    # under ReMe's Table 1 experiment too
    cfg = compose_cfg(["experiment=reme_table1", "method=amem_reme"])
    assert (cfg.method.name, cfg.method.success_only, cfg.method.note_content) == (
        "amem_reme_full", True, "extracted")  # fmt: skip


@pytest.mark.parametrize("option", ["amem", "amem_lite"])
def test_a_mems_other_uses_keep_every_task_and_the_trajectory(option):
    memory = _built(compose_cfg([f"method={option}"]))
    assert memory.success_only is False and memory.note_content == "trajectory"


def test_remes_sweeps_name_the_variant_and_memcos_keep_amem_lite():
    for path in sorted(EXPERIMENTS.rglob("*.yaml")):  # with base/
        params = OmegaConf.load(path).get("hydra", {}).get("sweeper", {}).get("params", {})
        methods = str(params.get("method", "")).split(",")
        if path.name.startswith("reme_") and any(m.startswith("amem") for m in methods):
            assert "amem" not in methods and "amem_reme" in methods, path.name
        if path.name.startswith("memco_") and "amem_lite" in methods:
            assert "amem_reme" not in methods, path.name
    table1 = OmegaConf.load(EXPERIMENTS / "reme_table1.yaml").hydra.sweeper.params.method
    assert table1 == "none,amem_reme,langmem,reme"
