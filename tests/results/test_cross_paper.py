"""The cross-paper table: ``experiment=cross_paper`` as one multirun sweep of every method, then
notebooks/cross_paper.ipynb on what the sweep wrote.

The sweep runs every method of the experiment file with the scripted expert as the agent
(``backbone=scripted``) and the schema-filling memory LLM double of tests/doubles.py (the table,
the tests and the costs are checked here, not what a real model writes: that is
tests/test_memory_end_to_end.py's business), on stand-in data with two train and two test
tasks. The sweep is built once per session and the module's tests share one xdist group.
For time it covers PDDL, FEVER and BFCL (the three kinds of benchmark: planning, Wikipedia QA,
tool calls; ALFWorld and ScienceWorld runs of every method are the end-to-end tests'
business); the experiment file itself sweeps all six, which
``test_the_experiment_sweeps_every_method_on_every_benchmark`` checks.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from omegaconf import OmegaConf
from shared_runs import build_once

from conftest import CONF, ROOT, SCHEMA_LLM, compose_cfg, notebook_text, run_notebook, run_py
from memarena.config_check import group_options
from memarena.reports.cross_paper import tables as xr

ENVS = "pddl,fever,bfcl"
CAPS = [
    "protocol.max_train_tasks=2",
    "protocol.max_eval_tasks=2",
    "protocol.step_budget=8",
]
PNG = b"\x89PNG\r\n\x1a\n"


def swept(name: str) -> list[str]:
    node = OmegaConf.load(CONF / "experiment" / "cross_paper.yaml").hydra.sweeper.params[name]
    return str(node).split(",")


def test_the_experiment_sweeps_every_method_on_every_benchmark():
    # less the variants of MemCo's tables (A-Mem lite, MemRL and MemSkill as released, G-Memory's
    # settings; MemSkill's needs its downloaded checkpoint) and of ReMe's (A-Mem from successes)
    methods = set(group_options(CONF, "method")) - {"amem_lite", "memrl_as_released",
                                                   "memskill_as_released", "gmemory_memco",
                                                   "amem_reme"}  # fmt: skip
    assert set(swept("method")) == methods
    # AppWorld joins with env=...,appworld where its server venv and data exist; recall is the
    # laptop sanity benchmark, no paper's (experiment=recall sweeps it)
    assert set(swept("env")) == set(group_options(CONF, "env")) - {"appworld", "recall"}
    cfg = compose_cfg(["experiment=cross_paper"])
    assert cfg.protocol.runs == 1 and cfg.protocol.freeze_during_eval
    assert cfg.backbone.name and cfg.memory_backbone.same_as_agent
    assert (cfg.report.paper, list(cfg.report.tables)) == ("cross_paper", ["main"])


def _sweep(work: Path) -> None:
    proc = run_py(
        [
            "-m",
            "experiment=cross_paper",
            f"env={ENVS}",
            "seed=0",
            "backbone=scripted",
            "logger=none",
            "env.require_data=false",
            *CAPS,
            *SCHEMA_LLM,
            f"paths.results_dir={work}/results",
            f"paths.llm_cache={work}/llm_cache.sqlite",
            f"paths.log_dir={work}/logs",
        ],
        doubles=True,
    )
    assert proc.returncode == 0, proc.stderr[-3000:]


@pytest.fixture(scope="session")
def tree(tmp_path_factory) -> Path:
    return build_once(tmp_path_factory, "cross_paper", _sweep) / "results"


pytestmark = pytest.mark.xdist_group("cross_paper")


def test_the_notebook_ranks_tests_and_costs_every_method(tree, tmp_path):
    out = tmp_path / "tables"
    nb = run_notebook(
        ROOT / "notebooks" / "cross_paper.ipynb",
        f"RESULTS_DIR = {str(tree)!r}\nOUT_DIR = {str(out)!r}\n",
    )
    text = notebook_text(nb)
    runs = [json.loads(p.read_text()) for p in sorted(tree.rglob("metrics.json"))]
    methods = {m["method"] for m in runs}
    envs = {m["env"] for m in runs}
    assert len(runs) == len(swept("method")) * len(ENVS.split(",")) == len(methods) * len(envs)

    # the table: every run's success rate in its cell
    table = pd.read_csv(out / "table_success.csv").set_index(["backbone", "env"])
    for m in runs:
        cell = table.loc[(m["backbone"], m["env"]), m["method"]]
        assert float(str(cell).split()[0]) == pytest.approx(100 * m["success_rate"], abs=0.051)

    # ranks over the (backbone, env) blocks, recomputed by hand from the runs
    ranks = pd.read_csv(out / "ranks.csv").set_index("method")
    assert set(ranks.index) == methods
    by_env = pd.DataFrame(
        {e: {m["method"]: m["success_rate"] for m in runs if m["env"] == e} for e in envs}
    )
    expected = by_env.rank(axis=0, ascending=False, method="average").mean(axis=1)
    for method, rank in expected.items():
        assert ranks.loc[method, "avg_rank_accuracy"] == pytest.approx(rank)
    control = str(ranks["avg_rank_accuracy"].idxmin())
    assert f"control: {control} ({len(envs)} complete blocks)" in text

    omnibus = pd.read_csv(out / "omnibus.csv").set_index("metric")
    assert omnibus.loc["accuracy", "n_methods"] == len(methods)
    assert omnibus.loc["accuracy", "n_blocks"] == len(envs)
    paired = pd.read_csv(out / "paired_holm.csv")
    assert set(paired["baseline"]) == methods - {control}
    assert (paired["p_holm"] >= paired["p"] - 1e-12).all()
    assert (out / "cross_paper_ranks.png").read_bytes()[:8] == PNG

    # cost: memory tokens of every method's own calls, wall time from run_info.json
    cost = pd.read_csv(out / "cost.csv").set_index("variant")
    for method in methods:
        mine = [m for m in runs if m["method"] == method]
        tokens = [
            sum(u.get("prompt_tokens", 0) + u.get("completion_tokens", 0)
                for u in m["memory_token_usage"].values())
            for m in mine
        ]
        assert cost.loc[method, "memory_tokens"] == pytest.approx(sum(tokens) / len(tokens))
        walls = [
            json.loads((tree / m["experiment"] / m["env"] / m["method"] / m["backbone"] / "seed0"
                        / "run_info.json").read_text())["wall_s"]
            for m in mine
        ]
        assert cost.loc[method, "wall_s"] == pytest.approx(sum(walls) / len(walls))
        assert cost.loc[method, "n_envs"] == len(envs)
    assert cost.loc["none", "memory_tokens"] == 0
    for method in ("memorybank_parity", "memrl", "reme", "evograph"):
        assert cost.loc[method, "memory_tokens"] > 0, method  # their own LLM calls are counted
    assert "the scripted expert, not an LLM" in text  # stand-in runs are flagged


def test_statistics_pick_the_best_ranked_method_as_control():
    rows = []
    for env, scores in {"a": (90, 50, 10), "b": (80, 60, 20), "c": (70, 40, 30)}.items():
        for method, value in zip(("x", "y", "z"), scores, strict=True):
            rows.append({"env": env, "backbone": "m", "variant": method, "metric": "success",
                         "mean": value, "std": math.nan, "n_seeds": 1})
    stats = xr.statistics(pd.DataFrame(rows))
    assert stats["control"] == "x" and stats["n_blocks"] == 3
    assert list(stats["ranks"]["avg_rank_accuracy"]) == [1.0, 2.0, 3.0]
    with pytest.raises(ValueError, match="at least two methods"):
        xr.statistics(pd.DataFrame(rows[:1]))
