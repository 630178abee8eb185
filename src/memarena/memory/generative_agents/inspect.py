"""A saved Generative Agents snapshot as text: the memory stream (observations and
reflections with importance, creation and last access times; a reflection's evidence)."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing


def _row(m: dict[str, Any]) -> str:
    evidence = f" evidence {', '.join(m['evidence'])}" if m.get("evidence") else ""
    return (
        f"{m['id']} [{m['kind']}] importance={m['importance']} created t={m['created']} "
        f"accessed t={m['last_access']}{evidence}: {clip(m['description'])}"
    )


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    objects = state["stream"]["objects"]
    reflections = sum(1 for m in objects if m["kind"] == "reflection")
    lines = [
        f"Generative Agents snapshot ({state.get('mode')}): {len(objects)} memories "
        f"({reflections} reflections), {len(state['tasks'])} episodes, clock {state['clock']}, "
        f"importance since the last reflection {state.get('pending_importance', 0)}",
        *listing([_row(m) for m in objects], top),
    ]
    return "\n".join(lines + footer(state))
