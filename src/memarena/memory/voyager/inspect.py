"""A saved Voyager snapshot as text: the skill library (current versions, their programs'
lengths and source tasks, replaced versions) and the stored episodes."""

from __future__ import annotations

from typing import Any

from memarena.memory.snapshots import clip, footer, listing, stored_task


def _name(skill: dict[str, Any]) -> str:
    version = skill.get("version", 1)
    return skill["base"] if version == 1 else f"{skill['base']}V{version}"


def describe(state: dict[str, Any], *, top: int = 20) -> str:
    library, tasks = state["library"], state["tasks"]
    lines = [
        f"Voyager snapshot ({state.get('mode')}): {len(library['skills'])} skills "
        f"({len(library.get('replaced', []))} replaced versions), {len(tasks)} episodes",
        "",
        "Skills:",
        *listing(
            [
                f"{_name(s)} v{s.get('version', 1)} ({len(s.get('program', []))} steps, from "
                f"{s.get('source') or '?'}): {clip(s['description'])}"
                for s in library["skills"]
            ],
            top,
        ),
        "",
        "Replaced: " + (", ".join(_name(s) for s in library.get("replaced", [])) or "none"),
        "",
        "Episodes:",
        *listing(
            [
                f"{stored_task(t)}; summary: {clip(state['summaries'].get(t['id'], ''))}"
                for t in tasks
            ],
            top,
        ),
    ]
    return "\n".join(lines + footer(state))
