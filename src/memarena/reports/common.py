"""Helpers shared by the per-paper report packages (``reports.memco``, ``reports.evograph``,
``reports.reme``, ``reports.cross_paper``): the runs of one report section, the "no results
yet" hint, numbers and token counts from flattened metrics, and writing tables and figures.

Which runs feed which section is what the runs' configs declare, never a list of experiment
names here: every ``conf/experiment/*.yaml`` of a paper sets ``report: {paper: <paper>,
tables: [<section>, ...]}``, the pipeline copies that node into each run's ``metrics.json``,
:func:`section_runs` keeps the runs that declare a section, and :func:`report_missing` names the
experiment configs that declare it (:func:`declaring_configs`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import yaml

from memarena.results.collect import (
    INFORMATIONAL_FLAGS,  # noqa: F401  (re-exported)
    backbone_key,  # noqa: F401  (the report packages import it from here)
    collect,
    format_mean_std,
    in_report,
    seed_notes,
    union_flags,
)

# the repository's Hydra config folder (conf/experiment/*.yaml declare the report sections)
CONF_DIR = Path(__file__).resolve().parents[3] / "conf"
RUN_COMMAND = "python run.py -m experiment={name} backbone=<preset>"


@dataclass(frozen=True)
class ExperimentConfig:
    """One ``conf/experiment/<name>.yaml``: the ``experiment=<name>`` it is run with, the
    ``experiment_name`` its runs are written under, the report sections it declares and the
    experiment whose saved memory it starts from (``protocol.snapshot_from``), if any."""

    name: str
    experiment_name: str | None
    paper: str | None
    tables: tuple[str, ...]
    snapshot_from: str | None = None

    @property
    def command(self) -> str:
        return RUN_COMMAND.format(name=self.name)


def _read_experiment(path: Path) -> ExperimentConfig:
    data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
    report = data.get("report") or {}
    protocol = data.get("protocol") or {}
    tables = report.get("tables") or ()
    snapshot = protocol.get("snapshot_from")
    if snapshot == "${experiment_name}":  # the experiment's own earlier runs
        snapshot = data.get("experiment_name")
    return ExperimentConfig(
        name=path.stem,
        experiment_name=data.get("experiment_name"),
        paper=report.get("paper") or None,
        tables=tuple(str(t) for t in ([tables] if isinstance(tables, str) else tables)),
        snapshot_from=str(snapshot) if snapshot else None,
    )


def experiment_configs(conf_dir: str | Path | None = None) -> list[ExperimentConfig]:
    """Every ``<conf_dir>/experiment/*.yaml`` by name (``conf_dir``: default the repository's
    ``conf/``, :data:`CONF_DIR`); empty when the folder does not exist (an installed package
    without the repository)."""
    folder = Path(conf_dir if conf_dir is not None else CONF_DIR) / "experiment"
    return [_read_experiment(p) for p in sorted(folder.glob("*.yaml"))]


def declaring_configs(
    paper: str, section: str, conf_dir: str | Path | None = None
) -> list[ExperimentConfig]:
    """The experiment configs whose ``report`` node declares ``section`` of ``paper``, in the
    order to run them: those that acquire their own memory first, then those that start from
    another experiment's snapshot (``protocol.snapshot_from``), each group by name."""
    found = [c for c in experiment_configs(conf_dir) if c.paper == paper and section in c.tables]
    return sorted(found, key=lambda c: (c.snapshot_from is not None, c.name))


def check_section(section: str, sections: Sequence[str], paper: str) -> str:
    """``section`` when it is one of ``paper``'s report ``sections``, else a ValueError that
    lists them."""
    if section not in sections:
        raise ValueError(
            f"memarena: {section!r} is not a {paper} report section; known: {list(sections)}"
        )
    return section


def section_commands(paper: str, section: str, conf_dir: str | Path | None = None) -> str:
    """The ``python run.py`` commands of the experiment configs that declare ``section`` of
    ``paper``, joined by ``; `` (empty when none declares it)."""
    return "; ".join(c.command for c in declaring_configs(paper, section, conf_dir))


def variant_key(method: str, ablation: object) -> str:
    """``method`` without ablation, else the ablation's last name component."""
    if ablation is None or (isinstance(ablation, float) and math.isnan(ablation)):
        return str(method)
    text = str(ablation)
    if text in ("", "none", "null"):
        return str(method)
    return re.split(r"[/\-]", text)[-1]


def number(value: Any) -> float | None:
    """``value`` as a float; None for None, booleans, NaN and what does not convert."""
    if value is None or isinstance(value, bool):
        return None
    try:
        out = float(value)
    except (TypeError, ValueError):
        return None
    return None if math.isnan(out) else out


def of_setting(settings: pd.Series, base: str, part: str | None = None) -> pd.Series:
    """Which of ``settings`` are the benchmark ``base`` (``pddl``) or a stand-in of it
    (``pddl_generated``), optionally only its ``part`` (``familiar``: ``alfworld_familiar``,
    ``alfworld_suite_familiar``): the figures plot our runs, stand-ins included, beside the
    paper's points."""
    text = settings.astype(str)
    ok = (text == base) | text.str.startswith(f"{base}_")
    if part is not None:
        ok &= text.str.endswith(f"_{part}")
    else:
        ok &= ~text.str.endswith(("_familiar", "_heldout"))
    return ok


SUMMARY_COLUMNS = ("mean", "std", "n_seeds", "n_expected", "identical", "n_tasks",
                   "n_episodes", "flags")  # fmt: skip


def over_seeds(long: pd.DataFrame, by: Sequence[str]) -> pd.DataFrame:
    """Per ``by`` group of a long table (one row per run x metric, with :data:`RUN_COLUMNS`):
    the mean, sample std and number of seeds of ``value``; ``n_expected``, the seeds the
    group's experiment ran in any group (fewer: a partial cell); ``identical``, whether the
    seeds were one run repeated (equal fingerprints); the fewest ``n_tasks`` / ``n_episodes``
    of a seed; and the union of the runs' ``flags``. An empty frame with those columns when
    ``long`` is empty."""
    by = list(by)
    if long.empty:
        return pd.DataFrame(columns=[*by, *SUMMARY_COLUMNS])
    g = long.groupby(by, dropna=False, sort=True)
    out = g["value"].agg(mean="mean", std="std", n_seeds="count")
    out = out.join(seed_notes(long, g, "fingerprint")).reset_index()
    for name, empty in (("n_tasks", math.nan), ("n_episodes", math.nan), ("flags", "")):
        if name not in out.columns:  # a long table without the run columns
            out[name] = empty
    return out


def cell_texts(summary: pd.DataFrame, digits: int) -> list[str]:
    """Each row of an :func:`over_seeds` summary as one table cell (``mean ± std (n=k)``,
    ``(n=k of m)`` for a partial cell, identical seeds printed once:
    :func:`memarena.results.collect.format_mean_std`)."""

    def col(name: str, default: Any) -> Sequence[Any]:
        return summary[name] if name in summary.columns else [default] * len(summary)

    return [
        format_mean_std(m, s, digits, n, e, bool(i))
        for m, s, n, e, i in zip(
            summary["mean"], summary["std"], col("n_seeds", None), col("n_expected", None),
            col("identical", False), strict=True,
        )
    ]  # fmt: skip


def with_row_notes(
    table: pd.DataFrame, summary: pd.DataFrame, index: Sequence[str]
) -> pd.DataFrame:
    """A pivoted table (rows ``index``, one column per method) with two more columns per row:
    ``n_tasks`` (the fewest test tasks of a run in the row) and ``flags`` (every flag of its
    runs), from the ``summary`` rows it was pivoted from."""
    if table.empty:
        return table
    g = summary.groupby(list(index), dropna=False, sort=False)
    notes = pd.DataFrame({"n_tasks": g["n_tasks"].min(), "flags": g["flags"].agg(union_flags)})
    out = table.join(notes, how="left")
    out["flags"] = out["flags"].fillna("")
    return out


def complete_means(summary: pd.DataFrame) -> pd.DataFrame:
    """``summary`` with the mean of each partial cell (fewer seeds than its sweep ran) set to
    NaN: the rank statistics then leave its block out instead of ranking a lost seed."""
    if "n_expected" not in summary.columns:
        return summary
    return summary.assign(mean=summary["mean"].where(summary["n_seeds"] >= summary["n_expected"]))


def partial_cells(summary: pd.DataFrame, keys: Sequence[str]) -> list[str]:
    """One line per partial cell of ``summary`` (fewer seeds than its experiment ran
    elsewhere): its ``keys`` and ``n of expected``; empty when every cell is complete."""
    if summary.empty or "n_expected" not in summary.columns:
        return []
    short = summary[summary["n_seeds"] < summary["n_expected"]]
    cells = short.drop_duplicates([k for k in keys if k != "metric"])
    return [
        " ".join(str(row[k]) for k in keys if k != "metric")
        + f": {int(row['n_seeds'])} of {int(row['n_expected'])} seeds"
        for _, row in cells.iterrows()
    ]


def ordered(names: Sequence[str], order: Sequence[str]) -> list[str]:
    """``names`` in the order of ``order``, the others after them alphabetically."""
    known = [m for m in order if m in names]
    return known + sorted(m for m in names if m not in known)


USAGE = "memory_token_usage/"  # metrics.json: the memory LLM's usage per purpose (pipeline)
TOKEN_FIELDS = ("prompt_tokens", "completion_tokens")


def purpose_tokens(run: pd.Series | dict) -> dict[str, float]:
    """Tokens per purpose of the memory method's own LLM calls: the flattened
    ``memory_token_usage/<purpose>/{calls, requests, prompt_tokens, completion_tokens}``
    entries of a run (acquisition and evaluation, as the pipeline writes them), each purpose's
    prompt plus completion tokens; a purpose without token counts is left out."""
    out: dict[str, float] = {}
    for key, value in dict(run).items():
        purpose, _, field = str(key).removeprefix(USAGE).partition("/")
        v = number(value)
        if not str(key).startswith(USAGE) or field not in TOKEN_FIELDS or v is None:
            continue
        out[purpose] = out.get(purpose, 0.0) + v
    return out


def purpose_calls(run: pd.Series | dict, purpose: str) -> float | None:
    """The memory LLM's calls for ``purpose`` (``memory_token_usage/<purpose>/calls``)."""
    return number(dict(run).get(f"{USAGE}{purpose}/calls"))


# the columns every report's long table carries per run (:func:`run_ids`): who it is, and what
# the cell it feeds must say of it (identical seeds, tasks and episodes, flags)
RUN_COLUMNS = (
    "experiment",
    "env",
    "backbone",
    "variant",
    "seed",
    "fingerprint",
    "n_tasks",
    "n_episodes",
    "flags",
)


def run_ids(run: pd.Series | dict) -> dict[str, Any]:
    """The :data:`RUN_COLUMNS` of one run row: experiment, env, backbone, variant
    (``variant_key``, else the method), seed, and its ``run_fingerprint``, ``n_tasks``,
    ``n_episodes`` and ``flags``, which :func:`over_seeds` carries into every cell."""
    fingerprint, flags = run.get("run_fingerprint"), run.get("flags")
    return {
        "experiment": run["experiment"],
        "env": run["env"],
        "backbone": run["backbone"],
        "variant": run.get("variant_key", run["method"]),
        "seed": run["seed"],
        "fingerprint": fingerprint if isinstance(fingerprint, str) else None,
        "n_tasks": number(run.get("n_tasks")),
        "n_episodes": number(run.get("n_episodes")),
        "flags": flags if isinstance(flags, str) else "",
    }


def section_runs(results_dir: str | Path, paper: str, section: str) -> pd.DataFrame:
    """All runs under ``results_dir`` whose metrics.json declares ``section`` of ``paper``
    (``report.paper == paper`` and ``section`` in ``report.tables``, whatever the experiment
    name), with ``variant_key`` (:func:`variant_key`) added; an empty frame when none does or
    there are no results at all."""
    try:
        runs = collect(results_dir)
    except FileNotFoundError:
        return pd.DataFrame()
    runs = runs[in_report(runs, paper, section)].copy()
    if runs.empty:
        return pd.DataFrame()
    abl = runs["ablation"] if "ablation" in runs.columns else [None] * len(runs)
    runs["variant_key"] = [variant_key(m, a) for m, a in zip(runs["method"], abl, strict=True)]
    return runs.reset_index(drop=True)


def missing_hint(paper: str, section: str, conf_dir: str | Path | None = None) -> str:
    """The "no results yet" text of ``section``: which declaration the runs need and the
    commands of the experiment configs that declare it (one per line, with the experiment whose
    snapshot it needs first), or that no config declares it."""
    head = (
        f"no results for {paper} {section} yet: no run under the results folder declares "
        f"report.paper={paper} with {section} in report.tables."
    )
    configs = declaring_configs(paper, section, conf_dir)
    if not configs:
        where = Path(conf_dir if conf_dir is not None else CONF_DIR) / "experiment"
        return (
            f"{head} No experiment config in {where} declares it; add {section} to the "
            "report.tables of the experiment that produces it. Showing the paper's numbers alone."
        )
    lines = [f"{head} The experiment configs that declare it produce them:"]
    for c in configs:
        after = f"   # after the {c.snapshot_from} runs" if c.snapshot_from else ""
        lines.append(f"  {c.command}{after}")
    lines.append("Showing the paper's numbers alone.")
    return "\n".join(lines)


def report_missing(
    runs: pd.DataFrame, paper: str, section: str, conf_dir: str | Path | None = None
) -> bool:
    """Print :func:`missing_hint` when ``runs`` (the section's runs) is empty, else
    :func:`flag_note` when some of them are not full paper cells; True when it has some."""
    if runs.empty:
        print(missing_hint(paper, section, conf_dir))
        return False
    note = flag_note(runs, paper, section)
    if note:
        print(note)
    return True


FLAG_MEANINGS = {
    "capped": "a capped task list (protocol.max_*_tasks)",
    "short_split": "a FEVER / HotpotQA split whose file holds fewer records than env.num_test / "
    "env.num_train ask (the warning names the asked and the available count)",
    "stand_in_data": "the env's embedded stand-in data, not the benchmark's official data",
    "non_llm_backbone": "the scripted expert, not an LLM",
    "not_paper_backbone": "an LLM the paper did not report this table with (report.backbones)",
    "degenerate_memory": "a memory that holds nothing or whose LLM answers mostly fell back",
    "train_test_overlap": "memory acquired on tasks whose id or goal is a test task's",
    "method_step_budget": "a step budget of the method's own (protocol.step_budget_by_method: "
    "its released run script's), not the one the table's other methods ran with",
    "errors": "episodes that ended with an error (server or env failure; n_errors), counted as "
    "failures",
    "timeouts": "episodes cut by protocol.episode_timeout_s (n_timeouts)",
    "prompt_truncated": "an agent prompt whose head the backbone cut to fit its context "
    "(backbone.prompt_overflow=cut_left)",
    "prompt_too_long": "episodes ended because the agent's prompt did not fit the context",
    "invalid_replies": "more than half the agent's replies could not be acted on "
    "(invalid_reply_rate)",
    "code_changed": "resumed on other code (protocol.allow_code_change; run_info.json names both)",
}


def flag_note(runs: pd.DataFrame, paper: str, section: str) -> str | None:
    """A warning naming the runs of a section that are not full paper cells (their metrics'
    ``flags``, with ``n_tasks``), and a note naming the runs whose memory was acquired on test
    tasks (``train_test_overlap``: the released code's protocol for MemCo's PDDL lists, so a
    paper cell, but not memory built on disjoint tasks); None when there is nothing to say."""
    if "flags" not in runs.columns:
        return None
    lines: list[str] = []
    for heading, wanted in (
        ("are not full paper cells; their numbers do not follow the paper's protocol", False),
        ("follow the released code in a way the others do not", True),
    ):
        picked = []
        for _, run in runs.iterrows():
            flags = [f for f in str(run["flags"] or "").split(",") if f and f != "nan"]
            mine = [f for f in flags if (f in INFORMATIONAL_FLAGS) == wanted]
            if mine:
                picked.append((run, mine))
        if not picked:
            continue
        label = "WARNING" if not wanted else "NOTE"
        lines.append(f"{label}: {len(picked)} of {len(runs)} runs of {paper} {section} {heading}:")
        for run, mine in picked:
            ids = run_ids(run)
            what = "; ".join(FLAG_MEANINGS.get(f, f) for f in mine)
            tasks = run.get("n_tasks")
            lines.append(
                f"  {ids['env']} {ids['variant']} {ids['backbone']} seed{ids['seed']} "
                f"(n_tasks={tasks if tasks is not None else '?'}): {what}"
            )
    return "\n".join(lines) or None


def mean_bars(ax, xs, stats: pd.DataFrame, variants, width: float, label: str) -> None:
    """One bar per variant: ``stats["mean"]`` with ``stats["std"]`` as error bar (none when the
    std is NaN or 0, e.g. a single seed); ``stats`` is indexed by variant. Nothing (and no
    legend entry) when no variant has a mean."""
    means = [stats["mean"].get(v, math.nan) for v in variants]
    stds = [stats["std"].get(v, math.nan) for v in variants]
    if all(pd.isna(m) for m in means):
        return
    ax.bar(xs, means, width, label=label)
    spread = [(x, m, s) for x, m, s in zip(xs, means, stds, strict=True) if s > 0]  # NaN: False
    if spread:
        x, m, s = zip(*spread, strict=True)
        ax.errorbar(x, m, yerr=s, fmt="none", ecolor="black", elinewidth=1, capsize=2)


NO_RUNS = "ours: no runs yet (the paper's numbers only)"


def no_runs_note(ax, text: str = NO_RUNS) -> None:
    """Say under the panel's title (call it after ``set_title``) that the panel shows no run
    of ours (its paper points alone); in the title, never over the data or the legend."""
    title = ax.get_title()
    ax.set_title(f"{title}\n({text})" if title else f"({text})", fontsize="small")


def not_run_note(ax, variants, shown) -> None:
    """Name the ``variants`` of a panel that have no run of ours (``shown``: those that do)."""
    missing = [v for v in variants if v not in set(shown)]
    if missing and len(missing) < len(variants):
        no_runs_note(ax, "ours not run: " + ", ".join(missing))
    elif missing:
        no_runs_note(ax)


def mean_line(ax, xs, stats: pd.DataFrame, label: str) -> None:
    """One line of ``stats["mean"]`` over ``xs`` with ``stats["std"]`` as error bars (none
    where the std is NaN)."""
    ax.errorbar(xs, stats["mean"], yerr=stats["std"].fillna(0), marker="o", capsize=2, label=label)


def shared_legend(fig, axes) -> None:
    """One legend under the panels for every labelled artist of ``axes`` (each label once),
    where it covers no bar; ``save_figure`` keeps it in the image."""
    entries: dict[str, Any] = {}
    for ax in axes:
        for handle, label in zip(*ax.get_legend_handles_labels(), strict=True):
            entries.setdefault(label, handle)
    if entries:
        columns = min(len(entries), 4)
        fig.legend(entries.values(), entries.keys(), loc="upper center",
                   bbox_to_anchor=(0.5, 0.0), ncol=columns, fontsize="small")  # fmt: skip


def save_figure(fig, out_dir: str | Path, name: str) -> Path:
    path = Path(out_dir) / name
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.tight_layout()
    fig.savefig(path, dpi=120, bbox_inches="tight")  # a legend under the panels included
    return path


def runs_flags(runs: pd.DataFrame) -> str:
    """Every flag of ``runs`` (a section's runs), comma-joined: what :func:`write_table` adds to
    a table computed from them that has no ``flags`` column of its own."""
    if runs is None or runs.empty or "flags" not in runs.columns:
        return ""
    return union_flags(runs["flags"])


def write_table(
    df: pd.DataFrame, out_dir: str | Path, name: str, flags: str | None = None
) -> Path:
    """Write ``df`` as ``<name>.csv`` into ``out_dir`` (index kept when it is not a range).

    An exported table carries the flags of the runs behind its numbers (``capped``,
    ``stand_in_data``, ``errors``, ``not_paper_backbone``, ...; :data:`FLAG_MEANINGS`): its own
    ``flags`` column (per row, :func:`with_row_notes`, or a summary's), else ``flags`` (the
    runs' union, :func:`runs_flags`) written as a column on every row. A table with neither is
    refused: its numbers would leave without what makes them other than a paper cell."""
    if "flags" not in df.columns:
        if flags is None:
            raise ValueError(
                f"memarena: table {name!r} has no flags column; pass flags=runs_flags(runs) "
                "(the flags of the runs it was computed from) to write_table"
            )
        df = df.assign(flags=flags)
    path = Path(out_dir) / f"{name}.csv"
    path.parent.mkdir(parents=True, exist_ok=True)
    df.to_csv(path, index=not isinstance(df.index, pd.RangeIndex))
    return path
