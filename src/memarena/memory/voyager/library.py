"""Voyager's skill library (Wang et al., 2023, Section 2.2).

A skill is the program of a solved task (here: the actions the env accepted, in order), stored
under an LLM-written name with an LLM-written description; the description's embedding is the
key it is retrieved by. Skills are added only from successful tasks.

A name that is already in the library is a new version of that skill, as Voyager's skill
manager does it: the new program replaces the old one under the name (the old one leaves the
index and is kept in :attr:`SkillLibrary.replaced`), and the version is numbered from 2 on, its
name written ``<name>V<i>`` (Voyager's file name for it).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from memarena.memory.episodic import VectorIndex


@dataclass
class Skill:
    base: str  # the name the LLM gave; the library key
    version: int
    description: str
    program: list[str] = field(default_factory=list)
    task: str = ""  # the goal of the task it came from
    source: str = ""  # that task's id

    @property
    def name(self) -> str:
        """``base`` for the first version, ``<base>V<i>`` from the second on."""
        return self.base if self.version == 1 else f"{self.base}V{self.version}"

    def render(self) -> str:
        steps = "\n".join(f"  {n}. {a}" for n, a in enumerate(self.program, 1))
        return f"Skill {self.name}: {self.description}\n{steps}"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


class SkillLibrary:
    def __init__(self) -> None:
        self.skills: dict[str, Skill] = {}  # base name -> current version
        self.replaced: list[Skill] = []
        self.index = VectorIndex()  # base name -> description embedding

    def __len__(self) -> int:
        return len(self.skills)

    def add(self, skill: Skill, vector: np.ndarray) -> Skill:
        """Store ``skill`` (its version set here) and return it."""
        old = self.skills.get(skill.base)
        if old is not None:
            self.replaced.append(old)
            skill.version = 1 + max(
                s.version for s in [old, *self.replaced] if s.base == skill.base
            )
        else:
            skill.version = 1
        self.skills[skill.base] = skill
        self.index.add(skill.base, vector)
        return skill

    def search(self, vector: np.ndarray, k: int) -> list[Skill]:
        return [self.skills[b] for b, _ in self.index.search(vector, k)]

    def to_dict(self, embedder: Any = None) -> dict[str, Any]:
        return {
            "skills": [s.to_dict() for s in self.skills.values()],
            "replaced": [s.to_dict() for s in self.replaced],
            "index": self.index.to_dict(embedder),
        }

    @staticmethod
    def from_dict(d: dict[str, Any]) -> SkillLibrary:
        library = SkillLibrary()
        library.skills = {s["base"]: Skill(**s) for s in d.get("skills", [])}
        library.replaced = [Skill(**s) for s in d.get("replaced", [])]
        library.index = VectorIndex.from_dict(d["index"])
        return library
