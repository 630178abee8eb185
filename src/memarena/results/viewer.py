"""A static HTML trajectory viewer over a results tree (``scripts/view_runs.py``).

:func:`write_page` reads every run under a results folder (:func:`~memarena.results.collect.
collect`: ids, flags, metrics) with its episodes (``episodes.jsonl``, then
``acquisition.jsonl``; the latest copy of each episode, as the metrics count them) and writes
one self-contained page: inline CSS and JS (:mod:`memarena.results.view_assets`) that show one
view at a time from the URL fragment, no server and nothing fetched.

Views:

- ``#runs``: every run (experiment / env / method / backbone / seed, key metrics, flags),
  filtered by text, method, env, success and flag, sorted by any column; tick runs to compare.
- ``#run-<i>``: its metrics and episodes (filtered by text, phase, agent and success; sorted).
- ``#ep-<i>-<j>``: the episode's steps: action, observation, validity, reward, progress, the
  memory the step showed (its ids, and its text when the run recorded it with
  ``protocol.record_memory``; an id's stored text from the snapshot on hover), and, when the
  run recorded its prompts (``protocol.record_prompts=true``), the messages the agent got, each
  memory slot marked at the place the prompt builder recorded (``Step.memory_spans``). A
  conversation prompt is append-only, so a step lists only the messages that its previous
  step's prompt did not already hold.
- ``#compare?runs=<i>,<k>[&task=<id>]``: the evaluated tasks the chosen runs share (outcome per
  run, the first step where their actions differ), and one task's trajectories side by side,
  step by step, with the memory each step showed; the first divergence is marked. A team run
  (two or more agent views, MemCo's per-domain agents) is one column group whose views start
  collapsed into one column (each view's outcome and action per step), so two such runs fit a
  1400 px window; a control expands them, or shows one view in full.

The viewer reads only what a run wrote; it knows no method. Text from a run is escaped
(:func:`html.escape`) or, in the comparison view, written with ``textContent``.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from memarena.core.jsonl import read_jsonl
from memarena.results.collect import collect, default_metrics
from memarena.results.records import EpisodeRecord, latest
from memarena.results.view_assets import CSS, JS
from memarena.results.view_memory import NO_SPANS, marked, shown_text, snapshot_texts
from memarena.results.view_memory import spans_by_message as _spans_by_message

EPISODE_FILES = (("evaluation", "episodes.jsonl"), ("acquisition", "acquisition.jsonl"))
NO_PROMPTS = (
    '<p class="note">The prompts were not recorded: rerun with protocol.record_prompts=true '
    "to see them here.</p>"
)
RUN_KEYS = ("experiment", "env", "method", "ablation", "backbone", "seed")
NO_SNAPSHOT_TEXT = "not in the memory snapshot (made at retrieval); see the step's memory text"


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _table(
    header: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "", tid: str = ""
) -> str:
    """A table of already-escaped cells (a row given as a str is an already-built ``<tr>``)."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join(
        r if isinstance(r, str) else "<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>"
        for r in rows
    )
    ident = f' id="{tid}"' if tid else ""
    return (
        f'<table class="{cls}"{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'
    )


def _ids(ids: Sequence[str] | None, texts: Mapping[str, str]) -> str:
    """Memory ids, each with its text when known (the line the step recorded for it, else the
    snapshot's entry), also as its tooltip."""
    if not ids:
        return '<span class="none">none</span>'
    items = []
    for i in map(str, ids):
        text = texts.get(i)
        title = escape(text or NO_SNAPSHOT_TEXT)
        line = f' <span class="memline">{escape(text)}</span>' if text else ""
        items.append(f'<li><code class="memid" title="{title}">{escape(i)}</code>{line}</li>')
    return f'<ul class="memids">{"".join(items)}</ul>'


def _filters(table_id: str, selects: Mapping[str, Iterable[tuple[str, str]]]) -> str:
    """A filter bar for the table ``table_id``: a text search and one select per row
    attribute (``data-<key>``), each option ``(value, label)``; '' is "any"."""
    parts = [
        f'<div class="filters" data-table="{table_id}">'
        '<input type="search" class="filter-text" placeholder="search" aria-label="search">'
    ]
    for key, options in selects.items():
        opts = "".join(
            f'<option value="{escape(v)}">{escape(label)}</option>'
            for v, label in [("", f"any {key}"), *options]
        )
        parts.append(f'<select class="filter" data-key="{key}" aria-label="{key}">{opts}</select>')
    parts.append('<span class="count"></span></div>')
    return "".join(parts)


def _breakable(text: str) -> str:
    """``text`` escaped, with a line-break opportunity after each ``_`` and ``-`` (long names
    wrap there, so a wide table fits its window)."""
    return escape(text).replace("_", "_<wbr>").replace("-", "-<wbr>")


def _choices(values: Iterable[Any]) -> list[tuple[str, str]]:
    return [(v, v) for v in sorted({str(x) for x in values if x not in (None, "")})]


def read_episodes(run_dir: Path) -> list[tuple[str, EpisodeRecord]]:
    """(phase, record) of a run's episodes: evaluation, then acquisition; the latest copy of
    each (a retried or redone episode replaces the earlier one)."""
    out = []
    for phase, name in EPISODE_FILES:
        path = run_dir / name
        if not path.exists():
            continue
        records = [EpisodeRecord.from_json(record) for record in read_jsonl(path)]
        out += [(phase, r) for r in latest(records)]
    return out


def _messages(
    messages: Sequence[Mapping[str, Any]], previous: Sequence[Any], step: Mapping[str, Any]
) -> str:
    """The step's prompt messages, without the leading ones the previous step's prompt held;
    each memory slot marked where the step's ``memory_spans`` put it."""
    same = 0
    for a, b in zip(messages, previous, strict=False):
        if a != b:
            break
        same += 1
    spans = _spans_by_message(step)
    parts = [f'<p class="note">{same} earlier messages as in the previous step</p>'] if same else []
    for index, m in enumerate(messages[same:], start=same):
        role = escape(str(m.get("role", "?")))
        content = m.get("content")
        if isinstance(content, str):
            shown = marked(content, spans.get(index, ()))
        else:
            shown = escape(json.dumps(content, indent=1, ensure_ascii=False))
        calls = m.get("tool_calls")
        if calls:
            shown += escape(f"\n[tool calls] {json.dumps(calls, ensure_ascii=False)}")
        parts.append(
            f'<div class="msg {role}"><div class="role">{role}</div><pre>{shown}</pre></div>'
        )
    return "".join(parts)


NOT_RECORDED = "memory not recorded (protocol.record_memory=false)"


def _memory_cell(steps: Sequence[Mapping[str, Any]], k: int, texts: Mapping[str, str]) -> str:
    """The memory step ``k`` showed: its ids and, when recorded, its text; a step recorded
    without its ids (a run made before they were always kept) says it does not know."""
    s = steps[k]
    if "memory_ids" not in s and shown_text(s) is None:
        return f'<span class="note">{NOT_RECORDED}</span>'
    known = {**texts, **(s.get("memory_entries") or {})}
    ids = _ids(s.get("memory_ids"), known)
    text = shown_text(s)
    if text is None or text == "":
        return ids
    if k > 0 and shown_text(steps[k - 1]) == text:
        return f'{ids}<div class="note">memory text as in step {k - 1}</div>'
    return (
        f'{ids}<details class="memory-text"><summary>memory text shown</summary>'
        f'<pre class="memtext">{escape(text)}</pre></details>'
    )


def _steps(record: EpisodeRecord, texts: Mapping[str, str]) -> str:
    """The steps table; a step's prompt (when recorded) in a full-width row below it."""
    traj = record.trajectory or {}
    steps = traj.get("steps") or []
    if not steps:
        return '<p class="none">no trajectory recorded</p>'
    header = ("step", "action", "observation", "validity", "reward", "progress", "memory shown")
    rows, previous, unplaced = [], [], False
    for k, s in enumerate(steps):
        fb = s.get("feedback") or {}
        valid = "valid" if fb.get("valid_action") else "invalid"
        label = f" ({escape(str(fb['failure_label']))})" if fb.get("failure_label") else ""
        who = {"helper": "helper's turn", "meta_check": "meta-check, not sent to the env"}
        by = s.get("agent")
        by_note = f'<div class="note">{who.get(by, escape(str(by)))}</div>' if by else ""
        cells = (
            str(k),
            f"<pre>{escape(str(s.get('action', '')))}</pre>{by_note}",
            f"<pre>{escape(str(s.get('observation', '')))}</pre>",
            f'<span class="{valid}">{valid}</span>{label}',
            _fmt(s.get("reward")),
            _fmt(s.get("progress")),
            _memory_cell(steps, k, texts),
        )
        rows.append(f'<tr class="step">{"".join(f"<td>{c}</td>" for c in cells)}</tr>')
        prompt = s.get("prompt")
        if prompt:
            unplaced = unplaced or "memory_spans" not in s
            shown = _messages(prompt, previous, s)
            previous = prompt
            rows.append(
                f'<tr class="prompt"><td colspan="{len(header)}"><details>'
                f"<summary>prompt of step {k}</summary>{shown}</details></td></tr>"
            )
    head = "".join(f"<th>{h}</th>" for h in header)
    note = NO_PROMPTS if not previous else (NO_SPANS if unplaced else "")
    body = "".join(rows)
    return f'{note}<table class="steps"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _episode_view(
    run_i: int, ep_j: int, phase: str, record: EpisodeRecord, title: str, texts: Mapping[str, str]
) -> str:
    traj = record.trajectory or {}
    task = traj.get("task") or {}
    facts = (
        ("phase", phase),
        ("task", record.task_id),
        ("agent", record.agent),
        ("run", record.run),
        ("status", record.status),
        ("success", record.success),
        ("progress", _fmt(record.progress)),
        ("steps", record.steps),
        ("invalid replies", record.invalid_replies),
        ("helper turns", record.helper_turns),
        ("tokens", record.tokens),
        ("error", record.error),
    )
    rows = "".join(f"<tr><th>{escape(k)}</th><td>{escape(str(v))}</td></tr>" for k, v in facts)
    return (
        f'<section class="view episode" id="ep-{run_i}-{ep_j}">'
        f'<p><a href="#runs">runs</a> / <a href="#run-{run_i}">{escape(title)}</a></p>'
        f'<h2>{escape(record.task_id)}</h2><table class="facts">{rows}</table>'
        f"<h3>Goal</h3><pre>{escape(str(task.get('goal', '')))}</pre>"
        f"<h3>Initial observation</h3><pre>{escape(str(traj.get('initial_observation', '')))}"
        f"</pre><h3>Memory ids shown in the episode</h3>"
        f'<div class="episode-memory-ids">{_ids(record.memory_ids, _known(record, texts))}</div>'
        f"<h3>Steps</h3>{_steps(record, texts)}</section>"
    )


def _known(record: EpisodeRecord, texts: Mapping[str, str]) -> dict[str, str]:
    """The text of each id: the snapshot's, then the lines the steps recorded for it."""
    known = dict(texts)
    for s in (record.trajectory or {}).get("steps") or []:
        known.update(s.get("memory_entries") or {})
    return known


def _run_title(row: Mapping[str, Any]) -> str:
    variant = row.get("variant") or row["method"]
    return f"{row['experiment']} / {row['env']} / {variant} / {row['backbone']} / seed{row['seed']}"


def _run_view(
    i: int,
    row: Mapping[str, Any],
    episodes: list[tuple[str, EpisodeRecord]],
    texts: Mapping[str, str],
) -> str:
    skip = {"run_dir", "report_paper", "report_tables", *RUN_KEYS, "variant"}
    metrics = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(_fmt(v))}</td></tr>"
        for k, v in row.items()
        if k not in skip
    )
    rows = []
    for j, (phase, r) in enumerate(episodes):
        cells = (
            f'<a class="episode-link" href="#ep-{i}-{j}">{escape(r.task_id)}</a>',
            escape(phase),
            escape(str(r.agent or "")),
            escape(str(r.run)),
            escape(r.status),
            _fmt(r.progress),
            escape(str(r.steps)),
            escape(str(len(r.memory_ids))),
        )
        attrs = (
            f'data-phase="{escape(phase)}" data-agent="{escape(str(r.agent or ""))}" '
            f'data-success="{"success" if r.success else "failure"}"'
        )
        rows.append(f"<tr {attrs}>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    header = ("task", "phase", "agent", "run", "status", "progress", "steps", "memory ids")
    filters = _filters(
        f"episodes-{i}",
        {
            "phase": _choices(p for p, _ in episodes),
            "agent": _choices(r.agent for _, r in episodes),
            "success": [("success", "succeeded"), ("failure", "failed")],
        },
    )
    return (
        f'<section class="view run" id="run-{i}"><p><a href="#runs">runs</a></p>'
        f'<h2>{escape(_run_title(row))}</h2><p class="dir">{escape(str(row["run_dir"]))}</p>'
        f"<h3>Episodes ({len(episodes)})</h3>{filters}"
        f"{_table(header, rows, 'episodes sortable', f'episodes-{i}')}"
        f'<h3>Metrics</h3><table class="facts">{metrics}</table></section>'
    )


def _success_class(row: Mapping[str, Any]) -> str:
    rate = row.get("success_rate")
    if rate is None or (isinstance(rate, float) and math.isnan(rate)):
        return ""
    return "some" if rate > 0 else "none"


def _runs_view(rows: list[Mapping[str, Any]], metrics: Sequence[str], root: Path) -> str:
    header = ("compare", "#", *map(_breakable, (*RUN_KEYS, *metrics)), "flags")
    body = []
    for i, row in enumerate(rows):
        ids = [_breakable(_fmt(row.get(k))) for k in RUN_KEYS]
        ids[2] = f'<a class="run-link" href="#run-{i}">{ids[2]}</a>'
        flags = str(row.get("flags") or "")
        cells = [
            f'<input type="checkbox" class="pick" value="{i}" aria-label="compare run {i}">',
            str(i),
            *ids,
            *(escape(_fmt(row.get(m))) for m in metrics),
        ]
        attrs = (
            f'data-method="{escape(str(row.get("method", "")))}" '
            f'data-env="{escape(str(row.get("env", "")))}" '
            f'data-success="{_success_class(row)}" data-flags="{escape(flags)}"'
        )
        tds = "".join(f"<td>{c}</td>" for c in cells)
        body.append(
            f'<tr {attrs}>{tds}<td class="flags">{escape(flags.replace(",", ", "))}</td></tr>'
        )
    all_flags = {f for row in rows for f in str(row.get("flags") or "").split(",") if f}
    filters = _filters(
        "runs-table",
        {
            "method": _choices(r.get("method") for r in rows),
            "env": _choices(r.get("env") for r in rows),
            "success": [("some", "success rate > 0"), ("none", "success rate 0")],
            "flags": [("(none)", "no flags"), *_choices(all_flags)],
        },
    )
    return (
        f'<section class="view runs" id="runs"><h2>Runs in {escape(str(root))} ({len(rows)})'
        f"</h2>{filters}"
        '<p><button type="button" id="compare-selected">Compare the ticked runs</button> '
        '<span class="note">side by side, task by task</span></p>'
        f"{_table(header, body, 'runs sortable', 'runs-table')}</section>"
    )


def _compare_view(rows: list[Mapping[str, Any]]) -> str:
    picks = "".join(
        f'<label><input type="checkbox" class="pick" value="{i}"> {i}: '
        f"{escape(_run_title(row))}</label>"
        for i, row in enumerate(rows)
    )
    return (
        '<section class="view compare" id="compare">'
        "<h2>Compare runs task by task</h2>"
        f'<div class="chooser">{picks}</div>'
        '<p><button type="button" id="compare-apply">Compare</button> '
        '<label><input type="checkbox" id="only-diverging"> only tasks whose trajectories '
        'differ</label></p><p id="compare-msg" class="note"></p>'
        '<div id="compare-tasks"></div><div id="compare-grid"></div></section>'
    )


def _compare_episode(r: int, j: int, record: EpisodeRecord) -> dict[str, Any]:
    """An evaluated episode as the comparison view reads it."""
    traj = record.trajectory or {}
    steps = []
    for s in traj.get("steps") or []:
        fb = s.get("feedback") or {}
        steps.append(
            {
                "a": str(s.get("action", "")),
                "o": str(s.get("observation", "")),
                "ok": bool(fb.get("valid_action")),
                "fl": fb.get("failure_label"),
                "rec": "memory_ids" in s or shown_text(s) is not None,
                "ids": [str(i) for i in s.get("memory_ids") or []],
                "ent": s.get("memory_entries") or {},
                "mem": shown_text(s),
            }
        )
    return {
        "r": r,
        "j": j,
        "task": record.task_id,
        "agent": record.agent,
        "run": record.run,
        "status": record.status,
        "success": bool(record.success),
        "progress": record.progress,
        "goal": str((traj.get("task") or {}).get("goal", "")),
        "steps": steps,
    }


def _views(episodes: list[tuple[str, EpisodeRecord]]) -> list[str]:
    """The agent views a run evaluated with (MemCo's per-domain agents); [] for one view."""
    views = sorted({str(r.agent) for ph, r in episodes if ph == "evaluation" and r.agent})
    return views if len(views) > 1 else []


def _json_script(data: Any) -> str:
    """``data`` as JSON inside a script element (``<`` escaped, so no text ends it)."""
    text = json.dumps(data, ensure_ascii=False).replace("<", "\\u003c")
    return f'<script id="compare-data" type="application/json">{text}</script>'


def _episode_ids(episodes: list[tuple[str, EpisodeRecord]]) -> set[str]:
    ids: set[str] = set()
    for _, r in episodes:
        ids.update(map(str, r.memory_ids))
        for s in (r.trajectory or {}).get("steps") or []:
            ids.update(map(str, s.get("memory_ids") or ()))
    return ids


def render_page(results_dir: str | Path) -> str:
    """The viewer page of every run under ``results_dir`` (see the module docstring)."""
    root = Path(results_dir)
    df = collect(root)
    metrics = [m for m in (*default_metrics(df), "n_episodes") if m in df.columns]
    rows = df.to_dict("records")
    views = [_runs_view(rows, metrics, root), _compare_view(rows)]
    data: dict[str, Any] = {"runs": [], "episodes": [], "texts": []}
    for i, row in enumerate(rows):
        run_dir = Path(row["run_dir"])
        episodes = read_episodes(run_dir)
        texts = snapshot_texts(run_dir, _episode_ids(episodes))
        title = _run_title(row)
        views.append(_run_view(i, row, episodes, texts))
        views += [_episode_view(i, j, ph, r, title, texts) for j, (ph, r) in enumerate(episodes)]
        data["runs"].append({"title": title, "views": _views(episodes)})
        data["texts"].append(texts)
        data["episodes"] += [
            _compare_episode(i, j, r) for j, (ph, r) in enumerate(episodes) if ph == "evaluation"
        ]
    nav = '<nav class="top"><a href="#runs">runs</a><a href="#compare">compare</a></nav>'
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>memarena runs: {escape(str(root))}</title><style>{CSS}</style></head>"
        f"<body><h1>memarena runs</h1>{nav}{''.join(views)}{_json_script(data)}"
        f"<script>{JS}</script></body></html>\n"
    )


def write_page(results_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the viewer page (default ``<results_dir>/runs.html``); returns its path."""
    path = Path(out) if out is not None else Path(results_dir) / "runs.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page(results_dir), encoding="utf-8")
    return path
