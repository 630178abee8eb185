"""Helpers of notebooks/memco.ipynb: MemCo's tables and figures from the results tree.

Reads ``<results>/<experiment>/<env>/<method>[+<ablation>]/<backbone>/seed<k>/metrics.json``
(via :func:`memarena.results.collect.collect`) and puts the paper's reported numbers
(:func:`memarena.reports.paper.paper_numbers`) beside ours. A section (:data:`SECTIONS`) reads
every run whose config declared it (``report: {paper: memco, tables: [...]}`` in
``conf/experiment/memco_*.yaml``, copied into metrics.json), whatever its experiment name.
Every function accepts an empty result and then returns an empty frame / draws the paper's
numbers alone.

Conventions: accuracy and progress are in percent (the paper's unit); ``setting`` is the env
name (``fever``, ``pddl``, ``scienceworld``, ``alfworld`` pooled; a stand-in keeps its own name,
e.g. ``pddl_generated``, so it never stands beside the paper's numbers) and, for a run whose
metrics.json splits its test set into familiar / held-out layouts (``per_split/valid_seen`` /
``per_split/valid_unseen``), ``<env>_familiar`` / ``<env>_heldout`` (``alfworld_familiar``);
``variant`` is the method name, or for an ablation its last name component
(``memco/local_only``, ``memco-local_only`` and ``local_only`` all give ``local_only``),
which matches the paper CSV's ``variant``. The memory-cost metrics (:data:`MEMORY_COST`) are
the pipeline's ``global_records`` (MemCo's promoted records), ``avg_mem_entries`` and
``mem_words_per_call`` (entries and words of memory shown per retrieval call).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from memarena.reports.common import (  # noqa: F401  (re-exported for the notebook)
    RUN_COLUMNS,
    backbone_key,
    cell_texts,
    check_section,
    complete_means,
    mean_bars,
    mean_line,
    of_setting,
    over_seeds,
    partial_cells,
    run_ids,
    runs_flags,
    save_figure,
    section_commands,
    section_runs,
    variant_key,
    with_row_notes,
    write_table,
)
from memarena.reports.common import report_missing as _report_missing
from memarena.reports.paper import paper_numbers

PAPER = "memco"
# the report sections a run's config may declare (report.tables): the main Tables 1, 3, 4 (Table
# 1 also feeds Appendix H) and the ablation Tables 11-14 with their Figures 3-5
SECTIONS = (
    "table1",
    "table1_disjoint",  # Table 1's PDDL rows with memory built on disjoint (generated) tasks
    "table3",
    "table4",
    "table11",
    "table12",
    "table13",
    "table14",
)
METHOD_ORDER = (
    "icl",
    "amem_lite",
    "amem_full",
    "amem",
    "a_mem",
    "memskill_as_released",
    "memskill",
    "memrl_as_released",
    "memrl",
    "gmemory",
    "g_memory",
    "memco",
)
SCOPE_VARIANTS = ("local_only", "global_only", "empirical", "concat_l5g5", "memco")
FACET_VARIANTS = (
    "no_rx",
    "no_rp",
    "no_rg",
    "only_rx",
    "only_rp",
    "only_rg",
    "zero_relevance",
    "cosine",
    "bm25",
)
LAMBDAS = ("lambda_0.25", "lambda_0.30", "lambda_0.35", "lambda_0.40", "lambda_0.45", "lambda_0.50")
SUBSETS = {"valid_seen": "familiar", "valid_unseen": "heldout"}
PERCENT = {"success_rate": "accuracy", "progress_rate": "progress"}
PLAIN = {"avg_steps": "steps", "tokens_per_task": "tokens_per_task"}
# memory-cost metrics of Table 12 / Fig. 3(a-c) -> the metrics.json key the pipeline writes
# (MemCo's global_records; avg_mem_entries / mem_words_per_call of every retrieving method)
MEMORY_COST = {
    "global_records": "global_records",
    "avg_mem_entries": "avg_mem_entries",
    "mem_tokens_per_call": "mem_words_per_call",  # words: the pipeline counts no tokens here
}


def command_for(section: str, conf_dir: str | Path | None = None) -> str:
    """The commands of the experiment configs that declare ``section`` (``conf_dir``: default
    the repository's ``conf/``)."""
    return section_commands(PAPER, check_section(section, SECTIONS, PAPER), conf_dir)


def _step_budget(run_dir: str) -> float:
    path = Path(run_dir) / "config.yaml"
    if not path.exists():
        return math.nan
    from omegaconf import OmegaConf

    value = OmegaConf.select(OmegaConf.load(path), "protocol.step_budget", default=None)
    return float(value) if value is not None else math.nan


def load_runs(results_dir: str | Path, section: str) -> pd.DataFrame:
    """The runs whose config declares MemCo's ``section`` (:data:`SECTIONS`; empty frame when
    none has results yet), with ``variant_key`` and ``step_budget`` (from each run's
    config.yaml) added."""
    runs = section_runs(results_dir, PAPER, check_section(section, SECTIONS, PAPER))
    if not runs.empty:
        runs["step_budget"] = [_step_budget(d) for d in runs["run_dir"]]
    return runs


def report_missing(runs: pd.DataFrame, section: str, conf_dir: str | Path | None = None) -> bool:
    """Print which experiment configs declare ``section`` when it has no runs; True when it
    has some."""
    return _report_missing(runs, PAPER, check_section(section, SECTIONS, PAPER), conf_dir)


def long_metrics(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run x setting x metric: accuracy / progress (%), steps, tokens_per_task,
    memory-cost metrics (:data:`MEMORY_COST`); runs with ``per_split/valid_seen`` /
    ``valid_unseen`` (ALFWorld) add their familiar / held-out settings."""
    cols = [*RUN_COLUMNS, "setting", "step_budget", "metric", "value"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for _, run in runs.iterrows():
        base = {**run_ids(run), "step_budget": run.get("step_budget", math.nan)}

        def add(setting: str, prefix: str, row=run, base=base) -> None:
            for src, (name, scale) in {
                **{k: (v, 100.0) for k, v in PERCENT.items()},
                **{k: (v, 1.0) for k, v in PLAIN.items()},
            }.items():
                value = row.get(prefix + src)
                if value is not None and not pd.isna(value):
                    rows.append(
                        {**base, "setting": setting, "metric": name, "value": float(value) * scale}
                    )

        add(run["env"], "")
        for split, name in SUBSETS.items():
            prefix = f"per_split/{split}/"
            if not pd.isna(run.get(prefix + "success_rate", math.nan)):
                add(f"{run['env']}_{name}", prefix)
        for name, key in MEMORY_COST.items():
            value = run.get(key)
            if value is not None and not pd.isna(value):
                rows.append({**base, "setting": run["env"], "metric": name, "value": float(value)})
    return pd.DataFrame(rows, columns=cols)


def summarize(long: pd.DataFrame, extra_by: Sequence[str] = ()) -> pd.DataFrame:
    """Mean / sample std / n_seeds of each metric per setting, backbone, variant (+extra)."""
    return over_seeds(long, ["setting", "backbone", "variant", *extra_by, "metric"])


def paper_rows(tables: Sequence[str]) -> pd.DataFrame:
    """The paper's reported numbers of ``tables`` (e.g. ``["table12"]``)."""
    paper = paper_numbers(PAPER)
    return paper[paper["table"].isin(list(tables))].reset_index(drop=True)


def beside_paper(
    summary: pd.DataFrame, tables: Sequence[str], match_backbone: bool = False
) -> pd.DataFrame:
    """Our ``mean ± std`` next to the paper's value for each (setting, variant, metric);
    rows only the paper has keep ``ours`` = "-", rows only we have keep ``paper`` = NaN.

    With ``match_backbone=False`` the paper's value (one backbone, e.g. Qwen3-32B for the
    ablations) is shown beside every backbone of ours.
    """
    paper = paper_rows(tables)[["setting", "backbone", "variant", "metric", "value"]]
    paper = paper.rename(columns={"value": "paper", "backbone": "paper_backbone"})
    ours = summary.copy()
    if ours.empty:
        out = paper.assign(backbone="-", ours="-", n_seeds=0)
    else:
        ours["ours"] = cell_texts(ours, 2)
        keys = ["setting", "variant", "metric"]
        if match_backbone:
            ours["bkey"] = ours["backbone"].map(backbone_key)
            paper["bkey"] = paper["paper_backbone"].map(backbone_key)
            keys.append("bkey")
        out = ours.merge(paper, on=keys, how="outer")
        out["ours"] = out["ours"].fillna("-")
        out["backbone"] = out["backbone"].fillna("-")
        out["n_seeds"] = out["n_seeds"].fillna(0).astype(int)
        out["flags"] = out["flags"].fillna("")
    cols = [
        c
        for c in (
            "setting",
            "backbone",
            "variant",
            "step_budget",
            "metric",
            "ours",
            "n_seeds",
            "n_tasks",
            "flags",
            "paper",
            "paper_backbone",
        )
        if c in out.columns
    ]
    return out[cols].sort_values(["setting", "variant", "metric"]).reset_index(drop=True)


def _method_order(methods: Sequence[str]) -> list[str]:
    known = [m for m in METHOD_ORDER if m in methods]
    return known + sorted(m for m in methods if m not in known)


# where each row of MemCo's tables comes from (:func:`row_sources`)
SOURCES = {
    "memco": "paper's description (the released MemCo cannot run: see the notebook)",
    "memskill_as_released": "as released (MemSkill's released controller, MemCo's script)",
    "memrl_as_released": "as released (MemCo's script: no memory at evaluation)",
    "gmemory": "as released (MemCo's fork of G-Memory)",
    "amem_lite": "as released (MemCo's A-Mem)",
    "icl": "as released (MemCo's worked cases)",
}


def row_sources(methods: Sequence[str]) -> pd.DataFrame:
    """One line per method of a table: whether its row is the released code's run or the
    paper's description (MemCo's own row), or memarena's reading (a method MemCo did not run
    so, e.g. ``memrl`` with its learnt memory)."""
    return pd.DataFrame(
        {"method": list(methods), "source": [SOURCES.get(m, "memarena's reading") for m in methods]}
    ).set_index("method")


def as_released_beside_icl(
    summary: pd.DataFrame,
    metrics: Sequence[str] = ("accuracy", "steps"),
    method: str = "memrl_as_released",
    control: str = "icl",
) -> pd.DataFrame:
    """MemRL as MemCo's script ran it next to ICL, per (backbone, setting, metric) where both
    have runs: MemCo's evaluation reads an empty intent table, so the agent sees what ICL's
    sees and the two rows are expected to agree (``difference`` about 0, within the seeds'
    spread); ``memrl_mem_entries`` is the memory entries MemRL showed per call (0 expected)."""
    if summary.empty:
        return pd.DataFrame()
    cells = summary.assign(cell=cell_texts(summary, 2)).set_index(
        ["backbone", "setting", "metric", "variant"]
    )
    rows = []
    for (backbone, setting, metric), _ in cells.groupby(level=[0, 1, 2], sort=True):
        keys = [(backbone, setting, metric, v) for v in (control, method)]
        if metric not in metrics or not all(k in cells.index for k in keys):
            continue
        ours, theirs = (cells.loc[k] for k in keys)
        entries = (backbone, setting, "avg_mem_entries", method)
        rows.append(
            {
                "backbone": backbone,
                "setting": setting,
                "metric": metric,
                control: ours["cell"],
                method: theirs["cell"],
                "difference": round(float(theirs["mean"] - ours["mean"]), 2),
                "memrl_mem_entries": cells.loc[entries, "mean"] if entries in cells.index
                else math.nan,
            }
        )
    return pd.DataFrame(rows)


def main_table(
    summary: pd.DataFrame, metrics: Sequence[str] = ("accuracy", "steps")
) -> pd.DataFrame:
    """Table 1/3/4 layout: rows (backbone, setting, metric), columns methods, ``mean ± std``."""
    if summary.empty:
        return pd.DataFrame()
    sub = summary[summary["metric"].isin(list(metrics))].copy()
    sub["cell"] = cell_texts(sub, 2)
    index = ["backbone", "setting", "metric"]
    table = sub.pivot_table(index=index, columns="variant", values="cell", aggfunc="first")
    table = table[_method_order(list(table.columns))].fillna("-")
    return with_row_notes(table, sub, index)


def relative_gains(summary: pd.DataFrame, control: str = "memco") -> pd.DataFrame:
    """Per setting and backbone, ``control``'s relative gain over the best other method in
    accuracy (%) and its relative step reduction vs the method with the fewest steps (%), the
    quantities the paper's Table 1 / Table 3 prose quotes."""
    rows = []
    for (setting, backbone), grp in summary.groupby(["setting", "backbone"]):
        means = grp.pivot_table(index="variant", columns="metric", values="mean")
        if control not in means.index or len(means) < 2:
            continue
        others = means.drop(index=control)
        row = {"setting": setting, "backbone": backbone}
        if "accuracy" in means and others["accuracy"].notna().any():
            runner = others["accuracy"].idxmax()
            best = others.loc[runner, "accuracy"]
            row["runner_up_accuracy"] = runner
            row["rel_gain_accuracy_pct"] = (
                100 * (means.loc[control, "accuracy"] - best) / best if best else math.nan
            )
        if "steps" in means and others["steps"].notna().any():
            fewest = others["steps"].min()
            row["rel_reduction_steps_pct"] = (
                100 * (fewest - means.loc[control, "steps"]) / fewest if fewest else math.nan
            )
        rows.append(row)
    return pd.DataFrame(rows)


def blocks(
    summary: pd.DataFrame, metric: str, settings: Sequence[str] | None = None
) -> pd.DataFrame:
    """Blocks (backbone|setting) x methods table of ``metric`` means for Appendix H; a partial
    cell (fewer seeds than its sweep ran) is NaN, so the analysis leaves its block out.

    ``settings`` default: every setting of ``summary`` except a pooled one whose familiar /
    held-out parts are there too (the paper's blocks: FEVER, PDDL, ALFWorld familiar and
    held-out per backbone; a stand-in's settings keep their own names)."""
    sub = summary[summary["metric"] == metric]
    if settings is None:
        names = set(sub["setting"])
        settings = [s for s in names if not {f"{s}_{part}" for part in SUBSETS.values()} <= names]
    sub = sub[sub["setting"].isin(list(settings))]
    if sub.empty:
        return pd.DataFrame()
    table = complete_means(sub).pivot_table(
        index=["backbone", "setting"], columns="variant", values="mean", dropna=False
    )
    table.index = [f"{b}|{s}" for b, s in table.index]
    return table[_method_order(list(table.columns))]


# --------------------------------------------------------------------------------------------
# figures


def _lambda_of(variant: str) -> float:
    m = re.fullmatch(r"lambda_([0-9.]+)", str(variant))
    return float(m.group(1)) if m else math.nan


def deltas_from(summary: pd.DataFrame, control: str = "memco") -> pd.DataFrame:
    """Fig. 5: each variant minus ``control`` (accuracy in pp, steps), per setting/backbone."""
    sub = summary[summary["metric"].isin(["accuracy", "steps"])]
    if sub.empty:
        return pd.DataFrame(columns=["setting", "backbone", "variant", "metric", "delta"])
    wide = sub.pivot_table(
        index=["setting", "backbone", "metric"], columns="variant", values="mean"
    )
    if control not in wide.columns:
        return pd.DataFrame(columns=["setting", "backbone", "variant", "metric", "delta"])
    delta = wide.drop(columns=control).sub(wide[control], axis=0)
    out = delta.stack().rename("delta").reset_index()
    return out
