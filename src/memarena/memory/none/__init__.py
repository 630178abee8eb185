"""No memory: the agent sees only the task and its own history (the papers' "No-memory")."""

from __future__ import annotations

from memarena.core import MemoryMethod
from memarena.core.memory import Capabilities


class NoMemory(MemoryMethod):
    name = "none"
    capabilities = Capabilities(learns=False)
