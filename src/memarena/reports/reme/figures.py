"""Figures of notebooks/reme.ipynb (the tables: :mod:`memarena.reports.reme.tables`)."""

from __future__ import annotations

import math
from pathlib import Path

import pandas as pd

from memarena.reports.common import (
    mean_bars,
    mean_line,
    no_runs_note,
    save_figure,
)
from memarena.reports.reme.tables import (
    LABELS,
    METRIC_LABELS,
    METRICS,
    TABLE_VARIANTS,
    k_of,
    overlap_beside_paper,
    paper_rows,
)


def figure3(summary: pd.DataFrame, out_dir: str | Path, name: str = "fig3_retrieval_keys.png"):
    """Figure 3: Avg@4 / Pass@4 bars per retrieval key (one group per backbone of ours); the
    paper's Table 5 values of the same cells as crosses (Figure 3's bar heights are not in the
    text)."""
    import matplotlib.pyplot as plt

    keys = list(TABLE_VARIANTS["table5"])
    paper = paper_rows(["table5"])
    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    mine = summary[summary["variant"].isin(keys)] if not summary.empty else summary
    backbones = sorted(mine["backbone"].unique()) if not mine.empty else []
    markers = ("x", "+", "1")
    for ax, metric in zip(axes, METRICS, strict=True):
        n = max(1, len(backbones))
        width = 0.8 / n
        for j, backbone in enumerate(backbones):
            sub = mine[(mine["backbone"] == backbone) & (mine["metric"] == metric)]
            xs = [i + (j - (n - 1) / 2) * width for i in range(len(keys))]
            mean_bars(ax, xs, sub.set_index("variant"), keys, width, f"ours {backbone}")
        for k, (pb, grp) in enumerate(paper[paper["metric"] == metric].groupby("backbone")):
            pv = grp.set_index("variant")["value"]
            ax.scatter(
                range(len(keys)),
                [pv.get(v, math.nan) for v in keys],
                marker=markers[k % len(markers)],
                s=60,
                color="red",
                zorder=3,
                label=f"paper (Table 5) {pb}",
            )
        ax.set_xticks(range(len(keys)), [LABELS[v] for v in keys], fontsize="small")
        ax.set_title(f"BFCL-V3 {METRIC_LABELS[metric]} (%)")
        if not backbones:
            no_runs_note(ax)
        ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig


def figure4(summary: pd.DataFrame, out_dir: str | Path, name: str = "fig4_top_k.png"):
    """Figure 4: our Avg@4 and Pass@4 against K (error bars: std), one line per backbone and
    metric; the paper's K = 5 points (Table 1 ReMe (fixed)) as crosses."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.5, 3.8))
    sub = pd.DataFrame()
    if not summary.empty:
        sub = summary[summary["metric"].isin(METRICS)].copy()
        sub["K"] = sub["variant"].map(k_of)
        sub = sub.dropna(subset=["K"]).sort_values("K")
        for (backbone, metric), grp in sub.groupby(["backbone", "metric"]):
            mean_line(ax, grp["K"], grp, f"ours {backbone} {METRIC_LABELS[metric]}")
    paper = paper_rows(["table1"])
    paper = paper[(paper["setting"] == "bfcl") & (paper["variant"] == "reme")]
    for (pb, metric), grp in paper[paper["metric"].isin(METRICS)].groupby(["backbone", "metric"]):
        ax.scatter([5], grp["value"], marker="x", color="red", zorder=3)
        ax.annotate(f"{pb} {METRIC_LABELS[metric]}", (5, grp["value"].iloc[0]), fontsize=6,
                    xytext=(6, 0), textcoords="offset points", va="center")  # beside the cross
    ax.scatter([], [], marker="x", color="red", label="paper K=5 (Table 1 ReMe fixed)")
    ax.set_xlabel("retrieved experiences K")
    ax.set_ylabel("BFCL-V3 (%)")
    ax.set_xticks(range(0, 11))
    if sub.empty:
        no_runs_note(ax)
    ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig


def figure5(
    overlap: pd.DataFrame,
    categories: pd.DataFrame,
    out_dir: str | Path,
    name: str = "fig5_failures.png",
):
    """Figure 5: (a) two overlapping circles of the failures of No Memory and ReMe (ours: the
    first row of ``overlap``; beside it the paper's counts), (b) failed tasks per category for
    both (ours, first env / backbone / seed of ``categories``)."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Circle

    paper = overlap_beside_paper(overlap.head(1))
    fig, axes = plt.subplots(1, 3, figsize=(14, 3.8), gridspec_kw={"width_ratios": [1, 1, 1.6]})
    for ax, (_, row) in zip(axes[:2], paper.iterrows(), strict=False):
        ax.add_patch(Circle((-0.5, 0), 1, alpha=0.4, color="tab:orange"))
        ax.add_patch(Circle((0.5, 0), 1, alpha=0.4, color="tab:blue"))
        for x, key in ((-1.0, "only_base"), (0, "both"), (1.0, "only_variant")):
            ax.text(x, 0, f"{int(row[key])}", ha="center", va="center", fontsize=12)
        ax.text(-0.5, 1.15, f"No Memory ({int(row['n_failed_base'])})", ha="center")
        ax.text(0.5, -1.3, f"ReMe ({int(row['n_failed_variant'])})", ha="center")
        ax.set_xlim(-1.7, 1.7)
        ax.set_ylim(-1.5, 1.5)
        ax.set_aspect("equal")
        ax.axis("off")
        ax.set_title(str(row["who"]), fontsize=8)
    if len(paper) < 2:
        axes[1].axis("off")
        axes[1].text(0.5, 0.5, "no runs yet", ha="center", va="center")
    ax = axes[2]
    if categories.empty:
        ax.text(0.5, 0.5, "no runs yet (paper: Reasoning Error 22 -> 14)", ha="center")
        ax.axis("off")
    else:
        first = categories.iloc[0]
        sub = categories[
            (categories["env"] == first["env"])
            & (categories["backbone"] == first["backbone"])
            & (categories["seed"] == first["seed"])
        ]
        names = list(sub.columns[-2:])
        ys = range(len(sub))
        for j, col in enumerate(names):
            ax.barh([y + (j - 0.5) * 0.4 for y in ys], sub[col], 0.4, label=col)
        ax.set_yticks(list(ys), list(sub["category"]), fontsize="small")
        ax.set_xlabel("failed tasks")
        ax.set_title(f"failure categories, ours {first['backbone']} seed{first['seed']}")
        ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig


def figure5b(
    categories: pd.DataFrame,
    out_dir: str | Path,
    name: str = "fig5b_failure_categories.png",
    missing: str = "",
):
    """Figure 5(b): failed tasks per LLM-labelled category (:func:`failure_categories_llm`),
    No Memory beside ReMe, ours for the first env / backbone / seed; the paper's one stated
    pair (Reasoning Error 22 -> 14, Qwen3-8B) in the title."""
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 3.8))
    paper = "paper Qwen3-8B: Reasoning Error 22 -> 14"
    if categories.empty:
        ax.text(0.5, 0.5, f"no failure labels yet{': ' + missing if missing else ''}\n({paper})",
                ha="center", va="center", wrap=True, fontsize=8)  # fmt: skip
        ax.axis("off")
        return save_figure(fig, out_dir, name), fig
    first = categories.iloc[0]
    sub = categories[
        (categories["env"] == first["env"])
        & (categories["backbone"] == first["backbone"])
        & (categories["seed"] == first["seed"])
    ]
    methods = list(dict.fromkeys(sub["method"]))
    cats = list(dict.fromkeys(sub["category"]))
    width = 0.8 / max(1, len(methods))
    for j, method in enumerate(methods):
        counts = sub[sub["method"] == method].set_index("category")["count"]
        ys = [y + (j - (len(methods) - 1) / 2) * width for y in range(len(cats))]
        ax.barh(ys, [counts.get(c, 0) for c in cats], width,
                label=LABELS.get(method, method))  # fmt: skip
    ax.set_yticks(range(len(cats)), cats, fontsize="small")
    ax.invert_yaxis()
    ax.set_xlabel("failed tasks")
    ax.set_title(
        f"failure categories (LLM-labelled by {first['labeller']}, {first['prompt_version']}), "
        f"ours {first['backbone']} seed{first['seed']}\n{paper}",
        fontsize=8,
    )
    ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig
