"""Figures of notebooks/evograph.ipynb (the tables: :mod:`memarena.reports.evograph.tables`)."""

from __future__ import annotations

import math
import textwrap
from collections.abc import Sequence
from pathlib import Path

import pandas as pd

from memarena.reports.common import (
    backbone_key,
    mean_bars,
    not_run_note,
    of_setting,
    save_figure,
    shared_legend,
    variant_key,
    write_table,
)

__all__ = ["backbone_key", "variant_key", "write_table"]  # re-exported for the notebook

from memarena.reports.evograph.tables import (
    FIG3_VARIANTS,
    SCORE,
    paper_rows,
)


def figure_fig3(summary: pd.DataFrame, out_dir: str | Path, name: str = "fig3_ablation.png"):
    """Figure 3: bars of our score per controller variant (one group per backbone) on
    HotpotQA, PDDL, FEVER; the paper's stated / derived values as red (GPT-4o-mini) and dark
    red (Qwen2.5-7B) crosses."""
    import matplotlib.pyplot as plt

    paper = paper_rows(["fig3"])
    paper = paper[paper["metric"].isin(["progress", "em"])]
    variants = list(FIG3_VARIANTS)
    ours = (
        summary[summary["metric"].isin(["progress", "em"]) & summary["variant"].isin(variants)]
        if not summary.empty
        else summary
    )
    backbones = sorted(ours["backbone"].unique()) if not ours.empty else []
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.6))
    for ax, setting in zip(axes, ("hotpotqa", "pddl", "fever"), strict=True):
        n = max(1, len(backbones))
        width = 0.8 / n
        ran: set[str] = set()
        for j, backbone in enumerate(backbones):
            sub = ours[of_setting(ours["setting"], setting) & (ours["backbone"] == backbone)]
            sub = sub.set_index("variant")
            xs = [i + (j - (n - 1) / 2) * width for i in range(len(variants))]
            mean_bars(ax, xs, sub, variants, width, f"ours {backbone}")
            ran |= set(sub.dropna(subset=["mean"]).index)
        in_setting = paper[paper["setting"] == setting]
        for k, (pbackbone, grp) in enumerate(in_setting.groupby("backbone")):
            pv = grp.set_index("variant")["value"]
            ax.scatter(
                range(len(variants)),
                [pv.get(v, math.nan) for v in variants],
                marker="x" if k == 0 else "+",
                s=60,
                color="red" if k == 0 else "darkred",
                zorder=3,
                label=f"paper {pbackbone}",
            )
        ax.set_xticks(range(len(variants)), [v.replace("_", "+") for v in variants])
        ax.set_title(f"{setting} ({SCORE[setting]}, %)")
        not_run_note(ax, variants, ran)
    shared_legend(fig, axes)  # in a panel it covered the PDDL bars
    return save_figure(fig, out_dir, name), fig


def figure_chain(chain: Sequence[dict], out_dir: str | Path, name: str = "fig2_case_study.png"):
    """The version chain as boxes (green: active, grey: archived) joined by REVISE arrows, each
    with its version, id, |Omega+| / |Omega-| and the start of its content."""
    import matplotlib.pyplot as plt

    n = max(1, len(chain))
    fig, ax = plt.subplots(figsize=(max(4.0, 3.6 * n), 3.2))
    for k, ins in enumerate(chain):
        content = textwrap.shorten(str(ins.get("content", "")), width=120, placeholder=" ...")
        label = (
            f"v{ins.get('version')}  {ins.get('id')}\n"
            f"Ω+ {len(ins.get('pos') or [])}   Ω- {len(ins.get('neg') or [])}   "
            f"{'active' if ins.get('active') else 'archived'}\n\n"
            + "\n".join(textwrap.wrap(content, 28)[:5])
        )
        ax.text(
            k * 3.6,
            0,
            label,
            ha="center",
            va="center",
            fontsize=8,
            bbox={
                "boxstyle": "round,pad=0.5",
                "facecolor": "#c8e6c9" if ins.get("active") else "#e0e0e0",
                "edgecolor": "black",
            },
        )
        if k:
            ax.annotate(
                "",
                xy=(k * 3.6 - 1.55, 0),
                xytext=((k - 1) * 3.6 + 1.55, 0),
                arrowprops={"arrowstyle": "->", "lw": 1.5},
            )
            ax.text((k - 0.5) * 3.6, 0.25, "REVISE", ha="center", fontsize=7)
    ax.set_xlim(-1.9, (n - 1) * 3.6 + 1.9)
    ax.set_ylim(-1.2, 1.2)
    ax.axis("off")
    ax.set_title("insight version chain (oldest left)")
    return save_figure(fig, out_dir, name), fig
