"""A saved MemoryBank snapshot as text: the stored episodes with their summaries, memory
strength S and last recall time (Ebbinghaus forgetting), and the overall overview."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing, stored_task


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    tasks, summaries = state["tasks"], state["summaries"]
    rows = [
        f"{stored_task(t)}\n      S={state['strength'].get(t['id'])} last recall "
        f"t={state['last_recall'].get(t['id'])}; summary: {clip(summaries.get(t['id'], ''))}"
        for t in tasks
    ]
    lines = [
        f"MemoryBank snapshot ({state.get('mode')}): {len(tasks)} episodes, clock {state['clock']}",
        *listing(rows, top),
    ]
    if state.get("overview"):
        lines += ["", f"overview: {clip(state['overview'], 400)}"]
    return "\n".join(lines + footer(state))
