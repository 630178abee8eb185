"""A static HTML trajectory viewer over a results tree (``scripts/view_runs.py``).

:func:`write_page` reads every run under a results folder (:func:`~memarena.results.collect.
collect`: ids, flags, metrics) with its episodes (``episodes.jsonl``, then
``acquisition.jsonl``; the latest copy of each episode, as the metrics count them) and writes
one self-contained page: inline CSS and a few lines of JS that show one view at a time from
the URL fragment, no server and nothing fetched.

Views: ``#runs`` (every run: experiment / env / method / backbone / seed, key metrics, flags),
``#run-<i>`` (its metrics and episodes), ``#ep-<i>-<j>`` (the episode's steps: action,
observation, validity, reward, progress, the memory ids retrieved for the step, and, when the
run recorded its prompts with ``protocol.record_prompts=true``, the messages the agent got).

The prompt has no markup around its memory: each method's slot text starts with the method's
header (:data:`MEMORY_HEADERS`, the methods' own constants) and the prompt builder
(:mod:`memarena.agent.prompts`) puts the slots before ``Your task:`` in the first user message,
or per step before ``Valid actions:`` or at the end of the step's user message. The viewer
marks each such span (``<mark class="memory">``). A conversation prompt is append-only, so a
step lists only the messages that its previous step's prompt did not already hold.

All text is escaped with :func:`html.escape`.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from html import escape
from pathlib import Path
from typing import Any

from memarena.memory.amem import prompts as amem_prompts
from memarena.memory.generative_agents import prompts as ga_prompts
from memarena.memory.gmemory import prompts as gmemory_prompts
from memarena.memory.langmem import prompts as langmem_prompts
from memarena.memory.memco import compose as memco_compose
from memarena.memory.memorybank import prompts as memorybank_prompts
from memarena.memory.memrl import prompts as memrl_prompts
from memarena.memory.memskill import prompts as memskill_prompts
from memarena.memory.reme import prompts as reme_prompts
from memarena.memory.voyager import prompts as voyager_prompts
from memarena.results.collect import collect, default_metrics
from memarena.results.records import EpisodeRecord, latest

# the first line of every memory slot a method renders (memco's fixed-concatenation ablation
# writes its own literal header, see memarena.memory.memco.compose.concat_context)
MEMORY_HEADERS: tuple[str, ...] = (
    memco_compose.HEADER,
    memco_compose.CONCAT_HEADER,
    gmemory_prompts.PAST_SUCCESSES_HEADER,
    gmemory_prompts.INSIGHTS_HEADER,
    gmemory_prompts.PAST_TRAJECTORIES_HEADER,
    reme_prompts.HEADER,
    reme_prompts.GUIDANCE_HEADER,
    reme_prompts.LESSONS_HEADER,
    memorybank_prompts.PAST_HEADER,
    memorybank_prompts.OVERVIEW_HEADER,
    voyager_prompts.SKILLS_HEADER,
    voyager_prompts.PAST_HEADER,
    memskill_prompts.MEMORY_HEADER,
    amem_prompts.MEMORY_HEADER,
    amem_prompts.AMEM_INSIGHTS_HEADER,
    amem_prompts.MEMCO_EXAMPLES_HEADER,
    amem_prompts.MEMCO_INSIGHTS_HEADER,
    ga_prompts.MEMORIES_HEADER,
    ga_prompts.PAST_HEADER,
    memrl_prompts.SUCCESS_HEADER,
    memrl_prompts.FAILURE_HEADER,
    langmem_prompts.HEADER,
)
# what follows the memory slots in a user message (memarena.agent.prompts)
_AFTER_MEMORY = ("\n\nYour task: ", "\n\nValid actions: ")
EPISODE_FILES = (("evaluation", "episodes.jsonl"), ("acquisition", "acquisition.jsonl"))
NO_PROMPTS = (
    '<p class="note">The prompts were not recorded: rerun with protocol.record_prompts=true '
    "to see them here.</p>"
)
RUN_KEYS = ("experiment", "env", "method", "ablation", "backbone", "seed")


def memory_spans(text: str, headers: Sequence[str] = MEMORY_HEADERS) -> list[tuple[int, int]]:
    """``(start, end)`` of each memory section of a prompt message: from a header that starts
    a paragraph to the next ``Your task:`` / ``Valid actions:`` paragraph or the message's end
    (consecutive slots make one span)."""
    pattern = "|".join(re.escape(h) for h in sorted(set(headers), key=len, reverse=True))
    spans: list[tuple[int, int]] = []
    for found in re.finditer(rf"(?:^|(?<=\n\n))(?:{pattern})", text):
        start = found.start()
        if spans and start < spans[-1][1]:
            continue
        ends = [i for i in (text.find(m, start) for m in _AFTER_MEMORY) if i >= 0]
        spans.append((start, min(ends, default=len(text))))
    return spans


def highlight(text: str, headers: Sequence[str] = MEMORY_HEADERS) -> str:
    """``text`` escaped, its memory sections wrapped in ``<mark class="memory">``."""
    out, pos = [], 0
    for start, end in memory_spans(text, headers):
        out += [escape(text[pos:start]), f'<mark class="memory">{escape(text[start:end])}</mark>']
        pos = end
    out.append(escape(text[pos:]))
    return "".join(out)


def _fmt(value: Any) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "-"
    if isinstance(value, float):
        return f"{value:.3f}"
    return str(value)


def _table(header: Sequence[str], rows: Iterable[Sequence[str]], cls: str = "") -> str:
    """A table of already-escaped cells."""
    head = "".join(f"<th>{h}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _ids(ids: Sequence[str] | None) -> str:
    if not ids:
        return '<span class="none">none</span>'
    return " ".join(f'<code class="memid">{escape(str(i))}</code>' for i in ids)


def read_episodes(run_dir: Path) -> list[tuple[str, EpisodeRecord]]:
    """(phase, record) of a run's episodes: evaluation, then acquisition; the latest copy of
    each (a retried or redone episode replaces the earlier one)."""
    out = []
    for phase, name in EPISODE_FILES:
        path = run_dir / name
        if not path.exists():
            continue
        with path.open() as f:
            records = [EpisodeRecord.from_json(json.loads(line)) for line in f if line.strip()]
        out += [(phase, r) for r in latest(records)]
    return out


def _messages(messages: Sequence[Mapping[str, Any]], previous: Sequence[Any]) -> str:
    """The step's prompt messages, without the leading ones the previous step's prompt held."""
    same = 0
    for a, b in zip(messages, previous, strict=False):
        if a != b:
            break
        same += 1
    parts = [f'<p class="note">{same} earlier messages as in the previous step</p>'] if same else []
    for m in messages[same:]:
        role = escape(str(m.get("role", "?")))
        content = m.get("content")
        if not isinstance(content, str):
            content = json.dumps(content, indent=1, ensure_ascii=False)
        calls = m.get("tool_calls")
        extra = f"\n[tool calls] {json.dumps(calls, ensure_ascii=False)}" if calls else ""
        parts.append(
            f'<div class="msg {role}"><div class="role">{role}</div>'
            f"<pre>{highlight(content + extra)}</pre></div>"
        )
    return "".join(parts)


def _steps(record: EpisodeRecord) -> str:
    """The steps table; a step's prompt (when recorded) in a full-width row below it."""
    traj = record.trajectory or {}
    steps = traj.get("steps") or []
    if not steps:
        return '<p class="none">no trajectory recorded</p>'
    header = ("step", "action", "observation", "validity", "reward", "progress", "memory ids")
    rows, previous = [], []
    for k, s in enumerate(steps):
        fb = s.get("feedback") or {}
        valid = "valid" if fb.get("valid_action") else "invalid"
        label = f" ({escape(str(fb['failure_label']))})" if fb.get("failure_label") else ""
        cells = (
            str(k),
            f"<pre>{escape(str(s.get('action', '')))}</pre>",
            f"<pre>{escape(str(s.get('observation', '')))}</pre>",
            f'<span class="{valid}">{valid}</span>{label}',
            _fmt(s.get("reward")),
            _fmt(s.get("progress")),
            _ids(s.get("memory_ids")),
        )
        rows.append(f'<tr class="step">{"".join(f"<td>{c}</td>" for c in cells)}</tr>')
        prompt = s.get("prompt")
        if prompt:
            shown = _messages(prompt, previous)
            previous = prompt
            rows.append(
                f'<tr class="prompt"><td colspan="{len(header)}"><details>'
                f"<summary>prompt of step {k}</summary>{shown}</details></td></tr>"
            )
    head = "".join(f"<th>{h}</th>" for h in header)
    note = "" if previous else NO_PROMPTS
    body = "".join(rows)
    return f'{note}<table class="steps"><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>'


def _episode_view(run_i: int, ep_j: int, phase: str, record: EpisodeRecord, title: str) -> str:
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
        f"</pre><h3>Memory ids retrieved in the episode</h3>"
        f'<p class="episode-memory-ids">{_ids(record.memory_ids)}</p>'
        f"<h3>Steps</h3>{_steps(record)}</section>"
    )


def _run_title(row: Mapping[str, Any]) -> str:
    variant = row.get("variant") or row["method"]
    return f"{row['experiment']} / {row['env']} / {variant} / {row['backbone']} / seed{row['seed']}"


def _run_view(i: int, row: Mapping[str, Any], episodes: list[tuple[str, EpisodeRecord]]) -> str:
    skip = {"run_dir", "report_paper", "report_tables", *RUN_KEYS, "variant"}
    metrics = "".join(
        f"<tr><th>{escape(str(k))}</th><td>{escape(_fmt(v))}</td></tr>"
        for k, v in row.items()
        if k not in skip
    )
    rows = [
        (
            f'<a class="episode-link" href="#ep-{i}-{j}">{escape(r.task_id)}</a>',
            escape(phase),
            escape(str(r.agent or "")),
            escape(str(r.run)),
            escape(r.status),
            _fmt(r.progress),
            escape(str(r.steps)),
            escape(str(len(r.memory_ids))),
        )
        for j, (phase, r) in enumerate(episodes)
    ]
    header = ("task", "phase", "agent", "run", "status", "progress", "steps", "memory ids")
    return (
        f'<section class="view run" id="run-{i}"><p><a href="#runs">runs</a></p>'
        f'<h2>{escape(_run_title(row))}</h2><p class="dir">{escape(str(row["run_dir"]))}</p>'
        f"<h3>Episodes ({len(episodes)})</h3>{_table(header, rows, 'episodes')}"
        f'<h3>Metrics</h3><table class="facts">{metrics}</table></section>'
    )


def _runs_view(rows: list[Mapping[str, Any]], metrics: Sequence[str], root: Path) -> str:
    header = ("#", *RUN_KEYS, *metrics, "flags")
    body = []
    for i, row in enumerate(rows):
        ids = [escape(_fmt(row.get(k))) for k in RUN_KEYS]
        ids[2] = f'<a class="run-link" href="#run-{i}">{ids[2]}</a>'
        body.append((str(i), *ids, *(escape(_fmt(row.get(m))) for m in metrics),
                     escape(str(row.get("flags") or ""))))  # fmt: skip
    return (
        f'<section class="view runs" id="runs"><h2>Runs in {escape(str(root))} ({len(rows)})'
        f"</h2>{_table(header, body, 'runs')}</section>"
    )


_CSS = """
body{font-family:system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:.5em 0}td,th{border:1px solid #ccc;padding:3px 6px;
vertical-align:top;text-align:left}thead th{background:#eee}
pre{white-space:pre-wrap;margin:0;max-width:60em}.view{display:none}.view.shown{display:block}
mark.memory{background:#fff3b0;outline:1px solid #e0b000;display:inline-block}
code.memid{background:#e8f0ff;padding:0 3px;margin:1px;display:inline-block}
.invalid{color:#b00}.valid{color:#070}.none,.note,.dir{color:#888}
.msg{border-left:3px solid #ccc;padding-left:6px;margin:4px 0}.msg.user{border-color:#48c}
.msg.assistant{border-color:#4a4}.role{font-weight:bold;font-size:.85em}
"""
_JS = """
function show(){var id=(location.hash||'#runs').slice(1);
var target=document.getElementById(id);if(!target||!target.classList.contains('view'))
{target=document.getElementById('runs');}
document.querySelectorAll('.view').forEach(function(v){v.classList.toggle('shown',v===target);});
window.scrollTo(0,0);}
window.addEventListener('hashchange',show);show();
"""


def render_page(results_dir: str | Path) -> str:
    """The viewer page of every run under ``results_dir`` (see the module docstring)."""
    root = Path(results_dir)
    df = collect(root)
    metrics = [m for m in (*default_metrics(df), "n_episodes") if m in df.columns]
    rows = df.to_dict("records")
    views = [_runs_view(rows, metrics, root)]
    for i, row in enumerate(rows):
        episodes = read_episodes(Path(row["run_dir"]))
        views.append(_run_view(i, row, episodes))
        title = _run_title(row)
        views += [_episode_view(i, j, ph, r, title) for j, (ph, r) in enumerate(episodes)]
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>memarena runs: {escape(str(root))}</title><style>{_CSS}</style></head>"
        f"<body><h1>memarena runs</h1>{''.join(views)}<script>{_JS}</script></body></html>\n"
    )


def write_page(results_dir: str | Path, out: str | Path | None = None) -> Path:
    """Write the viewer page (default ``<results_dir>/runs.html``); returns its path."""
    path = Path(out) if out is not None else Path(results_dir) / "runs.html"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_page(results_dir), encoding="utf-8")
    return path
