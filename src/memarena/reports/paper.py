"""Numbers that papers report, shipped as package data (``reports/paper_numbers/<name>.csv``).

Each CSV holds one row per reported number with columns ``table`` (``table12``, ``appH``,
``table1_prose`` ...), ``setting`` (benchmark / split), ``backbone``, ``variant`` (method or
ablation), ``metric``, ``value`` and ``source`` (line in the paper's text copy + quoted words;
values derived by arithmetic say so there). Notebooks put them beside our results.
"""

from __future__ import annotations

from importlib import resources

import pandas as pd

COLUMNS = ("table", "setting", "backbone", "variant", "metric", "value", "source")


def available() -> list[str]:
    """Names of the papers whose numbers ship with memarena."""
    folder = resources.files("memarena.reports") / "paper_numbers"
    return sorted(p.name[: -len(".csv")] for p in folder.iterdir() if p.name.endswith(".csv"))


def paper_numbers(name: str = "memco") -> pd.DataFrame:
    """The reported numbers of paper ``name`` as a DataFrame (``value`` is float)."""
    path = resources.files("memarena.reports") / "paper_numbers" / f"{name}.csv"
    if not path.is_file():
        raise FileNotFoundError(
            f"memarena: no reported numbers for paper {name!r}; available: {available()}"
        )
    with path.open("r", encoding="utf-8") as fh:
        df = pd.read_csv(fh, dtype={c: str for c in COLUMNS if c != "value"})
    missing = [c for c in COLUMNS if c not in df.columns]
    if missing:
        raise ValueError(f"memarena: {path} lacks columns {missing}")
    df["value"] = df["value"].astype(float)
    return df[list(COLUMNS)]
