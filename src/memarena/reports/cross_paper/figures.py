"""Figures of notebooks/cross_paper.ipynb (the tables:
:mod:`memarena.reports.cross_paper.tables`)."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from memarena.reports.common import (
    save_figure,
)


def figure_ranks(ranks: pd.DataFrame, out_dir: str | Path, name: str = "cross_paper_ranks.png"):
    """Horizontal bars of each method's average rank (lower is better), one bar per ranked
    metric."""
    import matplotlib.pyplot as plt

    cols = [c for c in ranks.columns if c.startswith("avg_rank_")]
    fig, ax = plt.subplots(figsize=(7, 0.35 * len(ranks) + 1.5))
    height = 0.8 / max(1, len(cols))
    ys = range(len(ranks))
    for i, col in enumerate(cols):
        ax.barh(
            [y + i * height for y in ys], ranks[col], height, label=col.removeprefix("avg_rank_")
        )
    ax.set_yticks([y + (len(cols) - 1) * height / 2 for y in ys], list(ranks.index))
    ax.invert_yaxis()
    ax.set_xlabel("average rank over blocks (1 = best)")
    ax.legend()
    return save_figure(fig, out_dir, name), fig
