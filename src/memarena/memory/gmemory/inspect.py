"""A saved G-Memory snapshot as text: the insights (score, supporting queries) and the query
graph (solved / failed queries, links)."""

from __future__ import annotations

from typing import Any

from memarena.memory.gmemory.query_graph import RESOLVED
from memarena.memory.snapshots import clip, footer, listing


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    insights = state["insights"]["insights"]
    queries = state["queries"]
    solved = sum(1 for q in queries["nodes"] if q["status"] == RESOLVED)
    rows = sorted(insights, key=lambda i: -i["score"])
    lines = [
        f"G-Memory snapshot: {len(insights)} insights, {len(queries['nodes'])} queries "
        f"({solved} resolved) with {len(queries.get('edges', []))} links, "
        f"{state.get('n_observed', 0)} trajectories observed",
        "",
        "Insights (by score):",
        *listing(
            [
                f"{i['id']} score={i['score']} supports={len(i['supports'])}: {clip(i['content'])}"
                for i in rows
            ],
            top,
        ),
        "",
        "Queries:",
        *listing(
            [f"{q['id']} [{q['status']}] {clip(q['goal'], 100)}" for q in queries["nodes"]], top
        ),
    ]
    return "\n".join(lines + footer(state))
