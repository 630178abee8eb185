"""A-Mem (Xu et al., 2025) as ``method=amem``: see :mod:`.method`."""

from memarena.memory.amem.method import AMem
from memarena.memory.amem.notes import Note, apply_evolution

__all__ = ["AMem", "Note", "apply_evolution"]
