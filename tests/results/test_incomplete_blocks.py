"""The cross-paper ranks on a hand-built sweep that lost one seed (issue 45 item 3).

Three methods on three benchmarks, seeds 0-2; ``reme`` lost seed 2 on pddl. Its pddl cell is
partial: the table says ``n=2 of 3``, the rank statistics leave the pddl block out and name it,
so the lost seed never moves a rank. Before, the partial mean was ranked like a whole one.
"""

from __future__ import annotations

import pandas as pd
import pytest

from memarena.reports.cross_paper import tables as xr

METHODS = ("none", "gmemory", "reme")
ENVS = ("pddl", "fever", "bfcl")
# success per (method, env): fever and bfcl rank reme first, gmemory second, none last
RATE = {"none": 0.2, "gmemory": 0.5, "reme": 0.8}


def run_row(method: str, env: str, seed: int, success: float, steps: float) -> dict:
    return {
        "experiment": "cross_paper", "env": env, "method": method, "backbone": "qwen3-8b",
        "seed": seed, "success_rate": success, "progress_rate": success, "avg_steps": steps,
        "tokens_per_task": 100.0, "n_tasks": 4, "n_episodes": 4, "flags": "",
        "run_fingerprint": f"{method}-{env}-{seed}",
    }  # fmt: skip


def sweep(lost: bool) -> pd.DataFrame:
    rows = []
    for method in METHODS:
        for env in ENVS:
            for seed in (0, 1, 2):
                if lost and (method, env, seed) == ("reme", "pddl", 2):
                    continue
                # on pddl reme's lost seed was its worst: the two left look best
                success = RATE[method] if env != "pddl" else {"none": 0.5, "gmemory": 0.6,
                                                              "reme": 0.1 * (seed + 6)}[method]
                rows.append(run_row(method, env, seed, success, 10.0 - 2 * success))
    return pd.DataFrame(rows)


def test_a_partial_cell_says_so_and_its_block_leaves_the_ranks():
    summary = xr.summarize(xr.long_metrics(sweep(lost=True)))
    table = xr.main_table(summary, "success")
    assert table.loc[("qwen3-8b", "pddl"), "reme"] == "65.0 ± 7.1 (n=2 of 3)"
    assert table.loc[("qwen3-8b", "fever"), "reme"] == "80.0 ± 0.0 (n=3)"
    assert list(table.columns[-2:]) == ["n_tasks", "flags"]
    assert xr.partial_cells(summary, ["backbone", "env", "variant"]) == [
        "qwen3-8b pddl reme: 2 of 3 seeds"
    ]
    stats = xr.statistics(summary)
    assert stats["n_blocks"] == 2  # fever and bfcl; pddl is incomplete
    assert stats["left_out"] == ["qwen3-8b|pddl: partial: reme (2 of 3 seeds)"]
    ranks = stats["ranks"]["avg_rank_accuracy"]
    assert ranks.to_dict() == pytest.approx({"reme": 1.0, "gmemory": 2.0, "none": 3.0})
    assert stats["omnibus"].loc["accuracy", "n_blocks"] == 2


def test_with_every_seed_the_block_counts():
    summary = xr.summarize(xr.long_metrics(sweep(lost=False)))
    stats = xr.statistics(summary)
    assert stats["n_blocks"] == 3 and stats["left_out"] == []
    assert xr.main_table(summary, "success").loc[("qwen3-8b", "pddl"), "reme"] == (
        "70.0 ± 10.0 (n=3)"
    )


def test_a_method_missing_from_a_block_is_named():
    runs = sweep(lost=False)
    runs = runs[~((runs["method"] == "none") & (runs["env"] == "bfcl"))]
    stats = xr.statistics(xr.summarize(xr.long_metrics(runs)))
    assert stats["n_blocks"] == 2 and stats["left_out"] == ["qwen3-8b|bfcl: no run of none"]


def test_seeds_that_were_one_run_print_once():
    runs = sweep(lost=False)
    runs.loc[runs["method"] == "none", "run_fingerprint"] = "greedy"
    table = xr.main_table(xr.summarize(xr.long_metrics(runs)), "success")
    assert table.loc[("qwen3-8b", "fever"), "none"] == "20.0 (3 seeds, identical runs)"


def test_an_exported_table_carries_its_runs_flags(tmp_path):
    """A capped run on stand-in data: the main table's row says so, the CSV keeps it, and a
    table without a flags column is written only with the flags of its runs."""
    runs = sweep(lost=False)
    capped = runs["env"] == "pddl"
    runs.loc[capped, "flags"] = "capped,stand_in_data"
    summary = xr.summarize(xr.long_metrics(runs))
    path = xr.write_table(xr.main_table(summary, "success"), tmp_path, "table_success")
    table = pd.read_csv(path, keep_default_na=False).set_index("env")
    assert table.loc["pddl", "flags"] == "capped,stand_in_data"
    assert table.loc["fever", "flags"] == ""
    ranks = xr.statistics(summary)["ranks"]
    with pytest.raises(ValueError, match="no flags column; pass flags=runs_flags"):
        xr.write_table(ranks, tmp_path, "ranks")
    written = pd.read_csv(xr.write_table(ranks, tmp_path, "ranks", flags=xr.runs_flags(runs)))
    assert set(written["flags"]) == {"capped,stand_in_data"}
