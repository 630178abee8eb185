"""Helpers of notebooks/cross_paper.ipynb: every method on every benchmark under one protocol.

Reads the runs whose config declares ``report: {paper: cross_paper, tables: [main]}``
(``conf/experiment/cross_paper.yaml``) from ``<results>/<experiment>/<env>/<method>/<backbone>/
seed<k>/``: ``metrics.json`` for the scores and token counts, ``run_info.json`` for the wall time
(every invocation of the run, resumes included).

Conventions: ``setting`` is the env name as the run wrote it (a stand-in keeps its own name,
e.g. ``pddl_generated``); ``variant`` is the method name (an ablation's runs keep their
``variant_key``); success and progress are in percent. A block of the statistics is one
(backbone, setting) cell with every method's mean over seeds, as in MemCo's Appendix H, whose
analysis (:func:`memarena.results.stats.appendix_h`) runs here with the best-ranked method as the
control: average ranks, Friedman with tie correction and the Iman-Davenport F, exact Wilcoxon of
the control against every other method with Holm's correction over all of them.

Cost per run: ``tokens_per_task`` (the agent's tokens plus the memory's evaluation-time tokens,
per test task: the pipeline's metric), ``memory_tokens`` (every token of the method's own LLM
calls, acquisition and evaluation), ``wall_s`` (the run's wall time, model loading included).
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from memarena.reports.common import (  # noqa: F401  (re-exported for the notebook)
    RUN_COLUMNS,
    cell_texts,
    check_section,
    complete_means,
    number,
    ordered,
    over_seeds,
    partial_cells,
    purpose_tokens,
    run_ids,
    runs_flags,
    save_figure,
    section_commands,
    section_runs,
    with_row_notes,
    write_table,
)
from memarena.reports.common import (
    report_missing as _report_missing,
)
from memarena.results.stats import appendix_h
from memarena.results.store import RUN_INFO

PAPER = "cross_paper"
SECTION = "main"
SECTIONS = (SECTION,)  # the one section a run may declare (report.tables)
METHOD_ORDER = (
    "none",
    "icl",
    "memorybank_parity",
    "voyager_parity",
    "generative_agents_parity",
    "amem_full",
    "langmem",
    "memrl",
    "memskill",
    "gmemory",
    "evograph",
    "memco",
    "reme",
)
ENV_ORDER = ("pddl", "alfworld", "scienceworld", "fever", "hotpotqa", "bfcl", "appworld")
# metric -> (metrics.json key, scale, higher is better)
SCORES = {
    "success": ("success_rate", 100.0, True),
    "progress": ("progress_rate", 100.0, True),
    "steps": ("avg_steps", 1.0, False),
    "tokens_per_task": ("tokens_per_task", 1.0, False),
}
COST = ("tokens_per_task", "memory_tokens", "wall_s")


def _wall_s(run_dir: str) -> float:
    path = Path(run_dir) / RUN_INFO
    try:
        value = json.loads(path.read_text(encoding="utf-8")).get("wall_s")
    except (OSError, ValueError):
        return math.nan
    out = number(value)
    return math.nan if out is None else out


def command_for(section: str = SECTION, conf_dir: str | Path | None = None) -> str:
    """The ``python run.py`` command(s) of the experiment configs that declare ``section``."""
    return section_commands(PAPER, check_section(section, SECTIONS, PAPER), conf_dir)


def load_runs(results_dir: str | Path, section: str = SECTION) -> pd.DataFrame:
    """The runs that declare the cross-paper table (empty frame when none has results yet),
    with ``wall_s`` from each run's ``run_info.json``."""
    runs = section_runs(results_dir, PAPER, check_section(section, SECTIONS, PAPER))
    if not runs.empty:
        runs["wall_s"] = [_wall_s(d) for d in runs["run_dir"]]
    return runs


def report_missing(runs: pd.DataFrame, conf_dir: str | Path | None = None) -> bool:
    """Print the command that produces the table when there are no runs (True when some)."""
    return _report_missing(runs, PAPER, SECTION, conf_dir)


def long_metrics(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run x metric: :data:`SCORES` and the costs (:data:`COST`)."""
    cols = [*RUN_COLUMNS, "metric", "value"]
    rows = []
    for _, run in runs.iterrows():
        ids = run_ids(run)
        values = {name: (number(run.get(key)), scale) for name, (key, scale, _) in SCORES.items()}
        values["memory_tokens"] = (sum(purpose_tokens(run).values()), 1.0)
        values["wall_s"] = (number(run.get("wall_s")), 1.0)
        for name, (value, scale) in values.items():
            if value is not None and not math.isnan(value):
                rows.append({**ids, "metric": name, "value": value * scale})
    return pd.DataFrame(rows, columns=cols)


def summarize(long: pd.DataFrame) -> pd.DataFrame:
    """Mean / sample std / n_seeds of each metric per env, backbone and method."""
    return over_seeds(long, ["env", "backbone", "variant", "metric"])


def _env_order(envs: Sequence[str]) -> list[str]:
    base = {
        e: next((i for i, k in enumerate(ENV_ORDER) if e.startswith(k)), len(ENV_ORDER))
        for e in envs
    }
    return sorted(envs, key=lambda e: (base[e], e))


def main_table(summary: pd.DataFrame, metric: str = "success") -> pd.DataFrame:
    """Rows (backbone, env), columns methods (:data:`METHOD_ORDER` first), ``mean ± std (n=k)``
    over seeds of ``metric`` (``n=k of m`` where the sweep lost seeds, identical seeds printed
    once); "-" where a method has no run; each row's ``n_tasks`` and ``flags``."""
    sub = summary[summary["metric"] == metric].copy()
    if sub.empty:
        return pd.DataFrame()
    sub["cell"] = cell_texts(sub, 1)
    table = sub.pivot_table(
        index=["backbone", "env"], columns="variant", values="cell", aggfunc="first"
    )
    rows = [(b, e) for b in sorted(set(sub["backbone"])) for e in _env_order(list(set(sub["env"])))]
    table = table.reindex([r for r in rows if r in table.index])
    table = table[ordered(list(table.columns), METHOD_ORDER)].fillna("-")
    return with_row_notes(table, sub, ["backbone", "env"])


def blocks(summary: pd.DataFrame, metric: str) -> pd.DataFrame:
    """Blocks ("backbone|env") x methods table of ``metric`` means over seeds; a cell with
    fewer seeds than its sweep ran (partial) is NaN, so the statistics leave its block out."""
    sub = summary[summary["metric"] == metric]
    if sub.empty:
        return pd.DataFrame()
    table = complete_means(sub).pivot_table(
        index=["backbone", "env"], columns="variant", values="mean", dropna=False
    )
    table.index = [f"{b}|{e}" for b, e in table.index]
    return table[ordered(list(table.columns), METHOD_ORDER)]


def left_out(summary: pd.DataFrame, metric: str = "success") -> list[str]:
    """Why each (backbone, env) block the statistics leave out is incomplete: the methods
    without a run there, and the methods with fewer seeds than the sweep ran."""
    sub = summary[summary["metric"] == metric]
    if sub.empty:
        return []
    methods = ordered(list(set(sub["variant"])), METHOD_ORDER)
    lines = []
    for (backbone, env), grp in sub.groupby(["backbone", "env"], sort=True):
        missing = [m for m in methods if m not in set(grp["variant"])]
        partial = [
            f"{row['variant']} ({int(row['n_seeds'])} of {int(row['n_expected'])} seeds)"
            for _, row in grp.iterrows()
            if row.get("n_expected") is not None and row["n_seeds"] < row["n_expected"]
        ]
        why = ([f"no run of {', '.join(missing)}"] if missing else []) + (
            [f"partial: {', '.join(partial)}"] if partial else []
        )
        if why:
            lines.append(f"{backbone}|{env}: " + "; ".join(why))
    return lines


def statistics(summary: pd.DataFrame, control: str | None = None) -> dict[str, object]:
    """Average ranks, Friedman / Iman-Davenport and Holm-corrected exact Wilcoxon tests on the
    success (higher is better) and steps (lower is better) blocks, over complete blocks only:
    every method has a run there with every seed of its sweep (:func:`blocks`).

    ``control`` (default: the method with the best average success rank) is compared with every
    other method. Returns ``{"control", "ranks", "omnibus", "paired", "n_blocks", "left_out"}``
    (``left_out``: :func:`left_out`, one line per block not used); ValueError when fewer than
    two methods share a complete block."""
    acc, steps = blocks(summary, "success"), blocks(summary, "steps")
    complete = acc.dropna(axis=0, how="any")
    if complete.shape[1] < 2 or complete.empty:
        raise ValueError(
            "cross-paper statistics need at least two methods with a success rate on a common "
            f"complete (backbone, env) block; have methods {list(acc.columns)} on "
            f"{len(complete)} complete blocks. Incomplete: {'; '.join(left_out(summary)) or '-'}"
        )
    if control is None:
        ranks = complete.rank(axis=1, ascending=False, method="average").mean(axis=0)
        control = str(ranks.idxmin())
    out = appendix_h(acc, None if steps.empty else steps, control=control)
    return {**out, "control": control, "n_blocks": len(complete), "left_out": left_out(summary)}


def cost_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Per backbone and method: the mean over envs of each cost (:data:`COST`), the envs it
    covers, and the rows' ``n_tasks`` and ``flags``."""
    sub = summary[summary["metric"].isin(COST)]
    if sub.empty:
        return pd.DataFrame()
    table = sub.pivot_table(
        index=["backbone", "variant"], columns="metric", values="mean", aggfunc="mean"
    )
    table["n_envs"] = sub.groupby(["backbone", "variant"])["env"].nunique()
    table = table[[c for c in (*COST, "n_envs") if c in table.columns]]
    table = with_row_notes(table, sub, ["backbone", "variant"])
    order = ordered(list(table.index.get_level_values("variant").unique()), METHOD_ORDER)
    return table.sort_index(level="variant", key=lambda s: s.map(order.index))
