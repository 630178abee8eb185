"""A-Mem's memory notes and the bookkeeping of its memory evolution (Xu et al., 2025,
Sections 3.1-3.3; facts from its code, WujiangXu/AgenticMemory ``memory_layer.py``).

A note is ``{content, keywords, context, tags, links, timestamp, retrieval_count,
evolution_history}``. Its embedding text joins content, context, keywords and tags (A-Mem's
corrected ``add_note``; :meth:`Note.index_text` also gives MemCo's join and content alone).

Evolution (:func:`apply_evolution`) applies the memory LLM's decision about a new note and its
k nearest neighbours, as A-Mem's ``process_memory`` does:

- nothing unless ``should_evolve``;
- ``strengthen``: the new note links to the suggested neighbours (links live on the new note
  only) and its tags are *replaced* by ``tags_to_update``;
- ``update_neighbor``: neighbour i (in the order shown) gets its tags replaced by
  ``new_tags_neighborhood[i]`` and its context by ``new_context_neighborhood[i]`` (kept when
  that list is shorter).

memarena's links are note ids (A-Mem's code stores positions in its note list) and each change
to a neighbour is appended to its ``evolution_history`` (A-Mem's field, never filled by its
code).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any


@dataclass
class Note:
    id: str
    content: str
    keywords: list[str] = field(default_factory=list)
    context: str = "General"
    tags: list[str] = field(default_factory=list)
    links: list[str] = field(default_factory=list)
    timestamp: int = 0  # the memory's clock (task index) when written
    retrieval_count: int = 0
    evolution_history: list[dict[str, Any]] = field(default_factory=list)
    goal: str = ""

    def embedding_text(self) -> str:
        return (
            f"content: {self.content}\ncontext: {self.context}\n"
            f"keywords: {', '.join(self.keywords)}\ntags: {', '.join(self.tags)}"
        )

    def index_text(self, style: str) -> str:
        """The text the note is embedded from: ``amem`` the labelled fields of A-Mem's
        ``add_note`` (:meth:`embedding_text`), ``memco`` content, context, keywords and tags on
        four lines with the terms space-separated (MemCo's ``amem.py``), ``content`` alone."""
        if style == "amem":
            return self.embedding_text()
        if style == "memco":
            return "\n".join(
                [self.content, self.context, " ".join(self.keywords), " ".join(self.tags)]
            )
        return self.content

    def render(self) -> str:
        header = f"Memory note ({self.context})"
        if self.keywords or self.tags:
            header += f" keywords: {', '.join(self.keywords)}; tags: {', '.join(self.tags)}"
        return f"{header}\n{self.content}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _strings(value: Any) -> list[str] | None:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        return None
    return [v.strip() for v in value if v.strip()]


def apply_evolution(note: Note, neighbours: list[Note], decision: Any, time: int) -> dict[str, int]:
    """Apply one evolution decision (see the module docstring); counts of what changed:
    ``links`` added to the new note, ``neighbours`` updated, ``invalid`` fields ignored."""
    done = {"links": 0, "neighbours": 0, "invalid": 0}
    if not isinstance(decision, dict) or decision.get("should_evolve") is not True:
        return done
    actions = decision.get("actions")
    actions = actions if isinstance(actions, list) else []
    if "strengthen" in actions:
        numbers = decision.get("suggested_connections")
        for n in numbers if isinstance(numbers, list) else []:
            ok = isinstance(n, int) and not isinstance(n, bool) and 1 <= n <= len(neighbours)
            if not ok:
                done["invalid"] += 1
                continue
            target = neighbours[n - 1].id
            if target not in note.links and target != note.id:
                note.links.append(target)
                done["links"] += 1
        tags = _strings(decision.get("tags_to_update"))
        if tags is None:
            done["invalid"] += 1
        else:
            note.tags = tags
    if "update_neighbor" in actions:
        contexts = decision.get("new_context_neighborhood")
        contexts = contexts if isinstance(contexts, list) else []
        tag_lists = decision.get("new_tags_neighborhood")
        tag_lists = tag_lists if isinstance(tag_lists, list) else []
        for i, neighbour in enumerate(neighbours[: len(tag_lists)]):
            tags = _strings(tag_lists[i])
            if tags is None:
                done["invalid"] += 1
                continue
            before = {"context": neighbour.context, "tags": list(neighbour.tags)}
            neighbour.tags = tags
            if i < len(contexts) and isinstance(contexts[i], str) and contexts[i].strip():
                neighbour.context = contexts[i].strip()
            neighbour.evolution_history.append({"time": time, "by": note.id, "before": before})
            done["neighbours"] += 1
    return done
