"""Helpers shared by the per-paper report modules (``memco_report``, ``evograph_report``,
``reme_report``): reading one experiment's runs, the "no results yet" hint, numbers and token
counts from flattened metrics, and writing tables and figures."""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memarena.results.collect import collect


def variant_key(method: str, ablation: object) -> str:
    """``method`` without ablation, else the ablation's last name component."""
    if ablation is None or (isinstance(ablation, float) and math.isnan(ablation)):
        return str(method)
    text = str(ablation)
    if text in ("", "none", "null"):
        return str(method)
    return re.split(r"[/\-]", text)[-1]


def backbone_key(name: object) -> str:
    """Lower-case letters and digits only: ``Qwen3-32B`` and ``qwen3_32b`` match."""
    return re.sub(r"[^a-z0-9]", "", str(name).lower())


def number(value: Any) -> float | None:
    """``value`` as a float; None for None, booleans, NaN and what does not convert."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def ordered(names: Sequence[str], order: Sequence[str]) -> list[str]:
    """``names`` in the order of ``order``, the others after them alphabetically."""
    known = [m for m in order if m in names]
    return known + sorted(m for m in names if m not in known)


def purpose_tokens(run: pd.Series | dict) -> dict[str, float]:
    """Tokens per purpose from the flattened ``token_usage/...`` entries of a run.

    ``token_usage`` (or ``memory_token_usage``) may map purpose -> tokens, or purpose ->
    {prompt_tokens, completion_tokens, ...}; a purpose's ``total`` / ``total_tokens`` /
    ``tokens`` entry wins over summing its prompt and completion tokens (other entries, e.g.
    ``calls``, are ignored).
    """
    leaves: dict[str, dict[str, float]] = {}
    for key, value in dict(run).items():
        key = str(key).removeprefix("memory_")  # memory_token_usage/... (G-Memory, ReMe)
        if not key.startswith("token_usage/"):
            continue
        v = number(value)
        if v is None:
            continue
        rest = str(key)[len("token_usage/") :].split("/")
        purpose, leaf = rest[0], ("/".join(rest[1:]) or "")
        leaves.setdefault(purpose, {})[leaf] = v
    out = {}
    for purpose, parts in leaves.items():
        for total in ("", "total", "total_tokens", "tokens"):
            if total in parts:
                out[purpose] = parts[total]
                break
        else:
            out[purpose] = sum(
                v for k, v in parts.items() if k in ("prompt_tokens", "completion_tokens")
            )
    return out


def run_ids(run: pd.Series | dict) -> dict[str, Any]:
    """experiment, env, backbone, variant (``variant_key``, else the method) and seed of one
    run row: the identifying columns of the reports' long tables."""
    return {
        "experiment": run["experiment"],
        "env": run["env"],
        "backbone": run["backbone"],
        "variant": run.get("variant_key", run["method"]),
        "seed": run["seed"],
    }


def experiment_runs(results_dir: str | Path, experiment: str) -> pd.DataFrame:
    """The run rows of ``experiment`` with ``variant_key`` added (empty frame when it has no
    results yet)."""
    try:
        runs = collect(Path(results_dir) / experiment)
    except FileNotFoundError:
        return pd.DataFrame()
    runs = runs[runs["experiment"] == experiment].copy()
    abl = runs["ablation"] if "ablation" in runs.columns else [None] * len(runs)
    runs["variant_key"] = [variant_key(m, a) for m, a in zip(runs["method"], abl, strict=True)]
    return runs.reset_index(drop=True)


def report_missing(runs: pd.DataFrame, experiment: str, command: str) -> bool:
    """Print the one-line hint when ``experiment`` has no results; True when it has some."""
    if runs.empty:
        print(
            f"no results for {experiment} yet: `{command}` produces them; "
            "showing the paper's numbers alone"
        )
        return False
    return True


def mean_bars(ax, xs, stats: pd.DataFrame, variants, width: float, label: str) -> None:
    """One bar per variant: ``stats["mean"]`` with ``stats["std"]`` as error bar (none when the
    std is NaN, e.g. a single seed); ``stats`` is indexed by variant."""
    means = [stats["mean"].get(v, math.nan) for v in variants]
    stds = [stats["std"].get(v, math.nan) for v in variants]
    ax.bar(xs, means, width, yerr=[0 if pd.isna(s) else s for s in stds], capsize=2, label=label)


def mean_line(ax, xs, stats: pd.DataFrame, label: str) -> None:
    """One line of ``stats["mean"]`` over ``xs`` with ``stats["std"]`` as error bars (none
    where the std is NaN)."""
    ax.errorbar(xs, stats["mean"], yerr=stats["std"].fillna(0), marker="o", capsize=2, label=label)


def save_figure(fig, out_dir: str | Path, name: str) -> Path:
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    return path


def write_table(df: pd.DataFrame, out_dir: str | Path, name: str) -> Path:
    """Write ``df`` as ``<name>.csv`` into ``out_dir`` (index kept when it is not a range)."""
    path = Path(out_dir) / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=not isinstance(df.index, pd.RangeIndex))
    return path
