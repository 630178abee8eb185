"""Helpers of notebooks/reme.ipynb: ReMe's Tables 1-5 and Figures 3-5 from the results tree,
plus the memory-cost table and the cross-paper runs.

Reads ``<results>/<experiment>/<env>/<method>[+<ablation>]/<backbone>/seed<k>/metrics.json``
(via :func:`memarena.results.collect.collect`) and, for Figure 5, the run's ``episodes.jsonl``.
A section (:data:`SECTIONS`) reads every run whose config declared it (``report: {paper: reme,
tables: [...]}`` in ``conf/experiment/reme_*.yaml``, copied into metrics.json), whatever its
experiment name; the section's table then keeps the rows of the paper's layout
(:data:`TABLE_VARIANTS`). Puts the numbers ReMe's text states
(:func:`memarena.reports.paper.paper_numbers` ``("reme")``) beside ours. Every function accepts
an empty result and then returns the paper's numbers alone (ours ``"not run"``) / an empty frame
/ a figure of the paper's numbers.

Conventions: scores are in percent. ``avg_at_<k>`` / ``pass_at_<k>`` are ReMe's Avg@k / Pass@k
over the k runs of one repetition (k = metrics.json ``runs``; a k = 1 run gives avg_at_1 =
pass_at_1 = its success rate); a cell is the mean over every repetition of every seed
(``at_k_repetitions``) ± their population std, the paper's convention (its 59.55 ± 0.83 is the
mean and population std of 58.67 / 60.67 / 59.33, three Pass@4 values over 150 tasks); one value
alone shows no std. ``variant`` is the method name, or for an ablation its last name component
(``reme+dynamic`` gives ``dynamic``), matching the paper CSV's ``variant``; ``reme`` alone is
ReMe (fixed). Backbones match the paper's by :func:`backbone_key` (``Qwen3-8B`` = ``qwen3_8b``).
"""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence
from pathlib import Path

import pandas as pd
import yaml

from memarena.core.jsonl import read_jsonl
from memarena.reports.common import (  # noqa: F401  (re-exported for the notebook)
    RUN_COLUMNS,
    backbone_key,
    check_section,
    mean_bars,
    mean_line,
    number,
    ordered,
    purpose_calls,
    purpose_tokens,
    run_ids,
    runs_flags,
    save_figure,
    section_commands,
    section_runs,
    variant_key,
    write_table,
)
from memarena.reports.common import report_missing as _report_missing
from memarena.reports.paper import paper_numbers
from memarena.reports.reme import failure_labels as fl
from memarena.results.collect import expected_seeds, read_episodes, union_flags
from memarena.results.metrics import compute_metrics
from memarena.results.records import EpisodeRecord, latest

PAPER = "reme"
NOT_RUN = "not run"
# the report sections a run's config may declare (report.tables): Tables 1-5 (Table 5 also draws
# Figure 3), Figures 4 and 5, and the cross-paper runs ("other")
SECTIONS = ("table1", "table2", "table3", "table4", "table5", "fig4", "fig5", "other")
LABELS = {
    "none": "No Memory",
    "amem": "A-Mem",
    "langmem": "LangMem",
    "reme": "ReMe (fixed)",
    "dynamic": "ReMe (dynamic)",
    "dynamic_memarena": "ReMe (dynamic), memarena's reading",
    "released_pool": "ReMe (fixed), released pool",
    "released_pool_dynamic": "ReMe (dynamic), released pool",
    "no_dedup": "ReMe (fixed), pool rebuilt without dedup",
    "trajectory": "Trajectory-level",
    "full_addition": "full addition",
    "selective": "selective addition",
    "selective_reflection": "selective addition + reflection",
    "summ_qwen3_14b": "LLM_summ Qwen3-14B",
    "summ_qwen3_32b": "LLM_summ Qwen3-32B",
    "key_task_query": "task query",
    "key_generalized_query": "generalized query",
    "key_keywords": "query keywords",
    "key_usage_scenario": "usage scenario",
}
TABLE_VARIANTS = {
    "table1": (
        "none", "amem", "langmem", "reme", "dynamic", "dynamic_memarena",
        "no_dedup", "released_pool", "released_pool_dynamic",
    ),  # fmt: skip
    "table2": ("trajectory", "reme"),
    "table3": ("full_addition", "selective", "selective_reflection", "dynamic", "dynamic_memarena"),
    "table4": ("reme", "summ_qwen3_14b", "summ_qwen3_32b"),
    "table5": ("key_task_query", "key_generalized_query", "key_keywords", "key_usage_scenario"),
}
# the paper's label of reme in Table 2 (keypoint granularity) and Table 4 (summ = executor)
ROW_LABELS = {
    "table2": {"reme": "Keypoint-level"},
    "table4": {"reme": "LLM_summ = LLM_execute"},
}
METRICS = ("avg_at_4", "pass_at_4")
METRIC_LABELS = {"avg_at_4": "Avg@4", "pass_at_4": "Pass@4"}
SETTING_LABELS = {"bfcl": "BFCL-V3", "appworld": "AppWorld", "avg": "Avg"}
# the differences the paper prints beside Table 2 / Table 4 cells: (base variant, metric suffix)
DELTAS = {"table2": ("none", "gain_vs_none"), "table4": ("reme", "delta_vs_reme")}

# BFCL multi-turn checker error types (bfcl_eval 2025.8.6: eval_checker/multi_turn_eval/
# multi_turn_checker.py and eval_runner.py) -> readable failure categories of Figure 5(b)
STEP_LIMIT = "step limit (turns not reached)"
OMISSION = "action omission (empty turn)"
FORCE_TERMINATED = "multi_turn:force_terminated"
ERROR_CATEGORIES = {
    "multi_turn:instance_state_mismatch": "state mismatch (wrong or missing action)",
    "multi_turn:execution_response_mismatch": "wrong response",
    "multi_turn:empty_turn_model_response": OMISSION,
    "multi_turn:method_invoke_order_mismatch": "wrong call order",
    "multi_turn:irrelevance_error:decoder_success": "acted on an irrelevant turn",
    FORCE_TERMINATED: STEP_LIMIT,
    "multi_turn:inference_error": "inference error",
    "checker_exception": "checker exception",
}


def command_for(section: str, conf_dir: str | Path | None = None) -> str:
    """The commands of the experiment configs that declare ``section`` (``conf_dir``: default
    the repository's ``conf/``)."""
    return section_commands(PAPER, check_section(section, SECTIONS, PAPER), conf_dir)


# memarena method names of the paper's rows: A-Mem as ReMe ran it (method=amem_reme, the
# experiments' sweeps; result folder amem_reme_full) is the paper's A-Mem, and so is plain A-Mem
# in full mode (method=amem, folder amem_full) where a section has no amem_reme run (where it
# has, amem_full keeps its own name and stays out of the paper's rows: the readings never pool)
PAPER_VARIANTS = {"amem_reme_full": "amem", "amem_full": "amem"}


def load_runs(results_dir: str | Path, section: str) -> pd.DataFrame:
    """The runs whose config declares ReMe's ``section`` (:data:`SECTIONS`), with
    ``variant_key`` (the paper's row names, :data:`PAPER_VARIANTS`); empty frame when none has
    results yet."""
    runs = section_runs(results_dir, PAPER, check_section(section, SECTIONS, PAPER))
    if not runs.empty:
        variants = dict(PAPER_VARIANTS)
        if (runs["variant_key"] == "amem_reme_full").any():
            del variants["amem_full"]
        runs["variant_key"] = runs["variant_key"].replace(variants)
    return runs


def report_missing(runs: pd.DataFrame, section: str, conf_dir: str | Path | None = None) -> bool:
    """Print which experiment configs declare ``section`` when it has no runs; True when it
    has some."""
    return _report_missing(runs, PAPER, check_section(section, SECTIONS, PAPER), conf_dir)


def _repetitions(run: pd.Series | dict) -> list[tuple[float, float]]:
    """(Avg@k, Pass@k) of each repetition of a run, in [0, 1]."""
    out = []
    i = 0
    while True:
        avg = number(run.get(f"at_k_repetitions/{i}/avg_at_k"))
        pas = number(run.get(f"at_k_repetitions/{i}/pass_at_k"))
        if avg is None or pas is None:
            break
        out.append((avg, pas))
        i += 1
    if out:
        return out
    avg, pas = number(run.get("avg_at_k")), number(run.get("pass_at_k"))
    if avg is not None and pas is not None:
        return [(avg, pas)]
    rate = number(run.get("success_rate"))
    return [] if rate is None else [(rate, rate)]


def long_metrics(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run x repetition x metric: ``avg_at_<k>`` and ``pass_at_<k>`` in percent,
    plus (repetition NaN) ``success_rate`` / ``progress_rate`` (%) and ``avg_steps``."""
    cols = [*RUN_COLUMNS, "repetition", "metric", "value"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for _, run in runs.iterrows():
        base = run_ids(run)
        k = int(number(run.get("runs")) or 1)
        for rep, (avg, pas) in enumerate(_repetitions(run)):
            rows.append({**base, "repetition": rep, "metric": f"avg_at_{k}", "value": 100 * avg})
            rows.append({**base, "repetition": rep, "metric": f"pass_at_{k}", "value": 100 * pas})
        for name, scale in (("success_rate", 100.0), ("progress_rate", 100.0), ("avg_steps", 1)):
            value = number(run.get(name))
            if value is not None:
                rows.append(
                    {**base, "repetition": math.nan, "metric": name, "value": value * scale}
                )
    return pd.DataFrame(rows, columns=cols)


def summarize(long: pd.DataFrame) -> pd.DataFrame:
    """Mean, population std (NaN for one value), number of values and of seeds (and the seeds
    its sweep ran, ``n_expected``), the fewest test tasks of a run and the runs' flags per env,
    backbone, variant and metric."""
    by = ["env", "backbone", "variant", "metric"]
    cols = [*by, "mean", "std", "n", "n_seeds", "n_expected", "n_tasks", "flags"]
    if long.empty:
        return pd.DataFrame(columns=cols)
    g = long.groupby(by, dropna=False, sort=True)
    out = g["value"].agg(mean="mean", std=lambda v: v.std(ddof=0), n="count")
    out["n_seeds"] = g["seed"].nunique()
    out["n_expected"] = expected_seeds(long, g)
    out["n_tasks"] = g["n_tasks"].min()
    out["flags"] = g["flags"].agg(union_flags)
    out.loc[out["n"] < 2, "std"] = math.nan
    return out.reset_index()[cols]


def cell(
    mean: float | None, std: float | None = None, n: int | None = None, seeds: str = ""
) -> str:
    """``"44.50 ± 0.85"`` (the paper's format), just the mean without a std, ``"not run"``
    without a mean; with ``n`` (the values behind it: repetitions x seeds) ``"44.50 ± 0.85
    (n=3)"``, and ``seeds`` (``"2 of 3 seeds"``) said where a sweep lost seeds."""
    if mean is None or pd.isna(mean):
        return NOT_RUN
    text = f"{mean:.2f}" if std is None or pd.isna(std) else f"{mean:.2f} ± {std:.2f}"
    if n is None or pd.isna(n):
        return text
    return f"{text} (n={int(n)}{'; ' + seeds if seeds else ''})"


def _seeds_note(n_seeds: object, expected: object) -> str:
    """``"2 of 3 seeds"`` when fewer seeds ran than the sweep's, else ``""``."""
    if pd.isna(n_seeds) or pd.isna(expected) or int(n_seeds) >= int(expected):
        return ""
    return f"{int(n_seeds)} of {int(expected)} seeds"


def paper_rows(tables: Sequence[str]) -> pd.DataFrame:
    """The paper's stated numbers of ``tables`` (``table1`` ... ``table5``, ``*_prose``,
    ``fig5``), with ``bkey`` (:func:`backbone_key`) added."""
    paper = paper_numbers(PAPER)
    paper = paper[paper["table"].isin(list(tables))].reset_index(drop=True)
    paper["bkey"] = paper["backbone"].map(backbone_key)
    return paper


def natural(text: object) -> list:
    """Sort key that orders ``qwen3-8b`` before ``qwen3-14b``."""
    return [int(t) if t.isdigit() else t for t in re.split(r"(\d+)", str(text).lower())]


def _stats(summary: pd.DataFrame) -> dict[tuple, tuple[float, float]]:
    """(bkey, env, variant, metric) -> (mean, std) of ``summary``."""
    return {k: v[:2] for k, v in _cells(summary).items()}


def _cells(summary: pd.DataFrame) -> dict[tuple, tuple[float, float, int | None, str, str]]:
    """(bkey, env, variant, metric) -> (mean, std, n, seeds note, flags) of ``summary``."""
    if summary.empty:
        return {}
    out = {}
    for _, row in summary.iterrows():
        key = (backbone_key(row["backbone"]), row["env"], row["variant"], row["metric"])
        note = _seeds_note(row.get("n_seeds"), row.get("n_expected", math.nan))
        flags = row.get("flags")
        out[key] = (row["mean"], row["std"], row.get("n"), note,
                    flags if isinstance(flags, str) else "")  # fmt: skip
    return out


def beside_paper(
    summary: pd.DataFrame, table: str, settings: Sequence[str] = ("bfcl",)
) -> pd.DataFrame:
    """Table ``table`` (``table1`` ... ``table5``) in the paper's layout: one row per model and
    variant (the paper's rows, then any of ours it lacks), for each setting and metric our
    ``mean ± std`` beside the paper's; Table 2 / Table 4 add our and the paper's difference to
    their base row (No Memory / summarizer = executor). ``summary`` is :func:`summarize` of the
    table's runs (``env`` = setting)."""
    paper = paper_rows([table])
    pvals = {
        (b, s, v, m): val
        for b, s, v, m, val in zip(
            paper["bkey"],
            paper["setting"],
            paper["variant"],
            paper["metric"],
            paper["value"],
            strict=True,
        )
    }
    models = dict(zip(paper["bkey"], paper["backbone"], strict=True))
    ours = _stats(summary)
    full = _cells(summary)
    keys = list(dict.fromkeys(zip(paper["bkey"], paper["variant"], strict=True)))
    wanted = TABLE_VARIANTS[table]
    if not summary.empty:
        mine = summary[summary["metric"].isin(METRICS) & summary["variant"].isin(wanted)]
        for backbone, variant in zip(mine["backbone"], mine["variant"], strict=True):
            models.setdefault(backbone_key(backbone), backbone)
            if (backbone_key(backbone), variant) not in keys:
                keys.append((backbone_key(backbone), variant))
        ours_models = {backbone_key(b): b for b in mine["backbone"]}
    else:
        ours_models = {}
    order = {v: i for i, v in enumerate(wanted)}
    keys.sort(key=lambda kv: (natural(models.get(kv[0], kv[0])), order.get(kv[1], len(order))))
    delta = DELTAS.get(table)
    labels = {**LABELS, **ROW_LABELS.get(table, {})}
    rows = []
    for bkey, variant in keys:
        row = {
            "model": models.get(bkey, bkey),
            "ours_backbone": ours_models.get(bkey, "-"),
            "variant": variant,
            "method": labels.get(variant, variant),
        }
        flags: list[str] = []
        for setting in settings:
            prefix = "" if len(settings) == 1 else f"{SETTING_LABELS.get(setting, setting)} "
            for metric in METRICS:
                name = prefix + METRIC_LABELS[metric]
                mean, std, n, note, cell_flags = full.get(
                    (bkey, setting, variant, metric), (None, None, None, "", "")
                )
                flags.append(cell_flags)
                row[f"{name} ours"] = cell(mean, std, n, note)
                row[f"{name} paper"] = cell(
                    pvals.get((bkey, setting, variant, metric)),
                    pvals.get((bkey, setting, variant, metric + "_std")),
                )
                if delta is None:
                    continue
                base, suffix = delta
                b = ours.get((bkey, setting, base, metric), (None, None))[0]
                d = None if mean is None or b is None or variant == base else mean - b
                row[f"{name} Δ ours"] = math.nan if d is None else round(d, 2)
                row[f"{name} Δ paper"] = pvals.get(
                    (bkey, setting, variant, f"{metric}_{suffix}"), math.nan
                )
        row["flags"] = union_flags(pd.Series(flags, dtype=object))
        rows.append(row)
    return pd.DataFrame(rows)


def with_average(
    summary: pd.DataFrame, parts: Sequence[str] = ("bfcl", "appworld")
) -> pd.DataFrame:
    """``summary`` plus an ``avg`` env: per backbone, variant and metric that every env of
    ``parts`` has, the mean of their means (the paper's Avg column: (BFCL-V3 + AppWorld) / 2,
    no std)."""
    sub = summary[summary["env"].isin(list(parts))]
    if sub.empty:
        return summary
    means = sub.pivot_table(index=["backbone", "variant", "metric"], columns="env", values="mean")
    if not set(parts) <= set(means.columns):
        return summary
    means = means[list(parts)].dropna()
    g = sub.groupby(["backbone", "variant", "metric"])
    avg = pd.DataFrame(
        {
            "env": "avg",
            "mean": means.mean(axis=1),
            "std": math.nan,
            "n": math.nan,  # a mean of benchmark means, no std (printed without an n)
            "n_seeds": g["n_seeds"].min().reindex(means.index),
            "n_expected": g["n_expected"].max().reindex(means.index),
            "n_tasks": g["n_tasks"].sum().reindex(means.index),
            "flags": g["flags"].agg(union_flags).reindex(means.index),
        }
    ).reset_index()
    return pd.concat([summary, avg[summary.columns]], ignore_index=True)


def table1(summary: pd.DataFrame) -> pd.DataFrame:
    """Table 1: BFCL-V3, AppWorld (``reme_table1`` and ``reme_table1_appworld``) and their
    average (:func:`with_average`) per model and method, ours beside the paper's."""
    return beside_paper(with_average(summary), "table1", ("bfcl", "appworld", "avg"))


def prose_beside_ours(summary: pd.DataFrame) -> pd.DataFrame:
    """The gains the prose states (Table 1: ReMe over No Memory for Qwen3-8B; Table 3:
    selective over full addition) beside ours on BFCL-V3 (the paper's Table 1 gains average
    BFCL-V3 and AppWorld)."""
    paper = paper_rows(["table1_prose", "table3_prose"])
    ours = _stats(summary)
    rows = []
    for _, p in paper.iterrows():
        metric, _, rest = p["metric"].partition("_gain_vs_")
        a = ours.get((p["bkey"], "bfcl", p["variant"], metric), (None, None))[0]
        b = ours.get((p["bkey"], "bfcl", rest, metric), (None, None))[0]
        rows.append(
            {
                "table": p["table"],
                "backbone": p["backbone"],
                "variant": p["variant"],
                "vs": rest,
                "metric": METRIC_LABELS.get(metric, metric),
                "paper_setting": p["setting"],
                "paper": p["value"],
                "ours_bfcl": math.nan if a is None or b is None else round(a - b, 2),
                "source": p["source"],
            }
        )
    return pd.DataFrame(rows)


# --------------------------------------------------------------------------------------------
# figures 3 and 4


def k_of(variant: str) -> int | None:
    """K of a Figure 4 cell (``k_7`` -> 7); None for other variants."""
    match = re.fullmatch(r"k_(\d+)", str(variant))
    return int(match.group(1)) if match else None


def fig4_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Figure 4's values: one row per backbone and K with our Avg@4 and Pass@4 (mean ± std)
    and the paper's K = 5 point (its Table 1 ReMe (fixed) BFCL-V3 cell, K = 5 in the main
    experiments); the curve itself is not in the text."""
    cols = ["backbone", "K", "Avg@4 ours", "Pass@4 ours", "Avg@4 paper", "Pass@4 paper", "n",
            "flags"]  # fmt: skip
    rows = []
    if not summary.empty:
        sub = summary[summary["metric"].isin(METRICS)].copy()
        sub["K"] = sub["variant"].map(k_of)
        sub = sub.dropna(subset=["K"])
        for (backbone, k), grp in sub.groupby(["backbone", "K"]):
            g = grp.set_index("metric")
            row = {"backbone": backbone, "K": int(k), "n": int(g["n"].max()),
                   "flags": union_flags(g["flags"])}  # fmt: skip
            for metric in METRICS:
                ok = metric in g.index
                row[f"{METRIC_LABELS[metric]} ours"] = (
                    cell(g.loc[metric, "mean"], g.loc[metric, "std"], g.loc[metric, "n"])
                    if ok
                    else NOT_RUN
                )
            rows.append(row)
    paper = paper_rows(["table1"])
    paper = paper[(paper["setting"] == "bfcl") & (paper["variant"] == "reme")]
    for bkey, grp in paper.groupby("bkey"):
        pv = grp.set_index("metric")["value"]
        hit = [r for r in rows if backbone_key(r["backbone"]) == bkey and r["K"] == 5]
        if not hit:
            hit = [{"backbone": grp["backbone"].iloc[0], "K": 5, "n": 0, "flags": ""}]
            hit[0].update({f"{METRIC_LABELS[m]} ours": NOT_RUN for m in METRICS})
            rows.append(hit[0])
        for metric in METRICS:
            hit[0][f"{METRIC_LABELS[metric]} paper"] = pv.get(metric, math.nan)
    rows.sort(key=lambda r: (natural(r["backbone"]), r["K"]))
    return pd.DataFrame(rows, columns=cols)


# --------------------------------------------------------------------------------------------
# figure 5: error analysis from episodes.jsonl


def failure_category(episode: EpisodeRecord) -> str:
    """Readable failure category of one failed BFCL episode: ``episode error`` (status error),
    :data:`STEP_LIMIT` (the run ended before the last turn: status ``budget``, fewer
    ``turns_done`` than ``turns``, or the checker's force_terminated), else the checker error
    type mapped by :data:`ERROR_CATEGORIES` (unmapped types stay raw; none: ``unknown``). A
    force_terminated episode that played every turn is :data:`OMISSION`: ReMe's scoring
    (``env.empty_turns=drop``) left out a turn in which the agent made no call."""
    if episode.status == "error":
        return "episode error"
    details = episode.details or {}
    error = details.get("checker_error_type")
    done, turns = number(details.get("turns_done")), number(details.get("turns"))
    if episode.status == "budget" or (done is not None and turns and done < turns):
        return STEP_LIMIT
    if not error:
        return "unknown"
    if error == FORCE_TERMINATED and done is not None and done == turns:
        # every turn was played: the scorer got fewer turns because one without calls was
        # left out (env.empty_turns=drop, ReMe's released scoring)
        return OMISSION
    return ERROR_CATEGORIES.get(str(error), str(error))


def task_outcomes(
    run_dir: str | Path, repetition: int = 0, runs_per_repetition: int | None = None
) -> dict[str, list[EpisodeRecord]]:
    """Task id -> its episodes (all runs) of one repetition; an episode without
    ``repetition`` belongs to repetition ``run // runs_per_repetition`` (0 when that is
    unknown), as in :mod:`memarena.results.metrics`."""
    k = int(number(runs_per_repetition) or 0)
    out: dict[str, list[EpisodeRecord]] = {}
    for ep in read_episodes(run_dir):
        rep = ep.repetition
        if rep is None:
            rep = int(ep.run or 0) // k if k else 0
        if int(rep) == repetition:
            out.setdefault(str(ep.task_id), []).append(ep)
    return out


def failed_tasks(outcomes: dict[str, list[EpisodeRecord]]) -> set[str]:
    """Tasks that never succeeded in the runs of a repetition (Pass@k failures)."""
    return {t for t, eps in outcomes.items() if not any(e.success for e in eps)}


def _pairs(runs: pd.DataFrame, base: str, variant: str):
    """(env, backbone, seed, base run dir, variant run dir, runs per repetition of each) for
    each pair present."""
    if runs.empty:
        return []
    index = ["env", "backbone", "seed", "variant_key"]
    dirs = runs.set_index(index)["run_dir"].to_dict()
    ks = runs.set_index(index)["runs"].to_dict() if "runs" in runs.columns else {}
    out = []
    for key, run_dir in sorted(dirs.items(), key=str):
        env, backbone, seed, v = key
        other = (env, backbone, seed, base)
        if v == variant and other in dirs:
            out.append((env, backbone, seed, dirs[other], run_dir, ks.get(other), ks.get(key)))
    return out


def failure_overlap(
    runs: pd.DataFrame, variant: str = "dynamic", base: str = "none", repetition: int = 0
) -> pd.DataFrame:
    """Figure 5(a): per env, backbone, seed, the Pass@k failures of ``base`` and ``variant`` in
    ``repetition``: how many each has, only ``base`` (corrected by the memory), both, only
    ``variant`` (new failures)."""
    cols = [
        "env",
        "backbone",
        "seed",
        "repetition",
        "base",
        "variant",
        "n_tasks",
        "n_failed_base",
        "n_failed_variant",
        "only_base",
        "both",
        "only_variant",
    ]
    rows = []
    for env, backbone, seed, base_dir, var_dir, ka, kb in _pairs(runs, base, variant):
        a, b = task_outcomes(base_dir, repetition, ka), task_outcomes(var_dir, repetition, kb)
        fa, fb = failed_tasks(a), failed_tasks(b)
        rows.append(
            {
                "env": env,
                "backbone": backbone,
                "seed": seed,
                "repetition": repetition,
                "base": base,
                "variant": variant,
                "n_tasks": len(set(a) | set(b)),
                "n_failed_base": len(fa),
                "n_failed_variant": len(fb),
                "only_base": len(fa - fb),
                "both": len(fa & fb),
                "only_variant": len(fb - fa),
            }
        )
    return pd.DataFrame(rows, columns=cols)


def overlap_beside_paper(overlap: pd.DataFrame) -> pd.DataFrame:
    """Our Figure 5(a) counts beside the paper's (Qwen3-8B: 62 / 47 failures, 17 corrected,
    45 both, 2 new); our backbones other than the paper's show it too, for reference."""
    paper = paper_rows(["fig5"])
    pv = paper.set_index(["variant", "metric"])["value"].to_dict()
    ref = {
        "n_failed_base": pv[("none", "n_failed")],
        "n_failed_variant": pv[("reme", "n_failed")],
        "only_base": pv[("reme", "n_only_none_failed")],
        "both": pv[("reme", "n_both_failed")],
        "only_variant": pv[("reme", "n_only_reme_failed")],
    }
    rows = [{"who": "paper Qwen3-8B (of 150 tasks)", "n_tasks": 150, **ref}]
    for _, r in overlap.iterrows():
        who = f"ours {r['backbone']} seed{r['seed']} rep{r['repetition']} ({r['variant']})"
        rows.append({"who": who, "n_tasks": r["n_tasks"], **{k: r[k] for k in ref}})
    return pd.DataFrame(rows, columns=["who", "n_tasks", *ref])


def failure_categories(
    runs: pd.DataFrame, variant: str = "dynamic", base: str = "none", repetition: int = 0
) -> pd.DataFrame:
    """Figure 5(b): failed tasks (as in :func:`failure_overlap`) per category, for ``base``
    and ``variant``; a task's category is the most frequent :func:`failure_category` over its
    failed runs (ties: the earliest run's). One row per env, backbone, seed, category."""
    cols = ["env", "backbone", "seed", "category", base, variant]
    rows = []
    for env, backbone, seed, base_dir, var_dir, ka, kb in _pairs(runs, base, variant):
        counts = {}
        for name, run_dir, k in ((base, base_dir, ka), (variant, var_dir, kb)):
            outcomes = task_outcomes(run_dir, repetition, k)
            cats = []
            for task in sorted(failed_tasks(outcomes)):
                eps = sorted(outcomes[task], key=lambda e: int(e.run or 0))
                cats.append(Counter(failure_category(e) for e in eps).most_common(1)[0][0])
            counts[name] = Counter(cats)
        for category in sorted(set(counts[base]) | set(counts[variant])):
            rows.append(
                {
                    "env": env,
                    "backbone": backbone,
                    "seed": seed,
                    "category": category,
                    base: counts[base].get(category, 0),
                    variant: counts[variant].get(category, 0),
                }
            )
    return pd.DataFrame(rows, columns=cols)


FIG5B_COLUMNS = [
    "env",
    "backbone",
    "seed",
    "repetition",
    "method",
    "category",
    "count",
    "checker_categories",
    "labeller",
    "prompt_version",
]


def unlabelled_runs(runs: pd.DataFrame, variants: Sequence[str]) -> list[str]:
    """Run dirs among ``variants`` without ``failure_labels.jsonl`` (see
    :mod:`memarena.reports.reme.failure_labels`)."""
    if runs.empty:
        return []
    mine = runs[runs["variant_key"].isin(list(variants))]
    return [str(d) for d in mine["run_dir"] if fl.read_labels(d) is None]


def label_command(results_dir: str | Path) -> str:
    """The command that writes the Figure 5(b) labels into ``results_dir``."""
    return fl.COMMAND.format(results=results_dir)


def failure_categories_llm(
    runs: pd.DataFrame, variant: str = "dynamic", base: str = "none", repetition: int = 0
) -> pd.DataFrame:
    """Figure 5(b) in the paper's categories, labelled by the memory LLM
    (:mod:`memarena.reports.reme.failure_labels`, ``failure_labels.jsonl`` of each run): the failed
    tasks (as in :func:`failure_overlap`) of ``base`` and ``variant`` per category; a task's
    category is the most frequent label over its failed runs (ties: the earliest run's), and
    ``checker_categories`` counts the BFCL checker's readable categories of the same tasks
    (kept beside ours). Runs without labels are left out (:func:`unlabelled_runs`)."""
    rows = []
    for env, backbone, seed, base_dir, var_dir, ka, kb in _pairs(runs, base, variant):
        for name, run_dir, k in ((base, base_dir, ka), (variant, var_dir, kb)):
            labels = fl.read_labels(run_dir)
            if labels is None:
                continue
            by_key = {(str(r["task_id"]), int(r.get("run") or 0)): r for r in labels}
            outcomes = task_outcomes(run_dir, repetition, k)
            tasks: dict[str, list[str]] = {}
            checker: dict[str, Counter] = {}
            for task in sorted(failed_tasks(outcomes)):
                eps = sorted(outcomes[task], key=lambda e: int(e.run or 0))
                got = [by_key.get((task, int(e.run or 0))) for e in eps]
                cats = [g["category"] if g else fl.UNLABELLED for g in got]
                category = Counter(cats).most_common(1)[0][0]
                tasks.setdefault(category, []).append(task)
                checker.setdefault(category, Counter())[
                    Counter(failure_category(e) for e in eps).most_common(1)[0][0]
                ] += 1
            who = fl.labelled_with(labels)
            for category in [*fl.CATEGORIES, fl.UNLABELLED]:
                if category not in tasks and category == fl.UNLABELLED:
                    continue
                beside = checker.get(category, Counter())
                rows.append(
                    {
                        "env": env,
                        "backbone": backbone,
                        "seed": seed,
                        "repetition": repetition,
                        "method": name,
                        "category": category,
                        "count": len(tasks.get(category, [])),
                        "checker_categories": "; ".join(
                            f"{c}: {n}" for c, n in sorted(beside.items())
                        ),
                        "labeller": ", ".join(sorted(w[0] for w in who)),
                        "prompt_version": ", ".join(sorted({w[1] for w in who})),
                    }
                )
    return pd.DataFrame(rows, columns=FIG5B_COLUMNS)


# --------------------------------------------------------------------------------------------
# cost and the cross-paper runs

COST_METRICS = (
    "acquisition_llm_calls_per_task",
    "acquisition_tokens_per_task",
    "memory_experiences",
    "memory_added",
    "memory_deleted",
    "memory_judge_rejected",
    "memory_duplicates",
    "reflection_attempts",
    "reflection_successes",
    "memory_fallbacks",
    "memory_fallback_rate",
    "memory_tokens",
    "tokens_per_task",
)


# --------------------------------------------------------------------------------------------
# ReMe (dynamic) read two ways (protocol.count_retries / protocol.memory_across_runs)

# the runs that retry failed tasks (failure-aware reflection): their numbers depend on the reading
READING_VARIANTS = ("selective_reflection", "dynamic", "dynamic_memarena")
READINGS = {
    "official": (
        "ReMe's released code, the paper's numbers (ablation=reme/dynamic): a task counts as its "
        "last trial, so one that fails and then succeeds on a retry is a success "
        "(bfcl_agent.py keeps only the last trial's result), and the 4 runs of a repetition "
        "share one memory (run_bfcl.py loads it once)"
    ),
    "memarena": (
        "memarena's stricter reading (ablation=reme/dynamic_memarena): a task counts as its first "
        "attempt (retries never enter the metrics) and every run starts from the acquired memory"
    ),
}


def first_attempts(run_dir: str | Path) -> list[EpisodeRecord]:
    """The first attempt of every evaluated task of a run: its ``episodes.jsonl`` record, or,
    where that record is a later trial (``attempt`` > 0: a run with ``count_retries``), the
    attempt-0 copy the run kept in ``reflections.jsonl`` (the last one written)."""
    episodes = latest(read_episodes(run_dir))
    path = Path(run_dir) / "reflections.jsonl"
    firsts: dict[tuple, EpisodeRecord] = {}
    if path.exists():
        for record in read_jsonl(path):
            rec = EpisodeRecord.from_json(record)
            if not rec.attempt:
                firsts[rec.key] = rec
    return [firsts.get(e.key, e) if e.attempt else e for e in episodes]


def _protocol_flag(run_dir: str | Path, key: str) -> bool | None:
    """``protocol.<key>`` of the run's ``config.yaml`` (False when the key is absent: runs made
    before it existed did what its default does; None without a config.yaml)."""
    path = Path(run_dir) / "config.yaml"
    if not path.exists():
        return None
    protocol = (yaml.safe_load(path.read_text()) or {}).get("protocol") or {}
    return bool(protocol.get(key, False))


def dynamic_readings(runs: pd.DataFrame) -> pd.DataFrame:
    """Per run of a variant that retries (:data:`READING_VARIANTS`): which reading it ran
    (``count_retries``: retries counted; ``memory_across_runs``: one memory for the runs of a
    repetition; from its config.yaml, or from its records), Avg@k / Pass@k (%) as it counted
    them and recomputed from the first attempts alone (:func:`first_attempts`; equal when
    retries were not counted). The official run's first-attempt numbers still come from a
    memory shared across runs; the memarena reading in full is the ``dynamic_memarena`` run."""
    cols = ["env", "backbone", "variant", "seed", "count_retries", "memory_across_runs"]
    cols += ["Avg@k counted", "Pass@k counted", "Avg@k first attempt", "Pass@k first attempt"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    runs = runs.drop_duplicates("run_dir")  # a run may feed several sections
    for _, run in runs[runs["variant_key"].isin(READING_VARIANTS)].iterrows():
        k = int(number(run.get("runs")) or 1)
        try:
            counted = latest(read_episodes(run["run_dir"]))
        except FileNotFoundError:
            counted = []
        if not counted:  # a run with no episodes on disk: nothing to read two ways
            continue
        firsts = first_attempts(run["run_dir"])
        flag = _protocol_flag(run["run_dir"], "count_retries")
        row = {
            "env": run["env"],
            "backbone": run["backbone"],
            "variant": run["variant_key"],
            "seed": run.get("seed"),
            "count_retries": any(e.attempt for e in counted) if flag is None else flag,
            "memory_across_runs": _protocol_flag(run["run_dir"], "memory_across_runs"),
        }
        for label, records in (("counted", counted), ("first attempt", firsts)):
            m = compute_metrics(records, runs_per_repetition=k)
            row[f"Avg@k {label}"] = round(100 * m["avg_at_k"], 2)
            row[f"Pass@k {label}"] = round(100 * m["pass_at_k"], 2)
        rows.append(row)
    out = pd.DataFrame(rows, columns=cols)
    return out.sort_values(["env", "backbone", "variant", "seed"]).reset_index(drop=True)


def fallbacks(run: pd.Series | dict) -> float | None:
    """The memory LLM's malformed answers of a run, all kinds: the sum of the flattened
    ``memory_fallbacks/<kind>`` counts (the pipeline writes ``memory_fallbacks: {}`` and a
    ``memory_fallback_rate`` for a run without any: 0), None for a run that records neither."""
    run = dict(run)
    counts = [number(v) for k, v in run.items() if str(k).startswith("memory_fallbacks/")]
    counts = [c for c in counts if c is not None]
    if not counts and number(run.get("memory_fallback_rate")) is None:
        return None
    return sum(counts)


def cost_table(runs: pd.DataFrame) -> pd.DataFrame:
    """Per env, backbone, variant: the mean over seeds of acquisition LLM calls and tokens per
    train task, memory size and its changes (added, deleted, judge-rejected, duplicates),
    reflections, fallbacks (``memory_fallbacks``: all kinds, :func:`fallbacks`; and
    ``memory_fallback_rate``), tokens per test task and the memory LLM's tokens per purpose
    (``tokens/<purpose>``: summarize, judge, generalize, rerank, rewrite, reflect) and calls
    (``calls/<purpose>``), from ``memory_token_usage``."""
    by = ["env", "backbone", "variant"]
    if runs.empty:
        return pd.DataFrame(columns=[*by, "n_seeds", *COST_METRICS])
    rows = []
    for _, run in runs.iterrows():
        row = run_ids(run)
        row.update({m: number(run.get(m)) for m in COST_METRICS})
        row["memory_fallbacks"] = fallbacks(run)
        for purpose, tokens in purpose_tokens(run).items():
            row[f"tokens/{purpose}"] = tokens
            row[f"calls/{purpose}"] = purpose_calls(run, purpose)
        rows.append(row)
    df = pd.DataFrame(rows)
    values = [c for c in df.columns if c not in [*by, "seed", "experiment", "fingerprint", "flags"]]
    df[values] = df[values].apply(pd.to_numeric, errors="coerce")
    g = df.groupby(by, sort=True)
    out = g[values].mean()
    out.insert(0, "n_seeds", g["seed"].nunique())
    out = out.dropna(axis=1, how="all")
    out["flags"] = g["flags"].agg(union_flags)
    out = out.reset_index()
    order = {"none": 0, "reme": 1, "dynamic": 2, "dynamic_memarena": 3}
    out["_o"] = out["variant"].map(order).fillna(4)
    return out.sort_values(["env", "backbone", "_o", "variant"]).drop(columns="_o")


def other_benchmarks(summary: pd.DataFrame) -> pd.DataFrame:
    """No Memory vs ReMe on PDDL / ALFWorld / ScienceWorld: success and progress rate (%) and
    steps, mean ± population std over seeds, and ReMe's gain in points."""
    cols = ["env", "backbone", "variant", "success_rate", "progress_rate", "avg_steps", "n_seeds",
            "flags"]  # fmt: skip
    if summary.empty:
        return pd.DataFrame(columns=[*cols, "success_gain_pp"])
    sub = summary[summary["metric"].isin(cols)]
    rows = []
    for (env, backbone, variant), grp in sub.groupby(["env", "backbone", "variant"]):
        g = grp.set_index("metric")
        row = {"env": env, "backbone": backbone, "variant": variant}
        for m in ("success_rate", "progress_rate", "avg_steps"):
            row[m] = cell(g.loc[m, "mean"], g.loc[m, "std"], g.loc[m, "n"]) if m in g.index else "-"
        row["n_seeds"] = int(g["n_seeds"].max())
        row["flags"] = union_flags(g["flags"])
        means = sub[
            (sub["env"] == env) & (sub["backbone"] == backbone) & (sub["metric"] == "success_rate")
        ].set_index("variant")["mean"]
        gain = means.get(variant, math.nan) - means.get("none", math.nan)
        row["success_gain_pp"] = round(gain, 2) if variant != "none" else math.nan
        rows.append(row)
    out = pd.DataFrame(rows, columns=[*cols, "success_gain_pp"])
    order = ordered(list(out["variant"].unique()), ("none", "reme"))
    out["_o"] = out["variant"].map({v: i for i, v in enumerate(order)})
    return out.sort_values(["env", "backbone", "_o"]).drop(columns="_o").reset_index(drop=True)
