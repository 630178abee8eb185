"""Voyager's skill library (Wang et al., 2023) as ``method=voyager``: see :mod:`.method`."""

from memarena.memory.voyager.library import Skill, SkillLibrary
from memarena.memory.voyager.method import Voyager

__all__ = ["Skill", "SkillLibrary", "Voyager"]
