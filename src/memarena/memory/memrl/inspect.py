"""A saved MemRL snapshot as text: per intent, its experiences with their Q values and visit
counts (highest Q first)."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    experiences = {e["id"]: e for e in state["experiences"]}
    lines = [
        f"MemRL snapshot ({state.get('mode')}): {len(state['intents'])} intents, "
        f"{len(experiences)} experiences, clock {state['clock']}"
    ]
    for intent, ids in state["intents"].items():
        lines.append(f"  intent {intent}: {clip(state['intent_text'].get(intent, ''), 100)}")
        ranked = sorted((experiences[i] for i in ids if i in experiences), key=lambda e: -e["q"])
        rows = [
            f"{e['id']} Q={e['q']:.3f} visits={e['visits']} "
            f"{'solved' if e['success'] else 'failed'}: {clip(e['goal'], 80)}"
            + (f" | {clip(e['note'], 100)}" if e.get("note") else "")
            for e in ranked
        ]
        lines += listing(rows, top, indent="    ")
    return "\n".join(lines + footer(state))
