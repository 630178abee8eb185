"""MemSkill's two banks (facts from its code, ViktorAxelsen/MemSkill, read for facts).

- :class:`SkillBank`: natural-language memory skills, each tied to one operation type
  (``insert`` / ``update`` / ``delete`` / ``noop``) with a description and an instruction, and
  usage statistics; it starts from the four seed skills (:func:`seed_skills`, memarena's
  wording) and holds at most ``max_skills`` (30).
- :class:`ItemBank`: the memory items the executor writes; :meth:`ItemBank.apply` carries
  out one INSERT / UPDATE / DELETE / NOOP operation, indices counting the items shown to the
  executor (1-based here); :meth:`ItemBank.add` stores a merged item under its given id.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from memarena.memory.episodic import VectorIndex

OPERATIONS = ("insert", "update", "delete", "noop")


@dataclass
class Skill:
    name: str
    op: str  # insert | update | delete | noop
    description: str
    instruction: str
    uses: int = 0
    version: int = 1

    def render(self) -> str:
        return f"[{self.name}] ({self.op.upper()}) {self.description} {self.instruction}"


def seed_skills() -> list[Skill]:
    return [
        Skill("insert", "insert", "Record new durable facts.",
              "Write each new, lasting fact from the span as its own memory item; skip trivia "
              "and facts already in memory."),
        Skill("update", "update", "Correct or enrich a shown memory.",
              "When the span corrects or adds to a shown item, rewrite that item (by its "
              "number); do not create or delete items."),
        Skill("delete", "delete", "Remove wrong or outdated memories.",
              "Delete a shown item (by its number) only when the span clearly shows it is wrong "
              "or superseded; when unsure, do nothing."),
        Skill("noop", "noop", "Change nothing.",
              "Answer NOOP only when no other selected skill calls for an operation."),
    ]  # fmt: skip


class SkillBank:
    def __init__(self, skills: list[Skill] | None = None, max_skills: int = 30) -> None:
        self.skills: dict[str, Skill] = {s.name: s for s in (skills or seed_skills())}
        self.max_skills = int(max_skills)

    def __len__(self) -> int:
        return len(self.skills)

    def change(self, change: Any) -> str | None:
        """Apply one designer change ``{"action": "add" | "refine", "name", "op",
        "description", "instruction"}``; the name changed, or None when it was unusable."""
        if not isinstance(change, dict):
            return None
        name, action = change.get("name"), change.get("action")
        texts = [change.get("description"), change.get("instruction")]
        if not isinstance(name, str) or not name.strip():
            return None
        if not all(isinstance(t, str) and t.strip() for t in texts):
            return None
        name = name.strip()
        if action == "refine" and name in self.skills:
            skill = self.skills[name]
            skill.description, skill.instruction = texts[0].strip(), texts[1].strip()
            skill.version += 1
            return name
        if action == "add" and name not in self.skills and len(self) < self.max_skills:
            op = change.get("op")
            if op not in OPERATIONS:
                return None
            self.skills[name] = Skill(name, op, texts[0].strip(), texts[1].strip())
            return name
        return None

    def to_dict(self) -> dict[str, Any]:
        return {"skills": [asdict(s) for s in self.skills.values()], "max_skills": self.max_skills}

    @staticmethod
    def from_dict(d: dict[str, Any]) -> SkillBank:
        return SkillBank([Skill(**s) for s in d["skills"]], d.get("max_skills", 30))


class ItemBank:
    def __init__(self) -> None:
        self.items: dict[str, str] = {}  # id -> content
        self.index = VectorIndex()
        self.next_id = 1

    def __len__(self) -> int:
        return len(self.items)

    def search(self, vector: np.ndarray, k: int) -> list[str]:
        return [i for i, _ in self.index.search(vector, k)]

    def vector(self, item_id: str) -> np.ndarray:
        """The stored (unit) embedding of ``item_id``."""
        return self.index.matrix[self.index.row[item_id]]

    def add(self, item_id: str, content: str, vector: np.ndarray) -> None:
        """Store an item under a given id with its embedding (the global memory's merge)."""
        self.items[item_id] = content
        self.index.add(item_id, vector)

    def apply(self, op: Any, shown: list[str], embed) -> str:
        """Carry out one operation (``{"op", "content", "index"}``); ``shown`` are the ids of
        the items the executor saw, numbered from 1; ``embed(text)`` gives a vector. Returns
        the operation done (``insert`` ...) or ``invalid``."""
        kind = str(op.get("op", "")).lower() if isinstance(op, dict) else ""
        content = op.get("content") if isinstance(op, dict) else None
        index = op.get("index") if isinstance(op, dict) else None
        target = None
        if isinstance(index, int) and not isinstance(index, bool) and 1 <= index <= len(shown):
            target = shown[index - 1] if shown[index - 1] in self.items else None
        if kind == "noop":
            return "noop"
        if kind == "insert" and isinstance(content, str) and content.strip():
            item_id = f"m{self.next_id}"
            self.next_id += 1
            self.items[item_id] = content.strip()
            self.index.add(item_id, embed(content.strip()))
            return "insert"
        if kind == "update" and target and isinstance(content, str) and content.strip():
            self.items[target] = content.strip()
            self.index.add(target, embed(content.strip()))
            return "update"
        if kind == "delete" and target:
            del self.items[target]
            self.index.remove([target])
            return "delete"
        return "invalid"

    def to_dict(self, embedder: Any = None) -> dict[str, Any]:
        return {
            "items": dict(self.items),
            "index": self.index.to_dict(embedder),
            "next_id": self.next_id,
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> ItemBank:
        bank = ItemBank()
        bank.items = dict(d["items"])
        bank.index = VectorIndex.from_dict(d["index"])
        bank.next_id = int(d["next_id"])
        return bank
