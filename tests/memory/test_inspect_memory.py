"""scripts/inspect_memory.py on real snapshots of every method that stores memory: each method
is built with the test doubles, given a couple of episodes (or entries set by hand where its
entries come from LLM answers), saved, and the printed text must show the entries."""

from __future__ import annotations

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
from baseline_helpers import answer, episode, services
from doubles import FakeLLM, use_schema_llm
from memskill_checkpoint import write_checkpoint
from omegaconf import OmegaConf
from test_memco_method import acquired

from conftest import CONF, compose_cfg
from memarena.memory.amem import AMem
from memarena.memory.evograph import EvoGraphMem
from memarena.memory.generative_agents import GenerativeAgents
from memarena.memory.gmemory import GMemory
from memarena.memory.langmem import LangMem
from memarena.memory.memorybank import MemoryBank
from memarena.memory.memrl import MemRL
from memarena.memory.memskill import MemSkill
from memarena.memory.reme import Experience, ReMe
from memarena.memory.snapshots import known_methods
from memarena.memory.voyager import Voyager
from memarena.pipeline import acquire, build
from memarena.pipeline.build import close_parts

CONF_METHODS = sorted(p.stem for p in (CONF / "method").glob("*.yaml"))
SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "inspect_memory.py"
_spec = importlib.util.spec_from_file_location("inspect_memory", SCRIPT)
inspect_memory = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(inspect_memory)


def show(run_dir: Path, capsys, monkeypatch, *args: str) -> tuple[int, str, str]:
    """The script's exit code, stdout and stderr on ``run_dir``."""
    monkeypatch.setattr(sys, "argv", ["inspect_memory.py", str(run_dir), *args])
    code = inspect_memory.main()
    out = capsys.readouterr()
    return code, out.out, out.err


def saved(memory, tmp_path: Path) -> Path:
    """A run directory holding ``memory`` as its memory/ snapshot."""
    memory.save(tmp_path / "run" / "memory")
    return tmp_path / "run"


def two_episodes(memory) -> None:
    memory.observe_groups([[episode("v:1,0,0", True, "won")], [episode("v:0,1,0", False, "lost")]])


def config_built_run(tmp_path: Path, method: str):
    """``conf/method/<method>.yaml`` built as the pipeline builds it (scripted agent, the
    schema-filling memory LLM, the fake embedder, also as a released checkpoint's encoders),
    after acquiring two PDDL tasks: the parts, closed; the run folder is ``parts.store.dir``."""
    extra = []
    if method == "memskill_as_released":  # a checkpoint in the released format, 3-d encoders
        checkpoint = write_checkpoint(tmp_path / "controller.pt", dim=3, encoder="fake")
        extra = [f"method.checkpoint={checkpoint}"]
    cfg = compose_cfg(
        [
            f"method={method}",
            "env=pddl",
            "backbone=scripted",
            "logger=none",
            "protocol.max_train_tasks=2",
            "protocol.max_eval_tasks=1",
            "protocol.step_budget=6",
            f"paths.results_dir={tmp_path / 'results'}",
            f"paths.cache_dir={tmp_path / 'cache'}",
            *extra,
        ]
    )
    use_schema_llm(cfg)
    OmegaConf.update(cfg, "embedder", {"_target_": "doubles.FakeEmbedder"}, merge=False)
    parts = build(cfg)
    try:
        acquire(parts, parts.policy)
    finally:
        close_parts(parts)
    return parts


@pytest.mark.parametrize("method", CONF_METHODS)
def test_a_config_built_run_of_every_method(tmp_path, capsys, monkeypatch, method):
    """The config names the run (``amem_lite``, ``voyager_parity``, ``gmemory`` for
    gmemory_memco ...); the snapshot records the method's package, which picks the reader."""
    parts = config_built_run(tmp_path, method)
    code, text, err = show(parts.store.dir, capsys, monkeypatch)
    if parts.memory.size() is None:  # none and icl store nothing
        assert code == 2 and "none and icl store nothing" in err, err
        return
    blob = json.loads((parts.store.memory_dir / "memory.json").read_text())
    assert blob["package"] == ".".join(type(parts.memory).__module__.split(".")[:3])
    assert code == 0, err
    assert f"(method={parts.memory.name})" in text
    assert len(text.strip().splitlines()) > 1  # the header, then the inspector's text


def test_every_inspector_belongs_to_a_configured_method():
    """No orphan inspector: each ``inspect`` module is the package of a conf/method target."""
    targets = {
        m.group(1)
        for path in (CONF / "method").glob("*.yaml")
        for m in re.finditer(r"_target_: memarena\.memory\.(\w+)\.", path.read_text())
    }
    assert known_methods() and set(known_methods()) <= targets, targets


def test_a_snapshot_without_its_package_is_read_by_its_method_name(tmp_path, capsys, monkeypatch):
    """Snapshots written before ``memory.json`` recorded the package: the name, or its longest
    ``_``-separated prefix that is a method package, picks the reader."""
    memory = AMem(services=services(FakeLLM()), mode="lite", name="amem_lite")
    two_episodes(memory)
    run_dir = saved(memory, tmp_path)
    path = run_dir / "memory" / "memory.json"
    blob = json.loads(path.read_text())
    assert blob.pop("package") == "memarena.memory.amem"
    path.write_text(json.dumps(blob))
    code, text, _ = show(run_dir, capsys, monkeypatch)
    assert code == 0 and "(method=amem_lite)" in text and "2 notes" in text


def test_memco_local_graphs_and_global_records(tmp_path, capsys, monkeypatch):
    code, text, _ = show(saved(acquired(2), tmp_path), capsys, monkeypatch, "--top", "3")
    assert code == 0 and "(method=memco)" in text
    assert "kitchen: graph" in text and "bathroom: graph" in text
    assert "Global memory:" in text and "W=" in text and "n+=" in text


def test_gmemory_insights_and_queries(tmp_path, capsys, monkeypatch):
    memory = GMemory(services=services(FakeLLM()), env_name="pddl")
    two_episodes(memory)
    insight = memory.insights.add("Check the gripper before moving.", {"q1", "q2"})
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "1 insights, 2 queries (1 resolved)" in text
    assert "won [Resolved] v:1,0,0" in text and "lost [Failed] v:0,1,0" in text
    assert f"{insight.id} score={insight.score} supports=2: Check the gripper" in text


def test_evograph_version_chain(tmp_path, capsys, monkeypatch):
    memory = EvoGraphMem(services=services(FakeLLM()), env_name="pddl")
    first = memory.graph.add("Open the cabinet first.", "q1")
    second = memory.graph.revise(first, "q2", "Open the cabinet, then look inside.")
    memory.graph.add("Carry one block at a time.", "q3")
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "2 active insights, 1 archived, 1 revisions" in text
    # the revision is version 2 with Omega+ = {q1, q2}; its parent, archived with q2 as negative
    # evidence, is version 1
    assert f"v2 {second} <- v1 {first} +2/-0 last REVISED_FROM: Open the cabinet, then" in text
    assert f"v1 {first} +1/-1 last REVISE: Open the cabinet first." in text


def test_reme_utility_counts(tmp_path, capsys, monkeypatch):
    memory = ReMe(services=services(FakeLLM()))
    memory.pool.add(Experience("exp-1", "the drawer is closed", "open it first", retrievals=3,
                               utility=2, source_task="t7"))  # fmt: skip
    memory.pool.add(Experience("exp-2", "a tool fails", "read its error", kind="failure"))
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "2 experiences" in text
    assert "exp-1 f=3 u=2 [success] from t7: when the drawer is closed -> open it first" in text
    assert text.index("exp-1") < text.index("exp-2 f=0 u=0 [failure]")  # most recalled first


def test_memorybank_episodes_with_strength(tmp_path, capsys, monkeypatch):
    memory = MemoryBank(services=services(FakeLLM([answer(summary="stacked the blocks")])))
    two_episodes(memory)
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "2 episodes" in text and "won@0 t=0 solved, 3 steps: v:1,0,0" in text
    assert "lost@1 t=1 failed (progress 0.5)" in text
    assert f"S={memory.strength['won@0']}" in text and "summary: stacked the blocks" in text


def test_voyager_skills(tmp_path, capsys, monkeypatch):
    llm = FakeLLM([answer(name="stack_blocks", description="stack two blocks")])
    memory = Voyager(services=services(llm), mode="faithful")
    two_episodes(memory)
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "1 skills (0 replaced versions), 0 episodes" in text  # faithful: skills only
    assert "stack_blocks v1 (2 steps, from won@0): stack two blocks" in text


def test_generative_agents_stream(tmp_path, capsys, monkeypatch):
    memory = GenerativeAgents(services=services(FakeLLM([answer(importance=7)] * 2)),
                              mode="faithful")  # fmt: skip
    two_episodes(memory)
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "2 memories (0 reflections)" in text
    for memory_id in memory.stream.objects:
        assert f"{memory_id} [observation] importance=7 created t=" in text


def test_amem_notes_links_and_evolution(tmp_path, capsys, monkeypatch):
    memory = AMem(services=services(FakeLLM()), mode="lite")
    two_episodes(memory)
    note = memory.notes["won@0"]
    note.links, note.tags = ["lost@1"], ["blocks"]
    note.evolution_history.append({"time": 1, "by": "lost@1", "before": {"context": "General",
                                                                          "tags": []}})  # fmt: skip
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "2 notes, 1 links, 1 evolved" in text
    assert "tags blocks; links lost@1" in text
    assert "evolved at t=1 by lost@1; before: context General" in text


def test_memrl_q_values_and_visits(tmp_path, capsys, monkeypatch):
    memory = MemRL(services=services(FakeLLM([json.dumps({"script": "s"})] * 2)))
    two_episodes(memory)
    won = memory.experiences["won@0"]
    won.q, won.visits = 0.75, 4
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert f"{len(memory.intents)} intents, 2 experiences" in text
    assert "won@0 Q=0.750 visits=4 solved: v:1,0,0 | s" in text
    assert "lost@1 Q=0.000 visits=0 failed" in text


def test_memskill_skill_bank_and_memory_bank(tmp_path, capsys, monkeypatch):
    memory = MemSkill(services=services(FakeLLM()))
    memory.memory.items["m-1"] = "The red block is on the table."
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert f"{len(memory.skills.skills)} skills, 1 memory items" in text
    assert "insert (insert) v1 uses=0: Record new durable facts." in text
    assert "m-1: The red block is on the table." in text


def test_langmem_store_episodes(tmp_path, capsys, monkeypatch):
    memory = LangMem(services=services(FakeLLM()), index_fields=["content.observation"])
    content = {"observation": "a closed drawer", "thoughts": "", "action": "opened it",
               "result": "found the key"}  # fmt: skip
    memory.store.put(memory.namespace, "ep-1", {"kind": "Episode", "content": content})
    _, text, _ = show(saved(memory, tmp_path), capsys, monkeypatch)
    assert "1 items in namespace" in text
    assert "ep-1 (Episode): When: a closed drawer | Did: opened it | Result: found the key" in text


def test_all_snapshots_of_a_learning_run(tmp_path, capsys, monkeypatch):
    memory = ReMe(services=services(FakeLLM()))
    run_dir = saved(memory, tmp_path)
    memory.pool.add(Experience("exp-9", "late", "learnt during evaluation"))
    memory.save(run_dir / "memory_final" / "run0")
    _, text, _ = show(run_dir, capsys, monkeypatch)
    assert "exp-9" not in text and "1 more snapshots (--all)" in text
    _, text, _ = show(run_dir, capsys, monkeypatch, "--all")
    assert "memory_final/run0/memory.json (method=reme)" in text and "exp-9 f=0" in text


@pytest.mark.parametrize("method", ["mystery", None])
def test_clear_errors(tmp_path, capsys, monkeypatch, method):
    if method:
        (tmp_path / "memory").mkdir()
        blob = {"method": method, "schema_version": 1, "state": {}}
        (tmp_path / "memory" / "memory.json").write_text(json.dumps(blob))
    code, _, err = show(tmp_path, capsys, monkeypatch)
    assert code == 2
    if method:
        assert "no inspector for a snapshot of method=mystery (package memarena.memory.myst" in err
        assert "known methods: amem," in err and "memarena/memory/mystery/inspect.py" in err
    else:
        assert "no memory folder under" in err and "none and icl store nothing" in err
