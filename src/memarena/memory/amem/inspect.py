"""A saved A-Mem snapshot as text: the notes with keywords, tags, context, links and how
often each was retrieved, and each note's evolution history."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing


def _row(n: dict[str, Any]) -> str:
    head = (
        f"{n['id']} t={n.get('timestamp', 0)} retrieved {n.get('retrieval_count', 0)}x "
        f"context {clip(n.get('context', ''), 60)}; keywords {', '.join(n.get('keywords', []))}; "
        f"tags {', '.join(n.get('tags', []))}; links {', '.join(n.get('links', [])) or 'none'}"
        f"\n      {clip(n['content'])}"
    )
    history = [
        f"\n      evolved at t={h.get('time')} by {h.get('by')}; before: "
        f"context {clip(h.get('before', {}).get('context', ''), 60)}, "
        f"tags {', '.join(h.get('before', {}).get('tags', []))}"
        for h in n.get("evolution_history", [])
    ]
    return head + "".join(history)


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    notes = state["notes"]
    links = sum(len(n.get("links", [])) for n in notes)
    evolved = sum(1 for n in notes if n.get("evolution_history"))
    layout = state.get("writing", {}).get("layout", "amem")
    lines = [
        f"A-Mem snapshot ({state.get('mode')}, layout {layout}): {len(notes)} notes, "
        f"{links} links, {evolved} evolved",
        *listing([_row(n) for n in notes], top),
    ]
    return "\n".join(lines + footer(state))
