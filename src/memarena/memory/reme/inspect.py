"""A saved ReMe snapshot as text: the experience pool with each experience's utility counts
(f: times recalled, u: recalls in a successful episode), kind and usage scenario."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    items = state["pool"]["items"]
    rows = sorted(items, key=lambda e: (-e.get("retrievals", 0), e["id"]))
    lines = [
        f"ReMe snapshot: {len(items)} experiences (most recalled first; f recalls, u successful)",
        *listing(
            [
                f"{e['id']} f={e.get('retrievals', 0)} u={e.get('utility', 0)} [{e.get('kind')}] "
                f"from {e.get('source_task') or '?'}: when {clip(e['when_to_use'], 80)} -> "
                f"{clip(e['content'])}"
                for e in rows
            ],
            top,
        ),
    ]
    return "\n".join(lines + footer(state))
