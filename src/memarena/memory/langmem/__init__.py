"""LangMem (LangChain 2025; ReMe's baseline) as ``method=langmem``: see :mod:`.method`."""

from memarena.memory.langmem.method import LangMem
from memarena.memory.langmem.schema import Episode, render_episode

__all__ = ["Episode", "LangMem", "render_episode"]
