"""MemCo figures of notebooks/memco.ipynb that read more than metrics.json: Figure 1(b,c)
(ALFWorld accuracy per backbone and method on familiar / held-out layouts), the Figure 6 case
study (per-step trajectories with the memory shown at each step, from ``episodes.jsonl``) and
Appendix J (the PDDL local graphs and promoted global records of a saved MemCo snapshot,
``<run>/memory/memory.json``).

Every function reads only the results layout (the runs
:func:`memarena.reports.memco.tables.load_runs` finds and the files in their run folders) and
returns ``None`` / an empty frame when its inputs are missing; the notebook prints
:data:`MISSING` then.
"""

from __future__ import annotations

import json
import math
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pandas as pd

from memarena.core.jsonl import read_jsonl
from memarena.reports.common import (
    mean_bars,
    mean_line,
    no_runs_note,
    not_run_note,
    of_setting,
    ordered,
    save_figure,
)
from memarena.reports.memco.tables import (
    FACET_VARIANTS,
    MEMORY_COST,
    METHOD_ORDER,
    SCOPE_VARIANTS,
    _lambda_of,
    paper_rows,
)
from memarena.results.records import EpisodeRecord, latest
from memarena.results.view_memory import prompt_memory

SPLITS = (("familiar", "valid_seen"), ("heldout", "valid_unseen"))
SNAPSHOT = Path("memory") / "memory.json"  # a run's saved memory (memarena.core.memory)
MISSING = {
    "fig1bc": "no ALFWorld runs of MemCo Table 1 under RESULTS_DIR; run "
    "experiment=memco_table1_alfworld",
    "fig6": "no ALFWorld MemCo and G-Memory runs of Table 1 with a common familiar task under "
    "RESULTS_DIR; run experiment=memco_table1_alfworld method=gmemory_memco,memco (it records each "
    "step's memory: protocol.record_memory=true)",
    "appJ": "no saved MemCo PDDL memory snapshot under RESULTS_DIR; run "
    "experiment=memco_table1_pddl method=memco",
}
NO_PROMPTS = "(memory not recorded: protocol.record_memory=true)"
NO_PROMPTS_NOTE = (
    "Figure 6: these episodes hold neither the memory nor the prompt of each step, so the "
    "memory shown is unknown; rerun experiment=memco_table1_alfworld "
    "method=gmemory_memco,memco with protocol.record_memory=true (its default) to see it"
)


# --------------------------------------------------------------------------------------------
# Figure 1(b,c)


def layouts_table(summary: pd.DataFrame) -> pd.DataFrame:
    """Fig. 1(b,c)'s numbers: one row per backbone x method x split (``familiar`` /
    ``heldout``) of the ALFWorld accuracy (%) summary of Table 1 (:func:`memarena.reports.memco.
    tables.summarize`): mean, sample std and n_seeds over seeds."""
    cols = ["backbone", "method", "split", "mean", "std", "n_seeds"]
    parts = []
    for split, _ in SPLITS:
        if summary.empty:
            break
        sub = summary[
            of_setting(summary["setting"], "alfworld", split) & (summary["metric"] == "accuracy")
        ]
        parts.append(sub.assign(split=split).rename(columns={"variant": "method"}))
    if not parts or all(p.empty for p in parts):
        return pd.DataFrame(columns=cols)
    out = pd.concat(parts)[cols]
    order = {m: i for i, m in enumerate(ordered(list(out["method"].unique()), METHOD_ORDER))}
    out = out.assign(_o=out["method"].map(order)).sort_values(["backbone", "_o", "split"])
    return out.drop(columns="_o").reset_index(drop=True)


def figure_layouts(table: pd.DataFrame, out_dir: str | Path, name="fig1bc_alfworld_layouts.png"):
    """Fig. 1(b,c): ALFWorld accuracy on (b) familiar and (c) held-out layouts, one marker per
    backbone x method at its mean with the std over seeds as error bar (none for one seed)."""
    import matplotlib.pyplot as plt

    methods = ordered(list(table["method"].unique()), METHOD_ORDER)
    backbones = sorted(table["backbone"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
    width = 0.8 / max(len(backbones), 1)
    for ax, (split, _), letter in zip(axes, SPLITS, "bc", strict=True):
        sub = table[table["split"] == split].set_index(["backbone", "method"])
        for j, backbone in enumerate(backbones):
            xs, ys, es = [], [], []
            for i, method in enumerate(methods):
                if (backbone, method) in sub.index:
                    row = sub.loc[(backbone, method)]
                    xs.append(i + (j - (len(backbones) - 1) / 2) * width)
                    ys.append(row["mean"])
                    es.append(0.0 if pd.isna(row["std"]) else row["std"])
            ax.errorbar(xs, ys, yerr=es, fmt="o", capsize=3, label=backbone)
        ax.set_xticks(range(len(methods)), methods, rotation=30, ha="right")
        ax.set_title(f"({letter}) ALFWorld {'familiar' if split == 'familiar' else 'held-out'}")
        ax.set_xlim(-0.6, len(methods) - 0.4)
        ax.set_ylim(0, 102)
        ax.set_ylabel("accuracy (%)")
        ax.grid(axis="y", alpha=0.3)
        ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig


# --------------------------------------------------------------------------------------------
# Figure 6: case study


def read_episodes(run_dir: str | Path) -> list[EpisodeRecord]:
    """The evaluated episodes of a run (``episodes.jsonl``), the latest copy of each."""
    path = Path(run_dir) / "episodes.jsonl"
    if not path.exists():
        return []
    return latest(EpisodeRecord.from_json(record) for record in read_jsonl(path))


def step_memory(step: dict[str, Any]) -> str:
    """The memory in view when the model chose ``step``'s action: the recorded memory slots
    (``protocol.record_memory``), else the memory in the last prompt message that holds one,
    where the step's recorded ``memory_spans`` put it
    (:func:`memarena.results.view_memory.prompt_memory`), joined by a blank line; "" when the
    prompt shows none; :data:`NO_PROMPTS` when it was not recorded."""
    memory = step.get("memory")
    if memory is not None:  # protocol.record_memory: the slots' texts as shown
        return "\n\n".join(text.strip() for text in memory.values() if text.strip())
    prompt = step.get("prompt")
    if not prompt:
        return NO_PROMPTS
    return "\n\n".join(text.strip() for text in prompt_memory(step))


def _alfworld_runs(runs: pd.DataFrame, method: str) -> pd.DataFrame:
    if runs.empty:
        return runs
    keep = of_setting(runs["env"], "alfworld") & (runs["variant_key"] == method)
    return runs[keep].sort_values(["backbone", "seed"])


def _own_view(records: list[EpisodeRecord]) -> list[EpisodeRecord]:
    """One record per task of the first evaluation run: MemCo evaluates every task under each
    agent's view; the task's own domain agent's view is kept (else the first agent's)."""
    out: dict[str, EpisodeRecord] = {}
    first = min((r.run for r in records), default=0)
    for r in sorted(records, key=lambda r: (r.agent != r.domain, str(r.agent))):
        if r.run == first and r.trajectory and r.task_id not in out:
            out[r.task_id] = r
    return [out[t] for t in sorted(out)]


def choose_case(runs: pd.DataFrame) -> dict[str, tuple[pd.Series, EpisodeRecord]] | None:
    """The three episodes of Fig. 6, ``{"a": (run, record), "b": ..., "c": ...}``, or None
    without an ALFWorld G-Memory and MemCo run sharing a familiar task.

    The runs: the first (backbone, seed) in sorted order where both an ALFWorld ``gmemory`` and
    ``memco`` run (no ablation) of ``runs`` exist. Per run one record per task: the first
    evaluation run, and for MemCo (which evaluates every task under each agent's view) the
    task's own domain agent's view. (a) G-Memory and (b) MemCo on one familiar
    (``valid_seen``) task both ran: the first task id, in sorted order, where MemCo succeeded
    and G-Memory did not, else the first where MemCo succeeded, else the first. (c) MemCo on a
    held-out (``valid_unseen``) task: the first successful one in sorted order, else the
    first; panel (c) is left out when MemCo has no held-out task.
    """
    gmem, memco = _alfworld_runs(runs, "gmemory"), _alfworld_runs(runs, "memco")
    if gmem.empty or memco.empty:
        return None
    for _, m_run in memco.iterrows():
        same = gmem[(gmem["backbone"] == m_run["backbone"]) & (gmem["seed"] == m_run["seed"])]
        if same.empty:
            continue
        g_run = same.iloc[0]
        g_recs = {r.task_id: r for r in _own_view(read_episodes(g_run["run_dir"]))}
        m_all = _own_view(read_episodes(m_run["run_dir"]))
        familiar = [r for r in m_all if r.split == "valid_seen" and r.task_id in g_recs]
        if not familiar:
            continue
        ranked = sorted(
            familiar,
            key=lambda r: (not (r.success and not g_recs[r.task_id].success), not r.success),
        )
        case = {"a": (g_run, g_recs[ranked[0].task_id]), "b": (m_run, ranked[0])}
        heldout = sorted(
            (r for r in m_all if r.split == "valid_unseen"), key=lambda r: not r.success
        )
        if heldout:
            case["c"] = (m_run, heldout[0])
        return case
    return None


PANELS = {
    "a": "(a) G-Memory, familiar layout",
    "b": "(b) MemCo, familiar layout",
    "c": "(c) MemCo, held-out layout",
}


def _feedback(step: dict[str, Any]) -> str:
    fb = step.get("feedback") or {}
    parts = ["valid" if fb.get("valid_action") else "invalid"]
    if fb.get("failure_label"):
        parts.append(str(fb["failure_label"]))
    if fb.get("state_changed"):
        parts.append("state changed")
    return "; ".join(parts)


def case_table(case: dict[str, tuple[pd.Series, EpisodeRecord]] | None) -> pd.DataFrame:
    """Fig. 6's rows: per panel and step the action, the observation it got, the normalized
    feedback, the memory ids and the memory text shown at that step (:func:`step_memory`)."""
    cols = [
        "panel",
        "method",
        "backbone",
        "seed",
        "task_id",
        "split",
        "domain",
        "success",
        "step",
        "action",
        "observation",
        "feedback",
        "memory_ids",
        "memory",
    ]
    rows = []
    for panel, (run, rec) in (case or {}).items():
        for k, step in enumerate((rec.trajectory or {}).get("steps") or []):
            rows.append(
                {
                    "panel": panel,
                    "method": run["method"],
                    "backbone": run["backbone"],
                    "seed": run["seed"],
                    "task_id": rec.task_id,
                    "split": rec.split,
                    "domain": rec.domain,
                    "success": rec.success,
                    "step": k,
                    "action": step.get("action", ""),
                    "observation": step.get("observation", ""),
                    "feedback": _feedback(step),
                    "memory_ids": " ".join(map(str, step.get("memory_ids") or [])),
                    "memory": step_memory(step),
                }
            )
    return pd.DataFrame(rows, columns=cols)


def _clip(text: str, chars: int) -> str:
    text = " ".join(str(text).split())
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _panel_lines(sub: pd.DataFrame, max_steps: int, memory_chars: int) -> list[str]:
    """The text of one case-study panel: per step the action, the feedback with the start of
    the observation, and the memory (markdown heading lines left out, truncated; "(as before)"
    when equal to the previous step's)."""
    lines, previous = [], None
    for _, row in sub.head(max_steps).iterrows():
        memory = row["memory"] if isinstance(row["memory"], str) else ""
        body = " ".join(x for x in memory.splitlines() if not x.lstrip().startswith("#"))
        shown = "(as before)" if memory == previous else _clip(body or "-", memory_chars)
        previous = memory
        lines.append(_clip(f"{row['step']}. > {row['action']}", 78))
        lines.append("   " + _clip(f"[{row['feedback']}] {row['observation']}", 75))
        lines += textwrap.wrap(
            f"memory: {shown}", 78, initial_indent="   ", subsequent_indent="   "
        )
    if len(sub) > max_steps:
        lines.append(f"... {len(sub) - max_steps} more steps")
    return lines


def figure_case(
    table: pd.DataFrame,
    out_dir: str | Path,
    name: str = "fig6_case_study.png",
    max_steps: int = 12,
    memory_chars: int = 200,
):
    """Fig. 6: the case-study trajectories side by side, one column per panel; each step shows
    its action, its feedback and the memory shown at that step, truncated to ``memory_chars``
    characters; at most ``max_steps`` steps per panel. A panel is as wide as its 78-column
    monospace text at 6.5 pt (4.6 in), so the three fit a page."""
    import matplotlib.pyplot as plt

    panels = list(dict.fromkeys(table["panel"]))
    texts = {p: _panel_lines(table[table["panel"] == p], max_steps, memory_chars) for p in panels}
    height = 0.11 * max(len(t) for t in texts.values()) + 1.0
    fig, axes = plt.subplots(1, len(panels), figsize=(4.6 * len(panels), height), squeeze=False)
    for ax, panel in zip(axes[0], panels, strict=True):
        head = table[table["panel"] == panel].iloc[0]
        status = "success" if bool(head["success"]) else "failure"
        ax.axis("off")
        task = f"{_clip(head['task_id'], 60)}\n{head['domain']}: {status}"
        ax.set_title(
            f"{PANELS.get(panel, panel)}\n{task}",
            fontsize=9,
            loc="left",
        )
        ax.text(
            0,
            1,
            "\n".join(texts[panel]),
            va="top",
            ha="left",
            family="monospace",
            fontsize=6.5,
            transform=ax.transAxes,
        )
    return save_figure(fig, out_dir, name), fig


# --------------------------------------------------------------------------------------------
# Appendix J: PDDL memory structures


def pddl_snapshot(runs: pd.DataFrame) -> tuple[pd.Series, dict[str, Any]] | None:
    """(run, saved MemCo state) of the first PDDL MemCo run of ``runs`` (no ablation; sorted by
    backbone and seed) with a snapshot ``memory/memory.json``; None without one."""
    if runs.empty:
        return None
    keep = of_setting(runs["env"], "pddl") & (runs["variant_key"] == "memco")
    for _, run in runs[keep].sort_values(["backbone", "seed"]).iterrows():
        path = Path(run["run_dir"]) / SNAPSHOT
        if path.is_file():
            blob = json.loads(path.read_text())
            if blob.get("method") == "memco":
                return run, blob["state"]
    return None


def global_records(state: dict[str, Any] | None) -> pd.DataFrame:
    """The promoted global records of a saved MemCo state as saved (its promotion rule and
    threshold): key, type, sources (``;``-joined agents), wilson_score (the promotion score,
    the Wilson lower bound under rule ``wilson``), rho+, evidence counts, text; best first."""
    cols = [
        "key",
        "type",
        "sources",
        "wilson_score",
        "rho",
        "n_pos",
        "n_neg",
        "n_stall",
        "rule",
        "threshold",
        "text",
    ]
    glob = (state or {}).get("global") or {}
    rows = [
        {
            "key": r["key"],
            "type": r["type"],
            "sources": ";".join(r.get("sources") or []),
            "wilson_score": r["score"],
            "rho": r.get("rho", math.nan),
            "n_pos": r.get("n_pos"),
            "n_neg": r.get("n_neg"),
            "n_stall": r.get("n_stall"),
            "rule": glob.get("rule"),
            "threshold": glob.get("threshold"),
            "text": r.get("text") or " -> ".join(r.get("actions") or []),
        }
        for r in glob.get("records") or []
    ]
    df = pd.DataFrame(rows, columns=cols)
    return df.sort_values(["wilson_score", "key"], ascending=[False, True]).reset_index(drop=True)


def _edge_color(edge: dict[str, Any]) -> str:
    """Outcome colour of a merged edge: green reached success, blue progressed, red carries a
    failure label, grey stalled, black otherwise."""
    if edge.get("success"):
        return "green"
    if edge.get("progressed"):
        return "tab:blue"
    if edge.get("labels"):
        return "red"
    if edge.get("stalled"):
        return "grey"
    return "black"


def local_graph(graph: dict[str, Any], max_nodes: int = 30):
    """The saved local graph ``G_i^l`` as a networkx DiGraph of its ``max_nodes`` most visited
    nodes (ties by id) with their ``act`` / ``result`` edges (the ``delta`` edges repeat the
    same transitions), parallel edges summed."""
    import networkx as nx

    nodes = sorted(graph.get("nodes") or [], key=lambda n: (-n.get("visits", 0), n["id"]))
    kept = {n["id"]: n for n in nodes[:max_nodes]}
    g = nx.DiGraph()
    for nid, n in kept.items():
        g.add_node(nid, type=n.get("type"), content=n.get("content", ""), visits=n.get("visits"))
    for e in graph.get("edges") or []:
        if (
            e["source"] not in kept
            or e["target"] not in kept
            or e.get("relation")
            not in (
                "act",
                "result",
            )
        ):
            continue
        if g.has_edge(e["source"], e["target"]):
            d = g.edges[e["source"], e["target"]]
            for k in ("count", "progressed", "stalled", "success"):
                d[k] += e.get(k, 0)
            d["labels"] = {**d["labels"], **(e.get("labels") or {})}
        else:
            g.add_edge(
                e["source"],
                e["target"],
                count=e.get("count", 0),
                progressed=e.get("progressed", 0),
                stalled=e.get("stalled", 0),
                success=e.get("success", 0),
                labels=dict(e.get("labels") or {}),
            )
    return g


def layered_positions(g) -> dict[str, tuple[float, float]]:
    """Node positions for a readable drawing of a local graph: one row per step from the start
    (breadth-first depth from the nodes nothing leads to; a node on no such path below them),
    the nodes of a row spread across the width. Rows are one unit apart and a row's nodes
    ``max(1, len(row))`` units of width apart, so labels written beside the nodes do not meet."""
    import networkx as nx

    roots = [v for v in g if g.in_degree(v) == 0] or sorted(g)[:1]
    depth: dict[str, int] = {}
    for v, d in nx.multi_source_dijkstra_path_length(g, roots).items() if roots else ():
        depth[v] = int(d)
    bottom = max(depth.values(), default=-1) + 1
    for v in sorted(g):
        depth.setdefault(v, bottom)
    rows: dict[int, list[str]] = {}
    for v in sorted(g, key=lambda v: (depth[v], v)):
        rows.setdefault(depth[v], []).append(v)
    pos = {}
    for d, row in rows.items():
        for i, v in enumerate(row):
            pos[v] = ((i + 0.5) / len(row), -float(d))
    return pos


def figure_local(
    state: dict[str, Any],
    out_dir: str | Path,
    name="appJ_local_memory.png",
    max_nodes: int = 30,
    title: str = "",
):
    """Appendix J.2: one panel per agent (PDDL domain) of its local graph (:func:`local_graph`):
    state nodes blue, action nodes orange, edges coloured by outcome (:func:`_edge_color`)."""
    import matplotlib.pyplot as plt
    import networkx as nx

    agents = sorted((state.get("agents") or {}).items())
    n = max(len(agents), 1)
    cols = min(n, 2)
    rows = math.ceil(n / cols)
    graphs = [
        (agent, local, local_graph(local.get("graph") or {}, max_nodes)) for agent, local in agents
    ]
    height = max([len(set(y for _, y in layered_positions(g).values())) for *_, g in graphs] or [1])
    fig, axes = plt.subplots(
        rows, cols, figsize=(8 * cols, max(4.0, 0.28 * height + 1.2) * rows), squeeze=False
    )
    for ax in axes.flat:
        ax.axis("off")
    for ax, (agent, local, g) in zip(axes.flat, graphs, strict=False):
        saved = local.get("graph") or {}
        pos = layered_positions(g)
        colors = ["tab:orange" if g.nodes[v]["type"] == "action" else "lightblue" for v in g]
        nx.draw_networkx_nodes(g, pos, ax=ax, node_color=colors, node_size=90)
        nx.draw_networkx_edges(
            g,
            pos,
            ax=ax,
            edge_color=[_edge_color(d) for *_, d in g.edges(data=True)],
            arrows=True,
            arrowsize=7,
            width=0.8,
            node_size=90,
            connectionstyle="arc3,rad=0.15",  # an edge back up the rows stays visible
        )
        for v, (x, y) in pos.items():  # beside the node, not on it: rows are apart, labels fit
            ax.text(x + 0.012, y, _clip(g.nodes[v]["content"], 34), fontsize=5.5,
                    ha="left", va="center")  # fmt: skip
        ax.set_xlim(-0.02, 1.25)
        total = len(saved.get("nodes") or [])
        records = len(local.get("records") or [])
        ax.set_title(
            f"{agent}: {g.number_of_nodes()} of {total} nodes shown, {records} records", fontsize=9
        )
    if not agents:
        axes.flat[0].set_title("the snapshot holds no local memory")
    fig.suptitle(
        title
        or "MemCo local memory graphs (edges: green success, blue progress, "
        "red failure label, grey stalled)",
        fontsize=10,
    )
    return save_figure(fig, out_dir, name), fig


def figure_global(
    records: pd.DataFrame,
    out_dir: str | Path,
    name="appJ_global_memory.png",
    max_records: int = 40,
    title: str = "",
):
    """Appendix J.1: the promoted global records grouped by source domain, drawn as a
    bipartite graph (source agents left, records right, labelled type, W and text); at most
    ``max_records`` records, best first. Without records the title says none was promoted."""
    import matplotlib.pyplot as plt
    import networkx as nx

    shown = records.head(max_records)
    sources = sorted({s for text in shown["sources"] for s in str(text).split(";") if s})
    if shown.empty:  # a line of text, not a page of blank axes
        fig, ax = plt.subplots(figsize=(7, 0.7))
        ax.axis("off")
        ax.set_title(
            f"{title}MemCo global memory: no global records promoted in this snapshot", fontsize=10
        )
        return save_figure(fig, out_dir, name), fig
    fig, ax = plt.subplots(figsize=(11, max(3.0, 0.32 * max(len(shown), len(sources)) + 1.5)))
    ax.axis("off")
    g = nx.DiGraph()
    pos = {}
    for i, s in enumerate(sources):
        g.add_node(f"src:{s}")
        pos[f"src:{s}"] = (0.0, -i * len(shown) / max(len(sources), 1))
    # records ordered by first source, then score: each domain's records sit together
    shown = shown.assign(_first=shown["sources"].str.split(";").str[0])
    shown = shown.sort_values(["_first", "wilson_score"], ascending=[True, False])
    labels = {f"src:{s}": s for s in sources}
    for i, (_, r) in enumerate(shown.iterrows()):
        node = f"rec:{r['key']}"
        g.add_node(node)
        pos[node] = (1.0, -i)
        labels[node] = f"[{r['type']}] W={r['wilson_score']:.2f} {_clip(r['text'], 60)}"
        for s in str(r["sources"]).split(";"):
            if s:
                g.add_edge(f"src:{s}", node)
    nx.draw_networkx_edges(g, pos, ax=ax, edge_color="grey", arrows=False, width=0.6)
    nx.draw_networkx_nodes(
        g, pos, nodelist=[f"src:{s}" for s in sources], ax=ax, node_color="tab:green", node_size=300
    )
    nx.draw_networkx_nodes(
        g,
        pos,
        nodelist=[n for n in g if n.startswith("rec:")],
        ax=ax,
        node_color="tab:purple",
        node_size=60,
    )
    for node, text in labels.items():
        x, y = pos[node]
        ha = "right" if node.startswith("src:") else "left"
        ax.text(x + (-0.03 if ha == "right" else 0.03), y, text, ha=ha, va="center", fontsize=7)
    ax.set_xlim(-0.6, 3.2)
    more = f" (best {max_records} of {len(records)})" if len(records) > max_records else ""
    ax.set_title(
        f"{title}MemCo global memory: {len(records)} promoted records by source domain{more}",
        fontsize=10,
    )
    return save_figure(fig, out_dir, name), fig


def figure_threshold(summary: pd.DataFrame, out_dir: str | Path, name="fig4ab_threshold.png"):
    """Fig. 4(a,b): accuracy vs Wilson threshold per split, bubble area = global records;
    ours as circles, the paper's numbers as red crosses."""
    import matplotlib.pyplot as plt

    paper = paper_rows(["table11"])
    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, split in zip(axes, ("familiar", "heldout"), strict=True):
        setting = f"alfworld_{split}"
        if not summary.empty:
            acc = summary[
                of_setting(summary["setting"], "alfworld", split)
                & (summary["metric"] == "accuracy")
            ]
            rec = summary[summary["metric"] == "global_records"].groupby("variant")["mean"].mean()
            acc = acc[acc["variant"].map(_lambda_of).notna()]
            for backbone, grp in acc.groupby("backbone"):
                lam = grp["variant"].map(_lambda_of)
                keep = lam.notna()
                sizes = [max(20.0, rec.get(v, 100.0) / 3) for v in grp["variant"][keep]]
                ax.scatter(lam[keep], grp["mean"][keep], s=sizes, alpha=0.5, label=backbone)
        p = paper[(paper["setting"] == setting) & (paper["metric"] == "accuracy")]
        ax.scatter(p["variant"].map(_lambda_of), p["value"], marker="x", color="red", label="paper")
        rng = paper[(paper["setting"] == setting) & paper["metric"].str.startswith("accuracy_")]
        for v in rng["value"]:
            ax.axhline(v, color="red", ls=":", lw=0.8)
        ax.set_xlabel("promotion threshold λ")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"ALFWorld {split} (paper range dotted)")
        if summary.empty or acc.empty:
            no_runs_note(ax)
        ax.legend(fontsize="small")
    return save_figure(fig, out_dir, name), fig


def figure_variants(
    summary: pd.DataFrame,
    variants: Sequence[str],
    out_dir: str | Path,
    name: str,
    tables: Sequence[str] = ("table12",),
    metrics: Sequence[str] = ("accuracy", "steps"),
):
    """Bars per variant and ALFWorld split for each metric (Fig. 4(c,d)); the paper's value as
    a red cross where it reports one."""
    import matplotlib.pyplot as plt

    paper = paper_rows(tables)
    fig, axes = plt.subplots(1, len(metrics), figsize=(5 * len(metrics), 3.6), squeeze=False)
    width = 0.38
    for ax, metric in zip(axes[0], metrics, strict=True):
        ran: set[str] = set()
        for j, split in enumerate(("familiar", "heldout")):
            setting = f"alfworld_{split}"
            xs = [i + (j - 0.5) * width for i in range(len(variants))]
            if not summary.empty:
                sub = summary[
                    of_setting(summary["setting"], "alfworld", split)
                    & (summary["metric"] == metric)
                ]
                sub = sub.groupby("variant")[["mean", "std"]].mean()
                mean_bars(ax, xs, sub, variants, width, f"ours {split}")
                ran |= set(sub.dropna(subset=["mean"]).index)
            p = paper[(paper["setting"] == setting) & (paper["metric"] == metric)]
            pv = p.set_index("variant")["value"]
            ax.scatter(
                xs,
                [pv.get(v, math.nan) for v in variants],
                marker="x",
                color="red" if j == 0 else "darkred",
                zorder=3,
                label=f"paper {split}",
            )
        ax.set_xticks(range(len(variants)), variants, rotation=30, ha="right")
        ax.set_title(metric + (" (%)" if metric == "accuracy" else ""))
        not_run_note(ax, variants, ran)
        ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig


def figure_memory_cost(
    summary: pd.DataFrame, out_dir: str | Path, name: str = "fig3abc_memory_cost.png"
):
    """Fig. 3(a-c): global records, retrieved entries and memory tokens per call by variant."""
    import matplotlib.pyplot as plt

    paper = paper_rows(["table12"])
    metrics = list(MEMORY_COST)
    fig, axes = plt.subplots(1, 3, figsize=(13, 3.4))
    for ax, metric in zip(axes, metrics, strict=True):
        variants = list(SCOPE_VARIANTS)
        sub = pd.Series(dtype=float)
        if not summary.empty:
            sub = summary[summary["metric"] == metric].groupby("variant")["mean"].mean().dropna()
        if not sub.empty:
            ax.bar(range(len(variants)), [sub.get(v, math.nan) for v in variants], label="ours")
        pv = paper[paper["metric"] == metric].set_index("variant")["value"]
        ax.scatter(
            range(len(variants)),
            [pv.get(v, math.nan) for v in variants],
            marker="x",
            color="red",
            zorder=3,
            label="paper",
        )
        ax.set_xticks(range(len(variants)), variants, rotation=30, ha="right")
        ax.set_title(metric)
        not_run_note(ax, variants, sub.index)
        ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig


def figure_budget(summary: pd.DataFrame, out_dir: str | Path, name: str = "fig3d_budget.png"):
    """Fig. 3(d): accuracy vs interaction budget for each method, one panel per split."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(9, 3.4))
    for ax, split in zip(axes, ("familiar", "heldout"), strict=True):
        sub = summary[
            of_setting(summary["setting"], "alfworld", split) & (summary["metric"] == "accuracy")
        ]
        for (variant, backbone), grp in sub.groupby(["variant", "backbone"]):
            grp = grp.sort_values("step_budget")
            mean_line(ax, grp["step_budget"], grp, f"{variant} ({backbone})")
        ax.set_xlabel("interaction budget (steps)")
        ax.set_ylabel("accuracy (%)")
        ax.set_title(f"ALFWorld {split}")
        ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig


def figure_deltas(deltas: pd.DataFrame, out_dir: str | Path, name: str = "fig5_facets.png"):
    """Fig. 5: bars of Δaccuracy (pp) and Δsteps from full MemCo per variant and split."""
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
    width = 0.38
    for ax, metric in zip(axes, ("accuracy", "steps"), strict=True):
        variants = [v for v in FACET_VARIANTS if v in set(deltas["variant"])] or list(
            FACET_VARIANTS
        )
        for j, split in enumerate(("familiar", "heldout")):
            sub = (
                deltas[(deltas["setting"] == f"alfworld_{split}") & (deltas["metric"] == metric)]
                .groupby("variant")["delta"]
                .mean()
            )
            ax.bar(
                [i + (j - 0.5) * width for i in range(len(variants))],
                [sub.get(v, math.nan) for v in variants],
                width,
                label=split,
            )
        ax.axhline(0, color="black", lw=0.8)
        ax.set_xticks(range(len(variants)), variants, rotation=30, ha="right")
        ax.set_title("Δ accuracy (pp)" if metric == "accuracy" else "Δ steps")
        ax.legend(fontsize="x-small")
    return save_figure(fig, out_dir, name), fig
