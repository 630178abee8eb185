"""Helpers of notebooks/evograph.ipynb: EvoGraph-Mem's Table 1, Table 2, Figure 3 and the
Figure 2 case study from the results tree.

Reads ``<results>/<experiment>/<env>/<method>[+<ablation>]/<backbone>/seed<k>/metrics.json``
(via :func:`memarena.results.collect.collect`) and puts the numbers EvoGraph-Mem's prose states
(:func:`memarena.reports.paper.paper_numbers` ``("evograph")``) beside ours. A section
(:data:`SECTIONS`) reads every run whose config declared it (``report: {paper: evograph,
tables: [...]}`` in ``conf/experiment/evograph_*.yaml``, copied into metrics.json), whatever its
experiment name. Every function accepts an empty result and then returns an empty frame / draws
the paper's numbers alone.

Conventions: ``setting`` is the benchmark (``pddl``, ``hotpotqa``, ``fever``: the env name
without its dataset suffix, so ``hotpotqa_distractor`` and ``fever_official`` count); the
score is in percent, ``progress`` (progress rate) on PDDL and ``em`` (exact match =
success rate) on HotpotQA and FEVER, the paper's metrics (a stand-in keeps its benchmark's
metric: ``pddl_generated`` is scored by progress); ``variant`` is the method name, or
for an ablation its last name component (``evograph/add_keep`` gives ``add_keep``), matching
the paper CSV's ``variant``. Backbones match the paper's by :func:`backbone_key`
(``GPT-4o-mini`` = ``gpt_4o_mini``).

The case study reads a saved EvoGraph-Mem snapshot: the memory an online run ended with,
``<run dir>/memory_final/run<k>/memory.json``, or an acquisition snapshot ``memory/memory.json``:
``{"method": "evograph", "schema_version": .., "state": {"insights": [{"id", "content",
"pos", "neg", "active", "version", "parent", "created_at", "trace": [{"query", "op",
"detail"}]}, ...], "edges": [[a, b, q], ...]}}``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memarena.reports.common import (  # noqa: F401  (re-exported for the notebook)
    RUN_COLUMNS,
    backbone_key,
    cell_texts,
    check_section,
    mean_bars,
    of_setting,
    over_seeds,
    partial_cells,
    purpose_tokens,
    run_ids,
    runs_flags,
    save_figure,
    section_commands,
    section_runs,
    variant_key,
    with_row_notes,
    write_table,
)
from memarena.reports.common import number as _num
from memarena.reports.common import ordered as _order
from memarena.reports.common import report_missing as _report_missing
from memarena.reports.paper import paper_numbers

__all__ = ["backbone_key", "variant_key", "write_table"]  # re-exported for the notebook

PAPER = "evograph"
# the report sections a run's config may declare (report.tables): Table 1, Table 2 (the token
# counts of the Table 1 runs) and Figure 3; the Figure 2 case study reads any saved snapshot
SECTIONS = ("table1", "table2", "fig3")
SETTINGS = ("pddl", "hotpotqa", "fever")
SCORE = {"pddl": "progress", "hotpotqa": "em", "fever": "em"}
# the paper's column order; the older baselines in their parity mode (as the paper's runs, on
# G-Memory's code) next to their faithful mode (the mechanisms of their own papers)
METHOD_ORDER = (
    "none",
    "memorybank_parity",
    "memorybank_faithful",
    "voyager_parity",
    "voyager_faithful",
    "generative_agents_parity",
    "generative_agents_faithful",
    "gmemory",
    "g_memory",
    "evograph",
)
FIG3_VARIANTS = ("add_keep", "add_keep_archive", "all")
CONTROL = "evograph"


def command_for(section: str, conf_dir: str | Path | None = None) -> str:
    """The commands of the experiment configs that declare ``section`` (``conf_dir``: default
    the repository's ``conf/``)."""
    return section_commands(PAPER, check_section(section, SECTIONS, PAPER), conf_dir)


STAND_INS = ("_generated", "_suite", "_smoke")  # env names of the embedded stand-in data


def benchmark_of(env: object) -> str:
    """The benchmark an env name belongs to, stand-ins included (``pddl_generated`` ->
    ``pddl``, ``fever_official`` -> ``fever``)."""
    return str(env).split("_")[0]


def score_of(setting: object) -> str:
    """The paper's score of a setting's benchmark: ``progress`` (PDDL) or ``em``."""
    return SCORE.get(benchmark_of(setting), "em")


def setting_of(env: object) -> str:
    """``pddl`` / ``hotpotqa`` / ``fever`` from an env name (``fever_official`` -> ``fever``).
    Runs on embedded stand-in data (``pddl_generated``, ``fever_smoke``, ...) keep their own
    name, so they never stand beside the paper's numbers as the benchmark's."""
    name = str(env)
    return name if name.endswith(STAND_INS) else benchmark_of(name)


def load_runs(results_dir: str | Path, section: str) -> pd.DataFrame:
    """The runs whose config declares EvoGraph-Mem's ``section`` (:data:`SECTIONS`; empty
    frame when none has results yet), with ``variant_key`` and ``setting`` added."""
    runs = section_runs(results_dir, PAPER, check_section(section, SECTIONS, PAPER))
    if not runs.empty:
        runs["setting"] = runs["env"].map(setting_of)
    return runs


def report_missing(runs: pd.DataFrame, section: str, conf_dir: str | Path | None = None) -> bool:
    """Print which experiment configs declare ``section`` when it has no runs; True when it
    has some."""
    return _report_missing(runs, PAPER, check_section(section, SECTIONS, PAPER), conf_dir)


def long_metrics(runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run x metric: the score (``progress`` / ``em``, %), ``tokens_per_task``,
    ``memory_token_share_pct`` (the memory method's own evaluation tokens ``memory_tokens`` /
    all tokens, ``tokens_per_task`` x ``n_episodes``) and, where the run's metrics.json has
    ``memory_token_usage`` per purpose, ``controller_token_share_pct`` (purposes whose name
    contains ``controller`` / all purposes)."""
    cols = [*RUN_COLUMNS, "setting", "metric", "value"]
    if runs.empty:
        return pd.DataFrame(columns=cols)
    rows = []
    for _, run in runs.iterrows():
        setting = run.get("setting", setting_of(run["env"]))
        base = {**run_ids(run), "setting": setting}

        def add(metric: str, value: float | None, base=base) -> None:
            if value is not None and not math.isnan(value):
                rows.append({**base, "metric": metric, "value": float(value)})

        score = score_of(setting)
        src = _num(run.get("progress_rate" if score == "progress" else "success_rate"))
        add(score, None if src is None else 100.0 * src)
        tpt = _num(run.get("tokens_per_task"))
        add("tokens_per_task", tpt)
        mem, n = _num(run.get("memory_tokens")), _num(run.get("n_episodes"))
        if tpt and mem is not None and n:
            add("memory_token_share_pct", 100.0 * mem / (tpt * n))
        purposes = purpose_tokens(run)
        total = sum(purposes.values())
        if total > 0:
            ctrl = sum(v for p, v in purposes.items() if "controller" in p.lower())
            add("controller_token_share_pct", 100.0 * ctrl / total)
    return pd.DataFrame(rows, columns=cols)


def summarize(long: pd.DataFrame) -> pd.DataFrame:
    """Mean / sample std / n_seeds of each metric per setting, backbone, variant."""
    return over_seeds(long, ["setting", "backbone", "variant", "metric"])


def paper_rows(tables: Sequence[str]) -> pd.DataFrame:
    """The paper's stated numbers of ``tables`` (``table1_prose``, ``table2_prose``, ``fig3``)."""
    paper = paper_numbers(PAPER)
    return paper[paper["table"].isin(list(tables))].reset_index(drop=True)


def table1(summary: pd.DataFrame) -> pd.DataFrame:
    """Table 1 layout: rows (backbone, setting, metric), columns methods, ``mean ± std``."""
    if summary.empty:
        return pd.DataFrame()
    sub = summary[summary["metric"].isin(["progress", "em"])].copy()
    if sub.empty:
        return pd.DataFrame()
    sub["cell"] = cell_texts(sub, 2)
    index = ["backbone", "setting", "metric"]
    table = sub.pivot_table(index=index, columns="variant", values="cell", aggfunc="first")
    table = table[_order(list(table.columns), METHOD_ORDER)].fillna("-")
    table = with_row_notes(table, sub, index)
    table.columns.name = None
    return table.reset_index()


def gains(summary: pd.DataFrame, control: str = CONTROL) -> pd.DataFrame:
    """Per setting and backbone, ``control``'s score gain over the best other memory method
    (``none`` only when it is the only other) in points and relative %, and over ``none``:
    the quantities behind the paper's "10.44% ... progress rate improvement" prose."""
    cols = [
        "setting",
        "backbone",
        "metric",
        "runner_up",
        "control",
        "runner_up_score",
        "gain_pp",
        "gain_rel_pct",
        "gain_rel_pct_vs_none",
    ]
    rows = []
    scores = summary[summary["metric"].isin(["progress", "em"])] if not summary.empty else summary
    if scores.empty:
        return pd.DataFrame(columns=cols)
    for (setting, backbone, metric), grp in scores.groupby(["setting", "backbone", "metric"]):
        means = grp.set_index("variant")["mean"]
        if control not in means.index or len(means) < 2:
            continue
        others = means.drop(index=control)
        memory = others.drop(index="none", errors="ignore")
        pool = memory if not memory.empty else others
        runner = pool.idxmax()
        best, ours = pool[runner], means[control]
        none = means.get("none", math.nan)
        rows.append(
            {
                "setting": setting,
                "backbone": backbone,
                "metric": metric,
                "runner_up": runner,
                "control": ours,
                "runner_up_score": best,
                "gain_pp": ours - best,
                "gain_rel_pct": 100 * (ours - best) / best if best else math.nan,
                "gain_rel_pct_vs_none": 100 * (ours - none) / none if none else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=cols)


def _paper_by_key(tables: Sequence[str]) -> pd.DataFrame:
    paper = paper_rows(tables).copy()
    paper["bkey"] = paper["backbone"].map(backbone_key)
    return paper


def gains_beside_paper(summary: pd.DataFrame) -> pd.DataFrame:
    """Our gains (:func:`gains`) next to the paper's stated gain (Table 1 prose) per setting and
    backbone; paper rows without results keep NaN on our side."""
    paper = _paper_by_key(["table1_prose"])
    paper = paper.rename(columns={"value": "paper_gain_pct", "backbone": "paper_backbone"})
    paper = paper[["setting", "bkey", "paper_backbone", "paper_gain_pct", "source"]]
    ours = gains(summary)
    ours["bkey"] = ours["backbone"].map(backbone_key)
    out = ours.merge(paper, on=["setting", "bkey"], how="outer").drop(columns="bkey")
    return out.sort_values(["setting", "paper_backbone", "backbone"]).reset_index(drop=True)


def table2(summary: pd.DataFrame) -> pd.DataFrame:
    """Table 2: per backbone and method, tokens per task averaged over the benchmarks it ran
    (the paper averages PDDL, HotpotQA, FEVER), its relative change vs ``none`` (%), and the
    memory method's and its controller's token shares (%) where known."""
    cols = [
        "backbone",
        "variant",
        "n_settings",
        "tokens_per_task",
        "change_pct_vs_none",
        "memory_token_share_pct",
        "controller_token_share_pct",
    ]
    if summary.empty or not (summary["metric"] == "tokens_per_task").any():
        return pd.DataFrame(columns=cols)
    rows = []
    for backbone, grp in summary.groupby("backbone"):
        wide = grp.pivot_table(index="variant", columns=["metric"], values="mean", aggfunc="mean")
        tok = grp[grp["metric"] == "tokens_per_task"].pivot_table(
            index="setting", columns="variant", values="mean"
        )
        # relative change on the benchmarks both the method and none ran
        for variant in _order(list(tok.columns), METHOD_ORDER):
            col = tok[variant].dropna()
            row = {
                "backbone": backbone,
                "variant": variant,
                "n_settings": len(col),
                "tokens_per_task": col.mean(),
                "change_pct_vs_none": math.nan,
            }
            if "none" in tok.columns:
                both = pd.DataFrame({"v": tok[variant], "none": tok["none"]}).dropna()
                base = both["none"].mean() if not both.empty else math.nan
                if base and not math.isnan(base):
                    row["change_pct_vs_none"] = 100 * (both["v"].mean() - base) / base
            for share in ("memory_token_share_pct", "controller_token_share_pct"):
                row[share] = (
                    wide.loc[variant, share]
                    if share in wide.columns and variant in wide.index
                    else math.nan
                )
            rows.append(row)
    return pd.DataFrame(rows, columns=cols)


def table2_beside_paper(t2: pd.DataFrame) -> pd.DataFrame:
    """Our relative token change vs no memory next to the paper's (73.0% / 72.7%), and the
    paper's stated token totals (M tokens) for G-Memory, ours and the derived no-memory one."""
    paper = _paper_by_key(["table2_prose"])
    wide = paper.pivot_table(
        index=["bkey", "backbone", "variant"], columns="metric", values="value"
    ).reset_index()
    wide.columns.name = None
    wide = wide.rename(
        columns={
            "backbone": "paper_backbone",
            "tokens_M": "paper_tokens_M",
            "token_change_pct_vs_none": "paper_change_pct_vs_none",
            "token_change_pct_vs_gmemory": "paper_change_pct_vs_gmemory",
        }
    )
    ours = t2.copy()
    ours["bkey"] = ours["backbone"].map(backbone_key)
    out = ours.merge(wide, on=["bkey", "variant"], how="outer").drop(columns="bkey")
    keep = [
        c
        for c in (
            "backbone",
            "paper_backbone",
            "variant",
            "n_settings",
            "tokens_per_task",
            "change_pct_vs_none",
            "paper_change_pct_vs_none",
            "paper_tokens_M",
            "paper_change_pct_vs_gmemory",
            "memory_token_share_pct",
            "controller_token_share_pct",
        )
        if c in out.columns
    ]
    return out[keep].sort_values(["paper_backbone", "variant"]).reset_index(drop=True)


def fig3_beside_paper(summary: pd.DataFrame) -> pd.DataFrame:
    """Figure 3 cells: our score per setting, backbone, variant next to the paper's stated or
    derived value (same backbone by :func:`backbone_key`)."""
    paper = _paper_by_key(["fig3"])
    paper = paper[paper["metric"].isin(["progress", "em"])]
    paper = paper.rename(columns={"value": "paper", "backbone": "paper_backbone"})
    paper = paper[["setting", "bkey", "paper_backbone", "variant", "metric", "paper"]]
    mine = ["setting", "bkey", "backbone", "variant", "metric", "ours", "mean", "n_seeds",
            "n_tasks", "flags"]  # fmt: skip
    if summary.empty:
        ours = pd.DataFrame(columns=[*mine])
    else:
        ours = summary[summary["metric"].isin(["progress", "em"])].copy()
        ours["ours"] = cell_texts(ours, 2)
        ours["bkey"] = ours["backbone"].map(backbone_key)
        ours = ours[mine]
    out = ours.merge(paper, on=["setting", "bkey", "variant", "metric"], how="outer")
    out["ours"] = out["ours"].fillna("-")
    out["flags"] = out["flags"].fillna("")
    out["backbone"] = out["backbone"].fillna("-")
    out["n_seeds"] = out["n_seeds"].fillna(0).astype(int)
    out = out.drop(columns="bkey")
    out["variant_order"] = (
        out["variant"].map({v: i for i, v in enumerate(FIG3_VARIANTS)}).fillna(len(FIG3_VARIANTS))
    )
    out = out.sort_values(["setting", "paper_backbone", "backbone", "variant_order"])
    return out.drop(columns="variant_order").reset_index(drop=True)


# --------------------------------------------------------------------------------------------
# figures


# --------------------------------------------------------------------------------------------
# case study (Figure 2): the version chain of one insight


def find_snapshots(results_dir: str | Path) -> list[Path]:
    """Folders under ``results_dir`` holding an EvoGraph-Mem ``memory.json``: the memory each
    online run ended with (``memory_final/run<k>/``, written by the pipeline) first, then
    acquisition snapshots (``memory/``); newest first within each."""
    root = Path(results_dir)
    if not root.exists():
        return []
    found = []
    for path in root.glob("**/memory.json"):
        if path.parent.name != "memory" and "memory_final" not in path.parts:
            continue
        try:
            with path.open("r", encoding="utf-8") as fh:
                method = json.load(fh).get("method")
        except (OSError, ValueError, AttributeError):
            continue
        if method == "evograph":
            found.append(path.parent)
    return sorted(
        found,
        key=lambda p: ("memory_final" not in p.parts, -(p / "memory.json").stat().st_mtime),
    )


def case_snapshot(results_dir: str | Path) -> tuple[Path | None, dict | None, list[dict]]:
    """The snapshot of the case study: among :func:`find_snapshots`, the one whose longest
    insight version chain is longest (ties: the first found, i.e. online runs' final memory
    first, newest first); returns (its folder, its state, that chain), or (None, None, [])
    when no EvoGraph-Mem snapshot exists."""
    best: tuple[Path | None, dict | None, list[dict]] = (None, None, [])
    for folder in find_snapshots(results_dir):
        state = load_snapshot(folder)
        chain = version_chain(state) if state else []
        if best[0] is None or len(chain) > len(best[2]):
            best = (folder, state, chain)
    return best


def load_snapshot(run_dir: str | Path) -> dict | None:
    """The ``state`` of ``<run_dir>/memory/memory.json`` (or of ``run_dir`` when it is the
    memory folder or the file itself); None when absent or not an EvoGraph-Mem snapshot."""
    path = Path(run_dir)
    for candidate in (path / "memory" / "memory.json", path / "memory.json", path):
        if candidate.is_file():
            with candidate.open("r", encoding="utf-8") as fh:
                data = json.load(fh)
            if data.get("method") not in (None, "evograph"):
                return None
            state = data.get("state", data)
            return state if isinstance(state, dict) else None
    return None


def version_chain(state: dict, insight_id: str | None = None) -> list[dict]:
    """The version chain (oldest first) of the insight with the longest chain, or of
    ``insight_id`` (its ancestors, itself, then its longest line of revisions)."""
    insights = list(state.get("insights") or [])
    if not insights:
        return []
    by_id = {str(i["id"]): i for i in insights}
    children: dict[str, list[str]] = {}
    for ins in insights:
        parent = ins.get("parent")
        if parent is not None and str(parent) in by_id:
            children.setdefault(str(parent), []).append(str(ins["id"]))

    def ancestors(iid: str) -> list[str]:
        out, seen = [iid], {iid}
        while True:
            parent = by_id[out[-1]].get("parent")
            if parent is None or str(parent) not in by_id or str(parent) in seen:
                return list(reversed(out))
            out.append(str(parent))
            seen.add(str(parent))

    def longest_down(iid: str, seen: frozenset = frozenset()) -> list[str]:
        best: list[str] = []
        for child in children.get(iid, []):
            if child in seen:
                continue
            path = longest_down(child, seen | {iid})
            if len(path) > len(best):
                best = path
        return [iid, *best]

    if insight_id is not None:
        if str(insight_id) not in by_id:
            raise KeyError(f"insight {insight_id!r} not in the snapshot ({len(by_id)} insights)")
        ids = ancestors(str(insight_id))[:-1] + longest_down(str(insight_id))
    else:
        leaves = [i for i in by_id if i not in children]

        def rank(iid: str):
            chain = ancestors(iid)
            return (len(chain), by_id[iid].get("version") or 0, by_id[iid].get("created_at") or 0)

        ids = ancestors(max(leaves or list(by_id), key=rank))
    return [by_id[i] for i in ids]


def _short(items: Any, n: int = 3) -> str:
    items = list(items or [])
    text = "; ".join(str(x) for x in items[:n])
    return text + (f"; ... (+{len(items) - n})" if len(items) > n else "")


def versions_table(chain: Sequence[dict]) -> pd.DataFrame:
    """One row per version: id, version, active, content, |Omega+|, |Omega-| and their first
    queries, parent, created_at."""
    cols = [
        "version",
        "id",
        "active",
        "content",
        "n_pos",
        "n_neg",
        "pos",
        "neg",
        "parent",
        "created_at",
    ]
    rows = [
        {
            "version": ins.get("version"),
            "id": ins.get("id"),
            "active": bool(ins.get("active")),
            "content": ins.get("content"),
            "n_pos": len(ins.get("pos") or []),
            "n_neg": len(ins.get("neg") or []),
            "pos": _short(ins.get("pos")),
            "neg": _short(ins.get("neg")),
            "parent": ins.get("parent"),
            "created_at": ins.get("created_at"),
        }
        for ins in chain
    ]
    return pd.DataFrame(rows, columns=cols)


def trace_table(chain: Sequence[dict]) -> pd.DataFrame:
    """The edit trace of every version of the chain, in order: id, version, query, op, detail."""
    cols = ["id", "version", "step", "query", "op", "detail"]
    rows = []
    for ins in chain:
        for k, entry in enumerate(ins.get("trace") or []):
            entry = entry if isinstance(entry, dict) else {"detail": entry}
            rows.append(
                {
                    "id": ins.get("id"),
                    "version": ins.get("version"),
                    "step": k,
                    "query": entry.get("query"),
                    "op": entry.get("op"),
                    "detail": entry.get("detail"),
                }
            )
    return pd.DataFrame(rows, columns=cols)
