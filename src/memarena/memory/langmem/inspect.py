"""A saved LangMem snapshot as text: the store's items under the memory's namespace (episodes
as When / Thought / Did / Result)."""

from __future__ import annotations

from typing import Any

from memarena.memory.langmem.schema import render_episode
from memarena.memory.snapshots import clip, footer, listing


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    items = state.get("items", [])
    rows = [
        f"{item['key']} ({item['value'].get('kind', '?')}): "
        + " | ".join(clip(line, 120) for line in render_episode(item["value"]).splitlines())
        for item in items
    ]
    lines = [
        f"LangMem snapshot: {len(items)} items in namespace {'/'.join(state.get('namespace', []))}",
        *listing(rows, top),
    ]
    return "\n".join(lines + footer(state))
