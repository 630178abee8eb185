"""Paper experiments run the papers' protocols: the data, backbones, sampling, free-text actions
and update schedule their files pin; online runs update after every task and save their final
memory; a run's seed changes a sampled run and replays exactly; ICL shows the benchmark's
worked examples while every method gets the same one case."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest
from doubles import use_schema_llm

from conftest import CONF, ROOT, compose_cfg, notebook_text, run_notebook, run_py
from memarena.agent import EpisodeRunner, RunnerSettings, as_policy
from memarena.config_check import group_options
from memarena.core import Completion, Usage
from memarena.envs.fever import FeverEnv
from memarena.envs.wiki import smoke_wiki
from memarena.memory.icl import ICLMemory
from memarena.memory.none import NoMemory
from memarena.pipeline import run

PAPERS = ("memco_", "evograph_", "reme_")
PAPER_EXPERIMENTS = [e for e in group_options(CONF, "experiment") if e.startswith(PAPERS)]


@pytest.mark.parametrize("experiment", PAPER_EXPERIMENTS)
def test_paper_experiments_pin_data_backbone_sampling_and_free_actions(experiment):
    cfg = compose_cfg([f"experiment={experiment}"])
    assert cfg.env.require_data is True  # no silent stand-in data
    assert cfg.protocol.action_mode == "free"  # the papers' agents write free text
    assert cfg.backbone.name != "smollm2-135m"  # a paper backbone, not the embedded model
    if cfg.protocol.stop is None:  # not MemCo's greedy agent (protocol=memco)
        assert cfg.protocol.temperature > 0  # sampled: a run's seed gives an independent run
    if experiment.startswith("memco_"):
        assert cfg.backbone.name in ("qwen3-32b", "qwen3-8b-server")
        # MemCo's code: a greedy agent cut at the first newline, the whole trajectory in the
        # prompt, memory written after every task, per-domain memories for every method
        protocol = cfg.protocol
        assert (protocol.temperature, list(protocol.stop), cfg.env.fewshot) == (0.0, ["\n"], 1)
        assert (protocol.history_steps, protocol.update_every) == (None, 1)
        assert (protocol.domain_memories, protocol.record_memory) == ("per_domain", True)
        if cfg.env.name == "alfworld" or cfg.env._target_.endswith("AlfWorldEnv"):
            assert cfg.env.task_list == "memco"
        if cfg.env._target_.endswith("FeverEnv"):
            assert (cfg.env.dataset, cfg.env.partition) == ("memco", "memco")
        if cfg.env._target_.endswith("PDDLEnv"):
            disjoint = experiment.endswith("_disjoint")
            assert cfg.env.train_source == ("generated" if disjoint else "problems")
    if experiment.startswith("evograph_"):
        # G-Memory's workflows: a greedy agent cut at the first newline, the whole trajectory
        assert cfg.backbone.name == "qwen2.5-7b" and cfg.protocol.temperature == 0.0
        assert list(cfg.protocol.stop) == ["\n"] and cfg.protocol.history_steps is None
        assert cfg.protocol.update_every == 1 and cfg.protocol.freeze_during_eval is False
        assert cfg.protocol.max_train_tasks == 0
    if experiment.startswith("reme_"):
        assert cfg.backbone.name == "qwen3-8b"
        if experiment != "reme_other_benchmarks":
            assert cfg.embedder.name.startswith("qwen3-embedding")
            assert cfg.protocol.temperature == 0.9
            assert (cfg.protocol.runs, cfg.protocol.repetitions) == (4, 3)
        else:  # that one runs under MemCo's protocol: its greedy agent, one run
            assert cfg.protocol.temperature == 0.0
            assert (cfg.protocol.runs, cfg.protocol.repetitions) == (1, 1)


def test_learning_ablations_update_after_every_task():
    for ablation in ("reme/dynamic", "reme/full_addition", "reme/selective"):
        cfg = compose_cfg(["method=reme", f"ablation={ablation}"])
        assert cfg.protocol.update_every == 1 and cfg.protocol.freeze_during_eval is False


def test_a_paper_experiment_without_its_data_stops_with_one_message(tmp_path):
    proc = run_py(
        ["experiment=memco_table1_alfworld", "env.data_path=null", f"paths.results_dir={tmp_path}"],
        timeout=300,
    )
    message = proc.stdout + proc.stderr
    assert proc.returncode == 2, message[-2000:]
    assert "ALFWORLD_DATA" in message and "env.require_data=false" in message
    assert "alfworld_suite" in message and "Traceback" not in message
    assert not list(tmp_path.rglob("episodes.jsonl"))


def _evograph_online(tmp_path: Path, n_tasks: int):
    """experiment=evograph_table1_pddl on the generated stand-in (opted into), the expert as
    agent, a schema-filling LLM double as the graph controller (it ADDs and REVISEs)."""
    cfg = compose_cfg(
        [
            "experiment=evograph_table1_pddl",
            "backbone=scripted",
            "embedder=minilm",
            "env.require_data=false",
            "env.domains=[gripper,blocksworld]",
            f"protocol.max_eval_tasks={n_tasks}",
            "protocol.concurrency=8",
            "logger=none",
            f"paths.results_dir={tmp_path / 'results'}",
            f"paths.cache_dir={tmp_path / 'cache'}",
        ]
    )
    use_schema_llm(cfg)
    metrics = run(cfg)
    (run_dir,) = {p.parent for p in (tmp_path / "results").rglob("metrics.json")}
    return metrics, run_dir


def test_online_runs_update_after_every_task_and_save_their_final_memory(tmp_path):
    metrics, run_dir = _evograph_online(tmp_path, n_tasks=4)
    assert run_dir.parts[-4:-1] == ("pddl_generated", "evograph", "scripted-expert-eps0.1")
    episodes = [json.loads(line) for line in (run_dir / "episodes.jsonl").open()]
    # concurrency 8, but one task per update: each task sees the ones before it
    assert [e["update"] for e in episodes] == [0, 1, 2, 3]
    assert episodes[0]["memory_ids"] == []
    # the second task is shown the first one and the insight its controller call added
    assert episodes[1]["memory_ids"] == [episodes[0]["task_id"], "ins-0001"]
    assert metrics["update_every"] == 1
    final = run_dir / "memory_final" / "run0"
    state = json.loads((final / "memory.json").read_text())["state"]
    assert (final / "SNAPSHOT_COMPLETE").exists()
    # every task ADDs one insight and REVISEs each shown one (a new version, the old archived):
    # task 1 revises ins-0001; task 2 is shown ins-0002; task 3 ins-0003 and ins-0004
    assert [(i["id"], i.get("parent"), i["active"]) for i in state["insights"]] == [
        ("ins-0001", None, False),
        ("ins-0002", "ins-0001", False),
        ("ins-0003", None, False),
        ("ins-0004", "ins-0002", False),
        ("ins-0005", None, True),
        ("ins-0006", "ins-0003", True),
        ("ins-0007", "ins-0004", True),
        ("ins-0008", None, True),
    ]


def test_the_case_study_reads_the_memory_an_online_run_wrote(tmp_path):
    """EvoGraph-Mem Figure 2 from a pipeline-written memory_final snapshot (no hand-made one)."""
    _, run_dir = _evograph_online(tmp_path, n_tasks=3)
    out = tmp_path / "out"
    params = (
        f"RESULTS_DIR = {str(tmp_path / 'results')!r}\nOUT_DIR = {str(out)!r}\n"
        "CASE_RUN_DIR = None\nCASE_INSIGHT = None\n"
    )
    nb = run_notebook(ROOT / "notebooks" / "evograph.ipynb", params)
    text = notebook_text(nb)
    assert f"snapshot: {run_dir / 'memory_final' / 'run0'}" in text
    assert (out / "fig2_case_study.png").exists()
    versions = list(csv.DictReader((out / "case_study_versions.csv").open()))
    # the double REVISEs every shown insight: the first task's insight is revised by the second
    # and third tasks, a chain of three versions (ins-0003 is the second task's own ADD)
    assert [(v["version"], v["id"], v["parent"], v["active"]) for v in versions] == [
        ("1", "ins-0001", "", "False"),
        ("2", "ins-0002", "ins-0001", "False"),
        ("3", "ins-0004", "ins-0002", "True"),
    ]


class EchoExamples:
    """An LLM double that records each prompt's user message."""

    name = "echo"

    def __init__(self) -> None:
        self.usage = Usage()
        self.prompts: list[str] = []

    def generate(self, requests):
        self.prompts += [r.messages[-1]["content"] for r in requests]
        return [Completion("Finish[SUPPORTS]") for _ in requests]

    def close(self) -> None:
        return None


@pytest.mark.parametrize(("memory", "shown"), [(NoMemory(), 1), (ICLMemory(), 3)])
def test_icl_shows_the_benchmark_examples_and_methods_the_same_one_case(memory, shown):
    env = FeverEnv(wiki=smoke_wiki(), fewshot=1)
    llm = EchoExamples()
    settings = RunnerSettings(concurrency=1, step_budget=1, action_mode="free")
    EpisodeRunner(env, as_policy(llm), memory, settings, progress_bar=False).run(
        env.tasks("test")[:1]
    )
    examples = env.prompt().fewshot
    assert len(examples) == 3
    assert sum(example in llm.prompts[0] for example in examples) == shown


def _sampled_run(tmp_path: Path, seed: int) -> list[list[str]]:
    proc = run_py(
        [
            "env=pddl",
            "env.domains=[gripper]",
            "method=none",
            "protocol=memco",
            "protocol.temperature=0.1",  # sampled (MemCo's agent is greedy; mas/llm.py's default)
            "protocol.max_tokens=12",
            "protocol.max_train_tasks=0",
            "protocol.max_eval_tasks=2",
            "protocol.step_budget=3",
            "logger=none",
            f"seed={seed}",
            f"paths.results_dir={tmp_path / 'results'}",
            f"paths.llm_cache={tmp_path / 'calls.sqlite'}",  # a fresh call cache per run
        ],
        timeout=900,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    (episodes,) = (tmp_path / "results").rglob(f"seed{seed}/episodes.jsonl")
    records = [json.loads(line) for line in episodes.open()]
    return [[s["raw_output"] for s in r["trajectory"]["steps"]] for r in records]


def test_seeds_give_independent_runs_and_one_seed_replays_exactly(tmp_path):
    first = _sampled_run(tmp_path / "a", seed=0)
    again = _sampled_run(tmp_path / "b", seed=0)
    other = _sampled_run(tmp_path / "c", seed=1)
    assert first == again  # same seed, fresh cache: the same samples
    assert first != other  # another seed: other samples


def test_evograph_retrieves_past_tasks_as_the_g_memory_code_it_builds_on():
    evo, gm = compose_cfg(["method=evograph"]).method, compose_cfg(["method=gmemory"]).method
    keys = ("k", "hops", "n_successes", "link_k", "link_threshold", "retrieve_threshold")
    assert {k: evo[k] for k in keys} == {k: gm[k] for k in keys}
    assert evo.rerank_successes is gm.rerank_successes is True
    # EvoGraph's own B of Eq. 10; G-Memory's insights top-k as its released logs record it
    assert (evo.top_b, gm.top_b) == (5, 5)


@pytest.mark.parametrize("env", ["pddl", "hotpotqa", "fever"])
def test_figure3_all_cell_is_the_table1_evograph_cell_of_its_benchmark(env):
    """Figure 3's experiment of a benchmark composes its Table 1 file: the "all" ablation (the
    method's default controller) has Table 1's env, protocol and method (few-shot examples,
    step budget, data), so the cell cannot be launched with other settings by mistake."""
    fig3 = "evograph_fig3" if env == "pddl" else f"evograph_fig3_{env}"
    cell = compose_cfg([f"experiment={fig3}", "ablation=evograph/all"])
    table1 = compose_cfg([f"experiment=evograph_table1_{env}", "method=evograph"])
    for node in ("env", "protocol", "method", "backbone", "memory_backbone"):
        assert cell[node] == table1[node], node
    assert (cell.report.tables[0], table1.report.tables[0]) == ("fig3", "table1")
    # the agent as G-Memory's workflows call it: greedy, one line, the whole trajectory
    assert (cell.protocol.temperature, list(cell.protocol.stop)) == (0.0, ["\n"])
    assert cell.protocol.history_steps is None
