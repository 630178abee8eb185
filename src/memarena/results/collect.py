"""Collect run results into DataFrames, tables and one overview figure.

Reads only the results layout::

    <results_dir>/<experiment>/<env>/<method>[+<ablation>]/<backbone>/seed<k>/metrics.json

:func:`collect` gives one row per run directory (identification keys, the report membership
the run's config declares, flattened metrics); :func:`in_report` selects the runs of one paper
section by that membership;
:func:`summary_table` aggregates seeds into mean / std columns; :func:`format_summary` and
:func:`to_markdown` render it; :func:`write_tables` writes ``runs.csv``, ``summary.csv`` and
``summary.md``; :func:`plot_summary` draws bars with error bars over seeds.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memarena.core.jsonl import read_jsonl
from memarena.results.metrics import flatten
from memarena.results.records import EpisodeRecord

log = logging.getLogger(__name__)

LAYOUT = "<experiment>/<env>/<method>[+<ablation>]/<backbone>/seed<k>/metrics.json"
ID_KEYS = ("experiment", "env", "method", "ablation", "backbone", "backbone_is_llm", "seed")
REPORT_COLUMNS = ("report_paper", "report_tables")
DEFAULT_BY = ("experiment", "env", "variant", "backbone")
DEFAULT_METRICS = ("success_rate", "progress_rate", "avg_steps", "tokens_per_task")
OPTIONAL_METRICS = ("avg_at_k", "pass_at_k")
_NO_ABLATION = (None, "", "none")
# flags that describe a paper cell rather than disqualify it (noted, not warned about): MemCo's
# PDDL memories are acquired on the test problems, and its FEVER runs give MemCo another step
# budget than the baselines, as its released code does
INFORMATIONAL_FLAGS = frozenset({"train_test_overlap", "method_step_budget"})


def backbone_key(name: object) -> str:
    """Lower-case letters and digits of a model name without its organisation:
    ``Qwen/Qwen3-32B``, ``Qwen3-32B``, ``qwen3-32b`` and ``qwen3_32b`` are all ``qwen332b``."""
    return re.sub(r"[^a-z0-9]", "", str(name).rsplit("/", 1)[-1].lower())


def _is_run_dir(path: Path) -> bool:
    return path.name.startswith("seed") and path.name[4:].isdigit()


def _ids_from_path(run_dir: Path) -> dict[str, Any]:
    """Identification keys read off the last five directory names of a run directory."""
    parts = run_dir.resolve().parts[-5:]
    if len(parts) != 5 or not _is_run_dir(run_dir):
        return {}
    experiment, env, variant, backbone, seed = parts
    method, _, ablation = variant.partition("+")
    return {
        "experiment": experiment,
        "env": env,
        "method": method,
        "ablation": ablation or "none",
        "backbone": backbone,
        "seed": int(seed[4:]),
        "variant": variant,
    }


def membership(metrics: Mapping[str, Any]) -> dict[str, Any]:
    """The report membership a run's config declared, from its metrics.json ``report`` node
    (``{"paper": <str|null>, "tables": [<str>, ...]}``, copied from the config's ``report``):
    ``report_paper`` (str, or None when none is declared) and ``report_tables`` (a tuple of
    section names such as ``("table1", "fig5")``, empty when none is declared). Runs written
    before the pipeline wrote ``report`` have empty membership."""
    node = metrics.get("report")
    node = node if isinstance(node, Mapping) else {}
    paper = node.get("paper")
    tables = node.get("tables") or ()
    if isinstance(tables, str):
        tables = (tables,)
    return {
        "report_paper": str(paper) if paper not in (None, "") else None,
        "report_tables": tuple(str(t) for t in tables),
    }


def in_report(df: pd.DataFrame, paper: str, section: str) -> pd.Series:
    """Boolean mask of the rows of :func:`collect` whose run declared ``paper``'s ``section``:
    ``report_paper == paper`` and ``section in report_tables`` (exact names: ``table1`` does
    not match ``table11``)."""
    if df.empty or not set(REPORT_COLUMNS) <= set(df.columns):
        return pd.Series(False, index=df.index, dtype=bool)
    tables = df["report_tables"].map(lambda t: section in t if isinstance(t, tuple) else False)
    return (df["report_paper"] == paper) & tables


def collect(results_dir: str | Path) -> pd.DataFrame:
    """One row per run directory (``.../seed<k>/metrics.json``) under ``results_dir``.

    ``results_dir`` may be the results root or any folder inside it (one experiment, one env).
    Identification keys come from ``metrics.json`` (written by the pipeline) and, where it
    lacks them, from the directory names. ``variant`` is ``method`` or ``method+ablation``.
    ``report_paper`` / ``report_tables`` hold the paper sections the run's config declared
    (:func:`membership`; select with :func:`in_report`); ``flags`` what makes the run other
    than a full paper cell (``capped``, ``non_llm_backbone``, ``degenerate_memory``, joined
    by commas; empty for a full run). Other nested metrics are flattened
    (``per_domain/<domain>/success_rate``, ``success_rate_ci95/0``); ``run_dir`` holds the
    run directory.
    """
    root = Path(results_dir)
    files = sorted(f for f in root.glob("**/metrics.json") if _is_run_dir(f.parent))
    if not files:
        where = "does not exist" if not root.exists() else "holds no metrics.json"
        raise FileNotFoundError(
            f"memarena: results directory {root} {where}; expected files laid out as "
            f"{root}/{LAYOUT}. Run `python run.py ...` first, or point --results-dir / "
            "RESULTS_DIR at the folder that holds the experiments."
        )
    rows = []
    for path in files:
        try:
            metrics = json.loads(path.read_text())
        except json.JSONDecodeError as e:
            raise ValueError(
                f"memarena: {path} is not valid JSON ({e}); rerun that run or delete its directory"
            ) from e
        ids = _ids_from_path(path.parent)
        ids.update({k: metrics[k] for k in ID_KEYS if metrics.get(k) is not None})
        missing = [k for k in ("experiment", "env", "method", "backbone", "seed") if k not in ids]
        if missing:
            raise ValueError(
                f"memarena: {path} lacks {missing} and its path does not follow "
                f"{LAYOUT}; cannot tell which run it belongs to"
            )
        ids.setdefault("ablation", "none")
        if "variant" not in ids:
            no_abl = ids["ablation"] in _NO_ABLATION
            ids["variant"] = ids["method"] if no_abl else f"{ids['method']}+{ids['ablation']}"
        plain = {k: v for k, v in metrics.items() if k not in ("report", "flags")}
        values = {k: v for k, v in flatten(plain).items() if k not in ids}
        flags = {"flags": ",".join(metrics.get("flags") or [])}
        rows.append({**ids, **membership(metrics), **flags, **values, "run_dir": str(path.parent)})
    df = pd.DataFrame(rows)
    first = [c for c in (*ID_KEYS, "variant", *REPORT_COLUMNS) if c in df.columns]
    return df[first + [c for c in df.columns if c not in first]]


def disqualifying_flags(flags: object) -> list[str]:
    """The flags of a run (a comma-joined string) that make it other than a paper cell
    (:data:`INFORMATIONAL_FLAGS` aside)."""
    if not isinstance(flags, str):
        return []
    return [f for f in flags.split(",") if f and f != "nan" and f not in INFORMATIONAL_FLAGS]


def _check_columns(df: pd.DataFrame, names: Sequence[str], what: str) -> None:
    missing = [c for c in names if c not in df.columns]
    if missing:
        numeric = [
            c for c in df.columns if pd.api.types.is_numeric_dtype(df[c]) and c not in ID_KEYS
        ]
        available = numeric if what == "metrics" else list(df.columns)
        raise ValueError(f"memarena: unknown {what} {missing}; available: {available}")


def default_metrics(df: pd.DataFrame) -> list[str]:
    """The default table metrics, plus Avg@k / Pass@k when some run has k > 1."""
    return [*DEFAULT_METRICS, *(m for m in OPTIONAL_METRICS if m in df.columns)]


def summary_table(
    df: pd.DataFrame, metrics: Sequence[str] | None = None, by: Sequence[str] = DEFAULT_BY
) -> pd.DataFrame:
    """Mean and sample std over seeds of each metric, per ``by`` group.

    Columns: ``by``..., ``n_seeds``, ``n_expected`` (the seeds its experiment ran anywhere: a
    group with fewer is partial), ``identical`` (its seeds are one run repeated: equal
    ``run_fingerprint``), ``n_tasks`` (the fewest test tasks of a seed), ``n_episodes`` (the
    fewest evaluated episodes of a seed), ``flags`` (every flag of the group's runs),
    ``backbone_is_llm`` (when known), then ``<metric>_mean`` and ``<metric>_std`` per metric
    (std is NaN for a single seed; metrics a run lacks, such as ``avg_at_k`` for k = 1, are
    left out of its group's mean).
    """
    metrics = list(metrics) if metrics is not None else default_metrics(df)
    _check_columns(df, metrics, "metrics")
    _check_columns(df, by, "group columns")
    groups = df.groupby(list(by), dropna=False, sort=True)
    out = groups.size().rename("n_seeds").to_frame()
    out = out.join(seed_notes(df, groups, "run_fingerprint"))
    if "backbone_is_llm" in df.columns and "backbone_is_llm" not in by:
        out["backbone_is_llm"] = groups["backbone_is_llm"].first()
    for m in metrics:
        values = pd.to_numeric(df[m], errors="coerce").groupby(
            [df[c] for c in by], dropna=False, sort=True
        )
        out[f"{m}_mean"] = values.mean()
        out[f"{m}_std"] = values.std(ddof=1)
    return out.reset_index()


def seed_notes(df: pd.DataFrame, groups: Any, fingerprint: str) -> pd.DataFrame:
    """What a table cell must say of the runs behind it, per group of ``df``'s rows (a
    ``groupby``): ``n_expected`` (:func:`expected_seeds`), ``identical`` (the runs' column
    ``fingerprint`` is one value: :func:`identical_runs`), the fewest ``n_tasks`` /
    ``n_episodes`` of a run, and the union of their ``flags`` (columns ``df`` lacks are left
    out, ``identical`` then False)."""
    has = set(df.columns)
    notes = pd.DataFrame({"n_expected": expected_seeds(df, groups)})
    notes["identical"] = groups[fingerprint].agg(identical_runs) if fingerprint in has else False
    for count in ("n_tasks", "n_episodes"):
        if count in has:
            notes[count] = groups[count].min()
    if "flags" in has:
        notes["flags"] = groups["flags"].agg(union_flags)
    return notes


def expected_seeds(df: pd.DataFrame, groups: Any) -> pd.Series | int:
    """Per group of ``df`` (a ``groupby`` of its rows), how many seeds the group should have:
    the distinct seeds its experiment ran in any group (the sweep's seeds), so a cell whose
    sweep lost a seed shows ``n=2 of 3``; ``df`` without ``experiment`` / ``seed``: the group
    sizes."""
    if not {"experiment", "seed"} <= set(df.columns):
        return groups.size()
    per_experiment = df.groupby("experiment", dropna=False)["seed"].nunique()
    return groups["experiment"].agg(lambda e: int(per_experiment[list(set(e))].max()))


def identical_runs(fingerprints: pd.Series) -> bool:
    """True when two or more runs all have one (known) ``run_fingerprint``."""
    known = fingerprints.dropna()
    return len(fingerprints) > 1 and len(known) == len(fingerprints) and known.nunique() == 1


def union_flags(values: pd.Series) -> str:
    """Every flag of ``values`` (comma-joined flag lists), sorted, comma-joined."""
    found = {f for v in values.dropna() for f in str(v).split(",") if f and f != "nan"}
    return ",".join(sorted(found))


def _decimals(x: float, digits: int) -> int:
    return digits if abs(x) < 10 else (1 if abs(x) < 1000 else 0)


def format_mean_std(
    mean: float,
    std: float,
    digits: int = 3,
    n: int | None = None,
    expected: int | None = None,
    identical: bool = False,
) -> str:
    """One table cell: ``"0.412 ± 0.020"``, just the mean for one seed, ``"-"`` without a value.

    With ``n`` (the seeds behind it) the cell says so: ``"0.412 ± 0.020 (n=3)"``, and ``"(n=2 of
    3)"`` when fewer than ``expected`` seeds ran (a partial cell). ``identical``: the seeds were
    one run repeated (equal ``run_fingerprint``), printed once as ``"0.412 (3 seeds, identical
    runs)"`` instead of a std of 0."""
    if mean is None or (isinstance(mean, float) and math.isnan(mean)):
        return "-"
    d = _decimals(mean, digits)
    text = f"{mean:.{d}f}"
    n = None if n is None or (isinstance(n, float) and math.isnan(n)) else int(n)
    if identical and n is not None and n > 1:
        return f"{text} ({n} seeds, identical runs)"
    if std is not None and not math.isnan(std):
        text += f" ± {std:.{d}f}"
    if n is None:
        return text
    wanted = None if expected is None or pd.isna(expected) else int(expected)
    return f"{text} (n={n} of {wanted})" if wanted and n < wanted else f"{text} (n={n})"


def metrics_of(summary: pd.DataFrame) -> list[str]:
    return [c[: -len("_mean")] for c in summary.columns if c.endswith("_mean")]


def format_summary(summary: pd.DataFrame, digits: int = 3) -> pd.DataFrame:
    """The summary with each ``<metric>_mean`` / ``_std`` pair as one cell (:func:`format_mean_std`
    with the group's seeds: ``mean ± std (n=k)``, a partial cell ``(n=k of m)``, identical
    seeds printed once)."""
    keep = [c for c in summary.columns if not c.endswith(("_mean", "_std"))]
    keep = [c for c in keep if c not in ("n_expected", "identical")]
    out = summary[keep].copy()
    n = summary["n_seeds"] if "n_seeds" in summary else [None] * len(summary)
    expected = summary["n_expected"] if "n_expected" in summary else [None] * len(summary)
    same = summary["identical"] if "identical" in summary else [False] * len(summary)
    for m in metrics_of(summary):
        out[m] = [
            format_mean_std(a, b, digits, k, e, bool(i))
            for a, b, k, e, i in zip(
                summary[f"{m}_mean"], summary[f"{m}_std"], n, expected, same, strict=True
            )
        ]
    return out


def to_markdown(df: pd.DataFrame) -> str:
    """A GitHub pipe table of ``df`` (no index), without the ``tabulate`` package."""

    def cell(v: Any) -> str:
        return str(v).replace("|", "\\|").replace("\n", " ")

    header = [cell(c) for c in df.columns]
    rows = [[cell(v) for v in row] for row in df.itertuples(index=False)]
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(len(header))]
    numeric = [pd.api.types.is_numeric_dtype(df[c]) for c in df.columns]

    def line(values: list[str]) -> str:
        padded = [
            v.rjust(w) if num else v.ljust(w)
            for v, w, num in zip(values, widths, numeric, strict=True)
        ]
        return "| " + " | ".join(padded) + " |"

    sep = (
        "|"
        + "|".join(
            ("-" * (w + 1) + ":") if num else ("-" * (w + 2))
            for w, num in zip(widths, numeric, strict=True)
        )
        + "|"
    )
    return "\n".join([line(header), sep, *(line(r) for r in rows)]) + "\n"


def write_tables(
    df: pd.DataFrame,
    out_dir: str | Path,
    metrics: Sequence[str] | None = None,
    by: Sequence[str] = DEFAULT_BY,
    digits: int = 3,
) -> dict[str, Path]:
    """Write ``runs.csv`` (one row per run), ``summary.csv`` (numeric mean/std over seeds) and
    ``summary.md`` (``mean ± std``) into ``out_dir``; returns their paths by name."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    summary = summary_table(df, metrics, by)
    paths = {
        "runs_csv": out / "runs.csv",
        "summary_csv": out / "summary.csv",
        "summary_md": out / "summary.md",
    }
    df.to_csv(paths["runs_csv"], index=False)
    summary.to_csv(paths["summary_csv"], index=False)
    n_runs = len(df)
    body = to_markdown(format_summary(summary, digits))
    paths["summary_md"].write_text(
        f"<!-- generated by memarena.results.collect.write_tables from {n_runs} runs; "
        "mean ± sample std over seeds -->\n\n" + body
    )
    log.info("wrote %s", ", ".join(str(p) for p in paths.values()))
    return paths


BOUNDED = ("_rate", "_at_k")  # metrics in [0, 1]: the axis and the error bars stop there


def _error_bars(ax, mean: pd.Series, std: pd.Series, bounded: bool) -> None:
    """Error bars of std around the bars' ``mean`` where there is a spread (none for one
    seed), clipped to [0, 1] when the metric is a rate."""
    shown = std.fillna(0.0) > 0
    if not shown.any():
        return
    mean, std = mean[shown], std[shown]
    low, high = (std.clip(upper=mean), std.clip(upper=1.0 - mean)) if bounded else (std, std)
    ax.errorbar(mean, list(mean.index), xerr=[list(low), list(high)], fmt="none",
                ecolor="black", elinewidth=1, capsize=2)  # fmt: skip


def plot_summary(
    summary: pd.DataFrame,
    metrics: Sequence[str] = ("success_rate", "progress_rate"),
    path: str | Path | None = None,
    hue: str = "variant",
    facet: str = "experiment",
):
    """Horizontal bars of each metric's mean per ``hue`` with error bars of the std over seeds
    (clipped to [0, 1] for rates).

    One row of panels per ``facet`` value (experiment), one column per metric. A panel has
    one bar per (group, ``hue``) that ran in its facet, labelled on the y axis (the group: the
    other columns that vary, env and backbone, when there are several); a ``hue`` keeps its
    colour in every panel. The width is fixed and the height grows with the bars, so the
    figure stays readable however many experiments and methods there are. Saves a PNG to
    ``path`` when given; returns the matplotlib figure.
    """
    import matplotlib.pyplot as plt

    _check_columns(summary, [hue, *(f"{m}_mean" for m in metrics)], "columns")
    facets = list(dict.fromkeys(summary[facet].astype(str))) if facet in summary else ["all"]
    hues = list(dict.fromkeys(summary[hue].astype(str)))
    colors = plt.get_cmap("tab20" if len(hues) > 10 else "tab10")
    y_cols = [  # the identifying columns that vary (not flags or counts)
        c
        for c in DEFAULT_BY
        if c in summary and c not in (hue, facet) and summary[c].nunique(dropna=False) > 1
    ]
    blocks = []
    for f in facets:
        part = summary[summary[facet].astype(str) == f] if facet in summary else summary
        groups = (
            part[y_cols].astype(str).agg(" | ".join, axis=1)
            if y_cols
            else pd.Series("", index=part.index)
        )
        part = part.assign(_group=groups, _hue=part[hue].astype(str))
        order = {g: i for i, g in enumerate(dict.fromkeys(groups))}
        part = part.sort_values(
            ["_group", "_hue"], key=lambda s: s.map(order if s.name == "_group" else hues.index)
        )
        blocks.append((f, part.reset_index(drop=True)))
    heights = [max(1.4, 0.24 * len(part) + 0.8) for _, part in blocks]
    fig, axes = plt.subplots(
        len(blocks),
        len(metrics),
        figsize=(5.5 * len(metrics), sum(heights)),
        squeeze=False,
        gridspec_kw={"height_ratios": heights},
    )
    for row, (f, part) in enumerate(blocks):
        pairs = zip(part["_group"], part["_hue"], strict=True)
        labels = [f"{g} | {h}" if g else h for g, h in pairs]
        color = [colors(hues.index(h) % colors.N) for h in part["_hue"]]
        for ax, m in zip(axes[row], metrics, strict=True):
            bounded = m.endswith(BOUNDED)
            mean = part[f"{m}_mean"]
            ax.barh(range(len(part)), mean, 0.8, color=color)
            _error_bars(ax, mean, part[f"{m}_std"], bounded)
            ax.set_yticks(range(len(part)), labels, fontsize="small")
            ax.set_ylim(len(part) - 0.5, -0.5)  # the first row on top
            ax.set_title(f"{f}: {m}" if facet in summary else m, fontsize="medium")
            if bounded:
                ax.set_xlim(0, 1.0)
    fig.tight_layout()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        fig.savefig(path, dpi=110)
    return fig


def read_episodes(run_dir: str | Path) -> list[EpisodeRecord]:
    """The evaluated episode records of one run (``episodes.jsonl``)."""
    path = Path(run_dir) / "episodes.jsonl"
    if not path.exists():
        raise FileNotFoundError(
            f"memarena: {path} does not exist; is {run_dir} a run directory ({LAYOUT})?"
        )
    return [EpisodeRecord.from_json(record) for record in read_jsonl(path)]
