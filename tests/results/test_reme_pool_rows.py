"""The ReMe notebook's released-pool rows: every pool row listed per backbone whether it ran or
not, ours from the runs' summary (mean ± population std), the paper's only where the paper has
that row."""

from __future__ import annotations

import pandas as pd

from memarena.reports.reme import tables as rr
from memarena.reports.reme.pools import POOL_ROWS, pool_rows


def _summary(variant: str, values: list[float]) -> pd.DataFrame:
    rows = [
        {"env": "bfcl", "backbone": "qwen3-8b", "variant": variant, "metric": metric,
         "value": v, "seed": 0, "n_tasks": 150, "flags": "", "run_dir": "x", "repetition": i}
        for metric in rr.METRICS for i, v in enumerate(values)
    ]  # fmt: skip
    return rr.summarize(pd.DataFrame(rows))


def test_released_and_rebuilt_rows_stand_together():
    table = pool_rows(_summary("released_pool", [58.67, 60.67, 59.33]))
    assert len(table) == 3 * len(POOL_ROWS)
    mine = table[(table["model"] == "qwen3-8b")].set_index("row")
    released = mine.loc["ReMe (fixed), released pool"]
    assert released["Avg@4 ours"].startswith("59.56 ± 0.83 (n=3")  # population std (ddof 0)
    assert released["Avg@4 paper"] == "-"  # the paper has no row by that name
    assert "paper_data/task" in released["pool"]
    rebuilt = mine.loc["ReMe (fixed)"]
    assert rebuilt["Avg@4 ours"] == "not run" and rebuilt["Avg@4 paper"] != "-"
    assert "26cb5ca6" in rebuilt["pool"]
    assert "1257c30e" in mine.loc["ReMe (fixed), pool rebuilt without dedup"]["pool"]
