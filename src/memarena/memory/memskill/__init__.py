"""MemSkill (Zhang et al., 2026; MemCo's baseline) as ``method=memskill``: see :mod:`.method`."""

from memarena.memory.memskill.banks import ItemBank, Skill, SkillBank, seed_skills
from memarena.memory.memskill.method import MemSkill

__all__ = ["MemSkill", "ItemBank", "Skill", "SkillBank", "seed_skills"]
