"""Evidence that each memory method works end to end with a real model: ``python run.py`` with
the embedded SmolLM2-135M as the agent and as the memory LLM, a fresh call cache per run
(``run_py``), and each step's prompt and memory recorded (``protocol.record_prompts``: the
messages; ``protocol.record_memory``: the memory slots' texts as rendered and the ids they
showed). For every method the tests assert that

- acquisition wrote memory (the snapshot holds entries: records, stored tasks, insights,
  experiences) through real memory-LLM calls,
- evaluation retrieved it (non-empty ``memory_ids``),
- the retrieved text reached the model: an entry's own text, read from the snapshot, is in the
  memory slot of a step that showed that entry (the slot itself, not anywhere in the prompt,
  where the worked examples and the instructions hold common actions too), and that slot's
  text is in the step's prompt,
- the frozen evaluation left the acquisition's snapshot byte for byte as it was written,
- the agent model was really called (``cache_misses > 0``).

Each method's runs are built once per test session (``shared_runs.build_once``) and every test
of the method asserts on them; a method's tests share an xdist group, so one worker builds
its runs while the others run other tests.

MemCo runs as the headline demo (``python run.py`` with its defaults, capped further). G-Memory,
EvoGraph-Mem and ReMe need solved and failed train tasks for their insight, re-ranking and
comparison branches, and SmolLM2 solves no PDDL task: their acquisition runs with the scripted
expert acting (epsilon 0.3) and SmolLM2 as the memory LLM, and SmolLM2 is then the agent on
that snapshot (``protocol.snapshot_from``), the way a researcher evaluates a saved memory.
Each run is capped so that the method's branches run at least once while the module stays
within minutes on a 2-core CPU.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable
from pathlib import Path

import pytest
from shared_runs import build_once

from conftest import run_py
from memarena.memory.memco.records import relation_signature

RECORD = ["protocol.record_prompts=true", "protocol.record_memory=true"]
COMMON = ["env=pddl", "logger=none", *RECORD]


def _run(tmp_path: Path, args: list[str]) -> Path:
    proc = run_py([*COMMON, *args, f"paths.results_dir={tmp_path}"], timeout=900)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (metrics,) = tmp_path.rglob("metrics.json")
    return metrics.parent


def _json(path: Path):
    return json.loads(path.read_text())


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def _shown_in_memory_slot(
    run_dir: Path, texts: Callable[[dict, str], list], memory_run: Path | None = None
) -> int:
    """How many evaluation steps showed a memory entry whose own text (``texts(state, id)``,
    from the snapshot; a string or a compiled pattern) is in that step's memory slot, the slot
    as the method rendered it (``protocol.record_memory``), with the slot's text in the step's
    prompt (``protocol.record_prompts``): memory that was retrieved, rendered and shown."""
    state = _json((memory_run or run_dir) / "memory" / "memory.json")["state"]
    hits = 0
    for episode in _lines(run_dir / "episodes.jsonl"):
        for step in episode["trajectory"]["steps"]:
            slots = [text for text in (step.get("memory") or {}).values() if text]
            prompt = "\n".join(m.get("content") or "" for m in step["prompt"])
            if not slots or not all(slot in prompt for slot in slots):
                continue
            wanted = [t for i in step["memory_ids"] for t in texts(state, i) if t]
            hits += any(_found(t, slot) for t in wanted for slot in slots)
    return hits


def _shown_as_its_entry(run_dir: Path, texts: Callable[[dict, str], list]) -> int:
    """How many evaluation steps showed memory where every shown id has the item it rendered
    as (``MemoryContext.entries``: ``<field>: <item>``, kept with ``protocol.record_memory``)
    verbatim among its field's items in the memory slot, the slot in the prompt, and that id's
    own stored text (``texts``) in its own item: each id matched to its text, not any shown
    text anywhere in the slot (MemCo)."""
    state = _json(run_dir / "memory" / "memory.json")["state"]
    hits = matched = 0
    for episode in _lines(run_dir / "episodes.jsonl"):
        for step in episode["trajectory"]["steps"]:
            slots = [text for text in (step.get("memory") or {}).values() if text]
            if not step["memory_ids"] or not slots:
                continue
            prompt = "\n".join(m.get("content") or "" for m in step["prompt"])
            entries = step.get("memory_entries") or {}
            assert set(step["memory_ids"]) <= set(entries), "a shown id without its line"
            assert all(slot in prompt for slot in slots)
            fields = [line for slot in slots for line in slot.splitlines()]
            for entry_id in step["memory_ids"]:
                # "<field>: <item>": the item verbatim in that field's line of the summary
                label, item = entries[entry_id].split(": ", 1)
                shown = [f.split(": ", 1)[1] for f in fields if f.startswith(f"{label}: ")]
                assert any(item in text for text in shown), (entry_id, item)
                wanted = [t for t in texts(state, entry_id) if t]
                if wanted:  # a stored record (MemCo's transition-graph items have no record)
                    assert any(_found(t, item) for t in wanted), (entry_id, item, wanted)
                    matched += 1
            hits += 1
    return hits if matched else 0


def _found(text: str | re.Pattern, prompt: str) -> bool:
    return bool(text.search(prompt)) if isinstance(text, re.Pattern) else text in prompt


def _called_the_model(run_dir: Path) -> None:
    usage = _json(run_dir / "usage.json")
    assert usage["agent"]["is_llm"] and usage["agent"]["cache_misses"] > 0


# --- per method: how an entry id maps to the text the prompt must show ------------------------
def _memco_texts(state: dict, entry_id: str) -> list[str | re.Pattern]:
    """A local MemCo entry (``local:<relation signature>``) is rendered from its record: the
    record's actions appear in the instruction the prompt shows. A global entry
    (``global:<key>``) is shown bound to the current task: its role-level actions with each
    ``<role>`` filled by an object of the scene (e.g. ``go to <destination>`` as
    ``go to shelf 1``)."""
    out: list[str | re.Pattern] = []
    for agent in state["agents"].values():
        for r in agent["records"]:
            key = relation_signature(r["type"], r["condition"], tuple(r["actions"]), r["outcome"])
            if entry_id == f"local:{key}":
                out += r["actions"]
    for g in state["global"]["records"]:
        if entry_id == f"global:{g['key']}":
            out += [_bound(action) for action in g["actions"]]
    return out


def _bound(action: str) -> re.Pattern:
    """A role-level action as a pattern: each ``<role>`` matches one object name (``shelf 1``)."""
    parts = re.split(r"<[a-z_]+>", action)
    return re.compile(r"[\w-]+(?: \d+)?".join(re.escape(p) for p in parts))


def _insight_texts(key: str) -> Callable[[dict, str], list[str]]:
    def texts(state: dict, entry_id: str) -> list[str]:
        node = state[key]
        items = node["insights"] if isinstance(node, dict) else node
        return [i["content"] for i in items if i["id"] == entry_id]

    return texts


def _reme_texts(state: dict, entry_id: str) -> list[str]:
    return [e["content"] for e in state["pool"]["items"] if e["id"] == entry_id]


def test_the_headline_demo_promotes_records_and_shows_them_to_every_agent(tmp_path):
    """``python run.py`` with its defaults (MemCo, the embedded ALFWorld suite, SmolLM2 as agent
    and memory LLM, the demo experiment), capped further: 6 steps, one test task in each of
    the 4 agent views. The 8 train tasks (2 per scene domain) stay, so agents can share
    evidence."""
    proc = run_py(
        [
            "logger=none",
            *RECORD,
            "protocol.step_budget=6",
            "protocol.max_eval_tasks=1",
            f"paths.results_dir={tmp_path}",
        ],
        timeout=1500,
    )
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-3000:]
    (metrics_path,) = tmp_path.rglob("metrics.json")
    run = metrics_path.parent
    assert run.relative_to(tmp_path).parts[1:3] == ("alfworld_suite", "memco")
    assert run.relative_to(tmp_path).parts[0].startswith("demo+")  # an ad-hoc run's own folder
    _called_the_model(run)
    metrics = _json(metrics_path)
    state = _json(run / "memory" / "memory.json")["state"]
    # acquisition: local records in every agent, records promoted to the shared global memory
    agents = ["bathroom", "bedroom", "kitchen", "living_room"]
    assert sorted(state["agents"]) == agents and metrics["n_episodes"] == len(agents)
    assert sorted(metrics["per_agent"]) == agents  # each agent view's own metrics
    assert all(len(a["records"]) > 0 for a in state["agents"].values())
    assert metrics["global_records"] == len(state["global"]["records"]) > 0
    # evaluation: per-step retrieval (one call per step) showed global records, in the prompt
    episodes = _lines(run / "episodes.jsonl")
    steps = [s for e in episodes for s in e["trajectory"]["steps"]]
    assert metrics["retrieval_calls"] == len(steps)
    shown_global = [s for s in steps if any(i.startswith("global:") for i in s["memory_ids"])]
    assert shown_global, "no step was shown a promoted global record"
    assert _shown_in_memory_slot(run, _memco_texts) > 0
    global_only = {"agents": {}, "global": state["global"]}
    assert _shown_in_memory_slot(run, lambda _, i: _memco_texts(global_only, i)) > 0
    # every shown id, its own line, its own text (not any shown text anywhere in the slot)
    assert _shown_as_its_entry(run, _memco_texts) > 0


def _stored_task_texts(insights_key: str) -> Callable[[dict, str], list[str]]:
    """G-Memory / EvoGraph-Mem entries: a stored task (id of a query node) is shown with its
    full goal; an insight (``insights_key`` in the state) with its content."""
    insight_texts = _insight_texts(insights_key)

    def texts(state: dict, entry_id: str) -> list[str]:
        goals = [n["goal"] for n in state["queries"]["nodes"] if n["id"] == entry_id]
        return goals + insight_texts(state, entry_id)

    return texts


def _acquire_then_evaluate(root: Path, method: list[str], train: int) -> None:
    """Two runs, the way a researcher evaluates a saved memory with another agent:
    acquisition with the scripted expert acting (epsilon 0.3: solved and failed tasks, which
    these methods' insight and re-ranking branches need; SmolLM2-135M solves no PDDL task) and
    the embedded SmolLM2 as the memory LLM (``root/acquire``), then SmolLM2 as the agent on
    that snapshot (``protocol.snapshot_from``, ``root/evaluate``). The snapshot's hash before
    the evaluation is kept in ``root/snapshot.sha256``."""
    built = _run(
        root / "acquire",
        [*method, "backbone=scripted", "backbone.epsilon=0.3", "protocol.step_budget=12",
         f"protocol.max_train_tasks={train}", "protocol.max_eval_tasks=1"],
    )  # fmt: skip
    memory = _json(built / "usage.json")["memory"]  # None: the memory LLM was never built
    assert memory and memory["cache_misses"] > 0, f"the memory LLM made no call: {memory}"
    assert memory["name"] == "smollm2-135m"
    (root / "snapshot.sha256").write_text(_sha256(built / "memory" / "memory.json"))
    run = _run(
        root / "evaluate",
        [*method, f"protocol.snapshot_from={built}", "protocol.step_budget=4",
         "protocol.max_eval_tasks=2"],
    )  # fmt: skip
    _called_the_model(run)


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# each method's acquisition settings: (overrides, train tasks); see each test for why
SPECS: dict[str, tuple[list[str], int]] = {
    # reach the insight fine-tuning (every 2 stored tasks from the 2nd) and the merge (every
    # 4) within 8 tasks; the paper's schedule is 5 / 20. Each fine-tuning draws 2 tasks (the
    # reference: 5): 10 insight requests and 31k prompt tokens instead of 25 and 54k, every
    # branch still reached
    "gmemory": (["method=gmemory", "method.start_insights_threshold=2",
                 "method.rounds_per_insights=2", "method.merge_every=4",
                 "method.insights_point_num=2"], 8),
    "evograph": (["method=evograph"], 6),  # 4 train tasks: none solved, nothing to show
    "reme": ([
        "method=reme",
        "method.samples=2",
        # one experience per analysis, its answer capped at 512 tokens (its schema's bound
        # counts one token per character; SmolLM2's answers close well within it)
        "method.max_experiences=1",
        "method.max_tokens=512",
        # memarena's caps on the experience fields: uncapped (the released reading), SmolLM2
        # fills the experience string until the 512-token cap and no answer closes
        "method.scenario_chars=200",
        "method.experience_chars=400",
        # SmolLM2 judges the summaries it wrote valid with score 0: keep every valid one, so the
        # judged experiences reach the pool (the paper keeps score >= 0.5; the threshold's
        # effect is tested in tests/memory/test_reme_judge.py)
        "method.judge_min_score=0.0",
        # the summarizer reads memarena's step lines: the released whole-conversation layout
        # (tests/memory/test_reme_summary_input.py) is several times longer for SmolLM2 to read
        # on CPU, and what this run checks (written, retrieved, shown) does not depend on it
        "method.summary_input=steps",
    ], 3),
    "memorybank": ([
        "method=memorybank",
        "method.mode=faithful",
        "method.tasks_per_day=1",  # the task-index clock: 6 tasks see forgetting
    ], 6),
    "voyager": (["method=voyager", "method.mode=faithful"], 6),
    "generative_agents": (["method=generative_agents"], 6),
    "amem": (["method=amem", "protocol.update_every=2", "method.top_k=1", "method.linked_k=1",
              "method.max_tokens=160", "method.content_chars=1200"], 4),
    "memrl": (["method=memrl", "protocol.update_every=2", "method.epsilon=0.0", "method.top_k=2",
               "method.max_tokens=160", "method.intent_threshold=0.0"], 4),
    # the PPO controller picks the skills (no LLM); every task is written (the scripted expert
    # at epsilon 0.3 solves none of these three, and MemCo's success-only write would keep none)
    "memskill": (["method=memskill", "method.success_only=false", "method.max_tokens=200",
                  "method.top_k_eval=5"], 3),
}  # fmt: skip


def _runs(tmp_path_factory, name: str) -> tuple[Path, Path]:
    """The method's shared acquisition and evaluation run folders, built once per session."""
    method, train = SPECS[name]
    root = build_once(tmp_path_factory, f"e2e-{name}",
                      lambda root: _acquire_then_evaluate(root, method, train))  # fmt: skip
    return _only_run(root / "acquire"), _only_run(root / "evaluate")


def _only_run(root: Path) -> Path:
    (metrics,) = root.rglob("metrics.json")
    return metrics.parent


def _group(name: str):
    return pytest.mark.xdist_group(f"e2e-{name}")


@pytest.mark.parametrize("name", [pytest.param(n, marks=_group(n)) for n in SPECS])
def test_frozen_evaluation_left_the_snapshot_as_acquisition_wrote_it(tmp_path_factory, name):
    """The evaluation read the saved snapshot (``protocol.snapshot_from``) with the memory
    frozen: the snapshot's bytes are those acquisition wrote, and the evaluation run holds no
    memory of its own."""
    built, run = _runs(tmp_path_factory, name)
    recorded = next(p for p in built.parents if (p / "snapshot.sha256").exists())
    assert _sha256(built / "memory" / "memory.json") == (recorded / "snapshot.sha256").read_text()
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))  # it was read
    assert not (run / "memory").exists()


@_group("gmemory")
def test_gmemory_maintains_insights_and_shows_them_to_the_model(tmp_path_factory):
    built, run = _runs(tmp_path_factory, "gmemory")
    metrics = _json(built / "metrics.json")
    state = _json(built / "memory" / "memory.json")["state"]
    statuses = [n["status"] for n in state["queries"]["nodes"]]
    assert len(statuses) == 8 and {"Resolved", "Failed"} <= set(statuses)
    usage = metrics["memory_token_usage"]
    for purpose in ("key_steps", "fail_reason", "insights", "merge"):  # every acquisition branch
        assert usage[purpose]["requests"] > 0 and usage[purpose]["prompt_tokens"] > 0, purpose
    assert metrics["memory_insights"] == len(state["insights"]["insights"]) > 0
    # evaluation with SmolLM2 as the agent: solved tasks re-ranked by the memory LLM and shown
    evaluated = _json(run / "metrics.json")
    assert evaluated["memory_token_usage"]["relevance"]["requests"] > 0
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _stored_task_texts("insights"), built) > 0


@_group("evograph")
def test_evograph_stores_trajectories_runs_its_controller_and_shows_memory(tmp_path_factory):
    """SmolLM2-135M as EvoGraph-Mem's controller answers ``"add": false`` to every trajectory
    it was shown here (no insight is formed; the ADD / KEEP / ARCHIVE / REVISE branches with
    their effects on the graph are tested with a schema-filling LLM in
    tests/test_frozen_evaluation.py and tests/test_paper_protocols.py). What the real model
    drives is asserted: key steps and a controller decision per stored trajectory, parsed and
    counted, and the solved trajectories shown to the agent."""
    built, run = _runs(tmp_path_factory, "evograph")
    metrics = _json(built / "metrics.json")
    state = _json(built / "memory" / "memory.json")["state"]
    train = SPECS["evograph"][1]
    assert len(state["queries"]["nodes"]) == train
    usage = metrics["memory_token_usage"]
    assert (usage["key_steps"]["requests"], usage["controller"]["requests"]) == (train, train)
    # an unparsable answer is a counted fallback, in the method and in the LLM's own usage
    memory_llm = _json(built / "usage.json")["memory"]
    fallbacks = memory_llm["fallbacks"].get("evograph_controller", 0)
    assert metrics["controller_fallbacks"] == fallbacks < train
    decisions = metrics["controller_decisions"]
    assert (
        metrics["memory_insights"]
        == decisions["ADD"] + decisions["REVISE"]
        == len(state["insights"])
    )
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _stored_task_texts("insights"), built) > 0


@_group("reme")
def test_reme_distils_judged_experiences_and_shows_them_to_the_model(tmp_path_factory):
    built, run = _runs(tmp_path_factory, "reme")
    metrics = _json(built / "metrics.json")
    usage = metrics["memory_token_usage"]
    for purpose in ("summarize", "judge"):
        assert usage[purpose]["requests"] > 0 and usage[purpose]["prompt_tokens"] > 0, purpose
    state = _json(built / "memory" / "memory.json")["state"]
    assert metrics["memory_experiences"] == len(state["pool"]["items"]) > 0
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _reme_texts, built) > 0


@pytest.mark.parametrize("method", ["none", "icl"])
def test_methods_without_memory_show_none(tmp_path, method):
    """The embedded model end to end without memory (ICL from a fresh cache folder: the GGUF
    read and converted to safetensors there, as on a new machine): the agent was called, its
    tokens counted, and no memory was written or shown."""
    fresh = [f"paths.cache_dir={tmp_path}/cache", f"paths.models_dir={tmp_path}/cache/models"]
    caps = ["protocol.step_budget=1", "protocol.max_eval_tasks=2"]
    run = _run(tmp_path, [f"method={method}", *caps, *(fresh if method == "icl" else [])])
    _called_the_model(run)
    metrics = _json(run / "metrics.json")
    assert metrics["backbone_is_llm"] is True and metrics["n_episodes"] == 2
    assert metrics["tokens_per_task"] > 0 and _json(run / "usage.json")["agent"]["prompt_tokens"]
    if method == "icl":
        assert any((tmp_path / "cache" / "models").iterdir())  # the converted weights
    assert not (run / "memory").exists()
    assert all(not e["memory_ids"] for e in _lines(run / "episodes.jsonl"))


# --- EvoGraph-Mem's Table 1 baselines -----------------------------------------------------------
def _task_texts(state: dict, entry_id: str) -> list[str]:
    """A stored task (MemoryBank, Generative Agents' parity mode) is shown as ``Task: <goal>``;
    MemoryBank's overview (id ``overview``) with its text."""
    if entry_id == "overview":
        return [state["overview"]]
    return [f"Task: {t['goal']}" for t in state["tasks"] if t["id"] == entry_id]


def _skill_texts(state: dict, entry_id: str) -> list[str]:
    """A Voyager skill is shown by its versioned name and description, then its program."""
    out = []
    for skill in state["library"]["skills"]:
        name = skill["base"] + (f"V{skill['version']}" if skill["version"] > 1 else "")
        if name == entry_id:
            out.append(f"Skill {name}: {skill['description']}")
    return out


@_group("memorybank")
def test_memorybank_faithful_summarises_forgets_and_shows_memory(tmp_path_factory):
    """Faithful MemoryBank with SmolLM2 summarising: the episode summaries (one batched call)
    and the overview are written, the forgetting curve drops the memories not recalled (the
    clock is the task index), and what survived reaches the agent's prompt."""
    built, run = _runs(tmp_path_factory, "memorybank")
    assert built.parts[-3] == "memorybank_faithful"
    metrics = _json(built / "metrics.json")
    usage = metrics["memory_token_usage"]
    assert usage["summary"]["requests"] == 6 and usage["overview"]["requests"] >= 1
    state = _json(built / "memory" / "memory.json")["state"]
    assert metrics["memory_writes"] == 6
    assert metrics["memory_forgotten"] == 6 - len(state["tasks"]) > 0 and state["tasks"]
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _task_texts, built) > 0


@_group("voyager")
def test_voyager_faithful_writes_skills_from_successes_and_shows_them(tmp_path_factory):
    built, run = _runs(tmp_path_factory, "voyager")
    metrics = _json(built / "metrics.json")
    episodes = _lines(built / "acquisition.jsonl")
    solved = sum(e["success"] for e in episodes)
    assert 0 < solved < len(episodes)  # the expert with noise failed some: those wrote nothing
    assert metrics["memory_token_usage"]["skill"]["requests"] == solved
    state = _json(built / "memory" / "memory.json")["state"]
    skills = state["library"]["skills"]
    assert len(skills) + len(state["library"]["replaced"]) == solved
    assert all(s["program"] for s in skills)
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _skill_texts, built) > 0


@_group("generative_agents")
def test_generative_agents_parity_reranks_with_the_model_and_shows_the_best(tmp_path_factory):
    """Parity Generative Agents stores tasks under their raw text (no LLM at write time); at
    evaluation SmolLM2 rates two solved candidates per task, in one batched call for the tasks
    that start together, and the best-rated one is shown."""
    built, run = _runs(tmp_path_factory, "generative_agents")
    assert _json(built / "metrics.json")["memory_writes"] == 6
    state = _json(built / "memory" / "memory.json")["state"]
    candidates = min(2, sum(t["success"] for t in state["tasks"]))  # 2k solved, k = 1
    assert candidates > 0
    relevance = _json(run / "metrics.json")["memory_token_usage"]["relevance"]
    # the 2 test tasks start together: one call rating each one's candidates
    assert (relevance["calls"], relevance["requests"]) == (1, 2 * candidates)
    episodes = _lines(run / "episodes.jsonl")
    spent = [e["memory_cost"]["usage"]["relevance"]["requests"] for e in episodes]
    assert sum(spent) == 2 * candidates  # the batch's cost shared among its episodes
    assert all(len(e["memory_ids"]) == 1 for e in episodes)
    assert _shown_in_memory_slot(run, _task_texts, built) > 0


# --- MemCo's and ReMe's baselines ------------------------------------------------------------
def _note_texts(state: dict, entry_id: str) -> list[str]:
    """An A-Mem note is shown with its content (the task line opens it)."""
    return [n["content"].splitlines()[0] for n in state["notes"] if n["id"] == entry_id]


def _experience_texts(state: dict, entry_id: str) -> list[str]:
    return [f"Task: {e['goal']}" for e in state["experiences"] if e["id"] == entry_id]


@_group("amem")
def test_amem_analyses_evolves_and_shows_notes(tmp_path_factory):
    """A-Mem (full) with SmolLM2 as the memory LLM: one analysis per note and one evolution
    decision per note that had earlier neighbours, both batched per acquisition wave (2 waves of
    2 tasks); the notes (with their linked ones) reach the agent's prompt. Short notes and one
    retrieved note keep the module within minutes on a 2-core CPU."""
    built, run = _runs(tmp_path_factory, "amem")
    assert built.parts[-3] == "amem_full"
    usage = _json(built / "metrics.json")["memory_token_usage"]
    assert (usage["analysis"]["requests"], usage["analysis"]["calls"]) == (4, 2)
    assert usage["evolution"]["requests"] == 3  # every note but the first had neighbours
    state = _json(built / "memory" / "memory.json")["state"]
    assert len(state["notes"]) == 4
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _note_texts, built) > 0


@_group("memrl")
def test_memrl_learns_values_and_shows_experiences(tmp_path_factory):
    """MemRL with SmolLM2 writing scripts and reflections; acquisition in waves of 2, so later
    waves retrieve experiences and update their Q from the outcome; the experiences reach the
    agent's prompt at evaluation."""
    built, run = _runs(tmp_path_factory, "memrl")
    metrics = _json(built / "metrics.json")
    usage = metrics["memory_token_usage"]
    # a script per solved task, a reflection per failed one
    assert sum(usage.get(p, {}).get("requests", 0) for p in ("script", "reflection")) == 4
    assert metrics["memory_q_updates"] > 0
    state = _json(built / "memory" / "memory.json")["state"]
    assert any(e["visits"] > 0 and e["q"] != 0.0 for e in state["experiences"])
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _experience_texts, built) > 0


def _item_texts(state: dict, entry_id: str) -> list[str]:
    return [text for item_id, text in state["memory"]["items"].items() if item_id == entry_id]


@_group("memskill")
def test_memskill_controller_and_executor_write_items_that_reach_the_model(tmp_path_factory):
    """MemSkill as MemCo ran it: the PPO controller (trained while acquiring, saved with the
    snapshot) picks the skills, SmolLM2 as the executor writes each task, and again when the
    memory is rebuilt from the replay at the end (finalize_local); the items it inserted are
    shown at evaluation (top_k_eval)."""
    built, run = _runs(tmp_path_factory, "memskill")
    metrics = _json(built / "metrics.json")
    usage = metrics["memory_token_usage"]
    assert "controller" not in usage and usage["executor"]["requests"] == 2 * 3
    state = _json(built / "memory" / "memory.json")["state"]
    assert state["controller"] == "ppo" and state["ppo"]["checkpoint"] and state["finished"]
    assert metrics["memory_entries"] == len(state["memory"]["items"]) > 0
    assert metrics["memory_operations"]["insert"] > 0
    assert any(e["memory_ids"] for e in _lines(run / "episodes.jsonl"))
    assert _shown_in_memory_slot(run, _item_texts, built) > 0
