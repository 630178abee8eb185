"""ReMe's Table 1 on BFCL-V3 read by where the pool came from (notebooks/reme.ipynb): the pools
rebuilt here beside the pools ReMe's authors released, so that what acquisition does and what
evaluation does can be told apart (``reme_table1`` and ``reme_table1_released_pool`` write into
the same experiment). Every row is listed whether it ran or not."""

from __future__ import annotations

import pandas as pd

from memarena.reports.reme.tables import (
    LABELS,
    METRIC_LABELS,
    METRICS,
    _cells,
    backbone_key,
    cell,
    paper_rows,
)

# variant -> (the pool it evaluates: which code built it, how evaluation treats it)
POOL_ROWS = {
    "reme": (
        "rebuilt here: ReMe 26cb5ca6 (init_task_memory_pool.py, reme2's summary flow with "
        "deduplication, one task at a time)",
        "fixed",
    ),
    "no_dedup": (
        "rebuilt here: ReMe's September 2025 flow (1257c30e, no deduplication)",
        "fixed",
    ),
    "released_pool": (
        "released: docs/library/paper_data/task/bfcl_<model>.jsonl (built 2025-09-19/20 by code "
        "not in the repository)",
        "fixed (run_bfcl.py: load_memory, no addition, no deletion)",
    ),
    "dynamic": ("rebuilt here (the reme row's snapshot)", "dynamic (reme2: selective addition)"),
    "released_pool_dynamic": ("released (as above)", "dynamic (reme2: selective addition)"),
}
BACKBONES = ("qwen3-8b", "qwen3-14b", "qwen3-32b")


def pool_rows(summary: pd.DataFrame, backbones: tuple[str, ...] = BACKBONES) -> pd.DataFrame:
    """One row per backbone and :data:`POOL_ROWS` variant on BFCL-V3: the pool's source, the
    evaluation, ours (mean ± population std over repetitions and seeds, ``not run`` when
    absent) and the paper's number where the paper has that row (ReMe fixed / dynamic; the
    paper does not say which pool its rows used). ``summary``: :func:`~.tables.summarize` of
    the ``table1`` runs."""
    ours = _cells(summary)
    paper = paper_rows(["table1"])
    bfcl = paper[paper["setting"] == "bfcl"]
    keys = zip(bfcl["bkey"], bfcl["variant"], bfcl["metric"], strict=True)
    stated = dict(zip(keys, bfcl["value"], strict=True))
    rows = []
    for backbone in backbones:
        bkey = backbone_key(backbone)
        for variant, (pool, evaluation) in POOL_ROWS.items():
            row = {"model": backbone, "row": LABELS.get(variant, variant), "pool": pool,
                   "evaluation": evaluation}  # fmt: skip
            for metric in METRICS:
                mean, std, n, note, _ = ours.get((bkey, "bfcl", variant, metric),
                                                 (None, None, None, "", ""))  # fmt: skip
                row[f"{METRIC_LABELS[metric]} ours"] = cell(mean, std, n, note)
                value = stated.get((bkey, variant, metric))
                spread = stated.get((bkey, variant, f"{metric}_std"))
                paper_cell = "-" if value is None else cell(value, spread)
                row[f"{METRIC_LABELS[metric]} paper"] = paper_cell
            rows.append(row)
    return pd.DataFrame(rows)
