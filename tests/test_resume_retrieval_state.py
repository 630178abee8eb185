"""A run killed with SIGKILL and resumed equals the uninterrupted one for the memories whose
retrieval changes their state (issue 50 item 1): EvoGraph-Mem online in its own protocol (the
insights shown, which the controller edits after the task), MemoryBank and Generative Agents in
their faithful modes while learning (recall strengthening, access times), A-Mem lite and
MemSkill under per-domain memories (killed mid-acquisition: A-Mem counts its notes' retrievals),
and G-Memory under per-domain memories that keep learning while evaluated (its global memory is
rebuilt from the domains as they learn, and answers their retrievals). Each resumed run's
``metrics.json`` equals the uninterrupted one's key by key (the wall-clock keys aside,
:data:`TIMING`) and its memory snapshots are the same bytes.

The kill is real: the run is forked from the warm test process (tests/prefork.py) with
``RunStore.append`` wrapped to SIGKILL the process right after the ``after``-th record of a
file; the resume is a plain second run into the same results folder. Scripted backbone, the
schema-filling memory LLM double answering by request (``doubles.RequestSchemaLLM``), tiny
task caps."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from conftest import ROOT, SCHEMA_LLM, run_py, run_script

# metrics.json keys that measure this machine's wall clock, not what the run did
TIMING = {"wall_s", "avg_wall_s", "total_wall_s", "episode_wall_s", "elapsed_s"}

KILLER = textwrap.dedent(
    """
    import os, runpy, signal, sys
    from memarena.results import store
    file, after = sys.argv[1], int(sys.argv[2])
    seen = {"n": 0}
    original = store.RunStore.append
    def append(self, name, record):
        original(self, name, record)
        if name == file:
            seen["n"] += 1
            if seen["n"] == after:
                os.kill(os.getpid(), signal.SIGKILL)
    store.RunStore.append = append
    sys.argv = [sys.argv[0]] + sys.argv[3:]
    runpy.run_path(RUN_PY, run_name="__main__")
    """
).replace("RUN_PY", repr(str(ROOT / "run.py")))

# the schema-filling memory LLM whose answers depend on the request only (a stateful double
# would answer a resumed process's first request as it did the first of the killed one)
MEMORY_LLM = [a.replace("doubles.SchemaLLM", "doubles.RequestSchemaLLM") for a in SCHEMA_LLM]
COMMON = ["env=pddl", "backbone=scripted", "logger=none", *MEMORY_LLM]

CASES = {
    # the case: online, no acquisition, 10 tasks, killed after 4 episodes
    "evograph_online": (
        ["method=evograph", "protocol=evograph", "protocol.max_eval_tasks=10",
         "protocol.step_budget=8"],
        "episodes.jsonl", 4),
    "memorybank_faithful": (
        ["method=memorybank", "method.mode=faithful", "method.tasks_per_day=1",
         "protocol.freeze_during_eval=false", "protocol.update_every=1",
         "protocol.max_train_tasks=2", "protocol.max_eval_tasks=8", "protocol.step_budget=8"],
        "episodes.jsonl", 3),
    "generative_agents_faithful": (
        # one memory shown per task and no reflection (which touches its whole window): the
        # access times are those the retrievals set
        ["method=generative_agents", "method.mode=faithful", "method.top_k=1",
         "method.reflection_threshold=1000", "protocol.freeze_during_eval=false",
         "protocol.update_every=1", "protocol.max_train_tasks=4", "protocol.max_eval_tasks=8",
         "protocol.step_budget=8"],
        "episodes.jsonl", 4),
    "amem_lite_per_domain": (
        ["experiment=memco_table1_pddl", "method=amem_lite", "protocol.max_train_tasks=8",
         "protocol.max_eval_tasks=2", "protocol.step_budget=8"],
        # killed in the second round of domain tasks, whose retrievals read the first round's
        "acquisition.jsonl", 6),
    # per-domain memories learning during evaluation, with G-Memory's global memory rebuilt
    # from the domains as they learn: the rebuild and its cost at the same points, and each
    # retrieval's cost on the memory it asked (the global one)
    "gmemory_per_domain_learning": (
        ["experiment=memco_table1_pddl", "method=gmemory", "protocol.freeze_during_eval=false",
         "protocol.update_every=1", "protocol.max_train_tasks=4", "protocol.max_eval_tasks=4",
         "protocol.step_budget=8"],
        "episodes.jsonl", 3),
    "memskill_per_domain": (
        ["experiment=memco_table1_pddl", "method=memskill", "method.success_only=false",
         "method.max_tokens=200", "protocol.max_train_tasks=8", "protocol.max_eval_tasks=2",
         "protocol.step_budget=8"],
        "acquisition.jsonl", 3),
}  # fmt: skip


def _args(name: str, results: Path, shared: Path) -> list[str]:
    args = [*COMMON, *CASES[name][0], f"paths.results_dir={results}"]
    if any(a.startswith("experiment=memco") for a in args):
        args.append(f"env.problems_dir={shared / 'agentboard_pddl'}")
    return args


def _run_dir(results: Path) -> Path:
    (metrics,) = results.rglob("metrics.json")
    return metrics.parent


def _snapshots(run: Path) -> dict[str, bytes]:
    """Every memory snapshot of the run (acquisition's and each learning run's final memory),
    by path inside the run folder."""
    return {str(p.relative_to(run)): p.read_bytes() for p in sorted(run.rglob("memory.json"))}


def _metrics(run: Path) -> dict:
    metrics = json.loads((run / "metrics.json").read_text())
    return {k: v for k, v in metrics.items() if k not in TIMING}


@pytest.mark.parametrize("name", list(CASES))
def test_a_killed_and_resumed_run_equals_the_uninterrupted_one(tmp_path, shared_data, name):
    file, after = CASES[name][1], CASES[name][2]
    whole = run_py(_args(name, tmp_path / "whole", shared_data), doubles=True)
    assert whole.returncode == 0, whole.stderr[-3000:]

    killer = tmp_path / "killer.py"
    killer.write_text(KILLER)
    killed_root = tmp_path / "killed"
    args = _args(name, killed_root, shared_data)
    args.append(f"paths.llm_cache={killed_root}/.llm_calls.sqlite")
    killed = run_script(killer, [file, after, *args], doubles=True)
    assert killed.returncode != 0, killed.stderr[-3000:]
    assert not list(killed_root.rglob("metrics.json"))  # it did not finish
    (written,) = killed_root.rglob(file)
    assert len(written.read_text().splitlines()) == after

    resumed = run_py(_args(name, killed_root, shared_data), doubles=True)
    assert resumed.returncode == 0, resumed.stderr[-3000:]

    run, ref = _run_dir(killed_root), _run_dir(tmp_path / "whole")
    got, want = _metrics(run), _metrics(ref)
    assert sorted(got) == sorted(want)
    differing = {k: (got[k], want[k]) for k in want if got[k] != want[k]}
    assert not differing, differing
    snapshots, expected = _snapshots(run), _snapshots(ref)
    assert snapshots and sorted(snapshots) == sorted(expected)
    assert [p for p in expected if snapshots[p] != expected[p]] == []


def test_a_method_that_replays_its_retrievals_declares_it():
    """Every method class that re-applies its own retrieval-time state changes on resume
    (overrides ``replay_retrieval``) declares ``retrieval_mutates``, and none declares it
    without replaying (the team forwards to its members and copies their capabilities)."""
    import importlib
    import pkgutil

    import memarena.memory as package
    from memarena.core import MemoryMethod
    from memarena.memory.team import DomainTeam

    for info in pkgutil.walk_packages(package.__path__, "memarena.memory."):
        importlib.import_module(info.name)
    seen, stack = [], [MemoryMethod]
    while stack:
        cls = stack.pop()
        stack += cls.__subclasses__()
        if cls.__module__.startswith("memarena.memory.") and cls is not DomainTeam:
            overrides = cls.replay_retrieval is not MemoryMethod.replay_retrieval
            assert overrides == cls.capabilities.retrieval_mutates, cls.__name__
            seen.append(cls.__name__)
    assert {"GMemory", "EvoGraphMem", "MemoryBank", "GenerativeAgents", "MemRL"} <= set(seen)
