"""A saved MemSkill snapshot as text: the skill bank (operation, version, uses) and the memory
bank's items, and the hard cases kept for skill design."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    skills, items = state["skills"]["skills"], state["memory"]["items"]
    lines = [
        f"MemSkill snapshot ({state.get('mode')}): {len(skills)} skills, {len(items)} memory "
        f"items, {len(state.get('hard', []))} hard cases",
        "",
        "Skill bank:",
        *listing(
            [
                f"{s['name']} ({s['op']}) v{s.get('version', 1)} uses={s.get('uses', 0)}: "
                f"{clip(s['description'], 100)}"
                for s in skills
            ],
            top,
        ),
        "",
        "Memory bank:",
        *listing([f"{i}: {clip(text)}" for i, text in items.items()], top),
    ]
    return "\n".join(lines + footer(state))
