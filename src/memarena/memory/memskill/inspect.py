"""A saved MemSkill snapshot as text: the skill bank (operation, version, uses), the memory
bank's items, the failure pool and the PPO controller's checkpoint."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    skills, items = state["skills"]["skills"], state["memory"]["items"]
    checkpoint = (state.get("ppo") or {}).get("checkpoint")
    controller = state.get("controller", "llm")
    if controller == "ppo":
        controller += (
            f" ({checkpoint['updates']} updates, {(state.get('ppo') or {}).get('episodes', 0)} "
            "episodes)"
            if checkpoint
            else " (untrained)"
        )
    lines = [
        f"MemSkill snapshot: {len(skills)} skills, {len(items)} memory items, "
        f"{len(state.get('failures', []))} failure cases, controller {controller}",
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
