"""What ``python run.py`` (the demo) prints when it ends: per agent view, how often memory was
shown, what was written, and the commands to look at the run.

It reads only the run's files (``metrics.json``, ``episodes.jsonl``), so it describes any
finished run directory the same way, whatever its method:

    episodes, success and progress per agent view (``metrics.per_agent``; one row "all" when
    the protocol has no agent views), the memory entries each view was shown per retrieval
    call and in all (distinct ids), the entries the memory holds after acquisition
    (``memory_size``) and the records promoted to a global memory (``global_records``, where
    the method has one); then the viewer and figures commands for this run.
"""

from __future__ import annotations

import json
import shlex
from collections import defaultdict
from pathlib import Path
from typing import Any

from memarena.core.jsonl import read_jsonl
from memarena.results import store as files

EMBEDDED_NOTE = (
    "The embedded model ({backbone}) is there to run the whole pipeline on a CPU, not to "
    "score: its success rate says nothing about the method. For numbers, run a paper "
    "experiment on a real backbone (README: 'Reproduce a paper table')."
)


def _views(run_dir: Path) -> dict[str, dict[str, float]]:
    """Per agent view: entries shown per retrieval call, distinct entries shown, steps."""
    calls: dict[str, float] = defaultdict(float)
    entries: dict[str, float] = defaultdict(float)
    shown: dict[str, set[str]] = defaultdict(set)
    path = run_dir / files.EPISODES
    for record in read_jsonl(path) if path.is_file() else []:
        agent = str(record.get("agent") or "all")
        cost = record.get("memory_cost") or {}
        calls[agent] += float(cost.get("calls") or 0)
        entries[agent] += float(cost.get("entries") or 0)
        shown[agent].update(str(i) for i in record.get("memory_ids") or [])
    return {
        agent: {
            "per_call": entries[agent] / calls[agent] if calls[agent] else 0.0,
            "distinct": float(len(shown[agent])),
        }
        for agent in shown.keys() | calls.keys()
    }


def summary_text(run_dir: str | Path, *, embedded: bool | None = None) -> str:
    """The end-of-run summary of the run in ``run_dir`` (see the module docstring).
    ``embedded``: add the note on the embedded model (default: when the run's backbone is
    ``smollm2``)."""
    run_dir = Path(run_dir)
    metrics: dict[str, Any] = json.loads((run_dir / files.METRICS).read_text(encoding="utf-8"))
    views = _views(run_dir)
    per_agent = metrics.get("per_agent") or {
        "all": {k: metrics.get(k) for k in ("success_rate", "progress_rate", "n_episodes")}
    }
    head = (
        f"memarena: {metrics.get('method')} on {metrics.get('env')} with "
        f"{metrics.get('backbone')}, seed {metrics.get('seed')}: "
        f"success {metrics.get('success_rate', 0):.3f}, progress "
        f"{metrics.get('progress_rate', 0):.3f} over {metrics.get('n_episodes')} episodes"
    )
    width = max(len("agent view"), *(len(a) for a in per_agent))
    lines = [
        head,
        f"  {'agent view':<{width}}  episodes  success  progress  shown/call  distinct shown",
    ]
    for agent, row in per_agent.items():
        view = views.get(agent, {"per_call": 0.0, "distinct": 0.0})
        lines.append(
            f"  {agent:<{width}}  {int(row.get('n_episodes') or 0):>8}  "
            f"{float(row.get('success_rate') or 0):>7.3f}  "
            f"{float(row.get('progress_rate') or 0):>8.3f}  {view['per_call']:>10.1f}  "
            f"{int(view['distinct']):>14}"
        )
    memory = "  " + _memory_line(metrics)
    if "global_records" in metrics:
        memory += f"; global records promoted: {metrics['global_records']}"
    lines.append(memory)
    lines.append(
        "  shown/call: memory entries put in the prompt per retrieval call (each step, for a "
        "method that retrieves per step)"
    )
    where = shlex.quote(str(run_dir))
    lines += [
        "Look at this run:",
        f"  python scripts/view_runs.py {where} --out {shlex.quote(str(run_dir / 'runs.html'))}"
        "   # then open runs.html in a browser",
        f"  python scripts/make_figures.py --results-dir {_results_root(run_dir)} "
        "--notebooks 00_overview   # figures of every run in that results folder",
    ]
    backbone = str(metrics.get("backbone") or "")
    if embedded if embedded is not None else backbone.lower().startswith("smollm2"):
        lines.append(EMBEDDED_NOTE.format(backbone=backbone))
    return "\n".join(lines)


def _memory_line(metrics: dict[str, Any]) -> str:
    """What the run's memory holds and where it came from, from ``metrics.json`` only: a method
    that learns nothing (icl, none: no memory size, no acquisition) says so instead of "?"."""
    written, tasks = metrics.get("memory_size"), metrics.get("acquisition_tasks")
    method = metrics.get("method") or "this method"
    if written is None and tasks is None:
        return f"memory written: none ({method} learns nothing from training tasks)"
    entries = f"{written} entries" if written is not None else "entries not counted"
    if tasks is None:
        return f"memory: {entries} (no acquisition in this run: a loaded snapshot or none)"
    return f"memory written: {entries} from {tasks} training tasks"


def _results_root(run_dir: Path) -> str:
    """The results folder above ``run_dir`` (``<results>/<experiment>/<env>/<method>/<backbone>/
    seed<k>``), quoted for a shell."""
    root = run_dir.parents[4] if len(run_dir.parents) > 4 else run_dir
    return shlex.quote(str(root))
